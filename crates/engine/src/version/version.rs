//! A version: the SSTs of each level at one moment, immutable once built.
//!
//! Order within a level follows RocksDB: L0 newest first (largest sequence descending, then
//! smallest sequence descending, then file number descending); L1 and deeper by smallest
//! internal key (then file number), with internal-key ranges that never overlap. Two
//! neighbours of a level may share a user key at their boundary (the older entries of the key
//! continue in the next file), so user-key ranges of a deep level only ever touch.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, LazyLock};

use foldhash::fast::FixedState;

use crate::compaction::GroupMemo;
use crate::key;
use crate::{Error, Result};

use super::edit::{check_file, VersionEdit};
use super::level::{level_order, run_meeting, FileRank, Level, Link, NextBytes, Ranked};
use super::{BlobFileMeta, FileMeta};

/// The SSTs of every level. Cheap to share behind an `Arc`; changes make a new version
/// ([`Version::apply`]), which shares the levels the changes leave as they are.
#[derive(Clone)]
pub struct Version {
    /// The files of each level, with their sums and positions.
    pub(super) levels: Vec<Arc<Level>>,
    /// Each level's overlaps with the next level and its memoised orders, rebuilt when an
    /// edit changes either level.
    pub(super) links: Vec<Arc<Link>>,
    /// The blob files, by number.
    blobs: BTreeMap<u64, Arc<BlobFileMeta>>,
}

/// Versions are equal when they hold the same files and blob files (the rest is derived).
impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        let same = |(a, b): (&Arc<Level>, &Arc<Level>)| a.files == b.files;
        self.levels.len() == other.levels.len()
            && self.levels.iter().zip(&other.levels).all(same)
            && self.blobs == other.blobs
    }
}

impl Eq for Version {}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let levels: Vec<_> = self.levels.iter().map(|l| &l.files).collect();
        f.debug_struct("Version")
            .field("levels", &levels)
            .field("blobs", &self.blobs)
            .finish()
    }
}

/// Sums over some files of what compensated sizes are derived from (RocksDB's
/// accumulated file statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileTotals {
    /// Σ file sizes.
    pub bytes: u128,
    /// Σ entries that are not deletions.
    pub values: u128,
    /// Σ raw key bytes.
    pub raw_key_size: u128,
    /// Σ raw value bytes.
    pub raw_value_size: u128,
    /// Σ [`FileMeta::surplus_deletions`] (what compensation adds bytes for).
    pub surplus_deletions: u128,
}

impl FileTotals {
    pub(super) fn of<'f>(files: impl IntoIterator<Item = &'f Arc<FileMeta>>) -> FileTotals {
        files
            .into_iter()
            .fold(FileTotals::default(), |t, f| FileTotals {
                bytes: t.bytes + u128::from(f.size),
                values: t.values + u128::from(f.entries.saturating_sub(f.deletions)),
                raw_key_size: t.raw_key_size + u128::from(f.raw_key_size),
                raw_value_size: t.raw_value_size + u128::from(f.raw_value_size),
                surplus_deletions: t.surplus_deletions
                    + u128::from(f.surplus_deletions().unwrap_or(0)),
            })
    }

    fn plus(self, other: FileTotals) -> FileTotals {
        FileTotals {
            bytes: self.bytes + other.bytes,
            values: self.values + other.values,
            raw_key_size: self.raw_key_size + other.raw_key_size,
            raw_value_size: self.raw_value_size + other.raw_value_size,
            surplus_deletions: self.surplus_deletions + other.surplus_deletions,
        }
    }
}

impl Version {
    /// An empty version of `num_levels` levels.
    pub fn new(num_levels: usize) -> Version {
        Version {
            levels: vec![Arc::default(); num_levels],
            links: vec![Arc::default(); num_levels],
            blobs: BTreeMap::new(),
        }
    }

    /// The blob files, oldest (lowest number) first.
    pub fn blob_files(&self) -> impl Iterator<Item = &Arc<BlobFileMeta>> {
        self.blobs.values()
    }

    /// Blob file `number`, if the version holds it.
    pub fn blob_file(&self, number: u64) -> Option<&Arc<BlobFileMeta>> {
        self.blobs.get(&number)
    }

