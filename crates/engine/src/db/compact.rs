//! Compaction scheduling and execution: pick (with the configured picker), run (trivial
//! move or merge), install, delete the inputs, record.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use zkv_zonefs::fs::{ZoneFs, ZoneStat};
use zkv_zonefs::meta::ExtentMark;
use zkv_zonefs::placement::{JobKind, WriterJob};

use crate::blob::{BlobOutcome, BlobRules, BlobStage};
use crate::compaction::job::{run_job_staged, JobParams, JobRules, JobStats, ValueStage};
use crate::compaction::subcompaction::{self, Bounds, RangeIter, Split};
use crate::compaction::{
    pick_compaction, pick_requested, Compaction, JobOutput, PickCtx, Picker, ZoneLookup, NO_LAYOUT,
};
use crate::fs::FileSystem;
use crate::iter::level::{LevelIterator, TableOpener};
use crate::iter::{BlobFetch, InternalIterator, MergingIterator};
use crate::sst::BuiltTable;
use crate::version::{FileMeta, Version, VersionEdit};
use crate::Result;

use super::blobs::FsBlobSinks;
use super::files::{delete_file, sst_file_name, write_table};
use super::inner::{writable, DbInner, Running, State};
use super::spread::{OutputTable, Spread};
use super::stats::{self, CompactionInput, CompactionOutput, CompactionRecord, Counters};

/// What a compaction wrote: its tables, its counts, its blob files.
pub(crate) type Written = (Vec<FileMeta>, JobStats, BlobOutcome);

/// A subcompaction whose thread failed.
fn sub_failed(why: &str) -> crate::Error {
    crate::Error::InvalidArgument(format!("a subcompaction thread failed: {why}"))
}

/// The file layer's view of where SSTs live, for zone-aware pickers.
/// Without zones (a directory) it knows none: zone-aware pickers see no zone to favour.
pub(crate) struct FsZones<'a>(pub &'a dyn FileSystem);

impl ZoneLookup for FsZones<'_> {
    fn zones_of(&self, file_number: u64) -> Vec<(u32, u64)> {
        let zoned = self.0.zoned();
        let zones = zoned.map(|z| z.zones_of(&sst_file_name(file_number)));
        zones.and_then(|z| z.ok()).unwrap_or_default()
    }

    fn full_zone_live(&self) -> Vec<(u32, u64)> {
        self.0
            .zoned()
            .map(ZoneFs::full_zone_live_bytes)
            .unwrap_or_default()
    }

    fn mark(&self) -> Option<ExtentMark> {
        Some(self.0.zoned().map_or(NO_LAYOUT, ZoneFs::extent_mark))
    }

    fn moved_since(&self, since: ExtentMark, moved: &mut Vec<u32>) -> bool {
        match self.0.zoned() {
            Some(z) => z.zones_changed_since(since, moved),
            None => since == NO_LAYOUT,
        }
    }
}

/// The configured picker, with each `order` call timed into `picker_ns`/`picker_calls`
/// (the policy cost the MSST'24 paper reports for SICA and ZACA).
struct TimedPicker<'a> {
    picker: &'a dyn Picker,
    counters: &'a Counters,
}

impl Picker for TimedPicker<'_> {
    fn name(&self) -> &'static str {
        self.picker.name()
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        let start = Instant::now();
        let order = self.picker.order(ctx, level);
        let c = self.counters;
        Counters::time(&c.picker_ns, &c.picker_calls, start);
        order
    }

    fn round_robin(&self) -> bool {
        self.picker.round_robin()
    }
}

/// A compaction taken for running: its files are marked as being compacted until it ends.
pub(crate) struct Picked {
    pub c: Compaction,
    /// The version it was picked from.
    pub version: Arc<Version>,
    pub id: u64,
    pub requested: bool,
    /// Deterministic mode: when it starts and ends on the virtual clock.
    pub span: Option<(u64, u64)>,
    /// Its subcompactions' key ranges, if already planned (the simulation plans them
    /// when the job starts, for its duration).
    pub split: Option<Split>,
    /// What it does with blobs, fixed when it is picked (as RocksDB fixes a compaction's
    /// blob GC cutoff from its input version): every range relocates under the same
    /// cutoff, the one the simulation's duration and the force threshold looked at.
    pub blob_rules: BlobRules,
    /// Deterministic mode: the outputs, written before the job ends (`write_ahead`).
    pub written: Option<Written>,
    /// Deterministic mode with spread outputs: its tables, built, each written at its
    /// instant (`spread.rs`), installed when the job ends.
    pub spread: Option<Spread>,
}

