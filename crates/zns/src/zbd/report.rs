//! Zone reports: asking the device for its zones (`BLKREPORTZONE`), checking that each is
//! the zone asked for and one zkv can use, and converting it from sectors to bytes and to
//! our zone states. Separate because opening the device, `report_zones` and the refresh
//! after a failed command all go through it.

use std::io;
use std::os::fd::AsFd;
use std::sync::MutexGuard;

use crate::error::{Result, ZnsError};
use crate::types::ZoneState;

use super::abi::{self, BlkZone, SECTOR};
use super::device::ZbdDevice;
use super::ioctl::{ioctl_report_zones, ReportBuf};
use super::zone_cache::ZoneCache;

/// Maps a Linux zone condition to our zone state (`None` for conventional zones and
/// conditions Linux does not define).
fn state_from_cond(cond: u8) -> Option<ZoneState> {
    Some(match cond {
        abi::BLK_ZONE_COND_EMPTY => ZoneState::Empty,
        abi::BLK_ZONE_COND_IMP_OPEN => ZoneState::ImplicitOpen,
        abi::BLK_ZONE_COND_EXP_OPEN => ZoneState::ExplicitOpen,
        abi::BLK_ZONE_COND_CLOSED => ZoneState::Closed,
        abi::BLK_ZONE_COND_READONLY => ZoneState::ReadOnly,
        abi::BLK_ZONE_COND_FULL => ZoneState::Full,
        abi::BLK_ZONE_COND_OFFLINE => ZoneState::Offline,
        _ => return None,
    })
}

/// One zone of a report, checked and converted to bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct RawZone {
    pub(super) zone: u32,
    pub(super) state: ZoneState,
    /// Bytes.
    pub(super) start: u64,
    pub(super) len: u64,
    pub(super) capacity: u64,
    /// Relative to the zone start; the capacity for a FULL zone.
    pub(super) wp: u64,
}

impl ZbdDevice {
    /// Reports `count` zones from `first` straight from the device, checked.
    pub(super) fn report_raw(&self, first: u32, count: u32) -> Result<Vec<RawZone>> {
        let mut buf = ReportBuf::new();
        let mut out = Vec::with_capacity(count as usize);
        let end = first.saturating_add(count).min(self.geo.zones);
        let mut next = first;
        while next < end {
            let want = (end - next) as usize;
            let sector = u64::from(next) * self.zone_sectors;
            let (got, flags) = ioctl_report_zones(self.fd.as_fd(), sector, want, &mut buf)
                .map_err(|e| {
                    ZnsError::io(self.ctx(format_args!("report zones from {next}")), e.into())
                })?;
            if got == 0 {
                break;
            }
            // `got` ≤ the zones asked for ≤ the buffer's length (ioctl_report_zones).
            for raw in buf.zones.iter().take(got) {
                let z = self.check_raw(next, raw, flags)?;
                out.push(z);
                next += 1;
                if next >= end {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Converts one reported zone, checking that it is the zone we asked for and one we
    /// can use.
    fn check_raw(&self, zone: u32, raw: &BlkZone, flags: u32) -> Result<RawZone> {
        let bad = |reason: String| {
            ZnsError::Unsupported(format!("{}: zone {zone}: {reason}", self.path.display()))
        };
        if raw.start != u64::from(zone) * self.zone_sectors || raw.len != self.zone_sectors {
            return Err(bad(format!(
                "reported at sector {} with {} sectors, expected sector {} with {}; zkv needs \
                 zones of one size",
                raw.start,
                raw.len,
                u64::from(zone) * self.zone_sectors,
                self.zone_sectors
            )));
        }
        if raw.kind != abi::BLK_ZONE_TYPE_SEQWRITE_REQ || raw.cond == abi::BLK_ZONE_COND_NOT_WP {
            return Err(bad(format!(
                "zone type {} is not sequential-write-required; zkv supports devices whose \
                 zones are all sequential (no conventional zones)",
                raw.kind
            )));
        }
        let state = state_from_cond(raw.cond)
            .ok_or_else(|| bad(format!("unknown zone condition {:#x}", raw.cond)))?;
        let cap_sectors = if flags & abi::BLK_ZONE_REP_CAPACITY != 0 {
            raw.capacity
        } else {
            raw.len
        };
        if cap_sectors == 0 || cap_sectors > raw.len {
            return Err(bad(format!(
                "capacity of {cap_sectors} sectors in a zone of {}",
                raw.len
            )));
        }
        let capacity = cap_sectors * SECTOR;
        let wp = match state {
            ZoneState::Full => capacity,
            ZoneState::Empty => 0,
            _ => {
                let rel = raw.wp.saturating_sub(raw.start) * SECTOR;
                if raw.wp < raw.start || rel > capacity {
                    return Err(bad(format!(
                        "write pointer at sector {} outside the zone (start {}, capacity {})",
                        raw.wp, raw.start, cap_sectors
                    )));
                }
                rel
            }
        };
        Ok(RawZone {
            zone,
            state,
            start: raw.start * SECTOR,
            len: raw.len * SECTOR,
            capacity,
            wp,
        })
    }

    /// The zone as the device reports it now.
    pub(super) fn fresh(&self, zone: u32) -> Result<ZoneCache> {
        let z = self.report_raw(zone, 1)?;
        let z = z.first().ok_or_else(|| {
            ZnsError::io(
                self.ctx(format_args!("report zone {zone}")),
                io::Error::new(io::ErrorKind::UnexpectedEof, "the device reported no zone"),
            )
        })?;
        Ok(ZoneCache {
            state: z.state,
            wp: z.wp,
        })
    }

    /// Refreshes a zone's cache from the device (with its lock held).
    pub(super) fn refresh(
        &self,
        zone: u32,
        guard: &mut MutexGuard<'_, ZoneCache>,
    ) -> Result<ZoneCache> {
        let fresh = self.fresh(zone)?;
        self.slot(zone)?.set(guard, fresh);
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_map_to_states() {
        assert_eq!(state_from_cond(0x1), Some(ZoneState::Empty));
        assert_eq!(state_from_cond(0x2), Some(ZoneState::ImplicitOpen));
        assert_eq!(state_from_cond(0x3), Some(ZoneState::ExplicitOpen));
        assert_eq!(state_from_cond(0x4), Some(ZoneState::Closed));
        assert_eq!(state_from_cond(0xD), Some(ZoneState::ReadOnly));
        assert_eq!(state_from_cond(0xE), Some(ZoneState::Full));
        assert_eq!(state_from_cond(0xF), Some(ZoneState::Offline));
        assert_eq!(state_from_cond(0x0), None);
        assert_eq!(state_from_cond(0x5), None);
    }
}
