//! End-to-end tests of `zkv put`, `get`, `delete`, `scan` and `inspect levels`: the real
//! binary on images made by `zkv mkfs`, one process per command.

mod common;
use common::*;

use serde_json::Value;

impl Img {
    /// An image formatted by `zkv mkfs` with [`IMAGE_GEOMETRY`].
    fn formatted() -> Img {
        let img = Img::none();
        ok(&[&["mkfs", "--device", &img.spec][..], &IMAGE_GEOMETRY].concat());
        img
    }

    /// An image formatted by `zkv mkfs` with `zones` zones of `zone_size`.
    fn formatted_with(zones: &str, zone_size: &str) -> Img {
        let img = Img::none();
        let mkfs = ["mkfs", "--device", &img.spec, "--zones", zones];
        ok(&[&mkfs[..], &["--zone-size", zone_size]].concat());
        img
    }

    /// `zkv <cmd> --device <img> <rest...>`
    fn args<'a>(&'a self, cmd: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
        let mut v = cmd.to_vec();
        v.extend(["--device", self.spec.as_str()]);
        v.extend(rest);
        v
    }

    fn run(&self, cmd: &str, rest: &[&str]) -> String {
        ok(&self.args(&[cmd], rest))
    }

    fn fails(&self, cmd: &str, rest: &[&str]) -> String {
        fails_run(&self.args(&[cmd], rest), 1).1
    }

    fn levels(&self) -> Value {
        json(&ok(&self.args(&["inspect", "levels"], &["--json"])))
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("read the image")
    }
}

fn total(levels: &Value, field: &str) -> u64 {
    levels["levels"]
        .as_array()
        .expect("levels is a list")
        .iter()
        .map(|l| l[field].as_u64().expect("an unsigned integer"))
        .sum()
}

#[test]
fn put_get_delete_scan_round_trip_across_processes() {
    let _s = serial();
    let img = Img::formatted();
    img.run("put", &["alpha", "one"]);
    img.run("put", &["beta", "two words"]);
    img.run("put", &["alpha", "uno"]);
    assert_eq!(img.run("get", &["alpha"]), "uno\n");
    assert_eq!(img.run("get", &["beta"]), "two words\n");
    assert_eq!(img.run("scan", &[]), "alpha\tuno\nbeta\ttwo words\n");

    img.run("delete", &["alpha"]);
    let msg = img.fails("get", &["alpha"]);
    assert!(msg.contains("key 'alpha' not found"), "{msg}");
    assert_eq!(img.run("scan", &[]), "beta\ttwo words\n");
    // Deleting a key that has no value is no error (as in RocksDB: a tombstone).
    img.run("delete", &["never-written"]);

    // Keys that look like flags, text that needs escaping to stay on one line.
    img.run("put", &["-dash", "a\tb\nc"]);
    assert_eq!(img.run("get", &["-dash"]), "a\\tb\\nc\n");
}

