//! From a device spec to a mounted file system: the device and file-system steps of
//! [`crate::Db::open`], creating and formatting what is missing when the options allow it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zkv_engine::version::VersionSet;
use zkv_zns::{DeviceSpec, FileDevice, MemDevice, ZonedDevice};
use zkv_zonefs::fs::ZoneFs;
use zkv_zonefs::meta::{self, MetaError};

use crate::error::{Error, Result};
use crate::options::DbOptions;

/// A mounted file system, and the image created for it if there was none: a caller whose
/// next step fails removes it again, so that a failed open leaves nothing behind.
pub(crate) struct Mounted {
    pub fs: Arc<ZoneFs>,
    pub created: Option<PathBuf>,
}

/// Opens the device `spec` names and mounts its file system, or makes what is missing:
/// an in-memory device, a `file:` image (with `opts.geometry`), a file system (with
/// `opts.fs`) on a device that holds none. A device whose metadata is damaged is never
/// formatted over: its mount fails and says why.
pub(crate) fn mount(spec: &DeviceSpec, opts: &DbOptions) -> Result<Mounted> {
    let device = spec.to_string();
    let dev_err = |e| Error::device_error(&device, e);
    match spec {
        DeviceSpec::Mem => {
            if !opts.create_if_missing {
                return Err(Error::not_found(
                    &device,
                    "an in-memory device always starts empty",
                ));
            }
            let dev = MemDevice::new(opts.geometry).map_err(dev_err)?;
            let fs = format(Arc::new(dev), opts, &device)?;
            Ok(Mounted { fs, created: None })
        }
        DeviceSpec::File(path) if is_missing(path) => {
            if !opts.create_if_missing {
                return Err(Error::not_found(&device, "the image does not exist"));
            }
            let fs = new_image(path, opts, &device)?;
            Ok(Mounted {
                fs,
                created: Some(path.clone()),
            })
        }
        // An existing image, a zoned block device, or a kind of device the device layer
        // added: `open_device` opens whatever it can name.
        _ => {
            // The geometry only shapes `mem` devices; the others have their own.
            let dev = zkv_zns::open_device(spec, opts.geometry).map_err(dev_err)?;
            let fs = mount_existing(dev, opts, &device)?;
            Ok(Mounted { fs, created: None })
        }
    }
}

/// Whether nothing is at `path`. Anything else, even what cannot be looked at, is opened as
/// an image, whose open then says what is wrong.
fn is_missing(path: &Path) -> bool {
    matches!(path.symlink_metadata(), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Creates the image and formats it; removes it again if either step fails.
fn new_image(path: &Path, opts: &DbOptions, device: &str) -> Result<Arc<ZoneFs>> {
    // The device layer removes a half-made image itself when creating fails.
    let dev =
        FileDevice::create(path, opts.geometry).map_err(|e| Error::device_error(device, e))?;
    let made = dev
        .sync()
        .map_err(|e| Error::device_error(device, e))
        .and_then(|()| format(Arc::new(dev), opts, device));
    if made.is_err() {
        let _ = std::fs::remove_file(path);
    }
    made
}

/// Mounts the file system on an existing device, or formats one if it holds none and the
/// options allow it.
fn mount_existing(
    dev: Arc<dyn ZonedDevice>,
    opts: &DbOptions,
    device: &str,
) -> Result<Arc<ZoneFs>> {
    if let Err(MetaError::NotFormatted) = meta::probe(dev.as_ref()) {
        if !opts.create_if_missing {
            return Err(Error::not_found(
                device,
                "the device holds no zkv file system",
            ));
        }
        return format(dev, opts, device);
    }
    if opts.error_if_exists && holds_database(&dev) {
        return Err(Error::AlreadyExists {
            device: device.to_string(),
        });
    }
    let fs = match &opts.placement {
        Some(policy) => ZoneFs::mount_stored_with_policy(dev, Box::new(Arc::clone(policy))),
        None => ZoneFs::mount_stored(dev),
    };
    Ok(Arc::new(fs.map_err(|e| Error::fs(device, e))?))
}

/// Whether the file system on `dev` holds a database, looked at through a read-only mount,
/// which writes nothing. A file system that cannot be mounted is left for the read-write
/// mount to report.
fn holds_database(dev: &Arc<dyn ZonedDevice>) -> bool {
    ZoneFs::mount_read_only(Arc::clone(dev)).is_ok_and(|fs| VersionSet::exists(&fs))
}

fn format(dev: Arc<dyn ZonedDevice>, opts: &DbOptions, device: &str) -> Result<Arc<ZoneFs>> {
    let fs = match &opts.placement {
        Some(policy) => {
            let fs_opts = opts.fs.clone().with_placement(policy.name());
            ZoneFs::format_with_policy(dev, fs_opts, Box::new(Arc::clone(policy)))
        }
        None => ZoneFs::format(dev, opts.fs.clone()),
    };
    Ok(Arc::new(fs.map_err(|e| Error::fs(device, e))?))
}
