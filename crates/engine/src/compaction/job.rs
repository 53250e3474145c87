//! The compaction job: reads merged input entries, drops the ones no reader can see, and
//! writes the rest into output tables cut by size and by grandparent overlap. A flush is the
//! same job over one memtable with no size limit and no grandparents.
//!
//! Which entries survive follows RocksDB's CompactionIterator. The live snapshots split the
//! sequence numbers into stripes: stripe `s_i` holds the sequence numbers in
//! `(s_{i-1}, s_i]`, and the last stripe those above every snapshot. A reader at snapshot
//! `s_i` sees, of each user key, the newest entry with a sequence number `<= s_i`: so of
//! each stripe only its newest entry of a key matters, and the others are dropped. A
//! tombstone can be dropped too when it is in the earliest stripe (no snapshot is older, so
//! no reader needs to see the value it deletes as present) and no level below the output
//! holds the key (dropping it would resurrect an older value there); the older entries of
//! its stripe go with it, being hidden by it. At the bottommost level
//! ([`JobRules::bottommost`]) a tombstone of a later stripe is dropped as well when the
//! input holds no entry of its key in an older stripe: with nothing older anywhere, every
//! reader finds the key absent either way. It stays if such an entry exists, even one that
//! is dropped itself, as RocksDB decides by the input alone.
//!
//! Where outputs are cut follows RocksDB's CompactionOutputs::ShouldStopBefore: before a
//! key once the current output reached its maximum size, or when the key enters or leaves a
//! grandparent file (level output+1) and the current output plus the grandparent bytes it
//! overlaps exceed the limit (a later compaction of this output would otherwise be too
//! big). With [`JobRules::dynamic_file_size`] (RocksDB 7.8's
//! `level_compaction_dynamic_file_size`), a compaction that has grandparents and is not
//! bottommost may grow an output to twice the target size, and cuts it early at a
//! grandparent boundary, so that outputs line up with the files of the next level: when the
//! key passed over a whole grandparent file and the files it entered on the way (that one
//! and the one it lands in, if any) are worth more than an eighth of the target, or once
//! the output reached 50% of the target plus 5% per boundary it crossed (at most 90%). Outputs are cut only between user keys, so that the files of a level stay
//! disjoint by user key.

use std::sync::Arc;

use crate::iter::InternalIterator;
use crate::key::{self, ParsedKey, SeqNo, ValueKind};
use crate::sst::{BuiltTable, TableBuilder, TableOptions};
use crate::version::FileMeta;
use crate::{Error, Result};

/// What a compaction (or flush) job needs to know besides its input.
pub struct JobParams<'a> {
    /// Sequence numbers of the live snapshots, ascending.
    pub snapshots: &'a [SeqNo],
    /// Whether a tombstone of this user key may be dropped: no level below the output level
    /// may hold the key (always true at the bottommost level). A flush answers no: RocksDB
    /// never drops tombstones when it flushes.
    pub drop_tombstone: &'a dyn Fn(&[u8]) -> bool,
    /// Target size of an output (`u64::MAX` for a flush and for outputs to L0): RocksDB's
    /// `target_output_file_size`, what `Compaction::max_output_file_size` holds. An output
    /// is finished once it reaches this size, or twice it under
    /// [`JobRules::dynamic_file_size`].
    pub target_file_size: u64,
    /// Files of the level below the output level that meet the compaction's range, sorted
    /// by key (empty for a flush and for the bottommost level).
    pub grandparents: &'a [Arc<FileMeta>],
    /// Output bytes plus overlapped grandparent bytes above which an output is cut at a
    /// grandparent boundary (RocksDB: `max_compaction_bytes`).
    pub max_grandparent_overlap: u64,
    /// Format of the output tables.
    pub table: TableOptions,
}

/// The rules of a compaction job that [`JobParams`] does not carry. The default (both off)
/// is what [`run_job`] applies: right for a flush, and RocksDB's behaviour with
/// `level_compaction_dynamic_file_size = false` for a non-bottommost compaction. A
/// compaction passes `JobRules { dynamic_file_size: options.level_compaction_dynamic_file_size,
/// bottommost: compaction.bottommost }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobRules {
    /// RocksDB's `level_compaction_dynamic_file_size`: if the job has grandparents and is
    /// not bottommost, outputs may grow to twice the target size and are cut early at
    /// grandparent boundaries (see the module documentation).
    pub dynamic_file_size: bool,
    /// The compaction is bottommost (`Compaction::bottommost`, RocksDB's
    /// `Compaction::bottommost_level`): outputs never grow beyond the target size, and
    /// tombstones of later stripes are dropped when nothing older of their key is in the
    /// input (where `drop_tombstone` allows it).
    pub bottommost: bool,
}

/// Counts of a job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobStats {
    /// Entries read from the input.
    pub input_entries: u64,
    /// Entries written to the outputs.
    pub output_entries: u64,
    /// Entries dropped because a newer entry of the same key hides them from every reader.
    pub dropped_shadowed: u64,
    /// Tombstones dropped because nothing below needs them.
    pub dropped_tombstones: u64,
    /// Output tables emitted.
    pub outputs: u64,
}

impl JobStats {
    /// Adds what another part of the same job (a subcompaction) did.
    pub fn absorb(&mut self, other: &JobStats) {
        self.input_entries += other.input_entries;
        self.output_entries += other.output_entries;
        self.dropped_shadowed += other.dropped_shadowed;
        self.dropped_tombstones += other.dropped_tombstones;
        self.outputs += other.outputs;
    }
}

/// Runs a job: positions `input` at its first entry, reads it to the end, and hands each
/// finished output table to `emit` in key order. An error from the input, a malformed key,
/// or an error from `emit` ends the job with that error. Outputs are cut at the target size
/// (`JobRules::default()`); a compaction that follows RocksDB 7.8 calls [`run_job_with`].
pub fn run_job(
    input: &mut dyn InternalIterator,
    params: &JobParams<'_>,
    emit: &mut dyn FnMut(BuiltTable) -> Result<()>,
) -> Result<JobStats> {
    run_job_with(input, params, &JobRules::default(), emit)
}

/// [`run_job`] under `rules`: dynamic output sizes and the bottommost tombstone rule.
pub fn run_job_with(
    input: &mut dyn InternalIterator,
    params: &JobParams<'_>,
    rules: &JobRules,
    emit: &mut dyn FnMut(BuiltTable) -> Result<()>,
) -> Result<JobStats> {
    run_job_staged(input, params, rules, &mut KeepValues, emit)
}

/// What a job does with the values it reads and keeps, besides writing them: key-value
/// separation writes large values to blob files and blob garbage collection relocates old
/// blobs (both in [`crate::blob::BlobStage`]); without it, values are written as read.
pub trait ValueStage {
    /// Sees every input entry, kept or not (what it references flows out of the inputs).
    fn read(&mut self, kind: ValueKind, user_key: &[u8], value: &[u8]) -> Result<()>;

    /// Sees every entry the job keeps, before it is written: `Some((kind, value))` is
    /// written in its place (same key and sequence number).
    fn write(
        &mut self,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<Option<(ValueKind, Vec<u8>)>>;
}

/// The stage of a job without blob files: every value is written as read.
pub struct KeepValues;

impl ValueStage for KeepValues {
    fn read(&mut self, _: ValueKind, _: &[u8], _: &[u8]) -> Result<()> {
        Ok(())
    }

