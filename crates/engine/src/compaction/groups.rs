//! What the zone-aware pickers (ZACA, zone-drain) keep of a level from one call to the
//! next: each file's group (the file and the next-level files its user-key range meets) by
//! zone, the group's score, and the level's order by score.
//!
//! A score depends on where the group's files are, which the file layer changes under the
//! version (the zone cleaner moves files; zone-drain also reads the full zones' live bytes,
//! which every deleted file changes). So a call asks the file layer which zones gained or
//! lost an SST since the groups were looked up ([`ZoneLookup::moved_since`]) and compares
//! the live bytes with those the scores read; it looks up and scores again only the groups
//! in those zones, and moves only them in the order. The version keeps the memo with the
//! level and carries the groups an edit leaves as they are, and their order, to the next
//! version ([`GroupMemo::carried`]). Ties follow the base order, which an edit changes only
//! locally: a new version's first call sorts the carried order again with the places of the
//! new base order, which a merge sort of an almost sorted list does in about one pass.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::FixedState;

use crate::version::Version;

use super::picker::{PickCtx, ZoneLookup};
use super::ExtentMark;

/// The live bytes of the full zones, by zone.
pub(super) type LiveBytes = HashMap<u32, u64, FixedState>;

/// How a zone-aware picker scores the group of a file (higher first).
pub(super) trait GroupScore {
    /// Tells scorers apart: a memo scored by another scorer is scored again.
    fn scorer(&self) -> &'static str;

    /// The order equal scores keep (one the version memoises: it is asked at every call).
    fn base_order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize>;

    /// Whether the score reads the full zones' live bytes.
    fn reads_live(&self) -> bool;

    /// The score of the group of file `pos` of `level`, whose bytes by zone are `zones`
    /// (one pair per zone, in zone order); `live`: the full zones' live bytes. It may read
    /// the version only through the group (the file and its next-level files).
    fn score(
        &self,
        v: &Version,
        level: usize,
        pos: usize,
        zones: &[(u32, u64)],
        live: &LiveBytes,
    ) -> u64;
}

/// The files of `level` by score (higher first, equal scores in the base order), the files
/// being compacted last in the base order (their groups are not looked up).
pub(super) fn order_by_score(
    scorer: &dyn GroupScore,
    ctx: &PickCtx<'_>,
    level: usize,
) -> Vec<usize> {
    let v = ctx.version;
    // Taken out of the version while it works: lookups take file-layer locks, and a
    // version derived meanwhile then just carries nothing.
    let mut memo = v.take_group_memo(level).unwrap_or_default();
    let busy = ctx.busy_flags(level);
    memo.follow_layout(ctx.zones, busy.len());
    memo.follow_scorer(scorer, ctx.zones);
    memo.look_up(ctx, level, &busy);
    let fresh = memo.score(scorer, v, level);
    let order = memo.sort(scorer, ctx, level, fresh).ordered(&busy);
    v.keep_group_memo(level, memo);
    order
}

/// A file's group.
#[derive(Clone, Debug)]
struct Group {
    /// The group's bytes by zone, one pair per zone, in zone order.
    zones: Arc<[(u32, u64)]>,
    /// Its zones' [`zone_bits`]: most groups a call checks meet none of a few zones, which
    /// this tells without reading `zones`.
    bits: u64,
    /// Some file of the group was in no zone: it may turn up in any.
    unknown: bool,
    /// Its score, once scored.
    score: Option<u64>,
}

impl Group {
    /// Whether the group has bytes in one of `zones` (sorted, whose bits are `bits`).
    fn meets(&self, zones: &[u32], bits: u64) -> bool {
        self.bits & bits != 0 && (self.zones.iter()).any(|(z, _)| zones.binary_search(z).is_ok())
    }
}

/// One bit per zone, zones 64 apart sharing one.
fn zone_bits(zones: impl IntoIterator<Item = u32>) -> u64 {
    zones.into_iter().fold(0, |bits, z| bits | 1 << (z % 64))
}

/// A scored file's key in the order: higher score first, then its place in the base order,
/// then its position.
type Key = (Reverse<u64>, Option<usize>, usize);

