//! The public face of the database: [`Db`] and its read and write options.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use zkv_zonefs::fs::{InlineCleaning, ZoneFs};

use crate::fs::{FileSystem, SharedFileSystem};

use crate::batch::WriteBatch;
use crate::compaction::scores_by_level;
use crate::iter::DbIter;
use crate::key::{SeqNo, ValueKind};
use crate::options::{ExecMode, Options};
use crate::version::{BlobFileMeta, FileMeta};
use crate::{Error, Result};

use super::background::{spawn_threads, Requester};
use super::hint_source::LiveHints;
use super::inner::{DbInner, Parts};
use super::recovery::{recover, recover_read_only, Recovered, RecoveryReport};
use super::snapshot::Snapshot;
use super::stats::{BlobStats, CompactionRecord, Counters, DbStats, LevelShape};

/// Registers the database with the zone cleaner of `fs`: its compaction requester, and
/// the source of live SSTs' hints when the placement policy reads neighbourhoods or
/// predictions (only they are worth the version walk an answer costs).
fn register_with_cleaner(fs: &ZoneFs, inner: &Arc<DbInner>) {
    fs.set_compaction_requester(Arc::new(Requester {
        inner: Arc::downgrade(inner),
    }));
    if fs.placement_wants_neighbors() || fs.wants_lifetimes() {
        fs.set_hint_source(Arc::new(LiveHints {
            inner: Arc::downgrade(inner),
        }));
    }
}

/// Options of one write (RocksDB's `WriteOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Sync the WAL before the write is acknowledged: the write survives a power cut.
    pub sync: bool,
    /// Do not log the write: it survives a crash only once flushed to an SST.
    pub disable_wal: bool,
}

impl WriteOptions {
    /// A write synced to the WAL before it returns.
    pub fn synced() -> WriteOptions {
        WriteOptions {
            sync: true,
            ..WriteOptions::default()
        }
    }
}

/// Options of one read (RocksDB's `ReadOptions`).
#[derive(Clone, Debug, Default)]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot (default: the last acknowledged write).
    pub snapshot: Option<&'a Snapshot>,
    /// Iterators: the first user key they may return (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: the user key they stop before (exclusive).
    pub upper_bound: Option<Vec<u8>>,
}

impl<'a> ReadOptions<'a> {
    /// Reads as of `snapshot`.
    pub fn at(snapshot: &'a Snapshot) -> ReadOptions<'a> {
        ReadOptions {
            snapshot: Some(snapshot),
            ..ReadOptions::default()
        }
    }

    /// Limits iterators to the keys that start with `prefix`: the lower bound is the
    /// prefix, the upper bound the first key above every key that starts with it (none
    /// when the prefix is all `0xff` bytes).
    pub fn prefix(mut self, prefix: &[u8]) -> ReadOptions<'a> {
        self.lower_bound = Some(prefix.to_vec());
        self.upper_bound = prefix_end(prefix);
        self
    }
}

/// The smallest key above every key that starts with `prefix`: the prefix without its
/// trailing `0xff` bytes, its last byte incremented; `None` if there is none.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix.get(..=keep)?.to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    Some(end)
}

/// The memtables of a database now: for a read-only database, the writes it replayed
/// from the WALs; for a read-write one, the writes not flushed yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemtableShape {
    /// Memtables holding entries (the active one and those waiting for their flush).
    pub memtables: usize,
    /// Their accounted size (Σ `Memtable::approximate_memory_usage`).
    pub bytes: u64,
}

/// The refusal of every write, flush and compaction of a read-only database.
const READ_ONLY: &str = "opened read-only";

/// An open database on a file system (the zoned file layer, or a directory). `Send + Sync`: share it between threads
/// behind an `Arc`. Dropping it stops its background threads and closes its WAL.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Vec<JoinHandle<()>>,
    recovery: RecoveryReport,
    read_only: bool,
}

impl Db {
    /// The shared state, for the unit tests of the write path.
    #[cfg(test)]
    pub(crate) fn inner(&self) -> &DbInner {
        &self.inner
    }

    /// Opens (or creates, if `create_if_missing`) the database on `fs`, the zoned file
    /// layer (an `Arc<ZoneFs>`) or any other [`FileSystem`] (a directory: [`PosixFs`]):
    /// recovers the version set, replays the WALs, flushes the replayed writes to L0,
    /// deletes files no version needs, registers with the zone cleaner (on zones: its
    /// compaction requester and, when the placement policy reads neighbourhoods or
    /// predictions, the source of live SSTs' hints) and starts the background threads
    /// (threaded mode) or starts the jobs due on the virtual clock (deterministic).
    ///
    /// [`PosixFs`]: crate::fs::PosixFs
    pub fn open(fs: impl SharedFileSystem, options: Options) -> Result<Db> {
        let fs = fs.shared();
        let (inner, report) = Db::start(&fs, options, recover)?;
        inner.count_recovery_flushes(&report.flushes);
        if let Some(zoned) = fs.zoned() {
            register_with_cleaner(zoned, &inner);
        }
        let threads = match inner.options.mode {
            ExecMode::Threaded => spawn_threads(&inner)?,
            ExecMode::Deterministic => {
                // The jobs due start at virtual time 0.
                inner.sim_tick(0)?;
                Vec::new()
            }
        };
        Ok(Db {
            inner,
            threads,
            recovery: report,
            read_only: false,
        })
    }

