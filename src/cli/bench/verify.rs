//! `--verify`: an oracle of what every key must hold at the end of the run.
//!
//! Per key, the oracle keeps what its last write left: a digest of the value put, not the
//! value itself (so it costs a few dozen bytes per key whatever the value size), or nothing
//! after a delete, when the key must be absent. Every put of a run carries a different
//! value (`zkv_bench::ValueGenerator`), so a store that returns an older value of a key is
//! caught, not only one that loses it or keeps one deleted.

use std::collections::HashMap;

/// What a key must hold: the length and a 64-bit digest of its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Expect {
    len: usize,
    digest: u64,
}

impl Expect {
    fn of(value: &[u8]) -> Expect {
        Expect {
            len: value.len(),
            digest: digest(value),
        }
    }
}

/// A 64-bit digest taken 8 bytes at a time: each little-endian word (the tail zero-padded;
/// the length is compared apart) is xored into the state, which is then multiplied by an
/// odd constant and rotated. Each step is a bijection of the state and of the word, so two
/// values of the same length that differ in a single word always get different digests,
/// and others collide with a probability of about 2^-64 — enough to tell two writes of one
/// key apart. Word-wise, it makes an eighth of the multiplies of a byte-wise FNV-1a, which
/// took about a sixth of a `--verify` run's time.
fn digest(bytes: &[u8]) -> u64 {
    const MUL: u64 = 0x9E37_79B9_7F4A_7C15;
    let step = |h: u64, word: u64| (h ^ word).wrapping_mul(MUL).rotate_left(29);
    let mut chunks = bytes.chunks_exact(8);
    let mut h = 0xCBF2_9CE4_8422_2325;
    for chunk in &mut chunks {
        h = step(h, word(chunk));
    }
    let tail = chunks.remainder();
    if tail.is_empty() {
        h
    } else {
        step(h, word(tail))
    }
}

/// Up to 8 bytes as a little-endian word, zero-padded.
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// What a key must hold: a value, or nothing (deleted).
type Holds = Option<Expect>;

/// The keys written so far and what they must hold.
#[derive(Debug, Default)]
pub struct Oracle {
    keys: HashMap<Vec<u8>, Holds>,
    /// Keys whose last write returned an error: it may or may not have been applied (a
    /// write's WAL record and memtable insert can succeed before a background step of the
    /// same call fails). The key may also hold what it held before (`Some(None)`:
    /// nothing; `None`: unknown, anything is accepted).
    uncertain: HashMap<Vec<u8>, Option<Holds>>,
    /// The store held data before the run (`--use-existing-db`): a key the run has not
    /// written yet may hold anything.
    existing_db: bool,
}

/// The outcome of [`Oracle::check`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct VerifyResult {
    /// Keys read back.
    pub checked: u64,
    /// Keys whose value was missing, stale or corrupt, or that were found after a delete.
    pub mismatches: u64,
    /// The first few mismatching keys, described, for the error message.
    pub examples: Vec<String>,
}

/// How many mismatching keys are named in the error message.
const EXAMPLES: usize = 3;

impl Oracle {
    /// Tells the oracle that the store held data before the run.
    pub fn set_existing_db(&mut self) {
        self.existing_db = true;
    }

