//! The spread of the threaded runs done more than once (`zkv repro --repeat`): the tables
//! of the experiment show each threaded figure's median; this one shows how far apart the
//! repetitions were, so that a difference between schemes can be told from the noise.

use serde_json::Value;

use super::figure::{Cell, Figure};
use super::matrix::Results;
use super::median::median;
use super::values::{last_phase, num};

/// A figure of a threaded report: its column, where it is read, the scale it is shown in.
struct Measure {
    column: &'static str,
    read: fn(&Value) -> Option<f64>,
    digits: usize,
}

const MEASURES: [Measure; 5] = [
    Measure {
        column: "ops/s (measured phase)",
        read: |r| last_phase(r).and_then(|p| num(p, &["ops_per_sec"])),
        digits: 0,
    },
    Measure {
        column: "put mean (us)",
        read: |r| num(r, &["latency_us", "put", "mean"]),
        digits: 2,
    },
    Measure {
        column: "put p99 (us)",
        read: |r| num(r, &["latency_us", "put", "p99"]),
        digits: 2,
    },
    Measure {
        column: "write stall (s)",
        read: |r| num(r, &["lsm", "stall_ns"]).map(|ns| ns / 1e9),
        digits: 2,
    },
    Measure {
        column: "cleaning copy (MiB)",
        read: |r| num(r, &["gc", "copy_bytes"]).map(|b| b / f64::from(1 << 20)),
        digits: 1,
    },
];

/// One row per repeated run: how many repetitions succeeded, and each measure's median
/// with the lowest and highest value.
pub fn spread(results: &Results) -> Figure {
    let mut columns = vec!["run", "repetitions"];
    columns.extend(MEASURES.iter().map(|m| m.column));
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
fn spread_cell(reports: &[&Value], m: &Measure) -> Cell {
    let mut v: Vec<f64> = reports.iter().filter_map(|r| (m.read)(r)).collect();
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
