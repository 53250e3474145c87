//! Model test: random sequences of puts, deletes, batches, gets, bounded scans, snapshot
//! reads, flushes and reopens against a `BTreeMap`, in both execution modes, with options
//! so small that flushes, compactions and trivial moves all happen (the totals over all
//! cases are checked at the end). The same model runs on the zoned file layer and on a
//! directory (`PosixFs` in a temporary directory).

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, Snapshot, WriteOptions};
use zkv_engine::fs::{FileSystem, PosixFs};
use zkv_engine::options::{CompressionType, ExecMode, Options};
use zkv_zns::ZonedDevice;

#[derive(Clone, Debug)]
enum Op {
    Put {
        key: u8,
        len: u8,
        sync: bool,
    },
    Delete {
        key: u8,
    },
    Batch(Vec<(u8, Option<u8>)>),
    /// Keys past every other key, in order: files that overlap nothing below them.
    Append {
        count: u8,
    },
    Get {
        key: u8,
    },
    Scan {
        lower: Option<u8>,
        upper: Option<u8>,
    },
    TakeSnapshot,
    SnapshotRead {
        which: usize,
        key: u8,
    },
    SnapshotScan {
        which: usize,
    },
    DropSnapshot {
        which: usize,
    },
    Flush,
    Reopen {
        remount: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0u8..48, 0u8..200, prop::bool::weighted(0.1))
            .prop_map(|(key, len, sync)| Op::Put { key, len, sync }),
        8 => (0u8..48).prop_map(|key| Op::Delete { key }),
        6 => prop::collection::vec((0u8..48, prop::option::of(0u8..80)), 1..8).prop_map(Op::Batch),
        3 => (10u8..60).prop_map(|count| Op::Append { count }),
        10 => (0u8..50).prop_map(|key| Op::Get { key }),
        4 => (prop::option::of(0u8..48), prop::option::of(0u8..48))
            .prop_map(|(lower, upper)| Op::Scan { lower, upper }),
        3 => Just(Op::TakeSnapshot),
        4 => (0usize..4, 0u8..48).prop_map(|(which, key)| Op::SnapshotRead { which, key }),
        2 => (0usize..4).prop_map(|which| Op::SnapshotScan { which }),
        2 => (0usize..4).prop_map(|which| Op::DropSnapshot { which }),
        2 => Just(Op::Flush),
        1 => prop::bool::ANY.prop_map(|remount| Op::Reopen { remount }),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

/// Totals over every case of a run.
#[derive(Default)]
struct Totals {
    flushes: AtomicU64,
    compactions: AtomicU64,
    trivial_moves: AtomicU64,
    deep_levels: AtomicU64,
}

/// Which file system a case runs on.
#[derive(Clone, Copy, Debug)]
enum FsKind {
    Zoned,
    Posix,
}

/// What a file system is mounted from: an emulated zoned device, or a directory.
enum Backing {
    Zoned(Arc<dyn ZonedDevice>),
    Posix(tempfile::TempDir),
}

impl Backing {
    /// A new backing and the file system formatted (or created) on it.
    fn new(kind: FsKind) -> (Backing, Arc<dyn FileSystem>) {
        match kind {
            FsKind::Zoned => {
                let (_mem, dev) = device(96, 256);
                let fs = format(&dev, fs_options());
                (Backing::Zoned(dev), fs)
            }
            FsKind::Posix => {
                let dir = tempfile::tempdir().unwrap();
                let fs = Arc::new(PosixFs::open(dir.path()).unwrap());
                (Backing::Posix(dir), fs)
            }
        }
    }

    /// A new handle on the same file system.
    fn mount(&self) -> Arc<dyn FileSystem> {
        match self {
            Backing::Zoned(dev) => mount(dev, fs_options()),
            Backing::Posix(dir) => Arc::new(PosixFs::open(dir.path()).unwrap()),
        }
    }
}

struct Harness {
    backing: Backing,
    fs: Arc<dyn FileSystem>,
    db: Option<Db>,
    options: Options,
    model: Model,
    snapshots: Vec<(Snapshot, Model)>,
    appended: u32,
    version: u64,
    /// Flushes, compactions and trivial moves of the handles closed so far.
    counted: (u64, u64, u64),
}

impl Harness {
    fn new(options: Options, kind: FsKind) -> Harness {
        let (backing, fs) = Backing::new(kind);
        let db = Db::open(Arc::clone(&fs), options.clone()).unwrap();
        Harness {
            backing,
            fs,
            db: Some(db),
            options,
            model: Model::new(),
            snapshots: Vec::new(),
            appended: 0,
            version: 0,
            counted: (0, 0, 0),
        }
    }

