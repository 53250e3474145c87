//! Options of the engine, with RocksDB's names and (RocksDB 7.8) defaults where RocksDB has
//! them. `Options::check` rejects impossible combinations with a clear message.

use std::fmt;
use std::sync::Arc;

use crate::blob::BlobCount;
use crate::compaction::{picker_by_name, Picker};
pub use crate::sst::CompressionType;
use crate::{Error, Result};

const MIB: u64 = 1 << 20;

/// `write_buffer_size` unless set (RocksDB's default).
pub const DEFAULT_WRITE_BUFFER_SIZE: u64 = 64 * MIB;

/// How background work (flush, compaction, zone cleaning) runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExecMode {
    /// Background threads for flushes and compactions.
    #[default]
    Threaded,
    /// A discrete-event simulation of the threaded mode on a virtual clock: foreground
    /// operations advance the clock by a cost model ([`SimCosts`]), flushes and compactions
    /// occupy virtual background threads for modelled durations and take effect when they
    /// end, stalls follow RocksDB's triggers in virtual time. One OS thread does it all, in
    /// a fixed order, so the same operations give byte-identical files and metrics.
    Deterministic,
}

/// Which blob files garbage collection relocates (`blob::BlobGcCutoff`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlobGcCutoffMode {
    /// RocksDB's `blob_garbage_collection_age_cutoff`: a fixed fraction of the oldest.
    #[default]
    Fixed,
    /// The Same-Victim paper's Z_Cutoff: the oldest up to the smallest youngest blob file
    /// number (YBIZ) of the file layer's full blob zones.
    Zone,
}

impl BlobGcCutoffMode {
    /// The mode's name (the command line's and the reports'): `fixed` or `zone`.
    pub fn name(self) -> &'static str {
        match self {
            BlobGcCutoffMode::Fixed => "fixed",
            BlobGcCutoffMode::Zone => "zone",
        }
    }

    /// The mode named `name`; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<BlobGcCutoffMode> {
        [BlobGcCutoffMode::Fixed, BlobGcCutoffMode::Zone]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

impl ExecMode {
    /// The mode's name (the command line's and the reports'): `threaded` or
    /// `deterministic`.
    pub fn name(self) -> &'static str {
        match self {
            ExecMode::Threaded => "threaded",
            ExecMode::Deterministic => "deterministic",
        }
    }

    /// The mode named `name`; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<ExecMode> {
        [ExecMode::Threaded, ExecMode::Deterministic]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// What WAL recovery does with a WAL record that is not intact (a failed check, a log
/// ending inside a record) or that is intact but cannot be replayed (an unknown record
/// type, a payload that is not a write batch). RocksDB's `wal_recovery_mode`, with its four
/// modes; what each dropped is listed in `RecoveryReport::dropped`, never dropped silently.
///
/// zkv's default is [`WalRecoveryMode::AbsoluteConsistency`], not RocksDB's
/// [`WalRecoveryMode::PointInTime`]. RocksDB's files can end in a torn record (a write cut
/// by a crash), and point-in-time recovery exists to cut such a tail off. zkv's file layer
/// never exposes one: a file's visible content is exactly the bytes of its last sync, so
/// every WAL record a reader sees was synced whole (see the `log` module, "Durability"). A
/// record that fails a check is therefore damage (a flipped bit), and dropping it would
/// drop a write that was acknowledged as synced: a deleted key could come back, a value
/// could go stale. The default refuses to open instead; the other modes are there to get a
/// damaged database open on purpose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WalRecoveryMode {
    /// Any bad record in any WAL is `Error::Corruption` naming the WAL file and the offset.
    /// zkv's default: on zkv's file layer no bad record can be a torn write.
    #[default]
    AbsoluteConsistency,
    /// Damage at the tail of the WAL sequence (no valid record follows it, in its WAL or in
    /// a later one) ends the replay and is reported; any other bad record is
    /// `Error::Corruption`. RocksDB tolerates such a tail because a crash can tear it; on
    /// zkv's file layer it cannot, so this mode can drop a synced write whose record was
    /// damaged.
    TolerateCorruptedTailRecords,
    /// RocksDB's default: replay stops at the first damaged record, and that record and
    /// everything after it, in its WAL and in every later WAL, is ignored and reported. The
    /// database opens in the state of a prefix of the writes; the synced writes after the
    /// damage are lost.
    PointInTime,
    /// Bad records, and intact records that are not valid write batches, are skipped and
    /// reported, and replay goes on with the next valid record. The result need not be a
    /// state the database was ever in (a write in the middle is missing), and a record
    /// found inside a damaged record's bytes (a value holding an encoded WAL record) may be
    /// replayed.
    SkipAnyCorruptedRecords,
}

