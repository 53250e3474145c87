//! The `rocksdb` scheme's runs: RocksDB's own db_bench (`ZKV_DB_BENCH`, else `db_bench` on
//! `PATH`) on a new temporary directory, with the run's flags as db_bench's
//! (`BenchArgs::db_bench_plan`), and its output read into a report shaped like a zkv bench
//! report where RocksDB has the figures: `user`, `lsm.wa` (zkv's definition: flush and
//! compaction bytes, blob files included, over the user's key and value bytes), `lsm.stall_ns`,
//! `latency_us` (db_bench's `--histogram` tables, timed by its client as zkv's are). The zone
//! figures are absent, never zero.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Map, Value};
use zkv_bench::DbBenchWorkload;

use super::super::bench::{BenchArgs, DbBenchPlan, Plan};
use super::super::error::{CliError, CliResult};
use super::super::Out;

/// The environment variable that names the db_bench to run.
pub(crate) const ENV: &str = "ZKV_DB_BENCH";

const INSTALL: &str = "install RocksDB's tools (scripts/install-db-bench.sh, or apt-get \
                       install rocksdb-tools), or set ZKV_DB_BENCH to a db_bench";

/// A checked db_bench run: the program and what it runs.
#[derive(Debug)]
pub(crate) struct DbBench {
    program: PathBuf,
    plan: DbBenchPlan,
}

/// The db_bench run of a checked zkv run, with the program found, before any run starts.
pub(crate) fn prepare(args: &BenchArgs, plan: &Plan) -> CliResult<DbBench> {
    let plan = args.db_bench_plan(plan)?;
    Ok(DbBench {
        program: find_program()?,
        plan,
    })
}

fn find_program() -> CliResult<PathBuf> {
    if let Some(path) = std::env::var_os(ENV) {
        let path = PathBuf::from(path);
        if executable(&path) {
            return Ok(path);
        }
        return Err(CliError::invalid(format!(
            "{ENV}={}: not an executable file; {INSTALL}",
            path.display()
        )));
    }
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .map(|dir| dir.join("db_bench"))
        .find(|p| executable(p))
        .ok_or_else(|| CliError::invalid(format!("db_bench is not on PATH; {INSTALL}")))
}

#[cfg(unix)]
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn executable(path: &Path) -> bool {
    path.is_file()
}

