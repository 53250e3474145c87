//! Same-Victim GC (BAZA, Z_Cutoff): the Baseline (LIZA for tables and blob files, RocksDB's
//! fixed age cutoff 0.25), BAZA (blob files in ascending number, the fixed cutoff) and
//! BAZA+ (BAZA with Z_Cutoff) on BlobDB with the paper's threads, over db_bench fillrandom
//! and YCSB WL(A), WL(B), WL(C) with zipfian requests, and WL(A) on small zones. Byte
//! figures (cleaning and blob GC copies, space used, free space over time) come from the
//! deterministic runs; throughput, latency and compaction time from the threaded ones.

use zkv_engine::options::ExecMode;

use super::figure::{Cell, Figure, Headline};
use super::matrix::{grid, Results, Spec, Variant};
use super::metric::Metric;
use super::plot::{bar_grid, line_grid, BarRow, LinePanel};
use super::values::{change_pct, mean, ratio, MIB};
use super::Experiment;
use crate::cli::error::CliResult;

pub struct SameVictim24 {
    /// `--quick`: the small-zone variant's sizes are divided as the preset's are.
    pub quick: bool,
}

/// One workload of the paper and the bench flags that run it.
struct Workload {
    name: &'static str,
    flags: &'static [(&'static str, &'static str)],
}

/// The paper's YCSB workloads are YCSB's workload A with other proportions (YCSB's `-p`),
/// zipfian 0.99 (workload A's own distribution); each loads 1.5 GiB, then runs as many
/// operations.
const WL_A: &[(&str, &str)] = &[
    ("workload", "ycsb-a"),
    ("ycsb-property", "readproportion=0"),
    ("ycsb-property", "updateproportion=0.8"),
    ("ycsb-property", "insertproportion=0.2"),
];

const WORKLOADS: [Workload; 4] = [
    Workload {
        name: "fillrandom",
        flags: &[("workload", "fillrandom")],
    },
    Workload {
        name: "wl-a",
        flags: WL_A,
    },
    Workload {
        name: "wl-b",
        flags: &[
            ("workload", "ycsb-a"),
            ("ycsb-property", "readproportion=0.2"),
            ("ycsb-property", "updateproportion=0.8"),
        ],
    },
    Workload {
        name: "wl-c",
        flags: &[("workload", "ycsb-a")],
    },
];

/// The small-zone variant (section V-G): WL(A) on 64 MB zones with 32 MB blob files, the
/// device's size kept (64 GB: 1024 zones); here ÷ 16 (÷ 128 with `--quick`).
const SMALL: &str = "small-wl-a";

const SCHEMES: [&str; 3] = ["baseline", "baza", "baza+"];
/// How the paper names the schemes.
const LABELS: [&str; 3] = ["Baseline", "BAZA", "BAZA+"];

impl SameVictim24 {
    /// The four workloads, then the small-zone WL(A).
    fn variants(&self) -> Vec<Variant> {
        let mut v: Vec<Variant> = WORKLOADS
            .iter()
            .map(|w| {
                let flags = w.flags.iter().map(|(k, v)| (*k, (*v).to_string()));
                (w.name.to_string(), flags.collect())
            })
            .collect();
        let divisor = if self.quick { 8 } else { 1 };
        let size = |kib: u64| format!("{}KiB", kib / divisor);
        let mut small: Vec<(&'static str, String)> =
            WL_A.iter().map(|(k, v)| (*k, (*v).to_string())).collect();
        small.extend([
            ("zones", "1024".to_string()),
            ("zone-size", size(4096)),
            ("blob-file-size", size(2048)),
        ]);
        v.push((SMALL.to_string(), small));
        v
    }
}

fn names() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.name).collect()
}

impl Experiment for SameVictim24 {
    fn name(&self) -> &'static str {
        "samevictim24"
    }

    fn paper(&self) -> &'static str {
        "Same-Victim GC: BAZA and Z_Cutoff (section V)"
    }

    fn specs(&self, modes: &[ExecMode]) -> Vec<Spec> {
        grid(modes, &self.variants(), &SCHEMES)
    }

    fn figures(&self, r: &Results) -> CliResult<Vec<Figure>> {
        Ok(vec![fig6(r)?, fig7(r)?, fig8(r)?, fig9(r)?, fig10(r)?])
    }

    fn headlines(&self, r: &Results) -> Vec<Headline> {
        let mut h = cleaning_headlines(r);
        h.extend(blob_gc_headlines(r));
        h.extend(performance_headlines(r));
        h.extend(small_zone_headlines(r));
        h
    }
}

