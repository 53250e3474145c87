//! `zkv bench`: db_bench and YCSB workloads on an emulated zoned device, with the LSM's,
//! the device's and the zone cleaner's figures at the end (DESIGN.md sections 7 to 9).
//!
//! Everything the flags say is checked before any work starts (workloads, options, the
//! device's room for the data, the JSON path); a failure during the run (out of space)
//! still prints and writes the report of what ran, then exits non-zero.

mod blob;
mod dbbench;
mod existing;
mod lifetime;
mod mixgraph;
mod posix;
mod preset;
mod progress;
mod report;
mod runner;
mod to_db_bench;
mod verify;
mod ycsb;

pub(crate) use preset::scale as preset_scale;
pub(crate) use runner::INVALID_BUCKETS;
pub(crate) use to_db_bench::DbBenchPlan;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::builder::{BoolishValueParser, PossibleValuesParser};
use clap::{ArgAction, Args};
use serde_json::{json, Value};
use zkv_bench::ycsb::MAX_VALUE_SIZE;
use zkv_bench::{
    parse_workload_list, DbBenchConfig, DbBenchGenerator, DbBenchWorkload, MixGraphGenerator,
    RequestDistribution, WorkloadName, YcsbWorkload,
};
use zkv_engine::compaction::{picker_entry, picker_with, Acc, Picker, PICKER_TABLE};
use zkv_engine::db::{Db, WriteOptions};
use zkv_engine::fs::{FileSystem, PosixFs};
use zkv_engine::options::{CompressionType, ExecMode, Options, SimCosts};
use zkv_zns::emu::{Emulated, Storage};
use zkv_zns::timing::{TimingModel, TimingPreset};
use zkv_zns::{DeviceSpec, Geometry, MemDevice, ZonedDevice};
use zkv_zonefs::fs::{CleanerThread, FsError, FsOptions, ZoneFs};
use zkv_zonefs::meta::DEFAULT_META_ZONES;

use super::compare::schemes::{scheme_name, Parts};
use super::device::{parse_device, refuse_unknown};
use super::error::{CliError, CliResult};
use super::fsview::fs_error;
use super::geometry::{create_image, GeometryArgs};
use super::mkfs::FsArgs;
use super::size::{format_size, parse_positive_size, parse_size, MIB};
use super::Out;
use posix::FsSpec;
use progress::Progress;
use report::Report;
use runner::{Job, Runner};
use verify::VerifyResult;
use ycsb::PropertiesFile;

/// Device shape when no geometry flag says otherwise: DESIGN.md section 10's scale.
const DEFAULT_ZONES: u32 = 100;
const DEFAULT_ZONE_SIZE: u64 = 64 * MIB;

/// Values of u mixgraph's mean value size is taken over when a run is sized.
const MEAN_VALUE_SAMPLES: u64 = 10_000;

/// ACC's turning point as the MSST'24 paper runs it (the engine's `Options` default, in
/// percent): ZACA's order at or below 25 % free space.
const DEFAULT_ACC_TURNING_POINT: u8 = 25;
/// ACC's first level ordered by ZACA, as in the paper (the engine's `Options` default).
const DEFAULT_ACC_MIN_LEVEL: usize = 2;
/// The ACC flags: clap id and flag.
const ACC_FLAGS: [(&str, &str); 2] = [
    ("acc_turning_point", "--acc-turning-point"),
    ("acc_min_level", "--acc-min-level"),
];

/// Prophet's SHORT_THRESHOLD flag.
const SHORT_FLAG: &str = "--short-threshold";

const BENCH_HELP: &str = "\
Examples:
  zkv bench --workload fillrandom --num 100000 --value-size 1KiB
  zkv bench --workload fillseq,overwrite --num 20000 --value-size 256 --zones 32 \\
            --zone-size 4MiB --write-buffer-size 256KiB --target-file-size-base 256KiB \\
            --max-bytes-for-level-base 1MiB --mode deterministic --verify --json run.json
  zkv bench --preset samezone24 --quick --placement caza+ --picker acc
  zkv bench --preset samezone24 --quick --workload ycsb-a --request-distribution latest
  zkv bench -P workloads/workloada --ycsb-phase load --device file:ycsb.img
  zkv bench -P workloads/workloada --ycsb-phase run --device file:ycsb.img
  zkv bench --workload fillrandom --num 100000 --device file:db.img
  zkv bench --workload fillrandom,readrandom,readwhilewriting --num 100000 --threads 4 --verify
  zkv bench --fs posix:/tmp/zkv-db --workload fillrandom,overwrite --num 100000 --verify
  zkv bench --use-existing-db --workload readrandom,readseq --num 100000 --device file:db.img
  zkv bench --workload fillrandom,mixgraph --num 100000 --reads 200000 --key-size 48 \\
            --keyrange-num 30 --keyrange-dist-a 14.18 --keyrange-dist-b -2.917 \\
            --keyrange-dist-c 0.0164 --keyrange-dist-d -0.08082 --key-dist-a 0.002312 \\
            --key-dist-b 0.3467 --mix-get-ratio 0.85 --mix-put-ratio 0.14 --mix-seek-ratio 0.01