impl WalRecoveryMode {
    /// Every mode, in the order of [`Self::NAMES`].
    pub const ALL: [WalRecoveryMode; 4] = [
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::PointInTime,
        WalRecoveryMode::SkipAnyCorruptedRecords,
    ];

    /// The modes' names (the command line's and the reports').
    pub const NAMES: [&'static str; 4] = [
        "absolute-consistency",
        "tolerate-corrupted-tail-records",
        "point-in-time",
        "skip-any-corrupted-records",
    ];

    /// The mode's name, one of [`WalRecoveryMode::NAMES`].
    pub fn name(self) -> &'static str {
        match self {
            WalRecoveryMode::AbsoluteConsistency => Self::NAMES[0],
            WalRecoveryMode::TolerateCorruptedTailRecords => Self::NAMES[1],
            WalRecoveryMode::PointInTime => Self::NAMES[2],
            WalRecoveryMode::SkipAnyCorruptedRecords => Self::NAMES[3],
        }
    }

    /// The mode named `name`; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<WalRecoveryMode> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl std::fmt::Display for WalRecoveryMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A compaction picker held by [`Options`]: options compare equal when they hold the
/// same picker object, and print its name.
#[derive(Clone)]
pub struct PickerRef(pub Arc<dyn Picker>);

impl fmt::Debug for PickerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PickerRef({:?})", self.0.name())
    }
}

