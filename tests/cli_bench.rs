//! End-to-end tests of `zkv bench`: the real binary on a tiny in-memory (or image) device,
//! small memtables and SSTs so that flushes, compactions and zone cleaning all happen in
//! a fraction of a second.

mod common;
use common::*;

use serde_json::{json, Value};
use tempfile::TempDir;

/// `zkv bench` with the small setup; a flag of `extra` replaces the same flag of
/// [`SMALL_STORE`].
fn bench(extra: &[&str]) -> Vec<String> {
    let mut args = vec!["bench"];
    for pair in SMALL_STORE.chunks(2) {
        if !extra.contains(&pair[0]) {
            args.extend_from_slice(pair);
        }
    }
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

fn run_ok(args: &[String]) -> String {
    ok(&refs(args))
}

fn fails(args: &[String]) -> String {
    fails_run(&refs(args), 1).1
}

/// [`bench`] of `workload` × `num` in deterministic mode with `extra`, writing its JSON
/// report into a temporary directory: the command line, and where the report goes.
fn deterministic(workload: &str, num: &str, extra: &[&str]) -> (Vec<String>, TempJson) {
    let report = TempJson::new();
    let mut args = vec![
        "--workload",
        workload,
        "--num",
        num,
        "--mode",
        "deterministic",
    ];
    args.extend_from_slice(extra);
    args.extend(["--json", report.arg.as_str()]);
    (bench(&args), report)
}

/// The db_bench line of `name`: `name : X micros/op Y ops/sec ...`.
fn result_line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split(" :").next().map(str::trim_end) == Some(name))
        .unwrap_or_else(|| panic!("no result line for {name} in:\n{stdout}"))
}

#[test]
fn every_workload_prints_its_db_bench_line_and_the_summaries() {
    let _guard = serial();
    let list = "fillseq,fillrandom,overwrite,readrandom,readrandomwriterandom,ycsb-a,ycsb-e";
    let stdout = run_ok(&bench(&[
        "--workload",
        list,
        "--num",
        "1500",
        "--mode",
        "deterministic",
        "--verify",
    ]));
    for name in list.split(',').chain(["ycsb-a-load", "ycsb-e-load"]) {
        let line = result_line(&stdout, name);
        assert!(line.contains(" micros/op "), "{line}");
        assert!(line.contains(" ops/sec "), "{line}");
        assert!(line.contains(" 1500 operations;"), "{line}");
    }
    // readrandom after the fills finds every key of the key space it draws.
    let read = result_line(&stdout, "readrandom");
    assert!(read.ends_with("(1500 of 1500 found)"), "{read}");
    for part in [
        "Latency (us)",
        "\nput ",
        "\nget ",
        "\nscan ",
        "** Compaction Stats **",
        "\n Sum ",
        "Zones: 21 data zones",
        "Write amplification: LSM ",
        "Zone resets: ",
        "Cleaning: ",
        "Verify: ",
    ] {
        assert!(stdout.contains(part), "{part:?} missing in:\n{stdout}");
    }
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
}

#[test]
fn threaded_run_on_an_image_verifies_and_keeps_the_image() {
    let _guard = serial();
    let dir = TempDir::new().unwrap();
    let img = dir.path().join("bench.img");
    let device = format!("file:{}", img.display());
    let report = dir.path().join("r.json");
    let stdout = run_ok(&bench(&[
        "--workload",
        "fillrandom,overwrite",
        "--num",
        "2000",
        "--device",
        &device,
        "--compaction-threads",
        "2",
        "--flush-threads",
        "2",
        "--max-subcompactions",
        "3",
        "--bloom-bits",
        "5",
        "--block-size",
        "8KiB",
        "--wait-for-compaction",
        "--verify",
        "--json",
        &report.to_string_lossy(),
    ]));
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
    // Every flag reaches the run's options, as the report records them.
    let config = &read_json(&report)["config"];
    for (name, want) in [
        ("compaction_threads", Value::from(2)),
        ("flush_threads", Value::from(2)),
        ("max_subcompactions", Value::from(3)),
        ("bloom_bits", Value::from(5)),
        ("block_size", Value::from(8192)),
        ("wait_for_compaction", Value::from(true)),
        ("mode", Value::from("threaded")),
        ("device", Value::from(device.as_str())),
    ] {
        assert_eq!(config[name], want, "config.{name}");
    }
    // The image holds the database: inspect reads its levels.
    let levels = ok(&["inspect", "levels", "--device", &device]);
    assert!(levels.contains("tables"), "{levels}");
}

