//! Format and mount: from a device to a running file system.
//!
//! Mount recovers the metadata state from the log, then rebuilds the zone table from the
//! device's zone report (written bytes = write pointer, except for FULL zones, whose
//! reported write pointer is the zone end: they count their whole capacity) and from the
//! state (live bytes = Σ extents, class = the persisted zone placement). It then settles
//! the table: zones holding no live data are reset, empty zones lose their stale class,
//! and active zones beyond the active budget are finished.

use std::sync::{Arc, Condvar, Mutex, RwLock};

use zns::{ZoneInfo, ZoneState, ZonedDevice};

use crate::meta::{FsState, MetaLog, Record, ZonePlacement, MIN_META_ZONES};
use crate::placement::PlacementPolicy;

use super::budget::Budget;
use super::cleaner::CleanerCore;
use super::error::{FsError, FsResult};
use super::options::FsOptions;
use super::shared::{Counters, MetaStore, Shared};
use super::table::{Cond, ZoneTable};
use super::ZoneFs;

impl ZoneFs {
    /// Erases the device (metadata and data zones) and writes an empty file system.
    pub fn format(dev: Arc<dyn ZonedDevice>, opts: FsOptions) -> FsResult<ZoneFs> {
        let (budget, policy) = prepare(dev.as_ref(), &opts)?;
        let log = MetaLog::format(Arc::clone(&dev), opts.meta_zones)
            .map_err(|e| FsError::meta("format the metadata log", e))?;
        let report = data_zone_report(dev.as_ref(), opts.meta_zones)?;
        let erasable = |i: &&ZoneInfo| {
            !matches!(
                i.state,
                ZoneState::Empty | ZoneState::Offline | ZoneState::ReadOnly
            )
        };
        for info in report.iter().filter(erasable) {
            dev.reset_zone(info.zone)
                .map_err(|e| FsError::device(format!("format: reset zone {}", info.zone), e))?;
        }
        let report = data_zone_report(dev.as_ref(), opts.meta_zones)?;
        let state = FsState::new(log.layout());
        let table = table_of(&report, &dev, &opts, budget);
        Ok(assemble(dev, opts, policy, state, log, table))
    }

    /// Mounts a formatted device: recovers the metadata and rebuilds the zone table.
    pub fn mount(dev: Arc<dyn ZonedDevice>, opts: FsOptions) -> FsResult<ZoneFs> {
        let (budget, policy) = prepare(dev.as_ref(), &opts)?;
        let (state, log) = MetaLog::recover(Arc::clone(&dev), opts.meta_zones)
            .map_err(|e| FsError::meta("mount: recover the metadata log", e))?;
        let report = data_zone_report(dev.as_ref(), opts.meta_zones)?;
        let mut table = table_of(&report, &dev, &opts, budget);
        attach_files(&mut table, &state)?;
        let fs = assemble(dev, opts, policy, state, log, table);
        fs.shared.settle()?;
        Ok(fs)
    }
}

/// Checks the options against the device; returns the zone budget and the policy.
fn prepare(
    dev: &dyn ZonedDevice,
    opts: &FsOptions,
) -> FsResult<(Budget, Box<dyn PlacementPolicy>)> {
    let geo = dev.geometry();
    if opts.meta_zones < MIN_META_ZONES || opts.meta_zones >= geo.zones {
        return Err(FsError::InvalidOptions {
            reason: format!(
                "{} metadata zones do not fit a device of {} zones \
                 (at least {MIN_META_ZONES}, and at least one data zone)",
                opts.meta_zones, geo.zones
            ),
        });
    }
    opts.check_threshold()?;
    opts.check_gc()?;
    let policy = opts.policy()?;
    let budget = Budget::new(&geo, opts.meta_zones, opts.reserved_zones)?;
    Ok((budget, policy))
}

fn data_zone_report(dev: &dyn ZonedDevice, meta_zones: u32) -> FsResult<Vec<ZoneInfo>> {
    let zones = dev.geometry().zones;
    dev.report_zones(meta_zones, zones - meta_zones)
        .map_err(|e| FsError::device("report the data zones", e))
}

fn table_of(
    report: &[ZoneInfo],
    dev: &Arc<dyn ZonedDevice>,
    opts: &FsOptions,
    budget: Budget,
) -> ZoneTable {
    ZoneTable::from_report(
        report,
        opts.meta_zones,
        dev.geometry().zone_capacity,
        budget,
    )
}

/// Live bytes and classes from the metadata, checked against what the device holds.
fn attach_files(table: &mut ZoneTable, state: &FsState) -> FsResult<()> {
    let zones: Vec<u32> = table.zones().map(|(z, _)| z).collect();
    for zone in zones {
        let live = state.valid_bytes(zone);
        let end = state.zone_extents(zone).map(|(e, _)| e.end()).max();
        let class = state.placement(zone).map_or(0, |p| p.class);
        let Some(slot) = table.slot_mut(zone) else {
            continue;
        };
        slot.live = live;
        let inconsistent = |reason: String| Err(FsError::Inconsistent { zone, reason });
        match (slot.cond, end) {
            (Cond::Empty, Some(end)) => {
                return inconsistent(format!("the zone is empty but files use it up to {end}"))
            }
            (Cond::Active, Some(end)) if end > slot.written => {
                return inconsistent(format!(
                    "files use it up to {end} but only {} bytes are written",
                    slot.written
                ))
            }
            (Cond::Empty, None) => {}
            _ => slot.class = class,
        }
    }
    Ok(())
}

fn assemble(
    dev: Arc<dyn ZonedDevice>,
    opts: FsOptions,
    policy: Box<dyn PlacementPolicy>,
    state: FsState,
    log: MetaLog,
    table: ZoneTable,
) -> ZoneFs {
    let baseline = dev.stats();
    let shared = Shared {
        geo: dev.geometry(),
        layout: log.layout(),
        dev,
        opts,
        policy,
        meta: Mutex::new(MetaStore {
            state,
            log,
            writing: Default::default(),
        }),
        zones: Mutex::new(table),
        zone_freed: Condvar::new(),
        counters: Counters::default(),
        reclaimer: RwLock::new(None),
        baseline,
        cleaner: CleanerCore::default(),
    };
    ZoneFs {
        shared: Arc::new(shared),
    }
}

impl Shared {
    /// After mount: reset dead zones, clear stale classes, respect the active budget.
    fn settle(&self) -> FsResult<()> {
        let mut meta = self.lock_meta();
        self.reclaim_dead(&mut meta)?;
        let stale: Vec<u32> = {
            let zones = self.lock_zones();
            meta.state
                .placements()
                .filter(|(z, _)| zones.slot(*z).is_some_and(|s| s.cond == Cond::Empty))
                .map(|(z, _)| z)
                .collect()
        };
        for zone in stale {
            let clear = Record::ZoneMeta {
                zone,
                placement: ZonePlacement::default(),
            };
            meta.stage(&[clear], &|| {
                format!("mount: clear the class of zone {zone}")
            })?;
        }
        self.finish_excess_active()?;
        if meta.log.pending_records() > 0 {
            meta.sync(&|| "mount: sync the metadata".to_string())?;
        }
        Ok(())
    }

    /// A device may come back with more active zones than the budget allows (other limits,
    /// or zones left open by a crash): finish the fullest idle ones.
    fn finish_excess_active(&self) -> FsResult<()> {
        let mut zones = self.lock_zones();
        while zones.active_count() > zones.budget.active {
            let Some(zone) = zones.cheapest_to_finish() else {
                break;
            };
            self.finish(&mut zones, zone)?;
        }
        Ok(())
    }
}
