//! `zkv salvage`: copy every key that can still be read from a damaged store into a new
//! image or a dump file, and say what was lost ([`zkv_engine::db::salvage`]; RocksDB's repair
//! is the model).
//!
//! The damaged device is only read. `--to file:PATH` creates a new image with the damaged
//! one's geometry and file system options and writes the keys into a new database there;
//! `--dump PATH` writes one line per key, key and value in hex digits separated by a tab
//! (what `zkv scan --hex` prints).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde::Serialize;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, SalvageReport, WriteOptions};
use zkv_engine::options::Options;
use zkv_zns::{DeviceSpec, ZonedDevice};
use zkv_zonefs::fs::{InlineCleaning, ZoneFs};

use super::check::plural;
use super::check::{db_finding, finding_text, FindingJson};
use super::device::{disturbed, open_for_reading, parse_device, WaitArg};
use super::error::{CliError, CliResult};
use super::fsview::fs_error;
use super::geometry::create_image;
use super::kv::{base_options, db_error, no_database, to_hex};
use super::size::human_size;
use super::Out;

const SALVAGE_EXAMPLES: &str = "\
Examples:
  zkv salvage --device file:/tmp/damaged.img --to file:/tmp/saved.img
  zkv salvage --device file:/tmp/damaged.img --dump saved.tsv
  zkv salvage --device file:/tmp/damaged.img --dump - | head

The damaged device is never written. --to creates a new image with the damaged one's
geometry and options; --dump writes 'KEY<tab>VALUE' lines in hex digits (as 'zkv scan
--hex' prints them; - is standard output, the report then goes to stderr). Keys in the
range of a damaged part may be missing, hold an older value, or be back although deleted:
the report lists those ranges ('zkv check' lists the same damage).";

#[derive(Debug, Args)]
#[command(after_help = SALVAGE_EXAMPLES)]
pub struct SalvageArgs {
    /// The damaged device: file:PATH or zbd:/dev/DEV
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    /// A new image to write the keys to (file:PATH, must not exist)
    #[arg(long, value_name = "DEVICE", value_parser = parse_device,
          required_unless_present = "dump", conflicts_with = "dump")]
    to: Option<DeviceSpec>,

    /// A new file to write the keys to, one line each: key, a tab, value, in hex (- : stdout)
    #[arg(long, value_name = "PATH")]
    dump: Option<PathBuf>,

    /// Print the report as JSON
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    wait: WaitArg,
}

#[derive(Serialize)]
struct SalvageJson {
    device: String,
    to: String,
    keys: u64,
    value_bytes: u64,
    entries_read: u64,
    tables: u64,
    wal_records: u64,
    version_known: bool,
    /// The damage: what may be missing or stale.
    lost: Vec<FindingJson>,
}

/// Where the keys go.
enum Sink {
    Db(Db),
    Dump(Box<dyn Write>),
}

pub fn run(args: SalvageArgs) -> CliResult {
    let spec = &args.device;
    let reader = open_for_reading(spec, args.wait.wait)?;
    let dev = Arc::clone(&reader.dev);
    let fs = ZoneFs::mount_read_only(Arc::clone(&dev)).map_err(|e| {
        CliError::invalid(format!(
            "cannot salvage: {}",
            fs_error(&spec.to_string(), e)
        ))
    })?;
    let fs = Arc::new(fs);
    if !zkv_engine::version::VersionSet::exists(&fs) {
        return Err(no_database(spec));
    }
    let (mut sink, to) = match (&args.to, &args.dump) {
        (Some(to), _) => (Sink::Db(new_store(to, dev.as_ref(), &fs)?), to.to_string()),
        (None, Some(path)) => (Sink::Dump(dump_file(path)?), path.display().to_string()),
        (None, None) => return Err(CliError::invalid("salvage: give --to or --dump")),
    };
    let report = copy(&fs, &mut sink)?;
    let stdout_taken = args.dump.as_deref() == Some(Path::new("-"));
    finish(sink, args.to.as_ref())?;
    // A writer that reset a zone under the salvage made reads fail that would otherwise
    // have succeeded: the losses it reports are not the damage's. Its output goes.
    if reader.disturbed() {
        remove_output(&args);
        return Err(disturbed(spec, "salvage"));
    }
    let json = SalvageJson {
        device: spec.to_string(),
        to,
        keys: report.keys,
        value_bytes: report.value_bytes,
        entries_read: report.entries,
        tables: report.check.tables,
        wal_records: report.check.wal_records,
        version_known: report.check.version_known,
        lost: report.check.damage().map(db_finding).collect(),
    };
    print_report(&json, args.json, stdout_taken)
}