#[test]
fn deterministic_mode_gives_the_same_report_twice() {
    let _guard = serial();
    let dir = TempDir::new().unwrap();
    let mut reports = Vec::new();
    for run in ["a", "b"] {
        let path = dir.path().join(format!("{run}.json"));
        let json = path.to_string_lossy().into_owned();
        run_ok(&bench(&[
            "--workload",
            "fillrandom,overwrite,ycsb-b",
            "--num",
            "2000",
            "--seed",
            "7",
            "--mode",
            "deterministic",
            "--gc-start",
            "70",
            "--gc-stop",
            "80",
            "--zones",
            "8",
            "--json",
            &json,
        ]));
        let mut report = read_json(&path);
        strip_times(&mut report);
        reports.push(report);
    }
    assert_eq!(reports[0], reports[1]);
    // The run was big enough for the zone figures to mean something.
    let r = &reports[0];
    assert!(
        r["lsm"]["compactions"].as_u64().unwrap() > 0,
        "{}",
        r["lsm"]
    );
    assert!(r["gc"]["victims"].as_u64().unwrap() > 0, "{}", r["gc"]);
    // A different seed draws other keys.
    let other = dir.path().join("c.json");
    let json = other.to_string_lossy().into_owned();
    run_ok(&bench(&[
        "--workload",
        "fillrandom",
        "--num",
        "2000",
        "--seed",
        "8",
        "--mode",
        "deterministic",
        "--json",
        &json,
    ]));
    let mut c = read_json(&other);
    strip_times(&mut c);
    assert_ne!(c["device"], r["device"]);
}

fn field<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, key| {
        v.get(key)
            .unwrap_or_else(|| panic!("{path}: no {key} in {v}"))
    })
}

fn assert_numbers(v: &Value, section: &str, names: &[&str]) {
    for name in names {
        let path = format!("{section}.{name}");
        assert!(field(v, &path).is_number(), "{path} is not a number");
    }
}

