//! End-to-end tests of `zkv zone`: the real binary on image files in a temporary directory.

mod common;
use common::*;

use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

/// Runs a command that must fail with `code` and exactly one `error: ` line; returns the
/// message after `error: `.
fn fails_with(args: &[&str], code: i32) -> String {
    fails_run(args, code).1
}

/// An image in its own temporary directory.
struct Image {
    _dir: TempDir,
    path: PathBuf,
    spec: String,
}

impl Image {
    /// 4 zones of 1 MiB plus any extra `zone create` flags.
    fn new(extra: &[&str]) -> Image {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("zns.img");
        let spec = format!("file:{}", path.display());
        let mut args = vec![
            "zone",
            "create",
            "--device",
            &spec,
            "--zones",
            "4",
            "--zone-size",
            "1MiB",
        ];
        args.extend_from_slice(extra);
        let out = ok(&args);
        assert!(out.starts_with("created file:"), "{out}");
        Image {
            _dir: dir,
            path,
            spec,
        }
    }

    fn dev(&self) -> &str {
        &self.spec
    }

    /// `zone report --json`, checked for shape.
    fn report(&self) -> Vec<Value> {
        parse_report(&ok(&["zone", "report", "--device", self.dev(), "--json"]))
    }

    fn zone(&self, z: u32) -> Value {
        let zs = z.to_string();
        let mut v = parse_report(&ok(&[
            "zone",
            "report",
            "--device",
            self.dev(),
            "--zone",
            &zs,
            "--json",
        ]));
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("read image")
    }

    /// Runs `zone <cmd> --device <image> <rest...>`.
    fn args<'a>(&'a self, cmd: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["zone", cmd, "--device", self.dev()];
        v.extend_from_slice(rest);
        v
    }
}

const STATES: [&str; 7] = [
    "empty",
    "implicit_open",
    "explicit_open",
    "closed",
    "full",
    "read_only",
    "offline",
];

fn parse_report(json: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("bad JSON {json}: {e}"));
    let list = v.as_array().expect("a JSON list").clone();
    for z in &list {
        let obj = z.as_object().expect("zone objects");
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["capacity", "size", "start", "state", "wp", "zone"]);
        for k in ["zone", "start", "size", "capacity", "wp"] {
            assert!(obj[k].is_u64(), "{k} is not an unsigned integer: {z}");
        }
        let state = obj["state"].as_str().expect("state is a string");
        assert!(STATES.contains(&state), "unknown state {state}");
    }
    list
}

fn field(z: &Value, k: &str) -> u64 {
    z[k].as_u64().expect("u64 field")
}

fn state(z: &Value) -> &str {
    z["state"].as_str().expect("state")
}

/// The data `zkv zone write` stores: per 8-byte word, "zkv" and the word's address (40 bits).
fn pattern(addr: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| {
            let a = addr + i;
            let word = (0x7a6b76u64 << 40) | (a & !7 & ((1 << 40) - 1));
            word.to_be_bytes()[(a & 7) as usize]
        })
        .collect()
}

#[test]
fn help_is_useful() {
    let _serial = serial();
    let top = ok(&["--help"]);
    assert!(top.contains("zone"), "{top}");
    assert!(top.contains("file:PATH"), "{top}");
    let zone = ok(&["zone", "--help"]);
    for word in [
        "create", "report", "write", "append", "read", "open", "close", "finish", "reset",
        "Examples",
    ] {
        assert!(zone.contains(word), "zone --help lacks {word}: {zone}");
    }
    let create = ok(&["zone", "create", "--help"]);
    for flag in [
        "--device",
        "--zones",
        "--zone-size",
        "--zone-capacity",
        "--max-open",
        "--max-active",
        "--block-size",
    ] {
        assert!(create.contains(flag), "create --help lacks {flag}");
    }
    assert!(ok(&["zone", "report", "--help"]).contains("--json"));
    assert!(ok(&["--version"]).starts_with("zkv "));
}

