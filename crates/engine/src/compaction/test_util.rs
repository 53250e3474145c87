//! Hand-built versions for the compaction tests.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::compaction::picker::{NoZones, PickCtx, Picker, ZoneLookup};
use crate::compaction::ExtentMark;
use crate::key::{self, ValueKind};
use crate::options::Options;
use crate::version::{FileMeta, Version, VersionEdit};

/// File `number` over user keys `[smallest, largest]`, `size` bytes; both boundary entries
/// and its sequence range are `number` (so newer files have larger numbers). Entries and raw
/// sizes are chosen so that compensation never changes the size.
pub fn file(number: u64, smallest: &[u8], largest: &[u8], size: u64) -> FileMeta {
    file_seq(number, (smallest, number), (largest, number), size)
}

/// Like [`file`] with explicit sequence numbers for the two boundary entries (two files of a
/// deep level may share a user key when the left one holds the newer entry).
pub fn file_seq(number: u64, smallest: (&[u8], u64), largest: (&[u8], u64), size: u64) -> FileMeta {
    FileMeta {
        number,
        size,
        smallest: key::internal_key(smallest.0, smallest.1, ValueKind::Put),
        largest: key::internal_key(largest.0, largest.1, ValueKind::Put),
        smallest_seq: smallest.1.min(largest.1),
        largest_seq: smallest.1.max(largest.1),
        entries: 10,
        deletions: 0,
        raw_key_size: 100,
        raw_value_size: 100,
        lifetime: None,
        oldest_blob_file: None,
    }
}

/// A version of `levels` levels holding `files`.
pub fn version_of(levels: usize, files: &[(u32, FileMeta)]) -> Version {
    let edit = VersionEdit {
        new_files: files.to_vec(),
        ..VersionEdit::default()
    };
    Version::new(levels)
        .apply(&edit)
        .expect("a valid hand-built version")
}

/// L1: 1 [a,c], 2 [d,f]; L2: 10 [a,b], 11 [c,c], 12 [d,e], 13 [f,f]; all of size 100.
/// Group 1 = {1, 10, 11}, group 2 = {2, 12, 13}.
pub fn two_groups() -> Version {
    version_of(
        4,
        &[
            (1, file(1, b"a", b"c", 100)),
            (1, file(2, b"d", b"f", 100)),
            (2, file(10, b"a", b"b", 100)),
            (2, file(11, b"c", b"c", 100)),
            (2, file(12, b"d", b"e", 100)),
            (2, file(13, b"f", b"f", 100)),
        ],
    )
}

/// The key range of a deep level's next file drawn by the strategies below: `gap` keys
/// after the previous file's last key `key`, or starting on it (a shared boundary) when
/// `share`; `None` once the level runs out of one-byte keys.
fn next_range(key: u8, gap: u8, len: u8, share: bool) -> Option<(u8, u8)> {
    let start = if share && key > 0 {
        key
    } else {
        key.saturating_add(gap + 1)
    };
    let end = start.saturating_add(len);
    (end != u8::MAX).then_some((start, end))
}

/// A random version: overlapping L0 files, and L1-L3 as sorted runs whose neighbours
/// sometimes share a user key.
pub fn arb_version() -> impl Strategy<Value = Version> {
    let l0 = prop::collection::vec((0u8..60, 0u8..20, 1u64..60), 0..9);
    let deep = prop::collection::vec(
        prop::collection::vec((0u8..4, 0u8..6, any::<bool>(), 1u64..200), 0..10),
        3,
    );
    (l0, deep).prop_map(|(l0, deep)| {
        let mut files = Vec::new();
        let mut number = 1;
        for (start, len, size) in l0 {
            let seq = 1000 + number;
            let end = start.saturating_add(len);
            files.push((0, file_seq(number, (&[start], seq), (&[end], seq), size)));
            number += 1;
        }
        for (i, level) in deep.into_iter().enumerate() {
            let mut key = 0u8;
            let mut seq = 900 - 200 * i as u64;
            for (gap, len, share, size) in level {
                let Some((start, end)) = next_range(key, gap, len, share) else {
                    break;
                };
                files.push((
                    i as u32 + 1,
                    file_seq(number, (&[start], seq - 1), (&[end], seq - 2), size),
                ));
                (key, seq, number) = (end, seq - 2, number + 1);
            }
        }
        version_of(5, &files)
    })
}

/// Candidate files of L0 (overlapping) and of L1–L3 (disjoint runs whose neighbours may
/// share a user key), some of them mostly tombstones, and a chain of versions, each holding
/// some of them.
#[derive(Clone, Debug)]
pub struct Chain {
    pub files: Vec<(u32, FileMeta)>,
    /// Per version, per candidate: held.
    pub held: Vec<Vec<bool>>,
    /// Per version: whether a test looks at it (asks for its orders; a version nobody
    /// ordered leaves the next one no memoised order to carry over).
    pub looked: Vec<bool>,
}

