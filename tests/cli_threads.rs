//! `zkv bench --threads N`: several client threads against one database (db_bench's
//! `--threads`), readwhilewriting, and what deterministic mode does with them.

mod common;
use common::*;

use serde_json::Value;

/// `zkv bench` on [`SMALL_STORE`] in threaded mode with `extra`, without progress lines.
fn bench(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["bench", "--progress-interval", "0"];
    args.extend_from_slice(&SMALL_STORE);
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

/// Runs [`bench`] with `extra`, which must succeed; returns stdout and the JSON report.
fn run(extra: &[&str]) -> (String, Value) {
    let report = TempJson::new();
    let mut args = bench(extra);
    args.extend(["--json".to_string(), report.arg.clone()]);
    let stdout = ok(&refs(&args));
    (stdout, report.read())
}

#[test]
fn four_threads_fill_and_read_and_verify_clean() {
    let _guard = serial();
    let (stdout, r) = run(&[
        "--workload",
        "fillrandom,readrandom",
        "--num",
        "2000",
        "--threads",
        "4",
        "--verify",
    ]);
    assert_eq!(r["config"]["threads"], 4);
    assert_eq!(r["config"]["allow_concurrent_memtable_write"], true);
    // Every thread runs the whole count, as db_bench's threads do.
    let fill = phase(&r, 0, "fillrandom");
    assert_eq!((count(&fill["ops"]), count(&fill["put_ops"])), (8000, 8000));
    assert_eq!(fill["threads"], 4);
    let read = phase(&r, 1, "readrandom");
    assert_eq!((count(&read["ops"]), count(&read["get_ops"])), (8000, 8000));
    // 8000 random puts of 2000 keys leave about 98 % of them; reads find as many.
    let found = count(&read["found"]);
    assert!((7000..8000).contains(&found), "found {found}");
    // The clients' latencies are merged: one put and one get each.
    assert_eq!(count(&r["latency_us"]["put"]["count"]), 8000);
    assert_eq!(count(&r["latency_us"]["get"]["count"]), 8000);
    assert_eq!(count(&r["user"]["put_ops"]), 8000);
    assert_eq!(r["verify"]["mismatches"], 0);
    let keys = count(&r["verify"]["checked"]);
    assert!((1900..=2000).contains(&keys), "checked {keys}");
    assert!(stdout.contains(&format!("Verify: {keys} keys checked, 0 mismatches")));
    assert!(
        stdout.contains(&format!("({found} of 8000 found)")),
        "{stdout}"
    );
}

#[test]
fn threads_writing_the_same_few_keys_verify_clean_and_a_mismatch_is_caught() {
    let _guard = serial();
    // 50 keys, 4 threads of 1000 operations, half of them writes: most keys are written by
    // several threads at overlapping times.
    let mixed = [
        "--workload",
        "fillseq,readrandomwriterandom,deleterandom",
        "--num",
        "50",
        "--reads",
        "1000",
        "--readwritepercent",
        "50",
        "--deletes",
        "20",
        "--threads",
        "4",
        "--verify",
    ];
    let (_, r) = run(&mixed);
    assert_eq!(phase(&r, 0, "fillseq")["put_ops"], 200);
    let rwr = phase(&r, 1, "readrandomwriterandom");
    assert_eq!(
        (count(&rwr["get_ops"]), count(&rwr["put_ops"])),
        (2000, 2000)
    );
    assert_eq!(phase(&r, 2, "deleterandom")["delete_ops"], 80);
    assert_eq!(r["verify"]["checked"], 50);
    assert_eq!(r["verify"]["mismatches"], 0);
    // The oracle of several threads still fails a store that does not hold what it
    // expects.
    let mut args = bench(&mixed);
    args.push("--verify-inject-mismatch".into());
    let err = fails(&refs(&args));
    assert!(err.contains("verify: 1 of 50 keys"), "{err}");
}

#[test]
fn readwhilewriting_reports_the_readers_and_paces_its_writer() {
    let _guard = serial();
    let rate = 200 * 1024;
    let (stdout, r) = run(&[
        "--workload",
        "fillseq,readwhilewriting",
        "--num",
        "2000",
        "--reads",
        "20000",
        "--threads",
        "2",
        "--benchmark-write-rate-limit",
        &rate.to_string(),
        "--verify",
    ]);
    let p = phase(&r, 1, "readwhilewriting");
    // The readers' operations are the phase's; the writer's puts are counted apart.
    assert_eq!(p["threads"], 2);
    assert_eq!((count(&p["ops"]), count(&p["get_ops"])), (40000, 40000));
    assert_eq!(
        p["found"], 40000,
        "fillseq wrote every key the readers read"
    );
    let puts = count(&p["put_ops"]);
    assert!(puts > 0, "the writer wrote nothing");
    // The writer is held to the rate limit (216 bytes a put), with the 100 ms of unused
    // rate the limiter carries over.
    let seconds = p["seconds"].as_f64().unwrap_or(0.0);
    let allowed = (rate as f64 * (seconds + 0.2) / 216.0) as u64 + 1;
    assert!(puts <= allowed, "{puts} puts in {seconds} s at {rate} B/s");
    assert_eq!(r["verify"]["mismatches"], 0);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("readwhilewriting"))
        .unwrap_or_else(|| panic!("no readwhilewriting line in:\n{stdout}"));
    assert!(line.contains(" 40000 operations;"), "{line}");
    assert!(line.contains("(40000 of 40000 found)"), "{line}");
}

