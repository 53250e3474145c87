//! `zkv restore`: a backup written by `zkv backup` back onto a freshly formatted device.
//!
//! Every file of the backup is checked against the manifest (present, size, CRC32C) before
//! the device is touched, so a damaged or incomplete backup changes nothing. The device is
//! then formatted as `zkv mkfs` formats it (a new image takes the backup's geometry; an
//! existing file system is refused without `--force`), with the backup's options unless
//! flags override them, and each file is written back through the file layer under its own
//! name, with its kind, level and lifetime hint. The engine finds everything by name
//! (CURRENT names the manifest, which names the tables and logs by number), so the names
//! are what makes the restored database the same one. CURRENT is written last: a restore
//! cut short leaves no database to open.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use zkv_engine::version::CURRENT;
use zkv_zns::{DeviceSpec, Geometry};
use zkv_zonefs::fs::{CleaningMode, FsOptions, ZoneFs};
use zkv_zonefs::meta::StoredOptions;
use zkv_zonefs::placement::{Lifetime, PlacementHint, POLICY_TABLE};

use super::backup::{FileEntry, Manifest, CHUNK, FORMAT, MANIFEST, VERSION};
use super::device::parse_device;
use super::error::{CliError, CliResult};
use super::fsview::fs_error;
use super::geometry::GeometryArgs;
use super::mkfs::{default_gc_mode, format_device, parse_gc_mode, Formatted};
use super::size::format_size;
use super::Out;

const RESTORE_EXAMPLES: &str = "\
Examples:
  zkv restore --from /backups/zns-monday --device file:/tmp/copy.img
  zkv restore --from /backups/zns-monday --device file:/tmp/big.img --zones 64
  zkv restore --from /backups/zns-monday --device file:/tmp/zns.img --force

Every geometry and option flag defaults to the backup's (the source file system's), so
without flags the new image is shaped and set up as the original was. Geometry flags shape
a new image only, as for mkfs. Every file is checked against the backup's manifest before
the device is touched: a missing or damaged file changes nothing.";

#[derive(Debug, Args)]
#[command(after_help = RESTORE_EXAMPLES)]
// mkfs's geometry flags, whose defaults here are the backup's geometry.
#[command(
    mut_arg("zones", |a| a.help("Number of zones [default: the backup's]")),
    mut_arg("zone_size", |a| a.help("Zone size, a power of two [default: the backup's]")),
    mut_arg("zone_capacity", |a| a.help(
        "Writable bytes per zone [default: the backup's; with --zone-size, the zone size]"
    )),
    mut_arg("max_open", |a| a.help(
        "Maximum open zones, 0 = unlimited [default: the backup's; with --max-active only, \
         as for mkfs]"
    )),
    mut_arg("max_active", |a| a.help(
        "Maximum active zones, 0 = unlimited [default: the backup's; with --max-open only, \
         as for mkfs]"
    )),
    mut_arg("block_size", |a| a.help("Logical block size [default: the backup's]"))
)]
pub struct RestoreArgs {
    /// The backup directory, as 'zkv backup --to' wrote it
    #[arg(long, value_name = "DIR")]
    from: PathBuf,

    /// The device to restore to: file:PATH (created with the backup's geometry when it does
    /// not exist) or zbd:/dev/DEV; it is formatted first
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    #[command(flatten)]
    geometry: GeometryArgs,

    #[command(flatten)]
    options: OptionFlags,

    /// Format even if the device already holds a zkv file system (its files are lost)
    #[arg(long)]
    force: bool,
}

/// mkfs's file-system options, each defaulting to the backup's.
#[derive(Debug, Args)]
struct OptionFlags {
    /// Zones at the start of the device that hold the metadata log (at least 2)
    /// [default: the backup's]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    meta_zones: Option<u32>,

    /// Data zones kept as over-provisioning [default: the backup's]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    reserved_zones: Option<u32>,

    /// Placement policy of the file layer [default: the backup's]
    #[arg(long, value_name = "POLICY", value_parser = super::mkfs::policy_parser(POLICY_TABLE))]
    placement: Option<String>,

    /// Finish idle zones with less than this percent of their capacity left before a new
    /// zone is opened, or 'none' [default: the backup's]
    #[arg(long, value_name = "PERCENT", value_parser = parse_threshold)]
    finish_threshold: Option<Threshold>,

    /// Zone cleaning starts below this percent of free space [default: the backup's]
    #[arg(long, value_name = "PERCENT")]
    gc_start: Option<u8>,

