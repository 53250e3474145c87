//! The write path: stalls, sequence numbers, the WAL, the memtable, memtable switches.

use std::sync::Arc;
use std::time::{Duration, Instant};

use zonefs::meta::FileKind;

use crate::batch::WriteBatch;
use crate::log::LogWriter;
use crate::memtable::Memtable;
use crate::{Error, Result};

use super::files::{wal_file_name, wal_hint};
use super::inner::{writable, DbInner, Immutable, Writer};
use super::stall::{self, Stall};
use super::stats::Counters;
use super::WriteOptions;

/// How long a stopped writer sleeps between checks that background work can still make
/// progress (it is woken at once whenever a job ends).
const STOP_RECHECK: Duration = Duration::from_millis(50);

impl DbInner {
    /// Applies `batch` atomically: one sequence number per operation, one WAL record.
    pub(crate) fn write(&self, opts: &WriteOptions, mut batch: WriteBatch) -> Result<()> {
        if opts.sync && opts.disable_wal {
            // As RocksDB: there is nothing to sync without the WAL.
            return Err(Error::InvalidArgument(
                "a write cannot both sync and disable the WAL".into(),
            ));
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.check_writable()?;
        {
            let mut w = self.lock_writer();
            self.make_room(&mut w, batch.data().len() as u64)?;
            self.check_writable()?;
            let seq = self.last_sequence() + 1;
            batch.set_sequence(seq);
            if !opts.disable_wal {
                self.log_batch(&mut w, &batch, opts.sync)?;
            }
            let mem = Arc::clone(&self.lock_state().mem);
            let mut last = seq;
            for (i, op) in batch.ops().enumerate() {
                last = seq + i as u64;
                mem.add(last, op.kind, op.key, op.value);
            }
            self.last_seq
                .store(last, std::sync::atomic::Ordering::Release);
            self.count_write(&batch);
            if mem.approximate_memory_usage() >= self.options.write_buffer_size {
                self.switch_memtable(&mut w)?;
            }
        }
        if self.deterministic() {
            self.run_inline()?;
        }
        Ok(())
    }

    fn log_batch(&self, w: &mut Writer, batch: &WriteBatch, sync: bool) -> Result<()> {
        let log = w.log()?;
        let before = log.bytes_written();
        let mut result = log.add_record(batch.data());
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

    fn count_write(&self, batch: &WriteBatch) {
        let c = &self.counters;
        Counters::add(&c.writes, 1);
        Counters::add(&c.user_bytes, batch.user_bytes());
        let deletes = batch
            .ops()
            .filter(|op| op.kind == crate::key::ValueKind::Delete)
            .count() as u64;
        Counters::add(&c.deletes, deletes);
        Counters::add(&c.puts, u64::from(batch.count()) - deletes);
    }

    /// Waits out (or, in deterministic mode, works off) a write stall before a write of
    /// `bytes`; the time it takes is stall time.
    fn make_room(&self, w: &mut Writer, bytes: u64) -> Result<()> {
        let start = Instant::now();
        let mut stalled = false;
        let mut st = self.lock_state();
        loop {
            writable(&st)?;
            match stall::condition(st.imm.len(), &st.version, &self.options) {
                Stall::None => {
                    w.delay.reset();
                    break;
                }
                Stall::Delay(_) if self.deterministic() => break,
                Stall::Delay(_) => {
                    drop(st);
                    let pause = w.delay.delay(bytes, Instant::now());
                    if !pause.is_zero() {
                        stalled = true;
                        Counters::add(&self.counters.delays, 1);
                        std::thread::sleep(pause);
                    }
                    break;
                }
                Stall::Stop(_) if self.deterministic() => {
                    // Never block: do the work the stop waits for, then write.
                    drop(st);
                    stalled = true;
                    Counters::add(&self.counters.stops, 1);
                    self.run_inline()?;
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
        let mem = std::mem::replace(&mut st.mem, Arc::new(Memtable::new()));
        st.imm.push_back(Immutable {
            mem,
            wal: old_wal,
            next_wal: number,
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
            return self.run_inline();
        }
        let mut st = self.lock_state();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::NotWritable(format!(
                    "a background job failed earlier: {e}"
                )));
            }
            if st.imm.is_empty() && !st.flushing {
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

/// Whether a running or queued job may still end a stop.
fn background_can_progress(st: &super::inner::State) -> bool {
    st.flushing || !st.imm.is_empty() || !st.running.is_empty() || st.compaction_wanted
}