impl PartialEq for PickerRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How the database is opened and run: the memtables, the levels and their compaction, the
/// tables, blob files, the WAL and the execution mode. Given at open; [`Options::check`]
/// rejects impossible combinations.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Create the database if the file system holds none.
    pub create_if_missing: bool,
    /// Fail if the file system already holds a database.
    pub error_if_exists: bool,
    /// Bytes of a memtable before it becomes immutable and is flushed (64 MiB).
    pub write_buffer_size: u64,
    /// Memtables (mutable + immutable) before writes stop waiting for a flush (2).
    pub max_write_buffer_number: u32,
    /// Number of levels (7).
    pub num_levels: u32,
    /// Target size of an SST of L1 (64 MiB); compaction outputs are cut at the target.
    pub target_file_size_base: u64,
    /// Target size of Ln+1 files = target of Ln × this (1).
    pub target_file_size_multiplier: u64,
    /// Target bytes of L1 (256 MiB).
    pub max_bytes_for_level_base: u64,
    /// Target of Ln+1 = target of Ln × this (10).
    pub max_bytes_for_level_multiplier: f64,
    /// L0 files that make L0's score 1 (4).
    pub level0_file_num_compaction_trigger: u32,
    /// L0 files at which writes are slowed down (20).
    pub level0_slowdown_writes_trigger: u32,
    /// L0 files at which writes stop until a compaction finishes (36).
    pub level0_stop_writes_trigger: u32,
    /// Estimated pending compaction bytes at which writes slow down (64 GiB).
    pub soft_pending_compaction_bytes_limit: u64,
    /// Estimated pending compaction bytes at which writes stop (256 GiB).
    pub hard_pending_compaction_bytes_limit: u64,
    /// Upper bound of a compaction's input bytes when it is expanded; 0 = 25 ×
    /// `target_file_size_base` (RocksDB's rule).
    pub max_compaction_bytes: u64,
    /// Let non-bottommost compaction outputs end early at a grandparent file boundary (from
    /// 50% of the target size) or grow up to twice the target, so that they line up with
    /// the next level's files (true; see `compaction::job::JobRules`).
    pub level_compaction_dynamic_file_size: bool,
    /// Concurrent compactions (threads, real or virtual; RocksDB derives 1 from
    /// max_background_jobs 2).
    pub max_background_compactions: u32,
    /// Concurrent flushes (threads, real or virtual; 1). A flush takes the immutable
    /// memtables queued that no running flush took, so a second flush starts when a
    /// memtable fills while the first runs; flushes install in memtable order.
    pub max_background_flushes: u32,
    /// Key ranges an L0 compaction is split into, each run by its own thread with its own
    /// output tables and blob files (RocksDB's `max_subcompactions`; 1).
    pub max_subcompactions: u32,
    /// The compaction picker by name (see `compaction::PICKER_TABLE`); RocksDB's default
    /// kMinOverlappingRatio is `min-overlap`, kByCompensatedSize is `sica`.
    pub compaction_pri: String,
    /// A picker given as a value, e.g. one of the program's own: when set, it orders the
    /// files and `compaction_pri` is only its name in reports ([`Options::with_picker`]).
    pub picker: Option<PickerRef>,
    /// Prophet's SHORT_THRESHOLD: SSTs of this level or above it (smaller level numbers)
    /// are short-lived for lifetime-aware placement (2, the paper's choice).
    pub prophet_short_threshold: u32,
    /// Bits per key of the SST bloom filter; 0 = no filter.
    pub bloom_bits_per_key: u32,
    /// Uncompressed size of an SST data block (4 KiB).
    pub block_size: u32,
    /// Keys between restart points of a data block (16).
    pub block_restart_interval: u32,
    /// How SST data blocks are compressed (RocksDB's `compression_type`; zkv's default is
    /// none, RocksDB's Snappy): each block is stored compressed only if that saves an
    /// eighth of it.
    pub compression: CompressionType,
    /// Bytes of the block cache: data blocks read by gets and iterators, validated once
    /// when they enter it (8 MiB, db_bench 7.8's `--cache_size`; 0 = no cache: every
    /// read goes to the device). Compactions read around it, as RocksDB's do.
    pub block_cache_size: u64,
    /// Tables kept open at most (their index and filter in memory); -1 = no limit
    /// (RocksDB's `max_open_files`, default -1). Tables beyond it are closed least
    /// recently used first and opened again when read.
    pub max_open_files: i32,
    /// In a write group (threaded mode's group commit), each write inserts its own batch
    /// into the memtable, all at once, after the leader wrote the group's WAL record,
    /// instead of the leader inserting them all (RocksDB's option of the name; true).
    /// Deterministic mode has one writer and no groups: it changes nothing there.
    pub allow_concurrent_memtable_write: bool,
    /// Background work mode.
    pub mode: ExecMode,
    /// What WAL recovery does with bad records (zkv's default: absolute consistency, see
    /// [`WalRecoveryMode`] for why it is not RocksDB's point-in-time).
    pub wal_recovery_mode: WalRecoveryMode,
    /// The deterministic mode's cost model (ignored in threaded mode).
    pub sim: SimCosts,
    /// Key-value separation (RocksDB's integrated BlobDB): flushes and compactions write
    /// values of at least `min_blob_size` bytes into blob files and keep a blob reference
    /// in the table (off).
    pub enable_blob_files: bool,
    /// The smallest value written to a blob file (0: every value).
    pub min_blob_size: u64,
    /// A blob file is finished once it reaches this size (256 MiB).
    pub blob_file_size: u64,
    /// Compactions rewrite the live blobs of the oldest blob files they meet into new ones
    /// (off).
    pub enable_blob_garbage_collection: bool,
    /// The oldest fraction of blob files whose blobs compactions rewrite (0.25).
    pub blob_garbage_collection_age_cutoff: f64,
    /// Once the garbage ratio of the oldest blob files (those within the age cutoff)
    /// reaches this, the tables linked to the oldest one are compacted (1.0: never).
    pub blob_garbage_collection_force_threshold: f64,
    /// How many of the oldest blob files garbage collection relocates: the age cutoff
    /// (`Fixed`, RocksDB's), or up to the file layer's full blob zones (`Zone`, Z_Cutoff).
    pub blob_gc_cutoff: BlobGcCutoffMode,
    /// Flushes and compactions write blob files only for outputs of this level or deeper
    /// (0: from flushes on).
    pub blob_file_starting_level: u32,
}

