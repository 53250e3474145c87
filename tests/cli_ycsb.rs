//! `zkv bench` driven as YCSB and db_bench users drive theirs: `--use-existing-db` on an
//! image an earlier run left, YCSB's workload files (`-P`), properties (`-p`), counts, load
//! and run as two invocations (`--ycsb-phase`), `--target`, and YCSB's per-operation
//! measurements. Every run is deterministic on the small store of the CLI tests.

mod common;
use common::*;

use std::path::PathBuf;

use serde_json::Value;

/// One of the workload files of the repository's `workloads/`.
fn workload_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(name);
    path.to_str().expect("a UTF-8 path").to_string()
}

/// `zkv bench` in deterministic mode without progress lines, the engine sizes of
/// [`SMALL_STORE`], and `extra`; the geometry of [`SMALL_STORE`] too unless `existing`
/// (an existing image has its own), and its value size unless `extra` reads a workload
/// file (whose records have their own).
fn bench(existing: bool, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "bench",
        "--mode",
        "deterministic",
        "--progress-interval",
        "0",
    ];
    let file = extra.contains(&"-P");
    for pair in SMALL_STORE.chunks(2) {
        let geometry = pair[0] == "--zones" || pair[0] == "--zone-size";
        let value = pair[0] == "--value-size";
        let dropped = (existing && geometry) || (file && value);
        if !dropped && !extra.contains(&pair[0]) {
            args.extend_from_slice(pair);
        }
    }
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

/// Runs [`bench`], which must succeed without a word on stderr; returns stdout and the
/// JSON report.
fn run(existing: bool, extra: &[&str]) -> (String, Value) {
    let report = TempJson::new();
    let mut args = bench(existing, extra);
    args.extend(["--json".to_string(), report.arg.clone()]);
    let stdout = ok(&refs(&args));
    (stdout, report.read())
}

/// The names and operations of the report's phases.
fn phases(r: &Value) -> Vec<(String, u64)> {
    let all = r["workloads"].as_array().expect("workloads");
    all.iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), count(&p["ops"])))
        .collect()
}

/// A deterministic fillrandom of 3000 keys on a new image (its distinct keys: about 63 %).
fn filled() -> Img {
    Img::filled(&["--mode", "deterministic", "--progress-interval", "0"])
}

#[test]
fn ycsb_loads_then_runs_on_one_image() {
    let _guard = serial();
    let img = Img::none();
    let file = workload_file("workloada");
    let load = ["-P", &file, "--ycsb-phase", "load", "--device", &img.spec];
    let (stdout, r) = run(false, &load);
    assert_eq!(phases(&r), [("ycsb-load".to_string(), 1000)]);
    // fieldcount=10 × fieldlength=100: records of 1000 bytes, not --value-size's 200.
    assert_eq!(r["config"]["ycsb_value_size"], 1000);
    assert_eq!(count(&r["user"]["put_ops"]), 1000);
    assert!(stdout.contains("[INSERT], Operations, 1000"), "{stdout}");
    let run_phase = ["-P", &file, "--ycsb-phase", "run", "--device", &img.spec];
    let (stdout, r) = run(true, &[&run_phase[..], &["--verify"]].concat());
    assert_eq!(phases(&r), [("ycsb".to_string(), 1000)]);
    let p = &r["workloads"][0];
    // Every read finds a record the load left.
    assert_eq!(p["found"], p["get_ops"]);
    let (reads, updates) = (count(&p["get_ops"]), count(&p["put_ops"]));
    assert_eq!(reads + updates, 1000);
    assert!((400..600).contains(&reads), "{reads} reads");
    // YCSB's measurements, per kind of operation, in the report and on stdout.
    for (kind, n) in [("READ", reads), ("UPDATE", updates)] {
        let l = &p["latency_us"][kind];
        assert_eq!(count(&l["count"]), n, "{kind}");
        for f in ["mean", "min", "max", "p95", "p99"] {
            assert!(l[f].as_f64().is_some_and(|v| v > 0.0), "{kind}.{f}: {l}");
        }
        assert!(
            stdout.contains(&format!("\n[{kind}], Operations, {n}\n")),
            "{stdout}"
        );
        for f in ["AverageLatency(us)", "MinLatency(us)", "MaxLatency(us)"] {
            assert!(
                stdout.contains(&format!("\n[{kind}], {f}, ")),
                "{f}: {stdout}"
            );
        }
        for f in ["95thPercentileLatency(us)", "99thPercentileLatency(us)"] {
            assert!(
                stdout.contains(&format!("\n[{kind}], {f}, ")),
                "{f}: {stdout}"
            );
        }
    }
    assert!(p["latency_us"].get("INSERT").is_none());
    assert!(
        stdout.contains("YCSB ycsb:\n[OVERALL], RunTime(ms), "),
        "{stdout}"
    );
    // The run checks the keys it updated; the image keeps its own geometry.
    let checked = count(&r["verify"]["checked"]);
    assert!(checked > 0 && checked <= updates, "{checked}");
    assert_eq!(r["verify"]["mismatches"], 0);
    let config = &r["config"];
    assert_eq!(config["use_existing_db"], true);
    assert_eq!(config["ycsb_phase"], "run");
    assert_eq!(
        (&config["zones"], &config["recordcount"]),
        (&24.into(), &1000.into())
    );
    // Workload C reads the same records, as often as asked: nothing changes them.
    let c = workload_file("workloadc");
    for _ in 0..2 {
        let (_, r) = run(
            true,
            &["-P", &c, "--ycsb-phase", "run", "--device", &img.spec],
        );
        let p = &r["workloads"][0];
        assert_eq!((count(&p["get_ops"]), count(&p["found"])), (1000, 1000));
    }
}

