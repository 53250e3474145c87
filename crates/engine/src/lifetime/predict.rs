//! The prediction of a new SST's lifetime (Prophet's Algorithm 1, as the text of section
//! III states it).
//!
//! With C the cycle ([`Clock::cycle`]) and ranks counted from 0 in the order the active
//! picker takes the files of a level:
//! - c1, S picked by its own level: PL = C × rank_S. S is written by a compaction of the
//!   level above, which the compaction of S's level follows at once, so rank 0 dies within
//!   a tick or two. In L0 a compaction takes every file: after (flush_num − files in L0)
//!   more flushes and one compaction, PL = flush_num − n + 1 (at least 1).
//! - c2B, S overlaps files T of the level above (other than the job's inputs): that level
//!   has just compacted, so T goes in its (rank_T + 1)-th next compaction: PL = C × (rank_T
//!   + 1) for the first T.
//! - c2A: the mean lifetime of the files of S's level deleted passively so far (none yet:
//!   no c2A).
//! - PL = min; c1 wins only when strictly smallest (the paper's "S triggers compaction"
//!   test). c3: c1 wins and nothing overlaps S in the level below, so S will be moved, not
//!   merged: PL = PL_c1 + the mean passive lifetime of the level below; with none measured
//!   yet, C × (files there + 1) / 2 (the expected rank of a file placed at random).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::{PickCtx, Picker, ZoneLookup};
use crate::key;
use crate::options::Options;
use crate::version::{FileMeta, Version, VersionEdit};

use super::{Case, Clock, FileLifetime};

/// Everything a prediction reads: the version the new file is created in, the picker and
/// its cursors, the clock, and the job creating the file.
pub struct PredictCtx<'a> {
    /// The version the new file is created in.
    pub version: &'a Version,
    /// The database's options (level targets, the L0 trigger that sets the cycle).
    pub options: &'a Options,
    /// The picker whose order decides which file of a level is compacted next.
    pub picker: &'a dyn Picker,
    /// Round-robin compaction cursor per level, as in [`PickCtx`].
    pub cursors: &'a [Option<Vec<u8>>],
    /// Numbers of the files running compactions use.
    pub compacting: &'a HashSet<u64>,
    /// Where the file layer keeps each SST, for zone-aware pickers.
    pub zones: &'a dyn ZoneLookup,
    /// Free space of the file layer, 0..=1, as in [`PickCtx`].
    pub free_ratio: f64,
    /// The FC-tick clock (flushes and compactions so far).
    pub clock: &'a Clock,
    /// Files the job creating the SST deletes (of any level).
    pub job_inputs: &'a [Arc<FileMeta>],
    /// SSTs the job already wrote into the new file's level.
    pub job_outputs: &'a [FileMeta],
}

impl PredictCtx<'_> {
    fn is_input(&self, f: &FileMeta) -> bool {
        self.job_inputs.iter().any(|g| g.number == f.number)
    }

    fn flush_num(&self) -> u32 {
        self.options.level0_file_num_compaction_trigger
    }
}

/// The prediction for `new`, an SST about to be created in `level`.
pub fn predict(ctx: &PredictCtx<'_>, level: usize, new: &FileMeta) -> FileLifetime {
    let c = ctx.clock.cycle(ctx.flush_num());
    if level + 1 >= ctx.version.num_levels() {
        return last_level(ctx, level, new, c);
    }
    let pl1 = if level == 0 {
        l0_lifetime(ctx)
    } else {
        c.saturating_mul(rank_in_level(ctx, level, new, true) as u64)
    };
    let pl2a = ctx.clock.passive_mean(level);
    let pl2b = passive_partner_rank(ctx, level, new).map(|r| c.saturating_mul(r as u64 + 1));
    let passive = [(Case::C2B, pl2b), (Case::C2A, pl2a)]
        .into_iter()
        .filter_map(|(case, pl)| Some((case, pl?)))
        .min_by_key(|&(_, pl)| pl);
    let (case, lifetime) = match passive {
        Some((case, pl)) if pl <= pl1 => (case, pl),
        _ if moves_down(ctx, level, new) => (Case::C3, pl1.saturating_add(below(ctx, level, c))),
        _ => (Case::C1, pl1),
    };
    lifetime_of(ctx, level, case, lifetime)
}