impl Picked {
    /// When it writes outputs next before it ends, `write_at` being its instant for all
    /// of them (unless a trivial move, or written already): the next table's instant if
    /// they are spread.
    pub(crate) fn write_due(&self, write_at: u64) -> Option<u64> {
        match &self.spread {
            Some(spread) => spread.next_instant(),
            None => (!self.c.trivial_move && self.written.is_none()).then_some(write_at),
        }
    }
}

/// Unmarks a compaction's files however it ends.
pub(crate) struct RunningGuard<'a> {
    inner: &'a DbInner,
    id: u64,
}

impl<'a> RunningGuard<'a> {
    pub(crate) fn new(inner: &'a DbInner, id: u64) -> Self {
        RunningGuard { inner, id }
    }
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        let mut st = self.inner.lock_state();
        if let Some(i) = st.running.iter().position(|r| r.id == self.id) {
            let r = st.running.swap_remove(i);
            for n in r.files {
                st.compacting.remove(&n);
            }
        }
        // Files it freed may let a compaction run that was refused while it ran.
        st.compaction_wanted = true;
        drop(st);
        self.inner.notify();
    }
}

/// A virtual span's length in microseconds (what the statistics book as a job's time).
pub(crate) fn span_micros((start, end): (u64, u64)) -> u64 {
    end.saturating_sub(start) / 1000
}

/// Whether `c`, over user keys `range`, would share a file with, or write into the key
/// range of, a running compaction (RocksDB refuses such picks: two compactions must never
/// produce overlapping files in one level).
fn conflicts(st: &State, c: &Compaction, range: &(Vec<u8>, Vec<u8>)) -> bool {
    let (lo, hi) = range;
    let shares = c.input_files().any(|f| st.compacting.contains(&f.number));
    shares
        || st
            .running
            .iter()
            .any(|r| r.output_level == c.output_level && r.smallest <= *hi && *lo <= r.largest)
}

