//! `zkv check`: verify a zkv store without changing it (fsck for the file layer, RocksDB's
//! `ldb checkconsistency` for the database) and report every problem found, with the keys
//! each damaged part may have held.
//!
//! The device is opened read-only and the file system mounted read-only. The file layer is
//! checked first (what the metadata recovery repaired or passed over, every extent against
//! its zone's write pointer, zones that went offline), then the database
//! ([`zkv_engine::db::check`]: CURRENT, the manifest, every block of every live table, every
//! WAL record, leftovers). Exit status: 0 when nothing is damaged (notices allowed), 1 when
//! something is, or when the check could not run.

use std::sync::Arc;

use clap::Args;
use serde::Serialize;
use zkv_engine::db::{CheckReport, Finding, KeyRange, Severity};
use zkv_zns::{DeviceSpec, ZonedDevice};
use zkv_zonefs::fs::{FsFinding, ZoneFs};

use super::device::{parse_device, read_device, WaitArg};
use super::error::{CliError, CliResult};
use super::fsview::fs_error;
use super::kv::{base_options, db_error, quoted, to_hex};
use super::Out;

const CHECK_EXAMPLES: &str = "\
Examples:
  zkv check --device file:/tmp/zns.img
  zkv check --device file:/tmp/zns.img --json > check.json

Nothing is written to the device. Exit status 0: nothing is damaged (notices, such as
leftovers the next read-write open deletes, may be listed); 1: something is damaged, or
the check could not run. 'zkv salvage' copies every key that can still be read.";

#[derive(Debug, Args)]
#[command(after_help = CHECK_EXAMPLES)]
pub struct CheckArgs {
    /// The device: file:PATH or zbd:/dev/DEV, formatted by 'zkv mkfs'
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    /// Print the report as JSON (field names in docs/CLI.md)
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    wait: WaitArg,
}

/// One finding as printed: from either layer.
#[derive(Clone, Debug, Serialize)]
pub struct FindingJson {
    pub severity: &'static str,
    /// "file system" or "database".
    pub layer: &'static str,
    pub zone: Option<u32>,
    pub file: Option<String>,
    pub what: String,
    /// The user keys whose newest writes a damaged part may hold (both ends included).
    pub keys: Option<KeysJson>,
}

/// A key range: as `zkv scan` prints keys, and as hex digits (exact).
#[derive(Clone, Debug, Serialize)]
pub struct KeysJson {
    pub smallest: String,
    pub largest: String,
    pub smallest_hex: String,
    pub largest_hex: String,
}

#[derive(Debug, Serialize)]
struct DatabaseJson {
    manifest: Option<String>,
    last_sequence: Option<u64>,
    version_known: bool,
    tables: u64,
    table_bytes: u64,
    data_blocks: u64,
    entries: u64,
    wals: u64,
    wal_bytes: u64,
    wal_records: u64,
    blob_files: u64,
    blob_bytes: u64,
    blobs: u64,
}

#[derive(Debug, Serialize)]
struct CheckJson {
    device: String,
    clean: bool,
    damage: usize,
    notices: usize,
    /// Whether the file system could be mounted (false: nothing else was checked).
    mounted: bool,
    /// Whether the file system holds a database (false: only the file layer was checked).
    database: Option<DatabaseJson>,
    findings: Vec<FindingJson>,
}

pub fn run(args: CheckArgs) -> CliResult {
    let spec = &args.device;
    // A check that met a zone a writer reset under it runs again (see docs/CLI.md,
    // "Sharing a device").
    let checked = read_device(spec, args.wait.wait, |dev| check(spec, dev))?;
    let mut out = Out::new();
    if args.json {
        out.json(&checked)?;
    } else {
        print_human(&checked, &mut out)?;
    }
    out.flush()?;
    if checked.clean {
        return Ok(());
    }
    Err(CliError::invalid(format!(
        "{spec}: damaged ({}; see the report); 'zkv salvage' copies every key that can \
         still be read",
        plural(checked.damage, "damaged finding")
    )))
}

/// Runs both layers' checks.
fn check(spec: &DeviceSpec, dev: Arc<dyn ZonedDevice>) -> CliResult<CheckJson> {
    let mut checked = CheckJson {
        device: spec.to_string(),
        clean: true,
        damage: 0,
        notices: 0,
        mounted: false,
        database: None,
        findings: Vec::new(),
    };
    match ZoneFs::mount_read_only(dev) {
        Ok(fs) => {
            checked.mounted = true;
            let fs = Arc::new(fs);
            let found = fs.check().map_err(|e| fs_error(&checked.device, e))?;
            checked.findings.extend(found.iter().map(fs_finding));
            if zkv_engine::version::VersionSet::exists(&fs) {
                let report =
                    zkv_engine::db::check(&fs, &base_options()).map_err(|e| db_error(spec, e))?;
                checked
                    .findings
                    .extend(report.findings.iter().map(db_finding));
                checked.database = Some(database_json(&report));
            }
        }
        Err(e) => checked.findings.push(FindingJson {
            severity: "damage",
            layer: "file system",
            zone: None,
            file: None,
            what: format!(
                "the file system cannot be mounted: {}",
                one_line_error(spec, e)
            ),
            keys: None,
        }),
    }
    checked.damage = checked
        .findings
        .iter()
        .filter(|f| f.severity == "damage")
        .count();
    checked.notices = checked.findings.len() - checked.damage;
    checked.clean = checked.damage == 0;
    Ok(checked)
}

