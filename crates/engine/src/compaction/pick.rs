//! Choosing a compaction: RocksDB 7.8's `LevelCompactionBuilder` (leveled compaction, static
//! level sizes, base level 1) and the compaction it describes (`Compaction`: trivial moves,
//! bottommost level, keys beyond the output level).
//!
//! Files are never shared by two compactions: a file in `PickCtx::compacting` is never an
//! input, and a compaction that would need one is not picked. Only one compaction at a time
//! reads L0 (L0 files overlap each other).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::key;
use crate::version::{FileMeta, Version};

use super::picker::{PickCtx, Picker};
use super::score::{compute_scores, scores_by_level};

/// RocksDB 7.8's default `ignore_max_compaction_bytes_for_input = true`: growing the
/// start-level inputs (without adding output-level files) ignores `max_compaction_bytes`.
const IGNORE_MAX_COMPACTION_BYTES_FOR_INPUT: bool = true;

/// At most this many files in a trivial move of a deep level (`kMaxMultiTrivialMove`).
const MAX_MULTI_TRIVIAL_MOVE: usize = 4;

/// Fewest L0 files an intra-L0 compaction merges (`kMinFilesForIntraL0Compaction`).
const MIN_FILES_FOR_INTRA_L0: usize = 4;

/// With static level sizes L0 always compacts into L1.
const BASE_LEVEL: usize = 1;

/// Files of one level, in level order.
type Files = Vec<Arc<FileMeta>>;

/// Why a compaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionReason {
    /// L0 score: too many L0 files (or bytes); also intra-L0 compactions.
    L0FileCount,
    /// Ln score: the level holds more bytes than its target.
    LevelSize,
    /// The zone cleaner asked to compact these files.
    Requested,
    /// A user request.
    Manual,
    /// Blob files past the garbage threshold (`blob_garbage_collection_force_threshold`).
    ForcedBlobGc,
}

impl CompactionReason {
    /// A short name for logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            CompactionReason::L0FileCount => "l0-file-count",
            CompactionReason::LevelSize => "level-size",
            CompactionReason::Requested => "requested",
            CompactionReason::Manual => "manual",
            CompactionReason::ForcedBlobGc => "forced-blob-gc",
        }
    }
}

/// One compaction: which files of `level` and `output_level` it merges, and how.
#[derive(Clone, Debug)]
pub struct Compaction {
    /// The level the compaction starts from.
    pub level: usize,
    /// Where its outputs go (`level + 1`, or `level` for intra-L0 and last-level rewrites).
    pub output_level: usize,
    /// Files of `level`, in level order.
    pub inputs: Vec<Arc<FileMeta>>,
    /// Files of `output_level` overlapping the inputs (empty when `output_level == level`).
    pub output_inputs: Vec<Arc<FileMeta>>,
    /// Files of the first level below the output level that overlap the compaction, for
    /// cutting output files (RocksDB's grandparents).
    pub grandparents: Vec<Arc<FileMeta>>,
    /// The inputs move to `output_level` as they are, without being rewritten.
    pub trivial_move: bool,
    /// Score of `level` when the compaction was picked.
    pub score: f64,
    /// Why it was picked.
    pub reason: CompactionReason,
    /// No deeper level holds keys of the compaction's range: tombstones can be dropped
    /// (unless a snapshot still needs them).
    pub bottommost: bool,
    /// Output files are cut at this size; `u64::MAX` = never cut (outputs to L0).
    pub max_output_file_size: u64,
    /// Round-robin only: the cursor of `level` after this compaction (an internal key;
    /// empty = wrap to the first file), to record in the version edit.
    pub compact_cursor: Option<Vec<u8>>,
}

impl Compaction {
    /// Every input file: the start level's, then the output level's.
    pub fn input_files(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(&self.output_inputs)
    }

    /// The user-key range `[smallest, largest]` of every input file.
    pub fn user_range(&self) -> (Vec<u8>, Vec<u8>) {
        user_range2(&self.inputs, &self.output_inputs)
    }

