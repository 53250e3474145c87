//! Reading the figures out of bench reports (DESIGN.md section 9), and the few derived
//! figures the papers use that a report does not hold as such.

use serde_json::Value;

pub(crate) use crate::cli::compare::charts::MIB;
pub use crate::cli::compare::table::value as num;

/// Buckets of a time-series point's `invalid_ratios` (the bench report's).
pub(crate) use crate::cli::bench::INVALID_BUCKETS;

/// A phase of the run (`workloads[]`) by name.
pub fn phase<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    phases(report).iter().find(|p| p["name"] == name)
}

/// The run's last phase: a YCSB run's operations after its load, or the one db_bench
/// workload.
pub fn last_phase(report: &Value) -> Option<&Value> {
    phases(report).last()
}

fn phases(report: &Value) -> &[Value] {
    report["workloads"].as_array().map_or(&[], Vec::as_slice)
}

/// The time-series points.
pub fn samples(report: &Value) -> &[Value] {
    report["timeseries"].as_array().map_or(&[], Vec::as_slice)
}

/// db_bench's MB/s (2^20 bytes) and micros/op of a phase.
pub fn phase_speed(phase: &Value) -> (Option<f64>, Option<f64>) {
    let (bytes, ops, seconds) = (
        num(phase, &["bytes"]),
        num(phase, &["ops"]),
        num(phase, &["seconds"]).filter(|s| *s > 0.0),
    );
    let mb_s = bytes.zip(seconds).map(|(b, s)| b / MIB / s);
    let us_op = ops
        .filter(|o| *o > 0.0)
        .zip(seconds)
        .map(|(o, s)| s * 1e6 / o);
    (mb_s, us_op)
}

/// `a / b`, none when `b` is 0.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).filter(|(_, b)| *b != 0.0).map(|(a, b)| a / b)
}

/// The change from `base` to `new` in percent.
pub fn change_pct(new: Option<f64>, base: Option<f64>) -> Option<f64> {
    ratio(new, base).map(|r| (r - 1.0) * 100.0)
}

/// Mean of the values present; none if there are none.
pub fn mean(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.into_iter().flatten().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The invalid-ratio distribution of the full zones, summed over the time-series points
/// of `phase` in each of `spans` equal spans of that phase (by operations done): one array
/// of [`INVALID_BUCKETS`] counts per span, and the number of points in it. None when the
/// report's points carry no `invalid_ratios`.
pub fn invalid_spans(
    report: &Value,
    phase: &str,
    spans: usize,
) -> Option<Vec<(usize, [f64; INVALID_BUCKETS])>> {
    let points: Vec<(f64, Vec<f64>)> = samples(report)
        .iter()
        .filter(|s| s["phase"] == phase)
        .filter_map(|s| {
            let counts = s["invalid_ratios"].as_array()?;
            let counts: Vec<f64> = counts.iter().filter_map(Value::as_f64).collect();
            (counts.len() == INVALID_BUCKETS).then_some((num(s, &["t"])?, counts))
        })
        .collect();
    let first = points.first()?.0;
    let last = points.last()?.0;
    let width = (last - first).max(1.0) / spans as f64;
    let mut out = vec![(0usize, [0.0; INVALID_BUCKETS]); spans];
    for (t, counts) in points {
        let span = (((t - first) / width) as usize).min(spans - 1);
        out[span].0 += 1;
        for (sum, c) in out[span].1.iter_mut().zip(counts) {
            *sum += c;
        }
    }
    Some(out)
}

/// What each zone reset copied, in bytes: the cleaned victims' copies
/// (`gc.victim_copy_bytes`), and a 0 for every reset that copied nothing
/// (`device.zero_copy_resets`). Sorted. None when the report has no victim list.
pub fn copy_per_reset(report: &Value) -> Option<Vec<f64>> {
    let victims = report["gc"]["victim_copy_bytes"].as_array()?;
    let zero = num(report, &["device", "zero_copy_resets"])? as usize;
    let mut copies: Vec<f64> = victims
        .iter()
        .filter_map(Value::as_f64)
        .filter(|b| *b > 0.0)
        .collect();
    copies.extend(std::iter::repeat_n(0.0, zero));
    copies.sort_by(f64::total_cmp);
    Some(copies)
}

/// The value at quantile `q` of sorted values (nearest rank).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, last + 1) - 1;
    sorted.get(rank).copied()
}

/// The per-level compaction figures (`compaction.per_level[]`) of the compactions that
/// started at `level`.
pub fn level_figure(report: &Value, level: u64, key: &str) -> Option<f64> {
    report["compaction"]["per_level"]
        .as_array()?
        .iter()
        .find(|l| l["level"].as_u64() == Some(level))
        .and_then(|l| num(l, &[key]))
}

/// Levels with compactions in any of `reports`, ascending.
pub fn levels<'a>(reports: impl IntoIterator<Item = &'a Value>) -> Vec<u64> {
    let mut levels: Vec<u64> = reports
        .into_iter()
        .filter_map(|r| r["compaction"]["per_level"].as_array())
        .flatten()
        .filter_map(|l| l["level"].as_u64())
        .collect();
    levels.sort_unstable();
    levels.dedup();
    levels
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn point(t: u64, phase: &str, zero: u64, full: u64) -> Value {
        let mut counts = vec![0u64; INVALID_BUCKETS];
        counts[0] = zero;
        counts[20] = full;
        json!({ "t": t, "phase": phase, "invalid_ratios": counts })
    }

    #[test]
    fn spans_split_the_phase_by_operations() {
        let r = json!({ "timeseries": [
            point(0, "fillseq", 9, 9),
            point(100, "overwrite", 1, 0), point(140, "overwrite", 1, 1),
            point(300, "overwrite", 0, 2), point(500, "overwrite", 0, 3),
        ] });
        let spans = invalid_spans(&r, "overwrite", 2).unwrap();
        // [100, 300) and [300, 500].
        assert_eq!(spans[0].0, 2);
        assert_eq!((spans[0].1[0], spans[0].1[20]), (2.0, 1.0));
        assert_eq!(spans[1].0, 2);
        assert_eq!(spans[1].1[20], 5.0);
        assert!(invalid_spans(&json!({ "timeseries": [] }), "overwrite", 5).is_none());
    }

    #[test]
    fn copies_per_reset_count_the_zero_copy_resets() {
        let r = json!({ "gc": { "victim_copy_bytes": [300, 0, 100] },
                        "device": { "zero_copy_resets": 2 } });
        assert_eq!(copy_per_reset(&r).unwrap(), [0.0, 0.0, 100.0, 300.0]);
        let sorted = [0.0, 0.0, 100.0, 300.0];
        assert_eq!(quantile(&sorted, 0.5), Some(0.0));
        assert_eq!(quantile(&sorted, 0.9), Some(300.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn phase_speed_is_db_bench_s() {
        let p = json!({ "bytes": 2097152, "ops": 1000, "seconds": 0.5 });
        assert_eq!(phase_speed(&p), (Some(4.0), Some(500.0)));
        assert_eq!(change_pct(Some(1.5), Some(2.0)), Some(-25.0));
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
    }
}
