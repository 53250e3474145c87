//! The table's bloom filter over user keys.
//!
//! Layout of the filter block: the bit array (a whole number of bytes), then one byte with
//! the number of probes. An empty block means "no filter" (`bloom_bits_per_key == 0`).
//!
//! Hashing: `h1 = xxh3_64(user_key)`, `h2 = mix(h1) | 1` (a 64-bit finalizer), probe `i`
//! sets bit `(h1 + i * h2) mod m` (double hashing, Kirsch–Mitzenmacher). The number of
//! probes is `bits_per_key × 0.69` (≈ ln 2) rounded down, clamped to 1..=30, as RocksDB does.

use xxhash_rust::xxh3::xxh3_64;

/// Smallest bit array, so tiny tables still get a useful filter.
const MIN_BITS: u64 = 64;

/// Largest number of probes a filter may declare.
const MAX_PROBES: u8 = 30;

/// The hash a filter stores for a user key (kept by the builder until the table is done).
pub(crate) fn key_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

fn second_hash(h: u64) -> u64 {
    let mut x = h ^ (h >> 33);
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    (x ^ (x >> 33)) | 1
}

/// Probes for `bits_per_key` (≥ 1).
pub(crate) fn probes_for(bits_per_key: u32) -> u8 {
    let k = (f64::from(bits_per_key) * 0.69) as u32;
    k.clamp(1, u32::from(MAX_PROBES)) as u8
}

/// Bytes of the bit array for `keys` keys at `bits_per_key`.
pub(crate) fn bitmap_bytes(keys: u64, bits_per_key: u32) -> u64 {
    let bits = keys.saturating_mul(u64::from(bits_per_key)).max(MIN_BITS);
    bits.div_ceil(8)
}

/// Filter block contents for the given key hashes (empty when `bits_per_key == 0`).
pub(crate) fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    if bits_per_key == 0 {
        return Vec::new();
    }
    let bytes = bitmap_bytes(hashes.len() as u64, bits_per_key) as usize;
    let probes = probes_for(bits_per_key);
    let mut out = vec![0u8; bytes];
    let m = bytes as u64 * 8;
    for &h in hashes {
        // Every probe is below `m`, so its byte is in `out`.
        for_each_probe(h, probes, m, |bit| {
            if let Some(byte) = out.get_mut((bit / 8) as usize) {
                *byte |= 1 << (bit % 8);
            }
        });
    }
    out.push(probes);
    out
}

fn for_each_probe(h1: u64, probes: u8, m: u64, mut f: impl FnMut(u64)) {
    let h2 = second_hash(h1);
    let mut h = h1;
    for _ in 0..probes {
        f(h % m);
        h = h.wrapping_add(h2);
    }
}

/// A filter read from a table.
pub(crate) struct Bloom {
    bits: Vec<u8>,
    probes: u8,
}

impl Bloom {
    /// Parses filter block contents: `Ok(None)` for "no filter", `Err` with a reason if
    /// the block is malformed.
    pub fn decode(mut contents: Vec<u8>) -> Result<Option<Bloom>, String> {
        let Some(probes) = contents.pop() else {
            return Ok(None);
        };
        if contents.is_empty() || !(1..=MAX_PROBES).contains(&probes) {
            return Err(format!(
                "filter with {} bytes and {probes} probes",
                contents.len()
            ));
        }
        Ok(Some(Bloom {
            bits: contents,
            probes,
        }))
    }

    /// False only if the key was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let m = self.bits.len() as u64 * 8;
        let mut all = true;
        for_each_probe(key_hash(user_key), self.probes, m, |bit| {
            all &= self
                .bits
                .get((bit / 8) as usize)
                .is_some_and(|byte| byte & (1 << (bit % 8)) != 0);
        });
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(keys: impl Iterator<Item = Vec<u8>>, bits: u32) -> Option<Bloom> {
        let hashes: Vec<u64> = keys.map(|k| key_hash(&k)).collect();
        Bloom::decode(build(&hashes, bits)).unwrap()
    }

    #[test]
    fn no_false_negatives_and_rate_near_theory() {
        let n = 10_000u32;
        let bloom = filter((0..n).map(|i| format!("user{i}").into_bytes()), 10).unwrap();
        for i in 0..n {
            assert!(bloom.may_contain(format!("user{i}").as_bytes()));
        }
        let fp = (0..n)
            .filter(|i| bloom.may_contain(format!("other{i}").as_bytes()))
            .count();
        // Theory at 10 bits/key and 6 probes: (1 - e^(-0.6))^6 ≈ 0.84%.
        let rate = fp as f64 / f64::from(n);
        assert!(rate < 0.02, "false-positive rate {rate}");
    }

    #[test]
    fn probes_follow_bits_per_key() {
        assert_eq!(probes_for(1), 1);
        assert_eq!(probes_for(10), 6);
        assert_eq!(probes_for(20), 13);
        assert_eq!(probes_for(100), 30);
    }

    #[test]
    fn zero_bits_means_no_filter_and_garbage_is_refused() {
        assert!(build(&[1, 2, 3], 0).is_empty());
        assert!(filter(std::iter::empty(), 0).is_none());
        // An empty table with a filter has the minimal bit array and answers no.
        let empty = filter(std::iter::empty(), 10).unwrap();
        assert!(!empty.may_contain(b"x"));
        assert!(Bloom::decode(vec![5]).is_err());
        assert!(Bloom::decode(vec![0xff, 0]).is_err());
        assert!(Bloom::decode(vec![0xff, 31]).is_err());
    }
}