    /// Σ sizes of the input files.
    pub fn input_bytes(&self) -> u64 {
        self.input_files().map(|f| f.size).sum()
    }

    /// Σ sizes of the start-level inputs (RocksDB's Rn).
    pub fn start_level_bytes(&self) -> u64 {
        self.inputs.iter().map(|f| f.size).sum()
    }

    /// Σ sizes of the output-level inputs (RocksDB's Rnp1).
    pub fn output_level_bytes(&self) -> u64 {
        self.output_inputs.iter().map(|f| f.size).sum()
    }

    /// True if `user_key` may exist in a level deeper than the output level (tombstones
    /// must then be kept). RocksDB's `KeyNotExistsBeyondOutputLevel`, negated: `version` is
    /// the version the compaction was picked from.
    pub fn key_may_exist_beyond_output(&self, version: &Version, user_key: &[u8]) -> bool {
        if self.bottommost {
            return false;
        }
        if self.output_level == 0 {
            return true;
        }
        let key = Some(user_key);
        (self.output_level + 1..version.num_levels())
            .any(|level| version.has_overlap(level, key, key))
    }
}

/// RocksDB's `LevelCompactionBuilder::PickCompaction`: the levels with score ≥ 1 in score
/// order; in a level, the first file of the picker's order that can seed a compaction.
/// `None` when nothing needs (or can start) a compaction now.
pub fn pick_compaction(ctx: &PickCtx<'_>, picker: &dyn Picker) -> Option<Compaction> {
    let scores = compute_scores(ctx.version, ctx.options, ctx.compacting);
    let mut skipped_l0 = false;
    for s in scores.iter().take_while(|s| s.score >= 1.0) {
        // While L0 waits for the base level, compacting the base level further down would
        // starve L0.
        if skipped_l0 && s.level == BASE_LEVEL {
            continue;
        }
        let output_level = s.level + 1;
        if let Some(seed) = pick_seed(ctx, picker, s.level, output_level) {
            let reason = if s.level == 0 {
                CompactionReason::L0FileCount
            } else {
                CompactionReason::LevelSize
            };
            // As in RocksDB, a seed whose full input set turns out busy ends the pick.
            return build(ctx, picker, s.level, s.score, seed, reason);
        }
        if s.level == 0 {
            skipped_l0 = true;
            if let Some(c) = pick_intra_l0(ctx, s.score) {
                return Some(c);
            }
        }
    }
    pick_forced_blob_gc(ctx)
}

/// RocksDB's forced blob garbage collection: the first marked table that can be compacted
/// (see [`super::forced_blob_gc`]), to a clean cut of its level, into its own level.
fn pick_forced_blob_gc(ctx: &PickCtx<'_>) -> Option<Compaction> {
    let marked = super::forced_blob_gc::marked_files(ctx.version, ctx.options, ctx.blob_gc_files);
    marked.into_iter().find_map(|(level, file)| {
        if busy(ctx, std::slice::from_ref(&file)) || (level == 0 && l0_busy(ctx)) {
            return None;
        }
        let inputs = if level == 0 {
            let (b, e) = user_range(std::slice::from_ref(&file));
            ctx.version.overlapping(0, Some(&b), Some(&e))
        } else {
            clean_cut(ctx, level, vec![file])?
        };
        let grandparents = grandparents_of(ctx.version, level, &inputs, &[]);
        let scores = scores_by_level(ctx.version, ctx.options, ctx.compacting);
        let score = scores.get(level).copied().unwrap_or_default();
        let shape = Shape {
            level,
            output_level: level,
            inputs,
            output_inputs: Vec::new(),
            grandparents,
            trivial_move: false,
        };
        Some(finish(
            ctx,
            shape,
            score,
            CompactionReason::ForcedBlobGc,
            None,
        ))
    })
}

