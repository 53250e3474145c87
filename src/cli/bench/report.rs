//! The bench report: db_bench-style lines, the latency summary, the compaction stats table
//! and the zone/cleaning summary for people; the JSON of docs/CLI.md for programs.
//!
//! Sections without a source are left out rather than filled with zeros that would look
//! measured: `lifetime` when the run predicts no lifetimes, BlobDB's `blob` without
//! `--enable-blob-files`, the device's
//! `busy_ns` and `timing` without `--timing`, and a `policy_us` figure whose policy was
//! never called.

use std::collections::BTreeSet;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};
use zkv_bench::DbBenchWorkload;
use zkv_engine::db::{CompactionRecord, DbStats};
use zkv_zns::timing::TimingReport;
use zkv_zns::IoCategory;
use zkv_zonefs::fs::{FsStats, InvalidRatios};

use super::runner::{Latency, Measured, OpLatency, PhaseResult, RateRecord, Sample};
use super::verify::VerifyResult;
use crate::cli::error::CliResult;
use crate::cli::Out;

/// Everything the report is made of, gathered once the run is over.
pub struct Report<'a> {
    pub scheme: String,
    /// The file system when it is not the zoned file layer (`posix:DIR`): the report then
    /// has no zone, cleaning or free-space figure.
    pub file_system: Option<String>,
    pub workload: String,
    pub config: Value,
    pub measured: &'a Measured,
    pub db: DbStats,
    pub table: String,
    pub fs: FsStats,
    /// Invalid ratios of the full zones at the end of the run.
    pub invalid: InvalidRatios,
    pub verify: Option<VerifyResult>,
    pub error: Option<String>,
    /// The device's timing model's report, with `--timing`.
    pub timing: Option<TimingReport>,
}

/// db_bench's result line: `fillrandom   :      12.345 micros/op 81000 ops/sec ...`.
pub fn result_line(r: &PhaseResult) -> String {
    if r.name == zkv_bench::workload::IDLE {
        let clock = match r.virtual_seconds {
            Some(s) => format!("{s:.3} virtual seconds ({:.3} seconds)", r.seconds),
            None => format!("{:.3} seconds", r.seconds),
        };
        return format!("{:<12} : no requests for {clock}", r.name);
    }
    // db_bench's micros/op: each client's time per operation (all clients' seconds over
    // all operations), where ops/sec is the phase's.
    let micros = if r.ops == 0 {
        0.0
    } else {
        r.client_seconds * 1e6 / r.ops as f64
    };
    let mut line = format!(
        "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations; {:>6.1} MB/s",
        r.name,
        micros,
        per_sec(r.ops, r.seconds) as u64,
        r.seconds,
        r.ops,
        r.bytes as f64 / 1_048_576.0 / r.seconds.max(f64::MIN_POSITIVE),
    );
    if r.mixgraph {
        line.push_str(&mixgraph_summary(r));
    } else if r.gets > 0 {
        line.push_str(&format!(" ({} of {} found)", r.found, r.gets));
    } else if seekrandom(r) {
        line.push_str(&format!(" ({} of {} found)", r.seek_found, r.scans));
    }
    line
}

/// Whether `r` is seekrandom's phase, whose line and JSON count the seeks that found their
/// key.
fn seekrandom(r: &PhaseResult) -> bool {
    r.name == DbBenchWorkload::SeekRandom.name()
}

/// db_bench's MixGraph summary: the operations of each kind, reads (gets and seeks) that
/// found their key, mean value size and mean records per scan (0.0 where db_bench divides
/// by zero and prints nan).
fn mixgraph_summary(r: &PhaseResult) -> String {
    format!(
        " ( Gets:{} Puts:{} Seek:{}, reads {} in {} found, avg size: {:.1} value, {:.1} scan)",
        r.gets,
        r.puts,
        r.scans,
        r.found + r.seek_found,
        r.gets + r.scans,
        ratio(r.value_bytes, r.puts),
        ratio(r.scanned, r.scans),
    )
}