/// Runs db_bench on a new temporary directory (removed afterwards, whatever happens),
/// printing its result lines. Returns the report and, apart, the run's failure (a failed
/// run still has a report, with its `error`); an error before db_bench started (no
/// temporary directory) is returned as such.
pub(crate) fn execute(
    run: DbBench,
    out: &mut Out,
    context: &str,
) -> CliResult<(Value, Option<CliError>)> {
    let dir = temp_dir()?;
    let mut command = vec![run.program.display().to_string()];
    command.extend(run.plan.flags.iter().cloned());
    command.push(format!("--db={}", dir.path().join("db").display()));
    out.line(format!("{context}: {}", command.join(" ")))?;
    out.flush()?;
    let output = Command::new(&run.program)
        .args(&command[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: could not start: {e}", run.program.display()));
    drop(dir);
    let mut report = json!({
        "scheme": "rocksdb", "workload": run.plan.workload,
        "db_bench": { "command": command },
    });
    let read = output.and_then(|o| succeeded(&o).map(|()| o));
    let parsed = read.and_then(|o| Parsed::read(&o, &run.plan));
    match parsed {
        Ok(p) => {
            for line in &p.lines {
                out.line(line)?;
            }
            merge(&mut report, p.report(&run.plan));
            Ok((report, None))
        }
        Err(e) => {
            merge(&mut report, json!({ "error": e }));
            Ok((report, Some(CliError::invalid(format!("rocksdb: {e}")))))
        }
    }
}

/// A directory for the database: on /dev/shm where there is one, as scripts/fidelity.sh
/// runs db_bench, so that neither engine waits for a disk.
fn temp_dir() -> CliResult<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    tempfile::Builder::new()
        .prefix("zkv-rocksdb-")
        .tempdir_in(&base)
        .map_err(|e| {
            CliError::io(
                format!("rocksdb: a temporary directory in {}", base.display()),
                e,
            )
        })
}

/// db_bench's exit: a failure with the tail of its stderr.
fn succeeded(o: &Output) -> Result<(), String> {
    if o.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = (stderr.split(['\n', '\r']).map(str::trim))
        .filter(|l| !l.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
    Err(format!("db_bench failed ({}): {tail}", o.status))
}

/// `more`'s entries into `report`'s, objects into objects.
fn merge(report: &mut Value, more: Value) {
    match (report, more) {
        (Value::Object(r), Value::Object(m)) => {
            for (key, value) in m {
                match r.get_mut(&key) {
                    Some(old) => merge(old, value),
                    None => {
                        r.insert(key, value);
                    }
                }
            }
        }
        (report, more) => *report = more,
    }
}

/// One workload's result line: `fillrandom : 10.875 micros/op 91862 ops/sec 2.177
/// seconds 200000 operations; ...`.
#[derive(Debug, PartialEq)]
struct Phase {
    name: String,
    ops: u64,
    seconds: f64,
}

/// A latency histogram of db_bench's statistics, in microseconds.
#[derive(Debug, PartialEq)]
struct Latency {
    count: u64,
    mean: f64,
    p50: f64,
    p95: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

/// The statistics counters the report is made of (`rocksdb.NAME COUNT : N`).
const COUNTERS: [&str; 5] = [
    "rocksdb.number.keys.written",
    "rocksdb.flush.write.bytes",
    "rocksdb.compact.write.bytes",
    "rocksdb.stall.micros",
    "rocksdb.blobdb.blob.file.bytes.written",
];

/// What db_bench's output says.
#[derive(Debug)]
struct Parsed {
    version: String,
    /// The result lines, as db_bench printed them.
    lines: Vec<String>,
    phases: Vec<Phase>,
    counters: [u64; COUNTERS.len()],
    put: Option<Latency>,
    get: Option<Latency>,
}

impl Parsed {
    fn read(o: &Output, plan: &DbBenchPlan) -> Result<Parsed, String> {
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        Self::parse(&stdout, &stderr, &plan.workload).map_err(|e| format!("db_bench's output: {e}"))
    }

    fn parse(stdout: &str, stderr: &str, workload: &str) -> Result<Parsed, String> {
        let version = version(stderr)
            .or_else(|| version(stdout))
            .ok_or("no \"RocksDB: version X.Y.Z\" line")?;
        let (mut lines, mut phases) = (Vec::new(), Vec::new());
        for name in workload.split(',') {
            let line = result_line(stdout, name)
                .ok_or_else(|| format!("no result line of {name} (\"{name} : ... micros/op\")"))?;
            phases.push(phase(name, line)?);
            lines.push(line.trim().to_string());
        }
        let mut counters = [0; COUNTERS.len()];
        for (n, name) in counters.iter_mut().zip(COUNTERS) {
            *n = counter(stdout, name)?;
        }
        Ok(Parsed {
            version,
            lines,
            phases,
            counters,
            put: Latency::of(&histograms(stdout, "write")?),
            get: Latency::of(&histograms(stdout, "read")?),
        })
    }

    /// The report's figures, as zkv's report names them.
    fn report(&self, plan: &DbBenchPlan) -> Value {
        let [keys, flush, compaction, stall_us, blob] = self.counters;
        let deletes: u64 = (self.phases.iter())
            .filter(|p| DbBenchWorkload::from_name(&p.name) == Some(DbBenchWorkload::DeleteRandom))
            .map(|p| p.ops)
            .sum();
        let puts = keys.saturating_sub(deletes);
        let user_bytes = puts.saturating_mul(plan.put_bytes);
        // RocksDB's flush and compaction counters take in the blob files they write.
        let written = flush.saturating_add(compaction);
        let wa = if user_bytes == 0 {
            0.0
        } else {
            written as f64 / user_bytes as f64
        };
        let mut lsm =
            json!({ "wa": wa, "stall_ns": stall_us.saturating_mul(1000), "blob_bytes": blob });
        if let (0, Value::Object(m)) = (blob, &mut lsm) {
            m.insert("flush_bytes".into(), json!(flush));
            m.insert("compaction_bytes".into(), json!(compaction));
        }
        let ops: u64 = self.phases.iter().map(|p| p.ops).sum();
        let seconds: f64 = self.phases.iter().map(|p| p.seconds).sum();
        let statistics: Map<String, Value> = (COUNTERS.iter().zip(&self.counters))
            .map(|(name, n)| ((*name).to_string(), json!(n)))
            .collect();
        json!({
            "db_bench": { "version": self.version, "statistics": statistics },
            "workloads": self.phases.iter().map(Phase::json).collect::<Vec<_>>(),
            "user": {
                "ops": ops, "seconds": seconds, "ops_per_sec": per_sec(ops, seconds),
                "put_ops": puts, "bytes": user_bytes,
            },
            "lsm": lsm,
            "latency_us": latency_json(&[("put", &self.put), ("get", &self.get)]),
        })
    }
}

impl Phase {
    fn json(&self) -> Value {
        json!({
            "name": self.name, "ops": self.ops, "seconds": self.seconds,
            "ops_per_sec": per_sec(self.ops, self.seconds),
        })
    }
}

fn per_sec(ops: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        ops as f64 / seconds
    } else {
        0.0
    }
}

fn latency_json(kinds: &[(&str, &Option<Latency>)]) -> Value {
    let present = kinds
        .iter()
        .filter_map(|(name, l)| Some((*name, l.as_ref()?)));
    let m: Map<String, Value> = present
        .map(|(name, l)| {
            let v = json!({
                "count": l.count, "mean": l.mean, "p50": l.p50, "p95": l.p95,
                "p99": l.p99, "p999": l.p999, "max": l.max,
            });
            (name.to_string(), v)
        })
        .collect();
    Value::Object(m)
}

/// `RocksDB:    version 7.8.3` (db_bench's header), or `RocksDB version: 7.8.3`.
fn version(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("RocksDB") && l.contains("version"))
        .find_map(|l| l.split_whitespace().last())
        .map(str::to_string)
}

/// The line of workload `name`'s result: `name`, spaces, `:`, and `micros/op` further on.
fn result_line<'a>(stdout: &'a str, name: &str) -> Option<&'a str> {
    stdout.lines().find(|l| {
        let rest = l.strip_prefix(name).map(str::trim_start);
        rest.is_some_and(|r| r.starts_with(':') && r.contains("micros/op"))
    })
}

