//! RocksDB's `kMinOverlappingRatio` (the RocksDB default): the file whose overlapping bytes
//! in the next level, × 1024 / its compensated size, are smallest comes first; ties go to
//! the smaller key (`SortFileByOverlappingRatio`).

use std::cmp::Ordering;

use crate::key;
use crate::version::{FileMeta, FileRank, Version};

use super::picker::{ranked_order, sorted_indexes, PickCtx, Picker};
use super::score::Compensation;

/// Min-overlap's rank where it depends on the version alone: every file but those whose
/// tombstones compensation counts (see SICA's).
static RANK: FileRank = FileRank {
    key: |f, next| {
        let plain = f.surplus_deletions().is_none();
        plain.then(|| min_overlap_key(&Compensation::PLAIN, f, next.by_sweep))
    },
};

/// Smallest write amplification (next-level overlap per byte) first.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinOverlap;

impl Picker for MinOverlap {
    fn name(&self) -> &'static str {
        "min-overlap"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        let v = ctx.version;
        if level == 0 {
            let ratio = overlap_ratios(v, level);
            return sorted_indexes(v.files(level), &ratio);
        }
        // On a deep level the sweep below counts for each file the next-level files whose
        // internal-key range meets its own, which the version keeps.
        let comp = Compensation::of(v);
        ranked_order(v, level, &RANK, |i, f| {
            min_overlap_key(&comp, f, v.next_level_bytes(level, i).by_sweep)
        })
    }
}

/// Min-overlap's rank of `f` on a deep level, whose sweep counts `below` next-level bytes.
fn min_overlap_key(comp: &Compensation, f: &FileMeta, below: u64) -> [u64; 2] {
    [ratio(below, comp.size(f)), 0]
}

/// Min-overlap's sort key of each file of `level`, in level order: its order is these
/// ratios ascending, ties broken as `sorted_indexes` breaks them.
fn overlap_ratios(v: &Version, level: usize) -> Vec<u64> {
    let comp = Compensation::of(v);
    let files = v.files(level);
    let overlap = overlapping_bytes(files, v.files(level + 1));
    files
        .iter()
        .zip(overlap)
        .map(|(f, bytes)| ratio(bytes, comp.size(f)))
        .collect()
}

fn ratio(overlap: u64, compensated: u64) -> u64 {
    let scaled = u128::from(overlap) * 1024 / u128::from(compensated.max(1));
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

/// Overlapping next-level bytes per file, with RocksDB's single forward sweep over the next
/// level (internal-key bounds; a next-level file that crosses a file's upper bound counts
/// for the following file too). The sweep assumes the level is sorted by key, which L0 is
/// not; RocksDB applies it to L0 all the same, and so does zkv.
fn overlapping_bytes(
    files: &[std::sync::Arc<FileMeta>],
    next: &[std::sync::Arc<FileMeta>],
) -> Vec<u64> {
    let mut j = 0;
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let mut bytes = 0u64;
        let before = |g: &FileMeta| key::compare(&g.largest, &f.smallest) == Ordering::Less;
        while next.get(j).is_some_and(|g| before(g)) {
            j += 1;
        }
        let meets =
            |g: &&std::sync::Arc<FileMeta>| key::compare(&g.smallest, &f.largest) == Ordering::Less;
        while let Some(g) = next.get(j).filter(meets) {
            bytes = bytes.saturating_add(g.size);
            if key::compare(&g.largest, &f.largest) == Ordering::Greater {
                break;
            }
            j += 1;
        }
        out.push(bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file, picked_order, version_of};
    use crate::version::Version;

    fn order_of(v: &Version, level: usize) -> Vec<u64> {
        picked_order(&MinOverlap, v, level, &[])
    }

    #[test]
    fn smallest_overlap_per_byte_first() {
        let v = version_of(
            3,
            &[
                (1, file(1, b"a", b"c", 100)),
                (1, file(2, b"d", b"f", 100)),
                (1, file(3, b"g", b"i", 400)),
                (2, file(10, b"a", b"c", 300)),
                (2, file(11, b"d", b"f", 100)),
                (2, file(12, b"g", b"i", 800)),
            ],
        );
        // Ratios: 1 → 3072, 2 → 1024, 3 → 2048.
        assert_eq!(order_of(&v, 1), [2, 3, 1]);
    }

    #[test]
    fn a_file_crossing_the_boundary_counts_for_both_neighbours() {
        let v = version_of(
            3,
            &[
                (1, file(1, b"a", b"c", 100)),
                (1, file(2, b"e", b"g", 100)),
                (1, file(3, b"x", b"y", 1000)),
                (2, file(10, b"b", b"f", 100)),
            ],
        );
        let overlap = overlapping_bytes(v.files(1), v.files(2));
        assert_eq!(overlap, [100, 100, 0]);
        assert_eq!(order_of(&v, 1), [3, 1, 2]);
    }

    #[test]
    fn ties_go_to_the_smaller_key() {
        let v = version_of(
            3,
            &[
                (1, file(5, b"m", b"n", 100)),
                (1, file(6, b"a", b"b", 100)),
                (1, file(7, b"x", b"y", 100)),
            ],
        );
        assert_eq!(order_of(&v, 1), [6, 5, 7]);
    }

    #[test]
    fn integer_ratio_like_rocksdb() {
        assert_eq!(ratio(1, 1025), 0);
        assert_eq!(ratio(3, 2), 1536);
        assert_eq!(ratio(5, 0), 5120);
    }
}
