//! What a version keeps beside the files of each level, so that compaction decisions on a
//! large LSM walk no level: the files' positions by number and the level's running sizes
//! ([`Level`]), each file's overlap with the next level and the pickers' memoised orders
//! ([`Link`]).
//!
//! A level's [`Link`] depends on the level and the next one. An edit touches few files of
//! them, so a new version derives its links from the previous version's: a file keeps its
//! overlap (its indexes into the next level shifted past the files added or removed before
//! it) unless it is new or its key range meets a next-level file the edit added or removed,
//! and a memoised order keeps its other files in place and merges the changed ones in.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use foldhash::fast::FixedState;

use crate::compaction::GroupMemo;
use crate::key;

use super::version::FileTotals;
use super::FileMeta;

/// The files of one level, in level order, with what is derived from them alone.
#[derive(Debug)]
pub(super) struct Level {
    pub(super) files: Vec<Arc<FileMeta>>,
    pub(super) totals: FileTotals,
    /// The position of each file, by number.
    positions: HashMap<u64, usize, FixedState>,
    /// `sizes[i]`: Σ sizes of `files[..i]`.
    sizes: Vec<u128>,
}

impl Default for Level {
    fn default() -> Level {
        Level::new(Vec::new())
    }
}

impl Level {
    pub(super) fn new(files: Vec<Arc<FileMeta>>) -> Level {
        let positions = files.iter().enumerate().map(|(i, f)| (f.number, i));
        let sizes = std::iter::once(0)
            .chain(files.iter().scan(0u128, |sum, f| {
                *sum += u128::from(f.size);
                Some(*sum)
            }))
            .collect();
        Level {
            totals: FileTotals::of(&files),
            positions: positions.collect(),
            sizes,
            files,
        }
    }

    /// The position of file `number`, if the level holds it.
    pub(super) fn position(&self, number: u64) -> Option<usize> {
        self.positions.get(&number).copied()
    }

    /// Σ sizes of the files of `run`, saturating.
    fn bytes(&self, (from, to): Run) -> u64 {
        match (self.sizes.get(from), self.sizes.get(to)) {
            (Some(from), Some(to)) => u64::try_from(to - from).unwrap_or(u64::MAX),
            _ => 0,
        }
    }
}

/// A run of positions `from..to` in a level.
pub(super) type Run = (usize, usize);

/// The files of a deep level (L1 and below) meeting user keys `[begin, end]` (`None` =
/// unbounded). Their user-key ranges are sorted and only touch: both bounds are monotone
/// along the level, so the hits are one contiguous run.
pub(super) fn run_meeting(
    files: &[Arc<FileMeta>],
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Run {
    let first = begin.map_or(0, |b| files.partition_point(|f| f.largest_user_key() < b));
    let last = end.map_or(files.len(), |e| {
        files.partition_point(|f| f.smallest_user_key() <= e)
    });
    (first, last.max(first))
}

/// The files of a deep level whose internal-key range meets `f`'s, leaving out one that
/// starts at `f`'s largest key: the files RocksDB's min-overlapping-ratio sweep counts for a
/// file of the level above (`largest >= f.smallest` and `smallest < f.largest`).
fn run_sweep(files: &[Arc<FileMeta>], f: &FileMeta) -> Run {
    let less = |a: &[u8], b: &[u8]| key::compare(a, b) == Ordering::Less;
    let first = files.partition_point(|g| less(&g.largest, &f.smallest));
    let last = files.partition_point(|g| less(&g.smallest, &f.largest));
    (first, last.max(first))
}

/// Next-level bytes a file overlaps, what a [`FileRank`] may rank by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NextBytes {
    /// Bytes of the next-level files meeting its user-key range (SICA's overlap).
    pub by_user_key: u64,
    /// Bytes of the next-level files min-overlap's sweep counts for it (deep levels).
    pub by_sweep: u64,
}

/// An order of the files of a deep level that depends on the version alone, which the
/// version memoises and carries to the versions after it. A picker declares it as a
/// `static`: the version tells ranks apart by address.
#[derive(Debug)]
pub struct FileRank {
    /// The rank of a file (smaller first; equal ranks by level order, i.e. smallest key,
    /// then number); `None` for a file whose rank depends on more than the file and its
    /// next-level bytes (the picker ranks those at each call).
    pub key: fn(&FileMeta, NextBytes) -> Option<[u64; 2]>,
}

/// The files of a deep level in the order of a [`FileRank`].
#[derive(Debug, Default)]
pub struct Ranked {
    /// `(rank, position)` of each file the rank ranks, smallest first.
    pub ranked: Vec<([u64; 2], usize)>,
    /// Positions of the files it does not rank, ascending.
    pub unranked: Vec<usize>,
}