#[test]
fn json_report_has_the_contract_fields() {
    let _guard = serial();
    let (args, report) = deterministic(
        "fillrandom,readrandom",
        "2000",
        &["--verify", "--sample-interval", "600"],
    );
    run_ok(&args);
    let v = report.read();
    assert_eq!(field(&v, "scheme"), "baseline");
    assert_eq!(field(&v, "workload"), "fillrandom,readrandom");
    for (name, want) in [
        ("num", Value::from(2000)),
        ("picker", Value::from("sica")),
        ("placement", Value::from("liza")),
        ("mode", Value::from("deterministic")),
        ("write_buffer_size", Value::from(65536)),
        ("zones", Value::from(24)),
        ("acc_turning_point", Value::from(25)),
        ("acc_min_level", Value::from(2)),
        ("timing", Value::from("none")),
    ] {
        assert_eq!(field(&v, &format!("config.{name}")), &want, "config.{name}");
    }
    assert_numbers(
        &v,
        "user",
        &[
            "ops",
            "bytes",
            "put_ops",
            "get_ops",
            "seconds",
            "ops_per_sec",
        ],
    );
    assert_eq!(field(&v, "user.ops"), 4000);
    assert_numbers(
        &v,
        "lsm",
        &[
            "flush_bytes",
            "compaction_bytes",
            "blob_bytes",
            "wal_bytes",
            "wa",
            "flushes",
            "compactions",
            "trivial_moves",
            "stall_ns",
        ],
    );
    assert_numbers(
        &v,
        "device",
        &[
            "write_bytes",
            "read_bytes",
            "wa",
            "total_wa",
            "zone_resets",
            "zero_copy_resets",
            "finishes",
        ],
    );
    assert_numbers(
        &v,
        "gc",
        &[
            "runs",
            "victims",
            "copy_bytes",
            "compacted_bytes",
            "blocking_ns",
        ],
    );
    assert_numbers(
        &v,
        "compaction",
        &[
            "s_same",
            "s_inval",
            "zones_per_compaction",
            "invalidated_bytes_per_zone",
        ],
    );
    assert!(field(&v, "compaction.per_level").is_array());
    assert!(v["config"].get("request_distribution").is_none());
    assert!(field(&v, "gc.victim_copy_bytes").is_array());
    for op in ["put", "get"] {
        assert_numbers(
            &v,
            &format!("latency_us.{op}"),
            &["p50", "p95", "p99", "p999"],
        );
    }
    assert_eq!(field(&v, "verify.mismatches"), 0);
    assert!(field(&v, "verify.checked").as_u64().unwrap() > 1000);
    // sica's ordering is timed while picking; liza asks for no neighbours.
    assert_numbers(&v, "policy_us", &["placement", "picker"]);
    // Sections without a source are absent, not zero.
    for absent in ["lifetime", "blob"] {
        assert!(v.get(absent).is_none(), "{absent} should be absent");
    }
    assert!(v["device"].get("busy_ns").is_none(), "no timing model");
    assert!(v["device"].get("timing").is_none(), "no timing model");
    // One point at the start, one every 600 operations, one at the end of each workload.
    let series = field(&v, "timeseries").as_array().unwrap();
    assert_eq!(
        times(series),
        [0, 600, 1200, 1800, 2000, 2400, 3000, 3600, 4000]
    );
    for point in series {
        for name in [
            "t",
            "free_ratio",
            "gc_copy_bytes",
            "device_write_bytes",
            "stall_ns",
            "full_zones",
        ] {
            assert!(point[name].is_number(), "timeseries {name} in {point}");
        }
        let buckets = point["invalid_ratios"].as_array().unwrap();
        assert_eq!(buckets.len(), 21, "{point}");
        let counted: u64 = buckets.iter().map(|b| b.as_u64().unwrap()).sum();
        assert_eq!(counted, point["full_zones"].as_u64().unwrap(), "{point}");
    }
    // The last point's distribution is the end-of-run one.
    let last = series.last().unwrap();
    assert_eq!(last["full_zones"], v["zone_invalid_ratios"]["full_zones"]);
    assert_eq!(series.last().unwrap()["phase"], "readrandom");
}

/// The operation counts (`t`) of the time-series points.
fn times(series: &[Value]) -> Vec<u64> {
    series.iter().map(|p| p["t"].as_u64().unwrap()).collect()
}

