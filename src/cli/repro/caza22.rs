//! HotStorage'22 CAZA (section 5): LIZA (`baseline`) against CAZA (`caza22`) on fillseq
//! then overwrite, with the cleaning threshold swept over 5..25 % (gc-start = gc-stop =
//! threshold: the free space a cleaning run must restore). Figures 3 to 6 come from the
//! deterministic runs, Table 1 from the threaded ones.

use serde_json::Value;
use zkv_engine::options::ExecMode;

use super::figure::{Cell, Figure, Headline};
use super::matrix::{grid, Results, Spec, Variant};
use super::plot::{bar_grid, line_grid, BarRow, LinePanel};
use super::values::{
    change_pct, copy_per_reset, invalid_spans, mean, num, phase, phase_speed, quantile, ratio,
    INVALID_BUCKETS, MIB,
};
use super::Experiment;
use crate::cli::error::CliResult;
use crate::cli::size::format_size;

pub struct Caza22;

const THRESHOLDS: [u8; 5] = [5, 10, 15, 20, 25];
const SCHEMES: [&str; 2] = ["baseline", "caza22"];
/// How the paper names the schemes, for tables and legends.
const LABELS: [&str; 2] = ["LIZA (baseline)", "CAZA (caza22)"];
/// The threshold of the paper's time-span figure (Figure 4), also used for the one-number
/// figures of Figure 6.
const SPAN_THRESHOLD: u8 = 15;
/// The thresholds of Figure 5.
const RESET_THRESHOLDS: [u8; 3] = [5, 15, 25];
const SPANS: usize = 5;
/// The measured phase: the paper measures during the overwrite, after the load.
const PHASE: &str = "overwrite";

fn variant(threshold: u8) -> String {
    format!("gc{threshold}")
}

fn det<'a>(r: &'a Results, scheme: &str, threshold: u8) -> Option<&'a Value> {
    r.report(ExecMode::Deterministic, scheme, &variant(threshold))
}

fn threaded<'a>(r: &'a Results, scheme: &str, threshold: u8) -> Option<&'a Value> {
    r.report(ExecMode::Threaded, scheme, &variant(threshold))
}

impl Experiment for Caza22 {
    fn name(&self) -> &'static str {
        "caza22"
    }

    fn paper(&self) -> &'static str {
        "CAZA, HotStorage'22 (section 5)"
    }

    fn specs(&self, modes: &[ExecMode]) -> Vec<Spec> {
        let variants: Vec<Variant> = THRESHOLDS
            .iter()
            .map(|t| {
                let flags = vec![("gc-start", t.to_string()), ("gc-stop", t.to_string())];
                (variant(*t), flags)
            })
            .collect();
        grid(modes, &variants, &SCHEMES)
    }

    fn figures(&self, r: &Results) -> CliResult<Vec<Figure>> {
        Ok(vec![fig3(r)?, fig4(r)?, fig5(r)?, fig6(r)?, table1(r)?])
    }

    fn headlines(&self, r: &Results) -> Vec<Headline> {
        let mut h = copy_headlines(r);
        h.extend(reset_headlines(r));
        h.extend(span_headlines(r));
        h.extend(compaction_headlines(r));
        h.push(throughput_headline(r));
        h
    }
}

/// `path` of the deterministic run of `scheme` at `threshold`.
fn det_num(r: &Results, scheme: &str, threshold: u8, path: &[&str]) -> Option<f64> {
    det(r, scheme, threshold).and_then(|v| num(v, path))
}

/// One line per scheme of `path` against the threshold.
fn threshold_lines(r: &Results, path: &[&str], scale: f64) -> Vec<Vec<(f64, f64)>> {
    SCHEMES
        .iter()
        .map(|s| {
            THRESHOLDS
                .iter()
                .filter_map(|&t| Some((f64::from(t), det_num(r, s, t, path)? / scale)))
                .collect()
        })
        .collect()
}

fn threshold_panel(r: &Results, caption: &str, y: &str, path: &[&str], scale: f64) -> LinePanel {
    LinePanel {
        caption: caption.into(),
        x: "cleaning threshold (% free space)".into(),
        y: y.into(),
        x_range: Some(0.0..30.0),
        y_range: None,
        x_labels: None,
        lines: threshold_lines(r, path, scale),
    }
}