    /// A zone cleaning run stops at this percent of free space [default: the backup's]
    #[arg(long, value_name = "PERCENT")]
    gc_stop: Option<u8>,

    /// What the zone cleaner does with valid data: copy, compact or compensate [default:
    /// the backup's; with --placement, that placement's default]
    #[arg(long, value_name = "MODE", value_parser = parse_gc_mode)]
    gc_mode: Option<CleaningMode>,
}

/// `--finish-threshold`: a percentage, or none.
#[derive(Clone, Copy, Debug)]
struct Threshold(Option<u8>);

fn parse_threshold(s: &str) -> Result<Threshold, String> {
    if s == "none" {
        return Ok(Threshold(None));
    }
    s.parse()
        .map(|p| Threshold(Some(p)))
        .map_err(|_| "not a percentage (0 to 255) or 'none'".to_string())
}

impl OptionFlags {
    /// The backup's options with the flags given instead.
    fn apply(&self, backup: FsOptions) -> FsOptions {
        let gc_mode = self
            .gc_mode
            .or_else(|| self.placement.as_deref().map(default_gc_mode))
            .unwrap_or(backup.gc_mode);
        FsOptions {
            meta_zones: self.meta_zones.unwrap_or(backup.meta_zones),
            reserved_zones: self.reserved_zones.unwrap_or(backup.reserved_zones),
            placement: self.placement.clone().unwrap_or(backup.placement),
            blob_placement: backup.blob_placement,
            finish_threshold: self
                .finish_threshold
                .map_or(backup.finish_threshold, |t| t.0),
            gc_start: self.gc_start.unwrap_or(backup.gc_start),
            gc_stop: self.gc_stop.unwrap_or(backup.gc_stop),
            gc_mode,
        }
    }
}

/// The geometry flags of a new image: those given, the backup's for the others. The zone
/// capacity follows a new zone size, and one open/active limit given lets mkfs derive the
/// other, so that a flag never clashes with a backup value it did not mention.
fn new_image_geometry(given: &GeometryArgs, backup: &Geometry) -> GeometryArgs {
    let limits_given = given.max_open.is_some() || given.max_active.is_some();
    let or_backup = |flag: Option<u32>, value: u32| {
        if limits_given {
            flag
        } else {
            Some(value)
        }
    };
    GeometryArgs {
        zones: given.zones.or(Some(backup.zones)),
        zone_size: given.zone_size.or(Some(backup.zone_size)),
        zone_capacity: given
            .zone_capacity
            .or_else(|| given.zone_size.is_none().then_some(backup.zone_capacity)),
        max_open: or_backup(given.max_open, backup.max_open),
        max_active: or_backup(given.max_active, backup.max_active),
        block_size: given.block_size.or(Some(u64::from(backup.block_size))),
    }
}

/// A backup directory whose manifest was read and checked.
struct Backup {
    dir: PathBuf,
    manifest: Manifest,
}

