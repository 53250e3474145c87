//! `zkv bench --preset NAME [--quick]`: the papers' experiments of DESIGN.md section 10,
//! at 1/16 of the papers' scale (1 GiB zones → 64 MiB, 64 MiB SSTs and memtables → 4 MiB,
//! 256 MiB L1 → 16 MiB, data sets ÷ 16), so every ratio the papers' effects depend on
//! (zone/SST, device/data, level sizes) is kept.
//!
//! A preset only fills in what the command line does not say: a flag given next to it
//! wins. `--num` is derived from the preset's data volume and the effective key and value
//! sizes, so `--value-size` alone keeps the volume and changes the operation count.
//!
//! `--quick` divides every size of the preset by a further 8 — data, zone size, memtable,
//! SST and L1 target alike — and keeps every count (zones, reserved zones, open and active
//! limits, level multiplier, L0 trigger, cleaning thresholds). Dividing the zone count
//! instead would leave 12 zones, too few for the open-zone limit and the lifetime classes
//! of the placement to behave as on the full device; scaling the sizes together keeps the
//! number of zones, SSTs per zone, SSTs and levels, flushes and compactions of the 1/16
//! run, so the same phenomena appear in an eighth of the time. Flags given explicitly are
//! used as given, never scaled.
//!
//! A preset runs one scheme (the paper's baseline unless flags say otherwise); the rest of
//! the paper's experiment is never dropped silently: a preset prints what the paper also
//! runs and how to run it (`zkv compare`, `zkv repro`), or that zkv cannot run it yet (see
//! [`Preset::also`]); a preset whose baseline zkv cannot run is refused with the reason
//! (see [`Preset::blocked`]).
//!
//! `samezone24` and `caza22` halve the paper's data volumes on top of the 1/16 scale. The
//! MSST'24 paper's
//! fillrandom writes 72 GB to a 67 GB device, which only fits because db_bench compresses
//! values by default (snappy, `compression_ratio` 0.5, so about half of each 1 KiB value
//! reaches the device); zkv does not compress. Halving the volume (4.5 GiB → 2.25 GiB of
//! fillrandom, a YCSB load of 2.25 GiB → 1.125 GiB) makes the bytes that reach the device,
//! and with them the SST and zone counts and the device's fill ratio, those of the paper;
//! the key count is half the paper's (÷ 32 instead of ÷ 16). The HotStorage'22 paper ran
//! db_bench too and says nothing of compression either, so `caza22` is halved the same way
//! (its 16 B keys compress little, so its on-disk bytes are 0.5–0.56 of the raw ones; half is
//! the closer round figure). Unhalved, its device fills so far with live data that under
//! LIZA only about 3 % of zone resets are zero-copy, against the paper's 76 % at a 5 %
//! threshold; halved, 82 % (docs/REPRODUCTION.md).

use std::collections::BTreeSet;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, FromArgMatches};
use zkv_bench::WorkloadName;
use zkv_zns::timing::TimingPreset;
use zkv_zonefs::fs::CleaningMode;

use super::{parse_workloads, BenchArgs};
use crate::cli::error::{CliError, CliResult};
use crate::cli::size::{format_size, GIB, MIB};

/// `--quick` divides the preset's sizes by this.
pub const QUICK_DIVISOR: u64 = 8;

/// The preset names `--preset` accepts, in DESIGN.md's order.
pub const NAMES: &[&str] = &["caza22", "samezone24", "prophet24", "samevictim24"];

/// One paper's configuration at 1/16 scale. Counts are as the paper has them; sizes are
/// the paper's ÷ 16 (÷ 128 with `--quick`).
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    pub name: &'static str,
    /// The paper, for the note printed before the run.
    pub paper: &'static str,
    pub zones: u32,
    pub zone_size: u64,
    pub max_open: u32,
    pub max_active: u32,
    pub reserved_zones: u32,
    /// Workloads run in sequence; each writes `bytes_per_workload`.
    pub workload: &'static str,
    pub bytes_per_workload: u64,
    /// The YCSB load's volume when the workloads are YCSB's (`--workload ycsb-a`); 0 = the
    /// paper runs no YCSB, `bytes_per_workload` is used.
    pub ycsb_bytes: u64,
    pub key_size: u64,
    pub value_size: u64,
    pub write_buffer_size: u64,
    pub target_file_size_base: u64,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
    pub level0_file_num_compaction_trigger: u32,
    pub gc_start: u8,
    pub gc_stop: u8,
    /// `None`: the placement's default (`--gc-mode`'s).
    pub gc_mode: Option<CleaningMode>,
    pub placement: &'static str,
    pub picker: &'static str,
    /// The device timing model of the paper's device (`none` for a DRAM device).
    pub timing: TimingPreset,
    /// What the paper's experiment also runs besides the preset's one run, and how to run
    /// it with zkv (or that zkv cannot yet); printed before the run.
    pub also: &'static [&'static str],
    /// Set when zkv bench cannot run even the paper's baseline: the preset is refused.
    pub blocked: Option<&'static str>,
    /// BlobDB as the paper runs it; `None`: values stay in the tables.
    pub blob: Option<BlobPreset>,
}

