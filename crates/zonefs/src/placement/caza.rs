//! CAZA, compaction-aware zone allocation as HotStorage'22 (section 4) describes it.
//!
//! A compaction deletes its victim of level L together with the SSTs of L+1 that overlap
//! it, so a new SST S of level L is placed next to the SSTs of L+1 it overlaps:
//! 1. (CAZA 1–4) the zones holding the overlapping L+1 SSTs, ranked by how many of them
//!    each holds, then by how many of their bytes (then the lower zone number); the first
//!    with room for S (see `key_range.rs`) wins;
//! 2. (ZC 1–2) no overlap (a new key range) or no room: an empty zone, so that S is not
//!    mixed with unrelated key ranges. Zones without valid data count as empty: the file
//!    layer resets them before asking whenever no empty zone or no active resource is
//!    left, and never copies anything for it. An empty zone is only opened when an active
//!    resource is free (`can_open`): finishing another zone to open one would cut that
//!    zone short for every SST in a new key range;
//! 3. (Fallback 1) the zone of the same-level SST closest in key range;
//! 4. (Fallback 2) LIZA.
//!
//! Files without a neighbourhood (WAL, manifest, files the engine knows nothing about)
//! are placed by LIZA exactly.

use std::cmp::Reverse;

use super::key_range::{closest_zone, has_room, open_empty};
use super::{Decision, Liza, PlacementCtx, PlacementPolicy, SstRef};

/// CAZA: an SST goes to the zone of the SSTs it will be compacted with (see the module's
/// text).
#[derive(Clone, Copy, Debug, Default)]
pub struct Caza;

impl PlacementPolicy for Caza {
    fn name(&self) -> &'static str {
        "caza"
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        let Some(n) = &ctx.hint.neighbors else {
            return Liza.place(ctx);
        };
        if let Some(zone) = overlap_zone(ctx, &n.overlap_below) {
            return Decision::Use(zone);
        }
        if ctx.can_open {
            return open_empty(ctx);
        }
        match closest_zone(ctx, n) {
            Some(zone) => Decision::Use(zone),
            None => Liza.place(ctx),
        }
    }

    fn wants_neighbors(&self) -> bool {
        true
    }
}