    /// Number of levels (L0 included).
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The files of `level` in level order (empty for a level beyond the last).
    pub fn files(&self, level: usize) -> &[Arc<FileMeta>] {
        self.levels.get(level).map_or(&[], |l| l.files.as_slice())
    }

    /// Number of files of `level`.
    pub fn num_files(&self, level: usize) -> usize {
        self.files(level).len()
    }

    /// Σ file sizes of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        u64::try_from(self.level_totals(level).bytes).unwrap_or(u64::MAX)
    }

    /// The [`FileTotals`] of the files of `level`, kept with the level.
    pub fn level_totals(&self, level: usize) -> FileTotals {
        self.levels
            .get(level)
            .map_or_else(FileTotals::default, |l| l.totals)
    }

    /// The [`FileTotals`] of every file, from per-level sums kept with the levels (a
    /// constant number of steps, however many files the version holds).
    pub fn file_totals(&self) -> FileTotals {
        self.levels
            .iter()
            .fold(FileTotals::default(), |sum, l| sum.plus(l.totals))
    }

    /// The position in `level` of file `number`, if the level holds it (an index lookup).
    pub fn position(&self, level: usize, number: u64) -> Option<usize> {
        self.levels.get(level)?.position(number)
    }

    /// Every file with its level, level by level in level order.
    pub fn all_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(level, l)| l.files.iter().map(move |f| (level, f)))
    }

    /// The level holding file `number`, if any.
    pub fn level_of(&self, number: u64) -> Option<usize> {
        (0..self.num_levels()).find(|&level| self.position(level, number).is_some())
    }

    /// RocksDB's `GetOverlappingInputs`: the files of `level` whose user-key range meets
    /// `[begin, end]` (`None` = unbounded), in level order. For L0 the range grows to cover
    /// every file it meets, until no file extends it (files of L0 overlap each other, and a
    /// compaction must take all the L0 files that hold a key it takes).
    pub fn overlapping(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        if level == 0 {
            return overlapping_expanding(self.files(0), begin, end);
        }
        self.deep_overlapping(level, begin, end).to_vec()
    }

    /// [`Version::overlapping`] of a level below L0, borrowed from the version: there the
    /// hits are a contiguous run of the level, and pickers ask once per file of a level.
    pub fn deep_overlapping(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> &[Arc<FileMeta>] {
        assert!(
            level > 0,
            "the files of L0 meeting a range are no contiguous run"
        );
        let files = self.files(level);
        let (from, to) = run_meeting(files, begin, end);
        files.get(from..to).unwrap_or_default()
    }

    /// The files of `level + 1` that meet the user-key range of file `pos` of `level`:
    /// `deep_overlapping(level + 1, ..)` of its range, kept with the version.
    pub fn next_level_overlap(&self, level: usize, pos: usize) -> &[Arc<FileMeta>] {
        self.files(level + 1)
            .get(self.next_level_run(level, pos))
            .unwrap_or_default()
    }

    /// The positions in `level + 1` of [`Version::next_level_overlap`].
    pub fn next_level_run(&self, level: usize, pos: usize) -> std::ops::Range<usize> {
        let (from, to) = self.links.get(level).map_or((0, 0), |l| l.run(pos));
        from..to
    }

    /// The bytes of `level + 1` that file `pos` of `level` overlaps, kept with the version.
    pub fn next_level_bytes(&self, level: usize, pos: usize) -> NextBytes {
        self.links.get(level).map_or(NextBytes::default(), |l| {
            l.next_bytes(self.below(level), pos)
        })
    }

    /// The files of deep `level` in the order of `rank`; `None` for L0 (not in key order)
    /// and levels beyond the last. Memoised: the first call on a version sorts the level,
    /// later versions carry the order over and re-rank only the files an edit touched.
    pub fn ranked(&self, level: usize, rank: &'static FileRank) -> Option<Arc<Ranked>> {
        if level == 0 || level >= self.num_levels() {
            return None;
        }
        let (link, files) = (self.links.get(level)?, self.levels.get(level)?);
        Some(link.ranked(files, self.below(level), rank))
    }

    /// The zone-aware pickers' memo of `level`, taken out of the version while a picker
    /// works on it (`None` if none is kept); [`Version::keep_group_memo`] puts it back.
    /// Later versions carry the groups their edit leaves as they are.
    pub(crate) fn take_group_memo(&self, level: usize) -> Option<GroupMemo> {
        self.links.get(level)?.take_group_memo()
    }

    /// Keeps `memo` as the zone-aware pickers' memo of `level`.
    pub(crate) fn keep_group_memo(&self, level: usize, memo: GroupMemo) {
        if let Some(link) = self.links.get(level) {
            link.keep_group_memo(memo);
        }
    }

    /// The level below `level` (an empty one below the last).
    pub(super) fn below(&self, level: usize) -> &Level {
        static EMPTY: LazyLock<Level> = LazyLock::new(Level::default);
        self.levels.get(level + 1).map_or(&EMPTY, |l| l)
    }

    /// Whether some file of `level` meets `[begin, end]`: `!overlapping(..).is_empty()`
    /// without collecting the files (L0's widening never empties a non-empty answer).
    pub fn has_overlap(&self, level: usize, begin: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        let files = self.files(level);
        if level == 0 {
            return files.iter().any(|f| f.overlaps(begin, end));
        }
        let (from, to) = run_meeting(files, begin, end);
        from < to
    }

    /// The files that may hold `user_key`, in search order: L0 newest first, then each
    /// deeper level in turn (one file, or the few that share the key at their boundary,
    /// newer entries first).
    pub fn files_for_key(&self, user_key: &[u8]) -> Vec<(usize, Arc<FileMeta>)> {
        let mut out = Vec::new();
        for (level, files) in self.levels.iter().map(|l| &l.files).enumerate() {
            let key = Some(user_key);
            if level == 0 {
                let hits = files.iter().filter(|f| f.overlaps(key, key));
                out.extend(hits.map(|f| (0, Arc::clone(f))));
                continue;
            }
            let (from, to) = run_meeting(files, key, key);
            let hits = files.get(from..to).unwrap_or_default();
            out.extend(hits.iter().map(|f| (level, Arc::clone(f))));
        }
        out
    }

    /// The version after `edit` (RocksDB's `VersionBuilder`): deletions first, then
    /// additions, then each changed level sorted. Refused as `Error::Corruption`: a level
    /// beyond the last, deleting a file that is not in that level, adding a file number the
    /// version already holds (or twice), a file with bad boundaries, overlapping files in L1
    /// or deeper.
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version> {
        let mut builder = Builder::new(self);
        builder.apply(edit)?;
        builder.finish()
    }
}

