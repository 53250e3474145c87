//! `SkewedLatestGenerator` (YCSB's "latest" distribution): zipfian over recency. With `max`
//! the basis' last value (for YCSB's workloads, the highest acknowledged insert), it returns
//! `max - z` where z is a zipfian draw out of `max` items: the newest acknowledged record is
//! the most popular, the one before it next, and so on. As inserts are acknowledged, `max`
//! grows and the zipfian's zeta is extended incrementally.
//!
//! Quirks kept from YCSB: the draw is out of `max` items, not `max + 1`, so record 0 is only
//! returned while it is the sole record; and the zipfian's eta keeps the item count of
//! construction time.

use super::zipfian::{ZipfianGenerator, ZIPFIAN_CONSTANT};
use super::{AcknowledgedCounterGenerator, NumberGenerator, RngCore};
use crate::error::{Error, Result};

/// YCSB's `SkewedLatestGenerator`: zipfian over recency, the basis' last value the most
/// popular.
#[derive(Debug, Clone)]
pub struct SkewedLatestGenerator<B: NumberGenerator = AcknowledgedCounterGenerator> {
    basis: B,
    zipfian: ZipfianGenerator,
    last: i64,
}

impl<B: NumberGenerator> SkewedLatestGenerator<B> {
    /// Follows `basis`'s last value (YCSB passes its insert counter and reads `lastValue()`),
    /// which must be at least 0.
    pub fn new(basis: B) -> Result<Self> {
        let max = basis.last_value();
        if max < 0 {
            return Err(Error::EmptyRange {
                what: "latest records",
                min: 0,
                max,
            });
        }
        Ok(SkewedLatestGenerator {
            basis,
            zipfian: ZipfianGenerator::unchecked(max, ZIPFIAN_CONSTANT),
            last: max,
        })
    }

    /// The generator whose last value is the newest record.
    pub fn basis(&self) -> &B {
        &self.basis
    }

    /// The zipfian generator of distances from the newest record.
    pub fn zipfian(&self) -> &ZipfianGenerator {
        &self.zipfian
    }
}

impl<B: NumberGenerator> NumberGenerator for SkewedLatestGenerator<B> {
    fn next_value(&mut self, rng: &mut dyn RngCore) -> i64 {
        let max = self.basis.last_value();
        let next = max.wrapping_sub(self.zipfian.next_long(rng, max));
        self.last = next;
        next
    }

    fn last_value(&self) -> i64 {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::rng_from_seed;
    use crate::gen::stats::{assert_close, gray_probabilities};
    use crate::gen::zipfian::zeta_static;

    const SAMPLES: usize = 1_000_000;

    /// With 1001 records loaded (limit 1000), recency rank k = limit - value follows Gray's
    /// zipfian over 1000 items.
    #[test]
    fn recency_ranks_follow_zipfian() {
        let basis = AcknowledgedCounterGenerator::new(1001);
        let mut g = SkewedLatestGenerator::new(basis).unwrap();
        let mut rng = rng_from_seed(21);
        let mut counts = vec![0u64; 1000];
        for _ in 0..SAMPLES {
            let v = g.next_value(&mut rng);
            counts[(1000 - v) as usize] += 1;
        }
        let p = gray_probabilities(1000, 1000, 0.99, zeta_static(1000, 0.99), 30);
        for (rank, &q) in p.iter().enumerate() {
            assert_close(counts[rank], SAMPLES, q, &format!("recency rank {rank}"));
        }
    }

    /// Acknowledged inserts become the most popular records at once; unacknowledged ones
    /// are never returned.
    #[test]
    fn favours_latest_acknowledged_inserts() {
        let basis = AcknowledgedCounterGenerator::new(1000);
        let mut g = SkewedLatestGenerator::new(basis.clone()).unwrap();
        let mut rng = rng_from_seed(22);
        for _ in 0..100 {
            let k = basis.next();
            basis.acknowledge(k).unwrap();
        }
        let pending = basis.next();
        let n = 100_000;
        let mut newest = 0;
        let mut recent = 0;
        for _ in 0..n {
            let v = g.next_value(&mut rng);
            assert!((0..pending).contains(&v), "{v} is not acknowledged");
            newest += u64::from(v == 1099);
            recent += u64::from(v >= 1000);
        }
        assert_eq!(g.zipfian().count_for_zeta(), 1099);
        let zeta = zeta_static(1099, 0.99);
        assert_close(newest, n, 1.0 / zeta, "newest record");
        // The 100 newest of 1100 records take far more than their 9 % share.
        assert!(recent as f64 / n as f64 > 0.6, "recent share {recent}");
    }

    #[test]
    fn single_record_and_empty_basis() {
        let mut rng = rng_from_seed(23);
        let mut g = SkewedLatestGenerator::new(AcknowledgedCounterGenerator::new(1)).unwrap();
        for _ in 0..100 {
            assert_eq!(g.next_value(&mut rng), 0);
        }
        assert!(SkewedLatestGenerator::new(AcknowledgedCounterGenerator::new(0)).is_err());
    }
}