const ZONE_COPY: Metric = Metric::deterministic(
    "cleaning copy of blob data (MiB)",
    &["blob", "zone_copy_bytes"],
    MIB,
    1,
);
const GC_COPY: Metric = Metric::deterministic(
    "blob GC copy (MiB)",
    &["blob", "gc_relocated_bytes"],
    MIB,
    1,
);
const COMPACTION_TIME: Metric = Metric::threaded(
    "compaction time (s)",
    &["lsm", "compaction_seconds"],
    1.0,
    2,
);
const OPS: Metric = Metric::threaded("ops/s", &["ops_per_sec"], 1.0, 0).last_phase();
const PUT_MEAN: Metric = Metric::threaded(
    "put latency mean (us)",
    &["latency_us", "put", "mean"],
    1.0,
    1,
);
const GET_MEAN: Metric = Metric::threaded(
    "get latency mean (us)",
    &["latency_us", "get", "mean"],
    1.0,
    1,
);
const FREE: Metric = Metric::deterministic("free space (%)", &["device", "free_ratio"], 0.01, 1);

/// The metric for each scheme on `workload`.
fn values(m: &Metric, r: &Results, workload: &str) -> Vec<Option<f64>> {
    SCHEMES.iter().map(|s| m.of(r, s, workload)).collect()
}

/// Space used at the end, in % of the usable space: 100 − free space.
fn used(r: &Results, workload: &str) -> Vec<Option<f64>> {
    values(&FREE, r, workload)
        .into_iter()
        .map(|f| f.map(|f| 100.0 - f))
        .collect()
}

/// Per scheme, the values of one metric on a workload.
type Values<'a> = &'a dyn Fn(&str) -> Vec<Option<f64>>;

/// A metric of a bar figure: its name, its digits, its values.
type Column<'a> = (&'a str, usize, Values<'a>);

/// A table of workload × metric with a column per scheme and BAZA's and BAZA+'s change from
/// the Baseline; its chart a row of bar panels per metric.
fn bar_figure(
    mut f: Figure,
    workloads: &[&str],
    metrics: &[Column<'_>],
    ran: bool,
) -> CliResult<Figure> {
    let mut columns = vec!["workload", "metric"];
    columns.extend(LABELS);
    columns.extend(["BAZA vs Baseline (%)", "BAZA+ vs Baseline (%)"]);
    f = f.columns(&columns);
    let mut rows: Vec<BarRow> = metrics
        .iter()
        .map(|(name, _, _)| BarRow {
            metric: (*name).into(),
            values: Vec::new(),
        })
        .collect();
    for w in workloads {
        for ((name, digits, get), bars) in metrics.iter().zip(&mut rows) {
            let v = get(w);
            let mut row = vec![Cell::text(*w), Cell::text(*name)];
            row.extend(v.iter().map(|x| Cell::num(*x, *digits)));
            row.push(Cell::num(change_pct(v[1], v[0]), 1));
            row.push(Cell::num(change_pct(v[2], v[0]), 1));
            f.rows.push(row);
            bars.values.push(v);
        }
    }
    f.chart(ran, || bar_grid(&rows, workloads, &LABELS))
}

fn of<'a>(m: &'a Metric, r: &'a Results) -> impl Fn(&str) -> Vec<Option<f64>> + 'a {
    move |w| values(m, r, w)
}

fn fig6(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig6",
        "Figure 6: zone cleaning copies of blob data, and space used",
        "Baseline: zone cleaning copies valid blob data in every workload (about 19 GB of \
         24 GB written in WL(A)); BAZA 105 MB (fillrandom) and 53 MB (WL(A)), none in the \
         others; BAZA+ none. Space used: Baseline 83 %, BAZA 67 %, BAZA+ 61 % on average",
        "deterministic runs",
    )
    .note(
        "Cleaning copy of blob data = bytes the zone cleaner copied out of victims that \
         belonged to blob files (blob.zone_copy_bytes); space used = 100 - free space at the \
         end of the run (device.free_ratio), of the usable data zones.",
    )
    .needs(r, ExecMode::Deterministic);
    let copy = of(&ZONE_COPY, r);
    let space = |w: &str| used(r, w);
    let ran = r.ran(ExecMode::Deterministic);
    bar_figure(
        f,
        &names(),
        &[(ZONE_COPY.name, 1, &copy), ("space used (%)", 1, &space)],
        ran,
    )
}

