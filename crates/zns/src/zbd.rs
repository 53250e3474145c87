//! Linux zoned block devices (`zbd:/dev/nvme0n1`).
//!
//! [`ZbdDevice`] drives a host-managed zoned block device through the kernel's block layer:
//! zone reports and zone management with the `<linux/blkzoned.h>` ioctls, data with
//! `O_DIRECT` `pread`/`pwrite`, durability with `fdatasync` (an NVMe flush).
//!
//! It obeys the same rules, with the same typed errors, as the emulators:
//! - Every zone has a cached condition and write pointer, loaded from a zone report at open,
//!   updated by our own commands and refreshed from the device after any failed command.
//!   Position, full, boundary, offline and read-only rules are checked against the cache
//!   before a command is issued, so a broken rule never reaches the device.
//! - One write is in flight per zone (a mutex per zone), which is also what keeps the
//!   write pointer and the cache in step.
//! - Open/active resource limits are enforced by the device: `EOVERFLOW` means too many
//!   active zones, `ETOOMANYREFS` too many open zones. An `EIO` is explained by reporting the
//!   zone again; what the report shows becomes the typed error.
//! - User space cannot issue Zone Append, so [`ZonedDevice::append`] writes at the cached
//!   write pointer under the zone's mutex.
//! - Reads accept any byte range: aligned `O_DIRECT` reads go through a bounce buffer when
//!   the caller's buffer or range is not aligned. Bytes at or beyond a zone's write pointer
//!   are not read from the device: they are zeros. (A zone that was already FULL when the
//!   device was opened is read up to its capacity: Linux does not say how much it holds.)

use std::fmt;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use rustix::ioctl::{self, Getter, Setter, Updater};

use crate::device::{Counters, DeviceStats, ZonedDevice};
use crate::error::{Result, ZnsError};
use crate::types::{Geometry, IoCategory, ZoneInfo, ZoneOp, ZoneState};

/// The unit of every address in the zoned block device ioctls.
const SECTOR: u64 = 512;

/// Zones asked for per `BLKREPORTZONE` call.
const REPORT_BATCH: usize = 256;

/// Largest bounce buffer used for one unaligned read; larger reads go in pieces.
const READ_BOUNCE_MAX: usize = 1 << 20;

/// The user-space ABI of `<linux/blkzoned.h>`.
mod abi {
    use rustix::ioctl::{opcode, Opcode};
    use std::mem::{offset_of, size_of};

    /// `struct blk_zone`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct BlkZone {
        /// Zone start sector.
        pub start: u64,
        /// Zone length in sectors.
        pub len: u64,
        /// Write pointer, in sectors.
        pub wp: u64,
        /// `enum blk_zone_type`.
        pub kind: u8,
        /// `enum blk_zone_cond`.
        pub cond: u8,
        pub non_seq: u8,
        pub reset: u8,
        pub resv: [u8; 4],
        /// Zone capacity in sectors (valid when the report has `BLK_ZONE_REP_CAPACITY`).
        pub capacity: u64,
        pub reserved: [u8; 24],
    }

    impl BlkZone {
        pub const ZERO: BlkZone = BlkZone {
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
    pub struct BlkZoneReport {
        pub sector: u64,
        pub nr_zones: u32,
        pub flags: u32,
    }

    /// `struct blk_zone_range`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct BlkZoneRange {
        pub sector: u64,
        pub nr_sectors: u64,
    }

    /// `BLK_ZONE_REP_CAPACITY`: the `capacity` field of each zone is valid.
    pub const BLK_ZONE_REP_CAPACITY: u32 = 1 << 0;

    /// `BLK_ZONE_TYPE_SEQWRITE_REQ`.
    pub const BLK_ZONE_TYPE_SEQWRITE_REQ: u8 = 0x2;

    /// `enum blk_zone_cond`.
    pub const BLK_ZONE_COND_NOT_WP: u8 = 0x0;
    pub const BLK_ZONE_COND_EMPTY: u8 = 0x1;
    pub const BLK_ZONE_COND_IMP_OPEN: u8 = 0x2;
    pub const BLK_ZONE_COND_EXP_OPEN: u8 = 0x3;
    pub const BLK_ZONE_COND_CLOSED: u8 = 0x4;
    pub const BLK_ZONE_COND_READONLY: u8 = 0xD;
    pub const BLK_ZONE_COND_FULL: u8 = 0xE;
    pub const BLK_ZONE_COND_OFFLINE: u8 = 0xF;

    /// `_IOWR(0x12, 130, struct blk_zone_report)`.
    pub const BLKREPORTZONE: Opcode = opcode::read_write::<BlkZoneReport>(0x12, 130);
    /// `_IOW(0x12, 131, struct blk_zone_range)`.
    pub const BLKRESETZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 131);
    /// `_IOR(0x12, 132, __u32)`.
    pub const BLKGETZONESZ: Opcode = opcode::read::<u32>(0x12, 132);
    /// `_IOR(0x12, 133, __u32)`.
    pub const BLKGETNRZONES: Opcode = opcode::read::<u32>(0x12, 133);
    /// `_IOW(0x12, 134, struct blk_zone_range)`.
    pub const BLKOPENZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 134);
    /// `_IOW(0x12, 135, struct blk_zone_range)`.
    pub const BLKCLOSEZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 135);
    /// `_IOW(0x12, 136, struct blk_zone_range)`.
    pub const BLKFINISHZONE: Opcode = opcode::write::<BlkZoneRange>(0x12, 136);

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
}

