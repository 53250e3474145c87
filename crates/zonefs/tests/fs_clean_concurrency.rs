//! The background cleaner under load: writer threads (SSTs placed by LIZA, packed files,
//! a WAL that rotates) churn a small device that has to be cleaned many times, while
//! readers check that they only ever see synced prefixes. At the end: no two writes ever
//! overlapped on one zone (copies included), every synced byte reads back, invariants hold
//! and per-zone valid bytes = Σ extents, before and after a remount.

mod fs_support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use fs_support::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::{IoCategory, ZonedDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint};

type Sizes = Arc<Mutex<BTreeMap<String, u64>>>;

fn hint_for(thread: usize, rng: &mut ChaCha8Rng) -> (FileKind, PlacementHint) {
    if thread.is_multiple_of(2) {
        let level = rng.random_range(1..4);
        (FileKind::Sst, hint(FileKind::Sst, Some(level)))
    } else {
        let h = PlacementHint {
            kind: Some(FileKind::Other),
            lifetime: Lifetime::None,
            ..Default::default()
        };
        (FileKind::Other, h)
    }
}

/// Writes files, keeps up to `keep` of them, deletes a random one beyond that.
fn writer(fs: ZoneFs, sizes: Sizes, thread: usize, seed: u64, files: usize, keep: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed * 100 + thread as u64);
    let mut mine: Vec<String> = Vec::new();
    for n in 0..files {
        let name = format!("t{thread}-{n:04}");
        let (kind, h) = hint_for(thread, &mut rng);
        let mut w = fs
            .create(&name, kind, h)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let seed = seed_of(&name);
        let mut size = 0u64;
        for _ in 0..rng.random_range(1..6) {
            let len = rng.random_range(1..40_000);
            w.append(&data(seed, size, len))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            size += len as u64;
            if rng.random_bool(0.3) {
                w.sync().unwrap_or_else(|e| panic!("{name}: {e}"));
                sizes.lock().unwrap().insert(name.clone(), size);
            }
        }
        w.close().unwrap_or_else(|e| panic!("{name}: {e}"));
        sizes.lock().unwrap().insert(name.clone(), size);
        mine.push(name);
        if mine.len() > keep {
            let old = mine.remove(rng.random_range(0..mine.len()));
            sizes.lock().unwrap().remove(&old);
            fs.delete(&old).unwrap();
        }
    }
}

/// A WAL: small synced records, rotated every so often (the old one deleted).
fn wal(fs: ZoneFs, sizes: Sizes, seed: u64, logs: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5a5a);
    let mut previous: Option<String> = None;
    for n in 0..logs {
        let name = format!("wal-{n:04}");
        let h = hint(FileKind::Wal, None);
        let mut w = fs.create(&name, FileKind::Wal, h).unwrap();
        let seed = seed_of(&name);
        let mut size = 0u64;
        for _ in 0..rng.random_range(4..20) {
            let len = rng.random_range(100..6_000);
            w.append(&data(seed, size, len)).unwrap();
            size += len as u64;
            w.sync().unwrap_or_else(|e| panic!("{name}: {e}"));
            sizes.lock().unwrap().insert(name.clone(), size);
        }
        w.close().unwrap();
        if let Some(old) = previous.replace(name) {
            sizes.lock().unwrap().remove(&old);
            fs.delete(&old).unwrap();
        }
    }
}

/// Reads whatever exists; every read must be a synced prefix of the file's content.
fn reader(fs: ZoneFs, done: Arc<AtomicBool>) -> usize {
    let mut checked = 0;
    while !done.load(Ordering::Relaxed) {
        checked += check_synced_prefixes(&fs);
        thread::sleep(std::time::Duration::from_millis(1));
    }
    checked
}