    fn db(&self) -> &Db {
        self.db.as_ref().unwrap()
    }

    fn next_value(&mut self, len: u8) -> Vec<u8> {
        self.version += 1;
        value(self.version, usize::from(len))
    }

    fn apply(&mut self, op: &Op) {
        let wo = WriteOptions::default();
        match op {
            Op::Put { key: k, len, sync } => {
                let v = self.next_value(*len);
                let wo = WriteOptions { sync: *sync, ..wo };
                self.db().put(&wo, &key(*k), &v).unwrap();
                self.model.insert(key(*k), v);
            }
            Op::Delete { key: k } => {
                self.db().delete(&wo, &key(*k)).unwrap();
                self.model.remove(&key(*k));
            }
            Op::Batch(ops) => {
                let mut batch = WriteBatch::new();
                let mut after = self.model.clone();
                for (k, v) in ops {
                    match v {
                        Some(len) => {
                            let v = self.next_value(*len);
                            batch.put(&key(*k), &v);
                            after.insert(key(*k), v);
                        }
                        None => {
                            batch.delete(&key(*k));
                            after.remove(&key(*k));
                        }
                    }
                }
                self.db().write(&wo, batch).unwrap();
                self.model = after;
            }
            Op::Append { count } => {
                for _ in 0..*count {
                    self.appended += 1;
                    let k = format!("zz{:06}", self.appended).into_bytes();
                    let v = self.next_value(60);
                    self.db().put(&wo, &k, &v).unwrap();
                    self.model.insert(k, v);
                }
            }
            Op::Get { key: k } => {
                let got = self.db().get(&ReadOptions::default(), &key(*k)).unwrap();
                assert_eq!(got.as_ref(), self.model.get(&key(*k)), "get {k}");
            }
            Op::Scan { lower, upper } => self.scan(*lower, *upper),
            Op::TakeSnapshot => {
                if self.snapshots.len() < 4 {
                    let s = self.db().snapshot();
                    self.snapshots.push((s, self.model.clone()));
                }
            }
            Op::SnapshotRead { which, key: k } => {
                if let Some((s, m)) = self.snapshots.get(*which) {
                    let got = self.db().get(&ReadOptions::at(s), &key(*k)).unwrap();
                    assert_eq!(got.as_ref(), m.get(&key(*k)), "snapshot read {k}");
                }
            }
            Op::SnapshotScan { which } => {
                if let Some((s, m)) = self.snapshots.get(*which) {
                    assert_eq!(
                        &scan_all(self.db(), &ReadOptions::at(s)),
                        m,
                        "snapshot scan"
                    );
                }
            }
            Op::DropSnapshot { which } => {
                if *which < self.snapshots.len() {
                    self.snapshots.remove(*which);
                }
            }
            Op::Flush => self.db().flush().unwrap(),
            Op::Reopen { remount } => self.reopen(*remount),
        }
    }

    fn count(&mut self, db: &Db) {
        let s = db.stats();
        self.counted.0 += s.flushes;
        self.counted.1 += s.compactions;
        self.counted.2 += s.trivial_moves;
    }

    fn scan(&self, lower: Option<u8>, upper: Option<u8>) {
        let ro = ReadOptions {
            lower_bound: lower.map(key),
            upper_bound: upper.map(key),
            ..ReadOptions::default()
        };
        let got = scan_all(self.db(), &ro);
        let want: Model = self
            .model
            .iter()
            .filter(|(k, _)| ro.lower_bound.as_ref().is_none_or(|l| *k >= l))
            .filter(|(k, _)| ro.upper_bound.as_ref().is_none_or(|u| *k < u))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "scan {lower:?}..{upper:?}");
        self.scan_back(&ro, &want);
    }

