//! Finding a file system on a device whose layout is not known yet, without writing.
//!
//! Recovery needs the metadata zone count before it reads anything; the superblocks record
//! it. [`probe`] reads the first block of the leading zones and reports the newest intact
//! superblock, so that a caller can mount with what the device says instead of asking.

use zkv_zns::{Geometry, IoCategory, ZoneInfo, ZoneState, ZonedDevice};

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
/// written zone (or its copy in the second block) from zone 0 on, until it passes the metadata zones a superblock names. A
/// zone that holds no superblock, or cannot be read, does not end the scan: an interrupted
/// reset or a damaged block in zone 0 must not hide the newer generation in zone 1.
/// Errors: [`MetaError::NotFormatted`] only when no zone starts with the superblock magic;
/// [`MetaError::Corrupt`] when some do but none holds an intact superblock; the first read
/// error when a zone could not be read and no superblock was found elsewhere.
pub fn probe(dev: &dyn ZonedDevice) -> MetaResult<ProbeInfo> {
    let geo = dev.geometry();
    let mut newest: Option<Superblock> = None;
    let mut damaged = None;
    let mut unreadable = None;
    for info in dev.report_zones(0, geo.zones)? {
        if newest.is_some_and(|sb| info.zone >= sb.meta_zones) {
            break;
        }
        let found = match read_superblock(dev, &geo, &info) {
            Ok(found) => found,
            Err(e) => {
                unreadable.get_or_insert(e);
                continue;
            }
        };
        match found.map(|(sb, _)| sb) {
            None | Some(Err(SuperblockError::NoMagic | SuperblockError::Truncated { .. })) => {}
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
        }
    }
    match (newest, damaged, unreadable) {
        (Some(superblock), damaged, _) => Ok(ProbeInfo {
            superblock,
            damaged,
        }),
        (None, Some((zone, reason)), _) => Err(MetaError::Corrupt {
            zone,
            offset: 0,
            reason,
        }),
        (None, None, Some(e)) => Err(e),
        (None, None, None) => Err(MetaError::NotFormatted),
    }
}

/// The superblock of a zone: block 0's, or, when that is not intact, its copy in block 1
/// (format 3 on); `None` for zones with nothing written (or offline ones, which cannot be
/// read). The flag says the copy was used.
pub(crate) fn read_superblock(
    dev: &dyn ZonedDevice,
    geo: &Geometry,
    info: &ZoneInfo,
) -> MetaResult<Option<(Result<Superblock, SuperblockError>, bool)>> {
    if matches!(info.state, ZoneState::Empty | ZoneState::Offline) {
        return Ok(None);
    }
    let block = geo.block_size as usize;
    let len = (info.used() as usize).min(2 * block);
    let mut head = vec![0u8; len];
    dev.read(info.start, &mut head, IoCategory::Metadata)?;
    let first = Superblock::decode(&head);
    if first.is_ok() {
        return Ok(Some((first, false)));
    }
    match head.get(block..).map(Superblock::decode) {
        Some(Ok(copy)) if copy.version >= 3 => Ok(Some((Ok(copy), true))),
        _ => Ok(Some((first, false))),
    }
}
