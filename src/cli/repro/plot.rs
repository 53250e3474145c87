//! Charts of several panels, built from `zkv compare`'s line and bar charts: a grid of
//! line charts (one line per scheme in every panel), and a grid of bar panels (one bar per
//! scheme) over one legend.

use crate::cli::compare::charts::{
    bar_legend, bar_panel, category_height, legend_height, line_chart, render_sized, Look,
    CATEGORY_ROW,
};

/// Size of one panel of a grid.
const PANEL: (u32, u32) = (560, 380);

/// One panel of line charts: its texts and ranges, and one line per scheme.
pub struct LinePanel {
    pub caption: String,
    pub x: String,
    pub y: String,
    pub x_range: Option<std::ops::Range<f64>>,
    pub y_range: Option<std::ops::Range<f64>>,
    /// At most this many x labels (see [`Look::x_labels`]).
    pub x_labels: Option<usize>,
    pub lines: Vec<Vec<(f64, f64)>>,
}

/// Line panels in a grid of `columns` columns; every panel has the schemes' legend.
pub fn line_grid(panels: &[LinePanel], labels: &[&str], columns: usize) -> Result<String, String> {
    let (rows, columns) = grid(panels.len(), columns);
    let size = (PANEL.0 * columns as u32, PANEL.1 * rows as u32);
    render_sized(size, |area| {
        let cells = area.split_evenly((rows, columns));
        for (cell, panel) in cells.iter().zip(panels) {
            let look = Look {
                caption: &panel.caption,
                x: &panel.x,
                y: &panel.y,
                x_range: panel.x_range.clone(),
                y_range: panel.y_range.clone(),
                x_labels: panel.x_labels,
            };
            line_chart(cell, &look, labels, &panel.lines)?;
        }
        Ok(())
    })
}

/// One row of bar panels: a metric, one panel per group (workload, threshold), one bar per
/// scheme; a value that is missing is drawn as 0.
pub struct BarRow {
    pub metric: String,
    /// `values[group][scheme]`.
    pub values: Vec<Vec<Option<f64>>>,
}

/// Bar panels, a row per metric and a column per group, over one legend of the schemes.
pub fn bar_grid(rows: &[BarRow], groups: &[&str], labels: &[&str]) -> Result<String, String> {
    let columns = groups.len().max(1);
    let legend = legend_height(labels);
    let panel_width = PANEL.0 / 2 + 40;
    let width = panel_width * columns.max(2) as u32;
    // Every panel taller by what its bars' labels need beyond one row.
    let labels_height = category_height(labels, panel_width).saturating_sub(CATEGORY_ROW);
    let height = (PANEL.1 * 3 / 4 + labels_height) * rows.len().max(1) as u32 + legend;
    render_sized((width, height), |area| {
        let (top, bottom) = area.split_vertically(height - legend);
        bar_legend(&bottom, labels)?;
        let cells = top.split_evenly((rows.len().max(1), columns));
        let panels = rows.iter().flat_map(|row| {
            groups
                .iter()
                .zip(&row.values)
                .map(move |(g, v)| (row, g, v))
        });
        for (cell, (row, group, values)) in cells.iter().zip(panels) {
            bar_panel(cell, &format!("{group}: {}", row.metric), labels, values)?;
        }
        Ok(())
    })
}

/// Rows and columns of a grid of `n` panels at most `columns` wide.
fn grid(n: usize, columns: usize) -> (usize, usize) {
    let columns = columns.clamp(1, n.max(1));
    (n.max(1).div_ceil(columns), columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::compare::charts::tests::{outside, texts};

    #[test]
    fn grids_hold_every_panel() {
        assert_eq!(grid(5, 3), (2, 3));
        assert_eq!(grid(2, 3), (1, 2));
        assert_eq!(grid(0, 3), (1, 1));
    }

    #[test]
    fn grids_draw_every_panel_and_label() {
        let panel = |caption: &str| LinePanel {
            caption: caption.into(),
            x: "x".into(),
            y: "y".into(),
            x_range: None,
            y_range: Some(0.0..1.0),
            x_labels: None,
            lines: vec![vec![(0.0, 0.5), (1.0, 0.7)], vec![]],
        };
        let svg = line_grid(&[panel("first"), panel("second")], &["a", "b"], 2).unwrap();
        assert!(svg.contains("first") && svg.contains("second"));
        let row = BarRow {
            metric: "copies".into(),
            values: vec![vec![Some(1.0), None], vec![Some(2.0), Some(3.0)]],
        };
        let svg = bar_grid(&[row], &["fillrandom", "zipfian"], &["a", "b"]).unwrap();
        assert!(svg.contains("fillrandom: copies") && svg.contains("zipfian: copies"));
    }

    /// The width and height of an SVG document.
    fn size(svg: &str) -> (u32, u32) {
        let number = |name: &str| {
            let at = svg.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            let len = svg[at..].find('"').unwrap();
            svg[at..at + len].parse().unwrap()
        };
        (number("width"), number("height"))
    }

    #[test]
    fn long_bar_labels_stand_in_taller_panels_and_every_text_fits() {
        let labels = ["baseline", "min-overlap-caza", "drain-liza"];
        let row = BarRow {
            metric: "device writes per user byte".into(),
            values: vec![vec![Some(350_000.0), Some(2.5), None]; 2],
        };
        let svg = bar_grid(&[row], &["fillrandom", "zipfian"], &labels).unwrap();
        let (width, height) = size(&svg);
        let short = bar_grid(&[], &["fillrandom", "zipfian"], &labels[..1]).unwrap();
        assert!(height > size(&short).1 + 24 * 2, "{height}");
        assert_eq!(outside(&svg, width), Vec::<String>::new());
        assert!(texts(&svg).iter().any(|t| t.text == labels[1] && t.rotated));
        let lines = vec![vec![(0.0, 1.0), (2_000_000.0, 3.0)]];
        let panel = LinePanel {
            caption: "c".into(),
            x: "operations".into(),
            y: "y".into(),
            x_range: None,
            y_range: None,
            x_labels: None,
            lines,
        };
        let svg = line_grid(&[panel], &["a"], 2).unwrap();
        assert_eq!(outside(&svg, size(&svg).0), Vec::<String>::new());
    }
}
