//! Reading a zkv file system without changing the device.
//!
//! [`FsView::open`] mounts the file system read-only ([`ZoneFs::mount_read_only`]): the
//! metadata zone count comes from the superblocks and the options from the metadata, so
//! `inspect` asks for neither, and nothing is written to the device. The mount reports
//! what a read-write mount would change (a metadata roll after an interrupted write, resets
//! of older metadata generations and of data zones without live data, cleared zone classes,
//! finishes beyond the active budget); [`FsView::changes`] lists it zone by zone.

use std::sync::Arc;

use zkv_zns::{Geometry, ZoneInfo, ZoneState, ZonedDevice};
use zkv_zonefs::fs::{FsError, FsOptions, SettlePlan, ZoneFs, ZoneStat};
use zkv_zonefs::meta::{FsState, MetaError, MountReport};

use super::error::{CliError, CliResult};
use super::size::format_size;

/// The error for a device without a file system.
pub fn not_formatted(device: &str) -> CliError {
    CliError::invalid(format!("no zkv file system on {device} (run zkv mkfs)"))
}

/// A file layer error, with the device it happened on. Metadata errors keep the metadata
/// layer's own text (which names the zone, the offset and the damage).
pub fn fs_error(device: &str, e: FsError) -> CliError {
    match e {
        FsError::Meta { source, .. } => meta_error(device, source),
        e => CliError::invalid(format!("{device}: {e}")),
    }
}

/// A metadata error, with the device. "Not formatted" is said only when no zone holds a zkv
/// superblock; damage says so, and points at what shows it instead of at mkfs, which would
/// erase the data that is still there.
pub fn meta_error(device: &str, e: MetaError) -> CliError {
    match e {
        MetaError::NotFormatted => not_formatted(device),
        e @ MetaError::Corrupt { .. } => CliError::invalid(format!(
            "{device}: the zkv file system is damaged: {e}. Nothing was changed; \
             'zkv inspect dump --device {device}' shows the metadata zones (do not run \
             zkv mkfs: it would erase the data)"
        )),
        e => CliError::invalid(format!("{device}: {e}")),
    }
}

/// The options as one line, as `mkfs` and `inspect df` print them.
pub fn describe_options(o: &FsOptions) -> String {
    let finish = o
        .finish_threshold
        .map_or_else(|| "none".to_string(), |p| format!("{p}%"));
    format!(
        "options: reserved zones {}, placement {}, finish threshold {finish}, gc start {}%, \
         gc stop {}%, gc mode {}",
        o.reserved_zones,
        o.policy_name(),
        o.gc_start,
        o.gc_stop,
        o.gc_mode
    )
}

/// What a read-write mount would do to a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Reset it: an older metadata generation, the metadata zone left by a roll, or a data
    /// zone without live data (reclaimable).
    Reset,
    /// Finish it: an active data zone beyond the active budget.
    Finish,
    /// Write the next generation of the metadata log into it.
    Roll,
    /// Append a metadata batch to it (zone classes that are no longer true).
    Append,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Reset => "reset",
            Action::Finish => "finish",
            Action::Roll => "roll",
            Action::Append => "append",
        }
    }
}

/// A zone a read-write mount would change: how it is, and how it would be when that is
/// known before the write (`None` for the metadata zones that receive new records).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneChange {
    pub zone: u32,
    pub action: Action,
    pub before: (ZoneState, u64),
    pub after: Option<(ZoneState, u64)>,
}

/// A file system mounted read-only.
pub struct FsView {
    /// The device as given (`file:PATH`, `zbd:/dev/DEV`).
    pub device: String,
    pub fs: ZoneFs,
    pub geo: Geometry,
    pub meta_zones: u32,
    /// The recovered metadata.
    pub state: FsState,
    /// What the metadata recovery found.
    pub mount: Option<MountReport>,
    /// Per data zone, the figures a read-write mount shows (zones it would reset count as
    /// written and invalid: reclaimable).
    pub zones: Vec<ZoneStat>,
    /// The metadata zones as the device reports them.
    pub meta_report: Vec<ZoneInfo>,
    /// What settling the zone table would change.
    pub plan: SettlePlan,
}

