//! Helpers shared by the CLI integration tests: run the real `zkv` binary and check its
//! exit code and output.
#![allow(dead_code)] // each test file uses a different subset

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

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

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn zkv(args: &[&str]) -> Run {
    let out = Command::new(ZKV)
        .args(args)
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
    assert_eq!(
        r.code, code,
        "zkv {args:?}: exit code {} (stdout {:?}, stderr {:?})",
        r.code, r.stdout, r.stderr
    );
    assert!(
        !r.stderr.contains("panicked") && !r.stderr.contains("backtrace"),
        "zkv {args:?} panicked: {}",
        r.stderr
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "zkv {args:?}: want one error line, got {:?}",
        r.stderr
    );
    let msg = lines[0]
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("zkv {args:?}: no 'error: ' prefix in {:?}", lines[0]))
        .to_string();
    (r, msg)
}