/// Applies a series of edits to a base version at the cost of one version (recovery replays
/// thousands). The checks of [`Version::apply`] run per edit, except the order and overlap
/// checks of a level, which run once on the result (as RocksDB's builder does).
pub(super) struct Builder<'a> {
    base: &'a Version,
    /// The changes of each level so far; `None` = as in the base.
    levels: Vec<Option<LevelChanges>>,
    /// Blob files changed so far; `None` = as in the base.
    blobs: Option<BTreeMap<u64, Arc<BlobFileMeta>>>,
}

/// How a level differs from the base level.
#[derive(Default)]
struct LevelChanges {
    /// Files of the base level deleted, by number.
    removed: HashSet<u64, FixedState>,
    /// Files added (a deleted base file added again among them), by number.
    added: BTreeMap<u64, Arc<FileMeta>>,
}

impl LevelChanges {
    fn holds(&self, base: &Level, number: u64) -> bool {
        self.added.contains_key(&number)
            || (base.position(number).is_some() && !self.removed.contains(&number))
    }

    /// The level after the changes: the base level's files that stay, with the added
    /// ones merged in (both in level order, so no sort of the whole level), and whether
    /// each file was added.
    fn apply(self, level: usize, base: &Level) -> (Vec<Arc<FileMeta>>, Vec<bool>) {
        let kept = base
            .files
            .iter()
            .filter(|f| !self.removed.contains(&f.number));
        let mut added: Vec<Arc<FileMeta>> = self.added.into_values().collect();
        added.sort_by(|a, b| level_order(level, a, b));
        let mut files = Vec::with_capacity(base.files.len() + added.len());
        let mut is_added = Vec::with_capacity(files.capacity());
        let mut added = added.into_iter().peekable();
        for f in kept {
            while let Some(a) = added.next_if(|a| level_order(level, a, f) == Ordering::Less) {
                files.push(a);
                is_added.push(true);
            }
            files.push(Arc::clone(f));
            is_added.push(false);
        }
        for a in added {
            files.push(a);
            is_added.push(true);
        }
        (files, is_added)
    }
}