/// A level's overlaps with the next level and its memoised orders.
#[derive(Debug, Default)]
pub(super) struct Link {
    /// Per file: the next-level files meeting its user-key range.
    runs: Vec<Run>,
    /// Per file: the next-level files min-overlap's sweep counts ([`run_sweep`]).
    sweeps: Vec<Run>,
    ranks: Mutex<Vec<(&'static FileRank, Arc<Ranked>)>>,
    /// The zone-aware pickers' memo of the level's groups, once a picker kept one.
    groups: Mutex<Option<GroupMemo>>,
}

impl Link {
    /// The link of `level` (holding `files`) to `next`, computed file by file.
    pub(super) fn new(files: &Level, next: &Level) -> Link {
        let runs = files.files.iter().map(|f| user_run(next, f)).collect();
        let sweeps = files
            .files
            .iter()
            .map(|f| run_sweep(&next.files, f))
            .collect();
        Link {
            runs,
            sweeps,
            ranks: Mutex::default(),
            groups: Mutex::default(),
        }
    }

    /// The link of deep level `files` to `next`, derived from the link `old` of the same
    /// level in the previous version, whose level and next level were `old_files` and
    /// `old_next`.
    pub(super) fn derive(
        level: usize,
        (old_files, old_next, old): (&Level, &Level, &Link),
        (files, next): (&Level, &Level),
    ) -> Link {
        if level == 0 {
            // L0 is small and not in key order: the shifts below need key order.
            return Link::new(files, next);
        }
        let n = files.files.len();
        // Old position of each file of the level (NONE: added), and the reverse.
        let (mut old_of, mut new_of) = (vec![NONE; n], vec![NONE; old_files.files.len()]);
        let mut dirty = vec![false; n];
        diff(
            level,
            &old_files.files,
            &files.files,
            |change| match change {
                Change::Same(i, j) => {
                    if let (Some(old), Some(new)) = (old_of.get_mut(j), new_of.get_mut(i)) {
                        (*old, *new) = (i, j);
                    }
                }
                Change::Added(j) => {
                    if let Some(d) = dirty.get_mut(j) {
                        *d = true;
                    }
                }
                Change::Removed(_) => {}
            },
        );
        // A file meeting a next-level file the edit added or removed is measured again;
        // the others count the files added or removed before them to shift their runs.
        let mut shift = vec![0isize; n + 1];
        diff(level + 1, &old_next.files, &next.files, |change| {
            let (g, by) = match change {
                Change::Same(..) => return,
                Change::Removed(i) => (old_next.files.get(i), -1),
                Change::Added(j) => (next.files.get(j), 1),
            };
            let Some(g) = g else { return };
            let (lo, hi) = (g.smallest_user_key(), g.largest_user_key());
            let (from, to) = run_meeting(&files.files, Some(lo), Some(hi));
            if let Some(run) = dirty.get_mut(from..to) {
                run.fill(true);
            }
            let after = files.files.partition_point(|f| f.smallest_user_key() <= hi);
            if let Some(s) = shift.get_mut(after) {
                *s += by;
            }
        });
        let mut link = Link {
            runs: Vec::with_capacity(n),
            sweeps: Vec::with_capacity(n),
            ranks: Mutex::default(),
            groups: Mutex::default(),
        };
        let mut by = 0isize;
        let rows = files
            .files
            .iter()
            .zip(&shift)
            .zip(dirty.iter().zip(&old_of));
        for ((f, s), (&dirty, &o)) in rows {
            by += s;
            // A clean file kept its old position; measuring again is the safe fallback.
            let kept = (!dirty)
                .then(|| old.runs.get(o).zip(old.sweeps.get(o)))
                .flatten();
            match kept {
                Some((&run, &sweep)) => {
                    link.runs.push(shifted(run, by));
                    link.sweeps.push(shifted(sweep, by));
                }
                None => {
                    link.runs.push(user_run(next, f));
                    link.sweeps.push(run_sweep(&next.files, f));
                }
            }
        }
        let fresh: Vec<usize> = (dirty.iter().enumerate())
            .filter_map(|(j, &d)| d.then_some(j))
            .collect();
        let moved = |i: usize| {
            new_of
                .get(i)
                .copied()
                .filter(|&j| dirty.get(j) == Some(&false))
        };
        let memos = old.ranks().clone();
        let ranks = (memos.into_iter())
            .map(|(rank, ranked)| {
                let key = |j: usize| (rank.key)(files.files.get(j)?, link.next_bytes(next, j));
                (rank, Arc::new(rederive(&ranked, moved, &fresh, key)))
            })
            .collect();
        *link.ranks.get_mut().unwrap_or_else(PoisonError::into_inner) = ranks;
        let groups = old.group_memo().as_ref().map(|m| m.carried(n, moved));
        *link
            .groups
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = groups;
        link
    }

