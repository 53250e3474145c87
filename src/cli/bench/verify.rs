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

/// When a write ran, in tickets of a counter the client threads of a phase share, one taken
/// just before the call and one just after it returned. A write whose `end` is below
/// another's `start` returned before the other was issued, so the store applied it first;
/// two writes whose spans overlap may have been applied in either order. A phase of one
/// client takes no tickets: its writes are in the order it issued them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
}

/// A key's last write: what it left, and when it ran.
#[derive(Clone, Copy, Debug)]
struct Last {
    holds: Holds,
    span: Span,
}

/// The keys written so far and what they must hold.
#[derive(Debug, Default)]
pub struct Oracle {
    keys: HashMap<Vec<u8>, Last>,
    /// Keys that client threads wrote at overlapping times in a phase of several: what
    /// the writes other than `keys`' may have left instead, had the store ordered them
    /// last.
    also: HashMap<Vec<u8>, Vec<Holds>>,
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
    /// The oracle of one client thread of a phase that runs several, to be folded into
    /// the run's with [`Oracle::absorb`]: what a key held before the phase is not its to
    /// know.
    pub fn for_client() -> Oracle {
        Oracle {
            existing_db: true,
            ..Oracle::default()
        }
    }

    /// Tells the oracle that the store held data before the run.
    pub fn set_existing_db(&mut self) {
        self.existing_db = true;
    }

    /// Records a write of `key` that ran over `span`: a put of `value`, or a delete
    /// (`None`: the key must be absent, whether it was there or not). A write that returned
    /// an error (`applied` false) leaves either what it wrote or what the key held before.
    /// Copies the key only the first time it is seen: most writes of a run overwrite.
    pub fn record(&mut self, key: &[u8], value: Option<&[u8]>, applied: bool, span: Span) {
        let before = (!applied).then(|| self.holds(key));
        self.set(key, value.map(Expect::of), span);
        if let Some(before) = before {
            self.uncertain.insert(key.to_vec(), before);
        }
    }

    fn set(&mut self, key: &[u8], holds: Holds, span: Span) {
        if !self.uncertain.is_empty() {
            self.uncertain.remove(key);
        }
        if !self.also.is_empty() {
            self.also.remove(key);
        }
        let last = Last { holds, span };
        match self.keys.get_mut(key) {
            Some(e) => *e = last,
            None => {
                self.keys.insert(key.to_vec(), last);
            }
        }
    }

    /// What `key` holds now as far as the oracle knows: nothing if it was never written,
    /// unless the store held data before the run (then `None`: not known).
    fn holds(&self, key: &[u8]) -> Option<Holds> {
        match self.keys.get(key) {
            Some(last) => Some(last.holds),
            None if self.existing_db => None,
            None => Some(None),
        }
    }

    /// Folds in the oracles of the client threads of a phase that just ended (every one of
    /// its writes came after every write this oracle holds). A key one client wrote holds
    /// its last write; a key several wrote holds the last write of one of them: of the one
    /// that started last, or of any other whose write overlapped that one (its `end` is not
    /// below the latest `start`), as the store may have ordered those either way. A key
    /// whose write failed in any client may hold anything (the run has failed anyway).
    pub fn absorb(&mut self, clients: Vec<Oracle>) {
        let mut writes: HashMap<Vec<u8>, Vec<(Last, bool)>> = HashMap::new();
        for client in clients {
            let Oracle {
                keys, uncertain, ..
            } = client;
            for (key, last) in keys {
                let failed = uncertain.contains_key(&key);
                writes.entry(key).or_default().push((last, failed));
            }
        }
        for (key, mut lasts) in writes {
            lasts.sort_unstable_by_key(|(last, _)| last.span.start);
            let failed = lasts.iter().any(|&(_, failed)| failed);
            let Some(&(latest, _)) = lasts.last() else {
                continue;
            };
            let others: Vec<Holds> = lasts[..lasts.len() - 1]
                .iter()
                .filter(|(last, _)| last.span.end >= latest.span.start)
                .map(|(last, _)| last.holds)
                .collect();
            self.set(&key, latest.holds, latest.span);
            if failed {
                self.uncertain.insert(key.clone(), None);
            }
            if !others.is_empty() {
                self.also.insert(key, others);
            }
        }
    }

    /// Makes the oracle expect another value for its smallest key that holds one (a value
    /// no write gave it: the digest differs), and that value only, so that a faithful store
    /// fails the check on exactly that key. For `--verify`'s test hook; an oracle without values is left as it
    /// is.
    pub fn inject_mismatch(&mut self) {
        let smallest = self
            .keys
            .iter_mut()
            .filter_map(|(k, last)| last.holds.as_mut().map(|e| (k, e)))
            .min_by(|a, b| a.0.cmp(b.0));
        let Some((key, expect)) = smallest else {
            return;
        };
        expect.digest = !expect.digest;
        // Nothing else it may hold is accepted either.
        let key = key.clone();
        self.also.remove(&key);
        self.uncertain.remove(&key);
    }

