//! The spread of the threaded runs done more than once (`zkv repro --repeat`): the tables
//! of the experiment show each threaded figure's median; this one shows how far apart the
//! repetitions were, so that a difference between schemes can be told from the noise.

use serde_json::Value;

use super::figure::{Cell, Figure};
use super::matrix::Results;
use super::median::median;
use super::metric::Metric;
use super::values::MIB;

/// The columns: what differs from run to run of one threaded configuration.
const MEASURES: [Metric; 5] = [
    Metric::threaded("ops/s (measured phase)", &["ops_per_sec"], 1.0, 0).last_phase(),
    Metric::threaded("put mean (us)", &["latency_us", "put", "mean"], 1.0, 2),
    Metric::threaded("put p99 (us)", &["latency_us", "put", "p99"], 1.0, 2),
    Metric::threaded("write stall (s)", &["lsm", "stall_ns"], 1e9, 2),
    Metric::threaded("cleaning copy (MiB)", &["gc", "copy_bytes"], MIB, 1),
];

/// One row per repeated run: how many repetitions succeeded, and each measure's median
/// with the lowest and highest value.
pub fn spread(results: &Results) -> Figure {
    let mut columns = vec!["run", "repetitions"];
    columns.extend(MEASURES.iter().map(|m| m.name));
    let mut f = Figure::new(
        "spread",
        "Spread of the repeated threaded runs",
        "(not in the paper: a check that differences between schemes exceed the noise)",
        "threaded runs, every repetition",
    )
    .columns(&columns)
    .note(
        "Each threaded figure in the tables above is the median over the run's successful \
         repetitions, taken field by field of the reports (runs/ID.json, runs/ID-rN.json). \
         Cells: median (lowest - highest). The measured phase is the report's last: \
         fillrandom's or overwrite's puts, a YCSB run after its load.",
    );
    let outcomes = results.outcomes();
    for first in outcomes.iter().filter(|o| o.spec.rep == 1) {
        let repeated = outcomes
            .iter()
            .any(|o| o.spec.rep > 1 && o.spec.same_run(&first.spec));
        if !repeated {
            continue;
        }
        let reps: Vec<&Value> = results.repetitions(first).map(|o| &o.report).collect();
        let mut row = vec![
            Cell::text(first.spec.id()),
            Cell::text(reps.len().to_string()),
        ];
        row.extend(MEASURES.iter().map(|m| spread_cell(&reps, m)));
        f.rows.push(row);
    }
    f
}

/// `median (lowest - highest)` of a measure over the repetitions.
fn spread_cell(reports: &[&Value], m: &Metric) -> Cell {
    let mut v: Vec<f64> = reports.iter().filter_map(|r| m.value(r)).collect();
    let Some(mid) = median(&mut v) else {
        return Cell::Missing;
    };
    let (lo, hi) = (
        v.first().copied().unwrap_or(mid),
        v.last().copied().unwrap_or(mid),
    );
    let d = m.digits;
    Cell::text(format!("{mid:.d$} ({lo:.d$} - {hi:.d$})"))
}
