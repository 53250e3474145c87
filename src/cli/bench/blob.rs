//! BlobDB on the command line: RocksDB's blob options as `zkv bench` flags (db_bench's
//! names with dashes; its own spellings are aliases), their place in the report's config,
//! the report's `blob` section and its human summary line.

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use serde_json::{json, Value};
use zkv_engine::db::DbStats;
use zkv_engine::options::{BlobGcCutoffMode, Options};
use zkv_zonefs::fs::{FsOptions, FsStats};
use zkv_zonefs::placement::{BLOB_POLICY_TABLE, DEFAULT_BLOB_POLICY};

use super::super::error::{CliError, CliResult};
use super::super::size::parse_size;
use super::report::human_bytes;

/// RocksDB's integrated-BlobDB options (docs/CLI.md, "BlobDB").
#[derive(Debug, Args)]
pub struct BlobArgs {
    /// Key-value separation (RocksDB's integrated BlobDB): flushes and compactions write
    /// values of at least --min-blob-size bytes to blob files
    #[arg(long, alias = "enable_blob_files", value_name = "BOOL", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", hide_default_value = true,
          value_parser = BoolishValueParser::new())]
    pub(super) enable_blob_files: bool,

    /// The smallest value written to a blob file [default: 0, every value]
    #[arg(long, alias = "min_blob_size", value_name = "SIZE", value_parser = parse_size)]
    min_blob_size: Option<u64>,

    /// A blob file is finished at this size [default: 256 MiB]
    #[arg(long, alias = "blob_file_size", value_name = "SIZE", value_parser = parse_size)]
    pub(super) blob_file_size: Option<u64>,

    /// Flushes and compactions write blob files only for outputs of this level or deeper
    /// [default: 0]
    #[arg(long, alias = "blob_file_starting_level", value_name = "LEVEL")]
    blob_file_starting_level: Option<u32>,

    /// Compactions rewrite the live blobs of the oldest blob files they meet
    #[arg(long, alias = "enable_blob_garbage_collection", value_name = "BOOL", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", hide_default_value = true,
          value_parser = BoolishValueParser::new())]
    pub(super) enable_blob_garbage_collection: bool,

    /// The oldest fraction of blob files whose blobs compactions rewrite [default: 0.25]
    #[arg(
        long,
        alias = "blob_garbage_collection_age_cutoff",
        value_name = "FRACTION"
    )]
    blob_garbage_collection_age_cutoff: Option<f64>,

    /// Compact the tables of the oldest blob file once the oldest files' garbage ratio
    /// reaches this [default: 1.0, never]
    #[arg(
        long,
        alias = "blob_garbage_collection_force_threshold",
        value_name = "FRACTION"
    )]
    blob_garbage_collection_force_threshold: Option<f64>,

    /// Zones of blob files [default: liza]
    #[arg(long, value_name = "POLICY", value_parser = crate::cli::mkfs::policy_parser(BLOB_POLICY_TABLE))]
    pub(crate) blob_placement: Option<String>,

    /// Which blob files garbage collection relocates: fixed (the oldest
    /// --blob-garbage-collection-age-cutoff of them, RocksDB's) or zone (Z_Cutoff: those up
    /// to the youngest blob file of the oldest full blob zone; needs --blob-placement
    /// baza) [default: fixed]
    #[arg(long, value_name = "CUTOFF", value_parser = parse_cutoff)]
    blob_gc_cutoff: Option<BlobGcCutoffMode>,
}

fn parse_cutoff(name: &str) -> Result<BlobGcCutoffMode, String> {
    BlobGcCutoffMode::from_name(name)
        .ok_or_else(|| format!("unknown blob GC cutoff '{name}' (known: fixed, zone)"))
}

