//! `zkv bench` driven as db_bench is: db_bench's flag spellings, `--reads`, `--duration`,
//! `--stats-interval-seconds`, and the workloads fillbatch, readseq, seekrandom and
//! deleterandom. Every run is deterministic on the small store of the CLI tests.

mod common;
use common::*;

use serde_json::Value;

/// `zkv bench` on [`SMALL_STORE`] in deterministic mode, without progress lines, with
/// `extra` (whose value of a flag of [`SMALL_STORE`] replaces it).
fn bench(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["bench", "--mode", "deterministic"];
    for pair in SMALL_STORE.chunks(2) {
        if !extra.contains(&pair[0]) {
            args.extend_from_slice(pair);
        }
    }
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

/// Runs [`bench`] with `extra`, which must succeed; returns stdout and the JSON report.
fn run(extra: &[&str]) -> (String, Value) {
    run_args(bench(extra))
}

/// Runs `zkv args`, which must succeed; returns stdout and the JSON report.
fn run_args(mut args: Vec<String>) -> (String, Value) {
    let report = TempJson::new();
    args.extend(["--json".to_string(), report.arg.clone()]);
    let stdout = ok(&refs(&args));
    (stdout, report.read())
}

/// db_bench's line of the `i`-th result line of stdout.
fn line(stdout: &str, i: usize) -> &str {
    stdout
        .lines()
        .filter(|l| l.contains(" micros/op "))
        .nth(i)
        .unwrap_or_else(|| panic!("no result line {i} in:\n{stdout}"))
}

#[test]
fn readreverse_walks_the_store_backward_to_its_first_key() {
    let _guard = serial();
    let (_, r) = run(&[
        "--benchmarks",
        "fillseq,readreverse,deleterandom,readreverse,readseq",
        "--num",
        "2000",
        "--reads",
        "5000",
    ]);
    // More reads than keys: the pass ends at the first key, each key + value read once.
    let back = phase(&r, 1, "readreverse");
    assert_eq!(count(&back["ops"]), 2000);
    assert_eq!(count(&back["bytes"]), 2000 * (16 + 200));
    // After the deletes, backward and forward passes see the same keys.
    let (back, forward) = (phase(&r, 3, "readreverse"), phase(&r, 4, "readseq"));
    assert!(count(&back["ops"]) < 2000);
    assert_eq!(count(&back["ops"]), count(&forward["ops"]));
}

#[test]
fn new_workloads_count_their_operations_and_verify_sees_the_deletes() {
    let _guard = serial();
    let (stdout, r) = run(&[
        "--benchmarks",
        "fillbatch,readseq,seekrandom,deleterandom,readseq,readrandom",
        "--num",
        "2500",
        "--reads",
        "1000",
        "--seek_nexts",
        "3",
        "--verify",
    ]);
    // fillbatch: every key of 0..num, in 3 writes (1000, 1000, 500 entries).
    let fill = phase(&r, 0, "fillbatch");
    assert_eq!((count(&fill["ops"]), count(&fill["put_ops"])), (2500, 2500));
    assert_eq!(count(&r["latency_us"]["put"]["count"]), 3);
    assert!(line(&stdout, 0).contains(" 2500 operations;"));
    // readseq: --reads entries from the first key on, each key + value.
    let seq = phase(&r, 1, "readseq");
    assert_eq!(count(&seq["ops"]), 1000);
    assert_eq!(count(&seq["bytes"]), 1000 * (16 + 200));
    // seekrandom: --reads seeks, each landing on its key, then up to 3 nexts.
    let seek = phase(&r, 2, "seekrandom");
    assert_eq!(
        (count(&seek["ops"]), count(&seek["scan_ops"])),
        (1000, 1000)
    );
    assert_eq!(count(&seek["seek_found"]), 1000);
    let scanned = count(&seek["scanned"]);
    assert!((2990..=3000).contains(&scanned), "{scanned}");
    assert!(line(&stdout, 2).ends_with("(1000 of 1000 found)"));
    // deleterandom: --num deletes of random keys, which the next readseq no longer sees.
    let del = phase(&r, 3, "deleterandom");
    assert_eq!(
        (count(&del["ops"]), count(&del["delete_ops"])),
        (2500, 2500)
    );
    assert_eq!(count(&r["user"]["delete_ops"]), 2500);
    assert_eq!(count(&r["latency_us"]["delete"]["count"]), 2500);
    let left = count(&phase(&r, 4, "readseq")["ops"]);
    // About 1/e of the keys escape 2500 draws with replacement.
    assert!((700..1200).contains(&left), "{left} keys left");
    let read = phase(&r, 5, "readrandom");
    let found = count(&read["found"]) as f64 / 1000.0;
    assert!((found - left as f64 / 2500.0).abs() < 0.1, "{found}");
    // The oracle expects the deleted keys absent, and the store agrees.
    assert_eq!(count(&r["verify"]["checked"]), 2500);
    assert_eq!(count(&r["verify"]["mismatches"]), 0);
    assert_eq!(r["config"]["reads"], 1000);
    assert_eq!(r["config"]["seek_nexts"], 3);
}

#[test]
fn verify_fails_on_a_deleted_key_it_is_told_to_expect() {
    let _guard = serial();
    let args = bench(&[
        "--workload",
        "fillseq,deleterandom",
        "--num",
        "1500",
        "--verify",
        "--verify-inject-mismatch",
    ]);
    let msg = fails(&refs(&args));
    assert!(
        msg.starts_with("verify: 1 of 1500 keys do not hold"),
        "{msg}"
    );
}

#[test]
fn db_bench_spellings_give_the_same_config_as_zkvs() {
    let _guard = serial();
    // Every size given here, in each spelling ([`bench`] would add the zkv spelling).
    let common = [
        "bench",
        "--mode",
        "deterministic",
        "--zones",
        "24",
        "--zone-size",
        "1MiB",
        "--num",
        "2000",
        "--readwritepercent",
        "80",
        "--seed",
        "7",
    ];
    let db_bench = [
        "--benchmarks=fillseq,readrandomwriterandom",
        "--value_size=150",
        "--key_size=20",
        "--write_buffer_size=65536",
        "--target_file_size_base=65536",
        "--max_bytes_for_level_base=262144",
        "--max_bytes_for_level_multiplier=8",
        "--level0_file_num_compaction_trigger=3",
        "--bloom_bits=8",
        "--cache_size=1048576",
        "--open_files=50",
        "--compression_type=lz4",
        "--compression_ratio=0.4",
        "--disable_wal=1",
        "--benchmark_write_rate_limit=100000000",
        "--max_background_compactions=2",
        "--max_background_flushes=2",
        "--subcompactions=2",
        "--compaction_pri=3",
        "--stats_interval_seconds=0",
    ];
    let zkv = [
        "--workload",
        "fillseq,readrandomwriterandom",
        "--value-size",
        "150",
        "--key-size",
        "20",
        "--write-buffer-size",
        "64KiB",
        "--target-file-size-base",
        "64KiB",
        "--max-bytes-for-level-base",
        "256KiB",
        "--max-bytes-for-level-multiplier",
        "8",
        "--level0-file-num-compaction-trigger",
        "3",
        "--bloom-bits",
        "8",
        "--cache-size",
        "1MiB",
        "--open-files",
        "50",
        "--compression-type",
        "lz4",
        "--compression-ratio",
        "0.4",
        "--disable-wal",
        "--benchmark-write-rate-limit",
        "100000000",
        "--compaction-threads",
        "2",
        "--flush-threads",
        "2",
        "--max-subcompactions",
        "2",
        "--picker",
        "min-overlap",
        "--progress-interval",
        "0",
    ];
    let owned = |flags: &[&str]| -> Vec<String> {
        common.iter().chain(flags).map(|f| f.to_string()).collect()
    };
    let (a, b) = (run_args(owned(&db_bench)).1, run_args(owned(&zkv)).1);
    assert_eq!(a["config"], b["config"]);
    assert_eq!(a["config"]["picker"], "min-overlap");
    assert_eq!(a["config"]["disable_wal"], true);
    // The same run, too: the same operations and bytes.
    assert_eq!(a["workloads"][1]["found"], b["workloads"][1]["found"]);
    assert_eq!(a["lsm"]["flush_bytes"], b["lsm"]["flush_bytes"]);
}

#[test]
fn gflags_booleans_take_a_value() {
    let _guard = serial();
    let config = |flags: &[&str]| {
        let (_, r) = run(&[&["--workload", "fillseq", "--num", "500"], flags].concat());
        (
            r["config"]["sync"].clone(),
            r["config"]["disable_wal"].clone(),
        )
    };
    assert_eq!(config(&["--sync"]), (true.into(), false.into()));
    assert_eq!(config(&["--sync=true"]), (true.into(), false.into()));
    assert_eq!(
        config(&["--sync=false", "--disable_wal=0"]),
        (false.into(), false.into())
    );
    assert_eq!(config(&["--disable_wal"]), (false.into(), true.into()));
    let args = bench(&["--sync=maybe"]);
    let (_, msg) = fails_run(&refs(&args), 2);
    assert!(msg.contains("--sync"), "{msg}");
}

#[test]
fn reads_sets_the_operations_of_the_read_workloads() {
    let _guard = serial();
    let (stdout, r) = run(&[
        "--workload",
        "fillseq,readrandom,readrandomwriterandom",
        "--num",
        "1000",
        "--reads",
        "300",
    ]);
    assert_eq!(count(&phase(&r, 0, "fillseq")["ops"]), 1000);
    let read = phase(&r, 1, "readrandom");
    assert_eq!((count(&read["ops"]), count(&read["found"])), (300, 300));
    assert!(line(&stdout, 1).ends_with("(300 of 300 found)"));
    // db_bench's readrandomwriterandom runs --reads operations in all, 90 % of them gets.
    let mixed = phase(&r, 2, "readrandomwriterandom");
    assert_eq!(count(&mixed["ops"]), 300);
    assert_eq!(
        (count(&mixed["get_ops"]), count(&mixed["put_ops"])),
        (270, 30)
    );
    assert_eq!(r["config"]["reads"], 300);
    // -1 is db_bench's --num: the run and its config are those without --reads.
    let (_, minus) = run(&[
        "--workload",
        "fillseq,readrandom",
        "--num",
        "800",
        "--reads",
        "-1",
    ]);
    let (_, plain) = run(&["--workload", "fillseq,readrandom", "--num", "800"]);
    assert_eq!(count(&phase(&minus, 1, "readrandom")["ops"]), 800);
    assert_eq!(minus["config"], plain["config"]);
}

#[test]
fn duration_stops_a_random_workload_on_the_virtual_clock() {
    let _guard = serial();
    let flags = [
        "--workload",
        "fillseq,fillrandom,readrandom",
        "--num",
        "3000",
        "--duration",
        "0.002",
    ];
    let (stdout, r) = run(&flags);
    // fillseq is sequential: db_bench's --duration does not bound it.
    assert_eq!(count(&phase(&r, 0, "fillseq")["ops"]), 3000);
    for (i, name) in [(1, "fillrandom"), (2, "readrandom")] {
        let p = phase(&r, i, name);
        let ops = count(&p["ops"]);
        assert!(ops > 0 && ops < 3000, "{name}: {ops} operations");
        // Stopped at the first operation that started at or past 2 ms of virtual time.
        let seconds = p["virtual_seconds"].as_f64().unwrap();
        assert!((0.002..0.003).contains(&seconds), "{name}: {seconds} s");
        assert!(line(&stdout, i).contains(&format!(" {ops} operations;")));
    }
    assert_eq!(r["config"]["duration"], 0.002);
    // Virtual seconds: the same flags stop at the same operation.
    let (_, again) = run(&flags);
    assert_eq!(r["workloads"][1]["ops"], again["workloads"][1]["ops"]);
    assert_eq!(r["workloads"][2]["ops"], again["workloads"][2]["ops"]);
    // 0 is db_bench's default: no limit, and the config of a run without it.
    let (_, zero) = run(&[
        "--workload",
        "fillrandom",
        "--num",
        "1000",
        "--duration",
        "0",
    ]);
    assert_eq!(count(&zero["workloads"][0]["ops"]), 1000);
    assert!(zero["config"].get("duration").is_none());
}

#[test]
fn duration_bounds_mixgraph_and_threaded_runs_on_the_wall_clock() {
    let _guard = serial();
    let (_, r) = run(&[
        "--workload",
        "fillseq,mixgraph",
        "--num",
        "2000",
        "--duration",
        "0.002",
    ]);
    let ops = count(&phase(&r, 1, "mixgraph")["ops"]);
    assert!(ops > 0 && ops < 2000, "mixgraph: {ops} operations");
    // Threaded: wall seconds. Reads far more than 0.2 s can do stop at 0.2 s.
    let args: Vec<String> = [
        "bench",
        "--workload",
        "fillseq,readrandom",
        "--num",
        "2000",
        "--reads",
        "100000000",
        "--duration",
        "0.2",
        "--progress-interval",
        "0",
    ]
    .iter()
    .chain(&SMALL_STORE)
    .map(|f| f.to_string())
    .collect();
    let (_, r) = run_args(args);
    let read = phase(&r, 1, "readrandom");
    assert!(count(&read["ops"]) < 100_000_000);
    let seconds = read["seconds"].as_f64().unwrap();
    assert!((0.2..5.0).contains(&seconds), "{seconds} s");
}

#[test]
fn stats_interval_seconds_is_the_progress_interval() {
    let _guard = serial();
    // Long enough to outlast the interval on any machine (5000 operations once took 8 ms).
    let args = bench(&[
        "--workload",
        "fillseq",
        "--num",
        "100000",
        "--zones",
        "64",
        "--stats_interval_seconds",
        "0.001",
    ]);
    let r = zkv(&refs(&args));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("bench fillseq: "), "{}", r.stderr);
    // Both flags, the same interval: accepted; different: refused before any work.
    let both = |other: &str| {
        bench(&[
            "--workload",
            "fillseq",
            "--num",
            "100",
            "--stats-interval-seconds",
            "0",
            "--progress-interval",
            other,
        ])
    };
    ok(&refs(&both("0")));
    let msg = fails(&refs(&both("5")));
    assert_eq!(
        msg,
        "--progress-interval 5 and --stats-interval-seconds 0: they set the same interval; \
         give one of them"
    );
}