    fn write(&mut self, _: ValueKind, _: &[u8], _: &[u8]) -> Result<Option<(ValueKind, Vec<u8>)>> {
        Ok(None)
    }
}

/// [`run_job_with`] with `stage` deciding the values written.
pub fn run_job_staged(
    input: &mut dyn InternalIterator,
    params: &JobParams<'_>,
    rules: &JobRules,
    stage: &mut dyn ValueStage,
    emit: &mut dyn FnMut(BuiltTable) -> Result<()>,
) -> Result<JobStats> {
    if !params.snapshots.is_sorted() {
        return Err(Error::InvalidArgument(
            "compaction snapshots must be ascending".into(),
        ));
    }
    let mut job = Job {
        filter: StripeFilter::new(params, rules.bottommost),
        outputs: Outputs::new(params, rules, emit),
        held: None,
        stats: JobStats::default(),
        stage,
    };
    input.seek_to_first()?;
    while input.valid() {
        job.step(input.key(), input.value())?;
        input.next()?;
    }
    job.finish()
}

/// The fate of one input entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Keep,
    DropShadowed,
    DropTombstone,
    /// A bottommost tombstone that stays only if its key has an entry in an older stripe;
    /// the entries after it tell.
    Hold,
}

/// A job under way: the filter, the outputs, and a tombstone waiting for its fate.
struct Job<'p, 'e, 's> {
    filter: StripeFilter<'p>,
    outputs: Outputs<'p, 'e>,
    /// Internal key and value of the tombstone the filter held back.
    held: Option<(Vec<u8>, Vec<u8>)>,
    stats: JobStats,
    stage: &'s mut dyn ValueStage,
}

impl Job<'_, '_, '_> {
    fn step(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.stats.input_entries += 1;
        let parsed = key::parse(ikey)
            .ok_or_else(|| Error::corruption("compaction input", "malformed internal key"))?;
        self.stage.read(parsed.kind, parsed.user_key, value)?;
        let decision = self.filter.decide(&parsed);
        self.settle_held(parsed.user_key, decision)?;
        match decision {
            Decision::Keep => self.keep(&parsed, ikey, value)?,
            Decision::DropShadowed => self.stats.dropped_shadowed += 1,
            Decision::DropTombstone => self.stats.dropped_tombstones += 1,
            Decision::Hold => self.held = Some((ikey.to_vec(), value.to_vec())),
        }
        Ok(())
    }

    /// Writes a kept entry, as the stage says.
    fn keep(&mut self, parsed: &ParsedKey<'_>, ikey: &[u8], value: &[u8]) -> Result<()> {
        match self.stage.write(parsed.kind, parsed.user_key, value)? {
            None => self.outputs.add(parsed.user_key, ikey, value),
            Some((kind, value)) => {
                let ikey = key::internal_key(parsed.user_key, parsed.seq, kind);
                self.outputs.add(parsed.user_key, &ikey, &value)
            }
        }
    }

    /// Decides the held tombstone, if any, given the next entry: an entry of the same key
    /// that it does not hide (so in an older stripe) keeps it; the next user key drops it.
    fn settle_held(&mut self, user_key: &[u8], next: Decision) -> Result<()> {
        let Some((ikey, value)) = self.held.take() else {
            return Ok(());
        };
        let held_key = key::user_key(&ikey);
        if held_key != user_key {
            self.stats.dropped_tombstones += 1;
        } else if next == Decision::DropShadowed {
            self.held = Some((ikey, value));
        } else {
            self.outputs.add(held_key, &ikey, &value)?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<JobStats> {
        if self.held.take().is_some() {
            self.stats.dropped_tombstones += 1;
        }
        self.outputs.finish_current()?;
        let mut stats = self.stats;
        stats.output_entries = self.outputs.entries;
        stats.outputs = self.outputs.emitted;
        Ok(stats)
    }
}

/// Decides, entry by entry in input order, which entries survive (the snapshot-stripe
/// rules of the module documentation).
struct StripeFilter<'p> {
    snapshots: &'p [SeqNo],
    drop_tombstone: &'p dyn Fn(&[u8]) -> bool,
    bottommost: bool,
    user_key: Vec<u8>,
    /// Stripe of the previous entry of `user_key`; `None` before its first entry.
    last_stripe: Option<SeqNo>,
}

impl<'p> StripeFilter<'p> {
    fn new(params: &JobParams<'p>, bottommost: bool) -> Self {
        StripeFilter {
            snapshots: params.snapshots,
            drop_tombstone: params.drop_tombstone,
            bottommost,
            user_key: Vec::new(),
            last_stripe: None,
        }
    }

    /// The earliest snapshot that sees `seq` (`SeqNo::MAX` for "only the latest state").
    fn stripe(&self, seq: SeqNo) -> SeqNo {
        let i = self.snapshots.partition_point(|&s| s < seq);
        self.snapshots.get(i).copied().unwrap_or(SeqNo::MAX)
    }

    fn in_earliest_stripe(&self, seq: SeqNo) -> bool {
        self.snapshots.first().is_none_or(|&s| seq <= s)
    }

    fn decide(&mut self, entry: &ParsedKey<'_>) -> Decision {
        if self.last_stripe.is_none() || self.user_key != entry.user_key {
            self.user_key.clear();
            self.user_key.extend_from_slice(entry.user_key);
            self.last_stripe = None;
        }
        let stripe = self.stripe(entry.seq);
        // The stripe is recorded even for a dropped or held tombstone, so that the entries
        // it hides in its stripe are dropped after it.
        if self.last_stripe.replace(stripe) == Some(stripe) {
            return Decision::DropShadowed;
        }
        if entry.kind != ValueKind::Delete {
            return Decision::Keep;
        }
        let earliest = self.in_earliest_stripe(entry.seq);
        if !(earliest || self.bottommost) || !(self.drop_tombstone)(entry.user_key) {
            Decision::Keep
        } else if earliest {
            Decision::DropTombstone
        } else {
            Decision::Hold
        }
    }
}

/// The output tables being written, and where to cut them.
struct Outputs<'p, 'e> {
    params: &'p JobParams<'p>,
    emit: &'e mut dyn FnMut(BuiltTable) -> Result<()>,
    /// Size at which an output is finished (RocksDB's `max_output_file_size`).
    max_size: u64,
    /// Whether outputs are cut early at grandparent boundaries.
    dynamic: bool,
    builder: Option<TableBuilder>,
    /// User key of the last entry added to an output (meaningless while `entries` is 0).
    last_user_key: Vec<u8>,
    grandparents: GrandparentOverlap<'p>,
    entries: u64,
    emitted: u64,
}

impl<'p, 'e> Outputs<'p, 'e> {
    fn new(
        params: &'p JobParams<'p>,
        rules: &JobRules,
        emit: &'e mut dyn FnMut(BuiltTable) -> Result<()>,
    ) -> Self {
        // RocksDB's Compaction constructor: only a compaction that will be compacted again
        // into its grandparents may trade exact sizes for aligned boundaries.
        let dynamic =
            rules.dynamic_file_size && !rules.bottommost && !params.grandparents.is_empty();
        let target = params.target_file_size;
        Outputs {
            params,
            emit,
            max_size: if dynamic {
                target.saturating_mul(2)
            } else {
                target
            },
            dynamic,
            builder: None,
            last_user_key: Vec::new(),
            grandparents: GrandparentOverlap::new(params.grandparents),
            entries: 0,
            emitted: 0,
        }
    }

