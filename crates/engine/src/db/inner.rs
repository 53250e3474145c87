//! The shared state of an open database and its locks.
//!
//! Locks, always taken in this order (a thread never takes an earlier one while holding a
//! later one):
//! 1. `writer`: one writer at a time; owns the WAL. Held across WAL I/O and memtable
//!    switches (and, in threaded mode, while a stopped writer waits).
//! 2. `sim`: the deterministic mode's simulation (its clock and virtual threads).
//! 3. `versions`: the version set; held across manifest I/O (`log_and_apply`), so that
//!    versions are installed in the order they are logged.
//! 4. `state`: memtables, the current version, running jobs, errors. Never held across
//!    I/O, so readers only ever wait for short critical sections.
//!
//! The zone cleaner may call back into the database (its compaction requester) from inside
//! any file-layer call that allocates a zone, i.e. from a thread that holds `writer`,
//! `sim` or `versions`. A requested compaction needs `versions` and `state` only, and it
//! is refused while the calling thread holds `versions` (tracked per thread), so the
//! callback can never deadlock. The cleaner's other callback, the hint source, takes only
//! `state`, and answers nothing on a thread that holds `versions`.

use std::cell::Cell;
use std::collections::{HashSet, VecDeque};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::fs::{FileSystem, WritableFile};

use crate::batch::WriteBatch;
use crate::blob::{BlobGcCutoff, FixedCutoff, ZoneCutoff};
use crate::compaction::Picker;
use crate::key::SeqNo;
use crate::lifetime::Clock;
use crate::log::LogWriter;
use crate::memtable::Memtable;
use crate::options::{BlobGcCutoffMode, ExecMode, Options};
use crate::sst::TableOptions;
use crate::version::{Version, VersionEdit, VersionSet};
use crate::{Error, Result};

use super::blobs::BlobCache;
use super::sim::Sim;
use super::snapshot::SnapshotList;
use super::stall::{ConditionCache, Pacing};
use super::stats::{CompactionRecord, Counters};
use super::table_cache::TableCache;

thread_local! {
    /// Version-set locks this thread holds (of any database).
    static VERSIONS_HELD: Cell<u32> = const { Cell::new(0) };
}

/// Whether the calling thread holds a version-set lock.
pub(crate) fn holds_versions_lock() -> bool {
    VERSIONS_HELD.with(|n| n.get() > 0)
}

/// The version-set lock, counted per thread while held.
/// Flushes and compactions that found no room for an output, in a row, before that is a
/// background error (see [`DbInner::job_ended`]).
pub(crate) const MAX_NO_ROOM_RETRIES: u64 = 8;

/// How long a job that found no room waits for the zone cleaner at most.
const NO_ROOM_WAIT: Duration = Duration::from_secs(5);

/// The pause before the retry when the cleaner did not clean anything meanwhile (other
/// jobs may still free space by deleting their inputs).
const NO_ROOM_PAUSE: Duration = Duration::from_millis(50);

pub(crate) struct VersionsGuard<'a> {
    guard: MutexGuard<'a, VersionSet>,
}

impl<'a> VersionsGuard<'a> {
    fn new(guard: MutexGuard<'a, VersionSet>) -> Self {
        VERSIONS_HELD.with(|n| n.set(n.get() + 1));
        VersionsGuard { guard }
    }
}

impl Drop for VersionsGuard<'_> {
    fn drop(&mut self) {
        VERSIONS_HELD.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

impl Deref for VersionsGuard<'_> {
    type Target = VersionSet;
    fn deref(&self) -> &VersionSet {
        &self.guard
    }
}

impl DerefMut for VersionsGuard<'_> {
    fn deref_mut(&mut self) -> &mut VersionSet {
        &mut self.guard
    }
}

/// A memtable waiting for its flush.
#[derive(Clone)]
pub(crate) struct Immutable {
    pub mem: Arc<Memtable>,
    /// The WAL holding its writes.
    pub wal: u64,
    /// The WAL of the memtable after it: the log number once it is flushed.
    pub next_wal: u64,
    /// A running flush took it.
    pub taken: bool,
}

/// A compaction in progress: what it takes and where it writes.
#[derive(Clone, Debug)]
pub(crate) struct Running {
    pub id: u64,
    pub output_level: usize,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub files: Vec<u64>,
}

