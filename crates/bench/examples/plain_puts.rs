//! The A side of the A/B measurement of what `zkv bench` costs on top of the engine: the
//! same db_bench workload as `zkv bench --mode deterministic --picker sica` (same device,
//! file system, engine options, keys and values), run as a bare loop of `Db::put` calls,
//! with no latency histogram, time series, progress bar or oracle. docs/BENCHMARKS.md
//! runs both and compares the loop times.
//!
//! ```text
//! plain_puts WORKLOAD NUM VALUE_SIZE ZONES ZONE_SIZE WRITE_BUFFER TARGET_FILE L1_BYTES
//! ```
//!
//! Sizes are plain byte counts. Prints db_bench's result line for the loop, like
//! `zkv bench`'s, then the LSM's flush and compaction bytes (equal to `zkv bench`'s
//! `lsm.flush_bytes` and `lsm.compaction_bytes` for the same flags: the same work).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use zkv_bench::{DbBenchConfig, DbBenchGenerator, DbBenchWorkload, OpKind, ValueGenerator};
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_zns::{Geometry, MemDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs};
use zkv_zonefs::meta::DEFAULT_META_ZONES;

type Res<T> = Result<T, String>;

/// The command line, in order.
struct Setup {
    workload: DbBenchWorkload,
    num: u64,
    value_size: usize,
    zones: u32,
    zone_size: u64,
    write_buffer: u64,
    target_file: u64,
    l1_bytes: u64,
}

fn number<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Res<T> {
    let text = args.get(i).ok_or_else(|| format!("missing {what}"))?;
    text.parse()
        .map_err(|_| format!("{what}: not a number: {text}"))
}

fn parse(args: &[String]) -> Res<Setup> {
    let name = args.first().ok_or("missing WORKLOAD")?;
    let workload =
        DbBenchWorkload::from_name(name).ok_or_else(|| format!("unknown workload {name}"))?;
    Ok(Setup {
        workload,
        num: number(args, 1, "NUM")?,
        value_size: number(args, 2, "VALUE_SIZE")?,
        zones: number(args, 3, "ZONES")?,
        zone_size: number(args, 4, "ZONE_SIZE")?,
        write_buffer: number(args, 5, "WRITE_BUFFER")?,
        target_file: number(args, 6, "TARGET_FILE")?,
        l1_bytes: number(args, 7, "L1_BYTES")?,
    })
}

/// Device, file system and database as `zkv bench` opens them in deterministic mode.
fn open(s: &Setup) -> Res<Db> {
    let geo = Geometry::new(s.zones, s.zone_size);
    let dev = MemDevice::new(geo).map_err(|e| e.to_string())?;
    let fs_options = FsOptions::default()
        .with_meta_zones(DEFAULT_META_ZONES)
        .with_placement("liza");
    let fs = ZoneFs::format(Arc::new(dev), fs_options).map_err(|e| e.to_string())?;
    let options = Options {
        write_buffer_size: s.write_buffer,
        target_file_size_base: s.target_file,
        max_bytes_for_level_base: s.l1_bytes,
        compaction_pri: "sica".into(),
        mode: ExecMode::Deterministic,
        ..Options::default()
    };
    let db = Db::open(Arc::new(fs), options).map_err(|e| e.to_string())?;
    db.set_inline_cleaning(true);
    Ok(db)
}

fn run(s: &Setup) -> Res<()> {
    let db = open(s)?;
    let config = DbBenchConfig {
        num: s.num,
        ..DbBenchConfig::default()
    };
    // `zkv bench` seeds its first workload and its values with --seed, 0 by default.
    let mut ops = DbBenchGenerator::new(s.workload, config, 0).map_err(|e| e.to_string())?;
    let mut values = ValueGenerator::new(0);
    let mut value = Vec::with_capacity(s.value_size);
    let (write, read) = (WriteOptions::default(), ReadOptions::default());
    let mut done = 0u64;
    let start = Instant::now();
    while let Some(op) = ops.next_op() {
        let result = match op.kind {
            OpKind::Read => db.get(&read, &op.key).map(drop),
            OpKind::Insert | OpKind::Update => {
                values.fill(s.value_size, &mut value);
                db.put(&write, &op.key, &value)
            }
            other => return Err(format!("a plain loop does not run {}", other.name())),
        };
        result.map_err(|e| format!("operation {}: {e}", done + 1))?;
        done += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations (plain loop)",
        s.workload.name(),
        seconds * 1e6 / done.max(1) as f64,
        (done as f64 / seconds.max(f64::MIN_POSITIVE)) as u64,
        seconds,
        done
    );
    // The same work as `zkv bench`'s run, shown so that the two can be checked equal.
    let stats = db.stats();
    println!(
        "flush_bytes {} compaction_bytes {} compactions {}",
        stats.flush_bytes, stats.compaction_write_bytes, stats.compactions
    );
    db.close().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args).and_then(|s| run(&s)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plain_puts: {e}");
            ExitCode::FAILURE
        }
    }
}