Workloads: fillseq, fillrandom, overwrite, readrandom, readrandomwriterandom, fillbatch,
readseq, readreverse, seekrandom, deleterandom, readwhilewriting (threaded mode), mixgraph
(db_bench; mixgraph's own flags are grouped above), ycsb-a .. ycsb-f (YCSB: a load of --num records, then --num operations), ycsb
(YCSB's CoreWorkload as -P's file and -p set it), idle; a comma list runs in sequence on the
same store. db_bench's flag spellings work too (--benchmarks, --value_size, --compaction_pri
3, --disable_wal=1, --use_existing_db=1, ...: docs/CLI.md).
The device defaults to 100 zones of 64 MiB in memory; file:PATH creates a new image that
is kept after the run, and --use-existing-db runs on the database such an image holds.
--fs posix:DIR runs the same engine on plain files in the directory DIR (new or empty) instead
of the zoned file layer (--fs posix: in a temporary directory, removed after the run): no
zones, no placement, no zone cleaning; the zone flags are refused.
Engine options default to RocksDB's; the picker defaults to sica and the placement to liza
(the papers' baseline).";

#[derive(Debug, Args)]
#[command(after_help = BENCH_HELP)]
pub struct BenchArgs {
    /// Which flags the command line gave, so that a preset fills in only the others. It
    /// stays the first field: clap's derive takes each field's values out of the matches
    /// as it fills that field, so the fields after this one are still there to be seen.
    #[command(flatten)]
    given: preset::GivenFlags,

    /// Workloads to run in sequence on the same store, comma separated (db_bench's
    /// --benchmarks)
    #[arg(long, visible_alias = "benchmarks", value_name = "LIST", default_value = "fillrandom",
          value_parser = parse_workloads)]
    workload: WorkloadList,

    /// Operations per workload, and the key space 0..num (YCSB: records and operations,
    /// unless --recordcount, --operationcount or -P's file say otherwise)
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    num: u64,

    /// Operations of readrandom, readrandomwriterandom, readseq, readreverse, seekrandom,
    /// readwhilewriting (per reader) and mixgraph (db_bench's --reads); -1 = --num [default:
    /// --num]
    #[arg(long, value_name = "N", value_parser = dbbench::parse_count,
          allow_negative_numbers = true)]
    reads: Option<dbbench::OrNum>,

    /// Deletes of deleterandom (db_bench's --deletes); -1 = --num [default: --num]
    #[arg(long, value_name = "N", value_parser = dbbench::parse_count,
          allow_negative_numbers = true)]
    deletes: Option<dbbench::OrNum>,

    /// seekrandom: records read after each seek (db_bench's --seek_nexts)
    #[arg(long, alias = "seek_nexts", value_name = "N", default_value_t = 0)]
    seek_nexts: u64,

    /// Stop each of db_bench's random workloads (fillrandom, overwrite, readrandom,
    /// readrandomwriterandom, seekrandom, deleterandom, readwhilewriting, mixgraph) after
    /// this many seconds
    /// on the database's clock (virtual in deterministic mode), if its operations are not
    /// done by then; 0 = no limit (db_bench's --duration)
    #[arg(long, value_name = "SECONDS", value_parser = dbbench::parse_duration,
          allow_negative_numbers = true)]
    duration: Option<Duration>,

    /// Key size of the db_bench workloads (YCSB keys are YCSB's `user...` strings)
    #[arg(long, alias = "key_size", value_name = "SIZE", default_value = "16",
          value_parser = parse_positive_size, allow_hyphen_values = true)]
    key_size: u64,

    /// Value size of every put
    #[arg(long, alias = "value_size", value_name = "SIZE", default_value = "1024",
          value_parser = parse_positive_size, allow_hyphen_values = true)]
    value_size: u64,

    /// Seed of the key and value streams: the same seed gives the same operations
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,

    /// Client threads issuing the db_bench workloads' operations at once against the same
    /// database, each running the workload's whole count with a seed of its own, as
    /// db_bench's --threads (readwhilewriting: reader threads, plus its writer); threaded
    /// mode only
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_threads,
          allow_negative_numbers = true)]
    threads: usize,

    /// readrandomwriterandom: reads in every 100 operations
    #[arg(long, value_name = "PERCENT", default_value_t = 90,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    readwritepercent: u32,

    /// idle: how long the pause lasts, in seconds (virtual seconds in deterministic mode)
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = parse_idle_seconds,
          allow_negative_numbers = true)]
    idle_seconds: f64,

    /// YCSB workloads: YCSB's requestdistribution (zipfian, latest, uniform, hotspot),
    /// replacing the core workload's [default: the workload's own]
    #[arg(long, value_name = "DIST", value_parser = parse_request_distribution)]
    request_distribution: Option<RequestDistribution>,

    /// YCSB workloads: set one of YCSB's workload properties, as YCSB's `-p NAME=VALUE`
    /// (recordcount, operationcount, readproportion, updateproportion, insertproportion,
    /// scanproportion, readmodifywriteproportion, requestdistribution, minscanlength,
    /// maxscanlength, scanlengthdistribution, fieldcount, fieldlength, insertorder);
    /// repeatable, applied to every YCSB workload of the list, after -P's file
    #[arg(short = 'p', long, value_name = "NAME=VALUE", value_parser = parse_ycsb_property)]
    ycsb_property: Vec<(String, String)>,

    /// YCSB workloads: read YCSB's workload properties from FILE (the format of YCSB's
    /// workloads/workloada; properties zkv does not read are ignored with a warning);
    /// without --workload, run the file's workload (--workload ycsb)
    #[arg(short = 'P', long, value_name = "FILE")]
    ycsb_properties: Option<PathBuf>,

    /// YCSB workloads: records the load phase inserts (YCSB's recordcount) [default: -P's
    /// file, else --num]
    #[arg(long, value_name = "N")]
    recordcount: Option<u64>,

    /// YCSB workloads: operations of the run phase (YCSB's operationcount) [default: -P's
    /// file, else --num]
    #[arg(long, value_name = "N")]
    operationcount: Option<u64>,

    /// YCSB workloads: run only the load phase or only the run phase, as YCSB's `load` and
    /// `run` commands; run works on the image a load left (it implies --use-existing-db)
    /// [default: both]
    #[arg(long, value_name = "PHASE")]
    ycsb_phase: Option<YcsbPhase>,

    /// Pace every operation of every workload to this many per second from its start, on
    /// the database's clock (virtual in deterministic mode); YCSB's -target
    #[arg(long, value_name = "OPS_PER_SEC", value_parser = clap::value_parser!(u64).range(1..))]
    target: Option<u64>,

    /// Run on the database an earlier run left on the image (--device file:PATH), opened as
    /// it is (its WAL recovered), instead of formatting a new one (db_bench's
    /// --use_existing_db; =false and =0 turn it off again)
    #[arg(long, alias = "use_existing_db", value_name = "BOOL", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", hide_default_value = true,
          value_parser = BoolishValueParser::new())]
    use_existing_db: bool,

    /// Read back every key written or deleted at the end and check that it holds the last
    /// value written (a deleted key: nothing); on an existing database, the keys this run
    /// writes or deletes
    #[arg(long)]
    verify: bool,

    /// Test hook: make the oracle expect another value for one key before the final check,
    /// so that the check's failure path can be seen end to end
    #[arg(long, hide = true, requires = "verify")]
    verify_inject_mismatch: bool,

    /// The file system the engine runs on: zoned (the zoned file layer on --device),
    /// posix:DIR (plain files in the directory DIR, created if missing, else empty: the
    /// same engine on a conventional SSD, without zones, placement or zone cleaning; the
    /// zone flags are refused with it), or posix (the same in a new temporary directory,
    /// removed after the run)
    #[arg(long = "fs", value_name = "FS", default_value = "zoned", value_parser = posix::parse_fs)]
    file_system: FsSpec,

    /// The device: mem, or file:PATH (a new image, created with the geometry flags; with
    /// --use-existing-db, the image an earlier run left)
    #[arg(long, value_name = "DEVICE", default_value = "mem", value_parser = parse_device)]
    device: DeviceSpec,

    #[command(flatten)]
    geometry: GeometryArgs,

    /// NAND timing model of the emulated device (docs/TIMING.md): modeled device time in
    /// the report (device.busy_ns, device.timing); the run itself is not slowed down
    #[arg(long, value_name = "MODEL", default_value = "none", value_parser = parse_timing)]
    timing: TimingPreset,

    #[command(flatten)]
    fs: FsArgs,

    /// Compaction picker (RocksDB's compaction_pri, whose values 0 .. 4 it takes too;
    /// RocksDB's default is min-overlap)
    #[arg(long, alias = "compaction_pri", value_name = "PICKER", default_value = "sica",
          value_parser = dbbench::picker_parser())]
    picker: String,

    /// acc and zone-drain pickers: compactions use the zone-aware order (ZACA's, the drain
    /// score's) once free space is at or below this percent of the usable space
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_ACC_TURNING_POINT,
          value_parser = clap::value_parser!(u8).range(0..=100))]
    acc_turning_point: u8,

    /// acc and zone-drain pickers: compactions from levels below this one always keep the
    /// base order (SICA's, min-overlap's)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_ACC_MIN_LEVEL)]
    acc_min_level: usize,

    /// prophet and prophet-gc placements: SSTs of this level and above (L0 .. N) go to
    /// short-lived zones (Prophet's SHORT_THRESHOLD)
    #[arg(long, value_name = "LEVEL", default_value_t = 2)]
    short_threshold: u32,

    /// Memtable size [default: 64 MiB]
    #[arg(long, alias = "write_buffer_size", value_name = "SIZE", value_parser = parse_positive_size,
          allow_hyphen_values = true)]
    write_buffer_size: Option<u64>,

    /// SST target size [default: 64 MiB]
    #[arg(long, alias = "target_file_size_base", value_name = "SIZE", value_parser = parse_positive_size,
          allow_hyphen_values = true)]
    target_file_size_base: Option<u64>,

    /// Target bytes of L1 [default: 256 MiB]
    #[arg(long, alias = "max_bytes_for_level_base", value_name = "SIZE", value_parser = parse_positive_size,
          allow_hyphen_values = true)]
    max_bytes_for_level_base: Option<u64>,

    /// Target of Ln+1 = target of Ln × this [default: 10]
    #[arg(long, alias = "max_bytes_for_level_multiplier", value_name = "X")]
    max_bytes_for_level_multiplier: Option<f64>,

    /// L0 files that trigger an L0 compaction [default: 4]
    #[arg(long, alias = "level0_file_num_compaction_trigger", value_name = "N")]
    level0_file_num_compaction_trigger: Option<u32>,

    /// threaded (background flush and compaction threads) or deterministic (the threads
    /// simulated on a virtual clock; the same seed gives the same bytes)
    #[arg(long, value_name = "MODE", default_value = "threaded", value_parser = parse_mode)]
    mode: ExecMode,

    /// Compaction threads (real ones in threaded mode, virtual in deterministic mode)
    /// [default: 1]
    #[arg(long, alias = "max_background_compactions", value_name = "N")]
    compaction_threads: Option<u32>,

    /// Flush threads (real or virtual, as --compaction-threads): a second flush starts when
    /// a memtable fills while the first runs [default: 1]
    #[arg(long, alias = "max_background_flushes", value_name = "N")]
    flush_threads: Option<u32>,

    /// Key ranges an L0 compaction is split into, each on its own thread with its own
    /// output files (RocksDB's max_subcompactions) [default: 1]
    #[arg(long, alias = "subcompactions", value_name = "N")]
    max_subcompactions: Option<u32>,

    /// Do not write the WAL (db_bench's --disable_wal; =false and =0 turn it off again)
    #[arg(long, alias = "disable_wal", value_name = "BOOL", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", hide_default_value = true,
          value_parser = BoolishValueParser::new())]
    disable_wal: bool,

    /// In a write group of several client threads, each write inserts its own batch into
    /// the memtable, all at once, after the group's WAL record (RocksDB's
    /// allow_concurrent_memtable_write; =false: the group's leader inserts them all)
    #[arg(long, alias = "allow_concurrent_memtable_write", value_name = "BOOL",
          action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true",
          value_parser = BoolishValueParser::new())]
    allow_concurrent_memtable_write: bool,

    /// Sync the WAL on every write (db_bench's --sync; =false and =0 turn it off again)
    #[arg(long, value_name = "BOOL", action = ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_value = "false", default_missing_value = "true",
          hide_default_value = true, value_parser = BoolishValueParser::new())]
    sync: bool,

    /// Pace writes to this many bytes of key and value per second from the start of each
    /// workload, on the database's clock (virtual in deterministic mode); db_bench's
    /// --benchmark_write_rate_limit
    #[arg(long, alias = "benchmark_write_rate_limit", value_name = "BYTES_PER_SEC",
          value_parser = parse_positive_size)]
    benchmark_write_rate_limit: Option<u64>,

    /// A cost of the deterministic mode's virtual clock, NAME=VALUE (repeatable; names:
    /// write_op_ns, write_byte_ps, read_op_ns, job_ns, flush_byte_ps, flush_entry_ns,
    /// compaction_byte_ps, compaction_entry_ns, clean_byte_ps, output_at_pct,
    /// spread_outputs (0 or 1); docs/ENGINE.md)
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_sim_cost)]
    sim_cost: Vec<(String, u64)>,

    /// Bloom filter bits per key, 0 = no filter [default: 10]
    #[arg(long, alias = "bloom_bits", value_name = "BITS")]
    bloom_bits: Option<u32>,

    /// How SST data blocks are compressed: none, snappy, lz4, zstd (db_bench's
    /// --compression_type; its default is snappy, zkv's none). A block is stored compressed
    /// only if that saves an eighth of it
    #[arg(long, alias = "compression_type", value_name = "TYPE", default_value = "none",
          value_parser = PossibleValuesParser::new(CompressionType::NAMES))]
    compression_type: String,

    /// The fraction of each value that is random, the rest repeating it, so that values
    /// compress to about this fraction (db_bench's --compression_ratio); only with
    /// --compression-type [default: 0.5]
    #[arg(long, alias = "compression_ratio", value_name = "RATIO", value_parser = parse_ratio)]
    compression_ratio: Option<f64>,

    /// Bytes of the block cache, which keeps the data blocks gets and scans read (db_bench's
    /// --cache_size); 0 = none, every read goes to the device [default: 8MiB; with
    /// --preset: 0, as every published run]
    #[arg(long, alias = "cache_size", value_name = "BYTES", value_parser = parse_size)]
    cache_size: Option<u64>,

    /// Tables kept open at most, each with its index and filter in memory (db_bench's
    /// --open_files, RocksDB's max_open_files); -1 = no limit
    #[arg(long, alias = "open_files", value_name = "N", default_value_t = -1,
          allow_negative_numbers = true, value_parser = parse_open_files)]
    open_files: i32,

    /// Wait until flushes and compactions are done before the final statistics
    /// (db_bench's waitforcompaction)
    #[arg(long)]
    wait_for_compaction: bool,

    /// Operations between two points of the JSON time series [default: --num / 100]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    sample_interval: Option<u64>,

    /// Print a progress line on stderr every SECONDS (0.2 is fine) instead of the progress
    /// bar; 0: no progress at all [default: the bar on a terminal, else a line every 10 s]
    #[arg(long, value_name = "SECONDS", value_parser = parse_progress_interval,
          allow_negative_numbers = true)]
    progress_interval: Option<Duration>,

    /// db_bench's --stats_interval_seconds: the same as --progress-interval (give one, or
    /// both the same)
    #[arg(long, alias = "stats_interval_seconds", value_name = "SECONDS",
          value_parser = parse_progress_interval, allow_negative_numbers = true)]
    stats_interval_seconds: Option<Duration>,

    /// Write the JSON report (docs/CLI.md, "JSON") to this file
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,

    /// A paper's configuration at 1/16 scale (docs/CLI.md, "Presets"); flags given next to it
    /// override its values
    #[arg(long, value_name = "NAME", value_parser = PossibleValuesParser::new(preset::NAMES))]
    preset: Option<String>,

    /// Divide the preset's data and sizes (zone, memtable, SST, L1) by a further 8
    #[arg(long, requires = "preset")]
    quick: bool,

    #[command(flatten)]
    mixgraph: mixgraph::MixGraphArgs,

    #[command(flatten)]
    blob: blob::BlobArgs,
}

