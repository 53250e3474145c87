//! `--out DIR`: SVG charts of a comparison, drawn from the bench JSON reports. The files
//! are created (empty) before the first run, so that an unwritable directory fails first.
//!
//! - `free_space.svg`: free-space ratio over the run (x = operations done), per scheme;
//! - `cleaning_copies.svg`: bytes the zone cleaner copied so far, per scheme;
//! - `wa_copies_resets.svg`: bars of device WA, cleaning copies and zone resets;
//! - `invalid_ratios.svg`: how many full zones have each invalid ratio at the end.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;
use zonefs::fs::InvalidRatios;

use super::table::value;
use crate::cli::error::{CliError, CliResult};

/// Width and height of a one-panel chart.
pub(crate) const SIZE: (u32, u32) = (900, 520);
pub(crate) const FONT: &str = "sans-serif";
pub(crate) const MIB: f64 = (1u64 << 20) as f64;
/// Buckets of the invalid-ratio distribution: 10 % wide.
const BUCKETS: usize = 10;

const NAMES: [&str; 4] = [
    "free_space.svg",
    "cleaning_copies.svg",
    "wa_copies_resets.svg",
    "invalid_ratios.svg",
];

/// The chart files, created and waiting for their content.
pub struct Charts {
    files: Vec<(PathBuf, File)>,
}

/// A chart's drawing failed; plotters' error types differ per backend, so only the text
/// is kept.
pub(crate) type Drawn = Result<(), String>;

/// Draws one chart from the labels and the reports.
type Draw = fn(&Area<'_>, &[&str], &[Value]) -> Drawn;

impl Charts {
    pub fn create(dir: &Path) -> CliResult<Charts> {
        let context = |p: &Path| format!("--out {}", p.display());
        std::fs::create_dir_all(dir).map_err(|e| CliError::io(context(dir), e))?;
        let files = NAMES
            .iter()
            .map(|name| {
                let path = dir.join(name);
                File::create(&path)
                    .map(|f| (path.clone(), f))
                    .map_err(|e| CliError::io(context(&path), e))
            })
            .collect::<CliResult<Vec<_>>>()?;
        Ok(Charts { files })
    }

    pub fn write(self, labels: &[&str], reports: &[Value]) -> CliResult {
        let draws: [Draw; 4] = [free_space, cleaning_copies, bars, invalid_ratios];
        for ((path, mut file), draw) in self.files.into_iter().zip(draws) {
            let svg = render(|area| draw(area, labels, reports))
                .map_err(|e| CliError::invalid(format!("{}: drawing: {e}", path.display())))?;
            file.write_all(svg.as_bytes())
                .and_then(|()| file.flush())
                .map_err(|e| CliError::io(format!("--out {}", path.display()), e))?;
        }
        Ok(())
    }
}

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws into an SVG document of [`SIZE`] held in memory.
fn render(draw: impl FnOnce(&Area<'_>) -> Drawn) -> Result<String, String> {
    render_sized(SIZE, draw)
}

/// Draws into an SVG document of `size` held in memory.
pub(crate) fn render_sized(
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> Drawn,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        area.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&area)?;
        area.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

pub(crate) fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// One `(x, y)` series per report from its time series.
fn series(reports: &[Value], y: impl Fn(&Value) -> Option<f64>) -> Vec<Vec<(f64, f64)>> {
    let points = |r: &Value| -> Vec<(f64, f64)> {
        let samples = r.get("timeseries").and_then(Value::as_array);
        samples
            .into_iter()
            .flatten()
            .filter_map(|s| Some((value(s, &["t"])?, y(s)?)))
            .collect()
    };
    reports.iter().map(points).collect()
}

fn free_space(area: &Area<'_>, labels: &[&str], reports: &[Value]) -> Drawn {
    let lines = series(reports, |s| value(s, &["free_ratio"]).map(|f| f * 100.0));
    let look = Look {
        caption: "Free space over the run",
        x: "operations",
        y: "free space (% of usable)",
        x_range: None,
        y_range: Some(0.0..100.0),
        x_labels: None,
    };
    line_chart(area, &look, labels, &lines)
}

fn cleaning_copies(area: &Area<'_>, labels: &[&str], reports: &[Value]) -> Drawn {
    let lines = series(reports, |s| value(s, &["gc_copy_bytes"]).map(|b| b / MIB));
    let look = Look {
        caption: "Zone cleaning: bytes copied so far",
        x: "operations",
        y: "copied (MiB)",
        x_range: None,
        y_range: None,
        x_labels: None,
    };
    line_chart(area, &look, labels, &lines)
}

/// The number of full zones per 10 % bucket of invalid ratio, at each bucket's middle.
fn invalid_ratios(area: &Area<'_>, labels: &[&str], reports: &[Value]) -> Drawn {
    let lines: Vec<Vec<(f64, f64)>> = reports.iter().map(histogram).collect();
    let look = Look {
        caption: "Full zones by invalid ratio (end of run)",
        x: "invalid bytes (% of zone capacity)",
        y: "full zones",
        x_range: Some(0.0..100.0),
        y_range: None,
        x_labels: None,
    };
    line_chart(area, &look, labels, &lines)
}

fn histogram(report: &Value) -> Vec<(f64, f64)> {
    let ratios = report
        .get("zone_invalid_ratios")
        .and_then(|d| d.get("ratios"))
        .and_then(Value::as_array);
    let ratios = InvalidRatios {
        ratios: ratios
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .collect(),
    };
    let width = 100.0 / BUCKETS as f64;
    ratios
        .histogram(BUCKETS)
        .iter()
        .enumerate()
        .map(|(i, n)| ((i as f64 + 0.5) * width, *n as f64))
        .collect()
}

/// Texts of a chart, and its axes' ranges where they are fixed rather than from the data.
pub(crate) struct Look<'a> {
    pub caption: &'a str,
    pub x: &'a str,
    pub y: &'a str,
    pub x_range: Option<Range<f64>>,
    pub y_range: Option<Range<f64>>,
    /// At most this many labels on the x axis (plotters' choice when none): whole
    /// numbers only, for an axis of a few small counts such as levels.
    pub x_labels: Option<usize>,
}

/// One line per scheme, with a legend of the labels.
pub(crate) fn line_chart(
    area: &Area<'_>,
    look: &Look<'_>,
    labels: &[&str],
    lines: &[Vec<(f64, f64)>],
) -> Drawn {
    let all = || lines.iter().flatten();
    let x = look.x_range.clone().unwrap_or_else(|| {
        let max = all().map(|p| p.0).fold(0.0, f64::max);
        0.0..max.max(1.0)
    });
    // Room above the highest point for the legend.
    let y = look.y_range.clone().unwrap_or_else(|| {
        let max = all().map(|p| p.1).fold(0.0, f64::max);
        0.0..max.max(1.0) * 1.25
    });
    let mut chart = ChartBuilder::on(area)
        .caption(look.caption, (FONT, 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())?;
    let mut mesh = chart.configure_mesh();
    if let Some(n) = look.x_labels {
        mesh.x_labels(n);
    }
    mesh.x_desc(look.x)
        .y_desc(look.y)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (label, points)) in labels.iter().zip(lines).enumerate() {
        let style = color(i).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style).point_size(2))
            .map_err(|e| e.to_string())?
            .label(*label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    legend(&mut chart)
}

fn legend<'a, X, Y>(chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>) -> Drawn
where
    X: Ranged,
    Y: Ranged,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())
}

