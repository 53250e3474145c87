//! `zkv inspect levels`: the LSM tree's shape (files, bytes and compaction score per
//! level), the writes replayed from the WAL, and RocksDB's "Compaction Stats" table, without
//! changing the device.
//!
//! Like `get`, it mounts the file system read-only and opens the database read-only
//! ([`zkv_engine::db::Db::open_read_only`]), which recovers the version set and replays the
//! WALs into memory, writing nothing. Everything shown comes from that database handle.

use std::collections::BTreeSet;

use clap::Args;
use serde::Serialize;
use zkv_engine::db::{Db, MemtableShape};
use zkv_zns::DeviceSpec;

use super::device::{parse_device, read_device, WaitArg};
use super::error::CliResult;
use super::kv::{db_error, open_read_only};
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

    #[command(flatten)]
    wait: WaitArg,
}

/// One level now.
#[derive(Clone, Debug, Serialize)]
struct LevelRow {
    level: usize,
    files: usize,
    bytes: u64,
    /// RocksDB's score with the engine's default options; the last level has none (0).
    score: f64,
    /// Blob files the level's tables are linked to (each table to its oldest one).
    linked_blob_files: usize,
}

/// One blob file of the version (BlobDB).
#[derive(Clone, Debug, Serialize)]
struct BlobRow {
    number: u64,
    file_bytes: u64,
    blobs: u64,
    blob_bytes: u64,
    garbage_blobs: u64,
    garbage_bytes: u64,
    /// Tables linked to it (their oldest blob file is this one).
    linked_tables: usize,
}

/// The WAL files the open replayed (those the manifest does not cover yet) and what they
/// hold: their writes are in the memtable, in no level.
#[derive(Clone, Debug, Default, Serialize)]
struct WalJson {
    files: usize,
    bytes: u64,
    /// Batches and operations (puts and deletions) replayed from them.
    batches: u64,
    operations: u64,
    /// The memtable they were replayed into: its accounted size.
    memtable_bytes: u64,
}

#[derive(Serialize)]
struct LevelsJson {
    device: String,
    /// False for a file system that holds no database yet (`levels` is then empty).
    database: bool,
    last_sequence: Option<u64>,
    levels: Vec<LevelRow>,
    blob_files: Vec<BlobRow>,
    wal: WalJson,
    /// The work per level (bytes read and written, compaction counts) exists only in a
    /// database handle that did work and is not recorded on the device: always null here.
    compaction_stats: Option<()>,
}

/// What the read-only database shows.
struct Lsm {
    last_sequence: u64,
    rows: Vec<LevelRow>,
    blobs: Vec<BlobRow>,
    wal: WalJson,
    stats_table: String,
}

pub fn run(args: LevelsArgs) -> CliResult {
    let spec = &args.device;
    let lsm = read_device(spec, args.wait.wait, |dev| {
        open_read_only(spec, dev)?
            .map(|db| read_lsm(spec, db))
            .transpose()
    })?;
    let mut out = Out::new();
    if args.json {
        print_json(spec, lsm.as_ref(), &mut out)?;
    } else {
        print_human(spec, lsm.as_ref(), &mut out)?;
    }
    out.flush()
}

fn read_lsm(spec: &DeviceSpec, db: Db) -> CliResult<Lsm> {
    let tables = db.live_files();
    let linked = |level: usize| {
        let at_level = tables.iter().filter(|(l, _)| *l == level);
        let blobs: BTreeSet<u64> = at_level.filter_map(|(_, f)| f.oldest_blob_file).collect();
        blobs.len()
    };
    let rows = db
        .stats()
        .levels
        .into_iter()
        .map(|l| LevelRow {
            level: l.level,
            files: l.files,
            bytes: l.bytes,
            score: l.score,
            linked_blob_files: linked(l.level),
        })
        .collect();
    let blobs = db
        .blob_files()
        .into_iter()
        .map(|b| BlobRow {
            number: b.number,
            file_bytes: b.file_size,
            blobs: b.total_count,
            blob_bytes: b.total_bytes,
            garbage_blobs: b.garbage_count,
            garbage_bytes: b.garbage_bytes,
            linked_tables: tables
                .iter()
                .filter(|(_, f)| f.oldest_blob_file == Some(b.number))
                .count(),
        })
        .collect();
    let rec = db.recovery();
    let MemtableShape { bytes, .. } = db.memtables();
    let lsm = Lsm {
        last_sequence: db.last_sequence(),
        rows,
        blobs,
        wal: WalJson {
            files: rec.wals.len(),
            bytes: rec.wal_bytes,
            batches: rec.batches,
            operations: rec.operations,
            memtable_bytes: bytes,
        },
        stats_table: db.compaction_stats_table(),
    };
    db.close().map_err(|e| db_error(spec, e))?;
    Ok(lsm)
}

fn print_json(spec: &DeviceSpec, lsm: Option<&Lsm>, out: &mut Out) -> CliResult {
    let json = LevelsJson {
        device: spec.to_string(),
        database: lsm.is_some(),
        last_sequence: lsm.map(|l| l.last_sequence),
        levels: lsm.map(|l| l.rows.clone()).unwrap_or_default(),
        blob_files: lsm.map(|l| l.blobs.clone()).unwrap_or_default(),
        wal: lsm.map(|l| l.wal.clone()).unwrap_or_default(),
        compaction_stats: None,
    };
    out.json(&json)
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
        "{spec}: {files} table{} of {} in the levels; the last sequence number is {}",
        if files == 1 { "" } else { "s" },
        format_size(bytes),
        lsm.last_sequence
    ))?;
    let blobs = !lsm.blobs.is_empty();
    let mut columns = vec![
        ("level", Align::Right),
        ("files", Align::Right),
        ("bytes", Align::Right),
        ("score", Align::Right),
    ];
    if blobs {
        columns.push(("linked blob files", Align::Right));
    }
    let mut t = Table::new(&columns);
    for r in &lsm.rows {
        let mut row = vec![
            format!("L{}", r.level),
            r.files.to_string(),
            format_size(r.bytes),
            format!("{:.2}", r.score),
        ];
        if blobs {
            row.push(r.linked_blob_files.to_string());
        }
        t.row(row);
    }
    t.print(out)?;
    if blobs {
        blob_line(&lsm.blobs, out)?;
    }
    let w = &lsm.wal;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    out.line(format!(
        "wal: {} file{}, {}, replayed into the memtable: {} write{}, {} (in no level yet: the \
         next read-write open flushes {} to L0)",
        w.files,
        plural(w.files as u64),
        format_size(w.bytes),
        w.batches,
        plural(w.batches),
        format_size(w.memtable_bytes),
        if w.batches == 1 { "it" } else { "them" }
    ))?;
    out.line("")?;
    for line in lsm.stats_table.lines() {
        out.line(line)?;
    }
    out.line(
        "(Read, Write, Moved, W-Amp and Comp(cnt) count the work of one open database; the \
         device does not record it, so they are 0 here: 'zkv bench' prints them after a run)",
    )
}

/// `blob files: 12 of 30.1 MiB, 40.0 MiB of blobs written to them, 10.0 MiB garbage`
fn blob_line(blobs: &[BlobRow], out: &mut Out) -> CliResult {
    let sum = |f: fn(&BlobRow) -> u64| blobs.iter().map(f).sum::<u64>();
    out.line(format!(
        "blob files: {} of {}, holding {} of blobs, {} of them garbage",
        blobs.len(),
        format_size(sum(|b| b.file_bytes)),
        format_size(sum(|b| b.blob_bytes)),
        format_size(sum(|b| b.garbage_bytes)),
    ))
}
