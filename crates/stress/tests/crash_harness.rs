//! The crash harness in CI: twelve stores (process kills, power cuts and emulator kill
//! points × WAL synced or not × threaded or deterministic), each carried across its
//! crashes, more than 1000 crash points in all. Nothing acknowledged and durable may be
//! lost, no deleted key may come back, an unsynced store must come back as a prefix of its
//! writes, and flushes, compactions and zone cleaning must all have run between crashes.
//! `docs/RELIABILITY.md`, "Crash harness", has the figures this run gives.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use zkv_engine::options::ExecMode;
use zkv_stress::run::{run, Plan, Rounds, Until};
use zkv_stress::setup::{CrashKind, Setup};
use zkv_stress::totals::Totals;

/// Rounds per store, by kind: 4 stores of each kind give 4 × (40 + 200 + 120) = 1440.
const ROUNDS: Rounds = Rounds {
    kill: 40,
    power: 200,
    crashpoint: 120,
};

/// Every kind × WAL mode × execution mode (half of them cleaning by copying, half by
/// compacting, see `Setup::matrix`).
fn setups() -> Vec<Setup> {
    let exec = [ExecMode::Threaded, ExecMode::Deterministic];
    Setup::matrix(&CrashKind::ALL, &[true, false], &exec, 100)
        .into_iter()
        .map(|s| Setup {
            // Threaded stores run out of space now and then although most of the device
            // is dead data (tests/known_bugs.rs): counted and crashed there, so that the
            // crash checks go on. Remove once that is fixed.
            tolerate_out_of_space: true,
            ..s
        })
        .collect()
}

fn check_activity(t: &Totals) {
    let a = &t.activity;
    assert!(
        a.flushes > 0 && a.compactions > 0,
        "no flush or compaction: {a:?}"
    );
    assert!(
        a.gc_victims > 0 && a.gc_resets > 0 && a.gc_copy_bytes > 0,
        "zone cleaning did not run (or copied nothing): {a:?}"
    );
}

#[test]
fn a_thousand_crash_points_lose_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let plan = Plan {
        setups: setups(),
        dir: dir.path().to_path_buf(),
        exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_zkv-stress"))),
        until: Until::Rounds(ROUNDS),
        slice: Duration::from_secs(1),
        jobs: 2,
        progress: Duration::from_secs(20),
    };
    let start = Instant::now();
    let outcome = run(&plan, &|line| eprintln!("{line}")).unwrap();
    for store in &outcome.stores {
        eprintln!("{}", store.summary());
    }
    let t = &outcome.totals;
    eprint!("{}", t.report());
    eprintln!("wall time {:.1} s", start.elapsed().as_secs_f64());
    assert!(!t.failed(), "{}", t.report());
    assert!(t.crash_points() >= 1000, "{}", t.report());
    for store in &outcome.stores {
        let s = &store.totals;
        assert!(
            s.crash_points() > 0 && s.counts.recoveries_checked > 0,
            "{}",
            store.summary()
        );
        let a = &s.activity;
        assert!(
            a.flushes > 0 && a.compactions > 0 && a.gc_victims > 0,
            "no flush, compaction or cleaning: {}",
            store.summary()
        );
    }
    check_activity(t);
    // Cleaning ran under both execution modes (background cleaner and inline).
    for exec in [ExecMode::Threaded, ExecMode::Deterministic] {
        let mut sum = Totals::default();
        for s in outcome.stores.iter().filter(|s| s.setup.exec == exec) {
            sum.add(&s.totals);
        }
        check_activity(&sum);
    }
    assert!(
        t.counts.unsynced_ops_lost > 0,
        "no unsynced write was ever lost"
    );
    assert!(t.counts.crashes_in_recovery > 0, "no crash hit a recovery");
}

/// BlobDB stores (blob files written by flushes and compactions, dropped by garbage
/// collection and compactions, moved by the zone cleaner) through every crash kind, WAL
/// synced or not, both execution modes: nothing acknowledged lost, no dangling blob
/// reference (a read of a lost blob is a failure of the check), no deleted key back.
#[test]
fn blob_stores_lose_nothing_across_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let setups = setups()
        .into_iter()
        .map(|s| Setup {
            blob: true,
            seed: s.seed + 5000,
            ..s
        })
        .collect();
    let plan = Plan {
        setups,
        dir: dir.path().to_path_buf(),
        exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_zkv-stress"))),
        until: Until::Rounds(Rounds {
            kill: 10,
            power: 50,
            crashpoint: 30,
        }),
        slice: Duration::from_secs(1),
        jobs: 2,
        progress: Duration::from_secs(20),
    };
    let start = Instant::now();
    let outcome = run(&plan, &|line| eprintln!("{line}")).unwrap();
    let t = &outcome.totals;
    eprint!("{}", t.report());
    eprintln!("wall time {:.1} s", start.elapsed().as_secs_f64());
    assert!(!t.failed(), "{}", t.report());
    assert!(t.crash_points() >= 250, "{}", t.report());
    check_activity(t);
    let a = &t.activity;
    assert!(
        a.blob_files_created > 0 && a.blob_files_deleted > 0,
        "blob files were not written and dropped: {a:?}"
    );
}
