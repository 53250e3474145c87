//! End-to-end tests of `zkv repro`: the real binary running a paper's whole experiment
//! matrix on a tiny store (a fraction of a second per run), and the files it writes.

mod common;
use common::*;

use std::path::Path;

use serde_json::Value;
use tempfile::TempDir;

fn repro(experiment: &str, out: &Path, extra: &[&str]) -> Vec<String> {
    repro_with(experiment, out, extra, &[])
}

/// [`repro`] with `bench` flags after the tiny store's (the last occurrence wins).
fn repro_with(experiment: &str, out: &Path, extra: &[&str], bench: &[&str]) -> Vec<String> {
    let mut args = vec![
        "repro",
        experiment,
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(&REPRO_TINY);
    args.extend_from_slice(bench);
    args.into_iter().map(String::from).collect()
}

/// Runs a repro that must succeed; returns its stdout and stderr.
fn run_ok(args: &[String]) -> (String, String) {
    let r = zkv(&refs(args));
    assert_eq!(r.code, 0, "zkv {args:?} failed: {}", r.stderr);
    (r.stdout, r.stderr)
}

/// Checks the output directory: a report per run, README.md with every figure's title
/// and chart, summary.json with every figure's table, and each chart an SVG.
fn check_outputs(dir: &Path, runs: usize, figures: &[&str]) -> Value {
    let summary = read_json(&dir.join("summary.json"));
    let listed = summary["runs"].as_array().expect("runs");
    assert_eq!(listed.len(), runs);
    for run in listed {
        assert!(run["error"].is_null(), "{run}");
        let report = read_json(&dir.join(run["file"].as_str().unwrap()));
        assert_eq!(report["label"], run["id"]);
        assert_eq!(report["config"]["mode"], run["mode"]);
    }
    let written = std::fs::read_dir(dir.join("runs")).unwrap().count();
    assert_eq!(written, runs);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let ids: Vec<&str> = summary["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, figures);
    for figure in summary["figures"].as_array().unwrap() {
        let title = figure["title"].as_str().unwrap();
        assert!(readme.contains(&format!("## {title}\n")), "{title}");
        let columns = figure["columns"].as_array().unwrap().len();
        let rows = figure["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{title}");
        assert!(rows.iter().all(|r| r.as_array().unwrap().len() == columns));
        if let Some(chart) = figure["chart"].as_str() {
            let svg = std::fs::read_to_string(dir.join(chart)).unwrap();
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            assert!(readme.contains(&format!("]({chart})")), "{chart}");
        }
    }
    assert!(!summary["headlines"].as_array().unwrap().is_empty());
    summary
}

/// The cells of a figure's row whose first cells are `key` (texts, or numbers as `25`).
fn row<'a>(summary: &'a Value, figure: &str, key: &[&str]) -> &'a [Value] {
    let figures = summary["figures"].as_array().unwrap();
    let f = figures.iter().find(|f| f["id"] == figure).unwrap();
    let cell = |v: &Value| match v.as_f64() {
        Some(x) => x.to_string(),
        None => v.as_str().unwrap_or_default().to_string(),
    };
    f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().as_slice())
        .find(|r| key.iter().zip(r.iter()).all(|(k, v)| cell(v) == *k))
        .unwrap_or_else(|| panic!("{figure}: no row {key:?}"))
}

