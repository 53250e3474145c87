//! Typed device errors. Every backend maps its failures onto these, so that callers (and the
//! conformance suite) see the same error for the same broken rule on every device.
//! Offsets in messages are relative to the zone start, as a person reading them expects.

use std::path::PathBuf;

use crate::types::{ZoneOp, ZoneState};

pub type Result<T, E = ZnsError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ZnsError {
    #[error("zone {zone}: write at offset {offset} but write pointer is at {wp}")]
    InvalidWritePosition { zone: u32, offset: u64, wp: u64 },

    #[error("zone {zone}: zone is full")]
    ZoneFull { zone: u32 },

    #[error(
        "zone {zone}: write of {len} bytes at offset {offset} crosses the zone capacity {capacity}"
    )]
    BoundaryCrossed {
        zone: u32,
        offset: u64,
        len: u64,
        capacity: u64,
    },

    #[error("zone {zone}: too many open zones (limit {limit})")]
    TooManyOpen { zone: u32, limit: u32 },

    #[error("zone {zone}: too many active zones (limit {limit})")]
    TooManyActive { zone: u32, limit: u32 },

    #[error("zone {zone}: cannot {op} a zone in state {state}")]
    InvalidTransition {
        zone: u32,
        op: ZoneOp,
        state: ZoneState,
    },

    #[error("zone {zone}: zone is offline")]
    Offline { zone: u32 },

    #[error("zone {zone}: zone is read-only")]
    ReadOnly { zone: u32 },

    #[error("zone {zone} does not exist (the device has {zones} zones)")]
    NoSuchZone { zone: u64, zones: u32 },

    #[error(
        "access of {len} bytes at address {addr} is beyond the end of the device ({size} bytes)"
    )]
    OutOfRange { addr: u64, len: u64, size: u64 },

    #[error("{what} {value} is not a multiple of the block size {block}")]
    Unaligned {
        what: &'static str,
        value: u64,
        block: u32,
    },

    #[error("zone {zone}: write offset {offset} is not a multiple of the block size {block}")]
    UnalignedOffset { zone: u32, offset: u64, block: u32 },

    #[error("invalid geometry: {reason}")]
    InvalidGeometry { reason: String },

    #[error("{path}: {reason}")]
    BadImage { path: PathBuf, reason: String },

    #[error("{path}: image is already in use by another process")]
    InUse { path: PathBuf },

    /// A reader (an image opened read-only) read bytes of a zone that a writer reset after
    /// the reader had read the zone table: they may be the writer's new data, so they are
    /// not returned. Opening the image again sees the new state.
    #[error("{path}: zone {zone} was reset by a writer while it was read")]
    ZoneChanged { path: PathBuf, zone: u32 },

    /// A reader could not read the zone table in one piece: a writer kept changing it.
    #[error("{path}: the zone table kept changing while it was read (a writer is busy)")]
    TableChanging { path: PathBuf },

    #[error("invalid device spec '{spec}': {reason}")]
    BadSpec { spec: String, reason: String },

    #[error("injected I/O error on {op}")]
    Injected { op: &'static str },

    #[error("{device} is opened read-only")]
    ReadOnlyDevice { device: String },

    #[error("device has lost power (restart it to continue)")]
    PowerLoss,

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error("{0}")]
    Unsupported(String),
}

/// Element `zone` of a per-zone table (zone records, locks, table entries). A table holds
/// one element per zone and every command checks its zone first, so a miss is a broken
/// invariant: it is reported as [`ZnsError::NoSuchZone`] instead of a panic.
pub(crate) fn zone_entry<T>(table: &[T], zone: u32) -> Result<&T> {
    let zones = table.len() as u32;
    table.get(zone as usize).ok_or(ZnsError::NoSuchZone {
        zone: u64::from(zone),
        zones,
    })
}

/// [`zone_entry`], for changing the element.
pub(crate) fn zone_entry_mut<T>(table: &mut [T], zone: u32) -> Result<&mut T> {
    let zones = table.len() as u32;
    table.get_mut(zone as usize).ok_or(ZnsError::NoSuchZone {
        zone: u64::from(zone),
        zones,
    })
}

impl ZnsError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> ZnsError {
        ZnsError::Io {
            context: context.into(),
            source,
        }
    }

    /// True when a writer changed an image under a reader ([`ZnsError::ZoneChanged`],
    /// [`ZnsError::TableChanging`]): opening it again may well succeed.
    pub fn is_concurrent_change(&self) -> bool {
        matches!(
            self,
            ZnsError::ZoneChanged { .. } | ZnsError::TableChanging { .. }
        )
    }

    /// A short stable name of the error kind, used by the conformance suite to compare
    /// backends without comparing message text.
    pub fn kind(&self) -> &'static str {
        match self {
            ZnsError::InvalidWritePosition { .. } => "invalid_write_position",
            ZnsError::ZoneFull { .. } => "zone_full",
            ZnsError::BoundaryCrossed { .. } => "boundary_crossed",
            ZnsError::TooManyOpen { .. } => "too_many_open",
            ZnsError::TooManyActive { .. } => "too_many_active",
            ZnsError::InvalidTransition { .. } => "invalid_transition",
            ZnsError::Offline { .. } => "offline",
            ZnsError::ReadOnly { .. } => "read_only",
            ZnsError::NoSuchZone { .. } => "no_such_zone",
            ZnsError::OutOfRange { .. } => "out_of_range",
            ZnsError::Unaligned { .. } | ZnsError::UnalignedOffset { .. } => "unaligned",
            ZnsError::InvalidGeometry { .. } => "invalid_geometry",
            ZnsError::BadImage { .. } => "bad_image",
            ZnsError::InUse { .. } => "in_use",
            ZnsError::ZoneChanged { .. } => "zone_changed",
            ZnsError::TableChanging { .. } => "table_changing",
            ZnsError::BadSpec { .. } => "bad_spec",
            ZnsError::Injected { .. } => "injected",
            ZnsError::ReadOnlyDevice { .. } => "read_only_device",
            ZnsError::PowerLoss => "power_loss",
            ZnsError::Io { .. } => "io",
            ZnsError::Unsupported(_) => "unsupported",
        }
    }
}
