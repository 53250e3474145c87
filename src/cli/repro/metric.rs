//! One figure of a run's report as the experiments' tables show it: its name, the mode
//! of the runs it is read from, where in their reports, and its unit's size.

use serde_json::Value;
use zkv_engine::options::ExecMode;

use super::matrix::Results;
use super::values::{last_phase, num, ratio};

/// One metric of a table: its name, the mode of the runs it is read from, how and where in
/// their reports, and its unit's size.
pub struct Metric {
    pub name: &'static str,
    pub mode: ExecMode,
    source: Source,
    path: &'static [&'static str],
    scale: f64,
    pub digits: usize,
}

/// How a metric is read from a run's report.
#[derive(Clone, Copy)]
enum Source {
    /// The number at the metric's path.
    Report,
    /// The count at the metric's path per second of the run's wall time.
    PerSecond,
    /// The number at the metric's path in the measured phase: fillrandom's puts, YCSB's
    /// run after its load (the report's last phase).
    LastPhase,
}

impl Metric {
    /// The number at `path` in a deterministic run's report, divided by `scale`.
    pub const fn deterministic(
        name: &'static str,
        path: &'static [&'static str],
        scale: f64,
        digits: usize,
    ) -> Metric {
        let (mode, source) = (ExecMode::Deterministic, Source::Report);
        Metric {
            name,
            mode,
            source,
            path,
            scale,
            digits,
        }
    }

    /// The number at `path` in a threaded run's report, divided by `scale`.
    pub const fn threaded(
        name: &'static str,
        path: &'static [&'static str],
        scale: f64,
        digits: usize,
    ) -> Metric {
        let mode = ExecMode::Threaded;
        Metric {
            mode,
            ..Metric::deterministic(name, path, scale, digits)
        }
    }

    pub const fn per_second(self) -> Metric {
        let source = Source::PerSecond;
        Metric { source, ..self }
    }

    pub const fn last_phase(self) -> Metric {
        let source = Source::LastPhase;
        Metric { source, ..self }
    }

    /// The metric of one report.
    pub fn value(&self, report: &Value) -> Option<f64> {
        let value = match self.source {
            Source::Report => num(report, self.path),
            Source::PerSecond => ratio(num(report, self.path), num(report, &["user", "seconds"])),
            Source::LastPhase => last_phase(report).and_then(|p| num(p, self.path)),
        };
        value.map(|v| v / self.scale)
    }

    /// The metric of the run of `scheme` on `variant`, in the metric's mode.
    pub fn of(&self, r: &Results, scheme: &str, variant: &str) -> Option<f64> {
        self.value(r.report(self.mode, scheme, variant)?)
    }
}
