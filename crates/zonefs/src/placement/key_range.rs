//! What the two compaction-aware policies (CAZA and CAZA+) share: when a zone "has room"
//! for a file, the zones holding an SST, the same-level SST closest in key range, and the
//! empty-zone decision.
//!
//! Room: a key-range-aware step only picks a zone that can take the rest of the file whole
//! (`hint.size`, at least the allocator's `min_capacity`). A file split over two zones
//! would leave its spilled part away from the SSTs it was placed next to, which defeats
//! the point of placing it there; a fresh zone (or a later step) is the better choice.

use super::liza::is_candidate;
use super::{Decision, Neighbors, PlacementCtx, PlacementHint, SstRef, ZoneView};

/// Bytes a zone must have left for a key-range-aware step to pick it.
pub(super) fn room_needed(ctx: &PlacementCtx<'_>) -> u64 {
    ctx.hint.size.max(ctx.min_capacity)
}

/// The view of `zone` (views are in zone order).
fn view<'a>(ctx: &PlacementCtx<'a>, zone: u32) -> Option<&'a ZoneView> {
    let zones = ctx.zones;
    zones
        .binary_search_by_key(&zone, |z| z.zone)
        .ok()
        .and_then(|i| zones.get(i))
}

/// Whether `zone` is an idle active zone holding live data with room for the rest of the
/// file (the zones LIZA may use, with the stricter room of this module).
pub(super) fn has_room(ctx: &PlacementCtx<'_>, zone: u32) -> bool {
    view(ctx, zone).is_some_and(|z| is_candidate(z, room_needed(ctx)))
}

/// The zones holding `sst`, the one with most of its bytes first (then the lower number).
fn zones_by_bytes(sst: &SstRef) -> Vec<u32> {
    let mut zones = sst.zones.clone();
    zones.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    zones.into_iter().map(|(zone, _)| zone).collect()
}

/// The first zone with room among the zones of `ssts`, SST by SST in the given order.
pub(super) fn first_zone_with_room<'a>(
    ctx: &PlacementCtx<'_>,
    ssts: impl IntoIterator<Item = &'a SstRef>,
) -> Option<u32> {
    ssts.into_iter()
        .flat_map(zones_by_bytes)
        .find(|zone| has_room(ctx, *zone))
}

/// The zone of the same-level SST closest in key range to the new file, among the two the
/// hint names (the nearest before and the nearest after): the closer one first, the other
/// if the closer one's zones have no room.
pub(super) fn closest_zone(ctx: &PlacementCtx<'_>, n: &Neighbors) -> Option<u32> {
    first_zone_with_room(ctx, closest_first(n, ctx.hint))
}