/// The zone cleaner asks to compact files `numbers` of `level` into the next level (the
/// last level is rewritten in place). The compaction is completed as RocksDB's
/// `CompactFiles` would: a clean cut of the start level (every file between the requested
/// ones, L0 files overlapping them), all overlapping files of the output level. Never a
/// trivial move: the point is to rewrite the data elsewhere. `None` if a file is not in the
/// level (any more), or the compaction would need a file that is being compacted.
pub fn pick_requested(ctx: &PickCtx<'_>, level: usize, numbers: &[u64]) -> Option<Compaction> {
    let v = ctx.version;
    let levels = v.num_levels();
    if numbers.is_empty() || level >= levels || (level == 0 && levels < 2) {
        return None;
    }
    let files = v.files(level);
    let mut picked = Vec::new();
    for number in numbers {
        let f = files.iter().find(|f| f.number == *number)?;
        picked.push(Arc::clone(f));
    }
    if busy(ctx, &picked) || (level == 0 && l0_busy(ctx)) {
        return None;
    }
    let output_level = if level + 1 < levels { level + 1 } else { level };
    let inputs = if level == 0 {
        let (b, e) = user_range(&picked);
        v.overlapping(0, Some(&b), Some(&e))
    } else {
        clean_cut(ctx, level, picked)?
    };
    let mut output_inputs = Vec::new();
    let mut grandparents = Vec::new();
    if output_level != level {
        output_inputs = output_overlap(ctx, output_level, &inputs)?;
        grandparents = grandparents_of(v, output_level, &inputs, &output_inputs);
    }
    let scores = scores_by_level(v, ctx.options, ctx.compacting);
    let score = scores.get(level).copied().unwrap_or_default();
    Some(finish(
        ctx,
        Shape {
            level,
            output_level,
            inputs,
            output_inputs,
            grandparents,
            trivial_move: false,
        },
        score,
        CompactionReason::Requested,
        None,
    ))
}

/// Whether no two L0 files overlap (RocksDB's `level0_non_overlapping`): sorted by smallest
/// key, each file ends (internal-key order) before the next begins.
pub fn level0_non_overlapping(version: &Version) -> bool {
    let mut files: Vec<&Arc<FileMeta>> = version.files(0).iter().collect();
    files.sort_by(|a, b| key::compare(&a.smallest, &b.smallest));
    (files.iter().zip(files.iter().skip(1)))
        .all(|(a, b)| key::compare(&a.largest, &b.smallest) == Ordering::Less)
}

/// The first choice of start-level files (RocksDB's `PickFileToCompact` result).
struct Seed {
    inputs: Vec<Arc<FileMeta>>,
    /// Picked by the L0 trivial-move search: no further L0 files, no output-level files.
    l0_trivial_move: bool,
    /// Index (in level order) of the file the picker put first, for round-robin growth.
    first_in_order: Option<usize>,
}

/// The files of a compaction before its flags are derived.
struct Shape {
    level: usize,
    output_level: usize,
    inputs: Vec<Arc<FileMeta>>,
    output_inputs: Vec<Arc<FileMeta>>,
    grandparents: Vec<Arc<FileMeta>>,
    trivial_move: bool,
}

fn busy(ctx: &PickCtx<'_>, files: &[Arc<FileMeta>]) -> bool {
    files.iter().any(|f| ctx.is_compacting(f))
}

/// An L0 compaction is running (RocksDB allows one at a time).
fn l0_busy(ctx: &PickCtx<'_>) -> bool {
    busy(ctx, ctx.version.files(0))
}

pub(super) fn total_size(files: &[Arc<FileMeta>]) -> u64 {
    files.iter().map(|f| f.size).sum()
}

/// The user-key range `[smallest, largest]` of non-empty `files`.
fn user_range(files: &[Arc<FileMeta>]) -> (Vec<u8>, Vec<u8>) {
    user_range2(files, &[])
}

/// The user-key range of the files of `a` and `b` together.
fn user_range2(a: &[Arc<FileMeta>], b: &[Arc<FileMeta>]) -> (Vec<u8>, Vec<u8>) {
    let smallest = a.iter().chain(b).map(|f| f.smallest_user_key()).min();
    let largest = a.iter().chain(b).map(|f| f.largest_user_key()).max();
    (
        smallest.unwrap_or_default().to_vec(),
        largest.unwrap_or_default().to_vec(),
    )
}

