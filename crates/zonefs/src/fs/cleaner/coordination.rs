//! Coordination between writers and the cleaner: one cleaning run at a time, the run
//! state that runs, writers and the background thread share, and what a writer does about
//! cleaning when it asks for a zone or finds none (clean inline, wake the background
//! thread, or wait for it). Separate from the runs themselves: this is about who cleans
//! and when, not what a run does.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::fs::alloc::elapsed_ns;
use crate::fs::error::FsResult;
use crate::fs::shared::{Counters, Shared};
use crate::fs::ZoneFs;

use super::run::RunKind;
use super::InlineCleaning;

/// How long a writer that found no zone waits for the cleaner to come back from the
/// engine's compaction callback before it gives up.
const CALLBACK_WAIT: Duration = Duration::from_secs(2);

/// Coordination of cleaning runs, shared with the background thread.
#[derive(Debug, Default)]
pub(super) struct RunState {
    /// The thread running a cleaning run.
    running: Option<ThreadId>,
    /// That run is inside the engine's compaction callback.
    pub(super) in_callback: bool,
    runs_started: u64,
    runs_done: u64,
    /// Victims left without valid data, ever.
    progress: u64,
    inline: InlineCleaning,
    /// A background thread is alive.
    pub(super) background: bool,
    pub(super) wake: bool,
    /// `InlineCleaning::OutOfSpace`: a writer asked for a zone below `gc_start`, for the
    /// caller that runs the cleaner to see (`ZoneFs::take_cleaning_request`).
    wake_caller: bool,
    /// A writer found no zone and waits: the next run cleans at least one victim.
    pub(super) wake_reclaim: bool,
    pub(super) stop: bool,
    pub(super) last_error: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct Signal {
    state: Mutex<RunState>,
    changed: Condvar,
}

impl Signal {
    pub(super) fn lock(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn wait<'a>(&self, st: MutexGuard<'a, RunState>) -> MutexGuard<'a, RunState> {
        self.changed
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn update(&self, f: impl FnOnce(&mut RunState)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }

    fn is_cleaning_thread(&self) -> bool {
        self.lock().running == Some(std::thread::current().id())
    }

    /// Writer side, background mode: wake the thread for a run that cleans at least one
    /// victim, and wait until a victim was cleaned or that run ended. While the cleaner is
    /// inside the engine's callback, waits for the callback to end first, but at most
    /// [`CALLBACK_WAIT`]: the engine may need this writer (a lock it holds).
    fn wake_and_wait(&self) -> bool {
        let mut st = self.lock();
        let deadline = Instant::now() + CALLBACK_WAIT;
        while st.background && st.in_callback {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        if !st.background {
            return false;
        }
        let progress = st.progress;
        let target = st.runs_started + 1;
        st.wake = true;
        st.wake_reclaim = true;
        self.changed.notify_all();
        while st.background && !st.in_callback && st.progress == progress && st.runs_done < target {
            st = self.wait(st);
        }
        st.progress != progress
    }
}

/// One cleaning run at a time: held while a run goes on.
pub(super) struct RunGuard<'a> {
    signal: &'a Signal,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.signal.update(|st| {
            st.running = None;
            st.in_callback = false;
            st.runs_done += 1;
        });
    }
}

/// Marks the run as inside the engine's callback.
pub(super) struct CallbackGuard<'a> {
    pub(super) signal: &'a Signal,
}

impl Drop for CallbackGuard<'_> {
    fn drop(&mut self) {
        self.signal.update(|st| st.in_callback = false);
    }
}

