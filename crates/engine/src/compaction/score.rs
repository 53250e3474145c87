//! Level scores (RocksDB 7.8 `VersionStorageInfo::ComputeCompactionScore`, leveled
//! compaction with static level sizes), compensated file sizes
//! (`ComputeCompensatedSizes`) and the pending-compaction estimate
//! (`EstimateCompactionBytesNeeded`).

use std::collections::HashSet;

use crate::options::Options;
use crate::version::{FileMeta, FileTotals, Version};

/// RocksDB's `kDeletionWeightOnCompaction`: a surplus tombstone counts as two average values.
const DELETION_WEIGHT: u64 = 2;

/// The compaction score of one level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelScore {
    /// Level number (0 = L0).
    pub level: usize,
    /// RocksDB's score (see [`compute_scores`]); at least 1 means the level needs
    /// compaction.
    pub score: f64,
}

/// Compensated file sizes of one version: the file size plus a bonus for files with more
/// tombstones than values, so that deletions reach the bottom (and free space) sooner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compensation {
    /// Estimated bytes of an average value in an SST (RocksDB's `GetAverageValueSize`).
    pub average_value_size: u64,
}

impl Compensation {
    /// A compensation for files without surplus tombstones, whose compensated size is their
    /// size whatever the average value: the version-only ranks use it.
    pub const PLAIN: Compensation = Compensation {
        average_value_size: 0,
    };

    /// The compensation over the files of `version`. RocksDB accumulates the statistics of
    /// every file it ever loaded; the current version's files are the closest stateless
    /// equivalent. The version keeps their sums: this costs no walk over its files.
    pub fn of(version: &Version) -> Compensation {
        let t = version.file_totals();
        let raw = t.raw_key_size + t.raw_value_size;
        let average = if t.values == 0 || raw == 0 {
            0
        } else {
            // Raw value bytes per value, scaled by the on-disk / raw ratio (integer steps as
            // RocksDB does them).
            t.raw_value_size / t.values * t.bytes / raw
        };
        Compensation {
            average_value_size: u64::try_from(average).unwrap_or(u64::MAX),
        }
    }

    /// RocksDB's compensated size of `f`: only tombstones beyond the number of values count,
    /// because in a steady workload deletes roughly balance puts.
    pub fn size(&self, f: &FileMeta) -> u64 {
        let Some(surplus) = f.surplus_deletions() else {
            return f.size;
        };
        let bonus = surplus
            .saturating_mul(self.average_value_size)
            .saturating_mul(DELETION_WEIGHT);
        f.size.saturating_add(bonus)
    }

    /// [`Compensation::size`] without saturation; `None` past `u128`.
    fn exact_size(&self, f: &FileMeta) -> Option<u128> {
        let surplus = u128::from(f.surplus_deletions().unwrap_or(0));
        self.exact(u128::from(f.size), surplus)
    }

    /// Σ [`Compensation::exact_size`] of the files summed up in `t`.
    fn exact_total(&self, t: &FileTotals) -> Option<u128> {
        self.exact(t.bytes, t.surplus_deletions)
    }

    fn exact(&self, bytes: u128, surplus: u128) -> Option<u128> {
        let weight = u128::from(self.average_value_size) * u128::from(DELETION_WEIGHT);
        bytes.checked_add(surplus.checked_mul(weight)?)
    }
}

/// Scores of levels 0 to `num_levels - 2` (the last level is never compacted further),
/// highest first. L0: the larger of (files not being compacted / L0 trigger) and (their
/// compensated bytes / `max_bytes_for_level_base`). Ln: compensated bytes of files not
/// being compacted / target bytes of Ln.
pub fn compute_scores(
    version: &Version,
    options: &Options,
    compacting: &HashSet<u64>,
) -> Vec<LevelScore> {
    let comp = Compensation::of(version);
    let levels = version.num_levels().saturating_sub(1);
    let mut scores: Vec<LevelScore> = (0..levels)
        .map(|level| LevelScore {
            level,
            score: level_score(version, options, compacting, &comp, level),
        })
        .collect();
    sort_like_rocksdb(&mut scores);
    scores
}

