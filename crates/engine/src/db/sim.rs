//! The deterministic mode: a discrete-event simulation of the threaded mode on a virtual
//! clock.
//!
//! Foreground operations advance the clock by the cost model (`Options::sim`). The
//! `max_background_flushes` flush threads and the `max_background_compactions` compaction
//! threads are virtual: a job is taken (memtables picked, compaction inputs marked) at the
//! instant its thread becomes free and work is there, exactly as a real thread would take
//! it, occupies its thread for the modelled duration, and installs its version edit
//! (deleting its inputs) at the instant it ends. A compaction writes each output table at
//! the instant a thread would have built it (`SimCosts::spread_outputs`, `spread.rs`): table
//! `k` of `n` at `(k + 1) / n` of its duration, the last together with the install, so
//! that its tables take their zones one by one while it runs, as a threaded job's do. A
//! flush writes its one table as it ends. (`SimCosts::output_at_pct` moves these instants
//! earlier; docs/ENGINE.md, "When a job's outputs are written".) Meanwhile writes go on:
//! L0 piles up behind a long L0→L1 compaction, immutable memtables wait for the flush, and
//! stalls stop or slow writes in virtual time by RocksDB's triggers. Events are ordered by
//! their instant, ties broken by a fixed order (ends of flushes, then of compactions, each
//! in the order they started, then the cleaner's, then the writes of flushes and of
//! compactions, a job's tables in their order), and nothing reads a wall clock, so the
//! same operations give the same schedule, bytes and statistics on any machine.
//!
//! With the file layer's `InlineCleaning::OutOfSpace` (what `Db::set_inline_cleaning`
//! sets in this mode), the zone cleaner is a virtual thread too: a writer asking for a zone
//! below `gc_start` free space starts a cleaning run, as it would wake a threaded mode's
//! background cleaner, and the run cleans one victim after the other until `gc_stop`; each
//! victim occupies the thread for its copy's duration and is cleaned when it ends. A writer
//! that finds no zone meanwhile cleans inline at once, where a threaded writer would wait
//! for the cleaner. A flush or compaction whose output found no zone (when it writes)
//! changed nothing: the cleaner runs inline at once and the job is taken again at the
//! same instant, as a threaded job's thread waits for the cleaner and runs it again
//! (`DbInner::job_ended`).

use super::compact::Picked;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use zkv_zonefs::fs::InlineCleaning;

use super::blobs::flush_blobs;
use super::flush::FlushWritten;
use super::inner::{writable, DbInner, Immutable, State, Writer};
use super::stall::Stall;
use super::stats::Counters;
use crate::{Error, Result};

/// Which virtual thread's job ends, or writes its outputs.
#[derive(Clone, Copy, Debug)]
enum Event {
    Flush(usize),
    Compaction(usize),
    Cleaner,
    FlushWrite(usize),
    CompactionWrite(usize),
}

/// A job on a virtual thread: what it does, when it writes its outputs, and when it ends.
struct Job<W> {
    start: u64,
    /// Its outputs are written at this instant, if it ends later (else when it ends).
    write_at: u64,
    finish: u64,
    work: W,
}

/// The simulation's state: the clock and the virtual threads.
#[derive(Default)]
pub(crate) struct Sim {
    /// Virtual nanoseconds since the database opened.
    now: u64,
    /// In the order they started, which is the order they end (see `sim_start`).
    flushes: Vec<Job<(Vec<Immutable>, Option<FlushWritten>)>>,
    /// In the order they started.
    compactions: Vec<Job<Picked>>,
    /// The victim being cleaned (the file layer picks it again when the job ends).
    cleaner: Option<Job<u32>>,
    /// A cleaning run is on: it goes on until the free-space ratio reaches `gc_stop`, no
    /// zone it has not cleaned yet is worth cleaning, or a victim cannot be cleaned.
    cleaning: bool,
    /// The victims of the current run (each zone is cleaned at most once per run, as in
    /// the file layer's own runs).
    visited: BTreeSet<u32>,
}

impl Sim {
    /// The virtual time now.
    pub(crate) fn now(&self) -> u64 {
        self.now
    }

