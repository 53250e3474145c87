//! The zoned file layer proper: files made of extents in zones, over the crash-safe
//! metadata of [`crate::meta`] and the placement policies of [`crate::placement`].
//!
//! - [`ZoneFs`]: format, mount, and the file operations (create, open, rename, delete,
//!   list, which zones hold a file, per-zone figures, statistics).
//! - [`FileWriter`]: appends in whole blocks at the write pointer of the zone the writer
//!   owns; [`FileWriter::sync`] is the durability point.
//! - [`FileReader`]: reads a snapshot of a file.
//! - The allocator carries out the placement policy's decisions within the zone budget
//!   (lease tokens derived from the device's open and active limits, one kept for WAL
//!   files); zones whose data is all dead are reset at once.
//!
//! The model and its guarantees are written down in `docs/FILE-LAYER.md`.

mod alloc;
mod budget;
mod clean;
mod error;
mod mount;
mod options;
mod reader;
mod shared;
mod stats;
mod table;
mod writer;

use std::collections::BTreeMap;
use std::sync::Arc;

use zns::ZonedDevice;

use crate::meta::{FileId, FileKind, FileMeta, FsState, Record};
use crate::placement::{Lifetime, PlacementHint};

pub use clean::{SpaceReclaimer, SpaceRequest};
pub use error::{FsError, FsResult};
pub use options::FsOptions;
pub use reader::FileReader;
pub use stats::{FsStats, ZoneStat};
pub use writer::FileWriter;

use shared::{Counters, Shared};
use table::Cond;

/// A mounted file system. Cheap to clone; every clone is a handle on the same one. Writers
/// and readers keep it alive. Mount a device once at a time: two mounts of one device
/// would overwrite each other's data.
#[derive(Clone)]
pub struct ZoneFs {
    shared: Arc<Shared>,
}

/// What `list` tells about a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub name: String,
    pub kind: FileKind,
    /// Size as of the file's last sync.
    pub size: u64,
    pub level: Option<u8>,
    pub lifetime: u8,
    pub extents: usize,
}

impl FileInfo {
    fn of(meta: &FileMeta) -> FileInfo {
        FileInfo {
            name: meta.name.clone(),
            kind: meta.kind,
            size: meta.size,
            level: meta.level,
            lifetime: meta.lifetime,
            extents: meta.extents.len(),
        }
    }
}

impl ZoneFs {
    /// Creates an empty file for writing; an existing name is refused
    /// ([`FsError::AlreadyExists`]). The (empty) file is durable when this returns.
    ///
    /// A hint without a lifetime gets RocksDB's default for its kind and level (base
    /// level 1): WAL and manifest short, L0/L1 medium, L2 long, deeper extreme.
    pub fn create(&self, name: &str, kind: FileKind, hint: PlacementHint) -> FsResult<FileWriter> {
        self.create_file(name, kind, hint, false)
    }