#[test]
fn bad_input_fails_before_any_work() {
    let _guard = serial();
    let dir = TempDir::new().unwrap();
    let report = dir.path().join("never.json");
    let json = report.to_string_lossy().into_owned();
    let img = dir.path().join("never.img");
    let device = format!("file:{}", img.display());
    let usage = |args: &[&str], want: &str| {
        let (_, msg) = fails_run(&[&["bench"], args].concat(), 2);
        assert!(msg.contains(want), "{args:?}: {msg}");
    };
    usage(&["--workload", "fillseq,nope"], "unknown workload \"nope\"");
    usage(&["--picker", "best"], "--picker");
    usage(&["--sim-cost", "job_ns"], "NAME=VALUE");
    usage(
        &["--benchmark-write-rate-limit", "0"],
        "--benchmark-write-rate-limit",
    );
    usage(&["--placement", "random"], "--placement");
    usage(&["--num", "0"], "--num");
    usage(&["--value-size", "0"], "must be greater than zero");
    usage(&["--key-size", "-4"], "cannot be negative");
    usage(&["--readwritepercent", "101"], "--readwritepercent");
    usage(&["--mode", "fast"], "threaded or deterministic");
    usage(&["--open-files", "0"], "--open-files");
    usage(&["--compression-type", "zlib"], "--compression-type");
    usage(&["--compression-ratio", "0"], "--compression-ratio");
    usage(&["--cache-size", "lots"], "--cache-size");
    // Refused after parsing, still before the device, the image or the JSON file exist.
    // fillrandom leaves ~63% of --num as distinct keys: 190k of 224 bytes overflow 21 MiB.
    let refused = |flags: &[&str]| {
        fails(&bench(
            &[flags, &["--device", &device, "--json", &json]].concat(),
        ))
    };
    let too_small = refused(&["--num", "300000"]);
    assert!(too_small.starts_with("device too small"), "{too_small}");
    assert!(too_small.contains("space amplification"), "{too_small}");
    assert!(
        too_small.ends_with("add --zones, or lower --num or --value-size"),
        "{too_small}"
    );
    // An L1 that may grow past the free room: an L0→L1 compaction rewrites all of it, and
    // its outputs need room beside it. The advice names the level's option.
    let l1 = refused(&["--num", "80000", "--max-bytes-for-level-base", "8MiB"]);
    assert!(
        l1.contains("plus 9.2 MiB for the largest compaction"),
        "{l1}"
    );
    assert!(
        l1.ends_with(
            "takes the L0 files and up to all of L1 (9.2 MiB here): lower \
             --max-bytes-for-level-base or --write-buffer-size, or add --zones"
        ),
        "{l1}"
    );
    // When the buffers in flight are most of the need, the advice names their options.
    let buffers = refused(&["--num", "100", "--write-buffer-size", "8MiB"]);
    assert!(
        buffers.ends_with("lower --write-buffer-size and --target-file-size-base, or add --zones"),
        "{buffers}"
    );
    for (args, want) in [
        (vec!["--sync", "--disable-wal"], "--sync and --disable-wal"),
        (
            vec!["--mode", "deterministic", "--sim-cost", "warp_ns=1"],
            "unknown cost 'warp_ns'",
        ),
        (
            vec!["--sim-cost", "job_ns=1"],
            "--sim-cost applies to --mode deterministic",
        ),
        (
            vec!["--max-subcompactions", "0"],
            "max_subcompactions must be at least 1",
        ),
        (
            vec!["--mode", "deterministic", "--sim-cost", "blob_read_ns=1"],
            "a blob cost needs --enable-blob-files",
        ),
        (
            vec!["--mode", "deterministic", "--sim-cost", "output_at_pct=101"],
            "sim.output_at_pct 101 is not a percentage of a job's duration (0 to 100)",
        ),
        (
            vec!["--mode", "deterministic", "--sim-cost", "spread_outputs=2"],
            "--sim-cost spread_outputs=2: 0 (a compaction writes its tables together) or 1",
        ),
        (
            vec![
                "--workload",
                "ycsb-a",
                "--request-distribution",
                "uniform",
                "--ycsb-property",
                "requestdistribution=latest",
            ],
            "give one of them",
        ),
        (vec!["--gc-start", "30", "--gc-stop", "20"], "gc_start"),
        (
            vec!["--level0-file-num-compaction-trigger", "0"],
            "L0 triggers",
        ),
        (vec!["--zones", "2"], "zones"),
        (
            vec![
                "--workload",
                "fillrandom,ycsb-a",
                "--readwritepercent",
                "50",
            ],
            "--readwritepercent 50: applies to readrandomwriterandom, and --workload \
             fillrandom,ycsb-a has none",
        ),
        (
            vec!["--acc-min-level", "1"],
            "only the acc and zone-drain pickers read it",
        ),
        (vec!["--device", "zbd:/dev/nope"], "mem or a new file"),
    ] {
        let mut a = vec!["--num", "100", "--json", &json];
        if !args.contains(&"--device") {
            a.extend(["--device", &device]);
        }
        a.extend(args);
        let msg = fails(&bench(&a));
        assert!(msg.contains(want), "{a:?}: {msg}");
    }
    assert!(!img.exists(), "a refused run created the image");
    assert!(!report.exists(), "a refused run created the JSON file");
    let unwritable = dir.path().join("no/such/dir/r.json");
    let msg = fails(&bench(&[
        "--num",
        "100",
        "--device",
        &device,
        "--json",
        &unwritable.to_string_lossy(),
    ]));
    assert!(msg.starts_with("--json "), "{msg}");
    assert!(
        !img.exists(),
        "an unwritable JSON path still created the image"
    );
    // An existing image is never overwritten.
    std::fs::write(&img, b"precious").unwrap();
    let msg = fails(&bench(&["--num", "100", "--device", &device]));
    assert!(msg.contains("already exists"), "{msg}");
    assert_eq!(std::fs::read(&img).unwrap(), b"precious");
}

