//! The write path: stalls, sequence numbers, the WAL, the memtable, memtable switches.

use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use zkv_zonefs::meta::FileKind;

use crate::batch::{op_encoded_len, WriteBatch, HEADER_LEN};
use crate::key::{SeqNo, ValueKind};
use crate::log::LogWriter;
use crate::memtable::{AddError, Memtable, MAX_KEY_LEN};
use crate::{Error, Result};

use super::files::{wal_file_name, wal_hint};
use super::inner::{check_bg_error, writable, DbInner, Immutable, Writer};
use super::stall::Stall;
use super::stats::Counters;
use super::write_group::Parallel;
use super::WriteOptions;

/// How long a stopped writer sleeps between checks that background work can still make
/// progress (it is woken at once whenever a job ends).
const STOP_RECHECK: Duration = Duration::from_millis(50);

/// The longest one space stall lasts (see `space_stall`): the cleaner may be unable to
/// free anything more, and the writes must then find out for themselves.
const SPACE_STALL_LIMIT: Duration = Duration::from_secs(5);

/// What one write applies: a batch, or a single put or delete of the caller's (written
/// without building a batch, which would cost more than the memtable insert).
pub(super) enum Update<'a> {
    Batch(WriteBatch),
    One {
        kind: ValueKind,
        key: &'a [u8],
        value: &'a [u8],
    },
}

impl From<WriteBatch> for Update<'_> {
    fn from(batch: WriteBatch) -> Self {
        Update::Batch(batch)
    }
}

impl Update<'_> {
    /// The update as a batch of its own (to queue it for a write group).
    fn into_batch(self) -> WriteBatch {
        match self {
            Update::Batch(batch) => batch,
            Update::One { kind, key, value } => {
                let mut batch = WriteBatch::new();
                match kind {
                    ValueKind::Delete => batch.delete(key),
                    _ => batch.put(key, value),
                }
                batch
            }
        }
    }

    /// The size of its WAL record (what delayed writes are paced by).
    fn encoded_len(&self) -> u64 {
        match self {
            Update::Batch(batch) => batch.data().len() as u64,
            Update::One { kind, key, value } => {
                (HEADER_LEN + op_encoded_len(*kind, key.len(), value.len())) as u64
            }
        }
    }
}

/// Rejects write options that contradict each other.
/// Refuses a key the memtable cannot hold ([`MAX_KEY_LEN`]), before anything is written.
fn check_key_len(len: usize) -> Result<()> {
    if len > MAX_KEY_LEN {
        return Err(Error::InvalidArgument(format!(
            "a key of {len} bytes is longer than the limit of {MAX_KEY_LEN} bytes"
        )));
    }
    Ok(())
}

fn check_options(opts: &WriteOptions) -> Result<()> {
    if opts.sync && opts.disable_wal {
        // As RocksDB: there is nothing to sync without the WAL.
        return Err(Error::InvalidArgument(
            "a write cannot both sync and disable the WAL".into(),
        ));
    }
    Ok(())
}

