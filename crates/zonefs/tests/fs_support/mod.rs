//! Shared support of the file-layer tests: small devices, hints, deterministic data, and
//! checks that a mounted file system holds exactly the expected files.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use zkv_zns::{Geometry, MemDevice, ZonedDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs, ZoneStat};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint};

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

/// Creates `name`, writes `content` and closes the writer.
pub fn write_file(fs: &ZoneFs, name: &str, kind: FileKind, hint: PlacementHint, content: &[u8]) {
    let mut w = fs
        .create(name, kind, hint)
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
    w.append(content)
        .unwrap_or_else(|e| panic!("append to {name}: {e}"));
    w.close().unwrap_or_else(|e| panic!("close {name}: {e}"));
}

/// Creates the SST `name` of `level` with the engine's hint for it and writes `content`.
pub fn write_sst(fs: &ZoneFs, name: &str, level: u8, content: &[u8]) {
    write_file(
        fs,
        name,
        FileKind::Sst,
        hint(FileKind::Sst, Some(level)),
        content,
    );
}

/// The zones holding `name`, in zone order.
pub fn zone_of(fs: &ZoneFs, name: &str) -> Vec<u32> {
    fs.zones_of(name)
        .unwrap_or_else(|e| panic!("zones of {name}: {e}"))
        .into_iter()
        .map(|(z, _)| z)
        .collect()
}

/// The figures of data zone `zone`.
pub fn zone_stat(fs: &ZoneFs, zone: u32) -> ZoneStat {
    fs.zone_stats()
        .expect("zone stats")
        .into_iter()
        .find(|z| z.zone == zone)
        .unwrap_or_else(|| panic!("no data zone {zone}"))
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

/// A device wrapper that watches writes: it counts writes that overlap in time on the same
/// zone (a broken write-pointer lock would show up here) and can hold writes of chosen
/// categories at a gate, to keep a writer inside a write as long as a test needs.
pub struct Probe {
    inner: Arc<dyn ZonedDevice>,
    zone_size: u64,
    inflight: std::sync::Mutex<BTreeMap<u32, u32>>,
    pub overlaps: std::sync::atomic::AtomicU64,
    gate: std::sync::Mutex<Gate>,
    gate_cv: std::sync::Condvar,
}

#[derive(Default)]
struct Gate {
    held: Vec<zkv_zns::IoCategory>,
    waiting: usize,
}

impl Probe {
    pub fn new(inner: Arc<dyn ZonedDevice>) -> Arc<Probe> {
        Arc::new(Probe {
            zone_size: inner.geometry().zone_size,
            inner,
            inflight: Default::default(),
            overlaps: Default::default(),
            gate: Default::default(),
            gate_cv: Default::default(),
        })
    }

    pub fn overlaps(&self) -> u64 {
        self.overlaps.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Writes of these categories wait until [`Probe::open_gate`].
    pub fn hold(&self, cats: &[zkv_zns::IoCategory]) {
        self.gate.lock().unwrap().held = cats.to_vec();
    }

    pub fn open_gate(&self) {
        self.gate.lock().unwrap().held.clear();
        self.gate_cv.notify_all();
    }

    /// Writes waiting at the gate now.
    pub fn held_writes(&self) -> usize {
        self.gate.lock().unwrap().waiting
    }

    /// Waits until `n` writes wait at the gate.
    pub fn wait_held(&self, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.held_writes() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "writes never reached the gate"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn track<T>(&self, zone: u32, cat: zkv_zns::IoCategory, f: impl FnOnce() -> T) -> T {
        {
            let mut g = self.gate.lock().unwrap();
            if g.held.contains(&cat) {
                g.waiting += 1;
                while g.held.contains(&cat) {
                    g = self.gate_cv.wait(g).unwrap();
                }
                g.waiting -= 1;
            }
        }
        {
            let mut m = self.inflight.lock().unwrap();
            let n = m.entry(zone).or_default();
            *n += 1;
            if *n > 1 {
                self.overlaps
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        // Widen the window in which a second writer of the same zone would be caught.
        std::thread::yield_now();
        let result = f();
        if let Some(n) = self.inflight.lock().unwrap().get_mut(&zone) {
            *n -= 1;
        }
        result
    }
}

impl ZonedDevice for Probe {
    fn geometry(&self) -> zkv_zns::Geometry {
        self.inner.geometry()
    }

    fn describe(&self) -> String {
        format!("probe({})", self.inner.describe())
    }

    fn report_zones(&self, first: u32, count: u32) -> zkv_zns::Result<Vec<zkv_zns::ZoneInfo>> {
        self.inner.report_zones(first, count)
    }

    fn read(&self, addr: u64, buf: &mut [u8], cat: zkv_zns::IoCategory) -> zkv_zns::Result<()> {
        self.inner.read(addr, buf, cat)
    }

    fn write(&self, addr: u64, data: &[u8], cat: zkv_zns::IoCategory) -> zkv_zns::Result<()> {
        let zone = (addr / self.zone_size) as u32;
        self.track(zone, cat, || self.inner.write(addr, data, cat))
    }

    fn append(&self, zone: u32, data: &[u8], cat: zkv_zns::IoCategory) -> zkv_zns::Result<u64> {
        self.track(zone, cat, || self.inner.append(zone, data, cat))
    }

    fn zone_op(&self, zone: u32, op: zkv_zns::ZoneOp) -> zkv_zns::Result<()> {
        self.inner.zone_op(zone, op)
    }

    fn sync(&self) -> zkv_zns::Result<()> {
        self.inner.sync()
    }

    fn stats(&self) -> zkv_zns::DeviceStats {
        self.inner.stats()
    }

    fn faults(&self) -> Option<&dyn zkv_zns::FaultControl> {
        self.inner.faults()
    }
}

/// The content seed of a file, derived from its name, so a reader can check any file it finds
/// without asking the writer.
pub fn seed_of(name: &str) -> u64 {
    name.bytes()
        .fold(7u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)))
}

/// One pass over every file that exists now: each must read back as a prefix of its content
/// (`data(seed_of(name), ..)`), i.e. what its writer last synced. Returns the files checked.
pub fn check_synced_prefixes(fs: &ZoneFs) -> usize {
    let mut checked = 0;
    for f in fs.list() {
        let Ok(r) = fs.open(&f.name) else {
            continue; // deleted meanwhile
        };
        let got = r.read_all().unwrap();
        assert!(got == data(seed_of(&f.name), 0, got.len()), "{}", f.name);
        checked += 1;
    }
    checked
}