/// The level's order by score.
#[derive(Debug, Default)]
struct Sorted {
    /// The base order the places are from (`None`: carried from the previous version, whose
    /// places the keys hold), and each file's place in it.
    base: Option<Vec<usize>>,
    place: Vec<usize>,
    /// The scored files' keys, in order.
    by_score: Vec<Key>,
}

impl Sorted {
    /// Takes `base` as the base order; false if it is the one the places are from.
    fn rebase(&mut self, base: Vec<usize>) -> bool {
        if self.base.as_ref() == Some(&base) {
            return false;
        }
        self.place = vec![0; base.len()];
        for (at, &pos) in base.iter().enumerate() {
            if let Some(p) = self.place.get_mut(pos) {
                *p = at;
            }
        }
        self.base = Some(base);
        true
    }

    /// The files not being compacted by score, then those being compacted in base order.
    fn ordered(&self, busy: &[bool]) -> Vec<usize> {
        let is_busy = |pos: usize| busy.get(pos) == Some(&true);
        let base = self.base.as_deref().unwrap_or_default();
        let mut out = Vec::with_capacity(base.len());
        out.extend((self.by_score.iter().map(|k| k.2)).filter(|&p| !is_busy(p)));
        out.extend(base.iter().copied().filter(|&p| is_busy(p)));
        out
    }
}

/// What a level's memo holds; see the module's documentation.
#[derive(Debug, Default)]
pub(crate) struct GroupMemo {
    /// The layout the groups were looked up in (`None`: none was, or it tells no changes).
    mark: Option<ExtentMark>,
    /// Who scored the groups.
    scorer: Option<&'static str>,
    /// The full zones' live bytes the scores read, in zone order, and by zone.
    live: Vec<(u32, u64)>,
    live_map: LiveBytes,
    /// Per file of the level: its group, `None` until looked up.
    groups: Vec<Option<Group>>,
    /// The order, once made: every scored group's key, but for those `stale` marks.
    sorted: Option<Sorted>,
    /// Per file, whether its group or score was forgotten since the order was made (empty:
    /// none was).
    stale: Vec<bool>,
}

impl GroupMemo {
    /// The memo for the level after an edit, which holds `len` files: the groups `moved`
    /// maps to a new position (the same file with the same next-level files) are kept, and
    /// their order.
    pub(crate) fn carried(&self, len: usize, moved: impl Fn(usize) -> Option<usize>) -> GroupMemo {
        let mut groups = vec![None; len];
        for (i, group) in self.groups.iter().enumerate() {
            if let (Some(g), Some(slot)) = (group, moved(i).and_then(|j| groups.get_mut(j))) {
                *slot = Some(g.clone());
            }
        }
        // The kept groups' keys, with their places in the old base order until the next
        // call sorts them with the new one.
        let sorted = self.sorted.as_ref().map(|s| Sorted {
            by_score: (s.by_score.iter())
                .filter_map(|&(score, place, pos)| Some((score, place, moved(pos)?)))
                .collect(),
            ..Sorted::default()
        });
        GroupMemo {
            mark: self.mark,
            scorer: self.scorer,
            live: self.live.clone(),
            live_map: self.live_map.clone(),
            groups,
            sorted,
            stale: Vec::new(),
        }
    }

    /// Marks the entry of file `pos` in the order as no longer holding.
    fn forget(stale: &mut Vec<bool>, len: usize, pos: usize) {
        if stale.is_empty() {
            stale.resize(len, false);
        }
        if let Some(s) = stale.get_mut(pos) {
            *s = true;
        }
    }

    /// Forgets the groups with bytes in a zone that gained or lost an SST since they were
    /// looked up (all of them if the lookup cannot tell), and those holding a file that
    /// was in no zone (it may have turned up in one).
    fn follow_layout(&mut self, zones: &dyn ZoneLookup, len: usize) {
        let now = zones.mark();
        let mut moved = Vec::new();
        let told = match (self.mark, now) {
            (Some(then), Some(_)) => {
                self.groups.len() == len && zones.moved_since(then, &mut moved)
            }
            _ => false,
        };
        if !told {
            self.groups = vec![None; len];
            self.sorted = None;
            self.stale.clear();
        } else if !moved.is_empty() {
            moved.sort_unstable();
            let bits = zone_bits(moved.iter().copied());
            let stale = |g: &Group| g.unknown || g.meets(&moved, bits);
            for (pos, group) in self.groups.iter_mut().enumerate() {
                if group.as_ref().is_some_and(stale) {
                    *group = None;
                    Self::forget(&mut self.stale, len, pos);
                }
            }
        }
        self.mark = now;
    }

