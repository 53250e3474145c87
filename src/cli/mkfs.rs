//! `zkv mkfs`: format a device with an empty zkv file system (metadata log + data zones)
//! that records its options (reserved zones, placement, finish threshold, zone cleaning).
//!
//! `file:PATH` that does not exist yet is created first, with the geometry flags of
//! `zkv zone create`; an existing image or a zoned block device keeps its geometry. A device
//! that already holds a zkv file system is refused unless `--force` is given.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::builder::PossibleValuesParser;
use clap::Args;
use zkv_zns::{DeviceSpec, ZoneState, ZonedDevice};
use zkv_zonefs::fs::{CleaningMode, FsOptions, ZoneFs, DEFAULT_GC_START, DEFAULT_GC_STOP};
use zkv_zonefs::meta::{self, MetaError, ProbeInfo, DEFAULT_META_ZONES};
use zkv_zonefs::placement::{PolicyEntry, POLICY_TABLE};

use super::device::{open_persistent, parse_device, refuse_mem, refuse_unknown, Access, WaitArg};
use super::error::{CliError, CliResult};
use super::fsview::{describe_options, fs_error};
use super::geometry::{create_image, describe, GeometryArgs};
use super::size::format_size;
use super::Out;

const MKFS_EXAMPLES: &str = "\
Examples:
  zkv mkfs --device file:/tmp/zns.img --zones 64 --zone-size 16MiB
  zkv mkfs --device file:/tmp/zns.img --force          # reformat an existing image
  zkv mkfs --device zbd:/dev/nvme0n2 --meta-zones 3
  zkv mkfs --device file:/tmp/zns.img --force --reserved-zones 2 --gc-start 15 --gc-stop 20

Geometry flags apply only when the image does not exist yet. The file system options
(reserved zones, placement, finish threshold, zone cleaning) are recorded in the metadata:
mounts use them unless given others, which are then recorded instead.";

/// A `--placement`-like flag's values: the names of `table`, each with what it does (long
/// help lists them).
pub fn policy_parser(table: &'static [PolicyEntry]) -> PossibleValuesParser {
    PossibleValuesParser::new(
        (table.iter()).map(|e| clap::builder::PossibleValue::new(e.name).help(e.about)),
    )
}

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

    #[command(flatten)]
    fs: FsArgs,

    /// Before a new zone is opened, finish idle zones with less than this percent of their
    /// capacity left (default: never)
    #[arg(long, value_name = "PERCENT")]
    finish_threshold: Option<u8>,

    /// Format even if the device already holds a zkv file system (its files are lost)
    #[arg(long)]
    force: bool,

    #[command(flatten)]
    wait: WaitArg,
}

/// The file system options a new file system is made with, shared by `zkv mkfs` (which
/// records them) and `zkv bench` (which formats its device with them).
#[derive(Debug, Args)]
pub struct FsArgs {
    /// Data zones kept as over-provisioning: never given to files, room for the zone cleaner
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub reserved_zones: u32,

    /// Placement policy of the file layer
    #[arg(long, value_name = "POLICY", default_value = "liza",
          value_parser = policy_parser(POLICY_TABLE))]
    pub placement: String,

    /// Zone cleaning starts when free space drops below this percent of the usable space
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_GC_START)]
    pub gc_start: u8,

    /// A zone cleaning run stops once free space reaches this percent of the usable space
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_GC_STOP)]
    pub gc_stop: u8,

    /// What the zone cleaner does with valid data: copy, compact or compensate [default:
    /// compensate with --placement prophet, else copy]
    #[arg(long, value_name = "MODE", value_parser = parse_gc_mode)]
    pub gc_mode: Option<CleaningMode>,
}

pub fn parse_gc_mode(s: &str) -> Result<CleaningMode, String> {
    CleaningMode::from_name(s).ok_or_else(|| {
        let known: Vec<&str> = CleaningMode::ALL.iter().map(|m| m.name()).collect();
        format!("unknown cleaning mode (known: {})", known.join(", "))
    })
}

/// The cleaning mode a placement runs with unless `--gc-mode` says otherwise: Prophet's
/// full scheme compensates, every other placement copies (as in the papers).
pub fn default_gc_mode(placement: &str) -> CleaningMode {
    match placement {
        "prophet" => CleaningMode::Compensate,
        _ => CleaningMode::Copy,
    }
}

impl FsArgs {
    /// The cleaning mode: `--gc-mode`, or the placement's default.
    pub fn cleaning_mode(&self) -> CleaningMode {
        self.gc_mode
            .unwrap_or_else(|| default_gc_mode(&self.placement))
    }

    /// The options the flags give, with `meta_zones` metadata zones.
    pub fn options(&self, meta_zones: u32) -> FsOptions {
        FsOptions::default()
            .with_meta_zones(meta_zones)
            .with_reserved_zones(self.reserved_zones)
            .with_placement(self.placement.clone())
            .with_gc(self.gc_start, self.gc_stop)
            .with_gc_mode(self.cleaning_mode())
    }
}

