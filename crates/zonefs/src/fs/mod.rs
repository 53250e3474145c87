//! The zoned file layer proper: files made of extents in zones, over the crash-safe
//! metadata of [`crate::meta`] and the placement policies of [`crate::placement`].
//!
//! - [`ZoneFs`]: format, mount, and the file operations (create, open, rename, delete,
//!   list, which zones hold a file, per-zone figures, statistics).
//! - [`FileWriter`]: appends in whole blocks at the write pointer of the zone the writer
//!   owns; [`FileWriter::sync`] is the durability point.
//! - [`FileReader`]: reads a snapshot of a file.
//! - The allocator carries out the placement policy's decisions within the zone budget
//!   (lease tokens derived from the device's open and active limits, one kept for WAL
//!   files); zones whose data is all dead are reset at once.
//! - The zone cleaner frees zones whose data is partly dead: it picks the full zone with
//!   the fewest valid bytes and moves its valid data away (copies, or asks the engine to
//!   compact), inline or in a background thread. [`HintSource`] lets the engine give the
//!   placement hints of the files it moves.
//!
//! The model and its guarantees are written down in `docs/FILE-LAYER.md`.

mod alloc;
mod budget;
mod check;
mod cleaner;
mod error;
mod files;
mod hint_source;
mod mount;
mod options;
mod reader;
mod report;
mod shared;
mod stats;
mod table;
mod writer;

use std::sync::Arc;

use zkv_zns::ZonedDevice;

use crate::meta::{FileKind, FileMeta, FsState, MountReport};

pub use check::FsFinding;
pub use cleaner::{
    CleanReport, CleanStop, CleanerThread, CleaningMode, CompactionCandidate, CompactionRequester,
    InlineCleaning, VictimReport,
};
pub use error::{FsError, FsResult};
pub use hint_source::HintSource;
pub use options::{FsOptions, DEFAULT_GC_START, DEFAULT_GC_STOP};
pub use reader::FileReader;
pub use stats::{FreeSpaceSample, FsStats, GcStats, InvalidRatios, SettlePlan, ZoneStat};
pub use writer::{default_category, FileWriter};

use shared::Shared;

/// A mounted file system. Cheap to clone; every clone is a handle on the same one. Writers
/// and readers keep it alive. Mount a device once at a time: two mounts of one device
/// would overwrite each other's data.
#[derive(Clone)]
pub struct ZoneFs {
    shared: Arc<Shared>,
}

/// What `list` tells about a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// The file's name.
    pub name: String,
    /// What kind of file the engine said it is.
    pub kind: FileKind,
    /// Size as of the file's last sync.
    pub size: u64,
    /// The LSM level the engine gave it, if any.
    pub level: Option<u8>,
    /// Its lifetime class ([`crate::placement::Lifetime::code`]).
    pub lifetime: u8,
    /// Extents (contiguous runs in one zone) it is made of.
    pub extents: usize,
}

impl FileInfo {
    fn of(meta: &FileMeta) -> FileInfo {
        FileInfo {
            name: meta.name.clone(),
            kind: meta.kind,
            size: meta.size,
            level: meta.level,
            lifetime: meta.lifetime,
            extents: meta.extents.len(),
        }
    }
}

impl ZoneFs {
    /// Makes staged metadata (zone classes cleared by resets) durable now.
    pub fn sync_metadata(&self) -> FsResult<()> {
        let context = || "sync the metadata".to_string();
        self.shared.check_writable(context)?;
        self.shared.lock_meta().sync(&context)
    }

    /// The device it is mounted on.
    pub fn device(&self) -> &Arc<dyn ZonedDevice> {
        &self.shared.dev
    }

    /// The options the file system runs with (after a mount, also the recorded ones).
    pub fn options(&self) -> &FsOptions {
        &self.shared.opts
    }

    /// Whether the placement policy reads [`crate::placement::PlacementHint::neighbors`]:
    /// the engine computes them only then.
    pub fn placement_wants_neighbors(&self) -> bool {
        self.shared.policy.wants_neighbors()
    }

    /// Whether anything here uses the engine's lifetime predictions: the placement policy
    /// reads [`crate::placement::PlacementHint::death`], or the cleaner compensates
    /// (`compensate` asks which victim files are predicted to trigger their own compaction
    /// soon). The engine predicts only then.
    pub fn wants_lifetimes(&self) -> bool {
        self.shared.policy.wants_prediction()
            || self.shared.opts.gc_mode == CleaningMode::Compensate
    }

    /// The name of the placement policy in use.
    pub fn placement_policy(&self) -> &'static str {
        self.shared.policy.name()
    }

    /// Mounted with [`ZoneFs::mount_read_only`]: every change fails with
    /// [`FsError::ReadOnly`].
    pub fn is_read_only(&self) -> bool {
        self.shared.read_only
    }

    /// What the metadata recovery found at mount (torn tail, records replayed, zones passed
    /// over, and for a read-only mount what a read-write one would repair); `None` after
    /// a format.
    pub fn mount_report(&self) -> Option<MountReport> {
        self.shared.lock_meta().log.mount_report().cloned()
    }

    /// A copy of the metadata state (for tools and tests).
    pub fn metadata(&self) -> FsState {
        self.shared.lock_meta().state.clone()
    }
}

impl std::fmt::Debug for ZoneFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZoneFs")
            .field("device", &self.shared.dev.describe())
            .field("options", &self.shared.opts)
            .finish()
    }
}
