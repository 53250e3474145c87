//! Helpers shared by the CLI integration tests: run the real `zkv` binary and check its
//! exit code and output.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use tempfile::TempDir;

/// Serializes the tests of one test binary. A child process forked by one test thread
/// inherits, until it execs, the open image files of every other thread, and with them
/// their `flock` locks; a test that drops its image and at once runs `zkv` on it could then
/// see "already in use". Running the tests one at a time closes that window.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub const ZKV: &str = env!("CARGO_BIN_EXE_zkv");

pub const KIB: u64 = 1 << 10;

pub const MIB: u64 = 1 << 20;

/// A store small enough for `zkv bench` and `zkv compare` to flush, compact and clean zones
/// in a fraction of a second: 24 zones of 1 MiB, 64 KiB memtables and SSTs, a 256 KiB L1,
/// 200-byte values.
pub const SMALL_STORE: [&str; 12] = [
    "--zones",
    "24",
    "--zone-size",
    "1MiB",
    "--write-buffer-size",
    "64KiB",
    "--target-file-size-base",
    "64KiB",
    "--max-bytes-for-level-base",
    "256KiB",
    "--value-size",
    "200",
];

/// A BlobDB bench on [`SMALL_STORE`]: `workload` with `num` operations, every value of at
/// least 100 B in blob files, `--verify`, the report in `json`; `extra` adds flags (the blob
/// file size among them).
pub fn blob_bench_args<'a>(
    json: &'a str,
    workload: &'a str,
    num: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "bench",
        "--workload",
        workload,
        "--num",
        num,
        "--enable-blob-files",
        "--min-blob-size",
        "100",
        "--verify",
        "--progress-interval",
        "0",
        "--json",
        json,
    ];
    args.extend(SMALL_STORE);
    args.extend(extra);
    args
}

/// `zkv repro`'s tiny store, bench flags after `--` that shrink every run of a matrix: 16
/// zones of 512 KiB (2 of them reserved), 32 KiB memtables and SSTs, a 128 KiB L1, 5000
/// operations of 200-byte values; enough for the zone cleaner to copy.
pub const REPRO_TINY: [&str; 16] = [
    "--num",
    "5000",
    "--zones",
    "16",
    "--zone-size",
    "512KiB",
    "--write-buffer-size",
    "32KiB",
    "--target-file-size-base",
    "32KiB",
    "--max-bytes-for-level-base",
    "128KiB",
    "--value-size",
    "200",
    "--reserved-zones",
    "2",
];

/// The geometry flags of the file system images of the CLI tests: 16 zones of 1 MiB with
/// 768 KiB capacity.
pub const IMAGE_GEOMETRY: [&str; 6] = [
    "--zones",
    "16",
    "--zone-size",
    "1MiB",
    "--zone-capacity",
    "768KiB",
];

/// An image path in a temporary directory of its own, removed with it; nothing exists at
/// the path until a command creates it.
pub struct Img {
    _dir: TempDir,
    pub path: PathBuf,
    /// `file:PATH`, for `--device`.
    pub spec: String,
}

/// `name` in a new temporary directory, which goes when the directory handle is dropped.
fn temp_path(name: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    (dir, path)
}

impl Img {
    /// A new image of `zones` zones of `zone_size` made by `zkv zone create`: no file
    /// system on it.
    pub fn blank(zones: u32, zone_size: &str) -> Img {
        let img = Img::none();
        let zones = zones.to_string();
        ok(&[
            "zone",
            "create",
            "--device",
            &img.spec,
            "--zones",
            &zones,
            "--zone-size",
            zone_size,
        ]);
        img
    }

    /// A new image holding the tables of a 3000-key fillrandom on the small store, written
    /// by `zkv bench` with `extra` flags (which must succeed; progress lines may go to
    /// stderr).
    pub fn filled(extra: &[&str]) -> Img {
        let img = Img::none();
        let mut args = vec![
            "bench",
            "--device",
            &img.spec,
            "--workload",
            "fillrandom",
            "--num",
            "3000",
        ];
        args.extend(SMALL_STORE);
        args.extend(extra);
        let r = zkv(&args);
        assert_eq!(r.code, 0, "zkv {args:?} failed: {}", r.stderr);
        img
    }

    pub fn none() -> Img {
        let (dir, path) = temp_path("fs.img");
        let spec = format!("file:{}", path.display());
        Img {
            _dir: dir,
            path,
            spec,
        }
    }
}

/// Where a command writes its JSON report: a file in a temporary directory of its own,
/// removed with it.
pub struct TempJson {
    _dir: TempDir,
    pub path: PathBuf,
    /// The path as a command-line argument.
    pub arg: String,
}