/// How long things take on the deterministic mode's virtual clock. A foreground write costs
/// `write_op_ns` plus `write_byte_ps` per byte of its WAL record, a read (`get`, or creating
/// an iterator) `read_op_ns`. A flush occupies the flush thread for `job_ns` plus
/// `flush_byte_ps` per memtable byte and `flush_entry_ns` per memtable entry; a compaction
/// occupies a compaction thread for `job_ns` plus `compaction_byte_ps` per input byte and
/// `compaction_entry_ns` per input entry; a trivial move for `job_ns`; the zone cleaner's
/// thread is busy with a victim for `job_ns` plus `clean_byte_ps` per valid byte in it.
/// With blob files, a blob a flush writes costs `blob_write_ns` plus `blob_write_byte_ps`
/// per byte instead of the flush's cost per memtable byte, and a blob a compaction's
/// garbage collection relocates costs its read (`blob_read_ns`, `blob_read_byte_ps`) and
/// its write on top of the compaction's cost per input byte and entry. What shapes the tree
/// is the ratio of the foreground rate to the background rate. The defaults are RocksDB
/// 7.8's `db_bench` on two cores (its LOG's compaction and flush times, its write rate
/// outside stalls), so that deterministic runs compact like RocksDB (`docs/ENGINE.md`,
/// "Deterministic mode").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimCosts {
    /// Nanoseconds per foreground write (batch), whatever its size.
    pub write_op_ns: u64,
    /// Picoseconds per byte of a write's WAL record.
    pub write_byte_ps: u64,
    /// Nanoseconds per read: a `get`, or creating an iterator.
    pub read_op_ns: u64,
    /// Fixed cost of every background job.
    pub job_ns: u64,
    /// Picoseconds per byte of the memtables a flush writes.
    pub flush_byte_ps: u64,
    /// Nanoseconds per memtable entry a flush writes.
    pub flush_entry_ns: u64,
    /// Picoseconds per input byte of a compaction (reading it and writing its output).
    pub compaction_byte_ps: u64,
    /// Nanoseconds per input entry of a compaction.
    pub compaction_entry_ns: u64,
    /// Picoseconds per valid byte of a zone the cleaner cleans (copying it out).
    pub clean_byte_ps: u64,
    /// Nanoseconds per blob written into a blob file, by a flush or by garbage collection.
    pub blob_write_ns: u64,
    /// Picoseconds per byte of a blob written (its record: header, key and value).
    pub blob_write_byte_ps: u64,
    /// Nanoseconds per blob garbage collection reads from a blob file.
    pub blob_read_ns: u64,
    /// Picoseconds per byte of a blob garbage collection reads.
    pub blob_read_byte_ps: u64,
    /// When a flush or compaction writes its output files, in percent of its duration: 0
    /// as it starts, 100 as it ends (then together with its install). A threaded job
    /// writes them over its whole duration; see `docs/ENGINE.md`, "When a job's outputs
    /// are written". At most 100 (`Options::check`).
    pub output_at_pct: u64,
    /// A compaction writes each output table at its own instant, as a thread writes each
    /// table once it has built it: table `k` of a (sub)compaction range's `n` at
    /// `(k + output_at_pct / 100) / n` of the range's duration (on, the default; off: all
    /// of them at `output_at_pct` of the job's, as before this option existed). Flushes
    /// write one table: it changes nothing for them.
    pub spread_outputs: bool,
}