    /// The first event, with its instant: a job's end, or the write of a job's outputs
    /// before its end. On a tie: the ends of flushes, then of compactions, each in the
    /// order they started, then the cleaner's, then the writes of flushes and compactions.
    fn next_event(&self) -> Option<(u64, Event)> {
        let flush = self
            .flushes
            .iter()
            .enumerate()
            .map(|(i, j)| (j.finish, Event::Flush(i)));
        let compactions = self
            .compactions
            .iter()
            .enumerate()
            .map(|(i, j)| (j.finish, Event::Compaction(i)));
        let cleaner = self.cleaner.as_ref().map(|j| (j.finish, Event::Cleaner));
        let flush_writes = self
            .flushes
            .iter()
            .enumerate()
            .filter(|(_, j)| j.work.1.is_none() && j.write_at < j.finish)
            .map(|(i, j)| (j.write_at, Event::FlushWrite(i)));
        let compaction_writes = self
            .compactions
            .iter()
            .enumerate()
            .filter_map(|(i, j)| Some((j.work.write_due(j.write_at)?, j.finish, i)))
            .filter(|(at, finish, _)| at < finish)
            .map(|(at, _, i)| (at, Event::CompactionWrite(i)));
        // `min_by_key` keeps the first of equal keys: the tie order is the chain's order.
        flush
            .into_iter()
            .chain(compactions)
            .chain(cleaner)
            .chain(flush_writes)
            .chain(compaction_writes)
            .min_by_key(|(t, _)| *t)
    }

    /// Whether a job is running.
    fn busy(&self) -> bool {
        !self.flushes.is_empty() || !self.compactions.is_empty()
    }

    /// Ends the cleaning run: the next one starts on the next request.
    fn end_run(&mut self) {
        self.cleaning = false;
        self.visited.clear();
    }
}

impl DbInner {
    /// Starts the jobs the background threads would start now: flushes while memtables
    /// wait and a flush thread is free, compactions while a compaction thread is free and
    /// the picker finds one.
    fn sim_start(&self, sim: &mut Sim) -> Result<()> {
        let flush_threads = self.options.max_background_flushes as usize;
        while sim.flushes.len() < flush_threads {
            let Some(picked) = self.begin_flush()? else {
                break;
            };
            let bytes = picked.iter().map(|p| p.mem.approximate_memory_usage());
            let entries = picked.iter().map(|p| p.mem.entries());
            let blobs = flush_blobs(&self.options, picked.iter().map(|p| &*p.mem));
            let ns = self.options.sim.flush_ns(bytes.sum(), entries.sum(), blobs);
            // A flush installs after the older memtables' flush (RocksDB commits flush
            // results in memtable order): one that would end first waits for it.
            let after = sim.flushes.last().map_or(0, |j| j.finish);
            let end = sim.now.saturating_add(ns);
            sim.flushes.push(Job {
                start: sim.now,
                write_at: self.options.sim.output_instant(sim.now, end),
                finish: end.max(after),
                work: (picked, None),
            });
        }
        let threads = self.options.max_background_compactions as usize;
        while sim.compactions.len() < threads && self.lock_state().compaction_wanted {
            let Some(p) = self.pick_auto()? else {
                break;
            };
            if let Some(job) = self.compaction_job(sim.now, p)? {
                sim.compactions.push(job);
            }
        }
        self.sim_start_cleaner(sim)
    }

    /// The job of compaction `p` starting at `now`: its duration from the cost model, and
    /// with spread outputs its tables built. `None` if building failed and the job is to
    /// be taken again (no room).
    fn compaction_job(&self, now: u64, mut p: Picked) -> Result<Option<Job<Picked>>> {
        let costs = &self.options.sim;
        // Beyond the fixed cost: the work of all its ranges together.
        let (ns, work) = if p.c.trivial_move {
            (costs.job_ns, 0)
        } else {
            let files = || p.c.input_files();
            let whole = costs.compaction_ns(
                files().map(|f| f.size).sum(),
                files().map(|f| f.entries).sum(),
                self.gc_blobs(&p.c, &p.blob_rules),
            );
            let work = whole.saturating_sub(costs.job_ns);
            // Subcompactions run side by side: the job lasts as long as its largest.
            let split = self.plan_split(&p.c);
            let ns = costs.job_ns + split.slowest(work);
            p.split = Some(split);
            (ns, work)
        };
        let finish = now.saturating_add(ns);
        p.span = Some((now, finish));
        if costs.spread_outputs && !p.c.trivial_move {
            if let Err(e) = self.build_spread(&mut p, now, work) {
                self.sim_job_failed(e)?;
                return Ok(None);
            }
        }
        Ok(Some(Job {
            start: now,
            write_at: costs.output_instant(now, finish),
            finish,
            work: p,
        }))
    }

