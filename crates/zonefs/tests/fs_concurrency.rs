//! Concurrency: WAL and SST writers and readers on one file system. No two writers may
//! ever write to the same zone at the same time (the write-pointer lock), readers only
//! ever see synced prefixes, and at the end every file holds exactly what was synced.

mod fs_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::thread;

use fs_support::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::ZonedDevice;
use zkv_zonefs::fs::{FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;

type Sizes = Arc<Mutex<BTreeMap<String, u64>>>;

/// Writes `files` files one after the other, syncing now and then, keeping the last two.
fn writer(fs: ZoneFs, sizes: Sizes, thread: usize, kind: FileKind, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed * 100 + thread as u64);
    let level = (kind == FileKind::Sst).then_some(1 + (thread % 3) as u8);
    let mut mine = Vec::new();
    for n in 0..14 {
        let name = format!("t{thread}-{n:03}");
        let mut w = fs.create(&name, kind, hint(kind, level)).unwrap();
        let seed = seed_of(&name);
        let mut size = 0u64;
        for _ in 0..rng.random_range(2..12) {
            let len = rng.random_range(1..24_000);
            w.append(&data(seed, size, len)).unwrap();
            size += len as u64;
            if rng.random_bool(0.4) {
                w.sync().unwrap();
                sizes.lock().unwrap().insert(name.clone(), size);
            }
        }
        w.close().unwrap();
        sizes.lock().unwrap().insert(name.clone(), size);
        mine.push(name);
        if mine.len() > 2 {
            let old = mine.remove(0);
            sizes.lock().unwrap().remove(&old);
            fs.delete(&old).unwrap();
        }
    }
}

/// Reads whatever exists; every read must be a synced prefix of the file's content.
fn reader(fs: ZoneFs, rounds: usize) -> usize {
    let mut checked = 0;
    for _ in 0..rounds {
        checked += check_synced_prefixes(&fs);
        thread::yield_now();
    }
    checked
}

#[test]
fn writers_never_share_a_write_pointer_and_readers_see_synced_prefixes() {
    for seed in 0..6 {
        concurrent_run(seed);
    }
}

fn concurrent_run(seed: u64) {
    // 5 open / 6 active: tokens = min(4, 4), so five writers compete for four leases.
    let (_, mem) = mem_device(geometry(32, 512, 5, 6));
    let probe = Probe::new(mem);
    let dev: Arc<dyn ZonedDevice> = probe.clone();
    let opts = FsOptions::default().with_meta_zones(2);
    let fs = format(&dev, opts.clone());
    let sizes: Sizes = Arc::default();
    let kinds = [
        FileKind::Wal,
        FileKind::Wal,
        FileKind::Sst,
        FileKind::Sst,
        FileKind::Sst,
    ];
    let mut handles = Vec::new();
    for (thread, kind) in kinds.into_iter().enumerate() {
        let (fs, sizes) = (fs.clone(), sizes.clone());
        handles.push(thread::spawn(move || writer(fs, sizes, thread, kind, seed)));
    }
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let fs = fs.clone();
            thread::spawn(move || reader(fs, 40))
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let checked: usize = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(checked > 0);
    assert_eq!(probe.overlaps(), 0, "two writes overlapped on one zone");
    let expected: BTreeMap<String, Vec<u8>> = sizes
        .lock()
        .unwrap()
        .iter()
        .map(|(name, size)| (name.clone(), data(seed_of(name), 0, *size as usize)))
        .collect();
    assert_eq!(expected.len(), 10);
    assert_files(&fs, &expected, "after the concurrent phase");
    let stats = fs.stats();
    assert!(stats.zero_copy_resets > 0, "{stats:?}");
    drop(fs);
    let fs = mount(&dev, opts);
    assert_files(&fs, &expected, "after remount");
}
