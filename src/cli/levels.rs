//! `zkv inspect levels`: the LSM tree's shape (files, bytes and compaction score per
//! level) and RocksDB's "Compaction Stats" table, without changing the device.
//!
//! Unlike `get`, this does not open the database: it mounts the file system read-only and
//! recovers only the version set (CURRENT and the manifest), which reads and never
//! writes. The levels are therefore those the manifest records; writes still only in the
//! WAL (every `zkv put` leaves its write there until the next open flushes it to L0) are
//! shown apart.

use std::collections::HashSet;
use std::sync::Arc;

use clap::Args;
use engine::compaction::{compute_scores, CompactionStats, LevelScore};
use engine::options::Options;
use engine::version::{Version, VersionSet};
use serde::Serialize;
use zns::DeviceSpec;
use zonefs::fs::ZoneFs;
use zonefs::meta::FileKind;

use super::device::{open_persistent, parse_device, Access};
use super::error::{CliError, CliResult};
use super::fsview::fs_error;
use super::kv::db_error;
use super::size::format_size;
use super::table::{Align, Table};
use super::Out;

#[derive(Debug, Args)]
pub struct LevelsArgs {
    /// The device: file:PATH or zbd:/dev/DEV, formatted by 'zkv mkfs'
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    /// Print JSON instead of tables (field names in docs/CLI.md)
    #[arg(long)]
    json: bool,
}

/// One level now.
#[derive(Clone, Debug, Serialize)]
struct LevelRow {
    level: usize,
    files: usize,
    bytes: u64,
    /// RocksDB's score with the engine's default options; the last level has none (0).
    score: f64,
}

/// WAL files the manifest does not cover yet: their writes are in no level.
#[derive(Clone, Debug, Default, Serialize)]
struct WalJson {
    files: usize,
    bytes: u64,
}

#[derive(Serialize)]
struct LevelsJson {
    device: String,
    /// False for a file system that holds no database yet (`levels` is then empty).
    database: bool,
    last_sequence: Option<u64>,
    levels: Vec<LevelRow>,
    wal: WalJson,
    /// The work per level (bytes read and written, compaction counts) exists only in an
    /// open database and is not recorded on the device: always null here.
    compaction_stats: Option<()>,
}

/// What the manifest says, read without writing.
struct Lsm {
    version: Arc<Version>,
    scores: Vec<LevelScore>,
    last_sequence: u64,
    rows: Vec<LevelRow>,
    wal: WalJson,
}

pub fn run(args: LevelsArgs) -> CliResult {
    let spec = &args.device;
    let dev = open_persistent(spec, Access::ReadOnly)?;
    let fs = ZoneFs::mount_read_only(dev).map_err(|e| fs_error(&spec.to_string(), e))?;
    let fs = Arc::new(fs);
    let lsm = if VersionSet::exists(&fs) {
        Some(read_lsm(spec, &fs)?)
    } else {
        None
    };
    let mut out = Out::new();
    if args.json {
        print_json(spec, lsm.as_ref(), &mut out)?;
    } else {
        print_human(spec, lsm.as_ref(), &mut out)?;
    }
    out.flush()
}

fn read_lsm(spec: &DeviceSpec, fs: &Arc<ZoneFs>) -> CliResult<Lsm> {
    let options = Options::default();
    let vs = VersionSet::recover(Arc::clone(fs), &options).map_err(|e| db_error(spec, e))?;
    let version = vs.current();
    let scores = compute_scores(&version, &options, &HashSet::new());
    let rows = (0..version.num_levels())
        .map(|level| LevelRow {
            level,
            files: version.num_files(level),
            bytes: version.level_bytes(level),
            score: scores
                .iter()
                .find(|s| s.level == level)
                .map_or(0.0, |s| s.score),
        })
        .collect();
    Ok(Lsm {
        last_sequence: vs.last_sequence(),
        wal: unflushed_wals(fs, vs.log_number()),
        version,
        scores,
        rows,
    })
}

/// WALs numbered at or above the manifest's log number: what recovery would replay.
fn unflushed_wals(fs: &ZoneFs, log_number: u64) -> WalJson {
    let number = |name: &str| name.strip_suffix(".log")?.parse::<u64>().ok();
    let mut wal = WalJson::default();
    for f in fs.list().into_iter().filter(|f| f.kind == FileKind::Wal) {
        if number(&f.name).is_some_and(|n| n >= log_number) {
            wal.files += 1;
            wal.bytes += f.size;
        }
    }
    wal
}

fn print_json(spec: &DeviceSpec, lsm: Option<&Lsm>, out: &mut Out) -> CliResult {
    let json = LevelsJson {
        device: spec.to_string(),
        database: lsm.is_some(),
        last_sequence: lsm.map(|l| l.last_sequence),
        levels: lsm.map(|l| l.rows.clone()).unwrap_or_default(),
        wal: lsm.map(|l| l.wal.clone()).unwrap_or_default(),
        compaction_stats: None,
    };
    let text = serde_json::to_string_pretty(&json)
        .map_err(|e| CliError::invalid(format!("cannot encode JSON: {e}")))?;
    out.line(text)
}

fn print_human(spec: &DeviceSpec, lsm: Option<&Lsm>, out: &mut Out) -> CliResult {
    let Some(lsm) = lsm else {
        return out.line(format!(
            "{spec}: no database yet (the file system holds none; 'zkv put' creates one)"
        ));
    };
    let files: usize = lsm.rows.iter().map(|r| r.files).sum();
    let bytes: u64 = lsm.rows.iter().map(|r| r.bytes).sum();
    out.line(format!(
        "{spec}: {files} table{} of {} in the levels; the manifest's last sequence number is {}",
        if files == 1 { "" } else { "s" },
        format_size(bytes),
        lsm.last_sequence
    ))?;
    let mut t = Table::new(&[
        ("level", Align::Right),
        ("files", Align::Right),
        ("bytes", Align::Right),
        ("score", Align::Right),
    ]);
    for r in &lsm.rows {
        t.row(vec![
            format!("L{}", r.level),
            r.files.to_string(),
            format_size(r.bytes),
            format!("{:.2}", r.score),
        ]);
    }
    for line in t.lines() {
        out.line(line)?;
    }
    out.line(format!(
        "wal: {} file{}, {} not yet in a level (the next open of the database flushes it to L0)",
        lsm.wal.files,
        if lsm.wal.files == 1 { "" } else { "s" },
        format_size(lsm.wal.bytes)
    ))?;
    out.line("")?;
    let table = CompactionStats::default().to_table(&lsm.version, &lsm.scores, &HashSet::new());
    for line in table.lines() {
        out.line(line)?;
    }
    out.line(
        "(Read, Write, Moved, W-Amp and Comp(cnt) count the work of one open database; the \
         device does not record it, so they are 0 here: 'zkv bench' prints them after a run)",
    )
}
