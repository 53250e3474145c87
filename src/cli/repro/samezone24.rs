//! MSST'24 Same-Zone Compaction (section VII): Baseline (LIZA + SICA), A-LIZA (LIZA + ACC),
//! CAZA (enhanced CAZA + SICA) and A-CAZA (enhanced CAZA + ACC) on db_bench fillrandom and
//! YCSB with zipfian, latest and uniform requests. Byte figures (S_same, S_inval, copies,
//! resets, time series) come from the deterministic runs; throughput, latency, stall and
//! blocking times from the threaded ones.

use serde_json::Value;
use zkv_engine::options::ExecMode;

use super::figure::{Cell, Figure, Headline};
use super::matrix::{grid, Results, Spec, Variant};
use super::metric::Metric;
use super::plot::{bar_grid, line_grid, BarRow, LinePanel};
use super::values::{change_pct, level_figure, levels, mean, num, ratio, samples, MIB};
use super::Experiment;
use crate::cli::error::CliResult;

pub struct SameZone24;

/// One workload of the paper and the bench flags that run it.
struct Workload {
    name: &'static str,
    flags: &'static [(&'static str, &'static str)],
}

/// db_bench fillrandom, and YCSB's workload A mix (50% reads, 50% updates) with each of the
/// paper's request distributions (the preset loads 1.125 GiB and runs as many operations).
const WORKLOADS: [Workload; 4] = [
    Workload {
        name: "fillrandom",
        flags: &[("workload", "fillrandom")],
    },
    Workload {
        name: "zipfian",
        flags: &[("workload", "ycsb-a"), ("request-distribution", "zipfian")],
    },
    Workload {
        name: "latest",
        flags: &[("workload", "ycsb-a"), ("request-distribution", "latest")],
    },
    Workload {
        name: "uniform",
        flags: &[("workload", "ycsb-a"), ("request-distribution", "uniform")],
    },
];

const SCHEMES: [&str; 4] = ["baseline", "a-liza", "caza", "a-caza"];
/// How the paper names the schemes.
const LABELS: [&str; 4] = ["Baseline", "A-LIZA", "CAZA", "A-CAZA"];

/// The four workloads as variants of a matrix.
pub(crate) fn variants() -> Vec<Variant> {
    WORKLOADS
        .iter()
        .map(|w| {
            let flags = w.flags.iter().map(|(k, v)| (*k, (*v).to_string()));
            (w.name.to_string(), flags.collect())
        })
        .collect()
}

pub(crate) fn names() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.name).collect()
}

fn get(r: &Results, mode: ExecMode, scheme: &str, workload: &str, path: &[&str]) -> Option<f64> {
    r.report(mode, scheme, workload).and_then(|v| num(v, path))
}

impl Experiment for SameZone24 {
    fn name(&self) -> &'static str {
        "samezone24"
    }

    fn paper(&self) -> &'static str {
        "Same-Zone Compaction (ZACA, CAZA, ACC), MSST'24 (section VII)"
    }

    fn specs(&self, modes: &[ExecMode]) -> Vec<Spec> {
        grid(modes, &variants(), &SCHEMES)
    }

    fn figures(&self, r: &Results) -> CliResult<Vec<Figure>> {
        Ok(vec![
            per_level(r, &S_SAME)?,
            per_level(r, &S_INVAL)?,
            fig10(r)?,
            fig11(r)?,
            fig12(r)?,
            fig15(r)?,
            timeline(r, &FIG16)?,
            timeline(r, &FIG17)?,
            table3(r),
        ])
    }

    fn headlines(&self, r: &Results) -> Vec<Headline> {
        let mut h = cleaning_headlines(r);
        h.extend(compaction_headlines(r));
        h.extend(performance_headlines(r));
        h.push(policy_headline(r));
        h
    }
}

/// A figure of one per-level compaction figure (S_same or S_inval).
struct LevelFigure {
    id: &'static str,
    title: &'static str,
    paper: &'static str,
    key: &'static str,
    name: &'static str,
}

const S_SAME: LevelFigure = LevelFigure {
    id: "fig8",
    title: "Figure 8: S_same per level",
    paper: "A-LIZA, CAZA and A-CAZA raise S_same over the Baseline in every workload, A-CAZA \
            by 0.05 on average; with ACC (A-LIZA, A-CAZA) mostly in L2-to-L3 compactions. \
            (The paper pairs it with CompactionRead latency, 10% lower.)",
    key: "s_same",
    name: "S_same",
};

