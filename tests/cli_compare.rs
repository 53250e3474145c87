//! End-to-end tests of `zkv compare`: the real binary, tiny in-memory runs (a fraction of a
//! second each) of the same bench per scheme.

mod common;
use common::*;

use serde_json::Value;
use tempfile::TempDir;

/// The small store and a few thousand deterministic puts.
const RUN: [&str; 6] = [
    "--num",
    "3000",
    "--workload",
    "fillrandom,overwrite",
    "--mode",
    "deterministic",
];

fn compare(schemes: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["compare", "--schemes", schemes];
    args.extend_from_slice(&SMALL_STORE);
    args.extend_from_slice(&RUN);
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| &v[*k])
}

#[test]
fn two_schemes_give_one_table_one_json_and_charts() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let json = dir.path().join("cmp.json");
    let charts = dir.path().join("charts");
    let second = "baseline:gc-start=30:gc-stop=35";
    let args = compare(
        &format!("baseline,{second}"),
        &[
            "--verify",
            "--json",
            json.to_str().unwrap(),
            "--out",
            charts.to_str().unwrap(),
        ],
    );
    let stdout = ok(&refs(&args));

    let header = stdout
        .lines()
        .find(|l| l.starts_with("metric"))
        .expect("a table header");
    assert!(header.contains("#1 baseline"), "{header}");
    assert!(header.contains(&format!("#2 {second}")), "{header}");
    assert!(header.ends_with("#2/#1"), "{header}");
    assert_eq!(stdout.matches("metric ").count(), 1, "one table: {stdout}");
    for row in [
        "user ops/s",
        "LSM WA",
        "device WA",
        "cleaning copy (MiB)",
        "zone resets",
        "zero-copy resets",
        "S_same",
        "S_inval",
        "stall time (ms)",
        "p99 put latency (us)",
        "verify mismatches",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row}: {stdout}"));
        // The metric, two values and one ratio.
        let cells = line[row.len()..].split_whitespace().count();
        assert_eq!(cells, 3, "{line}");
    }

    let v = read_json(&json);
    assert_eq!(v["schemes"], serde_json::json!(["baseline", second]));
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["label"], second);
    assert_eq!(runs[1]["scheme"], "baseline");
    assert_eq!(at(&runs[0], &["config", "gc_start"]), 20);
    assert_eq!(at(&runs[1], &["config", "gc_start"]), 30);
    for run in runs {
        assert!(at(run, &["device", "wa"]).is_f64());
        assert!(at(run, &["zone_invalid_ratios", "ratios"]).is_array());
        assert_eq!(at(run, &["verify", "mismatches"]), 0);
        assert!(!run["timeseries"].as_array().unwrap().is_empty());
    }

    for name in [
        "free_space.svg",
        "cleaning_copies.svg",
        "wa_copies_resets.svg",
        "invalid_ratios.svg",
    ] {
        let svg = std::fs::read_to_string(charts.join(name)).expect("the chart was written");
        assert!(svg.starts_with("<svg"), "{name}");
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        let texts = svg_texts(&svg);
        assert!(texts.contains(&"baseline"), "{name}: {texts:?}");
        // A line exactly on the first one says so in its legend.
        let same = format!("{second} (same as baseline)");
        assert!(
            texts.contains(&second) || texts.contains(&same.as_str()),
            "{name}: {texts:?}"
        );
    }
}

/// The contents of an SVG's `<text>` elements, trimmed.
fn svg_texts(svg: &str) -> Vec<&str> {
    svg.split("</text>")
        .filter_map(|part| part.rsplit_once('>').map(|(_, text)| text.trim()))
        .collect()
}

#[test]
fn identical_deterministic_entries_give_identical_bytes() {
    let _serial = serial();
    let report = TempJson::new();
    ok(&refs(&compare(
        "baseline,baseline",
        &["--gc-start", "40", "--gc-stop", "45", "--json", &report.arg],
    )));
    let v = report.read();
    let (a, b) = (&v["runs"][0], &v["runs"][1]);
    for path in [
        &["user", "bytes"][..],
        &["lsm", "flush_bytes"],
        &["lsm", "compaction_bytes"],
        &["lsm", "wal_bytes"],
        &["device", "write_bytes"],
        &["device", "zone_resets"],
        &["device", "zero_copy_resets"],
        &["gc", "copy_bytes"],
        &["zone_invalid_ratios", "ratios"],
    ] {
        assert_eq!(at(a, path), at(b, path), "{path:?}");
        assert!(!at(a, path).is_null(), "{path:?}");
    }
}