#[test]
fn caza22_writes_every_table_and_chart() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("caza22");
    let (stdout, stderr) = run_ok(&repro("caza22", &out, &[]));
    // One progress line per run on stderr, the runs' lines and the headlines on stdout.
    assert_eq!(stderr.lines().count(), 20, "{stderr}");
    assert!(stderr
        .lines()
        .all(|l| l.starts_with("repro: run ") && l.ends_with(", ok")));
    assert!(
        stdout.contains("== deterministic-baseline-gc5 (1/20)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("== threaded-caza22-gc25 (20/20)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("zero-copy resets at 5% (Fig. 5)"),
        "{stdout}"
    );
    let summary = check_outputs(&out, 20, &["fig3", "fig4", "fig5", "fig6", "table1"]);
    for name in ["fig3.svg", "fig4.svg", "fig5.svg", "fig6.svg", "table1.svg"] {
        assert!(out.join(name).exists(), "{name}");
    }
    // Each threshold's runs clean between the same bounds, and every figure has numbers.
    let run = read_json(&out.join("runs/deterministic-caza22-gc10.json"));
    assert_eq!(run["config"]["gc_start"], 10);
    assert_eq!(run["config"]["gc_stop"], 10);
    assert_eq!(run["config"]["placement"], "caza");
    assert!(row(&summary, "fig3", &["25"])[1].is_number());
    assert!(row(&summary, "fig5", &["5", "LIZA (baseline)"])[2].is_number());
    assert!(row(&summary, "fig6", &["15"])[1].is_number());
    assert!(row(&summary, "table1", &["15"])[1].is_number());
    let span = row(&summary, "fig4", &["[0.8T, 1.0T]", "CAZA (caza22)"]);
    assert!(span[2].as_f64().unwrap() > 0.0, "{span:?}");
}

#[test]
fn samezone24_writes_every_table_and_chart() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("samezone24");
    // More zones than the tiny store's: a threaded run on 16 zones now and then fell behind
    // its cleaner and ran out of space.
    let (stdout, stderr) = run_ok(&repro_with("samezone24", &out, &[], &["--zones", "24"]));
    assert_eq!(stderr.lines().count(), 32, "{stderr}");
    assert!(
        stdout.contains("== threaded-a-caza-uniform (32/32)"),
        "{stdout}"
    );
    let summary = check_outputs(
        &out,
        32,
        &[
            "fig8", "fig9", "fig10", "fig11", "fig12", "fig15", "fig16", "fig17", "table3",
        ],
    );
    let zipf = read_json(&out.join("runs/deterministic-a-caza-zipfian.json"));
    assert_eq!(zipf["config"]["workload"], "ycsb-a");
    assert_eq!(zipf["config"]["request_distribution"], "zipfian");
    assert_eq!(zipf["config"]["placement"], "caza+");
    assert_eq!(zipf["config"]["picker"], "acc");
    assert!(row(&summary, "fig8", &["fillrandom", "all"])[2].is_number());
    assert!(row(&summary, "fig12", &["latest"])[2].is_number());
    assert!(row(&summary, "fig15", &["uniform", "ops/s"])[2].is_number());
    assert!(row(&summary, "fig16", &["A-CAZA"])[1].is_number());
}

/// The figure and headline tables of a README.md: everything between its title lines and
/// its list of runs (which holds the seconds).
fn tables(dir: &Path) -> String {
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let start = readme.find("## Headlines").expect("headlines");
    let end = readme.find("## Runs").expect("runs");
    readme[start..end].to_string()
}

/// Each listed run's `reused` and `seconds`, by id.
fn listed_runs(dir: &Path) -> Vec<(String, bool, Value)> {
    let summary = read_json(&dir.join("summary.json"));
    let runs = summary["runs"].as_array().expect("runs");
    let entry = |r: &Value| {
        let id = r["id"].as_str().unwrap().to_string();
        (
            id,
            r["reused"].as_bool().expect("reused"),
            r["seconds"].clone(),
        )
    };
    runs.iter().map(entry).collect()
}

/// Seconds read back from a summary: serde_json's default float parsing may be off by a
/// unit in the last place, so each trip through a file can move them by that much.
fn same_seconds(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
        _ => false,
    }
}

