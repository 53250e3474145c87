//! The runs of an experiment: what each one is ([`Spec`]), checking them all before the
//! first starts, running them one after the other, and their reports ([`Results`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::time::Instant;

use serde_json::Value;
use zkv_engine::options::ExecMode;

use super::figure::{run_file, write_run, OutputDir};
use super::median::median_report;
use crate::cli::compare::schemes::parse_entry;
use crate::cli::compare::{self, Entry, Run};
use crate::cli::error::{CliError, CliResult};
use crate::cli::Out;

/// Every mode, in the order a matrix runs them.
pub const ALL_MODES: [ExecMode; 2] = [ExecMode::Deterministic, ExecMode::Threaded];

/// `--modes`: the modes to run, deterministic first, each once.
#[derive(Clone, Debug)]
pub struct Modes(pub Vec<ExecMode>);

pub fn parse_modes(s: &str) -> Result<Modes, String> {
    let mut modes = Vec::new();
    for word in s.split(',').map(str::trim) {
        let mode = ExecMode::from_name(word)
            .ok_or_else(|| format!("unknown mode {word:?} (known: deterministic, threaded)"))?;
        if modes.contains(&mode) {
            return Err(format!("{word} is listed twice"));
        }
        modes.push(mode);
    }
    modes.sort_by_key(|m| *m != ExecMode::Deterministic);
    Ok(Modes(modes))
}

/// One run of the matrix.
#[derive(Clone, Debug)]
pub struct Spec {
    pub mode: ExecMode,
    pub scheme: &'static str,
    /// What varies besides the mode and the scheme: a cleaning threshold (`gc15`), a
    /// workload (`zipfian`).
    pub variant: String,
    /// The run's own bench flags (names without dashes), stronger than any other.
    pub flags: Vec<(&'static str, String)>,
    /// Which repetition of the run this is, from 1 (`zkv repro --repeat`).
    pub rep: u32,
}

impl Spec {
    /// The run's name: its label, and its report's file name in `runs/`; a repetition
    /// after the first ends in `-rN`.
    pub fn id(&self) -> String {
        let rep = if self.rep > 1 {
            format!("-r{}", self.rep)
        } else {
            String::new()
        };
        format!("{}-{}-{}{rep}", self.mode.name(), self.scheme, self.variant)
    }