/// `--ycsb-phase`: YCSB's two commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum YcsbPhase {
    Load,
    Run,
}

impl YcsbPhase {
    fn name(self) -> &'static str {
        match self {
            YcsbPhase::Load => "load",
            YcsbPhase::Run => "run",
        }
    }
}

/// `--workload`, parsed by clap so that an unknown name is a usage error.
#[derive(Clone, Debug)]
pub struct WorkloadList(Vec<WorkloadName>);

fn parse_workloads(s: &str) -> Result<WorkloadList, zkv_bench::Error> {
    parse_workload_list(s).map(WorkloadList)
}

/// Most client threads `--threads` takes: far above what a benchmark machine runs, low
/// enough that a typo does not start a million threads.
const MAX_THREADS: usize = 1024;

/// `--threads`: a count of client threads, 1 to [`MAX_THREADS`].
fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(format!(
            "give a number of client threads from 1 to {MAX_THREADS}"
        )),
    }
}

fn parse_mode(s: &str) -> Result<ExecMode, String> {
    ExecMode::from_name(s).ok_or_else(|| "expected threaded or deterministic".to_string())
}

fn parse_timing(s: &str) -> Result<TimingPreset, zkv_zns::timing::TimingError> {
    s.parse()
}

fn parse_ycsb_property(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got {s:?}"))?;
    let name = name.trim();
    if !zkv_bench::ycsb::PROPERTIES.contains(&name) {
        return Err(format!(
            "unknown YCSB property {name:?} (known: {})",
            zkv_bench::ycsb::PROPERTIES.join(", ")
        ));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

fn parse_request_distribution(s: &str) -> Result<RequestDistribution, String> {
    RequestDistribution::from_name(s).ok_or_else(|| {
        format!(
            "unknown request distribution (known: {})",
            RequestDistribution::NAMES.join(", ")
        )
    })
}

/// Everything checked and ready before the device is touched.
pub(crate) struct Plan {
    options: Options,
    write: WriteOptions,
    fs_options: FsOptions,
    geometry: Geometry,
    jobs: Vec<Job>,
    json: Option<(PathBuf, File)>,
    /// `-P`'s file.
    ycsb_file: Option<PropertiesFile>,
}

impl Plan {
    /// The warnings to print before the run: `-P`'s lines that zkv does not read.
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.ycsb_file
            .as_ref()
            .map_or_else(Vec::new, PropertiesFile::warnings)
    }
}

/// `--idle-seconds`: a finite, non-negative number of seconds below a day.
fn parse_idle_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.0..=86_400.0).contains(&v) {
        return Err(format!("{v} is not between 0 and 86400 seconds"));
    }
    Ok(v)
}

/// `--progress-interval`: seconds as `--idle-seconds` takes them.
pub(crate) fn parse_progress_interval(s: &str) -> Result<Duration, String> {
    parse_idle_seconds(s).map(Duration::from_secs_f64)
}

/// The store a run works on. Field order is drop order: the database before the cleaner.
struct Store {
    db: Db,
    fs: Arc<dyn FileSystem>,
    cleaner: Option<CleanerThread>,
    /// `--fs posix`'s temporary directory, removed when the store goes (after the db).
    _temp: Option<tempfile::TempDir>,
}

pub fn run(mut a: BenchArgs) -> CliResult {
    let note = apply_preset(&mut a)?;
    if let Some(flag) = a.unread_acc_flags().first() {
        return Err(a.unread_acc_flag(flag));
    }
    let mut plan = a.plan()?;
    for line in plan.warnings() {
        crate::cli::warn(line);
    }
    if a.has_mixgraph() {
        for line in a.mixgraph.inert_flags(&a.given) {
            crate::cli::warn(line);
        }
    }
    let json = plan.json.take();
    let mut out = Out::new();
    for line in note {
        out.line(line)?;
    }
    let done = execute(&a, plan, &mut out, true, "bench")?;
    if let Some((path, file)) = json {
        write_json(&path, file, &done.report)?;
    }
    done.result()
}

/// `--compression-ratio`: a fraction in (0, 1].
fn parse_ratio(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(r),
        _ => Err("give a fraction above 0 and at most 1".into()),
    }
}

/// `--open-files`: -1 (no limit) or a positive count.
fn parse_open_files(s: &str) -> Result<i32, String> {
    match s.parse::<i32>() {
        Ok(n) if n == -1 || n > 0 => Ok(n),
        _ => Err("give -1 (no limit) or a positive number of tables".into()),
    }
}

/// Fills in what `--preset` (scaled by `--quick`) sets and the command line did not give,
/// before any check; returns the lines to print before the run (what the preset runs and
/// what its paper also runs). `zkv compare` calls it once, before each scheme's parts.
pub(crate) fn apply_preset(a: &mut BenchArgs) -> CliResult<Vec<String>> {
    a.default_to_the_files_workload();
    let Some(applied) = preset::apply(a)? else {
        return Ok(Vec::new());
    };
    let mut lines = preset::note_lines(&applied);
    lines.push(String::new());
    Ok(lines)
}

/// What a finished run leaves: its JSON report, and its first error and verification,
/// which fail the command only after the report is out. `zkv compare` runs through this.
pub(crate) struct Finished {
    pub report: Value,
    failed: Option<CliError>,
    verify: Option<VerifyResult>,
}

impl Finished {
    /// The run's failure: its first error, else a verification mismatch.
    pub(crate) fn result(self) -> CliResult {
        self.failed.map_or(Ok(()), Err)?;
        self.verify.map_or(Ok(()), check_verify)
    }
}

/// Checks every flag of a run, as `zkv bench` does before any work, and returns what the
/// run needs (creating the JSON file if `--json` is set, so `zkv compare` leaves it unset).
pub(crate) fn check(a: &BenchArgs) -> CliResult<Plan> {
    a.plan()
}

/// The `config` of the report a run of `a` as `plan` (from [`check`]) says would write,
/// known before it runs: `zkv repro --resume` compares it with a stored report's.
pub(crate) fn config(a: &BenchArgs, plan: &Plan) -> Value {
    a.config(plan)
}

/// Runs `a` as `plan` (from [`check`]) says, printing only the result lines; `zkv compare`
/// prints its own table. `context` starts its progress lines (`compare: run 2/4 caza`).
pub(crate) fn run_quiet(
    a: &BenchArgs,
    plan: Plan,
    out: &mut Out,
    context: &str,
) -> CliResult<Finished> {
    execute(a, plan, out, false, context)
}

