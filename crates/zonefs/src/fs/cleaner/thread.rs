//! The background cleaner: a thread that sleeps until a writer wakes it, runs, and stops
//! when its handle is dropped or the file system goes away. Separate because it is the
//! only code that owns a thread; the runs it starts are the ones callers start inline.

use std::fmt;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crate::fs::error::{FsError, FsResult};
use crate::fs::shared::Shared;
use crate::fs::ZoneFs;

use super::coordination::Signal;
use super::run::RunKind;

/// The background cleaner: stops (and is joined) when dropped.
pub struct CleanerThread {
    signal: Arc<Signal>,
    handle: Option<JoinHandle<()>>,
}

impl CleanerThread {
    /// Stops the thread after its current run and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    /// The error of the last run that failed, if any (a failed run does not stop the
    /// thread; the next wake-up tries again).
    pub fn last_error(&self) -> Option<String> {
        self.signal.lock().last_error.clone()
    }

    fn halt(&mut self) {
        self.signal.update(|st| st.stop = true);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for CleanerThread {
    fn drop(&mut self) {
        self.halt();
    }
}

impl fmt::Debug for CleanerThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CleanerThread")
            .field("running", &self.handle.is_some())
            .finish()
    }
}

/// Marks the thread gone however it ends, so that nobody waits for it.
struct Alive<'a>(&'a Signal);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.update(|st| {
            st.background = false;
            st.wake = false;
            st.wake_reclaim = false;
        });
    }
}

fn background_loop(signal: &Signal, fs: &Weak<Shared>) {
    let _alive = Alive(signal);
    loop {
        let reclaim = {
            let mut st = signal.lock();
            loop {
                if st.stop {
                    return;
                }
                if st.wake {
                    st.wake = false;
                    break std::mem::take(&mut st.wake_reclaim);
                }
                st = signal.wait(st);
            }
        };
        let Some(shared) = fs.upgrade() else {
            return;
        };
        let kind = if reclaim {
            RunKind::Reclaim
        } else {
            RunKind::Maybe
        };
        if let Err(e) = shared.clean_run(kind) {
            signal.lock().last_error = Some(e.to_string());
        }
    }
}

impl ZoneFs {
    /// Starts the background cleaner: a thread woken when a writer asks for a zone while
    /// the free-space ratio is below `gc_start` (and when a writer finds no zone, which then
    /// waits for it). It sleeps on a condition variable otherwise. Dropping the handle
    /// stops it; it also stops when the file system goes away (it holds a weak handle).
    pub fn start_cleaner(&self) -> FsResult<CleanerThread> {
        self.shared
            .check_writable(|| "start the zone cleaner".to_string())?;
        let signal = Arc::clone(&self.shared.cleaner.signal);
        {
            let mut st = signal.lock();
            if st.background {
                return Err(FsError::CleanerRunning);
            }
            st.background = true;
            st.stop = false;
            st.wake = true;
            st.last_error = None;
        }
        let fs = Arc::downgrade(&self.shared);
        let thread_signal = Arc::clone(&signal);
        let spawned = std::thread::Builder::new()
            .name("zonefs-cleaner".into())
            .spawn(move || background_loop(&thread_signal, &fs));
        match spawned {
            Ok(handle) => Ok(CleanerThread {
                signal,
                handle: Some(handle),
            }),
            Err(source) => {
                signal.update(|st| st.background = false);
                Err(FsError::CleanerThread { source })
            }
        }
    }
}
