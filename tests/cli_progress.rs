//! End-to-end tests of the progress lines of `zkv bench`, `zkv compare` and `zkv repro`
//! when stderr is not a terminal (as under `cargo test`): short runs with a short
//! `--progress-interval`.

mod common;
use common::*;

use tempfile::TempDir;

/// Deterministic fillrandom on the small store: over a tenth of a second in a debug
/// build, many times the interval below.
const RUN: [&str; 6] = [
    "--workload",
    "fillrandom",
    "--num",
    "20000",
    "--mode",
    "deterministic",
];

/// An interval short enough for every run above to print lines.
const EVERY: &str = "0.01";

fn args(command: &[&str], extra: &[&str]) -> Vec<String> {
    let mut args = command.to_vec();
    args.extend_from_slice(&SMALL_STORE);
    args.extend_from_slice(&RUN);
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

fn refs_owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_string()).collect()
}

/// Runs a command that must succeed; returns its stderr.
fn stderr_of(args: &[String]) -> String {
    let r = zkv(&refs(args));
    assert_eq!(r.code, 0, "zkv {args:?} failed: {}", r.stderr);
    r.stderr
}

/// Checks that `line` is a progress line of `context`:
/// `CONTEXT PHASE: DONE/TOTAL ops (P%), RATE ops/s, SECONDS s`; returns PHASE and DONE.
fn progress<'a>(line: &'a str, context: &str, total: u64) -> (&'a str, u64) {
    let rest = line
        .strip_prefix(&format!("{context} "))
        .unwrap_or_else(|| panic!("not a progress line of {context}: {line:?}"));
    let (phase, rest) = rest.split_once(": ").expect("PHASE: ");
    let (done, rest) = rest
        .split_once(&format!("/{total} ops ("))
        .expect("DONE/TOTAL ops");
    let (percent, rest) = rest.split_once("%), ").expect("percent");
    let (rate, rest) = rest.split_once(" ops/s, ").expect("ops/s");
    let seconds = rest.strip_suffix(" s").expect("seconds");
    let done: u64 = done.parse().expect("operations done");
    assert!(done > 0 && done <= total, "{line}");
    assert!(percent.parse::<u32>().expect("percent") <= 100, "{line}");
    assert!(rate.parse::<u64>().expect("rate") > 0, "{line}");
    assert!(seconds.parse::<f64>().expect("seconds") >= 0.0, "{line}");
    (phase, done)
}

#[test]
fn bench_prints_progress_lines_at_the_interval() {
    let _serial = serial();
    let stderr = stderr_of(&args(&["bench"], &["--progress-interval", EVERY]));
    let done: Vec<u64> = stderr
        .lines()
        .map(|l| progress(l, "bench", 20_000))
        .inspect(|(phase, _)| assert_eq!(*phase, "fillrandom"))
        .map(|(_, done)| done)
        .collect();
    assert!(!done.is_empty(), "no progress line");
    assert!(done.windows(2).all(|w| w[0] < w[1]), "{stderr}");
}

#[test]
fn no_progress_lines_with_zero_or_before_the_default_interval() {
    let _serial = serial();
    // 0 turns them off; without the flag the first would come after 10 s.
    for extra in [&["--progress-interval", "0"][..], &[]] {
        let stderr = stderr_of(&args(&["bench"], extra));
        assert_eq!(stderr, "", "{extra:?}");
    }
}

#[test]
fn compare_lines_name_the_run_and_the_scheme() {
    let _serial = serial();
    let command = ["compare", "--schemes", "baseline,caza"];
    let stderr = stderr_of(&args(&command, &["--progress-interval", EVERY]));
    for context in ["compare: run 1/2 baseline", "compare: run 2/2 caza"] {
        let prefix = format!("{context} ");
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&prefix)).collect();
        assert!(!lines.is_empty(), "{stderr}");
        for line in lines {
            assert_eq!(progress(line, context, 20_000).0, "fillrandom");
        }
    }
    assert!(
        stderr.lines().all(|l| l.starts_with("compare: run ")),
        "{stderr}"
    );
}

#[test]
fn repro_lines_name_the_run() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let out = dir.path().to_str().unwrap();
    let id = "deterministic-baseline-gc5";
    let mut command = vec!["repro", "caza22", "--quick", "--out", out];
    command.extend(["--progress-interval", EVERY, "--run", id, "--"]);
    command.extend(REPRO_TINY);
    let stderr = stderr_of(&refs_owned(&command));
    let lines: Vec<&str> = stderr.lines().collect();
    let (last, lines) = lines.split_last().expect("some lines");
    assert!(
        last.starts_with(&format!("repro: run 1/1 {id}: ")),
        "{stderr}"
    );
    assert!(!lines.is_empty(), "no progress line: {stderr}");
    for line in lines {
        let (phase, _) = progress(line, &format!("repro: run 1/1 {id}"), 5000);
        assert!(["fillseq", "overwrite"].contains(&phase), "{line}");
    }
    // --plan hands the interval on to every command.
    let plan = ok(&["repro", "caza22", "--quick", "--out", out, "--plan"]);
    assert!(!plan.contains("--progress-interval"), "{plan}");
    let plan = ok(&[
        "repro",
        "caza22",
        "--out",
        out,
        "--progress-interval",
        "5",
        "--plan",
    ]);
    assert!(
        plan.lines().all(|l| l.contains(" --progress-interval 5 ")),
        "{plan}"
    );
}

#[test]
fn bad_intervals_are_usage_errors() {
    let _serial = serial();
    for bad in ["-1", "abc", "inf", "NaN", "86401"] {
        for command in [&["bench"][..], &["repro", "caza22"]] {
            let mut args = command.to_vec();
            args.extend(["--progress-interval", bad]);
            let (_, msg) = fails_run(&args, 2);
            assert!(
                msg.contains("'--progress-interval <SECONDS>'"),
                "{args:?}: {msg}"
            );
        }
    }
}