#[test]
fn verify_reports_a_mismatch_and_fails() {
    let _guard = serial();
    // The hidden hook makes the oracle expect another value for one key; the store is
    // right, so exactly that key must be reported.
    let (args, report) = deterministic(
        "fillrandom",
        "500",
        &["--verify", "--verify-inject-mismatch"],
    );
    let (run, msg) = fails_run(&refs(&args), 1);
    assert!(
        msg.starts_with("verify: 1 of ") && msg.contains("holds another value"),
        "{msg}"
    );
    assert!(run.stdout.contains(", 1 mismatches"), "{}", run.stdout);
    let v = report.read();
    assert_eq!(field(&v, "verify.mismatches"), 1);
    assert!(field(&v, "verify.checked").as_u64().unwrap() > 300);
    // A point every 5 operations (--num / 100); the last one is also the workload's end,
    // taken once.
    let series = field(&v, "timeseries").as_array().unwrap();
    let every_5: Vec<u64> = (0..=500).step_by(5).collect();
    assert_eq!(times(series), every_5);
    // The hook is for tests only: hidden, and meaningless without --verify.
    let help = ok(&["bench", "--help"]);
    assert!(!help.contains("inject"), "{help}");
    let (_, msg) = fails_run(&["bench", "--verify-inject-mismatch"], 2);
    assert!(msg.contains("--verify"), "{msg}");
}

#[test]
fn running_out_of_space_mid_run_reports_it_and_writes_the_json() {
    let _guard = serial();
    // 60000 keys of 224 bytes pass the up-front estimate (17 of 21 MiB), but overwriting
    // them leaves more garbage than the copying cleaner can reclaim on 21 zones.
    let (args, report) = deterministic("fillseq,overwrite", "60000", &[]);
    let (run, msg) = fails_run(&refs(&args), 1);
    assert!(msg.starts_with("overwrite: operation "), "{msg}");
    assert!(msg.contains("out of space"), "{msg}");
    // What ran is reported: the finished workload's line and the summaries.
    result_line(&run.stdout, "fillseq");
    assert!(
        run.stdout.contains("Zones: 21 data zones"),
        "{}",
        run.stdout
    );
    let v = report.read();
    assert!(field(&v, "error")
        .as_str()
        .unwrap()
        .contains("out of space"));
    let phases = field(&v, "workloads").as_array().unwrap();
    assert_eq!(phases.len(), 2, "{phases:?}");
    assert_eq!(phases[0]["ops"], 60000);
    let done = phases[1]["ops"].as_u64().unwrap();
    assert!(done > 0 && done < 60000, "overwrite ran {done} operations");
    assert!(field(&v, "gc.copy_bytes").as_u64().unwrap() > 0);
}