/// The run itself: the workloads, the statistics, the verification and the report, printed
/// for people if `human`; `context` starts its progress lines.
fn execute(
    a: &BenchArgs,
    mut plan: Plan,
    out: &mut Out,
    human: bool,
    context: &str,
) -> CliResult<Finished> {
    let jobs = std::mem::take(&mut plan.jobs);
    let store = a.open_store(&mut plan)?;
    // What stdout holds so far (a preset's note, a heading) goes before the first progress
    // line on stderr, for a log that takes both.
    out.flush()?;
    let interval = a.sample_interval_or_default();
    let runner = Runner::new(
        &store.db,
        plan.write,
        a.seed,
        a.value_size as usize,
        interval,
        a.verify,
        Progress::new(a.progress_every(), context),
    )?
    .on_existing_db(a.existing_db())
    .with_duration(a.duration_limit())
    .with_target(a.target)
    .with_write_rate_limit(a.benchmark_write_rate_limit)
    .with_compression_ratio(a.value_ratio()?);
    let (mut measured, failed) = runner.run(jobs, out);
    if let (true, Some(oracle)) = (a.verify_inject_mismatch, measured.oracle.as_mut()) {
        oracle.inject_mismatch();
    }
    let mut failed = settle(&store, failed, a.wait_for_compaction);
    // Statistics first, so that the verification's reads are not counted as the workload's.
    let (fs, invalid) = runner::fs_figures(&store.fs);
    let (db, table, timing) = (
        store.db.stats(),
        store.db.compaction_stats_table(),
        store.fs.zoned().and_then(|z| z.device().timing()),
    );
    // A read error of the check is reported like a failed run: the report still goes out.
    let verify = measured.oracle.as_ref().and_then(|oracle| {
        oracle
            .check(|k| store.db.get(&Default::default(), k))
            .map_err(|e| failed = failed.take().or(Some(engine_error("verify", e))))
            .ok()
    });
    let report = Report {
        scheme: a.scheme(&plan),
        file_system: a.file_system.is_posix().then(|| store.fs.describe()),
        workload: a.workload_names(),
        config: a.config(&plan),
        measured: &measured,
        db,
        table,
        fs,
        invalid,
        verify: verify.clone(),
        error: failed.as_ref().map(ToString::to_string),
        timing,
    };
    if human {
        report::print_human(&report, out)?;
    }
    let report = report::to_json(&report);
    let closed = store
        .db
        .close()
        .map_err(|e| engine_error("closing the database", e));
    Ok(Finished {
        report,
        failed: failed.or(closed.err()),
        verify,
    })
}

/// After the workloads: waits for background work if asked (db_bench's
/// `waitforcompaction`), and adds a zone cleaner failure to the run's first error.
fn settle(store: &Store, failed: Option<CliError>, wait: bool) -> Option<CliError> {
    let mut failed = failed;
    if failed.is_none() && wait {
        failed = store
            .db
            .wait_for_background()
            .err()
            .map(|e| engine_error("waiting for compaction", e));
    }
    let cleaner = store.cleaner.as_ref().and_then(|c| c.last_error());
    failed.or_else(|| cleaner.map(|e| CliError::invalid(format!("zone cleaner: {e}"))))
}

/// Opens (truncating) the `--json` file now, so that an unwritable path fails before the
/// run rather than after it.
pub(crate) fn open_json(path: Option<&Path>) -> CliResult<Option<(PathBuf, File)>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file =
        File::create(path).map_err(|e| CliError::io(format!("--json {}", path.display()), e))?;
    Ok(Some((path.to_path_buf(), file)))
}

fn engine_error(what: &str, e: zkv_engine::Error) -> CliError {
    CliError::invalid(format!("{what}: {e}"))
}

fn check_verify(v: VerifyResult) -> CliResult {
    if v.mismatches == 0 {
        return Ok(());
    }
    Err(CliError::invalid(format!(
        "verify: {} of {} keys do not hold what their last write left ({})",
        v.mismatches,
        v.checked,
        v.examples.join("; ")
    )))
}

/// Writes `report` (pretty, one trailing newline) into the file [`open_json`] created.
/// `zkv compare` writes its JSON through this too.
pub(crate) fn write_json(path: &Path, file: File, report: &Value) -> CliResult {
    let context = || format!("--json {}", path.display());
    let mut w = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, report).map_err(|e| CliError::io(context(), e.into()))?;
    writeln!(w)
        .and_then(|()| w.flush())
        .map_err(|e| CliError::io(context(), e))
}

impl BenchArgs {
    /// Checks every flag and builds what the run needs, in the order a user would fix
    /// them; nothing is created except the (truncated) JSON file, last.
    fn plan(&self) -> CliResult<Plan> {
        self.check_posix()?;
        let options = self.engine_options()?;
        let write = self.write_options()?;
        let fs_options = self.fs_options()?;
        let geometry = self.geometry_or_default()?;
        let ycsb_file = self.properties_file()?;
        let jobs = self.jobs(ycsb_file.as_ref())?;
        if self.file_system.is_posix() {
            // A directory's room is its file system's: a run that fills it fails with the
            // report of what it did.
        } else if self.existing_db() {
            // The image's room is what its earlier runs left: a run that fills it fails
            // with the report of what it did, as any run out of space.
            self.check_existing(ycsb_file.as_ref())?;
        } else {
            self.check_space(&options, &fs_options, &geometry, ycsb_file.as_ref())?;
            self.check_device()?;
        }
        let json = open_json(self.json.as_deref())?;
        Ok(Plan {
            options,
            write,
            fs_options,
            geometry,
            jobs,
            json,
            ycsb_file,
        })
    }

    fn engine_options(&self) -> CliResult<Options> {
        let d = Options::default();
        let o = Options {
            write_buffer_size: self.write_buffer_size.unwrap_or(d.write_buffer_size),
            target_file_size_base: self
                .target_file_size_base
                .unwrap_or(d.target_file_size_base),
            max_bytes_for_level_base: self
                .max_bytes_for_level_base
                .unwrap_or(d.max_bytes_for_level_base),
            max_bytes_for_level_multiplier: self
                .max_bytes_for_level_multiplier
                .unwrap_or(d.max_bytes_for_level_multiplier),
            level0_file_num_compaction_trigger: self
                .level0_file_num_compaction_trigger
                .unwrap_or(d.level0_file_num_compaction_trigger),
            max_background_compactions: self
                .compaction_threads
                .unwrap_or(d.max_background_compactions),
            max_background_flushes: self.flush_threads.unwrap_or(d.max_background_flushes),
            max_subcompactions: self.max_subcompactions.unwrap_or(d.max_subcompactions),
            compaction_pri: self.picker.clone(),
            prophet_short_threshold: self.short_threshold,
            bloom_bits_per_key: self.bloom_bits.unwrap_or(d.bloom_bits_per_key),
            compression: self.compression(),
            block_cache_size: self.cache_size.unwrap_or(d.block_cache_size),
            max_open_files: self.open_files,
            allow_concurrent_memtable_write: self.allow_concurrent_memtable_write,
            mode: self.mode,
            sim: self.sim_costs()?,
            ..d
        };
        let o = self.blob.apply(o)?.with_picker(self.picker()?);
        self.value_ratio()?;
        o.check().map_err(|e| CliError::invalid(e.to_string()))?;
        Ok(o)
    }

    /// The picker `--picker` names, with the ACC knobs the flags give.
    fn picker(&self) -> CliResult<Arc<dyn Picker>> {
        let turning_point = f64::from(self.acc_turning_point) / 100.0;
        let acc = Acc::new(turning_point, self.acc_min_level).map_err(CliError::invalid)?;
        picker_with(&self.picker, acc).map_err(CliError::invalid)
    }

    /// `--compression-type` (one of `CompressionType::NAMES`, which clap checked).
    fn compression(&self) -> CompressionType {
        CompressionType::from_name(&self.compression_type).unwrap_or_default()
    }

    /// The random fraction of the values: `--compression-ratio` (0.5 by default) when the
    /// tables are compressed, else 1 (all random, the values every earlier run wrote).
    pub(crate) fn value_ratio(&self) -> CliResult<f64> {
        if self.compression() == CompressionType::None {
            if self.compression_ratio.is_some() {
                return Err(CliError::invalid(
                    "--compression-ratio applies with --compression-type (without \
                     compression the values' contents change nothing)",
                ));
            }
            return Ok(1.0);
        }
        Ok(self.compression_ratio.unwrap_or(0.5))
    }

    /// The default cost model with the `--sim-cost` settings applied.
    fn sim_costs(&self) -> CliResult<SimCosts> {
        if self.mode == ExecMode::Threaded && !self.sim_cost.is_empty() {
            return Err(CliError::invalid(
                "--sim-cost applies to --mode deterministic (threaded runs take the time \
                 they take)",
            ));
        }
        let mut costs = SimCosts::default();
        for (name, value) in &self.sim_cost {
            if name.starts_with("blob_") && !self.blob.enable_blob_files {
                return Err(CliError::invalid(format!(
                    "--sim-cost {name}: a blob cost needs --enable-blob-files (without blob \
                     files it would have no effect)"
                )));
            }
            let field = match name.as_str() {
                "write_op_ns" => &mut costs.write_op_ns,
                "write_byte_ps" => &mut costs.write_byte_ps,
                "read_op_ns" => &mut costs.read_op_ns,
                "job_ns" => &mut costs.job_ns,
                "flush_byte_ps" => &mut costs.flush_byte_ps,
                "flush_entry_ns" => &mut costs.flush_entry_ns,
                "compaction_byte_ps" => &mut costs.compaction_byte_ps,
                "compaction_entry_ns" => &mut costs.compaction_entry_ns,
                "clean_byte_ps" => &mut costs.clean_byte_ps,
                "blob_write_ns" => &mut costs.blob_write_ns,
                "blob_write_byte_ps" => &mut costs.blob_write_byte_ps,
                "blob_read_ns" => &mut costs.blob_read_ns,
                "blob_read_byte_ps" => &mut costs.blob_read_byte_ps,
                "output_at_pct" => &mut costs.output_at_pct,
                "spread_outputs" => {
                    costs.spread_outputs = match value {
                        0 => false,
                        1 => true,
                        _ => {
                            return Err(CliError::invalid(format!(
                                "--sim-cost spread_outputs={value}: 0 (a compaction writes \
                                 its tables together) or 1 (one by one over its duration)"
                            )))
                        }
                    };
                    continue;
                }
                _ => {
                    return Err(CliError::invalid(format!(
                        "--sim-cost: unknown cost '{name}' (known: {})",
                        SIM_COSTS.join(", ")
                    )))
                }
            };
            *field = *value;
        }
        Ok(costs)
    }

