//! What a store is made of (device geometry, file-system and engine options, modes) and
//! how one is opened: the file system mounted, the database opened, zone cleaning turned on.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zkv_engine::db::Db;
use zkv_engine::options::{ExecMode, Options};
use zkv_zns::{Geometry, ZonedDevice};
use zkv_zonefs::fs::{CleanerThread, CleaningMode, FsOptions, InlineCleaning, ZoneFs};

use crate::oracle::Oracle;

/// Which crash a store goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CrashKind {
    /// A child process writing to a file-backed image, killed with SIGKILL.
    Kill,
    /// A power cut of the in-memory device, dropping or tearing unsynced data.
    PowerCut,
    /// The file-backed emulator dying between two of its own storage steps.
    CrashPoint,
}

impl CrashKind {
    /// Every kind, in the order flags and totals list them.
    pub const ALL: [CrashKind; 3] = [CrashKind::Kill, CrashKind::PowerCut, CrashKind::CrashPoint];

    /// The name used by flags and totals: `kill`, `power`, `crashpoint`.
    pub fn name(self) -> &'static str {
        match self {
            CrashKind::Kill => "kill",
            CrashKind::PowerCut => "power",
            CrashKind::CrashPoint => "crashpoint",
        }
    }

    /// The kind of that [`CrashKind::name`], if any.
    pub fn from_name(name: &str) -> Option<CrashKind> {
        CrashKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Everything that defines a store and its workload.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The crash the store goes through.
    pub kind: CrashKind,
    /// Sync the WAL on every write.
    pub sync: bool,
    /// The engine's execution mode.
    pub exec: ExecMode,
    /// Zones of the device.
    pub zones: u32,
    /// Zone size (and capacity), in KiB.
    pub zone_kib: u64,
    /// Size of the key space.
    pub keys: u32,
    /// Largest value body, in bytes.
    pub max_value: usize,
    /// Largest number of operations between two crashes (the crash lands at a random point
    /// below it).
    pub max_epoch_ops: u32,
    /// What zone cleaning does with valid data.
    pub gc_mode: CleaningMode,
    /// Fixes the workload and the crash points.
    pub seed: u64,
    /// Count an out-of-space error without a crash (a known bug of threaded mode with the
    /// background cleaner, see `tests/known_bugs.rs`) and crash the store there, instead of
    /// failing the run.
    pub tolerate_out_of_space: bool,
    /// BlobDB: values of 512 bytes and more go to blob files of 32 KiB, with blob garbage
    /// collection of the oldest half (so that flushes, compactions and blob GC all write
    /// and drop blob files between crashes).
    pub blob: bool,
}

impl Setup {
    /// The sizes the harness is tuned for: 24 zones of 256 KiB (2 for metadata, 2
    /// reserved: 5 MiB usable), cleaning at 20/25 % free, 800 keys of values up to 2000
    /// bytes (about 0.8 MiB live, several times that with the LSM's older versions and the
    /// dead space zones collect), so that flushes, compactions and zone cleaning all run
    /// between crashes. Copy-mode cleaning; out-of-space errors fail the run.
    pub fn new(kind: CrashKind, sync: bool, exec: ExecMode, seed: u64) -> Setup {
        Setup {
            kind,
            sync,
            exec,
            zones: 24,
            zone_kib: 256,
            keys: 800,
            max_value: 2000,
            max_epoch_ops: 120,
            gc_mode: CleaningMode::Copy,
            seed,
            tolerate_out_of_space: false,
            blob: false,
        }
    }

    /// Every combination of `kinds` × WAL modes × execution modes, seeds counting from
    /// `seed`. Half of the stores clean zones by copying, half by asking the engine to
    /// compact the victims' files (the cleaner's `compact` mode): compact where the WAL
    /// is synced in threaded mode or unsynced in deterministic mode, so that each kind,
    /// each WAL mode and each execution mode sees both.
    pub fn matrix(kinds: &[CrashKind], wal: &[bool], exec: &[ExecMode], seed: u64) -> Vec<Setup> {
        let mut out = Vec::new();
        for &kind in kinds {
            for &sync in wal {
                for &mode in exec {
                    let compact = sync == (mode == ExecMode::Threaded);
                    out.push(Setup {
                        gc_mode: match compact {
                            true => CleaningMode::Compact,
                            false => CleaningMode::Copy,
                        },
                        ..Setup::new(kind, sync, mode, seed + out.len() as u64)
                    });
                }
            }
        }
        out
    }

