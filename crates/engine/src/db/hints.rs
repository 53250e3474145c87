//! The neighbourhood part of an SST's placement hint ([`Neighbors`]): the SSTs of the
//! adjacent levels that overlap the new file's key range, the closest ones of its own level,
//! where each of them lives, and the level scores. Key-range-aware placement (CAZA, CAZA+)
//! reads it; the database computes it only when the file layer's policy asks
//! (`ZoneFs::placement_wants_neighbors`), since it walks the version and looks up zones.
//!
//! Everything comes from the version current when the file is created. The files of the job
//! that creates it (a compaction's inputs, of both levels) are left out of every list: they
//! are deleted as soon as the job's edit is installed, so placing the new file next to them
//! would place it next to space about to become invalid. The SSTs the job already wrote are
//! not in the version yet but will be in the new file's level: they count as same-level
//! files for the closest-range search.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use zkv_zonefs::placement::{Neighbors, SstRef};

use crate::compaction::{scores_by_level, ZoneLookup};
use crate::key;
use crate::options::Options;
use crate::sst::BuiltTable;
use crate::version::{sst_file_name, FileMeta, Version};

use super::compact::FsZones;
use super::inner::DbInner;
use super::stats::Counters;

impl DbInner {
    /// The neighbourhood of the SST `built` about to be created in `level` by a job that
    /// reads `job_inputs` and already wrote `job_outputs`; `None` (and nothing computed)
    /// unless the placement policy wants it.
    pub(crate) fn sst_neighbors(
        &self,
        level: usize,
        built: &BuiltTable,
        job_inputs: &HashSet<u64>,
        job_outputs: &[FileMeta],
    ) -> Option<Neighbors> {
        if !crate::fs::wants_neighbors(&self.fs) {
            return None;
        }
        let start = Instant::now();
        let (version, compacting) = self.version_and_compacting();
        let scope = HintScope {
            version: &version,
            options: &self.options,
            compacting: &compacting,
            job_inputs,
            job_outputs,
            zones: &FsZones(&self.fs),
        };
        let n = table_neighbors(&scope, level, built);
        self.count_neighbors(start);
        Some(n)
    }

    /// The current version and the files being compacted, taken together.
    pub(crate) fn version_and_compacting(&self) -> (Arc<Version>, HashSet<u64>) {
        let st = self.lock_state();
        (Arc::clone(&st.version), st.compacting.clone())
    }

    /// Books one neighbourhood computation that started at `start`.
    pub(crate) fn count_neighbors(&self, start: Instant) {
        let c = &self.counters;
        Counters::time(&c.neighbors_ns, &c.neighbors_calls, start);
    }
}

/// The neighbourhood a new SST of `level` over user keys `[smallest, largest]` would get in
/// `version`, from a job with no inputs (a flush), with the zones of `zones`: what
/// placement hints carry, for benchmarks and tools. No file counts as being compacted.
pub fn neighbors_in(
    version: &Version,
    options: &Options,
    zones: &dyn ZoneLookup,
    level: usize,
    smallest: &[u8],
    largest: &[u8],
) -> Neighbors {
    let none = HashSet::new();
    let scope = HintScope {
        version,
        options,
        compacting: &none,
        job_inputs: &none,
        job_outputs: &[],
        zones,
    };
    neighbors(&scope, level, smallest, largest)
}

/// [`neighbors`] of a built table.
pub(crate) fn table_neighbors(
    scope: &HintScope<'_>,
    level: usize,
    built: &BuiltTable,
) -> Neighbors {
    let smallest = key::user_key(&built.props.smallest);
    let largest = key::user_key(&built.props.largest);
    neighbors(scope, level, smallest, largest)
}

/// What the neighbourhood of a new SST is computed from.
pub(crate) struct HintScope<'a> {
    pub version: &'a Version,
    pub options: &'a Options,
    /// Files being compacted now (they do not count in the scores, as in RocksDB).
    pub compacting: &'a HashSet<u64>,
    /// Files the job creating the SST is about to delete.
    pub job_inputs: &'a HashSet<u64>,
    /// SSTs the job already wrote into the new file's level.
    pub job_outputs: &'a [FileMeta],
    pub zones: &'a dyn ZoneLookup,
}

/// The neighbourhood of a new SST of `level` over user keys `[smallest, largest]`.
pub(crate) fn neighbors(
    scope: &HintScope<'_>,
    level: usize,
    smallest: &[u8],
    largest: &[u8],
) -> Neighbors {
    let overlap = |l: usize| overlapping(scope, l, smallest, largest);
    let as_ref = |f: &FileMeta| sst_ref(scope, level, f);
    Neighbors {
        overlap_above: level.checked_sub(1).map(overlap).unwrap_or_default(),
        overlap_below: overlap(level + 1),
        closest_before: closest_before(scope, level, smallest).map(as_ref),
        closest_after: closest_after(scope, level, largest).map(as_ref),
        level_scores: scores_by_level(scope.version, scope.options, scope.compacting),
    }
}