fn lifetime_of(ctx: &PredictCtx<'_>, level: usize, case: Case, lifetime: u64) -> FileLifetime {
    FileLifetime {
        created: ctx.clock.next_tick(),
        lifetime,
        case,
        level: u8::try_from(level).unwrap_or(u8::MAX),
        moved: false,
    }
}

/// The last level never starts a compaction by its size: its files die only passively.
/// c2B as anywhere, else c2A; with no passive mean yet, C × (files of the level above + 1)
/// / 2, the expected rank of the file above that will take it.
fn last_level(ctx: &PredictCtx<'_>, level: usize, new: &FileMeta, c: u64) -> FileLifetime {
    let pl2b = passive_partner_rank(ctx, level, new).map(|r| c.saturating_mul(r as u64 + 1));
    let pl2a = ctx.clock.passive_mean(level).unwrap_or_else(|| {
        let above = level
            .checked_sub(1)
            .map_or(0, |l| ctx.version.files(l).len() as u64);
        c.saturating_mul(above + 1) / 2
    });
    match pl2b {
        Some(pl) if pl <= pl2a => lifetime_of(ctx, level, Case::C2B, pl),
        _ => lifetime_of(ctx, level, Case::C2A, pl2a),
    }
}

/// c1 in L0: the flushes still needed to reach the trigger, then the compaction.
fn l0_lifetime(ctx: &PredictCtx<'_>) -> u64 {
    let staying = ctx
        .version
        .files(0)
        .iter()
        .filter(|f| !ctx.is_input(f))
        .count();
    let n = staying + ctx.job_outputs.len() + 1;
    let trigger = ctx.flush_num() as usize;
    trigger.saturating_sub(n) as u64 + 1
}

/// The smallest rank in the level above of the files there that overlap `new` (c2B).
/// The job's outputs are files of `new`'s level, not of the level above: ranks there are
/// taken without them.
fn passive_partner_rank(ctx: &PredictCtx<'_>, level: usize, new: &FileMeta) -> Option<usize> {
    let above = level.checked_sub(1)?;
    let ctx = &PredictCtx {
        job_outputs: &[],
        ..*ctx
    };
    let (lo, hi) = (new.smallest_user_key(), new.largest_user_key());
    if above == 0 {
        // One compaction takes all of L0: every overlapping file has rank 0.
        let overlaps = ctx
            .version
            .files(0)
            .iter()
            .any(|f| !ctx.is_input(f) && f.overlaps(Some(lo), Some(hi)));
        return overlaps.then_some(0);
    }
    ctx.version
        .deep_overlapping(above, Some(lo), Some(hi))
        .iter()
        .filter(|f| !ctx.is_input(f))
        .map(|t| rank_in_level(ctx, above, t, false))
        .min()
}

/// Whether `new`, picked by its level, would be a trivial move: nothing in the level below
/// (other than the job's inputs) overlaps it.
fn moves_down(ctx: &PredictCtx<'_>, level: usize, new: &FileMeta) -> bool {
    let below = level + 1;
    if below >= ctx.version.num_levels() {
        return false;
    }
    let (lo, hi) = (Some(new.smallest_user_key()), Some(new.largest_user_key()));
    !ctx.version
        .deep_overlapping(below, lo, hi)
        .iter()
        .any(|f| !ctx.is_input(f))
}

/// c3's second part: how long a file lives in the level below after the move.
fn below(ctx: &PredictCtx<'_>, level: usize, c: u64) -> u64 {
    ctx.clock.passive_mean(level + 1).unwrap_or_else(|| {
        let files = ctx.version.files(level + 1).len() as u64;
        c.saturating_mul(files + 1) / 2
    })
}

/// The rank of `file` (0 = taken first) in the order the picker takes the files of
/// `level` (≥ 1) once the job ends: without the job's inputs, with its outputs, and with
/// `file` itself if it is `new`. Round-robin answers from its cursor by binary search
/// (the paper's formula 1); other pickers are asked for their order of that level.
fn rank_in_level(ctx: &PredictCtx<'_>, level: usize, file: &FileMeta, new: bool) -> usize {
    if ctx.picker.round_robin() {
        round_robin_rank(ctx, level, file, new)
    } else {
        ordered_rank(ctx, level, file, new)
    }
}

