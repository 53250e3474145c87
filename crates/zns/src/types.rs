//! Plain data types shared by every backend: geometry, zone states, zone descriptors, I/O tags.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Result, ZnsError};

/// Zone condition, as NVMe ZNS defines it and Linux reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneState {
    /// Nothing written since the last reset; uses no resource.
    Empty,
    /// Opened by a write; the device may close it to make room for another open zone.
    ImplicitOpen,
    /// Opened by an open command; stays open until closed, finished or reset.
    ExplicitOpen,
    /// Partly written and not open: holds an active resource, not an open one.
    Closed,
    /// Written to capacity, or finished: readable, not writable until reset.
    Full,
    /// Readable only (a failing zone); no write or zone command is accepted.
    ReadOnly,
    /// Unusable: neither readable nor writable.
    Offline,
}

impl ZoneState {
    /// Every condition.
    pub const ALL: [ZoneState; 7] = [
        ZoneState::Empty,
        ZoneState::ImplicitOpen,
        ZoneState::ExplicitOpen,
        ZoneState::Closed,
        ZoneState::Full,
        ZoneState::ReadOnly,
        ZoneState::Offline,
    ];

    /// Open zones consume an open resource (and an active one).
    pub fn is_open(self) -> bool {
        matches!(self, ZoneState::ImplicitOpen | ZoneState::ExplicitOpen)
    }

    /// Active zones = open ∪ closed: they consume an active resource.
    pub fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }

    /// The name used in CLI output and JSON (`zkv zone report --json`).
    pub fn name(self) -> &'static str {
        match self {
            ZoneState::Empty => "empty",
            ZoneState::ImplicitOpen => "implicit_open",
            ZoneState::ExplicitOpen => "explicit_open",
            ZoneState::Closed => "closed",
            ZoneState::Full => "full",
            ZoneState::ReadOnly => "read_only",
            ZoneState::Offline => "offline",
        }
    }

    /// Stable one-byte encoding used by on-disk formats.
    pub fn code(self) -> u8 {
        match self {
            ZoneState::Empty => 1,
            ZoneState::ImplicitOpen => 2,
            ZoneState::ExplicitOpen => 3,
            ZoneState::Closed => 4,
            ZoneState::Full => 5,
            ZoneState::ReadOnly => 6,
            ZoneState::Offline => 7,
        }
    }

    /// The state of a [`ZoneState::code`]; `None` for a byte that is no code.
    pub fn from_code(code: u8) -> Option<ZoneState> {
        Some(match code {
            1 => ZoneState::Empty,
            2 => ZoneState::ImplicitOpen,
            3 => ZoneState::ExplicitOpen,
            4 => ZoneState::Closed,
            5 => ZoneState::Full,
            6 => ZoneState::ReadOnly,
            7 => ZoneState::Offline,
            _ => return None,
        })
    }
}

impl fmt::Display for ZoneState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Zone management commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZoneOp {
    /// Open the zone explicitly (EMPTY, IMPLICIT OPEN or CLOSED to EXPLICIT OPEN).
    Open,
    /// Close an open zone (to CLOSED, or EMPTY if nothing was written).
    Close,
    /// Make the zone FULL: the rest of its capacity can no longer be written.
    Finish,
    /// Empty the zone: its data is gone, its write pointer back at its start.
    Reset,
}

impl ZoneOp {
    /// The command's name: `open`, `close`, `finish`, `reset`.
    pub fn name(self) -> &'static str {
        match self {
            ZoneOp::Open => "open",
            ZoneOp::Close => "close",
            ZoneOp::Finish => "finish",
            ZoneOp::Reset => "reset",
        }
    }
}

impl fmt::Display for ZoneOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an I/O is for. The caller tags every read and write so that the device can account
/// bytes (and, with a timing model, busy time) per category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IoCategory {
    /// Untagged or direct user I/O (e.g. the `zkv zone` command).
    User,
    /// The engine's write-ahead log.
    Wal,
    /// Memtable flushes: new level-0 tables.
    Flush,
    /// Compactions: tables rewritten into the next level.
    Compaction,
    /// Valid data the zone cleaner copies out of its victims.
    GcCopy,
    /// The file layer's metadata: its superblock and metadata log.
    Metadata,
    /// Blob files (BlobDB's values kept apart from the tables).
    Blob,
}