impl DbInner {
    /// Picks a compaction with `choose` under the version-set lock and marks its files.
    /// `None` (and no more wanted, for automatic picks) if nothing can run.
    ///
    /// While this thread holds the version-set lock, no version is installed and no other
    /// pick marks files (both need that lock); files only leave `compacting`, which makes a
    /// pick from the snapshot conservative at worst. So `choose` runs on a snapshot without
    /// the state lock: zone-aware pickers ask the file layer, whose metadata lock may be
    /// held across metadata I/O, and readers must not wait for that.
    pub(crate) fn pick_with(
        &self,
        requested: bool,
        choose: impl FnOnce(&PickCtx<'_>) -> Option<Compaction>,
    ) -> Result<Option<Picked>> {
        let vs = self.lock_versions();
        let cursors = vs.compact_cursors().to_vec();
        let (version, compacting) = {
            let st = self.lock_state();
            writable(&st)?;
            (Arc::clone(&st.version), st.compacting.clone())
        };
        let zones = FsZones(&self.fs);
        let picked = {
            let ctx = PickCtx {
                version: &version,
                options: &self.options,
                compacting: &compacting,
                zones: &zones,
                free_ratio: crate::fs::free_ratio(&self.fs),
                cursors: &cursors,
                blob_gc_files: self.blob_gc_files(&version),
            };
            choose(&ctx)
        };
        // Before the state lock: the zone cutoff asks the file layer.
        let blob_rules = picked
            .as_ref()
            .map(|c| self.blob_rules(c.output_level, &version))
            .unwrap_or_default();
        let mut st = self.lock_state();
        writable(&st)?;
        debug_assert!(Arc::ptr_eq(&st.version, &version), "version changed");
        let picked = picked.map(|c| (c.user_range(), c));
        let Some(((smallest, largest), c)) = picked.filter(|(range, c)| !conflicts(&st, c, range))
        else {
            // A compaction that ended during the pick freed files the snapshot still showed
            // busy (the set only shrinks meanwhile): its end asked for another look, which
            // must not be lost.
            let freed = st.compacting.len() != compacting.len();
            if !requested && !freed {
                // Waiters for idleness may be waiting for exactly this.
                st.compaction_wanted = false;
                drop(st);
                self.notify();
            }
            return Ok(None);
        };
        let id = self.compaction_ids.fetch_add(1, Ordering::Relaxed) + 1;
        let files: Vec<u64> = c.input_files().map(|f| f.number).collect();
        st.compacting.extend(files.iter().copied());
        st.running.push(Running {
            id,
            output_level: c.output_level,
            smallest,
            largest,
            files,
        });
        Ok(Some(Picked {
            c,
            version,
            id,
            requested,
            span: None,
            split: None,
            blob_rules,
            written: None,
            spread: None,
        }))
    }

    /// Picks the compaction the scores and the picker call for, timing the picker.
    pub(crate) fn pick_auto(&self) -> Result<Option<Picked>> {
        let timed = TimedPicker {
            picker: &*self.picker,
            counters: &self.counters,
        };
        self.pick_with(false, |ctx| pick_compaction(ctx, &timed))
    }

    /// Picks, runs and installs one automatic compaction. `Ok(false)` if none is needed.
    /// A failure is a background error, unless there was no room for an output and the
    /// job may wait for the cleaner and run again (see [`DbInner::job_ended`]).
    pub(crate) fn compact_once(&self) -> Result<bool> {
        let Some(p) = self.pick_auto()? else {
            return Ok(false);
        };
        let result = self.run_picked(p);
        self.job_ended(&result);
        result.map(|_| true)
    }

    /// Runs a picked compaction; returns the numbers of the files it deleted.
    pub(crate) fn run_picked(&self, mut p: Picked) -> Result<Vec<u64>> {
        let _guard = RunningGuard::new(self, p.id);
        if p.c.trivial_move {
            self.trivial_move(&p)?;
            return Ok(Vec::new());
        }
        self.merge(&mut p)
    }

    fn trivial_move(&self, p: &Picked) -> Result<()> {
        let c = &p.c;
        let mut edit = VersionEdit::new();
        for f in &c.inputs {
            edit.delete_file(c.level as u32, f.number);
            edit.add_file(c.output_level as u32, FileMeta::clone(f));
        }
        self.add_cursor(&mut edit, c);
        self.apply_edit(edit, |_| {})?;
        let bytes = c.input_bytes();
        Counters::add(&self.counters.trivial_moves, 1);
        Counters::add(&self.counters.trivial_move_bytes, bytes);
        self.book(|s| s.add_trivial_move(c));
        Ok(())
    }

    /// Records where round-robin picking continues.
    fn add_cursor(&self, edit: &mut VersionEdit, c: &Compaction) {
        if let Some(cursor) = c.compact_cursor.clone() {
            edit.compact_cursors.push((c.level as u32, cursor));
        }
    }

    fn input_iterator(&self, c: &Compaction) -> Result<MergingIterator> {
        let opener: Arc<dyn TableOpener> = Arc::clone(&self.tables) as Arc<dyn TableOpener>;
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        if c.level == 0 {
            for f in &c.inputs {
                children.push(Box::new(self.tables.get(f)?.compaction_iter()));
            }
        } else {
            let files = c.inputs.clone();
            children.push(Box::new(LevelIterator::for_compaction(
                files,
                Arc::clone(&opener),
            )));
        }
        if !c.output_inputs.is_empty() {
            let files = c.output_inputs.clone();
            children.push(Box::new(LevelIterator::for_compaction(files, opener)));
        }
        Ok(MergingIterator::new(children))
    }

    /// The key ranges `c` runs in: one, unless it splits into subcompactions. A table
    /// whose index cannot be read offers one anchor (its largest key and size), as in
    /// RocksDB: the split is a plan, and the job reports the damage when it reads the table.
    pub(crate) fn plan_split(&self, c: &Compaction) -> Split {
        let max = self.options.max_subcompactions;
        if !subcompaction::splits(c, max) {
            return Split {
                bounds: Vec::new(),
                bytes: vec![c.input_bytes()],
            };
        }
        let anchors = c.input_files().flat_map(|f| match self.tables.get(f) {
            Ok(t) => t.anchors(subcompaction::ANCHORS_PER_TABLE),
            Err(_) => vec![subcompaction::Anchor {
                user_key: f.largest_user_key().to_vec(),
                bytes: f.size,
            }],
        });
        let min_range = self.options.target_file_size(c.output_level);
        subcompaction::split(anchors.collect(), max as usize, min_range)
    }

    /// Writes the outputs of `p` (tables and blob files), each subcompaction's range on
    /// its own thread (one after the other in deterministic mode, whose virtual clock
    /// already ran them side by side); on failure deletes every output written.
    fn write_outputs(&self, p: &Picked) -> Result<Written> {
        let split = match &p.split {
            Some(split) => split.clone(),
            None => self.plan_split(&p.c),
        };
        if split.ranges() == 1 {
            return self.write_range(p, 0, (None, None));
        }
        Counters::add(&self.counters.subcompactions, split.ranges() as u64);
        let parts: Vec<Result<Written>> = if self.deterministic() {
            (0..split.ranges())
                .map(|i| self.write_range(p, i, split.range(i)))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let spawned: Vec<_> = (1..split.ranges())
                    .map(|i| {
                        let range = split.range(i);
                        std::thread::Builder::new()
                            .name(format!("zkv-subcompact-{i}"))
                            .spawn_scoped(scope, move || self.write_range(p, i, range))
                    })
                    .collect();
                let first = self.write_range(p, 0, split.range(0));
                let others = spawned.into_iter().map(|h| match h {
                    Ok(h) => h.join().unwrap_or_else(|_| Err(sub_failed("panicked"))),
                    Err(e) => Err(sub_failed(&e.to_string())),
                });
                std::iter::once(first).chain(others).collect()
            })
        };
        self.combine_parts(parts)
    }

    /// One job's result from its subcompactions': all of them, or, if one failed, its
    /// error after deleting what the others wrote.
    fn combine_parts(&self, parts: Vec<Result<Written>>) -> Result<Written> {
        let mut all: Written = (Vec::new(), JobStats::default(), BlobOutcome::default());
        let mut error = None;
        for part in parts {
            match part {
                Ok((outputs, job, blobs)) => {
                    all.0.extend(outputs);
                    all.1.absorb(&job);
                    all.2.absorb(blobs);
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        let Some(e) = error else {
            return Ok(all);
        };
        let blob_files: Vec<u64> = all.2.added.iter().map(|b| b.number).collect();
        self.delete_blob_files(&blob_files);
        self.delete_tables(all.0.iter().map(|o| o.number));
        Err(e)
    }

    /// Writes the outputs of `p`'s user keys in `range` (tables and blob files); on
    /// failure deletes the ones already written.
    fn write_range(&self, p: &Picked, part: usize, range: Bounds<'_>) -> Result<Written> {
        self.stage_range(p, part, |stage| self.write_tables(p, range, stage))
    }

    /// Runs `tables` (the tables of `p`'s subcompaction `part`) with the blob files their
    /// values go to, and returns both; on failure deletes the blob files, and the tables
    /// `tables` returned.
    pub(crate) fn stage_range<T: OutputTable>(
        &self,
        p: &Picked,
        part: usize,
        tables: impl FnOnce(&mut dyn ValueStage) -> Result<(Vec<T>, JobStats)>,
    ) -> Result<(Vec<T>, JobStats, BlobOutcome)> {
        let rules = p.blob_rules;
        // The blobs a compaction relocates are those its inputs reference, and their files
        // stay in the version while the inputs do: the cache finds them. (Not every blob
        // file of the picked version: another job may have dropped one since.)
        let fetch = rules.gc_cutoff.map(|_| &*self.blobs as &dyn BlobFetch);
        let sinks = FsBlobSinks {
            inner: self,
            level: p.c.output_level,
            job: WriterJob {
                kind: JobKind::Compaction,
                id: p.id,
                part: u32::try_from(part).unwrap_or(u32::MAX),
            },
        };
        let mut stage = BlobStage::new(rules, fetch, sinks);
        let (outputs, job) = match tables(&mut stage) {
            Ok(written) => written,
            Err(e) => {
                self.delete_blob_files(&stage.abandon());
                return Err(e);
            }
        };
        let created = stage.created();
        match stage.finish() {
            Ok(blobs) => Ok((outputs, job, blobs)),
            Err(e) => {
                self.delete_blob_files(&created);
                T::discard(self, outputs);
                Err(e)
            }
        }
    }

    /// Writes the tables of `c`'s job, values through `stage`; on failure deletes the
    /// tables already written.
    fn write_tables(
        &self,
        p: &Picked,
        range: Bounds<'_>,
        stage: &mut dyn ValueStage,
    ) -> Result<(Vec<FileMeta>, JobStats)> {
        let c = &p.c;
        let inputs: Vec<Arc<FileMeta>> = c.input_files().cloned().collect();
        let mut outputs = Vec::new();
        let result = self.build_tables(p, range, stage, &mut |table| {
            let meta = self.write_output(c.output_level, table, &inputs, &outputs)?;
            outputs.push(meta);
            Ok(())
        });
        match result {
            Ok(job) => Ok((outputs, job)),
            Err(e) => {
                FileMeta::discard(self, outputs);
                Err(e)
            }
        }
    }

    /// Writes `table`, an output of `level` of a job deleting `inputs` that wrote
    /// `outputs` before it, as a new SST with its placement hint.
    pub(crate) fn write_output(
        &self,
        level: usize,
        table: BuiltTable,
        inputs: &[Arc<FileMeta>],
        outputs: &[FileMeta],
    ) -> Result<FileMeta> {
        let number = self.new_file_number();
        let extras = self.sst_extras(level, &table, number, inputs, outputs);
        write_table(&self.fs, number, level, table, extras)
    }

    /// Builds the tables of `c`'s job over `range`, values through `stage`, handing each
    /// to `on_table` as it is complete.
    pub(crate) fn build_tables(
        &self,
        p: &Picked,
        range: Bounds<'_>,
        stage: &mut dyn ValueStage,
        on_table: &mut dyn FnMut(BuiltTable) -> Result<()>,
    ) -> Result<JobStats> {
        let c = &p.c;
        let mut all = self.input_iterator(c)?;
        let mut input = RangeIter::new(&mut all, range);
        let snapshots = self.snapshots.list();
        let version = &p.version;
        let drop_tombstone = |user_key: &[u8]| !c.key_may_exist_beyond_output(version, user_key);
        let params = JobParams {
            snapshots: &snapshots,
            drop_tombstone: &drop_tombstone,
            target_file_size: c.max_output_file_size,
            grandparents: &c.grandparents,
            max_grandparent_overlap: self.options.max_compaction_bytes(),
            table: self.table_options,
        };
        // RocksDB 7.8's output sizing and bottommost tombstone rule.
        let rules = JobRules {
            dynamic_file_size: self.options.level_compaction_dynamic_file_size,
            bottommost: c.bottommost,
        };
        run_job_staged(&mut input, &params, &rules, stage, on_table)
    }

    /// Writes the outputs of `p` now, to be installed when the job ends (`run_picked`):
    /// the simulation's jobs may write before they end (`SimCosts::output_at_pct`, see
    /// `sim.rs`). On failure `p` is over: its files are free for other compactions again.
    pub(crate) fn write_ahead(&self, p: &mut Picked) -> Result<()> {
        let written = self
            .write_outputs(p)
            .inspect_err(|_| drop(RunningGuard::new(self, p.id)))?;
        p.written = Some(written);
        Ok(())
    }

    fn merge(&self, p: &mut Picked) -> Result<Vec<u64>> {
        let start = std::time::Instant::now();
        let (outputs, job, blobs) = match (p.written.take(), p.spread.take()) {
            (Some(written), _) => written,
            (None, Some(spread)) => self.finish_spread(&p.c, spread)?,
            (None, None) => self.write_outputs(p)?,
        };
        let c = &p.c;
        let mut edit = VersionEdit::new();
        self.count_blob_files(&blobs);
        edit.blob_files = blobs.added;
        edit.blob_garbage = blobs.garbage;
        for f in &c.inputs {
            edit.delete_file(c.level as u32, f.number);
        }
        for f in &c.output_inputs {
            edit.delete_file(c.output_level as u32, f.number);
        }
        for o in &outputs {
            edit.add_file(c.output_level as u32, o.clone());
        }
        self.add_cursor(&mut edit, c);
        self.apply_edit(edit, |_| {})?;
        let inputs = self.describe_inputs(c);
        let before = self.zone_stats();
        let mut deleted = Vec::new();
        for f in c.input_files() {
            // Deleted first: the cache then never takes the table back in (see `get`).
            delete_file(&self.fs, &sst_file_name(f.number))?;
            self.tables.evict(f.number);
            deleted.push(f.number);
        }
        let after = self.zone_stats();
        let out = JobOutput {
            bytes_written: outputs.iter().map(|o| o.size).sum(),
            files_written: outputs.len() as u64,
            records_in: job.input_entries,
            records_dropped: job.input_entries.saturating_sub(job.output_entries),
            micros: p.span.map_or_else(|| self.job_micros(start), span_micros),
        };
        Counters::add(&self.counters.compaction_micros, out.micros);
        self.book(|s| s.add_compaction(c, &out));
        self.record(p, inputs, &outputs, &before, &after);
        Ok(deleted)
    }

    fn zone_stats(&self) -> Vec<ZoneStat> {
        let stats = self.fs.zoned().map(ZoneFs::zone_stats);
        stats.and_then(|s| s.ok()).unwrap_or_default()
    }

    /// The inputs of `c` with the zones holding them now (before they are deleted).
    fn describe_inputs(&self, c: &Compaction) -> Vec<CompactionInput> {
        let level_files = c
            .inputs
            .iter()
            .map(|f| (c.level, f))
            .chain(c.output_inputs.iter().map(|f| (c.output_level, f)));
        level_files
            .map(|(level, f)| CompactionInput {
                number: f.number,
                level,
                size: f.size,
                zones: FsZones(&self.fs).zones_of(f.number),
            })
            .collect()
    }

    fn record(
        &self,
        p: &Picked,
        inputs: Vec<CompactionInput>,
        outputs: &[FileMeta],
        before: &[ZoneStat],
        after: &[ZoneStat],
    ) {
        let c = &p.c;
        let zone_bytes = stats::zone_bytes(&inputs);
        let find = |zs: &[ZoneStat], z: u32| zs.iter().find(|s| s.zone == z).cloned();
        let invalid_after = |z: u32| match (find(before, z), find(after, z)) {
            // Reset by the deletion: everything it held was invalid at that moment.
            (Some(b), Some(a)) if a.written < b.written => b.written,
            (_, Some(a)) => a.invalid,
            _ => 0,
        };
        let record = CompactionRecord {
            id: p.id,
            level: c.level,
            output_level: c.output_level,
            requested: p.requested,
            reason: c.reason.name(),
            s_same: stats::s_same(&zone_bytes),
            s_inval: stats::s_inval(&zone_bytes, self.zone_capacity, invalid_after),
            virtual_span: p.span,
            zone_bytes,
            inputs,
            outputs: outputs
                .iter()
                .map(|o| CompactionOutput {
                    number: o.number,
                    size: o.size,
                })
                .collect(),
        };
        let (read, written) = (record.input_bytes(), record.output_bytes());
        Counters::add(&self.counters.compactions, 1);
        Counters::add(&self.counters.compaction_read_bytes, read);
        Counters::add(&self.counters.compaction_write_bytes, written);
        if p.requested {
            Counters::add(&self.counters.requested_compactions, 1);
        }
        self.lock_records().push(record);
    }

    /// The cleaner's request: compact the given SSTs of one level into the next now.
    /// Returns the numbers of the requested files that are gone afterwards. Errors before
    /// the version edit leave the database as it was (the outputs are deleted) and are not
    /// background errors: the cleaner then copies the files instead.
    pub(crate) fn compact_requested(&self, numbers: &[u64]) -> Vec<u64> {
        let wanted: HashSet<u64> = numbers.iter().copied().collect();
        let version = Arc::clone(&self.lock_state().version);
        let mut by_level: std::collections::BTreeMap<usize, Vec<u64>> = Default::default();
        for &n in numbers {
            if let Some(level) = version.level_of(n) {
                by_level.entry(level).or_default().push(n);
            }
        }
        let mut done = Vec::new();
        for (level, files) in by_level {
            // Its outputs must fit beside its inputs without the cleaner's reserve: the
            // cleaner copies what is left, and needs the reserve for that.
            // (Only the zone cleaner requests compactions: there are zones.)
            let free = self.fs.zoned().map_or(u64::MAX, ZoneFs::free_bytes);
            let picked = self.pick_with(true, |ctx| {
                pick_requested(ctx, level, &files).filter(|c| c.input_bytes() <= free)
            });
            // Never a trivial move (see `pick_requested`): a move would leave the file,
            // and its bytes in the victim, where it is.
            let Ok(Some(p)) = picked else {
                continue;
            };
            match self.run_picked(p) {
                Ok(deleted) => done.extend(deleted.into_iter().filter(|n| wanted.contains(n))),
                Err(_) => break,
            }
        }
        done
    }
}
