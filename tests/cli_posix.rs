//! End-to-end tests of `zkv bench --fs posix:DIR`: the same engine on plain files in a
//! directory, with the bytes it wrote by category, no zone figures, and the zone flags
//! refused.

mod common;
use common::*;

use serde_json::Value;
use tempfile::TempDir;

/// The small store of the other bench tests without its zone geometry (`--zones`,
/// `--zone-size`).
fn small_engine() -> &'static [&'static str] {
    &SMALL_STORE[4..]
}

/// `zkv bench --fs posix:DIR/db` of fillrandom,overwrite with `extra`, its JSON report in
/// the temporary directory too.
fn posix_bench(tmp: &TempDir, extra: &[&str]) -> (Vec<String>, std::path::PathBuf) {
    let fs = format!("posix:{}", tmp.path().join("db").display());
    let json = tmp.path().join("report.json");
    let mut args: Vec<String> = ["bench", "--fs", &fs, "--workload", "fillrandom,overwrite"]
        .iter()
        .chain(small_engine().iter())
        .chain(extra.iter())
        .map(|s| s.to_string())
        .collect();
    args.extend(["--json".to_string(), json.display().to_string()]);
    (args, json)
}

#[test]
fn a_run_on_a_directory_verifies_and_counts_the_lsms_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let (args, json) = posix_bench(
        &tmp,
        &["--num", "4000", "--verify", "--wait-for-compaction"],
    );
    let out = ok(&refs(&args));
    assert!(out.contains("File system: posix:"), "{out}");
    assert!(out.contains(" keys checked, 0 mismatches"), "{out}");
    assert!(
        !out.contains("Zones:") && !out.contains("Cleaning:"),
        "{out}"
    );
    let r = read_json(&json);
    assert_eq!(r["scheme"], "posix");
    assert!(r["file_system"].as_str().unwrap().starts_with("posix:"));
    assert!(r["config"]["fs"].as_str().unwrap().starts_with("posix:"));
    for zone_only in ["gc", "zone_invalid_ratios"] {
        assert!(r.get(zone_only).is_none(), "{zone_only} in {r}");
    }
    assert!(r["config"].get("zones").is_none() && r["config"].get("placement").is_none());
    assert!(r["device"].get("zone_resets").is_none());
    let (lsm, by_cat) = (&r["lsm"], &r["device"]["write_bytes_by_category"]);
    assert!(lsm["compactions"].as_u64().unwrap() > 0, "{lsm}");
    assert_eq!(by_cat["wal"], lsm["wal_bytes"]);
    // Tables: by their level, flush is L0 and compaction the rest (an intra-L0
    // compaction writes L0 tables too); their sum is the LSM's (once no job runs: a
    // running compaction has written tables it has not counted yet).
    let tables = |v: &Value, a: &str, b: &str| v[a].as_u64().unwrap() + v[b].as_u64().unwrap();
    assert_eq!(
        tables(by_cat, "flush", "compaction"),
        tables(lsm, "flush_bytes", "compaction_bytes")
    );
    assert_eq!(by_cat["gc_copy"], 0);
    assert!(r["device"]["wa"].as_f64().unwrap() >= 1.0);
    assert_eq!(r["verify"]["mismatches"], 0);
    // The database is left in the directory.
    assert!(tmp.path().join("db").join("CURRENT").exists());
}

/// Deterministic mode on a directory: the same seed gives the same report.
#[test]
fn deterministic_runs_on_directories_give_the_same_report() {
    let report = || {
        let tmp = tempfile::tempdir().unwrap();
        let (args, json) = posix_bench(&tmp, &["--num", "3000", "--mode", "deterministic"]);
        ok(&refs(&args));
        let mut r = read_json(&json);
        strip_times(&mut r);
        // The directories differ.
        let m = r.as_object_mut().unwrap();
        m.remove("file_system");
        m["config"].as_object_mut().unwrap().remove("fs");
        (r, tmp)
    };
    let ((a, _ta), (b, _tb)) = (report(), report());
    assert_eq!(a, b);
    assert!(a["user"]["virtual_seconds"].as_f64().unwrap() > 0.0);
    assert!(a["device"]["write_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn zone_flags_are_refused_in_one_message_unless_at_their_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut args, _) = posix_bench(&tmp, &["--num", "100"]);
    args.extend(["--zones", "24", "--placement", "caza", "--gc-start", "30"].map(String::from));
    let msg = fails(&refs(&args));
    for flag in ["--zones", "--placement", "--gc-start", "zoned file layer"] {
        assert!(msg.contains(flag), "{flag} not in {msg}");
    }
    assert!(!tmp.path().join("db").exists(), "nothing is created");
    // At their defaults they change nothing, and pass.
    let defaults = [
        "--num",
        "100",
        "--placement",
        "liza",
        "--gc-mode",
        "copy",
        "--zones",
        "100",
        "--device",
        "mem",
    ];
    let (args, _) = posix_bench(&tmp, &defaults);
    ok(&refs(&args));
}

#[test]
fn a_bad_spec_or_a_used_directory_is_one_clear_error() {
    let (_, msg) = fails_run(&["bench", "--fs", "ext4:/tmp/x"], 2);
    assert!(msg.contains("posix:DIR"), "{msg}");
    let (_, msg) = fails_run(&["bench", "--fs", "posix:"], 2);
    assert!(msg.contains("needs a directory"), "{msg}");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("db")).unwrap();
    std::fs::write(tmp.path().join("db").join("keep"), b"x").unwrap();
    let (args, _) = posix_bench(&tmp, &["--num", "100"]);
    let msg = fails(&refs(&args));
    assert!(msg.contains("not empty"), "{msg}");
    let (mut args, _) = posix_bench(&tmp, &["--num", "100"]);
    args.push("--use-existing-db".into());
    let msg = fails(&refs(&args));
    assert!(msg.contains("existing"), "{msg}");
}