fn phase(name: &str, line: &str) -> Result<Phase, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let before = |unit: &str| -> Option<&str> {
        let at = words.iter().position(|w| *w == unit)?;
        words.get(at.checked_sub(1)?).copied()
    };
    let garbled = || format!("cannot read {name}'s result line {:?}", line.trim());
    let ops = before("operations;").and_then(|w| w.parse().ok());
    let seconds = before("seconds").and_then(|w| w.parse::<f64>().ok());
    match (ops, seconds) {
        (Some(ops), Some(seconds)) if seconds.is_finite() && seconds >= 0.0 => Ok(Phase {
            name: name.to_string(),
            ops,
            seconds,
        }),
        _ => Err(garbled()),
    }
}

/// The line of statistic `name` (`rocksdb.NAME ...`), its words after the name.
fn statistic<'a>(stdout: &'a str, name: &str) -> Option<Vec<&'a str>> {
    stdout.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some(name)).then(|| words.collect())
    })
}

/// A counter: `rocksdb.NAME COUNT : N`.
fn counter(stdout: &str, name: &str) -> Result<u64, String> {
    let words = statistic(stdout, name)
        .ok_or_else(|| format!("no \"{name} COUNT : N\" line (statistics, --statistics=1)"))?;
    match words[..] {
        ["COUNT", ":", n] => n.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("cannot read {name}: {:?}", words.join(" ")))
}

/// One of db_bench's `--histogram` tables (`Microseconds per write:`): its count, mean,
/// extremes, and its non-empty buckets `(left, right] count`.
#[derive(Debug, Default, PartialEq)]
struct Histogram {
    count: u64,
    mean: f64,
    min: f64,
    max: f64,
    buckets: Vec<(u64, u64, u64)>,
}

/// Every table of operations of `kind` (`write`, `read`), one per workload that had some.
fn histograms(stdout: &str, kind: &str) -> Result<Vec<Histogram>, String> {
    let title = format!("Microseconds per {kind}:");
    let mut lines = stdout.lines();
    let mut found = Vec::new();
    while lines.by_ref().any(|l| l.trim() == title) {
        let table: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.trim().is_empty())
            .collect();
        found.push(
            histogram(&table).ok_or_else(|| format!("cannot read the table after {title:?}"))?,
        );
    }
    Ok(found)
}

