//! Key and request generators, ported from YCSB 0.17.0 (`site.ycsb.generator` and the key
//! builder of `site.ycsb.workloads.CoreWorkload`).
//!
//! The ports keep YCSB's arithmetic, including its integer casts and quirks, so that a
//! distribution drawn here has the same shape as one drawn by YCSB itself (checked against
//! YCSB's own jar by `scripts/ycsb-check.sh`). What differs is the random source: YCSB draws
//! from `ThreadLocalRandom`, which cannot be seeded; zkv passes an explicit, seeded
//! [`BenchRng`] to every draw, so a run is reproducible and no generator holds global state.
//! Sequences therefore differ from YCSB's draw by draw, distributions do not.
//!
//! [`mt64`] is not YCSB's: it is C++'s `std::mt19937_64`, db_bench's `Random64`, which
//! mixgraph needs as a fixed function (see there).

pub mod acknowledged_counter;
pub mod counter;
pub mod discrete;
pub mod fnv;
pub mod hotspot_integer;
pub mod key_name;
pub mod mt64;
pub mod scrambled_zipfian;
pub mod skewed_latest;
pub mod uniform_long;
pub mod zipfian;

pub use acknowledged_counter::AcknowledgedCounterGenerator;
pub use counter::CounterGenerator;
pub use discrete::DiscreteGenerator;
pub use fnv::fnvhash64;
pub use hotspot_integer::HotspotIntegerGenerator;
pub use key_name::build_key_name;
pub use scrambled_zipfian::ScrambledZipfianGenerator;
pub use skewed_latest::SkewedLatestGenerator;
pub use uniform_long::UniformLongGenerator;
pub use zipfian::ZipfianGenerator;

pub use rand_chacha::rand_core::{RngCore, SeedableRng};

/// The random source of every zkv workload: ChaCha with 8 rounds, whose output is fixed by
/// its seed across platforms and crate versions.
pub type BenchRng = rand_chacha::ChaCha8Rng;

/// A generator's random source from a 64-bit seed.
pub fn rng_from_seed(seed: u64) -> BenchRng {
    BenchRng::seed_from_u64(seed)
}

/// A generator of numbers, as YCSB's `NumberGenerator`: `next_value` draws, `last_value`
/// repeats the previous result without drawing.
pub trait NumberGenerator {
    /// Draws the next number from `rng`.
    fn next_value(&mut self, rng: &mut dyn RngCore) -> i64;
    /// The number the last draw returned (the generator's start value before any draw).
    fn last_value(&self) -> i64;
}

/// Java's `Random.nextDouble()`: 53 random bits scaled into [0, 1).
pub(crate) fn next_double(rng: &mut dyn RngCore) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    (rng.next_u64() >> 11) as f64 * SCALE
}

/// Java's `Random.nextLong()`: 64 random bits as a signed number.
pub(crate) fn next_long(rng: &mut dyn RngCore) -> i64 {
    rng.next_u64() as i64
}

/// `Math.abs(nextLong()) % bound` as YCSB writes it. `wrapping_abs` keeps Java's result for
/// `Long.MIN_VALUE` (which stays negative), and `%` truncates toward zero as Java's does.
/// Callers add offsets with wrapping arithmetic, as Java's longs do, so no input panics.
pub(crate) fn abs_mod(rng: &mut dyn RngCore, bound: i64) -> i64 {
    next_long(rng).wrapping_abs() % bound
}

/// Number of items in `min..=max`, or `None` when the range is empty or its size does not
/// fit an `i64`.
pub(crate) fn range_len(min: i64, max: i64) -> Option<i64> {
    max.checked_sub(min)
        .and_then(|d| d.checked_add(1))
        .filter(|&n| n >= 1)
}

#[cfg(test)]
pub(crate) mod stats;
