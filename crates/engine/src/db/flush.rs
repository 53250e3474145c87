//! Flush: immutable memtables → one L0 table, then the version edit that adds it and
//! advances the log number, then the flushed WALs are deleted.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use zkv_zonefs::placement::{JobKind, WriterJob};

use crate::blob::{BlobOutcome, BlobStage};
use crate::compaction::job::{run_job_staged, JobParams, JobRules, JobStats, ValueStage};
use crate::compaction::JobOutput;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::SeqNo;
use crate::memtable::Memtable;
use crate::sst::{BuiltTable, TableOptions};
use crate::version::VersionEdit;
use crate::{Error, Result};

use super::blobs::FsBlobSinks;
use super::files::{delete_file, wal_file_name, write_table};
use super::inner::{DbInner, Immutable};
use super::stats::Counters;

/// Builds the L0 table of `mems` (oldest first) in memory: the flush job keeps, for each
/// snapshot, the newest entry of a key it sees, and every tombstone. `None` if nothing is
/// left to write.
pub(crate) fn build_l0(
    mems: &[Arc<Memtable>],
    snapshots: &[SeqNo],
    table: TableOptions,
    stage: &mut dyn ValueStage,
) -> Result<(Option<BuiltTable>, JobStats)> {
    let mut input: Box<dyn InternalIterator> = match mems {
        [one] => Box::new(one.iter()),
        _ => Box::new(MergingIterator::new(
            mems.iter()
                .map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>)
                .collect(),
        )),
    };
    let keep_tombstones = |_: &[u8]| false;
    let params = JobParams {
        snapshots,
        drop_tombstone: &keep_tombstones,
        target_file_size: u64::MAX,
        grandparents: &[],
        max_grandparent_overlap: u64::MAX,
        table,
    };
    let mut built = Vec::new();
    let rules = JobRules::default();
    let stats = run_job_staged(&mut *input, &params, &rules, stage, &mut |t| {
        built.push(t);
        Ok(())
    })?;
    if built.len() > 1 {
        return Err(Error::InvalidArgument(format!(
            "a flush job without size limit emitted {} tables",
            built.len()
        )));
    }
    Ok((built.pop(), stats))
}

/// What a flush wrote, to install.
pub(crate) struct FlushWritten {
    edit: VersionEdit,
    job: JobStats,
    blobs: BlobOutcome,
    /// When the job started writing (for its duration in threaded mode).
    started: std::time::Instant,
}

/// Marks the flush finished however it ends; memtables it did not install go back to the
/// queue for the next flush.
struct FlushGuard<'a> {
    inner: &'a DbInner,
    picked: &'a [Immutable],
}

impl Drop for FlushGuard<'_> {
    fn drop(&mut self) {
        let mut st = self.inner.lock_state();
        st.flushing = st.flushing.saturating_sub(1);
        for i in st.imm.iter_mut() {
            if self.picked.iter().any(|p| Arc::ptr_eq(&p.mem, &i.mem)) {
                i.taken = false;
            }
        }
        drop(st);
        self.inner.notify();
    }
}

impl DbInner {
    /// Flushes the immutable memtables no other flush took into one L0 table (as
    /// RocksDB merges the memtables a flush picks). `Ok(false)` if there was nothing to
    /// flush. A failure is a background error.
    pub(crate) fn flush_memtables(&self) -> Result<bool> {
        match self.begin_flush()? {
            Some(picked) => self.end_flush(&picked, None, None).map(|()| true),
            None => Ok(false),
        }
    }

    /// Takes the oldest run of consecutive immutable memtables no running flush took;
    /// `None` if there is none. Only consecutive ones, so that every L0 table holds a
    /// range of sequence numbers no other holds. The memtables stay queued (and count
    /// for stalls) until [`Self::end_flush`], which must follow, installs them.
    pub(crate) fn begin_flush(&self) -> Result<Option<Vec<Immutable>>> {
        let mut st = self.lock_state();
        super::inner::writable(&st)?;
        let Some(first) = st.imm.iter().position(|i| !i.taken) else {
            return Ok(None);
        };
        let picked: Vec<Immutable> = st
            .imm
            .iter_mut()
            .skip(first)
            .take_while(|i| !i.taken)
            .map(|i| {
                i.taken = true;
                i.clone()
            })
            .collect();
        st.flushing += 1;
        Ok(Some(picked))
    }

    /// Flushes what [`Self::begin_flush`] took: installs what `written` holds
    /// ([`Self::write_ahead_flush`]), or writes and installs it now (deterministic mode:
    /// `span` is when the flush started and ends on the virtual clock). A failure is a
    /// background error.
    pub(crate) fn end_flush(
        &self,
        picked: &[Immutable],
        written: Option<FlushWritten>,
        span: Option<(u64, u64)>,
    ) -> Result<()> {
        let _guard = FlushGuard {
            inner: self,
            picked,
        };
        let written = match written {
            Some(w) => Ok(w),
            None => self.write_flush(picked),
        };
        let result = written.and_then(|w| self.install_flush(picked, w, span));
        // A flush that gave up waiting for an older one because the database is closing
        // failed nothing: its memtables stay in their WALs for the next open.
        if result.is_ok() || !self.lock_state().shutting_down {
            self.job_ended(&result);
        }
        result
    }

