//! The results of an experiment as files: figures (a table, notes and an SVG chart each),
//! the paper's headline numbers next to zkv's, `README.md`, `summary.json` and the runs'
//! reports in `runs/`.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use zkv_engine::options::ExecMode;

use super::matrix::Results;
use crate::cli::bench;
use crate::cli::error::{CliError, CliResult};
use crate::cli::table::{Align, Table};

/// One cell of a figure's table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A number shown with `digits` decimals (the JSON keeps it whole).
    Num {
        value: f64,
        digits: usize,
    },
    Text(String),
    /// No value: the run failed or did not run, or its report lacks the figure.
    Missing,
}

impl Cell {
    pub fn num(value: Option<f64>, digits: usize) -> Cell {
        match value {
            Some(value) if value.is_finite() => Cell::Num { value, digits },
            _ => Cell::Missing,
        }
    }

    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    fn show(&self) -> String {
        match self {
            Cell::Num { value, digits } => format!("{value:.digits$}"),
            Cell::Text(s) => s.clone(),
            Cell::Missing => "-".into(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Cell::Num { value, .. } => json!(value),
            Cell::Text(s) => json!(s),
            Cell::Missing => Value::Null,
        }
    }
}

/// One of the paper's figures or tables, rebuilt from the runs.
pub struct Figure {
    /// A short name: the JSON key and the chart's file stem (`fig3`).
    pub id: &'static str,
    pub title: String,
    /// What the paper shows, with its numbers.
    pub paper: String,
    /// The runs the figure is made of.
    pub source: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Definitions, scale, and whatever is not measured.
    pub notes: Vec<String>,
    /// The SVG chart, written as [`Figure::chart_file`].
    pub svg: Option<String>,
}

impl Figure {
    /// A figure with its table; notes and the chart are added after.
    pub fn new(id: &'static str, title: &str, paper: &str, source: &str) -> Figure {
        Figure {
            id,
            title: title.into(),
            paper: paper.into(),
            source: source.into(),
            columns: Vec::new(),
            rows: Vec::new(),
            notes: Vec::new(),
            svg: None,
        }
    }

    pub fn columns(mut self, columns: &[&str]) -> Figure {
        self.columns = columns.iter().map(|c| (*c).to_string()).collect();
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Figure {
        self.notes.push(note.into());
        self
    }

    /// A note saying which mode the figure needs when that mode did not run.
    pub fn needs(self, results: &Results, mode: ExecMode) -> Figure {
        if results.ran(mode) {
            return self;
        }
        self.note(format!(
            "Not run: this figure needs {} runs (--modes {}).",
            mode.name(),
            mode.name()
        ))
    }

    /// Draws the chart with `draw` into `{id}.svg`; no chart unless `ran` (no run the
    /// figure is made of ran).
    pub fn chart(
        mut self,
        ran: bool,
        draw: impl FnOnce() -> Result<String, String>,
    ) -> CliResult<Figure> {
        if !ran {
            return Ok(self);
        }
        let svg =
            draw().map_err(|e| CliError::invalid(format!("{}.svg: drawing: {e}", self.id)))?;
        self.svg = Some(svg);
        Ok(self)
    }

    /// The chart's file name in the output directory, if the figure has a chart.
    pub fn chart_file(&self) -> Option<String> {
        self.svg.as_ref().map(|_| format!("{}.svg", self.id))
    }

    fn markdown(&self, md: &mut String) {
        let _ = writeln!(md, "## {}\n", self.title);
        let _ = writeln!(md, "Paper: {}\n", self.paper);
        let _ = writeln!(md, "zkv: {}.\n", self.source);
        markdown_table(md, &self.columns, &self.rows);
        if let Some(file) = self.chart_file() {
            let _ = writeln!(md, "![{}]({file})\n", self.title);
        }
        for note in &self.notes {
            let _ = writeln!(md, "- {note}");
        }
        if !self.notes.is_empty() {
            md.push('\n');
        }
    }

    fn to_json(&self) -> Value {
        let rows: Vec<Vec<Value>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(Cell::to_json).collect())
            .collect();
        json!({
            "id": self.id, "title": self.title, "paper": self.paper, "source": self.source,
            "columns": self.columns, "rows": rows, "notes": self.notes,
            "chart": self.chart_file(),
        })
    }
}

fn markdown_table(md: &mut String, columns: &[String], rows: &[Vec<Cell>]) {
    let line = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let _ = writeln!(md, "{}", line(columns.to_vec()));
    let _ = writeln!(
        md,
        "{}",
        line(columns.iter().map(|_| "---".into()).collect())
    );
    for row in rows {
        let _ = writeln!(md, "{}", line(row.iter().map(Cell::show).collect()));
    }
    md.push('\n');
}

/// One of the paper's headline numbers and what the runs give for it.
pub struct Headline {
    pub claim: String,
    pub paper: String,
    pub zkv: String,
}

impl Headline {
    pub fn new(claim: &str, paper: &str, zkv: String) -> Headline {
        Headline {
            claim: claim.into(),
            paper: paper.into(),
            zkv,
        }
    }
}

/// Everything the output files say.
pub struct Summary {
    pub experiment: &'static str,
    pub paper: &'static str,
    pub quick: bool,
    pub modes: Vec<ExecMode>,
    pub resume: bool,
    pub bench_flags: Vec<String>,
    /// `--repeat`: how many times each threaded run was done.
    pub repeat: u32,
    pub seconds: f64,
    pub headlines: Vec<Headline>,
    pub figures: Vec<Figure>,
}

impl Summary {
    /// The headline table for the terminal.
    pub fn headline_table(&self) -> Table {
        let mut t = Table::new(&[
            ("headline", Align::Left),
            ("paper", Align::Left),
            ("zkv", Align::Left),
        ]);
        for h in &self.headlines {
            t.row(vec![h.claim.clone(), h.paper.clone(), h.zkv.clone()]);
        }
        t
    }