impl IoCategory {
    /// Every category, in [`IoCategory::index`] order.
    pub const ALL: [IoCategory; 7] = [
        IoCategory::User,
        IoCategory::Wal,
        IoCategory::Flush,
        IoCategory::Compaction,
        IoCategory::GcCopy,
        IoCategory::Metadata,
        IoCategory::Blob,
    ];

    /// The category's position in [`IoCategory::ALL`] (and in per-category arrays such as
    /// [`crate::DeviceStats::write_bytes`]).
    pub fn index(self) -> usize {
        self as usize
    }

    /// This category's element of a per-category array (in the order of [`IoCategory::ALL`]).
    pub fn pick<T>(self, per: &[T; 7]) -> &T {
        let [user, wal, flush, compaction, gc_copy, metadata, blob] = per;
        match self {
            IoCategory::User => user,
            IoCategory::Wal => wal,
            IoCategory::Flush => flush,
            IoCategory::Compaction => compaction,
            IoCategory::GcCopy => gc_copy,
            IoCategory::Metadata => metadata,
            IoCategory::Blob => blob,
        }
    }

    /// The category's name in reports and JSON (`gc_copy`, say).
    pub fn name(self) -> &'static str {
        match self {
            IoCategory::User => "user",
            IoCategory::Wal => "wal",
            IoCategory::Flush => "flush",
            IoCategory::Compaction => "compaction",
            IoCategory::GcCopy => "gc_copy",
            IoCategory::Metadata => "metadata",
            IoCategory::Blob => "blob",
        }
    }
}

/// One zone as `report zones` describes it. `start`, `wp` are absolute byte addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneInfo {
    /// The zone's number.
    pub zone: u32,
    /// The zone's first byte, an absolute address.
    pub start: u64,
    /// The zone's size in the address space, in bytes.
    pub size: u64,
    /// Bytes the zone can hold (≤ `size`).
    pub capacity: u64,
    /// Write pointer. As Linux reports it, a FULL zone's write pointer is the zone end
    /// (`start + size`), so callers must not use it to learn how much a full zone holds.
    pub wp: u64,
    /// The zone's condition.
    pub state: ZoneState,
}

impl ZoneInfo {
    /// Bytes written since the last reset, for zones whose write pointer is meaningful.
    pub fn written(&self) -> u64 {
        self.wp.saturating_sub(self.start)
    }

    /// Bytes the zone uses up: its write pointer's offset, except that a full zone counts
    /// its whole capacity (Linux reports a full zone's write pointer at the zone end, and a
    /// finished zone's unwritten rest can never be written) and an offline zone nothing.
    pub fn used(&self) -> u64 {
        match self.state {
            ZoneState::Full => self.capacity,
            ZoneState::Offline => 0,
            _ => self.written().min(self.capacity),
        }
    }
}

/// The most zones a device may have (real drives have tens of thousands at most).
pub const MAX_ZONES: u32 = 1 << 20;

/// The fixed shape of a zoned device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    /// Number of zones.
    pub zones: u32,
    /// Zone size in bytes, a power of two.
    pub zone_size: u64,
    /// Writable bytes per zone, ≤ zone size.
    pub zone_capacity: u64,
    /// Logical block size: writes must be aligned to it and a multiple of it.
    pub block_size: u32,
    /// Maximum open zones; 0 = unlimited.
    pub max_open: u32,
    /// Maximum active (open or closed) zones; 0 = unlimited.
    pub max_active: u32,
}

impl Geometry {
    /// A ZN540-like geometry with the given number and size of zones (capacity = size,
    /// 4 KiB blocks, 14 open / 14 active).
    pub fn new(zones: u32, zone_size: u64) -> Geometry {
        Geometry {
            zones,
            zone_size,
            zone_capacity: zone_size,
            block_size: 4096,
            max_open: 14,
            max_active: 14,
        }
    }