    /// Like [`ZoneFs::create`], but an existing file of that name is replaced (its data is
    /// gone once this returns), as `open(O_CREAT | O_TRUNC)` does.
    pub fn create_or_replace(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<FileWriter> {
        self.create_file(name, kind, hint, true)
    }

    fn create_file(
        &self,
        name: &str,
        kind: FileKind,
        mut hint: PlacementHint,
        replace: bool,
    ) -> FsResult<FileWriter> {
        self.ensure_some_space(name, kind)?;
        hint.kind = Some(kind);
        if hint.lifetime == Lifetime::NotSet {
            hint.lifetime = Lifetime::for_file(kind, hint.level, 1);
        }
        let sh = &self.shared;
        let mut meta = sh.lock_meta();
        let old = match meta.state.file_id(name) {
            Some(id) if meta.writing.contains(&id) => return Err(busy(name)),
            Some(_) if !replace => return Err(FsError::AlreadyExists { name: name.into() }),
            other => other,
        };
        let id = meta.state.next_file_id();
        let mut file = FileMeta::new(name, kind);
        file.level = hint.level;
        file.lifetime = hint.lifetime.code();
        let mut recs = Vec::new();
        let freed = old
            .map(|old| extents_of(&meta.state, old))
            .unwrap_or_default();
        if let Some(old) = old {
            recs.push(Record::FileDelete { id: old });
        }
        recs.push(Record::FileUpdate {
            id,
            meta: file.clone(),
        });
        meta.commit(&recs, &|| format!("create '{name}'"))?;
        meta.writing.insert(id);
        sh.release_live(freed);
        sh.reclaim_quietly(&mut meta);
        Ok(FileWriter::new(Arc::clone(sh), id, file, hint))
    }

    /// Refuses to create files when not one byte is free and nothing can be reclaimed.
    fn ensure_some_space(&self, name: &str, kind: FileKind) -> FsResult<()> {
        let sh = &self.shared;
        for _ in 0..8 {
            {
                let mut meta = sh.lock_meta();
                if sh.lock_zones().free_bytes() > 0 {
                    return Ok(());
                }
                if sh.reclaim_dead(&mut meta)? > 0 {
                    continue;
                }
            }
            let req = SpaceRequest {
                file: name.into(),
                kind,
                bytes: sh.block_size(),
            };
            let reclaimer = sh
                .reclaimer
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            if !reclaimer.is_some_and(|r| r.reclaim(&req)) {
                break;
            }
        }
        let free = sh.lock_zones().free_bytes();
        match free {
            0 => Err(sh.out_of_space(name)),
            _ => Ok(()),
        }
    }

    /// Opens a file for reading: a snapshot of its content as of its last sync.
    pub fn open(&self, name: &str) -> FsResult<FileReader> {
        let meta = self.shared.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        let file = meta
            .state
            .file(id)
            .cloned()
            .ok_or_else(|| not_found(name))?;
        Ok(FileReader::pin(Arc::clone(&self.shared), file))
    }

    /// Renames `old` to `new`; an existing `new` is replaced in the same atomic step, as
    /// POSIX rename does. Durable when it returns.
    pub fn rename(&self, old: &str, new: &str) -> FsResult<()> {
        let sh = &self.shared;
        let mut meta = sh.lock_meta();
        let id = meta.state.file_id(old).ok_or_else(|| not_found(old))?;
        if meta.writing.contains(&id) {
            return Err(busy(old));
        }
        if old == new {
            return Ok(());
        }
        let target = meta.state.file_id(new);
        if target.is_some_and(|t| meta.writing.contains(&t)) {
            return Err(busy(new));
        }
        let freed = target
            .map(|t| extents_of(&meta.state, t))
            .unwrap_or_default();
        let rec = Record::FileRename {
            id,
            name: new.into(),
        };
        meta.commit(&[rec], &|| format!("rename '{old}' to '{new}'"))?;
        sh.release_live(freed);
        sh.reclaim_quietly(&mut meta);
        Ok(())
    }

    /// Deletes a file. Durable when it returns; zones left without valid data are reset.
    pub fn delete(&self, name: &str) -> FsResult<()> {
        let sh = &self.shared;
        let mut meta = sh.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        if meta.writing.contains(&id) {
            return Err(busy(name));
        }
        let freed = extents_of(&meta.state, id);
        meta.commit(&[Record::FileDelete { id }], &|| format!("delete '{name}'"))?;
        sh.release_live(freed);
        sh.reclaim_quietly(&mut meta);
        Ok(())
    }

    pub fn exists(&self, name: &str) -> bool {
        self.shared.lock_meta().state.file_id(name).is_some()
    }

    /// Every file, in name order.
    pub fn list(&self) -> Vec<FileInfo> {
        let meta = self.shared.lock_meta();
        let mut files: Vec<FileInfo> = meta.state.files().map(|(_, m)| FileInfo::of(m)).collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files
    }

    pub fn file_info(&self, name: &str) -> FsResult<FileInfo> {
        let meta = self.shared.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        meta.state
            .file(id)
            .map(FileInfo::of)
            .ok_or_else(|| not_found(name))
    }

    /// The zones holding a file's synced extents and its bytes in each, in zone order.
    pub fn zones_of(&self, name: &str) -> FsResult<Vec<(u32, u64)>> {
        let meta = self.shared.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        Ok(per_zone(&extents_of(&meta.state, id)))
    }

    /// Per data zone: state, written, valid, invalid bytes and placement class.
    pub fn zone_stats(&self) -> FsResult<Vec<ZoneStat>> {
        let sh = &self.shared;
        let report = sh
            .dev
            .report_zones(sh.layout.meta_zones, sh.geo.zones - sh.layout.meta_zones)
            .map_err(|e| FsError::device("report the data zones", e))?;
        let meta = sh.lock_meta();
        let zones = sh.lock_zones();
        Ok(report
            .iter()
            .filter_map(|info| {
                let s = zones.slot(info.zone)?;
                let valid = meta.state.valid_bytes(info.zone);
                let unsynced = s.live.saturating_sub(valid);
                Some(ZoneStat {
                    zone: info.zone,
                    state: info.state,
                    written: s.written,
                    valid,
                    invalid: s.written.saturating_sub(valid + unsynced),
                    unsynced,
                    class: s.class,
                    busy: s.owner.is_some(),
                })
            })
            .collect())
    }

    pub fn stats(&self) -> FsStats {
        let sh = &self.shared;
        let dev = sh.dev.stats();
        let since = |now: &[u64; 7], then: &[u64; 7]| {
            std::array::from_fn(|i| now[i].saturating_sub(then[i]))
        };
        let meta = sh.lock_meta();
        let zones = sh.lock_zones();
        let c = &sh.counters;
        let count =
            |f: &dyn Fn(Cond) -> bool| zones.zones().filter(|(_, s)| f(s.cond)).count() as u32;
        let (free, usable) = (zones.free_bytes(), zones.usable_bytes());
        FsStats {
            device_write_bytes: since(&dev.write_bytes, &sh.baseline.write_bytes),
            device_read_bytes: since(&dev.read_bytes, &sh.baseline.read_bytes),
            zone_resets: Counters::get(&c.resets),
            zero_copy_resets: Counters::get(&c.zero_copy_resets),
            finishes: Counters::get(&c.finishes),
            placement_decisions: Counters::get(&c.placement_decisions),
            placement_ns: Counters::get(&c.placement_ns),
            free_bytes: free,
            usable_bytes: usable,
            free_ratio: if usable == 0 {
                0.0
            } else {
                free as f64 / usable as f64
            },
            files: meta.state.file_count(),
            open_writers: meta.writing.len(),
            data_zones: zones.budget.data_zones,
            reserved_zones: zones.budget.reserved,
            empty_zones: count(&|c| c == Cond::Empty),
            active_zones: zones.active_count(),
            full_zones: count(&|c| c == Cond::Full),
            lease_waits: Counters::get(&c.lease_waits),
            lease_wait_ns: Counters::get(&c.lease_wait_ns),
            lease_revocations: Counters::get(&c.revocations),
            meta: meta.log.stats(),
        }
    }

    /// Installs the zone cleaner's hook (see [`SpaceReclaimer`]).
    pub fn set_reclaimer(&self, reclaimer: Arc<dyn SpaceReclaimer>) {
        *self
            .shared
            .reclaimer
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reclaimer);
    }

