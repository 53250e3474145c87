//! Figures of the file layer (DESIGN.md section 7).
//!
//! Definitions:
//! - device bytes per category: bytes the device wrote (read) since this mount, from the
//!   device's own counters, indexed by [`IoCategory::index`]; metadata included;
//! - zone resets: data zones reset by this mount; zero-copy resets: those reset without
//!   the zone cleaner having copied valid data out of them; finishes: data zones finished
//!   by the allocator (policy, finish threshold, mount);
//! - zone cleaning: see [`GcStats`];
//! - placement: decisions taken and the time spent in the policy;
//! - usable bytes = (data zones that are not read-only or offline − reserved zones) ×
//!   zone capacity; free bytes = room left in empty and active data zones − reserved
//!   zones × zone capacity (never below 0); free ratio = free / usable.

use zkv_zns::{IoCategory, ZoneState};

use crate::meta::MetaLogStats;

/// A snapshot of the file layer's counters and space figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FsStats {
    /// Bytes the device wrote since the mount, per [`IoCategory::index`].
    pub device_write_bytes: [u64; 7],
    /// Bytes the device read since the mount, per [`IoCategory::index`].
    pub device_read_bytes: [u64; 7],
    /// Data zones reset by this mount.
    pub zone_resets: u64,
    /// Data zones reset without the cleaner having copied valid data out of them.
    pub zero_copy_resets: u64,
    /// Data zones finished by the allocator (policy, finish threshold, mount).
    pub finishes: u64,
    /// Placement decisions taken.
    pub placement_decisions: u64,
    /// Time spent in the placement policy, in nanoseconds.
    pub placement_ns: u64,
    /// Room left in empty and active data zones, minus the reserve, in bytes.
    pub free_bytes: u64,
    /// Capacity of the writable data zones, minus the reserve, in bytes.
    pub usable_bytes: u64,
    /// `free_bytes / usable_bytes` (0 without usable bytes).
    pub free_ratio: f64,
    /// Files in the metadata.
    pub files: usize,
    /// Files with an open writer.
    pub open_writers: usize,
    /// Zones that are not metadata zones.
    pub data_zones: u32,
    /// Data zones' worth of capacity kept in reserve ([`crate::fs::FsOptions::reserved_zones`]).
    pub reserved_zones: u32,
    /// Empty data zones.
    pub empty_zones: u32,
    /// Active (open or closed) data zones.
    pub active_zones: u32,
    /// Full (or finished) data zones.
    pub full_zones: u32,
    /// Times a writer waited for a zone.
    pub lease_waits: u64,
    /// Total time writers waited for a zone, in nanoseconds.
    pub lease_wait_ns: u64,
    /// Idle writers whose zone was taken back for another writer.
    pub lease_revocations: u64,
    /// The zone cleaner's counters.
    pub gc: GcStats,
    /// The metadata log's counters.
    pub meta: MetaLogStats,
}

/// The zone cleaner's counters since this mount.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Cleaning runs (a run cleans victims until the free-space ratio reaches `gc_stop`,
    /// or nothing more can be cleaned; `clean_one` counts as a run).
    pub runs: u64,
    /// Zones picked as victims.
    pub victims: u64,
    /// Valid bytes moved out of victims into other zones and recorded (Σ extent lengths
    /// of committed migrations; the device bytes, block rounding and abandoned copies
    /// included, are `device_write_bytes[gc_copy]`).
    pub copy_bytes: u64,
    /// The share of `copy_bytes` that belonged to blob files.
    pub blob_copy_bytes: u64,
    /// Bytes of victims freed by the engine compacting (and deleting) the files the
    /// cleaner asked it to compact: Σ victim bytes of the files it reported compacted
    /// that are gone after the call.
    pub compacted_bytes: u64,
    /// Victims reset (by the eager reset, once no valid data and no reader is left).
    /// Those whose data did not have to be copied also count as zero-copy resets.
    pub resets: u64,
    /// Bytes copied out of each victim (its share of `copy_bytes`), one entry per victim
    /// reset, in reset order (`len() == resets`). Zones emptied by deletions alone were
    /// never victims: they are only in `FsStats::zero_copy_resets`.
    pub victim_copy_bytes: Vec<u64>,
    /// Time writers spent blocked on the cleaner: waiting for a run of another thread
    /// (background or inline) when they found no zone, or running one themselves in
    /// inline mode, in nanoseconds.
    pub blocking_ns: u64,
    /// How many times writers were blocked on the cleaner.
    pub blocking_events: u64,
    /// Calls of the engine's compaction callback.
    pub compaction_requests: u64,
}

