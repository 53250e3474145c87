//! mixgraph's key ranges (RocksDB db_bench_tool.cc, MixGraph: `GenerateTwoTermExpKeys`
//! and `KeyrangeUnit`).
//!
//! The key space `0..num` is cut into `keyrange_num` ranges of `num / keyrange_num` keys
//! (the `num % keyrange_num` keys past the last range are never drawn). Range x (x = 1 ..
//! keyrange_num) is drawn in proportion to f(x) = a·e^(b·x) + c·e^(d·x), turned into
//! integer weights: each range gets ⌊A·f(x)⌋ slots, A = ⌊1 / f(keyrange_num)⌋ + 1 the
//! amplification that gives the range computed first (x = keyrange_num) at least one
//! slot; an f(x) below 10^-16 gets none. The ranges are then shuffled by db_bench's
//! twister seeded with the total of slots, so the hot ranges do not all sit at one end of
//! the key space and the same parameters always give the same layout. A draw `ini` picks
//! the range owning slot `ini % total`; the key inside the range is the twister's first
//! output for the power law's seed ⌈(u/a)^(1/b)⌉, u = (ini % size) / size, modulo the
//! size. (db_bench's range code can also place keys uniformly inside a range, but
//! mixgraph never asks it to: without a power law it draws uniform keys over the whole
//! space.)

use super::dist::{power_inverse, trunc_i64};
use crate::error::{check_range, Error, Result};
use crate::gen::mt64::{mt19937_64_first, Mt19937_64};

/// f(x) = a·e^(b·x) + c·e^(d·x): db_bench's `keyrange_dist_a` .. `keyrange_dist_d`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TwoTermExp {
    /// `keyrange_dist_a`.
    pub a: f64,
    /// `keyrange_dist_b`.
    pub b: f64,
    /// `keyrange_dist_c`.
    pub c: f64,
    /// `keyrange_dist_d`.
    pub d: f64,
}

impl TwoTermExp {
    /// The fit of the FAST'20 paper's key-range popularity, as RocksDB's example command of
    /// mixgraph gives it (with 30 key ranges).
    pub const PAPER: TwoTermExp = TwoTermExp {
        a: 14.18,
        b: -2.917,
        c: 0.0164,
        d: -0.08082,
    };

    /// f(x).
    pub fn at(&self, x: f64) -> f64 {
        self.a * (self.b * x).exp() + self.c * (self.d * x).exp()
    }

    /// db_bench models key ranges only when one of the four is not zero.
    pub fn is_zero(&self) -> bool {
        [self.a, self.b, self.c, self.d].iter().all(|&v| v == 0.0)
    }
}

/// Shares below this are none: db_bench's `pow(10, -16)`.
const MIN_SHARE: f64 = 1e-16;

/// Slot counts stay below this, so that their sum cannot overflow.
const MAX_SLOTS: f64 = (1u64 << 52) as f64;

/// One key range: the slots it owns, and the x of f(x) it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRange {
    /// Its first slot: the slots of the ranges before it, summed.
    pub start: i64,
    /// Slots it owns (its weight).
    pub slots: i64,
    /// The x (1 to `keyrange_num`) of f(x) its weight comes from.
    pub x: i64,
}

/// The ranges in key-space order, after the shuffle.
#[derive(Debug, Clone)]
pub struct KeyRanges {
    ranges: Vec<KeyRange>,
    total: i64,
    size: i64,
}

impl KeyRanges {
    /// The layout of `count` ranges over `0..num` (1 ≤ count ≤ num ≤ i64::MAX).
    pub fn new(num: u64, count: u64, f: TwoTermExp) -> Result<KeyRanges> {
        check_range("keyrange_num", count, 1, num)?;
        let count = i64::try_from(count).map_err(|_| overflow())?;
        let size = i64::try_from(num).map_err(|_| overflow())? / count;
        let mut ranges = weigh(count, f)?;
        let total = restart(&mut ranges)?;
        if total == 0 {
            return Err(Error::InvalidKeyRanges(
                "every range's share is below 1e-16: no key could be drawn",
            ));
        }
        shuffle(&mut ranges, total);
        restart(&mut ranges)?;
        Ok(KeyRanges {
            ranges,
            total,
            size,
        })
    }

    /// The ranges in key-space order.
    pub fn ranges(&self) -> &[KeyRange] {
        &self.ranges
    }

    /// Slots of all ranges together.
    pub fn total(&self) -> i64 {
        self.total
    }

    /// Keys per range.
    pub fn size(&self) -> i64 {
        self.size
    }

    /// The range (in key-space order) that owns slot `ini % total`.
    pub fn range_of(&self, ini: i64) -> usize {
        let slot = ini % self.total;
        // The last range starting at or before the slot: ranges without slots share their
        // start with the next one and are passed over, as db_bench's bisection does.
        self.ranges
            .partition_point(|r| r.start <= slot)
            .saturating_sub(1)
    }

    /// The key of draw `ini` (0 ≤ ini < num): a range by its share, then a key in it by
    /// the power law a·x^b.
    pub fn key(&self, ini: i64, a: f64, b: f64) -> i64 {
        let range = self.range_of(ini) as i64;
        let u = (ini % self.size) as f64 / self.size as f64;
        let seed = power_inverse(u, a, b) as u64;
        let offset = (mt19937_64_first(seed) % self.size as u64) as i64;
        self.size * range + offset
    }
}

/// The ranges in db_bench's order of computation (x from `count` down to 1), each with
/// its slot count; starts are left to [`restart`].
fn weigh(count: i64, f: TwoTermExp) -> Result<Vec<KeyRange>> {
    let mut amplify = 0i64;
    let mut ranges = Vec::with_capacity(count as usize);
    for x in (1..=count).rev() {
        let share = f.at(x as f64);
        if !share.is_finite() {
            return Err(Error::InvalidKeyRanges(
                "a range's share a·e^(b·x) + c·e^(d·x) is not a finite number",
            ));
        }
        let share = if share < MIN_SHARE { 0.0 } else { share };
        if amplify == 0 && share > 0.0 {
            amplify = trunc_i64((1.0 / share).floor()) + 1;
        }
        let slots = (amplify as f64 * share).floor();
        if slots >= MAX_SLOTS {
            return Err(overflow());
        }
        ranges.push(KeyRange {
            start: 0,
            slots: slots as i64,
            x,
        });
    }
    Ok(ranges)
}

fn overflow() -> Error {
    Error::InvalidKeyRanges("the ranges' shares are too far apart to be counted in 64 bits")
}

/// Sets each range's start to the slots before it; returns the total.
fn restart(ranges: &mut [KeyRange]) -> Result<i64> {
    let mut total = 0i64;
    for r in ranges {
        r.start = total;
        total = total.checked_add(r.slots).ok_or_else(overflow)?;
    }
    Ok(total)
}

/// db_bench's shuffle: for each position in turn, a swap with the position its twister
/// (seeded with the total of slots) names.
fn shuffle(ranges: &mut [KeyRange], total: i64) {
    let mut mt = Mt19937_64::new(total as u64);
    let n = ranges.len() as u64;
    for i in 0..ranges.len() {
        let pos = (mt.next_u64() % n) as usize;
        ranges.swap(i, pos);
    }
}
