//! The user-space ABI of `<linux/blkzoned.h>`: the structures the zone ioctls exchange,
//! their opcodes, and the zone types and conditions. Kept apart, with compile-time checks
//! of every layout, because the unsafe ioctl calls in `ioctl.rs` rely on it being exactly
//! the kernel's.

use rustix::ioctl::{opcode, Opcode};
use std::mem::{offset_of, size_of};

/// The unit of every address in the zoned block device ioctls.
pub(super) const SECTOR: u64 = 512;

/// `struct blk_zone`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BlkZone {
    /// Zone start sector.
    pub(super) start: u64,
    /// Zone length in sectors.
    pub(super) len: u64,
    /// Write pointer, in sectors.
    pub(super) wp: u64,
    /// `enum blk_zone_type`.
    pub(super) kind: u8,
    /// `enum blk_zone_cond`.
    pub(super) cond: u8,
    non_seq: u8,
    reset: u8,
    resv: [u8; 4],
    /// Zone capacity in sectors (valid when the report has `BLK_ZONE_REP_CAPACITY`).
    pub(super) capacity: u64,
    reserved: [u8; 24],
}

impl BlkZone {
    pub(super) const ZERO: BlkZone = BlkZone {
        start: 0,
        len: 0,
        wp: 0,
        kind: 0,
        cond: 0,
        non_seq: 0,
        reset: 0,
        resv: [0; 4],
        capacity: 0,
        reserved: [0; 24],
    };
}

/// `struct blk_zone_report` (its flexible `zones[]` array follows it in memory).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BlkZoneReport {
    pub(super) sector: u64,
    pub(super) nr_zones: u32,
    pub(super) flags: u32,
}

/// `struct blk_zone_range`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BlkZoneRange {
    pub(super) sector: u64,
    pub(super) nr_sectors: u64,
}

/// `BLK_ZONE_REP_CAPACITY`: the `capacity` field of each zone is valid.
pub(super) const BLK_ZONE_REP_CAPACITY: u32 = 1 << 0;

/// `BLK_ZONE_TYPE_SEQWRITE_REQ`.
pub(super) const BLK_ZONE_TYPE_SEQWRITE_REQ: u8 = 0x2;

/// `enum blk_zone_cond`.
pub(super) const BLK_ZONE_COND_NOT_WP: u8 = 0x0;
pub(super) const BLK_ZONE_COND_EMPTY: u8 = 0x1;
pub(super) const BLK_ZONE_COND_IMP_OPEN: u8 = 0x2;
pub(super) const BLK_ZONE_COND_EXP_OPEN: u8 = 0x3;
pub(super) const BLK_ZONE_COND_CLOSED: u8 = 0x4;
pub(super) const BLK_ZONE_COND_READONLY: u8 = 0xD;
pub(super) const BLK_ZONE_COND_FULL: u8 = 0xE;
pub(super) const BLK_ZONE_COND_OFFLINE: u8 = 0xF;

/// `_IOWR(0x12, 130, struct blk_zone_report)`.
pub(super) const BLKREPORTZONE: Opcode = opcode::read_write::<BlkZoneReport>(0x12, 130);
/// `_IOW(0x12, 131, struct blk_zone_range)`.
pub(super) const BLKRESETZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 131);
/// `_IOR(0x12, 132, __u32)`.
pub(super) const BLKGETZONESZ: Opcode = opcode::read::<u32>(0x12, 132);
/// `_IOR(0x12, 133, __u32)`.
pub(super) const BLKGETNRZONES: Opcode = opcode::read::<u32>(0x12, 133);
/// `_IOW(0x12, 134, struct blk_zone_range)`.
pub(super) const BLKOPENZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 134);
/// `_IOW(0x12, 135, struct blk_zone_range)`.
pub(super) const BLKCLOSEZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 135);
/// `_IOW(0x12, 136, struct blk_zone_range)`.
pub(super) const BLKFINISHZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 136);

// The layouts must be exactly the kernel's; the unsafe ioctl calls rely on it.
const _: () = {
    assert!(size_of::<BlkZone>() == 64);
    assert!(offset_of!(BlkZone, start) == 0);
    assert!(offset_of!(BlkZone, len) == 8);
    assert!(offset_of!(BlkZone, wp) == 16);
    assert!(offset_of!(BlkZone, kind) == 24);
    assert!(offset_of!(BlkZone, cond) == 25);
    assert!(offset_of!(BlkZone, non_seq) == 26);
    assert!(offset_of!(BlkZone, reset) == 27);
    assert!(offset_of!(BlkZone, resv) == 28);
    assert!(offset_of!(BlkZone, capacity) == 32);
    assert!(offset_of!(BlkZone, reserved) == 40);
    assert!(size_of::<BlkZoneReport>() == 16);
    assert!(offset_of!(BlkZoneReport, sector) == 0);
    assert!(offset_of!(BlkZoneReport, nr_zones) == 8);
    assert!(offset_of!(BlkZoneReport, flags) == 12);
    assert!(size_of::<BlkZoneRange>() == 16);
    assert!(offset_of!(BlkZoneRange, sector) == 0);
    assert!(offset_of!(BlkZoneRange, nr_sectors) == 8);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    ))]
    #[test]
    fn ioctl_numbers_match_the_kernel_headers() {
        // Values of the <linux/blkzoned.h> macros on the asm-generic ioctl encoding.
        assert_eq!(BLKREPORTZONE as u64, 0xC010_1282);
        assert_eq!(BLKRESETZONE as u64, 0x4010_1283);
        assert_eq!(BLKGETZONESZ as u64, 0x8004_1284);
        assert_eq!(BLKGETNRZONES as u64, 0x8004_1285);
        assert_eq!(BLKOPENZONE as u64, 0x4010_1286);
        assert_eq!(BLKCLOSEZONE as u64, 0x4010_1287);
        assert_eq!(BLKFINISHZONE as u64, 0x4010_1288);
    }
}
