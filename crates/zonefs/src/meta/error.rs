//! Errors of the metadata log: device failures, rejected records, and what mount can find
//! wrong with the metadata zones.

use zkv_zns::ZnsError;

use super::codec::EncodeError;
use super::state::StateError;

pub type MetaResult<T> = Result<T, MetaError>;

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error(transparent)]
    Device(#[from] ZnsError),

    #[error(transparent)]
    State(#[from] StateError),

    #[error(transparent)]
    Encode(#[from] EncodeError),

    /// Damaged metadata that is not an interrupted last write: a bad record followed by
    /// valid ones, a well-formed record that contradicts the state, a missing batch.
    #[error("metadata zone {zone}, offset {offset}: corrupt metadata: {reason}")]
    Corrupt {
        zone: u32,
        offset: u64,
        reason: String,
    },

    #[error("the device is not formatted: no metadata zone holds a superblock")]
    NotFormatted,

    #[error(
        "metadata zone {zone} was written for another device or layout: \
         its {field} is {on_disk}, expected {expected}"
    )]
    GeometryMismatch {
        zone: u32,
        field: &'static str,
        on_disk: u64,
        expected: u64,
    },

    #[error(
        "metadata zone {zone}: format version {found} is not supported (this build reads \
         versions {oldest} to {newest}); reformat the device"
    )]
    UnsupportedVersion {
        zone: u32,
        found: u32,
        oldest: u32,
        newest: u32,
    },

    #[error(
        "{meta_zones} metadata zones do not fit a device of {zones} zones \
         (at least 2 are needed, and at least one data zone)"
    )]
    BadMetaZoneCount { meta_zones: u32, zones: u32 },

    #[error(
        "out of metadata space: a snapshot of the metadata needs {needed} bytes \
         but a metadata zone holds {capacity}"
    )]
    OutOfMetaSpace { needed: u64, capacity: u64 },

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