    /// Starts cleaning the next victim if the cleaner is idle and a run is due. As the
    /// threaded mode's background cleaner is woken by a writer asking for a zone below
    /// `gc_start`, a run starts on such a request (`ZoneFs::take_cleaning_request`); it goes
    /// on, one victim after the other and each zone at most once, until `gc_stop` or no
    /// zone is worth cleaning.
    /// Without zones there is no cleaner.
    fn sim_start_cleaner(&self, sim: &mut Sim) -> Result<()> {
        let Some(fs) = self.fs.zoned() else {
            return Ok(());
        };
        if sim.cleaner.is_some() || fs.inline_mode() != InlineCleaning::OutOfSpace {
            return Ok(());
        }
        let opts = fs.options();
        if !sim.cleaning {
            if !fs.take_cleaning_request() || !fs.free_below(opts.gc_start) {
                return Ok(());
            }
            sim.cleaning = true;
        }
        let victim = fs
            .free_below(opts.gc_stop)
            .then(|| fs.pick_victim_excluding(&sim.visited))
            .flatten();
        let Some(zone) = victim else {
            sim.end_run();
            return Ok(());
        };
        let stats = fs
            .zone_stats()
            .map_err(|e| Error::fs("zone report for the cleaner", e))?;
        let valid = stats.iter().find(|z| z.zone == zone).map_or(0, |z| z.valid);
        let finish = sim.now.saturating_add(self.options.sim.clean_ns(valid));
        sim.cleaner = Some(Job {
            start: sim.now,
            write_at: finish,
            finish,
            work: zone,
        });
        Ok(())
    }

    /// Runs the first event if it comes by `until`, at its instant; whether one did.
    fn sim_step(&self, sim: &mut Sim, until: u64) -> Result<bool> {
        let Some((finish, event)) = sim.next_event().filter(|(t, _)| *t <= until) else {
            return Ok(false);
        };
        sim.now = sim.now.max(finish);
        self.virtual_ns.store(sim.now, Ordering::Relaxed);
        let ended = match event {
            Event::Flush(i) => {
                let job = sim.flushes.remove(i);
                let (picked, written) = job.work;
                self.end_flush(&picked, written, Some((job.start, job.finish)))
            }
            Event::FlushWrite(i) => return self.sim_write_flush(sim, i).map(|()| true),
            Event::CompactionWrite(i) => return self.sim_write_compaction(sim, i).map(|()| true),
            Event::Compaction(i) => {
                let result = self.run_picked(sim.compactions.remove(i).work).map(drop);
                self.job_ended(&result);
                result
            }
            Event::Cleaner => {
                sim.cleaner = None;
                self.sim_clean_victim(sim)
            }
        };
        self.sim_outcome(ended).map(|()| true)
    }

    /// What a job's failure does to the simulation (the job saw it: `job_ended`): one
    /// that found no room is taken again at once, after the cleaner's run; any other
    /// failure is the background error.
    fn sim_outcome(&self, ended: Result<()>) -> Result<()> {
        match ended {
            Err(e) if !self.job_retried(&e) => {
                self.set_bg_error(&e);
                Err(e)
            }
            _ => Ok(()),
        }
    }

    /// The flush `i` writes its table now, to install it when it ends.
    fn sim_write_flush(&self, sim: &mut Sim, i: usize) -> Result<()> {
        let Some(job) = sim.flushes.get_mut(i) else {
            return Ok(());
        };
        match self.write_ahead_flush(&job.work.0) {
            Ok(written) => {
                job.work.1 = Some(written);
                Ok(())
            }
            Err(e) => {
                sim.flushes.remove(i);
                self.sim_job_failed(e)
            }
        }
    }

    /// The compaction `i` writes its outputs now (or the next of its spread tables), to
    /// install them when it ends.
    fn sim_write_compaction(&self, sim: &mut Sim, i: usize) -> Result<()> {
        let Some(job) = sim.compactions.get_mut(i) else {
            return Ok(());
        };
        let written = match job.work.spread {
            Some(_) => self.write_spread(&mut job.work),
            None => self.write_ahead(&mut job.work),
        };
        written.or_else(|e| {
            sim.compactions.remove(i);
            self.sim_job_failed(e)
        })
    }