impl Default for SimCosts {
    fn default() -> Self {
        SimCosts {
            write_op_ns: 1_950,
            write_byte_ps: 1_300,
            read_op_ns: 4_800,
            job_ns: 20_000,
            flush_byte_ps: 2_100,
            flush_entry_ns: 360,
            compaction_byte_ps: 1_800,
            compaction_entry_ns: 370,
            clean_byte_ps: 1_000,
            blob_write_ns: 2_650,
            blob_write_byte_ps: 1_330,
            blob_read_ns: 900,
            blob_read_byte_ps: 890,
            output_at_pct: 100,
            spread_outputs: true,
        }
    }
}

impl SimCosts {
    /// The instant a job running from `start` to `finish` writes its outputs.
    pub fn output_instant(&self, start: u64, finish: u64) -> u64 {
        let span = u128::from(finish.saturating_sub(start));
        let at = span * u128::from(self.output_at_pct) / 100;
        start.saturating_add(u64::try_from(at).unwrap_or(u64::MAX))
    }

    /// The instant table `k` of the `n` a (sub)compaction range running for `ns` from
    /// `start` builds is written, when they are spread (`spread_outputs`).
    pub fn table_instant(&self, start: u64, ns: u64, k: usize, n: usize) -> u64 {
        let n = n.max(1) as u128;
        let share = 100 * k as u128 + u128::from(self.output_at_pct);
        let at = u128::from(ns) * share / (100 * n);
        start.saturating_add(u64::try_from(at).unwrap_or(u64::MAX))
    }

    /// Virtual time of a foreground write of `bytes` (keys and values).
    pub fn write_ns(&self, bytes: u64) -> u64 {
        self.write_op_ns
            .saturating_add(bytes.saturating_mul(self.write_byte_ps) / 1000)
    }

    /// Virtual time of a flush of `bytes` of memtables holding `entries` entries, of which
    /// `blobs` go to blob files: their bytes cost the blob write's instead of the flush's
    /// per-byte cost (a blob file is written as it comes, with no block to build).
    pub fn flush_ns(&self, bytes: u64, entries: u64, blobs: BlobCount) -> u64 {
        let table_bytes = bytes.saturating_sub(blobs.bytes);
        self.job_ns
            .saturating_add(table_bytes.saturating_mul(self.flush_byte_ps) / 1000)
            .saturating_add(entries.saturating_mul(self.flush_entry_ns))
            .saturating_add(self.blob_write_ns(blobs))
    }

    /// Virtual time of writing `blobs` into blob files.
    fn blob_write_ns(&self, blobs: BlobCount) -> u64 {
        blobs
            .count
            .saturating_mul(self.blob_write_ns)
            .saturating_add(blobs.bytes.saturating_mul(self.blob_write_byte_ps) / 1000)
    }

    /// Virtual time of garbage collection relocating `blobs`: reading and writing them.
    fn blob_gc_ns(&self, blobs: BlobCount) -> u64 {
        let read = blobs
            .count
            .saturating_mul(self.blob_read_ns)
            .saturating_add(blobs.bytes.saturating_mul(self.blob_read_byte_ps) / 1000);
        read.saturating_add(self.blob_write_ns(blobs))
    }

    /// Virtual time of cleaning a zone holding `valid` bytes of live data.
    pub fn clean_ns(&self, valid: u64) -> u64 {
        self.job_ns
            .saturating_add(valid.saturating_mul(self.clean_byte_ps) / 1000)
    }

