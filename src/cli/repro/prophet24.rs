//! Prophet, MSST'24 (section VI): LIZA against Prophet-GC-NO, Prophet-GC and Prophet on
//! random inserts (8 B keys, 256 B values, round-robin picker) with the zone cleaner
//! starting at 20 % free space and stopping at 30, 35, 40 or 45 %; full GC, full compaction
//! and GC with compaction compensation under Prophet's placement; the five RocksDB pickers
//! at stop 45 %; and the prediction accuracy run (64 KiB SSTs, 0.5 GiB). Byte figures and
//! the prediction tables come from the deterministic runs, throughput and latency from the
//! threaded ones.

use serde_json::Value;
use zkv_engine::options::ExecMode;

use super::figure::{Cell, Figure, Headline};
use super::matrix::{grid, Results, Spec, Variant};
use super::metric::Metric;
use super::plot::{bar_grid, BarRow};
use super::values::{change_pct, num};
use super::Experiment;
use crate::cli::error::CliResult;

pub struct Prophet24;

/// The paper's four schemes and how it names them; LIZA runs with the round-robin picker,
/// as every run of the paper.
const SCHEMES: [&str; 4] = ["baseline", "prophet-gc-no", "prophet-gc", "prophet"];
const LABELS: [&str; 4] = ["LIZA", "Prophet-GC-NO", "Prophet-GC", "Prophet"];
const STOPS: [u32; 4] = [30, 35, 40, 45];
/// RocksDB's five `compaction_pri` (Fig. 11), the paper's names.
const PICKERS: [(&str, &str); 5] = [
    ("sica", "By_Compensated_Size"),
    ("oldest-largest-seq", "Oldest_Largest_Seq_First"),
    ("oldest-smallest-seq", "Oldest_Smallest_Seq_First"),
    ("min-overlap", "Min_Overlapping_Ratio"),
    ("round-robin", "Round_Robin"),
];
/// The accuracy run: 64 KiB SSTs and memtables (the paper's 1 MiB at 1/16), 0.5 GiB of
/// 264-byte entries (the paper's 8 GiB at 1/16).
const ACCURACY_NUM: &str = "2033601";
const ACCURACY: &str = "accuracy";
/// Table I: the accuracy run's data in two fillrandom halves, with a pause between them
/// (VariableTest) or without (FixedTest). The paper writes 2500 s, pauses 2000 s, writes
/// 2500 s, and counts a miss beyond a gap of 2000 s; zkv's halves take a few virtual
/// seconds each, so the pause and the gap are 10 s.
const HALF_NUM: &str = "1016800";
const IDLE_SECONDS: f64 = 10.0;
const VARIABLE: &str = "variable";
const FIXED: &str = "fixed";
/// Fig. 10: the read share of readrandomwriterandom (db_bench's benchmark, the preset's
/// key space and operations, from an empty store: a fill first would not fit the device).
const READ_PERCENTS: [u32; 4] = [20, 40, 60, 80];
/// Fig. 12: db_bench's mixgraph with three key ranges and the FAST'20 paper's models
/// (RocksDB's documented parameters), as puts only of about 256-byte values (the paper
/// keeps VI-F's key and value sizes; db_bench draws value sizes, so θ = 256, k = 0,
/// σ = 1 makes them 256 + an exponential byte).
const MIXGRAPH: [(&str, &str); 14] = [
    ("workload", "mixgraph"),
    ("keyrange-num", "3"),
    ("keyrange-dist-a", "14.18"),
    ("keyrange-dist-b", "-2.917"),
    ("keyrange-dist-c", "0.0164"),
    ("keyrange-dist-d", "-0.08082"),
    ("key-dist-a", "0.002312"),
    ("key-dist-b", "0.3467"),
    ("value-theta", "256"),
    ("value-k", "0"),
    ("value-sigma", "1"),
    ("mix-get-ratio", "0"),
    ("mix-put-ratio", "1"),
    ("mix-seek-ratio", "0"),
];

fn stop_variant(stop: u32) -> String {
    format!("stop{stop}")
}

fn stop_flags(stop: u32) -> Vec<(&'static str, String)> {
    vec![
        ("gc-start", "20".into()),
        ("gc-stop", stop.to_string()),
        ("picker", "round-robin".into()),
    ]
}

