//! `zkv zone`: blkzone-like zone management for emulated images (`file:PATH`) and zoned block
//! devices (`zbd:/dev/DEV`).
//!
//! Each command opens the device, runs one or a few device commands, syncs after a change and
//! closes it. The device enforces every rule (write pointer, capacity, open/active limits,
//! transitions); this module only turns flags into device commands and prints results.
//!
//! An emulated image keeps every zone's state between commands, as a powered drive does: a
//! zone opened by one command is still open for the next (docs/CLI.md, "Zone states between
//! commands").

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args, Subcommand};
use zkv_zns::{DeviceSpec, Geometry, IoCategory, ZnsError, ZoneInfo, ZoneOp, ZoneState};

use super::device::{
    open_persistent, parse_device, read_device, refuse_mem, refuse_unknown, Access, WaitArg,
};
use super::error::{CliError, CliResult};
use super::geometry::{create_image, describe, GeometryArgs};
use super::pattern;
use super::size::{format_size, parse_positive_size, parse_size};
use super::table::{Align, Table};
use super::Out;

/// Reads are streamed in pieces of this size.
const READ_CHUNK: u64 = 1 << 20;

const ZONE_EXAMPLES: &str = "\
Examples:
  zkv zone create --device file:/tmp/zns.img --zones 8 --zone-size 1MiB
  zkv zone report --device file:/tmp/zns.img
  zkv zone write  --device file:/tmp/zns.img --zone 0 --offset 0 --len 16KiB
  zkv zone append --device file:/tmp/zns.img --zone 0 --len 4KiB
  zkv zone finish --device file:/tmp/zns.img --zone 0
  zkv zone reset  --device file:/tmp/zns.img --all

Offsets are relative to the zone start and must equal the write pointer for writes.
An image keeps every zone's state between commands, as a powered drive does: a zone opened
by one command is still open for the next, and the open and active limits count across
commands.";

#[derive(Debug, Args)]
#[command(after_help = ZONE_EXAMPLES, subcommand_required = true)]
pub struct ZoneArgs {
    #[command(subcommand)]
    command: ZoneCommand,
}

#[derive(Debug, Subcommand)]
enum ZoneCommand {
    /// Create an emulated zoned device in a new image file
    Create(CreateArgs),
    /// Report zones: start, size, capacity, write pointer and state
    Report(ReportArgs),
    /// Write the test pattern at a zone's write pointer
    Write(WriteArgs),
    /// Append the test pattern to a zone and print the zone offset it landed at
    Append(AppendArgs),
    /// Read part of a zone: a summary, a hex dump, or the raw bytes into a file
    Read(ReadArgs),
    /// Open zones explicitly (empty or closed -> explicit_open)
    Open(ManageArgs),
    /// Close open zones (-> closed)
    Close(ManageArgs),
    /// Finish zones: move the write pointer to the zone end (-> full)
    Finish(ManageArgs),
    /// Reset zones: discard their data (-> empty)
    Reset(ManageArgs),
}

#[derive(Debug, Args)]
struct DeviceArg {
    /// The device: file:PATH (an image made by 'zkv zone create') or zbd:/dev/DEV
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    #[command(flatten)]
    wait: WaitArg,
}

#[derive(Debug, Args)]
#[command(
    mut_arg("zones", |a| a.required(true)),
    mut_arg("zone_size", |a| a.required(true))
)]
struct CreateArgs {
    /// The image to create, as file:PATH; an existing file is never overwritten
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    #[command(flatten)]
    geometry: GeometryArgs,
}

#[derive(Debug, Args)]
struct ReportArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Report only this zone (with --count, the first of a range)
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    zone: Option<u32>,

    /// Number of zones to report from --zone on
    #[arg(long, value_name = "N", requires = "zone", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    count: Option<u32>,

    /// Print a JSON list of {zone, start, size, capacity, wp, state} (start and wp are
    /// absolute byte addresses; a full zone's wp is its end, as Linux reports it)
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct WriteArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Zone number
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    zone: u32,

    /// Where to write, relative to the zone start: must be the write pointer
    #[arg(long, value_name = "OFF", value_parser = parse_size, allow_hyphen_values = true)]
    offset: u64,

    /// Bytes to write, a multiple of the block size
    #[arg(long, value_name = "N", value_parser = parse_positive_size, allow_hyphen_values = true)]
    len: u64,
}