#[test]
fn create_and_report_every_field() {
    let _serial = serial();
    let img = Image::new(&[]);
    let zones = img.report();
    assert_eq!(zones.len(), 4);
    for (i, z) in zones.iter().enumerate() {
        let i = i as u64;
        assert_eq!(field(z, "zone"), i);
        assert_eq!(field(z, "start"), i * MIB);
        assert_eq!(field(z, "size"), MIB);
        assert_eq!(field(z, "capacity"), MIB);
        assert_eq!(field(z, "wp"), i * MIB);
        assert_eq!(state(z), "empty");
    }

    let human = ok(&img.args("report", &[]));
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines.len(), 6, "{human}");
    assert!(lines[0].contains("4 zones of 1 MiB (capacity 1 MiB), 4 KiB blocks"));
    assert!(lines[0].contains("max open 14, max active 14"));
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(header, ["zone", "start", "size", "capacity", "wp", "state"]);
    let row3: Vec<&str> = lines[5].split_whitespace().collect();
    assert_eq!(
        row3,
        ["3", "3", "MiB", "1", "MiB", "1", "MiB", "0", "empty"]
    );

    // Other geometry flags, with units in any case.
    let img = Image::new(&[
        "--zone-capacity",
        "768k",
        "--block-size",
        "8KiB",
        "--max-open",
        "3",
        "--max-active",
        "5",
    ]);
    let z = img.zone(2);
    assert_eq!(field(&z, "capacity"), 768 * KIB);
    assert_eq!(field(&z, "start"), 2 * MIB);
    let human = ok(&img.args("report", &["--zone", "1", "--count", "2"]));
    assert!(human.contains("capacity 768 KiB), 8 KiB blocks, max open 3, max active 5"));
    assert_eq!(human.lines().count(), 4, "{human}");
}

#[test]
fn write_at_wp_and_a_refused_write_changes_nothing() {
    let _serial = serial();
    let img = Image::new(&[]);
    let out = ok(&img.args("write", &["--zone", "0", "--offset", "0", "--len", "16KiB"]));
    assert_eq!(
        out.trim(),
        "zone 0: wrote 16 KiB at offset 0; wp 16 KiB, implicit_open"
    );
    let z = img.zone(0);
    assert_eq!(field(&z, "wp"), 16 * KIB);
    // The image keeps zone states between commands, as a powered drive does.
    assert_eq!(state(&z), "implicit_open");

    let before_report = img.report();
    let before_bytes = img.bytes();
    for offset in ["0", "4K", "32K"] {
        let msg = fails(&img.args("write", &["--zone", "0", "--offset", offset, "--len", "4K"]));
        let offset = if offset == "0" {
            0
        } else {
            offset.trim_end_matches('K').parse::<u64>().unwrap() * KIB
        };
        assert_eq!(
            msg,
            format!("zone 0: write at offset {offset} but write pointer is at 16384")
        );
    }
    assert_eq!(img.report(), before_report);
    assert!(
        img.bytes() == before_bytes,
        "a refused write changed the image"
    );

    // Continuing at the write pointer works, in a later zone too.
    ok(&img.args("write", &["--zone", "0", "--offset", "16K", "--len", "4K"]));
    ok(&img.args("write", &["--zone", "3", "--offset", "0", "--len", "8192"]));
    assert_eq!(field(&img.zone(0), "wp"), 20 * KIB);
    assert_eq!(field(&img.zone(3), "wp"), 3 * MIB + 8 * KIB);
}

