//! `zkv mkfs`: format a device with an empty zkv file system (metadata log + data zones).
//!
//! `file:PATH` that does not exist yet is created first, with the geometry flags of
//! `zkv zone create`; an existing image or a zoned block device keeps its geometry. A device
//! that already holds a zkv file system is refused unless `--force` is given.

use std::path::Path;
use std::sync::Arc;

use clap::Args;
use zns::{DeviceSpec, FileDevice, ZoneState, ZonedDevice};
use zonefs::fs::{FsOptions, ZoneFs};
use zonefs::meta::DEFAULT_META_ZONES;

use super::device::{open_persistent, parse_device, refuse_mem, Access};
use super::error::{CliError, CliResult};
use super::fsview::{fs_error, probe, FsView};
use super::geometry::{create_image, describe, GeometryArgs};
use super::size::format_size;
use super::Out;

const MKFS_EXAMPLES: &str = "\
Examples:
  zkv mkfs --device file:/tmp/zns.img --zones 64 --zone-size 16MiB
  zkv mkfs --device file:/tmp/zns.img --force          # reformat an existing image
  zkv mkfs --device zbd:/dev/nvme0n2 --meta-zones 3

Geometry flags apply only when the image does not exist yet. Reserved zones and the
placement policy are chosen when the file system is mounted, not here.";

#[derive(Debug, Args)]
#[command(after_help = MKFS_EXAMPLES)]
pub struct MkfsArgs {
    /// The device: file:PATH (created when it does not exist) or zbd:/dev/DEV
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    #[command(flatten)]
    geometry: GeometryArgs,

    /// Zones at the start of the device that hold the metadata log (at least 2)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_META_ZONES, allow_negative_numbers = true)]
    meta_zones: u32,

    /// Format even if the device already holds a zkv file system (its files are lost)
    #[arg(long)]
    force: bool,
}

pub fn run(a: MkfsArgs) -> CliResult {
    let mut out = Out::new();
    let opts = FsOptions::default().with_meta_zones(a.meta_zones);
    let device = a.device.to_string();
    match &a.device {
        DeviceSpec::Mem => return Err(refuse_mem()),
        DeviceSpec::File(path) => match path.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                new_image(path, &a, opts, &mut out)?
            }
            _ => {
                let dev = FileDevice::open(path)?;
                a.geometry.check_matches(&device, &dev.geometry())?;
                format_existing(Arc::new(dev), &device, opts, a.force, &mut out)?;
            }
        },
        DeviceSpec::Zbd(_) => {
            a.geometry.refuse(&device)?;
            let dev = open_persistent(&a.device, Access::ReadWrite)?;
            format_existing(dev, &device, opts, a.force, &mut out)?;
        }
    }
    out.flush()
}

/// Creates the image, then formats it; a format that fails removes the new image again, so
/// that a refused command leaves nothing behind.
fn new_image(path: &Path, a: &MkfsArgs, opts: FsOptions, out: &mut Out) -> CliResult {
    let geo = a.geometry.geometry(&format!(
        ": {} does not exist yet, and mkfs needs a geometry to create it \
         (see 'zkv mkfs --help')",
        path.display()
    ))?;
    let dev = create_image(path, geo, "mkfs")?;
    let created = describe(&dev);
    let dev: Arc<dyn ZonedDevice> = Arc::new(dev);
    match ZoneFs::format(dev, opts) {
        Ok(fs) => {
            let summary = summary(&fs);
            drop(fs);
            out.line(format!("created {created}"))?;
            out.line(summary)
        }
        Err(e) => {
            // The image is this command's own creation: take it back.
            let _ = std::fs::remove_file(path);
            Err(fs_error(&format!("file:{}", path.display()), e))
        }
    }
}

fn format_existing(
    dev: Arc<dyn ZonedDevice>,
    device: &str,
    opts: FsOptions,
    force: bool,
    out: &mut Out,
) -> CliResult {
    let found = probe(dev.as_ref())?;
    if found.looks_formatted() && !force {
        return Err(CliError::invalid(format!(
            "{device} already holds a zkv file system ({}); formatting would erase it: \
             add --force to format it anyway",
            what_is_there(&dev, device, &found)
        )));
    }
    let geo = dev.geometry();
    let written = dev
        .report_zones(0, geo.zones)?
        .iter()
        .filter(|z| !matches!(z.state, ZoneState::Empty | ZoneState::Offline))
        .count();
    let fs = ZoneFs::format(Arc::clone(&dev), opts).map_err(|e| fs_error(device, e))?;
    if written > 0 {
        out.line(format!(
            "erased {written} written zone{}",
            if written == 1 { "" } else { "s" }
        ))?;
    }
    out.line(summary(&fs))
}

/// A short description of the file system found, for the refusal message.
fn what_is_there(dev: &Arc<dyn ZonedDevice>, device: &str, found: &super::fsview::Probe) -> String {
    match FsView::open(Arc::clone(dev), device, 0) {
        Ok(view) => {
            let files = view.state.file_count();
            let bytes: u64 = view.state.files().map(|(_, m)| m.size).sum();
            format!(
                "{files} file{}, {} of data",
                if files == 1 { "" } else { "s" },
                format_size(bytes)
            )
        }
        Err(e) => match &found.damaged {
            Some((zone, why)) if found.superblock.is_none() => {
                format!("damaged: metadata zone {zone}: {why}")
            }
            _ => format!("its metadata cannot be read: {e}"),
        },
    }
}

/// `formatted DEVICE: ...` once the file system is written.
fn summary(fs: &ZoneFs) -> String {
    let s = fs.stats();
    format!(
        "formatted {}: {} metadata zones, {} data zones, {} usable",
        fs.device().describe(),
        fs.options().meta_zones,
        s.data_zones,
        format_size(s.usable_bytes),
    )
}
