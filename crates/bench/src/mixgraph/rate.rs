//! mixgraph's sine request rate (RocksDB db_bench_tool.cc, MixGraph with
//! `--sine_mix_rate`, and `SineRate`).
//!
//! db_bench starts the benchmark with its rate limiters at 1,000,000 operations per
//! second; once `sine_mix_rate_interval_milliseconds` have passed since the last change,
//! it sets the rate to f(t) = a·sin(b·t + c) + d, t the seconds since the benchmark
//! started, and keeps the old rate when f(t) is not positive. It splits the rate between
//! a read limiter (gets and seeks, their share of it) and a write limiter (puts, theirs),
//! which together pace the whole mix at f(t) operations per second.
//!
//! [`RateSchedule`] is that schedule as a function of elapsed time: steps at multiples of
//! the interval, each at f(its start). db_bench's steps start at the first operation after
//! the interval, a few microseconds later; zkv's do not drift. It only says the rate; the
//! bench command paces operations to it, on the database's clock.

use std::time::Duration;

/// f(t) = a·sin(b·t + c) + d operations per second, re-evaluated every `interval_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SineRate {
    /// `sine_a`: the amplitude, in operations per second.
    pub a: f64,
    /// `sine_b`: the angular frequency, in radians per second.
    pub b: f64,
    /// `sine_c`: the phase, in radians.
    pub c: f64,
    /// `sine_d`: the offset, in operations per second.
    pub d: f64,
    /// `sine_mix_rate_interval_milliseconds`: how often the rate is set again.
    pub interval_ms: u64,
}

impl Default for SineRate {
    /// db_bench's defaults: sin(t) + 1, every 10 s.
    fn default() -> Self {
        SineRate {
            a: 1.0,
            b: 1.0,
            c: 0.0,
            d: 1.0,
            interval_ms: 10_000,
        }
    }
}

impl SineRate {
    /// f(t), t in seconds.
    pub fn at(&self, seconds: f64) -> f64 {
        self.a * (self.b * seconds + self.c).sin() + self.d
    }
}

/// The rate before the first step: db_bench's limiters start at 1,000,000.
pub const INITIAL_RATE: f64 = 1_000_000.0;

/// The rate in force as time passes.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSchedule {
    sine: SineRate,
    step: u64,
    rate: f64,
}

impl RateSchedule {
    /// `sine.interval_ms` must be at least 1 (checked by the workload's configuration).
    pub fn new(sine: SineRate) -> Self {
        RateSchedule {
            sine,
            step: 0,
            rate: INITIAL_RATE,
        }
    }

    /// The rate function it follows.
    pub fn sine(&self) -> SineRate {
        self.sine
    }

    /// Operations per second `elapsed` after the start. Steps only move forward; a step
    /// whose f is not positive keeps the rate before it.
    pub fn rate_at(&mut self, elapsed: Duration) -> f64 {
        let interval = self.sine.interval_ms.max(1);
        let step = u64::try_from(elapsed.as_millis() / u128::from(interval)).unwrap_or(u64::MAX);
        if step > self.step {
            self.step = step;
            let f = self.sine.at(self.step_start(step).as_secs_f64());
            if f > 0.0 {
                self.rate = f;
            }
        }
        self.rate
    }

    /// The step the last [`Self::rate_at`] was in (0: before the first change).
    pub fn step(&self) -> u64 {
        self.step
    }

    /// When step `step` starts.
    pub fn step_start(&self, step: u64) -> Duration {
        Duration::from_millis(step.saturating_mul(self.sine.interval_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sine_is_the_closed_form() {
        let s = SineRate {
            a: 1000.0,
            b: 0.000073,
            c: 0.5,
            d: 4500.0,
            interval_ms: 5000,
        };
        for t in [0.0, 1.0, 3600.0, 86_400.0] {
            let want = 1000.0 * (0.000073 * t + 0.5f64).sin() + 4500.0;
            assert!((s.at(t) - want).abs() < 1e-9);
        }
        // A quarter period after a zero phase: the top of the wave.
        let peak = SineRate { c: 0.0, ..s }.at(std::f64::consts::FRAC_PI_2 / 0.000073);
        assert!((peak - 5500.0).abs() < 1e-6);
    }

    #[test]
    fn schedule_steps_at_each_interval_and_keeps_positive_rates() {
        let sine = SineRate {
            a: 100.0,
            b: std::f64::consts::PI / 2.0,
            c: 0.0,
            d: 50.0,
            interval_ms: 1000,
        };
        let mut s = RateSchedule::new(sine);
        let at = |s: &mut RateSchedule, ms: u64| s.rate_at(Duration::from_millis(ms));
        assert_eq!(at(&mut s, 0), INITIAL_RATE);
        assert_eq!(at(&mut s, 999), INITIAL_RATE);
        // t = 1 s: 100·sin(π/2) + 50.
        assert!((at(&mut s, 1000) - 150.0).abs() < 1e-9);
        // t = 2 s: 100·sin(π) + 50 = 50.
        assert!((at(&mut s, 2500) - 50.0).abs() < 1e-9);
        // t = 3 s: 100·sin(3π/2) + 50 = −50: not positive, 50 stays.
        assert!((at(&mut s, 3000) - 50.0).abs() < 1e-9);
        assert_eq!(s.step(), 3);
        // Time never runs backwards through the schedule.
        assert!((at(&mut s, 10) - 50.0).abs() < 1e-9);
        assert_eq!(s.step_start(3), Duration::from_secs(3));
    }
}
