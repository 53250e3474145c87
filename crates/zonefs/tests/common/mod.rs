//! Shared support of the metadata integration tests: a reference model of the file table
//! (plain maps, rules written independently of `FsState`), a generator of valid records,
//! and a harness that drives a `MetaLog` and remembers the model at every batch.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::{Geometry, IoCategory, MemDevice, ZoneState, ZonedDevice};
use zkv_zonefs::meta::{
    Extent, FileId, FileKind, FileMeta, FsState, MetaError, MetaLog, Record, ZoneLayout,
    ZonePlacement,
};

/// 10 zones of 64 KiB with 4 KiB blocks: a metadata zone holds 16 blocks, so the log rolls
/// every dozen syncs or so.
pub fn small_geometry() -> Geometry {
    Geometry::new(10, 64 << 10).with_block_size(4096)
}

/// 10 zones of 16 KiB with 512-byte blocks: batches and snapshots span many blocks, so a
/// torn write often keeps part of one.
pub fn tiny_block_geometry() -> Geometry {
    Geometry::new(10, 16 << 10).with_block_size(512)
}

pub fn mem_device(geo: Geometry) -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
    let dev = Arc::new(MemDevice::new(geo).unwrap());
    let dyn_dev: Arc<dyn ZonedDevice> = dev.clone();
    (dev, dyn_dev)
}

/// The reference model: what the state must contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub files: BTreeMap<u64, FileMeta>,
    pub zones: BTreeMap<u32, ZonePlacement>,
    pub next_id: u64,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            files: BTreeMap::new(),
            zones: BTreeMap::new(),
            next_id: 1,
        }
    }
}

impl Model {
    pub fn apply(&mut self, rec: &Record) {
        match rec {
            Record::FileUpdate { id, meta } => {
                self.files.insert(id.0, meta.clone());
                self.next_id = self.next_id.max(id.0 + 1);
            }
            Record::FileDelete { id } => {
                self.files.remove(&id.0);
            }
            Record::FileRename { id, name } => {
                self.files
                    .retain(|other, m| *other == id.0 || m.name != *name);
                if let Some(m) = self.files.get_mut(&id.0) {
                    m.name = name.clone();
                }
            }
            Record::ZoneMeta { zone, placement } => {
                if placement.class == 0 && placement.policy.is_empty() {
                    self.zones.remove(zone);
                } else {
                    self.zones.insert(*zone, placement.clone());
                }
            }
            Record::Snapshot(_) | Record::Options(_) => {
                panic!("the generator never logs snapshots or options")
            }
            other => panic!("the model does not know the record {other:?}"),
        }
    }

    pub fn valid_bytes(&self, zone: u32) -> u64 {
        self.files
            .values()
            .flat_map(|m| &m.extents)
            .filter(|e| e.zone == zone)
            .map(|e| e.len)
            .sum()
    }

    /// Panics with a readable message unless `state` holds exactly the model.
    pub fn assert_matches(&self, state: &FsState) {
        let files: BTreeMap<u64, FileMeta> =
            state.files().map(|(id, m)| (id.0, m.clone())).collect();
        assert_eq!(files, self.files, "files differ from the model");
        let zones: BTreeMap<u32, ZonePlacement> =
            state.placements().map(|(z, p)| (z, p.clone())).collect();
        assert_eq!(zones, self.zones, "zone placement differs from the model");
        assert_eq!(state.next_file_id(), FileId(self.next_id), "next file id");
        for (id, m) in &self.files {
            assert_eq!(state.file_id(&m.name), Some(FileId(*id)), "name index");
        }
        for zone in 0..state.layout().zones {
            assert_eq!(
                state.valid_bytes(zone),
                self.valid_bytes(zone),
                "zone {zone}"
            );
        }
        state.check_invariants().unwrap();
    }
}

/// Generates records that are valid against the model, and applies them to it.
pub struct Workload {
    rng: ChaCha8Rng,
    pub model: Model,
    layout: ZoneLayout,
    /// Next free offset per zone (a bump allocator; a zone is reused once it holds no
    /// live extent, as the file layer will reset it).
    bump: Vec<u64>,
    pub max_files: usize,
}