/// What the `state` lock protects.
pub(crate) struct State {
    pub mem: Arc<Memtable>,
    /// Oldest first.
    pub imm: VecDeque<Immutable>,
    pub version: Arc<Version>,
    /// Files running compactions use.
    pub compacting: HashSet<u64>,
    pub running: Vec<Running>,
    /// Flush jobs running (at most `max_background_flushes`).
    pub flushing: usize,
    /// The version changed, or a compaction ended, since an automatic pick last found
    /// nothing: the compaction threads (real or virtual) pick only while
    /// it is set.
    pub compaction_wanted: bool,
    /// The first background error; the database refuses writes once it is set.
    pub bg_error: Option<String>,
    pub shutting_down: bool,
    /// The version set's lifetime clock as of `version` (`None`: no predictions), and its
    /// round-robin cursors: what a prediction reads without the version-set lock.
    pub clock: Option<Clock>,
    pub cursors: Vec<Option<Vec<u8>>>,
}

/// The writer's side: the WAL.
pub(crate) struct Writer {
    pub log: Option<LogWriter<Box<dyn WritableFile>>>,
    pub wal_number: u64,
    /// The pacing of delayed writes (see [`Pacing`]).
    pub pacing: Pacing,
    /// When the writer started: the origin of threaded mode's pacing clock.
    pub started: std::time::Instant,
    pub stall: ConditionCache,
    /// The WAL record of a single put or delete, reused from write to write.
    pub record: WriteBatch,
}

impl Writer {
    /// `log`: `None` for a read-only database, which has no WAL.
    pub(crate) fn new(
        log: Option<LogWriter<Box<dyn WritableFile>>>,
        wal_number: u64,
        mode: ExecMode,
    ) -> Writer {
        Writer {
            log,
            wal_number,
            pacing: Pacing::for_mode(mode),
            started: std::time::Instant::now(),
            stall: ConditionCache::default(),
            record: WriteBatch::new(),
        }
    }
}

/// Everything an open database shares between the user's threads, its background threads
/// and the zone cleaner's callback.
pub(crate) struct DbInner {
    pub fs: Arc<dyn FileSystem>,
    pub options: Options,
    pub table_options: TableOptions,
    pub picker: Arc<dyn Picker>,
    pub tables: Arc<TableCache>,
    pub blobs: Arc<BlobCache>,
    /// Which blob files garbage collection relocates (`Options::blob_gc_cutoff`).
    pub blob_cutoff: Box<dyn BlobGcCutoff>,
    pub snapshots: Arc<SnapshotList>,
    versions: Mutex<VersionSet>,
    state: Mutex<State>,
    /// Signalled whenever `state` changes in a way someone may wait for.
    changed: Condvar,
    writer: Mutex<Writer>,
    /// Writes waiting for the writer lock, for group commit.
    pub(crate) write_queue: super::write_group::WriteQueue,
    sim: Mutex<Sim>,
    /// Every entry with a sequence number up to this one is readable.
    pub last_seq: AtomicU64,
    pub counters: Counters,
    pub records: Mutex<Vec<CompactionRecord>>,
    pub level_stats: Mutex<crate::compaction::CompactionStats>,
    pub zone_capacity: u64,
    /// The deterministic mode's virtual clock, mirrored for readers that must not take the
    /// simulation's lock (ns).
    pub virtual_ns: AtomicU64,
    /// When the database opened (threaded mode's clock for the lifetime statistics).
    pub opened: std::time::Instant,
    pub compaction_ids: AtomicU64,
    pub flush_ids: AtomicU64,
    /// Jobs in a row that found no room for an output (see [`DbInner::job_ended`]).
    pub no_room_streak: AtomicU64,
}

