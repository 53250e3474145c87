//! `zkv inspect`: what a zkv file system holds, without changing the device.
//!
//! The device is opened read-only (an image takes no lock: a writer may be at work, see
//! [`super::device::read_device`]) and the file system is mounted read-only
//! ([`super::fsview`]): nothing is written, and the output says what a read-write mount
//! would change. Figures describe the device as it is, as the file layer
//! counts them: written bytes from the zone report (a full zone counts its whole capacity),
//! valid bytes from the recovered metadata (Σ extents of the files in the zone).

use std::collections::BTreeMap;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use zkv_zns::{DeviceSpec, Geometry, ZoneState, ZonedDevice};
use zkv_zonefs::fs::FsOptions;
use zkv_zonefs::meta::{
    self, dump_zone, FileKind, FrameKind, MetaError, ZoneDump, DEFAULT_META_ZONES,
};
use zkv_zonefs::placement::{is_blob_zone, Lifetime};

use super::device::{parse_device, read_device, WaitArg};
use super::error::{CliError, CliResult};
use super::fsview::{describe_options, meta_error, FsView};
use super::geometry::describe;
use super::size::{format_size, human_size};
use super::table::{Align, Table};
use super::Out;

const INSPECT_EXAMPLES: &str = "\
Examples:
  zkv inspect zones --device file:/tmp/zns.img
  zkv inspect files --device file:/tmp/zns.img --json
  zkv inspect df    --device file:/tmp/zns.img
  zkv inspect dump  --device file:/tmp/zns.img > dump.json
  zkv inspect levels --device file:/tmp/zns.img
  zkv inspect fs-info --device file:/tmp/zns.img

The device is never written: an image is opened read-only, the file system is mounted
read-only with the options its metadata records, and what a read-write mount would change
(a metadata roll after an interrupted write, resets of zones without live data) is only
reported.";

#[derive(Debug, Args)]
#[command(after_help = INSPECT_EXAMPLES, subcommand_required = true)]
pub struct InspectArgs {
    #[command(subcommand)]
    command: InspectCommand,
}

#[derive(Debug, Subcommand)]
enum InspectCommand {
    /// Data zones: state, written, valid and invalid bytes, placement class, files
    Zones(ListArgs),
    /// Files: kind, size, level, lifetime, extents and the zones holding them
    Files(ListArgs),
    /// Space: total, usable, free, used and reclaimable bytes, space amplification, and the
    /// recorded file system options
    Df(DfArgs),
    /// Everything as JSON: zones, files with their extents, space, and the frames of the
    /// metadata zones
    Dump(DumpArgs),
    /// The LSM tree: files, bytes and compaction score per level, and RocksDB's
    /// compaction stats table
    Levels(super::levels::LevelsArgs),
    /// The file system itself: geometry, metadata zones, format versions, the metadata
    /// log's generation and commit, and the recorded options
    FsInfo(ListArgs),
}

#[derive(Debug, Args)]
struct DeviceArg {
    /// The device: file:PATH or zbd:/dev/DEV, formatted by 'zkv mkfs'
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    #[command(flatten)]
    wait: WaitArg,
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Print JSON instead of a table (field names in docs/CLI.md)
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct DfArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Print JSON instead of a table (field names in docs/CLI.md)
    #[arg(long)]
    json: bool,

    /// Show usable and free space as with this many reserved (over-provisioning) zones,
    /// instead of the number the file system records
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    reserved_zones: Option<u32>,
}

#[derive(Debug, Args)]
struct DumpArgs {
    #[command(flatten)]
    dev: DeviceArg,

    /// Accepted for symmetry with the other commands: dump always prints JSON
    #[arg(long)]
    json: bool,

    /// Reserved zones, for the space figures (as for 'inspect df')
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    reserved_zones: Option<u32>,
}