#[test]
fn append_prints_the_offset_and_data_reads_back() {
    let _serial = serial();
    let img = Image::new(&[]);
    assert_eq!(
        ok(&img.args("append", &["--zone", "1", "--len", "4K"])).trim(),
        "0"
    );
    assert_eq!(
        ok(&img.args("append", &["--zone", "1", "--len", "8K"])).trim(),
        "4096"
    );
    ok(&img.args("write", &["--zone", "1", "--offset", "12K", "--len", "4K"]));
    assert_eq!(
        ok(&img.args("append", &["--zone", "1", "--len", "4K"])).trim(),
        "16384"
    );
    assert_eq!(field(&img.zone(1), "wp"), MIB + 20 * KIB);

    let out_file = img.path.with_file_name("zone1.bin");
    let out_str = out_file.display().to_string();
    let msg = ok(&img.args(
        "read",
        &[
            "--zone", "1", "--offset", "0", "--len", "24K", "--out", &out_str,
        ],
    ));
    assert!(msg.contains("read 24 KiB at offset 0"), "{msg}");
    let data = std::fs::read(&out_file).expect("read --out file");
    assert_eq!(data.len(), 24 * KIB as usize);
    assert!(data[..20 * KIB as usize] == pattern(MIB, 20 * KIB as usize)[..]);
    assert!(data[20 * KIB as usize..].iter().all(|b| *b == 0));

    let summary = ok(&img.args("read", &["--zone", "1", "--len", "24K"]));
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 3, "{summary}");
    assert!(lines[1].contains("0 .. 20 KiB") && lines[1].contains("zkv write pattern"));
    assert!(lines[2].contains("20 KiB .. 24 KiB") && lines[2].contains("zeros"));

    let hex = ok(&img.args(
        "read",
        &["--zone", "1", "--offset", "8", "--len", "16", "--hex"],
    ));
    assert_eq!(
        hex,
        "00000008  7a 6b 76 00 00 10 00 08  7a 6b 76 00 00 10 00 10  |zkv.....zkv.....|\n\
         00000018\n"
    );
}

#[test]
fn open_close_finish_reset_transitions() {
    let _serial = serial();
    let img = Image::new(&[]);
    let dev = img.dev();
    let op = |cmd: &str, zone: &str| ok(&["zone", cmd, "--device", dev, "--zone", zone]);

    assert_eq!(op("open", "1").trim(), "zone 1: empty -> explicit_open");
    // Zone states survive between commands, as they do on a powered drive.
    assert_eq!(state(&img.zone(1)), "explicit_open");
    assert_eq!(op("close", "1").trim(), "zone 1: explicit_open -> closed");

    ok(&img.args("write", &["--zone", "1", "--offset", "0", "--len", "4K"]));
    assert_eq!(state(&img.zone(1)), "implicit_open");
    assert_eq!(op("close", "1").trim(), "zone 1: implicit_open -> closed");
    assert_eq!(op("open", "1").trim(), "zone 1: closed -> explicit_open");
    assert_eq!(op("close", "1").trim(), "zone 1: explicit_open -> closed");
    assert_eq!(op("close", "1").trim(), "zone 1: closed, unchanged");
    let msg = fails(&img.args("close", &["--zone", "2"]));
    assert_eq!(msg, "zone 2: cannot close a zone in state empty");

    assert_eq!(op("finish", "1").trim(), "zone 1: closed -> full");
    let z = img.zone(1);
    assert_eq!(state(&z), "full");
    assert_eq!(
        field(&z, "wp"),
        2 * MIB,
        "a full zone reports its end as wp"
    );
    assert_eq!(op("finish", "1").trim(), "zone 1: full, unchanged");
    let msg = fails(&img.args("open", &["--zone", "1"]));
    assert_eq!(msg, "zone 1: cannot open a zone in state full");
    let msg = fails(&img.args("write", &["--zone", "1", "--offset", "4K", "--len", "4K"]));
    assert_eq!(msg, "zone 1: zone is full");

    assert_eq!(op("reset", "1").trim(), "zone 1: full -> empty");
    let z = img.zone(1);
    assert_eq!((state(&z), field(&z, "wp")), ("empty", MIB));
    let summary = ok(&img.args("read", &["--zone", "1", "--len", "8K"]));
    assert!(summary.contains("zeros (8 KiB)"), "{summary}");

    // finish of an empty zone, then reset --all takes every full/closed zone.
    assert_eq!(op("finish", "2").trim(), "zone 2: empty -> full");
    ok(&img.args("write", &["--zone", "3", "--offset", "0", "--len", "4K"]));
    let out = ok(&img.args("reset", &["--all"]));
    assert_eq!(
        out,
        "zone 2: full -> empty\nzone 3: implicit_open -> empty\n"
    );
    assert!(img.report().iter().all(|z| state(z) == "empty"));
    let out = ok(&img.args("reset", &["--all"]));
    assert!(out.starts_with("nothing to reset"), "{out}");

    // finish --all takes open and closed zones.
    ok(&img.args("write", &["--zone", "0", "--offset", "0", "--len", "4K"]));
    ok(&img.args("write", &["--zone", "2", "--offset", "0", "--len", "4K"]));
    ok(&img.args("close", &["--zone", "2"]));
    assert_eq!(
        ok(&img.args("finish", &["--all"])),
        "zone 0: implicit_open -> full\nzone 2: closed -> full\n"
    );
}