/// One point of the free-space time series.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FreeSpaceSample {
    /// Logical clock: bytes the device wrote since this mount, every category (user data,
    /// cleaning copies and metadata) included. Deterministic for a deterministic workload,
    /// and the natural x axis of "free space over data written".
    pub t: u64,
    /// free / usable bytes (see [`FsStats::free_ratio`]).
    pub free_ratio: f64,
    /// [`GcStats::copy_bytes`] so far.
    pub gc_copy_bytes: u64,
}

/// Invalid ratios of the full (or finished) data zones: (written − valid − unsynced) /
/// zone capacity, sorted ascending. A finished zone's unwritten rest counts as invalid.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InvalidRatios {
    /// One ratio in [0, 1] per full data zone, ascending.
    pub ratios: Vec<f64>,
}

impl InvalidRatios {
    /// Full data zones counted.
    pub fn len(&self) -> usize {
        self.ratios.len()
    }

    /// Whether no data zone is full.
    pub fn is_empty(&self) -> bool {
        self.ratios.is_empty()
    }

    /// The mean ratio (0 without full zones).
    pub fn mean(&self) -> f64 {
        if self.ratios.is_empty() {
            return 0.0;
        }
        self.ratios.iter().sum::<f64>() / self.ratios.len() as f64
    }

    /// Counts per bucket of width 1 / `buckets` over [0, 1]; a ratio of exactly 1 goes to
    /// the last bucket.
    pub fn histogram(&self, buckets: usize) -> Vec<u64> {
        let mut counts = vec![0u64; buckets];
        if buckets == 0 {
            return counts;
        }
        for r in &self.ratios {
            let i = ((r.clamp(0.0, 1.0) * buckets as f64) as usize).min(buckets - 1);
            if let Some(c) = counts.get_mut(i) {
                *c += 1;
            }
        }
        counts
    }
}

impl FsStats {
    /// Bytes the device wrote for `cat` since the mount.
    pub fn device_written(&self, cat: IoCategory) -> u64 {
        *cat.pick(&self.device_write_bytes)
    }

    /// Bytes the device wrote since the mount, every category.
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

/// What settling the zone table would change now: what a read-write mount does after
/// recovery, and what a read-only mount leaves undone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SettlePlan {
    /// Data zones written but holding no live data (their data died, was cut by a crash or
    /// written by something else): reclaimable, a read-write mount resets them.
    pub reclaimable: Vec<u32>,
    /// Active data zones beyond the active budget, fullest first: a read-write mount
    /// finishes them.
    pub finish: Vec<u32>,
    /// Data zones whose recorded class is stale (they are empty, or reclaimable): a
    /// read-write mount records that they have none, a metadata write.
    pub cleared_classes: Vec<u32>,
}

impl SettlePlan {
    /// Whether settling would change nothing.
    pub fn is_empty(&self) -> bool {
        self.reclaimable.is_empty() && self.finish.is_empty() && self.cleared_classes.is_empty()
    }
}

/// One data zone's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneStat {
    /// The zone's number.
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
    /// Open readers whose view of a file has extents in the zone: a zone with no valid
    /// data is reset only once this is 0.
    pub pins: u32,
    /// A full blob zone's YBIZ (see [`ZoneFs::blob_zone_ybiz`](super::ZoneFs::blob_zone_ybiz)).
    pub ybiz: Option<u64>,
}