    fn write_options(&self) -> CliResult<WriteOptions> {
        if self.sync && self.disable_wal {
            return Err(CliError::invalid(
                "--sync and --disable-wal together: a write cannot be synced to a WAL it \
                 does not write",
            ));
        }
        Ok(WriteOptions {
            sync: self.sync,
            disable_wal: self.disable_wal,
        })
    }

    fn fs_options(&self) -> CliResult<FsOptions> {
        let o = self.blob.apply_fs(self.fs.options(DEFAULT_META_ZONES));
        o.check_gc()
            .map_err(|e| CliError::invalid(format!("--gc-start/--gc-stop: {e}")))?;
        Ok(o)
    }

    /// The geometry flags with bench's defaults for the zone count and size.
    fn geometry_or_default(&self) -> CliResult<Geometry> {
        let g = &self.geometry;
        let filled = GeometryArgs {
            zones: Some(g.zones.unwrap_or(DEFAULT_ZONES)),
            zone_size: Some(g.zone_size.unwrap_or(DEFAULT_ZONE_SIZE)),
            zone_capacity: g.zone_capacity,
            max_open: g.max_open,
            max_active: g.max_active,
            block_size: g.block_size,
        };
        filled.geometry("")
    }

    /// The request streams, one per workload, validated. Each workload gets its own seed
    /// (seed + its position), as db_bench gives each benchmark its own, so that
    /// `fillrandom,overwrite` do not draw the same keys.
    fn jobs(&self, ycsb_file: Option<&PropertiesFile>) -> CliResult<Vec<Job>> {
        self.check_workload_flags()?;
        if self.value_size > MAX_VALUE_SIZE {
            return Err(CliError::invalid(format!(
                "--value-size {}: at most {} is supported",
                format_size(self.value_size),
                format_size(MAX_VALUE_SIZE)
            )));
        }
        let bad = |e: zkv_bench::Error| CliError::invalid(format!("--workload: {e}"));
        let key_size = usize::try_from(self.key_size).unwrap_or(usize::MAX);
        let mut jobs = Vec::new();
        for (i, name) in self.workload.0.iter().enumerate() {
            let seed = self.seed.wrapping_add(i as u64);
            jobs.push(match *name {
                WorkloadName::DbBench(w) => {
                    let config = DbBenchConfig {
                        num: self.num,
                        key_size,
                        read_write_percent: self.readwritepercent,
                        reads: self.reads.and_then(|r| r.0),
                        deletes: self.deletes.and_then(|d| d.0),
                        seek_nexts: self.seek_nexts,
                    };
                    // Thread t draws from seed + i + t·2^32: thread 0 from workload i's
                    // own seed, as a run of one thread always did.
                    let stream = |w, t: usize| {
                        let seed = seed.wrapping_add((t as u64) << 32);
                        DbBenchGenerator::new(w, config, seed).map_err(bad)
                    };
                    if w == DbBenchWorkload::ReadWhileWriting {
                        // db_bench's thread 0 writes, threads 1 ..= N read.
                        let writer = stream(DbBenchWorkload::Overwrite, 0)?.endless();
                        Job::ReadWhileWriting {
                            readers: (1..=self.threads)
                                .map(|t| stream(w, t))
                                .collect::<CliResult<_>>()?,
                            writer: Box::new(writer),
                        }
                    } else {
                        let streams = (0..self.threads).map(|t| stream(w, t));
                        Job::DbBench(streams.collect::<CliResult<_>>()?)
                    }
                }
                WorkloadName::MixGraph => {
                    let config = self.mixgraph.config(self.num, self.reads(), key_size);
                    let g = MixGraphGenerator::new(config, seed)
                        .map_err(|e| CliError::invalid(format!("--workload mixgraph: {e}")))?;
                    Job::MixGraph(Box::new(g))
                }
                WorkloadName::Idle => {
                    Job::Idle(std::time::Duration::from_secs_f64(self.idle_seconds))
                }
                WorkloadName::Ycsb(id) => {
                    let spec = self.ycsb_spec(id, ycsb_file)?;
                    let (load, run) = self.ycsb_phases();
                    Job::Ycsb {
                        name: id.name(),
                        workload: Box::new(YcsbWorkload::new(spec, seed).map_err(bad)?),
                        load,
                        run,
                    }
                }
                other => {
                    return Err(CliError::invalid(format!(
                        "--workload: {other:?} is not supported by zkv bench"
                    )))
                }
            });
        }
        Ok(jobs)
    }

    /// A workload's own flag given for a list without such a workload would change
    /// nothing: `--request-distribution` is YCSB's, `--readwritepercent` is
    /// readrandomwriterandom's.
    fn check_workload_flags(&self) -> CliResult {
        self.check_threads()?;
        let has = |f: fn(&WorkloadName) -> bool| self.workload.0.iter().any(f);
        let unread = |flag: String, applies_to: &str| {
            Err(CliError::invalid(format!(
                "{flag}: applies to {applies_to}, and --workload {} has none",
                self.workload_names()
            )))
        };
        if let Some(d) = self.request_distribution {
            if !has(|w| matches!(w, WorkloadName::Ycsb(_))) {
                let flag = format!("--request-distribution {}", d.name());
                return unread(flag, "YCSB workloads (ycsb-a .. ycsb-f)");
            }
        }
        let distribution = self
            .ycsb_property
            .iter()
            .any(|(n, _)| n == "requestdistribution");
        if distribution && self.request_distribution.is_some() {
            return Err(CliError::invalid(
                "--request-distribution and --ycsb-property requestdistribution=...: give one \
                 of them",
            ));
        }
        if let Some((name, value)) = self.ycsb_property.first() {
            if !has(|w| matches!(w, WorkloadName::Ycsb(_))) {
                let flag = format!("--ycsb-property {name}={value}");
                return unread(flag, "YCSB workloads (ycsb-a .. ycsb-f)");
            }
        }
        let rwr = |w: &WorkloadName| {
            matches!(
                w,
                WorkloadName::DbBench(DbBenchWorkload::ReadRandomWriteRandom)
            )
        };
        if self.given.has("idle_seconds") && !has(|w| *w == WorkloadName::Idle) {
            return unread(format!("--idle-seconds {}", self.idle_seconds), "idle");
        }
        if self.given.has("readwritepercent") && !has(rwr) {
            let flag = format!("--readwritepercent {}", self.readwritepercent);
            return unread(flag, "readrandomwriterandom");
        }
        self.check_db_bench_flags(&unread)?;
        self.check_ycsb_flags(unread)?;
        let given_mix = mixgraph::IDS.iter().find(|id| self.given.has(id));
        if let (Some(id), false) = (given_mix, self.has_mixgraph()) {
            return unread(mixgraph::flag(id), "mixgraph");
        }
        let only_mix = self.workload.0.iter().all(|w| *w == WorkloadName::MixGraph);
        if self.given.has("value_size") && only_mix {
            return Err(CliError::invalid(
                "--value-size: mixgraph draws its value sizes (--value-k, --value-sigma, \
                 --value-theta, --mix-max-value-size), and --workload mixgraph has no other \
                 workload",
            ));
        }
        Ok(())
    }

    /// `--threads` and readwhilewriting's writer thread need real threads: deterministic
    /// mode's virtual clock runs one client, so it refuses them rather than interleave
    /// clients in an order no real run has. Several threads run db_bench's workloads only
    /// (mixgraph's rate and YCSB's shared key chooser are one client's).
    fn check_threads(&self) -> CliResult {
        let rww = WorkloadName::DbBench(DbBenchWorkload::ReadWhileWriting);
        if self.mode == ExecMode::Deterministic {
            if self.threads > 1 {
                return Err(CliError::invalid(format!(
                    "--threads {}: deterministic mode runs one client thread on its virtual \
                     clock; run several with --mode threaded",
                    self.threads
                )));
            }
            if self.workload.0.contains(&rww) {
                return Err(CliError::invalid(
                    "readwhilewriting runs a writer thread beside its readers: threaded mode \
                     only (--mode threaded)",
                ));
            }
        }
        let one_client = self
            .workload
            .0
            .iter()
            .find(|w| matches!(w, WorkloadName::MixGraph | WorkloadName::Ycsb(_)));
        if let (true, Some(w)) = (self.threads > 1, one_client) {
            return Err(CliError::invalid(format!(
                "--threads {}: {w} runs one client thread; several run db_bench's other \
                 workloads",
                self.threads
            )));
        }
        Ok(())
    }

    /// The flags of db_bench's that only some workloads read (`--reads`, `--deletes`,
    /// `--seek-nexts`, `--duration`), refused with a list that has none of them through
    /// `unread`; and `--stats-interval-seconds` against `--progress-interval`.
    fn check_db_bench_flags(&self, unread: &impl Fn(String, &str) -> CliResult) -> CliResult {
        let has = |f: &dyn Fn(DbBenchWorkload) -> bool| {
            let db_bench = |w: &WorkloadName| matches!(w, WorkloadName::DbBench(w) if f(*w));
            self.workload.0.iter().any(db_bench)
        };
        let shown = |d: Duration| d.as_secs_f64();
        // mixgraph runs --reads operations, and is timed.
        let mixgraph = self.has_mixgraph();
        if let (Some(r), false) = (self.reads, mixgraph || has(&|w| w.runs_reads())) {
            let n = r.0.map_or(-1, |n| n as i64);
            return unread(
                format!("--reads {n}"),
                "readrandom, readrandomwriterandom, readseq, readreverse, seekrandom, \
                 readwhilewriting and mixgraph",
            );
        }
        let deleterandom = |w| w == DbBenchWorkload::DeleteRandom;
        if let (Some(d), false) = (self.deletes, has(&deleterandom)) {
            let n = d.0.map_or(-1, |n| n as i64);
            return unread(format!("--deletes {n}"), "deleterandom");
        }
        let seekrandom = |w| w == DbBenchWorkload::SeekRandom;
        if self.given.has("seek_nexts") && !has(&seekrandom) {
            return unread(format!("--seek-nexts {}", self.seek_nexts), "seekrandom");
        }
        if let (Some(d), false) = (self.duration_limit(), mixgraph || has(&|w| w.timed())) {
            return unread(
                format!("--duration {}", shown(d)),
                "db_bench's random workloads (fillrandom, overwrite, readrandom, \
                 readrandomwriterandom, seekrandom, deleterandom, readwhilewriting, mixgraph)",
            );
        }
        match (self.progress_interval, self.stats_interval_seconds) {
            (Some(p), Some(s)) if p != s => Err(CliError::invalid(format!(
                "--progress-interval {} and --stats-interval-seconds {}: they set the same \
                 interval; give one of them",
                shown(p),
                shown(s)
            ))),
            _ => Ok(()),
        }
    }