/// [`compute_scores`] by level: one score per level of `version`, 0 for the last level
/// (which RocksDB gives none).
pub fn scores_by_level(
    version: &Version,
    options: &Options,
    compacting: &HashSet<u64>,
) -> Vec<f64> {
    let mut by_level = vec![0.0; version.num_levels()];
    for s in compute_scores(version, options, compacting) {
        if let Some(score) = by_level.get_mut(s.level) {
            *score = s.score;
        }
    }
    by_level
}

fn level_score(
    version: &Version,
    options: &Options,
    compacting: &HashSet<u64>,
    comp: &Compensation,
    level: usize,
) -> f64 {
    let (files, bytes) = idle_files(version, compacting, comp, level)
        .unwrap_or_else(|| walk_idle_files(version, compacting, comp, level));
    if level == 0 {
        let by_count = files as f64 / f64::from(options.level0_file_num_compaction_trigger.max(1));
        let by_size = bytes as f64 / options.max_bytes_for_level_base.max(1) as f64;
        by_count.max(by_size)
    } else {
        bytes as f64 / options.max_bytes_for_level(level).max(1) as f64
    }
}

/// The number of files of `level` that no running compaction holds, and the sum of their
/// compensated sizes (saturating): the level's sums less the held files, which are found
/// by number, so the cost follows the running compactions, not the level. `None` if a sum
/// would not fit in a `u128`.
fn idle_files(
    version: &Version,
    compacting: &HashSet<u64>,
    comp: &Compensation,
    level: usize,
) -> Option<(u64, u64)> {
    let files = version.files(level);
    let held = compacting
        .iter()
        .filter_map(|&n| files.get(version.position(level, n)?));
    let (mut count, mut held_bytes) = (0u64, 0u128);
    for f in held {
        count += 1;
        held_bytes = held_bytes.checked_add(comp.exact_size(f)?)?;
    }
    let all = comp.exact_total(&version.level_totals(level))?;
    let idle = all.checked_sub(held_bytes)?;
    // A walk saturating file by file ends at the same figure: min(exact sum, u64::MAX).
    let bytes = u64::try_from(idle).unwrap_or(u64::MAX);
    Some((files.len() as u64 - count, bytes))
}

/// [`idle_files`] by walking the level (the reference, and the way out of a `u128`
/// overflow).
fn walk_idle_files(
    version: &Version,
    compacting: &HashSet<u64>,
    comp: &Compensation,
    level: usize,
) -> (u64, u64) {
    let idle = version
        .files(level)
        .iter()
        .filter(|f| !compacting.contains(&f.number));
    let (mut files, mut bytes) = (0u64, 0u64);
    for f in idle {
        files += 1;
        bytes = bytes.saturating_add(comp.size(f));
    }
    (files, bytes)
}

/// RocksDB orders the scores with a swap-based pass (swap when strictly smaller). It is not
/// a stable sort, and equal scores can come out of level order; the same pass keeps zkv's
/// choice identical.
fn sort_like_rocksdb(scores: &mut [LevelScore]) {
    let mut rest = scores;
    while let Some((first, others)) = rest.split_first_mut() {
        for other in others.iter_mut() {
            if first.score < other.score {
                std::mem::swap(first, other);
            }
        }
        rest = others;
    }
}