use abi::{BlkZone, BlkZoneRange, BlkZoneReport};

/// A `struct blk_zone_report` header followed by room for [`REPORT_BATCH`] zones, the
/// memory `BLKREPORTZONE` fills.
#[repr(C)]
struct ReportBuf {
    hdr: BlkZoneReport,
    zones: [BlkZone; REPORT_BATCH],
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
    fn new() -> Box<ReportBuf> {
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

// ---------------------------------------------------------------------------------------
// The unsafe parts: one small function per ioctl shape.

/// `BLKREPORTZONE` from `sector`, asking for at most `max` (≤ [`REPORT_BATCH`]) zones.
/// Returns the zones reported and the report flags.
fn ioctl_report_zones(
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
    // assertions above), so with `nr_zones = asked ≤ REPORT_BATCH` every byte the kernel
    // reads or writes lies inside `*buf`. `buf` is an exclusive borrow that outlives the
    // call, and every field is a plain integer (or integer array), so any bytes the kernel
    // stores are valid values.
    unsafe { ioctl::ioctl(fd, Updater::<{ abi::BLKREPORTZONE }, ReportBuf>::new(buf))? };
    let got = (buf.hdr.nr_zones as usize).min(asked);
    Ok((got, buf.hdr.flags))
}

/// `BLKGETZONESZ` (zone size in sectors) or `BLKGETNRZONES` (number of zones).
fn ioctl_get_u32(fd: BorrowedFd<'_>, nr_zones: bool) -> rustix::io::Result<u32> {
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
fn ioctl_zone_mgmt(fd: BorrowedFd<'_>, op: ZoneOp, range: BlkZoneRange) -> rustix::io::Result<()> {
    // SAFETY: each of the four opcodes is `_IOW(0x12, n, struct blk_zone_range)`: the kernel
    // (blkdev_zone_mgmt_ioctl) copies `sizeof(struct blk_zone_range)` = 16 bytes from the
    // pointer and writes nothing back. The `Setter` passes a pointer to its own copy of
    // `range`, a `repr(C)` struct whose layout matches the kernel's (checked above), which
    // lives until the call returns.
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

// ---------------------------------------------------------------------------------------
// Pure helpers (unit tested).

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

/// The zone model in `queue/zoned`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ZonedModel {
    None,
    HostAware,
    HostManaged,
    Other(String),
}

fn parse_zoned_model(s: &str) -> ZonedModel {
    match s.trim() {
        "none" => ZonedModel::None,
        "host-aware" => ZonedModel::HostAware,
        "host-managed" => ZonedModel::HostManaged,
        other => ZonedModel::Other(other.to_string()),
    }
}

/// A decimal number in a sysfs attribute.
fn parse_sysfs_u64(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

/// The active scheduler in `queue/scheduler` (the bracketed name), e.g.
/// `"[mq-deadline] kyber none"` → `mq-deadline`; `"none"` → `none`.
fn parse_active_scheduler(s: &str) -> Option<String> {
    let s = s.trim();
    if let Some(open) = s.find('[') {
        let rest = &s[open + 1..];
        let close = rest.find(']')?;
        return Some(rest[..close].to_string());
    }
    // A queue with a single choice may print it without brackets.
    let mut words = s.split_whitespace();
    match (words.next(), words.next()) {
        (Some(w), None) => Some(w.to_string()),
        _ => None,
    }
}

/// `(major, minor)` of a kernel release string such as `6.1.0-27-amd64`.
fn parse_kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor_digits: String = parts
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((major, minor_digits.parse().ok()?))
}

/// Whether zoned writes need the mq-deadline scheduler: before Linux 6.10 (zone write
/// plugging) only mq-deadline keeps the writes of one zone in order once the block layer
/// splits them.
fn needs_mq_deadline(version: Option<(u32, u32)>) -> bool {
    match version {
        Some(v) => v < (6, 10),
        None => true,
    }
}

/// The block-aligned span `[start, end)` covering `len` bytes at `addr`.
fn aligned_span(addr: u64, len: u64, block: u64) -> (u64, u64) {
    let start = addr / block * block;
    let end = (addr + len).div_ceil(block) * block;
    (start, end)
}

/// Whether a buffer can be used for `O_DIRECT` as it is.
fn is_direct_ready(ptr: *const u8, len: usize, pos: u64, align: usize) -> bool {
    ptr.align_offset(align) == 0 && len.is_multiple_of(align) && pos.is_multiple_of(align as u64)
}

/// How a failed command's errno is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ErrnoClass {
    /// `EOVERFLOW` (`BLK_STS_ZONE_ACTIVE_RESOURCE`).
    TooManyActive,
    /// `ETOOMANYREFS` (`BLK_STS_ZONE_OPEN_RESOURCE`).
    TooManyOpen,
    /// `EIO`: report the zone again to learn which rule the device enforced.
    Recheck,
    /// Anything else is an I/O error.
    Other,
}

fn classify_errno(raw: Option<i32>) -> ErrnoClass {
    match raw {
        Some(e) if e == Errno::OVERFLOW.raw_os_error() => ErrnoClass::TooManyActive,
        Some(e) if e == Errno::TOOMANYREFS.raw_os_error() => ErrnoClass::TooManyOpen,
        Some(e) if e == Errno::IO.raw_os_error() => ErrnoClass::Recheck,
        _ => ErrnoClass::Other,
    }
}

/// The typed error behind a write that failed with `EIO`, given the zone as the device
/// reports it afterwards. `None` when the zone does not explain it (a media error).
fn explain_write_failure(
    zone: u32,
    fresh: ZoneCache,
    offset: u64,
    len: u64,
    capacity: u64,
) -> Option<ZnsError> {
    match fresh.state {
        ZoneState::Offline => Some(ZnsError::Offline { zone }),
        ZoneState::ReadOnly => Some(ZnsError::ReadOnly { zone }),
        ZoneState::Full => Some(ZnsError::ZoneFull { zone }),
        _ if fresh.wp != offset => Some(ZnsError::InvalidWritePosition {
            zone,
            offset,
            wp: fresh.wp,
        }),
        _ if offset + len > capacity => Some(ZnsError::BoundaryCrossed {
            zone,
            offset,
            len,
            capacity,
        }),
        _ => None,
    }
}

/// The typed error behind a zone management command that failed with `EIO`, or the error
/// our own rules give before issuing it (the same function serves both).
fn zone_op_rule(zone: u32, op: ZoneOp, state: ZoneState) -> Option<ZnsError> {
    match state {
        ZoneState::Offline => return Some(ZnsError::Offline { zone }),
        ZoneState::ReadOnly => return Some(ZnsError::ReadOnly { zone }),
        _ => {}
    }
    let invalid = match op {
        ZoneOp::Open => state == ZoneState::Full,
        ZoneOp::Close => matches!(state, ZoneState::Empty | ZoneState::Full),
        ZoneOp::Finish | ZoneOp::Reset => false,
    };
    invalid.then_some(ZnsError::InvalidTransition { zone, op, state })
}

// ---------------------------------------------------------------------------------------
// Aligned memory without unsafe: an over-allocated Vec and an aligned window into it.

struct AlignedBuf {
    storage: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    fn zeroed(len: usize, align: usize) -> Result<AlignedBuf> {
        let storage = vec![0u8; len + align];
        let off = storage.as_ptr().align_offset(align);
        if off.checked_add(len).is_none_or(|end| end > storage.len()) {
            return Err(ZnsError::io(
                "allocate an aligned I/O buffer",
                io::Error::new(io::ErrorKind::OutOfMemory, "cannot align the buffer"),
            ));
        }
        Ok(AlignedBuf { storage, off, len })
    }

    fn as_slice(&self) -> &[u8] {
        &self.storage[self.off..self.off + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.off..self.off + self.len]
    }
}

fn pwrite_all(fd: BorrowedFd<'_>, mut data: &[u8], mut pos: u64) -> io::Result<()> {
    while !data.is_empty() {
        match rustix::io::pwrite(fd, data, pos) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the device accepted no bytes",
                ))
            }
            Ok(n) => {
                data = &data[n..];
                pos += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn pread_exact(fd: BorrowedFd<'_>, mut buf: &mut [u8], mut pos: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match rustix::io::pread(fd, &mut *buf, pos) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "read past the end of the device",
                ))
            }
            Ok(n) => {
                buf = &mut buf[n..];
                pos += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// sysfs

fn read_attr(dir: &Path, name: &str) -> Result<Option<String>> {
    let p = dir.join(name);
    match std::fs::read_to_string(&p) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ZnsError::io(format!("read {}", p.display()), e)),
    }
}