impl Backup {
    fn open(dir: &Path) -> CliResult<Backup> {
        if !dir.is_dir() {
            return Err(CliError::invalid(format!(
                "--from {}: not a directory (give the directory 'zkv backup --to' wrote)",
                dir.display()
            )));
        }
        let path = dir.join(MANIFEST);
        let text = match std::fs::read_to_string(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(CliError::invalid(format!(
                    "{}: no {MANIFEST}: not a zkv backup, or one that did not finish (the \
                     manifest is written last); nothing was restored",
                    dir.display()
                )))
            }
            read => read.map_err(|e| CliError::io(path.display().to_string(), e))?,
        };
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
            CliError::invalid(format!(
                "{}: not a zkv backup manifest: {e}",
                path.display()
            ))
        })?;
        let backup = Backup {
            dir: dir.to_path_buf(),
            manifest,
        };
        backup.check_manifest()?;
        Ok(backup)
    }

    fn damaged(&self, what: String) -> CliError {
        CliError::invalid(format!(
            "backup {}: {what}; nothing was restored",
            self.dir.display()
        ))
    }

    /// The format and version, and every entry: a name listed once, a known kind.
    fn check_manifest(&self) -> CliResult {
        let m = &self.manifest;
        if m.format != FORMAT {
            return Err(self.damaged(format!(
                "{MANIFEST} is not a zkv backup manifest (format '{}')",
                m.format
            )));
        }
        if m.version != VERSION {
            return Err(self.damaged(format!(
                "backup format version {} is not supported (this build reads version \
                 {VERSION})",
                m.version
            )));
        }
        let mut names = BTreeSet::new();
        for f in &m.files {
            if !names.insert(f.name.as_str()) {
                return Err(self.damaged(format!("{MANIFEST} lists '{}' twice", f.name)));
            }
            if f.file_kind().is_none() {
                return Err(self.damaged(format!(
                    "{MANIFEST} gives '{}' the unknown kind '{}'",
                    f.name, f.kind
                )));
            }
        }
        Ok(())
    }

    /// Checks every file's size and checksum against the manifest.
    fn verify(&self) -> CliResult {
        self.manifest
            .files
            .iter()
            .try_for_each(|f| self.verify_file(f))
    }

    fn verify_file(&self, f: &FileEntry) -> CliResult {
        let path = f.path(&self.dir);
        let mut file = match File::open(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(self.damaged(format!(
                    "'{}' is missing ({}): the backup is incomplete",
                    f.name,
                    path.display()
                )))
            }
            opened => opened.map_err(|e| CliError::io(path.display().to_string(), e))?,
        };
        let (size, crc) = checksum(&mut file, &path, |_| Ok(()))?;
        if size != f.size {
            return Err(self.damaged(format!(
                "'{}' ({}) holds {size} B, the manifest says {} B: the backup is damaged",
                f.name,
                path.display(),
                f.size
            )));
        }
        if crc != f.crc32c {
            return Err(self.damaged(format!(
                "'{}' ({}) has checksum {crc:#010x}, the manifest says {:#010x}: the backup \
                 is damaged",
                f.name,
                path.display(),
                f.crc32c
            )));
        }
        Ok(())
    }

    /// The options recorded in the backup, with the metadata zone count of its source.
    fn options(&self) -> CliResult<FsOptions> {
        let s = &self.manifest.source;
        let o = &s.options;
        let stored = StoredOptions {
            reserved_zones: o.reserved_zones,
            placement: o.placement.clone(),
            finish_threshold: o.finish_threshold,
            gc_start: o.gc_start,
            gc_stop: o.gc_stop,
            gc_mode: o.gc_mode.clone(),
        };
        FsOptions::from_stored(s.meta_zones, Some(&stored))
            .map_err(|e| self.damaged(format!("{MANIFEST}: {e}")))
    }
}

/// Reads `file` (at `path`) to its end in chunks, handing each to `sink`; returns its size
/// and CRC32C.
fn checksum(
    file: &mut File,
    path: &Path,
    mut sink: impl FnMut(&[u8]) -> CliResult,
) -> CliResult<(u64, u32)> {
    let mut buf = vec![0u8; CHUNK];
    let (mut size, mut crc) = (0u64, 0u32);
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok((size, crc)),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CliError::io(path.display().to_string(), e)),
        };
        let bytes = &buf[..n];
        crc = crc32c::crc32c_append(crc, bytes);
        size += n as u64;
        sink(bytes)?;
    }
}

pub fn run(a: RestoreArgs) -> CliResult {
    let backup = Backup::open(&a.from)?;
    backup.verify()?;
    let opts = a.options.apply(backup.options()?);
    let new_image = matches!(&a.device, DeviceSpec::File(path)
        if path.symlink_metadata().is_err_and(|e| e.kind() == io::ErrorKind::NotFound));
    let geometry = if new_image {
        new_image_geometry(&a.geometry, &backup.manifest.source.geometry)
    } else {
        a.geometry
    };
    let device = a.device.to_string();
    let mut out = Out::new();
    let formatted = format_device(
        &a.device,
        &geometry,
        opts,
        a.force,
        Duration::ZERO,
        &mut out,
    )?;
    if let Err(e) = restore_files(&formatted.fs, &backup, &device) {
        return Err(abandon(formatted, e, &device));
    }
    let bytes: u64 = backup.manifest.files.iter().map(|f| f.size).sum();
    let count = backup.manifest.files.len();
    out.line(format!(
        "restored {count} file{}, {} from {} to {device}; every checksum verified",
        if count == 1 { "" } else { "s" },
        format_size(bytes),
        backup.dir.display(),
    ))?;
    out.flush()
}

/// A restore that failed after the format: a new image is removed, an existing device is
/// left without a database. Returns the error to report.
fn abandon(formatted: Formatted, e: CliError, device: &str) -> CliError {
    // A CURRENT whose write failed may be there, empty or short: without it, what was
    // restored is no database at all rather than a damaged one.
    let _ = formatted.fs.delete(CURRENT);
    drop(formatted.fs);
    match formatted.created {
        Some(image) => {
            // The image is this command's own creation: take it back.
            let _ = std::fs::remove_file(&image);
            CliError::invalid(format!("{e} (the new image was removed)"))
        }
        None => CliError::invalid(format!(
            "{e} (the restore is incomplete: {device} holds no database; run the restore \
             again with --force)"
        )),
    }
}

