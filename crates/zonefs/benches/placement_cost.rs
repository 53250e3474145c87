//! The cost of one placement decision (`PlacementPolicy::place`, what the file layer times
//! as `placement_ns`) of LIZA, CAZA and CAZA+ on a 100-zone view.
//!
//! `cargo bench -p zkv-zonefs --bench placement_cost`
//!
//! `place/{liza,caza,caza+}/{1,10,100}`: a new 4 MiB L2 SST whose neighbourhood lists 1, 10
//! or 100 overlapping SSTs in L1 and as many in L3, plus its two closest L2 neighbours.
//! The view: 100 zones of 64 MiB: 72 full, 12 active (every eighth zone below 96, with 2
//! to 60 MiB left), 16 empty, an active resource free. Each overlapping SST lies in one zone
//! (every fifth one across two), spread over all 100 zones, so about one in eight is in an
//! active zone: with many overlaps CAZA ranks every zone of the list and finds room in one
//! of them; with one (in a full zone) it goes on to its next steps. Each case prints the
//! decision it times. LIZA ignores the neighbourhood: its three figures are the same work.
//!
//! `place/prophet/{window,open,nearest}`: Prophet's allocation of an SST with a predicted
//! deletion tick on the same view with Prophet's classes (the active zones windowed, 10
//! ticks each): PD inside an active zone's window; in none, an empty zone can be opened; in
//! none, no zone can be opened (steps 4-5). Its cost depends on the zones, not on the
//! number of SSTs.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use zkv_zonefs::placement::prophet::{Window, WINDOW_CLASS};
use zkv_zonefs::placement::{
    policy_by_name, Lifetime, Neighbors, PlacementCtx, PlacementHint, PlacementPolicy,
    PredictedDeath, Prophet, SstRef, ZoneUse, ZoneView,
};

const MIB: u64 = 1 << 20;
const ZONE: u64 = 64 * MIB;
const SST: u64 = 4 * MIB;
const ZONES: u32 = 100;

fn views() -> Vec<ZoneView> {
    (0..ZONES)
        .map(|zone| {
            let (state, remaining) = match zone {
                z if z % 8 == 3 && z < 96 => (ZoneUse::Active, (2 + u64::from(z) % 59) * MIB),
                z if z >= 82 => (ZoneUse::Empty, ZONE),
                _ => (ZoneUse::Full, 0),
            };
            ZoneView {
                zone,
                state,
                remaining,
                valid: if state == ZoneUse::Empty { 0 } else { ZONE / 2 },
                busy: false,
                class: Lifetime::Long.code(),
                policy: Vec::new(),
                first_blob: None,
            }
        })
        .collect()
}

fn key(i: u64) -> Vec<u8> {
    format!("user{i:012}").into_bytes()
}

/// Key ranges are numbered: range `i` is [i·100, i·100 + 99]. The new SST covers the
/// ranges from `FIRST` on.
const FIRST: u64 = 1000;

/// The SST of `level` over range `i`, in zones spread over the device.
fn sst(i: u64, level: u8) -> SstRef {
    let zone = ((i * 37 + u64::from(level) * 11) % u64::from(ZONES)) as u32;
    let zones = if i.is_multiple_of(5) {
        vec![(zone, SST / 2), ((zone + 1) % ZONES, SST / 2)]
    } else {
        vec![(zone, SST)]
    };
    let number = i + u64::from(level) * 100_000;
    SstRef {
        name: format!("{number:06}.sst"),
        number,
        level,
        size: SST - (i % 7) * 4096,
        smallest_key: key(i * 100),
        largest_key: key(i * 100 + 99),
        zones,
    }
}

fn hint(overlaps: u64) -> PlacementHint {
    let ranges = FIRST..FIRST + overlaps;
    PlacementHint {
        level: Some(2),
        lifetime: Lifetime::Long,
        size: SST,
        smallest_key: key(FIRST * 100),
        largest_key: key((FIRST + overlaps) * 100 - 1),
        neighbors: Some(Neighbors {
            overlap_above: ranges.clone().map(|i| sst(i, 1)).collect(),
            overlap_below: ranges.map(|i| sst(i, 3)).collect(),
            closest_before: Some(sst(FIRST - 2, 2)),
            closest_after: Some(sst(FIRST + overlaps + 1, 2)),
            level_scores: vec![0.8, 1.1, 1.3, 0.9, 0.0],
        }),
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let zones = views();
    let mut g = c.benchmark_group("place");
    for name in ["liza", "caza", "caza+"] {
        let policy = policy_by_name(name).expect("known policy");
        for overlaps in [1u64, 10, 100] {
            let h = hint(overlaps);
            let ctx = PlacementCtx {
                hint: &h,
                zones: &zones,
                can_open: true,
                min_capacity: 4096,
                zone_capacity: 1 << 30,
            };
            // What is timed, for the record.
            eprintln!("{name}/{overlaps}: {:?}", policy.place(&ctx));
            g.bench_with_input(BenchmarkId::new(name, overlaps), &ctx, |b, ctx| {
                b.iter(|| black_box(policy.place(black_box(ctx))))
            });
        }
    }
    g.finish();
}

/// The view with Prophet's classes: active zone z has the window [z·10, z·10 + 9].
fn prophet_views() -> Vec<ZoneView> {
    views()
        .into_iter()
        .map(|mut z| {
            if z.state == ZoneUse::Active {
                z.class = WINDOW_CLASS;
                let lo = u64::from(z.zone) * 10;
                z.policy = Window { lo, hi: lo + 9 }.encode();
            }
            z
        })
        .collect()
}

fn bench_prophet(c: &mut Criterion) {
    let zones = prophet_views();
    let prophet = Prophet::by_name("prophet").expect("prophet");
    let mut g = c.benchmark_group("place");
    // Zone 43 is active: PD 435 is in its window; 2000 is in none.
    for (case, tick, can_open) in [
        ("window", 435, true),
        ("open", 2000, true),
        ("nearest", 2000, false),
    ] {
        let h = PlacementHint {
            level: Some(3),
            lifetime: Lifetime::Extreme,
            size: SST,
            death: Some(PredictedDeath {
                tick,
                short_lived: false,
                deaths_per_tick: 4.0,
                sst_size: SST,
            }),
            ..Default::default()
        };
        let ctx = PlacementCtx {
            hint: &h,
            zones: &zones,
            can_open,
            min_capacity: 4096,
            zone_capacity: ZONE,
        };
        eprintln!("prophet/{case}: {:?}", prophet.place(&ctx));
        g.bench_with_input(BenchmarkId::new("prophet", case), &ctx, |b, ctx| {
            b.iter(|| black_box(prophet.place(black_box(ctx))))
        });
    }
    g.finish();
}

criterion_group!(benches, bench, bench_prophet);
criterion_main!(benches);