impl<'a> Builder<'a> {
    pub(super) fn new(base: &'a Version) -> Builder<'a> {
        Builder {
            base,
            levels: (0..base.num_levels()).map(|_| None).collect(),
            blobs: None,
        }
    }

    pub(super) fn apply(&mut self, edit: &VersionEdit) -> Result<()> {
        for &(level, number) in &edit.deleted_files {
            let level = self.check_level(level, || format!("deleted file {number}"))?;
            let located = self.located(number);
            if located != Some(level) {
                let place = match located {
                    Some(l) => format!("it is in level {l}"),
                    None => "it is not in the version".to_string(),
                };
                return Err(corrupt(format!(
                    "cannot delete file {number} from level {level}: {place}"
                )));
            }
            let changes = self.level_mut(level)?;
            if changes.added.remove(&number).is_none() {
                changes.removed.insert(number);
            }
        }
        for (level, meta) in &edit.new_files {
            let n = meta.number;
            let level = self.check_level(*level, || format!("new file {n}"))?;
            check_file(meta)?;
            if let Some(l) = self.located(n) {
                return Err(corrupt(format!(
                    "cannot add file {n} to level {level}: it is already in level {l}"
                )));
            }
            self.level_mut(level)?
                .added
                .insert(n, Arc::new(meta.clone()));
        }
        for (level, _) in &edit.compact_cursors {
            self.check_level(*level, || "compact cursor".to_string())?;
        }
        self.apply_blobs(edit)
    }

    /// Blob file additions and garbage, checked as RocksDB's builder checks them.
    fn apply_blobs(&mut self, edit: &VersionEdit) -> Result<()> {
        if edit.blob_files.is_empty() && edit.blob_garbage.is_empty() {
            return Ok(());
        }
        let base = self.base;
        let blobs = self.blobs.get_or_insert_with(|| base.blobs.clone());
        for b in &edit.blob_files {
            if blobs.contains_key(&b.number) {
                return Err(corrupt(format!(
                    "blob file {} is added but already in the version",
                    b.number
                )));
            }
            blobs.insert(b.number, Arc::new(b.clone()));
        }
        for g in &edit.blob_garbage {
            let Some(meta) = blobs.get_mut(&g.number) else {
                return Err(corrupt(format!(
                    "garbage of blob file {} that is not in the version",
                    g.number
                )));
            };
            let m = Arc::make_mut(meta);
            m.garbage_count = m.garbage_count.saturating_add(g.count);
            m.garbage_bytes = m.garbage_bytes.saturating_add(g.bytes);
            if m.garbage_count > m.total_count || m.garbage_bytes > m.total_bytes {
                return Err(corrupt(format!(
                    "blob file {}: {} garbage blobs ({} bytes) of {} ({} bytes)",
                    m.number, m.garbage_count, m.garbage_bytes, m.total_count, m.total_bytes
                )));
            }
        }
        Ok(())
    }

    /// The level holding file `number` so far: probing each level's index costs less than
    /// indexing every file of the base once per edit.
    fn located(&self, number: u64) -> Option<usize> {
        let base = &self.base.levels;
        (self.levels.iter().enumerate()).find_map(|(l, changes)| {
            let holds = match changes {
                Some(changes) => base.get(l).is_some_and(|b| changes.holds(b, number)),
                None => self.base.position(l, number).is_some(),
            };
            holds.then_some(l)
        })
    }

    fn level_mut(&mut self, level: usize) -> Result<&mut LevelChanges> {
        let changes = self.levels.get_mut(level);
        let changes = changes.ok_or_else(|| corrupt(format!("no level {level} in the version")))?;
        Ok(changes.get_or_insert_with(LevelChanges::default))
    }

    fn check_level(&self, level: u32, what: impl Fn() -> String) -> Result<usize> {
        let levels = self.base.num_levels();
        match usize::try_from(level) {
            Ok(l) if l < levels => Ok(l),
            _ => Err(corrupt(format!(
                "{} at level {level}: the database has {levels} levels",
                what()
            ))),
        }
    }

    /// The resulting version: changed levels in order and checked.
    pub(super) fn finish(self) -> Result<Version> {
        let base = self.base;
        let mut next = base.clone();
        let changed: Vec<bool> = self.levels.iter().map(Option::is_some).collect();
        let slots = self.levels.into_iter().zip(&mut next.levels);
        for (level, (changes, slot)) in slots.enumerate() {
            let Some(changes) = changes else { continue };
            // `next` is a clone of `base`: the slot still holds the base level.
            let (files, added) = changes.apply(level, slot);
            check_disjoint(level, &files, &added)?;
            *slot = Arc::new(Level::new(files));
        }
        let touched = |level: usize| changed.get(level).copied().unwrap_or(false);
        for level in (0..changed.len()).filter(|&l| touched(l) || touched(l + 1)) {
            let old = (base.levels.get(level), base.links.get(level));
            let (Some(old_files), Some(old_link), Some(files)) =
                (old.0, old.1, next.levels.get(level))
            else {
                continue;
            };
            let old = (&**old_files, base.below(level), &**old_link);
            let link = Link::derive(level, old, (files, next.below(level)));
            if let Some(slot) = next.links.get_mut(level) {
                *slot = Arc::new(link);
            }
        }
        if let Some(blobs) = self.blobs {
            next.blobs = blobs;
        }
        drop_obsolete_blobs(&mut next)?;
        Ok(next)
    }
}

/// RocksDB's rule: a blob file leaves the version once every blob in it is garbage and no
/// table is linked to it (no table's oldest blob file is this one). A table linked to a
/// blob file the version does not hold is corruption.
fn drop_obsolete_blobs(v: &mut Version) -> Result<()> {
    if v.blobs.is_empty() && v.all_files().all(|(_, f)| f.oldest_blob_file.is_none()) {
        return Ok(());
    }
    let linked: BTreeSet<u64> = v
        .all_files()
        .filter_map(|(_, f)| f.oldest_blob_file)
        .collect();
    if let Some(missing) = linked.iter().find(|n| !v.blobs.contains_key(n)) {
        return Err(corrupt(format!(
            "a table is linked to blob file {missing}, which is not in the version"
        )));
    }
    v.blobs
        .retain(|n, b| linked.contains(n) || !b.all_garbage());
    Ok(())
}

fn corrupt(detail: String) -> Error {
    Error::corruption("version edit", detail)
}

/// L0's rule: a file that meets the range and sticks out of it widens the range, and the
/// search starts over, until the range covers every file it meets.
fn overlapping_expanding(
    files: &[Arc<FileMeta>],
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Vec<Arc<FileMeta>> {
    let (mut begin, mut end) = (begin, end);
    'search: loop {
        let mut out = Vec::new();
        for f in files {
            if !f.overlaps(begin, end) {
                continue;
            }
            if begin.is_some_and(|b| f.smallest_user_key() < b) {
                begin = Some(f.smallest_user_key());
                continue 'search;
            }
            if end.is_some_and(|e| f.largest_user_key() > e) {
                end = Some(f.largest_user_key());
                continue 'search;
            }
            out.push(Arc::clone(f));
        }
        return out;
    }
}

/// Refuses a deep level where a file does not end before the next one begins. The files
/// kept from the base level were in order and disjoint, and stay so with files removed
/// between them: only pairs with an `added` file need a look, and the first bad one in
/// level order is the first bad pair of the level.
fn check_disjoint(level: usize, files: &[Arc<FileMeta>], added: &[bool]) -> Result<()> {
    if level == 0 {
        return Ok(());
    }
    for (pair, new) in files.windows(2).zip(added.windows(2)) {
        let ([a, b], true) = (pair, new.contains(&true)) else {
            continue;
        };
        if key::compare(&a.largest, &b.smallest) != Ordering::Less {
            return Err(corrupt(format!(
                "level {level} would hold overlapping files {} and {}",
                a.number, b.number
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;
    use crate::version::edit::tests::file;
    use proptest::prelude::*;

    fn with_files(files: &[(u32, FileMeta)]) -> Version {
        let edit = VersionEdit {
            new_files: files.to_vec(),
            ..VersionEdit::default()
        };
        Version::new(4).apply(&edit).unwrap()
    }

    fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
        files.iter().map(|f| f.number).collect()
    }

    #[test]
    fn levels_are_ordered_and_sized() {
        let v = with_files(&[
            (0, file(1, b"a", b"z", (1, 5))),
            (0, file(2, b"c", b"d", (6, 9))),
            (0, file(3, b"b", b"e", (6, 9))),
            (1, file(4, b"m", b"p", (1, 1))),
            (1, file(5, b"a", b"c", (1, 1))),
        ]);
        assert_eq!(numbers(v.files(0)), [3, 2, 1]);
        assert_eq!(numbers(v.files(1)), [5, 4]);
        assert_eq!(v.level_bytes(1), 1004 + 1005);
        assert_eq!(v.level_of(4), Some(1));
        assert_eq!(v.files(9).len(), 0);
        assert_eq!(v.all_files().count(), 5);
    }

    #[test]
    fn apply_refuses_bad_edits() {
        let v = with_files(&[(1, file(4, b"m", b"p", (1, 1)))]);
        let err = |edit: VersionEdit| v.apply(&edit).unwrap_err().to_string();
        let del = |level, n| VersionEdit {
            deleted_files: vec![(level, n)],
            ..VersionEdit::default()
        };
        assert!(err(del(1, 9)).contains("not in the version"));
        assert!(err(del(2, 4)).contains("it is in level 1"));
        let mut twice = del(1, 4);
        twice.delete_file(1, 4);
        assert!(err(twice).contains("not in the version"));
        let add = |level, f| VersionEdit {
            new_files: vec![(level, f)],
            ..VersionEdit::default()
        };
        assert!(err(add(1, file(5, b"o", b"q", (2, 2)))).contains("overlapping"));
        assert!(err(add(2, file(4, b"a", b"b", (2, 2)))).contains("already in level 1"));
        let mut dup = add(2, file(5, b"a", b"b", (2, 2)));
        dup.add_file(3, file(5, b"a", b"b", (2, 2)));
        assert!(err(dup).contains("already in level 2"));
        let cursor = VersionEdit {
            compact_cursors: vec![(4, b"k".to_vec())],
            ..VersionEdit::default()
        };
        assert!(err(cursor).contains("compact cursor"));
        assert!(err(add(7, file(5, b"a", b"b", (2, 2)))).contains("4 levels"));
        // Touching user keys at a boundary are fine when the internal keys are ordered.
        let mut touching = file(5, b"p", b"q", (0, 0));
        touching.smallest = key::internal_key(b"p", 0, ValueKind::Put);
        let mut prev = file(4, b"m", b"p", (1, 1));
        prev.largest = key::internal_key(b"p", 1, ValueKind::Put);
        let v = with_files(&[(1, prev), (1, touching)]);
        assert_eq!(v.files_for_key(b"p").len(), 2);
    }

    #[test]
    fn a_file_moves_between_levels_in_one_edit() {
        let v = with_files(&[(1, file(4, b"m", b"p", (1, 1)))]);
        let mut edit = VersionEdit::new();
        edit.delete_file(1, 4);
        edit.add_file(2, file(4, b"m", b"p", (1, 1)));
        let v = v.apply(&edit).unwrap();
        assert_eq!(v.level_of(4), Some(2));
        assert_eq!((v.level_bytes(1), v.level_bytes(2)), (0, 1004));
    }

    #[test]
    fn l0_range_grows_to_a_fixed_point() {
        let v = with_files(&[
            (0, file(1, b"a", b"c", (1, 1))),
            (0, file(2, b"b", b"f", (2, 2))),
            (0, file(3, b"e", b"h", (3, 3))),
            (0, file(4, b"x", b"z", (4, 4))),
        ]);
        let got = v.overlapping(0, Some(b"g"), Some(b"g"));
        assert_eq!(numbers(&got), [3, 2, 1]);
        assert_eq!(numbers(&v.overlapping(0, Some(b"y"), None)), [4]);
        assert!(v.overlapping(0, Some(b"i"), Some(b"w")).is_empty());
    }

    #[test]
    fn files_for_key_search_order() {
        let v = with_files(&[
            (0, file(1, b"a", b"m", (1, 1))),
            (0, file(2, b"k", b"z", (2, 2))),
            (1, file(3, b"a", b"j", (0, 0))),
            (1, file(4, b"k", b"p", (0, 0))),
            (2, file(5, b"q", b"z", (0, 0))),
        ]);
        let got: Vec<(usize, u64)> = v
            .files_for_key(b"l")
            .iter()
            .map(|(l, f)| (*l, f.number))
            .collect();
        assert_eq!(got, [(0, 2), (0, 1), (1, 4)]);
    }

    /// Random levels: L0 files anywhere, deep files cut from a sorted run of keys.
    fn arb_version() -> impl Strategy<Value = Version> {
        let l0 = proptest::collection::vec((0u8..40, 0u8..10), 0..8);
        let deep = proptest::collection::vec(0u8..40, 0..16);
        (l0, deep).prop_map(|(l0, mut cuts)| {
            let mut files = Vec::new();
            for (i, (start, len)) in l0.into_iter().enumerate() {
                let (a, b) = ([start], [start.saturating_add(len)]);
                let seq = i as u64 + 1;
                files.push((0, file(i as u64 + 1, &a, &b, (seq, seq))));
            }
            cuts.sort_unstable();
            for (j, pair) in cuts.chunks(2).enumerate() {
                let (a, b) = ([pair[0]], [*pair.last().unwrap()]);
                // Neighbours may share a user key: sequences fall along the level.
                let seq = 100 - j as u64 * 2;
                files.push((1, file(100 + j as u64, &a, &b, (seq - 1, seq))));
            }
            with_files(&files)
        })
    }

    /// The model: widen the range by every file it meets until nothing changes.
    fn model(files: &[Arc<FileMeta>], level: usize, b: Option<u8>, e: Option<u8>) -> Vec<u64> {
        let (mut lo, mut hi) = (b.map(|x| vec![x]), e.map(|x| vec![x]));
        loop {
            let hits: Vec<&Arc<FileMeta>> = files
                .iter()
                .filter(|f| {
                    lo.as_ref()
                        .is_none_or(|l| f.largest_user_key() >= l.as_slice())
                        && hi
                            .as_ref()
                            .is_none_or(|h| f.smallest_user_key() <= h.as_slice())
                })
                .collect();
            if level > 0 {
                return hits.iter().map(|f| f.number).collect();
            }
            let new_lo = lo.clone().map(|l| {
                let min = hits.iter().map(|f| f.smallest_user_key().to_vec()).min();
                min.map_or(l.clone(), |m| m.min(l))
            });
            let new_hi = hi.clone().map(|h| {
                let max = hits.iter().map(|f| f.largest_user_key().to_vec()).max();
                max.map_or(h.clone(), |m| m.max(h))
            });
            if new_lo == lo && new_hi == hi {
                return hits.iter().map(|f| f.number).collect();
            }
            (lo, hi) = (new_lo, new_hi);
        }
    }

    proptest! {
        #[test]
        fn overlapping_matches_the_model(
            v in arb_version(),
            b in proptest::option::of(0u8..45),
            e in proptest::option::of(0u8..45),
        ) {
            for level in 0..2 {
                let begin = b.map(|x| vec![x]);
                let end = e.map(|x| vec![x]);
                let got = v.overlapping(level, begin.as_deref(), end.as_deref());
                let want = model(v.files(level), level, b, e);
                let any = v.has_overlap(level, begin.as_deref(), end.as_deref());
                prop_assert_eq!(any, !want.is_empty(), "level {}", level);
                prop_assert_eq!(numbers(&got), want, "level {}", level);
            }
        }

        #[test]
        fn files_for_key_matches_a_scan(v in arb_version(), k in 0u8..45) {
            let got: Vec<(usize, u64)> =
                v.files_for_key(&[k]).iter().map(|(l, f)| (*l, f.number)).collect();
            let want: Vec<(usize, u64)> = v
                .all_files()
                .filter(|(_, f)| f.smallest_user_key() <= &[k][..] && &[k][..] <= f.largest_user_key())
                .map(|(l, f)| (l, f.number))
                .collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn totals_follow_the_files_through_edits(v in arb_version(), drop_bits in any::<u64>()) {
            // Levels that lose no file keep their sums from the base version.
            let mut edit = VersionEdit::new();
            for (i, (level, f)) in v.all_files().enumerate() {
                if drop_bits >> (i % 64) & 1 == 1 {
                    edit.delete_file(level as u32, f.number);
                }
            }
            let v = v.apply(&edit).unwrap();
            let walked = FileTotals::of(v.all_files().map(|(_, f)| f));
            prop_assert_eq!(v.file_totals(), walked);
            for level in 0..v.num_levels() {
                let bytes: u64 = v.files(level).iter().map(|f| f.size).sum();
                prop_assert_eq!(v.level_bytes(level), bytes);
            }
        }

        #[test]
        fn edits_build_what_sorting_every_level_builds(
            v in arb_version(),
            edits in proptest::collection::vec(
                proptest::collection::vec((any::<bool>(), 0u32..3, 0u64..30, 0u8..45, 0u8..4), 0..6),
                1..4,
            ),
        ) {
            // The model: each level by number, sorted and checked whole at the end.
            let mut model: Vec<BTreeMap<u64, FileMeta>> = (0..v.num_levels())
                .map(|l| v.files(l).iter().map(|f| (f.number, FileMeta::clone(f))).collect())
                .collect();
            let mut builder = Builder::new(&v);
            let mut refused = None;
            for ops in &edits {
                // An edit deletes before it adds (a file may move to another level).
                let mut edit = VersionEdit::new();
                for &(_, _, n, _, _) in ops.iter().filter(|op| !op.0) {
                    if let Some(l) = model.iter().position(|m| m.contains_key(&n)) {
                        model[l].remove(&n);
                        edit.delete_file(l as u32, n);
                    }
                }
                for &(_, level, n, start, len) in ops.iter().filter(|op| op.0) {
                    if model.iter().all(|m| !m.contains_key(&n)) {
                        // Sequences fall with the key: touching neighbours may stay ordered.
                        let seq = 500 - u64::from(start);
                        let f = file(n, &[start], &[start.saturating_add(len)], (seq, seq));
                        model[level as usize].insert(n, f.clone());
                        edit.add_file(level, f);
                    }
                }
                builder.apply(&edit).unwrap();
            }
            let mut want = Vec::new();
            for (level, files) in model.iter().enumerate() {
                let mut files: Vec<Arc<FileMeta>> = files.values().cloned().map(Arc::new).collect();
                files.sort_by(|a, b| level_order(level, a, b));
                let bad = (level > 0)
                    .then(|| files.windows(2).find(|p| key::compare(&p[0].largest, &p[1].smallest) != Ordering::Less))
                    .flatten();
                if let Some(p) = bad {
                    refused.get_or_insert(format!("overlapping files {} and {}", p[0].number, p[1].number));
                }
                want.push(numbers(&files));
            }
            match (builder.finish(), refused) {
                (Ok(got), None) => {
                    let got: Vec<Vec<u64>> = (0..got.num_levels()).map(|l| numbers(got.files(l))).collect();
                    prop_assert_eq!(got, want);
                }
                (Err(e), Some(why)) => prop_assert!(e.to_string().contains(&why), "{} / {}", e, why),
                (got, why) => prop_assert!(false, "{:?} / {:?}", got.map(|_| ()), why),
            }
        }

        #[test]
        fn deleting_everything_empties_the_version(v in arb_version()) {
            let mut edit = VersionEdit::new();
            for (level, f) in v.all_files() {
                edit.delete_file(level as u32, f.number);
            }
            let empty = v.apply(&edit).unwrap();
            prop_assert_eq!(empty, Version::new(4));
        }
    }
}