/// A parameter as written on the command line: plain decimals, but tiny and huge values
/// in scientific notation rather than hundreds of digits.
fn short(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// The sine rate a mixgraph phase ran at, for people.
pub fn rate_line(rate: &RateRecord) -> String {
    let s = &rate.sine;
    let head = format!(
        "{:<12} : sine rate {}·sin({}·t + {}) + {} ops/s every {} ms",
        "mixgraph",
        short(s.a),
        short(s.b),
        short(s.c),
        short(s.d),
        s.interval_ms
    );
    let later = rate.steps.get(1..).unwrap_or_default();
    let first = rate.steps.first().map_or(0.0, |&(_, r)| r);
    if later.is_empty() {
        return format!("{head}; {first:.0} ops/s throughout (it ended within one interval)");
    }
    let fold = |f: fn(f64, f64) -> f64, init| later.iter().map(|&(_, r)| r).fold(init, f);
    format!(
        "{head}; {first:.0} ops/s for the first interval, then {} steps from {:.1} to {:.1} ops/s",
        later.len(),
        fold(f64::min, f64::INFINITY),
        fold(f64::max, 0.0),
    )
}

fn per_sec(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// WAL + flush + compaction output + blob files: what the LSM asked the file layer to
/// write (docs/CLI.md, "JSON").
fn lsm_bytes(db: &DbStats) -> u64 {
    db.wal_bytes + db.flush_bytes + db.compaction_write_bytes + db.blob.bytes_written
}

/// Whether the run separated values into blob files (its report then has a `blob` section).
fn blob_run(r: &Report<'_>) -> bool {
    r.config.get("enable_blob_files") == Some(&Value::Bool(true))
}

// ---------------------------------------------------------------- human output

pub fn print_human(r: &Report<'_>, out: &mut Out) -> CliResult {
    out.line("")?;
    for line in latency_lines(&r.measured.latency) {
        out.line(line)?;
    }
    out.line("")?;
    for p in &r.measured.phases {
        if let Some(l) = &p.ycsb {
            for line in ycsb_lines(p, l) {
                out.line(line)?;
            }
            out.line("")?;
        }
    }
    out.line(r.table.trim_end())?;
    out.line("")?;
    for line in zone_lines(r) {
        out.line(line)?;
    }
    if blob_run(r) {
        out.line(super::blob::line(&r.db, &r.fs))?;
    }
    if let Some(l) = &r.db.lifetime {
        out.line("")?;
        for line in super::lifetime::lines(l) {
            out.line(line)?;
        }
    }
    if let Some(v) = &r.verify {
        out.line(format!(
            "Verify: {} keys checked, {} mismatches",
            v.checked, v.mismatches
        ))?;
    }
    out.flush()
}

fn latency_lines(l: &Latency) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "Latency (us)", "count", "p50", "p95", "p99", "p99.9", "max"
    )];
    for (name, h) in histograms(l) {
        if h.is_empty() {
            continue;
        }
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        lines.push(format!(
            "{:<12} {:>10} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
            name,
            h.len(),
            us(0.5),
            us(0.95),
            us(0.99),
            us(0.999),
            h.max() as f64 / 1000.0
        ));
    }
    lines
}

/// A YCSB phase's measurements as YCSB prints them (`[READ], Operations, 500`), after a
/// line naming the phase: the phase's run time and throughput, then per kind of operation
/// that ran its count and latencies in microseconds.
fn ycsb_lines(p: &PhaseResult, l: &OpLatency) -> Vec<String> {
    let mut lines = vec![
        format!("YCSB {}:", p.name),
        format!("[OVERALL], RunTime(ms), {:.0}", p.seconds * 1e3),
        format!(
            "[OVERALL], Throughput(ops/sec), {:.1}",
            per_sec(p.ops, p.seconds)
        ),
    ];
    for (kind, h) in l.0.iter().filter(|(_, h)| !h.is_empty()) {
        let us = |ns: u64| ns as f64 / 1000.0;
        let figures = [
            ("AverageLatency(us)", h.mean() / 1000.0),
            ("MinLatency(us)", us(h.min())),
            ("MaxLatency(us)", us(h.max())),
            ("95thPercentileLatency(us)", us(h.value_at_quantile(0.95))),
            ("99thPercentileLatency(us)", us(h.value_at_quantile(0.99))),
        ];
        lines.push(format!("[{kind}], Operations, {}", h.len()));
        for (name, value) in figures {
            lines.push(format!("[{kind}], {name}, {value:.3}"));
        }
    }
    lines
}