    /// Operations of the read workloads and mixgraph: `--reads`, else `--num`.
    fn reads(&self) -> u64 {
        self.reads.and_then(|r| r.0).unwrap_or(self.num)
    }

    /// `--duration`, unless 0 (no limit).
    fn duration_limit(&self) -> Option<Duration> {
        self.duration.filter(|d| !d.is_zero())
    }

    /// The progress interval: `--progress-interval` or its db_bench spelling.
    fn progress_every(&self) -> Option<Duration> {
        self.progress_interval.or(self.stats_interval_seconds)
    }

    /// The report's `config` entries of db_bench's workload flags that differ from what a
    /// run without them does: `reads` and `deletes` other than `--num`, `duration` other
    /// than 0, and `seek_nexts` when seekrandom runs.
    fn db_bench_config(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        if self.reads() != self.num {
            m.insert("reads".into(), json!(self.reads()));
        }
        if let Some(d) = self.deletes.and_then(|d| d.0).filter(|&d| d != self.num) {
            m.insert("deletes".into(), json!(d));
        }
        if let Some(d) = self.duration_limit() {
            m.insert("duration".into(), json!(d.as_secs_f64()));
        }
        let seekrandom = WorkloadName::DbBench(DbBenchWorkload::SeekRandom);
        if self.workload.0.contains(&seekrandom) {
            m.insert("seek_nexts".into(), json!(self.seek_nexts));
        }
        m
    }

    fn has_mixgraph(&self) -> bool {
        self.workload.0.contains(&WorkloadName::MixGraph)
    }

    /// Refuses a device that cannot hold the data (see [`Self::space_needed`]).
    fn check_space(
        &self,
        o: &Options,
        fs: &FsOptions,
        geo: &Geometry,
        ycsb_file: Option<&PropertiesFile>,
    ) -> CliResult {
        let overhead = fs.meta_zones + fs.reserved_zones;
        let data_zones = geo.zones.saturating_sub(overhead);
        let usable = u64::from(data_zones) * geo.zone_capacity;
        let need = self.space_needed(o, ycsb_file);
        let (needed, stored, compaction) = (need.needed(), need.stored(), need.compaction);
        if needed <= usable {
            return Ok(());
        }
        // Name the options that set the larger part of the need. The waiting L0 files count
        // with the memtables: both are write buffers.
        let in_flight = need.buffers.saturating_add(need.waiting_l0);
        let advice = if in_flight >= needed / 2 {
            format!(
                "the memtables, the L0 files and the SSTs in flight need {} of it: lower \
                 --write-buffer-size and --target-file-size-base, or add --zones",
                mib(in_flight)
            )
        } else if compaction >= needed / 3 && o.max_bytes_for_level_base < stored {
            format!(
                "an L0→L1 compaction takes the L0 files and up to all of L1 ({} here): \
                 lower --max-bytes-for-level-base or --write-buffer-size, or add --zones",
                mib(compaction)
            )
        } else {
            "add --zones, or lower --num or --value-size".to_string()
        };
        Err(CliError::invalid(format!(
            "device too small: {} operations of {} B keys and {} B values need about {} \
             ({} of live data, {} with a leveled LSM's space amplification and L0 at its \
             slowdown trigger, plus 3 memtables/WALs and 2 SSTs in flight, plus {} for the \
             largest compaction), but {} zones of {} \
             capacity leave {} for data ({} metadata, {} reserved); {advice}",
            self.num,
            self.key_size,
            self.value_size,
            mib(needed),
            mib(need.live),
            mib(stored),
            mib(compaction),
            geo.zones,
            format_size(geo.zone_capacity),
            mib(usable),
            fs.meta_zones,
            fs.reserved_zones,
        )))
    }

    /// The space a run needs: keys the run leaves behind × (key + value + 8 bytes of
    /// sequence number and type), as a leveled LSM stores them, plus three write buffers
    /// (memtable WALs and a flush output) and two SSTs being written, plus the largest
    /// compaction (see [`SpaceNeed`]).
    fn space_needed(&self, o: &Options, ycsb_file: Option<&PropertiesFile>) -> SpaceNeed {
        let entry = |key: u64, value: u64| key.saturating_add(value).saturating_add(8);
        let mut ycsb_bytes = 0u64;
        for name in &self.workload.0 {
            if let WorkloadName::Ycsb(id) = name {
                // A bad spec is refused with its reason when the jobs are built.
                let Ok(spec) = self.ycsb_spec(*id, ycsb_file) else {
                    continue;
                };
                let p = spec.proportions;
                let all = p.read + p.update + p.insert + p.scan + p.read_modify_write;
                let (load, run) = self.ycsb_phases();
                let ops = if run {
                    spec.operation_count as f64
                } else {
                    0.0
                };
                let inserts = (ops * p.insert / all).ceil() as u64;
                let records = if load { spec.load_count() } else { 0 };
                let value = spec.value_len().unwrap_or(self.value_size);
                // YCSB keys are `user` and up to 20 digits.
                let bytes = (records + inserts).saturating_mul(entry(24, value));
                ycsb_bytes = ycsb_bytes.max(bytes);
            }
        }
        let live = (self
            .db_bench_keys()
            .saturating_mul(entry(self.key_size, self.value_size)))
        .saturating_add(ycsb_bytes)
        .saturating_add(self.mixgraph_bytes());
        SpaceNeed::new(o, live)
    }

    /// Keys the db_bench workloads leave behind: fillseq writes every key of 0..num; w
    /// uniform random writes (db_bench's `rand % num`) reach num × (1 − e^(−w/num))
    /// distinct keys on average, 63% for one fillrandom — counting all num would refuse
    /// the papers' fillrandom setups, whose data volume exceeds the device. With
    /// `--threads N` every thread writes its own w.
    fn db_bench_keys(&self) -> u64 {
        let num = self.num as f64;
        // Each client thread runs the whole count.
        let threads = self.threads as f64;
        let mut random_writes = 0.0;
        for name in &self.workload.0 {
            let WorkloadName::DbBench(w) = name else {
                continue;
            };
            random_writes += match w {
                DbBenchWorkload::FillSeq | DbBenchWorkload::FillBatch => return self.num,
                DbBenchWorkload::FillRandom | DbBenchWorkload::Overwrite => num * threads,
                DbBenchWorkload::ReadRandomWriteRandom => {
                    self.reads() as f64 * f64::from(100 - self.readwritepercent) / 100.0 * threads
                }
                // Its writer writes for as long as the readers read: counted as an
                // overwrite of num keys (at most num keys live whatever it writes).
                DbBenchWorkload::ReadWhileWriting => num,
                DbBenchWorkload::ReadRandom
                | DbBenchWorkload::ReadSeq
                | DbBenchWorkload::ReadReverse
                | DbBenchWorkload::SeekRandom
                | DbBenchWorkload::DeleteRandom => 0.0,
                // A workload this estimate does not know: assume it writes every key, the
                // estimate that never lets a run through that does not fit.
                _ => return self.num,
            };
        }
        (num * (1.0 - (-random_writes / num).exp())).ceil() as u64
    }

    /// Live bytes mixgraph leaves behind: its puts' distinct keys, counted as uniform
    /// random writes (skewed keys leave fewer), at the mean of its value sizes. The other
    /// db_bench workloads' keys are counted apart, so a key both write is counted twice.
    fn mixgraph_bytes(&self) -> u64 {
        if !self.has_mixgraph() {
            return 0;
        }
        let key_size = usize::try_from(self.key_size).unwrap_or(usize::MAX);
        let config = self.mixgraph.config(self.num, self.reads(), key_size);
        let Ok(mix) = zkv_bench::mixgraph::QueryMix::new(config.ratios) else {
            return 0; // refused with its reason when the jobs are built
        };
        let puts = config.reads as f64 * mix.share(zkv_bench::mixgraph::QueryKind::Put);
        let num = self.num as f64;
        let keys = num * (1.0 - (-puts / num).exp());
        let entry = self.key_size as f64 + config.mean_value_size(MEAN_VALUE_SAMPLES) + 8.0;
        (keys * entry).ceil() as u64
    }

    fn check_device(&self) -> CliResult {
        match &self.device {
            DeviceSpec::Mem => Ok(()),
            DeviceSpec::File(path) if path.symlink_metadata().is_ok() => {
                Err(CliError::invalid(format!(
                    "{}: already exists; zkv bench creates a new image and never \
                     overwrites a file",
                    path.display()
                )))
            }
            DeviceSpec::File(_) => Ok(()),
            DeviceSpec::Zbd(_) => Err(CliError::invalid(format!(
                "--device {}: zkv bench runs on mem or a new file: image so far",
                self.device
            ))),
            _ => Err(refuse_unknown(&self.device)),
        }
    }