#[test]
fn flags_of_workloads_the_list_lacks_are_refused() {
    let _guard = serial();
    for (flags, want) in [
        (
            &["--reads", "10"][..],
            "--reads 10: applies to readrandom, readrandomwriterandom, readseq, readreverse, \
             seekrandom, readwhilewriting and mixgraph, and --workload fillseq,fillbatch has none",
        ),
        (
            &["--deletes", "10"],
            "--deletes 10: applies to deleterandom, and --workload fillseq,fillbatch has none",
        ),
        (
            &["--seek-nexts", "2"],
            "--seek-nexts 2: applies to seekrandom, and --workload fillseq,fillbatch has none",
        ),
        (
            &["--duration", "5"],
            "--duration 5: applies to db_bench's random workloads (fillrandom, overwrite, \
             readrandom, readrandomwriterandom, seekrandom, deleterandom, readwhilewriting, \
             mixgraph), and \
             --workload fillseq,fillbatch has none",
        ),
    ] {
        let args = bench(&[&["--workload", "fillseq,fillbatch", "--num", "100"], flags].concat());
        assert_eq!(fails(&refs(&args)), want);
    }
    for bad in [["--reads", "0"], ["--deletes", "-2"], ["--duration", "-1"]] {
        let args = bench(&[&["--workload", "readseq,deleterandom"][..], &bad[..]].concat());
        fails_run(&refs(&args), 2);
    }
}

#[test]
fn existing_workloads_write_the_json_they_wrote() {
    let _guard = serial();
    let (_, r) = run(&["--workload", "fillrandom,readrandom", "--num", "1000"]);
    for absent in ["reads", "deletes", "duration", "seek_nexts"] {
        assert!(r["config"].get(absent).is_none(), "config.{absent}");
    }
    for p in r["workloads"].as_array().unwrap() {
        for absent in ["delete_ops", "seek_found", "scanned"] {
            assert!(p.get(absent).is_none(), "{}: {absent}", p["name"]);
        }
    }
    assert!(r["user"].get("delete_ops").is_none());
    assert!(r["latency_us"].get("delete").is_none());
}