    /// Whether `other` is a repetition of this run (or this run itself).
    pub fn same_run(&self, other: &Spec) -> bool {
        (self.mode, self.scheme, &self.variant) == (other.mode, other.scheme, &other.variant)
    }
}

/// `specs` with every threaded run done `times` times: the repetitions come after the
/// first round, round by round, so that a slow spell of the machine spreads over the
/// schemes. A deterministic run gives the same bytes every time, so it runs once.
pub fn repeated(specs: Vec<Spec>, times: u32) -> Vec<Spec> {
    let threaded: Vec<Spec> = specs
        .iter()
        .filter(|s| s.mode == ExecMode::Threaded)
        .cloned()
        .collect();
    let mut all = specs;
    for rep in 2..=times {
        all.extend(threaded.iter().map(|s| Spec { rep, ..s.clone() }));
    }
    all
}

/// What varies in a matrix besides the mode and the scheme: a name and the run's own flags.
pub type Variant = (String, Vec<(&'static str, String)>);

/// Every run of a matrix, in the order they run: by mode, then variant, then scheme.
pub fn grid(modes: &[ExecMode], variants: &[Variant], schemes: &[&'static str]) -> Vec<Spec> {
    let mut specs = Vec::new();
    for &mode in modes {
        for (variant, flags) in variants {
            specs.extend(schemes.iter().map(|&scheme| Spec {
                mode,
                scheme,
                variant: variant.clone(),
                flags: flags.clone(),
                rep: 1,
            }));
        }
    }
    specs
}

/// Bench flags the matrix sets itself, so they cannot be given after `--`.
const MATRIX_FLAGS: &[&str] = &[
    "placement",
    "picker",
    "gc-mode",
    "gc-start",
    "gc-stop",
    "mode",
    "workload",
    "request-distribution",
    "ycsb-property",
    "blob-placement",
    "blob-gc-cutoff",
    "preset",
    "quick",
    "json",
    "device",
];

/// Refuses the flags after `--` that the matrix sets.
pub fn check_bench_flags(words: &[OsString]) -> CliResult {
    for word in words {
        let word = word.to_string_lossy();
        let Some(name) = word.strip_prefix("--") else {
            continue;
        };
        let name = name.split_once('=').map_or(name, |(n, _)| n);
        if MATRIX_FLAGS.contains(&name) {
            return Err(CliError::invalid(format!(
                "--{name} after --: zkv repro sets it for each run (flags it sets: {})",
                MATRIX_FLAGS.join(", ")
            )));
        }
    }
    Ok(())
}

/// Parses and checks one run, as `zkv compare` checks a scheme: the scheme's flags, then
/// `common` (preset, `--quick`, flags after `--`), then the run's own flags.
pub fn prepare_one(spec: &Spec, common: &[OsString]) -> CliResult<Run> {
    let common = for_mode(spec.mode, common);
    let (run, _note) = compare::prepare(&entry(spec)?, &common)?;
    Ok(run)
}

/// The bench flags after `--` that apply to a run of `mode`: `--sim-cost` only to the
/// deterministic runs (the virtual clock's costs; threaded runs take the machine's time),
/// so that a matrix of both modes can be run under another cost model.
fn for_mode(mode: ExecMode, common: &[OsString]) -> Vec<OsString> {
    if mode == ExecMode::Deterministic {
        return common.to_vec();
    }
    let mut kept = Vec::new();
    let mut words = common.iter();
    while let Some(word) = words.next() {
        let text = word.to_string_lossy();
        if text == "--sim-cost" {
            words.next();
        } else if !text.starts_with("--sim-cost=") {
            kept.push(word.clone());
        }
    }
    kept
}

fn entry(spec: &Spec) -> CliResult<Entry> {
    let mut entry = parse_entry(spec.scheme).map_err(|e| CliError::invalid(e.to_string()))?;
    entry.label = spec.id();
    entry.overrides = spec
        .flags
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .chain([("mode".to_string(), spec.mode.name().to_string())])
        .collect();
    Ok(entry)
}

/// One run of the matrix as it will be done.
pub struct Step {
    pub spec: Spec,
    pub work: Work,
}

/// What a step does.
pub enum Work {
    /// Run it; `stale` says why the report stored for it could not be reused.
    Run {
        run: Box<Run>,
        stale: Option<String>,
    },
    /// Take the report stored in `runs/` (`zkv repro --resume`); `seconds` as the
    /// previous summary lists them.
    Reuse { report: Value, seconds: Option<f64> },
}

impl Step {
    /// A run to be run; `stale` as in [`Work::Run`].
    pub fn run(spec: Spec, run: Run, stale: Option<String>) -> Step {
        let run = Box::new(run);
        Step {
            spec,
            work: Work::Run { run, stale },
        }
    }
}

/// Every run of `specs` checked (see [`prepare_one`]), to be run (no `--resume`).
pub fn fresh(specs: Vec<Spec>, common: &[OsString]) -> CliResult<Vec<Step>> {
    specs
        .into_iter()
        .map(|spec| {
            let run = prepare_one(&spec, common)?;
            Ok(Step::run(spec, run, None))
        })
        .collect()
}

/// One finished or reused run.
pub struct Outcome {
    pub spec: Spec,
    /// Its report; a failed run has one too, with `error`.
    pub report: Value,
    pub error: Option<String>,
    /// None for a reused run the previous summary does not list.
    pub seconds: Option<f64>,
    /// Taken from `runs/` rather than run.
    pub reused: bool,
}

impl Outcome {
    /// The report's file, relative to the output directory.
    pub fn file(&self) -> String {
        run_file(&self.spec.id())
    }
}

/// Every finished run, in the order they ran.
pub struct Results {
    outcomes: Vec<Outcome>,
    /// Per run done more than once (its first repetition's index in `outcomes`), the
    /// median of its successful repetitions' reports.
    medians: HashMap<usize, Value>,
    first_failure: Option<CliError>,
}

impl Results {
    pub fn new(outcomes: Vec<Outcome>, first_failure: Option<CliError>) -> Results {
        let medians = medians(&outcomes);
        Results {
            outcomes,
            medians,
            first_failure,
        }
    }

    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    pub fn len(&self) -> usize {
        self.outcomes.len()
    }

    /// Runs taken from `runs/` rather than run.
    pub fn reused(&self) -> usize {
        self.outcomes.iter().filter(|o| o.reused).count()
    }

    /// Whether any run of `mode` ran or was reused.
    pub fn ran(&self, mode: ExecMode) -> bool {
        self.outcomes.iter().any(|o| o.spec.mode == mode)
    }

    /// The report of a run that succeeded; a failed run's partial figures would not be
    /// comparable to the others'. A run repeated (`--repeat`) gives the median of its
    /// successful repetitions ([`median_report`]).
    pub fn report(&self, mode: ExecMode, scheme: &str, variant: &str) -> Option<&Value> {
        let first = self.outcomes.iter().position(|o| {
            o.spec.mode == mode && o.spec.scheme == scheme && o.spec.variant == variant
        })?;
        if let Some(median) = self.medians.get(&first) {
            return Some(median);
        }
        self.outcomes
            .get(first)
            .filter(|o| o.error.is_none())
            .map(|o| &o.report)
    }

    /// The successful repetitions of the run of `outcome`, itself included.
    pub fn repetitions<'a>(&'a self, outcome: &'a Outcome) -> impl Iterator<Item = &'a Outcome> {
        self.outcomes
            .iter()
            .filter(|o| o.spec.same_run(&outcome.spec) && o.error.is_none())
    }

    /// Whether any run was done more than once.
    pub fn repeated(&self) -> bool {
        self.outcomes.iter().any(|o| o.spec.rep > 1)
    }

    /// The first failed run's error, which fails the command once everything is written.
    pub fn first_failure(self) -> Option<CliError> {
        self.first_failure
    }
}

/// The median report of every run with more than one successful repetition, by the
/// index of its first repetition.
fn medians(outcomes: &[Outcome]) -> HashMap<usize, Value> {
    let mut medians = HashMap::new();
    for (i, o) in outcomes.iter().enumerate() {
        let earlier = outcomes.iter().take(i).any(|e| e.spec.same_run(&o.spec));
        if earlier {
            continue;
        }
        let reports: Vec<&Value> = outcomes
            .iter()
            .filter(|r| r.spec.same_run(&o.spec) && r.error.is_none())
            .map(|r| &r.report)
            .collect();
        if reports.len() > 1 {
            medians.insert(i, median_report(&reports));
        }
    }
    medians
}

/// Does every step in order, writing each run's report into `runs/` as soon as it ends.
/// A failed run (out of space, say) keeps its report and the next runs still run.
pub fn run_all(steps: Vec<Step>, files: &OutputDir, out: &mut Out) -> CliResult<Results> {
    let count = steps.len();
    let mut outcomes = Vec::new();
    let mut first_failure = None;
    for (i, Step { spec, work }) in steps.into_iter().enumerate() {
        let at = format!("{}/{count}", i + 1);
        let outcome = match work {
            Work::Run { run, stale } => {
                let (outcome, failed) = run_one(spec, *run, stale, files.dir(), out, &at)?;
                first_failure = first_failure.or(failed);
                outcome
            }
            Work::Reuse { report, seconds } => reuse(spec, report, seconds, out, &at)?,
        };
        outcomes.push(outcome);
    }
    Ok(Results::new(outcomes, first_failure))
}

/// Runs one run and writes its report; returns it and the run's failure. `stale` (why
/// the stored report was not reused) goes on both the heading and the progress line, so
/// that it shows before a long run as well as in the list after it.
pub fn run_one(
    spec: Spec,
    run: Run,
    stale: Option<String>,
    dir: &std::path::Path,
    out: &mut Out,
    at: &str,
) -> CliResult<(Outcome, Option<CliError>)> {
    let id = spec.id();
    let rerun = stale.map_or(String::new(), |why| {
        format!("rerun, {}: {why}", run_file(&id))
    });
    let heading = if rerun.is_empty() { "" } else { ": " };
    out.line(format!("== {id} ({at}){heading}{rerun}"))?;
    out.flush()?;
    let start = Instant::now();
    let (report, failed) = compare::execute(run, out, &format!("repro: run {at} {id}"))?;
    let seconds = start.elapsed().as_secs_f64();
    write_run(dir, &id, &report)?;
    let error = failed.as_ref().map(ToString::to_string);
    progress(at, &id, &rerun, seconds, error.as_deref());
    let outcome = Outcome {
        spec,
        report,
        error,
        seconds: Some(seconds),
        reused: false,
    };
    Ok((outcome, failed))
}

/// A stored report standing in for its run; the file stays as it is.
fn reuse(
    spec: Spec,
    report: Value,
    seconds: Option<f64>,
    out: &mut Out,
    at: &str,
) -> CliResult<Outcome> {
    let id = spec.id();
    let file = run_file(&id);
    out.line(format!("== {id} ({at}): reused {file}"))?;
    stderr_line(&format!("repro: run {at} {id}: reused {file}"));
    Ok(Outcome {
        spec,
        report,
        error: None,
        seconds,
        reused: true,
    })
}

/// One line on stderr per finished run, after why it was run again if it was.
fn progress(at: &str, id: &str, rerun: &str, seconds: f64, error: Option<&str>) {
    let result = error.map_or("ok".to_string(), |e| format!("FAILED: {e}"));
    let rerun = if rerun.is_empty() {
        String::new()
    } else {
        format!("{rerun}; ")
    };
    stderr_line(&format!(
        "repro: run {at} {id}: {rerun}{seconds:.1} s, {result}"
    ));
}

/// A progress line on stderr.
pub fn stderr_line(line: &str) {
    // Nothing sensible is left to do if stderr itself is gone.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_costs_apply_to_deterministic_runs_only() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        let common = words(&["--num", "9", "--sim-cost", "job_ns=1", "--sim-cost=x=2"]);
        assert_eq!(for_mode(ExecMode::Deterministic, &common), common);
        assert_eq!(
            for_mode(ExecMode::Threaded, &common),
            words(&["--num", "9"])
        );
    }

    #[test]
    fn modes_run_deterministic_first_and_once() {
        let m = parse_modes("threaded,deterministic").unwrap();
        assert_eq!(m.0, [ExecMode::Deterministic, ExecMode::Threaded]);
        assert!(parse_modes("threaded,threaded")
            .unwrap_err()
            .contains("twice"));
        assert!(parse_modes("fast")
            .unwrap_err()
            .contains("known: deterministic"));
    }

    #[test]
    fn a_grid_runs_by_mode_then_variant_then_scheme() {
        let variants: [Variant; 2] = [
            ("gc5".into(), vec![("gc-start", "5".into())]),
            ("gc10".into(), Vec::new()),
        ];
        let specs = grid(&ALL_MODES, &variants, &["a", "b"]);
        let ids: Vec<String> = specs.iter().map(Spec::id).collect();
        assert_eq!(ids.len(), 8);
        assert_eq!(
            ids[..3],
            [
                "deterministic-a-gc5",
                "deterministic-b-gc5",
                "deterministic-a-gc10"
            ]
        );
        assert_eq!(ids[7], "threaded-b-gc10");
        assert_eq!(specs[1].flags, [("gc-start", "5".to_string())]);
        assert!(specs[2].flags.is_empty());
    }

    #[test]
    fn only_threaded_runs_repeat_and_round_by_round() {
        let variants: [Variant; 1] = [("gc5".into(), Vec::new())];
        let specs = repeated(grid(&ALL_MODES, &variants, &["a", "b"]), 3);
        let ids: Vec<String> = specs.iter().map(Spec::id).collect();
        assert_eq!(
            ids,
            [
                "deterministic-a-gc5",
                "deterministic-b-gc5",
                "threaded-a-gc5",
                "threaded-b-gc5",
                "threaded-a-gc5-r2",
                "threaded-b-gc5-r2",
                "threaded-a-gc5-r3",
                "threaded-b-gc5-r3",
            ]
        );
        assert!(specs[6].same_run(&specs[2]) && !specs[6].same_run(&specs[3]));
    }

    #[test]
    fn matrix_flags_are_refused_after_the_separator() {
        let ok: Vec<OsString> = vec!["--num".into(), "5".into(), "--zones=30".into()];
        assert!(check_bench_flags(&ok).is_ok());
        let bad: Vec<OsString> = vec!["--gc-start=5".into()];
        let e = check_bench_flags(&bad).unwrap_err().to_string();
        assert!(e.starts_with("--gc-start after --"), "{e}");
    }

    #[test]
    fn a_spec_becomes_an_entry_with_its_flags_and_mode_last() {
        let spec = Spec {
            mode: ExecMode::Threaded,
            scheme: "caza22",
            variant: "gc5".into(),
            flags: vec![("gc-start", "5".into())],
            rep: 1,
        };
        let e = entry(&spec).unwrap();
        assert_eq!(e.label, "threaded-caza22-gc5");
        assert_eq!(
            e.override_args(),
            vec![OsString::from("--gc-start=5"), "--mode=threaded".into()]
        );
        assert_eq!(e.scheme.placement, "caza");
    }
}