    fn command(&self) -> String {
        let mut words = vec![format!("zkv repro {}", self.experiment)];
        if self.quick {
            words.push("--quick".into());
        }
        let modes: Vec<&str> = self.modes.iter().map(|m| m.name()).collect();
        words.push(format!("--modes {}", modes.join(",")));
        if self.repeat > 1 {
            words.push(format!("--repeat {}", self.repeat));
        }
        if self.resume {
            words.push("--resume".into());
        }
        if !self.bench_flags.is_empty() {
            words.push(format!("-- {}", self.bench_flags.join(" ")));
        }
        words.join(" ")
    }

    fn markdown(&self, results: &Results) -> String {
        let mut md = String::new();
        let scale = crate::cli::bench::preset_scale(self.quick);
        let _ = writeln!(md, "# zkv repro {}: {}\n", self.experiment, self.paper);
        let _ = writeln!(
            md,
            "`{}`: {} runs{} at {scale} of the paper's sizes, {:.1} s. Each run's bench \
             report is in `runs/`; these tables as JSON in `summary.json`. \
             docs/REPRODUCTION.md says how each figure maps to the paper.\n",
            self.command(),
            results.len(),
            reused_note(results),
            self.seconds
        );
        md.push_str("## Headlines\n\n");
        let rows: Vec<Vec<Cell>> = self
            .headlines
            .iter()
            .map(|h| {
                vec![
                    Cell::text(&h.claim),
                    Cell::text(&h.paper),
                    Cell::text(&h.zkv),
                ]
            })
            .collect();
        let columns = ["headline".into(), "paper".into(), "zkv".into()];
        markdown_table(&mut md, &columns, &rows);
        for f in &self.figures {
            f.markdown(&mut md);
        }
        md.push_str("## Runs\n\n");
        let columns = ["run", "mode", "scheme", "variant", "seconds", "result"];
        let columns: Vec<String> = columns.iter().map(|c| (*c).to_string()).collect();
        markdown_table(&mut md, &columns, &run_rows(results));
        md
    }