/// What [`DbInner::new`] starts from.
pub(crate) struct Parts {
    pub fs: Arc<dyn FileSystem>,
    pub options: Options,
    pub picker: Arc<dyn Picker>,
    pub versions: VersionSet,
    pub writer: Writer,
    pub last_seq: SeqNo,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The blob garbage collection cutoff `options` name.
fn blob_cutoff(options: &Options, fs: &Arc<dyn FileSystem>) -> Box<dyn BlobGcCutoff> {
    match options.blob_gc_cutoff {
        BlobGcCutoffMode::Fixed => Box::new(FixedCutoff {
            age_cutoff: options.blob_garbage_collection_age_cutoff,
        }),
        BlobGcCutoffMode::Zone => Box::new(ZoneCutoff {
            zones: super::blobs::FsBlobZones(Arc::clone(fs)),
        }),
    }
}

impl DbInner {
    pub(crate) fn new(p: Parts) -> DbInner {
        let version = p.versions.current();
        let num_levels = version.num_levels();
        DbInner {
            table_options: TableOptions::from(&p.options),
            tables: Arc::new(TableCache::new(Arc::clone(&p.fs), &p.options)),
            blobs: Arc::new(BlobCache::new(Arc::clone(&p.fs))),
            blob_cutoff: blob_cutoff(&p.options, &p.fs),
            snapshots: Arc::new(SnapshotList::default()),
            state: Mutex::new(State {
                mem: Arc::new(Memtable::with_write_buffer_size(
                    p.options.write_buffer_size,
                )),
                imm: VecDeque::new(),
                version,
                compacting: HashSet::new(),
                running: Vec::new(),
                flushing: 0,
                compaction_wanted: true,
                bg_error: None,
                shutting_down: false,
                clock: p.versions.clock().cloned(),
                cursors: p.versions.compact_cursors().to_vec(),
            }),
            versions: Mutex::new(p.versions),
            changed: Condvar::new(),
            writer: Mutex::new(p.writer),
            write_queue: Default::default(),
            sim: Mutex::new(Sim::default()),
            last_seq: AtomicU64::new(p.last_seq),
            counters: Counters::default(),
            records: Mutex::new(Vec::new()),
            level_stats: Mutex::new(crate::compaction::CompactionStats::new(num_levels)),
            zone_capacity: p
                .fs
                .zoned()
                .map_or(0, |z| z.device().geometry().zone_capacity),
            virtual_ns: AtomicU64::new(0),
            opened: std::time::Instant::now(),
            compaction_ids: AtomicU64::new(0),
            flush_ids: AtomicU64::new(0),
            no_room_streak: AtomicU64::new(0),
            picker: p.picker,
            options: p.options,
            fs: p.fs,
        }
    }

    pub(crate) fn deterministic(&self) -> bool {
        self.options.mode == ExecMode::Deterministic
    }

    /// The database's clock in ns since the open: virtual in deterministic mode (so that
    /// figures in seconds are reproducible), wall time in threaded mode.
    pub(crate) fn now_ns(&self) -> u64 {
        if self.deterministic() {
            return self.virtual_ns.load(Ordering::Relaxed);
        }
        u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    pub(crate) fn lock_versions(&self) -> VersionsGuard<'_> {
        VersionsGuard::new(lock(&self.versions))
    }

    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        lock(&self.writer)
    }

    pub(crate) fn writer_mutex(&self) -> &Mutex<Writer> {
        &self.writer
    }

