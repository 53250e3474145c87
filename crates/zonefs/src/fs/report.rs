//! Figures and checks: per-zone statistics, the metrics snapshot, consistency.

use super::mount::data_zone_report;
use super::shared::Counters;
use super::table::{ratio, Cond};
use super::{FsError, FsResult, FsStats, GcStats, SettlePlan, ZoneFs, ZoneStat};

impl ZoneFs {
    /// Per data zone: state, written, valid, invalid bytes and placement class.
    pub fn zone_stats(&self) -> FsResult<Vec<ZoneStat>> {
        let sh = &self.shared;
        let report = data_zone_report(sh.dev.as_ref(), sh.layout.meta_zones)?;
        let meta = sh.lock_meta();
        let zones = sh.lock_zones();
        Ok(report
            .iter()
            .filter_map(|info| {
                let s = zones.slot(info.zone)?;
                let valid = meta.state.valid_bytes(info.zone);
                let unsynced = s.live.saturating_sub(valid);
                Some(ZoneStat {
                    zone: info.zone,
                    state: info.state,
                    written: s.written,
                    valid,
                    invalid: s.written.saturating_sub(valid + unsynced),
                    unsynced,
                    class: s.class,
                    busy: s.owner.is_some(),
                    pins: s.pins,
                    ybiz: s.ybiz(),
                })
            })
            .collect())
    }

    /// What settling would change now. Empty after a read-write mount (it settled), unless
    /// something died since and waits for a reader; after a read-only mount, what a
    /// read-write mount would reset and finish.
    pub fn settle_plan(&self) -> SettlePlan {
        let meta = self.shared.lock_meta();
        let zones = self.shared.lock_zones();
        let reclaimable = zones.dead_zones();
        let mut after = zones.clone();
        for zone in &reclaimable {
            after.mark_reset(*zone);
        }
        SettlePlan {
            cleared_classes: after.empty_among(meta.state.placements().map(|(z, _)| z)),
            reclaimable,
            finish: after.excess_active(),
        }
    }

    /// The live bytes of every full zone no writer owns, in zone order: the zones the
    /// cleaner may pick as victims, and what it would copy out of each. Reads the zone
    /// table only (no device report), so a compaction picker may ask it per decision.
    pub fn full_zone_live_bytes(&self) -> Vec<(u32, u64)> {
        let zones = self.shared.lock_zones();
        zones
            .zones()
            .filter(|(_, s)| s.cond == Cond::Full && s.owner.is_none())
            .map(|(zone, s)| (zone, s.live))
            .collect()
    }

    /// The YBIZ (Youngest Blob Index in Zone) of every full blob zone, in zone order: the
    /// largest blob file number written into the zone, recorded when it became full
    /// (written to capacity or finished) and dropped when it is reset. Blob zones exist
    /// when blob files have a placement of their own (`FsOptions::blob_placement` `baza`);
    /// otherwise the list is empty. Reads the zone table only, like
    /// [`ZoneFs::full_zone_live_bytes`].
    pub fn blob_zone_ybiz(&self) -> Vec<(u32, u64)> {
        self.shared.lock_zones().ybiz()
    }

    /// The smallest YBIZ of [`ZoneFs::blob_zone_ybiz`] (Z_Cutoff's bound), `None` without
    /// full blob zones.
    pub fn min_blob_zone_ybiz(&self) -> Option<u64> {
        self.blob_zone_ybiz().into_iter().map(|(_, y)| y).min()
    }

    /// The file system's counters since the mount, and the device's.
    pub fn stats(&self) -> FsStats {
        let sh = &self.shared;
        let dev = sh.dev.stats();
        let c = &sh.counters;
        // Copied before the locks are taken: the list grows with every victim.
        let victim_copy_bytes = c.victim_copy_bytes();
        let since = |now: &[u64; 7], then: &[u64; 7]| {
            let mut d = *now;
            d.iter_mut()
                .zip(then)
                .for_each(|(n, t)| *n = n.saturating_sub(*t));
            d
        };
        let meta = sh.lock_meta();
        let zones = sh.lock_zones();
        let count =
            |f: &dyn Fn(Cond) -> bool| zones.zones().filter(|(_, s)| f(s.cond)).count() as u32;
        let (free, usable) = (zones.free_bytes(), zones.usable_bytes());
        FsStats {
            device_write_bytes: since(&dev.write_bytes, &sh.baseline.write_bytes),
            device_read_bytes: since(&dev.read_bytes, &sh.baseline.read_bytes),
            zone_resets: Counters::get(&c.resets),
            zero_copy_resets: Counters::get(&c.zero_copy_resets),
            finishes: Counters::get(&c.finishes),
            placement_decisions: Counters::get(&c.placement_decisions),
            placement_ns: Counters::get(&c.placement_ns),
            free_bytes: free,
            usable_bytes: usable,
            free_ratio: ratio(free, usable),
            files: meta.state.file_count(),
            open_writers: meta.writing.len(),
            data_zones: zones.budget.data_zones,
            reserved_zones: zones.budget.reserved,
            empty_zones: count(&|c| c == Cond::Empty),
            active_zones: zones.active_count(),
            full_zones: count(&|c| c == Cond::Full),
            lease_waits: Counters::get(&c.lease_waits),
            lease_wait_ns: Counters::get(&c.lease_wait_ns),
            lease_revocations: Counters::get(&c.revocations),
            gc: GcStats {
                runs: Counters::get(&c.gc_runs),
                victims: Counters::get(&c.gc_victims),
                copy_bytes: Counters::get(&c.gc_copy_bytes),
                blob_copy_bytes: Counters::get(&c.gc_blob_copy_bytes),
                compacted_bytes: Counters::get(&c.gc_compacted_bytes),
                resets: victim_copy_bytes.len() as u64,
                victim_copy_bytes,
                blocking_ns: Counters::get(&c.gc_blocking_ns),
                blocking_events: Counters::get(&c.gc_blocking_events),
                compaction_requests: Counters::get(&c.gc_compaction_requests),
            },
            meta: meta.log.stats(),
        }
    }

    /// Checks the metadata invariants and that the zone table agrees with them: every
    /// extent lies in written bytes of its zone, and each zone's live bytes cover its valid
    /// bytes (exactly, when no writer is open).
    pub fn check_consistency(&self) -> FsResult<()> {
        let meta = self.shared.lock_meta();
        meta.state
            .check_invariants()
            .map_err(|e| FsError::rejected("metadata invariants", e))?;
        let zones = self.shared.lock_zones();
        let idle = meta.writing.is_empty();
        for (zone, s) in zones.zones() {
            let valid = meta.state.valid_bytes(zone);
            let end = meta.state.zone_extents(zone).map(|(e, _)| e.end()).max();
            let bad = |reason: String| Err(FsError::Inconsistent { zone, reason });
            if end.is_some_and(|end| end > s.written) {
                return bad(format!(
                    "extents reach {end:?} beyond {} written",
                    s.written
                ));
            }
            if s.live < valid || (idle && s.live != valid) {
                return bad(format!("live bytes {} but valid bytes {valid}", s.live));
            }
        }
        Ok(())
    }
}
