//! [`ZbdDevice`]: opening a host-managed zoned block device, checked against what zkv
//! supports, and the [`ZonedDevice`] operations with the zone rules applied before each
//! command (see `mod.rs`). The pieces it is built on (ABI, ioctls, sysfs, zone cache,
//! reports, error mapping, direct I/O) each have a file of their own.

use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::device::{Counters, DeviceStats, ZonedDevice};
use crate::error::{zone_entry, Result, ZnsError};
use crate::types::{split_at_wp, Geometry, IoCategory, ZoneInfo, ZoneOp, ZoneState};

use super::abi::{BlkZoneRange, SECTOR};
use super::direct_io::{is_direct_ready, pwrite_all, AlignedBuf};
use super::errors::{classify_errno, explain_write_failure, zone_op_rule, ErrnoClass};
use super::ioctl::{ioctl_get_u32, ioctl_zone_mgmt};
use super::sysfs::{needs_mq_deadline, parse_kernel_version, queue_info, ZonedModel};
use super::zone_cache::{Slot, ZoneCache};

/// A Linux host-managed zoned block device, e.g. an NVMe ZNS namespace `/dev/nvme0n1`.
pub struct ZbdDevice {
    pub(super) path: PathBuf,
    pub(super) fd: OwnedFd,
    pub(super) geo: Geometry,
    pub(super) zone_sectors: u64,
    /// Memory alignment of `O_DIRECT` buffers (at least the logical block size).
    pub(super) align: usize,
    pub(super) slots: Vec<Slot>,
    /// Serializes the commands that turn an EMPTY zone active (first write, explicit open),
    /// so that the active-resource check made before issuing them stays true.
    activation: Mutex<()>,
    counters: Counters,
}

impl fmt::Debug for ZbdDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZbdDevice")
            .field("path", &self.path)
            .field("geometry", &self.geo)
            .finish()
    }
}

impl ZbdDevice {
    /// Opens a host-managed zoned block device for exclusive read-write use.
    pub fn open(path: &Path) -> Result<ZbdDevice> {
        let ctx = |what: &str| format!("{}: {what}", path.display());
        let st = rustix::fs::stat(path).map_err(|e| ZnsError::io(ctx("stat"), e.into()))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::BlockDevice {
            return Err(ZnsError::Unsupported(format!(
                "{}: not a block device; zbd: needs a zoned block device such as /dev/nvme0n1",
                path.display()
            )));
        }
        let (major, minor) = (rustix::fs::major(st.st_rdev), rustix::fs::minor(st.st_rdev));
        let q = queue_info(path, major, minor)?;
        match &q.model {
            ZonedModel::HostManaged => {}
            ZonedModel::None => {
                return Err(ZnsError::Unsupported(format!(
                    "{}: not a zoned block device (queue/zoned is 'none'); \
                     zbd: needs a host-managed zoned device such as an NVMe ZNS namespace",
                    path.display()
                )))
            }
            ZonedModel::HostAware => {
                return Err(ZnsError::Unsupported(format!(
                    "{}: a host-aware zoned device; zbd: needs a host-managed one",
                    path.display()
                )))
            }
            ZonedModel::Other(m) => {
                return Err(ZnsError::Unsupported(format!(
                    "{}: unknown zone model '{m}'; zbd: needs a host-managed zoned device",
                    path.display()
                )))
            }
        }
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        if needs_mq_deadline(parse_kernel_version(&release))
            && q.scheduler.as_deref() != Some("mq-deadline")
        {
            return Err(ZnsError::Unsupported(format!(
                "{}: the I/O scheduler is '{}', but on Linux {} (before 6.10) zoned writes need \
                 mq-deadline: echo mq-deadline > /sys/block/{}/queue/scheduler",
                path.display(),
                q.scheduler.as_deref().unwrap_or("unknown"),
                release.trim(),
                q.name
            )));
        }

        let fd = rustix::fs::open(
            path,
            OFlags::RDWR | OFlags::DIRECT | OFlags::EXCL | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::BUSY => ZnsError::InUse {
                path: path.to_path_buf(),
            },
            Errno::ACCESS | Errno::PERM => ZnsError::io(
                ctx("open read-write (needs root, or membership of the device's group)"),
                e.into(),
            ),
            _ => ZnsError::io(ctx("open"), e.into()),
        })?;