/// Fig. 7's full compaction: Prophet's placement, the cleaner compacting every SST.
fn compact_variant(stop: u32) -> String {
    format!("compact-stop{stop}")
}

fn picker_variant(picker: &str) -> String {
    format!("pri-{picker}")
}

fn read_variant(percent: u32) -> String {
    format!("read{percent}")
}

fn mixgraph_variant(picker: &str) -> String {
    format!("mixgraph-{picker}")
}

/// VariableTest and FixedTest.
fn table1_variants() -> Vec<Variant> {
    let base = |workload: &str| {
        vec![
            ("workload", workload.to_string()),
            ("num", HALF_NUM.into()),
            ("write-buffer-size", "64KiB".into()),
            ("target-file-size-base", "64KiB".into()),
            ("picker", "round-robin".into()),
        ]
    };
    let mut variable = base("fillrandom,idle,fillrandom");
    variable.push(("idle-seconds", IDLE_SECONDS.to_string()));
    vec![
        (VARIABLE.to_string(), variable),
        (FIXED.to_string(), base("fillrandom,fillrandom")),
    ]
}

fn stop_variants() -> Vec<Variant> {
    STOPS
        .iter()
        .map(|&s| (stop_variant(s), stop_flags(s)))
        .collect()
}

impl Experiment for Prophet24 {
    fn name(&self) -> &'static str {
        "prophet24"
    }

    fn paper(&self) -> &'static str {
        "Prophet: lifetime prediction and compaction compensation, MSST'24 (section VI)"
    }

    fn specs(&self, modes: &[ExecMode]) -> Vec<Spec> {
        let mut specs = grid(modes, &stop_variants(), &SCHEMES);
        if modes.contains(&ExecMode::Threaded) {
            let reads: Vec<Variant> = READ_PERCENTS
                .iter()
                .map(|&p| {
                    let mut flags = stop_flags(45);
                    flags.push(("workload", "readrandomwriterandom".into()));
                    flags.push(("readwritepercent", p.to_string()));
                    (read_variant(p), flags)
                })
                .collect();
            specs.extend(grid(
                &[ExecMode::Threaded],
                &reads,
                &["baseline", "prophet"],
            ));
        }
        // Only byte figures come from the other runs: deterministic ones.
        if !modes.contains(&ExecMode::Deterministic) {
            return specs;
        }
        let det = [ExecMode::Deterministic];
        let compact: Vec<Variant> = STOPS
            .iter()
            .map(|&s| {
                let mut flags = stop_flags(s);
                flags.push(("gc-mode", "compact".into()));
                (compact_variant(s), flags)
            })
            .collect();
        specs.extend(grid(&det, &compact, &["prophet"]));
        let pickers: Vec<Variant> = PICKERS
            .iter()
            .filter(|(p, _)| *p != "round-robin")
            .map(|&(p, _)| {
                let mut flags = stop_flags(45);
                flags.retain(|(k, _)| *k != "picker");
                flags.push(("picker", p.into()));
                (picker_variant(p), flags)
            })
            .collect();
        specs.extend(grid(&det, &pickers, &["baseline", "prophet"]));
        let flags = vec![
            ("num", ACCURACY_NUM.into()),
            ("write-buffer-size", "64KiB".into()),
            ("target-file-size-base", "64KiB".into()),
            ("picker", "round-robin".into()),
        ];
        let accuracy = [(ACCURACY.to_string(), flags)];
        specs.extend(grid(&det, &accuracy, &["prophet-gc"]));
        specs.extend(grid(&det, &table1_variants(), &["prophet-gc"]));
        let mixgraph: Vec<Variant> = PICKERS
            .iter()
            .map(|&(p, _)| {
                let mut flags = stop_flags(45);
                flags.retain(|(k, _)| *k != "picker");
                flags.push(("picker", p.into()));
                flags.extend(MIXGRAPH.iter().map(|&(k, v)| (k, v.to_string())));
                (mixgraph_variant(p), flags)
            })
            .collect();
        specs.extend(grid(&det, &mixgraph, &["baseline", "prophet"]));
        specs
    }

    fn figures(&self, r: &Results) -> CliResult<Vec<Figure>> {
        Ok(vec![
            fig7(r)?,
            fig8(r)?,
            fig9(r)?,
            fig10(r)?,
            fig11(r)?,
            fig12(r)?,
            table1(r),
            table2(r),
            fig5(r),
        ])
    }

    fn headlines(&self, r: &Results) -> Vec<Headline> {
        let wa = |s: &str| DEVICE_WA.of(r, s, &stop_variant(45));
        let show = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        let pct = |a, b| change_pct(a, b).map_or("-".into(), |c| format!("{c:+.0}%"));
        let migrated = |s: &str| COPY.of(r, s, &stop_variant(30));
        let accuracy = accuracy_of(r);
        let picker_change = |p: &str| {
            let v = picker_of(p);
            pct(
                DEVICE_WA.of(r, "prophet", &v),
                DEVICE_WA.of(r, "baseline", &v),
            )
        };
        let device = |v: &str, s: &str| DEVICE_GIB.of(r, s, v);
        vec![
            Headline::new(
                "WA at stop 45%: LIZA / Prophet-GC-NO / Prophet-GC / Prophet",
                "1.77 / 1.67 / 1.31 / 1.22",
                SCHEMES
                    .iter()
                    .map(|s| show(wa(s)))
                    .collect::<Vec<_>>()
                    .join(" / "),
            ),
            Headline::new(
                "WA at stop 45%, Prophet vs LIZA",
                "-31%",
                pct(wa("prophet"), wa("baseline")),
            ),
            Headline::new(
                "migrated at stop 30%, Prophet-GC vs LIZA",
                "4 GB vs about 100 GB (-96%)",
                pct(migrated("prophet-gc"), migrated("baseline")),
            ),
            Headline::new(
                "device writes at stop 45%, GC-CC vs full GC / vs full compaction",
                "-7% to -10% against both",
                format!(
                    "{} / {}",
                    pct(
                        device(&stop_variant(45), "prophet"),
                        device(&stop_variant(45), "prophet-gc")
                    ),
                    pct(
                        device(&stop_variant(45), "prophet"),
                        device(&compact_variant(45), "prophet")
                    )
                ),
            ),
            Headline::new(
                "Table I, VariableTest: files predicted 3× too short and living beyond the \
                 gap, FC-ticks / real time",
                "0 / 152",
                format!(
                    "{} / {}",
                    show_count(table1_misses(r, VARIABLE, Clock::Ticks)),
                    show_count(table1_misses(r, VARIABLE, Clock::Seconds))
                ),
            ),
            Headline::new("mixgraph WA, Prophet vs LIZA, round-robin", "-30%", {
                let v = mixgraph_variant("round-robin");
                pct(
                    DEVICE_WA.of(r, "prophet", &v),
                    DEVICE_WA.of(r, "baseline", &v),
                )
            }),
            Headline::new(
                "SSTs predicted within 20 FC-ticks (accuracy run)",
                "79%",
                accuracy.map_or("-".into(), |a| format!("{:.0}%", 100.0 * a)),
            ),
            Headline::new(
                "WA, Prophet vs LIZA: oldest-largest-seq / round-robin / by compensated size",
                "-35% / -31% / about 0",
                format!(
                    "{} / {} / {}",
                    picker_change("oldest-largest-seq"),
                    picker_change("round-robin"),
                    picker_change("sica")
                ),
            ),
        ]
    }
}