    /// A job failed writing its outputs before it ended: as if it had failed when it ended.
    fn sim_job_failed(&self, e: Error) -> Result<()> {
        let failed = Err(e);
        self.job_ended(&failed);
        self.sim_outcome(failed)
    }

    /// The cleaner's job ends: the file layer cleans its victim now (picking again: the
    /// zones may have changed meanwhile). As in the file layer's own runs, a victim whose
    /// data found no room ends the run.
    fn sim_clean_victim(&self, sim: &mut Sim) -> Result<()> {
        let fs = self.fs.zoned();
        let Some(fs) = fs.filter(|fs| fs.inline_mode() == InlineCleaning::OutOfSpace) else {
            // Cleaning was turned off while the job ran.
            sim.end_run();
            return Ok(());
        };
        let cleaned = fs
            .clean_one_excluding(&sim.visited)
            .map_err(|e| Error::fs("zone cleaning", e))?;
        match cleaned {
            Some(v) if !v.no_room => {
                sim.visited.insert(v.zone);
            }
            _ => sim.end_run(),
        }
        Ok(())
    }

    /// Runs the simulation until the clock reads `until`: every job that ends by then ends
    /// at its instant, and the jobs its end makes possible start at that instant.
    pub(crate) fn sim_advance(&self, sim: &mut Sim, until: u64) -> Result<()> {
        loop {
            self.sim_start(sim)?;
            if !self.sim_step(sim, until)? {
                break;
            }
        }
        sim.now = sim.now.max(until);
        self.virtual_ns.store(sim.now, Ordering::Relaxed);
        Ok(())
    }

    /// Advances the clock by `ns` (a foreground operation's cost).
    pub(crate) fn sim_tick(&self, ns: u64) -> Result<()> {
        let mut sim = self.lock_sim();
        let until = sim.now.saturating_add(ns);
        self.sim_advance(&mut sim, until)
    }

    /// Runs jobs until `done` holds or nothing runs that could change it.
    fn sim_run_until(&self, sim: &mut Sim, done: impl Fn(&State) -> bool) -> Result<()> {
        loop {
            self.sim_start(sim)?;
            if done(&self.lock_state()) || !self.sim_step(sim, u64::MAX)? {
                return Ok(());
            }
        }
    }

    /// Waits in virtual time until no job is queued or running (`wait_for_background`).
    pub(crate) fn sim_wait_idle(&self) -> Result<()> {
        let mut sim = self.lock_sim();
        self.sim_run_until(&mut sim, |_| false)?;
        let st = self.lock_state();
        super::inner::check_bg_error(&st)
    }

    /// Waits in virtual time until the queued memtables are flushed (`flush`).
    pub(crate) fn sim_wait_flushed(&self) -> Result<()> {
        let mut sim = self.lock_sim();
        self.sim_run_until(&mut sim, |st| st.imm.is_empty() && st.flushing == 0)?;
        let st = self.lock_state();
        super::inner::check_bg_error(&st)
    }

    /// The write path's stall in virtual time: a stop lets the clock run to the end of
    /// the next job until the condition clears (or nothing runs that could clear it, when
    /// the write proceeds, as in threaded mode); a delay waits the write's turn at the
    /// delayed write rate. The virtual time spent is stall time.
    pub(crate) fn sim_stall(&self, sim: &mut Sim, w: &mut Writer, bytes: u64) -> Result<()> {
        let start = sim.now;
        let mut stopped = false;
        loop {
            let stall = {
                let st = self.lock_state();
                writable(&st)?;
                w.stall.condition(st.imm.len(), &st.version, &self.options)
            };
            match stall {
                Stall::None => {
                    w.pacing.reset();
                    break;
                }
                Stall::Delay(_) => {
                    let pause = w.pacing.delay(bytes, sim.now);
                    if pause > 0 {
                        Counters::add(&self.counters.delays, 1);
                        let until = sim.now.saturating_add(pause);
                        self.sim_advance(sim, until)?;
                    }
                    break;
                }
                Stall::Stop(_) => {
                    if !stopped {
                        stopped = true;
                        Counters::add(&self.counters.stops, 1);
                    }
                    self.sim_start(sim)?;
                    if !sim.busy() || !self.sim_step(sim, u64::MAX)? {
                        break;
                    }
                }
            }
        }
        Counters::add(&self.counters.stall_ns, sim.now - start);
        Ok(())
    }
}
