//! Reading a table: [`Table::open`] reads and checks the footer, properties, index and
//! filter once; data blocks are read, checksummed and validated on demand.

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::{Block, BlockCursor, KeyBounds};
use super::cache::CacheSlot;
use super::filter::Bloom;
use super::format::BLOCK_TYPE_RAW;
use super::format::{
    block_checksum, split_trailer, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use super::TableProps;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind, MAX_SEQ};
use crate::source::RandomAccess;
use crate::{Error, Result};

/// The index block, decoded once: each data block's separator (a key at or above the
/// block's last key and below the next block's first) and handle. The separators sit in one
/// buffer, so a binary search reads two dense arrays instead of one allocation per probe
/// (a `readrandom` spent a fifth of its time in the search with one `Vec` per separator).
#[derive(Default)]
struct Index {
    keys: Vec<u8>,
    /// Where separator `i` ends in `keys`; it starts where separator `i - 1` ends.
    ends: Vec<usize>,
    handles: Vec<BlockHandle>,
}

impl Index {
    fn len(&self) -> usize {
        self.handles.len()
    }

    fn push(&mut self, separator: &[u8], handle: BlockHandle) {
        self.keys.extend_from_slice(separator);
        self.ends.push(self.keys.len());
        self.handles.push(handle);
    }

    fn separator(&self, i: usize) -> Option<&[u8]> {
        let start = match i.checked_sub(1) {
            Some(p) => *self.ends.get(p)?,
            None => 0,
        };
        self.keys.get(start..*self.ends.get(i)?)
    }

    fn handle(&self, i: usize) -> Option<BlockHandle> {
        self.handles.get(i).copied()
    }

