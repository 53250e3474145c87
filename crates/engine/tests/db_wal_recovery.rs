//! WAL recovery modes: one flipped byte in a WAL record of synced writes, the database
//! reopened with each `wal_recovery_mode`. zkv's file layer never shows a torn record, so
//! the default (absolute consistency) refuses to open instead of dropping a synced write;
//! the other modes open and report every region they did not replay. The manifest is read
//! with absolute consistency whatever the mode.

mod support;

use std::sync::Arc;

use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, DroppedRegion, WriteOptions};
use zkv_engine::log::read_log;
use zkv_engine::options::{ExecMode, Options, WalRecoveryMode};
use zkv_engine::version::CURRENT;
use zkv_engine::Error;
use zkv_zns::{FaultControl, TearMode, ZonedDevice};
use zkv_zonefs::fs::ZoneFs;

use WalRecoveryMode::*;

/// Keys put one by one before the last write.
const KEYS: u64 = 10;

fn options(mode: WalRecoveryMode) -> Options {
    Options {
        // Nothing is flushed: every write stays in the WAL.
        write_buffer_size: 1 << 20,
        wal_recovery_mode: mode,
        ..tiny_options(ExecMode::Deterministic)
    }
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

/// How the writing run ends.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Close,
    /// Power cut right after the last synced write, without closing.
    PowerCut,
}

/// A database whose writes are all synced and all in one WAL.
struct Written {
    dev: Arc<dyn ZonedDevice>,
    wal: String,
    /// Where each WAL record (one per write) starts.
    starts: Vec<u64>,
    /// The WAL's size.
    size: u64,
    /// The state before the last write, and after it.
    before_last: Model,
    all: Model,
}

/// `KEYS` synced puts, then one synced batch that deletes key 5 and overwrites key 3: the
/// last WAL record holds a deletion and an overwrite.
fn written(stop: Stop) -> Written {
    let (mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), options(AbsoluteConsistency)).unwrap();
    let mut model = Model::new();
    for k in 0..KEYS {
        db.put(&WriteOptions::synced(), &key(k), &value(k, 40))
            .unwrap();
        model.insert(key(k), value(k, 40));
    }
    let before_last = model.clone();
    let mut last = WriteBatch::new();
    last.delete(&key(5));
    last.put(&key(3), b"overwritten");
    db.write(&WriteOptions::synced(), last).unwrap();
    model.remove(&key(5));
    model.insert(key(3), b"overwritten".to_vec());
    match stop {
        Stop::Close => db.close().unwrap(),
        Stop::PowerCut => {
            mem.power_cut(TearMode::Tear { seed: 7 });
            drop(db);
        }
    }
    drop(fs);
    mem.restart();
    let fs = mount(&dev, fs_options());
    let wal = the_wal(&fs);
    let data = fs.open(&wal).unwrap().read_all().unwrap();
    let contents = read_log(&data);
    assert!(contents.bad.is_empty(), "{:?}", contents.bad);
    let starts: Vec<u64> = contents.records.iter().map(|r| r.offset).collect();
    assert_eq!(starts.len() as u64, KEYS + 1);
    Written {
        dev,
        wal,
        starts,
        size: data.len() as u64,
        before_last,
        all: model,
    }
}

impl Written {
    /// Flips one bit of the WAL at `offset` (file system unmounted), then mounts again.
    fn damage(&self, offset: u64) -> Arc<ZoneFs> {
        damage(&self.dev, &self.wal, offset)
    }

    /// The start of record `i` and the offset of its middle (inside its payload).
    fn record(&self, i: usize) -> (u64, u64) {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.size);
        let start = self.starts[i];
        (start, start + 13 + (end - start - 13) / 2)
    }

    fn last(&self) -> (u64, u64) {
        self.record(self.starts.len() - 1)
    }
}

fn damage(dev: &Arc<dyn ZonedDevice>, name: &str, offset: u64) -> Arc<ZoneFs> {
    let fs = mount(dev, fs_options());
    flip_file_bit(&fs, dev.as_ref(), name, offset, 2);
    drop(fs);
    mount(dev, fs_options())
}

fn all_keys() -> Vec<Vec<u8>> {
    (0..KEYS).map(key).collect()
}

/// Panics unless `err` is a corruption error naming `file` and `offset`.
fn assert_names(err: &Error, file: &str, offset: u64) {
    let msg = err.to_string();
    assert!(err.is_corruption(), "not corruption: {msg}");
    assert!(msg.contains(file), "{file} not named: {msg}");
    assert!(
        msg.contains(&format!("offset {offset}")),
        "no offset {offset}: {msg}"
    );
}

#[test]
fn the_default_refuses_a_damaged_last_record_instead_of_dropping_a_synced_write() {
    assert_eq!(Options::default().wal_recovery_mode, AbsoluteConsistency);
    for stop in [Stop::Close, Stop::PowerCut] {
        let w = written(stop);
        let (start, middle) = w.last();
        let fs = w.damage(middle);
        let err = Db::open(
            Arc::clone(&fs),
            options(Options::default().wal_recovery_mode),
        )
        .unwrap_err();
        assert_names(&err, &w.wal, start);
        assert!(err.to_string().contains("absolute-consistency"), "{err}");
        let err = Db::open_read_only(Arc::clone(&fs), options(AbsoluteConsistency)).unwrap_err();
        assert_names(&err, &w.wal, start);
        // The refused open changed nothing: a tolerant mode still finds the WAL.
        let db = Db::open(fs, options(PointInTime)).unwrap();
        assert_eq!(db.recovery().dropped.len(), 1, "{stop:?}");
    }
}