/// A BlobDB paper's setup: every value in blob files of `file_size` bytes (a size, scaled
/// with the others), blob garbage collection with RocksDB's default age cutoff, and the
/// paper's background threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobPreset {
    pub file_size: u64,
    pub flush_threads: u32,
    pub compaction_threads: u32,
    pub subcompactions: u32,
}

/// RocksDB's 64 MiB memtable and SST and 256 MiB L1, ÷ 16: every preset's LSM unless the
/// paper says otherwise.
const SST: u64 = 4 * MIB;
const L1: u64 = 16 * MIB;
const ZONE: u64 = 64 * MIB;

/// What every paper's setup shares unless it says otherwise: 64 MiB zones (capacity = zone
/// size) with 14 open and 14 active, RocksDB's LSM at 1/16, ZenFS's 20% / 25% copying
/// cleaner, and the baseline scheme (LIZA placement, SICA picker).
const COMMON: Preset = Preset {
    name: "",
    paper: "",
    zones: 0,
    zone_size: ZONE,
    max_open: 14,
    max_active: 14,
    reserved_zones: 0,
    workload: "fillrandom",
    bytes_per_workload: 0,
    ycsb_bytes: 0,
    key_size: 16,
    value_size: 1024,
    write_buffer_size: SST,
    target_file_size_base: SST,
    max_bytes_for_level_base: L1,
    max_bytes_for_level_multiplier: 10.0,
    level0_file_num_compaction_trigger: 4,
    gc_start: 20,
    gc_stop: 25,
    gc_mode: None,
    placement: "liza",
    picker: "sica",
    timing: TimingPreset::None,
    also: &[],
    blocked: None,
    blob: None,
};

const CAZA22: Preset = Preset {
    name: "caza22",
    paper: "CAZA, HotStorage'22",
    zones: 100,
    reserved_zones: 10,
    workload: "fillseq,overwrite",
    // 40 GB ÷ 16, halved for db_bench's 0.5 compression (see the module doc).
    bytes_per_workload: 5 * GIB / 4,
    value_size: 128,
    // The paper's threshold is the free space a cleaning run must restore; 15% is the
    // value of its time-span figure, the middle of its 5..25% sweep.
    gc_start: 15,
    gc_stop: 15,
    also: &[
        "the caza placement: scheme caza22 (zkv compare --preset caza22 --schemes \
         baseline,caza22)",
        "the cleaning threshold sweep 5..25% (--gc-start N --gc-stop N), and every figure \
         of the paper: zkv repro caza22",
    ],
    ..COMMON
};

const SAMEZONE24: Preset = Preset {
    name: "samezone24",
    paper: "Same-Zone Compaction (ZACA, CAZA, ACC), MSST'24",
    zones: 67,
    // 72 GB and 36 GB ÷ 16, halved for db_bench's 0.5 compression (see the module doc).
    bytes_per_workload: 9 * GIB / 4,
    ycsb_bytes: 9 * GIB / 8,
    // The paper's device is ConfZNS (8 channels × 2 dies, read 65 µs, program 450 µs).
    timing: TimingPreset::Confzns,
    // ZenFS's cleaning starts below 20% free, as in the paper's time series (COMMON's);
    // ACC's turning point 25% and minimum level 2 are the bench defaults.
    also: &[
        "the schemes a-liza, caza and a-caza (zkv compare --preset samezone24 --schemes \
         baseline,a-liza,caza,a-caza)",
        "YCSB with zipfian 0.99, latest and uniform requests: --workload ycsb-a \
         --request-distribution zipfian|latest|uniform (a load of 1.125 GiB, then as many \
         50% read / 50% update operations)",
        "every scheme, workload and figure of the paper: zkv repro samezone24",
    ],
    ..COMMON
};