const S_INVAL: LevelFigure = LevelFigure {
    id: "fig9",
    title: "Figure 9: S_inval per level",
    paper: "A-CAZA raises S_inval in every level over the Baseline, by 0.10 on average over \
            the four workloads, and by more than 0.14 in L2-to-L3 compactions with ACC. \
            (The paper pairs it with CompactionRead MB/s, 16% higher.)",
    key: "s_inval",
    name: "S_inval",
};

fn per_level(r: &Results, lf: &LevelFigure) -> CliResult<Figure> {
    let mut columns = vec!["workload", "level"];
    columns.extend(LABELS);
    columns.push("A-CAZA - Baseline");
    let mut f = Figure::new(
        lf.id,
        lf.title,
        lf.paper,
        "deterministic runs, means over the compactions that start at each level",
    )
    .columns(&columns)
    .note(format!(
        "Level = the level a compaction takes its first inputs from (L2 = L2-to-L3); \
         \"all\" is the mean over every compaction (compaction.{}); per level from \
         compaction.per_level[]. zkv does not time compaction reads, so CompactionRead is \
         not reported.",
        lf.key
    ))
    .needs(r, ExecMode::Deterministic);
    for w in names() {
        let reports: Vec<Option<&Value>> = SCHEMES
            .iter()
            .map(|s| r.report(ExecMode::Deterministic, s, w))
            .collect();
        let overall: Vec<Option<f64>> = reports
            .iter()
            .map(|v| v.and_then(|v| num(v, &["compaction", lf.key])))
            .collect();
        f.rows.push(level_row(w, "all", &overall));
        for level in levels(reports.iter().flatten().copied()) {
            let values: Vec<Option<f64>> = reports
                .iter()
                .map(|v| v.and_then(|v| level_figure(v, level, lf.key)))
                .collect();
            f.rows.push(level_row(w, &format!("L{level}"), &values));
        }
    }
    f.chart(r.ran(ExecMode::Deterministic), || {
        let panels: Vec<LinePanel> = names().iter().map(|w| level_panel(r, w, lf)).collect();
        line_grid(&panels, &LABELS, 2)
    })
}

fn level_row(workload: &str, level: &str, values: &[Option<f64>]) -> Vec<Cell> {
    let mut row = vec![Cell::text(workload), Cell::text(level)];
    row.extend(values.iter().map(|v| Cell::num(*v, 3)));
    let diff = values[3].zip(values[0]).map(|(a, b)| a - b);
    row.push(Cell::num(diff, 3));
    row
}

fn level_panel(r: &Results, workload: &str, lf: &LevelFigure) -> LinePanel {
    let lines = SCHEMES
        .iter()
        .map(|s| {
            let Some(v) = r.report(ExecMode::Deterministic, s, workload) else {
                return Vec::new();
            };
            levels([v])
                .into_iter()
                .filter_map(|l| Some((l as f64, level_figure(v, l, lf.key)?)))
                .collect()
        })
        .collect::<Vec<Vec<(f64, f64)>>>();
    // One label per level: a level axis has no values in between.
    let deepest = lines.iter().flatten().map(|p| p.0).fold(1.0, f64::max);
    LinePanel {
        caption: workload.into(),
        x: "compaction start level".into(),
        y: lf.name.into(),
        x_range: Some(0.0..deepest),
        y_range: Some(0.0..1.0),
        x_labels: Some(deepest as usize + 1),
        lines,
    }
}

/// The metric for each scheme on `workload`.
fn values(m: &Metric, r: &Results, workload: &str) -> Vec<Option<f64>> {
    SCHEMES.iter().map(|s| m.of(r, s, workload)).collect()
}

/// A-CAZA's change from the Baseline in percent, per workload.
fn changes(m: &Metric, r: &Results) -> Vec<Option<f64>> {
    names()
        .iter()
        .map(|w| {
            let v = values(m, r, w);
            change_pct(v[3], v[0])
        })
        .collect()
}

