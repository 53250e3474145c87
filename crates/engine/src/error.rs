//! Typed errors of the engine. Every error names what was being done, so one line tells the
//! user what failed and why.

use zkv_zonefs::fs::FsError;

/// A result whose error is the engine's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Everything an engine call can fail with. New kinds of failure may be added, so a `match`
/// on it needs a catch-all arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file layer failed (device error, out of space, missing file, ...).
    #[error("{context}: {source}")]
    Fs {
        /// What the engine was doing (e.g. `read 000012.sst`).
        context: String,
        /// The file layer's error.
        #[source]
        source: FsError,
    },

    /// A flush or compaction found no room for an output table. It changed nothing (the
    /// table is deleted, the version is as it was) and can run again once the zone cleaner
    /// has freed space; in threaded mode the job waits for the cleaner and retries.
    #[error("{context}: {source}")]
    NoRoomForOutput {
        /// The step and the output file (table or blob file) it was writing.
        context: String,
        /// The file layer's out-of-space error.
        #[source]
        source: FsError,
    },

    /// Stored data failed a check: a checksum, a length, a magic number, an impossible
    /// value. `what` names the file (and block or record) that is bad.
    #[error("corruption in {what}: {detail}")]
    Corruption {
        /// The file (and block or record) that is bad.
        what: String,
        /// Which check failed and the values it saw.
        detail: String,
    },

    /// The options cannot work: a value out of range, settings that contradict each other
    /// ([`Options::check`](crate::options::Options::check)), or more background threads than
    /// the system can start. The message says which.
    #[error("invalid options: {0}")]
    InvalidOptions(String),

    /// A call got an argument or met a state it cannot work with (e.g. a bad range, a
    /// record too large, a file number of 0); the message says which.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The database was closed, or a background job failed earlier and the database
    /// refuses writes to protect the data (the first error is kept in the message).
    #[error("database is not writable: {0}")]
    NotWritable(String),
}

impl Error {
    /// A file-layer error that happened while doing `context`.
    pub fn fs(context: impl Into<String>, source: FsError) -> Error {
        Error::Fs {
            context: context.into(),
            source,
        }
    }

    /// Stored data in `what` failed a check; `detail` says which and how.
    pub fn corruption(what: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::Corruption {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// The file layer ran out of space (for an output table or anything else).
    pub fn is_out_of_space(&self) -> bool {
        match self {
            Error::Fs { source, .. } | Error::NoRoomForOutput { source, .. } => {
                source.is_out_of_space()
            }
            _ => false,
        }
    }

    /// Stored data failed a check ([`Error::Corruption`]).
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// The device lost power (fault injection): the caller should stop and reopen.
    pub fn is_power_loss(&self) -> bool {
        matches!(self, Error::Fs { source, .. } if source.is_power_loss())
    }
}