/// `Count: N Average: A StdDev: S`, `Min: m Median: x Max: M`, `Percentiles: ...`, a rule,
/// then the buckets.
fn histogram(table: &[&str]) -> Option<Histogram> {
    let words: Vec<&str> = table
        .iter()
        .take(2)
        .flat_map(|l| l.split_whitespace())
        .collect();
    let field = |key: &str| -> Option<f64> {
        let at = words.iter().position(|w| *w == key)?;
        words.get(at + 1)?.parse().ok()
    };
    let buckets = table
        .iter()
        .skip(4)
        .map(|l| bucket(l))
        .collect::<Option<_>>()?;
    Some(Histogram {
        count: field("Count:")? as u64,
        mean: field("Average:")?,
        min: field("Min:")?,
        max: field("Max:")?,
        buckets,
    })
}

/// `(       1,       2 ]    72717  36.358%  41.285% #######`.
fn bucket(line: &str) -> Option<(u64, u64, u64)> {
    let line = line.trim_start().strip_prefix(['[', '('])?;
    let (left, rest) = line.split_once(',')?;
    let (right, rest) = rest.split_once(']')?;
    let count = rest.split_whitespace().next()?;
    Some((
        left.trim().parse().ok()?,
        right.trim().parse().ok()?,
        count.parse().ok()?,
    ))
}

impl Latency {
    /// The tables of several workloads as one, as zkv's latency is over all of a run's
    /// operations; none without any operation.
    fn of(tables: &[Histogram]) -> Option<Latency> {
        let count: u64 = tables.iter().map(|h| h.count).sum();
        if count == 0 {
            return None;
        }
        let sum: f64 = tables.iter().map(|h| h.mean * h.count as f64).sum();
        let mut buckets = std::collections::BTreeMap::new();
        for (left, right, n) in tables.iter().flat_map(|h| &h.buckets) {
            *buckets.entry((*left, *right)).or_insert(0u64) += n;
        }
        let buckets: Vec<_> = buckets.into_iter().collect();
        let min = tables.iter().map(|h| h.min).fold(f64::INFINITY, f64::min);
        let max = tables.iter().map(|h| h.max).fold(0.0, f64::max);
        let at = |p: f64| percentile(&buckets, count, p).clamp(min, max);
        Some(Latency {
            count,
            mean: sum / count as f64,
            p50: at(0.5),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
            max,
        })
    }
}