fn fig7(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig7",
        "Figure 7: blob GC copies and compaction time",
        "BAZA copies about as much in blob GC as the Baseline, BAZA+ 33 % less on average; \
         compaction time -17 % (BAZA) and -50 % (BAZA+)",
        "blob GC copies from deterministic runs, compaction time from threaded runs",
    )
    .note(
        "Blob GC copy = bytes of live blobs compactions relocated (blob.gc_relocated_bytes); \
         compaction time = the time every compaction took (lsm.compaction_seconds, wall \
         time).",
    )
    .needs(r, ExecMode::Deterministic)
    .needs(r, ExecMode::Threaded);
    let gc = of(&GC_COPY, r);
    let time = of(&COMPACTION_TIME, r);
    let ran = r.ran(ExecMode::Deterministic) || r.ran(ExecMode::Threaded);
    bar_figure(
        f,
        &names(),
        &[(GC_COPY.name, 1, &gc), (COMPACTION_TIME.name, 2, &time)],
        ran,
    )
}

fn fig8(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig8",
        "Figure 8: throughput, mean put and get latency",
        "throughput 1.27x (BAZA) and 1.44x (BAZA+) the Baseline's; put latency improves \
         1.37x and 1.6x; get latency (WL(B), WL(C)) 1.1x and 1.34x",
        "threaded runs",
    )
    .note(
        "ops/s of the measured phase (fillrandom's puts; YCSB's operations after its \
         load); latencies over every operation of the run (the load's puts included). zkv's \
         device is in memory: these are the engine's figures, the paper's are bound by its \
         emulated NAND.",
    )
    .needs(r, ExecMode::Threaded);
    let ops = of(&OPS, r);
    let put = of(&PUT_MEAN, r);
    let get = of(&GET_MEAN, r);
    bar_figure(
        f,
        &names(),
        &[
            (OPS.name, 0, &ops),
            (PUT_MEAN.name, 1, &put),
            (GET_MEAN.name, 1, &get),
        ],
        r.ran(ExecMode::Threaded),
    )
}

fn fig9(r: &Results) -> CliResult<Figure> {
    let mut f = Figure::new(
        "fig9",
        "Figure 9: free space over WL(A), Baseline and BAZA+",
        "the Baseline stalls and compacts longer once free space drops below 20 % (valid \
         copies in zone cleaning) and ends 48 s later; BAZA+ reclaims space without copying \
         and keeps more free space over the run",
        "deterministic runs, time-series points (x = operations done)",
    )
    .columns(&[
        "scheme",
        "min free space (%)",
        "free space at the end (%)",
        "cleaning copy (MiB)",
    ])
    .note("Time is operations done (the same in every deterministic run), not seconds.")
    .needs(r, ExecMode::Deterministic);
    let series: Vec<Vec<(f64, f64, f64)>> = SCHEMES
        .iter()
        .map(|s| {
            r.report(ExecMode::Deterministic, s, "wl-a")
                .map_or_else(Vec::new, super::samezone24::points)
        })
        .collect();
    for (label, p) in LABELS.iter().zip(&series) {
        f.rows.push(vec![
            Cell::text(*label),
            Cell::num(p.iter().map(|x| x.1).reduce(f64::min), 1),
            Cell::num(p.last().map(|x| x.1), 1),
            Cell::num(p.last().map(|x| x.2), 1),
        ]);
    }
    f.chart(r.ran(ExecMode::Deterministic), || {
        let line = |f: fn(&(f64, f64, f64)) -> f64| -> Vec<Vec<(f64, f64)>> {
            series
                .iter()
                .map(|p| p.iter().map(|x| (x.0, f(x))).collect())
                .collect()
        };
        let panels = [
            LinePanel {
                caption: "WL(A): free space".into(),
                x: "operations".into(),
                y: "free space (% of usable)".into(),
                x_range: None,
                y_range: Some(0.0..100.0),
                x_labels: None,
                lines: line(|x| x.1),
            },
            LinePanel {
                caption: "WL(A): zone cleaning copies so far".into(),
                x: "operations".into(),
                y: "MiB".into(),
                x_range: None,
                y_range: None,
                x_labels: None,
                lines: line(|x| x.2),
            },
        ];
        line_grid(&panels, &LABELS, 1)
    })
}