const COPY: Metric = Metric::deterministic("cleaning copy (MiB)", &["gc", "copy_bytes"], MIB, 1);
const BLOCKING: Metric = Metric::threaded("cleaning blocking (s)", &["gc", "blocking_ns"], 1e9, 3);
const STALL: Metric = Metric::threaded("write stall (s)", &["lsm", "stall_ns"], 1e9, 3);
const RESETS: Metric = Metric::deterministic("zone resets", &["device", "zone_resets"], 1.0, 0);
const PUT_MEAN: Metric = Metric::threaded(
    "put latency mean (us)",
    &["latency_us", "put", "mean"],
    1.0,
    2,
);
const PUT_P99: Metric = Metric::threaded(
    "put latency p99 (us)",
    &["latency_us", "put", "p99"],
    1.0,
    2,
);

/// A figure whose rows are workload × metric, a column per scheme and A-CAZA's change
/// from the Baseline; its chart has a row of bar panels per metric, drawn when a run of
/// one of the metrics' modes ran.
fn bar_figure(r: &Results, mut f: Figure, metrics: &[&Metric]) -> CliResult<Figure> {
    let mut columns = vec!["workload", "metric"];
    columns.extend(LABELS);
    columns.push("A-CAZA vs Baseline (%)");
    f = f.columns(&columns);
    let mut rows: Vec<BarRow> = metrics
        .iter()
        .map(|m| BarRow {
            metric: m.name.into(),
            values: Vec::new(),
        })
        .collect();
    for w in names() {
        for (m, bars) in metrics.iter().zip(&mut rows) {
            let v = values(m, r, w);
            let mut row = vec![Cell::text(w), Cell::text(m.name)];
            row.extend(v.iter().map(|x| Cell::num(*x, m.digits)));
            row.push(Cell::num(change_pct(v[3], v[0]), 1));
            f.rows.push(row);
            bars.values.push(v);
        }
    }
    let groups = names();
    let ran = metrics.iter().any(|m| r.ran(m.mode));
    f.chart(ran, || bar_grid(&rows, &groups, &LABELS))
}

fn fig10(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig10",
        "Figure 10: zone cleaning copies, cleaning blocking and write stalls",
        "A-CAZA copies 70% less valid data than the Baseline on average (80% less on \
         fillrandom), and the cleaning's I/O blocking is 68% shorter",
        "copies from deterministic runs, blocking and stall times from threaded runs",
    )
    .note(
        "Cleaning blocking = time writers waited for the zone cleaner (gc.blocking_ns); \
         write stall = the engine's stall time (lsm.stall_ns).",
    )
    .needs(r, ExecMode::Deterministic)
    .needs(r, ExecMode::Threaded);
    bar_figure(r, f, &[&COPY, &BLOCKING, &STALL])
}

const FLUSHES: Metric = Metric::threaded("flushes/s", &["lsm", "flushes"], 1.0, 2).per_second();
const COMPACTIONS: Metric =
    Metric::threaded("compactions/s", &["lsm", "compactions"], 1.0, 2).per_second();

fn fig11(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig11",
        "Figure 11: flush and compaction throughput",
        "A-CAZA runs 1.26x the flushes/s and 1.1x the compactions/s of the Baseline \
         (+0.625 flushes/s, +0.15 compactions/s); A-LIZA's compaction throughput drops on \
         latest and uniform",
        "threaded runs",
    )
    .note(
        "The paper's flushes/s is 1 s / the time one flush takes; zkv does not time single \
         flushes and compactions, so this is flushes (compactions) per second of the run's \
         wall time, which also grows when flushes and compactions are faster.",
    )
    .needs(r, ExecMode::Threaded);
    bar_figure(r, f, &[&FLUSHES, &COMPACTIONS])
}

fn fig12(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig12",
        "Figure 12: zone resets",
        "A-CAZA resets fewer zones than the Baseline: 12% fewer on fillrandom, 13% on \
         zipfian, 5% on latest, 13% on uniform (8.6% longer device life)",
        "deterministic runs",
    )
    .note("Every reset of a data zone, zero-copy resets included (device.zone_resets).")
    .needs(r, ExecMode::Deterministic);
    bar_figure(r, f, &[&RESETS])
}

const DEVICE_TIME: Metric = Metric::deterministic(
    "modelled device time (s)",
    &["device", "timing", "elapsed_ns"],
    1e9,
    2,
);

