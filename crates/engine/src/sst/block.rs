//! Blocks of sorted entries with prefix-compressed keys (LevelDB's block layout).
//!
//! An entry is `shared: varint32, non_shared: varint32, value_len: varint32, key suffix,
//! value`, where `shared` bytes of the key are taken from the previous key. Every
//! `restart_interval` entries a restart point stores its key whole (`shared == 0`); the
//! block ends with the restart offsets (u32 LE each) and their count (u32 LE). A seek
//! binary-searches the restart keys, then scans forward.
//!
//! A block read from a file is validated whole before use ([`Block::validate`]), so the
//! cursor can trust its structure; the cursor still reports damage instead of panicking.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use super::format::{get_varint32, le_u32, put_varint32};
use crate::key;
use crate::{Error, Result};

/// Builds one block in memory.
#[derive(Clone)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    since_restart: u32,
    interval: u32,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    /// A builder with a restart point every `interval` entries (0 is taken as 1).
    pub fn new(interval: u32) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            since_restart: 0,
            interval: interval.max(1),
            last_key: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.restarts.is_empty()
    }

    /// Appends an entry; the caller guarantees keys ascend and fit in u32 lengths.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.is_empty() || self.since_restart >= self.interval {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            0
        } else {
            common_prefix(&self.last_key, key)
        };
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        // `shared` is a common prefix length, at most `key.len()`.
        self.buf
            .extend_from_slice(key.get(shared..).unwrap_or_default());
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.since_restart += 1;
    }

    /// Size of the finished block if it were finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Upper bound of the bytes `add(key, value)` would add (headers, suffix, value, and a
    /// possible restart point).
    pub fn entry_estimate(key: &[u8], value: &[u8]) -> usize {
        15 + key.len() + value.len() + 4
    }

    /// The finished block's bytes; the builder is empty again afterwards.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.since_restart = 0;
        self.last_key.clear();
        out
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Which keys a block may hold, checked by [`Block::validate`].
#[derive(Clone, Copy, Default)]
pub(crate) struct KeyBounds<'a> {
    /// Every key must be greater than this (the previous block's index separator).
    pub after: Option<&'a [u8]>,
    /// Every key must be at most this (the block's own index separator).
    pub upto: Option<&'a [u8]>,
    /// The first key must be exactly this.
    pub first: Option<&'a [u8]>,
    /// The last key must be exactly this.
    pub last: Option<&'a [u8]>,
}

/// The contents of a block (without its trailer), with its restart array located.
pub(crate) struct Block {
    data: Vec<u8>,
    /// Offset of the restart array = end of the entries.
    restarts_at: usize,
    num_restarts: usize,
    /// Names the block in errors.
    origin: Arc<str>,
}

/// One decoded entry header: where its key suffix and value are.
struct Entry {
    shared: usize,
    suffix: Range<usize>,
    value: Range<usize>,
}

impl Block {
    /// Locates and checks the restart array. `origin` names the block in errors.
    pub fn new(data: Vec<u8>, origin: Arc<str>) -> Result<Block> {
        let bad = |detail: String| Error::corruption(origin.to_string(), detail);
        let len = data.len();
        let count_at = len
            .checked_sub(4)
            .ok_or_else(|| bad(format!("block of {len} bytes has no restart count")))?;
        let num_restarts = le_u32(&data, count_at) as usize;
        let restarts_at = num_restarts
            .checked_mul(4)
            .and_then(|n| count_at.checked_sub(n))
            .ok_or_else(|| {
                bad(format!(
                    "{num_restarts} restart points do not fit a block of {len} bytes"
                ))
            })?;
        let block = Block {
            data,
            restarts_at,
            num_restarts,
            origin,
        };
        block.check_restarts()?;
        Ok(block)
    }

    /// The bytes it holds in memory (its contents and its name), for the block cache.
    pub fn memory(&self) -> u64 {
        (self.data.capacity() + self.origin.len()) as u64
    }

    fn check_restarts(&self) -> Result<()> {
        if self.num_restarts == 0 {
            if self.restarts_at != 0 {
                return Err(self.corrupt("entries without restart points".into()));
            }
            return Ok(());
        }
        if self.restart(0) != 0 {
            return Err(self.corrupt("first restart point is not at offset 0".into()));
        }
        for i in 1..self.num_restarts {
            let (prev, cur) = (self.restart(i - 1), self.restart(i));
            if cur <= prev || cur >= self.restarts_at {
                return Err(self.corrupt(format!("restart point {i} at offset {cur} is invalid")));
            }
        }
        Ok(())
    }

