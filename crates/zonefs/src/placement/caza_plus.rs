//! CAZA+, the compaction-aware allocation of MSST'24 (Same-Zone Compaction, section VI):
//! CAZA with the level scores and the SST sizes.
//!
//! A new SST S of level L will be deleted either by an L−1→L compaction (as one of the L
//! files overlapping an L−1 victim) or by an L→L+1 one (as the victim). The level scores
//! say which comes first, and the sizes say which partner the picker will take:
//! 1. score[L−1] > score[L]: an L−1→L compaction is the likelier; SICA picks the largest
//!    file of L−1 as victim, so S goes to the zone of the largest overlapping L−1 SST (the
//!    next largest when that zone has no room for S);
//! 2. otherwise (and always for L0): the zone of the smallest overlapping L+1 SST (the
//!    next smallest when out of room): SICA breaks ties between victims by the smallest
//!    overlapping L+1 bytes;
//! 3. no overlapping SST on the side the scores chose, or none with room: the zone of the
//!    same-level SST closest in key range. The other side is not tried: its SSTs are not
//!    inputs of the compaction the scores predict, while a same-level neighbour may be;
//! 4. an empty zone (only with a free active resource, as in CAZA);
//! 5. LIZA.
//!
//! Room, ties and files without a neighbourhood are as in CAZA (see `caza.rs` and
//! `key_range.rs`); equal sizes keep the engine's key order. A missing score counts as 0.

use super::key_range::{closest_zone, first_zone_with_room, open_empty};
use super::{Decision, Liza, Neighbors, PlacementCtx, PlacementPolicy, SstRef};

/// CAZA+: CAZA steered by the levels' compaction scores and the SSTs' sizes (see the
/// module's text).
#[derive(Clone, Copy, Debug, Default)]
pub struct CazaPlus;

impl PlacementPolicy for CazaPlus {
    fn name(&self) -> &'static str {
        "caza+"
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        let (Some(n), Some(level)) = (&ctx.hint.neighbors, ctx.hint.level) else {
            return Liza.place(ctx);
        };
        let zone = partner_zone(ctx, n, level).or_else(|| closest_zone(ctx, n));
        match zone {
            Some(zone) => Decision::Use(zone),
            None if ctx.can_open => open_empty(ctx),
            None => Liza.place(ctx),
        }
    }

    fn wants_neighbors(&self) -> bool {
        true
    }
}

/// Steps 1 and 2: the zone of the overlapping SST the predicted compaction will merge S
/// with.
fn partner_zone(ctx: &PlacementCtx<'_>, n: &Neighbors, level: u8) -> Option<u32> {
    let (side, largest_first) = if merged_from_above(&n.level_scores, level) {
        (&n.overlap_above, true)
    } else {
        (&n.overlap_below, false)
    };
    let mut ssts: Vec<&SstRef> = side.iter().collect();
    // Stable: equal sizes keep key order.
    if largest_first {
        ssts.sort_by_key(|s| std::cmp::Reverse(s.size));
    } else {
        ssts.sort_by_key(|s| s.size);
    }
    first_zone_with_room(ctx, ssts)
}

