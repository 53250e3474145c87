//! Zone-drain: zkv's own zone-aware picker (not from a paper; docs/COMPACTION.md explains
//! why it exists). Like ZACA it looks at the group G of each file of the level and its
//! overlapping next-level files, but it asks what the zone cleaner will pay, not how few
//! zones hold G.
//!
//! The cleaner copies the live bytes of its victim, and picks full zones with the fewest
//! live bytes. A compaction deleting S_m bytes of G from a full zone m holding live_m live
//! bytes takes the fraction S_m / live_m of what cleaning m would copy; at 1 the zone dies
//! and is reset without a copy. The drain score weighs each zone's fraction by G's bytes
//! there:
//!
//!   drain(G) = Σ_{m full} S_m · (S_m / live_m) / Σ_m S_m, in [0, 1]
//!
//! It is 1 when G is the whole live content of every zone it touches, and low when G is a
//! little of many well-filled zones, or sits in zones still being written (they are no
//! cleaning candidates yet). S_same instead rewards a small group in one zone even when the
//! zone keeps almost all its other live data, so its compaction frees little.
//!
//! Files are ordered by drain(G) × size(VC) / size(G), highest first. The second factor is
//! the seed's share of the bytes the compaction rewrites: by drain alone the picker prefers
//! groups with a large next-level overlap, and the LSM writes more than it saves the
//! cleaner (docs/COMPACTION.md has the measurements).
//!
//! The base order is min-overlap's (RocksDB's default `kMinOverlappingRatio`), not SICA's:
//! it rewrites the least per byte moved down, and zone-drain keeps it where no zone speaks
//! (ties, no zone known). Like ACC, and with ACC's two knobs ([`ZoneDrain::switch`]),
//! zone-drain keeps the base order while free space is above the turning point and on
//! levels below the minimum level: no cleaning is near then, and L0/L1 compactions hold up
//! writes.

use std::collections::HashMap;
use std::hash::BuildHasher;

use crate::options::Options;
use crate::version::{FileMeta, Version};

use super::acc::Acc;
use super::groups::{order_by_score, GroupScore, LiveBytes};
use super::min_overlap::MinOverlap;
use super::picker::{PickCtx, Picker};

/// The group that empties the cleaner's candidates most, per byte it rewrites, first.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ZoneDrain {
    /// When the drain order takes over from min-overlap's: ACC's turning point and
    /// minimum level.
    pub switch: Acc,
}

impl Picker for ZoneDrain {
    fn name(&self) -> &'static str {
        "zone-drain"
    }

    fn check(&self, options: &Options) -> Result<(), String> {
        self.switch.check_levels(options)
    }

    /// Candidates by score (higher first), files being compacted last; min-overlap's
    /// order among equal scores. The groups and scores are kept from call to call (see
    /// `groups.rs`).
    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        if !self.switch.uses_zaca(ctx, level) {
            return MinOverlap.order(ctx, level);
        }
        order_by_score(self, ctx, level)
    }
}

impl GroupScore for ZoneDrain {
    fn scorer(&self) -> &'static str {
        "zone-drain"
    }

    fn base_order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        MinOverlap.order(ctx, level)
    }

    fn reads_live(&self) -> bool {
        true
    }

    fn score(
        &self,
        v: &Version,
        level: usize,
        pos: usize,
        zones: &[(u32, u64)],
        live: &LiveBytes,
    ) -> u64 {
        let Some(seed) = v.files(level).get(pos) else {
            return 0;
        };
        let below = v.next_level_bytes(level, pos).by_user_key;
        let score = drain_score(zones, live) * seed_share(seed, below);
        // Non-negative scores order like their bit patterns; an empty f64 sum is -0.0,
        // whose bits would order above every positive score.
        if score > 0.0 {
            score.to_bits()
        } else {
            0
        }
    }
}

/// The seed's share of the group's bytes, size(VC) / size(G): the bytes a compaction moves
/// down a level per byte it rewrites.
fn seed_share(seed: &FileMeta, below: u64) -> f64 {
    let group = seed.size.saturating_add(below);
    if group == 0 {
        return 0.0;
    }
    seed.size as f64 / group as f64
}