#[test]
fn open_and_active_limits() {
    let _serial = serial();
    let img = Image::new(&["--max-open", "2"]);
    let (run, msg) = fails_run(&img.args("open", &["--zone", "0", "--count", "3"]), 1);
    assert_eq!(msg, "zone 2: too many open zones (limit 2)");
    assert_eq!(
        run.stdout,
        "zone 0: empty -> explicit_open\nzone 1: empty -> explicit_open\n"
    );

    let img = Image::new(&["--max-open", "2", "--max-active", "2"]);
    ok(&img.args("write", &["--zone", "0", "--offset", "0", "--len", "4K"]));
    ok(&img.args("write", &["--zone", "1", "--offset", "0", "--len", "4K"]));
    // Any reopen turns the zones left implicitly open into closed ones and records that;
    // compare bytes from after that point.
    let report = img.report();
    let before = img.bytes();
    let msg = fails(&img.args("write", &["--zone", "2", "--offset", "0", "--len", "4K"]));
    assert_eq!(msg, "zone 2: too many active zones (limit 2)");
    let msg = fails(&img.args("open", &["--zone", "3"]));
    assert_eq!(msg, "zone 3: too many active zones (limit 2)");
    assert!(img.bytes() == before, "a refused command changed the image");
    assert_eq!(img.report(), report);
    // Finishing a zone frees its active resource.
    ok(&img.args("finish", &["--zone", "0"]));
    ok(&img.args("write", &["--zone", "2", "--offset", "0", "--len", "4K"]));
}

#[test]
fn out_of_range_zones() {
    let _serial = serial();
    let img = Image::new(&[]);
    let before = img.bytes();
    let want = "zone 4 does not exist (the device has 4 zones)";
    assert_eq!(fails(&img.args("report", &["--zone", "4"])), want);
    assert_eq!(
        fails(&img.args("report", &["--zone", "2", "--count", "3"])),
        want
    );
    assert_eq!(
        fails(&img.args("write", &["--zone", "4", "--offset", "0", "--len", "4K"])),
        want
    );
    assert_eq!(
        fails(&img.args("append", &["--zone", "4", "--len", "4K"])),
        want
    );
    assert_eq!(fails(&img.args("read", &["--zone", "4"])), want);
    // A range that runs off the end is refused before any zone is touched.
    assert_eq!(
        fails(&img.args("reset", &["--zone", "3", "--count", "2"])),
        want
    );
    assert_eq!(
        fails(&img.args("open", &["--zone", "99"])),
        "zone 99 does not exist (the device has 4 zones)"
    );
    assert!(img.bytes() == before);
}