#[derive(Debug, Args)]
struct AppendArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Zone number
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    zone: u32,

    /// Bytes to append, a multiple of the block size
    #[arg(long, value_name = "N", value_parser = parse_positive_size, allow_hyphen_values = true)]
    len: u64,
}

#[derive(Debug, Args)]
struct ReadArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Zone number
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    zone: u32,

    /// Where to start, relative to the zone start (any byte offset)
    #[arg(long, value_name = "OFF", default_value = "0",
          value_parser = parse_size, allow_hyphen_values = true)]
    offset: u64,

    /// Bytes to read [default: up to the zone capacity]
    #[arg(long, value_name = "N", value_parser = parse_positive_size, allow_hyphen_values = true)]
    len: Option<u64>,

    /// Write the raw bytes to this file (created or replaced) instead of printing a summary
    #[arg(long, value_name = "FILE", conflicts_with = "hex")]
    out: Option<PathBuf>,

    /// Print a hex dump (identical lines collapse into '*') instead of a summary
    #[arg(long)]
    hex: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("which").required(true).args(["zone", "all"])))]
struct ManageArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Zone number (with --count, the first of a range)
    #[arg(long, value_name = "Z", allow_negative_numbers = true)]
    zone: Option<u32>,

    /// Number of zones from --zone on; stops at the first zone that fails, keeping the
    /// zones before it changed
    #[arg(long, value_name = "N", requires = "zone", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    count: Option<u32>,

    /// Every zone the command applies to, as NVMe "select all" does: open takes closed
    /// zones, close open ones, finish open and closed ones, reset open, closed and full ones
    #[arg(long)]
    all: bool,
}

pub fn run(args: ZoneArgs) -> CliResult {
    let mut out = Out::new();
    match args.command {
        ZoneCommand::Create(a) => create(a, &mut out)?,
        ZoneCommand::Report(a) => report(a, &mut out)?,
        ZoneCommand::Write(a) => write(a, &mut out)?,
        ZoneCommand::Append(a) => append(a, &mut out)?,
        ZoneCommand::Read(a) => read(a, &mut out)?,
        ZoneCommand::Open(a) => manage(a, ZoneOp::Open, &mut out)?,
        ZoneCommand::Close(a) => manage(a, ZoneOp::Close, &mut out)?,
        ZoneCommand::Finish(a) => manage(a, ZoneOp::Finish, &mut out)?,
        ZoneCommand::Reset(a) => manage(a, ZoneOp::Reset, &mut out)?,
    }
    out.flush()
}

fn create(a: CreateArgs, out: &mut Out) -> CliResult {
    let path = match &a.device {
        DeviceSpec::File(path) => path,
        DeviceSpec::Mem => return Err(refuse_mem()),
        DeviceSpec::Zbd(_) => {
            return Err(CliError::invalid(format!(
                "--device {}: zone create makes emulated images (file:PATH); a zoned block \
                 device comes with its own zones",
                a.device
            )))
        }
        _ => return Err(refuse_unknown(&a.device)),
    };
    // Refuse bad geometry and existing paths before anything touches the file system.
    let geo = a.geometry.geometry(" (see 'zkv zone create --help')")?;
    let dev = create_image(path, geo, "zone create")?;
    out.line(format!("created {}", describe(&dev)))
}

/// The write pointer relative to the zone start.
fn wp_offset(z: &ZoneInfo) -> u64 {
    z.wp - z.start
}

fn report(a: ReportArgs, out: &mut Out) -> CliResult {
    let dev = read_device(&a.dev.device, a.dev.wait.wait, Ok)?;
    let geo = dev.geometry();
    let zones = match a.zone {
        None => dev.report_zones(0, geo.zones)?,
        Some(first) => {
            let count = a.count.unwrap_or(1);
            check_range(&geo, first, count)?;
            dev.report_zones(first, count)?
        }
    };
    if a.json {
        return out.json(&zones);
    }
    out.line(describe(dev.as_ref()))?;
    let mut t = Table::new(&[
        ("zone", Align::Right),
        ("start", Align::Right),
        ("size", Align::Right),
        ("capacity", Align::Right),
        ("wp", Align::Right),
        ("state", Align::Left),
    ]);
    for z in &zones {
        t.row(vec![
            z.zone.to_string(),
            format_size(z.start),
            format_size(z.size),
            format_size(z.capacity),
            format_size(wp_offset(z)),
            z.state.to_string(),
        ]);
    }
    t.print(out)
}

