//! The deterministic mode's spread outputs (`SimCosts::spread_outputs`): a compaction
//! builds its tables as it starts and writes each at its own instant, as a thread finishes
//! one table after the other. So its outputs take their zones one by one over the job's
//! duration, and each table's placement sees the zones of its own instant.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::blob::BlobOutcome;
use crate::compaction::job::JobStats;
use crate::compaction::Compaction;
use crate::sst::BuiltTable;
use crate::version::FileMeta;
use crate::Result;

use super::compact::{Picked, RunningGuard, Written};
use super::inner::DbInner;
use super::stats::Counters;

/// An output table a failed job leaves behind: written (deleted) or built (dropped).
pub(crate) trait OutputTable: Sized {
    fn discard(inner: &DbInner, tables: Vec<Self>);
}

impl OutputTable for FileMeta {
    fn discard(inner: &DbInner, tables: Vec<Self>) {
        inner.delete_tables(tables.iter().map(|t| t.number));
    }
}

impl OutputTable for BuiltTable {
    fn discard(_: &DbInner, tables: Vec<Self>) {
        tables.into_iter().for_each(BuiltTable::recycle);
    }
}

/// A compaction's tables, built as it started, each waiting for its instant.
pub(crate) struct Spread {
    /// One per subcompaction range, in key order.
    ranges: Vec<SpreadRange>,
    job: JobStats,
    /// Its blob files, written as it was built.
    blobs: BlobOutcome,
}

/// One range's tables: those still to write, in order, each with its instant, and those
/// written.
#[derive(Default)]
struct SpreadRange {
    pending: VecDeque<(u64, BuiltTable)>,
    written: Vec<FileMeta>,
}

impl Spread {
    /// The instant of the next table to write; `None` once all are written.
    pub(crate) fn next_instant(&self) -> Option<u64> {
        self.next_range().map(|(_, t)| t)
    }

    /// The range whose table comes next, with its instant: the earliest, the first range
    /// on a tie.
    fn next_range(&self) -> Option<(usize, u64)> {
        let fronts = self.ranges.iter().enumerate();
        let fronts = fronts.filter_map(|(i, r)| r.pending.front().map(|(t, _)| (i, *t)));
        fronts.min_by_key(|(_, t)| *t)
    }

    /// What the job wrote, once every table is: the tables in key order.
    fn into_written(self) -> Written {
        let tables = self.ranges.into_iter().flat_map(|r| r.written).collect();
        (tables, self.job, self.blobs)
    }
}

impl DbInner {
    /// Builds the tables of `p`, started at `start` and taking `work_ns` beyond a job's
    /// fixed cost, and schedules each: table `k` of a range's `n` at its share of the
    /// range's duration (`SimCosts::table_instant`). On failure `p` is over: its files are
    /// free for other compactions again.
    pub(crate) fn build_spread(&self, p: &mut Picked, start: u64, work_ns: u64) -> Result<()> {
        match self.build_ranges(p, start, work_ns) {
            Ok(spread) => {
                p.spread = Some(spread);
                Ok(())
            }
            Err(e) => {
                drop(RunningGuard::new(self, p.id));
                Err(e)
            }
        }
    }

    fn build_ranges(&self, p: &Picked, start: u64, work_ns: u64) -> Result<Spread> {
        let split = match &p.split {
            Some(split) => split.clone(),
            None => self.plan_split(&p.c),
        };
        if split.ranges() > 1 {
            Counters::add(&self.counters.subcompactions, split.ranges() as u64);
        }
        let mut spread = Spread {
            ranges: Vec::new(),
            job: JobStats::default(),
            blobs: BlobOutcome::default(),
        };
        let costs = &self.options.sim;
        for i in 0..split.ranges() {
            let range = split.range(i);
            let built = self.stage_range(p, i, |stage| {
                let mut tables = Vec::new();
                let job = self.build_tables(p, range, stage, &mut |t| {
                    tables.push(t);
                    Ok(())
                })?;
                Ok((tables, job))
            });
            let (tables, job, blobs) = match built {
                Ok(built) => built,
                Err(e) => {
                    self.abandon_spread(spread);
                    return Err(e);
                }
            };
            let ns = costs.job_ns.saturating_add(split.share(i, work_ns));
            let n = tables.len();
            let at = |k: usize| costs.table_instant(start, ns, k, n);
            let pending = tables.into_iter().enumerate();
            spread.ranges.push(SpreadRange {
                pending: pending.map(|(k, t)| (at(k), t)).collect(),
                written: Vec::new(),
            });
            spread.job.absorb(&job);
            spread.blobs.absorb(blobs);
        }
        Ok(spread)
    }

    /// Writes the next of `p`'s spread tables now. On failure `p` is over, as in
    /// [`Self::build_spread`].
    pub(crate) fn write_spread(&self, p: &mut Picked) -> Result<()> {
        let Some(spread) = p.spread.as_mut() else {
            return Ok(());
        };
        let Err(e) = self.write_next_table(&p.c, spread) else {
            return Ok(());
        };
        if let Some(spread) = p.spread.take() {
            self.abandon_spread(spread);
        }
        drop(RunningGuard::new(self, p.id));
        Err(e)
    }

    /// What `spread` wrote, once the tables still pending are written (the job ends), in
    /// their order; on failure deletes every output.
    pub(crate) fn finish_spread(&self, c: &Compaction, mut spread: Spread) -> Result<Written> {
        while spread.next_instant().is_some() {
            if let Err(e) = self.write_next_table(c, &mut spread) {
                self.abandon_spread(spread);
                return Err(e);
            }
        }
        Ok(spread.into_written())
    }

    fn write_next_table(&self, c: &Compaction, spread: &mut Spread) -> Result<()> {
        let Some((i, _)) = spread.next_range() else {
            return Ok(());
        };
        let Some(range) = spread.ranges.get_mut(i) else {
            return Ok(());
        };
        let Some((_, table)) = range.pending.pop_front() else {
            return Ok(());
        };
        let inputs: Vec<Arc<FileMeta>> = c.input_files().cloned().collect();
        let meta = self.write_output(c.output_level, table, &inputs, &range.written)?;
        range.written.push(meta);
        Ok(())
    }

    /// Deletes what a failed spread job wrote (tables and blob files).
    fn abandon_spread(&self, spread: Spread) {
        let blob_files: Vec<u64> = spread.blobs.added.iter().map(|b| b.number).collect();
        self.delete_blob_files(&blob_files);
        for range in spread.ranges {
            FileMeta::discard(self, range.written);
            BuiltTable::discard(self, range.pending.into_iter().map(|(_, t)| t).collect());
        }
    }
}
