//! Typed device errors. Every backend maps its failures onto these, so that callers (and the
//! conformance suite) see the same error for the same broken rule on every device.
//! Offsets in messages are relative to the zone start, as a person reading them expects.

use std::path::PathBuf;

use crate::types::{ZoneOp, ZoneState};

/// `Result` with the device layer's [`ZnsError`].
pub type Result<T, E = ZnsError> = std::result::Result<T, E>;

/// Why a device command or an open failed. A refused command changed nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZnsError {
    /// A write that does not start at the zone's write pointer.
    #[error("zone {zone}: write at offset {offset} but write pointer is at {wp}")]
    InvalidWritePosition {
        /// The zone.
        zone: u32,
        /// Where the write started, in bytes from the zone start.
        offset: u64,
        /// The write pointer, in bytes from the zone start.
        wp: u64,
    },

    /// A write to a FULL zone.
    #[error("zone {zone}: zone is full")]
    ZoneFull {
        /// The zone.
        zone: u32,
    },

    /// A write that would end past the zone's capacity.
    #[error(
        "zone {zone}: write of {len} bytes at offset {offset} crosses the zone capacity {capacity}"
    )]
    BoundaryCrossed {
        /// The zone.
        zone: u32,
        /// Where the write started, in bytes from the zone start.
        offset: u64,
        /// The write's length, in bytes.
        len: u64,
        /// The zone's capacity, in bytes.
        capacity: u64,
    },

    /// Opening the zone (explicitly, or implicitly by a write) would exceed the device's
    /// open-zone limit, and no implicitly open zone could be closed to make room.
    #[error("zone {zone}: too many open zones (limit {limit})")]
    TooManyOpen {
        /// The zone that was to be opened.
        zone: u32,
        /// The device's open-zone limit.
        limit: u32,
    },

    /// Making the zone active (open or closed) would exceed the device's active-zone limit.
    #[error("zone {zone}: too many active zones (limit {limit})")]
    TooManyActive {
        /// The zone that was to become active.
        zone: u32,
        /// The device's active-zone limit.
        limit: u32,
    },

    /// A zone management command the zone's state does not allow (closing an empty zone,
    /// say).
    #[error("zone {zone}: cannot {op} a zone in state {state}")]
    InvalidTransition {
        /// The zone.
        zone: u32,
        /// The command refused.
        op: ZoneOp,
        /// The zone's state.
        state: ZoneState,
    },

    /// The zone is OFFLINE: it can be neither read nor written.
    #[error("zone {zone}: zone is offline")]
    Offline {
        /// The zone.
        zone: u32,
    },

    /// The zone is READ ONLY: a write or zone command was refused.
    #[error("zone {zone}: zone is read-only")]
    ReadOnly {
        /// The zone.
        zone: u32,
    },

    /// A zone number (or an address in a zone) past the device's last zone.
    #[error("zone {zone} does not exist (the device has {zones} zones)")]
    NoSuchZone {
        /// The zone asked for.
        zone: u64,
        /// Zones of the device.
        zones: u32,
    },

    /// A read or write that ends past the device's last byte.
    #[error(
        "access of {len} bytes at address {addr} is beyond the end of the device ({size} bytes)"
    )]
    OutOfRange {
        /// The access's first byte, an absolute address.
        addr: u64,
        /// The access's length, in bytes.
        len: u64,
        /// The device's size, in bytes.
        size: u64,
    },

    /// A length or address that is not a whole number of blocks.
    #[error("{what} {value} is not a multiple of the block size {block}")]
    Unaligned {
        /// What it is (`write length`, say).
        what: &'static str,
        /// Its value, in bytes.
        value: u64,
        /// The device's block size, in bytes.
        block: u32,
    },

    /// A write whose offset in its zone is not a whole number of blocks.
    #[error("zone {zone}: write offset {offset} is not a multiple of the block size {block}")]
    UnalignedOffset {
        /// The zone.
        zone: u32,
        /// Where the write started, in bytes from the zone start.
        offset: u64,
        /// The device's block size, in bytes.
        block: u32,
    },

    /// A geometry that breaks a rule of [`crate::Geometry::validate`].
    #[error("invalid geometry: {reason}")]
    InvalidGeometry {
        /// The rule broken.
        reason: String,
    },

    /// An image file that is not a zkv image, or a damaged one.
    #[error("{path}: {reason}")]
    BadImage {
        /// The image file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// Another process holds the image (it is locked).
    #[error("{path}: image is already in use by another process")]
    InUse {
        /// The image file.
        path: PathBuf,
    },

    /// A reader (an image opened read-only) read bytes of a zone that a writer reset after
    /// the reader had read the zone table: they may be the writer's new data, so they are
    /// not returned. Opening the image again sees the new state.
    #[error("{path}: zone {zone} was reset by a writer while it was read")]
    ZoneChanged {
        /// The image file.
        path: PathBuf,
        /// The zone reset.
        zone: u32,
    },

    /// A reader could not read the zone table in one piece: a writer kept changing it.
    #[error("{path}: the zone table kept changing while it was read (a writer is busy)")]
    TableChanging {
        /// The image file.
        path: PathBuf,
    },

    /// A device spec that is not `mem`, `file:PATH` or `zbd:/dev/DEV`.
    #[error("invalid device spec '{spec}': {reason}")]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },

    /// An error injected by [`crate::FaultControl`]; the command changed nothing.
    #[error("injected I/O error on {op}")]
    Injected {
        /// The command hit ([`crate::FaultOp::name`]).
        op: &'static str,
    },

    /// A mutating command on a device opened read-only.
    #[error("{device} is opened read-only")]
    ReadOnlyDevice {
        /// The device ([`crate::ZonedDevice::describe`]).
        device: String,
    },

    /// The emulated device's power is cut ([`crate::FaultControl::power_cut`]): every
    /// command fails until it is restarted.
    #[error("device has lost power (restart it to continue)")]
    PowerLoss,

    /// An operating-system I/O error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, and on which file.
        context: String,
        /// The error the system returned.
        #[source]
        source: std::io::Error,
    },

    /// A request this device or platform cannot serve (a zoned block device off Linux,
    /// bit rot where nothing is stored); the message says which.
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
    /// An [`ZnsError::Io`] error: `source`, while doing `context`.
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
