//! Subcompactions: an L0 compaction split into key ranges that run side by side, each with
//! its own output tables and blob files (RocksDB's `max_subcompactions`).
//!
//! RocksDB's rule, leveled style: only a compaction from L0 into a lower level is split
//! (zkv has no manual range compaction, RocksDB's other case). The split follows RocksDB
//! 8's `GenSubcompactionBoundaries`: every input table offers anchors (user keys that cut
//! it into up to [`ANCHORS_PER_TABLE`] ranges of about equal size, with their sizes from
//! the index); all anchors sorted by key make one list, and a boundary is set at the
//! anchor where the running size passes the next multiple of the target range size, the
//! larger of the total over `max_subcompactions` and the output level's target file size.
//! RocksDB's round-robin picker also splits other levels, into as many ranges as it has
//! inputs, with threads beyond `max_subcompactions`; zkv does not (`docs/ENGINE.md`).

use crate::iter::InternalIterator;
use crate::key;
use crate::Result;

use super::Compaction;

/// How many ranges an input table is cut into for the split (RocksDB asks its tables for
/// 128 anchors).
pub const ANCHORS_PER_TABLE: usize = 128;

/// A key range: from the first user key (inclusive) to the second (exclusive); `None` is
/// unbounded.
pub type Bounds<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A user key that ends a range of a table, and the bytes of the range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// The user key the range ends at.
    pub user_key: Vec<u8>,
    /// Bytes of the table's data blocks in the range.
    pub bytes: u64,
}

/// Whether `c` is split when `max_subcompactions` allows it: a merge (not a move) from L0
/// into a lower level.
pub fn splits(c: &Compaction, max_subcompactions: u32) -> bool {
    splits_levels(c.level, c.output_level, c.trivial_move, max_subcompactions)
}

fn splits_levels(level: usize, output_level: usize, trivial_move: bool, max: u32) -> bool {
    max > 1 && level == 0 && output_level > 0 && !trivial_move
}

/// The key ranges of a compaction: `bounds` cut the key space, range `i` holds the user
/// keys from `bounds[i - 1]` (inclusive; the first range from the smallest key) up to
/// `bounds[i]` (exclusive; the last range to the largest); `bytes[i]` is its share of
/// the anchors' bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The user keys between ranges, ascending: one fewer than the ranges.
    pub bounds: Vec<Vec<u8>>,
    /// Bytes of each range, one per range.
    pub bytes: Vec<u64>,
}

impl Split {
    /// The number of ranges (one: no split).
    pub fn ranges(&self) -> usize {
        self.bounds.len() + 1
    }

    /// Range `i`'s (start, end) user keys; `None` is unbounded.
    pub fn range(&self, i: usize) -> Bounds<'_> {
        let start = i.checked_sub(1).and_then(|p| self.bounds.get(p));
        (
            start.map(Vec::as_slice),
            self.bounds.get(i).map(Vec::as_slice),
        )
    }

    /// The time of the slowest range when the ranges of a job taking `ns` as a whole run
    /// side by side: `ns` scaled by the largest range's share of the bytes.
    pub fn slowest(&self, ns: u64) -> u64 {
        (0..self.ranges())
            .map(|i| self.share(i, ns))
            .max()
            .unwrap_or(ns)
    }

    /// The time of range `i` when the ranges of a job taking `ns` as a whole run side by
    /// side: `ns` scaled by the range's share of the bytes.
    pub fn share(&self, i: usize, ns: u64) -> u64 {
        let total: u64 = self.bytes.iter().sum();
        match self.bytes.get(i) {
            Some(&bytes) if total > 0 && self.ranges() > 1 => {
                let scaled = u128::from(ns) * u128::from(bytes) / u128::from(total);
                u64::try_from(scaled).unwrap_or(ns)
            }
            _ => ns,
        }
    }
}

/// Splits the anchors of all input tables into at most `planned` ranges of at least
/// `min_range` bytes (see the module documentation).
pub fn split(mut anchors: Vec<Anchor>, planned: usize, min_range: u64) -> Split {
    let total: u64 = anchors.iter().map(|a| a.bytes).sum();
    let target = (total / planned.max(1) as u64).max(min_range).max(1);
    if planned <= 1 || target >= total {
        return Split {
            bounds: Vec::new(),
            bytes: vec![total],
        };
    }
    // Stable sort, then one anchor per key: the order of equal keys is the order of the
    // tables, so the split never depends on anything but the inputs.
    anchors.sort_by(|a, b| a.user_key.cmp(&b.user_key));
    anchors.dedup_by(|later, kept| {
        let same = later.user_key == kept.user_key;
        if same {
            kept.bytes += later.bytes;
        }
        same
    });
    let mut split = Split::default();
    let (mut cumulative, mut threshold, mut range_bytes) = (0u64, target, 0u64);
    for a in anchors {
        cumulative += a.bytes;
        range_bytes += a.bytes;
        if split.ranges() < planned && cumulative > threshold {
            threshold += target;
            // The anchor's key starts the next range: its bytes lie before it.
            split.bounds.push(a.user_key);
            split.bytes.push(range_bytes);
            range_bytes = 0;
        }
    }
    split.bytes.push(range_bytes);
    split
}

/// The input of one range: the entries of `inner` whose user keys lie in
/// `[start, end)`.
pub(crate) struct RangeIter<'a> {
    inner: &'a mut dyn InternalIterator,
    start: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
}

impl<'a> RangeIter<'a> {
    pub fn new(inner: &'a mut dyn InternalIterator, range: Bounds<'_>) -> Self {
        RangeIter {
            inner,
            start: range.0.map(<[u8]>::to_vec),
            end: range.1.map(<[u8]>::to_vec),
        }
    }
}

