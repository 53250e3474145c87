//! `zkv repro EXPERIMENT`: a paper's experiment matrix, run as bench runs in this process,
//! one after the other, then the paper's figures and tables rebuilt from the run reports.
//!
//! Each run is a `zkv compare` run (a scheme, the experiment's preset, the run's own flags)
//! parsed and checked like one: every run of the matrix is checked before the first one
//! starts. Deterministic runs give the byte figures (the same seed gives the same bytes);
//! threaded runs give throughput and latency.
//!
//! Output directory: `README.md` (the tables and the paper's headline numbers next to
//! zkv's), `summary.json` (the same tables as JSON, and the list of runs), `runs/ID.json`
//! (each run's bench report, written as soon as the run ends) and one SVG per figure.
//! stdout gets each run's db_bench lines, then the headline table; stderr one progress
//! line per run. With `--resume`, reports already in `runs/` that match their run are
//! taken instead of running it (see `resume`).

mod caza22;
mod figure;
mod matrix;
mod median;
mod metric;
mod plot;
mod prophet24;
mod resume;
mod samevictim24;
mod samezone24;
mod spread;
mod values;
mod zone_drain;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::builder::PossibleValuesParser;
use clap::Args;
use zkv_engine::options::ExecMode;

use super::error::{CliError, CliResult};
use super::Out;
use figure::Summary;
use matrix::{Modes, Results, Step};

/// The experiments of DESIGN.md section 10, in its order (each run with the bench preset
/// of its name), then zkv's own.
const EXPERIMENTS: &[&str] = &[
    "caza22",
    "samezone24",
    "prophet24",
    "samevictim24",
    "zone-drain",
];

const REPRO_HELP: &str = "\
Experiments:
  caza22      CAZA, HotStorage'22: schemes baseline and caza22, cleaning thresholds 5..25%
              (20 runs: Figures 3-6 from deterministic runs, Table 1 from threaded ones)
  samezone24  Same-Zone Compaction, MSST'24: schemes baseline, a-liza, caza, a-caza on
              fillrandom and YCSB zipfian/latest/uniform (32 runs: Figures 8-12, 15-17)
  prophet24   Prophet, MSST'24: LIZA, prophet-gc-no, prophet-gc, prophet at cleaning stop
              30-45%, full compaction, the five pickers, the accuracy run, FC-ticks
              against real time, read-write mixes, mixgraph (65 runs: Tables I, II,
              Figures 5, 7-12)
  samevictim24 Same-Victim GC: schemes baseline, baza, baza+ on BlobDB (the paper's threads)
              over fillrandom, YCSB WL(A), WL(B), WL(C) and small-zone WL(A) (30 runs:
              Figures 6-10)
  zone-drain  zkv's own: the zone-drain picker against min-overlap (RocksDB's default) and
              the MSST'24 schemes, on samezone24's preset and four workloads (56 runs)

Each run is zkv bench --preset EXPERIMENT [--quick] (zone-drain: --preset samezone24) with
the run's scheme and flags, on --device mem. Bench flags after -- apply to every run (e.g.
-- --num 200000 for a shorter run; --sim-cost only to the deterministic runs); the flags
the matrix sets (scheme, cleaning thresholds, mode, workload) cannot be given there.

With --resume, a run whose report in DIR/runs/ has no error and the same config as the
run would have is not run again, and runs of the modes not in --modes are taken from there
when they match (never run), so that two invocations make one report directory.

With --plan, nothing runs: one command per run of the matrix is printed, each running that
run alone (--run ID) and writing DIR/runs/ID.json, for GNU parallel, a Slurm array or any
job runner; --resume then joins their reports into the tables and figures.

Examples:
  zkv repro caza22 --quick --out repro-caza22 --modes deterministic
  zkv repro caza22 --quick --out repro-caza22 --modes threaded --resume
  zkv repro samezone24 --quick --out sz --plan | parallel -j 2
  zkv repro samezone24 --quick --out sz --resume";

#[derive(Debug, Args)]
#[command(after_help = REPRO_HELP)]
pub struct ReproArgs {
    /// The paper's experiment
    #[arg(value_name = "EXPERIMENT", value_parser = PossibleValuesParser::new(EXPERIMENTS))]
    experiment: String,

