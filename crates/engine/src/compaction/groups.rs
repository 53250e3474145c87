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
//! level and carries the groups an edit leaves as they are to the next version
//! ([`GroupMemo::carried`]); the order, whose ties follow the version's base order, is
//! sorted again once per version.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::FixedState;

use crate::version::{merge_sorted, Version};

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
    /// Some file of the group was in no zone: it may turn up in any.
    unknown: bool,
    /// Its score, once scored.
    score: Option<u64>,
}

impl Group {
    /// Whether the group has bytes in one of `zones` (sorted).
    fn meets(&self, zones: &[u32]) -> bool {
        (self.zones.iter()).any(|(z, _)| zones.binary_search(z).is_ok())
    }
}

/// The level's order by score, for one base order.
#[derive(Debug)]
struct Sorted {
    /// The base order, and each file's place in it.
    base: Vec<usize>,
    place: Vec<usize>,
    /// The scored files, higher score first, equal scores by place.
    by_score: Vec<usize>,
}

impl Sorted {
    fn new(base: Vec<usize>) -> Sorted {
        let mut place = vec![0; base.len()];
        for (at, &pos) in base.iter().enumerate() {
            if let Some(p) = place.get_mut(pos) {
                *p = at;
            }
        }
        Sorted {
            base,
            place,
            by_score: Vec::new(),
        }
    }

    /// The files not being compacted by score, then those being compacted in base order.
    fn ordered(&self, busy: &[bool]) -> Vec<usize> {
        let is_busy = |&&pos: &&usize| busy.get(pos) == Some(&true);
        let mut out = Vec::with_capacity(self.base.len());
        out.extend(self.by_score.iter().filter(|p| !is_busy(p)));
        out.extend(self.base.iter().filter(is_busy));
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
    /// This version's order, once made.
    sorted: Option<Sorted>,
}

impl GroupMemo {
    /// The memo for the level after an edit, which holds `len` files: the groups `moved`
    /// maps to a new position (the same file with the same next-level files) are kept.
    pub(crate) fn carried(&self, len: usize, moved: impl Fn(usize) -> Option<usize>) -> GroupMemo {
        let mut groups = vec![None; len];
        for (i, group) in self.groups.iter().enumerate() {
            if let (Some(g), Some(slot)) = (group, moved(i).and_then(|j| groups.get_mut(j))) {
                *slot = Some(g.clone());
            }
        }
        GroupMemo {
            mark: self.mark,
            scorer: self.scorer,
            live: self.live.clone(),
            live_map: self.live_map.clone(),
            groups,
            sorted: None,
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
        } else if !moved.is_empty() {
            moved.sort_unstable();
            let stale = |g: &Group| g.unknown || g.meets(&moved);
            for group in &mut self.groups {
                if group.as_ref().is_some_and(stale) {
                    *group = None;
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
        self.forget_scores(|g| g.meets(&changed));
        self.live_map = live.iter().copied().collect();
        self.live = live;
    }

    fn forget_scores(&mut self, stale: impl Fn(&Group) -> bool) {
        for g in self.groups.iter_mut().flatten() {
            if stale(g) {
                g.score = None;
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

    /// The order with the `fresh` scores in place of the old ones (all of them in a new
    /// version's first order).
    fn sort(
        &mut self,
        scorer: &dyn GroupScore,
        ctx: &PickCtx<'_>,
        level: usize,
        mut fresh: Vec<usize>,
    ) -> &Sorted {
        let groups = &self.groups;
        let score = |pos: usize| groups.get(pos).and_then(|g| g.as_ref()?.score);
        // The base order may change with no change of the level (SICA's and min-overlap's
        // compensation of tombstones follow the whole version); it is a copy of the
        // version's memo, cheap next to sorting again.
        let base = scorer.base_order(ctx, level);
        let sorted = match self.sorted.take() {
            Some(sorted) if sorted.base == base => sorted,
            _ => {
                fresh = (0..groups.len()).filter(|&p| score(p).is_some()).collect();
                Sorted::new(base)
            }
        };
        let Sorted {
            base,
            place,
            mut by_score,
        } = sorted;
        let key = |pos: usize| (Reverse(score(pos)), place.get(pos).copied(), pos);
        let mut again = vec![false; if fresh.is_empty() { 0 } else { groups.len() }];
        for &pos in &fresh {
            if let Some(a) = again.get_mut(pos) {
                *a = true;
            }
        }
        let kept = |&pos: &usize| score(pos).is_some() && !again.get(pos).copied().unwrap_or(false);
        if !fresh.is_empty() || !by_score.iter().all(kept) {
            let mut added: Vec<_> = fresh.into_iter().map(key).collect();
            added.sort_unstable();
            let old = by_score.iter().copied().filter(kept).map(key);
            by_score = (merge_sorted(old, added).into_iter())
                .map(|(_, _, pos)| pos)
                .collect();
        }
        self.sorted.insert(Sorted {
            base,
            place,
            by_score,
        })
    }
}

/// The zones that are in one of two live-byte lists (in zone order) and not the other, or
/// with other live bytes; sorted.
fn changed_zones(old: &[(u32, u64)], new: &[(u32, u64)]) -> Vec<u32> {
    let live = |list: &[(u32, u64)], zone: u32| {
        let at = list.binary_search_by_key(&zone, |&(z, _)| z).ok()?;
        list.get(at).map(|&(_, l)| l)
    };
    let mut changed: Vec<u32> = (old.iter().chain(new))
        .map(|&(zone, _)| zone)
        .filter(|&zone| live(old, zone) != live(new, zone))
        .collect();
    changed.sort_unstable();
    changed.dedup();
    changed
}

/// Zone lookups for the groups of a level (a file and the next-level files it overlaps):
/// a next-level file in several groups (and every L1 file, for L0 groups) is looked up once.
pub(super) struct ZoneCache<'a> {
    ctx: &'a PickCtx<'a>,
    level: usize,
    /// The zones of each next-level file, by position, once looked up.
    below: Vec<Option<Vec<(u32, u64)>>>,
    /// The last group's bytes by zone.
    group: Vec<(u32, u64)>,
}

impl<'a> ZoneCache<'a> {
    pub(super) fn new(ctx: &'a PickCtx<'a>, level: usize) -> Self {
        ZoneCache {
            ctx,
            level,
            below: vec![None; ctx.version.num_files(level + 1)],
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
        let cached = self.below.get_mut(run).unwrap_or_default();
        for (zones, file) in cached.iter_mut().zip(next) {
            let zones = zones.get_or_insert_with(|| lookup.zones_of(file.number));
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
