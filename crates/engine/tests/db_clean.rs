//! The zone cleaner's `compact` mode through the database's compaction requester: the
//! cleaner offers a victim's SSTs, the database compacts them into the next level (and
//! deletes them), the cleaner copies only what is left; data stays intact.

mod support;

use std::sync::Arc;

use support::*;
use zkv_engine::db::Db;
use zkv_engine::options::{ExecMode, Options};
use zkv_zonefs::fs::{CleaningMode, FsOptions};

const KEYS: u64 = 400;

fn compact_mode(start: u8, stop: u8) -> FsOptions {
    fs_options()
        .with_gc(start, stop)
        .with_gc_mode(CleaningMode::Compact)
}

/// Random overwrites and deletes; returns the model.
fn churn(db: &Db, seed: u64, ops: u64) -> Model {
    support::churn(db, seed, ops, KEYS, 0.1)
}

fn keys() -> Vec<Vec<u8>> {
    (0..KEYS).map(churn_key).collect()
}

fn options(mode: ExecMode) -> Options {
    tiny_options(mode)
}

#[test]
fn cleaning_a_victim_compacts_its_ssts() {
    let (_mem, dev) = device(40, 64);
    let fs = format(&dev, compact_mode(20, 25));
    let db = Db::open(Arc::clone(&fs), options(ExecMode::Deterministic)).unwrap();
    let model = churn(&db, 1, 3000);
    let mut cleaned = 0;
    for _ in 0..20 {
        if fs.clean_one().unwrap().is_some() {
            cleaned += 1;
        }
    }
    assert!(cleaned > 0, "no victim was cleaned");
    let gc = fs.stats().gc;
    let s = db.stats();
    assert!(gc.compaction_requests > 0, "{gc:?}");
    assert!(s.requested_compactions > 0, "{s:?}");
    assert!(gc.compacted_bytes > 0, "{gc:?}");
    assert!(s.records.iter().any(|r| r.requested));
    assert_holds(&db, &model, &keys(), "after cleaning");
    db.close().unwrap();
    drop(fs);
    let db = Db::open(
        mount(&dev, compact_mode(20, 25)),
        options(ExecMode::Deterministic),
    )
    .unwrap();
    assert_holds(&db, &model, &keys(), "after a reopen");
}

#[test]
fn inline_cleaning_runs_at_the_fixed_point() {
    let (_mem, dev) = device(16, 64);
    let fs = format(&dev, compact_mode(70, 80));
    let db = Db::open(Arc::clone(&fs), options(ExecMode::Deterministic)).unwrap();
    db.set_inline_cleaning(true);
    let model = churn(&db, 2, 4000);
    let gc = fs.stats().gc;
    assert!(gc.runs > 0 && gc.victims > 0, "{gc:?}");
    assert!(db.stats().requested_compactions > 0, "{gc:?}");
    assert_holds(&db, &model, &keys(), "inline cleaning");
}

#[test]
fn background_cleaner_with_threaded_database() {
    let (_mem, dev) = device(16, 64);
    let fs = format(&dev, compact_mode(70, 80));
    let cleaner = fs.start_cleaner().unwrap();
    let db = Db::open(Arc::clone(&fs), options(ExecMode::Threaded)).unwrap();
    let model = churn(&db, 3, 4000);
    db.wait_for_background().unwrap();
    assert_eq!(cleaner.last_error(), None);
    let gc = fs.stats().gc;
    assert!(gc.victims > 0, "{gc:?}");
    assert_holds(&db, &model, &keys(), "background cleaning");
    drop(cleaner);
    db.close().unwrap();
    drop(fs);
    let db = Db::open(
        mount(&dev, compact_mode(70, 80)),
        options(ExecMode::Threaded),
    )
    .unwrap();
    assert_holds(&db, &model, &keys(), "after a reopen");
}