/// The variant a picker's stop-45 runs are in (round-robin's are the stop sweep's).
fn picker_of(picker: &str) -> String {
    if picker == "round-robin" {
        stop_variant(45)
    } else {
        picker_variant(picker)
    }
}

const GIB: f64 = (1u64 << 30) as f64;
const DEVICE_WA: Metric = Metric::deterministic("WA (device / LSM)", &["device", "wa"], 1.0, 3);
const COPY: Metric = Metric::deterministic("migrated (GiB)", &["gc", "copy_bytes"], GIB, 3);
const DEVICE_GIB: Metric =
    Metric::deterministic("device writes (GiB)", &["device", "write_bytes"], GIB, 3);
const LSM_WA: Metric = Metric::deterministic("LSM WA", &["lsm", "wa"], 1.0, 3);
const RESETS: Metric = Metric::deterministic("zone resets", &["device", "zone_resets"], 1.0, 0);
const ACC: Metric = Metric::deterministic("prediction accuracy", &["lifetime", "accuracy"], 1.0, 3);
const OPS: Metric = Metric::threaded("ops/s", &["user", "ops_per_sec"], 1.0, 0);
const PUT_P50: Metric = Metric::threaded("put p50 (us)", &["latency_us", "put", "p50"], 1.0, 2);
const VIRTUAL_OPS: Metric =
    Metric::deterministic("virtual ops/s", &["user", "virtual_ops_per_sec"], 1.0, 0);