/// Formula 1: (y − x) mod n, y the position of the file and x the cursor's, in the level
/// sorted by smallest key.
fn round_robin_rank(ctx: &PredictCtx<'_>, level: usize, file: &FileMeta, new: bool) -> usize {
    let files = ctx.version.files(level);
    let gone: Vec<&FileMeta> = ctx
        .job_inputs
        .iter()
        .map(|g| &**g)
        .filter(|g| in_level(files, g))
        .collect();
    // Files of the level-to-be with a smallest key below `k` (the file itself excluded).
    let before = |k: &[u8]| {
        let less = |g: &FileMeta| key::compare(&g.smallest, k) == Ordering::Less;
        let kept = files.partition_point(|g| less(g)) - gone.iter().filter(|g| less(g)).count();
        kept + ctx.job_outputs.iter().filter(|g| less(g)).count()
    };
    let n = files.len() - gone.len() + ctx.job_outputs.len() + usize::from(new);
    if n == 0 {
        return 0;
    }
    let y = before(&file.smallest);
    let cursor = ctx.cursors.get(level).and_then(|c| c.as_deref());
    let x = cursor.filter(|c| !c.is_empty()).map_or(0, |c| {
        let own = new && key::compare(&file.smallest, c) == Ordering::Less;
        before(c) + usize::from(own)
    });
    let x = if x >= n { 0 } else { x };
    (y + n - x) % n
}

/// Whether `g` is one of `files` (sorted by smallest key, disjoint).
fn in_level(files: &[Arc<FileMeta>], g: &FileMeta) -> bool {
    files
        .binary_search_by(|f| key::compare(&f.smallest, &g.smallest))
        .is_ok_and(|i| files.get(i).is_some_and(|f| f.number == g.number))
}