pub fn run(args: InspectArgs) -> CliResult {
    let mut out = Out::new();
    match args.command {
        InspectCommand::Zones(a) => {
            let view = open(&a.dev)?;
            zones(&view, a.json, &mut out)?;
        }
        InspectCommand::Files(a) => {
            let view = open(&a.dev)?;
            files(&view, a.json, &mut out)?;
        }
        InspectCommand::Df(a) => {
            let view = open(&a.dev)?;
            df(&view, a.reserved_zones, a.json, &mut out)?;
        }
        InspectCommand::Dump(a) => dump(&a.dev, a.reserved_zones, &mut out)?,
        InspectCommand::Levels(a) => return super::levels::run(a),
        InspectCommand::FsInfo(a) => {
            let view = open(&a.dev)?;
            super::fsinfo::show(&view, &a.dev.device, a.json, &mut out)?;
        }
    }
    out.flush()
}

fn open(dev: &DeviceArg) -> CliResult<FsView> {
    let spec = &dev.device;
    read_device(spec, dev.wait.wait, |d| FsView::open(d, &spec.to_string()))
}

// ---------------------------------------------------------------------------------------
// Names

pub(super) fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Wal => "wal",
        FileKind::Manifest => "manifest",
        FileKind::Sst => "sst",
        FileKind::Blob => "blob",
        FileKind::Other => "other",
        // A kind of a newer file layer: shown, not guessed at.
        _ => "unknown",
    }
}

/// The LIZA lifetime a class byte stands for.
pub(super) fn lifetime_name(code: u8) -> Option<&'static str> {
    Some(match Lifetime::from_code(code)? {
        Lifetime::NotSet => "not_set",
        Lifetime::None => "none",
        Lifetime::Short => "short",
        Lifetime::Medium => "medium",
        Lifetime::Long => "long",
        Lifetime::Extreme => "extreme",
    })
}

/// A zone's class: 0 means no class recorded; blob zones (a blob placement's) are `blob`.
fn class_name(class: u8) -> Option<&'static str> {
    if class == 0 {
        None
    } else if is_blob_zone(class) {
        Some("blob")
    } else {
        lifetime_name(class)
    }
}

fn frame_name(kind: FrameKind) -> &'static str {
    match kind {
        FrameKind::Snapshot => "snapshot",
        FrameKind::FileUpdate => "file_update",
        FrameKind::FileDelete => "file_delete",
        FrameKind::FileRename => "file_rename",
        FrameKind::ZoneMeta => "zone_meta",
        FrameKind::Options => "options",
        FrameKind::Commit => "commit",
        // A frame of a newer metadata format: shown, not guessed at.
        _ => "unknown",
    }
}

// ---------------------------------------------------------------------------------------
// Figures

/// One data zone as `inspect zones` shows it.
#[derive(Clone, Debug, Serialize)]
struct ZoneRow {
    zone: u32,
    state: &'static str,
    written: u64,
    valid: u64,
    invalid: u64,
    class: u8,
    class_name: Option<&'static str>,
    files: usize,
    /// A full blob zone's YBIZ: the youngest blob file number written into it.
    ybiz: Option<u64>,
    /// Resets of the zone over the device's life: neither the devices nor the metadata
    /// record it yet, so always null.
    resets: Option<u64>,
    #[serde(skip)]
    raw_state: ZoneState,
}

fn zone_rows(view: &FsView) -> Vec<ZoneRow> {
    view.zones
        .iter()
        .map(|z| {
            let mut files: Vec<u64> = view.state.zone_extents(z.zone).map(|(_, f)| f.0).collect();
            files.sort_unstable();
            files.dedup();
            ZoneRow {
                zone: z.zone,
                state: z.state.name(),
                written: z.written,
                valid: z.valid,
                invalid: z.invalid,
                class: z.class,
                class_name: class_name(z.class),
                files: files.len(),
                ybiz: z.ybiz,
                resets: None,
                raw_state: z.state,
            }
        })
        .collect()
}

