//! Threaded mode under load: several writers, readers and snapshot readers while flush and
//! compaction threads (several of each, and subcompactions) work, with L0 triggers low enough that writes
//! stall. Readers never see a wrong value or an unsorted scan; the end state is exact.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use support::*;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};

const WRITERS: u64 = 4;
const PER_WRITER: u64 = 1500;
const KEYS_PER_WRITER: u64 = 300;

fn key(w: u64, k: u64) -> Vec<u8> {
    format!("w{w}-{k:04}").into_bytes()
}

/// A value names its key and version, so a reader can check any value it sees.
fn val(key: &[u8], version: u64) -> Vec<u8> {
    let mut v = key.to_vec();
    v.extend_from_slice(format!(":{version:06}:").as_bytes());
    v.resize(v.len() + (version % 50) as usize, b'.');
    v
}

fn valid_for(key: &[u8], v: &[u8]) -> bool {
    v.starts_with(key) && v.get(key.len()) == Some(&b':')
}

fn options() -> Options {
    Options {
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 3,
        level0_stop_writes_trigger: 4,
        max_background_compactions: 3,
        max_background_flushes: 2,
        max_subcompactions: 3,
        ..tiny_options(ExecMode::Threaded)
    }
}

fn writer(db: &Db, w: u64) -> Model {
    let mut model = Model::new();
    for i in 0..PER_WRITER {
        let k = key(w, (i * 7919) % KEYS_PER_WRITER);
        if i % 11 == 5 {
            db.delete(&WriteOptions::default(), &k).unwrap();
            model.remove(&k);
        } else {
            let v = val(&k, i);
            let wo = WriteOptions {
                sync: i % 50 == 0,
                ..WriteOptions::default()
            };
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
    }
    model
}

fn reader(db: &Db, stop: &AtomicBool) -> u64 {
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let snap = db.snapshot();
        let first = scan_all(db, &ReadOptions::at(&snap));
        let mut last: Option<&Vec<u8>> = None;
        for (k, v) in &first {
            assert!(valid_for(k, v), "wrong value for {k:?}");
            assert!(last.is_none_or(|l| l < k), "scan out of order");
            last = Some(k);
        }
        let k = key(rounds % WRITERS, rounds % KEYS_PER_WRITER);
        if let Some(v) = db.get(&ReadOptions::default(), &k).unwrap() {
            assert!(valid_for(&k, &v));
        }
        assert_eq!(
            db.get(&ReadOptions::at(&snap), &k).unwrap(),
            first.get(&k).cloned(),
            "snapshot get disagrees with snapshot scan"
        );
        rounds += 1;
    }
    rounds
}

#[test]
fn writers_readers_and_background_threads() {
    let (_mem, dev) = device(64, 256);
    let fs = format(&dev, fs_options());
    let db = Arc::new(Db::open(Arc::clone(&fs), options()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            thread::spawn(move || reader(&db, &stop))
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = Arc::clone(&db);
            thread::spawn(move || writer(&db, w))
        })
        .collect();
    let mut model = Model::new();
    for h in writers {
        model.extend(h.join().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let rounds: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(rounds > 0);
    db.wait_for_background().unwrap();
    let s = db.stats();
    eprintln!(
        "{rounds} reader rounds; {} flushes, {} compactions, {} moves, {} stops, {} delays, {} ms stalled",
        s.flushes,
        s.compactions,
        s.trivial_moves,
        s.stall_stops,
        s.stall_delays,
        s.stall_ns / 1_000_000
    );
    assert!(s.flushes > 0 && s.compactions > 0 && s.subcompactions > 0);
    // The L0 triggers are low enough that four writers outrun the background threads.
    assert!(
        s.stall_stops > 0 && s.stall_ns > 0,
        "no write stopped: {s:?}"
    );
    assert!(s.levels.iter().all(|l| l.score < 1.0), "{:?}", s.levels);
    let keys: Vec<Vec<u8>> = (0..WRITERS)
        .flat_map(|w| (0..KEYS_PER_WRITER).map(move |k| key(w, k)))
        .collect();
    assert_holds(&db, &model, &keys, "end");
    let db = Arc::try_unwrap(db).unwrap();
    db.close().unwrap();
    drop(fs);
    let db = Db::open(mount(&dev, fs_options()), options()).unwrap();
    assert_holds(&db, &model, &keys, "after a reopen");
}