/// Whether an L−1→L compaction is likelier to merge an SST of `level` than its own level's.
fn merged_from_above(scores: &[f64], level: u8) -> bool {
    let score = |l: usize| scores.get(l).copied().unwrap_or(0.0);
    let l = usize::from(level);
    l >= 1 && score(l - 1) > score(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::key_range::test_util::*;
    use crate::placement::{Lifetime, PlacementHint, ZoneView};

    const MIB: u64 = 1 << 20;

    /// A new L2 SST over [k30, k50] of 1 MiB.
    fn hint(level: u8, n: Option<Neighbors>) -> PlacementHint {
        PlacementHint {
            level: Some(level),
            lifetime: Lifetime::Long,
            size: MIB,
            smallest_key: b"k30".to_vec(),
            largest_key: b"k50".to_vec(),
            neighbors: n,
            ..Default::default()
        }
    }

    fn decide_at(level: u8, n: Neighbors, zones: &[ZoneView], can_open: bool) -> Decision {
        CazaPlus.place(&ctx(&hint(level, Some(n)), zones, can_open))
    }

    fn decide(n: Neighbors, zones: &[ZoneView], can_open: bool) -> Decision {
        decide_at(2, n, zones, can_open)
    }

    /// Above: L1 SSTs 10 (2 MiB, zone 2) and 11 (3 MiB, zone 3); below: L3 SSTs 20 (4 MiB,
    /// zone 4) and 21 (1 MiB, zone 5); scores of L0..L3.
    fn lsm(scores: [f64; 4]) -> Neighbors {
        Neighbors {
            overlap_above: vec![
                sst(10, 1, 2 * MIB, ("k25", "k35"), &[(2, 2 * MIB)]),
                sst(11, 1, 3 * MIB, ("k36", "k55"), &[(3, 3 * MIB)]),
            ],
            overlap_below: vec![
                sst(20, 3, 4 * MIB, ("k00", "k40"), &[(4, 4 * MIB)]),
                sst(21, 3, MIB, ("k41", "k90"), &[(5, MIB)]),
            ],
            closest_before: Some(sst(30, 2, MIB, ("k10", "k20"), &[(6, MIB)])),
            closest_after: None,
            level_scores: scores.to_vec(),
        }
    }

    fn all_active() -> Vec<ZoneView> {
        (2..=6).map(|z| active(z, 8 * MIB)).collect()
    }

    #[test]
    fn a_busier_level_above_means_the_largest_overlap_above() {
        assert_eq!(
            decide(lsm([0.5, 1.5, 1.2, 0.0]), &all_active(), true),
            Decision::Use(3)
        );
    }

    #[test]
    fn otherwise_the_smallest_overlap_below() {
        // Equal scores are not "greater".
        for scores in [[0.5, 1.0, 1.5, 0.0], [0.5, 1.2, 1.2, 0.0]] {
            assert_eq!(decide(lsm(scores), &all_active(), true), Decision::Use(5));
        }
        // Level 0 has no level above.
        let n = lsm([9.0, 0.5, 0.5, 0.0]);
        assert_eq!(decide_at(0, n, &all_active(), true), Decision::Use(5));
    }

    #[test]
    fn the_next_best_when_out_of_room() {
        let mut zones = all_active();
        zones[1] = full(3); // the largest L1 overlap's zone
        assert_eq!(
            decide(lsm([0.5, 1.5, 1.2, 0.0]), &zones, true),
            Decision::Use(2)
        );
        zones[3] = active(5, MIB / 2); // the smallest L3 overlap's zone
        assert_eq!(
            decide(lsm([0.5, 1.0, 1.5, 0.0]), &zones, true),
            Decision::Use(4)
        );
    }

    #[test]
    fn no_partner_with_room_means_the_closest_key_range_then_an_empty_zone_then_liza() {
        // The scores point below, where nothing has room; the other side is not tried.
        let zones = [
            active(2, 8 * MIB),
            active(3, 8 * MIB),
            full(4),
            full(5),
            active(6, 8 * MIB),
        ];
        let n = lsm([0.5, 1.0, 1.5, 0.0]);
        assert_eq!(decide(n.clone(), &zones, true), Decision::Use(6));
        // The closest SST's zone is full too: an empty zone.
        let mut zones = zones;
        zones[4] = full(6);
        let opened = Decision::OpenEmpty {
            class: Lifetime::Long.code(),
            policy: Vec::new(),
            finish: None,
        };
        assert_eq!(decide(n.clone(), &zones, true), opened);
        // No empty zone: LIZA (zones 2 and 3 are of class Long like the file: relax to
        // the later one).
        let h = hint(2, Some(n));
        let c = ctx(&h, &zones, false);
        assert_eq!(CazaPlus.place(&c), Liza.place(&c));
        assert_eq!(CazaPlus.place(&c), Decision::Use(3));
    }

    #[test]
    fn no_overlap_at_all_means_the_closest_key_range() {
        let n = Neighbors {
            level_scores: vec![0.5, 1.5, 1.2],
            closest_before: Some(sst(30, 2, MIB, ("k10", "k20"), &[(6, MIB)])),
            ..Default::default()
        };
        assert_eq!(decide(n, &all_active(), true), Decision::Use(6));
    }

    #[test]
    fn equal_sizes_keep_key_order_and_missing_scores_count_as_zero() {
        let n = Neighbors {
            overlap_below: vec![
                sst(20, 3, MIB, ("k00", "k40"), &[(4, MIB)]),
                sst(21, 3, MIB, ("k41", "k90"), &[(5, MIB)]),
            ],
            level_scores: vec![],
            ..Default::default()
        };
        assert_eq!(decide(n, &all_active(), true), Decision::Use(4));
    }

    #[test]
    fn files_without_a_neighbourhood_or_level_are_placed_by_liza() {
        let zones = all_active();
        let mut no_level = hint(2, Some(lsm([0.5, 1.5, 1.2, 0.0])));
        no_level.level = None;
        for h in [hint(2, None), no_level] {
            let c = ctx(&h, &zones, true);
            assert_eq!(CazaPlus.place(&c), Liza.place(&c));
        }
        assert!(CazaPlus.wants_neighbors());
        assert_eq!(CazaPlus.name(), "caza+");
    }
}