#[test]
fn global_flags_apply_to_every_scheme_unless_an_entry_overrides_them() {
    let _serial = serial();
    let report = TempJson::new();
    ok(&refs(&compare(
        "baseline,baseline:gc-stop=40:reserved-zones=2",
        &["--gc-start", "30", "--gc-stop", "35", "--json", &report.arg],
    )));
    let v = report.read();
    let config = |i: usize, key: &str| v["runs"][i]["config"][key].clone();
    assert_eq!(config(0, "gc_start"), 30);
    assert_eq!(config(0, "gc_stop"), 35);
    assert_eq!(config(0, "reserved_zones"), 0);
    assert_eq!(config(1, "gc_start"), 30);
    assert_eq!(config(1, "gc_stop"), 40);
    assert_eq!(config(1, "reserved_zones"), 2);
}

/// A refused command prints one error line and runs nothing.
fn refused(args: &[String], code: i32) -> String {
    let (run, msg) = fails_run(&refs(args), code);
    assert!(run.stdout.is_empty(), "something ran: {}", run.stdout);
    msg
}

#[test]
fn bad_input_fails_before_any_run() {
    let _serial = serial();
    let msg = refused(&compare("baseline,nope", &[]), 2);
    assert!(
        msg.contains("unknown scheme \"nope\" (known: baseline, a-liza, caza, a-caza, caza22, drain-liza, drain-caza, min-overlap, min-overlap-caza, prophet, prophet-gc, prophet-gc-no, baza, baza+, posix, rocksdb)"),
        "{msg}"
    );
    let msg = refused(&compare("baseline:num=5", &[]), 2);
    assert!(
        msg.contains("unknown override \"num\" (keys: gc-start, gc-stop, gc-mode, picker, placement, reserved-zones, acc-turning-point, acc-min-level, short-threshold, blob-placement, blob-gc-cutoff)"),
        "{msg}"
    );
    let msg = refused(&compare("baseline,baseline:gc-mode=nope", &[]), 1);
    assert!(
        msg.starts_with("--schemes baseline:gc-mode=nope: invalid value 'nope'"),
        "{msg}"
    );
    let msg = refused(&compare("baseline,baseline:gc-start=50:gc-stop=40", &[]), 1);
    assert!(
        msg.starts_with("baseline:gc-start=50:gc-stop=40: --gc-start/--gc-stop"),
        "{msg}"
    );
    let msg = refused(&compare("baseline", &["--device", "file:/tmp/x.img"]), 1);
    assert!(msg.contains("run every scheme on --device mem"), "{msg}");
    // ...so the help does not offer it (zkv bench's does).
    let help = ok(&["compare", "--help"]);
    assert!(!help.contains("--device <DEVICE>"), "{help}");
    assert!(ok(&["bench", "--help"]).contains("--device <DEVICE>"));
    // An ACC flag no scheme's picker reads, or an entry's own that its picker does not
    // read, would change nothing.
    let unread = "only the acc and zone-drain pickers read it, and the picker is sica";
    let msg = refused(&compare("baseline,caza", &["--acc-turning-point", "30"]), 1);
    assert_eq!(msg, format!("baseline: --acc-turning-point: {unread}"));
    let msg = refused(&compare("a-caza,baseline:acc-min-level=1", &[]), 1);
    assert_eq!(
        msg,
        format!("baseline:acc-min-level=1: --acc-min-level: {unread}")
    );
}

#[test]
fn an_acc_flag_given_once_applies_to_the_schemes_that_read_it() {
    let _serial = serial();
    let report = TempJson::new();
    ok(&refs(&compare(
        "baseline,a-caza",
        &["--acc-turning-point", "30", "--json", &report.arg],
    )));
    let v = report.read();
    // Recorded for both; only a-caza's acc picker reads it.
    for run in v["runs"].as_array().unwrap() {
        assert_eq!(at(run, &["config", "acc_turning_point"]), 30, "{run}");
    }
}

#[test]
fn an_unwritable_out_dir_fails_before_any_run() {
    let _serial = serial();
    let out = Unwritable::new("charts");
    let msg = refused(
        &compare("baseline", &["--out", out.path.to_str().unwrap()]),
        1,
    );
    assert!(
        msg.starts_with(&format!("--out {}", out.path.display())),
        "{msg}"
    );
}

