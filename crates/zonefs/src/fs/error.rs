//! Typed errors of the file layer. Device and metadata failures are wrapped with the
//! operation that hit them, so that one line tells what was being done and why it failed.

use zkv_zns::ZnsError;

use crate::meta::{MetaError, StateError};

pub type FsResult<T> = Result<T, FsError>;

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("{context}: {source}")]
    Device {
        context: String,
        #[source]
        source: ZnsError,
    },

    #[error("{context}: {source}")]
    Meta {
        context: String,
        #[source]
        source: MetaError,
    },

    /// The metadata state refused a change (a bad name, an impossible extent).
    #[error("{context}: {source}")]
    Rejected {
        context: String,
        #[source]
        source: StateError,
    },

    #[error("file '{name}' does not exist")]
    NotFound { name: String },

    #[error("file '{name}' already exists")]
    AlreadyExists { name: String },

    #[error("file '{name}' is open for writing")]
    Busy { name: String },

    #[error(
        "out of space: no zone can take more data for '{name}' \
         ({free} bytes free of {usable} usable, {reserved_zones} zones reserved{})",
        pinned_note(*pinned_zones)
    )]
    OutOfSpace {
        name: String,
        free: u64,
        usable: u64,
        reserved_zones: u32,
        /// Zones holding only dead data that open readers (iterators, running jobs) still
        /// use: free once they let go.
        pinned_zones: u32,
    },

    #[error("invalid file system options: {reason}")]
    InvalidOptions { reason: String },

    #[error(
        "invalid zone cleaning thresholds: gc_start {start}% and gc_stop {stop}% must \
         satisfy 0 < gc_start <= gc_stop < 100"
    )]
    GcThresholds { start: u8, stop: u8 },

    #[error("a background zone cleaner is already running on this file system")]
    CleanerRunning,

    #[error("start the background zone cleaner: {source}")]
    CleanerThread {
        #[source]
        source: std::io::Error,
    },

    #[error(
        "the writer of '{name}' failed earlier ({reason}); \
         the file keeps the content of its last successful sync"
    )]
    WriterFailed { name: String, reason: String },

    #[error("zone {zone}: the metadata does not match the device: {reason}")]
    Inconsistent { zone: u32, reason: String },

    #[error("placement policy '{policy}' made an impossible decision: {reason}")]
    Placement {
        policy: &'static str,
        reason: String,
    },

    /// A change was asked of a file system mounted with [`ZoneFs::mount_read_only`].
    ///
    /// [`ZoneFs::mount_read_only`]: super::ZoneFs::mount_read_only
    #[error("{operation}: the file system is mounted read-only")]
    ReadOnly { operation: String },

    /// An operating-system file operation failed: the engine's directory file system
    /// (plain files in a directory) reports its failures through this variant, so that the
    /// engine sees one error type whichever file system it runs on.
    #[error("{context}: {source}")]
    Io {
        context: String,
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