fn fig10(r: &Results) -> CliResult<Figure> {
    let f = Figure::new(
        "fig10",
        "Figure 10(b): small zones (WL(A), 64 MB zones, 32 MB blob files)",
        "Baseline copies about 13 GB in zone cleaning, BAZA+ nothing; BAZA+'s blob GC copies \
         0.05 % of the Baseline's; throughput 1.72x",
        "copies from deterministic runs, throughput from threaded runs",
    )
    .note(
        "The paper's small-zone device keeps its 64 GB with 64 MB zones: here 1024 zones of \
         4 MiB and blob files of 2 MiB (÷ 16; ÷ 128 with --quick). Figure 10(a), on a real \
         ZN540, is not reproduced: zkv has no such device here.",
    )
    .needs(r, ExecMode::Deterministic)
    .needs(r, ExecMode::Threaded);
    let copy = of(&ZONE_COPY, r);
    let gc = of(&GC_COPY, r);
    let ops = of(&OPS, r);
    let ran = r.ran(ExecMode::Deterministic) || r.ran(ExecMode::Threaded);
    bar_figure(
        f,
        &[SMALL],
        &[
            (ZONE_COPY.name, 1, &copy),
            (GC_COPY.name, 1, &gc),
            (OPS.name, 0, &ops),
        ],
        ran,
    )
}

fn show(v: Option<f64>, digits: usize, unit: &str) -> String {
    v.map_or("-".into(), |v| format!("{v:+.digits$}{unit}"))
}

fn times(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}x"))
}

/// Scheme `i`'s change from the Baseline in percent, per workload.
fn changes(m: &Metric, r: &Results, i: usize) -> Vec<Option<f64>> {
    names()
        .iter()
        .map(|w| {
            let v = values(m, r, w);
            change_pct(v[i], v[0])
        })
        .collect()
}

