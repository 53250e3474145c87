//! End-to-end tests of `zkv compare`'s `rocksdb` scheme with a fake db_bench (a shell script
//! chosen through `ZKV_DB_BENCH`) that writes down its arguments and prints real db_bench
//! 7.8.3 output: the flags it gets, the table and JSON made of its output, and the failures
//! (a flag without an equivalent, a failing or garbled db_bench, none installed).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// Real db_bench output of a small fillrandom (stdout; its header goes to stderr).
const OUTPUT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/db_bench_7.8.3_fillrandom.txt"
);

/// A fake db_bench in a temporary directory: `body` runs after the arguments are appended,
/// one a line and `--` after each run, to `args`.
struct Fake {
    dir: TempDir,
}

impl Fake {
    fn new(body: &str) -> Fake {
        let dir = TempDir::new().unwrap();
        let args = dir.path().join("args");
        let script = format!(
            "#!/bin/sh\n{{ for a in \"$@\"; do echo \"$a\"; done; echo --; }} >> '{}'\n{body}\n",
            args.display()
        );
        let path = dir.path().join("db_bench");
        std::fs::write(&path, script).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(&path, mode).unwrap();
        Fake { dir }
    }

    /// db_bench 7.8.3 as it answers a good run.
    fn real() -> Fake {
        Fake::new(&format!(
            "echo 'RocksDB:    version 7.8.3' >&2\ncat '{OUTPUT}'"
        ))
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("db_bench")
    }

    /// Every run's arguments.
    fn runs(&self) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(self.dir.path().join("args")).unwrap_or_default();
        let runs = text.split_terminator("--\n");
        runs.map(|r| r.lines().map(String::from).collect())
            .collect()
    }
}

/// `zkv compare` with `ZKV_DB_BENCH` set to `db_bench`.
fn compare_with(db_bench: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(ZKV);
    cmd.args(args).env("ZKV_DB_BENCH", db_bench);
    zkv_command(cmd)
}

/// A small comparison of `schemes` (fillrandom unless `extra` gives `--workload`).
fn args(schemes: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["compare", "--schemes", schemes];
    args.extend_from_slice(&SMALL_STORE);
    args.extend_from_slice(&["--num", "2000"]);
    if !extra.contains(&"--workload") {
        args.extend_from_slice(&["--workload", "fillrandom"]);
    }
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

/// The one error line of a failed run, exit code 1.
fn error_line(r: &Run) -> String {
    one_error(r, 1, "compare")
}

fn cells<'a>(stdout: &'a str, row: &str) -> Vec<&'a str> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(row))
        .unwrap_or_else(|| {
            panic!("no row {row:?} in {stdout}");
        });
    line[row.len()..].split_whitespace().collect()
}

