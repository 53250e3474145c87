//! Builds a whole table in memory: data blocks, then the filter, index and properties
//! blocks, then the footer.

use std::cmp::Ordering;
use std::sync::{Mutex, PoisonError};

use super::block::BlockBuilder;
use super::compression::compress;
use super::format::{
    append_block, append_stored_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use super::{filter, TableOptions, TableProps};
use crate::blob::{blob_record_bytes, BlobIndex};
use crate::key::{self, ValueKind, MAX_SEQ};
use crate::{Error, Result};

/// Largest key or value a table accepts: lengths are stored as 32-bit varints, and a block
/// holding one such entry must still have 32-bit offsets.
const MAX_PART_LEN: usize = (u32::MAX / 4) as usize;

/// Largest block size honoured, so that a block (this much plus one maximal entry) keeps
/// its offsets within 32 bits whatever `block_size` says.
const MAX_BLOCK_SIZE: u64 = 1 << 30;

/// Most finished tables' buffers kept for the next builders ([`BuiltTable::recycle`]): a
/// flush's and a compaction's, RocksDB's default background jobs. More builders at once
/// (subcompactions) allocate and free the rest; a kept buffer stays resident, so keeping
/// more would hold memory for work that may never come.
const SPARE_BUFFERS: usize = 2;

/// The largest buffer kept for reuse (a table of a larger target is rare).
const SPARE_CAPACITY: usize = 256 << 20;

/// Output buffers of written tables, handed to the next builders. A flush and a compaction
/// each build a whole table in memory; freeing that buffer after every table and allocating
/// the next made glibc keep the freed blocks in its heaps (about 25 MiB of peak RSS beyond
/// what the process used, docs/BENCHMARKS.md), where reusing them keeps them in use.
static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

fn spare_buffer() -> Vec<u8> {
    let mut spare = SPARE.lock().unwrap_or_else(PoisonError::into_inner);
    spare.pop().unwrap_or_default()
}

/// A finished table: its bytes and its properties.
#[derive(Clone, Debug)]
pub struct BuiltTable {
    /// The complete file contents.
    pub data: Vec<u8>,
    /// The properties stored in it.
    pub props: TableProps,
    /// The lowest blob file number its blob references name (`None`: it holds none).
    pub oldest_blob_file: Option<u64>,
}

impl BuiltTable {
    /// Gives the table's buffer to the next builder, once its bytes are written.
    pub fn recycle(self) {
        let mut data = self.data;
        if data.capacity() > SPARE_CAPACITY {
            return;
        }
        data.clear();
        let mut spare = SPARE.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < SPARE_BUFFERS {
            spare.push(data);
        }
    }
}

/// Builds a table from entries added in strictly increasing internal-key order.
pub struct TableBuilder {
    opts: TableOptions,
    out: Vec<u8>,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// The last flushed data block, whose index entry waits for the next key (so the
    /// separator can be shorter than the block's last key).
    pending: Option<BlockHandle>,
    last_key: Vec<u8>,
    /// Filter hashes of the distinct user keys so far.
    hashes: Vec<u64>,
    props: TableProps,
}

impl TableBuilder {
    /// An empty builder.
    pub fn new(opts: TableOptions) -> TableBuilder {
        TableBuilder {
            data_block: BlockBuilder::new(opts.block_restart_interval),
            // Every index entry is a restart point, so a seek is a pure binary search.
            index_block: BlockBuilder::new(1),
            opts,
            out: spare_buffer(),
            pending: None,
            last_key: Vec::new(),
            hashes: Vec::new(),
            props: TableProps::default(),
        }
    }

    /// Appends an entry. `ikey` must be a valid internal key greater than every key added
    /// before (by [`key::compare`]); otherwise `InvalidArgument` and nothing changes.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let parsed = key::parse(ikey).ok_or_else(|| {
            Error::InvalidArgument(format!("{} bytes are not an internal key", ikey.len()))
        })?;
        if !self.is_empty() && key::compare(&self.last_key, ikey) != Ordering::Less {
            return Err(Error::InvalidArgument(
                "table keys must be added in strictly increasing order".into(),
            ));
        }
        if ikey.len() > MAX_PART_LEN || value.len() > MAX_PART_LEN {
            return Err(Error::InvalidArgument(format!(
                "entry too large for a table (key {} bytes, value {} bytes)",
                ikey.len(),
                value.len()
            )));
        }
        if self.block_full(ikey, value) {
            self.flush_data_block();
        }
        if let Some(handle) = self.pending.take() {
            let sep = separator(&self.last_key, ikey);
            self.add_index_entry(&sep, handle);
        }
        let new_user_key = self.is_empty() || key::user_key(&self.last_key) != parsed.user_key;
        if new_user_key && self.opts.bloom_bits_per_key > 0 {
            self.hashes.push(filter::key_hash(parsed.user_key));
        }
        if parsed.kind == ValueKind::BlobIndex {
            let index = BlobIndex::decode(value)?;
            let bytes = blob_record_bytes(parsed.user_key.len(), index.size as usize);
            let refs = self.props.blob_refs.entry(index.file).or_default();
            refs.add(bytes);
        }
        self.data_block.add(ikey, value);
        self.count(ikey, parsed.seq, parsed.kind, value.len());
        Ok(())
    }

    /// RocksDB's flush-by-size policy: cut when the block reached `block_size`, or when
    /// this entry would push it over and it is already within 10% of the size.
    fn block_full(&self, ikey: &[u8], value: &[u8]) -> bool {
        if self.data_block.is_empty() {
            return false;
        }
        let size = self.data_block.size_estimate() as u64;
        let target = u64::from(self.opts.block_size).min(MAX_BLOCK_SIZE);
        let grown = size + BlockBuilder::entry_estimate(ikey, value) as u64;
        size >= target || (grown > target && size * 10 >= target * 9)
    }

    fn count(&mut self, ikey: &[u8], seq: u64, kind: ValueKind, value_len: usize) {
        let p = &mut self.props;
        if p.entries == 0 {
            p.smallest = ikey.to_vec();
            p.smallest_seq = seq;
            p.largest_seq = seq;
        }
        p.smallest_seq = p.smallest_seq.min(seq);
        p.largest_seq = p.largest_seq.max(seq);
        p.entries += 1;
        p.deletions += u64::from(kind == ValueKind::Delete);
        p.raw_key_size += ikey.len() as u64;
        p.raw_value_size += value_len as u64;
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
    }

    fn flush_data_block(&mut self) {
        let contents = self.data_block.finish();
        self.pending = Some(match compress(self.opts.compression, &contents) {
            Some((stored, block_type)) => append_stored_block(&mut self.out, &stored, block_type),
            None => append_block(&mut self.out, &contents),
        });
        self.props.data_blocks += 1;
    }

    fn add_index_entry(&mut self, sep: &[u8], handle: BlockHandle) {
        let mut value = Vec::with_capacity(20);
        handle.encode_to(&mut value);
        self.index_block.add(sep, &value);
    }

    /// Bytes the table would have if it were finished now (exact up to a few bytes of
    /// varints and of the last index separator).
    pub fn estimated_size(&self) -> u64 {
        let trailer = BLOCK_TRAILER_LEN as usize;
        let mut size = self.out.len() + self.index_block.size_estimate() + trailer;
        if !self.data_block.is_empty() {
            size += self.data_block.size_estimate() + trailer;
        }
        if self.pending.is_some() || !self.data_block.is_empty() {
            // The index entry of the last block: its key, a 3-varint header, a handle.
            size += self.last_key.len() + 3 + 20 + 4;
        }
        if self.opts.bloom_bits_per_key > 0 {
            let keys = self.hashes.len() as u64;
            size += filter::bitmap_bytes(keys, self.opts.bloom_bits_per_key) as usize + 1;
        }
        size += trailer;
        size += TableProps::encoded_len_bound(
            self.props.smallest.len(),
            self.last_key.len(),
            self.props.blob_refs.len(),
        );
        size += trailer;
        (size as u64) + FOOTER_LEN
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.props.entries
    }

    /// Whether no entry was added.
    pub fn is_empty(&self) -> bool {
        self.props.entries == 0
    }

    /// The smallest internal key added so far.
    pub fn smallest_key(&self) -> Option<&[u8]> {
        (!self.is_empty()).then_some(&self.props.smallest[..])
    }

    /// The largest internal key added so far (the last one).
    pub fn largest_key(&self) -> Option<&[u8]> {
        (!self.is_empty()).then_some(&self.last_key[..])
    }

    /// Writes the remaining blocks and the footer. An empty builder gives a valid table
    /// with no data blocks.
    pub fn finish(mut self) -> Result<BuiltTable> {
        if !self.data_block.is_empty() {
            self.flush_data_block();
        }
        if let Some(handle) = self.pending.take() {
            let last = std::mem::take(&mut self.last_key);
            self.add_index_entry(&last, handle);
            self.last_key = last;
        }
        self.props.largest = self.last_key.clone();
        self.props.data_size = self.out.len() as u64;
        let filter_contents = filter::build(&self.hashes, self.opts.bloom_bits_per_key);
        let filter = append_block(&mut self.out, &filter_contents);
        let index_contents = self.index_block.finish();
        let index = append_block(&mut self.out, &index_contents);
        self.props.filter_size = filter.size + BLOCK_TRAILER_LEN;
        self.props.index_size = index.size + BLOCK_TRAILER_LEN;
        let props = append_block(&mut self.out, &self.props.encode());
        let footer = Footer {
            filter,
            index,
            props,
        };
        self.out.extend_from_slice(&footer.encode());
        Ok(BuiltTable {
            data: self.out,
            oldest_blob_file: self.props.blob_refs.keys().next().copied(),
            props: self.props,
        })
    }
}