    fn add(&mut self, user_key: &[u8], ikey: &[u8], value: &[u8]) -> Result<()> {
        if self.entries == 0 || self.last_user_key != user_key {
            let overlapped_before = self.grandparents.overlapped;
            let crossed = self.grandparents.advance(user_key);
            if self.should_stop_before(crossed, overlapped_before) {
                self.finish_current()?;
                self.grandparents.start_output(user_key);
            }
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(user_key);
        }
        let table = &self.params.table;
        let builder = self
            .builder
            .get_or_insert_with(|| TableBuilder::new(*table));
        builder.add(ikey, value)?;
        self.entries += 1;
        Ok(())
    }

    /// Whether the output should end before a new user key that crossed `crossed`
    /// grandparent boundaries; the output overlapped `overlapped_before` grandparent bytes
    /// before the key.
    fn should_stop_before(&self, crossed: usize, overlapped_before: u64) -> bool {
        let Some(builder) = self.builder.as_ref().filter(|b| !b.is_empty()) else {
            return false;
        };
        let size = builder.estimated_size();
        if size >= self.max_size {
            return true;
        }
        if crossed == 0 {
            return false;
        }
        let gp = &self.grandparents;
        if gp.overlapped.saturating_add(size) > self.params.max_grandparent_overlap {
            return true;
        }
        self.dynamic
            && (self.skips_grandparent_file(crossed, overlapped_before)
                || size >= precut_size(self.params.target_file_size, gp.switched))
    }

    /// RocksDB's skippable-grandparent rule: the key passed over at least one whole
    /// grandparent file (two boundaries if it landed in a gap, three if inside a file), and
    /// the files it entered are worth more than an eighth of the target. Ending the output
    /// before the key keeps a later compaction of the output level from reading them.
    fn skips_grandparent_file(&self, crossed: usize, overlapped_before: u64) -> bool {
        let gp = &self.grandparents;
        let whole_file = if gp.in_gap { 2 } else { 3 };
        let entered = gp.overlapped.saturating_sub(overlapped_before);
        crossed >= whole_file && entered > self.params.target_file_size / 8
    }

    fn finish_current(&mut self) -> Result<()> {
        match self.builder.take() {
            Some(builder) if !builder.is_empty() => {
                let table = builder.finish()?;
                self.emitted += 1;
                (self.emit)(table)
            }
            _ => Ok(()),
        }
    }
}

/// Size from which an output is cut at a grandparent boundary after crossing `switched`
/// boundaries: 50% of the target plus 5% per boundary, at most 90%, in whole hundredths of
/// the target rounded up (RocksDB's formula, including its rounding: a target below 100
/// bytes gives a size above the target).
fn precut_size(target: u64, switched: usize) -> u64 {
    let percent = 50 + (switched as u64).saturating_mul(5).min(40);
    (target.saturating_add(99) / 100).saturating_mul(percent)
}

/// Tracks which grandparent files the current output overlaps, as the output keys advance
/// (RocksDB's grandparent boundary bookkeeping, by user key).
struct GrandparentOverlap<'p> {
    files: &'p [Arc<FileMeta>],
    /// The file the keys are in or before.
    index: usize,
    /// Whether the keys are before `files[index]` (in a gap) rather than inside it.
    in_gap: bool,
    seen_key: bool,
    /// Bytes of the grandparent files the current output overlaps.
    overlapped: u64,
    /// Boundaries crossed since the current output started (not counting those crossed by
    /// its first key).
    switched: usize,
}

impl<'p> GrandparentOverlap<'p> {
    fn new(files: &'p [Arc<FileMeta>]) -> Self {
        GrandparentOverlap {
            files,
            index: 0,
            in_gap: true,
            seen_key: false,
            overlapped: 0,
            switched: 0,
        }
    }

    /// Moves to `user_key` (ascending from call to call); returns how many grandparent file
    /// boundaries (starts and ends) were crossed since the previous key.
    fn advance(&mut self, user_key: &[u8]) -> usize {
        let mut crossed = 0;
        while let Some(file) = self.files.get(self.index) {
            if self.in_gap {
                if user_key < file.smallest_user_key() {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.overlapped += file.size;
                }
                self.in_gap = false;
            } else {
                if self.inside(user_key, self.index) {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                }
                self.in_gap = true;
                self.index += 1;
            }
        }
        if !self.seen_key {
            self.overlapped = self.overlap_of(user_key);
            self.seen_key = true;
        }
        self.switched += crossed;
        crossed
    }

    /// Whether `user_key` is still within file `index`: below its largest key, or equal to
    /// it and not also the start of the next file (then the key belongs to the last one).
    fn inside(&self, user_key: &[u8], index: usize) -> bool {
        let Some(largest) = self.files.get(index).map(|f| f.largest_user_key()) else {
            return false;
        };
        user_key < largest
            || (user_key == largest
                && self
                    .files
                    .get(index + 1)
                    .is_none_or(|next| user_key < next.smallest_user_key()))
    }

    /// A new output starts at `user_key`: it overlaps only the files holding that key, and
    /// has crossed no boundary yet.
    fn start_output(&mut self, user_key: &[u8]) {
        self.overlapped = self.overlap_of(user_key);
        self.switched = 0;
    }

