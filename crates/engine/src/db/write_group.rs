//! Group commit (threaded mode): writers that arrive while another holds the writer lock
//! queue up; the first in the queue becomes the leader once the lock is free, takes the
//! writes queued behind it, and applies them as one batch: one WAL record, one sync,
//! consecutive sequence numbers in queue order. RocksDB's write groups (LevelDB's writer
//! queue) work the same way.
//!
//! As theirs, a group never adds a synced write to a leader that does not sync (the
//! synced write would be acknowledged unsynced) nor mixes writes with and without the WAL,
//! and it stops at 1 MiB (at 128 KiB past a small leader's own size, so a small write is
//! not held up by a large group). A write that is not the first of a group returns when
//! the leader has applied the group: its data is in the WAL (synced if it asked for a
//! sync) and the memtable, as if it had been written alone. If the group fails, each such
//! write is applied again on its own, so that it reports its own outcome (by then the
//! database refuses writes if the failure stopped it, and the write fails the same way).
//!
//! With `Options::allow_concurrent_memtable_write` (RocksDB's option of that name, on by
//! default as there), the leader writes the group's WAL record alone and then hands each
//! write that joined it the memtable and its first sequence number: every write of the
//! group inserts its own batch at the same time, and the leader waits for all of them
//! before it publishes the group's last sequence number (readers never see part of a
//! group) and before a memtable switch (which needs the writer lock the leader still
//! holds). A member's failed insert fails the group. Without the option the leader
//! inserts the whole group itself, in one pass.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};

use crate::batch::WriteBatch;
use crate::key::SeqNo;
use crate::memtable::Memtable;
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
    /// What the writes a leader took do next (never [`Turn::Lead`]).
    finished: HashMap<u64, Turn>,
}

pub(super) struct Queued {
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
    /// Its group is in the WAL: insert the batch into the memtable.
    Insert(Handoff),
    /// It is first in the queue: it leads.
    Lead,
}

/// What a group's member needs to insert its own batch.
struct Handoff {
    batch: WriteBatch,
    mem: Arc<Memtable>,
    /// The sequence number of its first operation.
    seq: SeqNo,
    inserts: Arc<Inserts>,
}

/// A write group whose members insert their own batches (see [`DbInner::apply_locked`]).
pub(super) struct Parallel<'a> {
    /// The leader first, then the members in queue order.
    group: &'a mut [Queued],
    /// The members' inserts, once they were handed off.
    inserts: Option<Arc<Inserts>>,
}

/// The members' inserts of one group: how many still run, the first failure, and then the
/// group's outcome.
struct Inserts {
    state: Mutex<InsertsState>,
    /// The last insert ended (the leader waits for it).
    inserted: Condvar,
    /// The outcome is known (the members wait for it).
    finished: Condvar,
}

struct InsertsState {
    running: usize,
    failure: Option<Error>,
    outcome: Option<bool>,
}