impl Workload {
    pub fn new(seed: u64, layout: ZoneLayout, model: Model) -> Workload {
        let mut bump = vec![0; layout.zones as usize];
        for e in model.files.values().flat_map(|m| &m.extents) {
            bump[e.zone as usize] = bump[e.zone as usize].max(e.end());
        }
        Workload {
            rng: ChaCha8Rng::seed_from_u64(seed),
            model,
            layout,
            bump,
            max_files: 24,
        }
    }

    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }

    /// A random valid record, already applied to the model.
    pub fn next_record(&mut self) -> Record {
        let n = self.model.files.len();
        let roll = self.rng.random_range(0..100);
        let rec = if n == 0 || (n < self.max_files && roll < 30) {
            self.create()
        } else if n >= self.max_files || roll < 45 {
            self.delete()
        } else if roll < 70 {
            self.update()
        } else if roll < 88 {
            self.rename()
        } else {
            self.zone_meta()
        };
        self.model.apply(&rec);
        rec
    }

    fn pick_file(&mut self) -> u64 {
        let i = self.rng.random_range(0..self.model.files.len());
        *self.model.files.keys().nth(i).unwrap()
    }

    fn unused_name(&mut self) -> String {
        loop {
            let name = format!("{:06}.sst", self.rng.random_range(0..1000));
            if !self.model.files.values().any(|m| m.name == name) {
                return name;
            }
        }
    }

    fn create(&mut self) -> Record {
        let name = self.unused_name();
        let kind = FileKind::ALL[self.rng.random_range(0..FileKind::ALL.len())];
        let mut meta = FileMeta::new(name, kind);
        let count = self.rng.random_range(0..=3);
        meta.extents = self.alloc_extents(count);
        meta.size = self.rng.random_range(0..=meta.extent_bytes());
        meta.level = self
            .rng
            .random_bool(0.5)
            .then(|| self.rng.random_range(0..7));
        meta.lifetime = self.rng.random_range(0..5);
        Record::FileUpdate {
            id: FileId(self.model.next_id),
            meta,
        }
    }

    fn update(&mut self) -> Record {
        let id = self.pick_file();
        let mut meta = self.model.files[&id].clone();
        match self.rng.random_range(0..3) {
            0 if meta.extents.len() < 6 => meta.extents.extend(self.alloc_extents(1)),
            // Migration: an extent moves elsewhere (the cleaner's relocation).
            1 if !meta.extents.is_empty() => {
                let i = self.rng.random_range(0..meta.extents.len());
                let moved = self.alloc_extents(1);
                meta.extents.remove(i);
                meta.extents.splice(i..i, moved);
            }
            _ => meta.lifetime = self.rng.random_range(0..5),
        }
        meta.size = self.rng.random_range(0..=meta.extent_bytes());
        Record::FileUpdate {
            id: FileId(id),
            meta,
        }
    }

    fn delete(&mut self) -> Record {
        Record::FileDelete {
            id: FileId(self.pick_file()),
        }
    }

    fn rename(&mut self) -> Record {
        let id = self.pick_file();
        let name = if self.rng.random_bool(0.4) {
            let other = self.pick_file();
            self.model.files[&other].name.clone()
        } else {
            self.unused_name()
        };
        Record::FileRename {
            id: FileId(id),
            name,
        }
    }

    fn zone_meta(&mut self) -> Record {
        let zones = self.layout.data_zones();
        let zone = self.rng.random_range(zones);
        let placement = if self.rng.random_bool(0.2) {
            ZonePlacement::default()
        } else {
            let len = self.rng.random_range(0..24);
            ZonePlacement {
                class: self.rng.random_range(1..5),
                policy: (0..len).map(|_| self.rng.random()).collect(),
            }
        };
        Record::ZoneMeta { zone, placement }
    }

    /// Up to `count` fresh extents that overlap no live extent (nor each other).
    fn alloc_extents(&mut self, count: usize) -> Vec<Extent> {
        let mut out: Vec<Extent> = Vec::new();
        for _ in 0..count {
            let len = self.rng.random_range(1..=8192);
            if let Some(e) = self.alloc(len, &out) {
                out.push(e);
            }
        }
        out
    }

    /// `taken` are extents handed out but not yet in the model.
    fn alloc(&mut self, len: u64, taken: &[Extent]) -> Option<Extent> {
        let zones: Vec<u32> = self.layout.data_zones().collect();
        let start = self.rng.random_range(0..zones.len());
        for i in 0..zones.len() {
            let zone = zones[(start + i) % zones.len()];
            let z = zone as usize;
            let unused = self.model.valid_bytes(zone) == 0 && !taken.iter().any(|e| e.zone == zone);
            if self.bump[z] + len > self.layout.zone_capacity && unused {
                self.bump[z] = 0;
            }
            if self.bump[z] + len <= self.layout.zone_capacity {
                let e = Extent {
                    zone,
                    offset: self.bump[z],
                    len,
                };
                self.bump[z] += len;
                return Some(e);
            }
        }
        None
    }
}

