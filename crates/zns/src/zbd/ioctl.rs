//! The unsafe parts: one small function per ioctl shape, each with the reasoning that
//! makes it sound. Kept in one short file so that all the unsafe code of the backend can
//! be reviewed in one place; everything else calls these safe wrappers.

use std::os::fd::BorrowedFd;

use rustix::ioctl::{self, Getter, Setter, Updater};

use crate::types::ZoneOp;

use super::abi::{self, BlkZone, BlkZoneRange, BlkZoneReport};

/// Zones asked for per `BLKREPORTZONE` call.
const REPORT_BATCH: usize = 256;

/// A `struct blk_zone_report` header followed by room for [`REPORT_BATCH`] zones, the
/// memory `BLKREPORTZONE` fills.
#[repr(C)]
pub(super) struct ReportBuf {
    hdr: BlkZoneReport,
    pub(super) zones: [BlkZone; REPORT_BATCH],
}

const _: () = {
    // `zones` must start right after the header, where the kernel writes the first zone.
    assert!(std::mem::offset_of!(ReportBuf, zones) == std::mem::size_of::<BlkZoneReport>());
    assert!(
        std::mem::size_of::<ReportBuf>()
            == std::mem::size_of::<BlkZoneReport>() + REPORT_BATCH * std::mem::size_of::<BlkZone>()
    );
};

impl ReportBuf {
    pub(super) fn new() -> Box<ReportBuf> {
        Box::new(ReportBuf {
            hdr: BlkZoneReport {
                sector: 0,
                nr_zones: 0,
                flags: 0,
            },
            zones: [BlkZone::ZERO; REPORT_BATCH],
        })
    }
}

/// `BLKREPORTZONE` from `sector`, asking for at most `max` (≤ [`REPORT_BATCH`]) zones.
/// Returns the zones reported and the report flags.
pub(super) fn ioctl_report_zones(
    fd: BorrowedFd<'_>,
    sector: u64,
    max: usize,
    buf: &mut ReportBuf,
) -> rustix::io::Result<(usize, u32)> {
    let asked = max.min(REPORT_BATCH);
    buf.hdr = BlkZoneReport {
        sector,
        // `asked` ≤ REPORT_BATCH, a small constant, so it fits in u32.
        nr_zones: asked as u32,
        flags: 0,
    };
    // SAFETY: BLKREPORTZONE is `_IOWR(0x12, 130, struct blk_zone_report)` and its argument
    // is a pointer to a `struct blk_zone_report` followed by an array of `struct blk_zone`.
    // The kernel (blkdev_report_zones_ioctl) copies the 16-byte header in, reports at most
    // `hdr.nr_zones` zones, writing zone `i` at byte 16 + 64·i, then copies the header
    // back. `ReportBuf` is `repr(C)` with the header at offset 0 and `zones` at offset 16,
    // and `BlkZone`/`BlkZoneReport` match the kernel layouts (all checked by the const
    // assertions above and in `abi.rs`), so with `nr_zones = asked ≤ REPORT_BATCH` every
    // byte the kernel reads or writes lies inside `*buf`. `buf` is an exclusive borrow that
    // outlives the call, and every field is a plain integer (or integer array), so any
    // bytes the kernel stores are valid values.
    unsafe { ioctl::ioctl(fd, Updater::<{ abi::BLKREPORTZONE }, ReportBuf>::new(buf))? };
    let got = (buf.hdr.nr_zones as usize).min(asked);
    Ok((got, buf.hdr.flags))
}

/// `BLKGETZONESZ` (zone size in sectors) or `BLKGETNRZONES` (number of zones).
pub(super) fn ioctl_get_u32(fd: BorrowedFd<'_>, nr_zones: bool) -> rustix::io::Result<u32> {
    // SAFETY: BLKGETZONESZ and BLKGETNRZONES are `_IOR(0x12, 132/133, __u32)`: the kernel
    // stores one `__u32` through the pointer (put_user) and reads nothing. The `Getter`
    // passes a pointer to its own `MaybeUninit<u32>`, which is 4 bytes, properly aligned
    // and alive until the call returns, and only reads it back after a successful call.
    unsafe {
        if nr_zones {
            ioctl::ioctl(fd, Getter::<{ abi::BLKGETNRZONES }, u32>::new())
        } else {
            ioctl::ioctl(fd, Getter::<{ abi::BLKGETZONESZ }, u32>::new())
        }
    }
}

/// `BLKOPENZONE`, `BLKCLOSEZONE`, `BLKFINISHZONE` or `BLKRESETZONE` on one sector range.
pub(super) fn ioctl_zone_mgmt(
    fd: BorrowedFd<'_>,
    op: ZoneOp,
    range: BlkZoneRange,
) -> rustix::io::Result<()> {
    // SAFETY: each of the four opcodes is `_IOW(0x12, n, struct blk_zone_range)`: the kernel
    // (blkdev_zone_mgmt_ioctl) copies `sizeof(struct blk_zone_range)` = 16 bytes from the
    // pointer and writes nothing back. The `Setter` passes a pointer to its own copy of
    // `range`, a `repr(C)` struct whose layout matches the kernel's (checked in `abi.rs`),
    // which lives until the call returns.
    unsafe {
        match op {
            ZoneOp::Open => {
                ioctl::ioctl(fd, Setter::<{ abi::BLKOPENZONE }, BlkZoneRange>::new(range))
            }
            ZoneOp::Close => ioctl::ioctl(
                fd,
                Setter::<{ abi::BLKCLOSEZONE }, BlkZoneRange>::new(range),
            ),
            ZoneOp::Finish => ioctl::ioctl(
                fd,
                Setter::<{ abi::BLKFINISHZONE }, BlkZoneRange>::new(range),
            ),
            ZoneOp::Reset => ioctl::ioctl(
                fd,
                Setter::<{ abi::BLKRESETZONE }, BlkZoneRange>::new(range),
            ),
        }
    }
}