    /// Makes staged metadata (zone classes cleared by resets) durable now.
    pub fn sync_metadata(&self) -> FsResult<()> {
        self.shared
            .lock_meta()
            .sync(&|| "sync the metadata".to_string())
    }

    pub fn device(&self) -> &Arc<dyn ZonedDevice> {
        &self.shared.dev
    }

    pub fn options(&self) -> &FsOptions {
        &self.shared.opts
    }

    /// A copy of the metadata state (for tools and tests).
    pub fn metadata(&self) -> FsState {
        self.shared.lock_meta().state.clone()
    }

    /// Checks the metadata invariants and that the zone table agrees with them: every
    /// extent lies in written bytes of its zone, and each zone's live bytes cover its valid
    /// bytes (exactly, when no writer is open).
    pub fn check_consistency(&self) -> FsResult<()> {
        let meta = self.shared.lock_meta();
        meta.state
            .check_invariants()
            .map_err(|e| FsError::rejected("metadata invariants", e))?;
        let zones = self.shared.lock_zones();
        let idle = meta.writing.is_empty();
        for (zone, s) in zones.zones() {
            let valid = meta.state.valid_bytes(zone);
            let end = meta.state.zone_extents(zone).map(|(e, _)| e.end()).max();
            let bad = |reason: String| Err(FsError::Inconsistent { zone, reason });
            if end.is_some_and(|end| end > s.written) {
                return bad(format!(
                    "extents reach {end:?} beyond {} written",
                    s.written
                ));
            }
            if s.live < valid || (idle && s.live != valid) {
                return bad(format!("live bytes {} but valid bytes {valid}", s.live));
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for ZoneFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZoneFs")
            .field("device", &self.shared.dev.describe())
            .field("options", &self.shared.opts)
            .finish()
    }
}

fn not_found(name: &str) -> FsError {
    FsError::NotFound { name: name.into() }
}

fn busy(name: &str) -> FsError {
    FsError::Busy { name: name.into() }
}

fn extents_of(state: &FsState, id: FileId) -> Vec<(u32, u64)> {
    state
        .file(id)
        .map(|m| m.extents.iter().map(|e| (e.zone, e.len)).collect())
        .unwrap_or_default()
}

fn per_zone(extents: &[(u32, u64)]) -> Vec<(u32, u64)> {
    let mut zones: BTreeMap<u32, u64> = BTreeMap::new();
    for &(zone, len) in extents {
        *zones.entry(zone).or_default() += len;
    }
    zones.into_iter().collect()
}