/// The position of `file` in the picker's order of the level-to-be.
fn ordered_rank(ctx: &PredictCtx<'_>, level: usize, file: &FileMeta, new: bool) -> usize {
    let mut edit = VersionEdit::new();
    let files = ctx.version.files(level);
    for g in ctx.job_inputs.iter().filter(|g| in_level(files, g)) {
        edit.delete_file(level as u32, g.number);
    }
    for o in ctx.job_outputs {
        edit.add_file(level as u32, o.clone());
    }
    if new {
        edit.add_file(level as u32, file.clone());
    }
    let Ok(v) = ctx.version.apply(&edit) else {
        return 0;
    };
    let pick = PickCtx {
        version: &v,
        options: ctx.options,
        compacting: ctx.compacting,
        zones: ctx.zones,
        free_ratio: ctx.free_ratio,
        cursors: ctx.cursors,
        blob_gc_files: 0,
    };
    let level_files = v.files(level);
    ctx.picker
        .order(&pick, level)
        .iter()
        .position(|&i| level_files.get(i).is_some_and(|f| f.number == file.number))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::compaction::test_util::{arb_version, file, version_of};
    use crate::compaction::{NoZones, RoundRobin, Sica};
    use crate::key::{self, ValueKind};

    /// L0: 20 [a,z]; L1: 1 [a,c] 2 [d,f] 3 [g,i] 4 [j,l]; L2: 5 [a,b] 6 [m,o];
    /// L3: 7 [a,e]; L4 (the last level): 8 [a,z].
    fn lsm() -> Version {
        version_of(
            5,
            &[
                (0, file(20, b"a", b"z", 10)),
                (1, file(1, b"a", b"c", 10)),
                (1, file(2, b"d", b"f", 10)),
                (1, file(3, b"g", b"i", 10)),
                (1, file(4, b"j", b"l", 10)),
                (2, file(5, b"a", b"b", 10)),
                (2, file(6, b"m", b"o", 10)),
                (3, file(7, b"a", b"e", 10)),
                (4, file(8, b"a", b"z", 10)),
            ],
        )
    }

    struct Setup {
        version: Version,
        options: Options,
        cursors: Vec<Option<Vec<u8>>>,
        clock: Clock,
        inputs: Vec<Arc<FileMeta>>,
        /// SSTs the job already wrote into the new file's level.
        outputs: Vec<FileMeta>,
    }

    /// C = 2 + 4 = 6; the L1 cursor at file 2, the L2 cursor at file 6.
    fn setup() -> Setup {
        let mut cursors = vec![None; 5];
        cursors[1] = Some(key::internal_key(b"d", 2, ValueKind::Put));
        cursors[2] = Some(key::internal_key(b"m", 6, ValueKind::Put));
        Setup {
            version: lsm(),
            options: Options::default(),
            cursors,
            clock: Clock {
                tick: 100,
                compacting_levels: 2,
                ..Clock::default()
            },
            inputs: Vec::new(),
            outputs: Vec::new(),
        }
    }

    fn run(s: &Setup, picker: &dyn Picker, level: usize, new: &FileMeta) -> FileLifetime {
        let none = HashSet::new();
        let ctx = PredictCtx {
            version: &s.version,
            options: &s.options,
            picker,
            cursors: &s.cursors,
            compacting: &none,
            zones: &NoZones,
            free_ratio: 1.0,
            clock: &s.clock,
            job_inputs: &s.inputs,
            job_outputs: &s.outputs,
        };
        predict(&ctx, level, new)
    }

    #[test]
    fn c1_is_the_cycle_times_the_rank_from_the_cursor() {
        let s = setup();
        // L3 [p,q]: nothing above overlaps it, L4's 8 [a,z] below does (no move).
        let new = file(30, b"p", b"q", 10);
        let l = run(&s, &RoundRobin, 3, &new);
        assert_eq!(l.case, Case::C1);
        // L3 holds 7 [a,e] and S [p,q]; no cursor: rank 1.
        assert_eq!(l.lifetime, 6);
        assert_eq!((l.created, l.deletion_tick(), l.level), (101, 107, 3));
    }

    #[test]
    fn the_last_level_dies_only_passively() {
        let mut s = setup();
        // L4 [p,q]: nothing in L3 overlaps it, no passive mean yet: C × (1 file + 1) / 2.
        let l = run(&s, &RoundRobin, 4, &file(30, b"p", b"q", 10));
        assert_eq!((l.case, l.lifetime), (Case::C2A, 6));
        s.clock.passive = vec![(0, 0); 5];
        s.clock.passive[4] = (90, 3);
        let l = run(&s, &RoundRobin, 4, &file(30, b"p", b"q", 10));
        assert_eq!((l.case, l.lifetime), (Case::C2A, 30));
        // Overlapping L3's 7 [a,e] (rank 0): c2B, C × 1.
        let l = run(&s, &RoundRobin, 4, &file(30, b"b", b"c", 10));
        assert_eq!((l.case, l.lifetime), (Case::C2B, 6));
    }

    #[test]
    fn c2b_ranks_the_level_above_without_the_jobs_outputs() {
        let mut s = setup();
        // Outputs the job already wrote into L2 (left of [g,h]) must not shift file 3's
        // rank in L1 (1 from the cursor at 2).
        s.outputs = vec![file(40, b"b", b"b", 10), file(41, b"c", b"c", 10)];
        let l = run(&s, &RoundRobin, 2, &file(30, b"g", b"h", 10));
        assert_eq!((l.case, l.lifetime), (Case::C2B, 12));
    }

    #[test]
    fn c2b_dies_with_the_overlapping_file_above() {
        let s = setup();
        // L2 [g,h] overlaps L1's 3 [g,i], rank 1 from the cursor (2 3 4 1): PL = 6 × 2.
        // Its own rank from L2's cursor (6 5 S) is 2: c1 = 12 too, and c1 must win
        // strictly.
        let l = run(&s, &RoundRobin, 2, &file(30, b"g", b"h", 10));
        assert_eq!((l.case, l.lifetime), (Case::C2B, 12));
        // Under L0: every L0 file goes in the next L0 compaction: rank 0 → C.
        let l = run(&s, &RoundRobin, 1, &file(31, b"m", b"n", 10));
        assert_eq!((l.case, l.lifetime), (Case::C2B, 6));
    }

    #[test]
    fn c2a_is_the_mean_passive_lifetime_of_the_level() {
        let mut s = setup();
        s.clock.passive = vec![(0, 0), (0, 0), (0, 0), (8, 4), (0, 0)];
        // L3 [p,q]: c1 = 6, c2A = 2 → c2A.
        let l = run(&s, &RoundRobin, 3, &file(30, b"p", b"q", 10));
        assert_eq!((l.case, l.lifetime), (Case::C2A, 2));
    }

    #[test]
    fn c3_adds_the_level_below_when_nothing_overlaps_there() {
        let mut s = setup();
        // L2 [x,y]: L1 holds nothing in [x,y], nor does L3: a trivial move. L2 once S is
        // in: 5 [a,b], 6 [m,o], S; from the cursor at 6: 6 S 5, rank 1 → PL1 = 6; L3 has 1
        // file and no mean: 6 × 2 / 2 = 6 → 12.
        let l = run(&s, &RoundRobin, 2, &file(30, b"x", b"y", 10));
        assert_eq!((l.case, l.lifetime), (Case::C3, 12));
        s.clock.passive = vec![(0, 0), (0, 0), (0, 0), (50, 2), (0, 0)];
        let l = run(&s, &RoundRobin, 2, &file(30, b"x", b"y", 10));
        assert_eq!((l.case, l.lifetime), (Case::C3, 6 + 25));
    }

    #[test]
    fn l0_files_wait_for_the_trigger() {
        let mut s = setup();
        // One L0 file and the new one: 4 − 2 more flushes, then the compaction.
        let l = run(&s, &RoundRobin, 0, &file(30, b"a", b"b", 10));
        assert_eq!(l.lifetime, 3);
        // A job deleting file 20 (none stays): 4 − 1 + 1.
        s.inputs = vec![Arc::new(file(20, b"a", b"z", 10))];
        let l = run(&s, &RoundRobin, 0, &file(30, b"a", b"b", 10));
        assert_eq!(l.lifetime, 4);
    }

    #[test]
    fn other_pickers_rank_by_their_own_order() {
        let s = setup();
        // SICA takes the largest file first: a 1000-byte [x,y] in L3 comes before 7.
        let l = run(&s, &Sica, 3, &file(30, b"x", b"y", 1000));
        assert_eq!((l.case, l.lifetime), (Case::C1, 0));
        let l = run(&s, &Sica, 3, &file(30, b"x", b"y", 1));
        assert_eq!((l.case, l.lifetime), (Case::C1, 6));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The binary-search rank of round-robin is the position in its order.
        #[test]
        fn round_robin_rank_is_its_order(
            v in arb_version(),
            level in 1usize..4,
            cursor in prop::option::of(0u8..70),
            at in 0u8..70,
            input_bits in prop::collection::vec(prop::bool::weighted(0.3), 64),
        ) {
            let inputs: Vec<Arc<FileMeta>> = v
                .files(level)
                .iter()
                .filter(|f| input_bits[f.number as usize % input_bits.len()])
                .cloned()
                .collect();
            let mut cursors = vec![None; 5];
            cursors[level] = cursor.map(|c| key::internal_key(&[c], 5, ValueKind::Put));
            let clock = Clock::default();
            let (options, none) = (Options::default(), HashSet::new());
            let ctx = PredictCtx {
                version: &v,
                options: &options,
                picker: &RoundRobin,
                cursors: &cursors,
                compacting: &none,
                zones: &NoZones,
                free_ratio: 1.0,
                clock: &clock,
                job_inputs: &inputs,
                job_outputs: &[],
            };
            // A new file in a gap of the level (if [at, at] is free there).
            let new = file(999, &[at], &[at], 10);
            let free = !v.files(level).iter().any(|f| {
                !inputs.iter().any(|g| g.number == f.number) && f.overlaps(Some(&[at]), Some(&[at]))
            });
            if free {
                prop_assert_eq!(
                    round_robin_rank(&ctx, level, &new, true),
                    ordered_rank(&ctx, level, &new, true)
                );
            }
            for f in v.files(level).iter().filter(|f| !inputs.iter().any(|g| g.number == f.number)) {
                prop_assert_eq!(
                    round_robin_rank(&ctx, level, f, false),
                    ordered_rank(&ctx, level, f, false)
                );
            }
        }
    }
}