/// RocksDB's `ExpandInputsToCleanCut` without the busy check: grow a set of files of a
/// deep level until no file outside it shares a user key with it (a key's entries may
/// continue in the neighbouring file, and a compaction must take all of them). L0 sets are
/// returned as they are.
fn expand_to_clean_cut(
    version: &Version,
    level: usize,
    files: Vec<Arc<FileMeta>>,
) -> Vec<Arc<FileMeta>> {
    if level == 0 || files.is_empty() {
        return files;
    }
    let mut files = files;
    loop {
        let (b, e) = user_range(&files);
        let grown = version.overlapping(level, Some(&b), Some(&e));
        if grown.len() <= files.len() {
            return grown;
        }
        files = grown;
    }
}

/// [`expand_to_clean_cut`], refused if the cut needs a file that is being compacted.
fn clean_cut(
    ctx: &PickCtx<'_>,
    level: usize,
    files: Vec<Arc<FileMeta>>,
) -> Option<Vec<Arc<FileMeta>>> {
    let files = expand_to_clean_cut(ctx.version, level, files);
    (!busy(ctx, &files)).then_some(files)
}

/// The files of `output_level` a compaction of `inputs` must take (all overlapping ones, to
/// a clean cut); `None` if one of them is being compacted.
fn output_overlap(
    ctx: &PickCtx<'_>,
    output_level: usize,
    inputs: &[Arc<FileMeta>],
) -> Option<Vec<Arc<FileMeta>>> {
    let (b, e) = user_range(inputs);
    let out = ctx.version.overlapping(output_level, Some(&b), Some(&e));
    if busy(ctx, &out) {
        return None;
    }
    clean_cut(ctx, output_level, out)
}

/// RocksDB's `PickFileToCompact` for a score-triggered compaction of `level`.
fn pick_seed(
    ctx: &PickCtx<'_>,
    picker: &dyn Picker,
    level: usize,
    output_level: usize,
) -> Option<Seed> {
    if level == 0 && l0_busy(ctx) {
        return None;
    }
    if level == 0 {
        if let Some(inputs) = try_l0_trivial_move(ctx, output_level) {
            return Some(Seed {
                inputs,
                l0_trivial_move: true,
                first_in_order: None,
            });
        }
    }
    let v = ctx.version;
    let files = v.files(level);
    let rr = picker.round_robin();
    let order = picker.order(ctx, level);
    let first_in_order = order.first().copied();
    for &index in &order {
        let Some(f) = files.get(index) else { continue };
        let Some((inputs, overlaps_output)) = seed_inputs(ctx, level, output_level, f) else {
            // Round-robin must not skip the file at its cursor.
            if rr {
                return None;
            }
            continue;
        };
        let inputs = if inputs.len() == 1 && !overlaps_output {
            try_extend_trivial_move(ctx, level, output_level, index, inputs)
        } else {
            inputs
        };
        return Some(Seed {
            inputs,
            l0_trivial_move: false,
            first_in_order,
        });
    }
    None
}

/// The clean cut around `f`, if neither it nor the output-level files it overlaps are busy,
/// and whether it overlaps any output-level file.
fn seed_inputs(
    ctx: &PickCtx<'_>,
    level: usize,
    output_level: usize,
    f: &Arc<FileMeta>,
) -> Option<(Vec<Arc<FileMeta>>, bool)> {
    if ctx.is_compacting(f) {
        return None;
    }
    let inputs = clean_cut(ctx, level, vec![Arc::clone(f)])?;
    let (b, e) = user_range(&inputs);
    let out = ctx.version.overlapping(output_level, Some(&b), Some(&e));
    let overlaps_output = !out.is_empty();
    if overlaps_output {
        clean_cut(ctx, output_level, out)?;
    }
    Some((inputs, overlaps_output))
}

fn no_output_overlap(v: &Version, output_level: usize, inputs: &[Arc<FileMeta>]) -> bool {
    let (b, e) = user_range(inputs);
    !v.has_overlap(output_level, Some(&b), Some(&e))
}

