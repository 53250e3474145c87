//! Device specs as the command line writes them: `mem`, `file:PATH`, `zbd:/dev/DEV`.

use std::path::PathBuf;
use std::sync::Arc;

use crate::device::ZonedDevice;
use crate::emu::{FileDevice, MemDevice};
use crate::error::{Result, ZnsError};
use crate::types::Geometry;

/// A device as named on the command line; parse one with `str::parse`, open it with
/// [`open_device`]. Displays as it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceSpec {
    /// `mem`: an in-memory emulated device, empty at every open.
    Mem,
    /// `file:PATH`: an emulated device in one image file.
    File(PathBuf),
    /// `zbd:/dev/DEV`: a Linux zoned block device.
    Zbd(PathBuf),
}

impl std::str::FromStr for DeviceSpec {
    type Err = ZnsError;

    fn from_str(s: &str) -> Result<DeviceSpec> {
        let bad = |reason: &str| ZnsError::BadSpec {
            spec: s.to_string(),
            reason: reason.to_string(),
        };
        if s == "mem" {
            return Ok(DeviceSpec::Mem);
        }
        let (kind, path) = s
            .split_once(':')
            .ok_or_else(|| bad("expected mem, file:PATH or zbd:/dev/DEV"))?;
        if path.is_empty() {
            return Err(bad("the path is empty"));
        }
        match kind {
            "file" => Ok(DeviceSpec::File(path.into())),
            "zbd" => Ok(DeviceSpec::Zbd(path.into())),
            _ => Err(bad("expected mem, file:PATH or zbd:/dev/DEV")),
        }
    }
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceSpec::Mem => f.write_str("mem"),
            DeviceSpec::File(p) => write!(f, "file:{}", p.display()),
            DeviceSpec::Zbd(p) => write!(f, "zbd:{}", p.display()),
        }
    }
}

/// Opens a device. `geometry` is used to create a `mem` device (which always starts empty);
/// `file:` and `zbd:` devices carry their own geometry, so it is ignored for them.
pub fn open_device(spec: &DeviceSpec, geometry: Geometry) -> Result<Arc<dyn ZonedDevice>> {
    match spec {
        DeviceSpec::Mem => Ok(Arc::new(MemDevice::new(geometry)?)),
        DeviceSpec::File(p) => Ok(Arc::new(FileDevice::open(p)?)),
        DeviceSpec::Zbd(p) => open_zbd(p),
    }
}

#[cfg(target_os = "linux")]
fn open_zbd(path: &std::path::Path) -> Result<Arc<dyn ZonedDevice>> {
    Ok(Arc::new(crate::zbd::ZbdDevice::open(path)?))
}

#[cfg(not(target_os = "linux"))]
fn open_zbd(path: &std::path::Path) -> Result<Arc<dyn ZonedDevice>> {
    Err(ZnsError::Unsupported(format!(
        "{}: zoned block devices are supported on Linux only",
        path.display()
    )))
}
