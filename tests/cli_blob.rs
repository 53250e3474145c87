//! `zkv bench` with BlobDB: RocksDB's blob flags, the report's `blob` section, every
//! workload verified, and flags without effect refused.

mod common;

use common::*;

fn blob_bench(extra: &[&str]) -> serde_json::Value {
    let report = TempJson::new();
    let mut flags = vec!["--blob-file-size", "128KiB"];
    flags.extend(extra);
    let args = blob_bench_args(
        &report.arg,
        "fillrandom,overwrite,readrandom",
        "3000",
        &flags,
    );
    ok_with_progress(&args);
    report.read()
}

/// Runs a bench that must succeed; its stderr may only carry progress lines.
fn ok_with_progress(args: &[&str]) {
    let r = zkv(args);
    assert_eq!(r.code, 0, "zkv {args:?} failed: {}", r.stderr);
}

#[test]
fn blob_runs_verify_and_report_their_blob_files() {
    for mode in ["deterministic", "threaded"] {
        let j = blob_bench(&["--mode", mode, "--enable-blob-garbage-collection"]);
        assert_eq!(j["verify"]["mismatches"], 0, "{mode}");
        assert_eq!(j["config"]["enable_blob_files"], true);
        assert_eq!(j["config"]["min_blob_size"], 100);
        let blob = &j["blob"];
        let written = blob["blob_bytes_written"].as_u64().unwrap();
        assert!(written > 3000 * 200, "{mode}: {blob}");
        assert_eq!(j["lsm"]["blob_bytes"].as_u64().unwrap(), written);
        assert!(
            blob["files_created"].as_u64().unwrap() > 1,
            "{mode}: {blob}"
        );
        assert!(blob["live_bytes"].as_u64().unwrap() > 0);
        // Values are 200 bytes, above the minimum: the tables hold only references.
        let tables = j["lsm"]["flush_bytes"].as_u64().unwrap();
        assert!(tables < written / 3, "{mode}: flushes wrote {tables} B");
    }
}

#[test]
fn runs_without_blob_files_have_no_blob_section() {
    let report = TempJson::new();
    let mut args = vec!["bench", "--num", "1000", "--json", &report.arg];
    args.extend(SMALL_STORE);
    ok_with_progress(&args);
    let j = report.read();
    assert!(j.get("blob").is_none());
    assert_eq!(j["lsm"]["blob_bytes"], 0);
    assert_eq!(j["config"]["enable_blob_files"], false);
}

#[test]
fn blob_flags_without_effect_are_refused() {
    let msg = fails(&["bench", "--num", "10", "--min-blob-size", "100"]);
    assert!(
        msg.contains("--min-blob-size needs --enable-blob-files"),
        "{msg}"
    );
    let msg = fails(&[
        "bench",
        "--num",
        "10",
        "--enable-blob-files",
        "--blob-garbage-collection-force-threshold",
        "0.5",
    ]);
    assert!(
        msg.contains("needs --enable-blob-garbage-collection"),
        "{msg}"
    );
    let msg = fails(&[
        "bench",
        "--num",
        "10",
        "--enable-blob-files",
        "--enable-blob-garbage-collection",
        "--blob-garbage-collection-age-cutoff",
        "1.5",
    ]);
    assert!(msg.contains("is not in [0, 1]"), "{msg}");
}

#[test]
fn inspect_levels_and_check_show_the_blob_files_of_an_image() {
    let _serial = serial();
    let img = Img::filled(&[
        "--enable-blob-files",
        "--min-blob-size",
        "100",
        "--blob-file-size",
        "64KiB",
    ]);
    let levels = json(&ok(&["inspect", "levels", "--device", &img.spec, "--json"]));
    let blobs = levels["blob_files"].as_array().unwrap();
    assert!(!blobs.is_empty(), "{levels}");
    let linked: u64 = blobs
        .iter()
        .map(|b| b["linked_tables"].as_u64().unwrap())
        .sum();
    let tables: u64 = levels["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["files"].as_u64().unwrap())
        .sum();
    // Every value is above the minimum: every table links a blob file.
    assert_eq!(linked, tables, "{levels}");
    let human = ok(&["inspect", "levels", "--device", &img.spec]);
    assert!(human.contains("linked blob files"), "{human}");
    assert!(
        human.contains(&format!("blob files: {} of ", blobs.len())),
        "{human}"
    );
    let check = json(&ok(&["check", "--device", &img.spec, "--json"]));
    assert_eq!(check["clean"], true);
    assert_eq!(check["database"]["blob_files"], blobs.len());
}