#[test]
fn hex_keys_and_values() {
    let _s = serial();
    let img = Img::formatted();
    img.run("put", &["--hex", "00ff", "c0ffee"]);
    img.run("put", &["--hex", "0001", ""]);
    assert_eq!(img.run("get", &["--hex", "00FF"]), "c0ffee\n");
    assert_eq!(img.run("get", &["--hex", "0001"]), "\n");
    assert_eq!(img.run("scan", &["--hex"]), "0001\t\n00ff\tc0ffee\n");
    assert_eq!(
        img.run("scan", &[]),
        "\\u{0}\\u{1}\t\n\\u{0}\\xff\t\\xc0\\xff\\xee\n"
    );
    let list = json(&img.run("scan", &["--hex", "--json", "--from", "00ff"]));
    assert_eq!(list, json(r#"[{"key": "00ff", "value": "c0ffee"}]"#));
    // Without --hex, JSON cannot hold these bytes: refused, not mangled.
    let msg = img.fails("scan", &["--json"]);
    assert!(msg.contains("not UTF-8") && msg.contains("--hex"), "{msg}");
    img.run("delete", &["--hex", "00ff"]);
    let msg = img.fails("get", &["--hex", "00ff"]);
    assert!(msg.contains("key 0x00ff not found"), "{msg}");
}

#[test]
fn scan_bounds_limit_and_json() {
    let _s = serial();
    let img = Img::formatted();
    for k in ["a", "b", "c", "d", "e"] {
        img.run("put", &[k, &format!("v{k}")]);
    }
    assert_eq!(
        img.run("scan", &["--from", "b", "--to", "d"]),
        "b\tvb\nc\tvc\n"
    );
    assert_eq!(
        img.run("scan", &["--from", "c", "--limit", "2"]),
        "c\tvc\nd\tvd\n"
    );
    assert_eq!(img.run("scan", &["--to", "b"]), "a\tva\n");
    assert_eq!(img.run("scan", &["--limit", "0"]), "");
    assert_eq!(img.run("scan", &["--from", "x"]), "");
    let list = json(&img.run("scan", &["--json", "--from", "d"]));
    assert_eq!(
        list,
        json(r#"[{"key": "d", "value": "vd"}, {"key": "e", "value": "ve"}]"#)
    );
    assert_eq!(
        json(&img.run("scan", &["--json", "--from", "z"])),
        json("[]")
    );
}

#[test]
fn scan_reverse_and_prefix() {
    let _s = serial();
    let img = Img::formatted();
    for k in ["a", "log1", "log2", "log3", "m"] {
        img.run("put", &[k, &format!("v{k}")]);
    }
    img.run("delete", &["log2"]);
    assert_eq!(
        img.run("scan", &["--reverse"]),
        "m	vm
log3	vlog3
log1	vlog1
a	va
"
    );
    assert_eq!(
        img.run("scan", &["--prefix", "log"]),
        "log1	vlog1
log3	vlog3
"
    );
    assert_eq!(
        img.run("scan", &["--prefix", "log", "--reverse", "--limit", "1"]),
        "log3	vlog3
"
    );
    assert_eq!(
        img.run("scan", &["--reverse", "--from", "b", "--to", "log3"]),
        "log1	vlog1
"
    );
    assert_eq!(
        img.run("scan", &["--prefix", "log", "--from", "log2"]),
        "log3	vlog3
"
    );
    assert_eq!(img.run("scan", &["--prefix", "zz"]), "");
}

#[test]
fn reads_never_write_the_device() {
    let _s = serial();
    let img = Img::formatted();
    for i in 0..3 {
        img.run("put", &[&format!("k{i}"), "v"]);
    }
    // The last put's write is only in the WAL: a read-write open would flush it to a new
    // L0 table; get, scan and inspect levels open the database read-only, which replays it
    // into memory only (and the read-only mount writes nothing either).
    let before = img.bytes();
    assert_eq!(img.run("get", &["k2"]), "v\n");
    img.run("scan", &[]);
    img.fails("get", &["missing"]);
    ok(&img.args(&["inspect", "levels"], &[]));
    img.levels();
    assert!(img.bytes() == before, "a read command changed the image");
}

#[test]
fn inspect_levels_on_empty_and_filled_stores() {
    let _s = serial();
    let img = Img::formatted();
    let out = ok(&img.args(&["inspect", "levels"], &[]));
    assert!(out.contains("no database yet"), "{out}");
    let empty = img.levels();
    assert_eq!(empty["database"], Value::Bool(false));
    assert_eq!(empty["levels"], json("[]"));

    // The first put creates the database; its write is in the WAL, in no level: the
    // read-only open replays it into the memtable.
    img.run("put", &["k00", "v"]);
    let one = img.levels();
    assert_eq!(one["database"], Value::Bool(true));
    assert_eq!(one["levels"].as_array().map(Vec::len), Some(7));
    assert_eq!(total(&one, "files"), 0);
    assert_eq!(one["last_sequence"].as_u64(), Some(1));
    assert_eq!(one["wal"]["files"].as_u64(), Some(1));
    assert!(one["wal"]["bytes"].as_u64() > Some(0), "{one}");
    assert_eq!(one["wal"]["batches"].as_u64(), Some(1), "{one}");
    assert_eq!(one["wal"]["operations"].as_u64(), Some(1), "{one}");
    assert!(one["wal"]["memtable_bytes"].as_u64() > Some(0), "{one}");
    assert_eq!(one["compaction_stats"], Value::Null);

    // Every later open flushes the WAL it replays to L0, and four L0 files are compacted
    // (or moved) down to L1.
    for i in 1..8 {
        img.run("put", &[&format!("k{i:02}"), &"x".repeat(100)]);
    }
    let filled = img.levels();
    assert!(total(&filled, "files") >= 2, "{filled}");
    assert!(total(&filled, "bytes") > 700, "{filled}");
    assert!(filled["levels"][1]["files"].as_u64() > Some(0), "{filled}");
    // The eighth put is still only in the WAL (the manifest records 7), and the read-only
    // open replayed it: the database's last sequence number is 8.
    assert_eq!(filled["last_sequence"].as_u64(), Some(8));
    assert_eq!(filled["wal"]["operations"].as_u64(), Some(1), "{filled}");
    let l0 = &filled["levels"][0];
    let score = l0["score"].as_f64().expect("a number");
    assert!(
        (score - l0["files"].as_f64().unwrap_or(0.0) / 4.0).abs() < 1e-9,
        "{filled}"
    );

    let out = ok(&img.args(&["inspect", "levels"], &[]));
    for want in [
        "level",
        "L1",
        "wal: 1 file",
        "replayed into the memtable: 1 write",
        "** Compaction Stats **",
        "Sum",
    ] {
        assert!(out.contains(want), "no {want:?} in {out}");
    }
    // Every key is still there.
    assert_eq!(img.run("scan", &[]).lines().count(), 8);
}

#[test]
fn bad_input_fails_with_one_line() {
    let _s = serial();
    let img = Img::formatted();
    for (cmd, rest) in [
        ("get", &["k"][..]),
        ("scan", &[][..]),
        ("delete", &["k"][..]),
    ] {
        let msg = img.fails(cmd, rest);
        assert!(msg.contains("no zkv database on file:"), "{cmd}: {msg}");
    }
    let before = img.bytes();
    let msg = img.fails("put", &["--hex", "0g", "00"]);
    assert!(msg.contains("'g' is not a hex digit"), "{msg}");
    let msg = img.fails("put", &["--hex", "00", "abc"]);
    assert!(
        msg.contains("--hex value 'abc': odd number of hex digits"),
        "{msg}"
    );
    let msg = img.fails("scan", &["--hex", "--from", "x"]);
    assert!(msg.contains("--from key"), "{msg}");
    assert!(img.bytes() == before, "a refused command changed the image");

    let blank = Img::blank(4, "1MiB");
    let msg = blank.fails("put", &["k", "v"]);
    assert!(msg.contains("no zkv file system"), "{msg}");
    let msg = blank.fails("get", &["k"]);
    assert!(msg.contains("no zkv file system"), "{msg}");
    let msg = fails_run(&blank.args(&["inspect", "levels"], &[]), 1).1;
    assert!(msg.contains("no zkv file system"), "{msg}");

    let msg = fails_run(&["get", "--device", "mem", "k"], 1).1;
    assert!(msg.contains("--device mem"), "{msg}");
    let (_, msg) = fails_run(&["put", "--device", &img.spec, "k"], 2);
    assert!(msg.contains("required"), "{msg}");
}

/// The `dump` entry of the only WAL of the image.
fn wal_entry(img: &Img) -> Value {
    let dump = json(&ok(&img.args(&["inspect", "dump"], &["--json"])));
    let files = dump["files"].as_array().expect("files is a list");
    let wals: Vec<&Value> = files.iter().filter(|f| f["kind"] == "wal").collect();
    assert_eq!(wals.len(), 1, "{files:?}");
    wals[0].clone()
}

/// Flips a bit of the file `entry` (from `inspect dump`) at `offset`, in the image bytes
/// ([`IMAGE_GEOMETRY`]: 16 zones of 1 MiB after the header and zone table).
fn flip_in_file(img: &Img, entry: &Value, offset: u64) {
    let mut at = offset;
    for e in entry["extents"].as_array().expect("extents") {
        let [zone, start, len] = ["zone", "offset", "len"].map(|k| e[k].as_u64().unwrap());
        if at < len {
            let data = (4096 + 16 * 16u64).next_multiple_of(4096);
            let pos = (data + zone * MIB + start + at) as usize;
            let mut bytes = img.bytes();
            bytes[pos] ^= 0x10;
            std::fs::write(&img.path, bytes).expect("write the image");
            return;
        }
        at -= len;
    }
    panic!("offset {offset} beyond {entry}");
}

#[test]
fn a_damaged_wal_record_is_refused_unless_a_recovery_mode_drops_it() {
    let _s = serial();
    let img = Img::formatted();
    img.run("put", &["alpha", "one"]);
    // Each put's open moves the WAL it replays into L0: the WAL now holds this write only.
    img.run("put", &["beta", "two"]);
    let wal = wal_entry(&img);
    let name = wal["name"].as_str().unwrap().to_string();
    let size = wal["size"].as_u64().unwrap();
    flip_in_file(&img, &wal, size - 2);
    let before = img.bytes();

    // The default refuses, for reads and writes alike, and changes nothing.
    let want = format!("corruption in WAL '{name}': checksum mismatch");
    for (cmd, rest) in [("get", &["alpha"][..]), ("put", &["gamma", "three"][..])] {
        let msg = img.fails(cmd, rest);
        assert!(msg.contains(&want), "{cmd}: {msg}");
        assert!(msg.contains("at offset 0"), "{cmd}: {msg}");
        assert!(msg.contains("absolute-consistency"), "{cmd}: {msg}");
    }
    let msg = img.fails(
        "put",
        &["--wal-recovery-mode", "absolute-consistency", "g", "3"],
    );
    assert!(msg.contains(&want), "{msg}");
    assert!(img.bytes() == before, "a refused open changed the image");

    // point-in-time opens, says what it dropped on stderr, and the write is gone.
    let run = zkv(&img.args(
        &["put"],
        &["--wal-recovery-mode", "point-in-time", "gamma", "three"],
    ));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    let warning = format!(
        "warning: {}: WAL '{name}': {size} bytes from offset 0 (0 intact records) not replayed: \
         checksum mismatch",
        img.spec
    );
    assert!(run.stderr.starts_with(&warning), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert_eq!(img.run("get", &["alpha"]), "one\n");
    assert_eq!(img.run("get", &["gamma"]), "three\n");
    let msg = img.fails("get", &["beta"]);
    assert!(msg.contains("key 'beta' not found"), "{msg}");

    // delete takes the flag too; with nothing damaged it says nothing.
    let mode = ["--wal-recovery-mode", "skip-any-corrupted-records"];
    img.run("delete", &[&mode[..], &["alpha"]].concat());
    assert_eq!(img.run("scan", &[]), "gamma\tthree\n");
}

#[test]
fn a_bad_wal_recovery_mode_is_a_usage_error() {
    let _s = serial();
    let img = Img::formatted();
    for cmd in ["put", "delete"] {
        let mut rest = vec!["--wal-recovery-mode", "kPointInTime", "k"];
        if cmd == "put" {
            rest.push("v");
        }
        let (_, msg) = fails_run(&img.args(&[cmd], &rest), 2);
        assert!(
            msg.contains("invalid value 'kPointInTime' for '--wal-recovery-mode <MODE>'"),
            "{cmd}: {msg}"
        );
        assert!(
            msg.contains(
                "absolute-consistency, tolerate-corrupted-tail-records, \
                 point-in-time, skip-any-corrupted-records"
            ),
            "{cmd}: {msg}"
        );
    }
    // get and scan never replay into a write: they take no mode.
    let (_, msg) = fails_run(
        &img.args(&["get"], &["--wal-recovery-mode", "point-in-time", "k"]),
        2,
    );
    assert!(msg.contains("unexpected argument"), "{msg}");
}

/// Overwriting a few keys with large values fills a small image with dead data: the write
/// commands clean zones (as `bench` does), so the store keeps taking writes. Without
/// cleaning, this image was full after 199 puts.
#[test]
fn write_commands_clean_zones() {
    let img = Img::formatted_with("8", "1MiB");
    let value = "v".repeat(6000);
    for i in 0..260 {
        let key = format!("key{}", i % 64);
        img.run("put", &[&key, &format!("{value}{i}")]);
    }
    assert_eq!(img.run("get", &["key3"]).trim_end(), format!("{value}259"));
    img.run("delete", &["key3"]);
}

#[test]
fn large_binary_values_go_in_from_a_file_or_stdin_and_come_out_raw() {
    let img = Img::formatted();
    // Larger than a command-line argument may be, and every byte value in it.
    let value: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("value.bin");
    std::fs::write(&file, &value).unwrap();
    img.run("put", &["big", "--value-file", file.to_str().unwrap()]);
    let raw = std::process::Command::new(ZKV)
        .args(img.args(&["get"], &["big", "--raw"]))
        .output()
        .unwrap();
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    assert_eq!(raw.stdout, value, "get --raw gives the bytes as stored");

    // `-` reads standard input; get without --raw escapes as before.
    let mut put = std::process::Command::new(ZKV)
        .args(img.args(&["put"], &["piped", "--value-file", "-"]))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    put.stdin.take().unwrap().write_all(b"a\tb\n").unwrap();
    assert!(put.wait().unwrap().success());
    assert_eq!(img.run("get", &["piped"]), "a\\tb\\n\n");

    // A value and a file at once, or neither, is a usage error; a missing file is named.
    let (_, msg) = fails_run(&img.args(&["put"], &["k", "v", "--value-file", "-"]), 2);
    assert!(msg.contains("cannot be used with"), "{msg}");
    let (_, msg) = fails_run(&img.args(&["put"], &["k"]), 2);
    assert!(msg.contains("required"), "{msg}");
    let msg = img.fails("put", &["k", "--value-file", "/nonexistent/value"]);
    assert!(
        msg.starts_with("--value-file /nonexistent/value: "),
        "{msg}"
    );
}

#[test]
fn compact_takes_deleted_values_out_of_the_tables() {
    let img = Img::formatted();
    let value = "v".repeat(20_000);
    for i in 0..12 {
        img.run("put", &[&format!("key{i:02}"), &value]);
    }
    for i in 0..10 {
        img.run("delete", &[&format!("key{i:02}")]);
    }
    let out = img.run("compact", &[]);
    assert!(out.contains("compacted; tables"), "{out}");
    // Two live values of 20 kB are left in the tables, nothing of the ten deleted ones.
    let bytes = total(&img.levels(), "bytes");
    assert!((40_000..60_000).contains(&bytes), "{bytes}\n{out}");
    assert_eq!(img.run("get", &["key11"]).trim_end(), value);
    img.fails("get", &["key03"]);
    // A range, and its bounds decoded like every key (--hex).
    img.run("compact", &["--from", "key05", "--to", "key11"]);
    let err = img.fails("compact", &["--hex", "--from", "zz"]);
    assert!(err.contains("--from"), "{err}");
}

/// A store filled through `zkv put` until a put is refused recovers through the CLI:
/// deletes, `zkv compact`, then puts again (docs/RELIABILITY.md, "A device full of live
/// data"). 12 zones of 256 KiB: the few active zones hold much of the dead data every
/// open leaves behind.
#[test]
fn a_store_filled_through_the_cli_takes_deletes_and_recovers() {
    let img = Img::formatted_with("12", "256KiB");
    let value = "v".repeat(8192);
    let mut acked = 0;
    let refusal = loop {
        let r = zkv(&img.args(&["put"], &[&format!("k{acked:04}"), &value]));
        if r.code != 0 {
            break r.stderr;
        }
        acked += 1;
        assert!(acked < 1000, "1000 puts of 8 KiB never filled 2.25 MiB");
    };
    assert!(
        refusal.contains("out of space for new data") && refusal.contains("compact"),
        "{refusal}"
    );
    assert_eq!(refusal.lines().count(), 1, "{refusal}");
    assert!(acked > 100, "{acked}");
    for i in (0..acked).step_by(2) {
        img.run("delete", &[&format!("k{i:04}")]);
    }
    img.run("compact", &[]);
    for i in 0..20 {
        img.run("put", &[&format!("new{i:02}"), &value]);
    }
    assert_eq!(img.run("get", &["k0001"]).trim_end(), value);
    img.fails("get", &["k0000"]);
    assert_eq!(img.run("get", &["new19"]).trim_end(), value);
}