    /// Virtual time of a compaction reading `bytes` in `entries` entries whose garbage
    /// collection relocates `gc` (see [`crate::blob::gc_estimate`]).
    pub fn compaction_ns(&self, bytes: u64, entries: u64, gc: BlobCount) -> u64 {
        self.job_ns
            .saturating_add(bytes.saturating_mul(self.compaction_byte_ps) / 1000)
            .saturating_add(entries.saturating_mul(self.compaction_entry_ns))
            .saturating_add(self.blob_gc_ns(gc))
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: DEFAULT_WRITE_BUFFER_SIZE,
            max_write_buffer_number: 2,
            num_levels: 7,
            target_file_size_base: 64 * MIB,
            target_file_size_multiplier: 1,
            max_bytes_for_level_base: 256 * MIB,
            max_bytes_for_level_multiplier: 10.0,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            soft_pending_compaction_bytes_limit: 64 * 1024 * MIB,
            hard_pending_compaction_bytes_limit: 256 * 1024 * MIB,
            max_compaction_bytes: 0,
            level_compaction_dynamic_file_size: true,
            max_background_compactions: 1,
            max_background_flushes: 1,
            max_subcompactions: 1,
            compaction_pri: "min-overlap".into(),
            picker: None,
            prophet_short_threshold: 2,
            bloom_bits_per_key: 10,
            block_size: 4096,
            block_restart_interval: 16,
            compression: CompressionType::None,
            block_cache_size: 8 * MIB,
            max_open_files: -1,
            allow_concurrent_memtable_write: true,
            mode: ExecMode::Threaded,
            wal_recovery_mode: WalRecoveryMode::AbsoluteConsistency,
            sim: SimCosts::default(),
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 * MIB,
            enable_blob_garbage_collection: false,
            blob_garbage_collection_age_cutoff: 0.25,
            blob_gc_cutoff: BlobGcCutoffMode::Fixed,
            blob_garbage_collection_force_threshold: 1.0,
            blob_file_starting_level: 0,
        }
    }
}

impl Options {
    /// The effective `max_compaction_bytes`.
    pub fn max_compaction_bytes(&self) -> u64 {
        match self.max_compaction_bytes {
            0 => self.target_file_size_base.saturating_mul(25),
            n => n,
        }
    }

    /// Target size of an output file of `level` (L0 and L1 use the base).
    pub fn target_file_size(&self, level: usize) -> u64 {
        let mut size = self.target_file_size_base;
        for _ in 1..level {
            size = size.saturating_mul(self.target_file_size_multiplier);
        }
        size
    }

    /// Target bytes of `level` (≥ 1) with static level sizes.
    pub fn max_bytes_for_level(&self, level: usize) -> u64 {
        let mut bytes = self.max_bytes_for_level_base as f64;
        for _ in 1..level {
            bytes *= self.max_bytes_for_level_multiplier;
        }
        bytes.min(u64::MAX as f64) as u64
    }

