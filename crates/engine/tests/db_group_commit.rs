//! Group commit: concurrent synced writers share WAL records and syncs, and every write
//! acknowledged to any of them is readable, also after a power cut at a random device
//! command; readers never see part of a group. All of it with the writes of a group
//! inserted into the memtable each by its own thread (`allow_concurrent_memtable_write`,
//! the default) and by the group's leader.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_zns::{FaultControl, TearMode};

const THREADS: u64 = 8;

/// Both ways of inserting a group into the memtable.
const CONCURRENT: [bool; 2] = [true, false];

fn options(concurrent: bool) -> Options {
    Options {
        write_buffer_size: 64 * 1024,
        target_file_size_base: 64 * 1024,
        allow_concurrent_memtable_write: concurrent,
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
    for concurrent in CONCURRENT {
        synced_writers_share_groups_and_lose_nothing(concurrent);
    }
}

fn synced_writers_share_groups_and_lose_nothing(concurrent: bool) {
    let (_mem, dev) = device(96, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), options(concurrent)).unwrap();
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
        "concurrent inserts {concurrent}: {} of {} writes joined another write's group",
        stats.grouped_writes, stats.writes
    );
    db.close().unwrap();
    let db = Db::open(mount(&dev, fs_options()), options(concurrent)).unwrap();
    assert_acked_readable(&db, &acked, "reopened");
}

#[test]
fn power_cuts_keep_every_acknowledged_grouped_write() {
    for concurrent in CONCURRENT {
        power_cuts_keep_every_acknowledged_write(concurrent);
    }
}

fn power_cuts_keep_every_acknowledged_write(concurrent: bool) {
    let mut cut_during_writes = 0;
    for seed in 0..12u64 {
        let (mem, dev) = device(96, 256);
        let fs = format(&dev, fs_options());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let start = mem.mutating_commands();
        mem.schedule_power_cut(rng.random_range(50..1500), TearMode::Drop);
        let acked = match Db::open(Arc::clone(&fs), options(concurrent)) {
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
        let db = Db::open(mount(&dev, fs_options()), options(concurrent))
            .unwrap_or_else(|e| panic!("seed {seed}: reopen: {e}"));
        assert_acked_readable(&db, &acked, &format!("{concurrent} seed {seed}"));
    }
    assert!(
        cut_during_writes >= 6,
        "{concurrent}: {cut_during_writes} of 12 cuts came during the writes"
    );
}

/// Large batches and few writers, for `readers_never_see_part_of_a_group`: a member's insert
/// lasts long enough, and the reader gets a core often enough, for it to look while the
/// insert runs (with the sequence number published before the inserts end, the test
/// fails almost every run).
const BATCH_OPS: u64 = 2000;
const BATCHES: u64 = 8;
const WRITERS: u64 = 6;

fn batch_key(thread: u64, batch: u64, op: u64) -> Vec<u8> {
    format!("t{thread}-{batch:03}-{op:04}").into_bytes()
}

/// What a reader found at one snapshot: the batches of each thread it saw so far (a
/// thread's batches are written one after the other, so they become visible in order).
struct Seen {
    batches: Vec<u64>,
}

impl Seen {
    /// Reads at a new snapshot: a batch is all there or not at all, and the operations
    /// visible are exactly as many as the snapshot's sequence number counts since `base`
    /// (every operation puts a key of its own). Both fail if a group's last sequence
    /// number were published before all of its writes were in the memtable.
    fn check(&mut self, db: &Db, base: u64) {
        let snap = db.snapshot();
        let ro = ReadOptions::at(&snap);
        let visible = |k: Vec<u8>| db.get(&ro, &k).unwrap().is_some();
        for (t, next) in (0..).zip(self.batches.iter_mut()) {
            while *next < BATCHES && visible(batch_key(t, *next, 0)) {
                assert!(
                    visible(batch_key(t, *next, BATCH_OPS - 1)),
                    "thread {t} batch {next}: the first operation is visible, the last not"
                );
                *next += 1;
            }
            if *next < BATCHES {
                assert!(!visible(batch_key(t, *next, BATCH_OPS - 1)));
            }
        }
        let ops: u64 = self.batches.iter().sum::<u64>() * BATCH_OPS;
        assert_eq!(
            ops,
            snap.sequence() - base,
            "operations visible at sequence number {}",
            snap.sequence()
        );
    }
}

/// Readers never see part of a group: at every snapshot, what they see is exactly the
/// writes numbered up to it, each batch whole.
#[test]
fn readers_never_see_part_of_a_group() {
    for concurrent in CONCURRENT {
        let (_mem, dev) = device(96, 256);
        let fs = format(&dev, fs_options());
        // One memtable holds every write.
        let options = Options {
            write_buffer_size: 16 << 20,
            ..options(concurrent)
        };
        let db = Db::open(fs, options).unwrap();
        let base = db.last_sequence();
        let done = AtomicBool::new(false);
        let mut seen = Seen {
            batches: vec![0; WRITERS as usize],
        };
        let mut checks = 0u64;
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|t| {
                    let db = &db;
                    s.spawn(move || {
                        for b in 0..BATCHES {
                            let mut batch = WriteBatch::new();
                            for o in 0..BATCH_OPS {
                                batch.put(&batch_key(t, b, o), &value(t + b + o, 8));
                            }
                            db.write(&WriteOptions::synced(), batch).unwrap();
                        }
                    })
                })
                .collect();
            s.spawn(|| {
                for w in writers {
                    w.join().unwrap();
                }
                done.store(true, Ordering::Release);
            });
            while !done.load(Ordering::Acquire) {
                seen.check(&db, base);
                checks += 1;
            }
        });
        seen.check(&db, base);
        assert!(seen.batches.iter().all(|&b| b == BATCHES));
        let grouped = db.stats().grouped_writes;
        assert!(grouped > 0, "{concurrent}: no write joined a group");
        eprintln!(
            "concurrent inserts {concurrent}: {checks} snapshots checked, {grouped} writes grouped"
        );
    }
}