/// Approximate binary size for reading (`12.3 MiB`); the JSON keeps exact bytes.
pub(super) fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A device write category as the text report names it: the category JSON calls `user`
/// is the manifest and the other small files, which next to the user's key-value bytes of
/// the write amplification line would read as those.
fn category_label(c: IoCategory) -> &'static str {
    match c {
        IoCategory::User => "manifest/other",
        c => c.name(),
    }
}

fn zone_lines(r: &Report<'_>) -> Vec<String> {
    let (fs, db) = (&r.fs, &r.db);
    let zoned = r.file_system.is_none();
    let device = fs.device_written_total();
    let by_cat: Vec<String> = IoCategory::ALL
        .iter()
        .filter(|c| fs.device_written(**c) > 0)
        .map(|c| {
            format!(
                "{} {}",
                category_label(*c),
                human_bytes(fs.device_written(*c))
            )
        })
        .collect();
    let first = match &r.file_system {
        Some(name) => format!(
            "File system: {name} (plain files: no zones, no zone cleaning; the device \
             figures are the bytes written to and read from its files)"
        ),
        None => format!(
            "Zones: {} data zones ({} reserved): {} empty, {} active, {} full; free {:.1}% of {} usable",
            fs.data_zones,
            fs.reserved_zones,
            fs.empty_zones,
            fs.active_zones,
            fs.full_zones,
            fs.free_ratio * 100.0,
            human_bytes(fs.usable_bytes)
        ),
    };
    let mut lines = vec![
        first,
        format!(
            "Device: {} written ({}), {} read",
            human_bytes(device),
            by_cat.join(", "),
            human_bytes(fs.device_read_bytes.iter().sum())
        ),
        cache_line(db),
        format!(
            "Write amplification: LSM {:.3}, device {:.3}, total {:.3}",
            db.lsm_write_amp(),
            ratio(device, lsm_bytes(db)),
            ratio(device, db.user_bytes)
        ),
    ];
    if zoned {
        lines.push(format!(
            "Zone resets: {} ({} zero-copy), finishes {}",
            fs.zone_resets, fs.zero_copy_resets, fs.finishes
        ));
        lines.push(format!(
            "Cleaning: {} runs, {} victims, {} copied, {} compacted, blocked {:.3} ms ({} times)",
            fs.gc.runs,
            fs.gc.victims,
            human_bytes(fs.gc.copy_bytes),
            human_bytes(fs.gc.compacted_bytes),
            fs.gc.blocking_ns as f64 / 1e6,
            fs.gc.blocking_events
        ));
    }
    let z = ZoneFigures::of(db.records.iter());
    if z.compactions > 0 && zoned {
        lines.push(format!(
            "Compaction inputs: {} compactions, S_same {:.3}, S_inval {:.3}, {:.2} zones per compaction",
            z.compactions, z.s_same, z.s_inval, z.zones
        ));
    }
    lines.push(format!(
        "Write stalls: {:.3} ms ({} stops, {} delays, {} waits for the zone cleaner)",
        db.stall_ns as f64 / 1e6,
        db.stall_stops,
        db.stall_delays,
        db.space_stalls
    ));
    let policy = policy_means_us(fs, db);
    if !policy.is_empty() {
        let costs: Vec<String> = policy
            .iter()
            .map(|(name, us)| format!("{name} {us:.2}"))
            .collect();
        lines.push(format!("Policy cost (us per call): {}", costs.join(", ")));
    }
    if let Some(t) = &r.timing {
        lines.push(format!(
            "Device time ({} model): {:.3} ms modeled, dies busy {:.3} ms ({:.1}% of die time), \
             foreground writes waited {:.3} ms",
            t.preset,
            t.elapsed_ns as f64 / 1e6,
            t.busy_ns as f64 / 1e6,
            t.utilization() * 100.0,
            t.fg_write_wait_ns as f64 / 1e6
        ));
    }
    lines
}

// ---------------------------------------------------------------- JSON