impl Chain {
    /// Visits the versions of the chain in turn, each made from the one before by an edit
    /// once the visit of that one is over (so the orders it memoised carry over), with
    /// whether the test looks at it.
    pub fn visit(
        &self,
        mut visit: impl FnMut(&Version, bool) -> Result<(), TestCaseError>,
    ) -> Result<(), TestCaseError> {
        let mut v = Version::new(5);
        let mut before = vec![false; self.files.len()];
        for (after, looked) in self.held.iter().zip(&self.looked) {
            let mut edit = VersionEdit::new();
            for (i, (level, f)) in self.files.iter().enumerate() {
                match (before[i], after[i]) {
                    (true, false) => edit.delete_file(*level, f.number),
                    (false, true) => edit.add_file(*level, f.clone()),
                    _ => {}
                }
            }
            v = v.apply(&edit).expect("a valid edit");
            before.clone_from(after);
            visit(&v, *looked)?;
        }
        Ok(())
    }
}

pub fn arb_chain() -> impl Strategy<Value = Chain> {
    let l0 = prop::collection::vec((0u8..60, 0u8..20, 1u64..40, 0u64..300), 0..6);
    let deep_file = (
        0u8..4,
        0u8..6,
        any::<bool>(),
        1u64..40,
        0u64..300,
        any::<bool>(),
    );
    let deep = prop::collection::vec(prop::collection::vec(deep_file, 0..14), 3);
    (l0, deep, 2usize..6).prop_flat_map(|(l0, deep, versions)| {
        let mut files = Vec::new();
        let mut number = 1;
        let counted = |mut f: FileMeta, raw: u64, tombs: bool| {
            // Files mostly of tombstones get compensated, by an average value size that
            // the raw sizes make change from version to version.
            (f.deletions, f.raw_value_size) = (if tombs { 8 } else { 1 }, raw);
            f
        };
        for (start, len, size, raw) in l0 {
            let seq = 1000 + number;
            let end = start.saturating_add(len);
            let f = file_seq(number, (&[start], seq), (&[end], seq), size);
            files.push((0, counted(f, raw, false)));
            number += 1;
        }
        for (i, level) in deep.into_iter().enumerate() {
            let (mut key, mut seq) = (0u8, 900 - 200 * i as u64);
            for (gap, len, share, size, raw, tombs) in level {
                let Some((start, end)) = next_range(key, gap, len, share) else {
                    break;
                };
                let f = file_seq(number, (&[start], seq - 1), (&[end], seq - 2), size);
                files.push((i as u32 + 1, counted(f, raw, tombs)));
                (key, seq, number) = (end, seq - 2, number + 1);
            }
        }
        let n = files.len();
        let held = prop::collection::vec(
            prop::collection::vec(prop::bool::weighted(0.7), n),
            versions,
        );
        let looked = prop::collection::vec(any::<bool>(), versions);
        (Just(files), held, looked).prop_map(|(files, held, looked)| Chain {
            files,
            held,
            looked,
        })
    })
}

/// File numbers, in order.
pub fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
    files.iter().map(|f| f.number).collect()
}

/// Numbers of the files of `level`, in the order `picker` tries them (default options, no
/// running compactions, no zones, the given round-robin cursors).
pub fn picked_order(
    picker: &dyn Picker,
    v: &Version,
    level: usize,
    cursors: &[Option<Vec<u8>>],
) -> Vec<u64> {
    let (o, busy) = (Options::default(), HashSet::new());
    let ctx = PickCtx {
        version: v,
        options: &o,
        compacting: &busy,
        zones: &NoZones,
        free_ratio: 1.0,
        cursors,
        blob_gc_files: 0,
    };
    numbers_in_order(picker, &ctx, level)
}

/// Numbers of the files of `level` in the order `picker` tries them, with the zones of
/// `zones`, the files `busy` being compacted, all space free and default options.
pub fn order_in(
    picker: &dyn Picker,
    v: &Version,
    level: usize,
    zones: &dyn ZoneLookup,
    busy: &[u64],
) -> Vec<u64> {
    order_with(picker, v, level, zones, busy, 1.0, &Options::default())
}

/// [`order_in`] with a free-space ratio and options.
pub fn order_with(
    picker: &dyn Picker,
    v: &Version,
    level: usize,
    zones: &dyn ZoneLookup,
    busy: &[u64],
    free_ratio: f64,
    options: &Options,
) -> Vec<u64> {
    let busy: HashSet<u64> = busy.iter().copied().collect();
    let ctx = PickCtx {
        version: v,
        options,
        compacting: &busy,
        zones,
        free_ratio,
        cursors: &[],
        blob_gc_files: 0,
    };
    numbers_in_order(picker, &ctx, level)
}

/// Numbers of the files of `level` in the order `picker` gives them under `ctx`.
fn numbers_in_order(picker: &dyn Picker, ctx: &PickCtx<'_>, level: usize) -> Vec<u64> {
    let files = ctx.version.files(level);
    let order = picker.order(ctx, level);
    order.iter().map(|&i| files[i].number).collect()
}