#[test]
fn unaligned_and_oversized_writes() {
    let _serial = serial();
    let img = Image::new(&["--zone-capacity", "512K"]);
    let before = img.bytes();
    let w = |offset: &str, len: &str| {
        fails(&img.args("write", &["--zone", "0", "--offset", offset, "--len", len]))
    };
    assert_eq!(
        w("0", "1000"),
        "write length 1000 is not a multiple of the block size 4096"
    );
    assert_eq!(
        w("0", "6K"),
        "write length 6144 is not a multiple of the block size 4096"
    );
    assert_eq!(
        w("100", "4K"),
        "zone 0: write offset 100 is not a multiple of the block size 4096"
    );
    assert_eq!(
        w("0", "768K"),
        "zone 0: write of 786432 bytes at offset 0 crosses the zone capacity 524288"
    );
    assert_eq!(
        w("0", "4M"),
        "zone 0: write of 4194304 bytes at offset 0 crosses the zone capacity 524288"
    );
    assert!(w("1M", "4K").contains("beyond the end of zone 0"));
    assert_eq!(
        fails(&img.args("append", &["--zone", "0", "--len", "100"])),
        "write length 100 is not a multiple of the block size 4096"
    );
    assert!(img.bytes() == before);

    // Writing up to the capacity fills the zone.
    let out = ok(&img.args(
        "write",
        &["--zone", "0", "--offset", "0", "--len", "0.5MiB"],
    ));
    assert!(out.contains("full"), "{out}");
    assert_eq!(state(&img.zone(0)), "full");
}

#[test]
fn bad_sizes_and_geometry_create_nothing() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.img");
    let spec = format!("file:{}", path.display());
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["--zones", "0", "--zone-size", "1M"],
            1,
            "at least one zone",
        ),
        (
            &["--zones", "4", "--zone-size", "3MiB"],
            1,
            "zone size 3145728 is not a power of two",
        ),
        (
            &["--zones", "4", "--zone-size", "1M", "--zone-capacity", "2M"],
            1,
            "zone capacity 2097152 must be between one block and the zone size 1048576",
        ),
        (
            &[
                "--zones",
                "4",
                "--zone-size",
                "1M",
                "--zone-capacity",
                "1000",
            ],
            1,
            "not a multiple of the block size",
        ),
        (
            &["--zones", "4", "--zone-size", "1M", "--block-size", "1000"],
            1,
            "block size 1000 is not a power of two",
        ),
        (
            &[
                "--zones",
                "4",
                "--zone-size",
                "1M",
                "--max-open",
                "8",
                "--max-active",
                "4",
            ],
            1,
            "max open zones 8 exceeds max active zones 4",
        ),
        (
            &["--zones", "4", "--zone-size", "0"],
            2,
            "'--zone-size <SIZE>': must be greater than zero",
        ),
        (
            &["--zones", "4", "--zone-size", "-1M"],
            2,
            "'--zone-size <SIZE>': a size cannot be negative",
        ),
        (
            &["--zones", "4", "--zone-size", "12X"],
            2,
            "'--zone-size <SIZE>': unknown unit 'X'",
        ),
        (
            &["--zones", "4", "--zone-size", "64MB"],
            2,
            "'64MB' for '--zone-size <SIZE>': unit 'MB' is ambiguous",
        ),
        (
            &["--zones", "4", "--zone-size", "abc"],
            2,
            "'--zone-size <SIZE>': not a size",
        ),
        (
            &["--zones", "4", "--zone-size", "99999999999T"],
            2,
            "'--zone-size <SIZE>': too large",
        ),
        (
            &["--zones", "4", "--zone-size", "1M", "--zone-capacity", "0"],
            2,
            "'--zone-capacity <SIZE>': must be greater than zero",
        ),
        (
            &["--zones", "4", "--zone-size", "1M", "--block-size", "4Kb"],
            2,
            "'--block-size <SIZE>'",
        ),
        (&["--zones", "-4", "--zone-size", "1M"], 2, "'--zones <N>'"),
        (
            &["--zones", "four", "--zone-size", "1M"],
            2,
            "'--zones <N>'",
        ),
        (&["--zones", "4"], 2, "--zone-size <SIZE>"),
        (
            &["--zones", "4", "--zone-size", "1M", "--frobnicate"],
            2,
            "'--frobnicate'",
        ),
    ];
    for (extra, code, want) in cases {
        let mut args = vec!["zone", "create", "--device", &spec];
        args.extend_from_slice(extra);
        let msg = fails_with(&args, *code);
        assert!(msg.contains(want), "{extra:?}: {msg:?} lacks {want:?}");
        assert!(!path.exists(), "{extra:?} left a file behind");
    }
}

