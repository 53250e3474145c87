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

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use zkv_zonefs::fs::InvalidRatios;

use super::style::{color, marked, marker, note, short, text_width, tick};
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
        let draws: [(Draw, (u32, u32)); 4] = [
            (free_space, SIZE),
            (cleaning_copies, SIZE),
            (bars, bars_size(labels)),
            (invalid_ratios, SIZE),
        ];
        for ((path, mut file), (draw, size)) in self.files.into_iter().zip(draws) {
            let svg = render_sized(size, |area| draw(area, labels, reports))
                .map_err(|e| CliError::invalid(format!("{}: drawing: {e}", path.display())))?;
            file.write_all(svg.as_bytes())
                .and_then(|()| file.flush())
                .map_err(|e| CliError::io(format!("--out {}", path.display()), e))?;
        }
        Ok(())
    }
}

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

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

/// None for a run without zones (a directory's, RocksDB's): no line rather than zeros.
fn histogram(report: &Value) -> Vec<(f64, f64)> {
    let Some(ratios) = report
        .get("zone_invalid_ratios")
        .and_then(|d| d.get("ratios"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let ratios = InvalidRatios {
        ratios: ratios.iter().filter_map(Value::as_f64).collect(),
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

/// Font size of tick labels (plotters' default) and of the texts next to bars.
const LABEL: u32 = 12;

/// One line per scheme, each with its own point marker, and a legend of the labels.
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
    // plotters centres each x label on its tick and does not keep the last one inside
    // the panel: the margin holds half of the widest one.
    let right = (text_width(&tick(x.end), LABEL) / 2 + 6).max(12);
    let mut chart = ChartBuilder::on(area)
        .caption(look.caption, (FONT, 22))
        .margin(12)
        .margin_right(right)
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
        .x_label_formatter(&|x| tick(*x))
        .y_label_formatter(&|y| tick(*y))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, points) in lines.iter().enumerate() {
        let style = color(i).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style))
            .map_err(|e| e.to_string())?;
    }
    // The markers after every line, so that a line lying on another hides none of them.
    for (i, (label, points)) in legend_labels(labels, lines)
        .into_iter()
        .zip(lines)
        .enumerate()
    {
        let style = color(i).stroke_width(2);
        let marked = marked(points.len(), i, lines.len());
        let markers = points
            .iter()
            .enumerate()
            .filter(|(j, _)| marked(*j))
            .map(|(_, p)| EmptyElement::at(*p) + PathElement::new(marker(i, (0, 0)), style));
        chart
            .draw_series(markers)
            .map_err(|e| e.to_string())?
            .label(label)
            .legend(move |at| {
                EmptyElement::at(at)
                    + PathElement::new(vec![(0, 0), (20, 0)], style)
                    + PathElement::new(marker(i, (10, 0)), style)
            });
    }
    if let Some(why) = empty_reason(all().map(|p| p.1)) {
        note(&chart.plotting_area().strip_coord_spec(), why)?;
    }
    legend(&mut chart)
}

/// The legend's texts: a scheme whose line is exactly another's says so, since only
/// their markers then tell them apart.
fn legend_labels(labels: &[&str], lines: &[Vec<(f64, f64)>]) -> Vec<String> {
    labels
        .iter()
        .zip(lines)
        .enumerate()
        .map(|(i, (label, points))| {
            let same = lines[..i]
                .iter()
                .position(|other| !points.is_empty() && other == points);
            match same {
                Some(j) => format!("{label} (same as {})", labels[j]),
                None => (*label).to_string(),
            }
        })
        .collect()
}