#[test]
fn point_in_time_and_tolerate_tail_open_and_report_the_dropped_write() {
    for mode in [PointInTime, TolerateCorruptedTailRecords] {
        for stop in [Stop::Close, Stop::PowerCut] {
            let w = written(stop);
            let (start, middle) = w.last();
            let db = Db::open(w.damage(middle), options(mode)).unwrap();
            let dropped = &db.recovery().dropped;
            assert_eq!(dropped.len(), 1, "{mode} {stop:?}: {dropped:?}");
            let DroppedRegion {
                wal,
                offset,
                bytes,
                records,
                reason,
            } = &dropped[0];
            assert_eq!(
                (wal.as_str(), *offset, *bytes, *records),
                (w.wal.as_str(), start, w.size - start, 0),
                "{mode} {stop:?}"
            );
            assert!(reason.contains("checksum mismatch"), "{reason}");
            assert!(reason.contains(mode.name()), "{reason}");
            assert_eq!(db.recovery().batches, KEYS, "{mode} {stop:?}");
            // What these modes cost on zkv: the deleted key is back, the value stale.
            assert_holds(
                &db,
                &w.before_last,
                &all_keys(),
                &format!("{mode} {stop:?}"),
            );
            assert_ne!(w.before_last, w.all);
            db.close().unwrap();
        }
    }
}

#[test]
fn skip_any_replays_the_records_after_a_damaged_middle_record() {
    let w = written(Stop::Close);
    let (start, middle) = w.record(4);
    let db = Db::open(w.damage(middle), options(SkipAnyCorruptedRecords)).unwrap();
    let rec = db.recovery();
    assert_eq!(rec.batches, KEYS, "every record but the damaged one");
    assert_eq!(rec.dropped.len(), 1, "{:?}", rec.dropped);
    let d = &rec.dropped[0];
    assert_eq!(
        (d.wal.as_str(), d.offset, d.bytes, d.records),
        (w.wal.as_str(), start, w.starts[5] - start, 0)
    );
    assert!(
        d.reason.contains("skip-any-corrupted-records"),
        "{}",
        d.reason
    );
    let mut want = w.all.clone();
    want.remove(&key(4));
    assert_holds(&db, &want, &all_keys(), "skip-any");
}

#[test]
fn point_in_time_stops_at_a_damaged_middle_record() {
    let w = written(Stop::Close);
    let (start, middle) = w.record(4);
    let db = Db::open(w.damage(middle), options(PointInTime)).unwrap();
    let rec = db.recovery();
    assert_eq!(rec.batches, 4);
    assert_eq!(rec.dropped.len(), 1, "{:?}", rec.dropped);
    let d = &rec.dropped[0];
    // The rest of the WAL: the damaged record and the 6 intact ones after it.
    assert_eq!((d.offset, d.bytes, d.records), (start, w.size - start, 6));
    let want: Model = (0..4).map(|k| (key(k), value(k, 40))).collect();
    assert_holds(&db, &want, &all_keys(), "point-in-time");
}

#[test]
fn absolute_and_tolerate_tail_refuse_a_damaged_middle_record() {
    for mode in [AbsoluteConsistency, TolerateCorruptedTailRecords] {
        let w = written(Stop::Close);
        let (start, middle) = w.record(4);
        let err = Db::open(w.damage(middle), options(mode)).unwrap_err();
        assert_names(&err, &w.wal, start);
        assert!(err.to_string().contains(mode.name()), "{err}");
    }
}

/// A database with several manifest records (the last one the edit of the last flush,
/// whose WAL is deleted), closed; returns the device and the manifest's name.
fn flushed() -> (Arc<dyn ZonedDevice>, String, Model) {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), options(AbsoluteConsistency)).unwrap();
    let mut model = Model::new();
    for k in 0..3 * KEYS {
        db.put(&WriteOptions::synced(), &key(k), &value(k, 40))
            .unwrap();
        model.insert(key(k), value(k, 40));
        if k % KEYS == KEYS - 1 {
            db.flush().unwrap();
        }
    }
    db.close().unwrap();
    let current = fs.open(CURRENT).unwrap().read_all().unwrap();
    let manifest = String::from_utf8(current).unwrap().trim().to_string();
    (dev, manifest, model)
}

#[test]
fn a_damaged_last_manifest_record_is_corruption_in_every_mode() {
    for mode in WalRecoveryMode::ALL {
        let (dev, manifest, model) = flushed();
        let fs = mount(&dev, fs_options());
        let data = fs.open(&manifest).unwrap().read_all().unwrap();
        drop(fs);
        let records = read_log(&data).records;
        assert!(records.len() >= 2, "{} records", records.len());
        let last = records.last().unwrap().offset;
        let fs = damage(&dev, &manifest, data.len() as u64 - 3);
        let err = Db::open(Arc::clone(&fs), options(mode)).unwrap_err();
        assert_names(&err, &manifest, last);
        let err = Db::open_read_only(fs, options(mode)).unwrap_err();
        assert_names(&err, &manifest, last);
        // Undamaged, the same database opens with every key.
        let (dev, _, _) = flushed();
        let db = Db::open(mount(&dev, fs_options()), options(mode)).unwrap();
        let keys: Vec<Vec<u8>> = (0..3 * KEYS).map(key).collect();
        assert_holds(&db, &model, &keys, mode.name());
    }
}
