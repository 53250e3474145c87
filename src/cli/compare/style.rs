//! What every chart shares: the schemes' colours and point markers, numbers short enough
//! for a tick or a bar, the width a text takes, and the note of a panel with nothing to
//! show.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::charts::FONT;

/// Okabe and Ito's colour-blind-safe palette without its yellow, the orange and the sky
/// blue darkened: every colour has a contrast of at least 3:1 on white (the minimum for
/// graphics), so that thin lines and small markers stay visible.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xB8, 0x5C, 0x99), // reddish purple, darkened
    RGBColor(0x00, 0x00, 0x00), // black
    RGBColor(0xA6, 0x76, 0x1D), // orange, darkened
    RGBColor(0x2E, 0x86, 0xC1), // sky blue, darkened
];

/// The colour of scheme `i`, the same in every chart.
pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Outlines of the point markers, in pixels around the point: a round octagon, a square,
/// triangles, a diamond, a cross, a plus. Outlines rather than filled shapes, so that the
/// points of several schemes on the same spot all stay visible.
const SHAPES: [&[(i32, i32)]; 7] = [
    &[
        (-2, -4),
        (2, -4),
        (4, -2),
        (4, 2),
        (2, 4),
        (-2, 4),
        (-4, 2),
        (-4, -2),
        (-2, -4),
    ],
    &[(-3, -3), (3, -3), (3, 3), (-3, 3), (-3, -3)],
    &[(0, -5), (4, 3), (-4, 3), (0, -5)],
    &[(0, -5), (5, 0), (0, 5), (-5, 0), (0, -5)],
    &[(-4, -4), (4, 4), (0, 0), (-4, 4), (4, -4)],
    &[(0, 5), (4, -3), (-4, -3), (0, 5)],
    &[(-5, 0), (5, 0), (0, 0), (0, -5), (0, 5)],
];

/// Scheme `i`'s point marker: its outline around (`dx`, `dy`), in pixels.
pub(crate) fn marker(i: usize, (dx, dy): (i32, i32)) -> Vec<(i32, i32)> {
    let shape = SHAPES[i % SHAPES.len()];
    shape.iter().map(|(x, y)| (x + dx, y + dy)).collect()
}

/// At most this many markers per line: a long series gets one every few points.
const MAX_MARKERS: usize = 24;

/// Which of `n` points of series `i` (of `count`) carry a marker: all of a short series;
/// of a long one every k-th, starting further along for each series, so that series lying
/// on each other show their markers side by side rather than on the same points.
pub(crate) fn marked(n: usize, i: usize, count: usize) -> impl Fn(usize) -> bool {
    let every = n.div_ceil(MAX_MARKERS).max(1);
    let phase = i * every / count.max(1);
    move |j| j % every == phase % every
}

/// `v` for a tick label: in k or M beyond 10 000 so that it stays short, else with the
/// few decimals a tick has.
pub(crate) fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trimmed(v / 1e6, 2))
    } else if a >= 1e4 {
        format!("{}k", trimmed(v / 1e3, 1))
    } else {
        trimmed(v, 3)
    }
}

/// `v` over a bar: three significant digits, with k, M or G beyond 100 000.
pub(crate) fn short(v: f64) -> String {
    let a = v.abs();
    for (from, scale, unit) in [(1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e5, 1e3, "k")] {
        if a >= from {
            return format!("{}{unit}", significant(v / scale));
        }
    }
    if a >= 100.0 || a == 0.0 {
        return format!("{v:.0}");
    }
    significant(v)
}

/// `v` (not 0) with three significant digits (trailing zeros too, so that bars side by
/// side show the same precision), whole numbers kept whole.
fn significant(v: f64) -> String {
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

/// `v` with at most `digits` decimals, without trailing zeros.
fn trimmed(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The width in pixels a text of font `size` (as given to plotters) takes, on the wide
/// side: plotters draws `size` / 1.24 pixels high, and a sans-serif digit is about 0.64
/// of that wide.
pub(crate) fn text_width(text: &str, size: u32) -> u32 {
    let px = f64::from(size) / 1.24;
    (text.chars().count() as f64 * px * 0.66).ceil() as u32
}

/// Says in the middle of a panel's plotting `area` why it shows nothing.
pub(crate) fn note(area: &DrawingArea<SVGBackend<'_>, Shift>, text: &str) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    let style = TextStyle::from((FONT, 16).into_font())
        .color(&RGBColor(0x55, 0x55, 0x55))
        .pos(Pos::new(HPos::Center, VPos::Center));
    let at = (w as i32 / 2, h as i32 / 2);
    area.draw(&Text::new(text.to_string(), at, style))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// WCAG's contrast ratio of `c` against white.
    fn contrast_on_white(c: RGBColor) -> f64 {
        let lin = |v: u8| {
            let v = f64::from(v) / 255.0;
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        let l = 0.2126 * lin(c.0) + 0.7152 * lin(c.1) + 0.0722 * lin(c.2);
        1.05 / (l + 0.05)
    }

    #[test]
    fn every_colour_stands_out_on_white_and_none_is_yellow() {
        for (i, c) in PALETTE.iter().enumerate() {
            let ratio = contrast_on_white(*c);
            assert!(ratio >= 3.0, "colour {i} {c:?}: contrast {ratio:.2}");
            let yellowish = c.0 > 0xC0 && c.1 > 0xC0 && c.2 < 0x80;
            assert!(!yellowish, "colour {i} {c:?} is yellow");
        }
        assert_eq!(color(PALETTE.len()), color(0));
    }

    #[test]
    fn long_series_stagger_their_markers() {
        let a: Vec<usize> = (0..100).filter(|&j| marked(100, 0, 2)(j)).collect();
        let b: Vec<usize> = (0..100).filter(|&j| marked(100, 1, 2)(j)).collect();
        assert!(a.len() <= MAX_MARKERS && b.len() <= MAX_MARKERS);
        assert!(a.iter().all(|j| !b.contains(j)), "{a:?} {b:?}");
        // A short series marks every point.
        assert!((0..5).all(marked(5, 3, 4)));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(tick(2_000_000.0), "2M");
        assert_eq!(tick(1_500_000.0), "1.5M");
        assert_eq!(tick(500_000.0), "500k");
        assert_eq!(tick(25.0), "25");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.0), "0");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(1.0123), "1.01");
        assert_eq!(short(5.0), "5.00");
        assert_eq!(short(0.3734), "0.373");
        assert_eq!(short(44.56), "44.6");
        assert_eq!(short(445.6), "446");
        assert_eq!(short(12_345.0), "12345");
        assert_eq!(short(345_678.0), "346k");
        assert_eq!(short(9_320_675.0), "9.32M");
        assert_eq!(short(12_000_000_000.0), "12.0G");
    }
}