impl InternalIterator for RangeIter<'_> {
    fn valid(&self) -> bool {
        if !self.inner.valid() {
            return false;
        }
        let user_key = key::user_key(self.inner.key());
        self.end.as_deref().is_none_or(|end| user_key < end)
            && self.start.as_deref().is_none_or(|start| user_key >= start)
    }

    fn seek_to_first(&mut self) -> Result<()> {
        match &self.start {
            Some(start) => {
                let target = key::seek_key(start, key::MAX_SEQ);
                self.inner.seek(&target)
            }
            None => self.inner.seek_to_first(),
        }
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let before_start = self
            .start
            .as_deref()
            .is_some_and(|start| key::user_key(target) < start);
        if before_start {
            return self.seek_to_first();
        }
        self.inner.seek(target)
    }

    fn next(&mut self) -> Result<()> {
        self.inner.next()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let Some(end) = &self.end else {
            return self.inner.seek_to_last();
        };
        // The last entry before the first possible entry of `end`.
        self.inner.seek(&key::seek_key(end, key::MAX_SEQ))?;
        if self.inner.valid() {
            self.inner.prev()
        } else {
            self.inner.seek_to_last()
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let past_end = self
            .end
            .as_deref()
            .is_some_and(|end| key::user_key(target) >= end);
        if past_end {
            return self.seek_to_last();
        }
        self.inner.seek_for_prev(target)
    }

    fn prev(&mut self) -> Result<()> {
        self.inner.prev()
    }

    fn key(&self) -> &[u8] {
        self.inner.key()
    }

    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors(keys: &[(&str, u64)]) -> Vec<Anchor> {
        keys.iter()
            .map(|(k, b)| Anchor {
                user_key: k.as_bytes().to_vec(),
                bytes: *b,
            })
            .collect()
    }

    #[test]
    fn even_anchors_split_into_the_planned_ranges() {
        let a = anchors(&[("a", 10), ("b", 10), ("c", 10), ("d", 10)]);
        let s = split(a, 2, 1);
        assert_eq!(s.bounds, vec![b"c".to_vec()]);
        assert_eq!(s.bytes, vec![30, 10]);
        assert_eq!(s.range(0), (None, Some(&b"c"[..])));
        assert_eq!(s.range(1), (Some(&b"c"[..]), None));
    }

    #[test]
    fn anchors_of_several_tables_are_merged_by_key() {
        // Two tables interleaved: sorted, 12 anchors of 5 bytes, four ranges of 15.
        let mut a = anchors(&[("a", 5), ("c", 5), ("e", 5), ("g", 5), ("i", 5), ("k", 5)]);
        a.extend(anchors(&[
            ("b", 5),
            ("d", 5),
            ("f", 5),
            ("h", 5),
            ("j", 5),
            ("l", 5),
        ]));
        let s = split(a, 4, 1);
        assert_eq!(s.bounds, vec![b"d".to_vec(), b"g".to_vec(), b"j".to_vec()]);
        assert_eq!(s.ranges(), 4);
        assert_eq!(s.bytes.iter().sum::<u64>(), 60);
    }

    #[test]
    fn the_target_file_size_bounds_the_number_of_ranges() {
        let a = anchors(&[("a", 10), ("b", 10), ("c", 10), ("d", 10)]);
        // 40 bytes, at least 20 per range: two ranges, not four.
        assert_eq!(split(a.clone(), 4, 20).ranges(), 2);
        // A range at least as large as everything: no split.
        let s = split(a, 4, 40);
        assert_eq!(s.ranges(), 1);
        assert_eq!(s.bytes, vec![40]);
        assert_eq!(s.slowest(1000), 1000);
    }

    #[test]
    fn equal_keys_are_one_anchor() {
        let a = anchors(&[("a", 10), ("a", 10), ("b", 10), ("c", 10)]);
        let s = split(a, 2, 1);
        assert_eq!(s.bounds, vec![b"b".to_vec()]);
        assert_eq!(s.bytes, vec![30, 10]);
        assert_eq!(s.slowest(1000), 750);
    }

    #[test]
    fn only_l0_merges_split() {
        assert!(splits_levels(0, 1, false, 4));
        assert!(!splits_levels(0, 1, false, 1));
        assert!(!splits_levels(0, 1, true, 4));
        assert!(!splits_levels(0, 0, false, 4));
        assert!(!splits_levels(1, 2, false, 4));
    }

    #[test]
    fn a_range_iterator_yields_its_keys_only() {
        use crate::iter::test_util::{drain, VecIter};
        use crate::key::{internal_key, ValueKind};
        let entries: Vec<(Vec<u8>, Vec<u8>)> = ["a", "b", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(i, k)| {
                (
                    internal_key(k.as_bytes(), 10 - i as u64, ValueKind::Put),
                    vec![],
                )
            })
            .collect();
        let users = |range: Bounds<'_>| -> Vec<Vec<u8>> {
            let mut all = VecIter::new(entries.clone());
            let mut it = RangeIter::new(&mut all, range);
            let got = it.seek_to_first().and_then(|()| drain(&mut it));
            let got = got.unwrap_or_default();
            got.iter().map(|(k, _)| key::user_key(k).to_vec()).collect()
        };
        assert_eq!(
            users((Some(b"b"), Some(b"d"))),
            [b"b", b"b", b"c"].map(|k| k.to_vec())
        );
        assert_eq!(users((None, Some(b"b"))), vec![b"a".to_vec()]);
        assert_eq!(users((Some(b"c"), None)), [b"c", b"d"].map(|k| k.to_vec()));
    }
}
