//! LIZA, ZenFS's lifetime-based zone allocation (the baseline of every paper).
//!
//! A zone takes the lifetime class of the first file written into it. For a file of class f,
//! each candidate zone (holds live data, not full, not held by another writer, room for
//! `min_capacity`) scores diff = z − f when z > f (a longer-lived zone is the best fit), 50
//! when z = f, 100 when z < f; the lowest diff wins, and among equals the highest-numbered
//! zone (ZenFS scans in zone order and keeps the last of equals). Files without a hint
//! (NOT_SET/NONE) only match zones of exactly their class (diff 0), else 100.
//!
//! With a best diff of 50 or more, a fresh zone is preferred: if an active resource is free,
//! open an empty zone with class f. Without one, a diff of exactly 50 is accepted ("relax"),
//! and otherwise the open zone with the least remaining capacity is finished to make room
//! for the new zone.

use super::{Decision, Lifetime, PlacementCtx, PlacementPolicy, ZoneUse, ZoneView};

const COULD_BE_WORSE: u32 = 50;
const NOT_GOOD: u32 = 100;

/// LIZA: ZenFS's placement by lifetime class (see the module's text).
#[derive(Clone, Copy, Debug, Default)]
pub struct Liza;

/// ZenFS's lifetime distance between a zone's class and a file's.
pub fn lifetime_diff(zone: u8, file: Lifetime) -> u32 {
    let f = file.code();
    if matches!(file, Lifetime::NotSet | Lifetime::None) {
        return if zone == f { 0 } else { NOT_GOOD };
    }
    match zone.cmp(&f) {
        std::cmp::Ordering::Greater => u32::from(zone - f),
        std::cmp::Ordering::Equal => COULD_BE_WORSE,
        std::cmp::Ordering::Less => NOT_GOOD,
    }
}

/// A zone LIZA may append to: active, holding live data (a zone without any is about to be
/// reset), not held by another writer, with room for `min_capacity` bytes.
pub(super) fn is_candidate(z: &ZoneView, min_capacity: u64) -> bool {
    z.state == ZoneUse::Active && z.valid > 0 && !z.busy && z.remaining >= min_capacity.max(1)
}

/// The best open zone for a file and its diff (ties go to the later zone).
fn best_match(ctx: &PlacementCtx<'_>) -> Option<(u32, u32)> {
    let mut best: Option<(u32, u32)> = None;
    for z in ctx
        .zones
        .iter()
        .filter(|z| is_candidate(z, ctx.min_capacity))
    {
        let diff = lifetime_diff(z.class, ctx.hint.lifetime);
        if best.is_none_or(|(_, d)| diff <= d) {
            best = Some((z.zone, diff));
        }
    }
    best
}

/// The zone ZenFS finishes to free an active resource: the active, idle zone with the
/// least remaining capacity (the first of equals).
pub fn cheapest_to_finish(zones: &[ZoneView]) -> Option<u32> {
    zones
        .iter()
        .filter(|z| z.state == ZoneUse::Active && !z.busy)
        .min_by_key(|z| z.remaining)
        .map(|z| z.zone)
}