impl FsView {
    /// Mounts the file system on `dev` read-only. `dev` should be opened read-only where
    /// the backend allows it; nothing is written to it either way.
    pub fn open(dev: Arc<dyn ZonedDevice>, device: &str) -> CliResult<FsView> {
        let fs = ZoneFs::mount_read_only(dev).map_err(|e| fs_error(device, e))?;
        fs.check_consistency().map_err(|e| fs_error(device, e))?;
        let meta_zones = fs.options().meta_zones;
        let zones = fs.zone_stats().map_err(|e| fs_error(device, e))?;
        let meta_report = fs.device().report_zones(0, meta_zones)?;
        Ok(FsView {
            device: device.to_string(),
            geo: fs.device().geometry(),
            meta_zones,
            state: fs.metadata(),
            mount: fs.mount_report(),
            zones,
            meta_report,
            plan: fs.settle_plan(),
            fs,
        })
    }

    /// The zones a read-write mount would change, in zone order.
    pub fn changes(&self) -> Vec<ZoneChange> {
        let mut changes = self.meta_changes();
        let data = |zone: u32| self.zones.iter().find(|z| z.zone == zone);
        let mut change = |zone, action, after| {
            if let Some(z) = data(zone) {
                let before = (z.state, z.written);
                changes.push(ZoneChange {
                    zone,
                    action,
                    before,
                    after,
                });
            }
        };
        for &zone in &self.plan.reclaimable {
            change(zone, Action::Reset, Some((ZoneState::Empty, 0)));
        }
        for &zone in &self.plan.finish {
            let full = (ZoneState::Full, self.geo.zone_capacity);
            change(zone, Action::Finish, Some(full));
        }
        changes.sort_by_key(|c| c.zone);
        changes
    }

    /// The metadata zones: a roll (and the reset of the zone it leaves), the reset of
    /// older generations, and the batch that records cleared zone classes.
    fn meta_changes(&self) -> Vec<ZoneChange> {
        let Some(m) = &self.mount else {
            return Vec::new();
        };
        let log_zone = m.roll_to.unwrap_or(m.zone);
        let resets = m.stale.iter().copied().chain(m.roll_to.map(|_| m.zone));
        let mut planned: Vec<(u32, Action)> = resets
            .filter(|z| *z != log_zone)
            .map(|z| (z, Action::Reset))
            .collect();
        if m.roll_to.is_some() {
            planned.push((log_zone, Action::Roll));
        } else if !self.plan.cleared_classes.is_empty() {
            planned.push((log_zone, Action::Append));
        }
        planned
            .into_iter()
            .filter_map(|(zone, action)| {
                let info = self.meta_report.iter().find(|i| i.zone == zone)?;
                let after = (action == Action::Reset).then_some((ZoneState::Empty, 0));
                Some(ZoneChange {
                    zone,
                    action,
                    before: (info.state, info.used()),
                    after,
                })
            })
            .collect()
    }

    /// What a read-write mount would change, one phrase per item; empty when nothing.
    pub fn mount_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(m) = &self.mount {
            if let Some(at) = m.torn_tail {
                notes.push(format!(
                    "the metadata log in zone {} ends with an interrupted write at offset {at}, \
                     which is ignored",
                    m.zone
                ));
            }
            for (zone, reason) in &m.skipped {
                notes.push(format!("metadata zone {zone} was passed over ({reason})"));
            }
        }
        notes.extend(self.changes().iter().map(|c| self.describe_change(c)));
        notes
    }

    fn describe_change(&self, c: &ZoneChange) -> String {
        let what = if c.zone < self.meta_zones {
            "metadata zone"
        } else {
            "zone"
        };
        let show = |(state, bytes): (ZoneState, u64)| match state {
            ZoneState::Empty => "empty".to_string(),
            _ => format!("{state} with {}", format_size(bytes)),
        };
        let before = show(c.before);
        match (c.action, c.after) {
            (_, Some(after)) => format!(
                "{what} {} would go from {before} to {}",
                c.zone,
                show(after)
            ),
            (Action::Roll, None) => format!(
                "{what} {} ({before}) would receive the next generation of the metadata log",
                c.zone
            ),
            (_, None) => format!(
                "{what} {} ({before}) would record that zones {} have no class any more",
                c.zone,
                join(&self.plan.cleared_classes)
            ),
        }
    }
}

fn join(zones: &[u32]) -> String {
    zones
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
