//! `UniformLongGenerator`: every number of `lb..=ub` equally likely, drawn as YCSB does with
//! `abs(nextLong) % interval + lb` (the modulo bias is below 2^-40 for any key space zkv
//! can hold, and kept for faithfulness).

use super::{abs_mod, range_len, NumberGenerator, RngCore};
use crate::error::{Error, Result};

/// YCSB's `UniformLongGenerator`: numbers of `lb..=ub`, each equally likely.
#[derive(Debug, Clone)]
pub struct UniformLongGenerator {
    lb: i64,
    ub: i64,
    interval: i64,
    last: i64,
}

impl UniformLongGenerator {
    /// Numbers of `lb..=ub`; an empty range (`ub < lb`) or one wider than an `i64` holds
    /// is an error.
    pub fn new(lb: i64, ub: i64) -> Result<Self> {
        let interval = range_len(lb, ub).ok_or(Error::EmptyRange {
            what: "uniform range",
            min: lb,
            max: ub,
        })?;
        Ok(UniformLongGenerator {
            lb,
            ub,
            interval,
            last: lb,
        })
    }

    /// The lowest number.
    pub fn lb(&self) -> i64 {
        self.lb
    }

    /// The highest number.
    pub fn ub(&self) -> i64 {
        self.ub
    }
}

impl NumberGenerator for UniformLongGenerator {
    fn next_value(&mut self, rng: &mut dyn RngCore) -> i64 {
        let ret = abs_mod(rng, self.interval).wrapping_add(self.lb);
        self.last = ret;
        ret
    }

    fn last_value(&self) -> i64 {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::rng_from_seed;
    use crate::gen::stats::{chi_square_bound, chi_square_uniform};

    #[test]
    fn uniform_within_chi_square_bound() {
        let mut g = UniformLongGenerator::new(0, 999).unwrap();
        let mut rng = rng_from_seed(31);
        let mut counts = vec![0u64; 1000];
        for _ in 0..1_000_000 {
            counts[g.next_value(&mut rng) as usize] += 1;
        }
        let chi = chi_square_uniform(&counts);
        assert!(chi < chi_square_bound(999), "chi-square {chi}");
    }

    #[test]
    fn bounds_are_inclusive_and_checked() {
        let mut g = UniformLongGenerator::new(7, 8).unwrap();
        let mut rng = rng_from_seed(32);
        let mut seen = [false; 2];
        for _ in 0..100 {
            seen[(g.next_value(&mut rng) - 7) as usize] = true;
        }
        assert_eq!(seen, [true, true]);
        assert!(UniformLongGenerator::new(1, 0).is_err());
        assert!(UniformLongGenerator::new(i64::MIN, i64::MAX).is_err());
    }
}