    /// The same geometry with `capacity` writable bytes per zone.
    pub fn with_capacity(mut self, capacity: u64) -> Geometry {
        self.zone_capacity = capacity;
        self
    }

    /// The same geometry with these open and active zone limits (0: unlimited).
    pub fn with_limits(mut self, max_open: u32, max_active: u32) -> Geometry {
        self.max_open = max_open;
        self.max_active = max_active;
        self
    }

    /// The same geometry with `block_size`-byte blocks.
    pub fn with_block_size(mut self, block_size: u32) -> Geometry {
        self.block_size = block_size;
        self
    }

    /// Checks every rule a geometry must obey; the message names the rule broken.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(ZnsError::InvalidGeometry { reason });
        if self.zones == 0 {
            return bad("the device must have at least one zone".into());
        }
        if self.zones > MAX_ZONES {
            return bad(format!(
                "{} zones is more than the {MAX_ZONES} zones supported",
                self.zones
            ));
        }
        if self.block_size < 512 || !self.block_size.is_power_of_two() {
            return bad(format!(
                "block size {} is not a power of two of at least 512",
                self.block_size
            ));
        }
        if !self.zone_size.is_power_of_two() {
            return bad(format!(
                "zone size {} is not a power of two",
                self.zone_size
            ));
        }
        if self.zone_size < u64::from(self.block_size) {
            return bad(format!(
                "zone size {} is smaller than the block size {}",
                self.zone_size, self.block_size
            ));
        }
        if self.zone_capacity == 0 || self.zone_capacity > self.zone_size {
            return bad(format!(
                "zone capacity {} must be between one block and the zone size {}",
                self.zone_capacity, self.zone_size
            ));
        }
        if !self
            .zone_capacity
            .is_multiple_of(u64::from(self.block_size))
        {
            return bad(format!(
                "zone capacity {} is not a multiple of the block size {}",
                self.zone_capacity, self.block_size
            ));
        }
        if self.max_open > 0 && self.max_active > 0 && self.max_open > self.max_active {
            return bad(format!(
                "max open zones {} exceeds max active zones {}",
                self.max_open, self.max_active
            ));
        }
        if u64::from(self.zones).checked_mul(self.zone_size).is_none() {
            return bad("zones × zone size overflows 64 bits".into());
        }
        Ok(())
    }

    /// Total addressable bytes (zones × zone size).
    pub fn device_size(&self) -> u64 {
        u64::from(self.zones) * self.zone_size
    }

    /// Total writable bytes (zones × capacity).
    pub fn total_capacity(&self) -> u64 {
        u64::from(self.zones) * self.zone_capacity
    }

    /// The absolute address of zone `zone`'s first byte.
    pub fn zone_start(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_size
    }

    /// The zone and in-zone offset a write to `addr` targets: the zone must exist and the
    /// offset be block aligned. Every backend checks a write address this way.
    pub fn locate_write(&self, addr: u64) -> Result<(u32, u64)> {
        let zone = self.check_zone(self.zone_of(addr))?;
        let offset = addr - self.zone_start(zone);
        if !offset.is_multiple_of(u64::from(self.block_size)) {
            return Err(ZnsError::UnalignedOffset {
                zone,
                offset,
                block: self.block_size,
            });
        }
        Ok((zone, offset))
    }

    /// `zone` as a zone number, if the device has it. Every backend checks a command's
    /// zone this way.
    pub fn check_zone(&self, zone: u64) -> Result<u32> {
        if zone >= u64::from(self.zones) {
            return Err(ZnsError::NoSuchZone {
                zone,
                zones: self.zones,
            });
        }
        Ok(zone as u32)
    }

    /// Checks that `value` (a length or offset called `what`) is a whole number of blocks.
    pub fn check_block(&self, what: &'static str, value: u64) -> Result<()> {
        if !value.is_multiple_of(u64::from(self.block_size)) {
            return Err(ZnsError::Unaligned {
                what,
                value,
                block: self.block_size,
            });
        }
        Ok(())
    }

    /// Zone holding an absolute byte address (not checked against the zone count).
    pub fn zone_of(&self, addr: u64) -> u64 {
        addr / self.zone_size
    }

    /// Splits a read of `buf.len()` bytes at `addr` into one piece per zone it touches:
    /// `(zone, offset in the zone, the piece of buf)`. The caller has checked that the read
    /// lies inside the device.
    pub(crate) fn zone_pieces<'a>(&self, addr: u64, buf: &'a mut [u8]) -> ZonePieces<'a> {
        ZonePieces {
            geo: *self,
            pos: addr,
            rest: buf,
        }
    }
}

