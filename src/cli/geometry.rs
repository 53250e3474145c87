//! The geometry flags of a new emulated image (`--zones`, `--zone-size`, ...) and creating
//! the image. Shared by `zkv zone create` (where `--zones` and `--zone-size` are required)
//! and `zkv mkfs` (where they are needed only when the image does not exist yet).

use std::path::Path;

use clap::Args;
use zkv_zns::{FileDevice, Geometry, ZonedDevice};

use super::error::{CliError, CliResult};
use super::size::{format_size, human_size, parse_positive_size};

/// More zones than this would make the in-memory zone table of an image unreasonably large.
const MAX_ZONES: u32 = 1 << 20;

/// Default open and active zone limits (ZN540-like, as `Geometry::new`).
const DEFAULT_LIMIT: u32 = 14;

/// Default logical block size.
const DEFAULT_BLOCK: u32 = 4096;

/// Flags describing the zones of a new image. Every field is optional here; `zone create`
/// makes `--zones` and `--zone-size` required on its own command.
#[derive(Debug, Default, Args)]
pub struct GeometryArgs {
    /// Number of zones
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub zones: Option<u32>,

    /// Zone size, a power of two (e.g. 1MiB, 64MiB)
    #[arg(long, value_name = "SIZE", value_parser = parse_positive_size, allow_hyphen_values = true)]
    pub zone_size: Option<u64>,

    /// Writable bytes per zone, a multiple of the block size, at most the zone size
    /// [default: the zone size]
    #[arg(long, value_name = "SIZE", value_parser = parse_positive_size, allow_hyphen_values = true)]
    pub zone_capacity: Option<u64>,

    /// Maximum open zones, 0 = unlimited [default: 14, or --max-active if that is lower]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_open: Option<u32>,

    /// Maximum active (open or closed) zones, 0 = unlimited [default: 14, or --max-open if
    /// that is higher]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_active: Option<u32>,

    /// Logical block size, a power of two of at least 512: writes are aligned to it
    /// [default: 4096]
    #[arg(long, value_name = "SIZE", value_parser = parse_positive_size, allow_hyphen_values = true)]
    pub block_size: Option<u64>,
}

impl GeometryArgs {
    /// The flags given, as they were written, for messages.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--zones", self.zones.is_some()),
            ("--zone-size", self.zone_size.is_some()),
            ("--zone-capacity", self.zone_capacity.is_some()),
            ("--max-open", self.max_open.is_some()),
            ("--max-active", self.max_active.is_some()),
            ("--block-size", self.block_size.is_some()),
        ]
        .into_iter()
        .filter(|(_, given)| *given)
        .map(|(flag, _)| flag)
        .collect()
    }

    /// The geometry the flags describe, with the defaults filled in, validated.
    /// `why` completes the error when `--zones` or `--zone-size` is absent.
    pub fn geometry(&self, why: &str) -> CliResult<Geometry> {
        let (Some(zones), Some(zone_size)) = (self.zones, self.zone_size) else {
            let absent = match (self.zones, self.zone_size) {
                (None, None) => "--zones and --zone-size are",
                (None, _) => "--zones is",
                _ => "--zone-size is",
            };
            return Err(CliError::invalid(format!("{absent} required{why}")));
        };
        if zones > MAX_ZONES {
            return Err(CliError::invalid(format!(
                "--zones {zones}: at most {MAX_ZONES} zones are supported"
            )));
        }
        let block_size = match self.block_size {
            None => DEFAULT_BLOCK,
            Some(b) => u32::try_from(b).map_err(|_| {
                CliError::invalid(format!(
                    "--block-size {}: too large for a block size",
                    format_size(b)
                ))
            })?,
        };
        let (max_open, max_active) = match (self.max_open, self.max_active) {
            (Some(open), Some(active)) => (open, active),
            (Some(open), None) => (open, open.max(DEFAULT_LIMIT)),
            (None, Some(active)) if active != 0 => (active.min(DEFAULT_LIMIT), active),
            (None, _) => (DEFAULT_LIMIT, self.max_active.unwrap_or(DEFAULT_LIMIT)),
        };
        let geo = Geometry::new(zones, zone_size)
            .with_capacity(self.zone_capacity.unwrap_or(zone_size))
            .with_block_size(block_size)
            .with_limits(max_open, max_active);
        geo.validate()?;
        Ok(geo)
    }

    /// Checks the flags that were given against an existing device's geometry: flags may
    /// repeat what the device has, never contradict it.
    pub fn check_matches(&self, device: &str, geo: &Geometry) -> CliResult {
        let checks = [
            ("--zones", self.zones.map(u64::from), u64::from(geo.zones)),
            ("--zone-size", self.zone_size, geo.zone_size),
            ("--zone-capacity", self.zone_capacity, geo.zone_capacity),
            (
                "--max-open",
                self.max_open.map(u64::from),
                u64::from(geo.max_open),
            ),
            (
                "--max-active",
                self.max_active.map(u64::from),
                u64::from(geo.max_active),
            ),
            ("--block-size", self.block_size, u64::from(geo.block_size)),
        ];
        for (flag, given, actual) in checks {
            if let Some(given) = given.filter(|g| *g != actual) {
                return Err(CliError::invalid(format!(
                    "{flag} {given}: {device} already exists with {flag} {actual}; geometry \
                     flags only shape a new image (leave them out to format this one)"
                )));
            }
        }
        Ok(())
    }

    /// Refuses geometry flags for a device that has its own geometry (`zbd:`).
    pub fn refuse(&self, device: &str) -> CliResult {
        let given = self.given();
        if given.is_empty() {
            return Ok(());
        }
        Err(CliError::invalid(format!(
            "{}: {device} is a zoned block device and comes with its own zones; geometry \
             flags only shape a new image (file:PATH)",
            given.join(", ")
        )))
    }
}

/// Creates a new image file with every zone empty and syncs it. Refuses an existing path.
pub fn create_image(path: &Path, geo: Geometry, command: &str) -> CliResult<FileDevice> {
    geo.validate()?;
    if path.symlink_metadata().is_ok() {
        return Err(CliError::invalid(format!(
            "{}: already exists; {command} never overwrites a file",
            path.display()
        )));
    }
    // The device layer removes a half-made image itself when creating fails.
    let dev = FileDevice::create(path, geo)?;
    dev.sync()?;
    warn_if_it_cannot_fill(path, geo.device_size());
    Ok(dev)
}

/// A new image is sparse: one larger than the room left where it lives is created without
/// a word and fails only when its writes run out of space. Say so at once, on stderr.
fn warn_if_it_cannot_fill(path: &Path, size: u64) {
    let Some(free) = FileDevice::host_free_bytes(path) else {
        return;
    };
    if free < size {
        super::warn(format_args!(
            "{}: an image of {} on a file system with {} free: it is sparse, and writes \
             will fail once the file system is full",
            path.display(),
            human_size(size),
            human_size(free)
        ));
    }
}

pub fn limit(n: u32) -> String {
    if n == 0 {
        "unlimited".into()
    } else {
        n.to_string()
    }
}

/// One line describing a device's shape.
pub fn describe(dev: &dyn ZonedDevice) -> String {
    let g = dev.geometry();
    format!(
        "{}: {} zones of {} (capacity {}), {} blocks, max open {}, max active {}",
        dev.describe(),
        g.zones,
        format_size(g.zone_size),
        format_size(g.zone_capacity),
        format_size(u64::from(g.block_size)),
        limit(g.max_open),
        limit(g.max_active),
    )
}