    /// Rejects impossible option combinations.
    pub fn check(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::InvalidOptions(msg));
        if self.write_buffer_size < 4096 {
            return bad(format!(
                "write_buffer_size {} is below 4096 bytes",
                self.write_buffer_size
            ));
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be at least 2".into());
        }
        if !(2..=64).contains(&self.num_levels) {
            return bad(format!("num_levels {} is not in 2..=64", self.num_levels));
        }
        if self.target_file_size_base == 0 || self.target_file_size_multiplier == 0 {
            return bad("target_file_size_base and its multiplier must be positive".into());
        }
        if self.max_bytes_for_level_base == 0 {
            return bad("max_bytes_for_level_base must be positive".into());
        }
        if self.max_bytes_for_level_multiplier.is_nan() || self.max_bytes_for_level_multiplier < 1.0
        {
            return bad(format!(
                "max_bytes_for_level_multiplier {} must be at least 1",
                self.max_bytes_for_level_multiplier
            ));
        }
        if self.level0_file_num_compaction_trigger == 0
            || self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger
            || self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger
        {
            return bad(format!(
                "L0 triggers must satisfy 0 < compaction ({}) <= slowdown ({}) <= stop ({})",
                self.level0_file_num_compaction_trigger,
                self.level0_slowdown_writes_trigger,
                self.level0_stop_writes_trigger
            ));
        }
        if self.max_background_compactions == 0 {
            return bad("max_background_compactions must be at least 1".into());
        }
        if self.max_background_flushes == 0 || self.max_subcompactions == 0 {
            return bad("max_background_flushes and max_subcompactions must be at least 1".into());
        }
        self.resolve_picker()?
            .check(self)
            .map_err(Error::InvalidOptions)?;
        self.check_blob()?;
        if self.block_size < 64 || self.block_restart_interval == 0 {
            return bad(
                "block_size must be at least 64 and block_restart_interval positive".into(),
            );
        }
        if self.max_open_files == 0 || self.max_open_files < -1 {
            return bad("max_open_files must be -1 (no limit) or at least 1".into());
        }
        if self.sim.output_at_pct > 100 {
            return bad(format!(
                "sim.output_at_pct {} is not a percentage of a job's duration (0 to 100)",
                self.sim.output_at_pct
            ));
        }
        Ok(())
    }
}