#[derive(Clone, Debug, Serialize)]
struct ZoneBytes {
    zone: u32,
    bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
struct ExtentJson {
    zone: u32,
    offset: u64,
    len: u64,
}

/// One file as `inspect files` shows it; `extents` only in `dump`.
#[derive(Clone, Debug, Serialize)]
struct FileRow {
    id: u64,
    name: String,
    kind: &'static str,
    size: u64,
    level: Option<u8>,
    lifetime: u8,
    lifetime_name: Option<&'static str>,
    extent_count: usize,
    /// Σ extent lengths (the last extent may hold the padding of a sync).
    extent_bytes: u64,
    zones: Vec<ZoneBytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extents: Option<Vec<ExtentJson>>,
}

fn file_rows(view: &FsView, with_extents: bool) -> Vec<FileRow> {
    let mut rows: Vec<FileRow> = view
        .state
        .files()
        .map(|(id, m)| {
            let mut per_zone: BTreeMap<u32, u64> = BTreeMap::new();
            for e in &m.extents {
                *per_zone.entry(e.zone).or_default() += e.len;
            }
            FileRow {
                id: id.0,
                name: m.name.clone(),
                kind: kind_name(m.kind),
                size: m.size,
                level: m.level,
                lifetime: m.lifetime,
                lifetime_name: lifetime_name(m.lifetime),
                extent_count: m.extents.len(),
                extent_bytes: m.extent_bytes(),
                zones: per_zone
                    .into_iter()
                    .map(|(zone, bytes)| ZoneBytes { zone, bytes })
                    .collect(),
                extents: with_extents.then(|| {
                    m.extents
                        .iter()
                        .map(|e| ExtentJson {
                            zone: e.zone,
                            offset: e.offset,
                            len: e.len,
                        })
                        .collect()
                }),
            }
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

/// The options the file system records (and the read-only mount runs with); a backup's
/// manifest records them the same way.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OptionsJson {
    pub reserved_zones: u32,
    pub placement: String,
    pub finish_threshold: Option<u8>,
    pub gc_start: u8,
    pub gc_stop: u8,
    pub gc_mode: String,
}

impl OptionsJson {
    pub fn of(o: &FsOptions) -> OptionsJson {
        OptionsJson {
            reserved_zones: o.reserved_zones,
            placement: o.policy_name(),
            finish_threshold: o.finish_threshold,
            gc_start: o.gc_start,
            gc_stop: o.gc_stop,
            gc_mode: o.gc_mode.name().to_string(),
        }
    }
}

/// Space figures, as `inspect df` shows them. Every zone count and byte figure covers the
/// data zones only.
#[derive(Clone, Debug, Serialize)]
struct Df {
    data_zones: u32,
    reserved_zones: u32,
    /// Data zones that are read-only or offline.
    unavailable_zones: u32,
    empty_zones: u32,
    active_zones: u32,
    full_zones: u32,
    zone_capacity: u64,
    files: usize,
    /// data zones × zone capacity
    total_bytes: u64,
    /// (data zones − unavailable − reserved) × zone capacity
    usable_bytes: u64,
    /// room left in empty and active zones − reserved × zone capacity
    free_bytes: u64,
    /// written bytes (a full zone counts its capacity)
    used_bytes: u64,
    /// Σ extents of the files
    valid_bytes: u64,
    /// used − valid in writable zones: padding, dead data, unwritten rest of finished zones
    reclaimable_bytes: u64,
    /// used / valid; null without valid data
    space_amplification: Option<f64>,
    /// free / usable
    free_ratio: f64,
    /// The recorded options (`reserved_zones` above may differ when given on the command
    /// line).
    options: OptionsJson,
}

/// The figures with `reserved` zones, by default the recorded number.
fn df_of(view: &FsView, rows: &[ZoneRow], reserved: Option<u32>) -> Df {
    let options = view.fs.options();
    let reserved_zones = reserved.unwrap_or(options.reserved_zones);
    let cap = view.geo.zone_capacity;
    let count =
        |f: &dyn Fn(ZoneState) -> bool| rows.iter().filter(|r| f(r.raw_state)).count() as u32;
    let unavailable = count(&|s| matches!(s, ZoneState::ReadOnly | ZoneState::Offline));
    let data_zones = rows.len() as u32;
    let room: u64 = rows
        .iter()
        .filter(|r| r.raw_state == ZoneState::Empty || r.raw_state.is_active())
        .map(|r| cap.saturating_sub(r.written))
        .sum();
    let reserve = u64::from(reserved_zones).saturating_mul(cap);
    let usable = u64::from(
        data_zones
            .saturating_sub(unavailable)
            .saturating_sub(reserved_zones),
    ) * cap;
    let free = room.saturating_sub(reserve);
    let used: u64 = rows
        .iter()
        .filter(|r| r.raw_state != ZoneState::Offline)
        .map(|r| r.written)
        .sum();
    let valid: u64 = rows.iter().map(|r| r.valid).sum();
    let reclaimable: u64 = rows
        .iter()
        .filter(|r| !matches!(r.raw_state, ZoneState::ReadOnly | ZoneState::Offline))
        .map(|r| r.invalid)
        .sum();
    Df {
        data_zones,
        reserved_zones,
        unavailable_zones: unavailable,
        empty_zones: count(&|s| s == ZoneState::Empty),
        active_zones: count(&|s| s.is_active()),
        full_zones: count(&|s| s == ZoneState::Full),
        zone_capacity: cap,
        files: view.state.file_count(),
        total_bytes: u64::from(data_zones) * cap,
        usable_bytes: usable,
        free_bytes: free,
        used_bytes: used,
        valid_bytes: valid,
        reclaimable_bytes: reclaimable,
        space_amplification: (valid > 0).then(|| used as f64 / valid as f64),
        free_ratio: if usable == 0 {
            0.0
        } else {
            free as f64 / usable as f64
        },
        options: OptionsJson::of(options),
    }
}

// ---------------------------------------------------------------------------------------
// JSON envelope: every inspect JSON object starts with these fields.

#[derive(Clone, Debug, Serialize)]
struct Skipped {
    zone: u32,
    reason: String,
}

/// What the metadata recovery found.
#[derive(Clone, Debug, Serialize)]
struct LogJson {
    /// The metadata zone replayed and its generation (superblock sequence number).
    zone: u32,
    generation: u64,
    /// Number of the last committed batch (0 = the format).
    commit: u64,
    /// Batches and records replayed after the zone's snapshot.
    batches: u64,
    records: u64,
    /// Offset of an interrupted last write that recovery ignores.
    torn_tail: Option<u64>,
    skipped: Vec<Skipped>,
    /// Where a read-write mount rolls the log (after a torn tail or in a full zone).
    roll_to: Option<u32>,
    /// Other metadata zones holding data, which a read-write mount resets.
    stale: Vec<u32>,
}

#[derive(Clone, Debug, Serialize)]
struct ChangeJson {
    zone: u32,
    action: &'static str,
    state_before: &'static str,
    written_before: u64,
    /// Null for a metadata zone that receives records (known once written).
    state_after: Option<&'static str>,
    written_after: Option<u64>,
}

/// What a read-write mount would do to the device.
#[derive(Clone, Debug, Serialize)]
struct MountJson {
    /// Always true: inspect mounts read-only.
    read_only: bool,
    log: Option<LogJson>,
    /// True when a read-write mount would change the device (see `changes`).
    would_write: bool,
    changes: Vec<ChangeJson>,
}

#[derive(Clone, Debug, Serialize)]
pub(super) struct Envelope {
    device: String,
    geometry: Geometry,
    meta_zones: u32,
    mount: MountJson,
}

pub(super) fn envelope(view: &FsView) -> Envelope {
    let changes = view.changes();
    let log = view.mount.as_ref().map(|m| LogJson {
        zone: m.zone,
        generation: m.seq,
        commit: m.commit,
        batches: m.batches,
        records: m.records,
        torn_tail: m.torn_tail,
        skipped: m
            .skipped
            .iter()
            .map(|(zone, reason)| Skipped {
                zone: *zone,
                reason: reason.clone(),
            })
            .collect(),
        roll_to: m.roll_to,
        stale: m.stale.clone(),
    });
    Envelope {
        device: view.device.clone(),
        geometry: view.geo,
        meta_zones: view.meta_zones,
        mount: MountJson {
            read_only: view.fs.is_read_only(),
            log,
            would_write: !changes.is_empty(),
            changes: changes
                .iter()
                .map(|c| ChangeJson {
                    zone: c.zone,
                    action: c.action.name(),
                    state_before: c.before.0.name(),
                    written_before: c.before.1,
                    state_after: c.after.map(|a| a.0.name()),
                    written_after: c.after.map(|a| a.1),
                })
                .collect(),
        },
    }
}

/// An inspect JSON object: the envelope's fields, then the command's own.
#[derive(Serialize)]
pub(super) struct Enveloped<T> {
    #[serde(flatten)]
    pub envelope: Envelope,
    #[serde(flatten)]
    pub body: T,
}

// ---------------------------------------------------------------------------------------
// Human output

/// The lines every human output starts with: the device and where the metadata is.
fn heading(view: &FsView, out: &mut Out) -> CliResult {
    out.line(describe(view.fs.device().as_ref()))?;
    let last = view.meta_zones.saturating_sub(1);
    let log = match &view.mount {
        Some(m) => format!(
            "; generation {} in zone {}, commit {}",
            m.seq, m.zone, m.commit
        ),
        None => String::new(),
    };
    out.line(format!(
        "metadata: zones 0-{last}{log}; data: zones {}-{}",
        view.meta_zones,
        view.geo.zones.saturating_sub(1)
    ))
}

/// What a read-write mount would change, after the figures.
pub(super) fn mount_notes(view: &FsView, out: &mut Out) -> CliResult {
    let notes = view.mount_notes();
    if notes.is_empty() {
        return Ok(());
    }
    out.line("")?;
    out.line(
        "note: mounting would change the device (inspect did not; the figures above show \
         it as it is):",
    )?;
    for n in notes {
        out.line(format!("  {n}"))?;
    }
    Ok(())
}

/// The frame of `zones`, `files` and `df`: with `json`, the envelope and `body` as one
/// object; else the heading, the lines `human` prints, and what a mount would change.
fn show(
    view: &FsView,
    json: bool,
    out: &mut Out,
    body: impl Serialize,
    human: impl FnOnce(&mut Out) -> CliResult,
) -> CliResult {
    if json {
        let envelope = envelope(view);
        return out.json(&Enveloped { envelope, body });
    }
    heading(view, out)?;
    human(out)?;
    mount_notes(view, out)
}

fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

// ---------------------------------------------------------------------------------------
// Commands

#[derive(Serialize)]
struct ZonesJson<'a> {
    zones: &'a [ZoneRow],
}

fn zones(view: &FsView, json: bool, out: &mut Out) -> CliResult {
    let rows = zone_rows(view);
    show(view, json, out, ZonesJson { zones: &rows }, |out| {
        zone_table(&rows).print(out)
    })
}

/// The zone table; a `ybiz` column when some zone has a YBIZ (full blob zones).
fn zone_table(rows: &[ZoneRow]) -> Table {
    let mut columns = vec![
        ("zone", Align::Right),
        ("state", Align::Left),
        ("written", Align::Right),
        ("valid", Align::Right),
        ("invalid", Align::Right),
        ("class", Align::Left),
        ("files", Align::Right),
    ];
    let ybiz = rows.iter().any(|r| r.ybiz.is_some());
    if ybiz {
        columns.push(("ybiz", Align::Right));
    }
    let mut t = Table::new(&columns);
    for r in rows {
        let mut row = vec![
            r.zone.to_string(),
            r.state.to_string(),
            human_size(r.written),
            human_size(r.valid),
            human_size(r.invalid),
            match (r.class, r.class_name) {
                (0, _) => "-".to_string(),
                (_, Some(name)) => name.to_string(),
                (c, None) => c.to_string(),
            },
            r.files.to_string(),
        ];
        if ybiz {
            row.push(r.ybiz.map_or_else(|| "-".to_string(), |y| y.to_string()));
        }
        t.row(row);
    }
    t
}

#[derive(Serialize)]
struct FilesJson<'a> {
    files: &'a [FileRow],
}

fn files(view: &FsView, json: bool, out: &mut Out) -> CliResult {
    let rows = file_rows(view, false);
    show(view, json, out, FilesJson { files: &rows }, |out| {
        file_table(&rows).print(out)?;
        let total: u64 = rows.iter().map(|r| r.size).sum();
        out.line(format!(
            "{} file{}, {}",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" },
            format_size(total)
        ))
    })
}

fn file_table(rows: &[FileRow]) -> Table {
    let mut t = Table::new(&[
        ("name", Align::Left),
        ("kind", Align::Left),
        ("size", Align::Right),
        ("level", Align::Right),
        ("lifetime", Align::Left),
        ("extents", Align::Right),
        ("zones", Align::Left),
    ]);
    for r in rows {
        let zones: Vec<String> = r.zones.iter().map(|z| z.zone.to_string()).collect();
        t.row(vec![
            r.name.clone(),
            r.kind.to_string(),
            format_size(r.size),
            or_dash(r.level),
            r.lifetime_name
                .map_or_else(|| r.lifetime.to_string(), str::to_string),
            r.extent_count.to_string(),
            if zones.is_empty() {
                "-".to_string()
            } else {
                zones.join(",")
            },
        ]);
    }
    t
}

fn percent(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}

fn df(view: &FsView, reserved: Option<u32>, json: bool, out: &mut Out) -> CliResult {
    let d = df_of(view, &zone_rows(view), reserved);
    show(view, json, out, &d, |out| df_lines(view, &d, out))
}

/// `inspect df` for people: the space table, the ratios and the recorded options.
fn df_lines(view: &FsView, d: &Df, out: &mut Out) -> CliResult {
    let mut t = Table::new(&[
        ("", Align::Left),
        ("bytes", Align::Right),
        ("", Align::Left),
    ]);
    let cap = format_size(d.zone_capacity);
    let mut row = |what: &str, bytes: u64, note: String| {
        t.row(vec![what.to_string(), human_size(bytes), note]);
    };
    row(
        "total",
        d.total_bytes,
        format!("{} data zones × {cap}", d.data_zones),
    );
    row(
        "usable",
        d.usable_bytes,
        format!(
            "without {} reserved and {} read-only/offline zones",
            d.reserved_zones, d.unavailable_zones
        ),
    );
    row(
        "free",
        d.free_bytes,
        format!("{} of usable", percent(d.free_ratio)),
    );
    row("used", d.used_bytes, "written".to_string());
    row("  valid", d.valid_bytes, "live file data".to_string());
    row(
        "  reclaimable",
        d.reclaimable_bytes,
        "padding, dead data, unwritten rest of finished zones".to_string(),
    );
    for line in t.lines().into_iter().skip(1) {
        out.line(line)?;
    }
    out.line(format!(
        "space amplification: {} (used / valid)",
        d.space_amplification
            .map_or_else(|| "-".to_string(), |a| format!("{a:.2}"))
    ))?;
    out.line(format!("free-space ratio: {}", percent(d.free_ratio)))?;
    out.line(format!(
        "{} file{}; data zones: {} empty, {} active, {} full",
        d.files,
        if d.files == 1 { "" } else { "s" },
        d.empty_zones,
        d.active_zones,
        d.full_zones
    ))?;
    out.line(describe_options(view.fs.options()))
}

#[derive(Clone, Debug, Serialize)]
struct SuperblockJson {
    version: u32,
    generation: u64,
    zone: u32,
    meta_zones: u32,
    zones: u32,
    block_size: u32,
    zone_size: u64,
    zone_capacity: u64,
}

#[derive(Clone, Debug, Serialize)]
struct FrameJson {
    offset: u64,
    len: u64,
    kind: &'static str,
}

#[derive(Clone, Debug, Serialize)]
struct Stopped {
    offset: u64,
    reason: String,
}

/// One metadata zone's frames, as `meta::dump_zone` lists them.
#[derive(Clone, Debug, Serialize)]
struct MetaZoneJson {
    zone: u32,
    state: &'static str,
    written: u64,
    superblock: Option<SuperblockJson>,
    superblock_error: Option<String>,
    /// Frames per kind.
    frame_counts: BTreeMap<&'static str, u64>,
    frames: Vec<FrameJson>,
    /// Where and why the walk stopped before the written end, if it did (a torn or damaged
    /// frame, or the zeros after the last batch when the zone is full).
    stopped: Option<Stopped>,
}

fn meta_zone_json(d: &ZoneDump) -> MetaZoneJson {
    let (superblock, superblock_error) = match &d.superblock {
        None => (None, None),
        Some(Ok(sb)) => (
            Some(SuperblockJson {
                version: sb.version,
                generation: sb.seq,
                zone: sb.zone,
                meta_zones: sb.meta_zones,
                zones: sb.zones,
                block_size: sb.block_size,
                zone_size: sb.zone_size,
                zone_capacity: sb.zone_capacity,
            }),
            None,
        ),
        Some(Err(e)) => (None, Some(e.to_string())),
    };
    let mut frame_counts = BTreeMap::new();
    for f in &d.frames {
        *frame_counts.entry(frame_name(f.kind)).or_insert(0) += 1;
    }
    MetaZoneJson {
        zone: d.zone,
        state: d.state.name(),
        written: d.written,
        superblock,
        superblock_error,
        frame_counts,
        frames: d
            .frames
            .iter()
            .map(|f| FrameJson {
                offset: f.offset,
                len: f.len,
                kind: frame_name(f.kind),
            })
            .collect(),
        stopped: d.stopped.as_ref().map(|(offset, e)| Stopped {
            offset: *offset,
            reason: e.to_string(),
        }),
    }
}

#[derive(Serialize)]
struct DumpJson {
    df: Df,
    zones: Vec<ZoneRow>,
    files: Vec<FileRow>,
    metadata_zones: Vec<MetaZoneJson>,
}

/// The metadata zones' frames, from the real device: what is there now, not after a mount.
fn metadata_zones(
    base: &dyn zkv_zns::ZonedDevice,
    spec: &DeviceSpec,
    meta_zones: u32,
) -> CliResult<Vec<MetaZoneJson>> {
    (0..meta_zones.min(base.geometry().zones))
        .map(|z| dump_zone(base, z).map(|d| meta_zone_json(&d)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::invalid(format!("{spec}: {e}")))
}

/// What dump prints when the metadata cannot be recovered: the device and the metadata
/// zones' frames, to see where the damage is.
#[derive(Serialize)]
struct FailedDumpJson {
    device: String,
    geometry: Geometry,
    meta_zones: u32,
    error: String,
    metadata_zones: Vec<MetaZoneJson>,
}

/// What dump read: the mounted file system and its metadata zones, or, when the metadata
/// cannot be recovered, what can be read of it and the error.
enum Dumped {
    Mounted(Box<FsView>, Vec<MetaZoneJson>),
    Damaged(Box<FailedDumpJson>, CliError),
}

fn dump(dev: &DeviceArg, reserved_zones: Option<u32>, out: &mut Out) -> CliResult {
    let spec = &dev.device;
    let (view, metadata_zones) =
        match read_device(spec, dev.wait.wait, |base| read_dump(spec, base))? {
            Dumped::Mounted(view, zones) => (view, zones),
            Dumped::Damaged(failed, e) => {
                // Damaged metadata: print what can be read, then fail with the error.
                out.json(&failed)?;
                out.flush()?;
                return Err(e);
            }
        };
    let rows = zone_rows(&view);
    out.json(&Enveloped {
        envelope: envelope(&view),
        body: DumpJson {
            df: df_of(&view, &rows, reserved_zones),
            zones: rows,
            files: file_rows(&view, true),
            metadata_zones,
        },
    })
}

/// Reads all that dump prints, and prints nothing: [`read_device`] may run it again.
fn read_dump(spec: &DeviceSpec, base: Arc<dyn ZonedDevice>) -> CliResult<Dumped> {
    let device = spec.to_string();
    let meta_zones = match meta::probe(base.as_ref()) {
        Ok(found) => found.meta_zones(),
        // Damaged superblocks only: the frames may still show where the damage is.
        Err(MetaError::Corrupt { .. }) => DEFAULT_META_ZONES,
        Err(e) => return Err(meta_error(&device, e)),
    };
    Ok(match FsView::open(Arc::clone(&base), &device) {
        Ok(view) => {
            let zones = metadata_zones(base.as_ref(), spec, view.meta_zones)?;
            Dumped::Mounted(Box::new(view), zones)
        }
        Err(e) => {
            let failed = FailedDumpJson {
                device,
                geometry: base.geometry(),
                meta_zones,
                error: e.to_string(),
                metadata_zones: metadata_zones(base.as_ref(), spec, meta_zones)?,
            };
            Dumped::Damaged(Box::new(failed), e)
        }
    })
}
