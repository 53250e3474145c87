//! `Db::open_read_only`: it sees what a read-write open sees (tables, and the writes only in
//! the WAL), refuses writes, flushes and compactions, and writes nothing to the device — on
//! a read-only mount and on a read-write one.

#[path = "../../zonefs/tests/footprint/mod.rs"]
mod footprint;
mod support;

use std::sync::Arc;

use footprint::footprint;
use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_engine::Error;
use zkv_zns::ZonedDevice;
use zkv_zonefs::fs::ZoneFs;

const KEYS: u64 = 401;

fn key(i: u64) -> Vec<u8> {
    format!("key{:04}", i % KEYS).into_bytes()
}

/// Writes a few hundred puts and deletes (flushed and compacted with `options`), closes the
/// database so that the last ones are only in the WAL; returns what it holds and the keys.
fn fill(dev: &Arc<dyn ZonedDevice>, options: Options, ops: u64) -> (Model, Vec<Vec<u8>>) {
    let fs = format(dev, fs_options());
    let db = Db::open(fs, options).expect("open");
    let mut model = Model::new();
    for i in 0..ops {
        let k = key(i * 7);
        if i % 5 == 4 {
            db.delete(&WriteOptions::default(), &k).expect("delete");
            model.remove(&k);
        } else {
            let v = value(i, 40 + (i % 50) as usize);
            db.put(&WriteOptions::default(), &k, &v).expect("put");
            model.insert(k, v);
        }
    }
    db.close().expect("close");
    let keys = (0..KEYS).map(key).chain([b"absent".to_vec()]).collect();
    (model, keys)
}

fn read_only_mount(dev: &Arc<dyn ZonedDevice>) -> Arc<ZoneFs> {
    Arc::new(ZoneFs::mount_read_only(dev.clone()).expect("read-only mount"))
}

fn assert_refused(r: zkv_engine::Result<()>, what: &str) {
    match r {
        Err(Error::NotWritable(why)) => assert_eq!(why, "opened read-only", "{what}"),
        other => panic!("{what}: {other:?}"),
    }
}

/// Every call that would write is refused; waiting and closing are fine.
fn assert_writes_refused(db: &Db) {
    let w = WriteOptions::synced();
    assert_refused(db.put(&w, b"k", b"v"), "put");
    assert_refused(db.delete(&w, b"k"), "delete");
    let mut batch = WriteBatch::new();
    batch.put(b"k", b"v");
    assert_refused(db.write(&w, batch), "write");
    assert_refused(db.flush(), "flush");
    assert_refused(db.compact_all(), "compact_all");
    db.wait_for_background().expect("nothing to wait for");
}

#[test]
fn read_only_open_sees_what_a_read_write_open_sees() {
    for mode in [ExecMode::Deterministic, ExecMode::Threaded] {
        let (_mem, dev) = device(32, 256);
        let options = tiny_options(mode);
        let (model, keys) = fill(&dev, options.clone(), 1500);

        let before = footprint(dev.as_ref());
        let fs = read_only_mount(&dev);
        let db = Db::open_read_only(Arc::clone(&fs), options.clone()).expect("open read-only");
        assert!(db.is_read_only());
        assert_holds(&db, &model, &keys, "read-only");
        let rep = db.recovery().clone();
        assert!(!rep.wals.is_empty() && rep.wal_bytes > 0, "{rep:?}");
        assert!(rep.batches > 0 && rep.operations == rep.batches, "{rep:?}");
        assert_eq!((rep.tables, rep.deleted.len(), rep.created), (0, 0, false));
        let mem = db.memtables();
        assert_eq!(mem.memtables, 1, "the WAL's writes stay in memory");
        assert!(mem.bytes > 0);
        let stats = db.stats();
        assert!(
            stats.levels.iter().map(|l| l.files).sum::<usize>() >= 2,
            "{stats:?}"
        );
        assert!(stats.levels[2].files > 0, "{stats:?}");
        assert_eq!(
            (stats.flushes, stats.compactions, stats.trivial_moves),
            (0, 0, 0)
        );
        let seq = db.last_sequence();
        // A snapshot and an iterator work as on any database.
        let snap = db.snapshot();
        assert_eq!(scan_all(&db, &ReadOptions::at(&snap)), model);
        drop(snap);
        assert_writes_refused(&db);
        db.close().expect("close");
        drop(fs);
        assert_eq!(
            footprint(dev.as_ref()),
            before,
            "{mode:?}: the device changed"
        );

        // A read-write open sees the same: the same writes, the same last sequence number
        // and WALs (whose writes it flushes to L0).
        let fs = mount(&dev, fs_options());
        let db = Db::open(fs, options).expect("open read-write");
        assert_holds(&db, &model, &keys, "read-write");
        assert_eq!(db.last_sequence(), seq);
        assert_eq!(db.recovery().wals, rep.wals);
        assert_eq!(db.recovery().batches, rep.batches);
        assert!(db.recovery().tables > 0);
        db.close().expect("close");
    }
}

#[test]
fn a_wal_larger_than_the_write_buffer_stays_in_one_memtable() {
    let (_mem, dev) = device(32, 256);
    // Written with a big write buffer: nothing is flushed, everything is in the WAL.
    let big = Options {
        mode: ExecMode::Deterministic,
        ..Options::default()
    };
    let (model, keys) = fill(&dev, big, 400);
    let before = footprint(dev.as_ref());
    let fs = read_only_mount(&dev);
    let small = tiny_options(ExecMode::Deterministic);
    let db = Db::open_read_only(fs, small.clone()).expect("open read-only");
    assert_holds(&db, &model, &keys, "read-only");
    assert_eq!(db.memtables().memtables, 1);
    assert!(db.memtables().bytes > small.write_buffer_size);
    assert!(db.live_files().is_empty());
    drop(db);
    assert_eq!(footprint(dev.as_ref()), before);

    // A read-write open with the small buffer writes several L0 tables instead.
    let db = Db::open(mount(&dev, fs_options()), small).expect("open read-write");
    assert!(db.recovery().tables > 1, "{:?}", db.recovery());
    assert_holds(&db, &model, &keys, "read-write");
}

#[test]
fn read_only_open_on_a_read_write_mount_writes_nothing() {
    let (_mem, dev) = device(32, 256);
    let options = tiny_options(ExecMode::Threaded);
    let (model, keys) = fill(&dev, options.clone(), 500);
    let fs = mount(&dev, fs_options());
    let before = footprint(dev.as_ref());
    let files = file_contents(&fs);
    let db = Db::open_read_only(Arc::clone(&fs), options).expect("open read-only");
    assert_holds(&db, &model, &keys, "read-only");
    assert_writes_refused(&db);
    drop(db);
    assert_eq!(footprint(dev.as_ref()), before);
    assert_eq!(
        file_contents(&fs),
        files,
        "no file was created, changed or deleted"
    );
}

#[test]
fn no_database_is_refused_and_nothing_is_created() {
    let (_mem, dev) = device(16, 256);
    drop(format(&dev, fs_options()));
    let options = Options {
        create_if_missing: true,
        ..tiny_options(ExecMode::Deterministic)
    };
    let refused = |fs: Arc<ZoneFs>| {
        let before = footprint(dev.as_ref());
        let err = Db::open_read_only(Arc::clone(&fs), options.clone()).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains("read-only open"), "{err}");
        assert!(fs.list().is_empty());
        assert_eq!(footprint(dev.as_ref()), before);
    };
    refused(read_only_mount(&dev));
    // (The read-write mount itself syncs the device: the footprint is taken after it.)
    refused(mount(&dev, fs_options()));
}