#[test]
fn request_distribution_replaces_the_ycsb_workloads_own() {
    let _guard = serial();
    let mut reports = Vec::new();
    for dist in ["zipfian", "uniform"] {
        let (args, report) = deterministic(
            "ycsb-a",
            "2000",
            &["--request-distribution", dist, "--verify"],
        );
        run_ok(&args);
        let mut v = report.read();
        assert_eq!(field(&v, "config.request_distribution"), dist);
        assert_eq!(field(&v, "verify.mismatches"), 0);
        strip_times(&mut v);
        reports.push(v);
    }
    // The same seed draws other keys: zipfian's updates hit a few hot records, so fewer
    // distinct keys reach the flushed tables than with uniform ones.
    let flushed = |v: &Value| field(v, "lsm.flush_bytes").as_u64().unwrap();
    assert!(
        flushed(&reports[0]) < flushed(&reports[1]),
        "zipfian {} vs uniform {}",
        flushed(&reports[0]),
        flushed(&reports[1])
    );
    let msg = fails(&bench(&[
        "--workload",
        "fillrandom",
        "--request-distribution",
        "latest",
    ]));
    assert!(msg.contains("applies to YCSB workloads"), "{msg}");
    let (_, msg) = fails_run(&["bench", "--request-distribution", "pareto"], 2);
    assert!(msg.contains("zipfian, latest, uniform, hotspot"), "{msg}");
}

#[test]
fn timing_model_adds_device_time_to_the_report() {
    let _guard = serial();
    let (args, report) = deterministic("fillrandom", "2000", &["--timing", "confzns"]);
    let stdout = run_ok(&args);
    assert!(stdout.contains("Device time (confzns model)"), "{stdout}");
    let v = report.read();
    assert_eq!(field(&v, "config.timing"), "confzns");
    assert!(field(&v, "device.busy_ns").as_u64().unwrap() > 0);
    assert_eq!(field(&v, "device.timing.preset"), "confzns");
    assert_eq!(
        field(&v, "device.timing.busy_ns"),
        field(&v, "device.busy_ns")
    );
    let (_, msg) = fails_run(&["bench", "--timing", "slow"], 2);
    assert!(msg.contains("none, confzns, femu-tlc, zn540"), "{msg}");
}

#[test]
fn acc_flags_reach_the_engine_and_name_the_scheme() {
    let _guard = serial();
    let (args, report) = deterministic(
        "fillrandom",
        "2000",
        &[
            "--placement",
            "caza+",
            "--picker",
            "acc",
            "--acc-turning-point",
            "40",
            "--acc-min-level",
            "1",
        ],
    );
    run_ok(&args);
    let v = report.read();
    assert_eq!(field(&v, "scheme"), "a-caza");
    assert_eq!(field(&v, "config.acc_turning_point"), 40);
    assert_eq!(field(&v, "config.acc_min_level"), 1);
    assert_eq!(field(&v, "config.placement"), "caza+");
    // caza+ asks for every new SST's neighbours, and both policies are timed.
    assert_numbers(&v, "policy_us", &["placement", "picker", "neighbors"]);
    let (_, msg) = fails_run(&["bench", "--acc-turning-point", "101"], 2);
    assert!(msg.contains("--acc-turning-point"), "{msg}");
    let msg = fails(&bench(&[
        "--num",
        "100",
        "--picker",
        "acc",
        "--acc-min-level",
        "7",
    ]));
    assert!(msg.contains("acc_min_level 7"), "{msg}");
    // Another picker reads neither flag: given with it, they are refused, not ignored.
    for (picker, flag) in [
        ("sica", "--acc-min-level"),
        ("min-overlap", "--acc-turning-point"),
    ] {
        let msg = fails(&bench(&["--num", "100", "--picker", picker, flag, "1"]));
        assert_eq!(
            msg,
            format!(
                "{flag}: only the acc and zone-drain pickers read it, and the picker is {picker}"
            )
        );
    }
    run_ok(&bench(&[
        "--num",
        "100",
        "--picker",
        "zone-drain",
        "--acc-turning-point",
        "30",
    ]));
}