    /// Records a put of `value` under `key`. Copies the key only the first time it is
    /// seen: most writes of a run overwrite.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.set(key, Some(Expect::of(value)));
    }

    /// Records a delete of `key`: it must be absent (whether it was there or not).
    pub fn delete(&mut self, key: &[u8]) {
        self.set(key, None);
    }

    fn set(&mut self, key: &[u8], holds: Holds) {
        if !self.uncertain.is_empty() {
            self.uncertain.remove(key);
        }
        match self.keys.get_mut(key) {
            Some(e) => *e = holds,
            None => {
                self.keys.insert(key.to_vec(), holds);
            }
        }
    }

    /// Records a put that returned an error: the key holds either `value` or what it held
    /// before.
    pub fn put_uncertain(&mut self, key: &[u8], value: &[u8]) {
        let before = self.holds(key);
        self.put(key, value);
        self.uncertain.insert(key.to_vec(), before);
    }

    /// Records a delete that returned an error: the key is absent or holds what it held
    /// before.
    pub fn delete_uncertain(&mut self, key: &[u8]) {
        let before = self.holds(key);
        self.delete(key);
        self.uncertain.insert(key.to_vec(), before);
    }

    /// What `key` holds now as far as the oracle knows: nothing if it was never written,
    /// unless the store held data before the run (then `None`: not known).
    fn holds(&self, key: &[u8]) -> Option<Holds> {
        match self.keys.get(key) {
            Some(holds) => Some(*holds),
            None if self.existing_db => None,
            None => Some(None),
        }
    }

    /// Makes the oracle expect another value for its smallest key that holds one (a value
    /// no write gave it: the digest differs), so that a faithful store fails the check on
    /// exactly that key. For `--verify`'s test hook; an oracle without values is left as it
    /// is.
    pub fn inject_mismatch(&mut self) {
        let smallest = self
            .keys
            .iter_mut()
            .filter_map(|(k, holds)| holds.as_mut().map(|e| (k, e)))
            .min_by(|a, b| a.0.cmp(b.0));
        if let Some((_, expect)) = smallest {
            expect.digest = !expect.digest;
        }
    }

    /// Reads back every key through `get` and compares. Keys are checked in sorted order so
    /// that the examples named are the same from run to run. An error of `get` stops the
    /// check and is returned.
    pub fn check<E>(
        &self,
        mut get: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<VerifyResult, E> {
        let mut keys: Vec<(&Vec<u8>, &Holds)> = self.keys.iter().collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut result = VerifyResult::default();
        for (key, expect) in keys {
            let found = get(key)?;
            result.checked += 1;
            let accepted = |found: Option<&[u8]>| {
                self.uncertain
                    .get(key.as_slice())
                    .is_some_and(|before| before.is_none_or(|b| compare(b, found).is_none()))
            };
            let problem = compare(*expect, found.as_deref());
            if let Some(problem) = problem.filter(|_| !accepted(found.as_deref())) {
                result.mismatches += 1;
                if result.examples.len() < EXAMPLES {
                    result
                        .examples
                        .push(format!("key {}: {problem}", show_key(key)));
                }
            }
        }
        Ok(result)
    }
}

/// What is wrong with `found` where the key must hold `expect`, if anything.
fn compare(expect: Holds, found: Option<&[u8]>) -> Option<&'static str> {
    match (expect, found) {
        (None, None) => None,
        (None, Some(_)) => Some("found after its delete"),
        (Some(_), None) => Some("not found"),
        (Some(e), Some(v)) if Expect::of(v) == e => None,
        (Some(_), Some(_)) => Some("holds another value"),
    }
}