const COPIES: [&str; 2] = ["gc", "copy_bytes"];
const DEVICE_WA: [&str; 2] = ["device", "wa"];

fn fig3(r: &Results) -> CliResult<Figure> {
    let mut f = Figure::new(
        "fig3",
        "Figure 3: cleaning copies and write amplification against the threshold",
        "(a) LIZA copies more valid data than CAZA at every threshold, and its copies grow \
         faster with the threshold; (b) CAZA's WA is lower at every threshold, the gap \
         widening with it (up to 7.4% lower WA; about 2x fewer copies)",
        "deterministic runs, whole run (fillseq + overwrite)",
    )
    .columns(&[
        "threshold (%)",
        "copies LIZA (MiB)",
        "copies CAZA (MiB)",
        "copies CAZA/LIZA",
        "device WA LIZA",
        "device WA CAZA",
        "WA change (%)",
    ])
    .note(
        "Device WA = device bytes / LSM bytes (WAL, flush and compaction writes), \
         as zkv bench reports it (docs/CLI.md); the paper divides by compaction writes only.",
    )
    .needs(r, ExecMode::Deterministic);
    for t in THRESHOLDS {
        let copies = |s| det_num(r, s, t, &COPIES);
        let wa = |s| det_num(r, s, t, &DEVICE_WA);
        f.rows.push(vec![
            Cell::num(Some(f64::from(t)), 0),
            Cell::num(copies("baseline").map(|b| b / MIB), 1),
            Cell::num(copies("caza22").map(|b| b / MIB), 1),
            Cell::num(ratio(copies("caza22"), copies("baseline")), 3),
            Cell::num(wa("baseline"), 3),
            Cell::num(wa("caza22"), 3),
            Cell::num(change_pct(wa("caza22"), wa("baseline")), 1),
        ]);
    }
    f.chart(r.ran(ExecMode::Deterministic), || {
        let panels = [
            threshold_panel(r, "(a) valid data copied", "copied (MiB)", &COPIES, MIB),
            threshold_panel(r, "(b) device write amplification", "WA", &DEVICE_WA, 1.0),
        ];
        line_grid(&panels, &LABELS, 2)
    })
}

/// The span's name as the paper writes it: `[0.2T, 0.4T]`.
fn span_name(k: usize) -> String {
    let at = |i: usize| i as f64 / SPANS as f64;
    format!("[{:.1}T, {:.1}T]", at(k), at(k + 1))
}

/// The middle of an invalid-ratio bucket, as a ratio.
fn bucket_middle(b: usize) -> f64 {
    let steps = INVALID_BUCKETS - 1;
    if b == steps {
        1.0
    } else {
        (b as f64 + 0.5) / steps as f64
    }
}

fn fig4(r: &Results) -> CliResult<Figure> {
    let mut f = Figure::new(
        "fig4",
        "Figure 4: invalid ratio of the full zones in five time spans (threshold 15%)",
        "violin plots per time span: LIZA's high-invalid-ratio zones never reach 1.0, \
         CAZA's sit higher in every span; CAZA has 3.32x more zones with invalid ratio 1.0 \
         and 4.2x more with 0.95",
        "deterministic runs at 15%, time-series points of the overwrite phase",
    )
    .columns(&[
        "span",
        "scheme",
        "points",
        "full zones (mean)",
        "zones at 1.0 (mean)",
        "zones at [0.95, 1.0) (mean)",
        "mean invalid ratio",
    ])
    .note(
        "T is the overwrite phase measured in operations (each one put), not seconds, so \
         that the spans are the same in every deterministic run. Each point counts the full \
         zones in 21 buckets of invalid ratio (timeseries[].invalid_ratios); a span's \
         figures are means over its points.",
    )
    .note(
        "zkv resets a zone as soon as it holds no valid data (ZenFS leaves it to the \
         cleaner), so full zones are rarely sampled at 1.0: their counterpart is Figure 5's \
         zero-copy resets.",
    )
    .needs(r, ExecMode::Deterministic);
    let spans: Vec<_> = SCHEMES
        .iter()
        .map(|s| det(r, s, SPAN_THRESHOLD).and_then(|v| invalid_spans(v, PHASE, SPANS)))
        .collect();
    for k in 0..SPANS {
        for (i, label) in LABELS.iter().enumerate() {
            let span = spans[i].as_ref().map(|s| s[k]);
            f.rows.push(span_row(k, label, span));
        }
    }
    f.chart(r.ran(ExecMode::Deterministic), || {
        let panels: Vec<LinePanel> = (0..SPANS).map(|k| span_panel(k, &spans)).collect();
        line_grid(&panels, &LABELS, 3)
    })
}