/// Splits a piece of a read at offset `off` of a zone into the bytes below the zone's write
/// pointer `wp` (stored) and the rest (never written: they read as zeros).
pub(crate) fn split_at_wp(piece: &mut [u8], off: u64, wp: u64) -> (&mut [u8], &mut [u8]) {
    let stored = wp.saturating_sub(off).min(piece.len() as u64) as usize;
    piece.split_at_mut(stored)
}

/// The iterator of [`Geometry::zone_pieces`].
pub(crate) struct ZonePieces<'a> {
    geo: Geometry,
    pos: u64,
    rest: &'a mut [u8],
}

impl<'a> Iterator for ZonePieces<'a> {
    type Item = (u32, u64, &'a mut [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let zone = self.geo.zone_of(self.pos) as u32;
        let off = self.pos - self.geo.zone_start(zone);
        let n = ((self.geo.zone_size - off) as usize).min(self.rest.len());
        let (piece, rest) = std::mem::take(&mut self.rest).split_at_mut_checked(n)?;
        self.rest = rest;
        self.pos += n as u64;
        Some((zone, off, piece))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn used_bytes_count_full_zones_by_capacity() {
        let info = |state, wp| ZoneInfo {
            zone: 1,
            start: 1 << 20,
            size: 1 << 20,
            capacity: 768 << 10,
            wp,
            state,
        };
        assert_eq!(info(ZoneState::ImplicitOpen, (1 << 20) + 8192).used(), 8192);
        assert_eq!(info(ZoneState::Full, 2 << 20).used(), 768 << 10);
        assert_eq!(info(ZoneState::Offline, 2 << 20).used(), 0);
        assert_eq!(info(ZoneState::Empty, 1 << 20).used(), 0);
    }

    #[test]
    fn pick_follows_the_category_index() {
        let indexes = IoCategory::ALL.map(IoCategory::index);
        for cat in IoCategory::ALL {
            assert_eq!(*cat.pick(&indexes), cat.index(), "{cat:?}");
        }
    }

    #[test]
    fn zone_pieces_split_a_read_at_zone_boundaries() {
        let geo = Geometry::new(4, 4096);
        let mut buf = vec![0u8; 4096 + 200];
        let pieces: Vec<_> = geo
            .zone_pieces(4096 - 100, &mut buf)
            .map(|(zone, off, piece)| (zone, off, piece.len()))
            .collect();
        assert_eq!(pieces, [(0, 3996, 100), (1, 0, 4096), (2, 0, 100)]);
    }

    #[test]
    fn geometry_rules() {
        assert!(Geometry::new(4, 1 << 20).validate().is_ok());
        assert!(Geometry::new(0, 1 << 20).validate().is_err());
        assert!(Geometry::new(4, 3 << 20).validate().is_err());
        assert!(Geometry::new(4, 1 << 20)
            .with_capacity(2 << 20)
            .validate()
            .is_err());
        assert!(Geometry::new(4, 1 << 20)
            .with_capacity(1000)
            .validate()
            .is_err());
        assert!(Geometry::new(4, 1 << 20)
            .with_limits(8, 4)
            .validate()
            .is_err());
        assert!(Geometry::new(4, 1 << 20)
            .with_block_size(1000)
            .validate()
            .is_err());
        assert!(Geometry::new(4, 1 << 20)
            .with_limits(0, 4)
            .validate()
            .is_ok());
    }

    #[test]
    fn state_codes_round_trip() {
        for s in ZoneState::ALL {
            assert_eq!(ZoneState::from_code(s.code()), Some(s));
        }
        assert_eq!(ZoneState::from_code(0), None);
        assert_eq!(ZoneState::from_code(8), None);
    }
}