/// RocksDB's `HistogramStat::Percentile`: the bucket where the count reaches the fraction
/// `p`, and linearly within it.
fn percentile(buckets: &[((u64, u64), u64)], count: u64, p: f64) -> f64 {
    let threshold = count as f64 * p;
    let mut below = 0u64;
    for &((left, right), n) in buckets {
        if (below + n) as f64 >= threshold {
            let pos = (threshold - below as f64) / n.max(1) as f64;
            return left as f64 + (right - left) as f64 * pos;
        }
        below += n;
    }
    f64::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    /// db_bench 7.8.3's output of a small fillrandom, cut to the lines read here and the
    /// statistics' neighbours.
    const STDOUT: &str = include_str!("../../../tests/data/db_bench_7.8.3_fillrandom.txt");
    const STDERR: &str = "RocksDB:    version 7.8.3\nDate:       Thu Nov 26 20:37:30 2026\n";

    #[test]
    fn real_output_reads_as_zkv_figures() {
        let p = Parsed::parse(STDOUT, STDERR, "fillrandom").unwrap();
        assert_eq!(p.version, "7.8.3");
        assert_eq!(
            p.phases,
            [Phase {
                name: "fillrandom".into(),
                ops: 200_000,
                seconds: 2.653
            }]
        );
        let plan = DbBenchPlan {
            flags: Vec::new(),
            put_bytes: 1016,
            workload: "fillrandom".into(),
        };
        let r = p.report(&plan);
        // (205160826 + 798427774) / (200000 × 1016)
        let wa = r["lsm"]["wa"].as_f64().unwrap();
        assert!((wa - 1_003_588_600.0 / 203_200_000.0).abs() < 1e-9, "{wa}");
        assert_eq!(r["lsm"]["stall_ns"], 1_624_943_000u64);
        assert_eq!(r["lsm"]["flush_bytes"], 205_160_826u64);
        assert_eq!(r["user"]["ops"], 200_000);
        // db_bench's own percentiles of the table: P50 2.19, P99 39.04, P99.9 2235.16.
        let put = &r["latency_us"]["put"];
        let near = |key: &str, want: f64| (put[key].as_f64().unwrap() - want).abs() < 0.005;
        assert!(
            near("p50", 2.19)
                && near("p99", 39.04)
                && near("p999", 2235.16)
                && near("max", 20133.0),
            "{put}"
        );
        assert_eq!(put["count"], 200_000);
        assert!(r["latency_us"].get("get").is_none(), "no gets counted");
        assert_eq!(r["db_bench"]["version"], "7.8.3");
        assert!(r.get("device").is_none() && r.get("gc").is_none());
    }

    #[test]
    fn deletes_are_not_user_bytes_and_blob_runs_keep_one_total() {
        let p = Parsed {
            version: "7.8.3".into(),
            lines: Vec::new(),
            phases: vec![
                Phase {
                    name: "fillseq".into(),
                    ops: 100,
                    seconds: 1.0,
                },
                Phase {
                    name: "deleterandom".into(),
                    ops: 40,
                    seconds: 1.0,
                },
            ],
            counters: [140, 1000, 500, 0, 300],
            put: None,
            get: None,
        };
        let plan = DbBenchPlan {
            flags: Vec::new(),
            put_bytes: 10,
            workload: "fillseq,deleterandom".into(),
        };
        let r = p.report(&plan);
        assert_eq!(r["user"]["put_ops"], 100);
        assert_eq!(r["lsm"]["wa"], 1.5);
        assert_eq!(r["user"]["ops_per_sec"], 70.0);
        // With blob files RocksDB's flush and compaction counters hold them: no split.
        assert!(r["lsm"].get("flush_bytes").is_none(), "{r}");
        assert_eq!(r["lsm"]["blob_bytes"], 300);
    }

    #[test]
    fn latency_tables_of_several_workloads_merge_as_rocksdb_computes_percentiles() {
        let table = |mean, min, max, buckets| Histogram {
            count: 0,
            mean,
            min,
            max,
            buckets,
        };
        let a = Histogram {
            count: 90,
            ..table(0.5, 0.0, 1.0, vec![(0, 1, 90)])
        };
        let b = Histogram {
            count: 10,
            ..table(1.5, 1.0, 2.0, vec![(1, 2, 10)])
        };
        let l = Latency::of(&[a, b]).unwrap();
        assert_eq!(l.count, 100);
        assert!((l.mean - 0.6).abs() < 1e-12, "{l:?}");
        // The 99th of 100 lies 9/10 into (1, 2].
        assert!((l.p99 - 1.9).abs() < 1e-12, "{l:?}");
        assert!((l.p50 - 50.0 / 90.0).abs() < 1e-12, "{l:?}");
        assert_eq!(l.max, 2.0);
        assert!(Latency::of(&[]).is_none());
    }

    /// The output with `from` replaced, which it must hold.
    fn garbled(from: &str, to: &str) -> String {
        assert!(STDOUT.contains(from), "{from}");
        STDOUT.replace(from, to)
    }

    #[test]
    fn garbled_or_missing_lines_are_errors_that_name_them() {
        // db_bench 7.8 prints its header on stderr; the version is read from stdout too.
        let header = format!("{STDERR}{STDOUT}");
        assert!(Parsed::parse(&header, "", "fillrandom").is_ok());
        let e = Parsed::parse(STDOUT, "no header", "fillrandom").unwrap_err();
        assert!(e.contains("no \"RocksDB: version X.Y.Z\" line"), "{e}");
        let e = Parsed::parse("", STDERR, "fillrandom").unwrap_err();
        assert!(e.contains("no result line of fillrandom"), "{e}");
        let e = Parsed::parse(STDOUT, STDERR, "fillrandom,overwrite").unwrap_err();
        assert!(e.contains("overwrite"), "{e}");
        let bad = garbled("2.653 seconds", "x.y seconds");
        let e = Parsed::parse(&bad, STDERR, "fillrandom").unwrap_err();
        assert!(e.contains("cannot read fillrandom's result line"), "{e}");
        let bad = garbled(
            "flush.write.bytes COUNT : 205160826",
            "flush.write.bytes COUNT : lots",
        );
        let e = Parsed::parse(&bad, STDERR, "fillrandom").unwrap_err();
        assert!(e.contains("cannot read rocksdb.flush.write.bytes"), "{e}");
        let bad = garbled("rocksdb.stall.micros", "rocksdb.stall.mic");
        let e = Parsed::parse(&bad, STDERR, "fillrandom").unwrap_err();
        assert!(
            e.contains("no \"rocksdb.stall.micros COUNT : N\" line"),
            "{e}"
        );
        let bad = garbled("(      10,      15 ]", "(      10,  fifteen ]");
        let e = Parsed::parse(&bad, STDERR, "fillrandom").unwrap_err();
        assert!(
            e.contains("the table after \"Microseconds per write:\""),
            "{e}"
        );
    }
}