/// Deterministic mode repeats itself exactly, cleaning included: the order in which the
/// cleaner's victims are reset (which waits for table readers to let go of them) and the
/// device time the timing model derives from the I/O sequence. Readers used to be released
/// in hash order, so these differed from run to run while the byte totals agreed.
#[test]
fn deterministic_runs_repeat_their_cleaning_exactly() {
    let _guard = serial();
    let run = || {
        let report = TempJson::new();
        ok(&[
            "bench",
            "--workload",
            "ycsb-a",
            "--request-distribution",
            "uniform",
            "--num",
            "15000",
            "--value-size",
            "1000",
            "--zones",
            "40",
            "--zone-size",
            "1MiB",
            "--write-buffer-size",
            "128KiB",
            "--target-file-size-base",
            "128KiB",
            "--max-bytes-for-level-base",
            "512KiB",
            "--timing",
            "confzns",
            "--mode",
            "deterministic",
            "--json",
            &report.arg,
        ]);
        report.read()
    };
    let (a, b) = (run(), run());
    let victims = field(&a, "gc.victim_copy_bytes").as_array().unwrap().len();
    assert!(victims > 50, "the run must clean: {victims} victims");
    for path in [
        "gc.victim_copy_bytes",
        "device.write_bytes",
        "device.zone_resets",
        "device.timing.elapsed_ns",
    ] {
        assert_eq!(field(&a, path), field(&b, path), "{path}");
    }
    let stable = |v: &Value| -> Vec<Value> {
        let points = v["timeseries"].as_array().unwrap();
        points
            .iter()
            .map(|p| {
                json!([
                    p["t"],
                    p["free_ratio"],
                    p["gc_copy_bytes"],
                    p["invalid_ratios"]
                ])
            })
            .collect()
    };
    assert_eq!(stable(&a), stable(&b));
}

#[test]
fn reading_an_empty_store_warns_once_and_still_succeeds() {
    let _guard = serial();
    let args = bench(&["--workload", "readrandom", "--num", "500"]);
    let r = zkv(&refs(&args));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(result_line(&r.stdout, "readrandom").ends_with("(0 of 500 found)"));
    assert_eq!(
        r.stderr.trim_end(),
        "warning: readrandom found none of the keys it read: the store holds none of them \
         (an empty store? run a fill workload first, e.g. --workload fillrandom,readrandom)"
    );
    // After a fill, nothing to warn about (run_ok requires an empty stderr).
    run_ok(&bench(&[
        "--workload",
        "fillrandom,readrandom",
        "--num",
        "500",
    ]));
}