fn run(seed: u64) {
    // 30 data zones of 256 KiB, two of them reserved (the cleaner's room when writers
    // outrun it); 8 open / 10 active: tokens = 7 for 5 writers and the cleaner.
    let (_, mem) = mem_device(geometry(32, 256, 8, 10));
    let probe = Probe::new(mem);
    let dev: Arc<dyn ZonedDevice> = probe.clone();
    let opts = FsOptions::default()
        .with_meta_zones(2)
        .with_reserved_zones(2);
    let fs = format(&dev, opts.clone());
    let cleaner = fs.start_cleaner().unwrap();
    assert!(
        fs.start_cleaner().is_err(),
        "one background cleaner at a time"
    );
    let sizes: Sizes = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for thread in 0..4 {
        let (fs, sizes) = (fs.clone(), sizes.clone());
        writers.push(thread::spawn(move || {
            writer(fs, sizes, thread, seed, 80, 14)
        }));
    }
    {
        let (fs, sizes) = (fs.clone(), sizes.clone());
        writers.push(thread::spawn(move || wal(fs, sizes, seed, 30)));
    }
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (fs, done) = (fs.clone(), done.clone());
            thread::spawn(move || reader(fs, done))
        })
        .collect();
    for h in writers {
        h.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let checked: usize = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(checked > 0);
    assert_eq!(cleaner.last_error(), None);
    cleaner.stop();
    assert_eq!(probe.overlaps(), 0, "two writes overlapped on one zone");
    let s = fs.stats();
    assert!(s.gc.runs >= 3, "seed {seed}: {:?}", s.gc);
    assert!(s.gc.victims >= 10, "seed {seed}: {:?}", s.gc);
    assert!(s.gc.copy_bytes > 0, "seed {seed}: {:?}", s.gc);
    assert!(s.gc.resets > 0, "seed {seed}: {:?}", s.gc);
    let expected: BTreeMap<String, Vec<u8>> = sizes
        .lock()
        .unwrap()
        .iter()
        .map(|(name, size)| (name.clone(), data(seed_of(name), 0, *size as usize)))
        .collect();
    assert_eq!(expected.len(), 4 * 14 + 1);
    assert_files(&fs, &expected, "after the concurrent phase");
    drop(fs);
    let fs = mount(&dev, opts);
    assert_files(&fs, &expected, "after remount");
}

#[test]
fn writers_readers_and_the_background_cleaner() {
    for seed in 0..3 {
        run(seed);
    }
}

/// A writer that finds no zone waits for the background cleaner, and the wait is counted
/// as blocking time. The cleaner's copies are held at a gate so that the writer surely
/// waits.
#[test]
fn writers_that_find_no_zone_wait_for_the_background_cleaner() {
    let (_, mem) = mem_device(geometry(10, 256, 0, 0));
    let probe = Probe::new(mem);
    let dev: Arc<dyn ZonedDevice> = probe.clone();
    let opts = FsOptions::default()
        .with_meta_zones(2)
        .with_reserved_zones(1);
    let fs = format(&dev, opts.clone());
    let packed = PlacementHint {
        kind: Some(FileKind::Other),
        lifetime: Lifetime::None,
        ..Default::default()
    };
    let mut files = BTreeMap::new();
    for i in 0..28u64 {
        let name = format!("f{i:02}");
        write_file(
            &fs,
            &name,
            FileKind::Other,
            packed.clone(),
            &data(i, 0, 65536),
        );
        files.insert(name, data(i, 0, 65536));
    }
    for name in ["f00", "f01"] {
        fs.delete(name).unwrap();
        files.remove(name);
    }
    assert_eq!(fs.stats().free_bytes, 0);
    probe.hold(&[IoCategory::GcCopy]);
    let cleaner = fs.start_cleaner().unwrap();
    probe.wait_held(1);
    let writer = {
        let fs = fs.clone();
        thread::spawn(move || {
            write_file(&fs, "new", FileKind::Other, packed, &data(99, 0, 65536));
        })
    };
    thread::sleep(std::time::Duration::from_millis(60));
    assert!(
        !writer.is_finished(),
        "the writer cannot go on before the cleaner"
    );
    probe.open_gate();
    writer.join().unwrap();
    files.insert("new".into(), data(99, 0, 65536));
    drop(cleaner);
    let s = fs.stats();
    assert!(s.gc.blocking_events >= 1, "{:?}", s.gc);
    assert!(s.gc.blocking_ns >= 50_000_000, "{:?}", s.gc);
    assert_eq!((s.gc.victims, s.gc.copy_bytes), (1, 128 * KIB));
    assert_files(&fs, &files, "end");
}

/// The background thread sleeps when there is nothing to do, stops when its handle is
/// dropped, and also when the file system goes away (it holds a weak handle), so that the
/// device can be mounted again.
#[test]
fn the_background_cleaner_idles_and_stops() {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let opts = FsOptions::default().with_meta_zones(2);
    let fs = format(&dev, opts.clone());
    let cleaner = fs.start_cleaner().unwrap();
    thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(fs.stats().gc.runs, 0, "plenty of free space: no run");
    drop(cleaner);
    let again = fs.start_cleaner().unwrap();
    drop(fs);
    // The thread noticed the file system is gone; stopping returns at once.
    again.stop();
    let fs = mount(&dev, opts);
    assert!(fs.list().is_empty());
}
