//! What a caller chooses when formatting or mounting a file system.

use crate::meta::DEFAULT_META_ZONES;
use crate::placement::{self, PlacementPolicy};

use super::error::{FsError, FsResult};

/// Options of [`ZoneFs::format`](super::ZoneFs::format) and
/// [`ZoneFs::mount`](super::ZoneFs::mount).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsOptions {
    /// Zones at the start of the device that hold the metadata log. Must be the same at
    /// format and at every mount (the superblock records it).
    pub meta_zones: u32,
    /// Over-provisioning: this many data zones' worth of capacity is never given to files.
    /// It is a count, not a set of zone numbers: the allocator never takes an empty zone
    /// when that would leave fewer than `reserved_zones` empty zones (the zone cleaner may
    /// use them later). Usable capacity excludes them.
    pub reserved_zones: u32,
    /// Placement policy name, see [`placement::POLICIES`].
    pub placement: String,
    /// When set to x, before a new zone is opened every idle active zone with less than x%
    /// of its capacity left is finished (its rest is given up to save an active resource).
    pub finish_threshold: Option<u8>,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            meta_zones: DEFAULT_META_ZONES,
            reserved_zones: 0,
            placement: "liza".into(),
            finish_threshold: None,
        }
    }
}

impl FsOptions {
    pub fn with_meta_zones(mut self, zones: u32) -> Self {
        self.meta_zones = zones;
        self
    }

    pub fn with_reserved_zones(mut self, zones: u32) -> Self {
        self.reserved_zones = zones;
        self
    }

    pub fn with_placement(mut self, name: impl Into<String>) -> Self {
        self.placement = name.into();
        self
    }

    pub fn with_finish_threshold(mut self, percent: Option<u8>) -> Self {
        self.finish_threshold = percent;
        self
    }

    /// The placement policy named by the options, or a clear error.
    pub(crate) fn policy(&self) -> FsResult<Box<dyn PlacementPolicy>> {
        placement::policy_by_name(&self.placement)
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
