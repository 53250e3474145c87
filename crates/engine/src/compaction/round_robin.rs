//! RocksDB's `kRoundRobin` (`SortFileByRoundRobin`): each level keeps a cursor (an internal
//! key); the first file whose smallest key is at or after the cursor comes first, then the
//! files to its right, then the files from the start of the level (wrap). A cursor beyond
//! every file, or no cursor, starts at the first file. While L0 files overlap each other
//! there is no key order to walk, and L0 falls back to oldest-smallest-seq.
//!
//! The builder treats this picker specially (see [`Picker::round_robin`]): it never skips
//! the file at the cursor, and a compaction records the next cursor (the smallest key of
//! the file after its last input) in its version edit.

use std::cmp::Ordering;

use crate::key;
use crate::version::FileMeta;

use super::oldest_smallest_seq::OldestSmallestSeq;
use super::pick::level0_non_overlapping;
use super::picker::{PickCtx, Picker};

/// Per-level cursor, wrapping.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobin;

impl Picker for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        let files = ctx.version.files(level);
        if level == 0 && !level0_non_overlapping(ctx.version) {
            return OldestSmallestSeq.order(ctx, level);
        }
        let at_or_after =
            |f: &FileMeta, cursor: &[u8]| key::compare(cursor, &f.smallest) != Ordering::Greater;
        let start = ctx.cursor(level).map_or(0, |cursor| {
            let first = if level == 0 {
                files.iter().position(|f| at_or_after(f, cursor))
            } else {
                // Smallest keys ascend along a deep level: a binary search finds the first.
                let i = files.partition_point(|f| !at_or_after(f, cursor));
                (i < files.len()).then_some(i)
            };
            first.unwrap_or(0)
        });
        (start..files.len()).chain(0..start).collect()
    }

    fn round_robin(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file, picked_order, version_of};
    use crate::key::ValueKind;
    use crate::version::Version;

    fn order_with(v: &Version, level: usize, cursor: Option<Vec<u8>>) -> Vec<u64> {
        let mut cursors = vec![None; v.num_levels()];
        cursors[level] = cursor;
        picked_order(&RoundRobin, v, level, &cursors)
    }

    fn level1() -> Version {
        version_of(
            3,
            &[
                (1, file(1, b"a", b"c", 10)),
                (1, file(2, b"e", b"g", 10)),
                (1, file(3, b"i", b"k", 10)),
            ],
        )
    }

    #[test]
    fn starts_at_the_cursor_and_wraps() {
        let v = level1();
        assert_eq!(order_with(&v, 1, None), [1, 2, 3]);
        // The cursor is the smallest key of file 2: file 2 comes first.
        let at_two = v.files(1)[1].smallest.clone();
        assert_eq!(order_with(&v, 1, Some(at_two)), [2, 3, 1]);
        // A cursor between files: the next file to the right.
        let between = key::internal_key(b"h", 5, ValueKind::Put);
        assert_eq!(order_with(&v, 1, Some(between)), [3, 1, 2]);
        // Beyond every file: back to the first.
        let beyond = key::internal_key(b"z", 5, ValueKind::Put);
        assert_eq!(order_with(&v, 1, Some(beyond)), [1, 2, 3]);
        assert_eq!(order_with(&v, 1, Some(Vec::new())), [1, 2, 3]);
    }

    #[test]
    fn overlapping_l0_goes_oldest_first() {
        let v = version_of(
            3,
            &[
                (0, file(1, b"a", b"m", 10)),
                (0, file(2, b"c", b"z", 10)),
                (0, file(3, b"b", b"d", 10)),
            ],
        );
        assert_eq!(order_with(&v, 0, None), [1, 2, 3]);
    }
}
