//! Shared support of the file-layer tests: small devices, hints, deterministic data, and
//! checks that a mounted file system holds exactly the expected files.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use zns::{Geometry, MemDevice, ZonedDevice};
use zonefs::fs::{FsOptions, ZoneFs};
use zonefs::meta::FileKind;
use zonefs::placement::{Lifetime, PlacementHint};

pub const KIB: u64 = 1024;

/// `zones` zones of `zone_kib` KiB, 4 KiB blocks, the given open/active limits.
pub fn geometry(zones: u32, zone_kib: u64, max_open: u32, max_active: u32) -> Geometry {
    Geometry::new(zones, zone_kib * KIB)
        .with_block_size(4096)
        .with_limits(max_open, max_active)
}

pub fn mem_device(geo: Geometry) -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
    let dev = Arc::new(MemDevice::new(geo).expect("valid geometry"));
    let dyn_dev: Arc<dyn ZonedDevice> = dev.clone();
    (dev, dyn_dev)
}

pub fn opts() -> FsOptions {
    FsOptions::default().with_meta_zones(2)
}

pub fn format(dev: &Arc<dyn ZonedDevice>, opts: FsOptions) -> ZoneFs {
    ZoneFs::format(dev.clone(), opts).expect("format")
}

pub fn mount(dev: &Arc<dyn ZonedDevice>, opts: FsOptions) -> ZoneFs {
    ZoneFs::mount(dev.clone(), opts).expect("mount")
}

/// The hint the engine would build for a file of this kind and level (base level 1).
pub fn hint(kind: FileKind, level: Option<u8>) -> PlacementHint {
    PlacementHint {
        kind: Some(kind),
        level,
        lifetime: Lifetime::for_file(kind, level, 1),
        ..Default::default()
    }
}

/// Deterministic, position-dependent bytes (a shifted copy would not match).
pub fn data(seed: u64, start: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| {
            let x = (start + i).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed.wrapping_mul(31);
            (x >> 29) as u8
        })
        .collect()
}

pub fn read_file(fs: &ZoneFs, name: &str) -> Vec<u8> {
    fs.open(name)
        .unwrap_or_else(|e| panic!("open {name}: {e}"))
        .read_all()
        .unwrap_or_else(|e| panic!("read {name}: {e}"))
}

/// Panics unless the file system holds exactly `files` (name → content), and its
/// metadata and zone table are consistent.
pub fn assert_files(fs: &ZoneFs, files: &BTreeMap<String, Vec<u8>>, context: &str) {
    let names: Vec<String> = fs.list().into_iter().map(|f| f.name).collect();
    let expected: Vec<String> = files.keys().cloned().collect();
    assert_eq!(names, expected, "{context}: file names");
    for (name, content) in files {
        let got = read_file(fs, name);
        assert_eq!(got.len(), content.len(), "{context}: size of {name}");
        assert!(got == *content, "{context}: content of {name}");
    }
    assert_consistent(fs, context);
}

/// Metadata invariants, zone table agreement, and per-zone valid bytes = Σ extents.
pub fn assert_consistent(fs: &ZoneFs, context: &str) {
    fs.check_consistency()
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    let state = fs.metadata();
    state
        .check_invariants()
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    let mut sums: BTreeMap<u32, u64> = BTreeMap::new();
    for (_, m) in state.files() {
        for e in &m.extents {
            *sums.entry(e.zone).or_default() += e.len;
        }
    }
    for z in fs.zone_stats().expect("zone stats") {
        let sum = sums.get(&z.zone).copied().unwrap_or(0);
        assert_eq!(z.valid, sum, "{context}: valid bytes of zone {}", z.zone);
        assert!(
            z.valid + z.unsynced <= z.written,
            "{context}: zone {}",
            z.zone
        );
    }
}