    /// A short name for progress lines and failures.
    pub fn label(&self) -> String {
        format!(
            "{} wal-sync={} exec={} gc={}{} seed={}",
            self.kind.name(),
            if self.sync { "on" } else { "off" },
            self.exec.name(),
            self.gc_mode.name(),
            if self.blob { " blob" } else { "" },
            self.seed
        )
    }

    /// The device: [`Setup::zones`] zones of [`Setup::zone_kib`], 4 KiB blocks, at most 14
    /// open and 14 active zones.
    pub fn geometry(&self) -> Geometry {
        Geometry::new(self.zones, self.zone_kib * 1024)
            .with_block_size(4096)
            .with_limits(14, 14)
    }

    /// The file layer: 2 metadata and 2 reserved zones, cleaning from 20 % free zones up
    /// to 25 %, in [`Setup::gc_mode`].
    pub fn fs_options(&self) -> FsOptions {
        FsOptions::default()
            .with_meta_zones(2)
            .with_reserved_zones(2)
            .with_gc(20, 25)
            .with_gc_mode(self.gc_mode)
    }

    /// Small memtables, files and levels: a few dozen writes flush, a few flushes compact.
    pub fn db_options(&self) -> Options {
        Options {
            write_buffer_size: 16 * 1024,
            target_file_size_base: 16 * 1024,
            max_bytes_for_level_base: 64 * 1024,
            max_bytes_for_level_multiplier: 4.0,
            level0_file_num_compaction_trigger: 2,
            level0_slowdown_writes_trigger: 8,
            level0_stop_writes_trigger: 12,
            num_levels: 5,
            block_size: 1024,
            mode: self.exec,
            enable_blob_files: self.blob,
            min_blob_size: 512,
            blob_file_size: 32 * 1024,
            enable_blob_garbage_collection: self.blob,
            blob_garbage_collection_age_cutoff: 0.5,
            // BlobDB as the Same-Victim paper runs it: several flushes, compactions and
            // subcompactions writing blob files at once.
            max_background_flushes: if self.blob { 2 } else { 1 },
            max_background_compactions: if self.blob { 2 } else { 1 },
            max_subcompactions: if self.blob { 4 } else { 1 },
            ..Options::default()
        }
    }
}

/// A mounted file system with its database open and zone cleaning on. Fields drop in
/// order: the cleaner stops before the database closes, the database before the file
/// system goes.
pub struct Stack {
    cleaner: Option<CleanerThread>,
    /// The open database.
    pub db: Db,
    /// The mounted file system under it.
    pub fs: Arc<ZoneFs>,
}

/// Why a stack could not be opened: the file system or the database said so.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The file system could not be mounted (or its cleaner started).
    Fs(zkv_zonefs::fs::FsError),
    /// The database could not be opened.
    Db(zkv_engine::Error),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Fs(e) => write!(f, "mount: {e}"),
            OpenError::Db(e) => write!(f, "open the database: {e}"),
        }
    }
}

/// Opens an image file with `open`, retrying while it is locked.
///
/// The harness closes and reopens images all the time while other threads start child
/// processes; a child forked just before an image was closed holds a copy of its
/// descriptor (and with it the image's lock) until it execs, which closes it. So an image
/// this process just closed can look "in use" for a moment. Any other error, or a lock
/// held for seconds, is returned.
pub fn open_image<T>(path: &Path, open: impl Fn(&Path) -> zkv_zns::Result<T>) -> Result<T, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match open(path) {
            Err(zkv_zns::ZnsError::InUse { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            other => return other.map_err(|e| format!("open {}: {e}", path.display())),
        }
    }
}

/// Whether the engine failed for want of space: directly, or through the sticky error of a
/// background job (which the engine keeps as text).
pub fn is_out_of_space(e: &zkv_engine::Error) -> bool {
    match e {
        zkv_engine::Error::NotWritable(why) => why.contains("out of space"),
        other => other.is_out_of_space(),
    }
}

impl OpenError {
    /// Whether the open failed for want of space (see [`is_out_of_space`]).
    pub fn is_out_of_space(&self) -> bool {
        match self {
            OpenError::Fs(e) => e.is_out_of_space(),
            OpenError::Db(e) => is_out_of_space(e),
        }
    }
}