impl Shared {
    pub(super) fn begin_run(&self) -> Option<RunGuard<'_>> {
        let signal = &*self.cleaner.signal;
        let me = std::thread::current().id();
        let mut st = signal.lock();
        loop {
            match st.running {
                None => break,
                Some(t) if t == me => return None,
                Some(_) if st.in_callback => return None,
                Some(_) => st = signal.wait(st),
            }
        }
        st.running = Some(me);
        st.runs_started += 1;
        Some(RunGuard { signal })
    }

    pub(super) fn note_progress(&self) {
        self.cleaner.signal.update(|st| st.progress += 1);
    }

    fn note_blocking(&self, start: Instant) {
        Counters::add(&self.counters.gc_blocking_ns, elapsed_ns(start));
        Counters::add(&self.counters.gc_blocking_events, 1);
    }

    /// Inline cleaning, and whether a background cleaner runs.
    fn triggers(&self) -> (InlineCleaning, bool) {
        let st = self.cleaner.signal.lock();
        (st.inline, st.background)
    }

    /// A background cleaner thread runs.
    pub(crate) fn background_cleaner(&self) -> bool {
        self.cleaner.signal.lock().background
    }

    pub(crate) fn cleaning_enabled(&self) -> bool {
        let (inline, background) = self.triggers();
        inline != InlineCleaning::Off || background
    }

    /// A writer asks for a zone: below `gc_start`, clean inline (eager inline cleaning) or
    /// wake the background cleaner.
    pub(crate) fn before_allocation(&self) -> FsResult<()> {
        let (inline, background) = self.triggers();
        let asks = background || inline != InlineCleaning::Off;
        if !asks || !self.below(self.opts.gc_start) {
            return Ok(());
        }
        if background {
            self.cleaner.signal.update(|st| st.wake = true);
            return Ok(());
        }
        if inline == InlineCleaning::OutOfSpace {
            self.cleaner.signal.update(|st| st.wake_caller = true);
            return Ok(());
        }
        if self.cleaner.signal.is_cleaning_thread() {
            return Ok(());
        }
        let start = Instant::now();
        let result = self.clean_run(RunKind::Maybe);
        self.note_blocking(start);
        result.map(|_| ())
    }

    /// A writer found no zone at all: clean (inline) or wait for the background cleaner.
    /// True when a victim was cleaned meanwhile ("look again").
    pub(crate) fn cleaner_reclaim(&self) -> FsResult<bool> {
        let (inline, background) = self.triggers();
        let inline = inline != InlineCleaning::Off;
        if !(inline || background) || self.cleaner.signal.is_cleaning_thread() {
            return Ok(false);
        }
        let start = Instant::now();
        let result = if background {
            Ok(self.cleaner.signal.wake_and_wait())
        } else {
            self.clean_run(RunKind::Reclaim).map(|r| r.cleaned > 0)
        };
        self.note_blocking(start);
        result
    }
}

impl ZoneFs {
    /// Eager inline cleaning ([`InlineCleaning::Eager`]) on or off: a writer that asks for
    /// a zone while the free-space ratio is below `gc_start` cleans first, and a writer that
    /// finds no zone cleans before it gives up. Off by default. A running background
    /// cleaner takes precedence.
    pub fn set_inline_cleaning(&self, on: bool) {
        let mode = if on {
            InlineCleaning::Eager
        } else {
            InlineCleaning::Off
        };
        self.set_inline_mode(mode);
    }

    /// Whether a writer asked for a zone while the free-space ratio was below `gc_start`
    /// since the last call; clears it. With [`InlineCleaning::OutOfSpace`] this is when a
    /// background cleaner would have been woken: the caller that runs the cleaner itself
    /// starts a run then.
    pub fn take_cleaning_request(&self) -> bool {
        std::mem::take(&mut self.shared.cleaner.signal.lock().wake_caller)
    }

    /// The writers' space stall (threaded engines): while the free-space ratio is below
    /// half of `gc_start` and the background cleaner cleans victims, waits for it, at most
    /// `limit`. A writer that outruns the cleaner would otherwise take the zones it frees
    /// until none is left. Returns whether it waited. Without a background cleaner, or
    /// once a run ends without cleaning anything, it returns at once.
    pub fn wait_for_cleaner(&self, limit: Duration) -> bool {
        let low = self.shared.opts.gc_start / 2;
        let start = Instant::now();
        let mut waited = false;
        while self.shared.below(low) && start.elapsed() < limit {
            if self.shared.cleaner.signal.is_cleaning_thread()
                || !self.shared.cleaner.signal.wake_and_wait()
            {
                break;
            }
            waited = true;
        }
        waited
    }

    /// Sets when writers clean inline ([`InlineCleaning`]).
    pub fn set_inline_mode(&self, mode: InlineCleaning) {
        self.shared.cleaner.signal.update(|st| st.inline = mode);
    }

    /// When writers clean inline.
    pub fn inline_mode(&self) -> InlineCleaning {
        self.shared.cleaner.signal.lock().inline
    }

    /// Whether inline cleaning is on, in either mode ([`ZoneFs::set_inline_cleaning`],
    /// [`ZoneFs::set_inline_mode`]).
    pub fn inline_cleaning(&self) -> bool {
        self.inline_mode() != InlineCleaning::Off
    }
}