/// RocksDB's estimate of the bytes compaction still has to process to bring every level
/// under its target (drives the pending-compaction-bytes write slowdown and stop): L0's
/// bytes if L0 is due (plus the base level's, which that compaction rewrites), then for each
/// level the bytes above its target, times the fan-out into the next level plus one.
pub fn estimated_compaction_needed_bytes(version: &Version, options: &Options) -> u64 {
    let size_of = |level: usize| -> u64 { version.level_bytes(level) };
    let mut needed = 0u64;
    let mut to_next = 0u64;
    let l0 = size_of(0);
    let l0_due = version.files(0).len() as u64
        >= u64::from(options.level0_file_num_compaction_trigger)
        || l0 >= options.max_bytes_for_level_base;
    if l0_due {
        needed = l0;
        to_next = l0;
    }
    let last_input = version.num_levels().saturating_sub(2);
    for level in 1..=last_input {
        let mut level_size = size_of(level);
        if level == 1 && l0_due {
            needed = needed.saturating_add(level_size);
        }
        level_size = level_size.saturating_add(std::mem::take(&mut to_next));
        let target = options.max_bytes_for_level(level);
        if level_size > target {
            to_next = level_size - target;
            let next_size = size_of(level + 1);
            if next_size > 0 {
                let fan_out = next_size as f64 / level_size as f64 + 1.0;
                needed = needed.saturating_add((to_next as f64 * fan_out) as u64);
            }
        }
    }
    needed
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::compaction::test_util::{file, version_of};

    fn opts() -> Options {
        Options {
            max_bytes_for_level_base: 1000,
            max_bytes_for_level_multiplier: 10.0,
            level0_file_num_compaction_trigger: 4,
            ..Options::default()
        }
    }

    fn score_of(scores: &[LevelScore], level: usize) -> f64 {
        scores.iter().find(|s| s.level == level).unwrap().score
    }

    #[test]
    fn l0_score_is_the_larger_of_count_and_bytes() {
        let o = opts();
        // Two small files: 2 / 4 by count, 200 / 1000 by bytes.
        let v = version_of(
            4,
            &[(0, file(1, b"a", b"b", 100)), (0, file(2, b"c", b"d", 100))],
        );
        let s = compute_scores(&v, &o, &HashSet::new());
        assert_eq!(score_of(&s, 0), 0.5);
        // One big file: 1 / 4 by count, 1500 / 1000 by bytes.
        let v = version_of(4, &[(0, file(1, b"a", b"b", 1500))]);
        let s = compute_scores(&v, &o, &HashSet::new());
        assert_eq!(score_of(&s, 0), 1.5);
    }

    #[test]
    fn deep_levels_score_bytes_over_target_without_busy_files() {
        let o = opts();
        let v = version_of(
            4,
            &[
                (1, file(1, b"a", b"b", 600)),
                (1, file(2, b"c", b"d", 900)),
                (2, file(3, b"a", b"z", 5000)),
            ],
        );
        let s = compute_scores(&v, &o, &HashSet::new());
        assert_eq!(s.len(), 3, "the last level has no score");
        assert_eq!(
            scores_by_level(&v, &o, &HashSet::new()),
            [0.0, 1.5, 0.5, 0.0]
        );
        assert_eq!(score_of(&s, 1), 1.5);
        assert_eq!(score_of(&s, 2), 0.5);
        assert_eq!(s[0].level, 1, "highest first");
        let busy: HashSet<u64> = [2].into();
        let s = compute_scores(&v, &o, &busy);
        assert_eq!(score_of(&s, 1), 0.6);
    }

    #[test]
    fn busy_l0_files_do_not_count() {
        let o = opts();
        let files: Vec<_> = (1..=6).map(|n| (0, file(n, b"a", b"z", 10))).collect();
        let v = version_of(3, &files);
        assert_eq!(score_of(&compute_scores(&v, &o, &HashSet::new()), 0), 1.5);
        let busy: HashSet<u64> = [1, 2, 3, 4].into();
        assert_eq!(score_of(&compute_scores(&v, &o, &busy), 0), 0.5);
    }

    #[test]
    fn ordering_matches_rocksdbs_swap_pass() {
        let mut s = vec![
            LevelScore {
                level: 0,
                score: 1.0,
            },
            LevelScore {
                level: 1,
                score: 1.0,
            },
            LevelScore {
                level: 2,
                score: 2.0,
            },
        ];
        sort_like_rocksdb(&mut s);
        let levels: Vec<usize> = s.iter().map(|s| s.level).collect();
        assert_eq!(levels, [2, 1, 0]);
    }

    #[test]
    fn tombstone_heavy_files_are_compensated() {
        let mut values = file(1, b"a", b"m", 1000);
        (values.entries, values.deletions) = (100, 0);
        (values.raw_key_size, values.raw_value_size) = (1000, 9000);
        let mut tombs = file(2, b"n", b"z", 100);
        (tombs.entries, tombs.deletions) = (50, 40);
        (tombs.raw_key_size, tombs.raw_value_size) = (500, 0);
        let mut balanced = file(3, b"0", b"1", 100);
        (balanced.entries, balanced.deletions) = (50, 20);
        let v = version_of(
            3,
            &[
                (1, values.clone()),
                (1, tombs.clone()),
                (0, balanced.clone()),
            ],
        );
        let comp = Compensation::of(&v);
        // 140 values, 9100 raw value bytes, 1200 bytes on disk for 10700 raw bytes.
        assert_eq!(comp.average_value_size, 9100 / 140 * 1200 / 10700);
        assert_eq!(comp.size(&values), 1000);
        assert_eq!(comp.size(&balanced), 100);
        let surplus = 40 * 2 - 50;
        assert_eq!(
            comp.size(&tombs),
            100 + surplus * comp.average_value_size * 2
        );
    }

    #[test]
    fn compensation_raises_the_score() {
        let o = opts();
        let mut tombs = file(1, b"a", b"b", 500);
        (tombs.entries, tombs.deletions) = (10, 10);
        let mut values = file(2, b"c", b"d", 400);
        (values.entries, values.raw_key_size, values.raw_value_size) = (10, 100, 10_000);
        let v = version_of(4, &[(1, tombs), (2, values)]);
        let s = compute_scores(&v, &o, &HashSet::new());
        assert!(score_of(&s, 1) > 0.5, "{s:?}");
    }

    /// A file of L0–L3 with any size and counts, extremes included (raw sizes stay small:
    /// the average value size of extreme ones overflows `Compensation::of` itself).
    fn arb_counted_file() -> impl Strategy<Value = (u32, u64, [u64; 5])> {
        let count = || prop_oneof![18 => 0u64..50, 1 => Just(u64::MAX / 2), 1 => Just(u64::MAX)];
        let size = prop_oneof![18 => 1u64..5000, 1 => Just(u64::MAX / 3), 1 => Just(u64::MAX)];
        let counts = (size, count(), count(), 0u64..5000, 0u64..5000);
        let counts = counts.prop_map(|(s, e, d, k, v)| [s, e, d, k, v]);
        (0u32..4, 0u64..40, counts)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn sums_less_held_files_score_like_a_walk(
            files in prop::collection::vec(arb_counted_file(), 0..24),
            held_bits in any::<u32>(),
        ) {
            let mut metas = Vec::new();
            for (i, &(level, start, [size, entries, deletions, raw_key, raw_value])) in
                files.iter().enumerate()
            {
                let number = i as u64 + 1;
                // L0 files overlap; a deep level's files take the next free key.
                let at = if level == 0 { start } else { number * 2 };
                let mut f = file(number, &at.to_be_bytes(), &at.to_be_bytes(), size);
                (f.entries, f.deletions) = (entries, deletions);
                (f.raw_key_size, f.raw_value_size) = (raw_key, raw_value);
                metas.push((level, f));
            }
            let v = version_of(5, &metas);
            let held: HashSet<u64> = (1..=files.len() as u64)
                .filter(|n| held_bits >> (n % 32) & 1 == 1)
                .collect();
            let comp = Compensation::of(&v);
            for level in 0..v.num_levels() {
                let walked = walk_idle_files(&v, &held, &comp, level);
                if let Some(summed) = idle_files(&v, &held, &comp, level) {
                    prop_assert_eq!(summed, walked, "level {}", level);
                }
            }
        }
    }

    #[test]
    fn pending_bytes_follow_rocksdbs_estimate() {
        let o = opts();
        // L0 due (4 files of 100): 400 + L1 (500) are needed; L1 then holds 900 < 1000.
        let mut files: Vec<_> = (1..=4).map(|n| (0, file(n, b"a", b"z", 100))).collect();
        files.push((1, file(10, b"a", b"z", 500)));
        let v = version_of(4, &files);
        assert_eq!(estimated_compaction_needed_bytes(&v, &o), 900);
        // L1 over target by 500 with 10000 bytes in L2: 500 × (10000 / 1500 + 1).
        let v = version_of(
            4,
            &[
                (1, file(1, b"a", b"z", 1500)),
                (2, file(2, b"a", b"z", 10_000)),
            ],
        );
        let want = (500.0 * (10_000.0 / 1500.0 + 1.0)) as u64;
        assert_eq!(estimated_compaction_needed_bytes(&v, &o), want);
        assert_eq!(estimated_compaction_needed_bytes(&Version::new(4), &o), 0);
    }
}
