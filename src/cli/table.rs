//! Aligned text tables for human output: a header and rows, numbers right-aligned, text
//! left-aligned, two spaces between columns, no trailing spaces.

use super::error::CliResult;
use super::Out;

/// How a column is aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            header: columns.iter().map(|(h, _)| (*h).to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are empty, extra cells are dropped.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.header.len(), String::new());
        self.rows.push(cells);
    }

    /// The table as lines, header first.
    pub fn lines(&self) -> Vec<String> {
        let width = |i: usize| {
            std::iter::once(&self.header)
                .chain(&self.rows)
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.header.len()).map(width).collect();
        let last = self.header.len().saturating_sub(1);
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|row| {
                let mut line = String::new();
                for (i, cell) in row.iter().enumerate() {
                    if i > 0 {
                        line.push_str("  ");
                    }
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    match self.align[i] {
                        Align::Right => {
                            line.push_str(&" ".repeat(pad));
                            line.push_str(cell);
                        }
                        Align::Left => {
                            line.push_str(cell);
                            if i < last {
                                line.push_str(&" ".repeat(pad));
                            }
                        }
                    }
                }
                line.trim_end().to_string()
            })
            .collect()
    }

    /// Prints [`Table::lines`], one by one.
    pub fn print(&self, out: &mut Out) -> CliResult {
        self.lines().into_iter().try_for_each(|l| out.line(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&[
            ("zone", Align::Right),
            ("state", Align::Left),
            ("x", Align::Left),
        ]);
        t.row(vec!["3".into(), "closed".into(), "a".into()]);
        t.row(vec!["12".into(), "empty".into()]);
        assert_eq!(
            t.lines(),
            ["zone  state   x", "   3  closed  a", "  12  empty"]
        );
    }
}