/// RocksDB's `TryPickL0TrivialMove`: from the oldest L0 file towards newer ones, take files
/// while they neither overlap each other nor the base level. Only tried when the base
/// level has files (moving into an empty level is left to the normal path).
fn try_l0_trivial_move(ctx: &PickCtx<'_>, output_level: usize) -> Option<Vec<Arc<FileMeta>>> {
    let v = ctx.version;
    if v.files(output_level).is_empty() {
        return None;
    }
    let mut picked: Vec<Arc<FileMeta>> = Vec::new();
    let (mut lo, mut hi): (&[u8], &[u8]) = (&[], &[]);
    for f in v.files(0).iter().rev() {
        if picked.is_empty() {
            (lo, hi) = (&f.smallest, &f.largest);
        } else if key::compare(&f.largest, lo) == Ordering::Less {
            lo = &f.smallest;
        } else if key::compare(&f.smallest, hi) == Ordering::Greater {
            hi = &f.largest;
        } else {
            break;
        }
        let (b, e) = (key::user_key(lo), key::user_key(hi));
        if v.has_overlap(output_level, Some(b), Some(e)) {
            break;
        }
        picked.push(Arc::clone(f));
    }
    picked.sort_by(|a, b| key::compare(&a.smallest, &b.smallest));
    (!picked.is_empty()).then_some(picked)
}

/// RocksDB's `TryExtendNonL0TrivialMove`: a single file with no output-level overlap takes
/// its right neighbours while the run still overlaps nothing below, ends on a clean cut,
/// has at most four files and stays within `max_compaction_bytes`. RocksDB 7.8 also runs
/// this on L0 (in L0's list order), and so does zkv.
fn try_extend_trivial_move(
    ctx: &PickCtx<'_>,
    level: usize,
    output_level: usize,
    start: usize,
    inputs: Vec<Arc<FileMeta>>,
) -> Vec<Arc<FileMeta>> {
    let v = ctx.version;
    let files = v.files(level);
    let Some(first) = inputs.first().cloned() else {
        return inputs;
    };
    let mut total = first.size;
    let mut run = inputs;
    for (i, next) in files.iter().enumerate().skip(start + 1) {
        if run.len() >= MAX_MULTI_TRIVIAL_MOVE {
            break;
        }
        if ctx.is_compacting(next) {
            break;
        }
        let (b, e) = (first.smallest_user_key(), next.largest_user_key());
        if v.has_overlap(output_level, Some(b), Some(e)) {
            break;
        }
        let shares_key = files
            .get(i + 1)
            .is_some_and(|after| after.smallest_user_key() == next.largest_user_key());
        if shares_key {
            break;
        }
        total = total.saturating_add(next.size);
        if total > ctx.options.max_compaction_bytes() {
            break;
        }
        run.push(Arc::clone(next));
    }
    run
}

/// The rest of RocksDB's `PickCompaction` after the seed: all overlapping L0 files,
/// round-robin growth, output-level files and start-level expansion, grandparents.
fn build(
    ctx: &PickCtx<'_>,
    picker: &dyn Picker,
    level: usize,
    score: f64,
    seed: Seed,
    reason: CompactionReason,
) -> Option<Compaction> {
    let v = ctx.version;
    let output_level = level + 1;
    let mut inputs = seed.inputs;
    if level == 0 && !seed.l0_trivial_move {
        // A busy L1 file in the widened range ends the pick in `setup_other_inputs`.
        let (b, e) = user_range(&inputs);
        inputs = v.overlapping(0, Some(&b), Some(&e));
    }
    let rr_growth = picker.round_robin() && reason == CompactionReason::LevelSize;
    if rr_growth {
        if let Some(start) = seed.first_in_order {
            inputs = round_robin_growth(ctx, level, start, inputs);
        }
    }
    let (mut output_inputs, mut grandparents) = (Vec::new(), Vec::new());
    if !seed.l0_trivial_move {
        (inputs, output_inputs) = setup_other_inputs(ctx, level, output_level, inputs, rr_growth)?;
        grandparents = grandparents_of(v, output_level, &inputs, &output_inputs);
    }
    let trivial_move = is_trivial_move(
        ctx,
        level,
        output_level,
        &inputs,
        &output_inputs,
        seed.l0_trivial_move,
    );
    let cursor = (picker.round_robin() && level > 0).then(|| next_cursor(v, level, &inputs));
    let shape = Shape {
        level,
        output_level,
        inputs,
        output_inputs,
        grandparents,
        trivial_move,
    };
    Some(finish(ctx, shape, score, reason, cursor))
}