const PROPHET24: Preset = Preset {
    name: "prophet24",
    paper: "Prophet, MSST'24",
    zones: 100,
    bytes_per_workload: 25 * GIB / 4,
    key_size: 8,
    value_size: 256,
    max_bytes_for_level_multiplier: 4.0,
    // The paper's headline WA figures are at GC_STOP_LEVEL 45%.
    gc_stop: 45,
    picker: "round-robin",
    also: &[
        "the schemes prophet-gc-no, prophet-gc and prophet (lifetime prediction): zkv \
         compare --schemes baseline,prophet-gc-no,prophet-gc,prophet --preset prophet24",
        "full compaction and GC with compaction compensation (--gc-mode compact, \
         compensate) and the stop sweep 30/35/40/45% (--gc-stop)",
        "every figure of the paper zkv can run, the accuracy run (SST 64 KiB, 0.5 GiB) \
         among them: zkv repro prophet24",
    ],
    ..COMMON
};

const SAMEVICTIM24: Preset = Preset {
    name: "samevictim24",
    paper: "Same-Victim GC (BAZA, Z_Cutoff)",
    zones: 64,
    bytes_per_workload: 9 * GIB / 4,
    ycsb_bytes: 3 * GIB / 2,
    value_size: 8 * 1024,
    also: &[
        "the schemes baza and baza+: zkv compare --preset samevictim24 --schemes \
         baseline,baza,baza+",
        "YCSB load 1.5 GiB then WL(A) 80% update/20% insert, WL(B) 80% update/20% read, \
         WL(C) 50/50, zipfian 0.99: --workload ycsb-a --ycsb-property \
         readproportion=0 --ycsb-property updateproportion=0.8 --ycsb-property \
         insertproportion=0.2 (WL(A))",
        "the small-zone variant (4 MiB zones, 2 MiB blob files: --zone-size 4MiB \
         --blob-file-size 2MiB), and every figure of the paper: zkv repro samevictim24",
    ],
    // The paper's BlobDB: 2 flush threads, 2 compaction threads, 4 subcompactions; blob
    // files as large as the SSTs.
    blob: Some(BlobPreset {
        file_size: SST,
        flush_threads: 2,
        compaction_threads: 2,
        subcompactions: 4,
    }),
    ..COMMON
};

/// Every preset, in [`NAMES`]' order.
pub const PRESETS: [Preset; 4] = [CAZA22, SAMEZONE24, PROPHET24, SAMEVICTIM24];

/// The preset called `name`; the error lists the known ones.
pub fn by_name(name: &str) -> CliResult<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        CliError::invalid(format!(
            "--preset {name}: unknown preset (known: {})",
            NAMES.join(", ")
        ))
    })
}

impl Preset {
    /// The preset with its sizes divided by [`QUICK_DIVISOR`] when `quick`.
    pub fn scaled(&self, quick: bool) -> Preset {
        if !quick {
            return self.clone();
        }
        let s = |v: u64| v / QUICK_DIVISOR;
        let blob = self.blob.map(|b| BlobPreset {
            file_size: s(b.file_size),
            ..b
        });
        Preset {
            blob,
            zone_size: s(self.zone_size),
            bytes_per_workload: s(self.bytes_per_workload),
            ycsb_bytes: s(self.ycsb_bytes),
            write_buffer_size: s(self.write_buffer_size),
            target_file_size_base: s(self.target_file_size_base),
            max_bytes_for_level_base: s(self.max_bytes_for_level_base),
            ..self.clone()
        }
    }

    /// Operations per workload that write the preset's volume with these entry sizes: its
    /// YCSB volume when every workload is YCSB's and the paper has one, else its volume per
    /// workload. Entries are counted as key + value, with the paper's key size also for
    /// YCSB's keys (`user` and up to 20 digits: the papers' key size is what they report).
    pub fn num(&self, workloads: &[WorkloadName], key_size: u64, value_size: u64) -> u64 {
        let ycsb = |w: &WorkloadName| matches!(w, WorkloadName::Ycsb(_));
        let bytes = if self.ycsb_bytes > 0 && workloads.iter().all(ycsb) {
            self.ycsb_bytes
        } else {
            self.bytes_per_workload
        };
        (bytes / key_size.saturating_add(value_size).max(1)).max(1)
    }
}