        let zone_sectors = u64::from(
            ioctl_get_u32(fd.as_fd(), false)
                .map_err(|e| ZnsError::io(ctx("BLKGETZONESZ"), e.into()))?,
        );
        let nr_zones = ioctl_get_u32(fd.as_fd(), true)
            .map_err(|e| ZnsError::io(ctx("BLKGETNRZONES"), e.into()))?;
        let bad = |reason: String| ZnsError::Unsupported(format!("{}: {reason}", path.display()));
        if zone_sectors == 0 || nr_zones == 0 {
            return Err(bad(format!(
                "the kernel reports {nr_zones} zones of {zone_sectors} sectors"
            )));
        }
        if let Some(chunk) = q.chunk_sectors.filter(|&c| c != 0 && c != zone_sectors) {
            return Err(bad(format!(
                "queue/chunk_sectors is {chunk} but the zone size is {zone_sectors} sectors"
            )));
        }
        let block = q.logical_block_size;
        let block_u32 = u32::try_from(block)
            .map_err(|_| bad(format!("logical block size {block} is too large")))?;
        let to_u32 = |v: u64, what: &str| {
            u32::try_from(v).map_err(|_| bad(format!("{what} {v} does not fit in 32 bits")))
        };
        let max_open = to_u32(q.max_open, "max_open_zones")?;
        let max_active = to_u32(q.max_active, "max_active_zones")?;

        let zone_size = zone_sectors * SECTOR;
        let mut dev = ZbdDevice {
            path: path.to_path_buf(),
            fd,
            geo: Geometry {
                zones: nr_zones,
                zone_size,
                // Filled in from the report below.
                zone_capacity: zone_size,
                block_size: block_u32,
                max_open,
                max_active,
            },
            zone_sectors,
            align: (block as usize).max(4096),
            slots: Vec::new(),
            activation: Mutex::new(()),
            counters: Counters::new(nr_zones),
        };

