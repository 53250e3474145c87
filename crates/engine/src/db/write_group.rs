//! Group commit (threaded mode): writers that arrive while another holds the writer lock
//! queue up; the first in the queue becomes the leader once the lock is free, takes the
//! writes queued behind it, and applies them as one batch: one WAL record, one sync, one
//! memtable pass, consecutive sequence numbers in queue order. RocksDB's write groups
//! (LevelDB's writer queue) work the same way.
//!
//! As theirs, a group never adds a synced write to a leader that does not sync (the
//! synced write would be acknowledged unsynced) nor mixes writes with and without the WAL,
//! and it stops at 1 MiB (at 128 KiB past a small leader's own size, so a small write is
//! not held up by a large group). A write that is not the first of a group returns when
//! the leader has applied the group: its data is in the WAL (synced if it asked for a
//! sync) and the memtable, as if it had been written alone. If the group fails, each such
//! write is applied again on its own, so that it reports its own outcome (by then the
//! database refuses writes if the failure stopped it, and the write fails the same way).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, TryLockError};

use crate::batch::WriteBatch;
use crate::{Error, Result};

use super::inner::DbInner;
use super::stats::Counters;
use super::WriteOptions;

/// The most bytes of WAL records one group takes.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// A leader this small takes at most this much more (LevelDB's rule).
const SMALL_LEADER_BYTES: usize = 128 << 10;

/// Writes waiting for the writer lock.
#[derive(Default)]
pub(crate) struct WriteQueue {
    state: Mutex<QueueState>,
    changed: Condvar,
    /// `state.waiting.len()`, readable without the lock by every write's fast path.
    waiting: AtomicUsize,
}

#[derive(Default)]
struct QueueState {
    next_id: u64,
    waiting: VecDeque<Queued>,
    /// Writes a leader took: `None` applied, `Some(batch)` its group failed (apply it
    /// alone).
    finished: HashMap<u64, Option<WriteBatch>>,
}

struct Queued {
    id: u64,
    batch: WriteBatch,
    sync: bool,
    disable_wal: bool,
}

impl WriteQueue {
    /// Whether no write waits (a hint: it may change at once).
    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.load(Ordering::Acquire) == 0
    }

    /// Records the queue's length after a change, under its lock.
    fn note_len(&self, st: &QueueState) {
        self.waiting.store(st.waiting.len(), Ordering::Release);
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, st: MutexGuard<'a, QueueState>) -> MutexGuard<'a, QueueState> {
        self.changed
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a queued write stands.
enum Turn {
    /// A leader applied it.
    Applied,
    /// Its group failed: apply it alone.
    Alone(WriteBatch),
    /// It is first in the queue: it leads.
    Lead,
}

impl DbInner {
    /// Queues `batch` for a write group and returns once a leader applied it (or it was
    /// applied alone after its group failed, or it led a group itself).
    pub(super) fn write_queued(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        let queue = &self.write_queue;
        let mut st = queue.lock();
        let id = st.next_id;
        st.next_id += 1;
        st.waiting.push_back(Queued {
            id,
            batch,
            sync: opts.sync,
            disable_wal: opts.disable_wal,
        });
        queue.note_len(&st);
        let turn = loop {
            if let Some(outcome) = st.finished.remove(&id) {
                break outcome.map_or(Turn::Applied, Turn::Alone);
            }
            if st.waiting.front().is_some_and(|q| q.id == id) {
                break Turn::Lead;
            }
            st = queue.wait(st);
        };
        drop(st);
        match turn {
            Turn::Applied => Ok(()),
            Turn::Alone(batch) => self.apply_alone(opts, batch.into()),
            Turn::Lead => self.lead_group(id),
        }
    }

    /// Takes the writer lock, then the group behind leader `id` (first in the queue), and
    /// applies it; tells the others how it went.
    fn lead_group(&self, id: u64) -> Result<()> {
        let w = self.lock_writer();
        let mut group = self.take_group(id);
        // Taking the group changed the queue's front: the next leader may start waiting
        // for the writer lock now.
        self.write_queue.changed.notify_all();
        let [leader, joined @ ..] = group.as_mut_slice() else {
            // Only a leader takes writes out of the queue, and only from its front, where
            // this one stood: not reachable, but never acknowledge a write not applied.
            return Err(Error::NotWritable(
                "internal error: the write queue lost a write".into(),
            ));
        };
        let opts = WriteOptions {
            sync: leader.sync,
            disable_wal: leader.disable_wal,
        };
        // The leader's own batch is the start of the group's; the others stay with their
        // entries, in case the group fails and each must be applied alone.
        let mut merged = std::mem::take(&mut leader.batch);
        for q in joined.iter() {
            merged.append(&q.batch);
        }
        let result = self.apply_locked(w, &opts, merged.into());
        let ok = result.is_ok();
        if ok {
            // `apply_locked` counted one write call; the group held this many.
            let joined = group.len() as u64 - 1;
            Counters::add(&self.counters.writes, joined);
            Counters::add(&self.counters.grouped_writes, joined);
        }
        let mut st = self.write_queue.lock();
        for q in group.drain(1..) {
            st.finished.insert(q.id, (!ok).then_some(q.batch));
        }
        drop(st);
        self.write_queue.changed.notify_all();
        result
    }

    /// Removes leader `id` (first in the queue) and the writes that may join it; empty if
    /// `id` is not first.
    fn take_group(&self, id: u64) -> Vec<Queued> {
        let mut st = self.write_queue.lock();
        if st.waiting.front().is_none_or(|q| q.id != id) {
            return Vec::new();
        }
        let Some(leader) = st.waiting.pop_front() else {
            return Vec::new();
        };
        let first = leader.batch.data().len();
        let limit = if first <= SMALL_LEADER_BYTES {
            first + SMALL_LEADER_BYTES
        } else {
            MAX_GROUP_BYTES
        };
        let (sync, disable_wal) = (leader.sync, leader.disable_wal);
        let mut bytes = first;
        let mut group = vec![leader];
        while let Some(next) = st.waiting.front() {
            let size = next.batch.data().len();
            let fits = bytes + size <= limit;
            if !fits || (next.sync && !sync) || next.disable_wal != disable_wal {
                break;
            }
            bytes += size;
            group.extend(st.waiting.pop_front());
        }
        self.write_queue.note_len(&st);
        group
    }

    /// The writer lock if no one holds it.
    pub(super) fn try_lock_writer(&self) -> Option<MutexGuard<'_, super::inner::Writer>> {
        match self.writer_mutex().try_lock() {
            Ok(w) => Some(w),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}
