//! The engine on a directory (`PosixFs`): a crash keeps every synced write, a dropped
//! handle keeps everything, and the bytes it counts per category are the LSM's own.

mod support;

use std::sync::Arc;

use support::*;
use zkv_engine::db::{Db, WriteOptions};
use zkv_engine::fs::{FileSystem, PosixFs};
use zkv_engine::options::ExecMode;
use zkv_zns::IoCategory;

fn key(i: u32) -> Vec<u8> {
    format!("key{:05}", i % 700).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let len = 20 + (i as usize * 37) % 300;
    format!("value{i:06}").into_bytes().repeat(len / 11 + 1)[..len].to_vec()
}

fn open(dir: &std::path::Path, mode: ExecMode) -> Db {
    let fs: Arc<dyn FileSystem> = Arc::new(PosixFs::open(dir).unwrap());
    Db::open(fs, tiny_options(mode)).unwrap()
}

/// Writes 0..n, every tenth one synced; returns the index after the last synced write.
fn write(db: &Db, n: u32) -> u32 {
    let mut synced = 0;
    for i in 0..n {
        let sync = i % 10 == 0;
        let opts = WriteOptions {
            sync,
            ..WriteOptions::default()
        };
        db.put(&opts, &key(i), &value(i)).unwrap();
        if sync {
            synced = i + 1;
        }
    }
    synced
}

/// The value the writes 0..upto left for `k`, if any.
fn last_value(k: &[u8], upto: u32) -> Option<Vec<u8>> {
    (0..upto).rev().find(|&i| key(i) == k).map(value)
}

/// A crash (the handle leaked: no close, no WAL sync, buffered appends never reach the
/// directory) keeps every write up to the last synced one; a later write that survived
/// is whole.
#[test]
fn a_crash_keeps_every_synced_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), ExecMode::Deterministic);
    let n = 2500;
    let synced = write(&db, n);
    assert!(db.stats().flushes > 0, "the writes flushed memtables");
    std::mem::forget(db);
    let db = open(dir.path(), ExecMode::Deterministic);
    for i in 0..700u32 {
        let k = key(i);
        let got = db.get(&Default::default(), &k).unwrap();
        let durable = last_value(&k, synced);
        if got != durable {
            // Only a write after the last sync may be there beyond what is durable.
            let later = (synced..n).any(|j| key(j) == k && got.as_deref() == Some(&value(j)[..]));
            assert!(later, "key {i}: {got:?}, durable {durable:?}");
        }
    }
    db.close().unwrap();
}

/// A handle dropped without close (threads stopped, WAL closed) keeps every write.
#[test]
fn reopen_after_drop_keeps_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), ExecMode::Threaded);
    let n = 1500;
    write(&db, n);
    drop(db);
    let db = open(dir.path(), ExecMode::Threaded);
    for i in 0..700u32 {
        let k = key(i);
        assert_eq!(db.get(&Default::default(), &k).unwrap(), last_value(&k, n));
    }
    db.close().unwrap();
}

/// Without zone cleaning, the directory's bytes per category are what the LSM wrote.
#[test]
fn bytes_by_category_are_the_lsms() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), ExecMode::Deterministic);
    write(&db, 3000);
    db.wait_for_background().unwrap();
    let io = db.file_system().io_stats();
    let s = db.stats();
    assert!(s.compactions > 0);
    assert_eq!(io.written(IoCategory::Wal), s.wal_bytes);
    assert_eq!(io.written(IoCategory::Flush), s.flush_bytes);
    assert_eq!(io.written(IoCategory::Compaction), s.compaction_write_bytes);
    assert_eq!(io.written(IoCategory::GcCopy), 0);
    assert!(io.total_read() > 0, "compactions read their inputs");
    db.close().unwrap();
}