impl DbInner {
    /// Applies `batch` atomically: one sequence number per operation, one WAL record.
    pub(crate) fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        check_options(opts)?;
        if batch.is_empty() {
            return Ok(());
        }
        check_key_len(batch.max_key_len())?;
        self.apply(opts, Update::Batch(batch))
    }

    /// Applies one put or delete (a delete's `value` is empty): the same as a batch of
    /// that one operation.
    pub(crate) fn write_one(
        &self,
        opts: &WriteOptions,
        kind: ValueKind,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        check_options(opts)?;
        check_key_len(key.len())?;
        let value = if kind == ValueKind::Delete {
            &[][..]
        } else {
            value
        };
        self.apply(opts, Update::One { kind, key, value })
    }

    /// Applies `update`: in threaded mode at once if no other write holds the writer lock,
    /// else in a write group (`write_group.rs`); in deterministic mode, where one thread
    /// writes, always alone.
    fn apply(&self, opts: &WriteOptions, update: Update<'_>) -> Result<()> {
        if !self.deterministic() {
            // Alone only if no write is queued: one that went ahead of a queue would take
            // the lock, and its sync, away from a whole group.
            let alone = if self.write_queue.is_empty() {
                self.try_lock_writer()
            } else {
                None
            };
            if let Some(w) = alone {
                return self.apply_locked(w, opts, update, None);
            }
            return self.write_queued(opts, update.into_batch());
        }
        self.apply_alone(opts, update)
    }

    /// Applies `update` on its own, waiting for the writer lock.
    pub(super) fn apply_alone(&self, opts: &WriteOptions, update: Update<'_>) -> Result<()> {
        self.apply_locked(self.lock_writer(), opts, update, None)
    }

    /// Applies `update` with the writer lock held: stalls, sequence numbers, the WAL
    /// record, the memtable, a memtable switch. With `parallel`, `update` is a write
    /// group's merged batch, and its members insert their own operations into the
    /// memtable while the leader inserts its own (`write_group.rs`).
    /// The sequence number is published only once every operation is in the memtable,
    /// and the writer lock, which a memtable switch needs, is held until then.
    /// The writer lock is released before the virtual clock runs on (deterministic mode),
    /// as the jobs that run then may need it.
    pub(super) fn apply_locked(
        &self,
        mut guard: MutexGuard<'_, Writer>,
        opts: &WriteOptions,
        mut update: Update<'_>,
        parallel: Option<&mut Parallel<'_>>,
    ) -> Result<()> {
        let w = &mut *guard;
        let bytes = update.encoded_len();
        // Deterministic mode: the write happens at the virtual instant the stall lets it,
        // then the clock runs on by its cost.
        let mut sim = self.deterministic().then(|| self.lock_sim());
        let mem = match sim.as_deref_mut() {
            Some(sim) => {
                self.sim_stall(sim, w, bytes)?;
                self.current_memtable()?
            }
            None => self.make_room(w, bytes)?,
        };
        let seq = self.last_sequence() + 1;
        if let Update::Batch(batch) = &mut update {
            batch.set_sequence(seq);
        }
        if !opts.disable_wal {
            self.log_update(w, &update, seq, opts.sync)?;
        }
        let inserted = match parallel {
            None => self.insert(&mem, &update, seq),
            Some(p) => self.insert_in_parallel(p, &mem, seq),
        };
        // The WAL holds the record the memtable lacks (part of): as RocksDB, nothing may
        // be written after it.
        let last = inserted.inspect_err(|e| self.set_bg_error(e))?;
        Counters::add(&self.counters.writes, 1);
        self.last_seq
            .store(last, std::sync::atomic::Ordering::Release);
        // The write is done (logged and published) from here on. What fails after it is
        // the background error, which the next write reports, and this write returns Ok:
        // a failed memtable switch (`switch_memtable` sets the error), and in
        // deterministic mode a job that fails while the clock runs on (as a background
        // thread's failure is in threaded mode).
        if mem.is_full() && self.switch_memtable(w).is_ok() && sim.is_none() {
            self.space_stall();
        }
        drop(guard);
        if let Some(mut sim) = sim {
            let until = sim.now().saturating_add(self.options.sim.write_ns(bytes));
            if let Err(e) = self.sim_advance(&mut sim, until) {
                self.set_bg_error(&e);
            }
        }
        Ok(())
    }

    /// The memtable to write to, once the database is found writable.
    fn current_memtable(&self) -> Result<Arc<Memtable>> {
        let st = self.lock_state();
        writable(&st)?;
        Ok(Arc::clone(&st.mem))
    }

    /// Adds the update's operations to `mem` from sequence number `seq` on and counts
    /// them; returns the last sequence number used.
    fn insert(&self, mem: &Memtable, update: &Update<'_>, seq: SeqNo) -> Result<SeqNo> {
        match update {
            Update::Batch(batch) => self.insert_batch(mem, batch, seq),
            Update::One { kind, key, value } => {
                add(mem, seq, *kind, key, value)?;
                let (deletes, user_bytes) = match kind {
                    ValueKind::Delete => (1, 0),
                    _ => (0, (key.len() + value.len()) as u64),
                };
                self.count_ops(1, deletes, user_bytes);
                Ok(seq)
            }
        }
    }

    /// Adds `batch`'s operations to `mem` from sequence number `seq` on and counts them;
    /// returns the last sequence number used. Safe on several threads at once.
    pub(super) fn insert_batch(
        &self,
        mem: &Memtable,
        batch: &WriteBatch,
        seq: SeqNo,
    ) -> Result<SeqNo> {
        let mut deletes = 0u64;
        for (op, seq) in batch.ops().zip(seq..) {
            add(mem, seq, op.kind, op.key, op.value)?;
            deletes += u64::from(op.kind == ValueKind::Delete);
        }
        let ops = u64::from(batch.count());
        self.count_ops(ops, deletes, batch.user_bytes());
        Ok(seq + ops - 1)
    }

    fn count_ops(&self, ops: u64, deletes: u64, user_bytes: u64) {
        let c = &self.counters;
        Counters::add(&c.user_bytes, user_bytes);
        Counters::add(&c.deletes, deletes);
        Counters::add(&c.puts, ops - deletes);
    }

    /// Appends the update's WAL record, its first operation numbered `seq`.
    fn log_update(
        &self,
        w: &mut Writer,
        update: &Update<'_>,
        seq: SeqNo,
        sync: bool,
    ) -> Result<()> {
        let Writer { log, record, .. } = w;
        let log = log
            .as_mut()
            .ok_or_else(|| Error::NotWritable("the WAL is closed".into()))?;
        let data = match update {
            Update::Batch(batch) => batch.data(),
            Update::One { kind, key, value } => {
                record.clear();
                match kind {
                    ValueKind::Delete => record.delete(key),
                    _ => record.put(key, value),
                }
                record.set_sequence(seq);
                record.data()
            }
        };
        let before = log.bytes_written();
        let mut result = log.add_record(data);
        if sync {
            result = result.and_then(|()| log.sync());
        }
        Counters::add(&self.counters.wal_bytes, log.bytes_written() - before);
        if let Err(e) = &result {
            // The WAL may hold part of the record: nothing may be appended after it.
            self.set_bg_error(e);
        }
        result
    }

    /// Threaded mode, once per memtable: below half of the cleaner's `gc_start`, writers
    /// wait for the background cleaner (see [`ZoneFs::wait_for_cleaner`]); the time is
    /// stall time. The writer lock is held, so every writer waits. Without zones there is
    /// no cleaner and no such stall.
    fn space_stall(&self) {
        let Some(fs) = self.fs.zoned() else {
            return;
        };
        let start = Instant::now();
        if fs.wait_for_cleaner(SPACE_STALL_LIMIT) {
            Counters::add(&self.counters.space_stalls, 1);
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            Counters::add(&self.counters.stall_ns, ns);
        }
    }

    /// Waits out a write stall before a write of `bytes` (threaded mode); the time it
    /// takes is stall time. Returns the memtable to write to, once the database is found
    /// writable.
    fn make_room(&self, w: &mut Writer, bytes: u64) -> Result<Arc<Memtable>> {
        let st = self.lock_state();
        writable(&st)?;
        if w.stall.condition(st.imm.len(), &st.version, &self.options) == Stall::None {
            // The common case, in one lock: no stall, nothing to time.
            w.pacing.reset();
            return Ok(Arc::clone(&st.mem));
        }
        drop(st);
        self.wait_out_stall(w, bytes)?;
        self.current_memtable()
    }

    fn wait_out_stall(&self, w: &mut Writer, bytes: u64) -> Result<()> {
        let start = Instant::now();
        let mut stalled = false;
        let mut st = self.lock_state();
        loop {
            writable(&st)?;
            match w.stall.condition(st.imm.len(), &st.version, &self.options) {
                Stall::None => {
                    w.pacing.reset();
                    break;
                }
                Stall::Delay(_) => {
                    drop(st);
                    let now = u64::try_from(w.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    let pause = w.pacing.delay(bytes, now);
                    if pause > 0 {
                        stalled = true;
                        Counters::add(&self.counters.delays, 1);
                        std::thread::sleep(Duration::from_nanos(pause));
                    }
                    break;
                }
                Stall::Stop(_) => {
                    if !stalled {
                        stalled = true;
                        Counters::add(&self.counters.stops, 1);
                    }
                    if !background_can_progress(&st) {
                        // Nothing runs or is queued that could end the stop: waiting
                        // would hang forever.
                        break;
                    }
                    st = self.wait_timeout(st, STOP_RECHECK);
                }
            }
        }
        if stalled {
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            Counters::add(&self.counters.stall_ns, ns);
        }
        Ok(())
    }

    /// Makes the memtable immutable, starts a new WAL and queues the flush. The old WAL
    /// is closed first (which syncs it), so a later WAL never holds writes that follow
    /// writes lost from an earlier one.
    pub(crate) fn switch_memtable(&self, w: &mut Writer) -> Result<()> {
        let result = self.try_switch_memtable(w);
        if let Err(e) = &result {
            self.set_bg_error(e);
        }
        result
    }

    fn try_switch_memtable(&self, w: &mut Writer) -> Result<()> {
        if let Some(old) = w.log.take() {
            let name = wal_file_name(w.wal_number);
            old.into_inner()
                .close()
                .map_err(|e| Error::fs(format!("close WAL '{name}'"), e))?;
        }
        let number = self.new_file_number();
        let name = wal_file_name(number);
        let file = self
            .fs
            .create(&name, FileKind::Wal, wal_hint())
            .map_err(|e| Error::fs(format!("create WAL '{name}'"), e))?;
        w.log = Some(LogWriter::new(file));
        let old_wal = std::mem::replace(&mut w.wal_number, number);
        let mut st = self.lock_state();
        let fresh = Memtable::with_write_buffer_size(self.options.write_buffer_size);
        let mem = std::mem::replace(&mut st.mem, Arc::new(fresh));
        st.imm.push_back(Immutable {
            mem,
            wal: old_wal,
            next_wal: number,
            taken: false,
        });
        drop(st);
        self.notify();
        Ok(())
    }

    /// Forces the memtable into a flush (if it holds anything) and waits for it.
    pub(crate) fn flush(&self) -> Result<()> {
        self.check_writable()?;
        {
            let mut w = self.lock_writer();
            if !self.lock_state().mem.is_empty() {
                self.switch_memtable(&mut w)?;
            }
        }
        if self.deterministic() {
            return self.sim_wait_flushed();
        }
        let mut st = self.lock_state();
        loop {
            check_bg_error(&st)?;
            if st.imm.is_empty() && st.flushing == 0 {
                return Ok(());
            }
            st = self.wait(st);
        }
    }

    /// Syncs and closes the WAL (at close: writes that were not synced become durable).
    pub(crate) fn close_wal(&self) -> Result<()> {
        let mut w = self.lock_writer();
        match w.log.take() {
            Some(log) => log
                .into_inner()
                .close()
                .map_err(|e| Error::fs(format!("close WAL '{}'", wal_file_name(w.wal_number)), e)),
            None => Ok(()),
        }
    }
}

/// Adds one operation to `mem`; a `(key, seq)` it holds already means two writes were
/// given the same sequence numbers.
fn add(mem: &Memtable, seq: SeqNo, kind: ValueKind, key: &[u8], value: &[u8]) -> Result<()> {
    match mem.try_add(seq, kind, key, value) {
        Ok(()) => Ok(()),
        Err(AddError::Exists) => Err(Error::corruption(
            "the memtable",
            format!("sequence number {seq} of a key was given to two writes"),
        )),
        Err(AddError::Full) => Err(Error::NotWritable(format!(
            "the memtable cannot hold the entry of sequence number {seq} (a key of {} bytes)",
            key.len()
        ))),
    }
}

/// Whether a running or queued job may still end a stop.
fn background_can_progress(st: &super::inner::State) -> bool {
    st.flushing > 0 || !st.imm.is_empty() || !st.running.is_empty() || st.compaction_wanted
}