    /// The first block whose separator is not below `target`.
    fn first_not_below(&self, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let sep = self.separator(mid).unwrap_or_default();
            if key::compare(sep, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// An open table.
pub struct Table {
    file: Arc<dyn RandomAccess>,
    /// The file's name for errors.
    what: String,
    props: TableProps,
    index: Index,
    filter: Option<Bloom>,
    /// Where its validated data blocks are cached, if anywhere.
    cache: Option<CacheSlot>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("file", &self.what)
            .field("entries", &self.props.entries)
            .field("data_blocks", &self.index.len())
            .finish()
    }
}

impl Table {
    /// Opens the table in `file`: checks the footer and the layout of the blocks, reads the
    /// properties, the index and the filter and verifies their checksums. Any damage is an
    /// `Error::Corruption` naming the file and the block.
    pub fn open(file: Arc<dyn RandomAccess>) -> Result<Table> {
        Table::open_cached(file, None)
    }

    /// [`Table::open`], with the data blocks that gets and iterators read kept in `cache`.
    pub fn open_cached(file: Arc<dyn RandomAccess>, cache: Option<CacheSlot>) -> Result<Table> {
        let what = file.what();
        let size = file.size();
        let footer = read_footer(file.as_ref(), &what, size)?;
        let mut table = Table {
            file,
            what,
            props: TableProps::default(),
            index: Index::default(),
            filter: None,
            cache,
        };
        table.props = table.read_props(footer)?;
        table.index = table.read_index(footer)?;
        let filter = table.read_block(footer.filter, "filter")?;
        table.filter = Bloom::decode(filter)
            .map_err(|d| Error::corruption(table.origin("filter", footer.filter), d))?;
        Ok(table)
    }

    /// The table's properties.
    pub fn props(&self) -> &TableProps {
        &self.props
    }

    /// False only if the table certainly holds no entry of `user_key` (bloom filter;
    /// always true for a table without a filter).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// Newest entry of `user_key` with seq <= snapshot: Some((kind, value)) or None.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Result<Option<(ValueKind, Vec<u8>)>> {
        if !self.may_contain(user_key) {
            return Ok(None);
        }
        let target = key::seek_key(user_key, snapshot.min(MAX_SEQ));
        let mut cursor = BlockCursor::default();
        for i in self.first_block_for(&target)..self.index.len() {
            let block = self.data_block(i, Fill::Yes)?;
            cursor.seek(&block, &target)?;
            if !cursor.valid() {
                // Every key of this block is below the target: the answer, if any, is
                // the first entry of the next block.
                continue;
            }
            let parsed = key::parse(cursor.key())
                .ok_or_else(|| block.corrupt("invalid internal key".into()))?;
            if parsed.user_key != user_key {
                return Ok(None);
            }
            return Ok(Some((parsed.kind, cursor.value(&block).to_vec())));
        }
        Ok(None)
    }

    /// The number of data blocks.
    pub fn data_blocks(&self) -> usize {
        self.index.len()
    }

    /// Where data block `i` is stored (its bytes as stored, compressed or not).
    #[cfg(test)]
    pub(crate) fn data_block_handle(&self, i: usize) -> BlockHandle {
        self.index.handle(i).unwrap_or_default()
    }

    /// User keys that cut the table into at most `max` ranges of about as many data
    /// blocks each, with each range's bytes (for splitting a compaction into
    /// subcompactions): a range ends at its last block's index separator, the last range
    /// at the table's largest key.
    pub fn anchors(&self, max: usize) -> Vec<crate::compaction::subcompaction::Anchor> {
        let blocks = self.index.len();
        let per_range = blocks.div_ceil(max.max(1)).max(1);
        (0..blocks)
            .step_by(per_range)
            .map(|start| {
                let end = (start + per_range).min(blocks);
                let upto = match end < blocks {
                    true => self.index.separator(end - 1).unwrap_or_default(),
                    false => &self.props.largest[..],
                };
                crate::compaction::subcompaction::Anchor {
                    user_key: crate::key::user_key(upto).to_vec(),
                    bytes: (start..end)
                        .filter_map(|i| self.index.handle(i))
                        .map(|h| h.size)
                        .sum(),
                }
            })
            .collect()
    }

    /// The internal keys data block `i` lies between, both inclusive: the previous block's
    /// index separator (the table's smallest key for the first block) and its own (the
    /// largest key for the last). What a damaged block loses lies in this range.
    pub fn data_block_bounds(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let last = i.checked_add(1)? == self.index.len();
        let upto = if last {
            &self.props.largest[..]
        } else {
            self.index.separator(i)?
        };
        let after = match i.checked_sub(1) {
            Some(p) => self.index.separator(p)?,
            None => &self.props.smallest[..],
        };
        Some((after, upto))
    }

    /// Every entry (internal key, value) of data block `i`, read, checksummed and validated
    /// as a read would: for checks and repairs that go on past a damaged block.
    pub fn data_block_entries(&self, i: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        if i >= self.index.len() {
            return Err(Error::corruption(
                self.what.clone(),
                format!("no data block {i} in {} blocks", self.index.len()),
            ));
        }
        self.read_data_block(i)?.entries()
    }

    /// A cursor over all entries of the table, for gets and user iterators: the blocks it
    /// reads enter the cache.
    pub fn iter(self: &Arc<Self>) -> TableIter {
        self.iter_with(Fill::Yes)
    }

    /// A cursor for a compaction: it uses cached blocks but adds none (RocksDB's
    /// compactions read with `fill_cache` off), so one compaction does not evict what the
    /// readers use.
    pub fn compaction_iter(self: &Arc<Self>) -> TableIter {
        self.iter_with(Fill::No)
    }

    fn iter_with(self: &Arc<Self>, fill: Fill) -> TableIter {
        TableIter {
            table: Arc::clone(self),
            block_index: 0,
            block: None,
            cursor: BlockCursor::default(),
            fill,
        }
    }

    /// The first data block that may hold a key `>= target`.
    fn first_block_for(&self, target: &[u8]) -> usize {
        self.index.first_not_below(target)
    }

    /// Names a block in errors: the file, the block's kind and its offset.
    fn origin(&self, kind: &str, handle: BlockHandle) -> String {
        format!("{}, {kind} block at offset {}", self.what, handle.offset)
    }

    /// Reads a block's contents and verifies its trailer.
    fn read_block(&self, handle: BlockHandle, kind: &str) -> Result<Vec<u8>> {
        let bad = |detail: String| Error::corruption(self.origin(kind, handle), detail);
        let end = handle.end().filter(|&e| e <= self.file.size());
        let len = end.and_then(|_| usize::try_from(handle.size).ok());
        let Some(len) = len else {
            return Err(bad(format!(
                "block of {} bytes passes the end of the file",
                handle.size
            )));
        };
        let mut buf = vec![0u8; len + BLOCK_TRAILER_LEN as usize];
        self.file.read_exact_at(handle.offset, &mut buf)?;
        let Some((contents, block_type, stored)) = split_trailer(&buf) else {
            return Err(bad(format!(
                "{} bytes, shorter than a block trailer",
                buf.len()
            )));
        };
        let actual = block_checksum(contents, block_type);
        if stored != actual {
            return Err(bad(format!(
                "checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
            )));
        }
        if block_type == BLOCK_TYPE_RAW {
            buf.truncate(len);
            return Ok(buf);
        }
        super::compression::decompress(block_type, contents).map_err(bad)
    }

    fn read_props(&self, footer: Footer) -> Result<TableProps> {
        let data = self.read_block(footer.props, "properties")?;
        let bad =
            |detail: String| Error::corruption(self.origin("properties", footer.props), detail);
        let props = TableProps::decode(&data).map_err(bad)?;
        let sizes_match = props.data_size == footer.filter.offset
            && Some(props.filter_size) == footer.filter.end().map(|e| e - footer.filter.offset)
            && Some(props.index_size) == footer.index.end().map(|e| e - footer.index.offset);
        if !sizes_match {
            return Err(bad("block sizes disagree with the footer".into()));
        }
        Ok(props)
    }

    /// Reads the index and checks that its data blocks tile the file from offset 0 to the
    /// filter block, one per data block the properties count.
    fn read_index(&self, footer: Footer) -> Result<Index> {
        let origin = self.origin("index", footer.index);
        let block = Block::new(self.read_block(footer.index, "index")?, Arc::from(origin))?;
        block.validate(KeyBounds::default())?;
        let mut index = Index::default();
        let mut cursor = BlockCursor::default();
        let mut next_offset = Some(0u64);
        cursor.seek_to_first(&block)?;
        while cursor.valid() {
            let handle = BlockHandle::decode_exact(cursor.value(&block))
                .filter(|h| Some(h.offset) == next_offset)
                .ok_or_else(|| {
                    block.corrupt(format!("bad handle of data block {}", index.len()))
                })?;
            next_offset = handle.end();
            index.push(cursor.key(), handle);
            cursor.next(&block)?;
        }
        if next_offset != Some(footer.filter.offset) || index.len() as u64 != self.props.data_blocks
        {
            return Err(block.corrupt(format!(
                "{} data blocks do not cover the {} data bytes the properties announce",
                index.len(),
                footer.filter.offset
            )));
        }
        Ok(index)
    }

    /// Data block `i`, from the cache or read and validated (and cached if `fill`).
    fn data_block(&self, i: usize, fill: Fill) -> Result<Arc<Block>> {
        let Some(slot) = &self.cache else {
            return self.read_data_block(i).map(Arc::new);
        };
        let offset = self.index.handle(i).map_or(u64::MAX, |h| h.offset);
        if let Some(block) = slot.cache.get(slot.file, offset) {
            return Ok(block);
        }
        let block = Arc::new(self.read_data_block(i)?);
        if fill == Fill::Yes {
            slot.cache.insert(slot.file, offset, Arc::clone(&block));
        }
        Ok(block)
    }

    /// Reads data block `i` and validates it: keys ascend, lie within its index range, and
    /// the first and last blocks start and end with the table's smallest and largest keys.
    fn read_data_block(&self, i: usize) -> Result<Block> {
        let (Some(handle), Some(separator)) = (self.index.handle(i), self.index.separator(i))
        else {
            return Err(Error::corruption(
                self.what.to_string(),
                format!("no data block {i} in an index of {}", self.index.len()),
            ));
        };
        let origin = Arc::from(self.origin("data", handle));
        let block = Block::new(self.read_block(handle, "data")?, origin)?;
        let bounds = KeyBounds {
            after: i.checked_sub(1).and_then(|p| self.index.separator(p)),
            upto: Some(separator),
            first: (i == 0).then_some(&self.props.smallest[..]),
            last: (i + 1 == self.index.len()).then_some(&self.props.largest[..]),
        };
        if block.validate(bounds)? == 0 {
            return Err(block.corrupt("empty data block".into()));
        }
        Ok(block)
    }
}

/// Reads and decodes the footer, and checks that the filter, index and properties blocks
/// follow each other up to the footer.
fn read_footer(file: &dyn RandomAccess, what: &str, size: u64) -> Result<Footer> {
    let Some(at) = size.checked_sub(FOOTER_LEN) else {
        return Err(Error::corruption(
            what,
            format!("{size} bytes cannot hold a table footer of {FOOTER_LEN} bytes"),
        ));
    };
    let mut buf = vec![0u8; FOOTER_LEN as usize];
    file.read_exact_at(at, &mut buf)?;
    let bad = |detail: String| Error::corruption(format!("{what}, footer at offset {at}"), detail);
    let f = Footer::decode(&buf).map_err(bad)?;
    let tiled = f.filter.end() == Some(f.index.offset)
        && f.index.end() == Some(f.props.offset)
        && f.props.end() == Some(at);
    if !tiled {
        return Err(bad(format!(
            "block handles do not fit the file of {size} bytes"
        )));
    }
    Ok(f)
}

/// A cursor over a table's entries ([`InternalIterator`]). It reads one data block at a
/// time and keeps it while it is positioned inside it.
pub struct TableIter {
    table: Arc<Table>,
    block_index: usize,
    block: Option<Arc<Block>>,
    cursor: BlockCursor,
    fill: Fill,
}

/// Whether a block read from the device enters the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    Yes,
    No,
}