const OPS: Metric = Metric::threaded("ops/s", &["ops_per_sec"], 1.0, 0).last_phase();

fn fig15(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig15",
        "Figure 15: put throughput and latency",
        "A-CAZA: 16% more PUT ops/s and 18% lower PUT latency than the Baseline, on \
         average over the workloads",
        "ops/s and latency from threaded runs, modelled device time from deterministic runs",
    )
    .note(
        "ops/s of the measured phase: fillrandom's puts, and YCSB's operations (50% reads, \
         50% updates) after its load. Put latency: every put of the run, the load's \
         included.",
    )
    .note(
        "zkv's device is in memory, so ops/s and latency are the engine's; the paper's \
         ConfZNS device bounds its throughput by NAND time. The modelled device time is what \
         the preset's ConfZNS timing model (docs/TIMING.md) computes for the run's device \
         commands (device.timing.elapsed_ns): the device side of the same comparison.",
    )
    .needs(r, ExecMode::Threaded)
    .needs(r, ExecMode::Deterministic);
    bar_figure(r, f, &[&OPS, &PUT_MEAN, &PUT_P99, &DEVICE_TIME])
}

/// A figure of free space and cleaning copies over one run.
struct Timeline {
    id: &'static str,
    title: &'static str,
    paper: &'static str,
    workload: &'static str,
}

const FIG16: Timeline = Timeline {
    id: "fig16",
    title: "Figure 16: free space and cleaning copies over fillrandom",
    paper: "CAZA and A-CAZA reclaim more space without copying while free space is above \
            20%, so copying and I/O blocking start later (from about 300 s instead of 200 s); \
            then the Baseline, A-LIZA and CAZA copy up to 400 MB/s, A-CAZA under 200 MB/s",
    workload: "fillrandom",
};

const FIG17: Timeline = Timeline {
    id: "fig17",
    title: "Figure 17: free space and cleaning copies over YCSB zipfian",
    paper: "zipfian copies more and blocks longer than fillrandom; with CAZA and A-CAZA \
            I/O blocking starts 50 s later than with LIZA and A-LIZA, and A-CAZA copies the \
            least",
    workload: "zipfian",
};

fn timeline(r: &Results, tl: &Timeline) -> CliResult<Figure> {
    let mut f = Figure::new(
        tl.id,
        tl.title,
        tl.paper,
        "deterministic runs, time-series points (x = operations done)",
    )
    .columns(&[
        "scheme",
        "min free space (%)",
        "first copy at operation",
        "cleaning copy (MiB)",
        "max copy between points (MiB)",
    ])
    .note(
        "Time is operations done (the same in every deterministic run), not seconds; a \
         copy rate is the cleaning copy between two time-series points.",
    )
    .needs(r, ExecMode::Deterministic);
    let series: Vec<Vec<(f64, f64, f64)>> = SCHEMES
        .iter()
        .map(|s| {
            r.report(ExecMode::Deterministic, s, tl.workload)
                .map_or_else(Vec::new, points)
        })
        .collect();
    for (label, points) in LABELS.iter().zip(&series) {
        f.rows.push(timeline_row(label, points));
    }
    f.chart(r.ran(ExecMode::Deterministic), || {
        let free = series
            .iter()
            .map(|p| p.iter().map(|(t, free, _)| (*t, *free)).collect())
            .collect();
        let copy = series.iter().map(|p| copy_steps(p)).collect();
        let panels = [
            LinePanel {
                caption: format!("{}: free space", tl.workload),
                x: "operations".into(),
                y: "free space (% of usable)".into(),
                x_range: None,
                y_range: Some(0.0..100.0),
                x_labels: None,
                lines: free,
            },
            LinePanel {
                caption: format!("{}: cleaning copies", tl.workload),
                x: "operations".into(),
                y: "copied since the previous point (MiB)".into(),
                x_range: None,
                y_range: None,
                x_labels: None,
                lines: copy,
            },
        ];
        line_grid(&panels, &LABELS, 1)
    })
}

/// (operations, free space %, cleaning copy so far in MiB) of each time-series point.
pub(crate) fn points(report: &Value) -> Vec<(f64, f64, f64)> {
    samples(report)
        .iter()
        .filter_map(|s| {
            Some((
                num(s, &["t"])?,
                num(s, &["free_ratio"])? * 100.0,
                num(s, &["gc_copy_bytes"])? / MIB,
            ))
        })
        .collect()
}

