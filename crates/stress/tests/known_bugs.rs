//! Bugs the crash harness found in the engine or the file layer, each as a minimal
//! reproduction that fails today. They are ignored so that CI stays green; run them with
//! `cargo test -p zkv-stress --test known_bugs -- --ignored --nocapture`, and remove the
//! `#[ignore]` (and the harness's tolerance, `Setup::tolerate_out_of_space`, set in
//! `tests/crash_harness.rs` and by `zkv-stress` without `--strict-space`) with the fix.

use std::sync::Arc;

use zkv_engine::options::ExecMode;
use zkv_stress::oracle::Oracle;
use zkv_stress::setup::{self, CrashKind, Setup};
use zkv_stress::workload::{End, Generator, NoJournal, Writer};
use zkv_zns::{MemDevice, ZonedDevice};
use zkv_zonefs::fs::CleaningMode;

/// Runs `ops` of the harness's actions (puts, deletes, batches, flushes, gets, scans over
/// 800 keys, values up to 2 KB, never synced: at most 0.8 MiB live), then a clean close, on
/// each of `stores` fresh threaded stores of the harness's size (24 zones of 256 KiB, 2
/// reserved: 5 MiB usable; every key written once first) with the background cleaner in
/// `mode`. No crash. Panics at the first error, with where the space went.
fn threaded_run(mode: CleaningMode, stores: u64, ops: u64) {
    // Thread timing decides when it strikes: several stores make it likely.
    for seed in 1..=stores {
        let setup = Setup {
            gc_mode: mode,
            ..Setup::new(CrashKind::PowerCut, false, ExecMode::Threaded, seed)
        };
        let dev: Arc<dyn ZonedDevice> = Arc::new(MemDevice::new(setup.geometry()).unwrap());
        let mut oracle = Oracle::new(setup.keys);
        setup::create(Arc::clone(&dev), &setup, &mut oracle).unwrap();
        let stack = setup::open(dev, &setup).unwrap();
        let writer = Writer {
            sync: false,
            max_value: setup.max_value,
        };
        let mut gen = Generator::new(seed, setup.keys);
        let (end, _) = writer.run(&stack.db, &mut gen, &mut oracle, &mut NoJournal, ops);
        let space = stack.space_report();
        let what = match end {
            End::Done => match stack.close() {
                // A background job that failed shows at the latest when the close waits.
                Ok(()) => continue,
                Err(e) => format!("close: {e}"),
            },
            other => format!("{other:?}"),
        };
        panic!("store {seed}, {} cleaning: {what}\n{space}", mode.name());
    }
}

/// Bug 1: threaded mode with the background zone cleaner in `compact` mode fails writes
/// (or a background job, after which the database refuses writes) with "out of space"
/// although at most 0.8 MiB of the 5 MiB usable hold live data. No crash is involved.
///
/// It failed on the first store of every run. Fixed so far: readers follow the cleaner's
/// moves; a cached table of a deleted file no longer pins its zone until close; writers
/// wait for readers of deleted files, for the cleaner's compaction callback and for other
/// jobs (2 s at most each); manifests may use the reserve and roll once they span more
/// than two zones; the engine starts a requested compaction only if its inputs fit;
/// writers wait for the cleaner below half of `gc_start`; a flush or compaction without
/// room for its output waits and runs again. Now 0 failures in 48 stores (two runs); kept
/// as a reproduction until the copy-mode case below is fixed too and both hold for longer.
#[test]
#[ignore = "bug 1: threaded writes ran out of space with compact-mode cleaning while most \
            of the device was dead data (not seen since the fixes; see the doc comment)"]
fn threaded_writes_with_compact_cleaning_do_not_run_out_of_space() {
    threaded_run(CleaningMode::Compact, 24, 60_000);
}

/// Bug 2: the same with `copy` mode cleaning. It failed within a few seconds on every run:
/// cleaned victims waited for the engine's cached table readers to let go of their old
/// extents, and a cached table of a file a compaction had deleted pinned its zone until
/// the database closed. With the fixes listed above it failed on 1 store in 46 (two runs):
/// a flush found no room for its table eight times in a row while the cleaner freed
/// nothing, which stops the database.
#[test]
#[ignore = "bug 2: threaded writes still run out of space, rarely, with copy-mode cleaning \
            while most of the device is dead data"]
fn threaded_writes_with_copy_cleaning_do_not_run_out_of_space() {
    threaded_run(CleaningMode::Copy, 24, 60_000);
}