impl Inserts {
    fn new(members: usize) -> Inserts {
        Inserts {
            state: Mutex::new(InsertsState {
                running: members,
                failure: None,
                outcome: None,
            }),
            inserted: Condvar::new(),
            finished: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, InsertsState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A member's insert ended.
    fn ended(&self, result: Result<()>) {
        let mut st = self.lock();
        st.running = st.running.saturating_sub(1);
        if let Err(e) = result {
            st.failure.get_or_insert(e);
        }
        if st.running == 0 {
            self.inserted.notify_all();
        }
    }

    /// Waits for every member's insert; the first failure.
    fn wait_inserted(&self) -> Result<()> {
        let mut st = self.lock();
        while st.running > 0 {
            st = (self.inserted.wait(st)).unwrap_or_else(PoisonError::into_inner);
        }
        st.failure.take().map_or(Ok(()), Err)
    }

    /// Tells the members whether the group was applied.
    fn finish(&self, applied: bool) {
        self.lock().outcome = Some(applied);
        self.finished.notify_all();
    }

    /// Whether the group was applied, once the leader knows.
    fn outcome(&self) -> bool {
        let mut st = self.lock();
        loop {
            if let Some(applied) = st.outcome {
                return applied;
            }
            st = (self.finished.wait(st)).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A member's insert not yet reported: if its thread unwinds first, the insert is
/// reported failed, so that the leader does not wait for it forever.
struct Unreported<'a>(Option<&'a Inserts>);

impl Unreported<'_> {
    fn report(mut self, result: Result<()>) {
        if let Some(inserts) = self.0.take() {
            inserts.ended(result);
        }
    }
}

impl Drop for Unreported<'_> {
    fn drop(&mut self) {
        if let Some(inserts) = self.0.take() {
            inserts.ended(Err(Error::NotWritable(
                "a write of the group failed in its memtable insert".into(),
            )));
        }
    }
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
            if let Some(turn) = st.finished.remove(&id) {
                break turn;
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
            Turn::Insert(handoff) => self.insert_own(opts, handoff),
            Turn::Lead => self.lead_group(id),
        }
    }

    /// A member's part of a group with concurrent inserts: inserts its batch, then waits
    /// for the leader to publish the group (or applies the batch alone if it failed).
    fn insert_own(&self, opts: &WriteOptions, handoff: Handoff) -> Result<()> {
        let Handoff {
            batch,
            mem,
            seq,
            inserts,
        } = handoff;
        let unreported = Unreported(Some(&inserts));
        let result = self.insert_batch(&mem, &batch, seq).map(drop);
        drop(mem);
        unreported.report(result);
        if inserts.outcome() {
            return Ok(());
        }
        self.apply_alone(opts, batch.into())
    }

    /// The leader's part of a group with concurrent inserts, once the group's WAL record
    /// is written: hands each member the memtable `mem` and its first sequence number,
    /// inserts its own batch (from `seq` on) meanwhile, and waits for every member's
    /// insert. The group's last sequence number, or its first failure.
    pub(super) fn insert_in_parallel(
        &self,
        p: &mut Parallel<'_>,
        mem: &Arc<Memtable>,
        seq: SeqNo,
    ) -> Result<SeqNo> {
        let Some((leader, members)) = p.group.split_first_mut() else {
            return Err(lost_write());
        };
        let inserts = Arc::new(Inserts::new(members.len()));
        let mut next = seq + u64::from(leader.batch.count());
        let mut st = self.write_queue.lock();
        for q in members {
            let batch = std::mem::take(&mut q.batch);
            let first = next;
            next += u64::from(batch.count());
            let handoff = Handoff {
                batch,
                mem: Arc::clone(mem),
                seq: first,
                inserts: Arc::clone(&inserts),
            };
            st.finished.insert(q.id, Turn::Insert(handoff));
        }
        drop(st);
        self.write_queue.changed.notify_all();
        p.inserts = Some(Arc::clone(&inserts));
        let own = self.insert_batch(mem, &leader.batch, seq);
        // Even if the leader's own insert failed: the members' inserts must end before
        // the writer lock is let go.
        let members = inserts.wait_inserted();
        own?;
        members?;
        Ok(next - 1)
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
            return Err(lost_write());
        };
        let opts = WriteOptions {
            sync: leader.sync,
            disable_wal: leader.disable_wal,
        };
        let parallel = self.options.allow_concurrent_memtable_write && !joined.is_empty();
        // The leader's own batch is the start of the group's WAL record; the others stay
        // with their entries, to be inserted by their writes, or applied alone if the
        // group fails. So does the leader's if it inserts only its own.
        let mut merged = if parallel {
            leader.batch.clone()
        } else {
            std::mem::take(&mut leader.batch)
        };
        for q in joined.iter() {
            merged.append(&q.batch);
        }
        let mut parallel = parallel.then(|| Parallel {
            group: &mut group,
            inserts: None,
        });
        let result = self.apply_locked(w, &opts, merged.into(), parallel.as_mut());
        let handed_off = parallel.and_then(|p| p.inserts);
        let ok = result.is_ok();
        if ok {
            // `apply_locked` counted one write call; the group held this many.
            let joined = group.len() as u64 - 1;
            Counters::add(&self.counters.writes, joined);
            Counters::add(&self.counters.grouped_writes, joined);
        }
        if let Some(inserts) = handed_off {
            inserts.finish(ok);
            return result;
        }
        let mut st = self.write_queue.lock();
        for q in group.drain(1..) {
            let turn = if ok {
                Turn::Applied
            } else {
                Turn::Alone(q.batch)
            };
            st.finished.insert(q.id, turn);
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

/// The error of a group whose leader is missing from it: not reachable (only a leader
/// takes writes out of the queue, and only from its front, where it stood), but a write
/// not applied must never be acknowledged.
fn lost_write() -> Error {
    Error::NotWritable("internal error: the write queue lost a write".into())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::batch::WriteBatch;
    use crate::db::{Db, WriteOptions};
    use crate::fs::{FileSystem, PosixFs};
    use crate::iter::InternalIterator;
    use crate::key::{self, ValueKind};
    use crate::options::Options;
    use crate::Error;

    fn open(dir: &tempfile::TempDir, concurrent: bool) -> Db {
        let fs: Arc<dyn FileSystem> = Arc::new(PosixFs::open(dir.path()).unwrap());
        let options = Options {
            allow_concurrent_memtable_write: concurrent,
            ..Options::default()
        };
        Db::open(fs, options).unwrap()
    }

    fn batch_key(thread: u64, batch: u64, op: u64) -> Vec<u8> {
        format!("{thread}-{batch:03}-{op}").into_bytes()
    }

    /// Writers' batches inserted by their own threads, concurrently: each operation got a
    /// number of its own, a batch's in a row, and none was lost or numbered twice.
    #[test]
    fn concurrent_inserts_number_every_batch_consecutively() {
        const THREADS: u64 = 6;
        const BATCHES: u64 = 60;
        const OPS: u64 = 5;
        let dir = tempfile::tempdir().unwrap();
        // 64 MiB memtables: every write stays in the first one.
        let db = open(&dir, true);
        let before = db.last_sequence();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let db = &db;
                s.spawn(move || {
                    for b in 0..BATCHES {
                        let mut batch = WriteBatch::new();
                        for o in 0..OPS {
                            batch.put(&batch_key(t, b, o), b"v");
                        }
                        db.write(&WriteOptions::synced(), batch).unwrap();
                    }
                });
            }
        });
        assert!(db.stats().grouped_writes > 0, "no write group formed");
        let mem = Arc::clone(&db.inner().lock_state().mem);
        let mut seqs = HashMap::new();
        let mut it = mem.iter();
        it.seek_to_first().unwrap();
        while it.valid() {
            let parsed = key::parse(it.key()).unwrap();
            assert!(seqs.insert(parsed.user_key.to_vec(), parsed.seq).is_none());
            it.next().unwrap();
        }
        let n = THREADS * BATCHES * OPS;
        let mut numbers: Vec<u64> = seqs.values().copied().collect();
        numbers.sort_unstable();
        assert_eq!(numbers, (before + 1..=before + n).collect::<Vec<_>>());
        assert_eq!(db.last_sequence(), before + n);
        for (t, b) in (0..THREADS).flat_map(|t| (0..BATCHES).map(move |b| (t, b))) {
            let first = seqs[&batch_key(t, b, 0)];
            for o in 1..OPS {
                assert_eq!(seqs[&batch_key(t, b, o)], first + o, "thread {t} batch {b}");
            }
        }
        db.close().unwrap();
    }

