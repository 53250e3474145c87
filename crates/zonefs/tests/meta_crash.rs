//! Crash tests: power cuts at random points of a workload that appends, syncs and rolls
//! through every metadata zone several times. After each cut the mounted state must be
//! the model of one sync point at or after the last acknowledged sync, and the log must
//! keep working.

mod common;

use std::sync::Arc;

use common::{mem_device, small_geometry, tiny_block_geometry, Harness, Model};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::{FaultControl, FaultOp, Geometry, MemDevice, TearMode, ZoneOp, ZonedDevice};
use zkv_zonefs::meta::{MetaError, MetaLog, MountReport};

const META_ZONES: u32 = 3;
/// About ten rolls: every metadata zone is used three times.
const SYNCS: usize = 150;
/// The workload issues about 310 mutating commands; a few cuts land after it (idle).
const CUT_RANGE: u64 = 330;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x00c0_ffee)
}

/// Which recovery paths a series of crashes went through, to check that the tests reach
/// them.
#[derive(Debug, Default)]
struct Coverage {
    /// The in-flight sync survived / was lost.
    landed: u32,
    lost: u32,
    torn_tails: u32,
    /// A newer generation was passed over (a roll cut before its snapshot was durable).
    fallbacks: u32,
    mount_rolls: u32,
}

impl Coverage {
    fn add(&mut self, h: &Harness, report: &MountReport) {
        if report.commit > h.last_ok {
            self.landed += 1;
        } else if h.last_written() > h.last_ok {
            self.lost += 1;
        }
        self.torn_tails += u32::from(report.torn_tail.is_some());
        self.fallbacks += u32::from(!report.skipped.is_empty());
        self.mount_rolls += u32::from(report.rolled);
    }
}

/// After a recovery, the log must take more batches, roll twice more, and mount cleanly.
fn keeps_working(
    mem: &MemDevice,
    dev: Arc<dyn ZonedDevice>,
    h: &Harness,
    seed: u64,
    cov: &mut Coverage,
) {
    let (state, log, model) = h.recover_and_check();
    cov.add(h, log.mount_report().unwrap());
    let mut h = Harness::resume(dev, log, state, model, seed);
    let seq = h.log.sequence();
    while h.log.sequence() < seq + 2 {
        h.run(1).unwrap();
    }
    h.run(2).unwrap();
    mem.power_cut(TearMode::Drop);
    mem.restart();
    let (_, log, _) = h.recover_and_check();
    assert_eq!(log.mount_report().unwrap().commit, h.last_written());
}

/// Formats, runs the workload until the scheduled cut, powers on, checks the recovery.
fn crash_once(seed: u64, geo: Geometry, mode: TearMode, cov: &mut Coverage) {
    let (mem, dev) = mem_device(geo);
    let mut h = Harness::format(dev.clone(), META_ZONES, seed);
    mem.schedule_power_cut(rng(seed).random_range(0..CUT_RANGE), mode);
    match h.run(SYNCS) {
        Ok(()) => mem.power_cut(mode),
        Err(e) => assert!(e.is_power_loss(), "seed {seed}: {e}"),
    }
    mem.restart();
    keeps_working(&mem, dev, &h, seed + 1, cov);
}

#[test]
fn power_cuts_dropping_unsynced_writes() {
    let mut cov = Coverage::default();
    for seed in 0..120 {
        crash_once(seed, small_geometry(), TearMode::Drop, &mut cov);
    }
    // Dropping keeps no unsynced write, so the in-flight sync only survives when the cut
    // hit the reset that follows its device sync.
    assert!(cov.lost > 0, "{cov:?}");
}

#[test]
fn power_cuts_tearing_unsynced_writes() {
    let mut cov = Coverage::default();
    for seed in 0..120 {
        crash_once(seed, small_geometry(), TearMode::Tear { seed }, &mut cov);
    }
    assert!(cov.lost > 0 && cov.landed > 0, "{cov:?}");
    assert!(cov.torn_tails > 0 && cov.mount_rolls > 0, "{cov:?}");
}

#[test]
fn power_cuts_tearing_multi_block_batches_and_snapshots() {
    let mut cov = Coverage::default();
    for seed in 0..120 {
        crash_once(
            seed,
            tiny_block_geometry(),
            TearMode::Tear { seed },
            &mut cov,
        );
    }
    assert!(cov.lost > 0 && cov.landed > 0, "{cov:?}");
    assert!(cov.torn_tails > 0 && cov.mount_rolls > 0, "{cov:?}");
    assert!(cov.fallbacks > 0, "{cov:?}");
}

/// A second cut while mount itself rolls and resets zones.
#[test]
fn power_cuts_during_mount() {
    for seed in 0..60 {
        let (mem, dev) = mem_device(tiny_block_geometry());
        let mut h = Harness::format(dev.clone(), META_ZONES, seed);
        let mut r = rng(seed);
        mem.schedule_power_cut(r.random_range(0..CUT_RANGE), TearMode::Tear { seed });
        let _ = h.run(SYNCS);
        mem.power_cut(TearMode::Tear { seed });
        mem.restart();
        mem.schedule_power_cut(r.random_range(0..4), TearMode::Tear { seed: !seed });
        match MetaLog::recover(dev.clone(), META_ZONES) {
            Ok(_) => mem.power_cut(TearMode::Drop),
            Err(e) => assert!(e.is_power_loss(), "seed {seed}: {e}"),
        }
        mem.restart();
        keeps_working(&mem, dev, &h, seed + 1, &mut Coverage::default());
    }
}

