//! Errors of the metadata log: device failures, rejected records, and what mount can find
//! wrong with the metadata zones.

use zkv_zns::ZnsError;

use super::codec::EncodeError;
use super::state::StateError;

/// `Result` with the metadata layer's [`MetaError`].
pub type MetaResult<T> = Result<T, MetaError>;

/// Why the metadata log could not be formatted, recovered or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// The device refused or failed a command.
    #[error(transparent)]
    Device(#[from] ZnsError),

    /// The state refused a record (a change the file layer asked for).
    #[error(transparent)]
    State(#[from] StateError),

    /// A record could not be encoded.
    #[error(transparent)]
    Encode(#[from] EncodeError),

    /// Damaged metadata that is not an interrupted last write: a bad record followed by
    /// valid ones, a well-formed record that contradicts the state, a missing batch.
    #[error("metadata zone {zone}, offset {offset}: corrupt metadata: {reason}")]
    Corrupt {
        /// The metadata zone.
        zone: u32,
        /// Where the damage starts, in bytes from the zone start.
        offset: u64,
        /// What is wrong.
        reason: String,
    },

    /// No metadata zone holds a superblock: nothing was ever formatted here.
    #[error("the device is not formatted: no metadata zone holds a superblock")]
    NotFormatted,

    /// A superblock describes another device or metadata layout than the one mounted.

    #[error(
        "metadata zone {zone} was written for another device or layout: \
         its {field} is {on_disk}, expected {expected}"
    )]
    GeometryMismatch {
        /// The metadata zone.
        zone: u32,
        /// The superblock field that disagrees.
        field: &'static str,
        /// The value the superblock records.
        on_disk: u64,
        /// The value of the device or layout.
        expected: u64,
    },

    /// A metadata format this build does not read.

    #[error(
        "metadata zone {zone}: format version {found} is not supported (this build reads \
         versions {oldest} to {newest}); reformat the device"
    )]
    UnsupportedVersion {
        /// The metadata zone.
        zone: u32,
        /// The format version it records.
        found: u32,
        /// The oldest version this build reads.
        oldest: u32,
        /// The newest version this build reads (the one it writes).
        newest: u32,
    },

    /// A metadata zone count the device cannot take.

    #[error(
        "{meta_zones} metadata zones do not fit a device of {zones} zones \
         (at least 2 are needed, and at least one data zone)"
    )]
    BadMetaZoneCount {
        /// Metadata zones asked for.
        meta_zones: u32,
        /// Zones of the device.
        zones: u32,
    },

    /// A snapshot of the metadata does not fit one metadata zone.

    #[error(
        "out of metadata space: a snapshot of the metadata needs {needed} bytes \
         but a metadata zone holds {capacity}"
    )]
    OutOfMetaSpace {
        /// Bytes the snapshot needs.
        needed: u64,
        /// Bytes a metadata zone holds.
        capacity: u64,
    },

    /// The log was recovered read-only ([`MetaLog::recover_read_only`]): it never writes.
    ///
    /// [`MetaLog::recover_read_only`]: super::MetaLog::recover_read_only
    #[error("the metadata log is read-only: it was recovered without write access")]
    ReadOnly,
}

impl MetaError {
    /// True when the device lost power under the operation.
    pub fn is_power_loss(&self) -> bool {
        matches!(self, MetaError::Device(ZnsError::PowerLoss))
    }
}