/// A key `>= a` and `< b` (internal keys, `a < b`), shorter than `a` when the user keys
/// allow it: the user key is cut after the first differing byte, which is incremented, and
/// gets the largest trailer so it sorts before every entry of that user key.
fn separator(a: &[u8], b: &[u8]) -> Vec<u8> {
    let (ua, ub) = (key::user_key(a), key::user_key(b));
    let n = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
    let (Some((common, _)), Some(&x), Some(&y)) = (ua.split_at_checked(n), ua.get(n), ub.get(n))
    else {
        return a.to_vec();
    };
    if n + 1 < ua.len() && x < 0xff && x + 1 < y {
        let mut short = common.to_vec();
        short.push(x + 1);
        return key::internal_key(&short, MAX_SEQ, ValueKind::FOR_SEEK);
    }
    a.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::internal_key;

    #[test]
    fn separators_lie_between_and_are_short() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"abcdef", b"abzzz"),
            (b"abcdef", b"abd"),
            (b"abc", b"abd"),
            (b"ab", b"abc"),
            (b"a\xff\xff", b"b"),
            (b"key", b"key"),
        ];
        for (ua, ub) in cases {
            let a = internal_key(ua, 10, ValueKind::Put);
            let b = internal_key(ub, 5, ValueKind::Put);
            let s = separator(&a, &b);
            assert!(key::parse(&s).is_some());
            assert_ne!(key::compare(&s, &a), Ordering::Less, "{ua:?} {ub:?}");
            assert_eq!(key::compare(&s, &b), Ordering::Less, "{ua:?} {ub:?}");
            assert!(s.len() <= a.len());
        }
        let s = separator(
            &internal_key(b"abcdef", 1, ValueKind::Put),
            &internal_key(b"abzzz", 1, ValueKind::Put),
        );
        assert_eq!(key::user_key(&s), b"abd");
    }

    #[test]
    fn add_refuses_disorder_duplicates_and_non_keys() {
        let mut b = TableBuilder::new(TableOptions::default());
        b.add(&internal_key(b"b", 5, ValueKind::Put), b"v").unwrap();
        for bad in [
            internal_key(b"b", 5, ValueKind::Put),
            internal_key(b"b", 6, ValueKind::Put),
            internal_key(b"a", 1, ValueKind::Put),
            b"short".to_vec(),
        ] {
            let err = b.add(&bad, b"v").unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        }
        b.add(&internal_key(b"b", 4, ValueKind::Delete), b"")
            .unwrap();
        assert_eq!(b.entries(), 2);
        assert_eq!(
            b.smallest_key(),
            Some(&internal_key(b"b", 5, ValueKind::Put)[..])
        );
        assert_eq!(
            b.largest_key(),
            Some(&internal_key(b"b", 4, ValueKind::Delete)[..])
        );
        let t = b.finish().unwrap();
        assert_eq!((t.props.entries, t.props.deletions), (2, 1));
        assert_eq!((t.props.smallest_seq, t.props.largest_seq), (4, 5));
    }

    #[test]
    fn estimated_size_tracks_the_final_size() {
        for bits in [0, 10] {
            let opts = TableOptions {
                block_size: 1024,
                block_restart_interval: 16,
                bloom_bits_per_key: bits,
                compression: Default::default(),
            };
            let mut b = TableBuilder::new(opts);
            assert!(b.estimated_size() >= FOOTER_LEN);
            for i in 0..3000u32 {
                let k = internal_key(format!("key{i:08}").as_bytes(), 1, ValueKind::Put);
                b.add(&k, &vec![b'v'; (i % 97) as usize]).unwrap();
                if i % 500 == 0 {
                    let est = b.estimated_size();
                    let snapshot = clone_builder(&b);
                    let real = snapshot.finish().unwrap().data.len() as u64;
                    assert!(est.abs_diff(real) <= 128, "est {est} real {real} at {i}");
                }
            }
            let est = b.estimated_size();
            let real = b.finish().unwrap().data.len() as u64;
            assert!(est.abs_diff(real) <= 128, "est {est} real {real}");
        }
    }

    /// A copy of a builder's state (the builder itself is not `Clone`: tables are built once).
    fn clone_builder(b: &TableBuilder) -> TableBuilder {
        TableBuilder {
            opts: b.opts,
            out: b.out.clone(),
            data_block: b.data_block.clone(),
            index_block: b.index_block.clone(),
            pending: b.pending,
            last_key: b.last_key.clone(),
            hashes: b.hashes.clone(),
            props: b.props.clone(),
        }
    }
}
