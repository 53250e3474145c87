//! How good the predictions were: for every SST with a prediction that died, its predicted
//! case and deletion tick against the real ones.
//!
//! - accuracy: the share of files whose deletion tick was predicted within ±20 ticks (the
//!   paper's measure, section VI-D);
//! - per level (of creation): the same with the paper's error bar 5 × (level + 1);
//! - the case table (the paper's Table II): predicted case × real death, each cell with its
//!   count and the files in it within the level's error bar, and how many were moved down;
//! - histograms of the real lifetime and of the error (Fig. 5), in bins of 10 ticks;
//! - Table I: the files whose real lifetime exceeded three times the predicted one, by real
//!   lifetime, once on the FC-tick clock and once in seconds of the database's clock (the
//!   same prediction turned into seconds by the mean time of a tick when the file was
//!   created: the paper's "real-time prediction"). The report keeps the histograms; the
//!   gap beyond which a miss counts is the experiment's.

use std::collections::BTreeMap;

use super::{Case, Death, Outcome};

/// A prediction is correct within this many ticks of the real deletion.
pub const ACCURACY_TICKS: u64 = 20;
/// Width of a real-lifetime histogram bin, in ticks.
pub const LIFETIME_BIN: u64 = 10;
/// Width of an error histogram bin, in ticks.
pub const ERROR_BIN: i64 = 10;
/// Table I's factor: a file lived more than this many times its predicted lifetime.
pub const MISS_FACTOR: f64 = 3.0;

/// One cell of the case table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaseCell {
    /// Files of the cell that died.
    pub count: u64,
    /// Within the error bar of the file's level.
    pub correct: u64,
    /// Moved down a level by a trivial move before it died.
    pub moved: u64,
}

/// Accumulated prediction outcomes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LifetimeStats {
    /// Files with a prediction that died.
    pub deleted: u64,
    /// Within ±`ACCURACY_TICKS` (20) ticks.
    pub correct: u64,
    /// Per level of creation: (deleted, within 5 × (level + 1), Σ real lifetime).
    pub per_level: Vec<(u64, u64, u64)>,
    /// Per predicted case and real death: the case table (the paper's Table II).
    pub cases: BTreeMap<(Case, Death), CaseCell>,
    /// Real lifetime bin start → files.
    pub lifetimes: BTreeMap<u64, u64>,
    /// Error (predicted − real) bin start → files.
    pub errors: BTreeMap<i64, u64>,
    /// Real lifetime (ticks) → files that lived over 3 × their prediction: exact, so that
    /// an experiment can count those beyond any gap.
    pub tick_misses: BTreeMap<u64, u64>,
    /// Real lifetime (milliseconds) → files that lived over 3 × their prediction in
    /// seconds.
    pub ms_misses: BTreeMap<u64, u64>,
    /// Dead files timed in seconds (those created since the open).
    pub timed: u64,
}

/// The paper's error bar of a level.
pub fn error_bar(level: u8) -> u64 {
    5 * (u64::from(level) + 1)
}

impl LifetimeStats {
    /// Counts the death of one file with a prediction.
    pub fn add(&mut self, o: &Outcome) {
        let error = o.error();
        let within = |bar: u64| error.unsigned_abs() <= bar;
        self.deleted += 1;
        self.correct += u64::from(within(ACCURACY_TICKS));
        let level = usize::from(o.file.level);
        if self.per_level.len() <= level {
            self.per_level.resize(level + 1, (0, 0, 0));
        }
        let in_bar = within(error_bar(o.file.level));
        if let Some(slot) = self.per_level.get_mut(level) {
            slot.0 += 1;
            slot.1 += u64::from(in_bar);
            slot.2 = slot.2.saturating_add(o.real());
        }
        let cell = self.cases.entry((o.file.case, o.death)).or_default();
        cell.count += 1;
        cell.correct += u64::from(in_bar);
        cell.moved += u64::from(o.file.moved);
        *self
            .lifetimes
            .entry(o.real() / LIFETIME_BIN * LIFETIME_BIN)
            .or_default() += 1;
        let bin = error.div_euclid(ERROR_BIN) * ERROR_BIN;
        *self.errors.entry(bin).or_default() += 1;
        if o.real() as f64 > MISS_FACTOR * o.file.lifetime as f64 {
            *self.tick_misses.entry(o.real()).or_default() += 1;
        }
    }

    /// The same file's lifetime in seconds: `real` and the prediction turned into
    /// seconds.
    pub fn add_timed(&mut self, real: f64, predicted: f64) {
        self.timed += 1;
        if real > MISS_FACTOR * predicted {
            // Whole milliseconds (truncation intended; lifetimes are never negative).
            let ms = (real * 1000.0) as u64;
            *self.ms_misses.entry(ms).or_default() += 1;
        }
    }

    /// The share of predictions within ±20 ticks (0 with none).
    pub fn accuracy(&self) -> f64 {
        match self.deleted {
            0 => 0.0,
            n => self.correct as f64 / n as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifetime::FileLifetime;

    fn outcome(case: Case, level: u8, created: u64, pl: u64, died: u64, death: Death) -> Outcome {
        Outcome {
            number: created,
            file: FileLifetime {
                created,
                lifetime: pl,
                case,
                level,
                moved: case == Case::C3,
            },
            died,
            death,
            level,
        }
    }

    #[test]
    fn accounting_of_a_synthetic_sequence() {
        let mut s = LifetimeStats::default();
        // Exact; 20 late (correct overall, outside L1's bar 10); 21 early (wrong); a moved
        // c3 file 3 late.
        s.add(&outcome(Case::C1, 1, 10, 30, 40, Death::D1));
        s.add(&outcome(Case::C2A, 1, 10, 30, 60, Death::D2));
        s.add(&outcome(Case::C2B, 0, 0, 30, 9, Death::D2));
        s.add(&outcome(Case::C3, 2, 5, 100, 108, Death::D2));
        assert_eq!((s.deleted, s.correct), (4, 3));
        assert!((s.accuracy() - 0.75).abs() < 1e-9);
        assert_eq!(s.per_level, vec![(1, 0, 9), (2, 1, 80), (1, 1, 103)]);
        let cell = |c, d| s.cases.get(&(c, d)).copied().unwrap_or_default();
        assert_eq!(cell(Case::C1, Death::D1).correct, 1);
        assert_eq!(cell(Case::C2A, Death::D2).count, 1);
        assert_eq!(cell(Case::C2A, Death::D2).correct, 0);
        assert_eq!(cell(Case::C3, Death::D2).moved, 1);
        assert_eq!(cell(Case::C1, Death::D2).count, 0);
        // Lifetimes 30, 50, 9, 103; errors 0, −20, +21, −3.
        let bins: Vec<(u64, u64)> = s.lifetimes.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(bins, vec![(0, 1), (30, 1), (50, 1), (100, 1)]);
        let errs: Vec<(i64, u64)> = s.errors.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(errs, vec![(-20, 1), (-10, 1), (0, 1), (20, 1)]);
        // Nothing lived over 3 × its prediction; a file predicted 2 ticks that lived 40 did.
        assert!(s.tick_misses.is_empty());
        s.add(&outcome(Case::C1, 1, 0, 2, 40, Death::D1));
        assert_eq!(s.tick_misses.get(&40).copied(), Some(1));
        s.add_timed(100.5, 30.0);
        s.add_timed(100.0, 40.0);
        assert_eq!((s.timed, s.ms_misses.get(&100_500).copied()), (2, Some(1)));
        assert_eq!(LifetimeStats::default().accuracy(), 0.0);
    }
}
