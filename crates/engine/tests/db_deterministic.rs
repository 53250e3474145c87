//! Deterministic mode: the same operations give the same files (names, sizes, bytes), the
//! same statistics and the same compaction records, run after run.

mod support;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::*;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, DbStats, ReadOptions, WriteOptions};
use zkv_engine::options::ExecMode;

/// Everything a run produces that must not vary.
#[derive(Debug, PartialEq)]
struct Outcome {
    files: std::collections::BTreeMap<String, Vec<u8>>,
    stats: String,
    table: String,
    device_written: u64,
    zone_stats: String,
}

/// The statistics without the wall-time figures (stall time is virtual, hence stable).
fn stable(s: &DbStats) -> String {
    let mut s = s.clone();
    s.picker_ns = 0;
    s.neighbors_ns = 0;
    format!("{s:?}")
}

fn run(seed: u64, picker: &str) -> Outcome {
    let (_mem, dev) = device(64, 256);
    let fs = format(&dev, fs_options());
    let options = zkv_engine::options::Options {
        compaction_pri: picker.into(),
        ..tiny_options(ExecMode::Deterministic)
    };
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let wo = WriteOptions::default();
    for i in 0..3000u64 {
        let k = format!("k{:05}", rng.random_range(0..600)).into_bytes();
        match rng.random_range(0..10) {
            0 => db.delete(&wo, &k).unwrap(),
            1 => {
                let mut b = WriteBatch::new();
                for j in 0..4 {
                    let k = format!("b{:05}", (i * 4 + j) % 700).into_bytes();
                    b.put(&k, &value(i ^ j, 40));
                }
                db.write(&wo, b).unwrap();
            }
            2 if i % 97 == 0 => db.flush().unwrap(),
            _ => db
                .put(&wo, &k, &value(i, rng.random_range(10..90)))
                .unwrap(),
        }
        if i % 500 == 0 {
            let _ = db.get(&ReadOptions::default(), &k).unwrap();
        }
    }
    let stats = db.stats();
    assert!(stats.flushes > 5 && stats.compactions > 5, "{stats:?}");
    let outcome = Outcome {
        files: file_contents(&fs),
        stats: stable(&stats),
        table: db.compaction_stats_table(),
        device_written: fs.stats().device_written_total(),
        zone_stats: format!("{:?}", fs.zone_stats().unwrap()),
    };
    db.close().unwrap();
    outcome
}

#[test]
fn same_operations_same_bytes_and_metrics() {
    let cases = [
        (1, "min-overlap"),
        (2, "sica"),
        (3, "round-robin"),
        (4, "zaca"),
    ];
    for (seed, picker) in cases {
        let a = run(seed, picker);
        let b = run(seed, picker);
        assert!(a == b, "seed {seed} {picker}: runs differ");
    }
}