impl PlacementPolicy for Liza {
    fn name(&self) -> &'static str {
        "liza"
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        let class = ctx.hint.lifetime.code();
        let open_new = |finish| Decision::OpenEmpty {
            class,
            policy: Vec::new(),
            finish,
        };
        match best_match(ctx) {
            Some((zone, diff)) if diff < COULD_BE_WORSE => Decision::Use(zone),
            _ if ctx.can_open => open_new(None),
            Some((zone, COULD_BE_WORSE)) => Decision::Use(zone),
            _ => open_new(cheapest_to_finish(ctx.zones)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::key_range::test_util::active;
    use crate::placement::PlacementHint;

    fn zone(zone: u32, class: Lifetime, remaining: u64) -> ZoneView {
        ZoneView {
            class: class.code(),
            policy: Vec::new(),
            ..active(zone, remaining)
        }
    }

    fn decide(file: Lifetime, zones: &[ZoneView], can_open: bool) -> Decision {
        let hint = PlacementHint {
            lifetime: file,
            ..Default::default()
        };
        Liza.place(&PlacementCtx {
            hint: &hint,
            zones,
            can_open,
            min_capacity: 0,
            zone_capacity: 1 << 30,
        })
    }

    use Lifetime::*;

    #[test]
    fn diff_follows_zenfs() {
        assert_eq!(lifetime_diff(Extreme.code(), Medium), 2);
        assert_eq!(lifetime_diff(Long.code(), Medium), 1);
        assert_eq!(lifetime_diff(Medium.code(), Medium), 50);
        assert_eq!(lifetime_diff(Short.code(), Medium), 100);
        assert_eq!(lifetime_diff(NotSet.code(), NotSet), 0);
        assert_eq!(lifetime_diff(Short.code(), NotSet), 100);
        assert_eq!(lifetime_diff(None.code(), None), 0);
    }

    #[test]
    fn longer_lived_zone_is_the_best_fit() {
        let zones = [zone(3, Extreme, 10), zone(4, Long, 10), zone(5, Medium, 10)];
        // Long (diff 1) beats Extreme (diff 2) and Medium (diff 50), token or not.
        assert_eq!(decide(Medium, &zones, true), Decision::Use(4));
        assert_eq!(decide(Medium, &zones, false), Decision::Use(4));
    }

    #[test]
    fn ties_go_to_the_later_zone() {
        let zones = [zone(3, Long, 10), zone(7, Long, 10), zone(5, Long, 10)];
        assert_eq!(decide(Medium, &zones, true), Decision::Use(5));
    }

    #[test]
    fn equal_class_prefers_a_new_zone_when_one_can_be_opened() {
        let zones = [zone(3, Medium, 10)];
        assert_eq!(
            decide(Medium, &zones, true),
            Decision::OpenEmpty {
                class: Medium.code(),
                policy: Vec::new(),
                finish: Option::None
            }
        );
    }

    #[test]
    fn equal_class_is_accepted_without_a_token() {
        let zones = [zone(3, Medium, 10), zone(4, Short, 10)];
        assert_eq!(decide(Medium, &zones, false), Decision::Use(3));
    }

    #[test]
    fn shorter_lived_zones_are_never_used_without_a_token_finish_instead() {
        let zones = [zone(3, Short, 30), zone(4, Short, 10), zone(5, Short, 20)];
        assert_eq!(
            decide(Long, &zones, false),
            Decision::OpenEmpty {
                class: Long.code(),
                policy: Vec::new(),
                finish: Some(4)
            }
        );
        assert_eq!(
            decide(Long, &zones, true),
            Decision::OpenEmpty {
                class: Long.code(),
                policy: Vec::new(),
                finish: Option::None
            }
        );
    }

    #[test]
    fn busy_full_empty_dead_and_small_zones_are_not_candidates() {
        let mut busy = zone(1, Long, 10);
        busy.busy = true;
        let mut full = zone(2, Long, 0);
        full.state = ZoneUse::Full;
        let mut dead = zone(3, Long, 10);
        dead.valid = 0; // ZenFS only fills zones that hold live data
        let mut empty = zone(4, Long, 10);
        empty.state = ZoneUse::Empty;
        let zones = [busy, full, dead, empty];
        assert_eq!(
            decide(Medium, &zones, true),
            Decision::OpenEmpty {
                class: Medium.code(),
                policy: Vec::new(),
                finish: Option::None
            }
        );
        let hint = PlacementHint {
            lifetime: Medium,
            ..Default::default()
        };
        let small = [zone(5, Long, 4096)];
        let d = Liza.place(&PlacementCtx {
            hint: &hint,
            zones: &small,
            can_open: true,
            min_capacity: 8192,
            zone_capacity: 1 << 30,
        });
        assert_eq!(
            d,
            Decision::OpenEmpty {
                class: Medium.code(),
                policy: Vec::new(),
                finish: Option::None
            }
        );
    }

    #[test]
    fn the_busy_zone_is_never_finished() {
        let mut busy = zone(1, Short, 1);
        busy.busy = true;
        let zones = [busy, zone(2, Short, 50)];
        assert_eq!(
            decide(Extreme, &zones, false),
            Decision::OpenEmpty {
                class: Extreme.code(),
                policy: Vec::new(),
                finish: Some(2)
            }
        );
    }

    #[test]
    fn rocksdb_lifetime_mapping() {
        use crate::meta::FileKind as K;
        assert_eq!(Lifetime::for_file(K::Wal, Option::None, 1), Short);
        assert_eq!(Lifetime::for_file(K::Manifest, Option::None, 1), Short);
        assert_eq!(Lifetime::for_file(K::Sst, Some(0), 1), Medium);
        assert_eq!(Lifetime::for_file(K::Sst, Some(1), 1), Medium);
        assert_eq!(Lifetime::for_file(K::Sst, Some(2), 1), Long);
        assert_eq!(Lifetime::for_file(K::Sst, Some(3), 1), Extreme);
        assert_eq!(Lifetime::for_file(K::Sst, Some(6), 1), Extreme);
        // With a deeper base level (dynamic level bytes), levels above it are MEDIUM.
        assert_eq!(Lifetime::for_file(K::Sst, Some(3), 4), Medium);
        assert_eq!(Lifetime::for_file(K::Sst, Some(5), 4), Long);
        assert_eq!(Lifetime::for_file(K::Other, Option::None, 1), NotSet);
        for l in [NotSet, None, Short, Medium, Long, Extreme] {
            assert_eq!(Lifetime::from_code(l.code()), Some(l));
        }
    }

    #[test]
    fn unknown_policy_name_is_a_clear_error() {
        let err = crate::placement::policy_by_name("nope")
            .err()
            .unwrap_or_default();
        assert!(err.contains("unknown placement policy 'nope'") && err.contains("liza"));
        for name in crate::placement::policy_names() {
            let policy = crate::placement::policy_by_name(name);
            assert_eq!(policy.map(|p| p.name()).ok(), Some(name));
        }
    }
}