/// One mode leaves the other mode's figures empty and says so; then `--resume` runs the
/// other mode into the same directory (the test runs the deterministic matrix once for
/// both).
#[test]
fn one_mode_then_resume_reuses_matching_reports_and_combines_modes() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("resume");
    let (_, stderr) = run_ok(&repro("caza22", &out, &["--modes", "deterministic"]));
    assert_eq!(stderr.lines().count(), 10, "{stderr}");
    assert!(stderr.lines().all(|l| l.ends_with(", ok")), "{stderr}");
    let summary = check_outputs(&out, 10, &["fig3", "fig4", "fig5", "fig6", "table1"]);
    let figures = summary["figures"].as_array().unwrap();
    let table1 = figures.iter().find(|f| f["id"] == "table1").unwrap();
    assert!(table1["chart"].is_null());
    assert!(table1["rows"][0][1].is_null());
    let notes = table1["notes"].to_string();
    assert!(
        notes.contains("needs threaded runs (--modes threaded)"),
        "{notes}"
    );
    assert!(!out.join("table1.svg").exists());
    assert!(out.join("fig3.svg").exists());
    let first = listed_runs(&out);

    // The threaded runs run; the deterministic ones, not in --modes, are taken from runs/.
    let threaded = ["--modes", "threaded", "--resume"];
    let (stdout, stderr) = run_ok(&repro("caza22", &out, &threaded));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 20, "{stderr}");
    assert_eq!(
        lines[0],
        "repro: run 1/20 deterministic-baseline-gc5: reused \
         runs/deterministic-baseline-gc5.json"
    );
    assert!(lines[10].starts_with("repro: run 11/20 threaded-baseline-gc5: "));
    assert!(lines[10..].iter().all(|l| l.ends_with(", ok")), "{stderr}");
    assert!(
        stdout.contains("(20 runs, 10 reused from runs/, in "),
        "{stdout}"
    );
    let summary = check_outputs(&out, 20, &["fig3", "fig4", "fig5", "fig6", "table1"]);
    assert_eq!(summary["figures"][4]["chart"], "table1.svg");
    let combined = listed_runs(&out);
    assert_eq!(combined[..10].iter().filter(|r| r.1).count(), 10);
    assert!(combined[10..].iter().all(|r| !r.1 && r.2.is_number()));
    // A reused run keeps the seconds the previous summary gave it.
    assert!(same_seconds(&combined[0].2, &first[0].2));

    // Everything reused: the same tables, nothing run.
    let before = tables(&out);
    let (_, stderr) = run_ok(&repro("caza22", &out, &["--resume"]));
    assert_eq!(stderr.lines().count(), 20, "{stderr}");
    assert!(
        stderr.lines().all(|l| l.contains(": reused runs/")),
        "{stderr}"
    );
    assert_eq!(tables(&out), before);
    let again = listed_runs(&out);
    assert!(again.iter().all(|r| r.1));
    assert!(same_seconds(&again[15].2, &combined[15].2));
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains("--modes deterministic,threaded --resume"),
        "{readme}"
    );

    // Other bench flags: the listed runs run again and say why; the others are left out.
    let cut = out.join("runs/deterministic-caza22-gc25.json");
    let text = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let det = ["--modes", "deterministic", "--resume"];
    let (stdout, stderr) = run_ok(&repro_with("caza22", &out, &det, &["--num", "4000"]));
    assert!(
        stdout.contains(
            "== deterministic-baseline-gc5 (1/10): rerun, runs/deterministic-baseline-gc5.json: \
             config differs (num: 5000 vs 4000)\n"
        ),
        "{stdout}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 11, "{stderr}");
    assert_eq!(
        lines[0],
        "repro: 10 threaded runs skipped: not in --modes and no reusable report in runs/ \
         (first: threaded-baseline-gc5: config differs (num: 5000 vs 4000))"
    );
    let rerun = "repro: run 1/10 deterministic-baseline-gc5: rerun, \
                 runs/deterministic-baseline-gc5.json: config differs (num: 5000 vs 4000); ";
    assert!(lines[1].starts_with(rerun), "{stderr}");
    assert!(lines[10].contains(": not valid JSON: "), "{stderr}");
    assert!(lines[1..].iter().all(|l| l.ends_with(", ok")), "{stderr}");
    // The threaded reports stay in runs/, outside the summary.
    let listed = listed_runs(&out);
    assert_eq!(listed.len(), 10);
    assert!(listed.iter().all(|r| !r.1));
    assert!(out.join("runs/threaded-baseline-gc5.json").exists());
    let run = read_json(&out.join("runs/deterministic-baseline-gc5.json"));
    assert_eq!(run["config"]["num"], 4000);
}