/// The files of `v` whose number picks a set flag of `bits` (`bits[n % len]`): the files
/// running compactions use, drawn for a property test.
pub fn drawn_busy(v: &Version, bits: &[bool]) -> HashSet<u64> {
    v.all_files()
        .map(|(_, f)| f.number)
        .filter(|n| bits[*n as usize % bits.len()])
        .collect()
}

/// A zone layout given file by file, which logs the lookups it answers and tells which
/// zones a file moved out of or into ([`FakeZones::move_file`]).
#[derive(Debug)]
pub struct FakeZones {
    zones: HashMap<u64, Vec<(u32, u64)>>,
    full_live: Vec<(u32, u64)>,
    log: Mutex<Vec<u64>>,
    /// The layout's mark, and per zone the change count of the last move into or out of it.
    mark: ExtentMark,
    stamps: HashMap<u32, u64>,
    /// The files placed so far (a file moved out of every zone is not placed again).
    seen: HashSet<u64>,
}

impl Default for FakeZones {
    fn default() -> FakeZones {
        FakeZones::new(&[])
    }
}

impl FakeZones {
    /// `(file, [(zone, bytes)])` for each file; other files are in no zone.
    pub fn new(files: &[(u64, Vec<(u32, u64)>)]) -> FakeZones {
        FakeZones {
            zones: files.iter().cloned().collect(),
            full_live: Vec::new(),
            log: Mutex::default(),
            mark: ExtentMark::fresh(),
            stamps: HashMap::new(),
            seen: files.iter().map(|(n, _)| *n).collect(),
        }
    }

    /// The same layout with these full zones and their live bytes `(zone, live)`; other
    /// zones are not full.
    pub fn with_full(mut self, full_live: &[(u32, u64)]) -> FakeZones {
        self.full_live = full_live.to_vec();
        self
    }

    /// `(file, zone)`: each file whole in one zone, 100 bytes (the size of most test files).
    pub fn one_zone_each(files: &[(u64, u32)]) -> FakeZones {
        let files: Vec<(u64, Vec<(u32, u64)>)> =
            files.iter().map(|&(n, z)| (n, vec![(z, 100)])).collect();
        FakeZones::new(&files)
    }

    /// A layout drawn for `v`'s files (property tests): see [`FakeZones::place_drawn`].
    pub fn drawn(v: &Version, placed: &[(u32, u64, bool)], full: &[Option<u64>]) -> FakeZones {
        let mut zones = FakeZones::default();
        zones.place_drawn(v, placed);
        zones.set_full(full);
        zones
    }

    /// Places the files of `v` not placed before (as the file layer has placed a file
    /// before a version holds it): file `n` holds `bytes` in `zone` from `placed[n % len]`,
    /// and half as much again in the next zone (of six) when `split`.
    pub fn place_drawn(&mut self, v: &Version, placed: &[(u32, u64, bool)]) {
        for (_, f) in v.all_files() {
            if !self.seen.insert(f.number) {
                continue;
            }
            let (zone, bytes, split) = placed[f.number as usize % placed.len()];
            let mut zones = vec![(zone, bytes)];
            if split {
                zones.push(((zone + 1) % 6, bytes / 2));
            }
            self.zones.insert(f.number, zones);
        }
    }

    /// Zone `z` full with `full[z]` live bytes, or not full when `None`.
    pub fn set_full(&mut self, full: &[Option<u64>]) {
        self.full_live = (0u32..)
            .zip(full)
            .filter_map(|(z, live)| live.map(|l| (z, l)))
            .collect();
    }

    /// File `n` now in `zones` (none: in no zone), as the zone cleaner moves a file: the
    /// zones it leaves and enters change.
    pub fn move_file(&mut self, n: u64, zones: Vec<(u32, u64)>) {
        self.seen.insert(n);
        let old = self.zones.remove(&n).unwrap_or_default();
        for (zone, _) in old.iter().chain(&zones) {
            self.mark.changes += 1;
            self.stamps.insert(*zone, self.mark.changes);
        }
        if !zones.is_empty() {
            self.zones.insert(n, zones);
        }
    }

    /// The files looked up so far, in order.
    pub fn looked_up(&self) -> Vec<u64> {
        self.log.lock().expect("log").clone()
    }
}

impl ZoneLookup for FakeZones {
    fn zones_of(&self, file_number: u64) -> Vec<(u32, u64)> {
        self.log.lock().expect("log").push(file_number);
        self.zones.get(&file_number).cloned().unwrap_or_default()
    }

    fn full_zone_live(&self) -> Vec<(u32, u64)> {
        self.full_live.clone()
    }

    fn mark(&self) -> Option<ExtentMark> {
        Some(self.mark)
    }

    fn moved_since(&self, since: ExtentMark, moved: &mut Vec<u32>) -> bool {
        let stamps = self.stamps.iter();
        moved.extend(stamps.filter(|(_, &s)| s > since.changes).map(|(&z, _)| z));
        since.lineage == self.mark.lineage
    }
}
