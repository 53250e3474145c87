//! `HotspotIntegerGenerator`: a fraction `hot_opn_fraction` of draws go, uniformly, to the
//! hot set (the lowest `hotset_fraction` of `lower..=upper`), the rest uniformly to the
//! cold set above it.
//!
//! The hot set's size is truncated to a Java `int`, as YCSB's `(int)` cast does. Where YCSB
//! would print a warning and replace an out-of-range fraction by 0, or divide by zero on an
//! empty set that is still chosen, zkv returns an error instead; reversed bounds are
//! swapped, as YCSB does.

use super::{abs_mod, next_double, range_len, NumberGenerator, RngCore};
use crate::error::{Error, Result};

/// YCSB's `HotspotIntegerGenerator`: uniform draws from a hot set (the range's low end) with
/// probability `hot_opn_fraction`, from the rest of the range otherwise.
#[derive(Debug, Clone)]
pub struct HotspotIntegerGenerator {
    lower_bound: i64,
    upper_bound: i64,
    hot_interval: i64,
    cold_interval: i64,
    hotset_fraction: f64,
    hot_opn_fraction: f64,
    last: i64,
}

impl HotspotIntegerGenerator {
    /// Numbers of `lower_bound..=upper_bound` (swapped if reversed), the lowest
    /// `hotset_fraction` of them hot and drawn `hot_opn_fraction` of the time. Both fractions
    /// must lie in [0, 1], and a set drawn from with positive probability must not be empty.
    pub fn new(
        lower_bound: i64,
        upper_bound: i64,
        hotset_fraction: f64,
        hot_opn_fraction: f64,
    ) -> Result<Self> {
        check_fraction("hotspot data fraction", hotset_fraction)?;
        check_fraction("hotspot operation fraction", hot_opn_fraction)?;
        let (lo, hi) = if lower_bound > upper_bound {
            (upper_bound, lower_bound)
        } else {
            (lower_bound, upper_bound)
        };
        let interval = range_len(lo, hi).ok_or(Error::EmptyRange {
            what: "hotspot range",
            min: lo,
            max: hi,
        })?;
        let hot_interval = i64::from((interval as f64 * hotset_fraction) as i32);
        let cold_interval = interval - hot_interval;
        check_sets(hot_interval, cold_interval, hot_opn_fraction)?;
        Ok(HotspotIntegerGenerator {
            lower_bound: lo,
            upper_bound: hi,
            hot_interval,
            cold_interval,
            hotset_fraction,
            hot_opn_fraction,
            last: lo,
        })
    }

    /// The range's lowest number (the first of the hot set).
    pub fn lower_bound(&self) -> i64 {
        self.lower_bound
    }

    /// The range's highest number.
    pub fn upper_bound(&self) -> i64 {
        self.upper_bound
    }

    /// Number of items in the hot set (`lower_bound..lower_bound + hot_interval`).
    pub fn hot_interval(&self) -> i64 {
        self.hot_interval
    }

    /// The share of the range that is hot, in [0, 1].
    pub fn hotset_fraction(&self) -> f64 {
        self.hotset_fraction
    }

    /// The share of draws that go to the hot set, in [0, 1].
    pub fn hot_opn_fraction(&self) -> f64 {
        self.hot_opn_fraction
    }
}

impl NumberGenerator for HotspotIntegerGenerator {
    fn next_value(&mut self, rng: &mut dyn RngCore) -> i64 {
        let value = if next_double(rng) < self.hot_opn_fraction {
            self.lower_bound
                .wrapping_add(abs_mod(rng, self.hot_interval))
        } else {
            let cold_start = self.lower_bound.wrapping_add(self.hot_interval);
            cold_start.wrapping_add(abs_mod(rng, self.cold_interval))
        };
        self.last = value;
        value
    }

    fn last_value(&self) -> i64 {
        self.last
    }
}

fn check_fraction(what: &'static str, value: f64) -> Result<()> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(Error::InvalidFraction {
            what,
            allowed: "in [0, 1]",
            value,
        })
    }
}

/// A set that can be chosen must hold at least one item (YCSB would divide by zero).
fn check_sets(hot: i64, cold: i64, hot_opn: f64) -> Result<()> {
    if hot <= 0 && hot_opn > 0.0 {
        return Err(Error::EmptyHotspotSet {
            which: "hot",
            probability: hot_opn,
        });
    }
    if cold <= 0 && hot_opn < 1.0 {
        return Err(Error::EmptyHotspotSet {
            which: "cold",
            probability: 1.0 - hot_opn,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::rng_from_seed;
    use crate::gen::stats::{assert_close, chi_square_bound, chi_square_uniform};

    #[test]
    fn hot_fraction_and_uniform_sets() {
        let mut g = HotspotIntegerGenerator::new(0, 999, 0.2, 0.8).unwrap();
        assert_eq!(g.hot_interval(), 200);
        let mut rng = rng_from_seed(41);
        let n = 1_000_000;
        let mut counts = vec![0u64; 1000];
        for _ in 0..n {
            counts[g.next_value(&mut rng) as usize] += 1;
        }
        let hot: u64 = counts[..200].iter().sum();
        assert_close(hot, n, 0.8, "hot share");
        let chi_hot = chi_square_uniform(&counts[..200]);
        let chi_cold = chi_square_uniform(&counts[200..]);
        assert!(chi_hot < chi_square_bound(199), "hot chi-square {chi_hot}");
        assert!(
            chi_cold < chi_square_bound(799),
            "cold chi-square {chi_cold}"
        );
    }

    #[test]
    fn bad_fractions_and_empty_sets_are_errors() {
        assert!(HotspotIntegerGenerator::new(0, 9, 1.5, 0.5).is_err());
        assert!(HotspotIntegerGenerator::new(0, 9, 0.5, -0.1).is_err());
        assert!(HotspotIntegerGenerator::new(0, 9, f64::NAN, 0.5).is_err());
        assert!(HotspotIntegerGenerator::new(0, 9, 0.0, 0.5).is_err());
        assert!(HotspotIntegerGenerator::new(0, 9, 1.0, 0.5).is_err());
        assert!(HotspotIntegerGenerator::new(0, 9, 0.0, 0.0).is_ok());
        assert!(HotspotIntegerGenerator::new(0, 9, 1.0, 1.0).is_ok());
    }

    #[test]
    fn reversed_bounds_are_swapped() {
        let g = HotspotIntegerGenerator::new(99, 0, 0.1, 0.9).unwrap();
        assert_eq!(
            (g.lower_bound(), g.upper_bound(), g.hot_interval()),
            (0, 99, 10)
        );
    }
}
