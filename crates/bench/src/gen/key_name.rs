//! YCSB's record keys (`CoreWorkload.buildKeyName`): "user" followed by the record number,
//! hashed with `fnvhash64` unless inserts are ordered, and left-padded with zeros to
//! `zero_padding` digits.

use super::fnvhash64;

/// The key of record `keynum`. With `ordered == false` (YCSB's default `insertorder=hashed`)
/// consecutive records land far apart in key order; with the default `zeropadding=1` no
/// zeros are added.
pub fn build_key_name(keynum: i64, zero_padding: usize, ordered: bool) -> String {
    let n = if ordered { keynum } else { fnvhash64(keynum) };
    let digits = n.to_string();
    let fill = zero_padding.saturating_sub(digits.len());
    let mut key = String::with_capacity(4 + fill + digits.len());
    key.push_str("user");
    key.extend(std::iter::repeat_n('0', fill));
    key.push_str(&digits);
    key
}

#[cfg(test)]
mod tests {
    use super::build_key_name;

    /// Known answers printed by YCSB 0.17.0's `CoreWorkload.buildKeyName`.
    #[test]
    fn matches_ycsb() {
        assert_eq!(build_key_name(0, 1, false), "user6284781860667377211");
        assert_eq!(build_key_name(42, 1, false), "user55488592825689361");
        assert_eq!(build_key_name(42, 20, false), "user00055488592825689361");
        assert_eq!(build_key_name(5, 1, true), "user5");
        assert_eq!(build_key_name(5, 8, true), "user00000005");
        assert_eq!(build_key_name(123, 0, true), "user123");
        assert_eq!(build_key_name(-7, 4, true), "user00-7");
    }
}
