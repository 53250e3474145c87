//! `--device` on the command line: parsing the spec and opening a device that outlives the
//! command (an image file or a zoned block device).

use std::sync::Arc;

use zns::{DeviceSpec, FileDevice, Geometry, ZnsError, ZonedDevice};

use super::error::{CliError, CliResult};

/// clap value parser for `--device mem|file:PATH|zbd:/dev/DEV`.
pub fn parse_device(s: &str) -> Result<DeviceSpec, ZnsError> {
    s.parse()
}

/// Whether a command changes the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// report, read: an image is opened read-only, so nothing on disk changes and other
    /// readers may share it.
    ReadOnly,
    ReadWrite,
}

/// Opens an existing persistent device: `file:PATH` (an image made by `zkv zone create`) or
/// `zbd:/dev/DEV`. `mem` is refused: a fresh in-memory device would vanish with the command.
pub fn open_persistent(spec: &DeviceSpec, access: Access) -> CliResult<Arc<dyn ZonedDevice>> {
    match spec {
        DeviceSpec::Mem => Err(refuse_mem()),
        DeviceSpec::File(path) if access == Access::ReadOnly => {
            Ok(Arc::new(FileDevice::open_read_only(path)?))
        }
        DeviceSpec::File(path) => Ok(Arc::new(FileDevice::open(path)?)),
        DeviceSpec::Zbd(_) => {
            // The geometry argument only shapes `mem` devices; a zoned block device has its
            // own. The backend's errors already say what is missing (not Linux, not a block
            // device, not zoned, no permission).
            let unused = Geometry::new(1, 4096);
            Ok(zns::open_device(spec, unused)?)
        }
    }
}

/// The error for `--device mem` where the device must persist.
pub fn refuse_mem() -> CliError {
    CliError::invalid(
        "--device mem: an in-memory device does not outlive the command, so there is \
         nothing to inspect or change; use --device file:PATH (see 'zkv zone create')",
    )
}
