//! Format and mount: from a device to a running file system.
//!
//! Mount recovers the metadata state from the log, then rebuilds the zone table from the
//! device's zone report (written bytes = write pointer, except for FULL zones, whose
//! reported write pointer is the zone end: they count their whole capacity) and from the
//! state (live bytes = Σ extents, class = the persisted zone placement). It then settles
//! the table: zones holding no live data are reset, empty zones lose their stale class,
//! active zones beyond the active budget are finished, and the options the file system
//! runs with are recorded if the metadata records others. A read-only mount stops before
//! settling and never writes.

use std::sync::{Arc, Condvar, Mutex};

use zkv_zns::{ZoneInfo, ZoneState, ZonedDevice};

use crate::meta::{
    self, FsState, MetaLog, MetaResult, Record, ZoneLayout, ZonePlacement, MIN_META_ZONES,
};
use crate::placement::{Liza, PlacementPolicy};

use super::budget::Budget;
use super::cleaner::CleanerCore;
use super::error::{FsError, FsResult};
use super::options::FsOptions;
use super::shared::{Counters, MetaStore, Shared};
use super::table::{Cond, ZoneTable};
use super::ZoneFs;

impl ZoneFs {
    /// Erases the device (metadata and data zones) and writes an empty file system that
    /// records `opts`.
    pub fn format(dev: Arc<dyn ZonedDevice>, opts: FsOptions) -> FsResult<ZoneFs> {
        let prepared = prepare(dev.as_ref(), &opts)?;
        format_prepared(dev, opts, prepared)
    }

    /// Like [`ZoneFs::format`], but placing files with `policy` instead of the one
    /// `opts.placement` names: for policies that are not known by name (tests,
    /// experiments). The metadata still records `opts.placement`, which a later mount uses.
    pub fn format_with_policy(
        dev: Arc<dyn ZonedDevice>,
        opts: FsOptions,
        policy: Box<dyn PlacementPolicy>,
    ) -> FsResult<ZoneFs> {
        let prepared = prepare_with(dev.as_ref(), &opts, Policy::Given(policy))?;
        format_prepared(dev, opts, prepared)
    }

    /// Mounts a formatted device with `opts`: recovers the metadata, rebuilds the zone
    /// table and settles it. When `opts` differ from the options the metadata records,
    /// the new ones are recorded: the metadata always says what the file system last ran
    /// with.
    pub fn mount(dev: Arc<dyn ZonedDevice>, opts: FsOptions) -> FsResult<ZoneFs> {
        let prepared = prepare(dev.as_ref(), &opts)?;
        let (state, log) = MetaLog::recover(Arc::clone(&dev), opts.meta_zones)
            .map_err(|e| FsError::meta(RECOVER, e))?;
        let fs = build(dev, opts, prepared, state, log)?;
        fs.shared.settle()?;
        Ok(fs)
    }

    /// Like [`ZoneFs::mount`], but placing files with `policy` (a policy of the program's
    /// own, see [`ZoneFs::format_with_policy`]); `opts.placement` should be its name,
    /// which the metadata records.
    pub fn mount_with_policy(
        dev: Arc<dyn ZonedDevice>,
        opts: FsOptions,
        policy: Box<dyn PlacementPolicy>,
    ) -> FsResult<ZoneFs> {
        let prepared = prepare_with(dev.as_ref(), &opts, Policy::Given(policy))?;
        let (state, log) = MetaLog::recover(Arc::clone(&dev), opts.meta_zones)
            .map_err(|e| FsError::meta(RECOVER, e))?;
        let fs = build(dev, opts, prepared, state, log)?;
        fs.shared.settle()?;
        Ok(fs)
    }

    /// Mounts a formatted device with the options its metadata records (the metadata zone
    /// count comes from the superblocks, see [`meta::probe`]).
    pub fn mount_stored(dev: Arc<dyn ZonedDevice>) -> FsResult<ZoneFs> {
        let fs = mount_recorded(dev, MetaLog::recover, Policy::Named)?;
        fs.shared.settle()?;
        Ok(fs)
    }

