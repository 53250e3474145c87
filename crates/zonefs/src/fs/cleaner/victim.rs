//! The victim: the greedy choice among the full zones worth cleaning (see the module
//! comment in `mod.rs`), the files with valid data in it, and the zone's victim mark
//! (which the reset's statistics count). Separate because it only reads the metadata and
//! the zone table: it decides, the rest of the cleaner acts.

use std::collections::BTreeSet;

use crate::fs::error::FsResult;
use crate::fs::shared::{Counters, MetaStore, Shared};
use crate::fs::table::{Cond, Slot, ZoneTable};
use crate::fs::ZoneFs;
use crate::meta::{Extent, FileId, FileKind, FsState};
use crate::placement::{Lifetime, PlacementHint};

/// A file with valid data in the victim.
#[derive(Clone, Debug)]
pub(super) struct Live {
    pub(super) id: FileId,
    pub(super) name: String,
    pub(super) kind: FileKind,
    pub(super) level: Option<u8>,
    lifetime: u8,
    pub(super) size: u64,
    /// A blob file's number.
    blob_file: Option<u64>,
    /// Its extents in the victim, in file order.
    pub(super) extents: Vec<Extent>,
}

impl Live {
    pub(super) fn victim_bytes(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }

    /// The placement hint the file's metadata still tells (without a neighbourhood).
    pub(super) fn hint(&self) -> PlacementHint {
        PlacementHint {
            kind: Some(self.kind),
            level: self.level,
            lifetime: Lifetime::from_code(self.lifetime).unwrap_or_default(),
            size: self.size,
            blob_file: self.blob_file,
            ..Default::default()
        }
    }
}

/// A victim as picked: its epoch tells it from the same zone reset and reused since.
pub(super) struct Picked {
    pub(super) zone: u32,
    pub(super) epoch: u64,
    pub(super) valid: u64,
    pub(super) files: Vec<Live>,
}

/// The zones files being written have extents in (synced or not): never a victim.
fn written_to(meta: &MetaStore) -> BTreeSet<u32> {
    let state = &meta.state;
    meta.writing
        .iter()
        .filter_map(|id| state.file(*id))
        .flat_map(|m| m.extents.iter().map(|e| e.zone))
        .collect()
}

/// Worth cleaning, whatever its condition: valid data, something to gain, all of it
/// recorded and settled, no writer in it or with extents in it.
fn worth_cleaning(state: &FsState, written_to: &BTreeSet<u32>, zone: u32, s: &Slot) -> bool {
    let valid = state.valid_bytes(zone);
    s.owner.is_none()
        && !written_to.contains(&zone)
        && valid > 0
        && valid < s.written
        && s.live == valid
}

/// The greedy victim: see the module comment.
fn victim_of(meta: &MetaStore, zones: &ZoneTable, exclude: &BTreeSet<u32>) -> Option<u32> {
    let written_to = written_to(meta);
    zones
        .zones()
        .filter(|(z, s)| {
            s.cond == Cond::Full
                && !exclude.contains(z)
                && worth_cleaning(&meta.state, &written_to, *z, s)
        })
        .min_by_key(|(z, s)| (s.pins > 0, s.live, *z))
        .map(|(z, _)| z)
}

/// The idle active zone that would be the victim if it were full: the fewest valid bytes,
/// no reader, and its valid data fits in the room the other zones have left. See
/// [`Shared::finish_idle_victim`].
fn idle_victim_of(meta: &MetaStore, zones: &ZoneTable, exclude: &BTreeSet<u32>) -> Option<u32> {
    let written_to = written_to(meta);
    let room = zones.room_with_reserve();
    zones
        .zones()
        .filter(|(z, s)| {
            let valid = meta.state.valid_bytes(*z);
            s.cond == Cond::Active
                && s.pins == 0
                && !exclude.contains(z)
                && worth_cleaning(&meta.state, &written_to, *z, s)
                && valid <= room - (zones.capacity() - s.written)
        })
        .min_by_key(|(z, s)| (s.live, *z))
        .map(|(z, _)| z)
}

/// The files with valid data in `zone`, in the order of their first extent there.
fn live_files(state: &FsState, zone: u32) -> Vec<Live> {
    let mut seen = BTreeSet::new();
    let order: Vec<FileId> = state
        .zone_extents(zone)
        .filter_map(|(_, id)| seen.insert(id).then_some(id))
        .collect();
    order
        .into_iter()
        .filter_map(|id| {
            let m = state.file(id)?;
            Some(Live {
                id,
                name: m.name.clone(),
                kind: m.kind,
                level: m.level,
                lifetime: m.lifetime,
                size: m.size,
                blob_file: m.blob_number(),
                extents: m
                    .extents
                    .iter()
                    .filter(|e| e.zone == zone)
                    .copied()
                    .collect(),
            })
        })
        .collect()
}

impl Shared {
    /// Picks the victim and marks it, in one step under the locks.
    pub(super) fn select_victim(&self, exclude: &BTreeSet<u32>) -> Option<Picked> {
        let meta = self.lock_meta();
        let mut zones = self.lock_zones();
        let zone = victim_of(&meta, &zones, exclude)?;
        let slot = zones.slot_mut(zone)?;
        slot.victim = true;
        let epoch = slot.epoch;
        Counters::add(&self.counters.gc_victims, 1);
        Some(Picked {
            zone,
            epoch,
            valid: meta.state.valid_bytes(zone),
            files: live_files(&meta.state, zone),
        })
    }

    /// When no full zone is worth cleaning, finishes the idle active zone that would be
    /// the victim, so that the next pick takes it; whether it finished one. For a store about
    /// to open on a small device, where the few active zones can hold most of the dead data
    /// and the open's own writes (a flushed WAL, a new manifest) need room first. Its
    /// unwritten rest is not lost: cleaning resets the zone.
    pub(super) fn finish_idle_victim(&self, exclude: &BTreeSet<u32>) -> FsResult<bool> {
        let meta = self.lock_meta();
        let mut zones = self.lock_zones();
        let Some(zone) = idle_victim_of(&meta, &zones, exclude) else {
            return Ok(false);
        };
        self.finish(&mut zones, zone)?;
        Ok(true)
    }

    /// The victim's files after the engine's callback; `None` if it was reset meanwhile.
    pub(super) fn regather(&self, zone: u32, epoch: u64) -> Option<Vec<Live>> {
        let meta = self.lock_meta();
        let zones = self.lock_zones();
        let slot = zones.slot(zone)?;
        (slot.epoch == epoch && slot.cond == Cond::Full).then(|| live_files(&meta.state, zone))
    }

    pub(super) fn was_reset(&self, zone: u32, epoch: u64) -> bool {
        self.lock_zones()
            .slot(zone)
            .is_none_or(|s| s.epoch != epoch)
    }

    /// The victim keeps its valid data after all: it is not a victim any more.
    pub(super) fn unmark(&self, zone: u32, epoch: u64) {
        if let Some(s) = self.lock_zones().slot_mut(zone) {
            if s.epoch == epoch {
                s.victim = false;
            }
        }
    }
}

impl ZoneFs {
    /// The zone the cleaner would pick now, if any.
    pub fn pick_victim(&self) -> Option<u32> {
        self.pick_victim_excluding(&BTreeSet::new())
    }

    /// The zone the cleaner would pick now outside `exclude`, if any.
    pub fn pick_victim_excluding(&self, exclude: &BTreeSet<u32>) -> Option<u32> {
        let meta = self.shared.lock_meta();
        let zones = self.shared.lock_zones();
        victim_of(&meta, &zones, exclude)
    }
}
