//! `zkv inspect fs-info`: the file system itself rather than what it holds: the device's
//! geometry, where the metadata lives, the format versions on the device, the metadata
//! log's generation and commit, and the options the metadata records.

use serde::Serialize;
use zkv_zns::emu::image_format_version;
use zkv_zns::DeviceSpec;
use zkv_zonefs::meta::{self, FORMAT_VERSION, MIN_READ_VERSION};

use super::error::CliResult;
use super::fsview::{meta_error, FsView};
use super::geometry::limit;
use super::inspect::{envelope, mount_notes, Enveloped, OptionsJson};
use super::size::format_size;
use super::table::{Align, Table};
use super::Out;

/// `fs-info --json`: the inspect envelope (device, geometry, meta_zones, mount with the
/// log's generation and commit), then these fields.
#[derive(Clone, Debug, Serialize)]
struct FsInfo {
    data_zones: u32,
    /// The zone image format of a `file:` device; null for a zoned block device.
    image_format_version: Option<u32>,
    /// The format version of the newest metadata superblock.
    metadata_format_version: u32,
    /// The metadata format versions this build reads, oldest and newest.
    metadata_versions_read: [u32; 2],
    options: OptionsJson,
    files: usize,
    file_bytes: u64,
}

fn fs_info(view: &FsView, spec: &DeviceSpec) -> CliResult<FsInfo> {
    let newest = meta::probe(view.fs.device().as_ref()).map_err(|e| meta_error(&view.device, e))?;
    let files = view.fs.list();
    Ok(FsInfo {
        data_zones: view.geo.zones.saturating_sub(view.meta_zones),
        image_format_version: match spec {
            DeviceSpec::File(path) => Some(image_format_version(path)?),
            _ => None,
        },
        metadata_format_version: newest.version(),
        metadata_versions_read: [MIN_READ_VERSION, FORMAT_VERSION],
        options: OptionsJson::of(view.fs.options()),
        files: files.len(),
        file_bytes: files.iter().map(|f| f.size).sum(),
    })
}

/// Prints `fs-info` for the file system of `view`, opened from `spec`.
pub fn show(view: &FsView, spec: &DeviceSpec, json: bool, out: &mut Out) -> CliResult {
    let info = fs_info(view, spec)?;
    if json {
        let envelope = envelope(view);
        return out.json(&Enveloped {
            envelope,
            body: info,
        });
    }
    for line in rows(view, &info).lines().into_iter().skip(1) {
        out.line(line)?;
    }
    mount_notes(view, out)
}

/// One `name  value` row per figure (the table's header is not printed).
fn rows(view: &FsView, info: &FsInfo) -> Table {
    let g = &view.geo;
    let last = g.zones.saturating_sub(1);
    let meta_last = view.meta_zones.saturating_sub(1);
    let o = &info.options;
    let log = view.mount.as_ref().map_or_else(
        || "-".to_string(),
        |m| {
            format!(
                "generation {} in zone {}, commit {}",
                m.seq, m.zone, m.commit
            )
        },
    );
    let rows = [
        ("device", view.device.clone()),
        ("zones", g.zones.to_string()),
        ("zone size", format_size(g.zone_size)),
        ("zone capacity", format_size(g.zone_capacity)),
        ("block size", format_size(u64::from(g.block_size))),
        ("max open zones", limit(g.max_open)),
        ("max active zones", limit(g.max_active)),
        (
            "metadata zones",
            format!("{} (zones 0-{meta_last})", view.meta_zones),
        ),
        (
            "data zones",
            format!("{} (zones {}-{last})", info.data_zones, view.meta_zones),
        ),
        (
            "image format",
            info.image_format_version
                .map_or_else(|| "- (a zoned block device)".to_string(), version),
        ),
        (
            "metadata format",
            format!(
                "{} (this build reads versions {} to {}, writes {FORMAT_VERSION})",
                version(info.metadata_format_version),
                info.metadata_versions_read[0],
                info.metadata_versions_read[1]
            ),
        ),
        ("metadata log", log),
        ("reserved zones", o.reserved_zones.to_string()),
        ("placement", o.placement.clone()),
        (
            "finish threshold",
            o.finish_threshold
                .map_or_else(|| "none".to_string(), |p| format!("{p}%")),
        ),
        ("gc start/stop", format!("{}% / {}%", o.gc_start, o.gc_stop)),
        ("gc mode", o.gc_mode.clone()),
        (
            "files",
            format!("{}, {}", info.files, format_size(info.file_bytes)),
        ),
    ];
    let mut t = Table::new(&[("", Align::Left), ("", Align::Left)]);
    for (name, value) in rows {
        t.row(vec![name.to_string(), value]);
    }
    t
}

fn version(v: u32) -> String {
    format!("version {v}")
}