    /// [`ZoneFs::mount_stored`] placing files with `policy`: for a file system formatted
    /// with a policy of the program's own, whose recorded name no build of zkv knows.
    pub fn mount_stored_with_policy(
        dev: Arc<dyn ZonedDevice>,
        policy: Box<dyn PlacementPolicy>,
    ) -> FsResult<ZoneFs> {
        let fs = mount_recorded(dev, MetaLog::recover, Policy::Given(policy))?;
        fs.shared.settle()?;
        Ok(fs)
    }

    /// Mounts a formatted device read-only, with the options its metadata records. Nothing
    /// is written to the device: no metadata roll or reset, no reset of zones without live
    /// data (they count as reclaimable, see [`ZoneFs::settle_plan`]), no finish, no flush.
    /// Every call that would change the file system fails with [`FsError::ReadOnly`];
    /// reads, listings and figures work as on a read-write mount.
    ///
    /// A placement policy this build does not know by name (a program's own) does not stop
    /// it: a read-only mount places nothing.
    pub fn mount_read_only(dev: Arc<dyn ZonedDevice>) -> FsResult<ZoneFs> {
        mount_recorded(dev, MetaLog::recover_read_only, Policy::NamedIfKnown)
    }
}

const RECOVER: &str = "mount: recover the metadata log";

/// Erases the device and writes an empty file system that records `opts`.
fn format_prepared(
    dev: Arc<dyn ZonedDevice>,
    opts: FsOptions,
    prepared: (Budget, Box<dyn PlacementPolicy>),
) -> FsResult<ZoneFs> {
    let mut state = FsState::new(ZoneLayout::of_device(&dev.geometry(), opts.meta_zones));
    state
        .apply(&Record::Options(opts.to_stored()))
        .map_err(|e| FsError::rejected("format: record the options", e))?;
    let log = MetaLog::format_state(Arc::clone(&dev), &state)
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
    build(dev, opts, prepared, state, log)
}

type Recover = fn(Arc<dyn ZonedDevice>, u32) -> MetaResult<(FsState, MetaLog)>;

/// Mounts with the recorded options: finds the metadata zone count, recovers the metadata
/// with `recover`, then checks the recorded options against the device.
fn mount_recorded(dev: Arc<dyn ZonedDevice>, recover: Recover, policy: Policy) -> FsResult<ZoneFs> {
    let found =
        meta::probe(dev.as_ref()).map_err(|e| FsError::meta("mount: find the metadata", e))?;
    let meta_zones = found.meta_zones();
    let (state, log) =
        recover(Arc::clone(&dev), meta_zones).map_err(|e| FsError::meta(RECOVER, e))?;
    let opts = FsOptions::from_stored(meta_zones, state.options())?;
    let prepared = prepare_with(dev.as_ref(), &opts, policy)?;
    build(dev, opts, prepared, state, log)
}

/// Where a mount's placement policy comes from.
enum Policy {
    /// The one `FsOptions::placement` names (an unknown name is an error).
    Named,
    /// The named one, or any when the name is unknown: for mounts that place nothing.
    NamedIfKnown,
    /// This one, whatever the options name.
    Given(Box<dyn PlacementPolicy>),
}

/// [`prepare_with`] the policy the options name.
fn prepare(
    dev: &dyn ZonedDevice,
    opts: &FsOptions,
) -> FsResult<(Budget, Box<dyn PlacementPolicy>)> {
    prepare_with(dev, opts, Policy::Named)
}

/// Checks the options against the device; returns the zone budget and the policy.
fn prepare_with(
    dev: &dyn ZonedDevice,
    opts: &FsOptions,
    policy: Policy,
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
    let policy = match policy {
        Policy::Named => opts.policy()?,
        Policy::NamedIfKnown => opts.policy().unwrap_or_else(|_| Box::new(Liza)),
        Policy::Given(policy) => policy,
    };
    let budget = Budget::new(&geo, opts.meta_zones, opts.reserved_zones)?;
    Ok((budget, policy))
}

/// The device's report of the data zones.
pub(super) fn data_zone_report(dev: &dyn ZonedDevice, meta_zones: u32) -> FsResult<Vec<ZoneInfo>> {
    let zones = dev.geometry().zones;
    dev.report_zones(meta_zones, zones - meta_zones)
        .map_err(|e| FsError::device("report the data zones", e))
}