#[test]
fn db_bench_runs_with_the_runs_flags_next_to_the_zkv_schemes() {
    let _serial = serial();
    let fake = Fake::real();
    let out = TempDir::new().unwrap();
    let json = out.path().join("cmp.json");
    let charts = out.path().join("charts");
    let (json_s, charts_s) = (json.to_str().unwrap(), charts.to_str().unwrap());
    let extra = [
        "--disable-wal",
        "--wait-for-compaction",
        "--mode",
        "deterministic",
        "--verify",
        "--seed",
        "7",
        "--json",
        json_s,
        "--out",
        charts_s,
    ];
    let a = args("baseline,posix,rocksdb,rocksdb:picker=min-overlap", &extra);
    let r = compare_with(&fake.path(), &refs(&a));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let runs = fake.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let first = &runs[0];
    for flag in [
        "--benchmarks=fillrandom,waitforcompaction,stats",
        "--num=2000",
        "--key_size=16",
        "--value_size=200",
        "--seed=7",
        "--write_buffer_size=65536",
        "--target_file_size_base=65536",
        "--max_bytes_for_level_base=262144",
        "--max_bytes_for_level_multiplier=10",
        "--level0_file_num_compaction_trigger=4",
        "--compaction_pri=0",
        "--compression_type=none",
        "--disable_wal=1",
        "--bloom_bits=10",
        "--max_background_compactions=1",
        "--max_background_flushes=1",
        "--allow_concurrent_memtable_write=1",
        "--statistics=1",
        "--histogram=1",
    ] {
        assert!(first.iter().any(|a| a == flag), "{flag} not in {first:?}");
    }
    assert!(
        runs[1].iter().any(|a| a == "--compaction_pri=3"),
        "{runs:?}"
    );
    // No zkv-only flag reaches db_bench.
    assert!(!first
        .iter()
        .any(|a| a.contains("zone") || a.contains("verify")));
    // The database was in a temporary directory, removed after the run.
    let db = first.iter().find_map(|a| a.strip_prefix("--db=")).unwrap();
    if Path::new("/dev/shm").is_dir() {
        assert!(db.starts_with("/dev/shm/zkv-rocksdb-"), "{db}");
    }
    assert!(!Path::new(db).parent().unwrap().exists(), "{db} is left");

    let stdout = &r.stdout;
    assert!(
        stdout.contains("fillrandom   :      13.264 micros/op"),
        "{stdout}"
    );
    let header = stdout.lines().find(|l| l.starts_with("metric")).unwrap();
    assert!(header.contains("#3 rocksdb") && header.contains("#4 rocksdb:picker=min-overlap"));
    // 200000 operations in 2.653 s.
    assert_eq!(cells(stdout, "user ops/s")[2], "75386", "{stdout}");
    // (205160826 + 798427774) / (200000 × (16 + 200)): zkv's definition, over user bytes.
    assert_eq!(cells(stdout, "LSM WA")[2], "23.231", "{stdout}");
    assert_eq!(cells(stdout, "p99 put latency (us)")[2], "39.0");
    for zone_row in [
        "device WA",
        "cleaning copy (MiB)",
        "zone resets",
        "verify mismatches",
    ] {
        let c = cells(stdout, zone_row);
        assert_eq!(&c[2..4], ["-", "-"], "{zone_row}: {stdout}");
    }

    let report = read_json(&json);
    let rocksdb = &report["runs"][2];
    assert_eq!(rocksdb["scheme"], "rocksdb");
    assert_eq!(rocksdb["label"], "rocksdb");
    assert_eq!(rocksdb["db_bench"]["version"], "7.8.3");
    let command = rocksdb["db_bench"]["command"].as_array().unwrap();
    assert_eq!(command[0], fake.path().display().to_string());
    assert_eq!(command.len(), first.len() + 1);
    assert_eq!(rocksdb["user"]["bytes"], 200_000 * 216);
    assert_eq!(rocksdb["lsm"]["stall_ns"], 1_624_943_000u64);
    for absent in [
        "device",
        "gc",
        "zone_invalid_ratios",
        "timeseries",
        "verify",
    ] {
        assert!(rocksdb.get(absent).is_none(), "{absent}: {rocksdb}");
    }
    let ratios = std::fs::read_to_string(charts.join("invalid_ratios.svg")).unwrap();
    assert!(
        ratios.contains("\nrocksdb\n"),
        "the legend names every scheme"
    );
}

#[test]
fn flags_without_a_db_bench_equivalent_are_refused_before_any_run() {
    let _serial = serial();
    let fake = Fake::real();
    let refused = [
        (
            args(
                "baseline,rocksdb",
                &["--workload", "fillrandom,ycsb-a", "--target", "500"],
            ),
            vec![
                "rocksdb:",
                "--workload ycsb-a",
                "--target 500",
                "db_bench has no equivalent",
            ],
        ),
        (
            args("baseline,rocksdb:picker=acc", &[]),
            vec![
                "rocksdb:picker=acc:",
                "--picker acc (RocksDB's: sica, oldest-largest-seq",
            ],
        ),
        (
            args("baseline,rocksdb:gc-start=10", &[]),
            vec!["rocksdb:gc-start=10:", "--gc-start"],
        ),
    ];
    for (a, wanted) in refused {
        let r = compare_with(&fake.path(), &refs(&a));
        let msg = error_line(&r);
        for w in wanted {
            assert!(msg.contains(w), "{w:?} not in {msg}");
        }
        assert!(
            !r.stdout.contains("== baseline"),
            "a run started: {}",
            r.stdout
        );
    }
    assert!(fake.runs().is_empty(), "db_bench ran: {:?}", fake.runs());
    // The zone flags of the command line are the zoned schemes' (SMALL_STORE has them);
    // with no scheme on zones, or only the rocksdb scheme, no run would read them.
    let a = args(
        "baseline,rocksdb",
        &["--gc-start", "20", "--placement", "caza"],
    );
    let r = compare_with(&fake.path(), &refs(&a));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let unread = [
        (
            args("rocksdb", &["--gc-start", "10"]),
            "--zones, --zone-size, --gc-start: no scheme of --schemes reads them",
        ),
        (
            args("posix,rocksdb", &["--placement", "caza"]),
            "--zones, --zone-size, --placement: no scheme of --schemes reads them",
        ),
    ];
    for (a, wanted) in unread {
        let msg = error_line(&compare_with(&fake.path(), &refs(&a)));
        assert!(msg.contains(wanted), "{wanted} not in {msg}");
    }
    let mut a = vec!["compare", "--schemes", "rocksdb", "--num", "2000"];
    a.extend(["--verify", "--mode", "deterministic"]);
    let msg = error_line(&compare_with(&fake.path(), &a));
    let wanted = "--mode deterministic, --verify: no scheme of --schemes reads them";
    assert!(msg.contains(wanted), "{msg}");
    assert_eq!(
        fake.runs().len(),
        1,
        "db_bench ran for a refused comparison"
    );
}