impl TableIter {
    /// Positions on the first entry of data block `i` (or invalid past the last block).
    fn first_of_block(&mut self, i: usize) -> Result<()> {
        if !self.load(i)? {
            return Ok(());
        }
        let block = self.block.as_ref().ok_or_else(|| self.lost())?;
        self.cursor.seek_to_first(block)
    }

    /// Positions on the last entry of data block `i`.
    fn last_of_block(&mut self, i: usize) -> Result<()> {
        if !self.load(i)? {
            return Ok(());
        }
        let block = self.block.as_ref().ok_or_else(|| self.lost())?;
        self.cursor.seek_to_last(block)
    }

    /// Makes data block `i` current (kept if it already is); false past the last block.
    fn load(&mut self, i: usize) -> Result<bool> {
        if self.block.is_some() && self.block_index == i {
            return Ok(true);
        }
        self.block = None;
        if i >= self.table.index.len() {
            return Ok(false);
        }
        self.block = Some(self.table.data_block(i, self.fill)?);
        self.block_index = i;
        Ok(true)
    }

    fn lost(&self) -> Error {
        Error::corruption(self.table.what.clone(), "iterator lost its block")
    }

    fn seek_inner(&mut self, target: &[u8]) -> Result<()> {
        let i = self.table.first_block_for(target);
        if !self.load(i)? {
            return Ok(());
        }
        let block = self.block.as_ref().ok_or_else(|| self.lost())?;
        self.cursor.seek(block, target)?;
        if !self.cursor.valid() {
            self.first_of_block(i + 1)?;
        }
        Ok(())
    }