impl BlobArgs {
    /// `o` with the blob options applied. A flag that would have no effect (a blob flag
    /// without --enable-blob-files, a GC flag without --enable-blob-garbage-collection) is
    /// refused rather than ignored.
    pub fn apply(&self, o: Options) -> CliResult<Options> {
        let file_flags = [
            ("--min-blob-size", self.min_blob_size.is_some()),
            ("--blob-file-size", self.blob_file_size.is_some()),
            (
                "--blob-file-starting-level",
                self.blob_file_starting_level.is_some(),
            ),
            (
                "--enable-blob-garbage-collection",
                self.enable_blob_garbage_collection,
            ),
            ("--blob-placement", self.blob_placement.is_some()),
        ];
        let gc_flags = [
            (
                "--blob-garbage-collection-age-cutoff",
                self.blob_garbage_collection_age_cutoff.is_some(),
            ),
            (
                "--blob-garbage-collection-force-threshold",
                self.blob_garbage_collection_force_threshold.is_some(),
            ),
            ("--blob-gc-cutoff", self.blob_gc_cutoff.is_some()),
        ];
        refuse_without(&file_flags, self.enable_blob_files, "--enable-blob-files")?;
        refuse_without(
            &gc_flags,
            self.enable_blob_garbage_collection,
            "--enable-blob-garbage-collection",
        )?;
        let zone = self.blob_gc_cutoff == Some(BlobGcCutoffMode::Zone);
        if zone && self.blob_garbage_collection_age_cutoff.is_some() {
            return Err(CliError::invalid(
                "--blob-garbage-collection-age-cutoff applies to --blob-gc-cutoff fixed \
                 (zone derives the cutoff from the full blob zones)",
            ));
        }
        if zone && self.placement() != "baza" {
            return Err(CliError::invalid(
                "--blob-gc-cutoff zone needs --blob-placement baza (Z_Cutoff reads the \
                 youngest blob file of each full blob zone, which only BAZA's zones record)",
            ));
        }
        Ok(Options {
            enable_blob_files: self.enable_blob_files,
            min_blob_size: self.min_blob_size.unwrap_or(o.min_blob_size),
            blob_file_size: self.blob_file_size.unwrap_or(o.blob_file_size),
            blob_file_starting_level: self
                .blob_file_starting_level
                .unwrap_or(o.blob_file_starting_level),
            enable_blob_garbage_collection: self.enable_blob_garbage_collection,
            blob_garbage_collection_age_cutoff: self
                .blob_garbage_collection_age_cutoff
                .unwrap_or(o.blob_garbage_collection_age_cutoff),
            blob_garbage_collection_force_threshold: self
                .blob_garbage_collection_force_threshold
                .unwrap_or(o.blob_garbage_collection_force_threshold),
            blob_gc_cutoff: self.blob_gc_cutoff.unwrap_or(o.blob_gc_cutoff),
            ..o
        })
    }
}

impl BlobArgs {
    /// `o` with the blob placement applied (checked with the other blob flags by
    /// [`BlobArgs::apply`]).
    pub fn apply_fs(&self, o: FsOptions) -> FsOptions {
        o.with_blob_placement(self.placement())
    }

    /// The blob placement the run uses.
    pub fn placement(&self) -> &str {
        self.blob_placement
            .as_deref()
            .unwrap_or(DEFAULT_BLOB_POLICY)
    }

    /// The blob GC cutoff the run uses.
    pub fn gc_cutoff(&self) -> BlobGcCutoffMode {
        self.blob_gc_cutoff.unwrap_or_default()
    }
}

fn refuse_without(flags: &[(&str, bool)], on: bool, needed: &str) -> CliResult {
    match flags.iter().find(|(_, given)| *given) {
        Some((flag, _)) if !on => Err(CliError::invalid(format!(
            "{flag} needs {needed} (without it the flag would have no effect)"
        ))),
        _ => Ok(()),
    }
}