fn finish(
    ctx: &PickCtx<'_>,
    shape: Shape,
    score: f64,
    reason: CompactionReason,
    compact_cursor: Option<Vec<u8>>,
) -> Compaction {
    let bottommost = is_bottommost(ctx.version, &shape);
    // Outputs to L0 are never cut (RocksDB: "files output to Level 0 won't be split").
    let max_output_file_size = match shape.output_level {
        0 => u64::MAX,
        l => ctx.options.target_file_size(l),
    };
    Compaction {
        level: shape.level,
        output_level: shape.output_level,
        inputs: shape.inputs,
        output_inputs: shape.output_inputs,
        grandparents: shape.grandparents,
        trivial_move: shape.trivial_move,
        score,
        reason,
        bottommost,
        max_output_file_size,
        compact_cursor,
    }
}

/// RocksDB's `SetupOtherFilesWithRoundRobinExpansion`: a size-triggered round-robin
/// compaction takes consecutive files to the right of the cursor file while none is busy,
/// the whole compaction stays within `max_compaction_bytes`, and the level is not yet
/// brought under its target. A seed that can be a trivial move tries that instead.
fn round_robin_growth(
    ctx: &PickCtx<'_>,
    level: usize,
    start: usize,
    inputs: Vec<Arc<FileMeta>>,
) -> Vec<Arc<FileMeta>> {
    let v = ctx.version;
    let output_level = level + 1;
    if no_output_overlap(v, output_level, &inputs) {
        // Already a multi-file trivial move, or one now: keep it a move.
        if inputs.len() > 1 {
            return inputs;
        }
        let extended = try_extend_trivial_move(ctx, level, output_level, start, inputs.clone());
        if extended.len() > 1 {
            return extended;
        }
    }
    let files = v.files(level);
    let idle: u64 = files
        .iter()
        .filter(|f| !ctx.is_compacting(f))
        .map(|f| f.size)
        .sum();
    let excess = idle.saturating_sub(ctx.options.max_bytes_for_level(level));
    if inputs.first().is_none_or(|f| f.size >= excess) {
        return inputs;
    }
    let after_last = last_position(files, &inputs).map_or(start + 1, |i| i + 1);
    let mut taken = inputs;
    for f in files.iter().skip(after_last) {
        if ctx.is_compacting(f) {
            break;
        }
        let mut trial = taken.clone();
        trial.push(Arc::clone(f));
        let Some(trial) = clean_cut(ctx, level, trial) else {
            break;
        };
        let Some(out) = output_overlap(ctx, output_level, &trial) else {
            break;
        };
        let start_bytes = total_size(&trial);
        if start_bytes.saturating_add(total_size(&out)) > ctx.options.max_compaction_bytes() {
            break;
        }
        taken = trial;
        if start_bytes > excess {
            break;
        }
    }
    taken
}

/// Position in `files` (a level) of the rightmost of `inputs`.
fn last_position(files: &[Arc<FileMeta>], inputs: &[Arc<FileMeta>]) -> Option<usize> {
    inputs
        .iter()
        .filter_map(|f| files.iter().position(|g| g.number == f.number))
        .max()
}

/// RocksDB's `SetupOtherInputs`: the output-level files overlapping the inputs (to a clean
/// cut), then more start-level files if that adds no output-level file. `None` if an
/// output-level file is busy.
fn setup_other_inputs(
    ctx: &PickCtx<'_>,
    level: usize,
    output_level: usize,
    inputs: Vec<Arc<FileMeta>>,
    towards_right_only: bool,
) -> Option<(Files, Files)> {
    let output_inputs = output_overlap(ctx, output_level, &inputs)?;
    if output_inputs.is_empty() {
        return Some((inputs, output_inputs));
    }
    let grown = grow_start_level(
        ctx,
        level,
        output_level,
        &inputs,
        &output_inputs,
        towards_right_only,
    );
    Some((grown.unwrap_or(inputs), output_inputs))
}

