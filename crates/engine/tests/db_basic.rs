//! The database's API case by case: open options, iterators and snapshots pinned across
//! compactions, WriteOptions and what survives a reopen, statistics, placement hints,
//! background errors.

mod support;

use std::sync::Arc;

use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::memtable::MAX_KEY_LEN;
use zkv_engine::options::{ExecMode, Options};
use zkv_engine::Error;
use zkv_zns::{FaultControl, FaultOp};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::Lifetime;

fn det() -> Options {
    tiny_options(ExecMode::Deterministic)
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn fill(db: &Db, keys: u64, seed: u64) -> Model {
    let mut model = Model::new();
    for k in 0..keys {
        let v = value(seed * 1_000_000 + k, 60);
        db.put(&WriteOptions::default(), &key(k), &v).unwrap();
        model.insert(key(k), v);
    }
    model
}

#[test]
fn open_checks_its_options_and_the_file_system() {
    let (_mem, dev) = device(16, 256);
    let fs = format(&dev, fs_options());
    let missing = Options {
        create_if_missing: false,
        ..det()
    };
    let err = Db::open(Arc::clone(&fs), missing.clone()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let unknown = Options {
        compaction_pri: "largest-first".into(),
        ..det()
    };
    let err = Db::open(Arc::clone(&fs), unknown).unwrap_err();
    assert!(
        matches!(err, Error::InvalidOptions(ref m) if m.contains("min-overlap")),
        "{err}"
    );
    let bad = Options {
        write_buffer_size: 10,
        ..det()
    };
    assert!(matches!(
        Db::open(Arc::clone(&fs), bad),
        Err(Error::InvalidOptions(_))
    ));
    let db = Db::open(Arc::clone(&fs), det()).unwrap();
    assert!(db.recovery().created);
    db.close().unwrap();
    let exists = Options {
        error_if_exists: true,
        ..det()
    };
    let err = Db::open(Arc::clone(&fs), exists).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let db = Db::open(fs, missing).unwrap();
    assert!(!db.recovery().created);
}

#[test]
fn iterators_and_snapshots_keep_their_view_across_compactions() {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), det()).unwrap();
    let old = fill(&db, 600, 1);
    let it = db.iter(&ReadOptions::default()).unwrap();
    let snap = db.snapshot();
    let before = db.stats().compactions;
    let files_before = ssts(&fs);
    let mut new = fill(&db, 600, 2);
    for k in (0..600).step_by(3) {
        db.delete(&WriteOptions::default(), &key(k)).unwrap();
        new.remove(&key(k));
    }
    db.flush().unwrap();
    assert!(db.stats().compactions > before, "no compaction ran");
    let gone = files_before
        .iter()
        .filter(|f| !ssts(&fs).contains(f))
        .count();
    assert!(gone > 0, "no file of the old view was deleted");
    let seen: Model = it.map(|r| r.unwrap()).collect();
    assert_eq!(seen, old, "the iterator's view changed");
    assert_eq!(scan_all(&db, &ReadOptions::at(&snap)), old);
    assert_eq!(
        db.get(&ReadOptions::at(&snap), &key(3)).unwrap(),
        old.get(&key(3)).cloned()
    );
    assert_eq!(scan_all(&db, &ReadOptions::default()), new);
}

#[test]
fn bounds_limit_iterators() {
    let (_mem, dev) = device(32, 256);
    let db = Db::open(format(&dev, fs_options()), det()).unwrap();
    let model = fill(&db, 300, 1);
    let ro = ReadOptions {
        lower_bound: Some(key(100)),
        upper_bound: Some(key(110)),
        ..ReadOptions::default()
    };
    let got: Vec<Vec<u8>> = db.iter(&ro).unwrap().map(|r| r.unwrap().0).collect();
    let want: Vec<Vec<u8>> = model
        .range(key(100)..key(110))
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn what_survives_a_reopen_follows_write_options() {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let big = Options {
        write_buffer_size: 1 << 20,
        ..det()
    };
    let db = Db::open(Arc::clone(&fs), big.clone()).unwrap();
    let no_wal = WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    };
    db.put(&WriteOptions::default(), b"logged", b"1").unwrap();
    db.put(&no_wal, b"unlogged", b"2").unwrap();
    db.close().unwrap();
    let db = Db::open(Arc::clone(&fs), big.clone()).unwrap();
    let ro = ReadOptions::default();
    assert_eq!(db.get(&ro, b"logged").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        db.get(&ro, b"unlogged").unwrap(),
        None,
        "an unlogged write is lost"
    );
    let both = WriteOptions {
        sync: true,
        disable_wal: true,
    };
    let err = db.put(&both, b"x", b"y").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    db.put(&no_wal, b"unlogged", b"3").unwrap();
    db.flush().unwrap();
    drop(db);
    let db = Db::open(fs, big).unwrap();
    assert_eq!(db.get(&ro, b"unlogged").unwrap(), Some(b"3".to_vec()));
    assert_eq!(db.get(&ro, b"logged").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn batches_apply_whole() {
    let (_mem, dev) = device(32, 256);
    let db = Db::open(format(&dev, fs_options()), det()).unwrap();
    db.put(&WriteOptions::default(), b"a", b"old").unwrap();
    let seq = db.last_sequence();
    let mut b = WriteBatch::new();
    b.put(b"b", b"1");
    b.delete(b"a");
    b.put(b"c", b"2");
    db.write(&WriteOptions::synced(), b).unwrap();
    assert_eq!(db.last_sequence(), seq + 3);
    db.write(&WriteOptions::default(), WriteBatch::new())
        .unwrap();
    assert_eq!(
        db.last_sequence(),
        seq + 3,
        "an empty batch uses no sequence number"
    );
    let all = scan_all(&db, &ReadOptions::default());
    assert_eq!(
        all.keys().cloned().collect::<Vec<_>>(),
        vec![b"b".to_vec(), b"c".to_vec()]
    );
}

#[test]
fn a_key_longer_than_the_limit_is_refused_before_anything_is_written() {
    let (_mem, dev) = device(32, 256);
    let db = Db::open(format(&dev, fs_options()), det()).unwrap();
    let long = vec![b'k'; MAX_KEY_LEN + 1];
    let seq = db.last_sequence();
    let err = db.put(&WriteOptions::default(), &long, b"v").unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument(ref m) if m.contains("limit")),
        "{err}"
    );
    let mut b = WriteBatch::new();
    b.put(b"a", b"1");
    b.delete(&long);
    let err = db.write(&WriteOptions::default(), b).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(
        db.last_sequence(),
        seq,
        "nothing of either write was applied"
    );
    assert_eq!(db.get(&ReadOptions::default(), b"a").unwrap(), None);
    // The database stays writable.
    db.put(&WriteOptions::default(), b"a", b"2").unwrap();
    assert_eq!(
        db.get(&ReadOptions::default(), b"a").unwrap(),
        Some(b"2".to_vec())
    );
}

