//! Typed errors of the file layer. Device and metadata failures are wrapped with the
//! operation that hit them, so that one line tells what was being done and why it failed.

use zkv_zns::ZnsError;

use crate::meta::{MetaError, StateError};

/// `Result` with the file layer's [`FsError`].
pub type FsResult<T> = Result<T, FsError>;

/// Why a file-layer operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// The device refused or failed a command.
    #[error("{context}: {source}")]
    Device {
        /// What the file layer was doing.
        context: String,
        /// The device's error.
        #[source]
        source: ZnsError,
    },

    /// The metadata could not be read, recovered or written.
    #[error("{context}: {source}")]
    Meta {
        /// What the file layer was doing.
        context: String,
        /// The metadata layer's error.
        #[source]
        source: MetaError,
    },

    /// The metadata state refused a change (a bad name, an impossible extent).
    #[error("{context}: {source}")]
    Rejected {
        /// What the file layer was doing.
        context: String,
        /// Why the state refused it.
        #[source]
        source: StateError,
    },

    /// No file of that name.
    #[error("file '{name}' does not exist")]
    NotFound {
        /// The file's name.
        name: String,
    },

    /// A file of that name exists already.
    #[error("file '{name}' already exists")]
    AlreadyExists {
        /// The file's name.
        name: String,
    },

    /// The file has a writer, so it cannot be written, renamed or deleted now.
    #[error("file '{name}' is open for writing")]
    Busy {
        /// The file's name.
        name: String,
    },

    /// No zone can take the file's next extent, even after cleaning.

    #[error(
        "out of space: no zone can take more data for '{name}' \
         ({free} bytes free of {usable} usable, {reserved_zones} zones reserved{})",
        pinned_note(*pinned_zones)
    )]
    OutOfSpace {
        /// The file being written.
        name: String,
        /// Bytes files may still write: room in empty and active zones, minus the reserve.
        free: u64,
        /// Capacity of the writable data zones, minus the reserve.
        usable: u64,
        /// Zones kept in reserve for the zone cleaner.
        reserved_zones: u32,
        /// Zones holding only dead data that open readers (iterators, running jobs) still
        /// use: free once they let go.
        pinned_zones: u32,
    },

    /// Options the device cannot take (reserved zones that leave no data zone, device
    /// limits that leave too few zones for writers, a finish threshold above 100 %), or
    /// recorded options this build does not know.
    #[error("invalid file system options: {reason}")]
    InvalidOptions {
        /// What is wrong with them.
        reason: String,
    },

    /// Zone cleaning thresholds out of order or range.
    #[error(
        "invalid zone cleaning thresholds: gc_start {start}% and gc_stop {stop}% must \
         satisfy 0 < gc_start <= gc_stop < 100"
    )]
    GcThresholds {
        /// `gc_start`: cleaning starts below this percentage of free space.
        start: u8,
        /// `gc_stop`: cleaning stops once free space reaches this percentage.
        stop: u8,
    },

    /// A second background cleaner was asked for.
    #[error("a background zone cleaner is already running on this file system")]
    CleanerRunning,

    /// The background cleaner's thread could not be started.
    #[error("start the background zone cleaner: {source}")]
    CleanerThread {
        /// The system's error.
        #[source]
        source: std::io::Error,
    },

    /// The writer of the file failed before: it writes no more.

    #[error(
        "the writer of '{name}' failed earlier ({reason}); \
         the file keeps the content of its last successful sync"
    )]
    WriterFailed {
        /// The file's name.
        name: String,
        /// The earlier failure.
        reason: String,
    },

    /// The metadata and the device disagree about a zone (found at mount or by a check).
    #[error("zone {zone}: the metadata does not match the device: {reason}")]
    Inconsistent {
        /// The zone.
        zone: u32,
        /// How they disagree.
        reason: String,
    },

    /// A placement policy's decision the allocator cannot carry out (a zone that is not an
    /// idle active zone with room, a finish of a zone that cannot be finished).
    #[error("placement policy '{policy}' made an impossible decision: {reason}")]
    Placement {
        /// The policy's name.
        policy: &'static str,
        /// What is impossible about it.
        reason: String,
    },

    /// A change was asked of a file system mounted with [`ZoneFs::mount_read_only`].
    ///
    /// [`ZoneFs::mount_read_only`]: super::ZoneFs::mount_read_only
    #[error("{operation}: the file system is mounted read-only")]
    ReadOnly {
        /// The change asked for.
        operation: String,
    },

    /// An operating-system file operation failed: the engine's directory file system
    /// (plain files in a directory) reports its failures through this variant, so that the
    /// engine sees one error type whichever file system it runs on.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, and on which file.
        context: String,
        /// The error the system returned.
        #[source]
        source: std::io::Error,
    },
}

impl FsError {
    pub(crate) fn device(context: impl Into<String>, source: ZnsError) -> FsError {
        FsError::Device {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn meta(context: impl Into<String>, source: MetaError) -> FsError {
        // A refused record is the caller's mistake, not a metadata failure: say so.
        match source {
            MetaError::State(source) => FsError::Rejected {
                context: context.into(),
                source,
            },
            source => FsError::Meta {
                context: context.into(),
                source,
            },
        }
    }

    pub(crate) fn rejected(context: impl Into<String>, source: StateError) -> FsError {
        FsError::Rejected {
            context: context.into(),
            source,
        }
    }

    /// True when the device lost power under the operation.
    pub fn is_power_loss(&self) -> bool {
        match self {
            FsError::Device { source, .. } => matches!(source, ZnsError::PowerLoss),
            FsError::Meta { source, .. } => source.is_power_loss(),
            _ => false,
        }
    }

    /// True for [`FsError::ReadOnly`].
    pub fn is_read_only(&self) -> bool {
        matches!(self, FsError::ReadOnly { .. })
    }

    /// No room: the zones are full, or the directory's file system is
    /// ([`std::io::ErrorKind::StorageFull`]).
    pub fn is_out_of_space(&self) -> bool {
        match self {
            FsError::OutOfSpace { .. } => true,
            FsError::Io { source, .. } => source.kind() == std::io::ErrorKind::StorageFull,
            _ => false,
        }
    }
}

fn pinned_note(zones: u32) -> String {
    match zones {
        0 => String::new(),
        n => format!(
            "; {n} zones hold only deleted data that open readers still use (close \
             iterators to free them)"
        ),
    }
}
