//! Finding and reading a zkv file system without changing the device.
//!
//! - [`probe`] looks for metadata superblocks at the start of the device, which tells
//!   whether a file system is there and how many metadata zones it uses (the superblock
//!   records it, so `inspect` needs no `--meta-zones`).
//! - [`FsView::open`] mounts the file system on a [`Shadow`] of the device: the real device
//!   is only read, and whatever the mount would write (a metadata roll after a torn write,
//!   resets of stale metadata zones and of data zones without live data, cleared zone
//!   classes, finishes beyond the active budget) lands in memory. The view then lists what
//!   a real mount would change, by comparing the shadow's zones with the real ones.

use std::sync::Arc;

use zns::{Geometry, ZoneInfo, ZoneState, ZonedDevice};
use zonefs::fs::{FsError, FsOptions, ZoneFs};
use zonefs::meta::{
    FsState, MetaError, MetaLog, MountReport, Superblock, SuperblockError, DEFAULT_META_ZONES,
};

use super::error::{CliError, CliResult};
use super::shadow::{written, Shadow, ShadowDevice};
use super::size::format_size;

/// What the start of a device says about a file system.
#[derive(Clone, Debug, Default)]
pub struct Probe {
    /// The first intact superblock found (lowest zone).
    pub superblock: Option<Superblock>,
    /// A zone that starts with the superblock magic but does not hold a usable superblock,
    /// and why.
    pub damaged: Option<(u32, String)>,
}

impl Probe {
    /// True when the device holds something that looks like a zkv file system.
    pub fn looks_formatted(&self) -> bool {
        self.superblock.is_some() || self.damaged.is_some()
    }
}

/// Reads the first block of the leading written zones until an intact superblock or a zone
/// without the superblock magic (file data, or something that is not a zkv file system).
/// Metadata zones come first on the device, so a formatted device is recognised after a
/// few reads.
pub fn probe(dev: &dyn ZonedDevice) -> CliResult<Probe> {
    let geo = dev.geometry();
    let mut found = Probe::default();
    let mut block = vec![0u8; geo.block_size as usize];
    for info in dev.report_zones(0, geo.zones)? {
        if matches!(info.state, ZoneState::Empty | ZoneState::Offline) {
            continue;
        }
        dev.read(info.start, &mut block, zns::IoCategory::Metadata)?;
        match Superblock::decode(&block) {
            Ok(sb) if sb.zone == info.zone && info.zone < sb.meta_zones => {
                found.superblock = Some(sb);
                return Ok(found);
            }
            Ok(sb) => {
                found.damaged.get_or_insert((
                    info.zone,
                    format!(
                        "the superblock names zone {} of {} metadata zones",
                        sb.zone, sb.meta_zones
                    ),
                ));
            }
            Err(e @ SuperblockError::Checksum { .. }) => {
                found.damaged.get_or_insert((info.zone, e.to_string()));
            }
            Err(SuperblockError::NoMagic | SuperblockError::Truncated { .. }) => break,
        }
    }
    Ok(found)
}

/// The error for a device without a file system.
pub fn not_formatted(device: &str) -> CliError {
    CliError::invalid(format!("no zkv file system on {device} (run zkv mkfs)"))
}

/// A file layer error, with the device it happened on. Metadata errors keep the metadata
/// layer's own text (which names the zone, the offset and the damage).
pub fn fs_error(device: &str, e: FsError) -> CliError {
    match e {
        FsError::Meta {
            source: MetaError::NotFormatted,
            ..
        } => not_formatted(device),
        FsError::Meta { source, .. } => CliError::invalid(format!("{device}: {source}")),
        e => CliError::invalid(format!("{device}: {e}")),
    }
}

fn meta_error(device: &str, e: MetaError) -> CliError {
    match e {
        MetaError::NotFormatted => not_formatted(device),
        e => CliError::invalid(format!("{device}: {e}")),
    }
}

/// A zone whose state or written bytes a real mount would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneChange {
    pub zone: u32,
    pub before: (ZoneState, u64),
    pub after: (ZoneState, u64),
}

/// A file system read through a shadow of its device.
pub struct FsView {
    /// The device as given (`file:PATH`, `zbd:/dev/DEV`).
    pub device: String,
    /// The real device (only ever read).
    pub base: Arc<dyn ZonedDevice>,
    pub geo: Geometry,
    /// The zones as the device reports them (before any mount).
    pub report: Vec<ZoneInfo>,
    pub meta_zones: u32,
    pub reserved_zones: u32,
    /// The recovered metadata (as the log holds it, before the mount settles).
    pub state: FsState,
    /// What the metadata recovery found.
    pub mount: Option<MountReport>,
    /// Zones a real mount would change.
    pub changes: Vec<ZoneChange>,
}

impl FsView {
    /// Mounts the file system on `base` without writing to it. `base` should be opened
    /// read-only where the backend allows it; nothing is written to it either way.
    pub fn open(
        base: Arc<dyn ZonedDevice>,
        device: &str,
        reserved_zones: u32,
    ) -> CliResult<FsView> {
        let found = probe(base.as_ref())?;
        let meta_zones = match (&found.superblock, &found.damaged) {
            (Some(sb), _) => sb.meta_zones,
            // Damaged superblocks only: let the metadata layer say what is wrong.
            (None, Some(_)) => DEFAULT_META_ZONES,
            (None, None) => return Err(not_formatted(device)),
        };
        let geo = base.geometry();
        let (shadow, report) = Shadow::over(Arc::clone(&base))?;
        let shadow: Arc<ShadowDevice> = Arc::new(shadow);
        let dev: Arc<dyn ZonedDevice> = shadow.clone();
        let (state, log) =
            MetaLog::recover(Arc::clone(&dev), meta_zones).map_err(|e| meta_error(device, e))?;
        let mount = log.mount_report().cloned();
        drop(log);
        let opts = FsOptions::default()
            .with_meta_zones(meta_zones)
            .with_reserved_zones(reserved_zones);
        let fs = ZoneFs::mount(dev, opts).map_err(|e| fs_error(device, e))?;
        fs.check_consistency().map_err(|e| fs_error(device, e))?;
        drop(fs);
        let after = shadow.report_zones(0, geo.zones)?;
        let changes = report
            .iter()
            .zip(&after)
            .filter_map(|(b, a)| {
                let before = (b.state, written(&geo, b));
                let now = (a.state, written(&geo, a));
                (before != now).then_some(ZoneChange {
                    zone: b.zone,
                    before,
                    after: now,
                })
            })
            .collect();
        Ok(FsView {
            device: device.to_string(),
            base,
            geo,
            report,
            meta_zones,
            reserved_zones,
            state,
            mount,
            changes,
        })
    }

    /// The data zones as the device reports them.
    pub fn data_zones(&self) -> impl Iterator<Item = &ZoneInfo> + '_ {
        self.report.iter().skip(self.meta_zones as usize)
    }

    /// What a real mount would change, one phrase per item; empty when nothing.
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
        for c in &self.changes {
            let what = if c.zone < self.meta_zones {
                "metadata zone"
            } else {
                "zone"
            };
            let show = |(state, bytes): (ZoneState, u64)| match state {
                ZoneState::Empty => "empty".to_string(),
                _ => format!("{state} with {}", format_size(bytes)),
            };
            notes.push(format!(
                "{what} {} would go from {} to {}",
                c.zone,
                show(c.before),
                show(c.after)
            ));
        }
        notes
    }
}