impl Options {
    /// BlobDB's fractions and sizes, as RocksDB validates them.
    fn check_blob(&self) -> Result<()> {
        let fraction = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::InvalidOptions(format!(
                    "{name} {v} is not in [0, 1]"
                )))
            }
        };
        fraction(
            "blob_garbage_collection_age_cutoff",
            self.blob_garbage_collection_age_cutoff,
        )?;
        fraction(
            "blob_garbage_collection_force_threshold",
            self.blob_garbage_collection_force_threshold,
        )?;
        if self.blob_file_size == 0 {
            return Err(Error::InvalidOptions(
                "blob_file_size must be positive".into(),
            ));
        }
        Ok(())
    }

    /// Orders compactions with `picker` (a type of the program's, or a configured zkv
    /// one); `compaction_pri` becomes its name.
    pub fn with_picker(mut self, picker: Arc<dyn Picker>) -> Self {
        self.compaction_pri = picker.name().to_string();
        self.picker = Some(PickerRef(picker));
        self
    }

    /// The picker the options choose: the one given as a value, else the one
    /// `compaction_pri` names.
    pub fn resolve_picker(&self) -> Result<Arc<dyn Picker>> {
        match &self.picker {
            Some(PickerRef(p)) => Ok(Arc::clone(p)),
            None => picker_by_name(&self.compaction_pri).map_err(Error::InvalidOptions),
        }
    }

    /// Whether a flush or compaction writing to `level` writes blob files.
    pub fn writes_blobs_at(&self, level: usize) -> bool {
        self.enable_blob_files && level >= self.blob_file_starting_level as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::Acc;

    #[test]
    fn defaults_are_rocksdb_defaults_and_valid() {
        let o = Options::default();
        o.check().unwrap();
        assert_eq!(o.max_compaction_bytes(), 25 * 64 * MIB);
        assert_eq!(o.max_bytes_for_level(1), 256 * MIB);
        assert_eq!(o.max_bytes_for_level(3), 25600 * MIB);
        assert_eq!(o.target_file_size(4), 64 * MIB);
    }

    #[test]
    fn blob_work_costs_time_and_no_blob_costs_nothing() {
        let c = SimCosts::default();
        let none = BlobCount::default();
        // Without blobs a job costs what it cost before blob costs existed.
        assert_eq!(
            c.flush_ns(1_000_000, 1_000, none),
            20_000 + 2_100_000 + 360_000
        );
        assert_eq!(
            c.compaction_ns(1_000_000, 1_000, none),
            20_000 + 1_800_000 + 370_000
        );
        // A flush's blob bytes cost the blob write's instead of the memtable byte's.
        let blobs = BlobCount {
            count: 900,
            bytes: 900_000,
        };
        let flush =
            20_000 + 100_000 * 2_100 / 1000 + 360_000 + 900 * 2_650 + 900_000 * 1_330 / 1000;
        assert_eq!(c.flush_ns(1_000_000, 1_000, blobs), flush);
        // Garbage collection reads and writes every blob it relocates.
        let gc = 900 * (900 + 2_650) + 900_000 * (890 + 1_330) / 1000;
        assert_eq!(
            c.compaction_ns(1_000_000, 1_000, blobs),
            20_000 + 1_800_000 + 370_000 + gc
        );
    }

    #[test]
    fn wal_recovery_modes_have_names_and_absolute_consistency_is_the_default() {
        assert_eq!(
            Options::default().wal_recovery_mode,
            WalRecoveryMode::AbsoluteConsistency
        );
        assert_eq!(
            WalRecoveryMode::default(),
            WalRecoveryMode::AbsoluteConsistency
        );
        for (mode, name) in WalRecoveryMode::ALL.into_iter().zip(WalRecoveryMode::NAMES) {
            assert_eq!(mode.name(), name);
            assert_eq!(mode.to_string(), name);
            assert_eq!(WalRecoveryMode::from_name(name), Some(mode));
        }
        assert_eq!(WalRecoveryMode::from_name("kPointInTimeRecovery"), None);
    }

    #[test]
    fn bad_triggers_are_refused() {
        let o = Options {
            level0_slowdown_writes_trigger: 2,
            ..Options::default()
        };
        let err = o.check().unwrap_err().to_string();
        assert!(err.contains("L0 triggers"), "{err}");
    }

    #[test]
    fn the_output_instant_is_a_percentage_of_the_job() {
        let mut o = Options::default();
        assert_eq!(o.sim.output_instant(1_000, 3_000), 3_000);
        o.sim.output_at_pct = 0;
        assert_eq!(o.sim.output_instant(1_000, 3_000), 1_000);
        o.sim.output_at_pct = 50;
        assert_eq!(o.sim.output_instant(1_000, 3_000), 2_000);
        o.check().unwrap();
        o.sim.output_at_pct = 101;
        let err = o.check().unwrap_err().to_string();
        assert!(err.contains("output_at_pct 101"), "{err}");
    }

    #[test]
    fn spread_tables_end_their_share_of_the_range() {
        let mut c = SimCosts::default();
        // At the end (100): table k of 4 at (k + 1) / 4, the last as the range ends.
        let at: Vec<u64> = (0..4).map(|k| c.table_instant(1_000, 400, k, 4)).collect();
        assert_eq!(at, [1_100, 1_200, 1_300, 1_400]);
        c.output_at_pct = 50;
        assert_eq!(c.table_instant(1_000, 400, 0, 4), 1_050);
        assert_eq!(c.table_instant(1_000, 400, 3, 4), 1_350);
        c.output_at_pct = 0;
        assert_eq!(c.table_instant(1_000, 400, 0, 4), 1_000);
        // One table: the job's own instant.
        assert_eq!(
            c.table_instant(1_000, 400, 0, 1),
            c.output_instant(1_000, 1_400)
        );
    }

    #[test]
    fn the_pickers_knobs_are_checked() {
        let deep = Options::default().with_picker(Arc::new(Acc::new(0.25, 7).unwrap()));
        let err = deep.check().unwrap_err().to_string();
        assert!(err.contains("acc_min_level 7"), "{err}");
        let unknown = Options {
            compaction_pri: "nope".into(),
            ..Options::default()
        };
        let err = unknown.check().unwrap_err().to_string();
        assert!(err.contains("unknown compaction picker"), "{err}");
    }
}