    /// Opens the existing database on `fs` without writing anything: recovers the version
    /// set and replays the WALs into a memtable that stays in memory. No table is written,
    /// no manifest edit logged, no WAL started, no file deleted; no background thread
    /// starts, no compaction runs and no requester is registered with the zone cleaner.
    /// Works on a read-only mount ([`ZoneFs::mount_read_only`]); on a read-write mount,
    /// no other handle may write the database while this one is open.
    ///
    /// Reads see what a read-write open would see. Writes, [`Db::flush`] and
    /// [`Db::compact_all`] return `Error::NotWritable("opened read-only")`.
    /// `create_if_missing` is ignored: without a database, the open fails with
    /// `InvalidArgument`. The options still shape what is read (the number of levels, the
    /// compaction scores), but `write_buffer_size` does not cut the replay.
    pub fn open_read_only(fs: impl SharedFileSystem, options: Options) -> Result<Db> {
        let (inner, report) = Db::start(&fs.shared(), options, recover_read_only)?;
        Ok(Db {
            inner,
            threads: Vec::new(),
            recovery: report,
            read_only: true,
        })
    }

    /// Checks the options, recovers with `recover` and builds the shared state, with the
    /// memtable recovery kept (if any).
    fn start(
        fs: &Arc<dyn FileSystem>,
        options: Options,
        recover: fn(&Arc<dyn FileSystem>, &Options) -> Result<Recovered>,
    ) -> Result<(Arc<DbInner>, RecoveryReport)> {
        options.check()?;
        let picker = options.resolve_picker()?;
        let rec = recover(fs, &options)?;
        let inner = Arc::new(DbInner::new(Parts {
            fs: Arc::clone(fs),
            options,
            picker,
            versions: rec.versions,
            writer: rec.writer,
            last_seq: rec.last_seq,
        }));
        if let Some(mem) = rec.mem {
            inner.lock_state().mem = mem;
        }
        Ok((inner, rec.report))
    }