/// The larger start-level input set of `SetupOtherInputs`, if one qualifies: first every
/// start-level file overlapping the whole compaction range (to a clean cut) if that keeps
/// the same output-level files; else the clean files lying inside that range.
fn grow_start_level(
    ctx: &PickCtx<'_>,
    level: usize,
    output_level: usize,
    inputs: &[Arc<FileMeta>],
    output_inputs: &[Arc<FileMeta>],
    towards_right_only: bool,
) -> Option<Vec<Arc<FileMeta>>> {
    let v = ctx.version;
    let out_bytes = total_size(output_inputs);
    let fits = |bytes: u64| {
        IGNORE_MAX_COMPACTION_BYTES_FOR_INPUT
            || out_bytes.saturating_add(bytes) < ctx.options.max_compaction_bytes()
    };
    let (all_b, all_e) = user_range2(inputs, output_inputs);
    let lo = if towards_right_only {
        user_range(inputs).0
    } else {
        all_b.clone()
    };
    let overlapping = v.overlapping(level, Some(&lo), Some(&all_e));
    // RocksDB measures the set before its clean-cut growth.
    let bytes = total_size(&overlapping);
    let expanded = expand_to_clean_cut(v, level, overlapping);
    if expanded.len() > inputs.len() && fits(bytes) && !busy(ctx, &expanded) {
        let (b, e) = user_range(&expanded);
        let out = v.overlapping(output_level, Some(&b), Some(&e));
        if !busy(ctx, &out) {
            let out = expand_to_clean_cut(v, output_level, out);
            if !busy(ctx, &out) && out.len() == output_inputs.len() {
                return Some(expanded);
            }
        }
    }
    let within = clean_files_within(v, level, &all_b, &all_e);
    let fits_within = fits(total_size(&within));
    (within.len() > inputs.len() && fits_within && !busy(ctx, &within)).then_some(within)
}

/// RocksDB's `GetCleanInputsWithinInterval`: the files of a deep level lying inside
/// `[b, e]` (user keys), minus boundary files that share a user key with a file outside.
fn clean_files_within(v: &Version, level: usize, b: &[u8], e: &[u8]) -> Vec<Arc<FileMeta>> {
    if level == 0 {
        return Vec::new();
    }
    let files = v.files(level);
    // Whether files `i - 1` and `i` share a user key (false at either end of the level).
    let shared = |i: usize| {
        let before = i.checked_sub(1).and_then(|p| files.get(p));
        before
            .zip(files.get(i))
            .is_some_and(|(a, b)| a.largest_user_key() == b.smallest_user_key())
    };
    let mut start = files.partition_point(|f| f.smallest_user_key() < b);
    while shared(start) {
        start += 1;
    }
    let rest = files.get(start..).unwrap_or_default();
    let mut end = start + rest.partition_point(|f| f.largest_user_key() <= e);
    while end > start && shared(end) {
        end -= 1;
    }
    files.get(start..end).unwrap_or_default().to_vec()
}

/// RocksDB's `GetGrandparents`: the files of the first level below the output level that
/// overlap the whole compaction.
fn grandparents_of(
    v: &Version,
    output_level: usize,
    inputs: &[Arc<FileMeta>],
    output_inputs: &[Arc<FileMeta>],
) -> Vec<Arc<FileMeta>> {
    let (b, e) = user_range2(inputs, output_inputs);
    (output_level + 1..v.num_levels())
        .map(|level| v.overlapping(level, Some(&b), Some(&e)))
        .find(|files| !files.is_empty())
        .unwrap_or_default()
}