/// A key as text when it is printable (YCSB's `user...`), else in hex (db_bench's).
fn show_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(s) if s.chars().all(|c| c.is_ascii_graphic()) => s.to_string(),
        _ => key.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::convert::Infallible;

    /// An oracle and a store that both saw `writes`, in order.
    fn faithful(writes: [(&[u8], &[u8]); 3]) -> (Oracle, BTreeMap<Vec<u8>, Vec<u8>>) {
        let mut oracle = Oracle::default();
        let mut store = BTreeMap::new();
        for (k, v) in writes {
            oracle.put(k, v);
            store.insert(k.to_vec(), v.to_vec());
        }
        (oracle, store)
    }

    fn check(oracle: &Oracle, store: &BTreeMap<Vec<u8>, Vec<u8>>) -> VerifyResult {
        let result: Result<_, Infallible> = oracle.check(|k| Ok(store.get(k).cloned()));
        result.unwrap()
    }

    #[test]
    fn a_failed_write_may_or_may_not_be_there_and_nothing_else() {
        let (mut oracle, store) = faithful([(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]);
        oracle.put_uncertain(b"a", b"4");
        oracle.put_uncertain(b"c", b"5");
        // Neither failed write applied: the old value of a, no c.
        assert_eq!(check(&oracle, &store).mismatches, 0);
        // Both applied.
        let mut applied = store.clone();
        applied.insert(b"a".to_vec(), b"4".to_vec());
        applied.insert(b"c".to_vec(), b"5".to_vec());
        assert_eq!(check(&oracle, &applied).mismatches, 0);
        // Anything else is still caught: an older value of a, c lost after a later success.
        let mut older = store.clone();
        older.insert(b"a".to_vec(), b"1".to_vec());
        assert_eq!(check(&oracle, &older).mismatches, 1);
        oracle.put(b"c", b"6");
        assert_eq!(check(&oracle, &applied).mismatches, 1);
    }

    #[test]
    fn a_deleted_key_must_be_absent() {
        let (mut oracle, mut store) = faithful([(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]);
        oracle.delete(b"a");
        oracle.delete(b"never");
        // A store that kept the deleted key fails on it, and only on it.
        let r = check(&oracle, &store);
        assert_eq!((r.checked, r.mismatches), (3, 1));
        assert_eq!(
            r.examples,
            vec!["key a: found after its delete".to_string()]
        );
        store.remove(b"a".as_slice());
        assert_eq!(check(&oracle, &store).mismatches, 0);
        // A put after the delete makes the key expected again.
        oracle.put(b"a", b"4");
        assert_eq!(check(&oracle, &store).examples, vec!["key a: not found"]);
        // The injected mismatch goes to the smallest key that holds a value.
        let (mut oracle, store) = faithful([(b"b", b"2"), (b"c", b"3"), (b"d", b"4")]);
        oracle.delete(b"a");
        oracle.inject_mismatch();
        assert_eq!(
            check(&oracle, &store).examples,
            vec!["key b: holds another value"]
        );
    }

    #[test]
    fn on_an_existing_db_a_failed_first_write_may_leave_the_old_value() {
        let (mut oracle, mut store) = faithful([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]);
        oracle.set_existing_db();
        // "old" was on the image before the run; its put failed, its delete too.
        oracle.put_uncertain(b"old", b"new");
        oracle.delete_uncertain(b"gone");
        store.insert(b"old".to_vec(), b"loaded".to_vec());
        store.insert(b"gone".to_vec(), b"loaded".to_vec());
        assert_eq!(check(&oracle, &store).mismatches, 0);
        // A key this run wrote is still checked exactly.
        oracle.put_uncertain(b"a", b"4");
        store.insert(b"a".to_vec(), b"9".to_vec());
        assert_eq!(
            check(&oracle, &store).examples,
            vec!["key a: holds another value"]
        );
    }

    #[test]
    fn a_failed_delete_may_or_may_not_be_there() {
        let (mut oracle, store) = faithful([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]);
        oracle.delete_uncertain(b"a");
        assert_eq!(check(&oracle, &store).mismatches, 0);
        let mut applied = store.clone();
        applied.remove(b"a".as_slice());
        assert_eq!(check(&oracle, &applied).mismatches, 0);
        // Another value than the one before is still caught.
        applied.insert(b"a".to_vec(), b"9".to_vec());
        assert_eq!(check(&oracle, &applied).mismatches, 1);
    }

    #[test]
    fn a_faithful_store_passes() {
        let (oracle, store) = faithful([(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]);
        let r = check(&oracle, &store);
        assert_eq!((r.checked, r.mismatches), (2, 0));
    }

    #[test]
    fn stale_missing_and_corrupt_keys_are_caught() {
        let mut oracle = Oracle::default();
        oracle.put(b"stale", b"new value");
        oracle.put(b"lost", b"x");
        oracle.put(b"\x00\x01", b"short");
        oracle.put(b"zzz", b"fine");
        let store: BTreeMap<Vec<u8>, Vec<u8>> = [
            (b"stale".to_vec(), b"old value".to_vec()),
            (b"\x00\x01".to_vec(), b"shorter".to_vec()),
            (b"zzz".to_vec(), b"fine".to_vec()),
        ]
        .into();
        let r = check(&oracle, &store);
        assert_eq!((r.checked, r.mismatches), (4, 3));
        assert_eq!(r.examples.len(), EXAMPLES);
        assert_eq!(r.examples[0], "key 0001: holds another value");
        assert_eq!(r.examples[1], "key lost: not found");
        assert_eq!(r.examples[2], "key stale: holds another value");
    }

    #[test]
    fn values_differing_anywhere_get_different_digests() {
        let base: Vec<u8> = (0..37u8).collect();
        let d = digest(&base);
        for i in 0..base.len() {
            let mut other = base.clone();
            other[i] ^= 0x80;
            assert_ne!(digest(&other), d, "byte {i}");
        }
        // The zero padding of the tail is told apart by the length the oracle keeps too.
        assert_eq!(Expect::of(&[1, 2, 3]), Expect::of(&[1, 2, 3]));
        assert_ne!(Expect::of(&[1, 2, 3]), Expect::of(&[1, 2, 3, 0]));
    }

    #[test]
    fn an_injected_mismatch_fails_exactly_one_key() {
        let (mut oracle, store) = faithful([(b"b", b"2"), (b"a", b"1"), (b"c", b"3")]);
        oracle.inject_mismatch();
        let r = check(&oracle, &store);
        assert_eq!((r.checked, r.mismatches), (3, 1));
        assert_eq!(r.examples, vec!["key a: holds another value".to_string()]);
        let mut empty = Oracle::default();
        empty.inject_mismatch();
        assert_eq!(check(&empty, &store).checked, 0);
    }

    #[test]
    fn a_read_error_stops_the_check() {
        let mut oracle = Oracle::default();
        oracle.put(b"k", b"v");
        let r: Result<VerifyResult, &str> = oracle.check(|_| Err("device gone"));
        assert_eq!(r, Err("device gone"));
    }
}