    /// Device, file system, zone cleaner and database, as the plan says: a new store, or
    /// the one on the image with `--use-existing-db` (the plan then takes the image's
    /// geometry and file system options).
    fn open_store(&self, plan: &mut Plan) -> CliResult<Store> {
        match &self.file_system {
            FsSpec::Posix(dir) => return self.open_posix(dir, None, plan),
            FsSpec::PosixTemp => {
                let temp = tempfile::tempdir().map_err(|e| {
                    CliError::invalid(format!("--fs posix: a temporary directory: {e}"))
                })?;
                let dir = temp.path().to_path_buf();
                return self.open_posix(&dir, Some(temp), plan);
            }
            FsSpec::Zoned => {}
        }
        let fs = match (&self.device, self.existing_db()) {
            (DeviceSpec::File(path), true) => self.mount_existing(path, plan)?,
            _ => {
                let dev = self.make_device(plan.geometry)?;
                self.format(dev, plan)?
            }
        };
        let device = self.device.to_string();
        // Threaded mode cleans in the background; deterministic mode on its virtual cleaner
        // thread.
        let cleaner = match self.mode {
            ExecMode::Threaded => Some(fs.start_cleaner().map_err(|e| fs_error(&device, e))?),
            ExecMode::Deterministic => None,
        };
        let db = Db::open(Arc::clone(&fs), plan.options.clone())
            .map_err(|e| CliError::invalid(format!("{device}: opening the database: {e}")))?;
        if cleaner.is_none() {
            db.set_inline_cleaning(true);
        }
        Ok(Store {
            db,
            fs,
            cleaner,
            _temp: None,
        })
    }

    /// The database in a new directory (`temp`, when it is one to remove after the run):
    /// no device, no zone cleaner.
    fn open_posix(
        &self,
        dir: &Path,
        temp: Option<tempfile::TempDir>,
        plan: &Plan,
    ) -> CliResult<Store> {
        let spec = &self.file_system;
        let fs = PosixFs::open(dir)
            .map_err(|e: FsError| CliError::invalid(format!("--fs {spec}: {e}")))?;
        let fs: Arc<dyn FileSystem> = Arc::new(fs);
        let db = Db::open(Arc::clone(&fs), plan.options.clone())
            .map_err(|e| CliError::invalid(format!("--fs {spec}: opening the database: {e}")))?;
        Ok(Store {
            db,
            fs,
            cleaner: None,
            _temp: temp,
        })
    }

    /// The report's scheme: the zoned scheme the placement, picker and cleaning make (the
    /// file system's options as it runs with them: an existing image's own), or `posix`.
    fn scheme(&self, plan: &Plan) -> String {
        if self.file_system.is_posix() {
            return "posix".to_string();
        }
        scheme_name(&Parts {
            placement: &plan.fs_options.placement,
            picker: &self.picker,
            gc_mode: plan.fs_options.gc_mode,
            blob_placement: &plan.fs_options.blob_placement,
            blob_gc_cutoff: self.blob.gc_cutoff().name(),
        })
        .to_string()
    }

    /// The emulated device, with the `--timing` model attached when one is asked for.
    fn make_device(&self, geo: Geometry) -> CliResult<Arc<dyn ZonedDevice>> {
        let model = self.timing.model(&geo);
        Ok(match &self.device {
            DeviceSpec::File(path) => timed(create_image(path, geo, "zkv bench")?, model),
            _ => timed(MemDevice::new(geo)?, model),
        })
    }

    /// Formats the device; a new image whose format fails is removed again.
    fn format(&self, dev: Arc<dyn ZonedDevice>, plan: &Plan) -> CliResult<Arc<ZoneFs>> {
        let device = self.device.to_string();
        match ZoneFs::format(dev, plan.fs_options.clone()) {
            Ok(fs) => Ok(Arc::new(fs)),
            Err(e) => {
                if let DeviceSpec::File(path) = &self.device {
                    let _ = std::fs::remove_file(path);
                }
                Err(fs_error(&device, e))
            }
        }
    }

    fn workload_names(&self) -> String {
        let names: Vec<&str> = self.workload.0.iter().map(|w| w.name()).collect();
        names.join(",")
    }

    /// Operations between two points of the time series.
    fn sample_interval_or_default(&self) -> u64 {
        self.sample_interval.unwrap_or((self.num / 100).max(1))
    }

    /// The flags only some policies read (`--acc-turning-point`, `--acc-min-level`: the
    /// acc and zone-drain pickers; `--short-threshold`: the segregating Prophet placements)
    /// that the command line gave although this run's policies do not read them. `zkv
    /// bench` refuses them; `zkv compare` only where no scheme, or only the entry that sets
    /// them, would read them.
    pub(crate) fn unread_acc_flags(&self) -> Vec<&'static str> {
        let acc = ACC_FLAGS.iter().filter(|_| !self.reads_acc_flags());
        let short = [("short_threshold", SHORT_FLAG)];
        let short = short.iter().filter(|_| !self.reads_short_threshold());
        acc.chain(short)
            .filter(|(id, _)| self.given.has(id))
            .map(|&(_, flag)| flag)
            .collect()
    }

    /// Whether this run reads `flag`, one of [`Self::unread_acc_flags`]'s.
    pub(crate) fn reads_flag(&self, flag: &str) -> bool {
        match flag {
            SHORT_FLAG => self.reads_short_threshold(),
            _ => self.reads_acc_flags(),
        }
    }

    /// Whether the placement segregates short-lived SSTs (the threshold says which).
    pub(crate) fn reads_short_threshold(&self) -> bool {
        // An existing image's placement is known only once it is mounted.
        self.existing_db()
            || zkv_zonefs::placement::Prophet::by_name(&self.fs.placement)
                .is_some_and(|p| p.segregation)
    }

    /// Whether the picker reads the ACC options (with any other the two flags would change
    /// nothing but the report's `config`).
    pub(crate) fn reads_acc_flags(&self) -> bool {
        picker_entry(&self.picker).is_ok_and(|e| e.reads_acc)
    }

    /// The refusal of `flag`, one of [`Self::unread_acc_flags`].
    pub(crate) fn unread_acc_flag(&self, flag: &str) -> CliError {
        if flag == SHORT_FLAG {
            return CliError::invalid(format!(
                "{flag}: only the prophet and prophet-gc placements read it, and the \
                 placement is {}",
                self.fs.placement
            ));
        }
        let readers: Vec<&str> = (PICKER_TABLE.iter())
            .filter(|e| e.reads_acc)
            .map(|e| e.name)
            .collect();
        CliError::invalid(format!(
            "{flag}: only the {} pickers read it, and the picker is {}",
            readers.join(" and "),
            self.picker
        ))
    }

    /// Every effective option of the run, for the JSON report's `config`.
    /// On a directory the zone device's entries (geometry, placement, cleaning, timing,
    /// `device`) are left out and `fs` names the directory; a zoned run's config has no
    /// `fs` entry (its reports read as before the directory file system existed).
    fn config(&self, plan: &Plan) -> Value {
        let mut all = serde_json::Map::new();
        let device = match self.file_system {
            FsSpec::Zoned => device_config(&plan.geometry, &plan.fs_options),
            FsSpec::Posix(_) | FsSpec::PosixTemp => json!({ "fs": self.file_system.to_string() }),
        };
        for part in [self.run_config(plan), device, engine_config(&plan.options)] {
            if let Value::Object(m) = part {
                all.extend(m);
            }
        }
        if self.file_system.is_posix() {
            all.remove("device");
            all.remove("timing");
        }
        Value::Object(all)
    }

    fn run_config(&self, plan: &Plan) -> Value {
        let mut config = json!({
            "workload": self.workload_names(), "num": self.num, "key_size": self.key_size,
            "value_size": self.value_size, "seed": self.seed,
            "readwritepercent": self.readwritepercent, "verify": self.verify,
            "sync": plan.write.sync, "disable_wal": plan.write.disable_wal,
            "benchmark_write_rate_limit": self.benchmark_write_rate_limit,
            "wait_for_compaction": self.wait_for_compaction,
            "sample_interval": self.sample_interval_or_default(),
            "device": self.device.to_string(),
            "timing": self.timing.name(), "preset": self.preset, "quick": self.quick,
            "acc_turning_point": self.acc_turning_point, "acc_min_level": self.acc_min_level,
        });
        // Only where they differ from what runs without them: the configs of runs that
        // do not give them stay as they were.
        if let Value::Object(m) = &mut config {
            m.extend(self.db_bench_config());
            // Only with several: the configs of one-thread runs stay as they were. Nor
            // do write groups of several writes form with one client thread.
            if self.threads > 1 {
                m.insert("threads".into(), json!(self.threads));
                let concurrent = plan.options.allow_concurrent_memtable_write;
                m.insert("allow_concurrent_memtable_write".into(), json!(concurrent));
            }
        }
        let idles = self.workload.0.contains(&WorkloadName::Idle);
        if let (true, Value::Object(m)) = (idles, &mut config) {
            m.insert("idle_seconds".into(), json!(self.idle_seconds));
        }
        if let (Some(d), Value::Object(m)) = (self.request_distribution, &mut config) {
            m.insert("request_distribution".into(), json!(d.name()));
        }
        if let Value::Object(m) = &mut config {
            m.extend(self.ycsb_config(plan.ycsb_file.as_ref()));
            if self.existing_db() {
                m.insert("use_existing_db".into(), json!(true));
            }
            if let Some(target) = self.target {
                m.insert("target".into(), json!(target));
            }
        }
        if let (true, Value::Object(m)) = (self.has_mixgraph(), &mut config) {
            m.insert("mixgraph".into(), self.mixgraph.json(self.reads()));
        }
        // The values' random fraction matters only to a run that compresses.
        let compressed = self.compression() != CompressionType::None;
        if let (true, Value::Object(m)) = (compressed, &mut config) {
            let ratio = self.value_ratio().unwrap_or(1.0);
            m.insert("compression_ratio".into(), json!(ratio));
        }
        config
    }
}