type Span = (usize, [f64; INVALID_BUCKETS]);

fn span_row(k: usize, label: &str, span: Option<Span>) -> Vec<Cell> {
    let (points, counts) = span.map_or((None, None), |(n, c)| (Some(n as f64), Some(c)));
    let per_point = |v: f64| points.filter(|p| *p > 0.0).map(|p| v / p);
    let full = counts.map(|c| c.iter().sum::<f64>());
    let weighted = counts.map(|c| {
        c.iter()
            .enumerate()
            .map(|(b, n)| n * bucket_middle(b))
            .sum::<f64>()
    });
    vec![
        Cell::text(span_name(k)),
        Cell::text(label),
        Cell::num(points, 0),
        Cell::num(full.and_then(per_point), 1),
        Cell::num(counts.and_then(|c| per_point(c[20])), 2),
        Cell::num(counts.and_then(|c| per_point(c[19])), 2),
        Cell::num(ratio(weighted, full), 3),
    ]
}

/// The share of full zones per bucket over one span, per scheme.
fn span_panel(k: usize, spans: &[Option<Vec<Span>>]) -> LinePanel {
    let lines = spans
        .iter()
        .map(|s| {
            let Some((_, counts)) = s.as_ref().map(|s| s[k]) else {
                return Vec::new();
            };
            let all: f64 = counts.iter().sum();
            counts
                .iter()
                .enumerate()
                .map(|(b, n)| {
                    (
                        bucket_middle(b) * 100.0,
                        if all > 0.0 { n / all * 100.0 } else { 0.0 },
                    )
                })
                .collect()
        })
        .collect();
    LinePanel {
        caption: span_name(k),
        x: "invalid ratio (%)".into(),
        y: "full zones (%)".into(),
        x_range: Some(0.0..100.0),
        y_range: Some(0.0..100.0),
        x_labels: None,
        lines,
    }
}

fn fig5(r: &Results) -> CliResult<Figure> {
    let mut f = Figure::new(
        "fig5",
        "Figure 5: valid data copied per zone reset at thresholds 5, 15 and 25%",
        "at 5%, 91% of CAZA's zone resets copy nothing against 76% of LIZA's; at 25%, 67% \
         against 25%",
        "deterministic runs, whole run",
    )
    .columns(&[
        "threshold (%)",
        "scheme",
        "zone resets",
        "zero-copy resets",
        "zero-copy share (%)",
        "mean copy per reset (% of zone)",
        "p90 copy per reset (% of zone)",
        "max copy per reset (% of zone)",
    ])
    .note(
        "A reset's copy is what the cleaner moved out of that victim (gc.victim_copy_bytes); \
         resets of zones that held no valid data any more (device.zero_copy_resets) copy 0.",
    )
    .needs(r, ExecMode::Deterministic);
    for t in RESET_THRESHOLDS {
        for (scheme, label) in SCHEMES.iter().zip(LABELS) {
            f.rows.push(reset_row(det(r, scheme, t), t, label));
        }
    }
    f.chart(r.ran(ExecMode::Deterministic), || {
        let panels: Vec<LinePanel> = RESET_THRESHOLDS.iter().map(|&t| cdf_panel(r, t)).collect();
        line_grid(&panels, &LABELS, 3)
    })
}