    /// Every entry (key, value) in order; call after [`Block::validate`].
    pub fn entries(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut cursor = BlockCursor::default();
        cursor.seek_to_first(self)?;
        while cursor.valid() {
            out.push((cursor.key().to_vec(), cursor.value(self).to_vec()));
            cursor.next(self)?;
        }
        Ok(out)
    }

    /// A corruption error naming this block.
    pub fn corrupt(&self, detail: String) -> Error {
        Error::corruption(self.origin.to_string(), detail)
    }

    fn restart(&self, i: usize) -> usize {
        le_u32(&self.data, self.restarts_at + 4 * i) as usize
    }

    /// Decodes the entry header at `pos`; `prev_len` is the previous key's length.
    fn entry(&self, pos: usize, prev_len: usize) -> Result<Entry> {
        let entries = self.data.get(..self.restarts_at).unwrap_or_default();
        let mut p = pos;
        let mut next = || get_varint32(entries, &mut p).map(|v| v as usize);
        let header = (next(), next(), next());
        let (Some(shared), Some(non_shared), Some(value_len)) = header else {
            return Err(self.corrupt(format!("bad entry header at offset {pos}")));
        };
        let key_end = p.checked_add(non_shared);
        let value_end = key_end.and_then(|k| k.checked_add(value_len));
        match (key_end, value_end) {
            (Some(key_end), Some(value_end))
                if value_end <= entries.len() && shared <= prev_len =>
            {
                Ok(Entry {
                    shared,
                    suffix: p..key_end,
                    value: key_end..value_end,
                })
            }
            _ => Err(self.corrupt(format!(
                "entry at offset {pos} overruns the block or shares more than the previous key"
            ))),
        }
    }

    /// Checks every entry: headers in bounds, restart points at entries that share
    /// nothing, valid internal keys strictly ascending and within `bounds`. Returns the
    /// number of entries.
    pub fn validate(&self, bounds: KeyBounds<'_>) -> Result<usize> {
        let mut cursor = BlockCursor::default();
        let mut prev: Vec<u8> = Vec::new();
        let mut next_restart = 0;
        let mut count = 0;
        cursor.seek_to_first(self)?;
        while cursor.valid() {
            let at_restart =
                next_restart < self.num_restarts && self.restart(next_restart) == cursor.offset;
            if at_restart {
                next_restart += 1;
            } else if next_restart < self.num_restarts && self.restart(next_restart) < cursor.offset
            {
                return Err(self.corrupt("a restart point is not at an entry".into()));
            }
            if at_restart && cursor.shared != 0 {
                return Err(self.corrupt(format!(
                    "restart entry at offset {} shares a prefix",
                    cursor.offset
                )));
            }
            self.check_key(
                cursor.key(),
                (count > 0).then_some(&prev[..]),
                &bounds,
                count,
            )?;
            prev.clear();
            prev.extend_from_slice(cursor.key());
            count += 1;
            cursor.next(self)?;
        }
        if next_restart != self.num_restarts {
            return Err(self.corrupt("a restart point is not at an entry".into()));
        }
        if count > 0 && bounds.last.is_some_and(|l| l != &prev[..]) {
            return Err(self.corrupt("last key differs from the table's largest key".into()));
        }
        Ok(count)
    }

    fn check_key(
        &self,
        k: &[u8],
        prev: Option<&[u8]>,
        bounds: &KeyBounds<'_>,
        index: usize,
    ) -> Result<()> {
        if key::parse(k).is_none() {
            return Err(self.corrupt(format!("entry {index} has an invalid internal key")));
        }
        let out_of_order = prev.is_some_and(|p| key::compare(p, k) != Ordering::Less);
        let before = bounds
            .after
            .is_some_and(|a| key::compare(k, a) != Ordering::Greater);
        let beyond = bounds
            .upto
            .is_some_and(|u| key::compare(k, u) == Ordering::Greater);
        if out_of_order || before || beyond {
            return Err(self.corrupt(format!(
                "entry {index}: keys out of order or outside the block's index range"
            )));
        }
        if index == 0 && bounds.first.is_some_and(|f| f != k) {
            return Err(self.corrupt("first key differs from the table's smallest key".into()));
        }
        Ok(())
    }

    /// The whole key stored at restart point `i` (it shares nothing).
    fn restart_key(&self, i: usize) -> Result<&[u8]> {
        let pos = self.restart(i);
        let e = self.entry(pos, 0)?;
        self.suffix(&e)
    }

    /// The key bytes `e` stores (`entry` checked they lie in the block).
    fn suffix(&self, e: &Entry) -> Result<&[u8]> {
        let (start, end) = (e.suffix.start, e.suffix.end);
        self.data
            .get(e.suffix.clone())
            .ok_or_else(|| self.corrupt(format!("key bytes {start}..{end} outside the block")))
    }

