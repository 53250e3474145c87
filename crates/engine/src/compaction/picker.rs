//! The decision "which files a compaction merges" (RocksDB's `compaction_pri`): a picker
//! orders the files of a level; the builder ([`super::pick_compaction`]) tries them as the
//! seed of a compaction in that order and takes the first one that can run.

use std::collections::HashSet;
use std::sync::Arc;

use zkv_zonefs::meta::ExtentMark;

use crate::key;
use crate::options::Options;
use crate::version::{merge_sorted, FileMeta, FileRank, Version};

/// Where the file layer keeps an SST: `(zone, bytes)` pairs. Zone-aware pickers use it.
pub trait ZoneLookup {
    /// The zones holding SST `file_number` and the bytes of it in each; empty if unknown.
    fn zones_of(&self, file_number: u64) -> Vec<(u32, u64)>;

    /// The live bytes of each full zone (the zone cleaner's candidates), in zone order;
    /// empty if unknown.
    fn full_zone_live(&self) -> Vec<(u32, u64)> {
        Vec::new()
    }

    /// Where the layout stands now, to ask [`ZoneLookup::moved_since`] about later; `None`
    /// (the default) if the lookup cannot tell what moves: then the zone-aware pickers look
    /// every file up again at every call.
    fn mark(&self) -> Option<ExtentMark> {
        None
    }

    /// Adds to `moved` the zones that gained or lost an SST's extent after `since` (a
    /// [`ZoneLookup::mark`] of this lookup): an SST with no extent in them, finished at
    /// `since`, has the same [`ZoneLookup::zones_of`] as then (an SST being written may
    /// grow without a mention: pickers look up only the finished SSTs of a version). False
    /// if it cannot tell (then any SST may have moved).
    fn moved_since(&self, _since: ExtentMark, _moved: &mut Vec<u32>) -> bool {
        false
    }
}

/// A zone view that knows no zones (for tests and for pickers that ignore zones).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoZones;

impl ZoneLookup for NoZones {
    fn zones_of(&self, _file_number: u64) -> Vec<(u32, u64)> {
        Vec::new()
    }

    fn mark(&self) -> Option<ExtentMark> {
        Some(NO_LAYOUT)
    }

    fn moved_since(&self, since: ExtentMark, _moved: &mut Vec<u32>) -> bool {
        since == NO_LAYOUT
    }
}

/// The mark of a layout without zones, where nothing ever moves (the file layer numbers its
/// layouts from 1).
pub(crate) const NO_LAYOUT: ExtentMark = ExtentMark {
    lineage: 0,
    changes: 0,
};

/// What a picker and the builder see: the version, the options, the files already taken by
/// running compactions, the zone layout and the round-robin cursors.
pub struct PickCtx<'a> {
    /// The version the compaction is picked from.
    pub version: &'a Version,
    /// The database's options (level targets, triggers, `compaction_pri`).
    pub options: &'a Options,
    /// Numbers of the files that running compactions use (RocksDB's `being_compacted`).
    pub compacting: &'a HashSet<u64>,
    /// Which zones hold each SST ([`NoZones`] when the file system has no zones).
    pub zones: &'a dyn ZoneLookup,
    /// Free space of the file layer, 0..=1: free / usable bytes, the ratio the zone
    /// cleaner's start and stop thresholds compare with (the adaptive picker switches on it).
    pub free_ratio: f64,
    /// Round-robin compaction cursor per level (an internal key; `None` or empty = start
    /// from the first file of the level).
    pub cursors: &'a [Option<Vec<u8>>],
    /// How many of the oldest blob files garbage collection relocates now (the blob GC
    /// cutoff's choice; 0 with it off): what the force threshold looks at.
    pub blob_gc_files: usize,
}

impl PickCtx<'_> {
    /// Whether a running compaction uses `file`.
    pub fn is_compacting(&self, file: &FileMeta) -> bool {
        self.compacting.contains(&file.number)
    }

    /// Per file of `level`, whether a running compaction uses it: the running compactions'
    /// files are found by number, which costs less than a lookup per file of a large level.
    pub fn busy_flags(&self, level: usize) -> Vec<bool> {
        let mut busy = vec![false; self.version.num_files(level)];
        for &n in self.compacting {
            if let Some(flag) = (self.version.position(level, n)).and_then(|i| busy.get_mut(i)) {
                *flag = true;
            }
        }
        busy
    }

    /// The round-robin cursor of `level`, if one is set.
    pub fn cursor(&self, level: usize) -> Option<&[u8]> {
        self.cursors
            .get(level)
            .and_then(|c| c.as_deref())
            .filter(|c| !c.is_empty())
    }
}