/// The block cache's hit rate and fill, and the tables open.
fn cache_line(db: &DbStats) -> String {
    let Some(c) = db.block_cache else {
        return format!("Block cache: none; {} tables open", db.open_tables);
    };
    let lookups = c.hits + c.misses;
    let rate = if lookups == 0 {
        0.0
    } else {
        c.hits as f64 * 100.0 / lookups as f64
    };
    format!(
        "Block cache: {} of {} used, {} hits of {} lookups ({rate:.1}%); {} tables open",
        human_bytes(c.bytes),
        human_bytes(c.capacity),
        c.hits,
        lookups,
        db.open_tables
    )
}

pub fn to_json(r: &Report<'_>) -> Value {
    let mut top = Map::new();
    top.insert("scheme".into(), json!(r.scheme));
    // Only on another file system: a zoned run's report reads as before.
    if let Some(name) = &r.file_system {
        top.insert("file_system".into(), json!(name));
    }
    let zoned = r.file_system.is_none();
    top.insert("config".into(), r.config.clone());
    top.insert("workload".into(), json!(r.workload));
    top.insert("workloads".into(), phases_json(&r.measured.phases));
    top.insert("user".into(), user_json(&r.measured.phases, &r.db));
    top.insert("lsm".into(), lsm_json(&r.db));
    top.insert("cache".into(), cache_json(&r.db));
    top.insert(
        "device".into(),
        device_json(&r.fs, &r.db, r.timing.as_ref(), zoned),
    );
    if zoned {
        top.insert("gc".into(), gc_json(&r.fs));
        top.insert("compaction".into(), compaction_json(&r.db.records));
        top.insert("zone_invalid_ratios".into(), invalid_json(&r.invalid));
    } else {
        // The zone figures of the compactions have no zones to count.
        top.insert(
            "compaction".into(),
            json!({ "compactions": r.db.records.len() }),
        );
    }
    top.insert("latency_us".into(), latency_json(&r.measured.latency));
    if let Some(l) = &r.db.lifetime {
        top.insert("lifetime".into(), super::lifetime::to_json(l));
    }
    if blob_run(r) {
        top.insert("blob".into(), super::blob::to_json(&r.db, &r.fs));
    }
    if let Some(v) = &r.verify {
        top.insert(
            "verify".into(),
            json!({ "checked": v.checked, "mismatches": v.mismatches }),
        );
    }
    let policy = policy_means_us(&r.fs, &r.db);
    if !policy.is_empty() {
        let means = policy
            .into_iter()
            .map(|(name, us)| (name.into(), json!(us)));
        top.insert("policy_us".into(), Value::Object(means.collect()));
    }
    top.insert(
        "timeseries".into(),
        timeseries_json(&r.measured.samples, zoned),
    );
    if let Some(e) = &r.error {
        top.insert("error".into(), json!(e));
    }
    Value::Object(top)
}

fn phases_json(phases: &[PhaseResult]) -> Value {
    phases
        .iter()
        .map(|p| {
            let mut phase = json!({
                "name": p.name, "ops": p.ops, "put_ops": p.puts, "get_ops": p.gets,
                "scan_ops": p.scans, "found": p.found, "bytes": p.bytes,
                "seconds": p.seconds, "ops_per_sec": per_sec(p.ops, p.seconds),
            });
            add_virtual_seconds(&mut phase, p.virtual_seconds, p.ops);
            if let Value::Object(m) = &mut phase {
                if p.mixgraph {
                    m.extend(mixgraph_json(p));
                }
                // Only where there are some: the other phases' entries stay as they were.
                if p.deletes > 0 {
                    m.insert("delete_ops".into(), json!(p.deletes));
                }
                if p.threads > 1 {
                    m.insert("threads".into(), json!(p.threads));
                }
                if seekrandom(p) {
                    m.insert("seek_found".into(), json!(p.seek_found));
                    m.insert("scanned".into(), json!(p.scanned));
                }
                if let Some(l) = &p.ycsb {
                    m.insert("latency_us".into(), ycsb_json(l));
                }
            }
            phase
        })
        .collect()
}