/// Three panels of bars, one bar per scheme in the scheme's colour, over one legend for
/// all three (a legend per panel would hide the bars).
fn bars(area: &Area<'_>, labels: &[&str], reports: &[Value]) -> Drawn {
    let legend_height = 24 * labels.len() as u32 + 12;
    let (top, bottom) = area.split_vertically(SIZE.1.saturating_sub(legend_height));
    bar_legend(&bottom, labels)?;
    let panels = top.split_evenly((1, 3));
    let figures: [(&str, &[&str], f64); 3] = [
        ("device WA", &["device", "wa"], 1.0),
        ("cleaning copies (MiB)", &["gc", "copy_bytes"], MIB),
        ("zone resets", &["device", "zone_resets"], 1.0),
    ];
    for (panel, (caption, path, unit)) in panels.iter().zip(figures) {
        let values: Vec<f64> = reports
            .iter()
            .map(|r| value(r, path).unwrap_or(0.0) / unit)
            .collect();
        bar_panel(panel, caption, &values)?;
    }
    Ok(())
}

pub(crate) fn bar_legend(area: &Area<'_>, labels: &[&str]) -> Drawn {
    for (i, label) in labels.iter().enumerate() {
        let y = 24 * i as i32 + 6;
        area.draw(&Rectangle::new([(60, y), (74, y + 14)], color(i).filled()))
            .and_then(|()| area.draw(&Text::new(*label, (84, y), (FONT, 15))))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub(crate) fn bar_panel(area: &Area<'_>, caption: &str, values: &[f64]) -> Drawn {
    // Counts of zero still get a readable axis.
    let top = values.iter().copied().fold(0.0, f64::max).max(1.0) * 1.1;
    let n = values.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 18))
        .margin(10)
        .x_label_area_size(20)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..n, 0.0..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .draw()
        .map_err(|e| e.to_string())?;
    let bars = values.iter().enumerate().map(|(i, v)| {
        let x = i as f64;
        Rectangle::new([(x + 0.15, 0.0), (x + 0.85, *v)], color(i).filled())
    });
    chart.draw_series(bars).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invalid_ratios_fall_in_ten_percent_buckets() {
        let r = json!({ "zone_invalid_ratios": { "ratios": [0.0, 0.05, 0.5, 1.0] } });
        let h = histogram(&r);
        assert_eq!(h.len(), 10);
        assert_eq!(h[0], (5.0, 2.0));
        assert_eq!(h[5].1, 1.0);
        assert_eq!(h[9].1, 1.0);
    }

    #[test]
    fn charts_are_svg_with_the_labels() {
        let r = json!({ "timeseries": [ { "t": 0, "free_ratio": 1.0, "gc_copy_bytes": 0 },
                                        { "t": 10, "free_ratio": 0.5, "gc_copy_bytes": 4096 } ],
                        "device": { "wa": 1.5, "zone_resets": 3 }, "gc": { "copy_bytes": 4096 } });
        let reports = [r.clone(), r];
        for draw in [free_space, cleaning_copies, bars, invalid_ratios] {
            let svg = render(|a| draw(a, &["one", "two<"], &reports)).unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
            // Texts are escaped, each on a line of its own.
            assert!(svg.contains("\none\n") && svg.contains("\ntwo&lt;\n"));
        }
    }
}