/// Formats `dev` with the setup's file-system options and fills the store with every key
/// (see [`crate::workload::prefill`]), recorded in `oracle`; closes it cleanly.
pub fn create(dev: Arc<dyn ZonedDevice>, setup: &Setup, oracle: &mut Oracle) -> Result<(), String> {
    ZoneFs::format(Arc::clone(&dev), setup.fs_options()).map_err(|e| format!("format: {e}"))?;
    let stack = open(dev, setup).map_err(|e| e.to_string())?;
    crate::workload::prefill(&stack.db, oracle, setup.max_value)
        .map_err(|e| format!("prefill: {e}"))?;
    stack
        .close()
        .map_err(|e| format!("close after the prefill: {e}"))
}

/// Mounts `dev`, turns zone cleaning on (a background cleaner in threaded mode, the
/// engine's virtual cleaner in deterministic mode) and opens the database.
/// Cleaning comes first: the recovery's flushes may need the space only cleaning frees.
pub fn open(dev: Arc<dyn ZonedDevice>, setup: &Setup) -> Result<Stack, OpenError> {
    let fs = Arc::new(ZoneFs::mount(dev, setup.fs_options()).map_err(OpenError::Fs)?);
    let cleaner = match setup.exec {
        ExecMode::Threaded => Some(fs.start_cleaner().map_err(OpenError::Fs)?),
        ExecMode::Deterministic => {
            fs.set_inline_mode(InlineCleaning::OutOfSpace);
            None
        }
    };
    let db = Db::open(Arc::clone(&fs), setup.db_options()).map_err(OpenError::Db)?;
    Ok(Stack { cleaner, db, fs })
}

impl Stack {
    /// The engine's and the file layer's counters of this open.
    pub fn activity(&self) -> Activity {
        let db = self.db.stats();
        let fs = self.fs.stats();
        Activity {
            flushes: db.flushes,
            compactions: db.compactions,
            trivial_moves: db.trivial_moves,
            gc_runs: fs.gc.runs,
            gc_victims: fs.gc.victims,
            gc_copy_bytes: fs.gc.copy_bytes,
            gc_resets: fs.gc.resets,
            zone_resets: fs.zone_resets,
            blob_files_created: db.blob.files_created,
            blob_files_deleted: db.blob.files_deleted,
        }
    }

    /// Where the space went, for a failure report: files by kind (count, bytes), the live
    /// SSTs, and per zone state, written, valid and invalid bytes.
    pub fn space_report(&self) -> String {
        let mut by_kind: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
        for f in self.fs.list() {
            let e = by_kind.entry(format!("{:?}", f.kind)).or_default();
            e.0 += 1;
            e.1 += f.size;
        }
        let live: u64 = self.db.live_files().iter().map(|(_, f)| f.size).sum();
        let s = self.fs.stats();
        let zones = match self.fs.zone_stats() {
            Ok(zs) => zs
                .iter()
                .map(|z| {
                    let pins = match z.pins {
                        0 => String::new(),
                        n => format!("/{n}p"),
                    };
                    format!(
                        "{}:{}:{}w/{}v/{}i{pins}",
                        z.zone, z.state, z.written, z.valid, z.invalid
                    )
                })
                .collect::<Vec<_>>()
                .join(" "),
            Err(e) => format!("(zone report failed: {e})"),
        };
        let gc = &s.gc;
        format!(
            "files {by_kind:?}, live SST bytes {live}, free {} of {} usable, cleaning: {} \
             runs, {} victims, {} bytes copied, {} reset; zones [{zones}]",
            s.free_bytes, s.usable_bytes, gc.runs, gc.victims, gc.copy_bytes, gc.resets
        )
    }

    /// The background cleaner's last error, if it has one.
    pub fn cleaner_error(&self) -> Option<String> {
        self.cleaner.as_ref().and_then(CleanerThread::last_error)
    }

    /// Closes cleanly: the cleaner stops, background work ends, the WAL is synced.
    pub fn close(mut self) -> Result<(), zkv_engine::Error> {
        drop(self.cleaner.take());
        self.db.close()
    }
}

crate::counters::counters! {
    /// Work the engine and the file layer did (during one open of a store, or summed).
    pub struct Activity {
        /// Memtable flushes.
        flushes,
        /// Compactions that rewrote files.
        compactions,
        /// Compactions that moved a file to the next level without rewriting it.
        trivial_moves,
        /// Zone cleaning runs.
        gc_runs,
        /// Zones cleaned (victims).
        gc_victims,
        /// Valid bytes the cleaner copied out of its victims.
        gc_copy_bytes,
        /// Victims reset.
        gc_resets,
        /// Data zones reset, by the cleaner or because nothing live was left in them.
        zone_resets,
        /// Blob files written by flushes and compactions.
        blob_files_created,
        /// Blob files deleted once dropped.
        blob_files_deleted,
    }
}
