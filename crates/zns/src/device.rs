//! The zoned device trait every backend implements, and the counters they share.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::error::Result;
use crate::fault::FaultControl;
use crate::timing::TimingReport;
use crate::types::{Geometry, IoCategory, ZoneInfo, ZoneOp};

/// A zoned block device with NVMe ZNS semantics. Addresses are absolute byte offsets.
///
/// All methods take `&self`: a device is shared by many threads. Each command either
/// succeeds completely or fails and changes nothing.
pub trait ZonedDevice: Send + Sync {
    /// The device's fixed shape.
    fn geometry(&self) -> Geometry;

    /// A short description of the backend, e.g. `mem`, `file:/tmp/zns.img`.
    fn describe(&self) -> String;

    /// Descriptors of zones `first .. first + count` (clipped to the device).
    fn report_zones(&self, first: u32, count: u32) -> Result<Vec<ZoneInfo>>;

    /// Reads any byte range of the device except offline zones; bytes that were never
    /// written since the zone's last reset read as zeros.
    fn read(&self, addr: u64, buf: &mut [u8], cat: IoCategory) -> Result<()>;

    /// Writes at the zone's write pointer. `addr` and the length must be block aligned.
    fn write(&self, addr: u64, data: &[u8], cat: IoCategory) -> Result<()>;

    /// Writes at the zone's write pointer and returns the address written.
    fn append(&self, zone: u32, data: &[u8], cat: IoCategory) -> Result<u64>;

    /// Open, close, finish or reset one zone.
    fn zone_op(&self, zone: u32, op: ZoneOp) -> Result<()>;

    /// Makes every completed write durable (the NVMe flush command).
    fn sync(&self) -> Result<()>;

    /// Counters since the device was opened.
    fn stats(&self) -> DeviceStats;

    /// Fault injection, for emulated devices only.
    fn faults(&self) -> Option<&dyn FaultControl> {
        None
    }

    /// Modeled NAND time, when a timing model is attached.
    fn timing(&self) -> Option<TimingReport> {
        None
    }

    /// The descriptor of one zone; [`crate::ZnsError::NoSuchZone`] past the last.
    fn zone_info(&self, zone: u32) -> Result<ZoneInfo> {
        let geo = self.geometry();
        if zone >= geo.zones {
            return Err(crate::ZnsError::NoSuchZone {
                zone: u64::from(zone),
                zones: geo.zones,
            });
        }
        let mut v = self.report_zones(zone, 1)?;
        v.pop().ok_or(crate::ZnsError::NoSuchZone {
            zone: u64::from(zone),
            zones: geo.zones,
        })
    }

    /// Opens the zone explicitly ([`ZoneOp::Open`]).
    fn open_zone(&self, zone: u32) -> Result<()> {
        self.zone_op(zone, ZoneOp::Open)
    }

    /// Closes the open zone ([`ZoneOp::Close`]).
    fn close_zone(&self, zone: u32) -> Result<()> {
        self.zone_op(zone, ZoneOp::Close)
    }

    /// Makes the zone FULL ([`ZoneOp::Finish`]).
    fn finish_zone(&self, zone: u32) -> Result<()> {
        self.zone_op(zone, ZoneOp::Finish)
    }

    /// Empties the zone ([`ZoneOp::Reset`]).
    fn reset_zone(&self, zone: u32) -> Result<()> {
        self.zone_op(zone, ZoneOp::Reset)
    }
}

/// A snapshot of a device's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceStats {
    /// Bytes written, indexed by [`IoCategory::index`].
    pub write_bytes: [u64; 7],
    /// Bytes read, indexed by [`IoCategory::index`].
    pub read_bytes: [u64; 7],
    /// Write and append commands.
    pub writes: u64,
    /// Read commands.
    pub reads: u64,
    /// Zone resets.
    pub resets: u64,
    /// Zone finishes.
    pub finishes: u64,
    /// Syncs (flushes).
    pub syncs: u64,
    /// Resets per zone (wear), since the device was opened.
    pub zone_resets: Vec<u64>,
}

impl DeviceStats {
    /// Bytes written for `cat`.
    pub fn written(&self, cat: IoCategory) -> u64 {
        *cat.pick(&self.write_bytes)
    }

    /// Bytes read for `cat`.
    pub fn read(&self, cat: IoCategory) -> u64 {
        *cat.pick(&self.read_bytes)
    }

    /// Resets of `zone` since the device was opened (0 for a zone it does not have).
    pub fn resets_of(&self, zone: u32) -> u64 {
        self.zone_resets.get(zone as usize).copied().unwrap_or(0)
    }

    /// Bytes written, all categories.
    pub fn total_written(&self) -> u64 {
        self.write_bytes.iter().sum()
    }

    /// Bytes read, all categories.
    pub fn total_read(&self) -> u64 {
        self.read_bytes.iter().sum()
    }
}

/// Lock-free counters for a [`ZonedDevice`] (or any store of zoned-device I/O) to keep its
/// [`DeviceStats`] with: the backends update them as commands complete and
/// [`Counters::snapshot`] reads them.
#[derive(Debug)]
pub struct Counters {
    write_bytes: [AtomicU64; 7],
    read_bytes: [AtomicU64; 7],
    writes: AtomicU64,
    reads: AtomicU64,
    resets: AtomicU64,
    finishes: AtomicU64,
    syncs: AtomicU64,
    zone_resets: Vec<AtomicU64>,
}

impl Counters {
    /// Zeroed counters for a device of `zones` zones (resets are counted per zone).
    pub fn new(zones: u32) -> Counters {
        Counters {
            write_bytes: Default::default(),
            read_bytes: Default::default(),
            writes: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            finishes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            zone_resets: (0..zones).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Counts a write of `len` bytes of category `cat`.
    pub fn on_write(&self, cat: IoCategory, len: u64) {
        cat.pick(&self.write_bytes)
            .fetch_add(len, Ordering::Relaxed);
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a read of `len` bytes of category `cat`.
    pub fn on_read(&self, cat: IoCategory, len: u64) {
        cat.pick(&self.read_bytes).fetch_add(len, Ordering::Relaxed);
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a reset of `zone` (a zone past the count given to [`Counters::new`] counts
    /// only in the total).
    pub fn on_reset(&self, zone: u32) {
        self.resets.fetch_add(1, Ordering::Relaxed);
        if let Some(c) = self.zone_resets.get(zone as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a zone finish.
    pub fn on_finish(&self) {
        self.finishes.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a sync.
    pub fn on_sync(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> DeviceStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DeviceStats {
            write_bytes: self.write_bytes.each_ref().map(load),
            read_bytes: self.read_bytes.each_ref().map(load),
            writes: load(&self.writes),
            reads: load(&self.reads),
            resets: load(&self.resets),
            finishes: load(&self.finishes),
            syncs: load(&self.syncs),
            zone_resets: self.zone_resets.iter().map(load).collect(),
        }
    }
}