fn read_num_attr(dir: &Path, name: &str) -> Result<Option<u64>> {
    match read_attr(dir, name)? {
        None => Ok(None),
        Some(s) => parse_sysfs_u64(&s).map(Some).ok_or_else(|| {
            ZnsError::Unsupported(format!(
                "{}: unexpected content {:?}",
                dir.join(name).display(),
                s.trim()
            ))
        }),
    }
}

/// What sysfs says about the device's queue.
#[derive(Debug)]
struct QueueInfo {
    name: String,
    model: ZonedModel,
    chunk_sectors: Option<u64>,
    max_open: u64,
    max_active: u64,
    logical_block_size: u64,
    scheduler: Option<String>,
}

fn queue_info(path: &Path, major: u32, minor: u32) -> Result<QueueInfo> {
    let base = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if base.join("partition").exists() {
        return Err(ZnsError::Unsupported(format!(
            "{}: is a partition; zoned block devices are used whole (e.g. /dev/nvme0n1)",
            path.display()
        )));
    }
    let queue = base.join("queue");
    if !queue.is_dir() {
        return Err(ZnsError::Unsupported(format!(
            "{}: {} does not exist; is sysfs mounted?",
            path.display(),
            queue.display()
        )));
    }
    let name = std::fs::canonicalize(&base)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{major}:{minor}"));
    let model = parse_zoned_model(&read_attr(&queue, "zoned")?.unwrap_or_default());
    let logical_block_size = read_num_attr(&queue, "logical_block_size")?.ok_or_else(|| {
        ZnsError::Unsupported(format!(
            "{}: {}/logical_block_size is missing",
            path.display(),
            queue.display()
        ))
    })?;
    Ok(QueueInfo {
        name,
        model,
        chunk_sectors: read_num_attr(&queue, "chunk_sectors")?,
        max_open: read_num_attr(&queue, "max_open_zones")?.unwrap_or(0),
        max_active: read_num_attr(&queue, "max_active_zones")?.unwrap_or(0),
        logical_block_size,
        scheduler: read_attr(&queue, "scheduler")?.and_then(|s| parse_active_scheduler(&s)),
    })
}