/// Zones `first .. first + count` must all exist.
fn check_range(geo: &Geometry, first: u32, count: u32) -> CliResult {
    let end = u64::from(first) + u64::from(count);
    if end > u64::from(geo.zones) {
        let missing = u64::from(first).max(u64::from(geo.zones));
        return Err(ZnsError::NoSuchZone {
            zone: missing,
            zones: geo.zones,
        }
        .into());
    }
    Ok(())
}

/// A buffer holding the test pattern for `len` bytes at device address `addr`. Callers have
/// bounded `len` by the zone size; the allocation is still checked, never aborted on.
fn pattern_buffer(addr: u64, len: u64) -> CliResult<Vec<u8>> {
    let too_big =
        || CliError::invalid(format!("cannot allocate {} for the data", format_size(len)));
    let n = usize::try_from(len).map_err(|_| too_big())?;
    let mut data = Vec::new();
    data.try_reserve_exact(n).map_err(|_| too_big())?;
    data.resize(n, 0);
    pattern::fill(addr, &mut data);
    Ok(data)
}

/// A length that cannot fit in a zone, refused before its buffer is allocated, with the
/// error the device gives for it.
fn check_len_fits(geo: &Geometry, zone: &ZoneInfo, offset: u64, len: u64) -> CliResult {
    if len > geo.zone_size {
        return Err(ZnsError::BoundaryCrossed {
            zone: zone.zone,
            offset,
            len,
            capacity: geo.zone_capacity,
        }
        .into());
    }
    Ok(())
}

fn write(a: WriteArgs, out: &mut Out) -> CliResult {
    let dev = open_persistent(&a.dev.device, Access::ReadWrite, a.dev.wait.wait)?;
    let geo = dev.geometry();
    let info = dev.zone_info(a.zone)?;
    if a.offset >= geo.zone_size {
        return Err(CliError::invalid(format!(
            "--offset {}: beyond the end of zone {} (zones are {} long)",
            a.offset,
            a.zone,
            format_size(geo.zone_size)
        )));
    }
    check_len_fits(&geo, &info, a.offset, a.len)?;
    let addr = info.start + a.offset;
    let data = pattern_buffer(addr, a.len)?;
    dev.write(addr, &data, IoCategory::User)?;
    dev.sync()?;
    let after = dev.zone_info(a.zone)?;
    out.line(format!(
        "zone {}: wrote {} at offset {}; wp {}, {}",
        a.zone,
        format_size(a.len),
        format_size(a.offset),
        format_size(wp_offset(&after)),
        after.state
    ))
}

fn append(a: AppendArgs, out: &mut Out) -> CliResult {
    let dev = open_persistent(&a.dev.device, Access::ReadWrite, a.dev.wait.wait)?;
    let geo = dev.geometry();
    let info = dev.zone_info(a.zone)?;
    check_len_fits(&geo, &info, wp_offset(&info), a.len)?;
    // The pattern is made for where the write pointer is now; that is where the data lands
    // unless another writer moves it first.
    let data = pattern_buffer(info.wp, a.len)?;
    let addr = dev.append(a.zone, &data, IoCategory::User)?;
    dev.sync()?;
    out.line(addr - info.start)
}

/// What a stretch of a zone holds, as `zone read` summarises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    Pattern,
    Zeros,
    Data,
}

impl Content {
    fn of(addr: u64, buf: &[u8]) -> Content {
        if buf.iter().all(|b| *b == 0) {
            Content::Zeros
        } else if pattern::matches(addr, buf) {
            Content::Pattern
        } else {
            Content::Data
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Content::Pattern => "zkv write pattern",
            Content::Zeros => "zeros",
            Content::Data => "other data",
        }
    }
}

/// Runs of equal content, as zone offsets `[start, end)`.
#[derive(Default)]
struct Runs(Vec<(u64, u64, Content)>);

impl Runs {
    fn push(&mut self, start: u64, end: u64, content: Content) {
        match self.0.last_mut() {
            Some(last) if last.1 == start && last.2 == content => last.1 = end,
            _ => self.0.push((start, end, content)),
        }
    }
}

/// `hexdump -C`-like output with zone offsets; repeated lines collapse into `*`.
struct HexDump {
    previous: Option<Vec<u8>>,
    starred: bool,
}