#[test]
fn bad_experiments_and_flags_fail_before_any_run() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("none");
    let out_arg = out.to_str().unwrap();
    let (_, msg) = fails_run(&["repro", "nope", "--out", out_arg], 2);
    assert!(msg.contains("invalid value 'nope'"), "{msg}");
    assert!(
        msg.contains("caza22, samezone24, prophet24, samevictim24, zone-drain"),
        "{msg}"
    );
    let msg = fails(&[
        "repro",
        "caza22",
        "--out",
        out_arg,
        "--modes",
        "deterministic",
        "--repeat",
        "3",
    ]);
    assert_eq!(
        msg,
        "--repeat 3: repeats the threaded runs, and --modes deterministic runs none"
    );
    let msg = fails(&["repro", "caza22", "--out", out_arg, "--", "--gc-start", "5"]);
    assert!(msg.starts_with("--gc-start after --"), "{msg}");
    let (_, msg) = fails_run(&["repro", "caza22", "--modes", "fast", "--out", out_arg], 2);
    assert!(msg.contains("unknown mode \"fast\""), "{msg}");
    // A bench flag that no run accepts is refused for the first run, before it runs.
    let (run, msg) = fails_run(
        &["repro", "caza22", "--out", out_arg, "--", "--num", "0"],
        1,
    );
    assert!(msg.starts_with("deterministic-baseline-gc5: "), "{msg}");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn an_unwritable_out_dir_fails_before_any_run() {
    let _serial = serial();
    let out = Unwritable::new("results");
    let out = &out.path;
    let (run, msg) = fails_run(&refs(&repro("caza22", out, &[])), 1);
    assert!(
        msg.starts_with(&format!("--out {}", out.join("runs").display())),
        "{msg}"
    );
    assert!(run.stdout.is_empty());
}

/// `--plan` prints one command per run; each runs its run alone (two at a time here, as
/// `parallel -j 2` would), writing only its report; `--resume` joins them into the tables.
#[test]
fn plan_commands_run_apart_and_resume_joins_them() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    // A directory name the shell would split and unquote.
    let out = dir.path().join("the 'plan' dir");
    let (plan, _) = run_ok(&repro(
        "caza22",
        &out,
        &["--modes", "deterministic", "--plan"],
    ));
    let lines: Vec<&str> = plan.lines().collect();
    let commands: Vec<Vec<String>> = lines
        .iter()
        .map(|l| shlex::split(l).expect("a shell command line"))
        .collect();
    assert_eq!(commands.len(), 10, "{plan}");
    assert!(!out.exists(), "--plan ran something");
    for words in &commands {
        assert_eq!(words[0], ZKV);
        let run = words.iter().position(|w| w == "--run").expect("--run");
        assert!(words[run + 1].starts_with("deterministic-"), "{words:?}");
        assert!(
            words.iter().any(|w| w == "--"),
            "bench flags repeated: {words:?}"
        );
    }
    // Each line through a shell, from another directory, two at a time.
    let elsewhere = TempDir::new().unwrap();
    let sh = |line: &str| {
        std::process::Command::new("sh")
            .args(["-c", line])
            .current_dir(elsewhere.path())
            .output()
            .expect("run sh")
    };
    std::thread::scope(|s| {
        for pair in lines.chunks(2) {
            let runs: Vec<_> = pair.iter().map(|line| s.spawn(move || sh(line))).collect();
            for r in runs {
                let r = r.join().unwrap();
                assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            }
        }
    });
    assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 10);
    assert!(!out.join("README.md").exists() && !out.join("summary.json").exists());
    let (_, stderr) = run_ok(&repro(
        "caza22",
        &out,
        &["--modes", "deterministic", "--resume"],
    ));
    let runs: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("repro: run "))
        .collect();
    assert_eq!(runs.len(), 10, "{stderr}");
    assert!(
        runs.iter().all(|l| l.contains(": reused runs/")),
        "{stderr}"
    );
    check_outputs(&out, 10, &["fig3", "fig4", "fig5", "fig6", "table1"]);
    let bad = zkv(&refs(&repro(
        "caza22",
        &out,
        &["--run", "deterministic-nope"],
    )));
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("no such run in caza22"),
        "{}",
        bad.stderr
    );
}