    /// Run the preset at a further 1/8 of its sizes (zkv bench --quick)
    #[arg(long)]
    quick: bool,

    /// Directory of the results, created if missing [default: repro-EXPERIMENT, with
    /// -quick for --quick]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Execution modes to run, comma separated: deterministic (bytes), threaded
    /// (throughput and latency)
    #[arg(long, value_name = "LIST", default_value = "deterministic,threaded",
          value_parser = matrix::parse_modes)]
    modes: Modes,

    /// Reuse the reports in DIR/runs/ whose config matches their run (no error), run the
    /// rest; the modes not in --modes are reused only
    #[arg(long)]
    resume: bool,

    /// Run every threaded run N times (a deterministic run gives the same bytes every
    /// time): the tables take each threaded figure's median, and a table shows the spread
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,

    /// Print one self-contained command per run of --modes (each one `--run ID`) and exit
    #[arg(long, conflicts_with_all = ["resume", "run"])]
    plan: bool,

    /// Run only the run ID of the matrix (as --plan prints it), writing DIR/runs/ID.json and
    /// no tables
    #[arg(long, value_name = "ID", conflicts_with = "resume")]
    run: Option<String>,

    /// Print a progress line of the run on stderr every SECONDS (0.2 is fine) instead of
    /// the progress bar; 0: none [default: the bar on a terminal, else a line every 10 s]
    #[arg(long, value_name = "SECONDS", value_parser = parse_progress_interval,
          allow_negative_numbers = true)]
    progress_interval: Option<String>,

    /// Bench flags for every run, after `--`
    #[arg(last = true, value_name = "BENCH_FLAGS", allow_hyphen_values = true)]
    bench_flags: Vec<OsString>,
}

/// One paper's experiment: its runs and the figures made of their reports.
pub(crate) trait Experiment {
    /// The name, the preset's unless [`Experiment::preset`] says otherwise.
    fn name(&self) -> &'static str;
    /// The bench preset every run starts from.
    fn preset(&self) -> &'static str {
        self.name()
    }
    fn paper(&self) -> &'static str;
    /// Every run of the matrix, in the order they run.
    fn specs(&self, modes: &[ExecMode]) -> Vec<matrix::Spec>;
    /// The figures and tables, from the runs' reports.
    fn figures(&self, results: &Results) -> CliResult<Vec<figure::Figure>>;
    /// The paper's headline numbers next to the runs'.
    fn headlines(&self, results: &Results) -> Vec<figure::Headline>;
}

pub fn run(a: ReproArgs) -> CliResult {
    let experiment = experiment(&a.experiment, a.quick)?;
    matrix::check_bench_flags(&a.bench_flags)?;
    check_repeat(&a)?;
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| default_dir(experiment.name(), a.quick));
    if a.plan {
        return print_plan(experiment.as_ref(), &a, &dir);
    }
    if let Some(id) = &a.run {
        return run_alone(experiment.as_ref(), &a, &dir, id);
    }
    // Before the output directory is created: that empties its summary.json.
    let steps = steps(experiment.as_ref(), &a, &dir)?;
    let files = figure::OutputDir::create(&dir)?;
    let start = Instant::now();
    let mut out = Out::new();
    let results = matrix::run_all(steps, &files, &mut out)?;
    let summary = Summary {
        experiment: experiment.name(),
        paper: experiment.paper(),
        quick: a.quick,
        modes: a.modes.0.clone(),
        resume: a.resume,
        bench_flags: a
            .bench_flags
            .iter()
            .map(|w| w.to_string_lossy().into())
            .collect(),
        repeat: a.repeat,
        seconds: start.elapsed().as_secs_f64(),
        headlines: experiment.headlines(&results),
        figures: figures(experiment.as_ref(), &results)?,
    };
    files.write(&summary, &results)?;
    out.line("")?;
    summary.headline_table().print(&mut out)?;
    out.line("")?;
    out.line(format!(
        "Tables and figures: {} ({} runs{} in {:.1} s)",
        dir.join("README.md").display(),
        results.len(),
        figure::reused_note(&results),
        summary.seconds
    ))?;
    out.flush()?;
    results.first_failure().map_or(Ok(()), Err)
}