/// The files of `level` (without the job's inputs) whose user-key range meets `[smallest,
/// largest]`, in level order. Deeper levels are sorted and disjoint: a binary search finds
/// them without walking the level.
fn overlapping(
    scope: &HintScope<'_>,
    level: usize,
    smallest: &[u8],
    largest: &[u8],
) -> Vec<SstRef> {
    let meets = |f: &FileMeta| f.smallest_user_key() <= largest && smallest <= f.largest_user_key();
    if level == 0 {
        return level_files(scope, 0)
            .filter(|f| meets(f))
            .map(|f| sst_ref(scope, 0, f))
            .collect();
    }
    let range = scope
        .version
        .deep_overlapping(level, Some(smallest), Some(largest));
    range
        .iter()
        .filter(|f| !scope.job_inputs.contains(&f.number))
        .map(|f| sst_ref(scope, level, f))
        .collect()
}

/// The file of `level` (or among the job's outputs) with the greatest largest key below
/// `smallest`; of equal ones, the last (the job's outputs come after the version's files).
fn closest_before<'s>(
    scope: &'s HintScope<'_>,
    level: usize,
    smallest: &[u8],
) -> Option<&'s FileMeta> {
    let by_largest = |a: &&FileMeta, b: &&FileMeta| a.largest_user_key().cmp(b.largest_user_key());
    let before = |f: &&FileMeta| f.largest_user_key() < smallest;
    let in_version = if level == 0 {
        level_files(scope, 0).filter(before).max_by(by_largest)
    } else {
        // Sorted and disjoint: largest keys ascend with the smallest ones.
        let files = scope.version.files(level);
        let end = files.partition_point(|f| f.largest_user_key() < smallest);
        files
            .get(..end)
            .unwrap_or_default()
            .iter()
            .rev()
            .map(|f| &**f)
            .find(|f| !scope.job_inputs.contains(&f.number))
    };
    let output = scope.job_outputs.iter().filter(before).max_by(by_largest);
    in_version.into_iter().chain(output).max_by(by_largest)
}

/// The file of `level` (or among the job's outputs) with the least smallest key above
/// `largest`; of equal ones, the first.
fn closest_after<'s>(
    scope: &'s HintScope<'_>,
    level: usize,
    largest: &[u8],
) -> Option<&'s FileMeta> {
    let by_smallest =
        |a: &&FileMeta, b: &&FileMeta| a.smallest_user_key().cmp(b.smallest_user_key());
    let after = |f: &&FileMeta| f.smallest_user_key() > largest;
    let in_version = if level == 0 {
        level_files(scope, 0).filter(after).min_by(by_smallest)
    } else {
        let files = scope.version.files(level);
        let start = files.partition_point(|f| f.smallest_user_key() <= largest);
        files
            .get(start..)
            .unwrap_or_default()
            .iter()
            .map(|f| &**f)
            .find(|f| !scope.job_inputs.contains(&f.number))
    };
    let output = scope.job_outputs.iter().filter(after).min_by(by_smallest);
    in_version.into_iter().chain(output).min_by(by_smallest)
}

/// The files of `level` in the version, without the job's inputs.
fn level_files<'s>(scope: &'s HintScope<'_>, level: usize) -> impl Iterator<Item = &'s FileMeta> {
    scope
        .version
        .files(level)
        .iter()
        .map(|f| &**f)
        .filter(|f| !scope.job_inputs.contains(&f.number))
}

