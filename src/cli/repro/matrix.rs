//! The runs of an experiment: what each one is ([`Spec`]), checking them all before the
//! first starts, running them one after the other, and their reports ([`Results`]).

use std::ffi::OsString;
use std::io::Write;
use std::time::Instant;

use engine::options::ExecMode;
use serde_json::Value;

use super::figure::OutputDir;
use crate::cli::compare::schemes::parse_entry;
use crate::cli::compare::{self, Entry, Run};
use crate::cli::error::{CliError, CliResult};
use crate::cli::Out;

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
}

impl Spec {
    /// The run's name: its label, and its report's file name in `runs/`.
    pub fn id(&self) -> String {
        format!("{}-{}-{}", self.mode.name(), self.scheme, self.variant)
    }
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

/// Parses and checks every run, as `zkv compare` checks its schemes: the scheme's flags,
/// then `common` (preset, `--quick`, flags after `--`), then the run's own flags.
pub fn prepare(specs: &[Spec], common: &[OsString]) -> CliResult<Vec<(Spec, Run)>> {
    specs
        .iter()
        .map(|spec| {
            let (run, _note) = compare::prepare(&entry(spec)?, common)?;
            Ok((spec.clone(), run))
        })
        .collect()
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

/// One finished run.
pub struct Outcome {
    pub spec: Spec,
    /// Its report; a failed run has one too, with `error`.
    pub report: Value,
    pub error: Option<String>,
    pub seconds: f64,
    /// The report's file, relative to the output directory.
    pub file: String,
}

/// Every finished run, in the order they ran.
pub struct Results {
    outcomes: Vec<Outcome>,
    first_failure: Option<CliError>,
}

impl Results {
    pub fn new(outcomes: Vec<Outcome>, first_failure: Option<CliError>) -> Results {
        Results {
            outcomes,
            first_failure,
        }
    }

    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    pub fn len(&self) -> usize {
        self.outcomes.len()
    }

    /// Whether any run of `mode` was part of the matrix.
    pub fn ran(&self, mode: ExecMode) -> bool {
        self.outcomes.iter().any(|o| o.spec.mode == mode)
    }

    /// The report of a run that succeeded; a failed run's partial figures would not be
    /// comparable to the others'.
    pub fn report(&self, mode: ExecMode, scheme: &str, variant: &str) -> Option<&Value> {
        self.outcomes
            .iter()
            .find(|o| o.spec.mode == mode && o.spec.scheme == scheme && o.spec.variant == variant)
            .filter(|o| o.error.is_none())
            .map(|o| &o.report)
    }

    /// The first failed run's error, which fails the command once everything is written.
    pub fn first_failure(self) -> Option<CliError> {
        self.first_failure
    }
}

/// Runs every run in order, writing each report into `runs/` as soon as it ends. A failed
/// run (out of space, say) keeps its report and the next runs still run.
pub fn run_all(runs: Vec<(Spec, Run)>, files: &OutputDir, out: &mut Out) -> CliResult<Results> {
    let count = runs.len();
    let mut outcomes = Vec::new();
    let mut first_failure = None;
    for (i, (spec, run)) in runs.into_iter().enumerate() {
        let id = spec.id();
        out.line(format!("== {id} ({}/{count})", i + 1))?;
        out.flush()?;
        let start = Instant::now();
        let (report, failed) = compare::execute(run, out)?;
        let seconds = start.elapsed().as_secs_f64();
        let file = files.write_run(&id, &report)?;
        let error = failed.as_ref().map(ToString::to_string);
        progress(i + 1, count, &id, seconds, error.as_deref());
        first_failure = first_failure.or(failed);
        outcomes.push(Outcome {
            spec,
            report,
            error,
            seconds,
            file,
        });
    }
    Ok(Results::new(outcomes, first_failure))
}

/// One line on stderr per finished run.
fn progress(done: usize, count: usize, id: &str, seconds: f64, error: Option<&str>) {
    let result = error.map_or("ok".to_string(), |e| format!("FAILED: {e}"));
    // Nothing sensible is left to do if stderr itself is gone.
    let _ = writeln!(
        std::io::stderr().lock(),
        "repro: run {done}/{count} {id}: {seconds:.1} s, {result}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

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