/// A run's copies per reset in percent of its zone capacity.
fn copies_pct(report: &Value) -> Option<Vec<f64>> {
    let capacity = num(report, &["config", "zone_capacity"]).filter(|c| *c > 0.0)?;
    let copies = copy_per_reset(report)?;
    Some(copies.iter().map(|b| b / capacity * 100.0).collect())
}

fn reset_row(report: Option<&Value>, t: u8, label: &str) -> Vec<Cell> {
    let get = |path: &[&str]| report.and_then(|v| num(v, path));
    let resets = get(&["device", "zone_resets"]);
    let zero = get(&["device", "zero_copy_resets"]);
    let copies = report.and_then(copies_pct);
    let mean_copy = copies
        .as_ref()
        .and_then(|c| mean(c.iter().copied().map(Some)));
    let at = |q: f64| copies.as_deref().and_then(|c| quantile(c, q));
    vec![
        Cell::num(Some(f64::from(t)), 0),
        Cell::text(label),
        Cell::num(resets, 0),
        Cell::num(zero, 0),
        Cell::num(ratio(zero, resets).map(|s| s * 100.0), 1),
        Cell::num(mean_copy, 2),
        Cell::num(at(0.9), 2),
        Cell::num(at(1.0), 2),
    ]
}

/// The distribution of the copy per reset: share of resets (%) copying at most x % of a
/// zone, per scheme.
fn cdf_panel(r: &Results, t: u8) -> LinePanel {
    let lines = SCHEMES
        .iter()
        .map(|s| {
            let Some(copies) = det(r, s, t).and_then(copies_pct) else {
                return Vec::new();
            };
            let n = copies.len() as f64;
            // Zero-copy resets first, as one step at 0; then one point per copying reset.
            let zeros = copies.iter().take_while(|c| **c == 0.0).count();
            let mut points = vec![(0.0, zeros as f64 / n * 100.0)];
            points.extend(
                copies
                    .iter()
                    .enumerate()
                    .skip(zeros)
                    .map(|(i, c)| (*c, (i + 1) as f64 / n * 100.0)),
            );
            points
        })
        .collect();
    LinePanel {
        caption: format!("threshold {t}%"),
        x: "copy per reset (% of zone capacity)".into(),
        y: "resets copying at most x (%)".into(),
        x_range: None,
        y_range: Some(0.0..100.0),
        x_labels: None,
        lines,
    }
}

const ZONES_PER_COMPACTION: [&str; 2] = ["compaction", "zones_per_compaction"];
const INVALIDATED_PER_ZONE: [&str; 2] = ["compaction", "invalidated_bytes_per_zone"];

fn fig6(r: &Results) -> CliResult<Figure> {
    let mut f = Figure::new(
        "fig6",
        "Figure 6: zones per compaction and bytes invalidated per zone",
        "(a) the SSTs a compaction deletes lie in 3.0 zones with CAZA against 3.8 with \
         LIZA; (b) a compaction invalidates 83 MB per zone with CAZA against 74 MB with \
         LIZA (1 GiB zones: at zkv's 1/16 scale 5.2 against 4.6 MiB, at 1/128 (--quick) \
         0.65 against 0.58 MiB)",
        "deterministic runs, every compaction of the run",
    )
    .columns(&[
        "threshold (%)",
        "zones per compaction LIZA",
        "zones per compaction CAZA",
        "invalidated per zone LIZA (MiB)",
        "invalidated per zone CAZA (MiB)",
    ])
    .note(
        "Per compaction: the zones that held its input SSTs, and its input bytes divided by \
         that count (compaction.zones_per_compaction, compaction.invalidated_bytes_per_zone); \
         means over the run's compactions.",
    )
    .needs(r, ExecMode::Deterministic);
    for t in THRESHOLDS {
        let zones = |s| det_num(r, s, t, &ZONES_PER_COMPACTION);
        let bytes = |s| det_num(r, s, t, &INVALIDATED_PER_ZONE).map(|b| b / MIB);
        f.rows.push(vec![
            Cell::num(Some(f64::from(t)), 0),
            Cell::num(zones("baseline"), 2),
            Cell::num(zones("caza22"), 2),
            Cell::num(bytes("baseline"), 2),
            Cell::num(bytes("caza22"), 2),
        ]);
    }
    f.chart(r.ran(ExecMode::Deterministic), || {
        let panels = [
            threshold_panel(
                r,
                "(a) zones per compaction",
                "zones",
                &ZONES_PER_COMPACTION,
                1.0,
            ),
            threshold_panel(
                r,
                "(b) invalidated per zone per compaction",
                "MiB",
                &INVALIDATED_PER_ZONE,
                MIB,
            ),
        ];
        line_grid(&panels, &LABELS, 2)
    })
}

