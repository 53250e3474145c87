//! Where live extents are, zone by zone: the derived view the allocator and the cleaner
//! need ("what is still valid in zone Z?", "how many valid bytes does it hold?").
//! It is rebuilt from the files on recovery and never persisted.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::state::{Extent, FileId};

#[derive(Clone, Debug)]
pub(crate) struct ExtentIndex {
    /// (zone, offset) → (length, owner). Live extents never overlap, so within a zone
    /// both their starts and their ends are in ascending order.
    by_start: BTreeMap<(u32, u64), (u64, FileId)>,
    /// Σ live extent bytes per zone, indexed by zone number.
    valid: Vec<u64>,
    /// When each zone last gained or lost an extent.
    clock: ExtentClock,
}

/// The index's content; the clock only says when it changed.
impl PartialEq for ExtentIndex {
    fn eq(&self, other: &ExtentIndex) -> bool {
        self.by_start == other.by_start && self.valid == other.valid
    }
}

impl Eq for ExtentIndex {}

/// A point in the history of an [`ExtentIndex`]: which index (`lineage`) and how many
/// extents it had gained or lost (`changes`). Callers that keep facts derived from where
/// files are (a compaction picker's zone groups) ask which zones changed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtentMark {
    /// Tells indexes apart: every index built (at mount, or from a snapshot) takes a new one.
    pub lineage: u64,
    /// Extents added or removed so far.
    pub changes: u64,
}

/// Per zone, the change count at which an extent last entered or left it.
#[derive(Clone, Debug)]
struct ExtentClock {
    now: ExtentMark,
    stamps: Vec<u64>,
}

impl ExtentMark {
    /// The mark of a new layout with no change yet: no other call returns its lineage (0
    /// is never one, so a caller may use it for a layout that never changes).
    pub fn fresh() -> ExtentMark {
        static LINEAGES: AtomicU64 = AtomicU64::new(1);
        ExtentMark {
            lineage: LINEAGES.fetch_add(1, Ordering::Relaxed),
            changes: 0,
        }
    }
}

impl ExtentClock {
    fn new(zones: u32) -> ExtentClock {
        ExtentClock {
            now: ExtentMark::fresh(),
            stamps: vec![0; zones as usize],
        }
    }

    fn tick(&mut self, zone: u32) {
        self.now.changes += 1;
        if let Some(s) = self.stamps.get_mut(zone as usize) {
            *s = self.now.changes;
        }
    }
}

impl ExtentIndex {
    pub fn new(zones: u32) -> ExtentIndex {
        ExtentIndex {
            by_start: BTreeMap::new(),
            valid: vec![0; zones as usize],
            clock: ExtentClock::new(zones),
        }
    }

    /// Adds a file's extents. The caller has checked zone numbers and overlaps.
    pub fn insert(&mut self, id: FileId, extents: &[Extent]) {
        for e in extents {
            self.add(id, e, true);
        }
    }

    /// Removes extents previously inserted.
    pub fn remove(&mut self, extents: &[Extent]) {
        for e in extents {
            self.sub(e, true);
        }
    }

    /// Replaces file `id`'s extents `old` (inserted before) by `new`, stamping the zones of
    /// the extents it drops or gains. A file written further (`new` is `old` with its last
    /// extent longer, then more) stamps no zone: only its own zones change, and no one keeps
    /// what a file being written holds where.
    pub fn replace(&mut self, id: FileId, old: &[Extent], new: &[Extent]) {
        let further = written_further(old, new);
        for e in old {
            self.sub(e, !further && !new.contains(e));
        }
        for e in new {
            self.add(id, e, !further && !old.contains(e));
        }
    }

    fn add(&mut self, id: FileId, e: &Extent, stamp: bool) {
        self.by_start.insert((e.zone, e.offset), (e.len, id));
        if let Some(v) = self.valid.get_mut(e.zone as usize) {
            *v += e.len;
        }
        if stamp {
            self.clock.tick(e.zone);
        }
    }

    fn sub(&mut self, e: &Extent, stamp: bool) {
        if self.by_start.remove(&(e.zone, e.offset)).is_some() {
            if let Some(v) = self.valid.get_mut(e.zone as usize) {
                *v -= e.len;
            }
            if stamp {
                self.clock.tick(e.zone);
            }
        }
    }

    /// Where the index stands now.
    pub fn mark(&self) -> ExtentMark {
        self.clock.now
    }

    /// Adds to `out`, in zone order, the zones that gained or lost an extent after `since`
    /// (a mark of this index).
    pub fn changed_since(&self, since: ExtentMark, out: &mut Vec<u32>) {
        let changed = (0u32..).zip(&self.clock.stamps);
        out.extend(changed.filter(|(_, &s)| s > since.changes).map(|(z, _)| z));
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

/// Whether `new` is `old` written further: the same extents, the last one possibly longer,
/// then possibly more.
fn written_further(old: &[Extent], new: &[Extent]) -> bool {
    let Some((last, before)) = old.split_last() else {
        return true;
    };
    let grown = new
        .get(before.len())
        .is_some_and(|e| e.zone == last.zone && e.offset == last.offset && e.len >= last.len);
    grown && new.get(..before.len()) == Some(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed_from(ix: &ExtentIndex, mark: ExtentMark) -> Vec<u32> {
        let mut out = Vec::new();
        ix.changed_since(mark, &mut out);
        out
    }

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

    #[test]
    fn tells_which_zones_gained_or_lost_an_extent() {
        let mut ix = ExtentIndex::new(4);
        ix.insert(FileId(1), &[ext(1, 0, 100), ext(2, 0, 100)]);
        let mark = ix.mark();
        let changed = |ix: &ExtentIndex| {
            let mut out = Vec::new();
            ix.changed_since(mark, &mut out);
            out
        };
        assert_eq!(changed(&ix), Vec::<u32>::new());
        // File 1 moves its zone-2 extent to zone 3; zone 1 keeps its extent.
        ix.remove(&[ext(2, 0, 100)]);
        ix.insert(FileId(1), &[ext(3, 0, 100)]);
        assert_eq!(changed(&ix), vec![2, 3]);
        // Removing what is not there changes nothing.
        let mark = ix.mark();
        ix.remove(&[ext(0, 0, 10)]);
        assert_eq!(ix.mark(), mark);
        // A file written further (its last extent longer, then a new one) stamps nothing;
        // the same file rewritten elsewhere stamps the zones it leaves and enters.
        let mark = ix.mark();
        ix.replace(FileId(2), &[], &[ext(0, 0, 10)]);
        ix.replace(
            FileId(2),
            &[ext(0, 0, 10)],
            &[ext(0, 0, 20), ext(3, 100, 5)],
        );
        assert_eq!((changed_from(&ix, mark), ix.valid_bytes(0)), (vec![], 20));
        ix.replace(
            FileId(2),
            &[ext(0, 0, 20), ext(3, 100, 5)],
            &[ext(0, 0, 20), ext(2, 100, 5)],
        );
        assert_eq!(changed_from(&ix, mark), vec![2, 3]);
        ix.replace(
            FileId(2),
            &[ext(0, 0, 20), ext(2, 100, 5)],
            &[ext(0, 0, 10)],
        );
        assert_eq!(changed_from(&ix, mark), vec![0, 2, 3]);
        // Another index has another lineage; equal content still compares equal.
        let other = ExtentIndex::new(4);
        assert_ne!(other.mark().lineage, ix.mark().lineage);
        assert_eq!(ExtentIndex::new(4), other);
    }
}
