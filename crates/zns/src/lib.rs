//! zkv's zoned block device layer.
//!
//! One trait, [`ZonedDevice`], with NVMe ZNS semantics, and three backends that obey it the
//! same way: an in-memory emulator ([`MemDevice`]), a persistent emulator in one image file
//! ([`FileDevice`]) and Linux zoned block devices (`zbd`). [`open_device`] builds one from a
//! spec string such as `mem`, `file:/tmp/zns.img` or `zbd:/dev/nvme0n1`.
//! The [`conformance`] suite checks that a backend follows the rules.

// Library code returns errors instead of panicking on I/O and decoding paths (no unwrap,
// expect or unchecked indexing); unit tests may panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

pub mod conformance;
mod device;
pub mod emu;
mod error;
pub mod fault;
mod spec;
pub mod timing;
mod types;
#[cfg(target_os = "linux")]
pub mod zbd;

pub use device::{Counters, DeviceStats, ZonedDevice};
pub use emu::{FileDevice, MemDevice};
pub use error::{Result, ZnsError};
pub use fault::{FaultControl, FaultOp, TearMode};
pub use spec::{open_device, DeviceSpec};
pub use types::{Geometry, IoCategory, ZoneInfo, ZoneOp, ZoneState, MAX_ZONES};