/// `--repeat` repeats threaded runs: without any to run (`--modes deterministic`), or to
/// reuse (`--resume`) or run alone (`--run`), it would change nothing.
fn check_repeat(a: &ReproArgs) -> CliResult {
    let threaded = a.modes.0.contains(&ExecMode::Threaded);
    if a.repeat > 1 && !threaded && !a.resume && a.run.is_none() {
        return Err(CliError::invalid(format!(
            "--repeat {}: repeats the threaded runs, and --modes {} runs none",
            a.repeat,
            a.modes
                .0
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    Ok(())
}

/// The experiment's figures, then the spread of the repeated threaded runs if any.
fn figures(experiment: &dyn Experiment, results: &Results) -> CliResult<Vec<figure::Figure>> {
    let mut figures = experiment.figures(results)?;
    if results.repeated() {
        figures.push(spread::spread(results));
    }
    Ok(figures)
}

/// `--plan`: one command per run of the listed modes, every run checked first.
fn print_plan(experiment: &dyn Experiment, a: &ReproArgs, dir: &Path) -> CliResult {
    let common = common_words(experiment.preset(), a);
    let specs = matrix::repeated(experiment.specs(&a.modes.0), a.repeat);
    let steps = matrix::fresh(specs, &common)?;
    let exe = std::env::current_exe().unwrap_or_else(|_| "zkv".into());
    // Absolute, so that a job runner may start the commands in any directory.
    let dir = std::path::absolute(dir)
        .map_err(|e| CliError::invalid(format!("--out {}: {e}", dir.display())))?;
    let mut out = Out::new();
    for step in &steps {
        let mut words = vec![
            word(exe.as_os_str())?,
            "repro".into(),
            experiment.name().into(),
        ];
        if a.quick {
            words.push("--quick".into());
        }
        if a.repeat > 1 {
            words.extend(["--repeat".into(), a.repeat.to_string()]);
        }
        if let Some(every) = &a.progress_interval {
            words.extend(["--progress-interval".into(), every.clone()]);
        }
        words.extend(["--out".into(), word(dir.as_os_str())?]);
        words.extend(["--run".into(), step.spec.id()]);
        if !a.bench_flags.is_empty() {
            words.push("--".into());
            for flag in &a.bench_flags {
                words.push(word(flag)?);
            }
        }
        out.line(shell_line(&words)?)?;
    }
    out.flush()
}

/// A word of a `--plan` command line; one that is not UTF-8 is refused rather than changed.
fn word(w: &std::ffi::OsStr) -> CliResult<String> {
    w.to_str().map(str::to_string).ok_or_else(|| {
        CliError::invalid(format!(
            "--plan: {} is not UTF-8 and cannot be printed as a command",
            w.to_string_lossy()
        ))
    })
}

/// `words` as one shell command line, each quoted where the shell would split or expand it.
fn shell_line(words: &[String]) -> CliResult<String> {
    let quoted: Result<Vec<_>, _> = words.iter().map(|w| shlex::try_quote(w)).collect();
    quoted
        .map(|q| q.join(" "))
        .map_err(|e| CliError::invalid(format!("--plan: a word cannot be quoted: {e}")))
}

/// `--run ID`: that run alone, its report written into `DIR/runs/`; no tables (the other
/// runs may be running at the same time, into the same directory).
fn run_alone(experiment: &dyn Experiment, a: &ReproArgs, dir: &Path, id: &str) -> CliResult {
    let specs = matrix::repeated(experiment.specs(&matrix::ALL_MODES), a.repeat);
    let Some(spec) = specs.iter().find(|s| s.id() == id).cloned() else {
        let known: Vec<String> = specs.iter().map(matrix::Spec::id).collect();
        return Err(CliError::invalid(format!(
            "--run {id}: no such run in {} (runs: {})",
            experiment.name(),
            known.join(", ")
        )));
    };
    let common = common_words(experiment.preset(), a);
    let run = matrix::prepare_one(&spec, &common)?;
    figure::create_runs_dir(dir)?;
    let mut out = Out::new();
    let (_, failed) = matrix::run_one(spec, run, None, dir, &mut out, "1/1")?;
    out.flush()?;
    failed.map_or(Ok(()), Err)
}

/// The runs to do, every one checked: the listed modes' runs, or with `--resume` the
/// runs of every mode that are to be run or reused.
fn steps(experiment: &dyn Experiment, a: &ReproArgs, dir: &Path) -> CliResult<Vec<Step>> {
    let common = common_words(experiment.preset(), a);
    if a.resume {
        return resume::steps(experiment, &a.modes.0, a.repeat, &common, dir);
    }
    matrix::fresh(
        matrix::repeated(experiment.specs(&a.modes.0), a.repeat),
        &common,
    )
}

/// The experiment called `name`; the ones zkv cannot run yet are refused with what they
/// need.
fn experiment(name: &str, quick: bool) -> CliResult<Box<dyn Experiment>> {
    Ok(match name {
        "caza22" => Box::new(caza22::Caza22),
        "samezone24" => Box::new(samezone24::SameZone24),
        "zone-drain" => Box::new(zone_drain::ZoneDrain),
        "prophet24" => Box::new(prophet24::Prophet24),
        "samevictim24" => Box::new(samevictim24::SameVictim24 { quick }),
        _ => {
            return Err(CliError::invalid(format!(
                "zkv repro {name}: unknown experiment (known: {})",
                EXPERIMENTS.join(", ")
            )))
        }
    })
}

/// Flags of every run: the preset, `--quick`, `--progress-interval`, then the flags after
/// `--`.
fn common_words(preset: &str, a: &ReproArgs) -> Vec<OsString> {
    let mut words: Vec<OsString> = vec![format!("--preset={preset}").into()];
    if a.quick {
        words.push("--quick".into());
    }
    if let Some(every) = &a.progress_interval {
        words.push(format!("--progress-interval={every}").into());
    }
    words.extend(a.bench_flags.iter().cloned());
    words
}

/// `--progress-interval`, checked as `zkv bench` checks it and kept as written for the
/// runs' flags.
fn parse_progress_interval(s: &str) -> Result<String, String> {
    crate::cli::bench::parse_progress_interval(s).map(|_| s.to_string())
}

fn default_dir(name: &str, quick: bool) -> PathBuf {
    let suffix = if quick { "-quick" } else { "" };
    Path::new(&format!("repro-{name}{suffix}")).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `zkv repro`'s flags alone.
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ReproArgs,
    }

    #[test]
    fn every_experiment_has_its_matrix() {
        let e = experiment("nope", false).err().unwrap().to_string();
        assert!(
            e.ends_with("caza22, samezone24, prophet24, samevictim24, zone-drain)"),
            "{e}"
        );
        let prophet = experiment("prophet24", false).ok().map(|e| e.name());
        assert_eq!(prophet, Some("prophet24"));
        // Every run has a distinct name, and only the deterministic mode runs the
        // accuracy run and the cleaning and picker variants.
        let specs = prophet24::Prophet24.specs(&[ExecMode::Deterministic, ExecMode::Threaded]);
        let ids: std::collections::BTreeSet<String> = specs.iter().map(|s| s.id()).collect();
        assert_eq!((specs.len(), ids.len()), (65, 65));
        let threaded = prophet24::Prophet24.specs(&[ExecMode::Threaded]);
        assert_eq!(threaded.len(), 24);
        let caza = experiment("caza22", false).ok().map(|e| e.name());
        assert_eq!(caza, Some("caza22"));
        let victim = experiment("samevictim24", true).ok().map(|e| e.name());
        assert_eq!(victim, Some("samevictim24"));
    }

    #[test]
    fn every_run_gets_the_preset_and_the_extra_flags() {
        let a = Cli::parse_from(["repro", "caza22", "--quick", "--", "--num", "10"]).args;
        let words = common_words("caza22", &a);
        assert_eq!(words, ["--preset=caza22", "--quick", "--num", "10"]);
        let a = Cli::parse_from(["repro", "caza22", "--progress-interval", "0.5"]).args;
        let words = common_words("caza22", &a);
        assert_eq!(words, ["--preset=caza22", "--progress-interval=0.5"]);
        assert_eq!(default_dir("caza22", true), Path::new("repro-caza22-quick"));
    }
}
