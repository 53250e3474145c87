//! Property test of the placement policies on random zone views and neighbourhoods: every
//! decision is one the allocator can carry out.
//!
//! - `Use(z)`: z is an active data zone of the view, not busy, holding live data, with
//!   room for at least `min_capacity`;
//! - `OpenEmpty { finish }`: a zone it names to finish is active and idle; a key-range-aware
//!   policy opens an empty zone by itself only when `can_open` says one can be opened,
//!   otherwise the decision is LIZA's (its last fallback) on the same view;
//! - without a neighbourhood, CAZA and CAZA+ decide exactly as LIZA does;
//! - Prophet puts a long-lived SST never in a short-lived zone and a file without a
//!   prediction never in one of its zones, and opens without a free resource only after
//!   finishing a zone (or when no zone can be finished);
//! - combined with BAZA, every file policy decides for SSTs as it does alone on the zones
//!   that are not blob zones, and blob files go only to blob zones, the first free one in
//!   BAZA's fill order.

use proptest::prelude::*;
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::prophet::{Window, SHORT_CLASS, WINDOW_CLASS};
use zkv_zonefs::placement::{
    is_blob_zone, policy_by_name, Caza, CazaPlus, Decision, Lifetime, Liza, Neighbors,
    PlacementCtx, PlacementHint, PlacementPolicy, PredictedDeath, Prophet, SstRef, ZoneUse,
    ZoneView, BLOB_ZONE,
};

const ZONES: u32 = 12;
const CAPACITY: u64 = 1 << 20;

fn zone_view() -> impl Strategy<Value = (u8, u64, u64, bool, u8)> {
    (0u8..3, 0u64..=CAPACITY, 0u64..3, any::<bool>(), 0u8..6)
}

fn views() -> impl Strategy<Value = Vec<ZoneView>> {
    prop::collection::vec(zone_view(), ZONES as usize).prop_map(|zs| {
        zs.into_iter()
            .zip(2u32..)
            .map(|((state, remaining, valid, busy, class), zone)| {
                let state = [ZoneUse::Empty, ZoneUse::Active, ZoneUse::Full][state as usize];
                let (remaining, valid) = match state {
                    ZoneUse::Empty => (CAPACITY, 0),
                    ZoneUse::Active => (remaining, valid * 1000),
                    ZoneUse::Full => (0, valid * 1000),
                    other => unreachable!("only three uses are drawn, not {other:?}"),
                };
                ZoneView {
                    zone,
                    state,
                    remaining,
                    valid,
                    busy: busy && state != ZoneUse::Full,
                    class,
                    policy: Vec::new(),
                    first_blob: None,
                }
            })
            .collect()
    })
}

/// An SST in one or two zones, some of them outside the view.
fn sst() -> impl Strategy<Value = SstRef> {
    (
        1u64..=CAPACITY,
        prop::collection::vec((0u32..ZONES + 4, 1u64..CAPACITY), 1..3),
        prop::collection::vec(any::<u8>(), 0..4),
    )
        .prop_map(|(size, zones, key)| SstRef {
            name: format!("{size}.sst"),
            size,
            smallest_key: key.clone(),
            largest_key: key,
            zones,
            ..Default::default()
        })
}

fn neighbors() -> impl Strategy<Value = Neighbors> {
    (
        prop::collection::vec(sst(), 0..5),
        prop::collection::vec(sst(), 0..5),
        prop::option::of(sst()),
        prop::option::of(sst()),
        prop::collection::vec(0.0f64..3.0, 0..5),
    )
        .prop_map(|(above, below, before, after, scores)| Neighbors {
            overlap_above: above,
            overlap_below: below,
            closest_before: before,
            closest_after: after,
            level_scores: scores,
        })
}

fn hint() -> impl Strategy<Value = PlacementHint> {
    (
        prop::option::of(0u8..5),
        0u64..2 * CAPACITY,
        prop::option::of(neighbors()),
        prop::collection::vec(any::<u8>(), 0..4),
    )
        .prop_map(|(level, size, neighbors, key)| PlacementHint {
            level,
            lifetime: Lifetime::from_code(2 + level.unwrap_or(0).min(3)).unwrap_or_default(),
            size,
            smallest_key: key.clone(),
            largest_key: key,
            neighbors,
            ..Default::default()
        })
}