#[test]
fn statistics_add_up() {
    let (_mem, dev) = device(48, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), det()).unwrap();
    fill(&db, 2000, 1);
    fill(&db, 2000, 2);
    let s = db.stats();
    assert_eq!(s.puts, 4000);
    assert_eq!(s.user_bytes, 4000 * (8 + 60));
    assert!(s.wal_bytes > s.user_bytes);
    assert!(s.flushes > 10 && s.compactions > 5, "{s:?}");
    let wa = (s.flush_bytes + s.compaction_write_bytes) as f64 / s.user_bytes as f64;
    assert!((s.lsm_write_amp() - wa).abs() < 1e-12 && wa > 1.0);
    assert_eq!(s.total_files(), db.live_files().len());
    assert_eq!(s.records.len() as u64, s.compactions);
    let read: u64 = s.records.iter().map(|r| r.input_bytes()).sum();
    assert_eq!(read, s.compaction_read_bytes);
    for r in &s.records {
        assert!(r.s_same > 0.0 && r.s_same <= 1.0, "{r:?}");
        assert!((0.0..=1.0).contains(&r.s_inval), "{r:?}");
        for f in &r.inputs {
            let held: u64 = f.zones.iter().map(|(_, b)| b).sum();
            assert!(held >= f.size, "{f:?}");
        }
    }
    let sum = s.level_stats.sum();
    assert_eq!(sum.bytes_written, s.flush_bytes + s.compaction_write_bytes);
    let table = db.compaction_stats_table();
    assert!(table.contains("L0") && table.contains("Sum"), "{table}");
}

#[test]
fn files_carry_rocksdb_placement_hints() {
    let (_mem, dev) = device(48, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), det()).unwrap();
    for i in 0..3000u64 {
        let k = key(i * 7919 % 3000);
        db.put(&WriteOptions::default(), &k, &value(i, 60)).unwrap();
    }
    let mut levels = std::collections::BTreeSet::new();
    for f in fs.list() {
        match f.kind {
            FileKind::Sst => {
                let level = f.level.expect("an SST has a level");
                levels.insert(level);
                let want = Lifetime::for_file(FileKind::Sst, Some(level), 1);
                assert_eq!(f.lifetime, want.code(), "{f:?}");
            }
            FileKind::Wal => assert_eq!(f.lifetime, Lifetime::Short.code()),
            _ => {}
        }
    }
    assert!(levels.len() >= 2, "{levels:?}");
}

#[test]
fn a_failed_background_job_stops_writes() {
    let (mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), tiny_options(ExecMode::Threaded)).unwrap();
    fill(&db, 100, 1);
    db.wait_for_background().unwrap();
    mem.inject_error(FaultOp::Write, None, 1);
    let mut failed = None;
    for k in 0..5000 {
        if let Err(e) = db.put(&WriteOptions::default(), &key(k), &value(k, 60)) {
            failed = Some(e);
            break;
        }
    }
    let first = failed.expect("the injected error surfaced");
    let err = db.put(&WriteOptions::default(), b"x", b"y").unwrap_err();
    assert!(matches!(err, Error::NotWritable(_)), "{first} then {err}");
    assert!(db.wait_for_background().is_err());
    // Reads keep working.
    assert!(db.get(&ReadOptions::default(), &key(1)).unwrap().is_some());
}
