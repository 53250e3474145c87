//! Bugs the crash harness found in the engine or the file layer, each as a minimal
//! reproduction that fails today. They are ignored so that CI stays green; run them with
//! `cargo test -p zkv-stress --test known_bugs -- --ignored --nocapture`, and remove the
//! `#[ignore]` (and the harness's tolerance, `Setup::tolerate_out_of_space`, set in
//! `tests/crash_harness.rs` and by `zkv-stress` without `--strict-space`) with the fix.

use std::sync::Arc;

use engine::options::ExecMode;
use stress::oracle::Oracle;
use stress::setup::{self, CrashKind, Setup};
use stress::workload::{End, Generator, NoJournal, Writer};
use zns::{MemDevice, ZonedDevice};
use zonefs::fs::CleaningMode;

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
/// (or a background compaction, after which the database refuses writes) with "out of
/// space" although at most 0.8 MiB of the 5 MiB usable hold live data. No crash is
/// involved. Fails within a second, on the first store, on every run so far.
///
/// At the failure every data zone but the two reserved ones is full, about 1.5 MiB valid
/// and 3.5 MiB invalid, several zones nearly all invalid (8 KiB valid of 256 KiB): cheap
/// victims are there, yet the writer that asked for space got none. In `compact` mode the
/// cleaner asks the engine to compact a victim's SSTs, and those outputs need free zones
/// outside the reserve, which is what is missing; a requested compaction that fails also
/// sets the database's background error, so the store refuses writes until reopened.
#[test]
#[ignore = "bug 1: threaded writes run out of space with compact-mode cleaning while most \
            of the device is dead data"]
fn threaded_writes_with_compact_cleaning_do_not_run_out_of_space() {
    threaded_run(CleaningMode::Compact, 6, 60_000);
}

/// Bug 2: the same with `copy` mode cleaning: fails within a few seconds, on the first or
/// second store, on every run so far. The failing writer is a WAL (create, append, the
/// final sync at close) or a flush or compaction (`create table`, `write table`).
///
/// The report printed at the failure shows the cause: e.g. 12 of the 20 data zones full
/// with no valid byte left, while the cleaner had picked 238 victims and reset only 219.
/// Those are cleaned victims whose reset waits for readers: the engine's table cache
/// still reads their old extents, and a zone is reset only when no reader pins it. The
/// engine's reclaimer (`PinReleaser::reclaim` → `refresh_tables_if_cleaned`), the
/// allocator's last resort, reopens those readers only when `ZoneFs::gc_victims` changed
/// since the engine last looked, and that counter moves when a victim is picked, before
/// its data is copied: a refresh that runs while the cleaner is still copying (after a
/// flush or compaction of another thread) uses up the change, the copy commits later,
/// and the last resort then returns false. Sometimes the error itself states that much of
/// the device is free (`free: 3330048` of `5242880` usable): the pins went, and the zones
/// were reset, just after the writer gave up. Making the reclaimer refresh on every call
/// (in a scratch copy, before the day's allocator changes) made the failure rarer but did
/// not remove it: tables held by running compactions and iterators pin zones too.
#[test]
#[ignore = "bug 2: threaded writes run out of space with copy-mode cleaning while much of \
            the device is free or dead data"]
fn threaded_writes_with_copy_cleaning_do_not_run_out_of_space() {
    threaded_run(CleaningMode::Copy, 6, 60_000);
}
