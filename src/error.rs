//! The library's one error type: what failed, and on which device.

use zkv_zns::ZnsError;
use zkv_zonefs::fs::FsError;

/// A failure of [`crate::Db`]. Every variant names the device it happened on (as
/// `mem`, `file:PATH` or `zbd:PATH`), and its message starts with it. The lower layers'
/// errors are boxed, so that a `Result` stays small.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The device could not be named, opened, created or synced (a bad spec, a missing
    /// permission, an image another process holds, an I/O error).
    #[error("{device}: {source}")]
    Device {
        /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
        device: String,
        /// The device layer's error.
        #[source]
        source: Box<ZnsError>,
    },

    /// The zoned file system could not be formatted or mounted (damaged metadata, options
    /// the device cannot take), or its zone cleaner could not start.
    #[error("{device}: {source}")]
    FileSystem {
        /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
        device: String,
        /// The file layer's error.
        #[source]
        source: Box<FsError>,
    },

    /// The database failed: opening or recovering it, a read, a write, closing it.
    #[error("{device}: {source}")]
    Engine {
        /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
        device: String,
        /// The engine's error.
        #[source]
        source: Box<zkv_engine::Error>,
    },

    /// There is no store to open and [`crate::DbOptions::create_if_missing`] is off.
    /// `missing` says what is not there.
    #[error("{device}: nothing to open: {missing} (create_if_missing is off)")]
    NotFound {
        /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
        device: String,
        /// What is not there, in words ("the image does not exist").
        missing: String,
    },

    /// The device holds a database and [`crate::DbOptions::error_if_exists`] is on.
    #[error("{device}: a zkv database exists already (error_if_exists is on)")]
    AlreadyExists {
        /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
        device: String,
    },

    /// A run of the background zone cleaner failed (the last such failure; the cleaner
    /// tries again at its next wake-up). Reported by [`crate::Db::close`].
    #[error("{device}: zone cleaning failed: {message}")]
    Cleaner {
        /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
        device: String,
        /// The cleaner's error, as text (it happened on another thread).
        message: String,
    },

    /// A write that adds data was refused, and nothing of it was written: the store is
    /// nearly full of live data, and the room left is kept so that it can still open, take
    /// deletes and compact them away ([`crate::DbOptions::recovery_room`]). Deletes still
    /// go through; delete keys and run [`crate::Db::compact_range`] to make room.
    #[error(
        "{device}: out of space for new data: {free} bytes free, {kept} kept so that \
         deletes and compaction can still run (delete keys and compact to make room)"
    )]
    Full {
        /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
        device: String,
        /// Bytes free for files.
        free: u64,
        /// Bytes kept free for recovery (the cleaner's empty zone included).
        kept: u64,
    },
}

impl Error {
    /// The device the error happened on, as its spec is written (`file:/tmp/zkv.img`).
    pub fn device(&self) -> &str {
        match self {
            Error::Device { device, .. }
            | Error::FileSystem { device, .. }
            | Error::Engine { device, .. }
            | Error::NotFound { device, .. }
            | Error::AlreadyExists { device }
            | Error::Cleaner { device, .. }
            | Error::Full { device, .. } => device,
        }
    }

    pub(crate) fn device_error(device: &str, source: ZnsError) -> Error {
        Error::Device {
            device: device.to_string(),
            source: Box::new(source),
        }
    }

    pub(crate) fn fs(device: &str, source: FsError) -> Error {
        Error::FileSystem {
            device: device.to_string(),
            source: Box::new(source),
        }
    }

    pub(crate) fn engine(device: &str, source: zkv_engine::Error) -> Error {
        Error::Engine {
            device: device.to_string(),
            source: Box::new(source),
        }
    }

    pub(crate) fn not_found(device: &str, missing: &str) -> Error {
        Error::NotFound {
            device: device.to_string(),
            missing: missing.to_string(),
        }
    }
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
