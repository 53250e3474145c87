//! What a caller chooses when formatting or mounting a file system, and how the options
//! are recorded in the metadata ([`StoredOptions`]) so that they survive remounts.

use crate::meta::{StoredOptions, DEFAULT_META_ZONES};
use crate::placement::{self, PlacementPolicy};

use super::cleaner::CleaningMode;
use super::error::{FsError, FsResult};

/// Default `gc_start`: cleaning starts when less than 20% of the usable capacity is free.
pub const DEFAULT_GC_START: u8 = 20;
/// Default `gc_stop`: a cleaning run stops once 25% of the usable capacity is free.
pub const DEFAULT_GC_STOP: u8 = 25;

/// Options of [`ZoneFs::format`](super::ZoneFs::format) and
/// [`ZoneFs::mount`](super::ZoneFs::mount).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsOptions {
    /// Zones at the start of the device that hold the metadata log. Must be the same at
    /// format and at every mount (the superblock records it).
    pub meta_zones: u32,
    /// Over-provisioning: this many data zones' worth of capacity is never given to files.
    /// It is a count, not a set of zone numbers: the allocator never takes an empty zone
    /// when that would leave fewer than `reserved_zones` empty zones; the zone cleaner may
    /// use them for its copies. Usable capacity excludes them.
    pub reserved_zones: u32,
    /// Placement policy name, see [`placement::POLICY_TABLE`].
    pub placement: String,
    /// How blob files are placed, see [`placement::BLOB_POLICY_TABLE`]: `liza` (the default)
    /// leaves them to `placement`, `baza` gives them zones of their own filled in blob file
    /// number order. Recorded with `placement` (as `PLACEMENT/BLOB` unless the default).
    pub blob_placement: String,
    /// When set to x, before a new zone is opened every idle active zone with less than x%
    /// of its capacity left is finished (its rest is given up to save an active resource).
    pub finish_threshold: Option<u8>,
    /// Zone cleaning starts when the free-space ratio (free / usable capacity) drops below
    /// this percentage. `0 < gc_start <= gc_stop < 100`.
    pub gc_start: u8,
    /// A cleaning run stops once the free-space ratio is at or above this percentage.
    pub gc_stop: u8,
    /// What the cleaner does with a victim zone's valid data.
    pub gc_mode: CleaningMode,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            meta_zones: DEFAULT_META_ZONES,
            reserved_zones: 0,
            placement: "liza".into(),
            blob_placement: placement::DEFAULT_BLOB_POLICY.into(),
            finish_threshold: None,
            gc_start: DEFAULT_GC_START,
            gc_stop: DEFAULT_GC_STOP,
            gc_mode: CleaningMode::Copy,
        }
    }
}

impl FsOptions {
    /// The same options with [`FsOptions::meta_zones`] set.
    pub fn with_meta_zones(mut self, zones: u32) -> Self {
        self.meta_zones = zones;
        self
    }

    /// The same options with [`FsOptions::reserved_zones`] set.
    pub fn with_reserved_zones(mut self, zones: u32) -> Self {
        self.reserved_zones = zones;
        self
    }

    /// The same options with [`FsOptions::placement`] set.
    pub fn with_placement(mut self, name: impl Into<String>) -> Self {
        self.placement = name.into();
        self
    }

    /// The same options with [`FsOptions::blob_placement`] set.
    pub fn with_blob_placement(mut self, name: impl Into<String>) -> Self {
        self.blob_placement = name.into();
        self
    }

    /// The same options with [`FsOptions::finish_threshold`] set.
    pub fn with_finish_threshold(mut self, percent: Option<u8>) -> Self {
        self.finish_threshold = percent;
        self
    }

    /// Cleaning thresholds, in percent of the usable capacity (see [`FsOptions::gc_start`]).
    pub fn with_gc(mut self, start: u8, stop: u8) -> Self {
        self.gc_start = start;
        self.gc_stop = stop;
        self
    }

    /// The same options with [`FsOptions::gc_mode`] set.
    pub fn with_gc_mode(mut self, mode: CleaningMode) -> Self {
        self.gc_mode = mode;
        self
    }

    /// Checks `0 < gc_start <= gc_stop < 100`.
    pub fn check_gc(&self) -> FsResult<()> {
        let (start, stop) = (self.gc_start, self.gc_stop);
        if start == 0 || start > stop || stop >= 100 {
            return Err(FsError::GcThresholds { start, stop });
        }
        Ok(())
    }

    /// The options as the metadata records them (all but `meta_zones`, which the
    /// superblocks hold).
    pub fn to_stored(&self) -> StoredOptions {
        StoredOptions {
            reserved_zones: self.reserved_zones,
            placement: self.policy_name(),
            finish_threshold: self.finish_threshold,
            gc_start: self.gc_start,
            gc_stop: self.gc_stop,
            gc_mode: self.gc_mode.name().to_string(),
        }
    }

    /// The options recorded in the metadata, on a device with `meta_zones` metadata zones;
    /// the defaults when none are recorded (metadata written by the metadata layer alone).
    /// A cleaning mode this build does not know is an error; the other values are checked
    /// when the file system mounts with them.
    pub fn from_stored(meta_zones: u32, stored: Option<&StoredOptions>) -> FsResult<FsOptions> {
        let defaults = FsOptions::default().with_meta_zones(meta_zones);
        let Some(s) = stored else {
            return Ok(defaults);
        };
        let gc_mode =
            CleaningMode::from_name(&s.gc_mode).ok_or_else(|| FsError::InvalidOptions {
                reason: format!("the recorded cleaning mode '{}' is unknown", s.gc_mode),
            })?;
        let (files, blobs) = s
            .placement
            .split_once('/')
            .unwrap_or((&s.placement, placement::DEFAULT_BLOB_POLICY));
        Ok(defaults
            .with_reserved_zones(s.reserved_zones)
            .with_placement(files)
            .with_blob_placement(blobs)
            .with_finish_threshold(s.finish_threshold)
            .with_gc(s.gc_start, s.gc_stop)
            .with_gc_mode(gc_mode))
    }

    /// The name of the policy placing every file: `placement`, combined with
    /// `blob_placement` when that is not the default ([`placement::combined_name`]).
    pub fn policy_name(&self) -> String {
        placement::combined_name(&self.placement, &self.blob_placement)
    }

    /// The placement policy named by the options, or a clear error.
    pub(crate) fn policy(&self) -> FsResult<Box<dyn PlacementPolicy>> {
        placement::policy_by_name(&self.policy_name())
            .map_err(|reason| FsError::InvalidOptions { reason })
    }

    pub(crate) fn check_threshold(&self) -> FsResult<()> {
        match self.finish_threshold {
            Some(p) if p > 100 => Err(FsError::InvalidOptions {
                reason: format!("finish threshold {p}% is above 100%"),
            }),
            _ => Ok(()),
        }
    }
}