    fn to_json(&self, results: &Results) -> Value {
        let runs: Vec<Value> = results
            .outcomes()
            .iter()
            .map(|o| {
                json!({
                    "id": o.spec.id(), "mode": o.spec.mode.name(), "scheme": o.spec.scheme,
                    "variant": o.spec.variant, "file": o.file(), "seconds": o.seconds,
                    "error": o.error, "reused": o.reused,
                })
            })
            .collect();
        let headlines: Vec<Value> = self
            .headlines
            .iter()
            .map(|h| json!({ "claim": h.claim, "paper": h.paper, "zkv": h.zkv }))
            .collect();
        let modes: Vec<&str> = self.modes.iter().map(|m| m.name()).collect();
        json!({
            "experiment": self.experiment, "paper": self.paper, "quick": self.quick,
            "modes": modes, "resume": self.resume, "repeat": self.repeat,
            "bench_flags": self.bench_flags,
            "seconds": self.seconds, "runs": runs, "headlines": headlines,
            "figures": self.figures.iter().map(Figure::to_json).collect::<Vec<_>>(),
        })
    }
}

/// `, N reused from runs/,` to follow a run count, or nothing when every run ran.
pub fn reused_note(results: &Results) -> String {
    match results.reused() {
        0 => String::new(),
        n => format!(", {n} reused from runs/,"),
    }
}

fn run_rows(results: &Results) -> Vec<Vec<Cell>> {
    results
        .outcomes()
        .iter()
        .map(|o| {
            let ok = if o.reused { "ok (reused)" } else { "ok" };
            let result = o.error.as_deref().map_or(ok.into(), |e| {
                // A Markdown cell holds one line without pipes.
                format!("failed: {}", e.replace('|', "/").replace('\n', " "))
            });
            vec![
                Cell::text(format!("[{}]({})", o.spec.id(), o.file())),
                Cell::text(o.spec.mode.name()),
                Cell::text(o.spec.scheme),
                Cell::text(&o.spec.variant),
                Cell::num(o.seconds, 1),
                Cell::text(result),
            ]
        })
        .collect()
}

/// The output directory, created (with `runs/`, `README.md` and `summary.json`) before the
/// first run, so that an unwritable place fails first.
pub struct OutputDir {
    dir: PathBuf,
    readme: File,
    summary: File,
}

impl OutputDir {
    pub fn create(dir: &Path) -> CliResult<OutputDir> {
        create_runs_dir(dir)?;
        Ok(OutputDir {
            dir: dir.to_path_buf(),
            readme: create(&dir.join("README.md"))?,
            summary: create(&dir.join("summary.json"))?,
        })
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes the charts, `README.md` and `summary.json`.
    pub fn write(self, summary: &Summary, results: &Results) -> CliResult {
        for f in &summary.figures {
            if let (Some(file), Some(svg)) = (f.chart_file(), &f.svg) {
                let path = self.dir.join(file);
                write_all(&path, create(&path)?, svg.as_bytes())?;
            }
        }
        let readme = self.dir.join("README.md");
        write_all(&readme, self.readme, summary.markdown(results).as_bytes())?;
        let path = self.dir.join("summary.json");
        bench::write_json(&path, self.summary, &summary.to_json(results))
    }
}

/// Writes run `id`'s report into `dir` as [`run_file`] (the `runs` directory must exist):
/// into a temporary file renamed over it, so that a run killed meanwhile leaves the old
/// report or none, never a truncated one.
pub fn write_run(dir: &Path, id: &str, report: &Value) -> CliResult {
    let path = dir.join(run_file(id));
    let tmp = dir.join(format!("{}.tmp", run_file(id)));
    bench::write_json(&tmp, create(&tmp)?, report)?;
    std::fs::rename(&tmp, &path).map_err(|e| out_error(&path, e))
}

/// Creates `dir/runs` (and `dir`) if missing.
pub fn create_runs_dir(dir: &Path) -> CliResult {
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).map_err(|e| out_error(&runs, e))
}

/// The report file of run `id`, relative to the output directory.
pub fn run_file(id: &str) -> String {
    format!("runs/{id}.json")
}

fn create(path: &Path) -> CliResult<File> {
    File::create(path).map_err(|e| out_error(path, e))
}

fn write_all(path: &Path, mut file: File, bytes: &[u8]) -> CliResult {
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| out_error(path, e))
}

fn out_error(path: &Path, e: std::io::Error) -> CliError {
    CliError::io(format!("--out {}", path.display()), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_show_their_digits_and_missing_values() {
        assert_eq!(Cell::num(Some(1.23456), 2).show(), "1.23");
        assert_eq!(Cell::num(None, 2).show(), "-");
        assert_eq!(Cell::num(Some(f64::NAN), 2), Cell::Missing);
        assert_eq!(Cell::num(Some(2.0), 0).to_json(), json!(2.0));
        assert_eq!(Cell::Missing.to_json(), Value::Null);
    }

    #[test]
    fn a_figure_is_a_markdown_section_with_its_table() {
        let mut f = Figure::new(
            "fig0",
            "Figure 0: test",
            "the paper's",
            "deterministic runs",
        )
        .columns(&["a", "b"])
        .note("a note");
        f.rows.push(vec![Cell::text("x"), Cell::num(Some(0.5), 1)]);
        let mut md = String::new();
        f.markdown(&mut md);
        assert!(md.starts_with("## Figure 0: test\n"), "{md}");
        assert!(
            md.contains("| a | b |\n| --- | --- |\n| x | 0.5 |\n"),
            "{md}"
        );
        assert!(md.contains("- a note\n"), "{md}");
        assert_eq!(f.to_json()["rows"], json!([["x", 0.5]]));
    }
}
