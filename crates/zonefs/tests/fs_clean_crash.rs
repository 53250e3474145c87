//! Power cuts while the cleaner migrates: a seeded workload leaves many partly valid
//! zones, then a cleaning run that moves data out of many victims is cut at a random
//! device command (dropping or tearing the unsynced writes), sometimes followed by a
//! second cut during the mount. Cleaning never changes a file's content, so after the
//! restart every file must be exactly as synced, the metadata consistent, with nothing
//! half-migrated visible; and the file system must clean and remount again.

mod fs_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use fs_support::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::{FaultControl, MemDevice, TearMode, ZonedDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint};

type Files = BTreeMap<String, Vec<u8>>;

fn device() -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
    // 22 data zones of 128 KiB; metadata zones of 32 blocks roll often.
    mem_device(geometry(24, 128, 6, 8))
}

/// Cleaning thresholds high enough that a run moves many victims.
fn options() -> FsOptions {
    opts().with_gc(80, 90)
}

/// Files of random sizes, synced at random points, half of them packed in zone order,
/// the others placed by LIZA; then about 40% deleted.
fn setup(fs: &ZoneFs, seed: u64) -> Files {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut files = Files::new();
    for f in 0..28u64 {
        let name = format!("f{f:02}");
        let (kind, h) = if rng.random_bool(0.5) {
            let h = PlacementHint {
                kind: Some(FileKind::Other),
                lifetime: Lifetime::None,
                ..Default::default()
            };
            (FileKind::Other, h)
        } else {
            let level = rng.random_range(0..4);
            (FileKind::Sst, hint(FileKind::Sst, Some(level)))
        };
        let mut w = fs.create(&name, kind, h).unwrap();
        let mut content = Vec::new();
        for _ in 0..rng.random_range(1..5) {
            let piece = data(seed + f, content.len() as u64, rng.random_range(1..30_000));
            w.append(&piece).unwrap();
            content.extend_from_slice(&piece);
            if rng.random_bool(0.4) {
                w.sync().unwrap();
            }
        }
        w.close().unwrap();
        files.insert(name, content);
    }
    let names: Vec<String> = files.keys().cloned().collect();
    for name in names {
        if rng.random_bool(0.4) {
            fs.delete(&name).unwrap();
            files.remove(&name);
        }
    }
    files
}

/// Mutating device commands of the cleaning run of `seed`, without a cut.
fn commands_of(seed: u64) -> u64 {
    let (mem, dev) = device();
    let fs = format(&dev, options());
    setup(&fs, seed);
    let start = mem.mutating_commands();
    let r = fs.clean_now().unwrap();
    assert!(r.victims > 0 && r.copied_bytes > 0, "seed {seed}: {r:?}");
    mem.mutating_commands() - start
}

/// Returns whether the cut hit the cleaning run (rather than falling right after it).
fn crash_once(seed: u64, mode: TearMode) -> bool {
    let total = commands_of(seed);
    let (mem, dev) = device();
    let fs = format(&dev, options());
    let files = setup(&fs, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc1ea_0000);
    mem.schedule_power_cut(rng.random_range(0..=total), mode);
    let hit = match fs.clean_now() {
        Ok(_) => false,
        Err(e) => {
            assert!(e.is_power_loss(), "seed {seed}: {e}");
            true
        }
    };
    if mem.is_powered() {
        mem.power_cut(mode);
    }
    drop(fs);
    mem.restart();
    if rng.random_bool(0.3) {
        mem.schedule_power_cut(rng.random_range(0..12), TearMode::Drop);
        match ZoneFs::mount(dev.clone(), options()) {
            Ok(fs) => {
                drop(fs);
                mem.power_cut(TearMode::Drop);
            }
            Err(e) => assert!(e.is_power_loss(), "seed {seed}: {e}"),
        }
        mem.restart();
    }
    let fs = mount(&dev, options());
    assert_files(&fs, &files, &format!("seed {seed} {mode:?} after the cut"));
    // It cleans again, and everything survives another remount.
    fs.clean_now()
        .unwrap_or_else(|e| panic!("seed {seed}: clean after mount: {e}"));
    assert_files(&fs, &files, &format!("seed {seed} cleaned again"));
    drop(fs);
    let fs = mount(&dev, options());
    assert_files(&fs, &files, &format!("seed {seed} second mount"));
    hit
}

#[test]
fn power_cuts_during_cleaning_dropping_unsynced_writes() {
    let hits = (0..150)
        .filter(|&seed| crash_once(seed, TearMode::Drop))
        .count();
    assert!(hits >= 140, "{hits} cuts hit the cleaning run");
}

#[test]
fn power_cuts_during_cleaning_tearing_unsynced_writes() {
    let hits = (0..150)
        .filter(|&seed| crash_once(seed, TearMode::Tear { seed }))
        .count();
    assert!(hits >= 140, "{hits} cuts hit the cleaning run");
}
