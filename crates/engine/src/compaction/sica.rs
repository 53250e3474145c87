//! SICA: RocksDB's `kByCompensatedSize`. The largest file (by compensated size) of the
//! level first; among equal sizes the one whose overlapping bytes in the next level are
//! smallest (the tie-break of the MSST'24 paper), then the smaller key.

use std::cmp::Reverse;
use std::sync::Arc;

use crate::version::{FileMeta, Version};

use super::pick::total_size;
use super::picker::{sorted_by_key, PickCtx, Picker};
use super::score::Compensation;

/// SICA's rank of a file (smaller first): larger compensated size, then fewer overlapping
/// bytes in the next level.
pub(super) type SicaKey = (Reverse<u64>, u64);

/// Largest compensated size first.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sica;

impl Picker for Sica {
    fn name(&self) -> &'static str {
        "sica"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        let v = ctx.version;
        let comp = Compensation::of(v);
        sorted_by_key(v.files(level), |f| {
            sica_key(&comp, f, next_level_overlap(v, level, f))
        })
    }
}

/// The files of the level below `level` whose user-key range meets `f`'s.
pub(super) fn next_level_overlap<'v>(
    v: &'v Version,
    level: usize,
    f: &FileMeta,
) -> &'v [Arc<FileMeta>] {
    let (b, e) = (f.smallest_user_key(), f.largest_user_key());
    v.deep_overlapping(level + 1, Some(b), Some(e))
}

/// SICA's rank of `f`, whose overlapping next-level files are `below`.
pub(super) fn sica_key(comp: &Compensation, f: &FileMeta, below: &[Arc<FileMeta>]) -> SicaKey {
    (Reverse(comp.size(f)), total_size(below))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file, picked_order, version_of};
    use crate::version::Version;

    fn order_of(v: &Version, level: usize) -> Vec<u64> {
        picked_order(&Sica, v, level, &[])
    }

    #[test]
    fn largest_file_first() {
        let v = version_of(
            3,
            &[
                (1, file(1, b"a", b"c", 100)),
                (1, file(2, b"d", b"f", 300)),
                (1, file(3, b"g", b"i", 200)),
            ],
        );
        assert_eq!(order_of(&v, 1), [2, 3, 1]);
    }

    #[test]
    fn ties_go_to_the_smallest_next_level_overlap() {
        let v = version_of(
            3,
            &[
                (1, file(1, b"a", b"c", 300)),
                (1, file(2, b"d", b"f", 300)),
                (1, file(3, b"g", b"i", 300)),
                (2, file(10, b"a", b"b", 500)),
                (2, file(11, b"e", b"e", 50)),
            ],
        );
        // File 3 overlaps nothing, 2 overlaps 50 bytes, 1 overlaps 500 bytes.
        assert_eq!(order_of(&v, 1), [3, 2, 1]);
    }

    #[test]
    fn full_ties_go_to_the_smaller_key() {
        let v = version_of(
            3,
            &[(1, file(7, b"m", b"n", 300)), (1, file(8, b"a", b"b", 300))],
        );
        assert_eq!(order_of(&v, 1), [8, 7]);
    }

    #[test]
    fn tombstones_make_a_file_larger() {
        let mut tombs = file(1, b"a", b"c", 100);
        (tombs.entries, tombs.deletions) = (10, 10);
        let mut values = file(2, b"d", b"f", 150);
        (values.raw_key_size, values.raw_value_size) = (100, 10_000);
        let v = version_of(3, &[(1, tombs), (1, values)]);
        assert_eq!(order_of(&v, 1), [1, 2]);
    }
}