/// The blob options in the report's config (their RocksDB names).
pub fn config(o: &Options) -> Value {
    json!({
        "enable_blob_files": o.enable_blob_files,
        "min_blob_size": o.min_blob_size,
        "blob_file_size": o.blob_file_size,
        "blob_file_starting_level": o.blob_file_starting_level,
        "enable_blob_garbage_collection": o.enable_blob_garbage_collection,
        "blob_garbage_collection_age_cutoff": o.blob_garbage_collection_age_cutoff,
        "blob_garbage_collection_force_threshold": o.blob_garbage_collection_force_threshold,
        "blob_gc_cutoff": o.blob_gc_cutoff.name(),
    })
}

/// The report's `blob` section (docs/CLI.md): blob files written, deleted and live, bytes
/// written and relocated by garbage collection, garbage and live bytes now, and the zone
/// cleaner's copies of blob file data.
pub fn to_json(db: &DbStats, fs: &FsStats) -> Value {
    let b = &db.blob;
    json!({
        "files": b.live_files,
        "files_created": b.files_created,
        "files_deleted": b.files_deleted,
        "blob_bytes_written": b.bytes_written,
        "gc_relocated": b.gc_relocated,
        "gc_relocated_bytes": b.gc_relocated_bytes,
        "file_bytes": b.file_bytes,
        "garbage_bytes": b.garbage_bytes,
        "live_bytes": b.total_bytes.saturating_sub(b.garbage_bytes),
        "space_amp": space_amp(b.file_bytes, b.total_bytes.saturating_sub(b.garbage_bytes)),
        "zone_copy_bytes": fs.gc.blob_copy_bytes,
    })
}

fn space_amp(file_bytes: u64, live: u64) -> f64 {
    if live == 0 {
        0.0
    } else {
        file_bytes as f64 / live as f64
    }
}

/// `Blob files: 12 live (30 written, 18 deleted), 1.2 GiB written, GC relocated 300 MiB,
/// garbage 10.0 MiB of 400 MiB, cleaning copied 0 B`
pub fn line(db: &DbStats, fs: &FsStats) -> String {
    let b = &db.blob;
    format!(
        "Blob files: {} live ({} written, {} deleted), {} written, GC relocated {}, garbage \
         {} of {}, zone cleaning copied {} of blob files",
        b.live_files,
        b.files_created,
        b.files_deleted,
        human_bytes(b.bytes_written),
        human_bytes(b.gc_relocated_bytes),
        human_bytes(b.garbage_bytes),
        human_bytes(b.total_bytes),
        human_bytes(fs.gc.blob_copy_bytes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        blob: BlobArgs,
    }

    fn apply(args: &[&str]) -> CliResult<Options> {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
        cli.blob.apply(Options::default())
    }

    #[test]
    fn flags_set_rocksdb_s_options() {
        let o = apply(&[
            "--enable-blob-files",
            "--min-blob-size",
            "1KiB",
            "--enable-blob-garbage-collection",
            "--blob-garbage-collection-age-cutoff",
            "0.5",
        ])
        .unwrap();
        assert!(o.enable_blob_files && o.enable_blob_garbage_collection);
        assert_eq!(o.min_blob_size, 1024);
        assert_eq!(o.blob_garbage_collection_age_cutoff, 0.5);
        assert_eq!(o.blob_file_size, 256 << 20);
    }

    #[test]
    fn blob_placement_sets_the_file_system_option() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()));
            cli.unwrap()
                .blob
                .apply_fs(FsOptions::default())
                .blob_placement
        };
        assert_eq!(parse(&[]), "liza");
        assert_eq!(
            parse(&["--enable-blob-files", "--blob-placement", "baza"]),
            "baza"
        );
        let e = apply(&["--blob-placement", "baza"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--blob-placement needs --enable-blob-files"),
            "{e}"
        );
    }

    #[test]
    fn flags_without_effect_are_refused() {
        let e = apply(&["--min-blob-size", "100"]).unwrap_err().to_string();
        assert!(
            e.contains("--min-blob-size needs --enable-blob-files"),
            "{e}"
        );
        let e = apply(&[
            "--enable-blob-files",
            "--blob-garbage-collection-age-cutoff",
            "0.5",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("needs --enable-blob-garbage-collection"), "{e}");
    }
}
