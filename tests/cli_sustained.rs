//! Sustained updates near a full device (docs/RELIABILITY.md, "Known limits"): fillrandom
//! then YCSB-A (60,000 records of 512 B each) on the smallest device `zkv bench` accepts,
//! with the cleaner running most of the time. In both modes every placement runs to the
//! end: the store slows down (stalls, cleaning copies) instead of failing with out of
//! space, and every acknowledged key is as last written (`--verify`).

mod common;

use common::{refs, zkv};

const FLAGS: [&str; 16] = [
    "--workload",
    "fillrandom,ycsb-a",
    "--num",
    "60000",
    "--value-size",
    "512",
    "--write-buffer-size",
    "128KiB",
    "--target-file-size-base",
    "128KiB",
    "--max-bytes-for-level-base",
    "2MiB",
    "--zone-size",
    "2MiB",
    "--gc-start",
    "20",
];

fn bench(zones: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["bench", "--gc-stop", "25", "--zones", zones];
    args.extend_from_slice(&FLAGS);
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

#[test]
fn sustained_updates_on_the_smallest_accepted_device_run_to_the_end() {
    // The size check's bound: one zone less is refused, before anything runs.
    let refused = zkv(&refs(&bench("37", &[])));
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("device too small"),
        "{}",
        refused.stderr
    );

    // One at a time: threaded runs near the bound depend on the cleaner thread getting
    // its share of the two cores.
    let dir = tempfile::tempdir().expect("a temporary directory");
    for mode in ["deterministic", "threaded"] {
        for placement in ["liza", "caza", "caza+"] {
            let json = dir.path().join(format!("{mode}-{placement}.json"));
            let json = json.to_string_lossy().into_owned();
            let extra = [
                "--mode",
                mode,
                "--placement",
                placement,
                "--verify",
                "--json",
                &json,
            ];
            let r = zkv(&refs(&bench("38", &extra)));
            let what = format!("{mode} {placement}");
            assert!(r.stdout.contains("0 mismatches"), "{what}: {}", r.stdout);
            assert_eq!(r.code, 0, "{what}: {}", r.stderr);
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            let runs = report["gc"]["runs"].as_u64().unwrap();
            assert!(runs > 10, "{what}: the cleaner ran {runs} times");
        }
    }
}

/// The same workload at half the scale (1 MiB zones, 64 KiB memtables and SSTs, 30,000
/// records) on the smallest accepted device, deterministic mode. Here free space runs out
/// in the middle of a flush or compaction: its partly written table pins a zone's dead data
/// until the job gives up. The job changes nothing, the cleaner runs, and the job runs
/// again, instead of the run failing with out of space. (Threaded mode at this scale is a
/// known limit: docs/RELIABILITY.md.)
#[test]
fn jobs_that_find_no_room_run_again_after_cleaning() {
    let flags = [
        "bench",
        "--gc-stop",
        "25",
        "--gc-start",
        "20",
        "--workload",
        "fillrandom,ycsb-a",
        "--num",
        "30000",
        "--value-size",
        "512",
        "--write-buffer-size",
        "64KiB",
        "--target-file-size-base",
        "64KiB",
        "--max-bytes-for-level-base",
        "1MiB",
        "--zone-size",
        "1MiB",
        "--zones",
    ];
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut refused = flags.to_vec();
    refused.push("37");
    assert_eq!(zkv(&refused).code, 1, "one zone less is refused");
    let mut retries = 0;
    for placement in ["liza", "caza", "caza+"] {
        let json = dir.path().join(format!("{placement}.json"));
        let json = json.to_string_lossy().into_owned();
        let mut args = flags.to_vec();
        args.extend_from_slice(&["38", "--mode", "deterministic", "--placement", placement]);
        args.extend_from_slice(&["--verify", "--json", &json]);
        let r = zkv(&args);
        assert!(
            r.stdout.contains("0 mismatches"),
            "{placement}: {}",
            r.stdout
        );
        assert_eq!(r.code, 0, "{placement}: {}", r.stderr);
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        retries += report["lsm"]["no_room_retries"].as_u64().unwrap();
    }
    // Without the retry deterministic CAZA and CAZA+ fail at YCSB operation 25,887.
    assert!(
        retries > 0,
        "no deterministic job found its output without room"
    );
}