impl HexDump {
    fn line(&mut self, out: &mut Out, offset: u64, bytes: &[u8]) -> CliResult {
        if self.previous.as_deref() == Some(bytes) {
            if !self.starred {
                self.starred = true;
                out.line("*")?;
            }
            return Ok(());
        }
        self.starred = false;
        self.previous = Some(bytes.to_vec());
        let mut hex = String::with_capacity(50);
        for i in 0..16 {
            if i == 8 {
                hex.push(' ');
            }
            match bytes.get(i) {
                Some(b) => hex.push_str(&format!("{b:02x} ")),
                None => hex.push_str("   "),
            }
        }
        let text: String = bytes
            .iter()
            .map(|b| {
                if b.is_ascii_graphic() || *b == b' ' {
                    char::from(*b)
                } else {
                    '.'
                }
            })
            .collect();
        out.line(format!("{offset:08x}  {hex} |{text}|"))
    }
}

fn read(a: ReadArgs, out: &mut Out) -> CliResult {
    // Bytes go out as they are read, so only the open is retried: a zone a writer resets
    // under the read fails it with "zone N was reset by a writer while it was read".
    let dev = read_device(&a.dev.device, a.dev.wait.wait, Ok)?;
    let geo = dev.geometry();
    let info = dev.zone_info(a.zone)?;
    if a.offset > geo.zone_size {
        return Err(CliError::invalid(format!(
            "--offset {}: beyond the end of zone {} (zones are {} long)",
            a.offset,
            a.zone,
            format_size(geo.zone_size)
        )));
    }
    let len = match a.len {
        Some(len) => len,
        None if a.offset < geo.zone_capacity => geo.zone_capacity - a.offset,
        None => {
            return Err(CliError::invalid(format!(
                "--offset {} is at or past the zone capacity {}; give --len to read beyond it",
                a.offset,
                format_size(geo.zone_capacity)
            )))
        }
    };
    if a.offset
        .checked_add(len)
        .is_none_or(|end| end > geo.zone_size)
    {
        return Err(CliError::invalid(format!(
            "--offset {} with --len {} goes past the end of zone {} (zones are {} long)",
            a.offset,
            len,
            a.zone,
            format_size(geo.zone_size)
        )));
    }

    let mut file: Option<File> = None;
    let mut runs = Runs::default();
    let mut hexdump = HexDump {
        previous: None,
        starred: false,
    };
    let block = u64::from(geo.block_size);
    let mut buf = vec![0u8; READ_CHUNK.min(len) as usize];
    let mut pos = a.offset;
    let end = a.offset + len;
    while pos < end {
        let n = READ_CHUNK.min(end - pos);
        let chunk = &mut buf[..n as usize];
        dev.read(info.start + pos, chunk, IoCategory::User)?;
        if let Some(path) = &a.out {
            // Created only once the device has given data, so a refused read leaves no file.
            if file.is_none() {
                file = Some(create_out(path)?);
            }
            if let Some(f) = file.as_mut() {
                f.write_all(chunk)
                    .map_err(|e| CliError::io(format!("{}: write", path.display()), e))?;
            }
        } else if a.hex {
            for (i, line) in chunk.chunks(16).enumerate() {
                hexdump.line(out, pos + 16 * i as u64, line)?;
            }
        } else {
            // Classify per block (aligned to the zone), so runs start and end at blocks.
            let mut at = pos;
            while at < pos + n {
                let stop = (at / block + 1).saturating_mul(block).min(pos + n);
                let piece = &chunk[(at - pos) as usize..(stop - pos) as usize];
                runs.push(at, stop, Content::of(info.start + at, piece));
                at = stop;
            }
        }
        pos += n;
    }

    if let (Some(path), Some(f)) = (&a.out, file) {
        f.sync_all()
            .map_err(|e| CliError::io(format!("{}: sync", path.display()), e))?;
        return out.line(format!(
            "zone {}: read {} at offset {} into {}",
            a.zone,
            format_size(len),
            format_size(a.offset),
            path.display()
        ));
    }
    if a.hex {
        return out.line(format!("{end:08x}"));
    }
    out.line(format!(
        "zone {}: {} at offset {} (wp {}, {}):",
        a.zone,
        format_size(len),
        format_size(a.offset),
        format_size(wp_offset(&info)),
        info.state
    ))?;
    let cells: Vec<(String, String)> = runs
        .0
        .iter()
        .map(|(s, e, _)| (format_size(*s), format_size(*e)))
        .collect();
    let w0 = cells.iter().map(|c| c.0.len()).max().unwrap_or(0);
    let w1 = cells.iter().map(|c| c.1.len()).max().unwrap_or(0);
    for ((s, e, content), (cs, ce)) in runs.0.iter().zip(&cells) {
        out.line(format!(
            "  {cs:>w0$} .. {ce:>w1$}  {} ({})",
            content.describe(),
            format_size(e - s)
        ))?;
    }
    Ok(())
}

