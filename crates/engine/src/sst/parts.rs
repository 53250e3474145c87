//! The parts of a table decoded one at a time from untrusted bytes: the footer, a data or
//! index block, the filter block, the properties block, and a block with its trailer.
//!
//! [`Table::open`](super::Table::open) runs the same decoders on a whole file; these entry
//! points exist so that each decoder can be fed bytes directly (the fuzz targets in `fuzz/`,
//! tools that inspect a damaged table). Every function returns an error for malformed input
//! and never panics, whatever the bytes.

use std::sync::Arc;

use super::block::{Block, BlockCursor, KeyBounds};
use super::filter::Bloom;
use super::format::{block_checksum, split_trailer, BlockHandle, Footer};
use super::TableProps;
use crate::{Error, Result};

/// Where a block lies in its table: (offset, length of its contents). The 5-byte trailer
/// (type byte and masked CRC32C) follows the contents.
pub type Handle = (u64, u64);

/// The block handles a footer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FooterHandles {
    /// The bloom filter block.
    pub filter: Handle,
    /// The index block.
    pub index: Handle,
    /// The properties block.
    pub props: Handle,
}

fn pair(h: BlockHandle) -> Handle {
    (h.offset, h.size)
}

/// Decodes the 64-byte footer (magic, checksum, format version, block handles). It does not
/// check that the handles fit a file: [`Table::open`](super::Table::open) does.
pub fn decode_footer(bytes: &[u8]) -> std::result::Result<FooterHandles, String> {
    let f = Footer::decode(bytes)?;
    Ok(FooterHandles {
        filter: pair(f.filter),
        index: pair(f.index),
        props: pair(f.props),
    })
}

fn origin(what: &str) -> Arc<str> {
    Arc::from(what)
}

/// Decodes and validates the contents (no trailer) of a data block: restart array, entry
/// headers, internal keys in strictly ascending order. Returns the entries (internal key,
/// value) in order.
pub fn decode_data_block(contents: Vec<u8>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let block = Block::new(contents, origin("data block"))?;
    block.validate(KeyBounds::default())?;
    block.entries()
}

/// Decodes and validates the contents (no trailer) of an index block: a block whose values
/// are block handles. Returns (separator key, handle of the data block) in order.
pub fn decode_index_block(contents: Vec<u8>) -> Result<Vec<(Vec<u8>, Handle)>> {
    let block = Block::new(contents, origin("index block"))?;
    block.validate(KeyBounds::default())?;
    let mut out = Vec::new();
    let mut cursor = BlockCursor::default();
    cursor.seek_to_first(&block)?;
    while cursor.valid() {
        let handle = BlockHandle::decode_exact(cursor.value(&block))
            .ok_or_else(|| block.corrupt(format!("bad handle in index entry {}", out.len())))?;
        out.push((cursor.key().to_vec(), pair(handle)));
        cursor.next(&block)?;
    }
    Ok(out)
}

/// Walks the contents of a block *without* validating it first (readers always validate;
/// the cursor must still report damage instead of panicking): every entry from the first,
/// then a seek to each of `targets`. Returns the entries walked before the end or the
/// first error.
pub fn probe_block(contents: Vec<u8>, targets: &[&[u8]]) -> Result<usize> {
    let block = Block::new(contents, origin("block"))?;
    let mut cursor = BlockCursor::default();
    let mut walked = 0;
    cursor.seek_to_first(&block)?;
    while cursor.valid() {
        walked += 1;
        let _ = cursor.value(&block);
        cursor.next(&block)?;
    }
    for target in targets {
        cursor.seek(&block, target)?;
        if cursor.valid() {
            let _ = (cursor.key(), cursor.value(&block));
            cursor.next(&block)?;
        }
    }
    Ok(walked)
}

/// A bloom filter decoded from a filter block.
pub struct Filter(Bloom);

impl Filter {
    /// False only if the table certainly holds no entry of `user_key`.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.0.may_contain(user_key)
    }
}

/// Decodes the contents (no trailer) of a filter block: `Ok(None)` for "no filter".
pub fn decode_filter(contents: Vec<u8>) -> std::result::Result<Option<Filter>, String> {
    Ok(Bloom::decode(contents)?.map(Filter))
}

/// Decodes and checks the contents (no trailer) of a properties block.
pub fn decode_props(contents: &[u8]) -> std::result::Result<TableProps, String> {
    TableProps::decode(contents)
}

/// The contents of the block at `handle` in `table`, after checking that it lies inside
/// the table and that its trailer (type and checksum) matches.
pub fn block_contents(table: &[u8], handle: Handle) -> Result<Vec<u8>> {
    let h = BlockHandle {
        offset: handle.0,
        size: handle.1,
    };
    let bad = |detail: String| Error::corruption(format!("block at offset {}", h.offset), detail);
    let range = h
        .end()
        .and_then(|end| Some(usize::try_from(h.offset).ok()?..usize::try_from(end).ok()?));
    let Some(bytes) = range.and_then(|r| table.get(r)) else {
        return Err(bad(format!("{} bytes pass the end of the table", h.size)));
    };
    let Some((contents, block_type, stored)) = split_trailer(bytes) else {
        return Err(bad(format!(
            "{} bytes, shorter than a block trailer",
            h.size
        )));
    };
    let actual = block_checksum(contents, block_type);
    if stored != actual {
        return Err(bad(format!(
            "checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
        )));
    }
    super::compression::decompress(block_type, contents).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{internal_key, ValueKind};
    use crate::sst::{TableBuilder, TableOptions};

    #[test]
    fn parts_of_a_built_table_decode() {
        let mut b = TableBuilder::new(TableOptions {
            block_size: 64,
            block_restart_interval: 2,
            bloom_bits_per_key: 10,
            compression: Default::default(),
        });
        for i in 0..20u32 {
            let k = internal_key(format!("k{i:03}").as_bytes(), 5, ValueKind::Put);
            b.add(&k, b"value").unwrap();
        }
        let table = b.finish().unwrap().data;
        let footer = decode_footer(&table[table.len() - 64..]).unwrap();
        let index = decode_index_block(block_contents(&table, footer.index).unwrap()).unwrap();
        assert!(index.len() > 1);
        let mut entries = 0;
        for (_, handle) in &index {
            entries += decode_data_block(block_contents(&table, *handle).unwrap())
                .unwrap()
                .len();
        }
        assert_eq!(entries, 20);
        let filter = decode_filter(block_contents(&table, footer.filter).unwrap()).unwrap();
        assert!(filter.unwrap().may_contain(b"k007"));
        let props = decode_props(&block_contents(&table, footer.props).unwrap()).unwrap();
        assert_eq!(props.entries, 20);
        // A handle past the end, or one whose length overflows, is an error.
        assert!(block_contents(&table, (table.len() as u64, 1)).is_err());
        assert!(block_contents(&table, (u64::MAX - 2, 1)).is_err());
        assert!(probe_block(vec![1, 0, 0], &[]).is_err());
    }
}