/// `dev` with `model` attached, if any.
fn timed<S: Storage + 'static>(
    dev: Emulated<S>,
    model: Option<TimingModel>,
) -> Arc<dyn ZonedDevice> {
    match model {
        Some(m) => Arc::new(dev.with_timing(m)),
        None => Arc::new(dev),
    }
}

fn device_config(g: &Geometry, f: &FsOptions) -> Value {
    json!({
        "zones": g.zones, "zone_size": g.zone_size,
        "zone_capacity": g.zone_capacity, "block_size": g.block_size,
        "max_open": g.max_open, "max_active": g.max_active,
        "meta_zones": f.meta_zones, "reserved_zones": f.reserved_zones,
        "placement": f.placement, "blob_placement": f.blob_placement,
        "finish_threshold": f.finish_threshold,
        "gc_start": f.gc_start, "gc_stop": f.gc_stop, "gc_mode": f.gc_mode.name(),
    })
}

fn engine_config(o: &Options) -> Value {
    let mut m = json!({
        "picker": o.compaction_pri, "mode": o.mode.name(),
        "write_buffer_size": o.write_buffer_size,
        "max_write_buffer_number": o.max_write_buffer_number, "num_levels": o.num_levels,
        "target_file_size_base": o.target_file_size_base,
        "target_file_size_multiplier": o.target_file_size_multiplier,
        "max_bytes_for_level_base": o.max_bytes_for_level_base,
        "max_bytes_for_level_multiplier": o.max_bytes_for_level_multiplier,
        "level0_file_num_compaction_trigger": o.level0_file_num_compaction_trigger,
        "short_threshold": o.prophet_short_threshold,
        "level0_slowdown_writes_trigger": o.level0_slowdown_writes_trigger,
        "level0_stop_writes_trigger": o.level0_stop_writes_trigger,
    });
    let more = json!({
        "soft_pending_compaction_bytes_limit": o.soft_pending_compaction_bytes_limit,
        "hard_pending_compaction_bytes_limit": o.hard_pending_compaction_bytes_limit,
        "max_compaction_bytes": o.max_compaction_bytes(),
        "level_compaction_dynamic_file_size": o.level_compaction_dynamic_file_size,
        "compaction_threads": o.max_background_compactions,
        "flush_threads": o.max_background_flushes,
        "max_subcompactions": o.max_subcompactions,
        "bloom_bits": o.bloom_bits_per_key, "sst_block_size": o.block_size,
        "block_restart_interval": o.block_restart_interval,
        "cache_size": o.block_cache_size, "open_files": o.max_open_files,
        "compression_type": o.compression.name(),
    });
    if let (Value::Object(m), Value::Object(more), Value::Object(blob)) =
        (&mut m, more, blob::config(o))
    {
        m.extend(more);
        m.extend(blob);
        // The cost model has no effect on a threaded run (nor on whether its report can
        // be reused by `zkv repro --resume`).
        if o.mode == ExecMode::Deterministic {
            m.insert("sim".into(), sim_config(&o.sim, o.enable_blob_files));
        }
    }
    m
}

/// The names `--sim-cost` takes, in the order of `SimCosts`.
const SIM_COSTS: [&str; 15] = [
    "write_op_ns",
    "write_byte_ps",
    "read_op_ns",
    "job_ns",
    "flush_byte_ps",
    "flush_entry_ns",
    "compaction_byte_ps",
    "compaction_entry_ns",
    "clean_byte_ps",
    "blob_write_ns",
    "blob_write_byte_ps",
    "blob_read_ns",
    "blob_read_byte_ps",
    "output_at_pct",
    "spread_outputs",
];

/// The costs in the report's config. The blob costs only with blob files on, where they
/// take effect: reports of runs without blob files read as before they existed;
/// `output_at_pct` only when it is not the default (100, the job's end), so that reports
/// at the default read as before it existed; and `spread_outputs` (1) only when it is on
/// (the default): a report without it was made with every job's tables written together,
/// as every report before the option existed.
fn sim_config(c: &SimCosts, blobs: bool) -> Value {
    let mut v = json!({
        "write_op_ns": c.write_op_ns, "write_byte_ps": c.write_byte_ps,
        "read_op_ns": c.read_op_ns, "job_ns": c.job_ns,
        "flush_byte_ps": c.flush_byte_ps, "flush_entry_ns": c.flush_entry_ns,
        "compaction_byte_ps": c.compaction_byte_ps,
        "compaction_entry_ns": c.compaction_entry_ns, "clean_byte_ps": c.clean_byte_ps,
    });
    if let (true, Value::Object(m)) = (blobs, &mut v) {
        m.insert("blob_write_ns".into(), json!(c.blob_write_ns));
        m.insert("blob_write_byte_ps".into(), json!(c.blob_write_byte_ps));
        m.insert("blob_read_ns".into(), json!(c.blob_read_ns));
        m.insert("blob_read_byte_ps".into(), json!(c.blob_read_byte_ps));
    }
    if let (true, Value::Object(m)) = (c.output_at_pct != 100, &mut v) {
        m.insert("output_at_pct".into(), json!(c.output_at_pct));
    }
    if let (true, Value::Object(m)) = (c.spread_outputs, &mut v) {
        m.insert("spread_outputs".into(), json!(1));
    }
    v
}

/// `NAME=VALUE` of `--sim-cost`, the value a non-negative integer.
fn parse_sim_cost(input: &str) -> Result<(String, u64), String> {
    let (name, value) = input
        .split_once('=')
        .ok_or_else(|| format!("'{input}' is not NAME=VALUE"))?;
    let value = value
        .trim()
        .parse()
        .map_err(|_| format!("'{value}' is not a non-negative integer"))?;
    Ok((name.trim().to_string(), value))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

/// What a run on a device needs, from the live bytes it leaves behind (see
/// [`BenchArgs::space_needed`]).
struct SpaceNeed {
    /// Bytes of the distinct keys the run leaves behind.
    live: u64,
    /// A quarter more: the space amplification of a tree whose last level is ten times the
    /// one above.
    steady: u64,
    /// The L0 files that wait for an L0→L1 compaction, up to the slowdown trigger (RocksDB
    /// lets L0 grow that far while a compaction runs, and so do both of zkv's modes), at
    /// most the live data (a run that writes little fills few). At 1 MiB zones, 64 KiB
    /// memtables and 30,000 keys of 512 B that is 1.25 MiB; without it the check accepted
    /// devices on which runs filled every zone with live tables.
    waiting_l0: u64,
    /// Three write buffers (memtable WALs and a flush output) and two SSTs being written.
    buffers: u64,
    /// The largest compaction's outputs (see [`largest_compaction`]).
    compaction: u64,
}

impl SpaceNeed {
    fn new(o: &Options, live: u64) -> SpaceNeed {
        let mut need = SpaceNeed {
            live,
            steady: live.saturating_add(live / 4),
            waiting_l0: l0_at_slowdown(o).min(live),
            buffers: o
                .write_buffer_size
                .saturating_mul(3)
                .saturating_add(o.target_file_size_base.saturating_mul(2)),
            compaction: 0,
        };
        need.compaction = largest_compaction(o, need.stored());
        need
    }

    /// What the LSM holds at most.
    fn stored(&self) -> u64 {
        self.steady.saturating_add(self.waiting_l0)
    }

    fn needed(&self) -> u64 {
        self.stored()
            .saturating_add(self.buffers)
            .saturating_add(self.compaction)
    }
}

/// L0 at the slowdown trigger: that many memtables' worth of files.
fn l0_at_slowdown(o: &Options) -> u64 {
    o.write_buffer_size
        .saturating_mul(u64::from(o.level0_slowdown_writes_trigger))
}

/// Room the largest compaction needs beside the data: its outputs are written before its
/// inputs die. An L0→L1 compaction takes the L0 files (at most the slowdown trigger's worth
/// of memtables) and every L1 file they overlap, with random keys all of L1, which grows
/// to `max_bytes_for_level_base` (or all the data, if less); a deeper one is bounded by
/// `max_compaction_bytes`.
fn largest_compaction(o: &Options, stored: u64) -> u64 {
    let l0_l1 = o
        .max_bytes_for_level_base
        .min(stored)
        .saturating_add(l0_at_slowdown(o));
    l0_l1.max(o.max_compaction_bytes()).min(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_list_every_picker_and_placement_as_the_tables_do() {
        use zkv_zonefs::placement::{policies_markdown, BLOB_POLICY_TABLE, POLICY_TABLE};
        let docs = include_str!("../../../docs/CLI.md");
        for table in [
            zkv_engine::compaction::pickers_markdown(),
            policies_markdown(POLICY_TABLE),
            policies_markdown(BLOB_POLICY_TABLE),
        ] {
            assert!(
                docs.contains(&table),
                "docs/CLI.md (\"Pickers and placements\") must hold this table:\n{table}"
            );
        }
    }

    #[test]
    fn acc_flag_defaults_are_the_engines() {
        let a = Acc::default();
        let percent = f64::from(DEFAULT_ACC_TURNING_POINT) / 100.0;
        assert!((a.turning_point - percent).abs() < 1e-12);
        assert_eq!(a.min_level, DEFAULT_ACC_MIN_LEVEL);
    }
}
