//! Figures of the file layer (DESIGN.md section 7).
//!
//! Definitions:
//! - device bytes per category: bytes the device wrote (read) since this mount, from the
//!   device's own counters, indexed by [`IoCategory::index`]; metadata included;
//! - zone resets: data zones reset by this mount; zero-copy resets: those reset while
//!   holding no valid data (every reset so far: there is no cleaner yet); finishes: data
//!   zones finished by the allocator (policy, finish threshold, mount);
//! - placement: decisions taken and the time spent in the policy;
//! - usable bytes = (data zones that are not read-only or offline − reserved zones) ×
//!   zone capacity; free bytes = room left in empty and active data zones − reserved
//!   zones × zone capacity (never below 0); free ratio = free / usable.

use zns::{IoCategory, ZoneState};

use crate::meta::MetaLogStats;

/// A snapshot of the file layer's counters and space figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FsStats {
    pub device_write_bytes: [u64; 7],
    pub device_read_bytes: [u64; 7],
    pub zone_resets: u64,
    pub zero_copy_resets: u64,
    pub finishes: u64,
    pub placement_decisions: u64,
    pub placement_ns: u64,
    pub free_bytes: u64,
    pub usable_bytes: u64,
    pub free_ratio: f64,
    pub files: usize,
    pub open_writers: usize,
    pub data_zones: u32,
    pub reserved_zones: u32,
    pub empty_zones: u32,
    pub active_zones: u32,
    pub full_zones: u32,
    /// Times a writer waited for a zone, and the total wait.
    pub lease_waits: u64,
    pub lease_wait_ns: u64,
    /// Idle writers whose zone was taken back for another writer.
    pub lease_revocations: u64,
    pub meta: MetaLogStats,
}

impl FsStats {
    pub fn device_written(&self, cat: IoCategory) -> u64 {
        self.device_write_bytes[cat.index()]
    }

    pub fn device_written_total(&self) -> u64 {
        self.device_write_bytes.iter().sum()
    }

    /// Mean time per placement decision, in microseconds.
    pub fn placement_mean_us(&self) -> f64 {
        if self.placement_decisions == 0 {
            return 0.0;
        }
        self.placement_ns as f64 / self.placement_decisions as f64 / 1000.0
    }
}

/// One data zone's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneStat {
    pub zone: u32,
    /// The device's state of the zone.
    pub state: ZoneState,
    /// Bytes written since the last reset (a full or finished zone counts its capacity).
    pub written: u64,
    /// Σ extents of the files in the metadata.
    pub valid: u64,
    /// written − valid − unsynced: padding, dropped data, the unwritten rest of a
    /// finished zone.
    pub invalid: u64,
    /// Bytes open writers wrote but have not synced yet.
    pub unsynced: u64,
    /// Placement class (for LIZA a lifetime code; 0 = none).
    pub class: u8,
    /// A writer owns the zone's write pointer.
    pub busy: bool,
}
