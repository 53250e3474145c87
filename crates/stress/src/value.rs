//! Keys and values of the harness.
//!
//! A key is a number below the key-space size, written `k000042`. A value is a pure function
//! of its key and a version: every write the harness issues gets a version that is never
//! used again, so a value read back names exactly the write that produced it. A value
//! carries a header (key, version, body length) and a body derived from both, so a read can
//! tell a stale value (an older version), a value from another key, and damaged bytes apart.

/// The number of one write; unique over a store's whole life.
pub type Version = u64;

/// The key of number `k`.
pub fn key(k: u32) -> Vec<u8> {
    format!("k{k:06}").into_bytes()
}

/// The number of a key written by [`key`].
pub fn parse_key(bytes: &[u8]) -> Option<u32> {
    let digits = bytes.strip_prefix(b"k")?;
    if digits.len() != 6 {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// splitmix64: a cheap, well-mixed stream, enough to make bodies differ per (key, version).
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn seed(k: u32, version: Version) -> u64 {
    mix(u64::from(k) << 40 ^ version)
}

/// The body length of (k, version): between 1 and `max_body` bytes.
fn body_len(k: u32, version: Version, max_body: usize) -> usize {
    1 + (seed(k, version) % max_body.max(1) as u64) as usize
}

fn body(k: u32, version: Version, len: usize) -> impl Iterator<Item = u8> {
    let s = seed(k, version);
    (0..len).map(move |i| (mix(s ^ (i as u64 / 8)) >> ((i % 8) * 8)) as u8)
}

/// The value of key `k` at `version`, with a body of at most `max_body` bytes.
pub fn value(k: u32, version: Version, max_body: usize) -> Vec<u8> {
    let len = body_len(k, version, max_body);
    let mut v = format!("{k}:{version}:{len}:").into_bytes();
    v.extend(body(k, version, len));
    v
}

/// The version a value of key `k` holds, or why the value is not one the harness wrote
/// for `k`.
pub fn decode(k: u32, value: &[u8]) -> Result<Version, String> {
    let bad = |why: &str| Err(format!("key {k}: {why} (value of {} bytes)", value.len()));
    let mut fields = value.splitn(4, |&b| b == b':');
    let mut number = || -> Option<u64> { std::str::from_utf8(fields.next()?).ok()?.parse().ok() };
    let (Some(owner), Some(version), Some(len)) = (number(), number(), number()) else {
        return bad("unreadable header");
    };
    if owner != u64::from(k) {
        return bad(&format!("value of key {owner}"));
    }
    let header = format!("{owner}:{version}:{len}:").len();
    let rest = value.get(header..).unwrap_or_default();
    if rest.len() as u64 != len {
        return bad(&format!("body of {} bytes, header says {len}", rest.len()));
    }
    if !rest.iter().copied().eq(body(k, version, rest.len())) {
        return bad(&format!("damaged body of version {version}"));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_damage_is_seen() {
        for (k, version) in [(0, 1), (7, 123_456), (999_999, u64::MAX >> 1)] {
            let v = value(k, version, 300);
            assert_eq!(decode(k, &v), Ok(version));
            assert_eq!(parse_key(&key(k)), Some(k));
            assert!(decode(k + 1, &v).is_err(), "another key's value");
            let mut damaged = v.clone();
            let last = damaged.len() - 1;
            damaged[last] ^= 1;
            assert!(decode(k, &damaged).is_err(), "a flipped bit");
            assert!(decode(k, &v[..v.len() - 1]).is_err(), "a cut value");
        }
        assert_eq!(parse_key(b"k12"), None);
    }

    #[test]
    fn lengths_vary_within_the_bound() {
        let lens: Vec<usize> = (0..200).map(|v| body_len(3, v, 50)).collect();
        assert!(lens.iter().all(|&l| (1..=50).contains(&l)));
        assert!(lens.iter().min() < lens.iter().max());
    }
}
