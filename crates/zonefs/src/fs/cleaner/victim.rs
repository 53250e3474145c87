//! The victim: the greedy choice among the full zones worth cleaning (see the module
//! comment in `mod.rs`), the files with valid data in it, and the zone's victim mark
//! (which the reset's statistics count). Separate because it only reads the metadata and
//! the zone table: it decides, the rest of the cleaner acts.

use std::collections::BTreeSet;

use crate::fs::shared::{Counters, MetaStore, Shared};
use crate::fs::table::{Cond, ZoneTable};
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

/// The greedy victim: see the module comment.
fn victim_of(meta: &MetaStore, zones: &ZoneTable, exclude: &BTreeSet<u32>) -> Option<u32> {
    let state = &meta.state;
    let written_to: BTreeSet<u32> = meta
        .writing
        .iter()
        .filter_map(|id| state.file(*id))
        .flat_map(|m| m.extents.iter().map(|e| e.zone))
        .collect();
    zones
        .zones()
        .filter(|(z, s)| {
            let valid = state.valid_bytes(*z);
            s.cond == Cond::Full
                && s.owner.is_none()
                && !exclude.contains(z)
                && !written_to.contains(z)
                && valid > 0
                && valid < s.written
                && s.live == valid
        })
        .min_by_key(|(z, s)| (s.pins > 0, s.live, *z))
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