    /// Whether the database was opened with [`Db::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// `NotWritable` for a read-only database.
    fn check_not_read_only(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::NotWritable(READ_ONLY.into()));
        }
        Ok(())
    }

    /// Sets `key` to `value`.
    pub fn put(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_not_read_only()?;
        self.inner.write_one(opts, ValueKind::Put, key, value)
    }

    /// Deletes `key` (writes a tombstone).
    pub fn delete(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        self.check_not_read_only()?;
        self.inner.write_one(opts, ValueKind::Delete, key, &[])
    }

    /// Applies `batch` atomically: readers see all of it or none of it, and so does
    /// recovery.
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.check_not_read_only()?;
        self.inner.write(opts, batch)
    }

    /// The value of `key`, or `None` if it has none (never written, or deleted).
    pub fn get(&self, opts: &ReadOptions<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let found = self.inner.get(opts, key);
        self.read_done();
        found
    }

    /// A forward iterator over the keys in the read's bounds, as of its snapshot (or of
    /// now). It pins the memtables and files it reads: writes and compactions after its
    /// creation do not change what it returns.
    pub fn iter(&self, opts: &ReadOptions<'_>) -> Result<DbIter> {
        let iter = self.inner.iter(opts);
        self.read_done();
        iter
    }

    /// Deterministic mode: a read advances the virtual clock by its cost. A job that fails
    /// meanwhile is the database's background error (writes report it); the read's own
    /// answer stands.
    fn read_done(&self) {
        if self.inner.deterministic() && !self.read_only {
            let _ = self.inner.sim_tick(self.inner.options.sim.read_op_ns);
        }
    }

    /// The deterministic mode's virtual time since open; `None` in threaded mode.
    pub fn virtual_time(&self) -> Option<Duration> {
        (self.inner.deterministic() && !self.read_only)
            .then(|| Duration::from_nanos(self.inner.lock_sim().now()))
    }

    /// Lets `d` pass without a request (a client's think time, a rate limiter's pause):
    /// threaded mode sleeps, deterministic mode advances the virtual clock, running the
    /// jobs that end meanwhile. Returns the background error if one of them failed.
    pub fn pass_time(&self, d: Duration) -> Result<()> {
        if !self.inner.deterministic() || self.read_only {
            std::thread::sleep(d);
            return Ok(());
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.inner.sim_tick(ns)
    }

    /// A snapshot of the database now (released when dropped).
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshots.acquire(self.inner.last_sequence())
    }

    /// The sequence number of the last acknowledged write.
    pub fn last_sequence(&self) -> SeqNo {
        self.inner.last_sequence()
    }

    /// Flushes the memtable to L0 and waits for the flush (deterministic mode: in virtual
    /// time, while the jobs running meanwhile go on).
    pub fn flush(&self) -> Result<()> {
        self.check_not_read_only()?;
        self.inner.flush()
    }

    /// Waits until no flush or compaction is queued or running (deterministic mode: in
    /// virtual time). Returns the background error if a job failed. A read-only database has no
    /// background work: `Ok` at once.
    pub fn wait_for_background(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.inner.wait_background_idle()
    }

    /// Turns zone cleaning without a background cleaner thread on or off. Threaded mode:
    /// the file layer's eager inline cleaning (a writer asking for a zone below `gc_start`
    /// cleans first). Deterministic mode: the virtual cleaner thread, with the file layer
    /// cleaning inline only for a writer that finds no zone (`InlineCleaning::OutOfSpace`;
    /// the virtual cleaner runs whenever the file layer is in that mode, however it was
    /// set; with eager inline cleaning set on the file layer directly, the writers clean
    /// and the virtual cleaner does not run).
    ///
    /// Without zones (a directory) there is no cleaning: nothing to turn on.
    pub fn set_inline_cleaning(&self, on: bool) {
        let Some(fs) = self.inner.fs.zoned() else {
            return;
        };
        match (on, self.inner.deterministic()) {
            (true, true) => fs.set_inline_mode(InlineCleaning::OutOfSpace),
            _ => fs.set_inline_cleaning(on),
        }
    }

    /// Compacts until no level has a score ≥ 1 and waits for it (deterministic mode: in
    /// virtual time). The memtable is not flushed; call [`Db::flush`] first for that.
    /// Returns the background error if a job failed.
    pub fn compact_all(&self) -> Result<()> {
        self.check_not_read_only()?;
        self.inner.want_compaction();
        self.inner.wait_background_idle()
    }

    /// Compacts the user keys `[begin, end]` (`None` = unbounded) down to the last level
    /// holding data in that range (RocksDB's `CompactRange` with its defaults): the
    /// memtable is flushed, then the range's files go down a level at a time, one file per
    /// step, so deleted and overwritten entries are dropped and their space freed even on
    /// a nearly full device. The last level is not rewritten. Deterministic mode: the
    /// steps run at one virtual instant, after the queued background work.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.check_not_read_only()?;
        self.inner.flush()?;
        self.inner.wait_background_idle()?;
        self.inner.compact_range(begin, end)?;
        self.inner.want_compaction();
        self.inner.wait_background_idle()
    }

    /// Waits for background work, stops the threads and syncs the WAL. The memtable is
    /// not flushed: the next open replays it from the WAL.
    pub fn close(mut self) -> Result<()> {
        let waited = self.wait_for_background();
        let stopped = self.stop();
        waited.and(stopped)
    }

    fn stop(&mut self) -> Result<()> {
        self.inner.shut_down();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
        if self.read_only {
            // It registered no requester and has no WAL; a requester on the file system
            // is another handle's.
            return Ok(());
        }
        if let Some(zoned) = self.inner.fs.zoned() {
            zoned.clear_compaction_requester();
            if zoned.placement_wants_neighbors() {
                zoned.clear_hint_source();
            }
        }
        self.inner.close_wal()
    }

    /// What open found and did.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// The file system the database lives on.
    pub fn file_system(&self) -> &Arc<dyn FileSystem> {
        &self.inner.fs
    }

    /// The zoned file layer the database lives on; `None` on any other file system.
    pub fn zone_fs(&self) -> Option<&ZoneFs> {
        self.inner.fs.zoned()
    }

    /// The files of the current version, level by level.
    pub fn live_files(&self) -> Vec<(usize, FileMeta)> {
        let version = Arc::clone(&self.inner.lock_state().version);
        version
            .all_files()
            .map(|(level, f)| (level, FileMeta::clone(f)))
            .collect()
    }

    /// The blob files of the current version, oldest first.
    pub fn blob_files(&self) -> Vec<BlobFileMeta> {
        let version = Arc::clone(&self.inner.lock_state().version);
        version
            .blob_files()
            .map(|b| BlobFileMeta::clone(b))
            .collect()
    }

    /// The memtables now (see [`MemtableShape`]).
    pub fn memtables(&self) -> MemtableShape {
        let st = self.inner.lock_state();
        let mems = std::iter::once(&st.mem).chain(st.imm.iter().map(|i| &i.mem));
        let mut shape = MemtableShape::default();
        for m in mems.filter(|m| !m.is_empty()) {
            shape.memtables += 1;
            shape.bytes += m.approximate_memory_usage();
        }
        shape
    }

    /// The compaction records so far.
    pub fn compaction_records(&self) -> Vec<CompactionRecord> {
        self.inner.lock_records().clone()
    }

    /// RocksDB's "Compaction Stats" table of the current version and the work so far.
    pub fn compaction_stats_table(&self) -> String {
        let (version, compacting) = self.version_and_compacting();
        let scores = scores_by_level(&version, &self.inner.options, &compacting);
        self.inner
            .level_stats()
            .to_table(&version, &scores, &compacting)
    }

    fn version_and_compacting(&self) -> (Arc<crate::version::Version>, HashSet<u64>) {
        self.inner.version_and_compacting()
    }

    /// Counters, the LSM's shape and the compaction records.
    pub fn stats(&self) -> DbStats {
        let inner = &self.inner;
        let c = &inner.counters;
        let (version, compacting) = self.version_and_compacting();
        let scores = scores_by_level(&version, &inner.options, &compacting);
        let levels = scores
            .into_iter()
            .enumerate()
            .map(|(level, score)| LevelShape {
                level,
                files: version.num_files(level),
                bytes: version.level_bytes(level),
                score,
            })
            .collect();
        // Each takes the version-set lock: not inside the literal below, whose temporaries
        // (a lock guard) live to its end.
        let lifetime = inner.lifetime_summary();
        let manifest_bytes = inner.lock_versions().manifest_bytes();
        DbStats {
            user_bytes: Counters::get(&c.user_bytes),
            wal_bytes: Counters::get(&c.wal_bytes),
            writes: Counters::get(&c.writes),
            puts: Counters::get(&c.puts),
            deletes: Counters::get(&c.deletes),
            flush_bytes: Counters::get(&c.flush_bytes),
            flushes: Counters::get(&c.flushes),
            compaction_read_bytes: Counters::get(&c.compaction_read_bytes),
            compaction_write_bytes: Counters::get(&c.compaction_write_bytes),
            compactions: Counters::get(&c.compactions),
            trivial_moves: Counters::get(&c.trivial_moves),
            trivial_move_bytes: Counters::get(&c.trivial_move_bytes),
            subcompactions: Counters::get(&c.subcompactions),
            compaction_micros: Counters::get(&c.compaction_micros),
            requested_compactions: Counters::get(&c.requested_compactions),
            manifest_bytes,
            stall_ns: Counters::get(&c.stall_ns),
            stall_stops: Counters::get(&c.stops),
            stall_delays: Counters::get(&c.delays),
            space_stalls: Counters::get(&c.space_stalls),
            grouped_writes: Counters::get(&c.grouped_writes),
            no_room_retries: Counters::get(&c.no_room_retries),
            picker_ns: Counters::get(&c.picker_ns),
            picker_calls: Counters::get(&c.picker_calls),
            neighbors_ns: Counters::get(&c.neighbors_ns),
            neighbors_calls: Counters::get(&c.neighbors_calls),
            prediction_ns: Counters::get(&c.prediction_ns),
            prediction_calls: Counters::get(&c.prediction_calls),
            lifetime,
            levels,
            level_stats: inner.level_stats(),
            records: inner.lock_records().clone(),
            blob: blob_stats(c, &version),
            block_cache: inner.tables.block_cache_stats(),
            open_tables: inner.tables.open_tables(),
        }
    }
}