#[test]
fn repeated_threaded_runs_give_medians_and_their_spread() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("rep");
    let (plan, _) = run_ok(&repro(
        "caza22",
        &out,
        &["--modes", "threaded", "--repeat", "3", "--plan"],
    ));
    assert_eq!(plan.lines().count(), 30, "{plan}");
    assert!(plan.contains("--repeat 3 ") && plan.contains("--run threaded-caza22-gc25-r3"));
    let (_, stderr) = run_ok(&repro(
        "caza22",
        &out,
        &["--modes", "deterministic,threaded", "--repeat", "2"],
    ));
    // Deterministic runs once, threaded twice, the repetitions after the first round.
    let runs: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("repro: run "))
        .collect();
    assert_eq!(runs.len(), 30, "{stderr}");
    assert!(runs[19].contains("threaded-caza22-gc25:"), "{}", runs[19]);
    assert!(
        runs[20].contains("threaded-baseline-gc5-r2:"),
        "{}",
        runs[20]
    );
    let figures = ["fig3", "fig4", "fig5", "fig6", "table1", "spread"];
    let summary = check_outputs(&out, 30, &figures);
    assert_eq!(summary["repeat"], 2);
    // Table 1's MB/s is the median (here the mean) of the two repetitions' figures.
    let mb_s = |file: &str| {
        let r = read_json(&out.join("runs").join(file));
        let phase = r["workloads"].as_array().unwrap().last().unwrap().clone();
        phase["bytes"].as_f64().unwrap() / f64::from(1 << 20) / phase["seconds"].as_f64().unwrap()
    };
    let table1 = row(&summary, "table1", &["5"]);
    let shown = table1[1].as_f64().unwrap();
    let (a, b) = (
        mb_s("threaded-baseline-gc5.json"),
        mb_s("threaded-baseline-gc5-r2.json"),
    );
    let (lo, hi) = (a.min(b), a.max(b));
    assert!(
        shown >= lo * 0.999 && shown <= hi * 1.001,
        "{shown} not in {lo}..{hi}"
    );
    let spread = row(&summary, "spread", &["threaded-caza22-gc15"]);
    assert_eq!(spread[1], "2");
    assert!(spread[2].as_str().unwrap().contains(" - "), "{spread:?}");
    // Resumed with the same --repeat, nothing runs again.
    let (_, stderr) = run_ok(&repro(
        "caza22",
        &out,
        &["--modes", "threaded", "--repeat", "2", "--resume"],
    ));
    assert!(!stderr.contains(" s, ok"), "{stderr}");
}

#[test]
fn zone_drain_runs_the_samezone24_preset_with_every_scheme() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("drain");
    let (_, stderr) = run_ok(&repro_with(
        "zone-drain",
        &out,
        &["--modes", "deterministic"],
        &["--zones", "24"],
    ));
    assert_eq!(stderr.lines().count(), 28, "{stderr}");
    let summary = check_outputs(&out, 28, &["writes", "against", "speed"]);
    let run = read_json(&out.join("runs/deterministic-min-overlap-caza-latest.json"));
    assert_eq!(run["config"]["preset"], "samezone24");
    assert_eq!(run["config"]["placement"], "caza+");
    assert_eq!(run["config"]["picker"], "min-overlap");
    assert_eq!(run["scheme"], "min-overlap-caza");
    let lsm_wa = |scheme: &str| row(&summary, "writes", &["uniform", scheme])[3].as_f64();
    assert!(lsm_wa("min-overlap").is_some() && lsm_wa("drain-caza").is_some());
    // The comparison's rows: drain-caza's change against each of the six other schemes.
    assert_eq!(
        row(
            &summary,
            "against",
            &["mean", "device writes per user byte"]
        )
        .len(),
        8
    );
}