    /// How many restart points lie before `offset` (restart 0 is at offset 0).
    fn restarts_before(&self, offset: usize) -> usize {
        let (mut lo, mut hi) = (0, self.num_restarts);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.restart(mid) < offset {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The first restart point whose key is `>= target`, or `num_restarts`.
    fn first_restart_at_or_after(&self, target: &[u8]) -> Result<usize> {
        let (mut lo, mut hi) = (0, self.num_restarts);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key::compare(self.restart_key(mid)?, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}

/// A position in a [`Block`]. The block is passed to every call, so the cursor can live
/// next to the block it reads without borrowing it.
#[derive(Default)]
pub(crate) struct BlockCursor {
    valid: bool,
    /// Offset of the current entry.
    offset: usize,
    /// Offset of the next entry.
    next: usize,
    /// Bytes the current entry shares with the previous key.
    shared: usize,
    key: Vec<u8>,
    value: Range<usize>,
}

impl BlockCursor {
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (valid cursor only).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value (valid cursor only).
    pub fn value<'b>(&self, block: &'b Block) -> &'b [u8] {
        block.data.get(self.value.clone()).unwrap_or_default()
    }

    pub fn seek_to_first(&mut self, block: &Block) -> Result<()> {
        self.restart_at(0);
        self.advance(block)
    }

    pub fn next(&mut self, block: &Block) -> Result<()> {
        self.advance(block)
    }

    /// Moves to the first entry `>= target`, or past the end.
    pub fn seek(&mut self, block: &Block, target: &[u8]) -> Result<()> {
        let first_ge = block.first_restart_at_or_after(target)?;
        // Entries before restart `first_ge` are all below the target, except possibly
        // those between restart `first_ge - 1` and `first_ge`.
        let start = first_ge.saturating_sub(1);
        if start >= block.num_restarts {
            self.valid = false;
            return Ok(());
        }
        self.restart_at(block.restart(start));
        loop {
            self.advance(block)?;
            if !self.valid || key::compare(&self.key, target) != Ordering::Less {
                return Ok(());
            }
        }
    }

    /// Moves to the last entry.
    pub fn seek_to_last(&mut self, block: &Block) -> Result<()> {
        let Some(last) = block.num_restarts.checked_sub(1) else {
            self.valid = false;
            return Ok(());
        };
        self.restart_at(block.restart(last));
        self.scan_to(block, block.restarts_at)
    }

    /// Moves to the previous entry, or past the front. Entries are prefix-compressed
    /// forward only, so it decodes again from the restart point before the current entry.
    pub fn prev(&mut self, block: &Block) -> Result<()> {
        let current = self.offset;
        let Some(r) = block.restarts_before(current).checked_sub(1) else {
            self.valid = false;
            return Ok(());
        };
        self.restart_at(block.restart(r));
        self.scan_to(block, current)
    }

    /// Decodes forward from the set restart point to the entry that ends at `end`.
    fn scan_to(&mut self, block: &Block, end: usize) -> Result<()> {
        loop {
            self.advance(block)?;
            if !self.valid || self.next >= end {
                return Ok(());
            }
        }
    }

    fn restart_at(&mut self, pos: usize) {
        self.key.clear();
        self.next = pos;
        self.valid = false;
    }

    fn advance(&mut self, block: &Block) -> Result<()> {
        if self.next >= block.restarts_at {
            self.valid = false;
            return Ok(());
        }
        let e = match block.entry(self.next, self.key.len()) {
            Ok(e) => e,
            Err(err) => {
                self.valid = false;
                return Err(err);
            }
        };
        self.key.truncate(e.shared);
        let suffix = match block.suffix(&e) {
            Ok(suffix) => suffix,
            Err(err) => {
                self.valid = false;
                return Err(err);
            }
        };
        self.key.extend_from_slice(suffix);
        self.offset = self.next;
        self.shared = e.shared;
        self.next = e.value.end;
        self.value = e.value;
        self.valid = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{internal_key, ValueKind};

    fn origin() -> Arc<str> {
        Arc::from("test block")
    }

    fn keys(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| internal_key(format!("key{:04}", i * 2).as_bytes(), 7, ValueKind::Put))
            .collect()
    }

    fn build(keys: &[Vec<u8>], interval: u32) -> Block {
        let mut b = BlockBuilder::new(interval);
        for (i, k) in keys.iter().enumerate() {
            b.add(k, format!("v{i}").as_bytes());
        }
        let est = b.size_estimate();
        let data = b.finish();
        assert_eq!(est, data.len());
        Block::new(data, origin()).unwrap()
    }

    #[test]
    fn iterates_and_seeks_with_any_interval() {
        let ks = keys(50);
        for interval in [1, 2, 3, 16, 100] {
            let block = build(&ks, interval);
            assert_eq!(block.validate(KeyBounds::default()).unwrap(), 50);
            let mut c = BlockCursor::default();
            c.seek_to_first(&block).unwrap();
            for (i, k) in ks.iter().enumerate() {
                assert!(c.valid());
                assert_eq!(c.key(), &k[..]);
                assert_eq!(c.value(&block), format!("v{i}").as_bytes());
                c.next(&block).unwrap();
            }
            assert!(!c.valid());
            for i in 0..=100 {
                let target = internal_key(format!("key{i:04}").as_bytes(), 9, ValueKind::Put);
                c.seek(&block, &target).unwrap();
                let expect = ks.iter().position(|k| key::compare(k, &target).is_ge());
                match expect {
                    Some(j) => assert_eq!(c.key(), &ks[j][..], "interval {interval} seek {i}"),
                    None => assert!(!c.valid()),
                }
            }
        }
    }

    #[test]
    fn iterates_backwards_with_any_interval() {
        let ks = keys(50);
        for interval in [1, 2, 3, 16, 100] {
            let block = build(&ks, interval);
            let mut c = BlockCursor::default();
            c.seek_to_last(&block).unwrap();
            for (i, k) in ks.iter().enumerate().rev() {
                assert!(c.valid(), "interval {interval} entry {i}");
                assert_eq!(c.key(), &k[..]);
                assert_eq!(c.value(&block), format!("v{i}").as_bytes());
                c.prev(&block).unwrap();
            }
            assert!(!c.valid());
            // A step back after a seek lands on the entry before the seek's.
            c.seek(&block, &ks[17]).unwrap();
            c.prev(&block).unwrap();
            assert_eq!(c.key(), &ks[16][..]);
            c.next(&block).unwrap();
            assert_eq!(c.key(), &ks[17][..]);
        }
    }

    #[test]
    fn empty_block_is_valid_and_empty() {
        let block = build(&[], 16);
        assert_eq!(block.validate(KeyBounds::default()).unwrap(), 0);
        let mut c = BlockCursor::default();
        c.seek_to_first(&block).unwrap();
        assert!(!c.valid());
        c.seek(&block, b"anything").unwrap();
        assert!(!c.valid());
        c.seek_to_last(&block).unwrap();
        assert!(!c.valid());
    }

    #[test]
    fn structural_garbage_is_corruption() {
        let ks = keys(20);
        let good = {
            let mut b = BlockBuilder::new(4);
            for k in &ks {
                b.add(k, b"value");
            }
            b.finish()
        };
        let check = |data: Vec<u8>| match Block::new(data, origin()) {
            Err(e) => assert!(e.is_corruption()),
            Ok(b) => assert!(b
                .validate(KeyBounds::default())
                .unwrap_err()
                .is_corruption()),
        };
        // Restart count too large, restart offset garbage, truncated entries.
        let mut bad = good.clone();
        let n = bad.len();
        bad[n - 4..].copy_from_slice(&1000u32.to_le_bytes());
        check(bad);
        let mut bad = good.clone();
        bad[n - 8..n - 4].copy_from_slice(&3u32.to_le_bytes());
        check(bad);
        let mut bad = good.clone();
        bad[n - 24..n - 20].copy_from_slice(&1u32.to_le_bytes());
        check(bad);
        check(good[..3].to_vec());
        // Keys that do not ascend.
        let mut b = BlockBuilder::new(4);
        b.add(&ks[1], b"x");
        b.add(&ks[0], b"y");
        check(b.finish());
        // An entry length that overruns the entries.
        let mut bad = good.clone();
        bad[2] = 0x7f;
        check(bad);
    }

    #[test]
    fn bounds_are_enforced() {
        let ks = keys(10);
        let block = build(&ks, 4);
        let ok = KeyBounds {
            after: Some(&ks[0][..3]),
            upto: Some(&ks[9]),
            first: Some(&ks[0]),
            last: Some(&ks[9]),
        };
        // A bound only has to order correctly: "key" sorts before every "key0..." key.
        block.validate(ok).unwrap();
        for bad in [
            KeyBounds {
                after: Some(&ks[0]),
                ..ok
            },
            KeyBounds {
                upto: Some(&ks[8]),
                ..ok
            },
            KeyBounds {
                first: Some(&ks[1]),
                ..ok
            },
            KeyBounds {
                last: Some(&ks[8]),
                ..ok
            },
        ] {
            assert!(block.validate(bad).unwrap_err().is_corruption());
        }
    }
}
