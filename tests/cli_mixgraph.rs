//! End-to-end tests of `zkv bench --workload mixgraph`: the real binary on the tiny store of
//! the other bench tests.

mod common;
use common::*;

use serde_json::Value;

/// RocksDB's example parameters of mixgraph (key ranges, power law, Pareto value sizes and
/// scan lengths, the 85/14/1 mix).
const PAPER: [&str; 24] = [
    "--keyrange-num",
    "30",
    "--keyrange-dist-a",
    "14.18",
    "--keyrange-dist-b",
    "-2.917",
    "--keyrange-dist-c",
    "0.0164",
    "--keyrange-dist-d",
    "-0.08082",
    "--key-dist-a",
    "0.002312",
    "--key-dist-b",
    "0.3467",
    "--value-k",
    "0.2615",
    "--value-sigma",
    "25.45",
    "--mix-get-ratio",
    "0.85",
    "--mix-put-ratio",
    "0.14",
    "--mix-seek-ratio",
    "0.01",
];

/// `zkv bench` on the small store in deterministic mode with `extra`; mixgraph draws its
/// own value sizes, so `--value-size` is kept only when another workload writes.
fn bench(workload: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["bench", "--workload", workload, "--mode", "deterministic"];
    for pair in SMALL_STORE.chunks(2) {
        if pair[0] != "--value-size" || workload != "mixgraph" {
            args.extend_from_slice(pair);
        }
    }
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

fn mixgraph_phase(report: &Value) -> &Value {
    let phases = report["workloads"].as_array().expect("workloads");
    phases
        .iter()
        .find(|p| p["name"] == "mixgraph")
        .expect("a mixgraph phase")
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn mixgraph_after_a_fill_verifies_and_prints_db_bench_summary() {
    let _guard = serial();
    let report = TempJson::new();
    let extra = [
        &PAPER[..],
        &["--num", "3000", "--reads", "8000", "--key-size", "48"],
        &["--verify", "--json", &report.arg],
    ]
    .concat();
    let stdout = ok(&refs(&bench("fillrandom,mixgraph", &extra)));
    let line = stdout
        .lines()
        .find(|l| l.starts_with("mixgraph "))
        .unwrap_or_else(|| panic!("no mixgraph line in {stdout}"));
    assert!(line.contains(" 8000 operations;"), "{line}");
    assert!(line.contains("( Gets:"), "{line}");
    assert!(line.contains(" found, avg size: "), "{line}");
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
    let r = report.read();
    let p = mixgraph_phase(&r);
    let (gets, puts, seeks) = (
        u64_of(p, "get_ops"),
        u64_of(p, "put_ops"),
        u64_of(p, "scan_ops"),
    );
    assert_eq!(gets + puts + seeks, 8000);
    // 85/14/1 within a wide margin; the unit tests check the proportions closely.
    assert!((6400..7200).contains(&gets), "{gets}");
    assert!((800..1500).contains(&puts), "{puts}");
    assert!(seeks > 20, "{seeks}");
    // After the fill, most keys read exist.
    assert!(u64_of(p, "found") > gets / 4, "{p}");
    // Between the 10-byte floor and the law's tail; with 3000 keys the puts' u (their draw
    // over the key space, which also fixes their kind) are not spread evenly, so the mean
    // is not the law's 36.
    let avg = p["avg_value_size"].as_f64().unwrap();
    assert!((10.0..60.0).contains(&avg), "{avg}");
    let config = &r["config"]["mixgraph"];
    assert_eq!(config["keyrange_num"], 30);
    assert_eq!(config["reads"], 8000);
    assert_eq!(config["key_dist_b"], 0.3467);
    assert!(p.get("rate").is_none(), "{p}");
}

/// 3000 puts over 2000 keys at a constant sine rate (sine-a 0) of `rate` operations per
/// second, after a first interval of 1 ms at db_bench's initial 1,000,000, with `extra`.
fn constant_rate(rate: &str, extra: &[&str]) -> Vec<String> {
    let flags = [
        "--num",
        "2000",
        "--reads",
        "3000",
        "--mix-get-ratio",
        "0",
        "--mix-put-ratio",
        "1",
        "--sine-mix-rate",
        "--sine-a",
        "0",
        "--sine-d",
        rate,
        "--sine-mix-rate-interval-milliseconds",
        "1",
    ];
    bench("mixgraph", &[&flags[..], extra].concat())
}

#[test]
fn a_seed_repeats_the_run_and_the_sine_rate_paces_virtual_time() {
    let _guard = serial();
    let reports: Vec<Value> = (0..2)
        .map(|_| {
            let report = TempJson::new();
            ok(&refs(&constant_rate(
                "2000",
                &["--seed", "9", "--json", &report.arg],
            )));
            report.read()
        })
        .collect();
    let (p, again) = (mixgraph_phase(&reports[0]), mixgraph_phase(&reports[1]));
    for field in ["put_ops", "value_bytes", "rate", "virtual_seconds"] {
        assert_eq!(p[field], again[field], "{field}");
    }
    // At most 1 ms at the initial rate (≤ 1000 operations), up to 100 ms of unused rate
    // carried into the first step (200 operations), the rest at 2000 per second.
    let v = p["virtual_seconds"].as_f64().unwrap();
    assert!((0.9..=1.51).contains(&v), "virtual seconds {v}");
    let steps = p["rate"]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["ops_per_sec"], 1_000_000.0);
    assert_eq!(steps[1]["ops_per_sec"], 2000.0);
    assert_eq!(steps[1]["t"], 0.001);
}

#[test]
fn threaded_runs_are_held_to_the_sine_rate() {
    let _guard = serial();
    let report = TempJson::new();
    let mut args = constant_rate("4000", &["--verify", "--json", &report.arg]);
    args.retain(|a| a != "--mode" && a != "deterministic");
    let stdout = ok(&refs(&args));
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
    assert!(
        stdout.contains("sine rate 0·sin(1·t + 0) + 4000 ops/s"),
        "{stdout}"
    );
    // The first millisecond allows at most about 1000 operations, 100 ms of unused rate
    // 400 more: the other 1600 or more take at least 0.4 s at 4000 per second.
    let seconds = mixgraph_phase(&report.read())["seconds"].as_f64().unwrap();
    assert!(seconds >= 0.35, "{seconds}");
}

#[test]
fn bad_mixgraph_flags_fail_with_one_line() {
    let _guard = serial();
    let usage = |args: &[&str], want: &str| {
        let (_, msg) = fails_run(&[&["bench", "--workload", "mixgraph"], args].concat(), 2);
        assert!(msg.contains(want), "{args:?}: {msg}");
    };
    usage(&["--keyrange-num", "0"], "--keyrange-num");
    usage(&["--mix-get-ratio", "nan"], "must be a finite number");
    usage(&["--value-k", "x"], "not a number");
    usage(&["--mix-max-scan-len", "0"], "--mix-max-scan-len");
    usage(&["--reads", "0"], "--reads");
    let refused = |workload: &str, args: &[&str], want: &str| {
        let mut all = bench(workload, &["--num", "1000"]);
        all.extend(args.iter().map(|s| s.to_string()));
        let (_, msg) = fails_run(&refs(&all), 1);
        assert!(msg.contains(want), "{args:?}: {msg}");
    };
    refused(
        "mixgraph",
        &["--mix-get-ratio", "0"],
        "all operation proportions are zero",
    );
    refused(
        "mixgraph",
        &["--mix-put-ratio", "-1"],
        "mix_put_ratio must be",
    );
    refused(
        "mixgraph",
        &["--keyrange-num", "1001"],
        "keyrange_num must be in 1..=1000",
    );
    refused(
        "mixgraph",
        &[
            "--keyrange-dist-a",
            "1e-20",
            "--key-dist-a",
            "0.1",
            "--key-dist-b",
            "0.5",
        ],
        "every range's share is below 1e-16",
    );
    refused(
        "fillrandom",
        &["--value-k", "1"],
        "--value-k: applies to mixgraph, and --workload fillrandom has none",
    );
    refused(
        "mixgraph",
        &["--value-size", "100"],
        "--value-size: mixgraph draws",
    );
}

#[test]
fn flags_db_bench_ignores_are_run_with_a_warning() {
    let _guard = serial();
    // RocksDB's example gives the key ranges without a power law and the sine without
    // --sine-mix-rate; db_bench runs it with uniform keys and no pacing, and so does zkv.
    let args = bench(
        "mixgraph",
        &[
            "--num",
            "1000",
            "--keyrange-num",
            "30",
            "--keyrange-dist-a",
            "14.18",
            "--sine-a",
            "1000",
        ],
    );
    let r = zkv(&refs(&args));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--keyrange-num, --keyrange-dist-a change nothing"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("--sine-a change nothing without --sine-mix-rate"),
        "{}",
        r.stderr
    );
    // Uniform keys decide the kind (gets only here), so a get never finds a key: db_bench's
    // "reads 0 in 1000 found".
    assert!(r.stdout.contains("reads 0 in 1000 found"), "{}", r.stdout);
}