/// The clap ids of the flags given on the command line, so that a preset fills in only
/// the others. clap fills this from the same matches as the struct it is flattened into
/// (`zkv bench`, or a command that flattens `BenchArgs`); it adds no flag of its own.
#[derive(Clone, Debug, Default)]
pub struct GivenFlags(BTreeSet<String>);

impl GivenFlags {
    pub fn has(&self, id: &str) -> bool {
        self.0.contains(id)
    }

    /// Counts `id` as not given.
    pub fn forget(&mut self, id: &str) {
        self.0.remove(id);
    }
}

impl FromArgMatches for GivenFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let given = m
            .ids()
            .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
            .map(|id| id.as_str().to_string())
            .collect();
        Ok(GivenFlags(given))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for GivenFlags {
    fn augment_args(cmd: Command) -> Command {
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd
    }
}

/// What [`apply`] did, for the note before the run.
#[derive(Clone, Debug)]
pub struct Applied {
    pub preset: &'static Preset,
    pub quick: bool,
}

/// Fills the flags the command line did not give from `--preset` (scaled by `--quick`).
/// Idempotent: values come from the preset table, never from the fields' current values.
pub fn apply(a: &mut BenchArgs) -> CliResult<Option<Applied>> {
    let Some(name) = a.preset.clone() else {
        return Ok(None);
    };
    let preset = by_name(&name)?;
    if let Some(why) = preset.blocked {
        return Err(CliError::invalid(format!(
            "--preset {name}: {why}; presets zkv bench runs: {}",
            runnable().join(", ")
        )));
    }
    let p = preset.scaled(a.quick);
    apply_run(a, &p)?;
    apply_device(a, &p);
    apply_lsm(a, &p);
    apply_blob(a, &p);
    Ok(Some(Applied {
        preset,
        quick: a.quick,
    }))
}

fn runnable() -> Vec<&'static str> {
    PRESETS
        .iter()
        .filter(|p| p.blocked.is_none())
        .map(|p| p.name)
        .collect()
}

/// `field = value` unless the flag of clap id `id` was given.
fn fill<T>(given: &GivenFlags, id: &str, field: &mut T, value: T) {
    if !given.has(id) {
        *field = value;
    }
}

fn apply_run(a: &mut BenchArgs, p: &Preset) -> CliResult {
    let g = &a.given;
    let workloads = parse_workloads(p.workload)
        .map_err(|e| CliError::invalid(format!("--preset {}: {e}", p.name)))?;
    fill(g, "workload", &mut a.workload, workloads);
    fill(g, "key_size", &mut a.key_size, p.key_size);
    fill(g, "value_size", &mut a.value_size, p.value_size);
    // After the workloads and sizes: the volume is the preset's, the workloads and the
    // entries are the effective ones.
    let num = p.num(&a.workload.0, a.key_size, a.value_size);
    fill(g, "num", &mut a.num, num);
    Ok(())
}

/// Zone capacity is left to its default, the zone size, as on every paper's device; so an
/// explicit `--zone-size` never meets a preset capacity larger than itself.
fn apply_device(a: &mut BenchArgs, p: &Preset) {
    let (g, geo) = (&a.given, &mut a.geometry);
    fill(g, "zones", &mut geo.zones, Some(p.zones));
    fill(g, "zone_size", &mut geo.zone_size, Some(p.zone_size));
    fill(g, "max_open", &mut geo.max_open, Some(p.max_open));
    fill(g, "max_active", &mut geo.max_active, Some(p.max_active));
    fill(g, "timing", &mut a.timing, p.timing);
    let fs = &mut a.fs;
    fill(
        g,
        "reserved_zones",
        &mut fs.reserved_zones,
        p.reserved_zones,
    );
    fill(g, "placement", &mut fs.placement, p.placement.to_string());
    fill(g, "gc_start", &mut fs.gc_start, p.gc_start);
    fill(g, "gc_stop", &mut fs.gc_stop, p.gc_stop);
    fill(g, "gc_mode", &mut fs.gc_mode, p.gc_mode);
}

