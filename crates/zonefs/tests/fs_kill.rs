//! A file-backed store is created, filled, cleaned and killed (SIGKILL of a real process),
//! then mounted again: nothing that was synced is lost, nothing deleted comes back, and the
//! file system keeps working.
//!
//! The test binary runs itself as the child: `child_writer_process` does nothing unless
//! `ZKV_KILL_IMAGE` is set. The child logs each operation's intent before starting it and
//! its completion after it returned; the log is a plain file, which a process kill (unlike a
//! power cut) does not lose, so the parent knows exactly what was acknowledged.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use zkv_zns::{FileDevice, Geometry, ZonedDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::PlacementHint;

const IMAGE_ENV: &str = "ZKV_KILL_IMAGE";
const LOG_ENV: &str = "ZKV_KILL_LOG";
/// Files kept alive by the child: about 70% of the usable space.
const LIVE: usize = 130;

fn opts() -> FsOptions {
    FsOptions::default().with_reserved_zones(2).with_gc(20, 25)
}

fn geometry() -> Geometry {
    Geometry::new(32, 256 * 1024).with_limits(8, 8)
}

/// File `i`'s size and content: a pure function of `i`, so the parent can check it.
fn content(i: u64) -> Vec<u8> {
    let len = 4096 + (i * 7919 % 23) * 3000;
    (0..len)
        .map(|b| ((b ^ i.wrapping_mul(0x9E37_79B9)) % 251) as u8)
        .collect()
}

fn hint(i: u64) -> PlacementHint {
    PlacementHint {
        kind: Some(FileKind::Sst),
        level: Some((i % 4) as u8),
        ..PlacementHint::default()
    }
}

#[test]
fn child_writer_process() {
    let (Ok(image), Ok(log)) = (std::env::var(IMAGE_ENV), std::env::var(LOG_ENV)) else {
        return; // run as a normal test: nothing to do
    };
    let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(Path::new(&image)).unwrap());
    let fs = ZoneFs::mount(dev, opts()).unwrap();
    fs.set_inline_cleaning(true);
    let mut log = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let mut say = |line: String| log.write_all(line.as_bytes()).unwrap();
    let mut victims = 0;
    let mut alive: Vec<u64> = Vec::new();
    for i in 0..100_000u64 {
        say(format!("c {i}\n"));
        let mut w = fs.create(&format!("f{i}"), FileKind::Sst, hint(i)).unwrap();
        for chunk in content(i).chunks(5000) {
            w.append(chunk).unwrap();
        }
        w.sync().unwrap();
        w.close().unwrap();
        say(format!("C {i}\n"));
        alive.push(i);
        // Keep LIVE files alive; a pseudo-random one dies, so zones end up partly invalid
        // and the cleaner has to copy.
        if alive.len() > LIVE {
            let j = alive.swap_remove((i.wrapping_mul(2_654_435_761) % LIVE as u64) as usize);
            say(format!("d {j}\n"));
            fs.delete(&format!("f{j}")).unwrap();
            say(format!("D {j}\n"));
        }
        fs.maybe_clean().unwrap();
        let v = fs.stats().gc.victims;
        if v != victims {
            victims = v;
            say(format!("V {v}\n"));
        }
    }
}

/// What the log says about each file.
#[derive(Default, Debug)]
struct Seen {
    created: bool,
    closed: bool,
    deleting: bool,
    deleted: bool,
}

fn read_log(path: &Path) -> (BTreeMap<u64, Seen>, u64) {
    let mut files: BTreeMap<u64, Seen> = BTreeMap::new();
    let mut victims = 0;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let Some((op, n)) = line.split_once(' ') else {
            continue; // a line cut by the kill
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let seen = files.entry(n).or_default();
        match op {
            "c" => seen.created = true,
            "C" => seen.closed = true,
            "d" => seen.deleting = true,
            "D" => seen.deleted = true,
            "V" => victims = n,
            _ => {}
        }
    }
    files.retain(|_, s| s.created || s.deleting);
    (files, victims)
}

fn check_after_kill(fs: &ZoneFs, files: &BTreeMap<u64, Seen>) {
    fs.check_consistency().unwrap();
    for (&i, seen) in files {
        let name = format!("f{i}");
        let exists = fs.exists(&name);
        let body = || fs.open(&name).unwrap().read_all().unwrap();
        if seen.deleted {
            assert!(!exists, "{name} was deleted but came back");
        } else if seen.deleting {
            // Killed during the delete: gone, or intact.
            assert!(!exists || body() == content(i), "{name} half deleted");
        } else if seen.closed {
            assert!(exists, "{name} was synced but is lost");
            assert_eq!(body(), content(i), "{name} was synced but differs");
        } else {
            // Killed while writing it: absent, empty (created, never synced) or complete.
            assert!(
                !exists || body().is_empty() || body() == content(i),
                "{name} is half written"
            );
        }
    }
}

/// Starts the child and kills it once it has synced more than `LIVE` files and cleaned at
/// least `min_victims` zones (so the kill lands in the cleaning phase however loaded the
/// machine is), plus `extra` more time so each round stops it at a different point.
fn kill_after(image: &Path, log: &Path, min_victims: u64, extra: Duration) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer_process", "--nocapture"])
        .env(IMAGE_ENV, image)
        .env(LOG_ENV, log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        // If the child already failed, its exit status says so.
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child writer stopped by itself: {status}");
        }
        let (files, victims) = read_log(log);
        let synced = files.values().filter(|s| s.closed).count();
        if synced > LIVE && victims >= min_victims {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the child made too little progress in 120 s ({synced} files synced, {victims} victims)"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(extra);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn killed_process_loses_nothing_synced() {
    let dir = tempfile::tempdir().unwrap();
    let image: PathBuf = dir.path().join("store.img");
    let log = dir.path().join("ops.log");
    {
        let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::create(&image, geometry()).unwrap());
        ZoneFs::format(dev, opts()).unwrap();
    }
    let mut max_victims = 0;
    for (round, (victims, ms)) in [(1u64, 0u64), (20, 7), (60, 13)].into_iter().enumerate() {
        std::fs::write(&log, b"").unwrap();
        kill_after(&image, &log, victims, Duration::from_millis(ms));
        let (files, victims) = read_log(&log);
        max_victims = max_victims.max(victims);
        let synced = files.values().filter(|s| s.closed).count();
        eprintln!("round {round}: {synced} files synced, {victims} zones cleaned before the kill");
        assert!(
            synced > LIVE,
            "round {round}: the child did too little before the kill"
        );
        let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(&image).unwrap());
        let fs = ZoneFs::mount(Arc::clone(&dev), opts()).unwrap();
        check_after_kill(&fs, &files);
        // The store keeps working: the next round's child starts from here. Clear out the
        // names this round used so the next child can create them again.
        for name in fs.list().into_iter().map(|f| f.name) {
            fs.delete(&name).unwrap();
        }
        fs.check_consistency().unwrap();
    }
    assert!(
        max_victims > 0,
        "no zone was cleaned before any kill: the test did not exercise cleaning"
    );
}
