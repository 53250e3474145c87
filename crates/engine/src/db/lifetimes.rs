//! The database's use of lifetime prediction (`crate::lifetime`): the extras of a new SST's
//! placement hint, the predicted death the file layer sees, and the zone cleaner's
//! compensation question ("which of these files will trigger their own compaction soon?").
//!
//! Predictions are made only when the file layer uses them (`ZoneFs::wants_lifetimes`:
//! Prophet placement, or `compensate` cleaning); the version set then keeps the clock.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use crate::fs::FileSystem;
use zkv_zonefs::placement::PredictedDeath;

use crate::lifetime::{predict, Case, Clock, FileLifetime, PredictCtx};
use crate::options::Options;
use crate::sst::BuiltTable;
use crate::version::{FileMeta, Version};

use super::compact::FsZones;
use super::files::SstExtras;
use super::inner::DbInner;
use super::stats::Counters;

/// The predicted death of a file of `level` as placement sees it.
pub(crate) fn death_of(
    l: &FileLifetime,
    level: usize,
    clock: &Clock,
    options: &Options,
) -> PredictedDeath {
    let short_level = level <= options.prophet_short_threshold as usize;
    PredictedDeath {
        tick: l.deletion_tick(),
        short_lived: short_level || l.case == Case::C2B,
        deaths_per_tick: clock.deaths_per_tick(options.level0_file_num_compaction_trigger),
        sst_size: options.target_file_size_base,
    }
}

/// The prediction for the SST `new` of `ctx`'s level, with its death for placement.
fn predict_with_death(
    ctx: &PredictCtx<'_>,
    level: usize,
    new: &FileMeta,
) -> (FileLifetime, PredictedDeath) {
    let l = predict(ctx, level, new);
    let death = death_of(&l, level, ctx.clock, ctx.options);
    (l, death)
}

/// The prediction for an L0 table written while the database opens (replayed WALs):
/// `None` unless the file layer uses predictions.
pub(crate) fn recovery_prediction(
    fs: &dyn FileSystem,
    options: &Options,
    version: &Version,
    clock: Option<&Clock>,
    built: &BuiltTable,
    outputs: &[FileMeta],
) -> Option<(FileLifetime, PredictedDeath)> {
    let clock = clock?;
    let picker = options.resolve_picker().ok()?;
    let ctx = PredictCtx {
        version,
        options,
        picker: &*picker,
        cursors: &[],
        compacting: &HashSet::new(),
        zones: &FsZones(fs),
        free_ratio: crate::fs::free_ratio(fs),
        clock,
        job_inputs: &[],
        job_outputs: outputs,
    };
    let new = built.props.file_meta(u64::MAX, built.data.len() as u64);
    Some(predict_with_death(&ctx, 0, &new))
}

impl DbInner {
    /// The extras of the hint of SST `number` (the table `built`) of `level`, written by a
    /// job that deletes `inputs` and already wrote `outputs`.
    pub(crate) fn sst_extras(
        &self,
        level: usize,
        built: &BuiltTable,
        number: u64,
        inputs: &[Arc<FileMeta>],
        outputs: &[FileMeta],
    ) -> SstExtras {
        let input_numbers: HashSet<u64> = inputs.iter().map(|f| f.number).collect();
        let neighbors = self.sst_neighbors(level, built, &input_numbers, outputs);
        let new = built.props.file_meta(number, built.data.len() as u64);
        match self.predict_new(level, &new, inputs, outputs) {
            Some((l, death)) => SstExtras {
                neighbors,
                lifetime: Some(l),
                death: Some(death),
            },
            None => SstExtras {
                neighbors,
                ..SstExtras::default()
            },
        }
    }

    /// The prediction for `new`, timed; `None` unless the file layer uses predictions.
    pub(crate) fn predict_new(
        &self,
        level: usize,
        new: &FileMeta,
        inputs: &[Arc<FileMeta>],
        outputs: &[FileMeta],
    ) -> Option<(FileLifetime, PredictedDeath)> {
        if !crate::fs::wants_lifetimes(&self.fs) {
            return None;
        }
        let start = Instant::now();
        let (version, compacting, clock, cursors) = {
            let st = self.lock_state();
            let clock = st.clock.clone()?;
            let version = Arc::clone(&st.version);
            (version, st.compacting.clone(), clock, st.cursors.clone())
        };
        let ctx = PredictCtx {
            version: &version,
            options: &self.options,
            picker: &*self.picker,
            cursors: &cursors,
            compacting: &compacting,
            zones: &FsZones(&self.fs),
            free_ratio: crate::fs::free_ratio(&self.fs),
            clock: &clock,
            job_inputs: inputs,
            job_outputs: outputs,
        };
        let predicted = predict_with_death(&ctx, level, new);
        let c = &self.counters;
        Counters::time(&c.prediction_ns, &c.prediction_calls, start);
        Some(predicted)
    }

    /// The clock and the predictions' accuracy, if the database predicts lifetimes.
    pub(crate) fn lifetime_summary(&self) -> Option<super::stats::LifetimeSummary> {
        let vs = self.lock_versions();
        let clock = vs.clock()?.clone();
        let flush_num = self.options.level0_file_num_compaction_trigger;
        Some(super::stats::LifetimeSummary {
            cycle: clock.cycle(flush_num),
            deaths_per_tick: clock.deaths_per_tick(flush_num),
            ticks_since_open: vs.ticks_since_start()?,
            seconds_since_open: self.now_ns() as f64 / 1e9,
            clock,
            stats: vs.lifetime_stats()?.clone(),
        })
    }

    /// Of the SSTs `numbers`, those Prophet's compensation compacts rather than copies:
    /// predicted to trigger their own compaction (c1), at a tick still ahead.
    pub(crate) fn compensation_picks(&self, numbers: &[u64]) -> Vec<u64> {
        let st = self.lock_state();
        let Some(now) = st.clock.as_ref().map(|c| c.tick) else {
            return Vec::new();
        };
        let ahead: HashSet<u64> = st
            .version
            .all_files()
            .filter(|(_, f)| f.lifetime.is_some_and(|l| l.compact_ahead(now)))
            .map(|(_, f)| f.number)
            .collect();
        numbers
            .iter()
            .copied()
            .filter(|n| ahead.contains(n))
            .collect()
    }
}