fn apply_lsm(a: &mut BenchArgs, p: &Preset) {
    let g = &a.given;
    fill(g, "picker", &mut a.picker, p.picker.to_string());
    // Every published run of a preset read without a block cache: their reports stay
    // comparable (and reusable by `zkv repro --resume`).
    fill(g, "cache_size", &mut a.cache_size, Some(0));
    let sizes = [
        (
            "write_buffer_size",
            &mut a.write_buffer_size,
            p.write_buffer_size,
        ),
        (
            "target_file_size_base",
            &mut a.target_file_size_base,
            p.target_file_size_base,
        ),
        (
            "max_bytes_for_level_base",
            &mut a.max_bytes_for_level_base,
            p.max_bytes_for_level_base,
        ),
    ];
    for (id, field, value) in sizes {
        fill(g, id, field, Some(value));
    }
    fill(
        g,
        "max_bytes_for_level_multiplier",
        &mut a.max_bytes_for_level_multiplier,
        Some(p.max_bytes_for_level_multiplier),
    );
    fill(
        g,
        "level0_file_num_compaction_trigger",
        &mut a.level0_file_num_compaction_trigger,
        Some(p.level0_file_num_compaction_trigger),
    );
}

/// BlobDB on, as the paper runs it (each part unless given).
fn apply_blob(a: &mut BenchArgs, p: &Preset) {
    let Some(blob) = p.blob else {
        return;
    };
    let g = &a.given;
    let b = &mut a.blob;
    fill(g, "enable_blob_files", &mut b.enable_blob_files, true);
    fill(
        g,
        "blob_file_size",
        &mut b.blob_file_size,
        Some(blob.file_size),
    );
    fill(
        g,
        "enable_blob_garbage_collection",
        &mut b.enable_blob_garbage_collection,
        true,
    );
    let threads = Some(blob.flush_threads);
    fill(g, "flush_threads", &mut a.flush_threads, threads);
    let threads = Some(blob.compaction_threads);
    fill(g, "compaction_threads", &mut a.compaction_threads, threads);
    let subs = Some(blob.subcompactions);
    fill(g, "max_subcompactions", &mut a.max_subcompactions, subs);
}

/// The presets' share of the papers' sizes: 1/16, a further [`QUICK_DIVISOR`] with `--quick`.
pub fn scale(quick: bool) -> String {
    let divisor = if quick { 16 * QUICK_DIVISOR } else { 16 };
    format!("1/{divisor}")
}