        let zones = dev.report_raw(0, nr_zones)?;
        if zones.len() != nr_zones as usize {
            return Err(bad(format!(
                "the zone report lists {} zones but the device has {nr_zones}",
                zones.len()
            )));
        }
        let capacity = zones
            .first()
            .map(|z| z.capacity)
            .ok_or_else(|| bad("the zone report lists no zones".into()))?;
        for z in &zones {
            if z.capacity != capacity {
                return Err(bad(format!(
                    "zone {} has capacity {} bytes but zone 0 has {capacity}; zkv needs one \
                     zone capacity for the whole device",
                    z.zone, z.capacity
                )));
            }
        }
        dev.geo.zone_capacity = capacity;
        dev.geo.validate().map_err(|e| bad(e.to_string()))?;
        dev.slots = zones
            .iter()
            .map(|z| {
                Slot::new(ZoneCache {
                    state: z.state,
                    wp: z.wp,
                })
            })
            .collect();
        Ok(dev)
    }

    /// The cached state of a zone (one slot per zone).
    pub(super) fn slot(&self, zone: u32) -> Result<&Slot> {
        zone_entry(&self.slots, zone)
    }

    /// The path the device was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn ctx(&self, what: impl fmt::Display) -> String {
        format!("{}: {what}", self.path.display())
    }

    /// Before a command that makes an EMPTY zone active (a write or an explicit open), checks
    /// the active limit against the device's own zone report, and returns the guard to hold
    /// until the command completes. The device would check it too, but a controller may
    /// first close an implicitly open zone to make room for the open resource and then
    /// refuse for lack of an active one (QEMU does); checking here keeps the rule that a
    /// refused command changes nothing.
    fn check_activation(&self, zone: u32, state: ZoneState) -> Result<Option<MutexGuard<'_, ()>>> {
        let limit = self.geo.max_active;
        if state != ZoneState::Empty || limit == 0 {
            return Ok(None);
        }
        let gate = self.activation.lock().unwrap_or_else(|e| e.into_inner());
        let active = self
            .report_raw(0, self.geo.zones)?
            .iter()
            .filter(|z| z.state.is_active())
            .count();
        if active >= limit as usize {
            return Err(ZnsError::TooManyActive { zone, limit });
        }
        Ok(Some(gate))
    }

    /// The common write path: `off` is where the caller writes (None = at the WP).
    fn do_write(&self, zone: u32, off: Option<u64>, data: &[u8], cat: IoCategory) -> Result<u64> {
        let len = data.len() as u64;
        self.geo.check_block("write length", len)?;
        let start = self.geo.zone_start(zone);
        // Prepare the aligned copy before taking the zone's lock.
        let bounce = if len == 0 || is_direct_ready(data.as_ptr(), data.len(), 0, self.align) {
            None
        } else {
            let mut b = AlignedBuf::zeroed(data.len(), self.align)?;
            b.as_mut_slice().copy_from_slice(data);
            Some(b)
        };
        let slot = self.slot(zone)?;
        let mut guard = slot.lock();
        let cache = *guard;
        match cache.state {
            ZoneState::Offline => return Err(ZnsError::Offline { zone }),
            ZoneState::ReadOnly => return Err(ZnsError::ReadOnly { zone }),
            ZoneState::Full => return Err(ZnsError::ZoneFull { zone }),
            _ => {}
        }
        let offset = off.unwrap_or(cache.wp);
        if offset != cache.wp {
            return Err(ZnsError::InvalidWritePosition {
                zone,
                offset,
                wp: cache.wp,
            });
        }
        if len == 0 {
            return Ok(start + offset);
        }
        let capacity = self.geo.zone_capacity;
        if offset + len > capacity {
            return Err(ZnsError::BoundaryCrossed {
                zone,
                offset,
                len,
                capacity,
            });
        }
        let _activation = self.check_activation(zone, cache.state)?;
        let buf = bounce.as_ref().map_or(data, |b| b.as_slice());
        if let Err(err) = pwrite_all(self.fd.as_fd(), buf, start + offset) {
            // Whatever happened, the zone may have changed: learn its real state.
            let fresh = self.refresh(zone, &mut guard);
            let what = self.ctx(format_args!(
                "zone {zone}: write of {len} bytes at offset {offset}"
            ));
            return Err(self.map_errno(zone, err, what, || {
                fresh
                    .ok()
                    .and_then(|f| explain_write_failure(zone, f, offset, len, capacity))
            }));
        }
        let wp = offset + len;
        let state = if wp == capacity {
            ZoneState::Full
        } else if cache.state.is_open() {
            cache.state
        } else {
            ZoneState::ImplicitOpen
        };
        slot.set(&mut guard, ZoneCache { state, wp });
        drop(guard);
        self.counters.on_write(cat, len);
        Ok(start + offset)
    }
}

impl ZonedDevice for ZbdDevice {
    fn geometry(&self) -> Geometry {
        self.geo
    }

    fn describe(&self) -> String {
        format!("zbd:{}", self.path.display())
    }

    fn report_zones(&self, first: u32, count: u32) -> Result<Vec<ZoneInfo>> {
        Ok(self
            .report_raw(first, count)?
            .into_iter()
            .map(|z| ZoneInfo {
                zone: z.zone,
                start: z.start,
                size: z.len,
                capacity: z.capacity,
                // As Linux reports it: a FULL zone's write pointer is the zone end.
                wp: if z.state == ZoneState::Full {
                    z.start + z.len
                } else {
                    z.start + z.wp
                },
                state: z.state,
            })
            .collect())
    }