fn mib_each(m: &Metric, r: &Results, workload: &str) -> String {
    let v = values(m, r, workload);
    LABELS
        .iter()
        .zip(v)
        .map(|(l, x)| format!("{l} {}", x.map_or("-".into(), |x| format!("{x:.0} MiB"))))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cleaning_headlines(r: &Results) -> Vec<Headline> {
    let mean_used = |i: usize| mean(names().iter().map(|w| used(r, w)[i]));
    let used_line = LABELS
        .iter()
        .enumerate()
        .map(|(i, l)| {
            format!(
                "{l} {}",
                mean_used(i).map_or("-".into(), |u| format!("{u:.0}%"))
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let ratio_used = ratio(mean_used(0), mean_used(2));
    vec![
        Headline::new(
            "zone cleaning copy of blob data, WL(A) (Fig. 6)",
            "Baseline ~19 GB (of 24 GB written), BAZA 53 MB, BAZA+ 0",
            mib_each(&ZONE_COPY, r, "wl-a"),
        ),
        Headline::new(
            "zone cleaning copy of blob data, fillrandom (Fig. 6)",
            "BAZA 105 MB, BAZA+ 0",
            mib_each(&ZONE_COPY, r, "fillrandom"),
        ),
        Headline::new(
            "space used at the end, mean of 4 workloads (Fig. 6)",
            "Baseline 83%, BAZA 67%, BAZA+ 61% (1.28x better use)",
            format!("{used_line} ({} better use)", times(ratio_used)),
        ),
    ]
}

fn blob_gc_headlines(r: &Results) -> Vec<Headline> {
    vec![
        Headline::new(
            "blob GC copy vs Baseline, mean of 4 workloads (Fig. 7)",
            "BAZA about the same, BAZA+ -33%",
            format!(
                "BAZA {}, BAZA+ {}",
                show(mean(changes(&GC_COPY, r, 1)), 1, "%"),
                show(mean(changes(&GC_COPY, r, 2)), 1, "%")
            ),
        ),
        Headline::new(
            "compaction time vs Baseline, mean (Fig. 7)",
            "BAZA -17%, BAZA+ -50%",
            format!(
                "BAZA {}, BAZA+ {}",
                show(mean(changes(&COMPACTION_TIME, r, 1)), 1, "%"),
                show(mean(changes(&COMPACTION_TIME, r, 2)), 1, "%")
            ),
        ),
    ]
}

fn performance_headlines(r: &Results) -> Vec<Headline> {
    let speedup = |m: &Metric, i: usize, inverse: bool, ws: &[&str]| {
        times(mean(ws.iter().map(|w| {
            let v = values(m, r, w);
            if inverse {
                ratio(v[0], v[i])
            } else {
                ratio(v[i], v[0])
            }
        })))
    };
    let all = names();
    let reads = ["wl-b", "wl-c"];
    vec![
        Headline::new(
            "throughput / Baseline, mean (Fig. 8)",
            "BAZA 1.27x, BAZA+ 1.44x",
            format!(
                "BAZA {}, BAZA+ {}",
                speedup(&OPS, 1, false, &all),
                speedup(&OPS, 2, false, &all)
            ),
        ),
        Headline::new(
            "put latency, Baseline / scheme, mean (Fig. 8)",
            "BAZA 1.37x, BAZA+ 1.6x",
            format!(
                "BAZA {}, BAZA+ {}",
                speedup(&PUT_MEAN, 1, true, &all),
                speedup(&PUT_MEAN, 2, true, &all)
            ),
        ),
        Headline::new(
            "get latency, Baseline / scheme, WL(B) and WL(C) (Fig. 8)",
            "BAZA 1.1x, BAZA+ 1.34x",
            format!(
                "BAZA {}, BAZA+ {}",
                speedup(&GET_MEAN, 1, true, &reads),
                speedup(&GET_MEAN, 2, true, &reads)
            ),
        ),
    ]
}

fn small_zone_headlines(r: &Results) -> Vec<Headline> {
    let v = |m: &Metric| values(m, r, SMALL);
    let gc = v(&GC_COPY);
    let share = gc[2]
        .zip(gc[0])
        .filter(|(_, b)| *b > 0.0)
        .map(|(a, b)| 100.0 * a / b);
    let ops = v(&OPS);
    vec![
        Headline::new(
            "small zones, WL(A): zone cleaning copy (Fig. 10b)",
            "Baseline ~13 GB, BAZA+ 0",
            mib_each(&ZONE_COPY, r, SMALL),
        ),
        Headline::new(
            "small zones, WL(A): BAZA+ blob GC copy / Baseline's, and throughput (Fig. 10b)",
            "0.05%, 1.72x",
            format!(
                "{}, {}",
                share.map_or("-".into(), |s| format!("{s:.2}%")),
                times(ratio(ops[2], ops[0]))
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_is_every_mode_workload_and_scheme_and_the_small_zones() {
        let e = SameVictim24 { quick: false };
        let specs = e.specs(&[ExecMode::Deterministic, ExecMode::Threaded]);
        assert_eq!(specs.len(), 2 * 5 * 3);
        let small = specs
            .iter()
            .find(|s| s.id() == "deterministic-baza+-small-wl-a")
            .expect("the small-zone run");
        let flag = |k: &str| {
            small
                .flags
                .iter()
                .find(|(f, _)| *f == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(flag("zone-size").as_deref(), Some("4096KiB"));
        assert_eq!(flag("blob-file-size").as_deref(), Some("2048KiB"));
        assert_eq!(flag("zones").as_deref(), Some("1024"));
        let quick = SameVictim24 { quick: true }.specs(&[ExecMode::Deterministic]);
        let small = quick.iter().find(|s| s.variant == SMALL).expect("small");
        assert!(small.flags.contains(&("zone-size", "512KiB".to_string())));
        assert!(small
            .flags
            .contains(&("blob-file-size", "256KiB".to_string())));
    }
}