/// Why a panel of these values shows nothing, if it does not.
fn empty_reason(values: impl Iterator<Item = f64>) -> Option<&'static str> {
    let mut any = false;
    for v in values {
        if v != 0.0 {
            return None;
        }
        any = true;
    }
    Some(if any { "all values are 0" } else { "no data" })
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
    let (_, height) = area.dim_in_pixel();
    let legend_height = legend_height(labels);
    let (top, bottom) = area.split_vertically(height.saturating_sub(legend_height));
    bar_legend(&bottom, labels)?;
    let panels = top.split_evenly((1, 3));
    let figures: [(&str, &[&str], f64); 3] = [
        ("device WA", &["device", "wa"], 1.0),
        ("cleaning copies (MiB)", &["gc", "copy_bytes"], MIB),
        ("zone resets", &["device", "zone_resets"], 1.0),
    ];
    for (panel, (caption, path, unit)) in panels.iter().zip(figures) {
        let values: Vec<Option<f64>> = reports
            .iter()
            .map(|r| value(r, path).map(|v| v / unit))
            .collect();
        bar_panel(panel, caption, labels, &values)?;
    }
    Ok(())
}

/// The size of [`bars`]' chart: [`SIZE`], taller by what the bars' labels need.
fn bars_size(labels: &[&str]) -> (u32, u32) {
    let extra = category_height(labels, SIZE.0 / 3).saturating_sub(CATEGORY_ROW);
    (SIZE.0, SIZE.1 + extra)
}

/// The height of [`bar_legend`] for `labels`.
pub(crate) fn legend_height(labels: &[&str]) -> u32 {
    24 * labels.len() as u32 + 12
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

/// The height under a bar panel for one line of category labels.
pub(crate) const CATEGORY_ROW: u32 = 22;
/// Pixels of a bar panel that are not its bars: the y labels and the margins.
const BAR_PANEL_FRAME: u32 = 70;

/// The height of the category labels under the bars of a panel `width` pixels wide: a row
/// when every label fits under its bar, else as tall as the longest label standing.
pub(crate) fn category_height(labels: &[&str], width: u32) -> u32 {
    if upright(labels, width) {
        CATEGORY_ROW
    } else {
        widest(labels) + 12
    }
}

/// The width of the widest of `labels` under a bar.
fn widest(labels: &[&str]) -> u32 {
    labels
        .iter()
        .map(|l| text_width(l, LABEL))
        .max()
        .unwrap_or(0)
}

/// Whether `labels` fit side by side under their bars in a panel `width` pixels wide.
fn upright(labels: &[&str], width: u32) -> bool {
    let slot = width.saturating_sub(BAR_PANEL_FRAME) / labels.len().max(1) as u32;
    widest(labels) + 6 <= slot
}

/// One bar per scheme in the scheme's colour, its label under it and its value over it
/// (`n/a` for a missing value).
pub(crate) fn bar_panel(
    area: &Area<'_>,
    caption: &str,
    labels: &[&str],
    values: &[Option<f64>],
) -> Drawn {
    let present = || values.iter().flatten().copied();
    // Room over the highest bar for its value; counts of zero still get a readable axis.
    let top = present().fold(0.0, f64::max).max(1.0) * 1.15;
    let n = values.len().max(1) as f64;
    let (width, _) = area.dim_in_pixel();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, caption_size(caption, width)))
        .margin(10)
        .x_label_area_size(category_height(labels, width))
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..n, 0.0..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&|y| tick(*y))
        .draw()
        .map_err(|e| e.to_string())?;
    let bars = values.iter().enumerate().filter_map(|(i, v)| {
        let x = i as f64;
        v.map(|v| Rectangle::new([(x + 0.15, 0.0), (x + 0.85, v)], color(i).filled()))
    });
    chart.draw_series(bars).map_err(|e| e.to_string())?;
    let over = TextStyle::from((FONT, LABEL).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    let texts = values.iter().enumerate().map(|(i, v)| {
        let text = v.map_or("n/a".to_string(), short);
        EmptyElement::at((i as f64 + 0.5, v.unwrap_or(0.0)))
            + Text::new(text, (0, -3), over.clone())
    });
    chart.draw_series(texts).map_err(|e| e.to_string())?;
    category_labels(area, &chart, labels)?;
    if let Some(why) = empty_reason(present()) {
        note(&chart.plotting_area().strip_coord_spec(), why)?;
    }
    Ok(())
}

/// The font size of a bar panel's caption: 18, smaller if that would not fit `width`.
fn caption_size(caption: &str, width: u32) -> u32 {
    let wide = text_width(caption, 18);
    if wide + 8 <= width {
        18
    } else {
        (18 * width.saturating_sub(8) / wide.max(1)).max(10)
    }
}