/// LSM bytes (flush + compaction + WAL) in GiB.
fn lsm_gib(report: &Value) -> Option<f64> {
    let part = |k: &str| num(report, &["lsm", k]);
    Some((part("flush_bytes")? + part("compaction_bytes")? + part("wal_bytes")?) / GIB)
}

fn det<'r>(r: &'r Results, scheme: &str, variant: &str) -> Option<&'r Value> {
    r.report(ExecMode::Deterministic, scheme, variant)
}

fn fig7(r: &Results) -> CliResult<Figure> {
    let modes = [
        ("full GC", "prophet-gc", false),
        ("full compaction", "prophet", true),
        ("GC-CC", "prophet", false),
    ];
    let mut f = Figure::new(
        "fig7",
        "Figure 7: full GC, full compaction and GC with compaction compensation",
        "Full GC and GC-CC write alike in RocksDB, full compaction about 100 GB more; GC-CC \
         writes the least to the device (7-10% less than either) and migrates the least; its \
         throughput is a little below full GC's, full compaction's much lower.",
        "deterministic runs (virtual ops/s: the simulated rate)",
    )
    .columns(&[
        "stop (%)",
        "cleaning",
        "LSM writes (GiB)",
        "device writes (GiB)",
        "migrated (GiB)",
        "virtual ops/s",
    ])
    .note("All three under Prophet's placement; the cleaner starts at 20% free space.")
    .needs(r, ExecMode::Deterministic);
    let variant = |stop, compact| {
        if compact {
            compact_variant(stop)
        } else {
            stop_variant(stop)
        }
    };
    for stop in STOPS {
        for (name, scheme, compact) in modes {
            let v = variant(stop, compact);
            f.rows.push(vec![
                Cell::num(Some(f64::from(stop)), 0),
                Cell::text(name),
                Cell::num(det(r, scheme, &v).and_then(lsm_gib), 3),
                Cell::num(DEVICE_GIB.of(r, scheme, &v), 3),
                Cell::num(COPY.of(r, scheme, &v), 3),
                Cell::num(VIRTUAL_OPS.of(r, scheme, &v), 0),
            ]);
        }
    }
    let groups: Vec<String> = STOPS.iter().map(|s| format!("stop {s}%")).collect();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let row = |m: &Metric| BarRow {
        metric: m.name.into(),
        values: STOPS
            .iter()
            .map(|&s| {
                modes
                    .iter()
                    .map(|&(_, scheme, compact)| m.of(r, scheme, &variant(s, compact)))
                    .collect()
            })
            .collect(),
    };
    let labels: Vec<&str> = modes.iter().map(|m| m.0).collect();
    f.chart(r.ran(ExecMode::Deterministic), || {
        bar_grid(&[row(&DEVICE_GIB), row(&COPY)], &groups, &labels)
    })
}

/// A bar chart of `metrics`, a panel per stop and a bar per scheme.
fn stop_bars(r: &Results, metrics: &[&Metric]) -> Result<String, String> {
    let groups: Vec<String> = STOPS.iter().map(|s| format!("stop {s}%")).collect();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let rows: Vec<BarRow> = metrics
        .iter()
        .map(|m| BarRow {
            metric: m.name.into(),
            values: STOPS
                .iter()
                .map(|&s| {
                    SCHEMES
                        .iter()
                        .map(|sc| m.of(r, sc, &stop_variant(s)))
                        .collect()
                })
                .collect(),
        })
        .collect();
    bar_grid(&rows, &groups, &LABELS)
}

fn scheme_rows(r: &Results, metrics: &[&Metric]) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for stop in STOPS {
        for (s, label) in SCHEMES.iter().zip(LABELS) {
            let mut row = vec![Cell::num(Some(f64::from(stop)), 0), Cell::text(label)];
            row.extend(
                metrics
                    .iter()
                    .map(|m| Cell::num(m.of(r, s, &stop_variant(stop)), m.digits)),
            );
            rows.push(row);
        }
    }
    rows
}

