//! Crash test: a power cut at a random device command of a write-heavy run (mostly synced
//! writes, batches, deletes, flushes, compactions), sometimes a second cut during the
//! recovery. After remount and reopen the database must hold exactly the state after some
//! prefix of the operations: every write acknowledged with `sync` (or followed by an
//! acknowledged flush) is present, nothing appears that was never written, and a deleted
//! key never comes back. Then it must keep working across another reopen.

mod support;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_engine::Error;
use zkv_zns::{FaultControl, MemDevice, TearMode, ZonedDevice};

const OPS: usize = 160;
const KEYS: u64 = 40;

fn options(mode: ExecMode) -> Options {
    tiny_options(mode)
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

/// The workload and what it promised.
struct Workload {
    rng: ChaCha8Rng,
    /// `models[i]`: the state after the first `i` operations.
    models: Vec<Model>,
    /// Operations that must survive: up to the last acknowledged synced write or flush.
    durable: usize,
    /// Operations attempted (the last one may have been cut).
    attempted: usize,
}

impl Workload {
    fn new(seed: u64) -> Workload {
        Workload {
            rng: ChaCha8Rng::seed_from_u64(seed),
            models: vec![Model::new()],
            durable: 0,
            attempted: 0,
        }
    }

    /// Runs until the end or the first error, which must be a power loss (or, in
    /// threaded mode, the refusal that follows a background job's power loss).
    fn run(&mut self, db: &Db) {
        for i in 0..OPS {
            if let Err(e) = self.step(db, i as u64) {
                let refused = matches!(e, Error::NotWritable(_));
                assert!(e.is_power_loss() || refused, "unexpected error: {e}");
                return;
            }
        }
    }

    fn step(&mut self, db: &Db, i: u64) -> Result<(), Error> {
        let mut model = self.models.last().cloned().unwrap_or_default();
        let sync = self.rng.random_bool(0.8);
        let wo = WriteOptions {
            sync,
            ..WriteOptions::default()
        };
        let roll = self.rng.random_range(0..100);
        let k = key(self.rng.random_range(0..KEYS));
        self.attempted += 1;
        let mut flushed = false;
        let result = if roll < 55 {
            let v = value(i, self.rng.random_range(1..120));
            model.insert(k.clone(), v.clone());
            self.models.push(model);
            db.put(&wo, &k, &v)
        } else if roll < 75 {
            model.remove(&k);
            self.models.push(model);
            db.delete(&wo, &k)
        } else if roll < 95 {
            let mut b = WriteBatch::new();
            for j in 0..self.rng.random_range(1..6u64) {
                let k = key(self.rng.random_range(0..KEYS));
                if self.rng.random_bool(0.3) {
                    b.delete(&k);
                    model.remove(&k);
                } else {
                    let v = value(i * 8 + j, self.rng.random_range(1..80));
                    b.put(&k, &v);
                    model.insert(k, v);
                }
            }
            self.models.push(model);
            db.write(&wo, b)
        } else {
            self.models.push(model);
            flushed = true;
            db.flush()
        };
        result?;
        if sync || flushed {
            self.durable = self.attempted;
        }
        Ok(())
    }
}

fn commands_of(seed: u64) -> u64 {
    let (mem, dev) = device(48, 128);
    let fs = format(&dev, fs_options());
    let start = mem.mutating_commands();
    let db = Db::open(fs, options(ExecMode::Deterministic)).unwrap();
    let mut w = Workload::new(seed);
    w.run(&db);
    drop(db);
    mem.mutating_commands() - start
}

/// Remounts and reopens after the cut; with `second_cut`, first cuts the power again
/// during that recovery.
fn recover(
    mem: &MemDevice,
    dev: &Arc<dyn ZonedDevice>,
    second_cut: Option<u64>,
    mode: ExecMode,
) -> Db {
    mem.restart();
    if let Some(after) = second_cut {
        mem.schedule_power_cut(after, TearMode::Drop);
        let attempt = zkv_zonefs::fs::ZoneFs::mount(dev.clone(), fs_options())
            .map_err(|e| e.to_string())
            .and_then(|fs| Db::open(Arc::new(fs), options(mode)).map_err(|e| e.to_string()));
        drop(attempt);
        if mem.is_powered() {
            mem.power_cut(TearMode::Drop);
        }
        mem.restart();
    }
    let fs = mount(dev, fs_options());
    Db::open(fs, options(mode)).unwrap_or_else(|e| panic!("reopen: {e}"))
}

/// How runs ended, over a test.
#[derive(Debug, Default)]
struct Tally {
    /// The cut came before the workload's end.
    cut_in_workload: u32,
    /// Recovery found fewer operations than were attempted (unsynced writes lost).
    lost_unsynced: u32,
    /// Recovery found operations beyond the last durable one.
    kept_unsynced: u32,
}

fn crash_once(seed: u64, mode: TearMode, exec: ExecMode, tally: &mut Tally) {
    let total = commands_of(seed);
    let (mem, dev) = device(48, 128);
    let fs = format(&dev, fs_options());
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    mem.schedule_power_cut(rng.random_range(0..=total), mode);
    let mut w = Workload::new(seed);
    match Db::open(Arc::clone(&fs), options(exec)) {
        Ok(db) => w.run(&db),
        Err(e) => assert!(e.is_power_loss(), "open: {e}"),
    }
    if mem.is_powered() {
        mem.power_cut(mode);
    }
    drop(fs);
    let second_cut = rng.random_bool(0.25).then(|| rng.random_range(0..20));
    let db = recover(&mem, &dev, second_cut, exec);
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let found = scan_all(&db, &Default::default());
    let matches = (w.durable..=w.attempted).find(|&i| w.models[i] == found);
    let Some(prefix) = matches else {
        panic!(
            "seed {seed} {mode:?}: the recovered state is no prefix in {}..={} ({} keys found)",
            w.durable,
            w.attempted,
            found.len()
        );
    };
    assert_holds(&db, &w.models[prefix], &keys, &format!("seed {seed}"));
    tally.cut_in_workload += u32::from(w.attempted < OPS);
    tally.lost_unsynced += u32::from(prefix < w.attempted);
    tally.kept_unsynced += u32::from(prefix > w.durable);
    keeps_working(db, &dev, w.models[prefix].clone(), seed, exec);
}

fn keeps_working(db: Db, dev: &Arc<dyn ZonedDevice>, mut model: Model, seed: u64, exec: ExecMode) {
    let wo = WriteOptions::synced();
    for i in 0..30u64 {
        let k = key((seed + i * 7) % KEYS);
        let v = value(seed * 1000 + i, 50);
        db.put(&wo, &k, &v).unwrap();
        model.insert(k, v);
    }
    db.close().unwrap();
    let fs = mount(dev, fs_options());
    let db = Db::open(fs, options(exec)).unwrap();
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    assert_holds(
        &db,
        &model,
        &keys,
        &format!("seed {seed} after more writes"),
    );
}

fn crash_many(seeds: std::ops::Range<u64>, exec: ExecMode, mode: impl Fn(u64) -> TearMode) {
    let mut tally = Tally::default();
    let n = seeds.end - seeds.start;
    for seed in seeds {
        crash_once(seed, mode(seed), exec, &mut tally);
    }
    eprintln!("{n} power cuts ({exec:?}): {tally:?}");
    assert!(tally.cut_in_workload as u64 > n / 2, "{tally:?}");
    assert!(tally.lost_unsynced > 0, "{tally:?}");
}

#[test]
fn power_cuts_dropping_unsynced_writes() {
    crash_many(0..250, ExecMode::Deterministic, |_| TearMode::Drop);
}

#[test]
fn power_cuts_tearing_unsynced_writes() {
    crash_many(1000..1250, ExecMode::Deterministic, |seed| TearMode::Tear {
        seed,
    });
}

/// Background threads race the cut (the cut point is chosen from a deterministic run, so
/// it lands anywhere in the threaded run).
#[test]
fn power_cuts_with_background_threads() {
    crash_many(2000..2100, ExecMode::Threaded, |seed| TearMode::Tear {
        seed,
    });
}

#[test]
fn workload_flushes_and_compacts() {
    let (_mem, dev) = device(48, 128);
    let fs = format(&dev, fs_options());
    let db = Db::open(fs, options(ExecMode::Deterministic)).unwrap();
    let mut w = Workload::new(7);
    w.run(&db);
    let s = db.stats();
    eprintln!(
        "{} flushes, {} compactions, {} moves",
        s.flushes, s.compactions, s.trivial_moves
    );
    assert!(s.flushes >= 3 && s.compactions >= 1, "{s:?}");
}
