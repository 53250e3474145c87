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
//!
//! The code, one concern a file:
//! - `abi.rs`: the kernel's structures and ioctl numbers, with their layouts checked.
//! - `ioctl.rs`: the only unsafe code, one small function per ioctl shape.
//! - `sysfs.rs`: what sysfs and the kernel release say about the device's queue.
//! - `zone_cache.rs`: each zone's cached condition and write pointer.
//! - `report.rs`: zone reports, checked and converted to bytes.
//! - `errors.rs`: how a refused or failed command becomes a typed error.
//! - `direct_io.rs`: `O_DIRECT` reads and writes of any buffer and range.
//! - `device.rs`: [`ZbdDevice`]: opening the device and the [`ZonedDevice`] operations.

mod abi;
mod device;
mod direct_io;
mod errors;
mod ioctl;
mod report;
mod sysfs;
mod zone_cache;

#[cfg(doc)]
use crate::device::ZonedDevice;

pub use device::ZbdDevice;