impl TempJson {
    pub fn new() -> TempJson {
        let (dir, path) = temp_path("report.json");
        let arg = path.to_str().expect("a UTF-8 path").to_string();
        TempJson {
            _dir: dir,
            path,
            arg,
        }
    }

    /// The report the command wrote.
    pub fn read(&self) -> Value {
        read_json(&self.path)
    }
}

/// A path no command can create: `name` below a plain file, in a temporary directory.
pub struct Unwritable {
    _dir: TempDir,
    pub path: PathBuf,
}

impl Unwritable {
    pub fn new(name: &str) -> Unwritable {
        let (dir, file) = temp_path("plain-file");
        std::fs::write(&file, b"x").expect("write the plain file");
        Unwritable {
            _dir: dir,
            path: file.join(name),
        }
    }
}

/// Borrowed arguments of an owned command line.
pub fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn zkv(args: &[&str]) -> Run {
    let mut cmd = Command::new(ZKV);
    cmd.args(args);
    zkv_command(cmd)
}

/// Runs `cmd`, a `zkv` command with its own environment, as [`zkv`] does.
pub fn zkv_command(mut cmd: Command) -> Run {
    let out = cmd
        // Even with backtraces requested, a failure must stay one line.
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run the zkv binary");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs a command that must succeed silently on stderr; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let r = zkv(args);
    assert_eq!(r.code, 0, "zkv {args:?} failed: {}", r.stderr);
    assert!(
        r.stderr.is_empty(),
        "zkv {args:?} wrote to stderr: {}",
        r.stderr
    );
    r.stdout
}

pub fn fails_run(args: &[&str], code: i32) -> (Run, String) {
    let r = zkv(args);
    let msg = one_error(&r, code, &format!("{args:?}"));
    (r, msg)
}

/// The one error line of a run `what` that must fail with exit code `code` and not panic.
pub fn one_error(r: &Run, code: i32, what: &str) -> String {
    assert_eq!(
        r.code, code,
        "zkv {what}: exit code {} (stdout {:?}, stderr {:?})",
        r.code, r.stdout, r.stderr
    );
    assert!(
        !r.stderr.contains("panicked") && !r.stderr.contains("backtrace"),
        "zkv {what} panicked: {}",
        r.stderr
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "zkv {what}: want one error line, got {:?}",
        r.stderr
    );
    lines[0]
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("zkv {what}: no 'error: ' prefix in {:?}", lines[0]))
        .to_string()
}

/// Runs a command that must fail with exit code 1 and one error line; returns the message.
pub fn fails(args: &[&str]) -> String {
    fails_run(args, 1).1
}

/// Parses JSON output; a failure names the text.
pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Reads and parses a JSON file the command wrote.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: the JSON was not written: {e}", path.display()));
    json(&text)
}

/// The offsets in metadata zone 0 of an image of a file-update frame and of the same frame
/// in its batch's second copy: damaging both is corruption (later batches follow), one is
/// repaired from the other.
pub fn metadata_frame_copies(image: &Path) -> (u64, u64) {
    use zkv_zonefs::meta::{dump_zone, FrameKind};
    let dev = zkv_zns::FileDevice::open_read_only(image).expect("open the image");
    let frames = dump_zone(&dev, 0).expect("dump zone 0").frames;
    let i = frames
        .iter()
        .position(|f| f.kind == FrameKind::FileUpdate)
        .expect("a file update");
    // Its batch runs from the frame after the previous commit to the next commit; the
    // batch's copy follows it frame for frame.
    let start = frames[..i]
        .iter()
        .rposition(|f| f.kind == FrameKind::Commit)
        .map_or(0, |c| c + 1);
    let commit = i + frames[i..]
        .iter()
        .position(|f| f.kind == FrameKind::Commit)
        .expect("a commit");
    let copy = frames[i + commit + 1 - start];
    assert_eq!((copy.kind, copy.len), (frames[i].kind, frames[i].len));
    (frames[i].offset, copy.offset)
}

/// A report's entry of the `i`-th phase, which must be called `name`.
pub fn phase<'a>(report: &'a Value, i: usize, name: &str) -> &'a Value {
    let p = &report["workloads"][i];
    assert_eq!(p["name"], name, "phase {i}");
    p
}

/// A JSON number that must be a count.
pub fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Removes the fields of a bench report that measure wall time, which differ between two
/// deterministic runs (the deterministic mode's contract: everything else is the same).
pub fn strip_times(v: &mut Value) {
    const TIME_FIELDS: [&str; 6] = [
        "seconds",
        "ops_per_sec",
        "stall_ns",
        "blocking_ns",
        "latency_us",
        "policy_us",
    ];
    match v {
        Value::Object(m) => {
            for f in TIME_FIELDS {
                m.remove(f);
            }
            m.values_mut().for_each(strip_times);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_times),
        _ => {}
    }
}