/// The bars' labels under the x axis of `chart` (drawn on `area`): side by side when they
/// fit, else standing, read upwards.
fn category_labels(
    area: &Area<'_>,
    chart: &ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    labels: &[&str],
) -> Drawn {
    let (width, _) = area.dim_in_pixel();
    let style = TextStyle::from((FONT, LABEL).into_font());
    let style = if upright(labels, width) {
        style.pos(Pos::new(HPos::Center, VPos::Top))
    } else {
        style
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Right, VPos::Center))
    };
    let base = area.get_base_pixel();
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let at = (x - base.0, y - base.1 + 6);
        area.draw(&Text::new(*label, at, style.clone()))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    fn render(draw: impl FnOnce(&Area<'_>) -> Drawn) -> Result<String, String> {
        render_sized(SIZE, draw)
    }

    /// A text of an SVG document as plotters writes it.
    #[derive(Debug)]
    pub(crate) struct SvgText {
        pub x: f64,
        pub y: f64,
        pub anchor: String,
        pub size: f64,
        pub rotated: bool,
        pub text: String,
    }

    fn attr(tag: &str, name: &str) -> Option<String> {
        let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let len = tag[start..].find('"')?;
        Some(tag[start..start + len].to_string())
    }

    /// Every `<text>` of `svg` (plotters writes each as `<text ...>\nTEXT\n</text>`).
    pub(crate) fn texts(svg: &str) -> Vec<SvgText> {
        svg.split("<text ")
            .skip(1)
            .map(|t| {
                let (tag, rest) = t.split_once('>').unwrap();
                let tag = &format!(" {tag}");
                let number = |name| attr(tag, name).unwrap().parse::<f64>().unwrap();
                SvgText {
                    x: number("x"),
                    y: number("y"),
                    anchor: attr(tag, "text-anchor").unwrap_or_default(),
                    size: number("font-size"),
                    rotated: tag.contains("transform="),
                    text: rest
                        .trim_start_matches('\n')
                        .split('\n')
                        .next()
                        .unwrap()
                        .into(),
                }
            })
            .collect()
    }

    /// The texts of `svg` that stick out of its `width`, with a generous width per
    /// character (the SVG holds no measure of its texts).
    pub(crate) fn outside(svg: &str, width: u32) -> Vec<String> {
        texts(svg)
            .into_iter()
            .filter(|t| !t.rotated)
            .filter(|t| {
                let w = t.text.chars().count() as f64 * t.size * 0.66;
                let (left, right) = match t.anchor.as_str() {
                    "middle" => (t.x - w / 2.0, t.x + w / 2.0),
                    "end" => (t.x - w, t.x),
                    _ => (t.x, t.x + w),
                };
                left < 0.0 || right > f64::from(width)
            })
            .map(|t| format!("{:?} at {}", t.text, t.x))
            .collect()
    }

    fn look(x_range: Option<Range<f64>>) -> Look<'static> {
        Look {
            caption: "c",
            x: "operations",
            y: "y",
            x_range,
            y_range: None,
            x_labels: None,
        }
    }

    #[test]
    fn invalid_ratios_fall_in_ten_percent_buckets() {
        let r = json!({ "zone_invalid_ratios": { "ratios": [0.0, 0.05, 0.5, 1.0] } });
        let h = histogram(&r);
        assert_eq!(h.len(), 10);
        assert_eq!(h[0], (5.0, 2.0));
        assert_eq!(h[5].1, 1.0);
        assert_eq!(h[9].1, 1.0);
        // A run without zones has no line.
        assert!(histogram(&json!({ "lsm": { "wa": 2.0 } })).is_empty());
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
            assert!(
                svg.contains("\none\n") && svg.contains("\ntwo&lt;"),
                "{svg}"
            );
        }
    }

    #[test]
    fn every_tick_label_stays_inside_the_chart() {
        for end in [2_000_000.0, 2_345_678.0, 30.0, 100.0] {
            let lines = vec![vec![(0.0, 1.0), (end, 2.0)]];
            let svg = render(|a| line_chart(a, &look(Some(0.0..end)), &["a"], &lines)).unwrap();
            assert_eq!(outside(&svg, SIZE.0), Vec::<String>::new(), "x up to {end}");
        }
        let high = [Some(350_000.0), Some(12.5)];
        let svg = render_sized((320, 300), |a| bar_panel(a, "c", &["a", "b"], &high)).unwrap();
        assert_eq!(outside(&svg, 320), Vec::<String>::new(), "bars");
        // Long operation counts are shortened.
        let lines = vec![vec![(0.0, 1.0), (2e6, 2.0)]];
        let svg = render(|a| line_chart(a, &look(None), &["a"], &lines)).unwrap();
        assert!(texts(&svg).iter().any(|t| t.text == "2M"), "{svg}");
    }

    #[test]
    fn a_panel_of_zeros_says_so() {
        let zeros = vec![vec![(0.0, 0.0), (5.0, 0.0)]; 2];
        let svg = render(|a| line_chart(a, &look(None), &["a", "b"], &zeros)).unwrap();
        assert!(svg.contains("\nall values are 0\n"), "{svg}");
        let svg = render(|a| line_chart(a, &look(None), &["a"], &[vec![]])).unwrap();
        assert!(svg.contains("\nno data\n"), "{svg}");
        let svg = render(|a| bar_panel(a, "c", &["a", "b"], &[Some(0.0), None])).unwrap();
        assert!(svg.contains("\nall values are 0\n"), "{svg}");
        let svg = render(|a| bar_panel(a, "c", &["a", "b"], &[Some(0.0), Some(2.0)])).unwrap();
        assert!(!svg.contains("all values"), "{svg}");
    }

    #[test]
    fn bars_carry_their_label_and_value() {
        let values = [Some(1.25), None, Some(12_345.0)];
        let svg = render(|a| bar_panel(a, "c", &["one", "two", "three"], &values)).unwrap();
        let t = texts(&svg);
        let has = |s: &str| t.iter().any(|t| t.text == s);
        assert!(has("one") && has("two") && has("three"), "{t:?}");
        assert!(has("1.25") && has("n/a") && has("12345"), "{t:?}");
        // Labels under their bars, values over them.
        let y = |s: &str| t.iter().find(|t| t.text == s).unwrap().y;
        assert!(y("one") > y("1.25"));
        // Labels too long to stand side by side stand upright, in a taller chart.
        let long = [
            "baseline:gc-start=5:gc-stop=10",
            "baseline:gc-start=20:gc-stop=25",
        ];
        let narrow = (SIZE.0 / 3, SIZE.1);
        let svg = render_sized(narrow, |a| bar_panel(a, "c", &long, &[Some(1.0), None])).unwrap();
        let t = texts(&svg);
        assert!(t.iter().any(|t| t.text == long[0] && t.rotated), "{t:?}");
        assert!(bars_size(&long).1 > bars_size(&["a", "b"]).1);
        assert_eq!(bars_size(&["a", "b"]), SIZE);
    }

    #[test]
    fn identical_lines_keep_their_markers_and_say_so() {
        let line = vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)];
        let lines = vec![line.clone(), line.clone(), vec![(0.0, 2.0)]];
        let svg = render(|a| line_chart(a, &look(None), &["a", "b", "c"], &lines)).unwrap();
        assert!(svg.contains("\nb (same as a)\n"), "{svg}");
        assert!(svg.contains("\nc\n") && !svg.contains("c (same"), "{svg}");
        // Every point of each series has its marker, in its own colour, and the legend
        // one more.
        for (i, n) in [(0, 4), (1, 4), (2, 2)] {
            let stroke = format!(
                "stroke=\"#{:02X}{:02X}{:02X}\"",
                color(i).0,
                color(i).1,
                color(i).2
            );
            let markers = svg
                .lines()
                .filter(|l| l.starts_with("<polyline") && l.contains(&stroke))
                .count();
            // The line itself, its legend's line, and the markers.
            assert_eq!(markers, n + 2, "series {i}: {svg}");
        }
    }
}