/// A mixgraph phase's figures beyond the common ones: db_bench's summary, and the sine
/// rate's steps with `--sine-mix-rate`.
fn mixgraph_json(p: &PhaseResult) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("seek_found".into(), json!(p.seek_found));
    m.insert("scanned".into(), json!(p.scanned));
    m.insert("value_bytes".into(), json!(p.value_bytes));
    m.insert("avg_value_size".into(), json!(ratio(p.value_bytes, p.puts)));
    m.insert("avg_scan_length".into(), json!(ratio(p.scanned, p.scans)));
    if let Some(rate) = &p.rate {
        let s = &rate.sine;
        let steps: Vec<Value> = rate
            .steps
            .iter()
            .map(|&(t, r)| json!({ "t": t, "ops_per_sec": r }))
            .collect();
        m.insert(
            "rate".into(),
            json!({
                "sine_a": s.a, "sine_b": s.b, "sine_c": s.c, "sine_d": s.d,
                "interval_ms": s.interval_ms, "steps": steps,
            }),
        );
    }
    m
}

/// Deterministic mode: the virtual clock's seconds and the rate on it (`virtual_seconds`,
/// `virtual_ops_per_sec`).
fn add_virtual_seconds(v: &mut Value, seconds: Option<f64>, ops: u64) {
    if let (Some(s), Value::Object(m)) = (seconds, v) {
        m.insert("virtual_seconds".into(), json!(s));
        m.insert("virtual_ops_per_sec".into(), json!(per_sec(ops, s)));
    }
}

/// The user's totals over the phases that sent requests: an idle pause's time is not
/// the requests' (it would dilute the rate).
fn user_json(phases: &[PhaseResult], db: &DbStats) -> Value {
    let busy: Vec<&PhaseResult> = phases
        .iter()
        .filter(|p| p.name != zkv_bench::workload::IDLE)
        .collect();
    let phases = busy;
    let sum = |f: fn(&PhaseResult) -> u64| phases.iter().copied().map(f).sum::<u64>();
    let ops = sum(|p| p.ops);
    let seconds: f64 = phases.iter().map(|p| p.seconds).sum();
    let mut user = json!({
        "ops": ops, "bytes": db.user_bytes, "put_ops": sum(|p| p.puts),
        "get_ops": sum(|p| p.gets), "scan_ops": sum(|p| p.scans),
        "seconds": seconds, "ops_per_sec": per_sec(ops, seconds),
    });
    let virtual_seconds: Option<f64> = phases.iter().map(|p| p.virtual_seconds).sum();
    add_virtual_seconds(&mut user, virtual_seconds, ops);
    let deletes = sum(|p| p.deletes);
    if let (true, Value::Object(m)) = (deletes > 0, &mut user) {
        m.insert("delete_ops".into(), json!(deletes));
    }
    user
}

fn lsm_json(db: &DbStats) -> Value {
    let mut lsm = json!({
        "flush_bytes": db.flush_bytes, "compaction_bytes": db.compaction_write_bytes,
        "compaction_read_bytes": db.compaction_read_bytes,
        "blob_bytes": db.blob.bytes_written,
        "wal_bytes": db.wal_bytes, "manifest_bytes": db.manifest_bytes,
        "wa": db.lsm_write_amp(), "flushes": db.flushes, "compactions": db.compactions,
        "trivial_moves": db.trivial_moves, "trivial_move_bytes": db.trivial_move_bytes,
        "subcompactions": db.subcompactions,
        "compaction_seconds": db.compaction_micros as f64 / 1e6,
        "stall_ns": db.stall_ns, "stall_stops": db.stall_stops, "stall_delays": db.stall_delays,
        "space_stalls": db.space_stalls, "no_room_retries": db.no_room_retries,
    });
    // Only writes of several client threads join groups: the other reports stay as they
    // were.
    if let (true, Value::Object(m)) = (db.grouped_writes > 0, &mut lsm) {
        m.insert("grouped_writes".into(), json!(db.grouped_writes));
    }
    lsm
}

/// The block cache (zeros without one) and the table cache.
fn cache_json(db: &DbStats) -> Value {
    let c = db.block_cache.unwrap_or_default();
    json!({
        "block_cache_capacity": c.capacity, "block_cache_bytes": c.bytes,
        "block_cache_hits": c.hits, "block_cache_misses": c.misses,
        "open_tables": db.open_tables,
    })
}

