//! A cleaning run: victim after victim until the free-space ratio reaches `gc_stop`, and
//! what happens to each victim's valid data (the engine's compactions first in the
//! `compact` and `compensate` modes, then copies). The entry points that clean on demand
//! live here too. Separate from the victim choice and from the copying, which a run only
//! sequences.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::fs::error::FsResult;
use crate::fs::shared::{Counters, Shared};
use crate::fs::ZoneFs;
use crate::meta::FileKind;

use super::coordination::CallbackGuard;
use super::victim::{Live, Picked};
use super::{
    CleanReport, CleanStop, CleaningMode, CompactionCandidate, CompactionRequester, VictimReport,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RunKind {
    /// Only if free < gc_start; until free ≥ gc_stop.
    Maybe,
    /// Until free ≥ gc_stop.
    Now,
    /// A writer found no zone: at least one victim, then until free ≥ gc_stop.
    Reclaim,
    /// As `Maybe`, with no file being written: idle active zones may be victims too.
    Idle,
}

impl Shared {
    pub(super) fn clean_run(&self, kind: RunKind) -> FsResult<CleanReport> {
        self.check_writable(|| "clean zones".to_string())?;
        let mut report = CleanReport::default();
        let maybe = matches!(kind, RunKind::Maybe | RunKind::Idle);
        if maybe && !self.below(self.opts.gc_start) {
            return Ok(report);
        }
        let Some(_guard) = self.begin_run() else {
            report.stop = CleanStop::Busy;
            return Ok(report);
        };
        if maybe && !self.below(self.opts.gc_start) {
            return Ok(report);
        }
        Counters::add(&self.counters.gc_runs, 1);
        self.sample();
        let result = self.clean_loop(kind, &mut report);
        self.sample();
        result.map(|()| report)
    }

    fn clean_loop(&self, kind: RunKind, report: &mut CleanReport) -> FsResult<()> {
        self.reclaim_dead(&mut self.lock_meta())?;
        let mut visited = BTreeSet::new();
        loop {
            let forced = kind == RunKind::Reclaim && report.victims == 0;
            if !forced && !self.below(self.opts.gc_stop) {
                report.stop = CleanStop::Reached;
                return Ok(());
            }
            let Some(picked) = self.select_victim(&visited) else {
                if kind == RunKind::Idle && self.finish_idle_victim(&visited)? {
                    continue;
                }
                report.stop = CleanStop::NoVictim;
                return Ok(());
            };
            visited.insert(picked.zone);
            let v = self.clean_victim(picked)?;
            report.add(&v);
            if v.no_room {
                report.stop = CleanStop::NoRoom;
                return Ok(());
            }
        }
    }

    fn clean_victim(&self, picked: Picked) -> FsResult<VictimReport> {
        let Picked {
            zone,
            epoch,
            valid,
            mut files,
        } = picked;
        let mut rep = VictimReport {
            zone,
            valid,
            ..Default::default()
        };
        if self.opts.gc_mode != CleaningMode::Copy {
            if let Some(freed) = self.request_compaction(zone, &files) {
                rep.compacted_bytes = freed;
                match self.regather(zone, epoch) {
                    Some(left) => files = left,
                    None => {
                        // Every valid byte went away and the victim was reset meanwhile.
                        rep.cleaned = true;
                        rep.reset = true;
                        self.note_progress();
                        return Ok(rep);
                    }
                }
            }
        }
        if files.is_empty() {
            self.reclaim_dead(&mut self.lock_meta())?;
            rep.cleaned = true;
            rep.reset = self.was_reset(zone, epoch);
            self.note_progress();
            return Ok(rep);
        }
        self.copy_victim(zone, epoch, files, &mut rep)?;
        if rep.cleaned {
            self.note_progress();
        }
        Ok(rep)
    }

    /// Offers the victim's SSTs to the engine; returns the bytes its compactions freed in
    /// the victim, or `None` without a requester (everything is copied then).
    fn request_compaction(&self, zone: u32, files: &[Live]) -> Option<u64> {
        let requester = self.cleaner.requester.get()?;
        let ssts: Vec<&Live> = files.iter().filter(|f| f.kind == FileKind::Sst).collect();
        if ssts.is_empty() {
            return Some(0);
        }
        let candidates: Vec<CompactionCandidate> = ssts
            .iter()
            .map(|f| CompactionCandidate {
                name: f.name.clone(),
                level: f.level,
                size: f.size,
                victim_bytes: f.victim_bytes(),
            })
            .collect();
        let compacted: BTreeSet<String> = {
            let signal = &*self.cleaner.signal;
            signal.update(|st| st.in_callback = true);
            let _guard = CallbackGuard { signal };
            requester
                .request(zone, &candidates, self.opts.gc_mode)
                .into_iter()
                .collect()
        };
        Counters::add(&self.counters.gc_compaction_requests, 1);
        let meta = self.lock_meta();
        let freed = ssts
            .iter()
            .filter(|f| compacted.contains(&f.name) && meta.state.file(f.id).is_none())
            .map(|f| f.victim_bytes())
            .sum();
        Counters::add(&self.counters.gc_compacted_bytes, freed);
        Some(freed)
    }
}

impl ZoneFs {
    /// Cleans if the free-space ratio is below `gc_start`, until it is at or above
    /// `gc_stop` or nothing more can be cleaned.
    pub fn maybe_clean(&self) -> FsResult<CleanReport> {
        self.shared.clean_run(RunKind::Maybe)
    }

    /// [`ZoneFs::maybe_clean`] for when no file is being written (a store about to open):
    /// when no full zone is worth cleaning, an idle active zone that holds dead data is
    /// finished and cleaned too. On a small device the few active zones can hold most of
    /// the dead data, and a full store's open needs room for its own writes (the flushed
    /// WAL, a new manifest) before anything else runs.
    pub fn make_room(&self) -> FsResult<CleanReport> {
        self.shared.clean_run(RunKind::Idle)
    }

    /// Cleans until the free-space ratio is at or above `gc_stop` (whatever `gc_start`
    /// says) or nothing more can be cleaned.
    pub fn clean_now(&self) -> FsResult<CleanReport> {
        self.shared.clean_run(RunKind::Now)
    }

    /// Cleans one victim, whatever the thresholds; `None` if no zone is worth cleaning
    /// (or this thread is the cleaner, or the cleaner is inside the engine's callback).
    pub fn clean_one(&self) -> FsResult<Option<VictimReport>> {
        self.clean_one_excluding(&BTreeSet::new())
    }

    /// [`ZoneFs::clean_one`], never taking a zone of `exclude` as the victim (a caller's
    /// own cleaning run visits each zone once, as the built-in runs do).
    pub fn clean_one_excluding(&self, exclude: &BTreeSet<u32>) -> FsResult<Option<VictimReport>> {
        let sh = &self.shared;
        sh.check_writable(|| "clean a zone".to_string())?;
        let Some(_guard) = sh.begin_run() else {
            return Ok(None);
        };
        Counters::add(&sh.counters.gc_runs, 1);
        sh.reclaim_dead(&mut sh.lock_meta())?;
        let result = match sh.select_victim(exclude) {
            Some(picked) => sh.clean_victim(picked).map(Some),
            None => Ok(None),
        };
        sh.sample();
        result
    }

    /// Installs the engine's compaction callback used by the `compact` and `compensate`
    /// cleaning modes (see [`CompactionRequester`]).
    pub fn set_compaction_requester(&self, requester: Arc<dyn CompactionRequester>) {
        self.shared.cleaner.requester.set(Some(requester));
    }

    /// Removes the compaction callback: `compact` and `compensate` then copy everything.
    pub fn clear_compaction_requester(&self) {
        self.shared.cleaner.requester.set(None);
    }
}