    /// Waits until every memtable older than `first` is flushed: flushes install in the
    /// order of their memtables (as RocksDB commits flush results), so that the log
    /// number never passes a memtable that is not in a table yet.
    fn wait_turn(&self, first: &Arc<Memtable>) -> Result<()> {
        let mut st = self.lock_state();
        loop {
            super::inner::check_bg_error(&st)?;
            if st.imm.front().is_some_and(|i| Arc::ptr_eq(&i.mem, first)) {
                return Ok(());
            }
            // The simulation ends flushes in the order they started.
            if self.deterministic() || st.shutting_down {
                return Err(Error::NotWritable(
                    "a flush cannot install before the older memtables' flush".into(),
                ));
            }
            st = self.wait(st);
        }
    }

    /// Writes the L0 table of what [`Self::begin_flush`] took now, to be installed when
    /// the flush ends ([`Self::end_flush`]): the simulation's jobs may write before they
    /// end (`SimCosts::output_at_pct`, see `sim.rs`). On failure the memtables go back to
    /// the queue.
    pub(crate) fn write_ahead_flush(&self, picked: &[Immutable]) -> Result<FlushWritten> {
        self.write_flush(picked).inspect_err(|_| {
            drop(FlushGuard {
                inner: self,
                picked,
            });
        })
    }

    /// Writes the L0 table (and blob files) of what [`Self::begin_flush`] took; nothing is
    /// installed yet.
    fn write_flush(&self, picked: &[Immutable]) -> Result<FlushWritten> {
        let started = std::time::Instant::now();
        let mems: Vec<Arc<Memtable>> = picked.iter().map(|p| Arc::clone(&p.mem)).collect();
        let version = Arc::clone(&self.lock_state().version);
        let rules = self.blob_rules(0, &version);
        let mut stage = BlobStage::new(
            rules,
            None,
            FsBlobSinks {
                inner: self,
                level: 0,
                job: WriterJob {
                    kind: JobKind::Flush,
                    id: self.flush_ids.fetch_add(1, Ordering::Relaxed) + 1,
                    part: 0,
                },
            },
        );
        let mut edit = VersionEdit::new();
        let job = match self.flush_table(&mems, &mut stage, &mut edit) {
            Ok(job) => job,
            Err(e) => {
                self.delete_blob_files(&stage.abandon());
                return Err(e);
            }
        };
        let created = stage.created();
        let blobs = match stage.finish() {
            Ok(blobs) => blobs,
            Err(e) => {
                self.delete_blob_files(&created);
                self.discard(&edit);
                return Err(e);
            }
        };
        Ok(FlushWritten {
            edit,
            job,
            blobs,
            started,
        })
    }

    /// Installs what [`Self::write_flush`] wrote once the older memtables' flushes did,
    /// then deletes the flushed WALs (deterministic mode: `span` is when the flush started
    /// and ends on the virtual clock).
    fn install_flush(
        &self,
        picked: &[Immutable],
        written: FlushWritten,
        span: Option<(u64, u64)>,
    ) -> Result<()> {
        let FlushWritten {
            mut edit,
            job,
            blobs,
            started,
        } = written;
        // Table bytes only, as RocksDB's flush statistics count them (blob file bytes
        // are counted apart).
        let bytes = edit.new_files.iter().map(|(_, f)| f.size).sum::<u64>();
        edit.blob_files.clone_from(&blobs.added);
        edit.log_number = picked.last().map(|p| p.next_wal);
        let n = picked.len();
        if let Err(e) = picked.first().map_or(Ok(()), |p| self.wait_turn(&p.mem)) {
            self.discard(&edit);
            return Err(e);
        }
        self.apply_edit(edit, |st| {
            st.imm.drain(..n);
        })?;
        self.count_blob_files(&blobs);
        self.count_flush(&JobOutput {
            bytes_written: bytes,
            files_written: job.outputs,
            records_in: job.input_entries,
            records_dropped: job.input_entries.saturating_sub(job.output_entries),
            micros: span.map_or_else(|| self.job_micros(started), super::compact::span_micros),
        });
        for p in picked {
            delete_file(&self.fs, &wal_file_name(p.wal))?;
        }
        Ok(())
    }

    /// Deletes the files a flush wrote and will not install.
    fn discard(&self, edit: &VersionEdit) {
        let blob_files: Vec<u64> = edit.blob_files.iter().map(|b| b.number).collect();
        self.delete_blob_files(&blob_files);
        self.delete_tables(edit.new_files.iter().map(|(_, f)| f.number));
    }

    /// Builds and writes the L0 table of `mems` (blobs through `stage`) into `edit`.
    fn flush_table(
        &self,
        mems: &[Arc<Memtable>],
        stage: &mut dyn ValueStage,
        edit: &mut VersionEdit,
    ) -> Result<JobStats> {
        let (built, job) = build_l0(mems, &self.snapshots.list(), self.table_options, stage)?;
        if let Some(table) = built {
            let number = self.new_file_number();
            let extras = self.sst_extras(0, &table, number, &[], &[]);
            let meta = write_table(&self.fs, number, 0, table, extras)?;
            edit.add_file(0, meta);
        }
        Ok(job)
    }

    /// Counts a flush (also those recovery made at open) in the counters and in L0's
    /// compaction statistics.
    pub(crate) fn count_flush(&self, out: &JobOutput) {
        Counters::add(&self.counters.flushes, 1);
        Counters::add(&self.counters.flush_bytes, out.bytes_written);
        self.book(|s| s.add_flush(out));
    }
}