/// Mean µs per call of each policy that was called: placement decisions, picker orderings
/// (while picking a compaction) and neighbour computations (new SSTs' hints, and the
/// cleaner's `hint_of`).
fn policy_means_us(fs: &FsStats, db: &DbStats) -> Vec<(&'static str, f64)> {
    [
        ("placement", fs.placement_decisions, fs.placement_mean_us()),
        ("picker", db.picker_calls, db.picker_mean_us()),
        ("neighbors", db.neighbors_calls, db.neighbors_mean_us()),
        ("prediction", db.prediction_calls, db.prediction_mean_us()),
    ]
    .into_iter()
    .filter(|&(_, calls, _)| calls > 0)
    .map(|(name, _, us)| (name, us))
    .collect()
}

/// Without zones (`zoned` false) only the bytes and the write amplifications.
fn device_json(fs: &FsStats, db: &DbStats, timing: Option<&TimingReport>, zoned: bool) -> Value {
    let written = fs.device_written_total();
    let by_cat: Map<String, Value> = IoCategory::ALL
        .iter()
        .map(|c| (c.name().to_string(), json!(fs.device_written(*c))))
        .collect();
    let mut device = json!({
        "write_bytes": written, "read_bytes": fs.device_read_bytes.iter().sum::<u64>(),
        "write_bytes_by_category": by_cat,
        "wa": ratio(written, lsm_bytes(db)), "total_wa": ratio(written, db.user_bytes),
    });
    if let (true, Value::Object(m)) = (zoned, &mut device) {
        let zones = json!({
            "zone_resets": fs.zone_resets, "zero_copy_resets": fs.zero_copy_resets,
            "finishes": fs.finishes, "free_ratio": fs.free_ratio,
            "usable_bytes": fs.usable_bytes, "free_bytes": fs.free_bytes,
        });
        if let Value::Object(zones) = zones {
            m.extend(zones);
        }
    }
    if let (Some(t), Value::Object(m)) = (timing, &mut device) {
        m.insert("busy_ns".into(), json!(t.busy_ns));
        m.insert("timing".into(), json!(t));
    }
    device
}

fn gc_json(fs: &FsStats) -> Value {
    let gc = &fs.gc;
    json!({
        "runs": gc.runs, "victims": gc.victims, "copy_bytes": gc.copy_bytes,
        "compacted_bytes": gc.compacted_bytes, "resets": gc.resets,
        "blocking_ns": gc.blocking_ns, "blocking_events": gc.blocking_events,
        "victim_copy_bytes": gc.victim_copy_bytes,
    })
}

/// Means over compaction records of the zone figures of DESIGN.md section 7.
struct ZoneFigures {
    compactions: usize,
    s_same: f64,
    s_inval: f64,
    zones: f64,
    invalidated_per_zone: f64,
}

impl ZoneFigures {
    fn of<'r>(records: impl Iterator<Item = &'r CompactionRecord>) -> ZoneFigures {
        let mut f = ZoneFigures {
            compactions: 0,
            s_same: 0.0,
            s_inval: 0.0,
            zones: 0.0,
            invalidated_per_zone: 0.0,
        };
        for r in records {
            f.compactions += 1;
            f.s_same += r.s_same;
            f.s_inval += r.s_inval;
            f.zones += r.zones() as f64;
            let bytes: u64 = r.zone_bytes.iter().map(|(_, b)| b).sum();
            f.invalidated_per_zone += ratio(bytes, r.zones() as u64);
        }
        if f.compactions > 0 {
            let n = f.compactions as f64;
            f.s_same /= n;
            f.s_inval /= n;
            f.zones /= n;
            f.invalidated_per_zone /= n;
        }
        f
    }

    /// The figures as JSON; means are left out when no compaction ran (they have no value).
    fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("compactions".into(), json!(self.compactions));
        if self.compactions > 0 {
            m.insert("s_same".into(), json!(self.s_same));
            m.insert("s_inval".into(), json!(self.s_inval));
            m.insert("zones_per_compaction".into(), json!(self.zones));
            m.insert(
                "invalidated_bytes_per_zone".into(),
                json!(self.invalidated_per_zone),
            );
        }
        m
    }
}