/// Writes every file back, CURRENT last, and syncs the device.
fn restore_files(fs: &ZoneFs, backup: &Backup, device: &str) -> CliResult {
    let files = &backup.manifest.files;
    let (current, others): (Vec<&FileEntry>, Vec<&FileEntry>) =
        files.iter().partition(|f| f.name == CURRENT);
    for f in others.into_iter().chain(current) {
        restore_file(fs, backup, f, device)?;
    }
    fs.device().sync()?;
    Ok(())
}

/// Writes one file through the file layer with its kind, level and lifetime hint, and
/// checks the bytes written against the manifest again (the backup could change after it
/// was verified).
fn restore_file(fs: &ZoneFs, backup: &Backup, f: &FileEntry, device: &str) -> CliResult {
    let kind = f
        .file_kind()
        .ok_or_else(|| backup.damaged(format!("'{}' has the unknown kind '{}'", f.name, f.kind)))?;
    let hint = PlacementHint {
        level: f.level,
        lifetime: Lifetime::from_code(f.lifetime).unwrap_or_default(),
        size: f.size,
        ..PlacementHint::default()
    };
    let restoring =
        |e| CliError::invalid(format!("restoring '{}': {}", f.name, fs_error(device, e)));
    let mut writer = fs.create(&f.name, kind, hint).map_err(restoring)?;
    let path = f.path(&backup.dir);
    let mut file = File::open(&path).map_err(|e| CliError::io(path.display().to_string(), e))?;
    let (size, crc) = checksum(&mut file, &path, |bytes| {
        writer.append(bytes).map_err(restoring)
    })?;
    if (size, crc) != (f.size, f.crc32c) {
        return Err(backup.damaged(format!(
            "'{}' ({}) changed while it was restored",
            f.name,
            path.display()
        )));
    }
    writer.close().map_err(restoring)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup_geometry() -> Geometry {
        Geometry::new(16, 1 << 20)
            .with_capacity(768 << 10)
            .with_block_size(4096)
            .with_limits(6, 8)
    }

    #[test]
    fn a_new_image_takes_the_backups_geometry_unless_told_otherwise() {
        let geo = backup_geometry();
        let all = new_image_geometry(&GeometryArgs::default(), &geo);
        assert_eq!(all.geometry("").unwrap(), geo);

        let bigger = GeometryArgs {
            zones: Some(64),
            ..GeometryArgs::default()
        };
        let got = new_image_geometry(&bigger, &geo).geometry("").unwrap();
        assert_eq!(got, Geometry { zones: 64, ..geo });

        // A new zone size brings its own capacity; one limit lets mkfs derive the other.
        let other = GeometryArgs {
            zone_size: Some(2 << 20),
            max_open: Some(2),
            ..GeometryArgs::default()
        };
        let got = new_image_geometry(&other, &geo).geometry("").unwrap();
        assert_eq!((got.zone_size, got.zone_capacity), (2 << 20, 2 << 20));
        assert_eq!((got.max_open, got.max_active), (2, 14));
    }

    #[test]
    fn flags_override_the_backups_options() {
        let backup = FsOptions::default()
            .with_placement("prophet")
            .with_gc_mode(CleaningMode::Compensate)
            .with_finish_threshold(Some(10));
        let none = OptionFlags {
            meta_zones: None,
            reserved_zones: None,
            placement: None,
            finish_threshold: None,
            gc_start: None,
            gc_stop: None,
            gc_mode: None,
        };
        assert_eq!(none.apply(backup.clone()), backup);
        let liza = OptionFlags {
            placement: Some("liza".into()),
            finish_threshold: Some(Threshold(None)),
            reserved_zones: Some(2),
            ..none
        };
        let got = liza.apply(backup);
        assert_eq!(got.placement, "liza");
        assert_eq!(got.gc_mode, CleaningMode::Copy);
        assert_eq!(got.finish_threshold, None);
        assert_eq!(got.reserved_zones, 2);
    }

    #[test]
    fn thresholds_parse() {
        assert_eq!(parse_threshold("none").unwrap().0, None);
        assert_eq!(parse_threshold("30").unwrap().0, Some(30));
        assert!(parse_threshold("lots").is_err());
    }
}
