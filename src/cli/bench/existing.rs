//! `--use-existing-db` (and `--ycsb-phase run`, which implies it): a run on the database
//! an earlier run left on an image, opened as it is, instead of a new one. The image keeps
//! its geometry and the file system the options recorded on it; the engine options come
//! from the flags, as for a new store (RocksDB records none that an open must keep).

use std::path::Path;
use std::sync::Arc;

use zkv_engine::version::VersionSet;
use zkv_zns::{DeviceSpec, FileDevice, ZonedDevice};
use zkv_zonefs::fs::{FsError, ZoneFs};
use zkv_zonefs::meta::MetaError;

use super::ycsb::PropertiesFile;
use super::{timed, BenchArgs, Plan, YcsbPhase};
use crate::cli::device::refuse_unknown;
use crate::cli::error::{CliError, CliResult};
use crate::cli::fsview::fs_error;

/// The flags that shape a new image (clap ids): the image has its own geometry and file
/// system options.
const IMAGE_FLAGS: [&str; 12] = [
    "zones",
    "zone_size",
    "zone_capacity",
    "max_open",
    "max_active",
    "block_size",
    "reserved_zones",
    "placement",
    "gc_start",
    "gc_stop",
    "gc_mode",
    "blob_placement",
];

impl BenchArgs {
    /// Whether the run opens the database on the image instead of making a new one.
    pub(super) fn existing_db(&self) -> bool {
        self.use_existing_db || self.ycsb_phase == Some(YcsbPhase::Run)
    }

    /// The flag that asked for the existing database, for messages.
    fn existing_flag(&self) -> &'static str {
        if self.use_existing_db {
            "--use-existing-db"
        } else {
            "--ycsb-phase run"
        }
    }

    /// What can be checked before the image is opened: an image path that exists, no flag
    /// for a new image, and `--verify` only for a run that writes.
    pub(super) fn check_existing(&self, file: Option<&PropertiesFile>) -> CliResult {
        let flag = self.existing_flag();
        let path = match &self.device {
            DeviceSpec::File(path) => path,
            DeviceSpec::Mem => {
                return Err(CliError::invalid(format!(
                    "{flag} runs on the database an earlier run left on an image: give \
                     --device file:PATH (--device mem starts empty)"
                )))
            }
            DeviceSpec::Zbd(_) => {
                return Err(CliError::invalid(format!(
                    "--device {}: zkv bench runs on mem or a file: image so far",
                    self.device
                )))
            }
            _ => return Err(refuse_unknown(&self.device)),
        };
        if path.symlink_metadata().is_err() {
            return Err(CliError::invalid(format!(
                "{flag}: no image at {} (a zkv bench run with --device file:{} and without \
                 {flag} creates one)",
                path.display(),
                path.display()
            )));
        }
        if let Some(id) = IMAGE_FLAGS.iter().find(|id| self.given.has(id)) {
            return Err(CliError::invalid(format!(
                "--{}: {flag} runs on the image's own geometry and file system options; \
                 give it to the run that creates the image",
                id.replace('_', "-")
            )));
        }
        let writes = self.workload.0.iter().any(|w| self.writes(w, file));
        if self.verify && !writes {
            return Err(CliError::invalid(format!(
                "--verify with {flag} checks the keys this run writes or deletes (what the \
                 image held before is not known to it), and --workload {} writes none",
                self.workload_names()
            )));
        }
        Ok(())
    }

    /// Mounts the file system on the image with the options it records and checks that it
    /// holds a database; the plan takes the image's geometry and those options, for the
    /// report.
    pub(super) fn mount_existing(&self, path: &Path, plan: &mut Plan) -> CliResult<Arc<ZoneFs>> {
        let flag = self.existing_flag();
        let device = self.device.to_string();
        let image =
            FileDevice::open(path).map_err(|e| CliError::invalid(format!("{flag}: {e}")))?;
        let geometry = image.geometry();
        let fs = ZoneFs::mount_stored(timed(image, self.timing.model(&geometry)))
            .map_err(|e| mount_error(flag, &device, e))?;
        if !VersionSet::exists(&fs) {
            return Err(CliError::invalid(format!(
                "{flag}: no zkv database on {device} (its file system is empty: no run left \
                 a database on it)"
            )));
        }
        plan.geometry = geometry;
        plan.fs_options = fs.options().clone();
        Ok(Arc::new(fs))
    }
}

/// A failed mount of an existing image: no file system at all is said plainly, other
/// failures (damage) as every command says them.
fn mount_error(flag: &str, device: &str, e: FsError) -> CliError {
    match e {
        FsError::Meta {
            source: MetaError::NotFormatted,
            ..
        } => CliError::invalid(format!(
            "{flag}: no zkv file system on {device} (not an image a zkv bench run left)"
        )),
        e => fs_error(device, e),
    }
}