fn fig8(r: &Results) -> CliResult<Figure> {
    let metrics = [&DEVICE_WA, &COPY, &LSM_WA, &RESETS];
    let mut columns = vec!["stop (%)", "scheme"];
    columns.extend(metrics.iter().map(|m| m.name));
    let mut f = Figure::new(
        "fig8",
        "Figure 8: WA and migrated data of the four schemes",
        "WA at stop 45%: LIZA 1.77, Prophet-GC-NO 1.67, Prophet-GC 1.31, Prophet 1.22; at stop \
         30% LIZA migrates about 100 GB, Prophet-GC 4 GB; the gap grows with the stop level.",
        "deterministic runs",
    )
    .columns(&columns)
    .note("WA = device bytes / LSM bytes (WAL, flush, compaction): the paper's device I/Os / RocksDB I/Os.")
    .needs(r, ExecMode::Deterministic);
    f.rows = scheme_rows(r, &metrics);
    f.chart(r.ran(ExecMode::Deterministic), || {
        stop_bars(r, &[&DEVICE_WA, &COPY])
    })
}

fn fig9(r: &Results) -> CliResult<Figure> {
    let metrics = [&OPS, &PUT_P50];
    let mut columns = vec!["stop (%)", "scheme"];
    columns.extend(metrics.iter().map(|m| m.name));
    let mut f = Figure::new(
        "fig9",
        "Figure 9: throughput and p50 latency",
        "The four schemes are alike at every stop level (one background cleaning thread, as \
         ZenFS).",
        "threaded runs",
    )
    .columns(&columns)
    .needs(r, ExecMode::Threaded);
    f.rows = scheme_rows(r, &metrics);
    f.chart(r.ran(ExecMode::Threaded), || stop_bars(r, &metrics))
}

fn fig11(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig11",
        "Figure 11: the five compaction pickers at stop 45%",
        "Prophet's WA against LIZA's: -35% with Oldest_Largest_Seq_First, -31% with \
         Round_Robin, about the same with By_Compensated_Size (which compacts more).",
        "deterministic runs",
    );
    pickers_figure(r, f, picker_of)
}

/// LIZA against Prophet under each picker: the runs of `variant_of(picker)`.
fn pickers_figure(r: &Results, f: Figure, variant_of: fn(&str) -> String) -> CliResult<Figure> {
    let mut f = f
        .columns(&[
            "picker",
            "LIZA WA",
            "Prophet WA",
            "change (%)",
            "LIZA migrated (GiB)",
            "Prophet migrated (GiB)",
        ])
        .needs(r, ExecMode::Deterministic);
    for (picker, name) in PICKERS {
        let v = variant_of(picker);
        let (liza, prophet) = (
            DEVICE_WA.of(r, "baseline", &v),
            DEVICE_WA.of(r, "prophet", &v),
        );
        f.rows.push(vec![
            Cell::text(format!("{name} ({picker})")),
            Cell::num(liza, 3),
            Cell::num(prophet, 3),
            Cell::num(change_pct(prophet, liza), 1),
            Cell::num(COPY.of(r, "baseline", &v), 3),
            Cell::num(COPY.of(r, "prophet", &v), 3),
        ]);
    }
    let groups: Vec<&str> = PICKERS.iter().map(|p| p.0).collect();
    let variants: Vec<String> = PICKERS.iter().map(|(p, _)| variant_of(p)).collect();
    f.chart(r.ran(ExecMode::Deterministic), || {
        liza_prophet_bars(r, &[&DEVICE_WA, &COPY], &variants, &groups)
    })
}

/// Bar panels: a row per metric, a panel per variant (titled by `groups`), LIZA's bar and
/// Prophet's.
fn liza_prophet_bars(
    r: &Results,
    metrics: &[&Metric],
    variants: &[String],
    groups: &[&str],
) -> Result<String, String> {
    let rows: Vec<BarRow> = metrics
        .iter()
        .map(|m| BarRow {
            metric: m.name.into(),
            values: variants
                .iter()
                .map(|v| vec![m.of(r, "baseline", v), m.of(r, "prophet", v)])
                .collect(),
        })
        .collect();
    bar_grid(&rows, groups, &["LIZA", "Prophet"])
}

