//! Values written by the workloads.
//!
//! db_bench's `RandomGenerator` hands out slices of a buffer built to compress to
//! `--compression_ratio` (0.5). zkv fills each value with a SplitMix64 stream keyed by the
//! generator's seed and the write's sequence number: deterministic for a seed, and
//! different for every write, so a verification pass that finds an older value of a key can
//! tell it from the newest. With a compression ratio below 1 (a run that compresses its
//! tables), the stream fills only that fraction of the value and repeats to fill the rest,
//! as db_bench's compressible strings do; at 1 (the default) the whole value is random, so
//! runs without compression write the same bytes as before compression existed.

/// Deterministic filler for values.
#[derive(Debug, Clone)]
pub struct ValueGenerator {
    seed: u64,
    seq: u64,
    /// The random fraction of each value (1: all of it).
    ratio: f64,
}

impl ValueGenerator {
    /// Wholly random values; the same seed gives the same values in the same order.
    pub fn new(seed: u64) -> Self {
        ValueGenerator {
            seed,
            seq: 0,
            ratio: 1.0,
        }
    }

    /// Values of which only `ratio` (clamped to (0, 1]) is random, the rest repeating it:
    /// a compressor reduces them to about `ratio` of their size.
    pub fn with_compression_ratio(mut self, ratio: f64) -> Self {
        self.ratio = if ratio > 0.0 { ratio.min(1.0) } else { 1.0 };
        self
    }

    /// Writes the next value, `len` bytes, into `out` (replacing its contents).
    pub fn fill(&mut self, len: usize, out: &mut Vec<u8>) {
        if self.ratio < 1.0 {
            let random = ((len as f64 * self.ratio).ceil() as usize).clamp(1, len.max(1));
            fill_value(self.seed, self.seq, random.min(len), out);
            repeat_to(out, len);
        } else {
            fill_value(self.seed, self.seq, len, out);
        }
        self.seq += 1;
    }

    /// The next value as a new vector.
    pub fn next_value(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        self.fill(len, &mut out);
        out
    }

    /// Values handed out so far.
    pub fn count(&self) -> u64 {
        self.seq
    }
}

/// The value of write `seq` under `seed`: the same bytes every time it is asked for.
pub fn fill_value(seed: u64, seq: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(len, 0);
    let mut state = seed ^ seq.wrapping_mul(0xD1B5_4A32_D192_ED03);
    for chunk in out.chunks_mut(8) {
        let word = splitmix64(&mut state).to_le_bytes();
        chunk.iter_mut().zip(word).for_each(|(b, w)| *b = w);
    }
}

/// Extends `out` to `len` bytes by repeating its contents.
fn repeat_to(out: &mut Vec<u8>, len: usize) {
    let unit = out.len();
    if unit == 0 {
        out.resize(len, 0);
        return;
    }
    while out.len() < len {
        let take = (len - out.len()).min(unit);
        out.extend_from_within(..take);
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_determinism() {
        let mut a = ValueGenerator::new(1);
        let mut b = ValueGenerator::new(1);
        for len in [0, 1, 7, 8, 9, 100, 1024] {
            let (va, vb) = (a.next_value(len), b.next_value(len));
            assert_eq!(va.len(), len);
            assert_eq!(va, vb);
        }
        assert_eq!(a.count(), 7);
    }

    #[test]
    fn every_write_differs() {
        let mut g = ValueGenerator::new(2);
        let first = g.next_value(32);
        let second = g.next_value(32);
        assert_ne!(first, second);
        assert_ne!(ValueGenerator::new(3).next_value(32), first);
        let mut again = Vec::new();
        fill_value(2, 0, 32, &mut again);
        assert_eq!(again, first);
    }

    #[test]
    fn a_compression_ratio_makes_values_that_repeat_their_random_part() {
        let mut g = ValueGenerator::new(5).with_compression_ratio(0.5);
        let v = g.next_value(1000);
        assert_eq!(v.len(), 1000);
        assert_eq!(v[..500], v[500..]);
        assert_ne!(g.next_value(1000), v, "every write still differs");
        // An odd length: the random part rounds up, the repeat is cut.
        let odd = ValueGenerator::new(5)
            .with_compression_ratio(0.3)
            .next_value(10);
        assert_eq!((odd.len(), &odd[..3]), (10, &odd[3..6]));
        // 1 (and anything out of range) is the plain generator.
        for ratio in [1.0, 0.0, -2.0, 7.0] {
            let mut g = ValueGenerator::new(9).with_compression_ratio(ratio);
            assert_eq!(g.next_value(64), ValueGenerator::new(9).next_value(64));
        }
    }
}