    /// The same range backward, then one turn each way at its end.
    fn scan_back(&self, ro: &ReadOptions<'_>, want: &Model) {
        let mut it = self.db().iter(ro).unwrap();
        it.seek_to_last().unwrap();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.prev().unwrap();
        }
        let back: Vec<_> = want
            .iter()
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, back, "backward scan");
        if back.len() >= 2 {
            it.seek_to_last().unwrap();
            it.prev().unwrap();
            assert_eq!(it.key(), &back[1].0[..]);
            it.next().unwrap();
            assert_eq!(it.key(), &back[0].0[..]);
        }
        if let Some((last, _)) = back.first() {
            it.seek_for_prev(last).unwrap();
            assert_eq!(it.key(), &last[..]);
        }
    }

    fn reopen(&mut self, remount: bool) {
        self.snapshots.clear();
        let db = self.db.take().unwrap();
        self.count(&db);
        db.close().unwrap();
        if remount {
            self.fs = self.backing.mount();
        }
        self.db = Some(Db::open(Arc::clone(&self.fs), self.options.clone()).unwrap());
    }

    fn finish(mut self, totals: &Totals) {
        let keys: Vec<Vec<u8>> = (0..48).map(key).collect();
        assert_holds(self.db(), &self.model, &keys, "end");
        self.db().wait_for_background().unwrap();
        let s = self.db().stats();
        totals.flushes.fetch_add(s.flushes, Ordering::Relaxed);
        totals
            .compactions
            .fetch_add(s.compactions, Ordering::Relaxed);
        totals
            .trivial_moves
            .fetch_add(s.trivial_moves, Ordering::Relaxed);
        let deep = s
            .levels
            .iter()
            .filter(|l| l.level >= 2 && l.files > 0)
            .count();
        totals.deep_levels.fetch_add(deep as u64, Ordering::Relaxed);
        self.reopen(true);
        assert_holds(self.db(), &self.model, &keys, "after the last reopen");
    }
}

fn run_model(mode: ExecMode, cases: u32) {
    run_model_with(tiny_options(mode), cases, |_| {});
}

/// Runs the model test with `options` on the zoned file layer; `check` looks at each
/// case's database at its end.
fn run_model_with(options: Options, cases: u32, check: impl Fn(&Db)) {
    run_model_on(FsKind::Zoned, options, cases, check);
}

fn run_model_on(kind: FsKind, options: Options, cases: u32, check: impl Fn(&Db)) {
    let mode = options.mode;
    let totals = Totals::default();
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    runner
        .run(&prop::collection::vec(op(), 100..500), |ops| {
            let mut h = Harness::new(options.clone(), kind);
            for op in &ops {
                h.apply(op);
            }
            check(h.db());
            h.finish(&totals);
            Ok(())
        })
        .unwrap();
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    eprintln!(
        "{mode:?} on {kind:?}: {cases} cases, {} flushes, {} compactions, {} trivial moves",
        get(&totals.flushes),
        get(&totals.compactions),
        get(&totals.trivial_moves)
    );
    assert!(get(&totals.flushes) > 0, "no flush happened");
    assert!(get(&totals.compactions) > 0, "no compaction happened");
    assert!(get(&totals.trivial_moves) > 0, "no trivial move happened");
    assert!(
        get(&totals.deep_levels) > 0,
        "no level below L1 was ever used"
    );
}

/// The same engine on a directory: plain files, no zones, no cleaner.
#[test]
fn model_on_a_directory() {
    for (mode, cases) in [(ExecMode::Deterministic, 8), (ExecMode::Threaded, 4)] {
        run_model_on(FsKind::Posix, tiny_options(mode), cases, |db| {
            assert!(db.zone_fs().is_none());
            assert!(db.file_system().io_stats().total_written() > 0);
        });
    }
}

#[test]
fn model_deterministic() {
    run_model(ExecMode::Deterministic, 64);
}

#[test]
fn model_threaded() {
    run_model(ExecMode::Threaded, 32);
}

/// Tables with compressed data blocks give the model's answers, with every codec (the
/// model's values repeat bytes, so blocks do compress).
#[test]
fn model_with_compressed_tables() {
    for name in &CompressionType::NAMES[1..] {
        let options = Options {
            compression: CompressionType::from_name(name).unwrap(),
            ..tiny_options(ExecMode::Deterministic)
        };
        run_model_with(options, 12, |_| {});
    }
}

/// A block cache of a few blocks and at most two open tables: reads go through cached
/// blocks, evictions and reopened tables, and give the model's answers.
#[test]
fn model_with_tiny_caches() {
    for mode in [ExecMode::Deterministic, ExecMode::Threaded] {
        let options = Options {
            block_cache_size: 3 * 1024,
            max_open_files: 2,
            ..tiny_options(mode)
        };
        run_model_with(options, 16, |db| {
            let s = db.stats();
            assert!(s.open_tables <= 2, "{} tables open", s.open_tables);
            let cache = s.block_cache.expect("a block cache");
            assert!(cache.bytes <= cache.capacity, "{cache:?}");
        });
    }
}