    fn overlap_of(&self, user_key: &[u8]) -> u64 {
        if self.in_gap {
            return 0;
        }
        // Outside a gap `index` is a file of the level.
        let holding = (self.files.get(..=self.index).unwrap_or_default().iter())
            .rev()
            .enumerate()
            .take_while(|(i, f)| *i == 0 || f.largest_user_key() == user_key);
        holding.map(|(_, f)| f.size).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::test_util::{drain, Entries, FailingIter, VecIter};
    use crate::iter::MergingIterator;
    use crate::key::internal_key;
    use crate::source::MemFile;
    use crate::sst::Table;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn table_opts() -> TableOptions {
        TableOptions {
            block_size: 128,
            block_restart_interval: 4,
            bloom_bits_per_key: 10,
            compression: Default::default(),
        }
    }

    fn read_table(built: &BuiltTable) -> Entries {
        let file = MemFile::new("out", built.data.clone());
        let table = Arc::new(Table::open(Arc::new(file)).unwrap());
        let mut it = table.iter();
        it.seek_to_first().unwrap();
        drain(&mut it).unwrap()
    }

    fn params<'a>(
        snapshots: &'a [SeqNo],
        drop_tombstone: &'a dyn Fn(&[u8]) -> bool,
        target_file_size: u64,
        grandparents: &'a [Arc<FileMeta>],
        max_grandparent_overlap: u64,
    ) -> JobParams<'a> {
        JobParams {
            snapshots,
            drop_tombstone,
            target_file_size,
            grandparents,
            max_grandparent_overlap,
            table: table_opts(),
        }
    }

    fn run(input: Entries, params: &JobParams<'_>) -> (JobStats, Vec<BuiltTable>) {
        run_with(input, params, &JobRules::default())
    }

    fn run_with(
        input: Entries,
        params: &JobParams<'_>,
        rules: &JobRules,
    ) -> (JobStats, Vec<BuiltTable>) {
        let mut tables = Vec::new();
        let mut iter = VecIter::new(input);
        let stats = run_job_with(&mut iter, params, rules, &mut |t| {
            tables.push(t);
            Ok(())
        })
        .unwrap();
        (stats, tables)
    }

    /// What a reader at `snapshot` sees: per user key, the newest entry it can see, if a put.
    fn view(entries: &Entries, snapshot: SeqNo) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut sorted = entries.clone();
        sorted.sort_by(|a, b| key::compare(&a.0, &b.0));
        let mut out = BTreeMap::new();
        let mut decided = BTreeSet::new();
        for (k, v) in &sorted {
            let p = key::parse(k).unwrap();
            if p.seq > snapshot || decided.contains(p.user_key) {
                continue;
            }
            decided.insert(p.user_key.to_vec());
            if p.kind == ValueKind::Put {
                out.insert(p.user_key.to_vec(), v.clone());
            }
        }
        out
    }

    fn stripe_of(snapshots: &[SeqNo], seq: SeqNo) -> SeqNo {
        snapshots
            .iter()
            .copied()
            .find(|&s| s >= seq)
            .unwrap_or(SeqNo::MAX)
    }

    /// The entries the stripe rules keep: the newest of each (user key, stripe), minus
    /// tombstones in the earliest stripe that may be dropped and, at the bottommost level,
    /// droppable tombstones whose key has no entry in an older stripe.
    fn expected_output(
        input: &Entries,
        snapshots: &[SeqNo],
        may_drop: &dyn Fn(&[u8]) -> bool,
        bottommost: bool,
    ) -> Entries {
        // (user key, stripe) -> newest entry
        let mut newest = BTreeMap::<(Vec<u8>, SeqNo), (Vec<u8>, Vec<u8>)>::new();
        for (k, v) in input {
            let p = key::parse(k).unwrap();
            let slot = (p.user_key.to_vec(), stripe_of(snapshots, p.seq));
            let newer = newest
                .get(&slot)
                .is_some_and(|(old, _)| key::parse(old).unwrap().seq > p.seq);
            if !newer {
                newest.insert(slot, (k.clone(), v.clone()));
            }
        }
        let earliest = snapshots.first().copied().unwrap_or(SeqNo::MAX);
        let has_older = |uk: &[u8], stripe: SeqNo| {
            newest
                .keys()
                .any(|(k, s)| k.as_slice() == uk && *s < stripe)
        };
        let mut out: Entries = newest
            .iter()
            .filter(|((uk, stripe), (k, _))| {
                let p = key::parse(k).unwrap();
                let droppable = p.kind == ValueKind::Delete && may_drop(uk);
                let drop = p.seq <= earliest || (bottommost && !has_older(uk, *stripe));
                !(droppable && drop)
            })
            .map(|(_, entry)| entry.clone())
            .collect();
        out.sort_by(|a, b| key::compare(&a.0, &b.0));
        out
    }

    /// A random job: a history of writes to a small key space (sequence numbers after the
    /// deeper level's), keys present in a deeper level, snapshots, and how the input is
    /// split into sorted runs.
    #[derive(Debug, Clone)]
    struct Case {
        ops: Vec<(u8, Option<Vec<u8>>, usize)>,
        deeper: BTreeSet<u8>,
        snapshots: Vec<SeqNo>,
    }

    const DEEPER_SEQS: SeqNo = 1000;

    fn case_strategy() -> impl Strategy<Value = Case> {
        case_strategy_over(16)
    }

    /// Cases over `keys` user keys.
    fn case_strategy_over(keys: u8) -> impl Strategy<Value = Case> {
        let op = (
            0u8..keys,
            prop::option::weighted(0.7, prop::collection::vec(any::<u8>(), 0..24)),
            0usize..3,
        );
        (
            prop::collection::vec(op, 0..120),
            prop::collection::btree_set(0u8..keys, 0..6),
            prop::collection::btree_set(DEEPER_SEQS - 1..DEEPER_SEQS + 125, 0..5),
        )
            .prop_map(|(ops, deeper, snapshots)| Case {
                ops,
                deeper,
                snapshots: snapshots.into_iter().collect(),
            })
    }

    fn user(k: u8) -> Vec<u8> {
        vec![b'k', k]
    }

    impl Case {
        fn input_runs(&self) -> Vec<Entries> {
            let mut runs = vec![Vec::new(); 3];
            for (i, (k, v, run)) in self.ops.iter().enumerate() {
                let seq = DEEPER_SEQS + 1 + i as SeqNo;
                let entry = match v {
                    Some(v) => (internal_key(&user(*k), seq, ValueKind::Put), v.clone()),
                    None => (internal_key(&user(*k), seq, ValueKind::Delete), Vec::new()),
                };
                runs[*run].push(entry);
            }
            runs
        }

        fn deeper_entries(&self) -> Entries {
            self.deeper
                .iter()
                .map(|&k| (internal_key(&user(k), 1, ValueKind::Put), b"deep".to_vec()))
                .collect()
        }

        fn may_drop(&self) -> impl Fn(&[u8]) -> bool + '_ {
            |uk: &[u8]| !self.deeper.iter().any(|&k| user(k) == uk)
        }
    }

    fn grandparents_strategy() -> impl Strategy<Value = Vec<Arc<FileMeta>>> {
        prop::collection::btree_set(0u8..18, 0..8).prop_flat_map(|bounds| {
            let bounds: Vec<u8> = bounds.into_iter().collect();
            let pairs: Vec<(u8, u8)> = bounds
                .chunks(2)
                .filter(|c| c.len() == 2)
                .map(|c| (c[0], c[1]))
                .collect();
            let n = pairs.len();
            prop::collection::vec(1u64..400, n).prop_map(move |sizes| {
                pairs
                    .iter()
                    .zip(sizes)
                    .enumerate()
                    .map(|(i, (&(lo, hi), size))| Arc::new(gp_file(i as u64, lo, hi, size)))
                    .collect()
            })
        })
    }

    fn gp_file(number: u64, lo: u8, hi: u8, size: u64) -> FileMeta {
        FileMeta {
            number,
            size,
            smallest: internal_key(&user(lo), 5, ValueKind::Put),
            largest: internal_key(&user(hi), 3, ValueKind::Put),
            smallest_seq: 3,
            largest_seq: 5,
            entries: 2,
            deletions: 0,
            raw_key_size: 0,
            raw_value_size: 0,
            lifetime: None,
            oldest_blob_file: None,
        }
    }

    /// Checks the outputs of a case against the models; returns them read back.
    fn check_case(
        case: &Case,
        target: u64,
        grandparents: &[Arc<FileMeta>],
        max_overlap: u64,
    ) -> Result<Vec<Entries>> {
        check_case_with(
            case,
            target,
            grandparents,
            max_overlap,
            &JobRules::default(),
        )
    }

    /// [`check_case`] under `rules` (through `run_job` for the default rules).
    fn check_case_with(
        case: &Case,
        target: u64,
        grandparents: &[Arc<FileMeta>],
        max_overlap: u64,
        rules: &JobRules,
    ) -> Result<Vec<Entries>> {
        let runs = case.input_runs();
        let input: Entries = runs.concat();
        let may_drop = case.may_drop();
        let p = params(
            &case.snapshots,
            &may_drop,
            target,
            grandparents,
            max_overlap,
        );
        let mut merged = MergingIterator::new(runs.into_iter().map(VecIter::boxed).collect());
        let mut tables = Vec::new();
        let mut emit = |t| {
            tables.push(t);
            Ok(())
        };
        let stats = if *rules == JobRules::default() {
            run_job(&mut merged, &p, &mut emit)?
        } else {
            run_job_with(&mut merged, &p, rules, &mut emit)?
        };
        let outputs: Vec<Entries> = tables.iter().map(read_table).collect();
        let all: Entries = outputs.concat();

        let expected = expected_output(&input, &case.snapshots, &may_drop, rules.bottommost);
        assert_eq!(all, expected);
        let deeper = case.deeper_entries();
        let with_deeper = |e: &Entries| [e.clone(), deeper.clone()].concat();
        for &s in case.snapshots.iter().chain([&SeqNo::MAX]) {
            assert_eq!(
                view(&with_deeper(&all), s),
                view(&with_deeper(&input), s),
                "snapshot {s}"
            );
        }
        // Sorted, non-empty, and disjoint by user key.
        assert!(all
            .windows(2)
            .all(|w| key::compare(&w[0].0, &w[1].0).is_lt()));
        assert!(outputs.iter().all(|o| !o.is_empty()));
        for pair in outputs.windows(2) {
            let last = key::user_key(&pair[0].last().unwrap().0);
            let first = key::user_key(&pair[1][0].0);
            assert!(last < first, "a user key spans two outputs");
        }
        let dropped = stats.dropped_shadowed + stats.dropped_tombstones;
        assert_eq!(stats.input_entries, input.len() as u64);
        assert_eq!(stats.output_entries, all.len() as u64);
        assert_eq!(stats.input_entries, stats.output_entries + dropped);
        assert_eq!(stats.outputs, outputs.len() as u64);
        Ok(outputs)
    }

    /// With no grandparents, an output ends exactly at the first user key boundary where
    /// the builder's estimate reached the target.
    fn check_size_cuts(outputs: &[Entries], target: u64) {
        for (i, out) in outputs.iter().enumerate() {
            let mut builder = TableBuilder::new(table_opts());
            for (k, v) in out {
                let boundary = builder
                    .largest_key()
                    .is_some_and(|last| key::user_key(last) != key::user_key(k));
                if boundary {
                    assert!(builder.estimated_size() < target, "output {i} cut late");
                }
                builder.add(k, v).unwrap();
            }
            if i + 1 < outputs.len() {
                assert!(builder.estimated_size() >= target, "output {i} cut early");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn output_reads_like_input_at_every_snapshot(
            case in case_strategy(),
            target in prop::sample::select(vec![1u64, 200, 400, 800, 3000, u64::MAX]),
        ) {
            let outputs = check_case(&case, target, &[], 0).unwrap();
            check_size_cuts(&outputs, target);
            if target == u64::MAX {
                prop_assert!(outputs.len() <= 1);
            }
        }

        #[test]
        fn grandparent_cuts_keep_the_invariants(
            case in case_strategy(),
            grandparents in grandparents_strategy(),
            target in prop::sample::select(vec![300u64, 1000, u64::MAX]),
            max_overlap in 0u64..1500,
        ) {
            check_case(&case, target, &grandparents, max_overlap).unwrap();
        }

    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn cuts_follow_rocksdb_rules_static_and_dynamic(
            case in case_strategy_over(48),
            grandparents in shared_grandparents_strategy(),
            target in prop::sample::select(vec![300u64, 600, 1200, 2400, u64::MAX]),
            max_overlap in prop::sample::select(vec![0u64, 1000, 3000, 6000, u64::MAX]),
            dynamic_file_size in any::<bool>(),
            bottommost in any::<bool>(),
        ) {
            let rules = JobRules { dynamic_file_size, bottommost };
            let outputs =
                check_case_with(&case, target, &grandparents, max_overlap, &rules).unwrap();
            let all: Entries = outputs.concat();
            let expected = model_outputs(&all, target, &grandparents, max_overlap, &rules);
            prop_assert_eq!(&outputs, &expected);
            check_size_limits(&outputs, target, &grandparents, &rules);
        }
    }

    /// Grandparent levels as RocksDB allows them: sorted, a file may end on the user key the
    /// next one starts with, and single-key files may repeat a key.
    fn shared_grandparents_strategy() -> impl Strategy<Value = Vec<Arc<FileMeta>>> {
        prop::collection::vec((0u8..4, 0u8..5, 1u64..800), 0..14).prop_map(|steps| {
            let mut at = 0u8;
            let mut files = Vec::new();
            for (i, (gap, width, size)) in steps.into_iter().enumerate() {
                let lo = at + gap;
                at = lo + width;
                files.push(Arc::new(gp_file(i as u64, lo, at, size)));
            }
            files
        })
    }

    /// Where `uk` lies among the grandparent files: `2i + 1` inside file `i` (the last one
    /// holding it), `2i` in the gap before file `i`; so two keys are as many boundaries
    /// apart as their positions differ.
    fn gp_position(gps: &[Arc<FileMeta>], uk: &[u8]) -> usize {
        match gps.iter().rposition(|f| f.smallest_user_key() <= uk) {
            None => 0,
            Some(i) if uk <= gps[i].largest_user_key() => 2 * i + 1,
            Some(i) => 2 * i + 2,
        }
    }

    /// Bytes of the grandparent files meeting the user-key range `[lo, hi]`.
    fn gp_bytes(gps: &[Arc<FileMeta>], lo: &[u8], hi: &[u8]) -> u64 {
        gps.iter()
            .filter(|f| f.overlaps(Some(lo), Some(hi)))
            .map(|f| f.size)
            .sum()
    }

    /// RocksDB's pre-cut size, computed wide: `ceil(target / 100)` times 50% plus 5% per
    /// boundary crossed, at most 90%.
    fn model_precut(target: u64, crossed: usize) -> u128 {
        let percent = 50 + (5 * crossed as u128).min(40);
        (target as u128).div_ceil(100) * percent
    }

    /// Whether dynamic output sizes apply: a compaction with grandparents, not bottommost.
    fn dynamic_applies(gps: &[Arc<FileMeta>], rules: &JobRules) -> bool {
        rules.dynamic_file_size && !rules.bottommost && !gps.is_empty()
    }

    fn max_output_size(target: u64, gps: &[Arc<FileMeta>], rules: &JobRules) -> u64 {
        if dynamic_applies(gps, rules) {
            target.saturating_mul(2)
        } else {
            target
        }
    }

    /// The outputs RocksDB's ShouldStopBefore makes of the surviving entries `all`, stated
    /// over key ranges instead of incrementally: before a new user key `k` of an output that
    /// began at user key `first`, after user key `prev`, the output is cut if its size
    /// reached the maximum, or if `k` crossed a grandparent boundary and the output plus the
    /// grandparent bytes of `[first, k]` exceed the overlap limit, or (dynamic) `k` passed
    /// over a whole file and entered more than an eighth of the target, or (dynamic) the
    /// size reached the pre-cut size for the boundaries between `first` and `k`.
    fn model_outputs(
        all: &Entries,
        target: u64,
        gps: &[Arc<FileMeta>],
        max_overlap: u64,
        rules: &JobRules,
    ) -> Vec<Entries> {
        let max = max_output_size(target, gps, rules);
        let dynamic = dynamic_applies(gps, rules);
        let pos = |uk: &[u8]| gp_position(gps, uk);
        let mut outputs: Vec<Entries> = vec![Vec::new()];
        let mut builder = TableBuilder::new(table_opts());
        let mut first: Vec<u8> = Vec::new();
        let mut prev: Option<Vec<u8>> = None;
        for (k, v) in all {
            let uk = key::user_key(k);
            match prev.as_deref() {
                None => first = uk.to_vec(),
                Some(p) if p != uk => {
                    let size = builder.estimated_size();
                    let crossed = pos(uk) - pos(p);
                    let overlap = gp_bytes(gps, &first, uk);
                    let entered = overlap - gp_bytes(gps, &first, p);
                    let whole_file = if pos(uk) % 2 == 0 { 2 } else { 3 };
                    let skips = crossed >= whole_file && entered > target / 8;
                    let precut = size as u128 >= model_precut(target, pos(uk) - pos(&first));
                    let cut = size >= max
                        || (crossed > 0
                            && (overlap.saturating_add(size) > max_overlap
                                || (dynamic && (skips || precut))));
                    if cut {
                        outputs.push(Vec::new());
                        builder = TableBuilder::new(table_opts());
                        first = uk.to_vec();
                    }
                }
                Some(_) => {}
            }
            prev = Some(uk.to_vec());
            builder.add(k, v).unwrap();
            outputs.last_mut().unwrap().push((k.clone(), v.clone()));
        }
        outputs.retain(|o| !o.is_empty());
        outputs
    }

    /// The size promises: an output runs on past a user key boundary only while it is below
    /// its maximum (twice the target when dynamic sizes apply), and with dynamic sizes it
    /// never runs on across a grandparent boundary once it reached 90% of the target.
    fn check_size_limits(
        outputs: &[Entries],
        target: u64,
        gps: &[Arc<FileMeta>],
        rules: &JobRules,
    ) {
        let max = max_output_size(target, gps, rules);
        let dynamic = dynamic_applies(gps, rules);
        for out in outputs {
            let mut builder = TableBuilder::new(table_opts());
            for (k, v) in out {
                let size = builder.estimated_size();
                if let Some(last) = builder.largest_key().map(key::user_key) {
                    let uk = key::user_key(k);
                    if last != uk {
                        assert!(size < max, "output ran past its maximum");
                        let crossed = gp_position(gps, uk) != gp_position(gps, last);
                        if dynamic && crossed {
                            assert!((size as u128) < model_precut(target, 8), "not cut at 90%");
                        }
                    }
                }
                builder.add(k, v).unwrap();
            }
        }
    }

    fn put(k: &[u8], seq: SeqNo, v: &[u8]) -> (Vec<u8>, Vec<u8>) {
        (internal_key(k, seq, ValueKind::Put), v.to_vec())
    }

    fn del(k: &[u8], seq: SeqNo) -> (Vec<u8>, Vec<u8>) {
        (internal_key(k, seq, ValueKind::Delete), Vec::new())
    }

    fn user_keys(table: &BuiltTable) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = read_table(table)
            .iter()
            .map(|(k, _)| key::user_key(k).to_vec())
            .collect();
        keys.dedup();
        keys
    }

    #[test]
    fn tombstone_is_kept_while_a_snapshot_needs_it_or_a_deeper_level_may_hold_the_key() {
        let input = vec![
            del(b"a", 9),
            put(b"a", 5, b"old"),
            del(b"b", 8),
            put(b"b", 2, b"x"),
        ];
        let all = |_: &[u8]| true;
        // A snapshot at 6 sees a=old and b=x; the tombstones above it must stay.
        let (stats, tables) = run(input.clone(), &params(&[6], &all, u64::MAX, &[], 0));
        assert_eq!(read_table(&tables[0]), input);
        assert_eq!(stats.dropped_tombstones, 0);
        // No snapshot: tombstones and what they hide go.
        let (stats, tables) = run(input.clone(), &params(&[], &all, u64::MAX, &[], 0));
        assert!(tables.is_empty());
        assert_eq!((stats.dropped_tombstones, stats.dropped_shadowed), (2, 2));
        // A deeper level may hold "a": its tombstone stays, the put it hides goes.
        let not_a = |k: &[u8]| k != b"a";
        let (_, tables) = run(input, &params(&[], &not_a, u64::MAX, &[], 0));
        assert_eq!(read_table(&tables[0]), vec![del(b"a", 9)]);
    }

    #[test]
    fn cuts_at_grandparent_boundaries_when_overlap_is_too_big() {
        let gps: Vec<Arc<FileMeta>> = [(b'a', b'b'), (b'c', b'd'), (b'e', b'f')]
            .iter()
            .enumerate()
            .map(|(i, &(lo, hi))| {
                let mut f = gp_file(i as u64, 0, 0, 100);
                f.smallest = internal_key(&[lo], 5, ValueKind::Put);
                f.largest = internal_key(&[hi], 3, ValueKind::Put);
                Arc::new(f)
            })
            .collect();
        let input: Entries = (b'a'..=b'f').map(|k| put(&[k], 10, b"v")).collect();
        let none = |_: &[u8]| false;
        // Entering the second file would make the output overlap 200 grandparent bytes.
        let (stats, tables) = run(input.clone(), &params(&[], &none, u64::MAX, &gps, 150));
        let keys: Vec<_> = tables.iter().map(user_keys).collect();
        let expected: Vec<Vec<Vec<u8>>> = vec![
            vec![b"a".to_vec(), b"b".to_vec()],
            vec![b"c".to_vec(), b"d".to_vec()],
            vec![b"e".to_vec(), b"f".to_vec()],
        ];
        assert_eq!(keys, expected);
        assert_eq!(stats.outputs, 3);
        // A generous limit leaves one output.
        let (_, tables) = run(input, &params(&[], &none, u64::MAX, &gps, 1 << 20));
        assert_eq!(tables.len(), 1);
    }

    #[test]
    fn versions_of_one_user_key_stay_in_one_output() {
        let input: Entries = (1..=50).rev().map(|seq| put(b"k", seq, &[7; 40])).collect();
        let snapshots: Vec<SeqNo> = (1..=50).collect();
        let none = |_: &[u8]| false;
        let (stats, tables) = run(input.clone(), &params(&snapshots, &none, 1, &[], 0));
        assert_eq!(tables.len(), 1);
        assert_eq!(read_table(&tables[0]), input);
        assert_eq!(stats.output_entries, 50);
    }

    #[test]
    fn input_error_is_returned() {
        let input: Entries = (0u8..10).map(|k| put(&[k], 1, b"v")).collect();
        let none = |_: &[u8]| false;
        let p = params(&[], &none, u64::MAX, &[], 0);
        let mut failing = FailingIter::boxed(input, 4);
        let mut emitted = 0;
        let err = run_job(&mut failing, &p, &mut |_| {
            emitted += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(err.is_corruption());
        assert_eq!(emitted, 0, "no output is emitted for a failed job");
    }

    #[test]
    fn emit_error_is_returned() {
        let input: Entries = (0u8..10).map(|k| put(&[k], 1, b"v")).collect();
        let none = |_: &[u8]| false;
        let p = params(&[], &none, 1, &[], 0);
        let mut iter = VecIter::new(input);
        let mut calls = 0;
        let err = run_job(&mut iter, &p, &mut |_| {
            calls += 1;
            Err(Error::NotWritable("out of space".into()))
        })
        .unwrap_err();
        assert!(matches!(err, Error::NotWritable(_)));
        assert_eq!(calls, 1);
    }

    #[test]
    fn malformed_key_and_unsorted_snapshots_are_refused() {
        let none = |_: &[u8]| false;
        let mut iter = VecIter::new(vec![(b"bad".to_vec(), Vec::new())]);
        let p = params(&[], &none, u64::MAX, &[], 0);
        let err = run_job(&mut iter, &p, &mut |_| Ok(())).unwrap_err();
        assert!(err.is_corruption());
        let p = params(&[5, 3], &none, u64::MAX, &[], 0);
        let err = run_job(&mut iter, &p, &mut |_| Ok(())).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)));
    }

    const DYNAMIC: JobRules = JobRules {
        dynamic_file_size: true,
        bottommost: false,
    };

    /// Grandparent files over user-key ranges, each of `size` bytes.
    fn gp_files(ranges: &[(&[u8], &[u8])], size: u64) -> Vec<Arc<FileMeta>> {
        ranges
            .iter()
            .enumerate()
            .map(|(i, &(lo, hi))| {
                let mut f = gp_file(i as u64, 0, 0, size);
                f.smallest = internal_key(lo, 2, ValueKind::Put);
                f.largest = internal_key(hi, 1, ValueKind::Put);
                Arc::new(f)
            })
            .collect()
    }

    /// Estimated table size after each of `entries` (sorted), from an empty table.
    fn sizes_after(entries: &Entries) -> Vec<u64> {
        let mut builder = TableBuilder::new(table_opts());
        entries
            .iter()
            .map(|(k, v)| {
                builder.add(k, v).unwrap();
                builder.estimated_size()
            })
            .collect()
    }

    /// The user keys of each output, one letter per key.
    fn letters(tables: &[BuiltTable]) -> Vec<String> {
        tables
            .iter()
            .map(|t| {
                user_keys(t)
                    .iter()
                    .map(|k| String::from_utf8_lossy(k))
                    .collect()
            })
            .collect()
    }

    /// Runs `input` with no snapshots, the grandparents and RocksDB's default
    /// `max_compaction_bytes` (25 × target), statically and dynamically.
    fn run_both(input: &Entries, gps: &[Arc<FileMeta>], target: u64) -> [Vec<String>; 2] {
        let none = |_: &[u8]| false;
        let p = params(&[], &none, target, gps, target.saturating_mul(25));
        let (_, fixed) = run(input.clone(), &p);
        let (_, dynamic) = run_with(input.clone(), &p, &DYNAMIC);
        [letters(&fixed), letters(&dynamic)]
    }

    #[test]
    fn precut_size_is_rocksdbs_formula() {
        assert_eq!(precut_size(100_000, 0), 50_000);
        assert_eq!(precut_size(100_000, 1), 55_000);
        assert_eq!(precut_size(100_000, 7), 85_000);
        assert_eq!(precut_size(100_000, 8), 90_000);
        assert_eq!(precut_size(100_000, 1000), 90_000);
        assert_eq!(precut_size(64 << 20, 2), 671_089 * 60);
        // Whole hundredths rounded up: a tiny target never pre-cuts.
        assert_eq!(precut_size(10, 0), 50);
        assert_eq!(precut_size(u64::MAX, usize::MAX), u64::MAX / 100 * 90);
    }

    /// RocksDB's CutToAlignGrandparentBoundary (compaction_job_test.cc): twelve equal
    /// entries d..o plus s, a target of ten entries, grandparents [a,b] [c,e] [h,j] [k,n]
    /// [q,t]. Dynamically, the first output ends before k, where it enters [k,n] with 7
    /// entries after 4 boundaries (70%); statically after the tenth entry.
    #[test]
    fn rocksdb_case_cut_to_align_grandparent_boundary() {
        let value = vec![b'v'; 2000];
        let mut input: Entries = (0u8..12)
            .map(|i| put(&[b'd' + i], 10 + SeqNo::from(i), &value))
            .collect();
        let equal_entries = sizes_after(&input[..10].to_vec());
        input.push(put(b"e", 3, &value));
        input.push(put(b"s", 4, &value));
        let ranges: [(&[u8], &[u8]); 5] = [
            (b"a", b"b"),
            (b"c", b"e"),
            (b"h", b"j"),
            (b"k", b"n"),
            (b"q", b"t"),
        ];
        let gps = gp_files(&ranges, 2 * equal_entries[0]);
        // Ten entries reach the target, nine do not.
        let target = equal_entries[8] + 1;
        let [fixed, dynamic] = run_both(&input, &gps, target);
        assert_eq!(fixed, ["defghijklm", "nos"]);
        assert_eq!(dynamic, ["defghij", "klmnos"]);
    }

    /// RocksDB's CutToSkipGrandparentFile: outputs a, c, x, z over grandparents [b,d] [h,i]
    /// [v,y]. Going from c to x passes over [h,i] entirely and enters [v,y]; as the bytes of
    /// the two exceed an eighth of the target, the dynamic job cuts before x so that [h,i]
    /// meets no output.
    #[test]
    fn rocksdb_case_cut_to_skip_grandparent_file() {
        let input = vec![
            put(b"a", 5, b"val2"),
            put(b"z", 6, b"val3"),
            put(b"c", 3, b"val"),
            put(b"x", 4, b"val"),
        ];
        let ranges: [(&[u8], &[u8]); 3] = [(b"b", b"d"), (b"h", b"i"), (b"v", b"y")];
        let target = 10_000;
        let [fixed, dynamic] = run_both(&input, &gp_files(&ranges, 626), target);
        assert_eq!(fixed, ["acxz"]);
        assert_eq!(dynamic, ["ac", "xz"]);
        // Files entered worth at most an eighth of the target are not worth a cut.
        let [_, dynamic] = run_both(&input, &gp_files(&ranges, 625), target);
        assert_eq!(dynamic, ["acxz"]);
    }

    /// A key landing in a gap has passed over a whole file after two boundaries (leaving
    /// the gap before it and the file); a key landing inside a file needs three.
    #[test]
    fn skipping_a_file_into_a_gap_takes_two_boundaries() {
        let input = vec![put(b"a", 1, b"val"), put(b"x", 1, b"val")];
        let target = 10_000;
        let [fixed, dynamic] = run_both(&input, &gp_files(&[(b"b", b"d")], 1251), target);
        assert_eq!(fixed, ["ax"]);
        assert_eq!(dynamic, ["a", "x"]);
        // Two boundaries into a file: leaving [b,d] and entering [e,z] skips nothing.
        let input = vec![put(b"c", 1, b"val"), put(b"x", 1, b"val")];
        let gps = gp_files(&[(b"b", b"d"), (b"e", b"z")], 5000);
        let [_, dynamic] = run_both(&input, &gps, target);
        assert_eq!(dynamic, ["cx"]);
    }

    /// RocksDB's CutForMaxCompactionBytes: outputs c, h, j, n over grandparents [b,e]
    /// [h,k] [l,o] with `max_compaction_bytes` = two grandparent files plus one output
    /// entry. Entering [h,k] makes exactly the limit (kept), entering [l,o] exceeds it;
    /// dynamic sizes change nothing.
    #[test]
    fn rocksdb_case_cut_for_max_compaction_bytes() {
        let input = vec![
            put(b"c", 5, b"val2"),
            put(b"n", 6, b"val3"),
            put(b"h", 3, b"val"),
            put(b"j", 4, b"val"),
        ];
        let ranges: [(&[u8], &[u8]); 3] = [(b"b", b"e"), (b"h", b"k"), (b"l", b"o")];
        let gps = gp_files(&ranges, 1000);
        let one_entry = sizes_after(&input[..1].to_vec())[0];
        let none = |_: &[u8]| false;
        let p = params(&[], &none, 1 << 30, &gps, 2000 + one_entry);
        for rules in [JobRules::default(), DYNAMIC] {
            let (_, tables) = run_with(input.clone(), &p, &rules);
            assert_eq!(letters(&tables), ["chj", "n"], "{rules:?}");
        }
    }

    /// RocksDB's CutToAlignGrandparentBoundarySameKey: eight versions of a (all kept by
    /// snapshots) and b, over grandparents [a,a] [a,a] [b,b]. Leaving the last file of a
    /// and entering [b,b] are two boundaries (60%), which eight entries of ten exceed.
    #[test]
    fn rocksdb_case_cut_to_align_with_repeated_grandparent_keys() {
        let value = vec![b'v'; 2000];
        let versions: Entries = (0..10).map(|i| put(b"a", 100 - i, &value)).collect();
        let target = sizes_after(&versions)[8] + 1;
        let mut input = versions[..8].to_vec();
        input.push(put(b"b", 90, b"valb"));
        let ranges: [(&[u8], &[u8]); 3] = [(b"a", b"a"), (b"a", b"a"), (b"b", b"b")];
        let gps = gp_files(&ranges, 4000);
        let snapshots: Vec<SeqNo> = (80..=100).collect();
        let none = |_: &[u8]| false;
        let p = params(&snapshots, &none, target, &gps, 25 * target);
        let (_, fixed) = run(input.clone(), &p);
        assert_eq!(letters(&fixed), ["ab"]);
        let (_, dynamic) = run_with(input, &p, &DYNAMIC);
        assert_eq!(letters(&dynamic), ["a", "b"]);
        assert_eq!(read_table(&dynamic[0]).len(), 8);
    }

    /// One boundary raises the pre-cut size to 55%: ten entries of sixteen are enough to
    /// cut where the keys enter a grandparent file, ten of twenty are not.
    #[test]
    fn one_boundary_cuts_from_55_percent() {
        let value = vec![b'v'; 1000];
        let input: Entries = (0u8..20).map(|i| put(&[b'a' + i], 1, &value)).collect();
        let sizes = sizes_after(&input);
        let gps = gp_files(&[(b"k", b"z")], 100);
        let [_, dynamic] = run_both(&input, &gps, sizes[15]);
        assert_eq!(dynamic, ["abcdefghij", "klmnopqrst"]);
        let [_, dynamic] = run_both(&input, &gps, sizes[19]);
        assert_eq!(dynamic, ["abcdefghijklmnopqrst"]);
    }

    /// The pre-cut size counts boundaries, not keys: k leaves [a,j] and enters [k,z] at
    /// once, two boundaries, so ten entries must reach 60% of the target.
    #[test]
    fn the_precut_size_counts_every_boundary_a_key_crosses() {
        let value = vec![b'v'; 1000];
        let input: Entries = (0u8..20).map(|i| put(&[b'a' + i], 1, &value)).collect();
        let ten = sizes_after(&input)[9];
        let gps = gp_files(&[(b"a", b"j"), (b"k", b"z")], 100);
        let [_, dynamic] = run_both(&input, &gps, ten * 100 / 57);
        assert_eq!(dynamic, ["abcdefghijklmnopqrst"]);
        let [_, dynamic] = run_both(&input, &gps, ten * 100 / 62);
        assert_eq!(dynamic, ["abcdefghij", "klmnopqrst"]);
    }

    /// Without a boundary to cut at, an output grows to twice the target when dynamic sizes
    /// apply, and stops at the target when the compaction is bottommost or has no
    /// grandparents.
    #[test]
    fn outputs_grow_to_twice_the_target_only_when_allowed() {
        let value = vec![b'v'; 500];
        let input: Entries = (0u8..60).map(|i| put(&[b'0' + i], 1, &value)).collect();
        let target = 8000;
        let one_file = gp_files(&[(b"/", b"z")], 100);
        let none = |_: &[u8]| false;
        let bottommost = JobRules {
            dynamic_file_size: true,
            bottommost: true,
        };
        let cases = [
            (&one_file[..], DYNAMIC, 2 * target),
            (&one_file[..], bottommost, target),
            (&[][..], DYNAMIC, target),
            (&one_file[..], JobRules::default(), target),
        ];
        for (gps, rules, limit) in cases {
            let p = params(&[], &none, target, gps, u64::MAX);
            let (_, tables) = run_with(input.clone(), &p, &rules);
            let first = sizes_after(&read_table(&tables[0]));
            let n = first.len();
            assert!(first[n - 2] < limit && first[n - 1] >= limit, "{rules:?}");
            assert!(tables.len() > 1);
        }
    }

    /// RocksDB's bottommost-level tombstone rule (CompactionIterator): a tombstone above
    /// the earliest snapshot goes, with what it hides in its stripe, if its key has no
    /// entry in an older stripe; any such entry keeps it, even one dropped itself.
    #[test]
    fn bottommost_drops_tombstones_with_nothing_older() {
        let input = vec![
            del(b"a", 15),
            del(b"b", 15),
            put(b"b", 12, b"hidden"),
            del(b"c", 15),
            put(b"c", 5, b"old"),
            del(b"e", 15),
            del(b"e", 8),
        ];
        let all = |_: &[u8]| true;
        let p = params(&[10], &all, u64::MAX, &[], 0);
        let bottommost = JobRules {
            dynamic_file_size: true,
            bottommost: true,
        };
        let (stats, tables) = run_with(input.clone(), &p, &bottommost);
        let kept = vec![del(b"c", 15), put(b"c", 5, b"old"), del(b"e", 15)];
        assert_eq!(read_table(&tables[0]), kept);
        assert_eq!((stats.dropped_tombstones, stats.dropped_shadowed), (3, 1));
        // Elsewhere only the earliest stripe's tombstone goes.
        let (stats, tables) = run(input.clone(), &p);
        let mut kept = input.clone();
        kept.retain(|e| e != &put(b"b", 12, b"hidden") && e != &del(b"e", 8));
        assert_eq!(read_table(&tables[0]), kept);
        assert_eq!((stats.dropped_tombstones, stats.dropped_shadowed), (1, 1));
        // A key that a deeper level may hold keeps its tombstones.
        let not_a = |k: &[u8]| k != b"a";
        let p = params(&[10], &not_a, u64::MAX, &[], 0);
        let (_, tables) = run_with(input, &p, &bottommost);
        assert_eq!(read_table(&tables[0])[0], del(b"a", 15));
    }
}