/// Overall and per start level (the level a compaction's first inputs came from).
fn compaction_json(records: &[CompactionRecord]) -> Value {
    let mut top = ZoneFigures::of(records.iter()).to_json();
    let levels: BTreeSet<usize> = records.iter().map(|r| r.level).collect();
    let per_level: Vec<Value> = levels
        .into_iter()
        .map(|level| {
            let mut m = ZoneFigures::of(records.iter().filter(|r| r.level == level)).to_json();
            m.insert("level".into(), json!(level));
            Value::Object(m)
        })
        .collect();
    top.insert("per_level".into(), Value::Array(per_level));
    Value::Object(top)
}

/// The distribution of DESIGN.md section 7, taken at the end of the run: every full
/// zone's invalid bytes / capacity, sorted.
fn invalid_json(d: &InvalidRatios) -> Value {
    json!({ "full_zones": d.len(), "mean": d.mean(), "ratios": d.ratios })
}

/// The latency classes, by their names in the report.
fn histograms(l: &Latency) -> [(&'static str, &Histogram<u64>); 4] {
    [
        ("put", &l.put),
        ("get", &l.get),
        ("scan", &l.scan),
        ("delete", &l.delete),
    ]
}

fn latency_json(l: &Latency) -> Value {
    let mut m = Map::new();
    for (name, h) in histograms(l) {
        if !h.is_empty() {
            m.insert(name.into(), percentiles(h));
        }
    }
    Value::Object(m)
}

/// A YCSB phase's latencies by YCSB's operation names, each as [`percentiles`] with `min`
/// (YCSB's Operations, AverageLatency, MinLatency, MaxLatency, 95th and
/// 99thPercentileLatency are `count`, `mean`, `min`, `max`, `p95`, `p99`).
fn ycsb_json(l: &OpLatency) -> Value {
    let kinds = l.0.iter().filter(|(_, h)| !h.is_empty()).map(|(kind, h)| {
        let mut v = percentiles(h);
        if let Value::Object(m) = &mut v {
            m.insert("min".into(), json!(h.min() as f64 / 1000.0));
        }
        (kind.to_string(), v)
    });
    Value::Object(kinds.collect())
}

fn percentiles(h: &Histogram<u64>) -> Value {
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    json!({
        "count": h.len(), "mean": h.mean() / 1000.0, "p50": us(0.5), "p95": us(0.95),
        "p99": us(0.99), "p999": us(0.999), "max": h.max() as f64 / 1000.0,
    })
}

/// Without zones (`zoned` false) only the bytes written and the stall time.
fn timeseries_json(samples: &[Sample], zoned: bool) -> Value {
    samples
        .iter()
        .map(|s| {
            if !zoned {
                return json!({
                    "t": s.t, "phase": s.phase, "device_write_bytes": s.device_write_bytes,
                    "stall_ns": s.stall_ns,
                });
            }
            json!({
                "t": s.t, "phase": s.phase, "free_ratio": s.free_ratio,
                "gc_copy_bytes": s.gc_copy_bytes, "device_write_bytes": s.device_write_bytes,
                "zone_resets": s.zone_resets, "stall_ns": s.stall_ns,
                "full_zones": s.full_zones, "invalid_ratios": s.invalid_ratios,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_line_has_db_bench_layout() {
        let r = PhaseResult {
            name: "fillrandom".into(),
            ops: 1000,
            puts: 1000,
            bytes: 1_048_576,
            seconds: 0.5,
            client_seconds: 0.5,
            threads: 1,
            ..PhaseResult::default()
        };
        assert_eq!(
            result_line(&r),
            "fillrandom   :     500.000 micros/op 2000 ops/sec 0.500 seconds 1000 operations;    2.0 MB/s"
        );
        // Four threads of 0.5 s each: ops/sec over the phase, micros/op per thread (db_bench's).
        let four = PhaseResult {
            client_seconds: 2.0,
            threads: 4,
            ..r
        };
        assert_eq!(
            result_line(&four),
            "fillrandom   :    2000.000 micros/op 2000 ops/sec 0.500 seconds 1000 operations;    2.0 MB/s"
        );
    }

    #[test]
    fn human_bytes_are_short() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
