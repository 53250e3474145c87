//! `DiscreteGenerator`: picks one of a few values with given weights, as YCSB's operation
//! chooser does. Weights need not sum to 1; they are normalised at each draw, and the
//! values are tried in the order they were added.

use super::{next_double, RngCore};
use crate::error::{Error, Result};

/// YCSB's `DiscreteGenerator`: one of a few values, each drawn with probability weight /
/// sum of weights.
#[derive(Debug, Clone)]
pub struct DiscreteGenerator<T> {
    values: Vec<(f64, T)>,
    sum: f64,
    /// The last value with a positive weight: the draw when rounding leaves it past them all.
    last_positive: T,
}

impl<T: Clone> DiscreteGenerator<T> {
    /// Weights must be finite and non-negative, with a positive and finite sum (an infinite
    /// sum would make every normalised weight 0).
    pub fn new(values: Vec<(f64, T)>) -> Result<Self> {
        for &(w, _) in &values {
            if !(w.is_finite() && w >= 0.0) {
                return Err(Error::InvalidFraction {
                    what: "operation weight",
                    allowed: "finite and >= 0",
                    value: w,
                });
            }
        }
        let sum: f64 = values.iter().map(|(w, _)| w).sum();
        if sum <= 0.0 {
            return Err(Error::NoOperations);
        }
        if !sum.is_finite() {
            return Err(Error::InvalidFraction {
                what: "sum of operation weights",
                allowed: "finite",
                value: sum,
            });
        }
        let last_positive = values
            .iter()
            .rev()
            .find(|(w, _)| w / sum > 0.0)
            .map(|(_, v)| v.clone())
            .ok_or(Error::NoOperations)?;
        Ok(DiscreteGenerator {
            values,
            sum,
            last_positive,
        })
    }

    /// Walks the values, subtracting each normalised weight from one uniform draw until it
    /// falls inside one. Rounding can leave the draw just past the last weight, where YCSB
    /// throws; zkv returns the last value with a positive weight.
    pub fn next_value(&self, rng: &mut dyn RngCore) -> T {
        let mut val = next_double(rng);
        for (w, v) in &self.values {
            let pw = w / self.sum;
            if val < pw {
                return v.clone();
            }
            val -= pw;
        }
        self.last_positive.clone()
    }

    /// The values with their weights (not normalised), in the order they were given.
    pub fn values(&self) -> impl Iterator<Item = (f64, &T)> {
        self.values.iter().map(|(w, v)| (*w, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::rng_from_seed;
    use crate::gen::stats::assert_close;

    #[test]
    fn proportions_follow_weights() {
        let g = DiscreteGenerator::new(vec![(3.0, 'a'), (1.0, 'b'), (0.0, 'c')]).unwrap();
        let mut rng = rng_from_seed(51);
        let n = 200_000;
        let mut a = 0;
        for _ in 0..n {
            match g.next_value(&mut rng) {
                'a' => a += 1,
                'b' => {}
                other => panic!("drew {other}"),
            }
        }
        assert_close(a, n, 0.75, "a");
    }

    #[test]
    fn bad_weights_are_errors() {
        assert!(DiscreteGenerator::<u8>::new(vec![]).is_err());
        assert!(DiscreteGenerator::new(vec![(0.0, 1)]).is_err());
        assert!(DiscreteGenerator::new(vec![(-1.0, 1), (2.0, 2)]).is_err());
        assert!(DiscreteGenerator::new(vec![(f64::INFINITY, 1)]).is_err());
        assert!(DiscreteGenerator::new(vec![(f64::MAX, 1), (f64::MAX, 2)]).is_err());
    }
}