fn one_line_error(spec: &DeviceSpec, e: zkv_zonefs::fs::FsError) -> String {
    fs_error(&spec.to_string(), e).to_string()
}

fn fs_finding(f: &FsFinding) -> FindingJson {
    FindingJson {
        severity: if f.damage { "damage" } else { "notice" },
        layer: "file system",
        zone: f.zone,
        file: None,
        what: f.what.clone(),
        keys: None,
    }
}

pub fn db_finding(f: &Finding) -> FindingJson {
    FindingJson {
        severity: match f.severity {
            Severity::Damage => "damage",
            Severity::Notice => "notice",
        },
        layer: "database",
        zone: None,
        file: f.file.clone(),
        what: f.what.clone(),
        keys: f.keys.as_ref().map(keys_json),
    }
}

fn keys_json(k: &KeyRange) -> KeysJson {
    KeysJson {
        smallest: quoted(&k.smallest, false),
        largest: quoted(&k.largest, false),
        smallest_hex: to_hex(&k.smallest),
        largest_hex: to_hex(&k.largest),
    }
}

fn database_json(r: &CheckReport) -> DatabaseJson {
    DatabaseJson {
        manifest: r.manifest.clone(),
        last_sequence: r.last_sequence,
        version_known: r.version_known,
        tables: r.tables,
        table_bytes: r.table_bytes,
        data_blocks: r.data_blocks,
        entries: r.entries,
        wals: r.wals,
        wal_bytes: r.wal_bytes,
        wal_records: r.wal_records,
        blob_files: r.blob_files,
        blob_bytes: r.blob_bytes,
        blobs: r.blobs,
    }
}

fn print_human(c: &CheckJson, out: &mut Out) -> CliResult {
    out.line(format!("{}: {}", c.device, what_was_checked(c)))?;
    for f in &c.findings {
        out.line(finding_line(f))?;
    }
    let verdict = if c.clean { "clean" } else { "damaged" };
    out.line(format!(
        "result: {verdict} ({}, {})",
        plural(c.damage, "damaged finding"),
        plural(c.notices, "notice")
    ))
}

fn what_was_checked(c: &CheckJson) -> String {
    if !c.mounted {
        return "the file system could not be mounted".into();
    }
    let Some(d) = &c.database else {
        return "checked the file system; it holds no database".into();
    };
    let manifest = d.manifest.as_deref().unwrap_or("no readable manifest");
    let blobs = match d.blob_files {
        0 => String::new(),
        n => format!(
            "; {}, {}",
            plural(n as usize, "blob file"),
            plural(d.blobs as usize, "blob")
        ),
    };
    format!(
        "checked the file system and the database ({manifest}, {}, {} data blocks, {}; {}, \
         {}{blobs})",
        plural(d.tables as usize, "table"),
        d.data_blocks,
        plural(d.entries as usize, "entry"),
        plural(d.wals as usize, "WAL"),
        plural(d.wal_records as usize, "record"),
    )
}

/// `damage  000012.sst: data block 3: ...; keys 'a' to 'k'`
fn finding_line(f: &FindingJson) -> String {
    format!("{:<7} {}", f.severity, finding_text(f))
}

/// A finding without its severity: `000012.sst: data block 3: ...; keys 'a' to 'k'`.
pub fn finding_text(f: &FindingJson) -> String {
    let mut line = String::new();
    if let Some(zone) = f.zone {
        line.push_str(&format!("zone {zone}: "));
    }
    if let Some(file) = &f.file {
        line.push_str(&format!("{file}: "));
    }
    line.push_str(&f.what);
    if let Some(k) = &f.keys {
        line.push_str(&format!("; keys {} to {}", k.smallest, k.largest));
    }
    line
}

pub fn plural(n: usize, what: &str) -> String {
    // "entry" -> "entries", but "key" -> "keys".
    let consonant_y = what
        .strip_suffix('y')
        .filter(|stem| !stem.ends_with(['a', 'e', 'i', 'o', 'u']));
    match (n, consonant_y) {
        (1, _) => format!("1 {what}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_read_well() {
        assert_eq!(plural(1, "entry"), "1 entry");
        assert_eq!(plural(2, "entry"), "2 entries");
        assert_eq!(plural(0, "table"), "0 tables");
        assert_eq!(plural(2, "key"), "2 keys");
        assert_eq!(plural(3, "damaged finding"), "3 damaged findings");
    }

    #[test]
    fn a_finding_is_one_line_with_its_keys() {
        let f = FindingJson {
            severity: "damage",
            layer: "database",
            zone: None,
            file: Some("000012.sst".into()),
            what: "data block 3: checksum mismatch".into(),
            keys: Some(keys_json(&KeyRange {
                smallest: b"a\tb".to_vec(),
                largest: b"k".to_vec(),
            })),
        };
        assert_eq!(
            finding_line(&f),
            "damage  000012.sst: data block 3: checksum mismatch; keys 'a\\tb' to 'k'"
        );
    }
}
