//! SICA: RocksDB's `kByCompensatedSize`. The largest file (by compensated size) of the
//! level first; among equal sizes the one whose overlapping bytes in the next level are
//! smallest (the tie-break of the MSST'24 paper), then the smaller key.

use crate::version::{FileMeta, FileRank};

use super::picker::{ranked_order, PickCtx, Picker};
use super::score::Compensation;

/// SICA's rank of a file (smaller first): larger compensated size (`u64::MAX - size`),
/// then fewer overlapping bytes in the next level.
pub(super) type SicaKey = [u64; 2];

/// SICA's rank where it depends on the version alone: every file but those whose
/// tombstones compensation counts (their size follows the average value size, which any
/// edit may change).
static SICA_RANK: FileRank = FileRank {
    key: |f, next| {
        let plain = f.surplus_deletions().is_none();
        plain.then(|| sica_key(&Compensation::PLAIN, f, next.by_user_key))
    },
};

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
        ranked_order(v, level, &SICA_RANK, |i, f| {
            sica_key(&comp, f, v.next_level_bytes(level, i).by_user_key)
        })
    }
}

/// SICA's rank of `f`, which overlaps `below` bytes of the next level.
pub(super) fn sica_key(comp: &Compensation, f: &FileMeta, below: u64) -> SicaKey {
    [u64::MAX - comp.size(f), below]
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