    /// The zone-aware pickers' memo, taken out (`None` if none is kept).
    pub(super) fn take_group_memo(&self) -> Option<GroupMemo> {
        self.group_memo().take()
    }

    /// Keeps `memo` as the zone-aware pickers' memo.
    pub(super) fn keep_group_memo(&self, memo: GroupMemo) {
        *self.group_memo() = Some(memo);
    }

    fn group_memo(&self) -> std::sync::MutexGuard<'_, Option<GroupMemo>> {
        // A memo is put in whole: one left by a panicking thread is whole.
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next-level files meeting the user-key range of file `pos`.
    pub(super) fn run(&self, pos: usize) -> Run {
        self.runs.get(pos).copied().unwrap_or_default()
    }

    /// The next-level bytes of file `pos` of the level, `next` being the next level.
    pub(super) fn next_bytes(&self, next: &Level, pos: usize) -> NextBytes {
        let bytes = |runs: &[Run]| runs.get(pos).map_or(0, |&r| next.bytes(r));
        NextBytes {
            by_user_key: bytes(&self.runs),
            by_sweep: bytes(&self.sweeps),
        }
    }

    /// The order of `files` (a deep level; `next` the level below) by `rank`, memoised.
    pub(super) fn ranked(
        &self,
        files: &Level,
        next: &Level,
        rank: &'static FileRank,
    ) -> Arc<Ranked> {
        if let Some(r) = self.memo(rank) {
            return r;
        }
        let mut ranked = Ranked::default();
        for (j, f) in files.files.iter().enumerate() {
            match (rank.key)(f, self.next_bytes(next, j)) {
                Some(k) => ranked.ranked.push((k, j)),
                None => ranked.unranked.push(j),
            }
        }
        ranked.ranked.sort_unstable();
        let mut memos = self.ranks();
        // Another thread may have ranked the level meanwhile: keep one memo.
        if let Some((_, r)) = memos.iter().find(|(r, _)| std::ptr::eq(*r, rank)) {
            return Arc::clone(r);
        }
        let ranked = Arc::new(ranked);
        memos.push((rank, Arc::clone(&ranked)));
        ranked
    }

    fn memo(&self, rank: &'static FileRank) -> Option<Arc<Ranked>> {
        let memos = self.ranks();
        let found = memos.iter().find(|(r, _)| std::ptr::eq(*r, rank));
        found.map(|(_, r)| Arc::clone(r))
    }