#[test]
fn a_preset_applies_to_every_scheme_and_entries_still_override_it() {
    let _serial = serial();
    let report = TempJson::new();
    let args = [
        "compare",
        "--schemes",
        "baseline,baseline:gc-start=10:gc-stop=15",
        "--preset",
        "caza22",
        "--quick",
        "--num",
        "2000",
        "--mode",
        "deterministic",
        "--json",
        &report.arg,
    ];
    ok(&args);
    let v = report.read();
    for run in v["runs"].as_array().unwrap() {
        assert_eq!(at(run, &["config", "zone_size"]), 8 * MIB, "{run}");
        assert_eq!(at(run, &["config", "num"]), 2000);
    }
    assert_eq!(at(&v["runs"][1], &["config", "gc_start"]), 10);
    assert_eq!(at(&v["runs"][1], &["config", "gc_stop"]), 15);
}

/// Issue 6 end to end: the same seed and deterministic runs of the papers' schemes on a
/// small device (40 zones of 256 KiB, 16 KiB SSTs: the papers' 16 SSTs per zone) filled
/// and overwritten until the cleaner copies. The enhanced CAZA placement keeps the SSTs a
/// compaction deletes together, so the cleaner finds emptier victims; ACC's zone-aware
/// picks raise S_same further.
#[test]
fn caza_copies_less_and_a_caza_compacts_within_fewer_zones_than_baseline() {
    let _serial = serial();
    let report = TempJson::new();
    let args = [
        "compare",
        "--schemes",
        "baseline,caza,a-caza",
        "--workload",
        "fillrandom,overwrite",
        "--num",
        "14000",
        "--value-size",
        "200",
        "--zones",
        "40",
        "--zone-size",
        "256KiB",
        "--reserved-zones",
        "2",
        "--write-buffer-size",
        "16KiB",
        "--target-file-size-base",
        "16KiB",
        "--max-bytes-for-level-base",
        "64KiB",
        "--seed",
        "0",
        "--mode",
        "deterministic",
        "--json",
        &report.arg,
    ];
    ok(&args);
    let v = report.read();
    let runs = v["runs"].as_array().unwrap();
    let get = |i: usize, path: &[&str]| at(&runs[i], path).as_f64().unwrap();
    for (i, (placement, picker)) in [("liza", "sica"), ("caza+", "sica"), ("caza+", "acc")]
        .iter()
        .enumerate()
    {
        assert_eq!(at(&runs[i], &["config", "placement"]), placement);
        assert_eq!(at(&runs[i], &["config", "picker"]), picker);
    }
    let copies = |i| get(i, &["gc", "copy_bytes"]);
    assert!(copies(0) > 0.0, "the baseline's cleaner must copy");
    assert!(
        copies(1) < copies(0),
        "caza copied {} bytes, baseline {}",
        copies(1),
        copies(0)
    );
    let s_same = |i| get(i, &["compaction", "s_same"]);
    assert!(
        s_same(2) > s_same(0),
        "a-caza S_same {}, baseline {}",
        s_same(2),
        s_same(0)
    );
}

#[test]
fn the_posix_scheme_runs_the_same_engine_on_a_directory_beside_the_zoned_ones() {
    let _serial = serial();
    let dir = TempDir::new().unwrap();
    let json = dir.path().join("cmp.json");
    let args = compare(
        "baseline,posix",
        &["--verify", "--json", json.to_str().unwrap()],
    );
    let stdout = ok(&refs(&args));
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {stdout}"))
            .to_string()
    };
    // The same LSM writes; no zone figures on the directory.
    let lsm_row = row("LSM WA");
    let lsm: Vec<&str> = lsm_row.split_whitespace().skip(2).take(2).collect();
    assert_eq!(lsm[0], lsm[1], "{stdout}");
    assert!(row("cleaning copy").contains(" - "), "{stdout}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = v["runs"].as_array().expect("runs");
    let posix = &runs[1];
    assert_eq!(posix["scheme"], "posix");
    assert!(
        posix["file_system"].as_str().unwrap().starts_with("posix:"),
        "{posix}"
    );
    assert_eq!(at(posix, &["verify", "mismatches"]), 0);
    // Its temporary directory is gone with the run.
    let gone = posix["file_system"]
        .as_str()
        .unwrap()
        .trim_start_matches("posix:");
    assert!(!std::path::Path::new(gone).exists(), "{gone}");
    // The comparison's zone flags are the zoned schemes'; the entry's own are refused.
    let err = refused(&compare("baseline,posix:gc-start=10", &[]), 1);
    assert!(err.contains("--gc-start"), "{err}");
}