/// The zone table from the device's report and the metadata, and the file system around
/// it (read-only when the log is).
fn build(
    dev: Arc<dyn ZonedDevice>,
    opts: FsOptions,
    (budget, policy): (Budget, Box<dyn PlacementPolicy>),
    state: FsState,
    log: MetaLog,
) -> FsResult<ZoneFs> {
    let report = data_zone_report(dev.as_ref(), opts.meta_zones)?;
    let capacity = dev.geometry().zone_capacity;
    let mut table = ZoneTable::from_report(&report, opts.meta_zones, capacity, budget);
    attach_files(&mut table, &state)?;
    Ok(assemble(dev, opts, policy, state, log, table))
}

/// Live bytes and classes from the metadata, checked against what the device holds.
fn attach_files(table: &mut ZoneTable, state: &FsState) -> FsResult<()> {
    let zones: Vec<u32> = table.zones().map(|(z, _)| z).collect();
    for zone in zones {
        let live = state.valid_bytes(zone);
        let end = state.zone_extents(zone).map(|(e, _)| e.end()).max();
        let placement = state.placement(zone).cloned().unwrap_or_default();
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
            _ => {
                slot.class = placement.class;
                slot.policy = placement.policy;
                // Extents in offset order: the blob files in the order they were written.
                let blobs = state
                    .zone_extents(zone)
                    .filter_map(|e| blob_number(e, state));
                for number in blobs {
                    slot.note_blob(number);
                }
                if slot.cond == Cond::Full {
                    // A YBIZ whose record a crash cut: from the blob files in the zone.
                    slot.note_full();
                }
            }
        }
    }
    Ok(())
}

/// The blob file number of an extent's file, if it is a blob file.
fn blob_number((_, id): (meta::Extent, meta::FileId), state: &FsState) -> Option<u64> {
    state.file(id)?.blob_number()
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
        read_only: log.is_read_only(),
        dev,
        opts,
        policy,
        meta: Mutex::new(MetaStore {
            state,
            log,
            writing: Default::default(),
            readers: Default::default(),
        }),
        zones: Mutex::new(table),
        zone_freed: Condvar::new(),
        counters: Counters::default(),
        baseline,
        cleaner: CleanerCore::default(),
    };
    ZoneFs {
        shared: Arc::new(shared),
    }
}

impl Shared {
    /// After a read-write mount: reset dead zones, clear stale classes, respect the active
    /// budget, record the options the file system now runs with.
    fn settle(&self) -> FsResult<()> {
        let mut meta = self.lock_meta();
        self.reclaim_dead(&mut meta)?;
        self.clear_stale_classes(&mut meta)?;
        self.finish_excess_active()?;
        self.log_ybiz(&mut meta)?;
        let stored = self.opts.to_stored();
        if meta.state.options() != Some(&stored) {
            meta.stage(&[Record::Options(stored)], &|| {
                "mount: record the options".to_string()
            })?;
        }
        if meta.log.pending_records() > 0 {
            meta.sync(&|| "mount: sync the metadata".to_string())?;
        }
        Ok(())
    }

    /// Empty zones keep no class: the class described data that is gone.
    fn clear_stale_classes(&self, meta: &mut MetaStore) -> FsResult<()> {
        let stale = self
            .lock_zones()
            .empty_among(meta.state.placements().map(|(z, _)| z));
        for zone in stale {
            let clear = Record::ZoneMeta {
                zone,
                placement: ZonePlacement::default(),
            };
            meta.stage(&[clear], &|| {
                format!("mount: clear the class of zone {zone}")
            })?;
        }
        Ok(())
    }

    /// A device may come back with more active zones than the budget allows (other limits,
    /// or zones left open by a crash): finish the fullest idle ones.
    fn finish_excess_active(&self) -> FsResult<()> {
        let mut zones = self.lock_zones();
        for zone in zones.excess_active() {
            self.finish(&mut zones, zone)?;
        }
        Ok(())
    }
}