impl MkfsArgs {
    /// The options the new file system records; the file layer checks them against the
    /// device before anything is written.
    fn options(&self) -> FsOptions {
        let fs = self.fs.options(self.meta_zones);
        fs.with_finish_threshold(self.finish_threshold)
    }
}

pub fn run(a: MkfsArgs) -> CliResult {
    let mut out = Out::new();
    format_device(
        &a.device,
        &a.geometry,
        a.options(),
        a.force,
        a.wait.wait,
        &mut out,
    )?;
    out.flush()
}

/// A device formatted by [`format_device`].
pub struct Formatted {
    pub fs: ZoneFs,
    /// The image created for it: a caller whose next step fails removes it again, so that
    /// a failed command leaves nothing behind.
    pub created: Option<PathBuf>,
}

/// Formats `spec` with `opts` as `zkv mkfs` does, printing what mkfs prints: a `file:`
/// image that does not exist yet is created with `geometry`; an existing device keeps its
/// own (flags may repeat it, not contradict it) and is refused when it holds a zkv file
/// system, unless `force`. An existing device held by another command is waited for up to
/// `wait`.
pub fn format_device(
    spec: &DeviceSpec,
    geometry: &GeometryArgs,
    opts: FsOptions,
    force: bool,
    wait: Duration,
    out: &mut Out,
) -> CliResult<Formatted> {
    let device = spec.to_string();
    let existing = |fs| Formatted { fs, created: None };
    match spec {
        DeviceSpec::Mem => Err(refuse_mem()),
        DeviceSpec::File(path) => match path.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let fs = new_image(path, geometry, opts, out)?;
                Ok(Formatted {
                    fs,
                    created: Some(path.clone()),
                })
            }
            _ => {
                let dev = open_persistent(spec, Access::ReadWrite, wait)?;
                geometry.check_matches(&device, &dev.geometry())?;
                format_existing(dev, &device, opts, force, out).map(existing)
            }
        },
        DeviceSpec::Zbd(_) => {
            geometry.refuse(&device)?;
            let dev = open_persistent(spec, Access::ReadWrite, wait)?;
            format_existing(dev, &device, opts, force, out).map(existing)
        }
        _ => Err(refuse_unknown(spec)),
    }
}

/// Creates the image, then formats it; a format that fails removes the new image again, so
/// that a refused command leaves nothing behind.
fn new_image(
    path: &Path,
    geometry: &GeometryArgs,
    opts: FsOptions,
    out: &mut Out,
) -> CliResult<ZoneFs> {
    let geo = geometry.geometry(&format!(
        ": {} does not exist yet, and mkfs needs a geometry to create it \
         (see 'zkv mkfs --help')",
        path.display()
    ))?;
    let dev = create_image(path, geo, "mkfs")?;
    let created = describe(&dev);
    let dev: Arc<dyn ZonedDevice> = Arc::new(dev);
    match ZoneFs::format(dev, opts) {
        Ok(fs) => {
            out.line(format!("created {created}"))?;
            summary(&fs).iter().try_for_each(|l| out.line(l))?;
            Ok(fs)
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
) -> CliResult<ZoneFs> {
    let found = meta::probe(dev.as_ref());
    let formatted = match &found {
        Err(MetaError::NotFormatted) => false,
        Ok(_) | Err(MetaError::Corrupt { .. }) => true,
        Err(e) => return Err(CliError::invalid(format!("{device}: {e}"))),
    };
    if formatted && !force {
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
    summary(&fs).iter().try_for_each(|l| out.line(l))?;
    Ok(fs)
}

/// A short description of the file system found, for the refusal message. It is read
/// through a read-only mount, which never writes.
fn what_is_there(
    dev: &Arc<dyn ZonedDevice>,
    device: &str,
    found: &Result<ProbeInfo, MetaError>,
) -> String {
    match ZoneFs::mount_read_only(Arc::clone(dev)) {
        Ok(fs) => {
            let files = fs.list();
            let bytes: u64 = files.iter().map(|f| f.size).sum();
            format!(
                "{} file{}, {} of data",
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                format_size(bytes)
            )
        }
        Err(e) => match found {
            Err(MetaError::Corrupt { zone, reason, .. }) => {
                format!("damaged: metadata zone {zone}: {reason}")
            }
            _ => format!("its metadata cannot be read: {}", fs_error(device, e)),
        },
    }
}

/// `formatted DEVICE: ...` and the recorded options, once the file system is written.
fn summary(fs: &ZoneFs) -> [String; 2] {
    let s = fs.stats();
    let formatted = format!(
        "formatted {}: {} metadata zones, {} data zones, {} usable",
        fs.device().describe(),
        fs.options().meta_zones,
        s.data_zones,
        format_size(s.usable_bytes),
    );
    [formatted, describe_options(fs.options())]
}