/// drain(G) for a group's `(zone, bytes)` pairs (one per zone), given the live bytes of
/// the full zones; 0 for no bytes. A zone's fraction is capped at 1 (a zone's live count
/// may lag a file being deleted).
pub fn drain_score<S: BuildHasher>(group: &[(u32, u64)], full_live: &HashMap<u32, u64, S>) -> f64 {
    let total: f64 = group.iter().map(|(_, b)| *b as f64).sum();
    if total == 0.0 {
        return 0.0;
    }
    let drained: f64 = group
        .iter()
        .filter_map(|(zone, bytes)| {
            let live = *full_live.get(zone)?;
            let fraction = if live == 0 {
                1.0
            } else {
                (*bytes as f64 / live as f64).min(1.0)
            };
            Some(*bytes as f64 * fraction)
        })
        .sum();
    drained / total
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use proptest::prelude::*;

    use super::*;
    use crate::compaction::groups::ZoneCache;
    use crate::compaction::test_util::{
        arb_version, drawn_busy, file, order_in, order_with, two_groups, version_of, FakeZones,
    };
    use crate::compaction::{MinOverlap, Sica, Zaca};
    use crate::options::Options;
    use crate::version::Version;

    fn live(pairs: &[(u32, u64)]) -> HashMap<u32, u64> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn a_group_that_is_all_its_zones_hold_scores_one() {
        let full = live(&[(1, 300), (2, 100)]);
        assert_eq!(drain_score(&[(1, 300)], &full), 1.0);
        assert_eq!(drain_score(&[(1, 300), (2, 100)], &full), 1.0);
        // A third of zone 1: each byte drains a third of it.
        let third = drain_score(&[(1, 100)], &full);
        assert!((third - 1.0 / 3.0).abs() < 1e-12, "{third}");
        // Half the group in a zone still being written (not full): it counts for nothing.
        assert_eq!(drain_score(&[(2, 100), (9, 100)], &full), 0.5);
        assert_eq!(drain_score(&[], &full), 0.0);
        assert_eq!(drain_score(&[(9, 100)], &full), 0.0);
        // A live count lagging a deletion never makes a fraction above 1.
        assert_eq!(drain_score(&[(2, 500)], &full), 1.0);
        assert_eq!(drain_score(&[(3, 50)], &live(&[(3, 0)])), 1.0);
    }

    /// Below the turning point, so the drain score decides on L2 and deeper.
    fn drain_order(v: &Version, level: usize, zones: &FakeZones) -> Vec<u64> {
        order_with(
            &ZoneDrain::default(),
            v,
            level,
            zones,
            &[],
            0.1,
            &Options::default(),
        )
    }

    #[test]
    fn the_group_that_empties_its_zones_comes_first_where_zaca_disagrees() {
        let v = version_of(
            4,
            &[
                (2, file(1, b"a", b"c", 100)),
                (2, file(2, b"d", b"f", 100)),
                (3, file(10, b"a", b"b", 100)),
                (3, file(11, b"c", b"c", 100)),
                (3, file(12, b"d", b"e", 100)),
                (3, file(13, b"f", b"f", 100)),
            ],
        );
        // Group 1 all in zone 1, which holds 3000 live bytes: S_same 1, drains a tenth.
        // Group 2 over zones 5, 6, 7, each holding nothing else: S_same 1/3, drains all.
        let zones = FakeZones::one_zone_each(&[(1, 1), (10, 1), (11, 1), (2, 5), (12, 6), (13, 7)])
            .with_full(&[(1, 3000), (5, 100), (6, 100), (7, 100)]);
        assert_eq!(
            order_with(&Zaca, &v, 2, &zones, &[], 0.1, &Options::default()),
            [1, 2]
        );
        assert_eq!(drain_order(&v, 2, &zones), [2, 1]);
    }

    #[test]
    fn of_two_draining_groups_the_one_rewriting_less_comes_first() {
        // Both groups are all their zones hold (drain 1). File 1 (200 bytes) overlaps 900
        // bytes of L3: it moves 200 bytes down per 1100 rewritten; file 2, 100 per 200.
        let v = version_of(
            4,
            &[
                (2, file(1, b"a", b"c", 200)),
                (2, file(2, b"d", b"f", 100)),
                (3, file(10, b"a", b"c", 900)),
                (3, file(11, b"d", b"f", 100)),
            ],
        );
        let zones = FakeZones::new(&[
            (1, vec![(1, 200)]),
            (10, vec![(1, 900)]),
            (2, vec![(2, 100)]),
            (11, vec![(2, 100)]),
        ])
        .with_full(&[(1, 1100), (2, 200)]);
        assert_eq!(order_in(&Sica, &v, 2, &zones, &[]), [1, 2]);
        assert_eq!(drain_order(&v, 2, &zones), [2, 1]);
    }

    #[test]
    fn zones_being_written_do_not_count() {
        let v = version_of(
            4,
            &[(2, file(1, b"a", b"c", 100)), (2, file(2, b"d", b"f", 100))],
        );
        // File 1 alone in zone 1, still open; file 2 a half of full zone 2.
        let zones = FakeZones::one_zone_each(&[(1, 1), (2, 2)]).with_full(&[(2, 200)]);
        assert_eq!(drain_order(&v, 2, &zones), [2, 1]);
    }

    #[test]
    fn plenty_of_free_space_and_the_first_levels_keep_min_overlaps_order() {
        let v = two_groups();
        let zones = FakeZones::one_zone_each(&[(1, 1), (10, 2), (11, 3), (2, 7), (12, 7), (13, 7)])
            .with_full(&[(1, 1000), (2, 1000), (3, 1000), (7, 300)]);
        let base = order_in(&MinOverlap, &v, 1, &zones, &[]);
        assert_eq!(base, [1, 2]);
        // L1 keeps the base order below the turning point (minimum level 2) ...
        assert_eq!(drain_order(&v, 1, &zones), base);
        // ... and every level above it.
        let all_levels = ZoneDrain {
            switch: Acc::new(0.25, 0).unwrap(),
        };
        let o = |free| order_with(&all_levels, &v, 1, &zones, &[], free, &Options::default());
        assert_eq!(o(0.9), base);
        assert_eq!(o(0.1), [2, 1]);
    }

    #[test]
    fn ties_keep_min_overlaps_order_and_busy_files_come_last() {
        // L2: 1 (100 bytes, 100 below), 2 (300, 900 below), 3 (200, none below).
        let v = version_of(
            4,
            &[
                (2, file(1, b"a", b"c", 100)),
                (2, file(2, b"d", b"f", 300)),
                (2, file(3, b"g", b"i", 200)),
                (3, file(10, b"a", b"b", 100)),
                (3, file(11, b"e", b"e", 900)),
            ],
        );
        let base = order_in(&MinOverlap, &v, 2, &FakeZones::default(), &[]);
        assert_eq!(base, [3, 1, 2]);
        assert_eq!(
            order_in(&Sica, &v, 2, &FakeZones::default(), &[]),
            [2, 3, 1]
        );
        // No zone known: every group scores 0, min-overlap's order.
        assert_eq!(drain_order(&v, 2, &FakeZones::default()), base);
        // Group 1: half of zone 1 (drain 1/2) × share 1/2; group 2: all of zone 5 (drain
        // 1) × share 1/4; both 1/4, in min-overlap's order (SICA's would put 2 first).
        // Group 3 in no full zone: 0.
        let zones = FakeZones::new(&[
            (1, vec![(1, 100)]),
            (10, vec![(1, 100)]),
            (2, vec![(5, 300)]),
            (11, vec![(5, 900)]),
        ])
        .with_full(&[(1, 400), (5, 1200)]);
        assert_eq!(drain_order(&v, 2, &zones), [1, 2, 3]);
        let busy = order_with(
            &ZoneDrain::default(),
            &v,
            2,
            &zones,
            &[1],
            0.1,
            &Options::default(),
        );
        assert_eq!(busy, [2, 3, 1]);
    }

    /// Zone-drain's definition, spelled out: min-overlap's order, stably re-sorted by drain
    /// score × seed share (higher first), busy files last.
    fn by_definition(ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        let v = ctx.version;
        let live: HashMap<u32, u64> = ctx.zones.full_zone_live().into_iter().collect();
        let mut order = MinOverlap.order(ctx, level);
        order.sort_by_cached_key(|&i| {
            let f = &v.files(level)[i];
            if ctx.is_compacting(f) {
                return (true, Reverse(0));
            }
            let below = v.next_level_bytes(level, i).by_user_key;
            let group = ZoneCache::new(ctx, level).group_bytes(i).0.to_vec();
            let score = drain_score(&group, &live) * seed_share(f, below);
            (
                false,
                Reverse(if score > 0.0 { score.to_bits() } else { 0 }),
            )
        });
        order
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn one_sort_gives_the_order_of_the_definition(
            v in arb_version(),
            level in 0usize..4,
            placed in prop::collection::vec((0u32..6, 1u64..300, prop::bool::weighted(0.2)), 64),
            full in prop::collection::vec(prop::option::of(0u64..600), 6),
            busy_bits in prop::collection::vec(prop::bool::weighted(0.2), 64),
        ) {
            let zones = FakeZones::drawn(&v, &placed, &full);
            let busy = drawn_busy(&v, &busy_bits);
            let options = Options::default();
            let all_levels = ZoneDrain { switch: Acc::new(0.25, 0).unwrap() };
            let ctx = PickCtx {
                version: &v,
                options: &options,
                compacting: &busy,
                zones: &zones,
                free_ratio: 0.1,
                cursors: &[],
                blob_gc_files: 0,
            };
            prop_assert_eq!(all_levels.order(&ctx, level), by_definition(&ctx, level));
        }
    }
}
