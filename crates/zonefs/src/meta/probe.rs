//! Finding a file system on a device whose layout is not known yet, without writing.
//!
//! Recovery needs the metadata zone count before it reads anything; the superblocks record
//! it. [`probe`] reads the first block of the leading zones and reports the newest intact
//! superblock, so that a caller can mount with what the device says instead of asking.

use zns::{Geometry, IoCategory, ZoneInfo, ZoneState, ZonedDevice};

use super::error::{MetaError, MetaResult};
use super::superblock::{Superblock, SuperblockError};

/// What the superblocks at the start of a device say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeInfo {
    /// The newest intact superblock (highest sequence number) of the metadata zones.
    pub superblock: Superblock,
    /// A zone that starts with the superblock magic but holds no usable superblock, and why.
    pub damaged: Option<(u32, String)>,
}

impl ProbeInfo {
    /// The metadata zone count the file system was formatted with.
    pub fn meta_zones(&self) -> u32 {
        self.superblock.meta_zones
    }

    /// The format version of the newest superblock, as found (recovery refuses versions it
    /// cannot read; the probe only reports them).
    pub fn version(&self) -> u32 {
        self.superblock.version
    }
}

/// Finds the newest intact superblock of a device's metadata zones. Never writes.
///
/// Metadata zones come first on the device, so the scan reads the first block of each
/// written zone from zone 0 on, and stops at a zone without the superblock magic while no
/// superblock has been found (file data: not a zkv file system), or past the metadata zones
/// a superblock names. Errors: [`MetaError::NotFormatted`] when no zone starts with the
/// magic; [`MetaError::Corrupt`] when some do but none holds an intact superblock.
pub fn probe(dev: &dyn ZonedDevice) -> MetaResult<ProbeInfo> {
    let geo = dev.geometry();
    let mut newest: Option<Superblock> = None;
    let mut damaged = None;
    for info in dev.report_zones(0, geo.zones)? {
        let known = newest.map(|sb| sb.meta_zones);
        if known.is_some_and(|meta_zones| info.zone >= meta_zones) {
            break;
        }
        match read_superblock(dev, &geo, &info)? {
            None => {}
            Some(Ok(sb)) if sb.zone == info.zone && info.zone < sb.meta_zones => {
                newest = newest.filter(|n| n.seq >= sb.seq).or(Some(sb));
            }
            Some(Ok(sb)) => {
                let why = format!(
                    "the superblock names zone {} of {} metadata zones",
                    sb.zone, sb.meta_zones
                );
                damaged.get_or_insert((info.zone, why));
            }
            Some(Err(e @ SuperblockError::Checksum { .. })) => {
                damaged.get_or_insert((info.zone, e.to_string()));
            }
            // Inside the metadata zones recovery judges what a zone holds.
            Some(Err(_)) if known.is_some() => {}
            Some(Err(_)) => break,
        }
    }
    match (newest, damaged) {
        (Some(superblock), damaged) => Ok(ProbeInfo {
            superblock,
            damaged,
        }),
        (None, Some((zone, reason))) => Err(MetaError::Corrupt {
            zone,
            offset: 0,
            reason,
        }),
        (None, None) => Err(MetaError::NotFormatted),
    }
}

/// The superblock at the start of a zone; `None` for zones with nothing written (or
/// offline ones, which cannot be read).
pub(crate) fn read_superblock(
    dev: &dyn ZonedDevice,
    geo: &Geometry,
    info: &ZoneInfo,
) -> MetaResult<Option<Result<Superblock, SuperblockError>>> {
    if matches!(info.state, ZoneState::Empty | ZoneState::Offline) {
        return Ok(None);
    }
    let mut block = vec![0u8; geo.block_size as usize];
    dev.read(info.start, &mut block, IoCategory::Metadata)?;
    Ok(Some(Superblock::decode(&block)))
}