#[test]
fn create_refuses_an_existing_file() {
    let _serial = serial();
    let img = Image::new(&[]);
    ok(&img.args("write", &["--zone", "0", "--offset", "0", "--len", "4K"]));
    let before = img.bytes();
    let msg = fails(&img.args("create", &["--zones", "2", "--zone-size", "1M"]));
    assert!(
        msg.ends_with("already exists; zone create never overwrites a file"),
        "{msg}"
    );
    assert!(img.bytes() == before);

    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("notes.txt");
    std::fs::write(&other, "precious").unwrap();
    let spec = format!("file:{}", other.display());
    fails(&[
        "zone",
        "create",
        "--device",
        &spec,
        "--zones",
        "2",
        "--zone-size",
        "1M",
    ]);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "precious");
}

fn copy_truncated(img: &Image, name: &str, len: u64) -> (PathBuf, String) {
    let p = img.path.with_file_name(name);
    std::fs::copy(&img.path, &p).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(len).unwrap();
    let spec = format!("file:{}", p.display());
    (p, spec)
}

#[test]
fn truncated_and_foreign_images() {
    let _serial = serial();
    let img = Image::new(&[]);
    let (p, spec) = copy_truncated(&img, "short.img", 100);
    let msg = fails(&["zone", "report", "--device", &spec]);
    assert_eq!(
        msg,
        format!(
            "{}: truncated image: 100 bytes, the header alone needs 4096",
            p.display()
        )
    );
    let (_, spec) = copy_truncated(&img, "cut.img", 8192);
    let msg = fails(&[
        "zone", "write", "--device", &spec, "--zone", "0", "--offset", "0", "--len", "4K",
    ]);
    assert!(
        msg.contains("truncated image: 8192 bytes, this geometry needs"),
        "{msg}"
    );

    let foreign = img.path.with_file_name("foreign.img");
    std::fs::write(&foreign, "this is not a zone image\n".repeat(400)).unwrap();
    let spec = format!("file:{}", foreign.display());
    let msg = fails(&["zone", "report", "--device", &spec]);
    assert_eq!(
        msg,
        format!("{}: not a zkv zone image (bad magic)", foreign.display())
    );
    // A refused command leaves the foreign file alone.
    fails(&["zone", "reset", "--device", &spec, "--all"]);
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "this is not a zone image\n".repeat(400)
    );

    let missing = img.path.with_file_name("missing.img");
    let spec = format!("file:{}", missing.display());
    let msg = fails(&["zone", "report", "--device", &spec]);
    assert!(msg.contains("No such file or directory"), "{msg}");
    assert!(!missing.exists());
}

#[test]
fn an_image_in_use_is_refused_to_writers_only() {
    let _serial = serial();
    let img = Image::new(&[]);
    let held = zkv_zns::FileDevice::open(Path::new(&img.path)).expect("open the image in the test");
    let want = format!(
        "{}: image is already in use by another process",
        img.path.display()
    );
    ok(&img.args("report", &[]));
    assert_eq!(
        fails(&img.args("write", &["--zone", "0", "--offset", "0", "--len", "4K"])),
        want
    );
    assert_eq!(fails(&img.args("reset", &["--all"])), want);
    drop(held);
    assert_eq!(img.report().len(), 4);
}

