//! The free-space figures the cleaner goes by: the free-space ratio and its test against
//! the thresholds, the time series of samples taken around runs, and the invalid ratios
//! of the full zones. Separate because they only observe: nothing here cleans.

use std::sync::PoisonError;

use crate::fs::shared::{Counters, Shared};
use crate::fs::stats::{FreeSpaceSample, InvalidRatios};
use crate::fs::table::Cond;
use crate::fs::ZoneFs;

impl Shared {
    pub(super) fn below(&self, percent: u8) -> bool {
        self.lock_zones().free_below(percent)
    }

    /// Bytes the device wrote since this mount, every category.
    fn device_written(&self) -> u64 {
        let now = self.dev.stats();
        now.write_bytes
            .iter()
            .zip(self.baseline.write_bytes.iter())
            .map(|(n, b)| n.saturating_sub(*b))
            .sum()
    }

    pub(super) fn sample(&self) -> FreeSpaceSample {
        let t = self.device_written();
        let free_ratio = self.lock_zones().free_ratio();
        let s = FreeSpaceSample {
            t,
            free_ratio,
            gc_copy_bytes: Counters::get(&self.counters.gc_copy_bytes),
        };
        self.cleaner
            .samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(s);
        s
    }
}

impl ZoneFs {
    /// Whether the free-space ratio is below `percent` (the cleaner's own test).
    pub fn free_below(&self, percent: u8) -> bool {
        self.shared.below(percent)
    }

    /// free / usable bytes now.
    pub fn free_ratio(&self) -> f64 {
        self.shared.lock_zones().free_ratio()
    }

    /// Bytes files may still write now: room in empty and active zones, minus the
    /// reserve (the cleaner's).
    pub fn free_bytes(&self) -> u64 {
        self.shared.lock_zones().free_bytes()
    }

    /// Takes a point of the free-space time series now (runs take one when they start
    /// and one when they end).
    pub fn sample(&self) -> FreeSpaceSample {
        self.shared.sample()
    }

    /// The time series so far.
    pub fn samples(&self) -> Vec<FreeSpaceSample> {
        self.shared
            .cleaner
            .samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The time series so far, emptied.
    pub fn take_samples(&self) -> Vec<FreeSpaceSample> {
        std::mem::take(
            &mut *self
                .shared
                .cleaner
                .samples
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Invalid ratios of the full (or finished) data zones now.
    pub fn invalid_ratio_distribution(&self) -> InvalidRatios {
        let meta = self.shared.lock_meta();
        let zones = self.shared.lock_zones();
        let capacity = zones.capacity();
        let mut ratios: Vec<f64> = zones
            .zones()
            .filter(|(_, s)| s.cond == Cond::Full)
            .map(|(z, s)| {
                let held = s.live.max(meta.state.valid_bytes(z));
                s.written.saturating_sub(held) as f64 / capacity.max(1) as f64
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        InvalidRatios { ratios }
    }
}