/// Drives a log with generated records and remembers the model as of every batch number,
/// so that whatever a recovery returns can be checked against the right sync point.
pub struct Harness {
    pub dev: Arc<dyn ZonedDevice>,
    pub meta_zones: u32,
    pub log: MetaLog,
    pub state: FsState,
    pub work: Workload,
    /// Model as of each written batch number.
    pub history: BTreeMap<u64, Model>,
    /// Last batch number covered by a sync that returned Ok.
    pub last_ok: u64,
}

impl Harness {
    pub fn format(dev: Arc<dyn ZonedDevice>, meta_zones: u32, seed: u64) -> Harness {
        let log = MetaLog::format(dev.clone(), meta_zones).unwrap();
        let state = FsState::new(log.layout());
        Harness::resume(dev, log, state, Model::default(), seed)
    }

    /// Continues from a recovered log whose state equals `model`.
    pub fn resume(
        dev: Arc<dyn ZonedDevice>,
        log: MetaLog,
        state: FsState,
        model: Model,
        seed: u64,
    ) -> Harness {
        let commit = log.last_commit();
        let work = Workload::new(seed, log.layout(), model.clone());
        Harness {
            dev,
            meta_zones: log.meta_zones(),
            log,
            state,
            work,
            history: BTreeMap::from([(commit, model)]),
            last_ok: commit,
        }
    }

    /// Generates one record, applies it to the state and queues it in the log.
    pub fn append_one(&mut self) {
        let rec = self.work.next_record();
        self.state.apply(&rec).unwrap();
        self.log.append(&rec).unwrap();
    }

    pub fn sync(&mut self) -> Result<(), MetaError> {
        let result = self.log.sync(&self.state);
        self.history
            .entry(self.log.last_commit())
            .or_insert_with(|| self.work.model.clone());
        if result.is_ok() {
            self.last_ok = self.log.last_commit();
        }
        result
    }

    /// `syncs` rounds of records and a sync; stops at the first error. Most batches are
    /// small, one in four spans several blocks (so that a torn write can cut it).
    pub fn run(&mut self, syncs: usize) -> Result<(), MetaError> {
        for _ in 0..syncs {
            let rng = self.work.rng();
            let n = if rng.random_bool(0.25) {
                rng.random_range(40..=200)
            } else {
                rng.random_range(1..=5)
            };
            for _ in 0..n {
                self.append_one();
            }
            self.sync()?;
        }
        Ok(())
    }

    /// The last batch number written to the log (durable or not).
    pub fn last_written(&self) -> u64 {
        self.log.last_commit()
    }

    /// Mounts again and checks the result against the history: a batch between the last
    /// acknowledged one and the last written one, with exactly the model of that batch.
    pub fn recover_and_check(&self) -> (FsState, MetaLog, Model) {
        let (state, log) = MetaLog::recover(self.dev.clone(), self.meta_zones).unwrap();
        // A mount may roll, which writes one more batch holding the same state.
        let commit = log.mount_report().unwrap().commit;
        assert!(
            self.last_ok <= commit && commit <= self.last_written(),
            "recovered batch {commit}, acknowledged {}, written {}",
            self.last_ok,
            self.last_written()
        );
        let model = self.history[&commit].clone();
        model.assert_matches(&state);
        (state, log, model)
    }
}

/// Reads a zone's written bytes, lets `f` change them, and writes them back (a zone can
/// only be rewritten whole). Used to damage metadata on purpose.
pub fn rewrite_zone(dev: &dyn ZonedDevice, zone: u32, f: impl FnOnce(&mut Vec<u8>)) {
    let geo = dev.geometry();
    let info = dev.zone_info(zone).unwrap();
    let len = match info.state {
        ZoneState::Full => geo.zone_capacity,
        _ => info.written(),
    };
    let mut bytes = vec![0u8; len as usize];
    dev.read(info.start, &mut bytes, IoCategory::User).unwrap();
    f(&mut bytes);
    let block = geo.block_size as usize;
    bytes.resize(bytes.len().div_ceil(block) * block, 0);
    dev.reset_zone(zone).unwrap();
    if !bytes.is_empty() {
        dev.write(info.start, &bytes, IoCategory::User).unwrap();
    }
    dev.sync().unwrap();
}