/// The copy between consecutive points, at the later one.
fn copy_steps(points: &[(f64, f64, f64)]) -> Vec<(f64, f64)> {
    points
        .windows(2)
        .map(|w| (w[1].0, (w[1].2 - w[0].2).max(0.0)))
        .collect()
}

fn timeline_row(label: &str, points: &[(f64, f64, f64)]) -> Vec<Cell> {
    let min_free = points.iter().map(|p| p.1).reduce(f64::min);
    let first_copy = points.iter().find(|p| p.2 > 0.0).map(|p| p.0);
    let total = points.last().map(|p| p.2);
    let max_step = copy_steps(points).iter().map(|p| p.1).reduce(f64::max);
    vec![
        Cell::text(label),
        Cell::num(min_free, 1),
        if points.is_empty() || first_copy.is_some() {
            Cell::num(first_copy, 0)
        } else {
            Cell::text("never")
        },
        Cell::num(total, 1),
        Cell::num(max_step, 1),
    ]
}

/// Mean µs per call of a policy, in the deterministic fillrandom run of `scheme`.
fn policy_us(r: &Results, scheme: &str, policy: &str) -> Option<f64> {
    get(
        r,
        ExecMode::Deterministic,
        scheme,
        "fillrandom",
        &["policy_us", policy],
    )
}

fn table3(r: &Results) -> Figure {
    let mut f = Figure::new(
        "table3",
        "Table III: time per call of each policy",
        "SICA 271 us, ZACA 1094 us, LIZA 10 us, CAZA 49 us per call (mean of 1,000 calls \
         on fillrandom)",
        "deterministic fillrandom runs",
    )
    .columns(&["scheme", "placement (us)", "picker (us)", "neighbours (us)"])
    .note(
        "policy_us of each report: placement = one placement decision; picker = one \
         ordering of a level's files while picking a compaction (ACC runs SICA or ZACA); \
         neighbours = building the overlapping SSTs of a new SST's hint (CAZA only).",
    )
    .needs(r, ExecMode::Deterministic);
    for (s, label) in SCHEMES.iter().zip(LABELS) {
        f.rows.push(vec![
            Cell::text(label),
            Cell::num(policy_us(r, s, "placement"), 2),
            Cell::num(policy_us(r, s, "picker"), 2),
            Cell::num(policy_us(r, s, "neighbors"), 2),
        ]);
    }
    f
}

fn show(v: Option<f64>, digits: usize, unit: &str) -> String {
    v.map_or("-".into(), |v| format!("{v:+.digits$}{unit}"))
}

fn cleaning_headlines(r: &Results) -> Vec<Headline> {
    let copy = changes(&COPY, r);
    let resets = changes(&RESETS, r);
    let resets_each: Vec<String> = names()
        .iter()
        .zip(&resets)
        .map(|(w, c)| format!("{w} {}", show(*c, 1, "%")))
        .collect();
    vec![
        Headline::new(
            "cleaning copy, A-CAZA vs Baseline, fillrandom (Fig. 10)",
            "-80%",
            show(copy[0], 1, "%"),
        ),
        Headline::new(
            "cleaning copy, A-CAZA vs Baseline, mean of 4 workloads (Fig. 10)",
            "-70%",
            show(mean(copy.iter().copied()), 1, "%"),
        ),
        Headline::new(
            "cleaning blocking, A-CAZA vs Baseline, mean (Fig. 10)",
            "-68%",
            show(mean(changes(&BLOCKING, r)), 1, "%"),
        ),
        Headline::new(
            "zone resets, A-CAZA vs Baseline (Fig. 12)",
            "fillrandom -12%, zipfian -13%, latest -5%, uniform -13% (-8.6% wear)",
            format!(
                "{} (mean {})",
                resets_each.join(", "),
                show(mean(resets), 1, "%")
            ),
        ),
    ]
}

fn compaction_headlines(r: &Results) -> Vec<Headline> {
    let diff = |key: &str| {
        mean(names().iter().map(|w| {
            let at = |s| get(r, ExecMode::Deterministic, s, w, &["compaction", key]);
            at("a-caza").zip(at("baseline")).map(|(a, b)| a - b)
        }))
    };
    vec![
        Headline::new(
            "S_same, A-CAZA - Baseline, mean (Fig. 8)",
            "+0.05",
            show(diff("s_same"), 3, ""),
        ),
        Headline::new(
            "S_inval, A-CAZA - Baseline, mean (Fig. 9)",
            "+0.10",
            show(diff("s_inval"), 3, ""),
        ),
    ]
}