/// A file as a hint lists it. A file a concurrent compaction deleted meanwhile shows no
/// zones (the lookup finds nothing): it is about to stop mattering anyway.
fn sst_ref(scope: &HintScope<'_>, level: usize, f: &FileMeta) -> SstRef {
    SstRef {
        name: sst_file_name(f.number),
        number: f.number,
        level: u8::try_from(level).unwrap_or(u8::MAX),
        size: f.size,
        smallest_key: f.smallest_user_key().to_vec(),
        largest_key: f.largest_user_key().to_vec(),
        zones: scope.zones.zones_of(f.number),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::compaction::test_util::{arb_version, file, version_of};

    /// Zones by file number: file n lives in zone n (n·10 bytes) and zone 100.
    struct FakeZones;

    impl ZoneLookup for FakeZones {
        fn zones_of(&self, n: u64) -> Vec<(u32, u64)> {
            vec![(n as u32, n * 10), (100, 1)]
        }
    }

    fn names(refs: &[SstRef]) -> Vec<u64> {
        refs.iter().map(|r| r.number).collect()
    }

    /// L1: 1 [a,c] 2 [d,f] 3 [g,i] 4 [j,l]; L2: 5 [a,e] 6 [f,h] 7 [i,m]; L3: 8 [a,z];
    /// L0: 9 [e,g].
    fn lsm() -> Version {
        version_of(
            4,
            &[
                (0, file(9, b"e", b"g", 100)),
                (1, file(1, b"a", b"c", 100)),
                (1, file(2, b"d", b"f", 100)),
                (1, file(3, b"g", b"i", 100)),
                (1, file(4, b"j", b"l", 100)),
                (2, file(5, b"a", b"e", 100)),
                (2, file(6, b"f", b"h", 100)),
                (2, file(7, b"i", b"m", 100)),
                (3, file(8, b"a", b"z", 100)),
            ],
        )
    }

    #[test]
    fn lists_overlaps_closest_files_and_zones_without_the_job_inputs() {
        let version = lsm();
        let options = Options::default();
        let none = HashSet::new();
        // A compaction of L1 file 2 with L2 files 5 and 6 writes [d,g] to L2 after having
        // written an output [a,b].
        let inputs: HashSet<u64> = [2, 5, 6].into();
        let earlier = [file(20, b"a", b"b", 50)];
        let scope = HintScope {
            version: &version,
            options: &options,
            compacting: &inputs,
            job_inputs: &inputs,
            job_outputs: &earlier,
            zones: &FakeZones,
        };
        let n = neighbors(&scope, 2, b"d", b"g");
        assert_eq!(names(&n.overlap_above), vec![3]);
        assert_eq!(names(&n.overlap_below), vec![8]);
        assert_eq!(n.closest_before.as_ref().map(|r| r.number), Some(20));
        assert_eq!(n.closest_after.as_ref().map(|r| r.number), Some(7));
        let three = &n.overlap_above[0];
        assert_eq!((three.level, three.size), (1, 100));
        assert_eq!(
            (&three.smallest_key[..], &three.largest_key[..]),
            (&b"g"[..], &b"i"[..])
        );
        assert_eq!(three.zones, vec![(3, 30), (100, 1)]);
        assert_eq!(three.name, sst_file_name(3));
        assert_eq!(n.level_scores.len(), 4);
        // A flush output of L0 [f,k]: L1 overlaps 2, 3, 4; nothing above; the L0 file 9
        // overlaps it, so it is neither before nor after.
        let scope = HintScope {
            compacting: &none,
            job_inputs: &none,
            job_outputs: &[],
            ..scope
        };
        let n = neighbors(&scope, 0, b"f", b"k");
        assert_eq!(names(&n.overlap_below), vec![2, 3, 4]);
        assert!(n.overlap_above.is_empty() && n.closest_before.is_none());
        assert!(n.closest_after.is_none());
        // The last level has no level below.
        assert!(neighbors(&scope, 3, b"a", b"b").overlap_below.is_empty());
    }

    /// The neighbourhood by walking every file of the levels concerned: what the binary
    /// searches must find.
    fn walked(scope: &HintScope<'_>, level: usize, lo: &[u8], hi: &[u8]) -> [Vec<u64>; 4] {
        let live = |l: usize| level_files(scope, l).collect::<Vec<_>>();
        let meets = |l: usize| -> Vec<u64> {
            live(l)
                .into_iter()
                .filter(|f| f.smallest_user_key() <= hi && lo <= f.largest_user_key())
                .map(|f| f.number)
                .collect()
        };
        let same: Vec<&FileMeta> = live(level).into_iter().chain(scope.job_outputs).collect();
        let before = same
            .iter()
            .filter(|f| f.largest_user_key() < lo)
            .max_by(|a, b| a.largest_user_key().cmp(b.largest_user_key()));
        let after = same
            .iter()
            .filter(|f| f.smallest_user_key() > hi)
            .min_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
        [
            level.checked_sub(1).map(meets).unwrap_or_default(),
            meets(level + 1),
            before.map(|f| f.number).into_iter().collect(),
            after.map(|f| f.number).into_iter().collect(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn binary_searches_find_what_a_walk_finds(
            v in arb_version(),
            level in 0usize..5,
            (lo, len) in (0u8..70, 0u8..20),
            input_bits in prop::collection::vec(prop::bool::weighted(0.3), 64),
            outputs in prop::collection::vec((0u8..70, 0u8..5), 0..3),
        ) {
            let inputs: HashSet<u64> = v
                .all_files()
                .map(|(_, f)| f.number)
                .filter(|n| input_bits[*n as usize % input_bits.len()])
                .collect();
            let outputs: Vec<FileMeta> = outputs
                .iter()
                .enumerate()
                .map(|(i, &(start, len))| {
                    file(1000 + i as u64, &[start], &[start.saturating_add(len)], 10)
                })
                .collect();
            let (options, none) = (Options::default(), HashSet::new());
            let scope = HintScope {
                version: &v,
                options: &options,
                compacting: &none,
                job_inputs: &inputs,
                job_outputs: &outputs,
                zones: &FakeZones,
            };
            let (lo, hi) = ([lo], [lo.saturating_add(len)]);
            let n = neighbors(&scope, level, &lo, &hi);
            let found = [
                names(&n.overlap_above),
                names(&n.overlap_below),
                n.closest_before.iter().map(|r| r.number).collect(),
                n.closest_after.iter().map(|r| r.number).collect(),
            ];
            prop_assert_eq!(found, walked(&scope, level, &lo, &hi));
        }
    }
}