/// MB/s and micros/op of the overwrite phase of a threaded run.
fn overwrite_speed(r: &Results, scheme: &str, t: u8) -> (Option<f64>, Option<f64>) {
    threaded(r, scheme, t)
        .and_then(|v| phase(v, PHASE))
        .map_or((None, None), phase_speed)
}

fn table1(r: &Results) -> CliResult<Figure> {
    let mut f = Figure::new(
        "table1",
        "Table 1: throughput and latency of the overwrite phase",
        "LIZA 43.4/43.1/42.4/41.2/40.0 MB/s and CAZA 42.0/42.2/41.9/42.0/41.4 MB/s at \
         5/10/15/20/25%; latency LIZA 12.65..13.74 us, CAZA 13.03..13.27 us: a negligible \
         difference on a DRAM-emulated device",
        "threaded runs, overwrite phase",
    )
    .columns(&[
        "threshold (%)",
        "MB/s LIZA",
        "MB/s CAZA",
        "micros/op LIZA",
        "micros/op CAZA",
    ])
    .note(
        "db_bench's figures of the phase: MB/s = key and value bytes put / seconds (2^20 \
         bytes per MB), micros/op = seconds / operations. zkv's device is in memory, like \
         the paper's null_blk.",
    )
    .needs(r, ExecMode::Threaded);
    let mut rows = ["MB/s", "micros/op"].map(|metric| BarRow {
        metric: metric.into(),
        values: Vec::new(),
    });
    for t in THRESHOLDS {
        let (liza, caza) = (
            overwrite_speed(r, "baseline", t),
            overwrite_speed(r, "caza22", t),
        );
        f.rows.push(vec![
            Cell::num(Some(f64::from(t)), 0),
            Cell::num(liza.0, 1),
            Cell::num(caza.0, 1),
            Cell::num(liza.1, 2),
            Cell::num(caza.1, 2),
        ]);
        rows[0].values.push(vec![liza.0, caza.0]);
        rows[1].values.push(vec![liza.1, caza.1]);
    }
    let groups: Vec<String> = THRESHOLDS.iter().map(|t| format!("{t}%")).collect();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    f.chart(r.ran(ExecMode::Threaded), || {
        bar_grid(&rows, &groups, &LABELS)
    })
}

fn show(v: Option<f64>, digits: usize, unit: &str) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}{unit}"))
}