/// A cut during format leaves either a formatted empty file system or a clear error;
/// formatting again always works.
#[test]
fn power_cuts_during_format() {
    for seed in 0..40 {
        let (mem, dev) = mem_device(tiny_block_geometry());
        // Leave an older file system behind, so format has zones to reset.
        let mut h = Harness::format(dev.clone(), META_ZONES, seed);
        h.run(20).unwrap();
        mem.schedule_power_cut(seed % 8, TearMode::Tear { seed });
        let formatted = MetaLog::format(dev.clone(), META_ZONES);
        mem.restart();
        match MetaLog::recover(dev.clone(), META_ZONES) {
            Ok((state, _)) => {
                // Either the new, empty file system or the old one if format had not yet
                // touched it; never a mix.
                let empty = state.file_count() == 0 && state.next_file_id().0 == 1;
                assert!(empty || formatted.is_err(), "seed {seed}");
                state.check_invariants().unwrap();
            }
            Err(e) => {
                assert!(
                    formatted.is_err(),
                    "seed {seed}: format returned Ok, mount: {e}"
                );
                assert!(
                    matches!(e, MetaError::NotFormatted | MetaError::Corrupt { .. }),
                    "seed {seed}: {e}"
                );
            }
        }
        let log = MetaLog::format(dev.clone(), META_ZONES).unwrap();
        let (state, _) = MetaLog::recover(dev, META_ZONES).unwrap();
        assert_eq!(state.file_count(), 0);
        drop(log);
    }
}

/// One-shot I/O errors on writes, syncs and resets: the failed sync is not acknowledged,
/// the next ones retry, and nothing acknowledged is ever lost.
#[test]
fn injected_errors_are_retried_without_losing_acknowledged_state() {
    let ops = [FaultOp::Write, FaultOp::Sync, FaultOp::Zone(ZoneOp::Reset)];
    for seed in 0..60 {
        let (mem, dev) = mem_device(small_geometry());
        let mut h = Harness::format(dev.clone(), META_ZONES, seed);
        let mut r = rng(seed);
        let mut failures = 0;
        for _ in 0..SYNCS / 10 {
            let op = ops[r.random_range(0..ops.len())];
            mem.inject_error(op, None, r.random_range(1..6));
            for _ in 0..10 {
                if let Err(e) = h.run(1) {
                    assert!(matches!(
                        e,
                        MetaError::Device(zkv_zns::ZnsError::Injected { .. })
                    ));
                    failures += 1;
                }
            }
        }
        assert!(failures > 0, "seed {seed}: no injected error fired");
        // An injection that has not fired yet would fail the next sync.
        mem.clear_injection();
        h.run(1).unwrap();
        mem.power_cut(TearMode::Drop);
        mem.restart();
        let (_, log, _) = h.recover_and_check();
        assert_eq!(log.mount_report().unwrap().commit, h.last_written());
    }
}

/// With two metadata zones, a roll whose device sync failed leaves the new zone volatile
/// and the old one waiting for its reset. A second roll before any successful sync goes
/// back to the old zone: it must not erase it before the new zone is durable.
#[test]
fn a_second_roll_after_a_failed_sync_keeps_a_durable_generation() {
    for cut in 0..7 {
        let (mem, dev) = mem_device(small_geometry());
        let mut h = Harness::format(dev.clone(), 2, cut);
        h.run(3).unwrap();
        let mut allowed = vec![h.work.model.clone()];
        h.append_one();
        allowed.push(h.work.model.clone());
        mem.inject_error(FaultOp::Sync, None, 1);
        assert!(h.log.roll_now(&h.state).is_err());
        assert_eq!(h.log.active_zone(), 1);
        h.append_one();
        allowed.push(h.work.model.clone());
        mem.schedule_power_cut(cut, TearMode::Drop);
        let _ = h.log.roll_now(&h.state);
        mem.power_cut(TearMode::Drop);
        mem.restart();
        let (state, _) = MetaLog::recover(dev.clone(), 2).unwrap();
        let matches = |m: &Model| std::panic::catch_unwind(|| m.assert_matches(&state)).is_ok();
        assert!(allowed.iter().any(matches), "cut {cut}");
    }
}

/// Injected errors followed by a power cut, with two and three metadata zones.
#[test]
fn power_cuts_after_injected_errors() {
    let ops = [FaultOp::Write, FaultOp::Sync, FaultOp::Zone(ZoneOp::Reset)];
    for seed in 0..80 {
        let meta_zones = 2 + (seed % 2) as u32;
        let (mem, dev) = mem_device(tiny_block_geometry());
        let mut h = Harness::format(dev.clone(), meta_zones, seed);
        let mut r = rng(seed);
        let mut cut_scheduled = false;
        for round in 0..30 {
            if round % 3 == 0 {
                let op = ops[r.random_range(0..ops.len())];
                mem.inject_error(op, None, r.random_range(1..4));
            }
            if !cut_scheduled && r.random_bool(0.1) {
                mem.schedule_power_cut(r.random_range(0..8), TearMode::Tear { seed });
                cut_scheduled = true;
            }
            match h.run(1) {
                Err(e) if e.is_power_loss() => break,
                _ => {}
            }
        }
        mem.power_cut(TearMode::Tear { seed: !seed });
        mem.restart();
        // Disarm an injection that did not fire: replace it by one that cannot match.
        mem.inject_error(FaultOp::Read, Some(u32::MAX), 1);
        keeps_working(&mem, dev, &h, seed + 1, &mut Coverage::default());
    }
}