/// CAZA 2–4: the zones of the overlapping SSTs, most SSTs first, then most of their bytes,
/// then the lower number; the first with room.
fn overlap_zone(ctx: &PlacementCtx<'_>, overlaps: &[SstRef]) -> Option<u32> {
    let mut held: Vec<(u32, u64)> = overlaps
        .iter()
        .flat_map(|s| s.zones.iter().copied())
        .collect();
    held.sort_unstable_by_key(|&(zone, _)| zone);
    // (zone, SSTs held, bytes held); an SST lists each of its zones once.
    let mut tally: Vec<(u32, u32, u64)> = Vec::with_capacity(held.len());
    for (zone, bytes) in held {
        match tally.last_mut() {
            Some(t) if t.0 == zone => {
                t.1 += 1;
                t.2 += bytes;
            }
            _ => tally.push((zone, 1, bytes)),
        }
    }
    tally
        .into_iter()
        .filter(|t| has_room(ctx, t.0))
        .max_by_key(|&(zone, ssts, bytes)| (ssts, bytes, Reverse(zone)))
        .map(|(zone, ..)| zone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::key_range::test_util::*;
    use crate::placement::{Lifetime, Neighbors, PlacementHint, ZoneView};

    const MIB: u64 = 1 << 20;

    /// A new L1 SST over [k30, k50] of 1 MiB.
    fn hint(n: Option<Neighbors>) -> PlacementHint {
        PlacementHint {
            level: Some(1),
            lifetime: Lifetime::Medium,
            size: MIB,
            smallest_key: b"k30".to_vec(),
            largest_key: b"k50".to_vec(),
            neighbors: n,
            ..Default::default()
        }
    }

    fn decide(n: Option<Neighbors>, zones: &[ZoneView], can_open: bool) -> Decision {
        Caza.place(&ctx(&hint(n), zones, can_open))
    }

    fn below(ssts: Vec<SstRef>) -> Option<Neighbors> {
        Some(Neighbors {
            overlap_below: ssts,
            ..Default::default()
        })
    }

    fn open() -> Decision {
        Decision::OpenEmpty {
            class: Lifetime::Medium.code(),
            policy: Vec::new(),
            finish: None,
        }
    }

    #[test]
    fn the_zone_holding_most_overlapping_ssts_wins_then_most_bytes() {
        let zones = [active(2, 8 * MIB), active(3, 8 * MIB), active(4, 8 * MIB)];
        // Zone 3 holds two of the overlaps, zone 2 one (with more bytes).
        let n = below(vec![
            sst(10, 2, 4 * MIB, ("k20", "k35"), &[(2, 4 * MIB)]),
            sst(11, 2, MIB, ("k36", "k40"), &[(3, MIB)]),
            sst(12, 2, MIB, ("k41", "k60"), &[(3, MIB)]),
        ]);
        assert_eq!(decide(n, &zones, true), Decision::Use(3));
        // One SST each: bytes decide.
        let n = below(vec![
            sst(10, 2, MIB, ("k20", "k35"), &[(2, MIB)]),
            sst(11, 2, 2 * MIB, ("k36", "k60"), &[(4, 2 * MIB)]),
        ]);
        assert_eq!(decide(n, &zones, true), Decision::Use(4));
        // An SST spread over two zones counts in both.
        let n = below(vec![
            sst(10, 2, 2 * MIB, ("k20", "k35"), &[(2, MIB), (4, MIB)]),
            sst(11, 2, MIB, ("k36", "k60"), &[(4, MIB)]),
        ]);
        assert_eq!(decide(n, &zones, false), Decision::Use(4));
    }

    #[test]
    fn the_next_ranked_zone_takes_it_when_the_first_has_no_room() {
        let zones = [active(2, 8 * MIB), active(3, MIB / 2), full(4)];
        let n = below(vec![
            sst(10, 2, MIB, ("k20", "k35"), &[(2, MIB)]),
            sst(11, 2, MIB, ("k36", "k40"), &[(3, MIB), (4, MIB)]),
            sst(12, 2, MIB, ("k41", "k60"), &[(3, MIB), (4, MIB)]),
        ]);
        // Zones 3 and 4 hold two each, but 3 lacks room for 1 MiB and 4 is full.
        assert_eq!(decide(n, &zones, true), Decision::Use(2));
    }

    #[test]
    fn no_overlap_or_no_room_opens_an_empty_zone() {
        let zones = [active(2, 8 * MIB), full(3), empty(4, 8 * MIB)];
        assert_eq!(decide(below(vec![]), &zones, true), open());
        let n = below(vec![sst(10, 2, MIB, ("k20", "k60"), &[(3, MIB)])]);
        assert_eq!(decide(n, &zones, true), open());
    }

    #[test]
    fn without_an_empty_zone_the_closest_same_level_sst_decides() {
        let zones = [active(2, 8 * MIB), active(3, 8 * MIB), full(4)];
        let n = Neighbors {
            overlap_below: vec![sst(10, 2, MIB, ("k20", "k60"), &[(4, MIB)])],
            closest_before: Some(sst(20, 1, MIB, ("k00", "k10"), &[(2, MIB)])),
            closest_after: Some(sst(21, 1, MIB, ("k55", "k60"), &[(3, MIB)])),
            ..Default::default()
        };
        assert_eq!(decide(Some(n.clone()), &zones, false), Decision::Use(3));
        // The closer one has no room: the other one.
        let tight = [active(2, 8 * MIB), active(3, 4096), full(4)];
        assert_eq!(decide(Some(n), &tight, false), Decision::Use(2));
    }

    #[test]
    fn then_liza() {
        // Nothing has room: LIZA relaxes to the equal-class zone 3 (no empty zone to open).
        let mut medium = active(3, 8 * MIB);
        medium.class = Lifetime::Medium.code();
        let zones = [full(2), medium];
        let n = Neighbors {
            overlap_below: vec![sst(10, 2, MIB, ("k20", "k60"), &[(2, MIB)])],
            closest_before: Some(sst(20, 1, MIB, ("k00", "k10"), &[(2, MIB)])),
            ..Default::default()
        };
        let h = hint(Some(n));
        let c = ctx(&h, &zones, false);
        assert_eq!(Caza.place(&c), Liza.place(&c));
        assert_eq!(Caza.place(&c), Decision::Use(3));
    }

    #[test]
    fn files_without_a_neighbourhood_are_placed_by_liza() {
        let zones = [active(2, 8 * MIB), active(3, 8 * MIB)];
        for can_open in [false, true] {
            let h = hint(None);
            let c = ctx(&h, &zones, can_open);
            assert_eq!(Caza.place(&c), Liza.place(&c));
        }
        assert!(Caza.wants_neighbors());
        assert_eq!(Caza.name(), "caza");
    }

    #[test]
    fn busy_and_dead_zones_are_never_used() {
        let mut busy = active(2, 8 * MIB);
        busy.busy = true;
        let mut dead = active(3, 8 * MIB);
        dead.valid = 0;
        let zones = [busy, dead];
        let n = below(vec![sst(10, 2, MIB, ("k20", "k60"), &[(2, MIB), (3, MIB)])]);
        assert_eq!(decide(n, &zones, true), open());
    }
}
