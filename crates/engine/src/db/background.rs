//! Where background work runs in threaded mode (flush and compaction threads), and the zone
//! cleaner's compaction requests (both modes; the deterministic mode's virtual threads are
//! in `sim`).

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use zkv_zonefs::fs::{CleaningMode, CompactionCandidate, CompactionRequester};

use crate::{Error, Result};

use super::files::{parse_file_name, sst_file_name, DbFile};
use super::inner::{check_bg_error, holds_versions_lock, writable, DbInner};

impl DbInner {
    /// Threaded mode: waits until no flush or compaction is queued or running.
    pub(crate) fn wait_idle(&self) -> Result<()> {
        let mut st = self.lock_state();
        loop {
            check_bg_error(&st)?;
            let idle = st.imm.is_empty()
                && st.flushing == 0
                && st.running.is_empty()
                && !st.compaction_wanted;
            if idle || st.shutting_down {
                return Ok(());
            }
            st = self.wait(st);
        }
    }

    /// Makes the compaction threads look for work again (they stop looking once a pick
    /// finds nothing, until the version changes).
    /// Waits until no flush or compaction is queued or running (deterministic mode: in
    /// virtual time); the background error if a job failed.
    pub(crate) fn wait_background_idle(&self) -> Result<()> {
        if self.deterministic() {
            return self.sim_wait_idle();
        }
        self.wait_idle()
    }

    pub(crate) fn want_compaction(&self) {
        self.lock_state().compaction_wanted = true;
        self.notify();
    }

    /// Counts the flushes recovery made at open as flushes of this handle (RocksDB books
    /// them in the L0 compaction statistics as well).
    pub(crate) fn count_recovery_flushes(&self, flushes: &[crate::compaction::JobOutput]) {
        for out in flushes {
            self.count_flush(out);
        }
    }

    /// Asks the threads to stop once their current job ends.
    pub(crate) fn shut_down(&self) {
        self.lock_state().shutting_down = true;
        self.notify();
    }
}

fn flush_loop(inner: &DbInner) {
    loop {
        {
            let mut st = inner.lock_state();
            loop {
                if st.shutting_down {
                    return;
                }
                if writable(&st).is_ok() && st.imm.iter().any(|i| !i.taken) {
                    break;
                }
                st = inner.wait(st);
            }
        }
        // An error is recorded as the background error by the job itself.
        let _ = inner.flush_memtables();
    }
}

fn compaction_loop(inner: &DbInner) {
    let max = inner.options.max_background_compactions as usize;
    loop {
        {
            let mut st = inner.lock_state();
            loop {
                if st.shutting_down {
                    return;
                }
                if writable(&st).is_ok() && st.compaction_wanted && st.running.len() < max {
                    break;
                }
                st = inner.wait(st);
            }
        }
        let _ = inner.compact_once();
    }
}

/// Starts the flush and compaction threads of the threaded mode.
pub(crate) fn spawn_threads(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let o = &inner.options;
    let jobs = (0..o.max_background_flushes)
        .map(|i| (format!("zkv-flush-{i}"), true))
        .chain((0..o.max_background_compactions).map(|i| (format!("zkv-compact-{i}"), false)));
    let mut handles = Vec::new();
    for (name, flush) in jobs {
        let worker = Arc::clone(inner);
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            if flush {
                flush_loop(&worker);
            } else {
                compaction_loop(&worker);
            }
        });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                inner.shut_down();
                for h in handles {
                    let _ = h.join();
                }
                return Err(Error::InvalidOptions(format!(
                    "cannot start a background thread: {e}"
                )));
            }
        }
    }
    Ok(handles)
}

/// The database's side of the zone cleaner's `compact` mode: compact the victim's SSTs
/// into the next level now. Holds only a weak reference: the file system keeps its
/// requester alive, and must not keep the database alive.
pub(crate) struct Requester {
    pub inner: Weak<DbInner>,
}

impl CompactionRequester for Requester {
    fn request(
        &self,
        _victim: u32,
        files: &[CompactionCandidate],
        mode: CleaningMode,
    ) -> Vec<String> {
        // A thread inside a manifest write must not start another edit.
        if mode == CleaningMode::Copy || holds_versions_lock() {
            return Vec::new();
        }
        let Some(inner) = self.inner.upgrade() else {
            return Vec::new();
        };
        let numbers: Vec<u64> = files
            .iter()
            .filter_map(|f| match parse_file_name(&f.name) {
                DbFile::Sst(n) => Some(n),
                _ => None,
            })
            .collect();
        // `compensate` compacts only the files predicted to trigger their own compaction
        // at a tick still ahead (Prophet's GC with compaction compensation).
        let numbers = match mode {
            CleaningMode::Compensate => inner.compensation_picks(&numbers),
            _ => numbers,
        };
        if numbers.is_empty() {
            return Vec::new();
        }
        inner
            .compact_requested(&numbers)
            .into_iter()
            .map(sst_file_name)
            .collect()
    }
}