// ---------------------------------------------------------------------------------------
// The device.

/// A zone's condition as we last knew it. `wp` is relative to the zone start; for a FULL
/// zone it is how much was written when we know it (the zone was finished by us), else the
/// capacity (Linux reports a FULL zone's write pointer at the zone end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ZoneCache {
    state: ZoneState,
    wp: u64,
}

impl ZoneCache {
    /// Packs the cache into one word for lock-free readers: state code in the top byte.
    fn pack(self) -> u64 {
        (u64::from(self.state.code()) << 56) | (self.wp & ((1 << 56) - 1))
    }

    fn unpack(word: u64) -> Option<ZoneCache> {
        Some(ZoneCache {
            state: ZoneState::from_code((word >> 56) as u8)?,
            wp: word & ((1 << 56) - 1),
        })
    }
}

struct Slot {
    /// Held for the whole of a write or zone management command on this zone.
    cache: Mutex<ZoneCache>,
    /// A copy of `cache` that readers take without waiting for a write in flight.
    seen: AtomicU64,
}

impl Slot {
    fn new(c: ZoneCache) -> Slot {
        Slot {
            cache: Mutex::new(c),
            seen: AtomicU64::new(c.pack()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ZoneCache> {
        // The cache is a plain value updated in one assignment, so a panic while the
        // lock was held cannot leave it half-written.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, guard: &mut MutexGuard<'_, ZoneCache>, c: ZoneCache) {
        **guard = c;
        self.seen.store(c.pack(), Ordering::Release);
    }

    fn seen(&self) -> Option<ZoneCache> {
        ZoneCache::unpack(self.seen.load(Ordering::Acquire))
    }
}

/// A Linux host-managed zoned block device, e.g. an NVMe ZNS namespace `/dev/nvme0n1`.
pub struct ZbdDevice {
    path: PathBuf,
    fd: OwnedFd,
    geo: Geometry,
    zone_sectors: u64,
    /// Memory alignment of `O_DIRECT` buffers (at least the logical block size).
    align: usize,
    slots: Vec<Slot>,
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

/// One zone of a report, checked and converted to bytes.
#[derive(Clone, Copy, Debug)]
struct RawZone {
    zone: u32,
    state: ZoneState,
    /// Bytes.
    start: u64,
    len: u64,
    capacity: u64,
    /// Relative to the zone start; the capacity for a FULL zone.
    wp: u64,
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
        let capacity = zones[0].capacity;
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

    /// The path the device was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn ctx(&self, what: impl fmt::Display) -> String {
        format!("{}: {what}", self.path.display())
    }

    /// Reports `count` zones from `first` straight from the device, checked.
    fn report_raw(&self, first: u32, count: u32) -> Result<Vec<RawZone>> {
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
            for raw in &buf.zones[..got] {
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
    fn fresh(&self, zone: u32) -> Result<ZoneCache> {
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
    fn refresh(&self, zone: u32, guard: &mut MutexGuard<'_, ZoneCache>) -> Result<ZoneCache> {
        let fresh = self.fresh(zone)?;
        self.slots[zone as usize].set(guard, fresh);
        Ok(fresh)
    }

    fn check_zone(&self, zone: u64) -> Result<u32> {
        if zone >= u64::from(self.geo.zones) {
            return Err(ZnsError::NoSuchZone {
                zone,
                zones: self.geo.zones,
            });
        }
        Ok(zone as u32)
    }

    fn check_block(&self, what: &'static str, value: u64) -> Result<()> {
        if !value.is_multiple_of(u64::from(self.geo.block_size)) {
            return Err(ZnsError::Unaligned {
                what,
                value,
                block: self.geo.block_size,
            });
        }
        Ok(())
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

    /// The typed error for a failed command's errno; `recheck` explains an `EIO`.
    fn map_errno(
        &self,
        zone: u32,
        err: io::Error,
        what: String,
        recheck: impl FnOnce() -> Option<ZnsError>,
    ) -> ZnsError {
        match classify_errno(err.raw_os_error()) {
            ErrnoClass::TooManyActive => ZnsError::TooManyActive {
                zone,
                limit: self.geo.max_active,
            },
            ErrnoClass::TooManyOpen => ZnsError::TooManyOpen {
                zone,
                limit: self.geo.max_open,
            },
            ErrnoClass::Recheck => recheck().unwrap_or_else(|| ZnsError::io(what, err)),
            ErrnoClass::Other => ZnsError::io(what, err),
        }
    }

    /// The common write path: `off` is where the caller writes (None = at the WP).
    fn do_write(&self, zone: u32, off: Option<u64>, data: &[u8], cat: IoCategory) -> Result<u64> {
        let len = data.len() as u64;
        self.check_block("write length", len)?;
        let start = self.geo.zone_start(zone);
        // Prepare the aligned copy before taking the zone's lock.
        let bounce = if len == 0 || is_direct_ready(data.as_ptr(), data.len(), 0, self.align) {
            None
        } else {
            let mut b = AlignedBuf::zeroed(data.len(), self.align)?;
            b.as_mut_slice().copy_from_slice(data);
            Some(b)
        };
        let slot = &self.slots[zone as usize];
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

    /// Reads `out.len()` bytes at absolute `pos` (below the zone's write pointer).
    fn read_device(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        if is_direct_ready(out.as_ptr(), out.len(), pos, self.align) {
            return pread_exact(self.fd.as_fd(), out, pos);
        }
        let block = u64::from(self.geo.block_size);
        let mut done = 0usize;
        while done < out.len() {
            let at = pos + done as u64;
            let want = (out.len() - done).min(READ_BOUNCE_MAX);
            let (a0, a1) = aligned_span(at, want as u64, block);
            let span = (a1 - a0) as usize;
            let mut bounce = AlignedBuf::zeroed(span, self.align)
                .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e.to_string()))?;
            pread_exact(self.fd.as_fd(), bounce.as_mut_slice(), a0)?;
            let skip = (at - a0) as usize;
            out[done..done + want].copy_from_slice(&bounce.as_slice()[skip..skip + want]);
            done += want;
        }
        Ok(())
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
        let mut done = 0usize;
        while done < buf.len() {
            let pos = addr + done as u64;
            let zone = self.geo.zone_of(pos) as u32;
            let off = pos - self.geo.zone_start(zone);
            let n = ((self.geo.zone_size - off) as usize).min(buf.len() - done);
            let chunk = &mut buf[done..done + n];
            let slot = &self.slots[zone as usize];
            let cache = slot.seen().unwrap_or(ZoneCache {
                state: ZoneState::Full,
                wp: self.geo.zone_capacity,
            });
            if cache.state == ZoneState::Offline {
                return Err(ZnsError::Offline { zone });
            }
            let readable = cache.wp.min(self.geo.zone_capacity);
            let valid = readable.saturating_sub(off).min(n as u64) as usize;
            if valid > 0 {
                if let Err(err) = self.read_device(pos, &mut chunk[..valid]) {
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
            chunk[valid..].fill(0);
            done += n;
        }
        self.counters.on_read(cat, len);
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8], cat: IoCategory) -> Result<()> {
        let (zone, off) = self.geo.locate_write(addr)?;
        self.do_write(zone, Some(off), data, cat).map(|_| ())
    }

    fn append(&self, zone: u32, data: &[u8], cat: IoCategory) -> Result<u64> {
        let zone = self.check_zone(u64::from(zone))?;
        self.do_write(zone, None, data, cat)
    }

    fn zone_op(&self, zone: u32, op: ZoneOp) -> Result<()> {
        let zone = self.check_zone(u64::from(zone))?;
        let slot = &self.slots[zone as usize];
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

    #[cfg(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    ))]
    #[test]
    fn ioctl_numbers_match_the_kernel_headers() {
        // Values of the <linux/blkzoned.h> macros on the asm-generic ioctl encoding.
        assert_eq!(abi::BLKREPORTZONE as u64, 0xC010_1282);
        assert_eq!(abi::BLKRESETZONE as u64, 0x4010_1283);
        assert_eq!(abi::BLKGETZONESZ as u64, 0x8004_1284);
        assert_eq!(abi::BLKGETNRZONES as u64, 0x8004_1285);
        assert_eq!(abi::BLKOPENZONE as u64, 0x4010_1286);
        assert_eq!(abi::BLKCLOSEZONE as u64, 0x4010_1287);
        assert_eq!(abi::BLKFINISHZONE as u64, 0x4010_1288);
    }

    #[test]
    fn sysfs_parsing() {
        assert_eq!(parse_zoned_model("host-managed\n"), ZonedModel::HostManaged);
        assert_eq!(parse_zoned_model("host-aware\n"), ZonedModel::HostAware);
        assert_eq!(parse_zoned_model("none\n"), ZonedModel::None);
        assert_eq!(
            parse_zoned_model("weird"),
            ZonedModel::Other("weird".into())
        );
        assert_eq!(parse_sysfs_u64("131072\n"), Some(131072));
        assert_eq!(parse_sysfs_u64(" 14 "), Some(14));
        assert_eq!(parse_sysfs_u64("x"), None);
        assert_eq!(parse_sysfs_u64(""), None);
        assert_eq!(
            parse_active_scheduler("[mq-deadline] kyber bfq none\n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(
            parse_active_scheduler("mq-deadline kyber [none]").as_deref(),
            Some("none")
        );
        assert_eq!(parse_active_scheduler("none\n").as_deref(), Some("none"));
        assert_eq!(parse_active_scheduler("a b"), None);
        assert_eq!(parse_active_scheduler("[broken"), None);
    }

    #[test]
    fn kernel_versions() {
        assert_eq!(parse_kernel_version("6.1.0-27-amd64\n"), Some((6, 1)));
        assert_eq!(parse_kernel_version("6.10.2"), Some((6, 10)));
        assert_eq!(parse_kernel_version("5.15.0+"), Some((5, 15)));
        assert_eq!(parse_kernel_version("6.9-rc1"), Some((6, 9)));
        assert_eq!(parse_kernel_version("garbage"), None);
        assert!(needs_mq_deadline(Some((6, 1))));
        assert!(needs_mq_deadline(Some((6, 9))));
        assert!(!needs_mq_deadline(Some((6, 10))));
        assert!(!needs_mq_deadline(Some((7, 0))));
        assert!(needs_mq_deadline(None));
    }

    #[test]
    fn alignment_math() {
        assert_eq!(aligned_span(0, 4096, 4096), (0, 4096));
        assert_eq!(aligned_span(1, 1, 4096), (0, 4096));
        assert_eq!(aligned_span(4095, 2, 4096), (0, 8192));
        assert_eq!(aligned_span(8192, 0, 4096), (8192, 8192));
        assert_eq!(aligned_span(5000, 10000, 512), (4608, 15360));
        for align in [512usize, 4096, 65536] {
            for len in [0usize, 1, 511, 4096, 12345] {
                let b = AlignedBuf::zeroed(len, align).unwrap();
                assert_eq!(b.as_slice().len(), len);
                assert_eq!(b.as_slice().as_ptr().align_offset(align), 0);
                assert!(b.as_slice().iter().all(|&x| x == 0));
            }
        }
        let b = AlignedBuf::zeroed(8192, 4096).unwrap();
        assert!(is_direct_ready(b.as_slice().as_ptr(), 8192, 4096, 4096));
        assert!(!is_direct_ready(b.as_slice().as_ptr(), 8000, 4096, 4096));
        assert!(!is_direct_ready(b.as_slice().as_ptr(), 8192, 100, 4096));
        assert!(!is_direct_ready(
            b.as_slice()[1..].as_ptr(),
            4096,
            4096,
            4096
        ));
    }

    #[test]
    fn errno_classes() {
        let raw = |e: Errno| Some(e.raw_os_error());
        assert_eq!(
            classify_errno(raw(Errno::OVERFLOW)),
            ErrnoClass::TooManyActive
        );
        assert_eq!(
            classify_errno(raw(Errno::TOOMANYREFS)),
            ErrnoClass::TooManyOpen
        );
        assert_eq!(classify_errno(raw(Errno::IO)), ErrnoClass::Recheck);
        assert_eq!(classify_errno(raw(Errno::INVAL)), ErrnoClass::Other);
        assert_eq!(classify_errno(None), ErrnoClass::Other);
    }

    #[test]
    fn eio_on_write_is_explained_by_the_fresh_report() {
        let cap = 1 << 20;
        let at = |state, wp| ZoneCache { state, wp };
        let kind = |e: Option<ZnsError>| e.map(|e| e.kind());
        let f = |c| explain_write_failure(3, c, 8192, 4096, cap);
        assert_eq!(kind(f(at(ZoneState::Offline, 0))), Some("offline"));
        assert_eq!(kind(f(at(ZoneState::ReadOnly, 0))), Some("read_only"));
        assert_eq!(kind(f(at(ZoneState::Full, cap))), Some("zone_full"));
        assert_eq!(
            kind(f(at(ZoneState::ImplicitOpen, 4096))),
            Some("invalid_write_position")
        );
        assert_eq!(kind(f(at(ZoneState::ImplicitOpen, 8192))), None);
        assert_eq!(
            kind(explain_write_failure(
                3,
                at(ZoneState::Closed, cap - 4096),
                cap - 4096,
                8192,
                cap
            )),
            Some("boundary_crossed")
        );
    }

    #[test]
    fn zone_op_rules_match_the_emulator() {
        use ZoneOp::*;
        use ZoneState::*;
        let kind = |op, st| zone_op_rule(0, op, st).map(|e| e.kind());
        for op in [Open, Close, Finish, Reset] {
            assert_eq!(kind(op, Offline), Some("offline"));
            assert_eq!(kind(op, ReadOnly), Some("read_only"));
        }
        assert_eq!(kind(Open, Full), Some("invalid_transition"));
        assert_eq!(kind(Close, Empty), Some("invalid_transition"));
        assert_eq!(kind(Close, Full), Some("invalid_transition"));
        for st in [Empty, ImplicitOpen, ExplicitOpen, Closed] {
            assert_eq!(kind(Open, st), None);
        }
        for st in [ImplicitOpen, ExplicitOpen, Closed] {
            assert_eq!(kind(Close, st), None);
        }
        for st in [Empty, ImplicitOpen, ExplicitOpen, Closed, Full] {
            assert_eq!(kind(Finish, st), None);
            assert_eq!(kind(Reset, st), None);
        }
    }

    #[test]
    fn cache_packing_round_trips() {
        for state in [
            ZoneState::Empty,
            ZoneState::ImplicitOpen,
            ZoneState::ExplicitOpen,
            ZoneState::Closed,
            ZoneState::Full,
            ZoneState::ReadOnly,
            ZoneState::Offline,
        ] {
            for wp in [0u64, 4096, (62 << 20), (1 << 40)] {
                let c = ZoneCache { state, wp };
                assert_eq!(ZoneCache::unpack(c.pack()), Some(c));
            }
        }
    }

    #[test]
    fn open_refuses_what_is_not_a_zoned_block_device() {
        let dir = std::env::temp_dir();
        let e = ZbdDevice::open(&dir).unwrap_err();
        assert_eq!(e.kind(), "unsupported", "{e}");
        let e = ZbdDevice::open(Path::new("/nonexistent/zbd")).unwrap_err();
        assert_eq!(e.kind(), "io", "{e}");
    }
}