/// The same-level neighbours, the closer first; equal gaps favour the one before.
fn closest_first<'a>(n: &'a Neighbors, hint: &PlacementHint) -> Vec<&'a SstRef> {
    match (&n.closest_before, &n.closest_after) {
        (Some(b), Some(a)) => {
            let skip = common_prefix(&b.largest_key, &a.smallest_key);
            let before = gap(&b.largest_key, &hint.smallest_key, skip);
            let after = gap(&hint.largest_key, &a.smallest_key, skip);
            if after < before {
                vec![a, b]
            } else {
                vec![b, a]
            }
        }
        (b, a) => b.iter().chain(a.iter()).collect(),
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The distance from `lo` up to `hi`, reading both as base-256 fractions from byte `skip`
/// on (every key between the two neighbours shares their common prefix, so skipping it
/// keeps 16 significant bytes for the part where they differ).
fn gap(lo: &[u8], hi: &[u8], skip: usize) -> u128 {
    fraction(hi, skip).saturating_sub(fraction(lo, skip))
}

fn fraction(key: &[u8], skip: usize) -> u128 {
    let tail = key.get(skip..).unwrap_or_default();
    let mut bytes = [0u8; 16];
    bytes.iter_mut().zip(tail).for_each(|(b, t)| *b = *t);
    u128::from_be_bytes(bytes)
}

/// Open an empty zone for the file, tagged with its lifetime class (so that LIZA, the last
/// fallback of both policies, still reads meaningful classes), finishing nothing.
pub(super) fn open_empty(ctx: &PlacementCtx<'_>) -> Decision {
    Decision::OpenEmpty {
        class: ctx.hint.lifetime.code(),
        policy: Vec::new(),
        finish: None,
    }
}

#[cfg(test)]
pub(super) mod test_util {
    //! Hand-built placement views for the policies' tests.

    use crate::placement::{Lifetime, PlacementCtx, PlacementHint, SstRef, ZoneUse, ZoneView};

    /// A decision for `hint` on `zones`, with a writer's block as the minimum room.
    pub fn ctx<'a>(
        hint: &'a PlacementHint,
        zones: &'a [ZoneView],
        can_open: bool,
    ) -> PlacementCtx<'a> {
        PlacementCtx {
            hint,
            zones,
            can_open,
            min_capacity: 4096,
            zone_capacity: 1 << 30,
        }
    }

    /// An active, idle zone with live data and `remaining` bytes of room.
    pub fn active(zone: u32, remaining: u64) -> ZoneView {
        ZoneView {
            zone,
            state: ZoneUse::Active,
            remaining,
            valid: 100,
            busy: false,
            class: Lifetime::Long.code(),
            policy: Vec::new(),
            first_blob: None,
        }
    }

    pub fn full(zone: u32) -> ZoneView {
        ZoneView {
            state: ZoneUse::Full,
            remaining: 0,
            ..active(zone, 0)
        }
    }

    pub fn empty(zone: u32, capacity: u64) -> ZoneView {
        ZoneView {
            state: ZoneUse::Empty,
            valid: 0,
            class: 0,
            policy: Vec::new(),
            ..active(zone, capacity)
        }
    }

    /// SST `number` of `level` over `[lo, hi]`, `size` bytes, in `zones` (zone, bytes).
    pub fn sst(
        number: u64,
        level: u8,
        size: u64,
        keys: (&str, &str),
        zones: &[(u32, u64)],
    ) -> SstRef {
        SstRef {
            name: format!("{number:06}.sst"),
            number,
            level,
            size,
            smallest_key: keys.0.as_bytes().to_vec(),
            largest_key: keys.1.as_bytes().to_vec(),
            zones: zones.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;
    use crate::placement::{Lifetime, PlacementHint};

    fn hint(keys: (&str, &str), n: Neighbors, size: u64) -> PlacementHint {
        PlacementHint {
            lifetime: Lifetime::Long,
            size,
            smallest_key: keys.0.as_bytes().to_vec(),
            largest_key: keys.1.as_bytes().to_vec(),
            neighbors: Some(n),
            ..Default::default()
        }
    }

    #[test]
    fn room_is_the_rest_of_the_file_at_least_the_minimum() {
        let zones = [active(1, 10_000), active(2, 50_000)];
        let h = hint(("a", "b"), Neighbors::default(), 20_000);
        let c = ctx(&h, &zones, false);
        assert_eq!(room_needed(&c), 20_000);
        assert!(!has_room(&c, 1) && has_room(&c, 2));
        assert!(!has_room(&c, 3), "unknown zone");
        let unknown = hint(("a", "b"), Neighbors::default(), 0);
        assert_eq!(room_needed(&ctx(&unknown, &zones, false)), 4096);
    }

    #[test]
    fn the_closer_same_level_neighbour_comes_first() {
        let n = Neighbors {
            closest_before: Some(sst(1, 2, 10, ("k10", "k20"), &[(1, 10)])),
            closest_after: Some(sst(2, 2, 10, ("k60", "k70"), &[(2, 10)])),
            ..Default::default()
        };
        let names = |keys| {
            closest_first(&n, &hint(keys, Neighbors::default(), 0))
                .iter()
                .map(|s| s.number)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(("k25", "k30")), vec![1, 2]);
        assert_eq!(names(("k40", "k55")), vec![2, 1]);
        // Equal gaps: the one before.
        assert_eq!(names(("k30", "k50")), vec![1, 2]);
        let only_after = Neighbors {
            closest_after: n.closest_after.clone(),
            ..Default::default()
        };
        let h = hint(("a", "b"), Neighbors::default(), 0);
        assert_eq!(closest_first(&only_after, &h).len(), 1);
        assert!(closest_first(&Neighbors::default(), &h).is_empty());
    }

    #[test]
    fn key_gaps_skip_the_common_prefix_and_survive_short_keys() {
        assert_eq!(common_prefix(b"user0001", b"user0009"), 7);
        assert!(gap(b"user0001", b"user0003", 7) < gap(b"user0001", b"user0009", 7));
        assert_eq!(gap(b"b", b"a", 0), 0, "out of order keys give no gap");
        assert_eq!(gap(b"", b"", 5), 0);
        assert!(gap(b"a", b"a\x01", 0) > 0);
    }

    #[test]
    fn an_sst_is_tried_in_the_zone_holding_most_of_it_first() {
        let s = sst(1, 1, 30, ("a", "b"), &[(3, 10), (5, 20), (4, 20)]);
        assert_eq!(zones_by_bytes(&s), vec![4, 5, 3]);
        let zones = [active(3, 1 << 20), full(4), active(5, 1 << 20)];
        let h = hint(("a", "b"), Neighbors::default(), 0);
        assert_eq!(first_zone_with_room(&ctx(&h, &zones, false), [&s]), Some(5));
    }
}