fn check(policy: &dyn PlacementPolicy, ctx: &PlacementCtx<'_>) -> Result<(), TestCaseError> {
    let d = policy.place(ctx);
    let view = |z: u32| ctx.zones.iter().find(|v| v.zone == z);
    let liza = Liza.place(ctx);
    match d {
        Decision::Use(z) => {
            let v = view(z);
            prop_assert!(
                v.is_some_and(|v| v.state == ZoneUse::Active
                    && !v.busy
                    && v.valid > 0
                    && v.remaining >= ctx.min_capacity),
                "{}: Use({z}) of {v:?}",
                policy.name()
            );
        }
        Decision::OpenEmpty { finish, .. } => {
            if let Some(f) = finish {
                let v = view(f);
                prop_assert!(v.is_some_and(|v| v.state == ZoneUse::Active && !v.busy));
            }
            prop_assert!(
                (ctx.can_open && finish.is_none()) || d == liza,
                "{}: {d:?} without an empty zone to open",
                policy.name()
            );
        }
        _ => prop_assert!(false, "a decision this test does not know: {d:?}"),
    }
    if ctx.hint.neighbors.is_none() {
        prop_assert_eq!(&d, &liza, "{} without neighbours", policy.name());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_decision_can_be_carried_out(
        zones in views(),
        hint in hint(),
        can_open in any::<bool>(),
        min_capacity in 1u64..CAPACITY / 2,
    ) {
        let can_open = can_open && zones.iter().any(|z| z.state == ZoneUse::Empty && !z.busy);
        let ctx = PlacementCtx {
            hint: &hint,
            zones: &zones,
            can_open,
            min_capacity,
            zone_capacity: 1 << 30,
        };
        for policy in [&Liza as &dyn PlacementPolicy, &Caza, &CazaPlus] {
            check(policy, &ctx)?;
        }
    }
}

/// Zones of LIZA's classes and Prophet's (short-lived, and windowed with random windows).
fn prophet_views() -> impl Strategy<Value = Vec<ZoneView>> {
    (
        views(),
        prop::collection::vec((0u8..3, 0u64..100, 0u64..20), ZONES as usize),
    )
        .prop_map(|(mut zones, tags)| {
            for (z, (kind, lo, len)) in zones.iter_mut().zip(tags) {
                match kind {
                    0 => {}
                    1 => z.class = SHORT_CLASS,
                    _ => {
                        z.class = WINDOW_CLASS;
                        z.policy = Window { lo, hi: lo + len }.encode();
                    }
                }
            }
            zones
        })
}

fn death() -> impl Strategy<Value = Option<PredictedDeath>> {
    prop::option::of(
        (0u64..150, any::<bool>(), 0.0f64..8.0, 1u64..CAPACITY).prop_map(
            |(tick, short_lived, deaths_per_tick, sst_size)| PredictedDeath {
                tick,
                short_lived,
                deaths_per_tick,
                sst_size,
            },
        ),
    )
}

fn check_prophet(p: &Prophet, ctx: &PlacementCtx<'_>) -> Result<(), TestCaseError> {
    let d = p.place(ctx);
    let view = |z: u32| ctx.zones.iter().find(|v| v.zone == z);
    let prophets = |c: u8| c == SHORT_CLASS || c == WINDOW_CLASS;
    match &d {
        Decision::Use(z) => {
            let v = view(*z);
            prop_assert!(
                v.is_some_and(|v| v.state == ZoneUse::Active
                    && !v.busy
                    && v.valid > 0
                    && v.remaining >= ctx.min_capacity),
                "Use({z}) of {v:?}"
            );
            let class = v.map_or(0, |v| v.class);
            match &ctx.hint.death {
                None => prop_assert!(!prophets(class), "unpredicted file in zone {z}"),
                Some(death) if !(death.short_lived && p.segregation) => {
                    prop_assert!(class != SHORT_CLASS, "long-lived file in short zone {z}")
                }
                Some(_) => {}
            }
        }
        Decision::OpenEmpty { finish, .. } => {
            if let Some(f) = finish {
                let v = view(*f);
                prop_assert!(v.is_some_and(|v| v.state == ZoneUse::Active && !v.busy));
            }
            let finishable = ctx
                .zones
                .iter()
                .any(|v| v.state == ZoneUse::Active && !v.busy);
            prop_assert!(
                ctx.can_open || finish.is_some() || !finishable,
                "{d:?} opens without a free resource"
            );
        }
        _ => prop_assert!(false, "a decision this test does not know: {d:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn prophet_decisions_can_be_carried_out(
        zones in prophet_views(),
        hint in hint(),
        death in death(),
        can_open in any::<bool>(),
        min_capacity in 1u64..CAPACITY / 2,
    ) {
        let can_open = can_open && zones.iter().any(|z| z.state == ZoneUse::Empty && !z.busy);
        let hint = PlacementHint { death, ..hint };
        let ctx = PlacementCtx {
            hint: &hint,
            zones: &zones,
            can_open,
            min_capacity,
            zone_capacity: CAPACITY,
        };
        for name in ["prophet", "prophet-gc-no"] {
            let p = Prophet::by_name(name).ok_or_else(|| TestCaseError::fail(name))?;
            check_prophet(&p, &ctx)?;
        }
    }
}

/// Views where some zones are blob zones (a blob placement's), with blob file numbers.
fn blob_views() -> impl Strategy<Value = Vec<ZoneView>> {
    (
        views(),
        prop::collection::vec((any::<bool>(), prop::option::of(0u64..50)), ZONES as usize),
    )
        .prop_map(|(mut zones, tags)| {
            for (z, (blob, first)) in zones.iter_mut().zip(tags) {
                if blob && z.state != ZoneUse::Empty {
                    z.class = BLOB_ZONE | 1;
                    z.first_blob = first;
                }
            }
            zones
        })
}

/// A file policy combined with BAZA: a blob file only ever goes to (or opens) a blob zone,
/// the first idle one with room in fill order; every other file decides as its policy does
/// on the zones that are not blob zones.
fn check_split(files: &str, ctx: &PlacementCtx<'_>) -> Result<(), TestCaseError> {
    let name = format!("{files}/baza");
    let split = policy_by_name(&name).map_err(TestCaseError::fail)?;
    let d = split.place(ctx);
    let view = |z: u32| ctx.zones.iter().find(|v| v.zone == z);
    if ctx.hint.kind != Some(FileKind::Blob) {
        let others: Vec<ZoneView> = ctx
            .zones
            .iter()
            .filter(|z| !is_blob_zone(z.class) || z.state == ZoneUse::Empty)
            .cloned()
            .collect();
        let alone = policy_by_name(files).map_err(TestCaseError::fail)?;
        let own = alone.place(&PlacementCtx {
            zones: &others,
            ..*ctx
        });
        match (&d, own) {
            (
                Decision::OpenEmpty {
                    finish: Some(_), ..
                },
                Decision::OpenEmpty { finish: None, .. },
            ) => {
                prop_assert!(!ctx.can_open, "{name}: {d:?}");
            }
            (d, own) => prop_assert_eq!(d, &own, "{}", name),
        }
        return Ok(());
    }
    match d {
        Decision::Use(z) => {
            let v = view(z);
            prop_assert!(
                v.is_some_and(|v| v.state == ZoneUse::Active
                    && is_blob_zone(v.class)
                    && !v.busy
                    && v.valid > 0
                    && v.remaining >= ctx.min_capacity),
                "{name}: Use({z}) of {v:?}"
            );
            let order = |v: &ZoneView| (v.first_blob.is_none(), v.first_blob, v.zone);
            let earlier = ctx.zones.iter().filter(|o| {
                o.state == ZoneUse::Active
                    && is_blob_zone(o.class)
                    && !o.busy
                    && o.valid > 0
                    && o.remaining >= ctx.min_capacity
                    && v.is_some_and(|v| order(o) < order(v))
            });
            prop_assert_eq!(
                earlier.count(),
                0,
                "{}: a zone earlier in order was free",
                name
            );
        }
        Decision::OpenEmpty { class, finish, .. } => {
            prop_assert!(is_blob_zone(class));
            if let Some(f) = finish {
                prop_assert!(view(f).is_some_and(|v| v.state == ZoneUse::Active && !v.busy));
            }
        }
        _ => prop_assert!(false, "a decision this test does not know: {d:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn baza_combined_with_every_file_policy_keeps_the_kinds_apart(
        zones in blob_views(),
        hint in hint(),
        blob in any::<bool>(),
        can_open in any::<bool>(),
        min_capacity in 1u64..CAPACITY / 2,
    ) {
        let can_open = can_open && zones.iter().any(|z| z.state == ZoneUse::Empty && !z.busy);
        let hint = PlacementHint {
            kind: Some(if blob { FileKind::Blob } else { FileKind::Sst }),
            ..hint
        };
        let ctx = PlacementCtx {
            hint: &hint,
            zones: &zones,
            can_open,
            min_capacity,
            zone_capacity: CAPACITY,
        };
        for files in zkv_zonefs::placement::policy_names() {
            check_split(files, &ctx)?;
        }
    }
}
