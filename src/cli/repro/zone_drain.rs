//! zkv's own experiment: the zone-drain picker (docs/COMPACTION.md) against the picker it
//! is built on (min-overlap, RocksDB's default `compaction_pri`), against the same pickers
//! under LIZA, and against the MSST'24 schemes, on `samezone24`'s preset and its four
//! workloads. Byte figures from the deterministic runs, time figures from the threaded
//! ones. It exists so that every claim about zone-drain comes from one command, with the
//! strongest baseline next to it and every workload where it loses shown.

use zkv_engine::options::ExecMode;

use super::figure::{Cell, Figure, Headline};
use super::matrix::{grid, Results, Spec};
use super::metric::Metric;
use super::plot::{bar_grid, BarRow};
use super::samezone24::{names, variants};
use super::values::{change_pct, mean, MIB};
use super::Experiment;
use crate::cli::error::CliResult;

pub struct ZoneDrain;

/// From the weakest baseline to zone-drain: every paper's baseline, RocksDB's default
/// picker under each placement, MSST'24's CAZA and A-CAZA, zone-drain under each placement.
const SCHEMES: [&str; 7] = [
    "baseline",
    "min-overlap",
    "caza",
    "min-overlap-caza",
    "a-caza",
    "drain-liza",
    "drain-caza",
];

/// The scheme every other is compared with.
const DRAIN: &str = "drain-caza";

impl Experiment for ZoneDrain {
    fn name(&self) -> &'static str {
        "zone-drain"
    }

    fn preset(&self) -> &'static str {
        "samezone24"
    }

    fn paper(&self) -> &'static str {
        "zkv's zone-drain picker against min-overlap (RocksDB's default) and the MSST'24 \
         schemes, on the samezone24 setup (not a paper)"
    }

    fn specs(&self, modes: &[ExecMode]) -> Vec<Spec> {
        grid(modes, &variants(), &SCHEMES)
    }

    fn figures(&self, r: &Results) -> CliResult<Vec<Figure>> {
        Ok(vec![writes(r)?, against(r), speed(r)?])
    }

    fn headlines(&self, r: &Results) -> Vec<Headline> {
        let copies = |other| change_line(r, &COPY, DRAIN, other);
        let total = |other| change_line(r, &TOTAL, DRAIN, other);
        vec![
            Headline::new(
                "cleaning copy, drain-caza vs Baseline",
                "(A-CAZA in MSST'24: -70% on average)",
                copies("baseline"),
            ),
            Headline::new(
                "cleaning copy, drain-caza vs min-overlap-caza (its base picker)",
                "-",
                copies("min-overlap-caza"),
            ),
            Headline::new("cleaning copy, drain-caza vs A-CAZA", "-", copies("a-caza")),
            Headline::new(
                "device writes per user byte, drain-caza vs Baseline",
                "-",
                total("baseline"),
            ),
            Headline::new(
                "device writes per user byte, drain-caza vs min-overlap",
                "-",
                total("min-overlap"),
            ),
            Headline::new(
                "LSM WA, min-overlap vs Baseline (the picker alone)",
                "-",
                change_line(r, &LSM_WA, "min-overlap", "baseline"),
            ),
            Headline::new(
                "ops/s of the measured phase, drain-caza vs min-overlap",
                "-",
                change_line(r, &OPS, DRAIN, "min-overlap"),
            ),
        ]
    }
}

const COPY: Metric = Metric::deterministic("cleaning copy (MiB)", &["gc", "copy_bytes"], MIB, 1);
const LSM_WA: Metric = Metric::deterministic("LSM WA", &["lsm", "wa"], 1.0, 2);
const DEVICE_WA: Metric = Metric::deterministic("device WA", &["device", "wa"], 1.0, 3);
const TOTAL: Metric = Metric::deterministic(
    "device writes per user byte",
    &["device", "total_wa"],
    1.0,
    2,
);
const RESETS: Metric = Metric::deterministic("zone resets", &["device", "zone_resets"], 1.0, 0);
const ZERO_COPY: Metric =
    Metric::deterministic("zero-copy resets", &["device", "zero_copy_resets"], 1.0, 0);
const S_SAME: Metric = Metric::deterministic("S_same", &["compaction", "s_same"], 1.0, 3);
const S_INVAL: Metric = Metric::deterministic("S_inval", &["compaction", "s_inval"], 1.0, 3);
const OPS: Metric = Metric::threaded("ops/s", &["ops_per_sec"], 1.0, 0).last_phase();
const PUT_P99: Metric = Metric::threaded("put p99 (us)", &["latency_us", "put", "p99"], 1.0, 2);
const STALL: Metric = Metric::threaded("write stall (s)", &["lsm", "stall_ns"], 1e9, 2);