    /// Waits until `n` writes are queued.
    fn wait_queued(db: &Db, n: usize) {
        while db.inner().write_queue.lock().waiting.len() < n {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A write whose memtable insert fails (its sequence number is taken: two writes were
    /// given the same one) fails its whole group, which publishes nothing, and stops the
    /// database; with concurrent inserts the failing insert is a member's own.
    #[test]
    fn a_failed_insert_fails_the_group_and_publishes_nothing() {
        for concurrent in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let db = open(&dir, concurrent);
            let inner = db.inner();
            let last = db.last_sequence();
            let wo = WriteOptions::default();
            let (leader, member) = std::thread::scope(|s| {
                // Holding the writer lock queues both writes: the first leads, the second
                // joins its group.
                let w = inner.lock_writer();
                let leader = s.spawn(|| db.put(&wo, b"a", b"leader"));
                wait_queued(&db, 1);
                let member = s.spawn(|| db.put(&wo, b"b", b"member"));
                wait_queued(&db, 2);
                // The member's operation will be numbered `last + 2`.
                let mem = Arc::clone(&inner.lock_state().mem);
                assert_eq!(
                    mem.try_add(last + 2, ValueKind::Put, b"b", b"planted"),
                    Ok(())
                );
                drop(w);
                (leader.join().unwrap(), member.join().unwrap())
            });
            assert!(
                matches!(leader, Err(Error::Corruption { .. })),
                "{concurrent}: {leader:?}"
            );
            assert!(
                matches!(member, Err(Error::NotWritable(_))),
                "{concurrent}: {member:?}"
            );
            assert_eq!(db.last_sequence(), last, "{concurrent}: published");
            assert!(matches!(
                db.put(&wo, b"c", b"later"),
                Err(Error::NotWritable(_))
            ));
            drop(db);
        }
    }
}