fn create_out(path: &Path) -> CliResult<File> {
    File::create(path).map_err(|e| CliError::io(format!("{}: create", path.display()), e))
}

/// The zones NVMe "select all" applies an operation to.
fn selected_by_all(op: ZoneOp, state: ZoneState) -> bool {
    match op {
        ZoneOp::Open => state == ZoneState::Closed,
        ZoneOp::Close => state.is_open(),
        ZoneOp::Finish => state.is_active(),
        ZoneOp::Reset => state.is_active() || state == ZoneState::Full,
    }
}

fn manage(a: ManageArgs, op: ZoneOp, out: &mut Out) -> CliResult {
    let dev = open_persistent(&a.dev.device, Access::ReadWrite, a.dev.wait.wait)?;
    let geo = dev.geometry();
    let targets: Vec<ZoneInfo> = match a.zone {
        Some(first) => {
            let count = a.count.unwrap_or(1);
            check_range(&geo, first, count)?;
            dev.report_zones(first, count)?
        }
        None => dev
            .report_zones(0, geo.zones)?
            .into_iter()
            .filter(|z| selected_by_all(op, z.state))
            .collect(),
    };
    if targets.is_empty() {
        return out.line(format!(
            "nothing to {op}: no zone is in a state '{op} --all' applies to"
        ));
    }
    let mut done = Vec::new();
    let mut failure = None;
    for z in &targets {
        if let Err(e) = dev.zone_op(z.zone, op) {
            failure = Some(CliError::from(e));
            break;
        }
        done.push((z.zone, z.state));
    }
    if !done.is_empty() {
        // What succeeded is made durable even when a later zone failed.
        if let Err(e) = dev.sync() {
            return Err(match failure {
                Some(first) => CliError::invalid(format!(
                    "{first}; syncing the zones changed before it failed too: {e}"
                )),
                None => e.into(),
            });
        }
    }
    for (zone, before) in done {
        let after = dev.zone_info(zone)?.state;
        if after == before {
            out.line(format!("zone {zone}: {after}, unchanged"))?;
        } else {
            out.line(format!("zone {zone}: {before} -> {after}"))?;
        }
    }
    match failure {
        Some(e) => {
            out.flush()?;
            Err(e)
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_all_follows_nvme() {
        use ZoneState::*;
        let all = [
            Empty,
            ImplicitOpen,
            ExplicitOpen,
            Closed,
            Full,
            ReadOnly,
            Offline,
        ];
        let pick = |op| -> Vec<ZoneState> {
            all.into_iter()
                .filter(|s| selected_by_all(op, *s))
                .collect()
        };
        assert_eq!(pick(ZoneOp::Open), [Closed]);
        assert_eq!(pick(ZoneOp::Close), [ImplicitOpen, ExplicitOpen]);
        assert_eq!(pick(ZoneOp::Finish), [ImplicitOpen, ExplicitOpen, Closed]);
        assert_eq!(
            pick(ZoneOp::Reset),
            [ImplicitOpen, ExplicitOpen, Closed, Full]
        );
    }

    #[test]
    fn runs_merge() {
        let mut r = Runs::default();
        r.push(0, 4096, Content::Pattern);
        r.push(4096, 8192, Content::Pattern);
        r.push(8192, 12288, Content::Zeros);
        assert_eq!(
            r.0,
            vec![(0, 8192, Content::Pattern), (8192, 12288, Content::Zeros)]
        );
    }

    #[test]
    fn range_check() {
        let geo = Geometry::new(4, 1 << 20);
        assert!(check_range(&geo, 0, 4).is_ok());
        assert!(check_range(&geo, 3, 1).is_ok());
        let e = check_range(&geo, 2, 5).unwrap_err().to_string();
        assert_eq!(e, "zone 4 does not exist (the device has 4 zones)");
        let e = check_range(&geo, 9, 1).unwrap_err().to_string();
        assert_eq!(e, "zone 9 does not exist (the device has 4 zones)");
        assert!(check_range(&geo, u32::MAX, u32::MAX).is_err());
    }
}