/// The lines printed before the run: which paper, which scale, what runs, and what the
/// paper also runs that zkv does not yet.
pub fn note_lines(applied: &Applied) -> Vec<String> {
    let p = applied.preset;
    let quick = if applied.quick { " (--quick)" } else { "" };
    let scale = format!("{} scale{quick}", scale(applied.quick));
    let zone = p.scaled(applied.quick).zone_size;
    let mut lines = vec![format!(
        "Preset {} ({}) at {scale}: {} zones of {}, {}; explicit flags override it.",
        p.name,
        p.paper,
        p.zones,
        format_size(zone),
        p.workload
    )];
    lines.push(format!(
        "It sets the paper's baseline ({} placement, {} picker; timing model {}). The paper \
         also runs:",
        p.placement,
        p.picker,
        p.timing.name()
    ));
    if let Some(b) = p.scaled(applied.quick).blob {
        lines.insert(
            1,
            format!(
                "BlobDB as the paper runs it: every value in blob files of {}, blob GC (the \
                 baseline's age cutoff 0.25), {} flush and {} compaction threads, {} \
                 subcompactions.",
                format_size(b.file_size),
                b.flush_threads,
                b.compaction_threads,
                b.subcompactions
            ),
        );
    }
    lines.extend(p.also.iter().map(|s| format!("  - {s}")));
    lines
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn resolved(args: &[&str]) -> CliResult<BenchArgs> {
        let argv = std::iter::once("zkv-bench").chain(args.iter().copied());
        let mut a = Cli::try_parse_from(argv)
            .map_err(|e| CliError::invalid(e.to_string()))?
            .bench;
        apply(&mut a)?;
        Ok(a)
    }

    fn ok(args: &[&str]) -> BenchArgs {
        resolved(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// The values DESIGN.md section 10's table gives, checked field by field.
    fn assert_matches(a: &BenchArgs, p: &Preset) {
        assert_eq!(a.workload_names(), p.workload);
        assert_eq!((a.key_size, a.value_size), (p.key_size, p.value_size));
        assert_eq!(a.num, p.bytes_per_workload / (p.key_size + p.value_size));
        assert_eq!(a.timing, p.timing);
        let g = &a.geometry;
        assert_eq!(g.zones, Some(p.zones));
        assert_eq!(g.zone_size, Some(p.zone_size));
        assert_eq!(g.zone_capacity, None, "capacity = zone size");
        assert_eq!((g.max_open, g.max_active), (Some(14), Some(14)));
        assert_eq!(a.fs.reserved_zones, p.reserved_zones);
        assert_eq!(a.write_buffer_size, Some(p.write_buffer_size));
        assert_eq!(a.target_file_size_base, Some(p.target_file_size_base));
        assert_eq!(a.max_bytes_for_level_base, Some(p.max_bytes_for_level_base));
        assert_eq!(
            a.max_bytes_for_level_multiplier,
            Some(p.max_bytes_for_level_multiplier)
        );
        assert_eq!(
            a.level0_file_num_compaction_trigger,
            Some(p.level0_file_num_compaction_trigger)
        );
        assert_eq!(
            (a.fs.gc_start, a.fs.gc_stop, a.fs.gc_mode),
            (p.gc_start, p.gc_stop, p.gc_mode)
        );
        assert_eq!(
            (a.fs.placement.as_str(), a.picker.as_str()),
            (p.placement, p.picker)
        );
    }

    #[test]
    fn caza22_is_design_tables_row() {
        let a = ok(&["--preset", "caza22"]);
        assert_eq!(a.workload_names(), "fillseq,overwrite");
        assert_eq!(a.geometry.zones, Some(100));
        assert_eq!(a.geometry.zone_size, Some(64 * MIB));
        assert_eq!(a.fs.reserved_zones, 10);
        assert_eq!((a.key_size, a.value_size), (16, 128));
        // DESIGN's 2.5 GiB, halved for db_bench's default compression: 1.25 GiB of
        // 144-byte entries per workload.
        assert_eq!(a.num, 1_342_177_280 / 144);
        assert_eq!(a.write_buffer_size, Some(4 * MIB));
        assert_eq!(a.target_file_size_base, Some(4 * MIB));
        assert_eq!(a.max_bytes_for_level_base, Some(16 * MIB));
        assert_eq!(a.max_bytes_for_level_multiplier, Some(10.0));
        assert_eq!(
            (a.fs.placement.as_str(), a.picker.as_str()),
            ("liza", "sica")
        );
        assert_matches(&a, &CAZA22);
    }

    #[test]
    fn samezone24_is_design_tables_row_at_half_the_volume() {
        let a = ok(&["--preset", "samezone24"]);
        assert_eq!(a.geometry.zones, Some(67));
        assert_eq!(a.workload_names(), "fillrandom");
        assert_eq!((a.key_size, a.value_size), (16, 1024));
        // DESIGN's 4.5 GiB, halved: db_bench's values reach the paper's device compressed
        // to half their size, zkv's do not.
        assert_eq!(a.num, (9 * GIB / 4) / 1040);
        assert_eq!((a.fs.gc_start, a.fs.gc_stop), (20, 25));
        assert_eq!(a.timing, TimingPreset::Confzns);
        assert_eq!((a.acc_turning_point, a.acc_min_level), (25, 2));
        assert_matches(&a, &SAMEZONE24);
    }

    #[test]
    fn samezone24_ycsb_loads_half_of_its_paper_volume() {
        let a = ok(&[
            "--preset",
            "samezone24",
            "--workload",
            "ycsb-a",
            "--request-distribution",
            "uniform",
        ]);
        // 36 GB ÷ 16 ÷ 2 = 1.125 GiB of 16 B + 1 KiB records, then as many operations.
        assert_eq!(a.num, (9 * GIB / 8) / 1040);
        let quick = ok(&["--preset", "samezone24", "--quick", "--workload", "ycsb-a"]);
        assert_eq!(quick.num, (9 * GIB / 64) / 1040);
        // A list that is not all YCSB keeps the db_bench volume.
        let mixed = ok(&["--preset", "samezone24", "--workload", "fillrandom,ycsb-a"]);
        assert_eq!(mixed.num, (9 * GIB / 4) / 1040);
        // Papers without YCSB runs keep their volume for any workload.
        let caza = ok(&["--preset", "caza22", "--workload", "ycsb-a"]);
        assert_eq!(caza.num, (5 * GIB / 4) / 144);
    }

    #[test]
    fn samezone24_leaves_room_on_its_device() {
        // The paper's device ends about a third full of live data; the estimate of the
        // space a run needs (live data × 1.25 and buffers) must stay well inside it, for
        // the full and the quick scale and for both of its workloads.
        for args in [
            &["--preset", "samezone24"][..],
            &["--preset", "samezone24", "--quick"],
            &["--preset", "samezone24", "--workload", "ycsb-a"],
            &["--preset", "samezone24", "--quick", "--workload", "ycsb-a"],
        ] {
            let a = ok(args);
            let plan = a.plan().unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let geo = plan.geometry;
            let usable = u64::from(geo.zones - plan.fs_options.meta_zones) * geo.zone_capacity;
            let needed = a.space_needed(&plan.options, None).needed();
            assert!(needed * 2 < usable, "{args:?}: {needed} of {usable}");
        }
    }

    #[test]
    fn prophet24_is_design_tables_row() {
        let a = ok(&["--preset", "prophet24"]);
        assert_eq!(a.geometry.zones, Some(100));
        assert_eq!(a.geometry.max_open, Some(14));
        assert_eq!((a.key_size, a.value_size), (8, 256));
        assert_eq!(a.num, (25 * GIB / 4) / 264);
        assert_eq!(a.max_bytes_for_level_multiplier, Some(4.0));
        assert_eq!(a.level0_file_num_compaction_trigger, Some(4));
        assert_eq!(a.picker, "round-robin");
        assert_eq!((a.fs.gc_start, a.fs.gc_stop), (20, 45));
        assert_matches(&a, &PROPHET24);
    }

    #[test]
    fn samevictim24_is_design_tables_row_with_the_papers_blobdb() {
        let a = ok(&["--preset", "samevictim24"]);
        assert_eq!((a.key_size, a.value_size), (16, 8 * 1024));
        assert_eq!(a.num, (9 * GIB / 4) / (16 + 8 * 1024));
        assert_matches(&a, &SAMEVICTIM24);
        let o = a.plan().expect("a runnable preset").options;
        assert!(o.enable_blob_files && o.enable_blob_garbage_collection);
        assert_eq!((o.min_blob_size, o.blob_file_size), (0, 4 * MIB));
        assert_eq!(o.blob_garbage_collection_age_cutoff, 0.25);
        let threads = (o.max_background_flushes, o.max_background_compactions);
        assert_eq!((threads, o.max_subcompactions), ((2, 2), 4));
        // The YCSB load is 1.5 GiB; --quick scales blob files with the SSTs.
        let ycsb = ok(&["--preset", "samevictim24", "--workload", "ycsb-a"]);
        assert_eq!(ycsb.num, (3 * GIB / 2) / (16 + 8 * 1024));
        let quick = ok(&[
            "--preset",
            "samevictim24",
            "--quick",
            "--blob-file-size",
            "1MiB",
        ]);
        let o = quick.plan().expect("runnable").options;
        assert_eq!((o.blob_file_size, o.write_buffer_size), (MIB, 512 * 1024));
        let quick = ok(&["--preset", "samevictim24", "--quick"]);
        assert_eq!(
            quick.plan().expect("runnable").options.blob_file_size,
            512 * 1024
        );
    }

    #[test]
    fn explicit_flags_override_the_preset() {
        let a = ok(&[
            "--preset",
            "caza22",
            "--num",
            "1000",
            "--zones",
            "40",
            "--reserved-zones",
            "0",
            "--gc-stop",
            "25",
            "--picker",
            "min-overlap",
            "--write-buffer-size",
            "1MiB",
            "--workload",
            "fillrandom",
        ]);
        assert_eq!(a.num, 1000);
        assert_eq!(a.geometry.zones, Some(40));
        assert_eq!(a.fs.reserved_zones, 0);
        assert_eq!((a.fs.gc_start, a.fs.gc_stop), (15, 25));
        assert_eq!(a.picker, "min-overlap");
        assert_eq!(a.write_buffer_size, Some(MIB));
        assert_eq!(a.workload_names(), "fillrandom");
        // Untouched parts still come from the preset.
        assert_eq!(a.geometry.zone_size, Some(64 * MIB));
        assert_eq!(a.target_file_size_base, Some(4 * MIB));
    }

    #[test]
    fn a_flag_equal_to_the_default_still_overrides() {
        // 0 reserved zones is the flag's default; given explicitly it must win over 10.
        let a = ok(&["--preset", "caza22", "--reserved-zones", "0"]);
        assert_eq!(a.fs.reserved_zones, 0);
    }

    #[test]
    fn num_follows_the_effective_entry_size() {
        let a = ok(&["--preset", "caza22", "--value-size", "1008"]);
        assert_eq!(a.num, (5 * GIB / 4) / 1024);
    }

    #[test]
    fn quick_divides_sizes_by_eight_and_keeps_counts() {
        let full = ok(&["--preset", "caza22"]);
        let quick = ok(&["--preset", "caza22", "--quick"]);
        assert_eq!(quick.geometry.zones, Some(100));
        assert_eq!(quick.fs.reserved_zones, 10);
        assert_eq!(quick.geometry.zone_size, Some(8 * MIB));
        assert_eq!(quick.write_buffer_size, Some(512 * 1024));
        assert_eq!(quick.target_file_size_base, Some(512 * 1024));
        assert_eq!(quick.max_bytes_for_level_base, Some(2 * MIB));
        assert_eq!(quick.max_bytes_for_level_multiplier, Some(10.0));
        assert_eq!((quick.key_size, quick.value_size), (16, 128));
        assert_eq!(quick.num, (5 * GIB / 4 / 8) / 144);
        assert!(full.num / quick.num == 8, "{} vs {}", full.num, quick.num);
    }

    #[test]
    fn quick_leaves_explicit_flags_as_given() {
        let a = ok(&["--preset", "samezone24", "--quick", "--zone-size", "16MiB"]);
        assert_eq!(a.geometry.zone_size, Some(16 * MIB));
        assert_eq!(a.target_file_size_base, Some(512 * 1024));
    }

    #[test]
    fn quick_needs_a_preset() {
        let e = resolved(&["--quick"]).expect_err("refused").to_string();
        assert!(e.contains("--preset"), "{e}");
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let e = resolved(&["--preset", "nope"])
            .expect_err("refused")
            .to_string();
        for name in NAMES {
            assert!(e.contains(name), "{e}");
        }
        let e = by_name("nope").expect_err("unknown").to_string();
        assert!(
            e.contains("caza22, samezone24, prophet24, samevictim24"),
            "{e}"
        );
    }

    #[test]
    fn without_a_preset_nothing_changes() {
        let a = ok(&["--num", "5"]);
        assert_eq!(a.num, 5);
        assert_eq!(a.geometry.zones, None);
        assert_eq!(a.write_buffer_size, None);
    }

    #[test]
    fn applying_twice_gives_the_same_values() {
        let mut a = ok(&["--preset", "prophet24", "--quick"]);
        let num = a.num;
        apply(&mut a).expect("again");
        assert_eq!(a.num, num);
        assert_eq!(a.geometry.zone_size, Some(8 * MIB));
    }

    #[test]
    fn every_runnable_preset_passes_the_checks_of_a_run() {
        for name in runnable() {
            for quick in [false, true] {
                let mut args = vec!["--preset", name];
                if quick {
                    args.push("--quick");
                }
                let a = ok(&args);
                if let Err(e) = a.plan() {
                    panic!("{args:?}: {e}");
                }
            }
        }
    }

    #[test]
    fn the_space_check_counts_the_distinct_keys_db_bench_leaves() {
        let keys = |w: &str| ok(&["--workload", w, "--num", "100000"]).db_bench_keys();
        assert_eq!(keys("fillseq"), 100_000);
        assert_eq!(keys("fillrandom,fillseq"), 100_000);
        // 1 − e^−1 and 1 − e^−2 of the key space.
        assert_eq!(keys("fillrandom"), 63_213);
        assert_eq!(keys("fillrandom,overwrite"), 86_467);
        assert_eq!(keys("readrandom"), 0);
    }

    #[test]
    fn the_note_names_what_the_paper_also_runs() {
        let applied = Applied {
            preset: &PRESETS[0],
            quick: true,
        };
        let text = note_lines(&applied).join("\n");
        assert!(text.contains("1/128 scale"), "{text}");
        assert!(text.contains("8 MiB"), "{text}");
        assert!(text.contains("caza placement"), "{text}");
        assert!(text.contains("zkv repro caza22"), "{text}");
        assert!(!text.contains("not in zkv yet"), "{text}");
    }
}
