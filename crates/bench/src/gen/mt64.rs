//! The 64-bit Mersenne twister of C++'s `std::mt19937_64` (Matsumoto and Nishimura, 2000;
//! the parameters of the C++ standard, [rand.predef]).
//!
//! db_bench's `Random64` is this generator. zkv's workloads draw from their own seeded
//! source ([`super::BenchRng`]); mixgraph still needs db_bench's twister where db_bench
//! uses it as a fixed function of its parameters rather than as a random stream: the
//! shuffle of the key ranges (seeded by the ranges' total share, so the same parameters
//! always put the hot range at the same place) and the key a power-law seed maps to. With
//! the same twister, zkv's mixgraph puts the same key ranges and the same hot keys where
//! db_bench puts them.

const N: usize = 312;
const M: usize = 156;
const MATRIX_A: u64 = 0xB502_6F5A_A966_19E9;
/// The low 31 bits (r = 31); the high 33 bits are the complement.
const LOWER_MASK: u64 = (1 << 31) - 1;
const UPPER_MASK: u64 = !LOWER_MASK;
const INIT_MULTIPLIER: u64 = 6_364_136_223_846_793_005;

/// `std::mt19937_64`, seeded as `std::mt19937_64(seed)`.
#[derive(Clone)]
pub struct Mt19937_64 {
    state: [u64; N],
    /// Next state word to temper; `N` when the state must be twisted first.
    index: usize,
}

impl std::fmt::Debug for Mt19937_64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mt19937_64")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// State word `i` of the seeding recurrence, from word `i - 1`.
fn init_step(prev: u64, i: usize) -> u64 {
    INIT_MULTIPLIER
        .wrapping_mul(prev ^ (prev >> 62))
        .wrapping_add(i as u64)
}

/// The new value of a word from its old value, its successor's and the word M ahead.
fn twist(word: u64, next: u64, ahead: u64) -> u64 {
    let y = (word & UPPER_MASK) | (next & LOWER_MASK);
    let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
    ahead ^ (y >> 1) ^ mag
}

fn temper(mut z: u64) -> u64 {
    z ^= (z >> 29) & 0x5555_5555_5555_5555;
    z ^= (z << 17) & 0x71D6_7FFF_EDA6_0000;
    z ^= (z << 37) & 0xFFF7_EEE0_0000_0000;
    z ^ (z >> 43)
}

impl Mt19937_64 {
    /// The generator C++ builds as `std::mt19937_64(seed)`.
    pub fn new(seed: u64) -> Self {
        let mut word = seed;
        // `from_fn` fills the words in ascending order, each from the one before.
        let state = std::array::from_fn(|i| {
            if i > 0 {
                word = init_step(word, i);
            }
            word
        });
        Mt19937_64 { state, index: N }
    }

    /// The next output, as `operator()` of `std::mt19937_64` returns it.
    pub fn next_u64(&mut self) -> u64 {
        let z = match self.state.get(self.index) {
            Some(&z) => z,
            None => {
                self.twist_all();
                self.state[0]
            }
        };
        self.index += 1;
        temper(z)
    }

    // i, (i + 1) % N and (i + M) % N are all below N, the length of `state`; the words are
    // rewritten in place in this order, which is what the generator is.
    #[allow(clippy::indexing_slicing)]
    fn twist_all(&mut self) {
        for i in 0..N {
            let next = self.state[(i + 1) % N];
            let ahead = self.state[(i + M) % N];
            self.state[i] = twist(self.state[i], next, ahead);
        }
        self.index = 0;
    }
}

/// `std::mt19937_64(seed)()`: the first output only, which needs state words 0, 1 and M
/// of the seeding, not the whole state. mixgraph draws it once per operation.
pub fn mt19937_64_first(seed: u64) -> u64 {
    let mut word = seed;
    let mut second = 0;
    for i in 1..=M {
        word = init_step(word, i);
        if i == 1 {
            second = word;
        }
    }
    temper(twist(seed, second, word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousandth_output_of_the_default_seed_is_the_standards() {
        // [rand.predef]: the 10000th consecutive invocation of a default-constructed
        // mt19937_64 (seed 5489) produces 9981545732273789042.
        let mut mt = Mt19937_64::new(5489);
        let v = (0..10_000).map(|_| mt.next_u64()).last();
        assert_eq!(v, Some(9_981_545_732_273_789_042));
    }

    #[test]
    fn first_output_shortcut_matches_the_generator() {
        for seed in [0, 1, 2, 5489, 1 << 40, u64::MAX, 0x8000_0000_0000_0000] {
            assert_eq!(mt19937_64_first(seed), Mt19937_64::new(seed).next_u64());
        }
    }

    #[test]
    fn outputs_are_those_of_the_c_plus_plus_library() {
        // First two outputs of std::mt19937_64(seed), printed by libstdc++.
        for (seed, first, second) in [
            (0, 2_947_667_278_772_165_694, 18_301_848_765_998_365_067),
            (1, 2_469_588_189_546_311_528, 2_516_265_689_700_432_462),
            (667, 8_967_807_610_035_097_201, 18_061_925_043_602_198_202),
        ] {
            let mut mt = Mt19937_64::new(seed);
            assert_eq!(
                (mt.next_u64(), mt.next_u64()),
                (first, second),
                "seed {seed}"
            );
        }
    }
}