#[test]
fn mem_and_unusable_devices() {
    let _serial = serial();
    for args in [
        &["zone", "report", "--device", "mem"][..],
        &[
            "zone", "write", "--device", "mem", "--zone", "0", "--offset", "0", "--len", "4K",
        ],
        &["zone", "open", "--device", "mem", "--zone", "0"],
        &[
            "zone",
            "create",
            "--device",
            "mem",
            "--zones",
            "4",
            "--zone-size",
            "1M",
        ],
    ] {
        let msg = fails(args);
        assert!(
            msg.starts_with("--device mem: an in-memory device does not outlive the command"),
            "{msg}"
        );
        assert!(msg.contains("file:PATH"), "{msg}");
    }
    let msg = fails_with(&["zone", "report", "--device", "floppy"], 2);
    assert!(
        msg.contains("expected mem, file:PATH or zbd:/dev/DEV"),
        "{msg}"
    );
    let msg = fails_with(&["zone", "report", "--device", "file:"], 2);
    assert!(msg.contains("the path is empty"), "{msg}");
    // zbd: either the backend is missing or the device is; either way one clear line.
    let msg = fails(&[
        "zone",
        "report",
        "--device",
        "zbd:/nonexistent/zkv-test-dev",
    ]);
    assert!(msg.contains("/nonexistent/zkv-test-dev"), "{msg}");
    let msg = fails(&[
        "zone",
        "create",
        "--device",
        "zbd:/dev/null",
        "--zones",
        "4",
        "--zone-size",
        "1M",
    ]);
    assert!(msg.contains("zone create makes emulated images"), "{msg}");
}

#[test]
fn usage_errors_are_one_line() {
    let _serial = serial();
    for args in [
        &["zone", "frobnicate"][..],
        &["zone", "report"],
        &["zone", "report", "--device", "file:x.img", "--bogus"],
        &["zone", "open", "--device", "file:x.img"],
        &[
            "zone",
            "open",
            "--device",
            "file:x.img",
            "--zone",
            "1",
            "--all",
        ],
        &["zone", "report", "--device", "file:x.img", "--count", "2"],
        &[
            "zone",
            "write",
            "--device",
            "file:x.img",
            "--zone",
            "0",
            "--offset",
            "0",
            "--len",
            "0",
        ],
        &[
            "zone",
            "read",
            "--device",
            "file:x.img",
            "--zone",
            "0",
            "--hex",
            "--out",
            "o",
        ],
    ] {
        fails_with(args, 2);
    }
    let msg = fails_with(&["zone", "create", "--device", "file:x.img"], 2);
    assert!(
        msg.contains("--zones <N>") && msg.contains("--zone-size <SIZE>"),
        "{msg}"
    );
    assert!(msg.contains("zkv zone create --help"), "{msg}");
    assert!(!Path::new("x.img").exists());
}

#[test]
fn an_image_larger_than_the_room_left_is_created_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.img");
    let spec = format!("file:{}", path.display());
    // 8 zones of 1 TiB: sparse, so it is created (ext4 takes files up to 16 TiB), but no
    // test machine has 8 TiB free.
    let r = zkv(&[
        "zone",
        "create",
        "--device",
        &spec,
        "--zones",
        "8",
        "--zone-size",
        "1TiB",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("created "), "{}", r.stdout);
    assert!(
        r.stderr.starts_with(&format!(
            "warning: {}: an image of 8 TiB on a file system with ",
            path.display()
        )) && r
            .stderr
            .contains("writes will fail once the file system is full"),
        "{}",
        r.stderr
    );
    // A small image: no warning (ok() requires an empty stderr).
    let small = format!("file:{}", dir.path().join("small.img").display());
    ok(&[
        "zone",
        "create",
        "--device",
        &small,
        "--zones",
        "4",
        "--zone-size",
        "1MiB",
    ]);
}
