//! Group commit: concurrent synced writers share WAL records and syncs, and every write
//! acknowledged to any of them is readable, also after a power cut at a random device
//! command.

mod support;

use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_zns::{FaultControl, TearMode};

const THREADS: u64 = 8;

fn options() -> Options {
    Options {
        write_buffer_size: 64 * 1024,
        target_file_size_base: 64 * 1024,
        ..tiny_options(ExecMode::Threaded)
    }
}

fn key(thread: u64, i: u64) -> Vec<u8> {
    format!("t{thread}-{i:05}").into_bytes()
}

/// Thread `t`'s writes: synced puts of its own keys, every fifth a batch of two, until
/// `n` or the first error; returns the keys acknowledged.
fn write_keys(db: &Db, t: u64, n: u64) -> Vec<u64> {
    let wo = WriteOptions::synced();
    let mut acked = Vec::new();
    let mut i = 0;
    while i < n {
        let result = if i % 5 == 4 && i + 1 < n {
            let mut batch = WriteBatch::new();
            batch.put(&key(t, i), &value(t * 100_000 + i, 40));
            batch.put(&key(t, i + 1), &value(t * 100_000 + i + 1, 40));
            db.write(&wo, batch).map(|()| vec![i, i + 1])
        } else {
            db.put(&wo, &key(t, i), &value(t * 100_000 + i, 40))
                .map(|()| vec![i])
        };
        match result {
            Ok(keys) => {
                i += keys.len() as u64;
                acked.extend(keys);
            }
            Err(_) => break,
        }
    }
    acked
}

/// Whether key `i` is written as the second put of a batch (see `write_keys`).
fn is_second_of_batch(i: u64) -> bool {
    let mut j = 0;
    while j < i {
        j += if j % 5 == 4 { 2 } else { 1 };
    }
    j > i
}

/// Runs the writer threads; their acknowledged keys.
fn run_writers(db: &Db, n: u64) -> Vec<(u64, Vec<u64>)> {
    let acked = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let acked = &acked;
            s.spawn(move || {
                let keys = write_keys(db, t, n);
                acked.lock().unwrap().push((t, keys));
            });
        }
    });
    acked.into_inner().unwrap()
}

fn assert_acked_readable(db: &Db, acked: &[(u64, Vec<u64>)], context: &str) {
    let ro = ReadOptions::default();
    for (t, keys) in acked {
        for &i in keys {
            let got = db.get(&ro, &key(*t, i)).unwrap();
            assert_eq!(
                got,
                Some(value(t * 100_000 + i, 40)),
                "{context}: thread {t} key {i} acknowledged, then lost"
            );
        }
    }
}

#[test]
fn concurrent_synced_writers_share_groups_and_lose_nothing() {
    let (_mem, dev) = device(96, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), options()).unwrap();
    let acked = run_writers(&db, 400);
    assert!(acked.iter().all(|(_, k)| k.len() == 400), "a write failed");
    assert_acked_readable(&db, &acked, "open");
    let stats = db.stats();
    // Every write call counts once, whether it led a group, joined one or went alone.
    let calls: u64 = (0..400u64).filter(|i| !is_second_of_batch(*i)).count() as u64;
    assert_eq!(stats.writes, THREADS * calls);
    assert!(
        stats.grouped_writes > 0,
        "{THREADS} threads of synced writes never shared a group"
    );
    eprintln!(
        "{} of {} writes joined another write's group",
        stats.grouped_writes, stats.writes
    );
    db.close().unwrap();
    let db = Db::open(mount(&dev, fs_options()), options()).unwrap();
    assert_acked_readable(&db, &acked, "reopened");
}

#[test]
fn power_cuts_keep_every_acknowledged_grouped_write() {
    let mut cut_during_writes = 0;
    for seed in 0..12u64 {
        let (mem, dev) = device(96, 256);
        let fs = format(&dev, fs_options());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let start = mem.mutating_commands();
        mem.schedule_power_cut(rng.random_range(50..3000), TearMode::Drop);
        let acked = match Db::open(Arc::clone(&fs), options()) {
            Ok(db) => run_writers(&db, 150),
            Err(e) => panic!("open: {e}"),
        };
        assert!(
            mem.mutating_commands() - start > 0,
            "seed {seed}: nothing was written"
        );
        cut_during_writes += u32::from(acked.iter().any(|(_, k)| k.len() < 150));
        if mem.is_powered() {
            mem.power_cut(TearMode::Drop);
        }
        drop(fs);
        mem.restart();
        let db = Db::open(mount(&dev, fs_options()), options())
            .unwrap_or_else(|e| panic!("seed {seed}: reopen: {e}"));
        assert_acked_readable(&db, &acked, &format!("seed {seed}"));
    }
    assert!(
        cut_during_writes >= 6,
        "{cut_during_writes} of 12 cuts came during the writes"
    );
}