/// The blob counters and the version's blob files.
fn blob_stats(c: &Counters, version: &crate::version::Version) -> BlobStats {
    let mut s = BlobStats {
        files_created: Counters::get(&c.blob_files_created),
        bytes_written: Counters::get(&c.blob_file_bytes),
        files_deleted: Counters::get(&c.blob_files_deleted),
        gc_relocated: Counters::get(&c.blob_gc_relocated),
        gc_relocated_bytes: Counters::get(&c.blob_gc_relocated_bytes),
        ..BlobStats::default()
    };
    for b in version.blob_files() {
        s.live_files += 1;
        s.file_bytes += b.file_size;
        s.total_bytes += b.total_bytes;
        s.garbage_bytes += b.garbage_bytes;
    }
    s
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("mode", &self.inner.options.mode)
            .field("read_only", &self.read_only)
            .field("last_sequence", &self.inner.last_sequence())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_above_every_key_that_starts_with_it() {
        assert_eq!(prefix_end(b"log/"), Some(b"log0".to_vec()));
        assert_eq!(prefix_end(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
        let opts = ReadOptions::default().prefix(b"ab");
        assert_eq!(opts.lower_bound.as_deref(), Some(&b"ab"[..]));
        assert_eq!(opts.upper_bound.as_deref(), Some(&b"ac"[..]));
    }
}