fn performance_headlines(r: &Results) -> Vec<Headline> {
    let times = |m: &Metric| {
        let ratios = names().into_iter().map(|w| {
            let v = values(m, r, w);
            ratio(v[3], v[0])
        });
        mean(ratios).map_or("-".into(), |x| format!("{x:.2}x"))
    };
    vec![
        Headline::new(
            "flushes/s and compactions/s, A-CAZA / Baseline, mean (Fig. 11)",
            "1.26x, 1.1x",
            format!("{}, {}", times(&FLUSHES), times(&COMPACTIONS)),
        ),
        Headline::new(
            "put ops/s, A-CAZA vs Baseline, mean (Fig. 15)",
            "+16%",
            show(mean(changes(&OPS, r)), 1, "%"),
        ),
        Headline::new(
            "put latency, A-CAZA vs Baseline, mean (Fig. 15)",
            "-18%",
            show(mean(changes(&PUT_MEAN, r)), 1, "%"),
        ),
        Headline::new(
            "modelled ConfZNS device time, A-CAZA vs Baseline, mean (Fig. 15)",
            "(the paper's runtime is device-bound)",
            show(mean(changes(&DEVICE_TIME, r)), 1, "%"),
        ),
    ]
}

fn policy_headline(r: &Results) -> Headline {
    let us = |s, p| policy_us(r, s, p).map_or("-".into(), |v| format!("{v:.1}"));
    Headline::new(
        "time per call in us (Table III)",
        "SICA 271, ZACA 1094, LIZA 10, CAZA 49",
        format!(
            "SICA {}, ACC {}, LIZA {}, CAZA {}",
            us("baseline", "picker"),
            us("a-caza", "picker"),
            us("baseline", "placement"),
            us("caza", "placement")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::matrix::Outcome;
    use super::*;

    #[test]
    fn the_matrix_is_every_mode_workload_and_scheme() {
        let specs = SameZone24.specs(&[ExecMode::Deterministic, ExecMode::Threaded]);
        assert_eq!(specs.len(), 32);
        let zipf = specs
            .iter()
            .find(|s| s.id() == "threaded-a-caza-zipfian")
            .unwrap();
        assert_eq!(
            zipf.flags,
            [
                ("workload", "ycsb-a".to_string()),
                ("request-distribution", "zipfian".to_string())
            ]
        );
    }

    #[test]
    fn bar_charts_are_drawn_only_when_a_metrics_mode_ran() {
        let spec = Spec {
            mode: ExecMode::Deterministic,
            scheme: "baseline",
            variant: "fillrandom".into(),
            flags: Vec::new(),
            rep: 1,
        };
        let outcome = Outcome {
            spec,
            report: serde_json::json!({ "device": { "zone_resets": 7 } }),
            error: None,
            seconds: Some(0.0),
            reused: false,
        };
        let r = Results::new(vec![outcome], None);
        // Zone resets are read from deterministic runs, flushes/s from threaded ones.
        let fig12 = fig12(&r).unwrap();
        assert!(fig12.svg.is_some());
        assert_eq!(fig12.rows[0][2], Cell::num(Some(7.0), 0));
        let fig11 = fig11(&r).unwrap();
        assert!(fig11.svg.is_none());
        assert!(fig11
            .notes
            .iter()
            .any(|n| n.contains("needs threaded runs")));
        assert!(fig10(&r).unwrap().svg.is_some(), "copies are deterministic");
    }

    #[test]
    fn copy_steps_are_differences_never_negative() {
        let p = [(0.0, 100.0, 0.0), (10.0, 80.0, 2.0), (20.0, 70.0, 2.0)];
        assert_eq!(copy_steps(&p), [(10.0, 2.0), (20.0, 0.0)]);
        let row = timeline_row("x", &p);
        assert_eq!(row[2], Cell::num(Some(10.0), 0));
        assert_eq!(timeline_row("x", &p[..1])[2], Cell::text("never"));
    }
}