    fn next_inner(&mut self) -> Result<()> {
        let Some(block) = self.block.as_ref() else {
            return Ok(());
        };
        self.cursor.next(block)?;
        if !self.cursor.valid() {
            self.first_of_block(self.block_index + 1)?;
        }
        Ok(())
    }

    fn prev_inner(&mut self) -> Result<()> {
        let Some(block) = self.block.as_ref() else {
            return Ok(());
        };
        self.cursor.prev(block)?;
        if !self.cursor.valid() {
            match self.block_index.checked_sub(1) {
                Some(i) => self.last_of_block(i)?,
                None => self.block = None,
            }
        }
        Ok(())
    }

    /// Leaves the iterator invalid when a step failed.
    fn settle(&mut self, result: Result<()>) -> Result<()> {
        if result.is_err() {
            self.block = None;
        }
        result
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.block.is_some() && self.cursor.valid()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let r = self.first_of_block(0);
        self.settle(r)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_inner(target);
        self.settle(r)
    }

    fn next(&mut self) -> Result<()> {
        let r = self.next_inner();
        self.settle(r)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let r = match self.table.index.len().checked_sub(1) {
            Some(last) => self.last_of_block(last),
            None => {
                self.block = None;
                Ok(())
            }
        };
        self.settle(r)
    }

    fn prev(&mut self) -> Result<()> {
        let r = self.prev_inner();
        self.settle(r)
    }

    fn key(&self) -> &[u8] {
        if self.valid() {
            self.cursor.key()
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        match &self.block {
            Some(block) if self.cursor.valid() => self.cursor.value(block),
            _ => &[],
        }
    }
}