const RUN_OPS: Metric = Metric::threaded("ops/s", &["ops_per_sec"], 1.0, 0).last_phase();
const GET_P95: Metric = Metric::threaded("get p95 (us)", &["latency_us", "get", "p95"], 1.0, 2);

fn fig10(r: &Results) -> CliResult<Figure> {
    let mut f = Figure::new(
        "fig10",
        "Figure 10: read-write mixes at stop 45%",
        "LIZA and Prophet alike in throughput and p95 latency at every read ratio (20-80%).",
        "threaded runs: readrandomwriterandom with that share of reads, from an empty store",
    )
    .columns(&["reads (%)", "scheme", RUN_OPS.name, GET_P95.name])
    .note("The preset's key space and operations; a fill first would not fit the device.")
    .needs(r, ExecMode::Threaded);
    for p in READ_PERCENTS {
        for (s, label) in [("baseline", "LIZA"), ("prophet", "Prophet")] {
            let v = read_variant(p);
            f.rows.push(vec![
                Cell::num(Some(f64::from(p)), 0),
                Cell::text(label),
                Cell::num(RUN_OPS.of(r, s, &v), 0),
                Cell::num(GET_P95.of(r, s, &v), 2),
            ]);
        }
    }
    let groups: Vec<String> = READ_PERCENTS
        .iter()
        .map(|p| format!("{p}% reads"))
        .collect();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let variants: Vec<String> = READ_PERCENTS.iter().map(|&p| read_variant(p)).collect();
    f.chart(r.ran(ExecMode::Threaded), || {
        liza_prophet_bars(r, &[&RUN_OPS, &GET_P95], &variants, &groups)
    })
}

fn fig12(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig12",
        "Figure 12: mixgraph under the five pickers at stop 45%",
        "Prophet below LIZA under every picker; the largest gain with Round_Robin (-30% WA).",
        "deterministic runs: mixgraph puts (3 key ranges, FAST'20 models), ~256-byte values",
    );
    pickers_figure(r, f, mixgraph_variant)
}

fn accuracy_report(r: &Results) -> Option<&Value> {
    det(r, "prophet-gc", ACCURACY)
}

fn accuracy_of(r: &Results) -> Option<f64> {
    ACC.of(r, "prophet-gc", ACCURACY)
}

/// Which clock a Table I count is on.
#[derive(Clone, Copy)]
enum Clock {
    Ticks,
    Seconds,
}

fn show_count(n: Option<f64>) -> String {
    n.map_or("-".into(), |n| format!("{n:.0}"))
}

/// Ticks per second of the database's clock while it writes without a pause (FixedTest).
fn ticks_per_second(r: &Results) -> Option<f64> {
    let t = &det(r, "prophet-gc", FIXED)?["lifetime"]["table1"];
    let (ticks, seconds) = (t["ticks"].as_f64()?, t["seconds"].as_f64()?);
    (seconds > 0.0).then(|| ticks / seconds)
}

/// Files of `variant` that lived over 3 × their prediction and beyond the gap: the idle
/// time in seconds, or as many ticks as the clock makes in that time while writing.
fn table1_misses(r: &Results, variant: &str, clock: Clock) -> Option<f64> {
    let t = &det(r, "prophet-gc", variant)?["lifetime"]["table1"];
    let (key, gap) = match clock {
        Clock::Seconds => ("ms_misses", IDLE_SECONDS * 1000.0),
        Clock::Ticks => ("tick_misses", IDLE_SECONDS * ticks_per_second(r)?),
    };
    let lifetimes = t[key].as_array()?;
    let beyond = lifetimes.iter().filter_map(|b| {
        let (lifetime, n) = (b[0].as_f64()?, b[1].as_f64()?);
        (lifetime > gap).then_some(n)
    });
    // Folded from +0: an empty f64 sum is -0.
    Some(beyond.fold(0.0, |a, n| a + n))
}