#[test]
fn an_existing_db_is_read_as_a_fill_left_it() {
    let _guard = serial();
    let img = filled();
    let existing = ["--use-existing-db", "--device", &img.spec, "--num", "3000"];
    let (_, seq) = run(true, &[&existing[..], &["--workload", "readseq"]].concat());
    let keys = count(&seq["workloads"][0]["ops"]);
    assert!((1700..2100).contains(&keys), "{keys} distinct keys");
    // A key `zkv put` wrote (into the WAL) is there on the next open.
    ok(&["put", "--device", &img.spec, "~put", "by hand"]);
    let (_, seq) = run(true, &[&existing[..], &["--workload", "readseq"]].concat());
    assert_eq!(count(&seq["workloads"][0]["ops"]), keys + 1);
    // db_bench's spelling; readrandom draws from --num's key space, as usual.
    let again = [
        "--use_existing_db=1",
        "--device",
        &img.spec,
        "--num",
        "3000",
    ];
    let args = [
        &again[..],
        &["--workload", "readrandom,seekrandom", "--reads", "1000"],
        // With the fill's seed, readrandom would draw the very keys the fill wrote.
        &["--seed", "9"],
    ];
    let (_, r) = run(true, &args.concat());
    let found = count(&r["workloads"][0]["found"]);
    assert!((500..800).contains(&found), "{found} of 1000 found");
    assert!(count(&r["workloads"][1]["seek_found"]) > 0);
    // The keys a write touches are checked; deleting them all leaves nothing to read.
    let args = [
        &existing[..],
        &["--workload", "fillseq,deleterandom,readseq"],
    ];
    let (_, r) = run(true, &[&args.concat()[..], &["--verify"]].concat());
    assert_eq!(count(&r["verify"]["checked"]), 3000);
    assert_eq!(r["verify"]["mismatches"], 0);
    let left = count(&r["workloads"][2]["ops"]);
    assert!(
        (900..1300).contains(&left),
        "{left} keys escaped deleterandom"
    );
}

#[test]
fn the_same_image_and_seed_give_the_same_report() {
    let _guard = serial();
    let img = filled();
    let copy = img.path.with_extension("copy");
    std::fs::copy(&img.path, &copy).unwrap();
    let flags = [
        "--use-existing-db",
        "--device",
        &img.spec,
        "--workload",
        "overwrite,readrandom",
        "--num",
        "3000",
        "--seed",
        "5",
    ];
    let (_, mut first) = run(true, &flags);
    std::fs::copy(&copy, &img.path).unwrap();
    let (_, mut second) = run(true, &flags);
    strip_times(&mut first);
    strip_times(&mut second);
    assert_eq!(first, second);
    // The run wrote the image: the same flags on it now read other tables.
    let (_, mut third) = run(true, &flags);
    strip_times(&mut third);
    assert_ne!(first["lsm"], third["lsm"]);
}