#[test]
fn a_failing_db_bench_is_a_failed_run_with_its_stderr() {
    let _serial = serial();
    let fake = Fake::new(
        "echo 'RocksDB:    version 7.8.3' >&2\necho 'Invalid argument: no such option' >&2\nexit 3",
    );
    let out = TempDir::new().unwrap();
    let json = out.path().join("cmp.json");
    let a = args(
        "rocksdb,baseline",
        &["--mode", "deterministic", "--json", json.to_str().unwrap()],
    );
    let r = compare_with(&fake.path(), &refs(&a));
    let msg = error_line(&r);
    assert!(
        msg.starts_with("rocksdb: rocksdb: db_bench failed"),
        "{msg}"
    );
    assert!(msg.contains("Invalid argument: no such option"), "{msg}");
    // The other scheme still ran, and the table and JSON are out.
    assert!(r.stdout.contains("#2 baseline"), "{}", r.stdout);
    let report = read_json(&json);
    let error = report["runs"][0]["error"].as_str().unwrap();
    assert!(error.contains("no such option"), "{error}");
    assert!(report["runs"][1].get("error").is_none());
    let db = fake.runs()[0]
        .iter()
        .find_map(|a| a.strip_prefix("--db=").map(String::from));
    let db = PathBuf::from(db.unwrap());
    assert!(!db.parent().unwrap().exists(), "{} is left", db.display());
}

#[test]
fn garbled_output_is_an_error_naming_the_line() {
    let _serial = serial();
    let garbled = format!(
        "echo 'RocksDB:    version 7.8.3' >&2\nsed 's/2.653 seconds/soon seconds/' '{OUTPUT}'"
    );
    for (body, wanted) in [
        ("echo hello", "no \"RocksDB: version X.Y.Z\" line"),
        (garbled.as_str(), "cannot read fillrandom's result line"),
    ] {
        let fake = Fake::new(body);
        let r = compare_with(&fake.path(), &refs(&args("baseline,rocksdb", &[])));
        let msg = error_line(&r);
        assert!(msg.contains("db_bench's output: "), "{msg}");
        assert!(msg.contains(wanted), "{wanted} not in {msg}");
    }
}

#[test]
fn without_db_bench_the_comparison_says_how_to_install_it() {
    let _serial = serial();
    let empty = TempDir::new().unwrap();
    let a = args("baseline,rocksdb", &[]);
    let mut cmd = Command::new(ZKV);
    cmd.args(&a)
        .env_remove("ZKV_DB_BENCH")
        .env("PATH", empty.path());
    let r = zkv_command(cmd);
    let msg = error_line(&r);
    assert!(msg.contains("db_bench is not on PATH"), "{msg}");
    assert!(msg.contains("scripts/install-db-bench.sh"), "{msg}");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let missing = empty.path().join("nope");
    let msg = error_line(&compare_with(&missing, &refs(&a)));
    assert!(
        msg.contains("ZKV_DB_BENCH=") && msg.contains("not an executable file"),
        "{msg}"
    );
}

/// A scheme list with only zkv schemes never looks for db_bench.
#[test]
fn zkv_schemes_do_not_need_db_bench() {
    let _serial = serial();
    let missing = Path::new("/nonexistent/db_bench");
    let r = compare_with(
        missing,
        &refs(&args("baseline,posix", &["--mode", "deterministic"])),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}
