//! Where live extents are, zone by zone: the derived view the allocator and the cleaner
//! need ("what is still valid in zone Z?", "how many valid bytes does it hold?").
//! It is rebuilt from the files on recovery and never persisted.

use std::collections::BTreeMap;

use super::state::{Extent, FileId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExtentIndex {
    /// (zone, offset) → (length, owner). Live extents never overlap, so within a zone
    /// both their starts and their ends are in ascending order.
    by_start: BTreeMap<(u32, u64), (u64, FileId)>,
    /// Σ live extent bytes per zone, indexed by zone number.
    valid: Vec<u64>,
}

impl ExtentIndex {
    pub fn new(zones: u32) -> ExtentIndex {
        ExtentIndex {
            by_start: BTreeMap::new(),
            valid: vec![0; zones as usize],
        }
    }

    /// Adds a file's extents. The caller has checked zone numbers and overlaps.
    pub fn insert(&mut self, id: FileId, extents: &[Extent]) {
        for e in extents {
            self.by_start.insert((e.zone, e.offset), (e.len, id));
            if let Some(v) = self.valid.get_mut(e.zone as usize) {
                *v += e.len;
            }
        }
    }

    /// Removes extents previously inserted.
    pub fn remove(&mut self, extents: &[Extent]) {
        for e in extents {
            if self.by_start.remove(&(e.zone, e.offset)).is_some() {
                if let Some(v) = self.valid.get_mut(e.zone as usize) {
                    *v -= e.len;
                }
            }
        }
    }

    /// A file other than `id` owning bytes that `e` covers, if any. `id`'s own extents are
    /// ignored: an update may keep (or extend) the extents the file already has.
    pub fn overlapping(&self, id: FileId, e: &Extent) -> Option<FileId> {
        // Among the other files' extents that start before `e` ends, the last one also
        // ends last (they are disjoint), so it is the only one that can reach into `e`.
        let (&(_, start), &(len, owner)) = self
            .by_start
            .range((e.zone, 0)..(e.zone, e.end()))
            .rev()
            .find(|(_, (_, owner))| *owner != id)?;
        (start + len > e.offset).then_some(owner)
    }

    pub fn valid_bytes(&self, zone: u32) -> u64 {
        self.valid.get(zone as usize).copied().unwrap_or(0)
    }

    /// Live extents of one zone in offset order, with their owners.
    pub fn zone_extents(&self, zone: u32) -> impl Iterator<Item = (Extent, FileId)> + '_ {
        self.by_start
            .range((zone, 0)..=(zone, u64::MAX))
            .map(|(&(zone, offset), &(len, id))| (Extent { zone, offset, len }, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(zone: u32, offset: u64, len: u64) -> Extent {
        Extent { zone, offset, len }
    }

    #[test]
    fn finds_overlaps_with_other_files_only() {
        let mut ix = ExtentIndex::new(4);
        ix.insert(FileId(1), &[ext(2, 0, 100), ext(2, 200, 100)]);
        ix.insert(FileId(2), &[ext(2, 100, 50)]);
        assert_eq!(ix.valid_bytes(2), 250);
        assert_eq!(ix.overlapping(FileId(3), &ext(2, 150, 50)), None);
        assert_eq!(ix.overlapping(FileId(3), &ext(2, 149, 2)), Some(FileId(2)));
        assert_eq!(ix.overlapping(FileId(3), &ext(2, 299, 10)), Some(FileId(1)));
        assert_eq!(ix.overlapping(FileId(3), &ext(3, 0, 1000)), None);
        // File 1 may cover its own bytes again, but not file 2's.
        assert_eq!(ix.overlapping(FileId(1), &ext(2, 0, 300)), Some(FileId(2)));
        assert_eq!(ix.overlapping(FileId(1), &ext(2, 200, 300)), None);
        ix.remove(&[ext(2, 0, 100)]);
        assert_eq!(ix.valid_bytes(2), 150);
        assert_eq!(ix.zone_extents(2).count(), 2);
    }
}