#[test]
fn only_an_image_with_a_database_is_an_existing_db() {
    let _guard = serial();
    let read = [
        "--use-existing-db",
        "--workload",
        "readrandom",
        "--num",
        "100",
    ];
    let refused = |device: &str| {
        fails(&refs(&bench(
            true,
            &[&read[..], &["--device", device]].concat(),
        )))
    };
    assert_eq!(
        refused("mem"),
        "--use-existing-db runs on the database an earlier run left on an image: give \
         --device file:PATH (--device mem starts empty)"
    );
    let missing = Img::none();
    assert_eq!(
        refused(&missing.spec),
        format!(
            "--use-existing-db: no image at {p} (a zkv bench run with --device file:{p} and \
             without --use-existing-db creates one)",
            p = missing.path.display()
        )
    );
    // Another format: a file that is no zone image.
    let other = Img::none();
    std::fs::write(
        &other.path,
        b"SQLite format 3\0 and more bytes of another program",
    )
    .unwrap();
    assert_eq!(
        refused(&other.spec),
        format!(
            "--use-existing-db: {}: not a zkv zone image (bad magic)",
            other.path.display()
        )
    );
    let blank = Img::blank(8, "1MiB");
    assert_eq!(
        refused(&blank.spec),
        format!(
            "--use-existing-db: no zkv file system on {} (not an image a zkv bench run left)",
            blank.spec
        )
    );
    let empty = Img::none();
    ok(&[
        "mkfs",
        "--device",
        &empty.spec,
        "--zones",
        "8",
        "--zone-size",
        "1MiB",
    ]);
    assert_eq!(
        refused(&empty.spec),
        format!(
            "--use-existing-db: no zkv database on {} (its file system is empty: no run left \
             a database on it)",
            empty.spec
        )
    );
}

#[test]
fn flags_an_existing_db_cannot_take_are_refused() {
    let _guard = serial();
    let img = filled();
    let existing = ["--use-existing-db", "--device", &img.spec, "--num", "3000"];
    let refused = |flags: &[&str]| fails(&refs(&bench(true, &[&existing[..], flags].concat())));
    assert_eq!(
        refused(&["--zones", "24"]),
        "--zones: --use-existing-db runs on the image's own geometry and file system \
         options; give it to the run that creates the image"
    );
    assert_eq!(
        refused(&["--placement", "caza+"]),
        "--placement: --use-existing-db runs on the image's own geometry and file system \
         options; give it to the run that creates the image"
    );
    assert_eq!(
        refused(&["--workload", "readrandom,readseq", "--verify"]),
        "--verify with --use-existing-db checks the keys this run writes or deletes (what \
         the image held before is not known to it), and --workload readrandom,readseq \
         writes none"
    );
    // =0 turns it off again: a run on a new image, which is refused where one exists.
    let off = ["--use-existing-db=0", "--device", &img.spec, "--num", "100"];
    let msg = fails(&refs(&bench(false, &off)));
    assert!(
        msg.ends_with("already exists; zkv bench creates a new image and never overwrites a file"),
        "{msg}"
    );
    // A YCSB run phase works on an existing image only.
    let msg = fails(&refs(&bench(
        true,
        &["--workload", "ycsb-c", "--ycsb-phase", "run"],
    )));
    assert!(
        msg.starts_with("--ycsb-phase run runs on the database an earlier run left"),
        "{msg}"
    );
}

#[test]
fn properties_and_counts_shape_the_ycsb_workloads() {
    let _guard = serial();
    // YCSB's -p, and the counts as flags; the load and the run of one invocation.
    let (stdout, r) = run(
        false,
        &[
            "--workload",
            "ycsb-a",
            "-p",
            "recordcount=600",
            "--operationcount",
            "400",
            "-p",
            "readproportion=0",
            "-p",
            "updateproportion=0.5",
            "-p",
            "readmodifywriteproportion=0.5",
        ],
    );
    assert_eq!(
        phases(&r),
        [
            ("ycsb-a-load".to_string(), 600),
            ("ycsb-a".to_string(), 400)
        ]
    );
    let l = &r["workloads"][1]["latency_us"];
    let (updates, rmws) = (
        count(&l["UPDATE"]["count"]),
        count(&l["READ-MODIFY-WRITE"]["count"]),
    );
    assert_eq!(updates + rmws, 400);
    assert!(l.get("READ").is_none());
    assert!(
        stdout.contains("\n[READ-MODIFY-WRITE], Operations, "),
        "{stdout}"
    );
    assert_eq!(r["config"]["recordcount"], 600);
    assert_eq!(r["config"]["operationcount"], 400);
    assert_eq!(r["config"]["ycsb_properties"]["recordcount"], "600");
    // Without a YCSB flag, the config of a YCSB run is what it was.
    let (_, plain) = run(false, &["--workload", "ycsb-b", "--num", "300"]);
    for absent in [
        "recordcount",
        "operationcount",
        "ycsb_value_size",
        "ycsb_phase",
        "target",
    ] {
        assert!(plain["config"].get(absent).is_none(), "config.{absent}");
    }
}

