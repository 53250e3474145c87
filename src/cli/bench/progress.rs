//! A run's progress on stderr: indicatif's bar on a terminal; elsewhere (a CI log, nohup)
//! a plain line every `--progress-interval` seconds, as db_bench's
//! `--stats_interval_seconds` prints.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often progress lines are printed when stderr is not a terminal and
/// `--progress-interval` is not given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// Operations between two looks at the clock (and updates of the bar): often enough for a
/// line to be on time even at a few hundred operations per second, rarely enough to cost
/// nothing next to a put.
pub const STEP: u64 = 64;

/// What a run shows of its progress.
pub struct Progress {
    show: Show,
    /// The phase running: its name, its operations, when it started.
    phase: String,
    total: u64,
    start: Instant,
}

enum Show {
    Nothing,
    Bar(ProgressBar),
    Lines(Lines),
}

impl Progress {
    /// The progress of a run called `context` in its lines (`bench`, `compare: run 2/4
    /// caza`): lines every `interval` if given (none if 0), else the bar on a terminal and
    /// lines every [`DEFAULT_INTERVAL`] elsewhere.
    pub fn new(interval: Option<Duration>, context: &str) -> Progress {
        let now = Instant::now();
        let show = match interval {
            Some(every) if every.is_zero() => Show::Nothing,
            Some(every) => Show::Lines(Lines::new(context, every, now)),
            None if std::io::stderr().is_terminal() => Show::Bar(ProgressBar::hidden()),
            None => Show::Lines(Lines::new(context, DEFAULT_INTERVAL, now)),
        };
        Progress {
            show,
            phase: String::new(),
            total: 0,
            start: now,
        }
    }

    /// A phase of `total` operations starts.
    pub fn start(&mut self, phase: &str, total: u64) {
        self.phase = phase.to_string();
        self.total = total;
        self.start = Instant::now();
        if let Show::Bar(bar) = &mut self.show {
            *bar = progress_bar(phase, total);
        }
    }

    /// `done` operations of the phase are done.
    pub fn advance(&mut self, done: u64) {
        if !done.is_multiple_of(STEP) {
            return;
        }
        match &mut self.show {
            Show::Nothing => {}
            Show::Bar(bar) => bar.set_position(done),
            Show::Lines(lines) => {
                let now = Instant::now();
                if let Some(line) = lines.due(&self.phase, done, self.total, now - self.start, now)
                {
                    // Nothing sensible is left to do if stderr itself is gone.
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
        }
    }

    /// The phase has ended.
    pub fn finish(&mut self) {
        if let Show::Bar(bar) = &self.show {
            bar.finish_and_clear();
        }
    }
}

/// Progress lines: one every `every`, over the phases of a run.
struct Lines {
    context: String,
    every: Duration,
    next: Instant,
}

impl Lines {
    fn new(context: &str, every: Duration, now: Instant) -> Lines {
        Lines {
            context: context.to_string(),
            every,
            next: now + every,
        }
    }

    /// The line to print at `now`, if one is due: `done` of `total` operations of `phase`
    /// are done, `elapsed` after it started.
    fn due(
        &mut self,
        phase: &str,
        done: u64,
        total: u64,
        elapsed: Duration,
        now: Instant,
    ) -> Option<String> {
        if now < self.next {
            return None;
        }
        // The next one an interval from now: a slow stretch (a stall) gives no burst of
        // lines after it.
        self.next = now + self.every;
        Some(line(&self.context, phase, done, total, elapsed))
    }
}

/// `bench fillrandom: 120000/1000000 ops (12%), 11987 ops/s, 10.0 s`
fn line(context: &str, phase: &str, done: u64, total: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    let rate = if seconds > 0.0 {
        done as f64 / seconds
    } else {
        0.0
    };
    let percent = 100.0 * done as f64 / total.max(1) as f64;
    format!(
        "{context} {phase}: {done}/{total} ops ({percent:.0}%), {rate:.0} ops/s, {seconds:.1} s"
    )
}

/// indicatif's bar for a phase.
fn progress_bar(name: &str, total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ops, {per_sec}, eta {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(name.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_once_per_interval_across_phases() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut lines = Lines::new("compare: run 2/4 caza", Duration::from_millis(200), t0);
        let mut due = |done, ms| {
            let elapsed = Duration::from_millis(ms);
            lines.due("fillrandom", done, 1000, elapsed, at(ms))
        };
        assert_eq!(due(64, 100), None);
        assert_eq!(
            due(128, 200).as_deref(),
            Some("compare: run 2/4 caza fillrandom: 128/1000 ops (13%), 640 ops/s, 0.2 s")
        );
        assert_eq!(due(192, 399), None);
        assert!(due(256, 400).is_some());
        // A long stall: one line after it, not one per missed interval.
        assert!(due(320, 5000).is_some());
        assert_eq!(due(384, 5100), None);
    }

    #[test]
    fn a_zero_interval_shows_nothing() {
        let mut p = Progress::new(Some(Duration::ZERO), "bench");
        assert!(matches!(p.show, Show::Nothing));
        p.start("fillrandom", 10);
        p.advance(STEP);
        p.finish();
    }

    #[test]
    fn a_line_of_a_phase_without_time_or_operations() {
        let l = line("bench", "idle", 0, 0, Duration::ZERO);
        assert_eq!(l, "bench idle: 0/0 ops (0%), 0 ops/s, 0.0 s");
    }
}