#[test]
fn bad_thread_counts_and_unsupported_combinations_are_refused() {
    let _guard = serial();
    for bad in ["0", "x", "-1", "1025"] {
        let (_, err) = fails_run(&["bench", "--threads", bad], 2);
        assert!(
            err.contains("give a number of client threads from 1 to 1024"),
            "--threads {bad}: {err}"
        );
    }
    let refused = [
        (
            &["--threads", "2", "--mode", "deterministic"][..],
            "--threads 2: deterministic mode runs one client thread on its virtual clock; \
             run several with --mode threaded",
        ),
        (
            &["--workload", "readwhilewriting", "--mode", "deterministic"][..],
            "readwhilewriting runs a writer thread beside its readers: threaded mode only",
        ),
        (
            &["--workload", "fillrandom,ycsb-a", "--threads", "3"][..],
            "--threads 3: ycsb-a runs one client thread",
        ),
        (
            &["--workload", "mixgraph", "--threads", "2"][..],
            "--threads 2: mixgraph runs one client thread",
        ),
    ];
    for (extra, want) in refused {
        let args = bench(extra);
        let err = fails(&refs(&args));
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}

#[test]
fn one_thread_given_is_the_run_without_the_flag() {
    let _guard = serial();
    let det = [
        "--mode",
        "deterministic",
        "--workload",
        "fillrandom,readrandom",
    ];
    let base = [&det[..], &["--num", "3000", "--verify"]].concat();
    let (_, mut without) = run(&base);
    let (_, mut with) = run(&[&base[..], &["--threads", "1"]].concat());
    // Deterministic mode has one writer and no write groups: nothing to insert at once.
    let off = ["--allow-concurrent-memtable-write=false"];
    let (_, mut leader_inserts) = run(&[&base[..], &off].concat());
    assert!(without["config"].get("threads").is_none());
    assert!(without["workloads"][0].get("threads").is_none());
    assert!(without["config"]
        .get("allow_concurrent_memtable_write")
        .is_none());
    strip_times(&mut without);
    strip_times(&mut with);
    strip_times(&mut leader_inserts);
    assert_eq!(without, with);
    assert_eq!(without, leader_inserts);
}

#[test]
fn group_leaders_insert_every_write_with_the_option_off() {
    let _guard = serial();
    for flag in [
        "--allow-concurrent-memtable-write=false",
        "--allow_concurrent_memtable_write=0",
    ] {
        let (_, r) = run(&[
            "--workload",
            "fillrandom",
            "--num",
            "2000",
            "--threads",
            "4",
            "--verify",
            flag,
        ]);
        assert_eq!(
            r["config"]["allow_concurrent_memtable_write"], false,
            "{flag}"
        );
        assert_eq!(count(&r["user"]["put_ops"]), 8000);
        assert_eq!(r["verify"]["mismatches"], 0);
    }
}