#[test]
fn target_paces_the_operations() {
    let _guard = serial();
    let (_, r) = run(
        false,
        &["--workload", "ycsb-c", "--num", "500", "--target", "50000"],
    );
    // 500 operations at 50000 per second: 10 ms of virtual time each phase.
    for p in r["workloads"].as_array().unwrap() {
        let s = p["virtual_seconds"].as_f64().unwrap();
        assert!((0.0099..0.0115).contains(&s), "{}: {s} s", p["name"]);
    }
    assert_eq!(r["config"]["target"], 50000);
}

#[test]
fn a_workload_file_warns_of_what_it_ignores_and_refuses_bad_values() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("workloadx");
    let path = file.to_str().unwrap();
    std::fs::write(
        &file,
        "workload=site.ycsb.workloads.CoreWorkload\nrecordcount=300\noperationcount=200\n\
         threadcount=4\nexportfile=out.txt\n",
    )
    .unwrap();
    let r = zkv(&refs(&bench(false, &["-P", path])));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "warning: -P {path}: line 4: threadcount is not a YCSB property zkv bench reads; \
             ignored (zkv bench runs one client thread)\n\
             warning: -P {path}: line 5: exportfile is not a YCSB property zkv bench reads; \
             ignored\n"
        )
    );
    // CoreWorkload's defaults: 95 % reads, 5 % updates.
    assert!(r.stdout.contains("ycsb-load    : "), "{}", r.stdout);
    assert!(r.stdout.contains(" 200 operations;"), "{}", r.stdout);
    std::fs::write(&file, "recordcount=300\n\nreadproportion=most\n").unwrap();
    assert_eq!(
        fails(&refs(&bench(false, &["-P", path]))),
        format!("-P {path}: line 3: YCSB property readproportion=most: invalid float literal")
    );
    std::fs::write(&file, "requestdistribution=exponential\n").unwrap();
    assert_eq!(
        fails(&refs(&bench(false, &["--ycsb-properties", path]))),
        format!(
            "-P {path}: line 1: YCSB property requestdistribution=exponential: known: \
             zipfian, latest, uniform, hotspot"
        )
    );
    let missing = dir.path().join("nope");
    let msg = fails(&refs(&bench(false, &["-P", missing.to_str().unwrap()])));
    assert!(
        msg.starts_with(&format!("-P {}: ", missing.display())),
        "{msg}"
    );
}

#[test]
fn ycsb_flags_need_a_ycsb_workload_and_one_count_each() {
    let _guard = serial();
    for (flags, want) in [
        (
            &["--recordcount", "10"][..],
            "--recordcount 10: applies to YCSB workloads (ycsb-a .. ycsb-f, ycsb), and \
             --workload fillseq has none",
        ),
        (
            &["--ycsb-phase", "load"],
            "--ycsb-phase load: applies to YCSB workloads (ycsb-a .. ycsb-f, ycsb), and \
             --workload fillseq has none",
        ),
    ] {
        let args = bench(
            false,
            &[&["--workload", "fillseq", "--num", "100"], flags].concat(),
        );
        assert_eq!(fails(&refs(&args)), want);
    }
    let file = workload_file("workloada");
    let args = bench(
        false,
        &["--workload", "fillseq", "--num", "100", "-P", &file],
    );
    assert_eq!(
        fails(&refs(&args)),
        format!(
            "-P {file}: applies to YCSB workloads (ycsb-a .. ycsb-f, ycsb), and --workload \
             fillseq has none"
        )
    );
    let both = [
        "--workload",
        "ycsb-a",
        "--operationcount",
        "5",
        "-p",
        "operationcount=6",
    ];
    assert_eq!(
        fails(&refs(&bench(false, &both))),
        "--operationcount and --ycsb-property operationcount=...: give one of them"
    );
    let args = bench(false, &["--workload", "ycsb-a", "--ycsb-phase", "both"]);
    fails_run(&refs(&args), 2);
}