    fn ranks(&self) -> std::sync::MutexGuard<'_, Vec<(&'static FileRank, Arc<Ranked>)>> {
        // The memo holds only finished orders: one left by a panicking thread is whole.
        self.ranks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The next-level files meeting `f`'s user-key range.
fn user_run(next: &Level, f: &FileMeta) -> Run {
    let (b, e) = (f.smallest_user_key(), f.largest_user_key());
    run_meeting(&next.files, Some(b), Some(e))
}

fn shifted((from, to): Run, by: isize) -> Run {
    (from.saturating_add_signed(by), to.saturating_add_signed(by))
}

/// `old` after an edit: the files `moved` maps to a new position (the others are gone or
/// changed) keep their ranks, and the `fresh` positions are ranked by `key`.
fn rederive(
    old: &Ranked,
    moved: impl Fn(usize) -> Option<usize>,
    fresh: &[usize],
    key: impl Fn(usize) -> Option<[u64; 2]>,
) -> Ranked {
    let mut kept = Vec::with_capacity(old.ranked.len() + fresh.len());
    kept.extend(
        old.ranked
            .iter()
            .filter_map(|&(k, i)| moved(i).map(|j| (k, j))),
    );
    let mut unranked: Vec<usize> = old.unranked.iter().filter_map(|&i| moved(i)).collect();
    let mut added = Vec::new();
    for &j in fresh {
        match key(j) {
            Some(k) => added.push((k, j)),
            None => unranked.push(j),
        }
    }
    added.sort_unstable();
    unranked.sort_unstable();
    // Positions move monotonically, so the kept files stay in (rank, position) order.
    Ranked {
        ranked: merge_sorted(kept.into_iter(), added),
        unranked,
    }
}

/// The merge of two sorted sequences.
pub(crate) fn merge_sorted<T: Ord>(a: impl Iterator<Item = T>, b: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(a.size_hint().0 + b.len());
    let mut b = b.into_iter().peekable();
    for x in a {
        while let Some(y) = b.next_if(|y| *y < x) {
            out.push(y);
        }
        out.push(x);
    }
    out.extend(b);
    out
}

/// No position.
const NONE: usize = usize::MAX;

/// A file of a level in two versions.
enum Change {
    /// At old position `.0` and new position `.1`.
    Same(usize, usize),
    /// Only in the old level, at this position (removed, or replaced by another meta).
    Removed(usize),
    /// Only in the new level, at this position.
    Added(usize),
}

/// Reports each file of `level` in `old` and `new` (both in level order) to `on`. Files are
/// the same when they are the same `Arc` (a version shares the files it keeps), so only
/// the changes cost a key comparison.
fn diff(level: usize, old: &[Arc<FileMeta>], new: &[Arc<FileMeta>], mut on: impl FnMut(Change)) {
    let (mut i, mut j) = (0, 0);
    while let (Some(a), Some(b)) = (old.get(i), new.get(j)) {
        if Arc::ptr_eq(a, b) {
            on(Change::Same(i, j));
            (i, j) = (i + 1, j + 1);
            continue;
        }
        // Both lists are in level order: the first of the two cannot be in the other.
        match level_order(level, a, b) {
            Ordering::Less => {
                on(Change::Removed(i));
                i += 1;
            }
            Ordering::Greater => {
                on(Change::Added(j));
                j += 1;
            }
            Ordering::Equal => {
                on(Change::Removed(i));
                on(Change::Added(j));
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    (i..old.len()).for_each(|i| on(Change::Removed(i)));
    (j..new.len()).for_each(|j| on(Change::Added(j)));
}

/// The order of the files of `level` (see the module documentation of `version`).
pub(super) fn level_order(level: usize, a: &FileMeta, b: &FileMeta) -> Ordering {
    if level == 0 {
        b.largest_seq
            .cmp(&a.largest_seq)
            .then(b.smallest_seq.cmp(&a.smallest_seq))
            .then(b.number.cmp(&a.number))
    } else {
        key::compare(&a.smallest, &b.smallest).then(a.number.cmp(&b.number))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::compaction::test_util::arb_chain;
    use crate::version::Version;

    /// A rank that needs both next-level figures and leaves tombstone-heavy files out.
    static BY_SIZE: FileRank = FileRank {
        key: |f, next| match f.surplus_deletions() {
            Some(_) => None,
            None => Some([u64::MAX - f.size, next.by_user_key]),
        },
    };
    static BY_SWEEP: FileRank = FileRank {
        key: |f, next| Some([next.by_sweep, f.number % 3]),
    };

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn a_derived_version_keeps_what_a_fresh_one_computes(chain in arb_chain()) {
            chain.visit(|v, looked| {
                for level in 0..v.num_levels() {
                    let (files, next) = (&v.levels[level], v.below(level));
                    let fresh = Link::new(files, next);
                    let link = &v.links[level];
                    prop_assert_eq!(&link.runs, &fresh.runs, "level {}", level);
                    prop_assert_eq!(&link.sweeps, &fresh.sweeps, "level {}", level);
                    for (i, f) in files.files.iter().enumerate() {
                        prop_assert_eq!(files.position(f.number), Some(i));
                        let user = v.deep_overlapping_or_empty(level + 1, f);
                        prop_assert_eq!(v.next_level_overlap(level, i), user);
                    }
                    prop_assert_eq!(files.totals, FileTotals::of(&files.files));
                    if !looked || level == 0 {
                        continue;
                    }
                    for rank in [&BY_SIZE, &BY_SWEEP] {
                        let want = fresh.ranked(files, next, rank);
                        let got = v.ranked(level, rank).unwrap();
                        prop_assert_eq!(&got.ranked, &want.ranked, "level {}", level);
                        prop_assert_eq!(&got.unranked, &want.unranked, "level {}", level);
                    }
                }
                Ok(())
            })?;
        }
    }

    impl Version {
        /// `deep_overlapping` of `f`'s range in `level`, empty past the last level.
        fn deep_overlapping_or_empty(&self, level: usize, f: &FileMeta) -> &[Arc<FileMeta>] {
            if level >= self.num_levels() {
                return &[];
            }
            let (b, e) = (f.smallest_user_key(), f.largest_user_key());
            self.deep_overlapping(level, Some(b), Some(e))
        }
    }
}
