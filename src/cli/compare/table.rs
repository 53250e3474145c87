//! The comparison table: one row per metric, one column per scheme, then each scheme's
//! ratio to the first. Values are read from the bench JSON reports, so the table shows
//! exactly what the JSON holds.

use serde_json::Value;

use crate::cli::table::{Align, Table};

/// How a metric's value is shown.
#[derive(Clone, Copy)]
enum Format {
    Count,
    Ratio,
    Bytes,
    /// Nanoseconds shown as milliseconds.
    NanosAsMillis,
    Micros,
}

/// One row: its name, where the value is in a report, how it is shown.
struct Metric {
    name: &'static str,
    path: &'static [&'static str],
    format: Format,
}

const METRICS: &[Metric] = &[
    metric("user ops/s", &["user", "ops_per_sec"], Format::Count),
    metric("LSM WA", &["lsm", "wa"], Format::Ratio),
    metric("device WA", &["device", "wa"], Format::Ratio),
    metric("cleaning copy", &["gc", "copy_bytes"], Format::Bytes),
    metric("zone resets", &["device", "zone_resets"], Format::Count),
    metric(
        "zero-copy resets",
        &["device", "zero_copy_resets"],
        Format::Count,
    ),
    metric("S_same", &["compaction", "s_same"], Format::Ratio),
    metric("S_inval", &["compaction", "s_inval"], Format::Ratio),
    metric("stall time", &["lsm", "stall_ns"], Format::NanosAsMillis),
    metric(
        "p99 put latency",
        &["latency_us", "put", "p99"],
        Format::Micros,
    ),
    metric(
        "p99.9 put latency",
        &["latency_us", "put", "p999"],
        Format::Micros,
    ),
    metric(
        "verify mismatches",
        &["verify", "mismatches"],
        Format::Count,
    ),
];

const fn metric(name: &'static str, path: &'static [&'static str], format: Format) -> Metric {
    Metric { name, path, format }
}

/// The table's lines: a legend-free header (`#1 label`), the metrics, and `#i/#1` ratios.
pub fn lines(labels: &[&str], reports: &[Value]) -> Vec<String> {
    let mut columns: Vec<(String, Align)> = vec![("metric".into(), Align::Left)];
    for (i, label) in labels.iter().enumerate() {
        columns.push((format!("#{} {label}", i + 1), Align::Right));
    }
    for i in 1..labels.len() {
        columns.push((format!("#{}/#1", i + 1), Align::Right));
    }
    let refs: Vec<(&str, Align)> = columns.iter().map(|(h, a)| (h.as_str(), *a)).collect();
    let mut table = Table::new(&refs);
    for m in METRICS {
        let values: Vec<Option<f64>> = reports.iter().map(|r| value(r, m.path)).collect();
        // Rows no run has (verify without --verify) are left out, not shown as zeros.
        if values.iter().all(Option::is_none) {
            continue;
        }
        table.row(row(m, &values));
    }
    table.lines()
}

fn row(m: &Metric, values: &[Option<f64>]) -> Vec<String> {
    let mut cells = vec![format!("{}{}", m.name, unit(m.format))];
    cells.extend(
        values
            .iter()
            .map(|v| v.map_or("-".into(), |v| show(v, m.format))),
    );
    let first = values.first().copied().flatten();
    cells.extend(values.iter().skip(1).map(|v| ratio(*v, first)));
    cells
}

/// A number in a report, at `path`; absent when the report has no value there.
pub fn value(report: &Value, path: &[&str]) -> Option<f64> {
    path.iter()
        .try_fold(report, |v, key| v.get(key))
        .and_then(Value::as_f64)
}

fn unit(f: Format) -> &'static str {
    match f {
        Format::Bytes => " (MiB)",
        Format::NanosAsMillis => " (ms)",
        Format::Micros => " (us)",
        Format::Count | Format::Ratio => "",
    }
}

fn show(v: f64, f: Format) -> String {
    match f {
        Format::Count => format!("{v:.0}"),
        Format::Ratio => format!("{v:.3}"),
        Format::Bytes => format!("{:.1}", v / (1u64 << 20) as f64),
        Format::NanosAsMillis => format!("{:.1}", v / 1e6),
        Format::Micros => format!("{v:.1}"),
    }
}

/// `value / first`; two zeros are equal (1.000); a ratio to zero has no value.
fn ratio(v: Option<f64>, first: Option<f64>) -> String {
    match (v, first) {
        (Some(v), Some(f)) if f != 0.0 => format!("{:.3}", v / f),
        (Some(0.0), Some(_)) => "1.000".into(),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ratios_are_to_the_first_scheme() {
        let a = json!({ "lsm": { "wa": 2.0, "stall_ns": 0 }, "gc": { "copy_bytes": 0 } });
        let b = json!({ "lsm": { "wa": 3.0, "stall_ns": 0 }, "gc": { "copy_bytes": 1048576 } });
        let lines = lines(&["a", "b"], &[a, b]);
        assert!(lines[0].starts_with("metric") && lines[0].ends_with("#2/#1"));
        let wa = lines.iter().find(|l| l.starts_with("LSM WA")).unwrap();
        assert!(wa.ends_with("2.000  3.000  1.500"), "{wa}");
        let copy = lines.iter().find(|l| l.starts_with("cleaning")).unwrap();
        let cells: Vec<&str> = copy.split_whitespace().collect();
        assert_eq!(cells[cells.len() - 3..], ["0.0", "1.0", "-"], "{copy}");
        let stall = lines.iter().find(|l| l.starts_with("stall")).unwrap();
        assert!(stall.ends_with("1.000"), "{stall}");
        assert!(!lines.iter().any(|l| l.starts_with("verify")));
    }
}