fn copy_headlines(r: &Results) -> Vec<Headline> {
    let per_threshold: Vec<String> = THRESHOLDS
        .iter()
        .map(|&t| {
            let copies = |s| det_num(r, s, t, &COPIES);
            format!(
                "{t}%: {}",
                show(ratio(copies("baseline"), copies("caza22")), 2, "x")
            )
        })
        .collect();
    let best = THRESHOLDS
        .iter()
        .filter_map(|&t| {
            let wa = |s| det_num(r, s, t, &DEVICE_WA);
            Some((t, -change_pct(wa("caza22"), wa("baseline"))?))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    vec![
        Headline::new(
            "cleaning copies, LIZA / CAZA (Fig. 3a)",
            "about 2x",
            per_threshold.join(", "),
        ),
        Headline::new(
            "device WA, CAZA below LIZA, best threshold (Fig. 3b)",
            "up to 7.4%",
            best.map_or("-".into(), |(t, pct)| format!("{pct:.1}% at {t}%")),
        ),
    ]
}

fn reset_headlines(r: &Results) -> Vec<Headline> {
    let share = |s: &str, t: u8| {
        let get = |p: &[&str]| det_num(r, s, t, p);
        ratio(
            get(&["device", "zero_copy_resets"]),
            get(&["device", "zone_resets"]),
        )
        .map(|x| x * 100.0)
    };
    let both = |t: u8| {
        format!(
            "CAZA {}, LIZA {}",
            show(share("caza22", t), 0, "%"),
            show(share("baseline", t), 0, "%")
        )
    };
    vec![
        Headline::new(
            "zero-copy resets at 5% (Fig. 5)",
            "CAZA 91%, LIZA 76%",
            both(5),
        ),
        Headline::new(
            "zero-copy resets at 25% (Fig. 5)",
            "CAZA 67%, LIZA 25%",
            both(25),
        ),
    ]
}

fn span_headlines(r: &Results) -> Vec<Headline> {
    // Zone-points over the whole overwrite phase in one bucket, CAZA over LIZA.
    let total = |s: &str, bucket: usize| {
        det(r, s, SPAN_THRESHOLD)
            .and_then(|v| invalid_spans(v, PHASE, SPANS))
            .map(|spans| spans.iter().map(|(_, c)| c[bucket]).sum::<f64>())
    };
    let times = |bucket| {
        show(
            ratio(total("caza22", bucket), total("baseline", bucket)),
            2,
            "x",
        )
    };
    // zkv resets a zone as soon as it holds no valid data, so a full zone is rarely seen
    // at ratio 1.0; its resets without copying stand for those zones.
    let zero_copy = |s| det_num(r, s, SPAN_THRESHOLD, &["device", "zero_copy_resets"]);
    let all_invalid = format!(
        "{} (zones seen at 1.0: CAZA {}, LIZA {}; zkv resets a zone once it holds no valid \
         data: zero-copy resets CAZA / LIZA {})",
        times(20),
        show(total("caza22", 20), 0, ""),
        show(total("baseline", 20), 0, ""),
        show(ratio(zero_copy("caza22"), zero_copy("baseline")), 2, "x")
    );
    vec![
        Headline::new(
            "zones at invalid ratio 1.0, CAZA / LIZA (Fig. 4)",
            "3.32x",
            all_invalid,
        ),
        Headline::new(
            "zones at invalid ratio 0.95, CAZA / LIZA (Fig. 4)",
            "4.2x",
            times(19),
        ),
    ]
}

fn compaction_headlines(r: &Results) -> Vec<Headline> {
    let t = SPAN_THRESHOLD;
    let zones = |s| det_num(r, s, t, &ZONES_PER_COMPACTION);
    let bytes = |s| det_num(r, s, t, &INVALIDATED_PER_ZONE).map(|b| b / MIB);
    let zone_size = det_num(r, "baseline", t, &["config", "zone_size"])
        .map_or("-".into(), |b| format_size(b as u64));
    vec![
        Headline::new(
            "zones per compaction at 15% (Fig. 6a)",
            "CAZA 3.0, LIZA 3.8",
            format!(
                "CAZA {}, LIZA {}",
                show(zones("caza22"), 2, ""),
                show(zones("baseline"), 2, "")
            ),
        ),
        Headline::new(
            "invalidated per zone per compaction at 15% (Fig. 6b)",
            "CAZA 83 MB, LIZA 74 MB (1 GiB zones)",
            format!(
                "CAZA {}, LIZA {} ({zone_size} zones)",
                show(bytes("caza22"), 2, " MiB"),
                show(bytes("baseline"), 2, " MiB"),
            ),
        ),
    ]
}

fn throughput_headline(r: &Results) -> Headline {
    let ratios: Vec<f64> = THRESHOLDS
        .iter()
        .filter_map(|&t| {
            ratio(
                overwrite_speed(r, "caza22", t).0,
                overwrite_speed(r, "baseline", t).0,
            )
        })
        .collect();
    let range = match (
        ratios.iter().copied().reduce(f64::min),
        ratios.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => format!("{lo:.2} .. {hi:.2}"),
        _ => "-".into(),
    };
    Headline::new(
        "overwrite MB/s, CAZA / LIZA, over the thresholds (Table 1)",
        "0.97 .. 1.035",
        range,
    )
}