/// The order in which the files of a level are tried as the seed of a compaction.
pub trait Picker: Send + Sync {
    /// The name used by `Options::compaction_pri` and the command line.
    fn name(&self) -> &'static str;

    /// Indexes into `ctx.version.files(level)`, best first, each file once. Files that are
    /// being compacted are included; the builder skips them.
    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize>;

    /// RocksDB's `kRoundRobin` rules in the builder: the file at the cursor is never
    /// skipped (if it cannot be compacted, nothing is picked from the level), and a
    /// size-triggered compaction takes consecutive files to its right.
    fn round_robin(&self) -> bool {
        false
    }

    /// Whether the picker can order the levels `options` give (e.g. a level it names
    /// exists); an error says what does not fit. The database checks it when it opens.
    fn check(&self, _options: &Options) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// Indexes of `files` sorted by `keys` (one per file), ties broken by the smaller smallest
/// key and then the smaller file number, so every order is total and reproducible.
pub(super) fn sorted_indexes<K: Ord>(files: &[Arc<FileMeta>], keys: &[K]) -> Vec<usize> {
    let mut order: Vec<(usize, (&Arc<FileMeta>, &K))> =
        files.iter().zip(keys).enumerate().collect();
    order.sort_by(|(_, (fa, ka)), (_, (fb, kb))| {
        ka.cmp(kb)
            .then_with(|| key::compare(&fa.smallest, &fb.smallest))
            .then_with(|| fa.number.cmp(&fb.number))
    });
    order.into_iter().map(|(i, _)| i).collect()
}

/// Indexes of `files` sorted by `key` of each index, smallest first, ties broken as in
/// [`sorted_indexes`].
pub(super) fn sorted_by_key<K: Ord>(
    files: &[Arc<FileMeta>],
    mut key: impl FnMut(usize, &FileMeta) -> K,
) -> Vec<usize> {
    let keys: Vec<K> = (files.iter().enumerate()).map(|(i, f)| key(i, f)).collect();
    sorted_indexes(files, &keys)
}

/// The order of `level` by `key` of each index (smallest first, ties broken as in
/// [`sorted_indexes`]). A deep level starts from the version's memoised order by `rank`,
/// which must agree with `key` on the files it ranks, and merges in the files it leaves
/// to `key`; on a deep level, level order is the tie-break's order. L0 is sorted here.
pub(super) fn ranked_order(
    v: &Version,
    level: usize,
    rank: &'static FileRank,
    key: impl Fn(usize, &FileMeta) -> [u64; 2],
) -> Vec<usize> {
    let Some(ranked) = v.ranked(level, rank) else {
        return sorted_by_key(v.files(level), key);
    };
    let ranked_files = ranked.ranked.iter().copied();
    if ranked.unranked.is_empty() {
        return ranked_files.map(|(_, i)| i).collect();
    }
    let files = v.files(level);
    let mut others: Vec<([u64; 2], usize)> = (ranked.unranked.iter())
        .filter_map(|&i| Some((key(i, files.get(i)?), i)))
        .collect();
    others.sort_unstable();
    let merged = merge_sorted(ranked_files, others);
    merged.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_cursor_means_no_cursor() {
        let v = Version::new(3);
        let o = Options::default();
        let busy = HashSet::new();
        let cursors = vec![
            None,
            Some(Vec::new()),
            Some(b"k\0\0\0\0\0\0\0\x01".to_vec()),
        ];
        let ctx = PickCtx {
            version: &v,
            options: &o,
            compacting: &busy,
            zones: &NoZones,
            free_ratio: 1.0,
            cursors: &cursors,
            blob_gc_files: 0,
        };
        assert_eq!(ctx.cursor(0), None);
        assert_eq!(ctx.cursor(1), None);
        assert!(ctx.cursor(2).is_some());
        assert_eq!(ctx.cursor(7), None);
    }
}
