//! `ScrambledZipfianGenerator`: zipfian popularity, with the popular items scattered over
//! the key space instead of clustered at its start.
//!
//! YCSB draws a zipfian rank out of a fixed 10^10 (+1) items, using a zeta it computed once
//! for that count, and maps the rank to an item with `min + fnvhash64(rank) % item_count`.
//! The popularity of an item is thus the sum over the ranks that hash to it: a few items
//! stand out (those of the top ranks), and the long tail of 10^10 ranks spreads almost
//! evenly over all items. Because the rank space never changes, the hot items stay the
//! same when the item count changes, which is why YCSB uses it for its request keys.

use super::zipfian::{ZipfianGenerator, ZIPFIAN_CONSTANT};
use super::{fnvhash64, range_len, NumberGenerator, RngCore};
use crate::error::{Error, Result};

/// YCSB's precomputed zeta(10^10, 0.99).
pub const ZETAN: f64 = 26.46902820178302;
/// The zipfian constant `ZETAN` was computed for.
pub const USED_ZIPFIAN_CONSTANT: f64 = 0.99;
/// Size of the rank space the inner zipfian generator draws from (its range is
/// `0..=ITEM_COUNT`, as in YCSB, so it holds ITEM_COUNT + 1 ranks).
pub const ITEM_COUNT: i64 = 10_000_000_000;

/// YCSB's `ScrambledZipfianGenerator`: zipfian popularity over `min..=max`, the popular
/// items spread over the range by hashing.
#[derive(Debug, Clone)]
pub struct ScrambledZipfianGenerator {
    gen: ZipfianGenerator,
    min: i64,
    max: i64,
    item_count: i64,
    last: i64,
}

impl ScrambledZipfianGenerator {
    /// Items `0..items`.
    pub fn new(items: i64) -> Result<Self> {
        Self::with_range(0, items.saturating_sub(1))
    }

    /// Items `min..=max` with theta = 0.99 (the precomputed zeta).
    pub fn with_range(min: i64, max: i64) -> Result<Self> {
        Self::with_constant(min, max, ZIPFIAN_CONSTANT)
    }

    /// Items `min..=max` with any zipfian constant. For a constant other than 0.99, zeta is
    /// summed over 10^10 ranks here, as YCSB does: that takes minutes.
    pub fn with_constant(min: i64, max: i64, theta: f64) -> Result<Self> {
        let item_count = range_len(min, max).ok_or(Error::EmptyRange {
            what: "scrambled zipfian items",
            min,
            max,
        })?;
        let gen = if theta == USED_ZIPFIAN_CONSTANT {
            ZipfianGenerator::with_zetan(0, ITEM_COUNT, theta, ZETAN)?
        } else {
            ZipfianGenerator::with_constant(0, ITEM_COUNT, theta)?
        };
        Ok(ScrambledZipfianGenerator {
            gen,
            min,
            max,
            item_count,
            last: min,
        })
    }

    /// The lowest item.
    pub fn min(&self) -> i64 {
        self.min
    }

    /// The highest item.
    pub fn max(&self) -> i64 {
        self.max
    }
}

impl NumberGenerator for ScrambledZipfianGenerator {
    fn next_value(&mut self, rng: &mut dyn RngCore) -> i64 {
        let rank = self.gen.next_value(rng);
        // Java's `%` keeps the sign of the (almost never) negative hash; so does Rust's.
        let ret = self.min.wrapping_add(fnvhash64(rank) % self.item_count);
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
    use crate::gen::stats::{assert_close, gray_probabilities};
    use crate::gen::zipfian::zeta_from;

    const SAMPLES: usize = 1_000_000;
    const ITEMS: i64 = 1000;
    /// Ranks whose probability is added exactly; the rest spread evenly (their per-item
    /// unevenness is about 3e-6, against a sampling sigma of 2e-5).
    const HEAD_RANKS: usize = 200_000;

    /// Expected item probabilities: exact head ranks hashed to their items, plus the tail
    /// mass shared evenly.
    fn expected() -> Vec<f64> {
        let n = ITEM_COUNT + 1;
        let head = gray_probabilities(n, n, 0.99, ZETAN, HEAD_RANKS);
        let mut p = vec![0.0; ITEMS as usize];
        for (rank, q) in head.iter().enumerate() {
            p[(fnvhash64(rank as i64) % ITEMS) as usize] += q;
        }
        let tail = 1.0 - head.iter().sum::<f64>();
        p.iter_mut().for_each(|x| *x += tail / ITEMS as f64);
        p
    }

    #[test]
    fn top_items_match_expected_frequencies() {
        let mut g = ScrambledZipfianGenerator::new(ITEMS).unwrap();
        let mut rng = rng_from_seed(11);
        let mut counts = vec![0u64; ITEMS as usize];
        for _ in 0..SAMPLES {
            counts[g.next_value(&mut rng) as usize] += 1;
        }
        let p = expected();
        let mut order: Vec<usize> = (0..p.len()).collect();
        order.sort_by(|&a, &b| p[b].total_cmp(&p[a]));
        // The most popular item is the one rank 0 hashes to.
        assert_eq!(order[0] as i64, fnvhash64(0) % ITEMS);
        for &item in order.iter().take(50) {
            assert_close(counts[item], SAMPLES, p[item], &format!("item {item}"));
        }
    }

    #[test]
    fn values_stay_in_range() {
        let mut g = ScrambledZipfianGenerator::with_range(100, 199).unwrap();
        let mut rng = rng_from_seed(12);
        for _ in 0..10_000 {
            assert!((100..=199).contains(&g.next_value(&mut rng)));
        }
        assert!(ScrambledZipfianGenerator::new(0).is_err());
    }

    /// YCSB's constant is zeta over 10^10 items: checked by summing the first 10^4 terms and
    /// closing the rest with the Euler-Maclaurin formula.
    #[test]
    fn zetan_constant_is_zeta_of_ten_billion() {
        let theta = 0.99;
        let m = 10_000i64;
        let n = ITEM_COUNT as f64;
        let head = zeta_from(0, m - 1, theta, 0.0);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = (n.powf(1.0 - theta) - (m as f64).powf(1.0 - theta)) / (1.0 - theta);
        let tail = integral + (f(m as f64) + f(n)) / 2.0 + (df(n) - df(m as f64)) / 12.0;
        let zeta = head + tail;
        assert!(((zeta - ZETAN) / ZETAN).abs() < 1e-9, "{zeta} vs {ZETAN}");
    }
}