    /// Forgets the scores of another scorer, and those that read live bytes that changed.
    fn follow_scorer(&mut self, scorer: &dyn GroupScore, zones: &dyn ZoneLookup) {
        if self.scorer != Some(scorer.scorer()) {
            self.scorer = Some(scorer.scorer());
            self.sorted = None;
            self.live.clear();
            self.live_map.clear();
            self.forget_scores(|_| true);
        }
        if !scorer.reads_live() {
            return;
        }
        let mut live = zones.full_zone_live();
        live.sort_by_key(|&(zone, _)| zone);
        if live == self.live {
            return;
        }
        let changed = changed_zones(&self.live, &live);
        let zones: Vec<u32> = changed.iter().map(|&(zone, _)| zone).collect();
        let bits = zone_bits(zones.iter().copied());
        self.forget_scores(|g| g.meets(&zones, bits));
        for &(zone, bytes) in &changed {
            match bytes {
                Some(bytes) => self.live_map.insert(zone, bytes),
                None => self.live_map.remove(&zone),
            };
        }
        self.live = live;
    }

    fn forget_scores(&mut self, stale: impl Fn(&Group) -> bool) {
        let len = self.groups.len();
        for (pos, group) in self.groups.iter_mut().enumerate() {
            if let Some(g) = group.as_mut().filter(|g| g.score.is_some() && stale(g)) {
                g.score = None;
                Self::forget(&mut self.stale, len, pos);
            }
        }
    }

    /// Looks up the groups not known, but for the files being compacted (the builder skips
    /// them).
    fn look_up(&mut self, ctx: &PickCtx<'_>, level: usize, busy: &[bool]) {
        let mut lookups: Option<ZoneCache<'_>> = None;
        for (pos, (group, &busy)) in self.groups.iter_mut().zip(busy).enumerate() {
            if group.is_none() && !busy {
                let cache = lookups.get_or_insert_with(|| ZoneCache::new(ctx, level));
                let (zones, unknown) = cache.group_bytes(pos);
                *group = Some(Group {
                    bits: zone_bits(zones.iter().map(|&(z, _)| z)),
                    zones: zones.into(),
                    unknown,
                    score: None,
                });
            }
        }
    }

    /// Scores the groups that have no score; their positions.
    fn score(&mut self, scorer: &dyn GroupScore, v: &Version, level: usize) -> Vec<usize> {
        let mut fresh = Vec::new();
        for (pos, group) in self.groups.iter_mut().enumerate() {
            if let Some(g) = group.as_mut().filter(|g| g.score.is_none()) {
                g.score = Some(scorer.score(v, level, pos, &g.zones, &self.live_map));
                fresh.push(pos);
            }
        }
        fresh
    }

    /// The order with the `fresh` scores in place of the old ones (all of them if there
    /// is no order yet).
    fn sort(
        &mut self,
        scorer: &dyn GroupScore,
        ctx: &PickCtx<'_>,
        level: usize,
        mut fresh: Vec<usize>,
    ) -> &Sorted {
        let groups = &self.groups;
        let score = |pos: usize| groups.get(pos).and_then(|g| g.as_ref()?.score);
        let stale = std::mem::take(&mut self.stale);
        let mut sorted = self.sorted.take().unwrap_or_else(|| {
            fresh = (0..groups.len()).filter(|&p| score(p).is_some()).collect();
            Sorted::default()
        });
        // The base order may change with no change of the level (SICA's and min-overlap's
        // compensation of tombstones follow the whole version); it is a copy of the
        // version's memo, cheap next to sorting again.
        let rebased = sorted.rebase(scorer.base_order(ctx, level));
        if rebased || !fresh.is_empty() || !stale.is_empty() {
            let place = |pos: usize| sorted.place.get(pos).copied();
            let by_score = &mut sorted.by_score;
            by_score.retain(|k| stale.get(k.2) != Some(&true));
            if rebased {
                by_score.iter_mut().for_each(|k| k.1 = place(k.2));
            }
            let keys = fresh
                .into_iter()
                .map(|p| Some((Reverse(score(p)?), place(p), p)));
            let mut added: Vec<Key> = keys.flatten().collect();
            if rebased {
                // Stable and adaptive: the kept keys are in order but for the files the
                // base order moved, the fresh ones few.
                by_score.extend(added);
                by_score.sort();
            } else {
                added.sort_unstable();
                *by_score = insert_sorted(by_score, &added);
            }
        }
        self.sorted.insert(sorted)
    }
}