    pub(crate) fn lock_sim(&self) -> MutexGuard<'_, Sim> {
        lock(&self.sim)
    }

    pub(crate) fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn wait_timeout<'a>(
        &self,
        st: MutexGuard<'a, State>,
        timeout: std::time::Duration,
    ) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(st, timeout)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0)
    }

    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    pub(crate) fn last_sequence(&self) -> SeqNo {
        self.last_seq.load(Ordering::Acquire)
    }

    pub(crate) fn new_file_number(&self) -> u64 {
        self.lock_versions().new_file_number()
    }

    /// A flush or compaction ended. A failure is a background error (from now on the
    /// database refuses writes), except no room for an output table: the job changed
    /// nothing, so the zone cleaner gets its turn and the job runs again (RocksDB resumes
    /// after a no-space error too). In threaded mode the job's thread waits for the
    /// background cleaner; in deterministic mode the cleaner runs inline at once, as a
    /// writer that finds no zone does, and the simulation takes the job again at the same
    /// instant. [`MAX_NO_ROOM_RETRIES`] such failures in a row, with no job succeeding in
    /// between, are a background error after all: the cleaner cannot free enough.
    pub(crate) fn job_ended<T>(&self, result: &Result<T>) {
        let Err(e) = result else {
            self.no_room_streak.store(0, Ordering::Relaxed);
            return;
        };
        let soft = matches!(e, Error::NoRoomForOutput { .. });
        if soft && self.no_room_streak.fetch_add(1, Ordering::Relaxed) < MAX_NO_ROOM_RETRIES {
            Counters::add(&self.counters.no_room_retries, 1);
            if !self.deterministic() {
                self.wait_for_room();
                return;
            }
            if self.clean_for_retry() {
                return;
            }
        }
        self.set_bg_error(e);
    }

    /// Whether a job that failed with `e` runs again (see [`DbInner::job_ended`], which
    /// must have seen the failure): no room for its output, and no background error.
    pub(crate) fn job_retried(&self, e: &Error) -> bool {
        matches!(e, Error::NoRoomForOutput { .. }) && self.lock_state().bg_error.is_none()
    }

    /// Threaded mode's turn for the cleaner after a job found no room: the job's thread
    /// waits for the background cleaner's run.
    fn wait_for_room(&self) {
        // Without zones nothing cleans: the pause lets deletions free space.
        let cleaned = self
            .fs
            .zoned()
            .is_some_and(|z| z.wait_for_cleaner(NO_ROOM_WAIT));
        if !cleaned {
            std::thread::sleep(NO_ROOM_PAUSE);
        }
    }

    /// Deterministic mode's turn for the cleaner after a job found no room: a cleaning run
    /// now, up to `gc_stop`. Whether the job may run again: the run failing is the
    /// background error, and without zones there is nothing to wait for.
    fn clean_for_retry(&self) -> bool {
        let Some(fs) = self.fs.zoned() else {
            return false;
        };
        match fs.clean_now() {
            Ok(_) => true,
            Err(e) => {
                self.set_bg_error(&Error::fs("zone cleaning", e));
                false
            }
        }
    }

    /// Records the first background error: from now on the database refuses writes.
    pub(crate) fn set_bg_error(&self, e: &Error) {
        let mut st = self.lock_state();
        if st.bg_error.is_none() {
            st.bg_error = Some(e.to_string());
        }
        drop(st);
        self.notify();
    }

    /// `NotWritable` if a background error happened or the database is closing.
    pub(crate) fn check_writable(&self) -> Result<()> {
        let st = self.lock_state();
        writable(&st)
    }

    /// Logs `edit` (with the last sequence number), installs the version it makes and, in
    /// the same step, applies `also` to the state. A failure is a background error: the
    /// edit may or may not be durable, so nothing may rely on either outcome.
    pub(crate) fn apply_edit(
        &self,
        edit: VersionEdit,
        also: impl FnOnce(&mut State),
    ) -> Result<Arc<Version>> {
        let mut vs = self.lock_versions();
        let seq = self.last_sequence().max(vs.last_sequence());
        vs.set_last_sequence(seq);
        vs.set_time(self.now_ns());
        let before = vs.current();
        if let Err(e) = vs.log_and_apply(edit) {
            drop(vs);
            self.set_bg_error(&e);
            return Err(e);
        }
        let version = vs.current();
        let mut st = self.lock_state();
        st.version = Arc::clone(&version);
        st.clock = vs.clock().cloned();
        st.cursors.clone_from(&vs.compact_cursors().to_vec());
        st.compaction_wanted = true;
        also(&mut st);
        drop(st);
        drop(vs);
        self.notify();
        self.delete_dropped_blobs(&before, &version);
        Ok(version)
    }

    /// Books work in the per-level compaction statistics.
    pub(crate) fn book(&self, f: impl FnOnce(&mut crate::compaction::CompactionStats)) {
        f(&mut lock(&self.level_stats));
    }

    /// A copy of the per-level compaction statistics.
    pub(crate) fn level_stats(&self) -> crate::compaction::CompactionStats {
        lock(&self.level_stats).clone()
    }

    /// A job's wall time in microseconds; 0 in deterministic mode, whose statistics must
    /// be identical from run to run.
    pub(crate) fn job_micros(&self, start: std::time::Instant) -> u64 {
        if self.deterministic() {
            return 0;
        }
        u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The compaction records so far.
    pub(crate) fn lock_records(&self) -> MutexGuard<'_, Vec<CompactionRecord>> {
        lock(&self.records)
    }
}

/// `NotWritable` if a background job failed.
pub(crate) fn check_bg_error(st: &State) -> Result<()> {
    match &st.bg_error {
        Some(e) => Err(Error::NotWritable(format!(
            "a background job failed earlier: {e}"
        ))),
        None => Ok(()),
    }
}

/// `NotWritable` if a background error happened or the database is closing.
pub(crate) fn writable(st: &State) -> Result<()> {
    check_bg_error(st)?;
    if st.shutting_down {
        return Err(Error::NotWritable("the database is closing".into()));
    }
    Ok(())
}
