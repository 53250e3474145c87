//! End-to-end tests of `zkv bench --preset NAME [--quick]`: the real binary, with `--num`
//! kept tiny so that a preset's full device and LSM shape run in a fraction of a second.

mod common;
use common::*;

use serde_json::Value;

#[test]
fn quick_caza22_with_a_tiny_num_runs_the_preset_and_records_it() {
    let _guard = serial();
    let report = TempJson::new();
    let stdout = ok(&[
        "bench",
        "--preset",
        "caza22",
        "--quick",
        "--num",
        "20000",
        "--json",
        &report.arg,
    ]);
    assert!(stdout.contains("Preset caza22"), "{stdout}");
    assert!(stdout.contains("1/128 scale"), "{stdout}");
    assert!(stdout.contains("also runs"), "{stdout}");
    assert!(stdout.contains("caza placement"), "{stdout}");
    for name in ["fillseq", "overwrite"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(name) && l.contains("ops/sec")),
            "no {name} line in {stdout}"
        );
    }
    let config = &report.read()["config"];
    assert_eq!(config["preset"], "caza22");
    assert_eq!(config["quick"], true);
    assert_eq!(config["num"], 20000, "the explicit --num wins");
    assert_eq!(config["zones"], 100);
    assert_eq!(config["zone_size"], 8 * MIB);
    assert_eq!(config["reserved_zones"], 10);
    assert_eq!(config["write_buffer_size"], 512 * KIB);
    assert_eq!(config["target_file_size_base"], 512 * KIB);
    assert_eq!(config["max_bytes_for_level_base"], 2 * MIB);
    assert_eq!(config["value_size"], 128);
    assert_eq!(config["workload"], "fillseq,overwrite");
}

#[test]
fn samezone24_runs_with_its_device_model_and_names_the_other_schemes() {
    let _guard = serial();
    let report = TempJson::new();
    let stdout = ok(&[
        "bench",
        "--preset",
        "samezone24",
        "--quick",
        "--workload",
        "ycsb-a",
        "--request-distribution",
        "latest",
        "--num",
        "3000",
        "--json",
        &report.arg,
    ]);
    for part in [
        "Preset samezone24",
        "timing model confzns",
        "--schemes baseline,a-liza,caza,a-caza",
        "--request-distribution zipfian|latest|uniform",
        "zkv repro samezone24",
    ] {
        assert!(stdout.contains(part), "{part:?} missing in {stdout}");
    }
    let v = report.read();
    let config = &v["config"];
    assert_eq!(config["zones"], 67);
    assert_eq!(config["zone_size"], 8 * MIB);
    assert_eq!(config["timing"], "confzns");
    assert_eq!(config["request_distribution"], "latest");
    assert_eq!(config["workload"], "ycsb-a");
    assert!(v["device"]["busy_ns"].as_u64().expect("modeled") > 0);
}

#[test]
fn without_a_preset_the_config_says_so() {
    let _guard = serial();
    let report = TempJson::new();
    ok(&[
        &["bench", "--num", "500", "--json", &report.arg],
        &SMALL_STORE[..],
    ]
    .concat());
    let config = &report.read()["config"];
    assert_eq!(config["preset"], Value::Null);
    assert_eq!(config["quick"], false);
}

#[test]
fn an_unknown_preset_is_one_usage_error_listing_the_known_ones() {
    let (_, err) = fails_run(&["bench", "--preset", "nope"], 2);
    assert!(err.contains("'nope'"), "{err}");
    assert!(
        err.contains("caza22, samezone24, prophet24, samevictim24"),
        "{err}"
    );
}

#[test]
fn quick_without_a_preset_is_a_usage_error() {
    let (_, err) = fails_run(&["bench", "--quick"], 2);
    assert!(err.contains("--preset"), "{err}");
}

#[test]
fn samevictim24_runs_blobdb_with_the_papers_threads() {
    let _guard = serial();
    let report = TempJson::new();
    let stdout = ok(&[
        "bench",
        "--preset",
        "samevictim24",
        "--quick",
        "--num",
        "3000",
        "--mode",
        "deterministic",
        "--verify",
        "--json",
        &report.arg,
    ]);
    assert!(stdout.contains("BlobDB as the paper runs it"), "{stdout}");
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
    let r = report.read();
    let config = &r["config"];
    assert_eq!(config["enable_blob_files"], true);
    assert_eq!(config["enable_blob_garbage_collection"], true);
    assert_eq!(config["blob_file_size"], 512 * 1024);
    assert_eq!(config["flush_threads"], 2);
    assert_eq!(config["compaction_threads"], 2);
    assert_eq!(config["max_subcompactions"], 4);
    assert_eq!(r["scheme"], "baseline");
    assert!(r["blob"]["blob_bytes_written"].as_u64().unwrap_or(0) > 0);
}

#[test]
fn explicit_flags_still_meet_the_checks() {
    // A preset does not switch the checks off: an explicit device too small is refused.
    let (_, err) = fails_run(
        &["bench", "--preset", "samezone24", "--quick", "--zones", "8"],
        1,
    );
    assert!(err.starts_with("device too small"), "{err}");
}
