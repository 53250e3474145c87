//! Lifetime prediction through the database: predictions are made only when the file layer
//! uses them, kept with each SST in the manifest, their clock continues across a reopen,
//! they are scored as files die, and `compensate` cleaning compacts files instead of
//! copying them.

mod support;

use std::sync::Arc;

use support::*;
use zkv_engine::db::Db;
use zkv_engine::options::{ExecMode, Options};
use zkv_engine::version::FileMeta;
use zkv_zonefs::fs::{CleaningMode, FsOptions, ZoneFs};

const KEYS: u64 = 600;

fn churn(db: &Db, seed: u64, ops: u64) -> Model {
    support::churn(db, seed, ops, KEYS, 0.0)
}

fn keys() -> Vec<Vec<u8>> {
    (0..KEYS).map(churn_key).collect()
}

fn options() -> Options {
    Options {
        compaction_pri: "round-robin".into(),
        ..tiny_options(ExecMode::Deterministic)
    }
}

fn prophet() -> FsOptions {
    fs_options().with_placement("prophet")
}

#[test]
fn prophet_placement_predicts_every_sst_and_scores_the_dead() {
    let (_mem, dev) = device(48, 64);
    let fs = format(&dev, prophet());
    let db = Db::open(Arc::clone(&fs), options()).unwrap();
    let model = churn(&db, 1, 6000);
    db.wait_for_background().unwrap();
    let s = db.stats();
    let l = s
        .lifetime
        .clone()
        .expect("prophet placement predicts lifetimes");
    // One tick per flush and per compaction, trivial moves included.
    assert_eq!(l.clock.tick, s.flushes + s.compactions + s.trivial_moves);
    assert!(l.clock.compacting_levels >= 2, "{:?}", l.clock);
    assert!(s.prediction_calls > 0);
    assert!(l.stats.deleted > 50, "{:?}", l.stats);
    assert!(l.stats.deleted <= l.clock.deleted);
    // Every live SST carries its prediction, made at most at the clock's tick.
    for (_, f) in db.live_files() {
        let p = f.lifetime.expect("a prediction");
        assert!(p.created <= l.clock.tick, "{p:?}");
    }
    assert_holds(&db, &model, &keys(), "prophet");
}

#[test]
fn the_clock_and_predictions_survive_a_reopen() {
    let (_mem, dev) = device(48, 64);
    let fs = format(&dev, prophet());
    let db = Db::open(Arc::clone(&fs), options()).unwrap();
    let model = churn(&db, 2, 4000);
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    let before = db.stats().lifetime.unwrap().clock;
    let files = db.live_files();
    db.close().unwrap();
    drop(fs);
    let db = Db::open(mount(&dev, prophet()), options()).unwrap();
    let after = db.stats().lifetime.unwrap().clock;
    assert_eq!(after, before, "the clock goes on where it was");
    assert!(before.passive.iter().any(|&(_, n)| n > 0), "{before:?}");
    let lifetimes = |fs: &[(usize, zkv_engine::version::FileMeta)]| -> Vec<_> {
        fs.iter().map(|(_, f)| (f.number, f.lifetime)).collect()
    };
    assert_eq!(lifetimes(&db.live_files()), lifetimes(&files));
    assert_holds(&db, &model, &keys(), "reopened");
    // The next flush ticks on from there.
    churn(&db, 3, 300);
    db.flush().unwrap();
    assert!(db.stats().lifetime.unwrap().clock.tick > before.tick);
}

#[test]
fn an_open_that_does_not_predict_keeps_the_clock_for_the_next_that_does() {
    let (_mem, dev) = device(48, 64);
    let fs = format(&dev, prophet());
    let db = Db::open(Arc::clone(&fs), options()).unwrap();
    churn(&db, 6, 3000);
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    let before = db.stats().lifetime.unwrap().clock;
    db.close().unwrap();
    drop(fs);
    // A LIZA open rolls the manifest (its first edit) and writes on.
    let db = Db::open(mount(&dev, fs_options()), options()).unwrap();
    assert!(db.stats().lifetime.is_none());
    churn(&db, 7, 500);
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(mount(&dev, prophet()), options()).unwrap();
    let after = db.stats().lifetime.unwrap().clock;
    assert!(
        after.tick >= before.tick,
        "{} < {}",
        after.tick,
        before.tick
    );
    assert_eq!(after.passive, before.passive);
    let newest = db
        .live_files()
        .iter()
        .filter_map(|(_, f)| f.lifetime.map(|l| l.created))
        .max();
    assert!(newest.is_none_or(|t| t <= after.tick));
}

#[test]
fn nothing_is_predicted_unless_the_file_layer_uses_it() {
    let (_mem, dev) = device(48, 64);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), options()).unwrap();
    churn(&db, 4, 3000);
    db.wait_for_background().unwrap();
    let s = db.stats();
    assert!(s.lifetime.is_none());
    assert_eq!(s.prediction_calls, 0);
    assert!(db.live_files().iter().all(|(_, f)| f.lifetime.is_none()));
}

/// Every live SST in `zone`.
fn files_in(db: &Db, fs: &ZoneFs, zone: u32) -> Vec<FileMeta> {
    db.live_files()
        .into_iter()
        .map(|(_, f)| f)
        .filter(|f| {
            fs.zones_of(&f.file_name())
                .is_ok_and(|zs| zs.iter().any(|&(z, _)| z == zone))
        })
        .collect()
}

#[test]
fn compensate_compacts_exactly_the_victim_files_predicted_to_trigger_soon() {
    let (_mem, dev) = device(40, 64);
    let opts = prophet()
        .with_gc(20, 25)
        .with_gc_mode(CleaningMode::Compensate);
    let fs = format(&dev, opts.clone());
    let db = Db::open(Arc::clone(&fs), options()).unwrap();
    let mut model = churn(&db, 5, 5000);
    let (mut with_ahead, mut copied_only) = (0, 0);
    // Enough rounds for victims of both kinds: a victim zone holds one or two of about 25
    // live files, and only a few of those are predicted ahead at any time.
    for round in 0..120 {
        db.wait_for_background().unwrap();
        let Some(victim) = fs.pick_victim() else {
            model.extend(churn(&db, 100 + round, 400));
            continue;
        };
        let now = db.stats().lifetime.unwrap().clock.tick;
        let ahead: Vec<u64> = files_in(&db, &fs, victim)
            .iter()
            .filter(|f| f.lifetime.is_some_and(|l| l.compact_ahead(now)))
            .map(|f| f.number)
            .collect();
        let requested = db.stats().requested_compactions;
        fs.clean_one().unwrap();
        let live: Vec<u64> = db.live_files().iter().map(|(_, f)| f.number).collect();
        for n in &ahead {
            assert!(!live.contains(n), "file {n} was ahead and is still live");
        }
        if ahead.is_empty() {
            assert_eq!(
                db.stats().requested_compactions,
                requested,
                "nothing to compact"
            );
            copied_only += 1;
        } else {
            assert!(db.stats().requested_compactions > requested);
            with_ahead += 1;
        }
        model.extend(churn(&db, 100 + round, 400));
    }
    assert!(
        with_ahead > 0 && copied_only > 0,
        "{with_ahead} {copied_only}"
    );
    assert!(fs.stats().gc.copy_bytes > 0);
    assert_holds(&db, &model, &keys(), "after compensating cleaning");
    db.close().unwrap();
    let db = Db::open(mount(&dev, opts), options()).unwrap();
    assert_holds(&db, &model, &keys(), "reopened");
}