fn table1(r: &Results) -> Figure {
    let mut f = Figure::new(
        "table1",
        "Table I: FC-ticks against real time",
        "Files predicted at least 3 times too short and living beyond the gap (2000 s): \
         VariableTest (writes, a 2000 s pause, writes) FC-ticks 0, real time 152; FixedTest \
         0 and 0.",
        "deterministic runs of Prophet-GC: 0.5 GiB in two halves (64 KiB SSTs), a 10 s pause \
         between them in VariableTest; seconds are the virtual clock's",
    )
    .columns(&["prediction", "VariableTest", "FixedTest"])
    .note(format!(
        "Real time: the same prediction turned into seconds by the mean time of a tick when \
         the file was created; the gap is the pause, {IDLE_SECONDS} s. FC-ticks: the gap is \
         as many ticks as the clock makes in {IDLE_SECONDS} s of FixedTest ({}).",
        ticks_per_second(r).map_or("-".into(), |t| format!("{:.0} ticks", t * IDLE_SECONDS))
    ))
    .needs(r, ExecMode::Deterministic);
    for (name, clock) in [
        ("FC-ticks prediction", Clock::Ticks),
        ("real-time prediction", Clock::Seconds),
    ] {
        f.rows.push(vec![
            Cell::text(name),
            Cell::num(table1_misses(r, VARIABLE, clock), 0),
            Cell::num(table1_misses(r, FIXED, clock), 0),
        ]);
    }
    f
}

fn table2(r: &Results) -> Figure {
    let mut f = Figure::new(
        "table2",
        "Table II: predicted case × real death",
        "Level 4 of the paper's run: P1·D1 99.2% (2,890 files), P1·D2 5%, P2A·D1 60.6%, \
         P2A·D2 67.6% (6,695), P2B·D1 23.1%, P2B·D2 92.8% (1,356), P3·D1 0%, P3·D2 22.9%; \
         74% in all. Over every level, 79% within 20 FC-ticks.",
        "the deterministic accuracy run (Prophet-GC, 64 KiB SSTs, 0.5 GiB)",
    )
    .columns(&[
        "cell",
        "files",
        "within the error bar",
        "accuracy (%)",
        "moved down",
    ])
    .note(
        "Every level together; the error bar is 5 × (level + 1) ticks of the file's level. \
         D1: deleted by a compaction its own level started; D2: by one from the level above. \
         The JSON report's lifetime.per_level has each level's accuracy.",
    )
    .needs(r, ExecMode::Deterministic);
    let Some(cases) = accuracy_report(r).and_then(|v| v["lifetime"]["cases"].as_object()) else {
        return f;
    };
    for (cell, v) in cases {
        let n = |k: &str| v[k].as_f64();
        f.rows.push(vec![
            Cell::text(cell.replace('_', "·")),
            Cell::num(n("count"), 0),
            Cell::num(n("correct"), 0),
            Cell::num(n("accuracy").map(|a| 100.0 * a), 1),
            Cell::num(n("moved"), 0),
        ]);
    }
    if let Some(l) = accuracy_report(r).map(|v| &v["lifetime"]) {
        f.rows.push(vec![
            Cell::text("within ±20 ticks, all"),
            Cell::num(l["deleted"].as_f64(), 0),
            Cell::num(l["correct"].as_f64(), 0),
            Cell::num(l["accuracy"].as_f64().map(|a| 100.0 * a), 1),
            Cell::text("-"),
        ]);
    }
    f
}

fn fig5(r: &Results) -> Figure {
    let mut f = Figure::new(
        "fig5",
        "Figure 5: real lifetime and prediction error",
        "Most SSTs live short; lower levels shorter; files of one level alike (L4 about 250 \
         ticks, L5 about 1000); 79% of the errors within 20 ticks.",
        "the deterministic accuracy run",
    )
    .columns(&["histogram", "bin start (ticks)", "files"])
    .note("Bins of 10 ticks; error = predicted - real deletion tick.")
    .needs(r, ExecMode::Deterministic);
    let Some(l) = accuracy_report(r).map(|v| &v["lifetime"]) else {
        return f;
    };
    for (name, key) in [
        ("real lifetime", "lifetime_histogram"),
        ("error", "error_histogram"),
    ] {
        for bin in l[key]["counts"].as_array().into_iter().flatten() {
            f.rows.push(vec![
                Cell::text(name),
                Cell::num(bin[0].as_f64(), 0),
                Cell::num(bin[1].as_f64(), 0),
            ]);
        }
    }
    f
}