    fn read(&self, addr: u64, buf: &mut [u8], cat: IoCategory) -> Result<()> {
        let len = buf.len() as u64;
        let size = self.geo.device_size();
        if addr.checked_add(len).is_none_or(|end| end > size) {
            return Err(ZnsError::OutOfRange { addr, len, size });
        }
        for (zone, off, piece) in self.geo.zone_pieces(addr, buf) {
            let pos = self.geo.zone_start(zone) + off;
            let slot = self.slot(zone)?;
            let cache = slot.seen().unwrap_or(ZoneCache {
                state: ZoneState::Full,
                wp: self.geo.zone_capacity,
            });
            if cache.state == ZoneState::Offline {
                return Err(ZnsError::Offline { zone });
            }
            let (stored, unwritten) = split_at_wp(piece, off, cache.wp.min(self.geo.zone_capacity));
            if !stored.is_empty() {
                let valid = stored.len();
                if let Err(err) = self.read_device(pos, stored) {
                    let what = self.ctx(format_args!(
                        "zone {zone}: read of {valid} bytes at offset {off}"
                    ));
                    if classify_errno(err.raw_os_error()) == ErrnoClass::Recheck {
                        let mut guard = slot.lock();
                        if let Ok(f) = self.refresh(zone, &mut guard) {
                            if f.state == ZoneState::Offline {
                                return Err(ZnsError::Offline { zone });
                            }
                        }
                    }
                    return Err(ZnsError::io(what, err));
                }
            }
            unwritten.fill(0);
        }
        self.counters.on_read(cat, len);
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8], cat: IoCategory) -> Result<()> {
        let (zone, off) = self.geo.locate_write(addr)?;
        self.do_write(zone, Some(off), data, cat).map(|_| ())
    }

    fn append(&self, zone: u32, data: &[u8], cat: IoCategory) -> Result<u64> {
        let zone = self.geo.check_zone(u64::from(zone))?;
        self.do_write(zone, None, data, cat)
    }

    fn zone_op(&self, zone: u32, op: ZoneOp) -> Result<()> {
        let zone = self.geo.check_zone(u64::from(zone))?;
        let slot = self.slot(zone)?;
        let mut guard = slot.lock();
        let before = *guard;
        if let Some(e) = zone_op_rule(zone, op, before.state) {
            return Err(e);
        }
        let _activation = if op == ZoneOp::Open {
            self.check_activation(zone, before.state)?
        } else {
            None
        };
        let range = BlkZoneRange {
            sector: u64::from(zone) * self.zone_sectors,
            nr_sectors: self.zone_sectors,
        };
        if let Err(e) = ioctl_zone_mgmt(self.fd.as_fd(), op, range) {
            let fresh = self.refresh(zone, &mut guard);
            let what = self.ctx(format_args!("zone {zone}: {op}"));
            return Err(self.map_errno(zone, e.into(), what, || {
                fresh.ok().and_then(|f| zone_op_rule(zone, op, f.state))
            }));
        }
        let after = match op {
            ZoneOp::Open => ZoneCache {
                state: ZoneState::ExplicitOpen,
                wp: before.wp,
            },
            // What was written stays readable; the rest of a finished zone reads as zeros.
            ZoneOp::Finish => ZoneCache {
                state: ZoneState::Full,
                wp: before.wp,
            },
            ZoneOp::Reset => ZoneCache {
                state: ZoneState::Empty,
                wp: 0,
            },
            // Whether a zone with nothing written closes to CLOSED or EMPTY is the device's
            // choice: ask it.
            ZoneOp::Close => self.fresh(zone).unwrap_or(ZoneCache {
                state: ZoneState::Closed,
                wp: before.wp,
            }),
        };
        slot.set(&mut guard, after);
        drop(guard);
        match op {
            ZoneOp::Finish if before.state != ZoneState::Full => self.counters.on_finish(),
            ZoneOp::Reset => self.counters.on_reset(zone),
            _ => {}
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        rustix::fs::fdatasync(&self.fd).map_err(|e| ZnsError::io(self.ctx("flush"), e.into()))?;
        self.counters.on_sync();
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        self.counters.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_refuses_what_is_not_a_zoned_block_device() {
        let dir = std::env::temp_dir();
        let e = ZbdDevice::open(&dir).unwrap_err();
        assert_eq!(e.kind(), "unsupported", "{e}");
        let e = ZbdDevice::open(Path::new("/nonexistent/zbd")).unwrap_err();
        assert_eq!(e.kind(), "io", "{e}");
    }
}