#[test]
fn the_device_line_names_small_files_apart_from_the_users_data() {
    let _guard = serial();
    let (args, report) = deterministic("fillrandom", "500", &[]);
    let stdout = run_ok(&args);
    let device = stdout
        .lines()
        .find(|l| l.starts_with("Device: "))
        .expect("a Device line");
    assert!(device.contains("(manifest/other "), "{device}");
    assert!(!device.contains("(user "), "{device}");
    // The JSON contract keeps its key.
    let v = report.read();
    assert!(
        v["device"]["write_bytes_by_category"]["user"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// `--cache-size` and `--open-files` reach the engine: reads hit the block cache (fewer
/// device reads than without one, the same answers), and at most N tables stay open.
#[test]
fn block_cache_and_open_files_limit_the_reads() {
    let _guard = serial();
    let run = |extra: &[&str]| {
        let (args, report) = deterministic("fillrandom,readrandom", "3000", extra);
        let out = run_ok(&args);
        (out, report.read())
    };
    let (none_out, none) = run(&["--cache-size", "0", "--verify"]);
    let (cached_out, cached) = run(&["--cache-size", "4MiB", "--verify"]);
    let (_, few_open) = run(&["--open-files", "3", "--verify"]);
    assert!(none_out.contains("Block cache: none"), "{none_out}");
    assert!(cached_out.contains("Block cache: "), "{cached_out}");
    assert_eq!(field(&none, "config.cache_size"), 0);
    assert_eq!(field(&cached, "config.cache_size"), 4 << 20);
    assert_eq!(field(&cached, "config.open_files"), -1);
    assert_eq!(field(&few_open, "config.open_files"), 3);
    let hits = field(&cached, "cache.block_cache_hits").as_u64().unwrap();
    assert!(hits > 0, "no block cache hit");
    assert_eq!(field(&none, "cache.block_cache_hits"), 0);
    let open = |v: &Value| field(v, "cache.open_tables").as_u64().unwrap();
    assert!(
        open(&few_open) <= 3 && open(&cached) > 3,
        "{few_open} {cached}"
    );
    let read = |v: &Value| field(v, "device.read_bytes").as_u64().unwrap();
    assert!(
        read(&cached) < read(&none),
        "{} vs {}",
        read(&cached),
        read(&none)
    );
    // Tables closed and opened again read their index and filter again.
    assert!(read(&few_open) > read(&cached));
    // The writes do not depend on the read caches.
    assert_eq!(field(&cached, "lsm"), field(&none, "lsm"));
    assert_eq!(field(&few_open, "lsm"), field(&none, "lsm"));
}

/// `--compression-type` compresses the tables (half-random values: about half the flush
/// bytes), reads them back (`--verify`), and is recorded with the values' ratio;
/// `--compression-ratio` alone is refused (it would change nothing).
#[test]
fn compression_halves_the_tables_of_half_random_values() {
    let _guard = serial();
    let run = |extra: &[&str]| {
        let (args, report) = deterministic("fillrandom,readrandom", "3000", extra);
        run_ok(&args);
        report.read()
    };
    let plain = run(&["--verify"]);
    assert_eq!(field(&plain, "config.compression_type"), "none");
    assert!(plain["config"].get("compression_ratio").is_none());
    let flushed = |v: &Value| field(v, "lsm.flush_bytes").as_f64().unwrap();
    for codec in ["snappy", "lz4", "zstd"] {
        let v = run(&["--compression-type", codec, "--verify"]);
        assert_eq!(field(&v, "config.compression_type"), codec);
        assert_eq!(field(&v, "config.compression_ratio"), 0.5);
        let ratio = flushed(&v) / flushed(&plain);
        assert!(
            (0.4..0.75).contains(&ratio),
            "{codec}: flush bytes {ratio:.2} of plain"
        );
        assert_eq!(field(&v, "verify.mismatches"), 0);
    }
    let refused = fails(&bench(&["--compression-ratio", "0.5"]));
    assert!(
        refused.contains("--compression-ratio applies with --compression-type"),
        "{refused}"
    );
}

/// `--sim-cost output_at_pct=N` is recorded in the report's `config.sim` only when it is
/// not the default, and `spread_outputs` (1) only when it is on, the default: a report
/// without it was made with a job's tables written together (every report made before
/// the option existed reads so). Writing outputs earlier, or all together, changes the
/// schedule's bytes, not what the store holds.
#[test]
fn output_instant_and_spread_are_recorded_only_when_set() {
    let (args, report) = deterministic("fillrandom", "20000", &["--verify"]);
    assert!(run_ok(&args).contains("0 mismatches"));
    let default = report.read();
    let sim = &default["config"]["sim"];
    assert!(sim["job_ns"].is_u64(), "{}", default["config"]);
    assert!(sim.get("output_at_pct").is_none());
    assert_eq!(sim["spread_outputs"], 1);
    let extra = ["--verify", "--sim-cost", "output_at_pct=0"];
    let (args, report) = deterministic("fillrandom", "20000", &extra);
    assert!(run_ok(&args).contains("0 mismatches"));
    assert_eq!(report.read()["config"]["sim"]["output_at_pct"], 0);
    let extra = ["--verify", "--sim-cost", "spread_outputs=0"];
    let (args, report) = deterministic("fillrandom", "20000", &extra);
    assert!(run_ok(&args).contains("0 mismatches"));
    let together = report.read();
    assert!(together["config"]["sim"].get("spread_outputs").is_none());
}