/// RocksDB's `PickIntraL0Compaction` / `FindIntraL0Compaction`: when L0 cannot compact into
/// L1 and holds at least trigger + 2 files, merge the newest L0 files into one, as long as
/// each added file lowers the bytes per removed file, none is busy and the total stays
/// within `max_compaction_bytes`; at least four files.
fn pick_intra_l0(ctx: &PickCtx<'_>, score: f64) -> Option<Compaction> {
    let files = ctx.version.files(0);
    let trigger = ctx.options.level0_file_num_compaction_trigger as usize;
    let (first, rest) = files.split_first()?;
    if files.len() < trigger + 2 || ctx.is_compacting(first) {
        return None;
    }
    let mut bytes = first.size;
    let mut per_removed = u64::MAX;
    let mut limit = 1;
    for file in rest {
        bytes = bytes.saturating_add(file.size);
        let next_per_removed = bytes / limit as u64;
        let stop = ctx.is_compacting(file)
            || next_per_removed > per_removed
            || bytes > ctx.options.max_compaction_bytes();
        if stop {
            break;
        }
        per_removed = next_per_removed;
        limit += 1;
    }
    // Every step sets `per_removed`, so RocksDB's "`per_removed` still MAX" test is implied.
    if limit < MIN_FILES_FOR_INTRA_L0 {
        return None;
    }
    let shape = Shape {
        level: 0,
        output_level: 0,
        inputs: files.iter().take(limit).cloned().collect(),
        output_inputs: Vec::new(),
        grandparents: Vec::new(),
        trivial_move: false,
    };
    Some(finish(
        ctx,
        shape,
        score,
        CompactionReason::L0FileCount,
        None,
    ))
}

/// RocksDB's `Compaction::IsTrivialMove`: one input level, different output level, no
/// overlapping L0 files among the inputs, and no input file whose overlap with the level
/// below the output exceeds `max_compaction_bytes` (such a move would make a very expensive
/// compaction later).
fn is_trivial_move(
    ctx: &PickCtx<'_>,
    level: usize,
    output_level: usize,
    inputs: &[Arc<FileMeta>],
    output_inputs: &[Arc<FileMeta>],
    l0_trivial_move: bool,
) -> bool {
    let v = ctx.version;
    if level == output_level || !output_inputs.is_empty() {
        return false;
    }
    if level == 0 && !l0_trivial_move && !level0_non_overlapping(v) {
        return false;
    }
    if output_level + 1 >= v.num_levels() {
        return true;
    }
    inputs.iter().all(|f| {
        let below = v.deep_overlapping(
            output_level + 1,
            Some(f.smallest_user_key()),
            Some(f.largest_user_key()),
        );
        f.size.saturating_add(total_size(below)) <= ctx.options.max_compaction_bytes()
    })
}

/// RocksDB's `Compaction::IsBottommostLevel`: nothing below the output holds a key of the
/// compaction's range. For outputs to L0 the inputs must include the oldest L0 file and
/// every deeper level must be empty.
fn is_bottommost(v: &Version, shape: &Shape) -> bool {
    let mut deeper = shape.output_level + 1..v.num_levels();
    if shape.output_level == 0 {
        let oldest = v.files(0).last().map(|f| f.number);
        let includes_oldest = shape.inputs.last().map(|f| f.number) == oldest;
        return includes_oldest && deeper.all(|l| v.files(l).is_empty());
    }
    // The grandparents are the first deeper files that overlap (left empty by an L0
    // trivial move, so look again when there are none).
    shape.grandparents.is_empty() && {
        let (b, e) = user_range2(&shape.inputs, &shape.output_inputs);
        deeper.all(|l| !v.has_overlap(l, Some(&b), Some(&e)))
    }
}

/// The round-robin cursor after compacting `inputs` of `level`: the smallest key of the
/// file after the last input, or empty (wrap) if it was the last file.
fn next_cursor(v: &Version, level: usize, inputs: &[Arc<FileMeta>]) -> Vec<u8> {
    let files = v.files(level);
    last_position(files, inputs)
        .and_then(|i| files.get(i + 1))
        .map(|f| f.smallest.clone())
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "pick_tests.rs"]
mod tests;