/// Runs the salvage into `sink`: batches of about 1 MiB into a database, lines into a dump.
fn copy(fs: &Arc<ZoneFs>, sink: &mut Sink) -> CliResult<SalvageReport> {
    let mut batch = WriteBatch::new();
    let write_error =
        |e: std::io::Error| zkv_engine::Error::InvalidArgument(format!("writing: {e}"));
    let report = zkv_engine::db::salvage(fs, &base_options(), &mut |key, value| match sink {
        Sink::Db(db) => {
            batch.put(key, value);
            if batch.data().len() >= 1 << 20 {
                db.write(&WriteOptions::default(), std::mem::take(&mut batch))?;
            }
            Ok(())
        }
        Sink::Dump(w) => writeln!(w, "{}\t{}", to_hex(key), to_hex(value)).map_err(write_error),
    });
    let report = report.map_err(|e| CliError::invalid(format!("salvage: {e}")))?;
    if let Sink::Db(db) = sink {
        if !batch.is_empty() {
            db.write(&WriteOptions::default(), batch)
                .map_err(|e| CliError::invalid(format!("salvage: {e}")))?;
        }
    }
    Ok(report)
}

/// A new image shaped as the damaged device, formatted with its file system's options, and
/// an empty database on it.
fn new_store(to: &DeviceSpec, from: &dyn ZonedDevice, fs: &ZoneFs) -> CliResult<Db> {
    let DeviceSpec::File(path) = to else {
        return Err(CliError::invalid(format!(
            "--to {to}: salvage writes to a new image, file:PATH"
        )));
    };
    let dev: Arc<dyn ZonedDevice> = Arc::new(create_image(path, from.geometry(), "salvage")?);
    let new_fs =
        ZoneFs::format(dev, fs.options().clone()).map_err(|e| fs_error(&to.to_string(), e))?;
    new_fs.set_inline_mode(InlineCleaning::OutOfSpace);
    let options = Options {
        create_if_missing: true,
        ..base_options()
    };
    Db::open(Arc::new(new_fs), options).map_err(|e| db_error(to, e))
}

/// Removes what a salvage wrote: the new image or the dump file (not standard output).
fn remove_output(args: &SalvageArgs) {
    let path = match (&args.to, &args.dump) {
        (Some(DeviceSpec::File(path)), _) => Some(path.as_path()),
        (None, Some(path)) if path != Path::new("-") => Some(path.as_path()),
        _ => None,
    };
    if let Some(path) = path {
        let _ = std::fs::remove_file(path);
    }
}

/// A new dump file (never an existing one), or standard output for `-`.
fn dump_file(path: &Path) -> CliResult<Box<dyn Write>> {
    if path == Path::new("-") {
        return Ok(Box::new(BufWriter::new(std::io::stdout())));
    }
    let file = File::create_new(path)
        .map_err(|e| CliError::invalid(format!("--dump {}: {e}", path.display())))?;
    Ok(Box::new(BufWriter::new(file)))
}

/// Closes the new database (its writes synced) or flushes the dump.
fn finish(sink: Sink, to: Option<&DeviceSpec>) -> CliResult {
    match (sink, to) {
        (Sink::Db(db), Some(to)) => {
            let dev = db.zone_fs().map(|fs| Arc::clone(fs.device()));
            db.flush().map_err(|e| db_error(to, e))?;
            db.close().map_err(|e| db_error(to, e))?;
            if let Some(dev) = dev {
                dev.sync()?;
            }
            Ok(())
        }
        (Sink::Dump(mut w), _) => w
            .flush()
            .map_err(|e| CliError::invalid(format!("--dump: {e}"))),
        (Sink::Db(_), None) => Err(CliError::invalid("salvage: a database without --to")),
    }
}

fn print_report(r: &SalvageJson, json: bool, stdout_taken: bool) -> CliResult {
    let mut text = Vec::new();
    if json {
        text.push(
            serde_json::to_string_pretty(r)
                .map_err(|e| CliError::invalid(format!("encoding the report as JSON: {e}")))?,
        );
    } else {
        text.push(format!(
            "salvaged {} ({} of values) from {} into {}: {} read from {} and {}",
            plural(r.keys as usize, "key"),
            human_size(r.value_bytes),
            r.device,
            r.to,
            plural(r.entries_read as usize, "entry"),
            plural(r.tables as usize, "table"),
            plural(r.wal_records as usize, "WAL record"),
        ));
        if r.lost.is_empty() {
            text.push("nothing was lost: every table block and WAL record was read".into());
        }
        for f in &r.lost {
            text.push(format!("lost: {}", finding_text(f)));
        }
        if !r.version_known {
            text.push(
                "the manifest could not be read: every table and WAL was merged, so keys \
                 deleted long ago may be back"
                    .into(),
            );
        }
    }
    if stdout_taken {
        // The dump took standard output.
        let mut err = std::io::stderr().lock();
        for line in text {
            writeln!(err, "{line}").map_err(CliError::Output)?;
        }
        return Ok(());
    }
    let mut out = Out::new();
    for line in text {
        out.line(line)?;
    }
    out.flush()
}