/// `sorted` with the (few, sorted) `added` keys in their places: copies of the runs
/// between them.
fn insert_sorted(sorted: &[Key], added: &[Key]) -> Vec<Key> {
    let mut out = Vec::with_capacity(sorted.len() + added.len());
    let mut rest = sorted;
    for key in added {
        let (before, after) = rest.split_at(rest.partition_point(|k| k < key));
        out.extend_from_slice(before);
        out.push(*key);
        rest = after;
    }
    out.extend_from_slice(rest);
    out
}

/// The zones that are in one of two live-byte lists (in zone order) and not the other, or
/// with other live bytes, in zone order, with their new live bytes (`None`: no longer full).
fn changed_zones(old: &[(u32, u64)], new: &[(u32, u64)]) -> Vec<(u32, Option<u64>)> {
    let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
    let mut changed = Vec::new();
    loop {
        let step = match (old.peek(), new.peek()) {
            (None, None) => return changed,
            (Some(&&(a, _)), Some(&&(b, _))) => a.cmp(&b),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
        };
        let (was, now) = match step {
            std::cmp::Ordering::Less => (old.next(), None),
            std::cmp::Ordering::Greater => (None, new.next()),
            std::cmp::Ordering::Equal => (old.next(), new.next()),
        };
        let zone = was.or(now).map_or(0, |&(z, _)| z);
        let now = now.map(|&(_, l)| l);
        if was.map(|&(_, l)| l) != now {
            changed.push((zone, now));
        }
    }
}

/// Zone lookups for the groups of a level (a file and the next-level files it overlaps):
/// a next-level file in several groups (and every L1 file, for L0 groups) is looked up once.
pub(super) struct ZoneCache<'a> {
    ctx: &'a PickCtx<'a>,
    level: usize,
    /// The zones of the next-level files looked up, by position (a map: a call after a
    /// move looks up a few groups of a large level).
    below: HashMap<usize, Vec<(u32, u64)>, FixedState>,
    /// The last group's bytes by zone.
    group: Vec<(u32, u64)>,
}

impl<'a> ZoneCache<'a> {
    pub(super) fn new(ctx: &'a PickCtx<'a>, level: usize) -> Self {
        ZoneCache {
            ctx,
            level,
            below: HashMap::default(),
            group: Vec::new(),
        }
    }

    /// The bytes the group of file `pos` of the level holds in each zone, by zone, and
    /// whether some file of the group is in no zone.
    pub(super) fn group_bytes(&mut self, pos: usize) -> (&[(u32, u64)], bool) {
        let (v, lookup) = (self.ctx.version, self.ctx.zones);
        self.group.clear();
        let mut unknown = false;
        if let Some(seed) = v.files(self.level).get(pos) {
            let zones = lookup.zones_of(seed.number);
            unknown |= zones.is_empty();
            self.group.extend(zones);
        }
        let run = v.next_level_run(self.level, pos);
        let next = v.files(self.level + 1).get(run.clone()).unwrap_or_default();
        for (at, file) in run.zip(next) {
            let zones = (self.below.entry(at)).or_insert_with(|| lookup.zones_of(file.number));
            unknown |= zones.is_empty();
            self.group.extend_from_slice(zones);
        }
        let pairs = &mut self.group;
        pairs.sort_unstable_by_key(|&(zone, _)| zone);
        pairs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = kept.1.saturating_add(later.1);
            }
            same
        });
        (pairs, unknown)
    }
}