/// Rows of workload × scheme, a column per measure.
fn scheme_rows(r: &Results, measures: &[&Metric]) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for w in names() {
        for s in SCHEMES {
            let mut row = vec![Cell::text(w), Cell::text(s)];
            row.extend(measures.iter().map(|m| Cell::num(m.of(r, s, w), m.digits)));
            rows.push(row);
        }
    }
    rows
}

/// A chart of bar panels: a row per measure, a panel per workload, a bar per scheme.
fn bars(r: &Results, measures: &[&Metric]) -> Vec<BarRow> {
    measures
        .iter()
        .map(|m| BarRow {
            metric: m.name.into(),
            values: names()
                .iter()
                .map(|w| SCHEMES.iter().map(|s| m.of(r, s, w)).collect())
                .collect(),
        })
        .collect()
}

fn writes(r: &Results) -> CliResult<Figure> {
    let measures = [
        &COPY, &LSM_WA, &DEVICE_WA, &TOTAL, &RESETS, &ZERO_COPY, &S_SAME, &S_INVAL,
    ];
    let mut columns = vec!["workload", "scheme"];
    columns.extend(measures.iter().map(|m| m.name));
    let mut f = Figure::new(
        "writes",
        "Cleaning copies and device writes",
        "(MSST'24's A-CAZA: 70% fewer cleaning copies than the Baseline on average)",
        "deterministic runs",
    )
    .columns(&columns)
    .note(
        "LSM WA = (WAL + flush + compaction bytes) / user bytes; device WA = device \
         bytes / LSM bytes (the cleaner's copies are the difference); device writes per \
         user byte = device bytes / user bytes (device.total_wa), everything the drive \
         writes for one byte the user puts.",
    )
    .needs(r, ExecMode::Deterministic);
    f.rows = scheme_rows(r, &measures);
    let groups = names();
    f.chart(r.ran(ExecMode::Deterministic), || {
        bar_grid(&bars(r, &[&COPY, &TOTAL]), &groups, &SCHEMES)
    })
}

/// drain-caza's change against every other scheme, per workload and on average.
fn against(r: &Results) -> Figure {
    let others: Vec<&str> = SCHEMES.iter().copied().filter(|s| *s != DRAIN).collect();
    let mut columns = vec!["workload".to_string(), "measure".to_string()];
    columns.extend(others.iter().map(|s| format!("vs {s} (%)")));
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut f = Figure::new(
        "against",
        "drain-caza against each scheme",
        "-",
        "deterministic runs",
    )
    .columns(&columns)
    .note(
        "drain-caza's value / the other scheme's - 1, in percent; negative = drain-caza \
         less. \"mean\" is the mean of the four workloads' changes. A copy change against \
         a scheme that copied nothing is empty.",
    )
    .needs(r, ExecMode::Deterministic);
    let mut workloads = names();
    workloads.push("mean");
    for w in workloads {
        for m in [&COPY, &TOTAL] {
            let mut row = vec![Cell::text(w), Cell::text(m.name)];
            row.extend(
                others
                    .iter()
                    .map(|o| Cell::num(change_of(r, m, DRAIN, o, w), 1)),
            );
            f.rows.push(row);
        }
    }
    f
}

/// `scheme`'s change against `other` on `workload` in percent; "mean" averages the four
/// workloads' changes.
fn change_of(r: &Results, m: &Metric, scheme: &str, other: &str, workload: &str) -> Option<f64> {
    if workload == "mean" {
        return mean(names().iter().map(|w| change_of(r, m, scheme, other, w)));
    }
    change_pct(m.of(r, scheme, workload), m.of(r, other, workload))
}

/// `fillrandom -24.1%, zipfian ..., mean ...` of `scheme` against `other`.
fn change_line(r: &Results, m: &Metric, scheme: &str, other: &str) -> String {
    let mut workloads = names();
    workloads.push("mean");
    let parts: Vec<String> = workloads
        .iter()
        .map(|w| {
            let c = change_of(r, m, scheme, other, w);
            format!("{w} {}", c.map_or("-".into(), |c| format!("{c:+.1}%")))
        })
        .collect();
    parts.join(", ")
}

fn speed(r: &Results) -> CliResult<Figure> {
    let measures = [&OPS, &PUT_P99, &STALL];
    let mut columns = vec!["workload", "scheme"];
    columns.extend(measures.iter().map(|m| m.name));
    let mut f = Figure::new(
        "speed",
        "Throughput, put latency and write stalls",
        "-",
        "threaded runs",
    )
    .columns(&columns)
    .note(
        "ops/s of the measured phase (fillrandom's puts, YCSB's operations after the load); \
         put p99 over every put of the run; write stall = lsm.stall_ns. The device is in \
         memory: these are the engine's speeds, picker cost included.",
    )
    .needs(r, ExecMode::Threaded);
    f.rows = scheme_rows(r, &measures);
    let groups = names();
    f.chart(r.ran(ExecMode::Threaded), || {
        bar_grid(&bars(r, &measures), &groups, &SCHEMES)
    })
}