    /// Reads back every key through `get` and compares. Keys are checked in sorted order so
    /// that the examples named are the same from run to run. An error of `get` stops the
    /// check and is returned.
    pub fn check<E>(
        &self,
        mut get: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<VerifyResult, E> {
        let mut keys: Vec<(&Vec<u8>, &Last)> = self.keys.iter().collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut result = VerifyResult::default();
        for (key, last) in keys {
            let found = get(key)?;
            result.checked += 1;
            let accepted = |found: Option<&[u8]>| {
                let uncertain = self
                    .uncertain
                    .get(key.as_slice())
                    .is_some_and(|before| before.is_none_or(|b| compare(b, found).is_none()));
                let reordered = self.also.get(key.as_slice()).is_some_and(|others| {
                    others.iter().any(|&other| compare(other, found).is_none())
                });
                uncertain || reordered
            };
            let problem = compare(last.holds, found.as_deref());
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

/// The single client's writes, in order, for the tests.
#[cfg(test)]
impl Oracle {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.record(key, Some(value), true, Span::default());
    }

    fn delete(&mut self, key: &[u8]) {
        self.record(key, None, true, Span::default());
    }

    fn put_uncertain(&mut self, key: &[u8], value: &[u8]) {
        self.record(key, Some(value), false, Span::default());
    }

    fn delete_uncertain(&mut self, key: &[u8]) {
        self.record(key, None, false, Span::default());
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

    /// A client's oracle holding one write of `key` over tickets `start..end`.
    fn client(key: &[u8], value: Option<&[u8]>, start: u64, end: u64) -> Oracle {
        let mut o = Oracle::for_client();
        o.record(key, value, true, Span { start, end });
        o
    }

    #[test]
    fn overlapping_writes_of_two_clients_may_land_in_either_order() {
        let mut oracle = Oracle::default();
        oracle.put(b"k", b"old");
        oracle.absorb(vec![
            client(b"k", Some(b"x"), 1, 4),
            client(b"k", Some(b"y"), 2, 3),
            client(b"j", None, 5, 6),
        ]);
        let mut store: BTreeMap<Vec<u8>, Vec<u8>> = [(b"k".to_vec(), b"x".to_vec())].into();
        assert_eq!(check(&oracle, &store).mismatches, 0);
        store.insert(b"k".to_vec(), b"y".to_vec());
        assert_eq!(check(&oracle, &store).mismatches, 0);
        // Neither the value before the phase nor a lost key passes.
        store.insert(b"k".to_vec(), b"old".to_vec());
        assert_eq!(check(&oracle, &store).mismatches, 1);
        store.remove(b"k".as_slice());
        assert_eq!(check(&oracle, &store).examples, vec!["key k: not found"]);
        // A later single-client write settles the key again.
        oracle.put(b"k", b"z");
        store.insert(b"k".to_vec(), b"y".to_vec());
        assert_eq!(check(&oracle, &store).mismatches, 1);
    }

    #[test]
    fn a_write_that_returned_before_another_began_is_overwritten() {
        let mut oracle = Oracle::default();
        oracle.absorb(vec![
            client(b"k", Some(b"first"), 1, 2),
            client(b"k", Some(b"second"), 3, 4),
            client(b"d", Some(b"v"), 5, 6),
            client(b"d", None, 7, 8),
        ]);
        let mut store: BTreeMap<Vec<u8>, Vec<u8>> = [(b"k".to_vec(), b"second".to_vec())].into();
        assert_eq!(check(&oracle, &store).mismatches, 0);
        store.insert(b"k".to_vec(), b"first".to_vec());
        store.insert(b"d".to_vec(), b"v".to_vec());
        let r = check(&oracle, &store);
        assert_eq!((r.checked, r.mismatches), (2, 2));
    }

    #[test]
    fn a_failed_write_in_a_client_accepts_anything() {
        let mut oracle = Oracle::default();
        let mut failed = Oracle::for_client();
        failed.record(b"k", Some(b"x"), false, Span { start: 1, end: 2 });
        oracle.absorb(vec![failed, client(b"j", Some(b"y"), 3, 4)]);
        let store: BTreeMap<Vec<u8>, Vec<u8>> = [
            (b"k".to_vec(), b"other".to_vec()),
            (b"j".to_vec(), b"y".to_vec()),
        ]
        .into();
        assert_eq!(check(&oracle, &store).mismatches, 0);
    }
}
