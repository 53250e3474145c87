//! The oracle: what a single writer asked the store to do since the last verified state,
//! and which of it was acknowledged, and the check of a recovered store against it.
//!
//! The writer is single and sequential, so its operations are totally ordered, and at a
//! crash at most the last one is in flight (begun, not acknowledged). The store after a
//! crash must be in the state after some prefix of the operations: `state(i)` = the
//! verified baseline with operations `0..i` applied. The prefix may not be shorter than
//! `durable` (what was promised to survive: with a synced WAL every acknowledged write,
//! without it everything up to the last acknowledged flush) nor longer than the operations
//! begun. That is the whole guarantee, for both WAL modes:
//! - with a sync on every write, `durable` = acknowledged, so the prefix is every
//!   acknowledged write, plus perhaps the one in flight;
//! - without sync, any acknowledged write may be lost, but only as part of a suffix: no
//!   later write may be present while an earlier one is missing (a consistent point in
//!   time), and nothing before the last acknowledged flush may be missing.
//!
//! Values name their [`Version`], so a recovered key either holds the exact version of one
//! write or is absent, and the check is exact.

use std::collections::HashMap;

use crate::value::Version;

/// One key's change: a put of `version`, or a delete (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    /// The key's number (`0..keys`).
    pub key: u32,
    /// The version put, or `None` for a delete.
    pub version: Option<Version>,
}

/// How an operation reaches the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpKind {
    /// A single put (one write with a version).
    Put,
    /// A single delete (one write without a version).
    Delete,
    /// An atomic batch of puts and deletes.
    Batch,
    /// A memtable flush: changes nothing, but makes everything before it durable.
    Flush,
}

/// One operation of the writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// How it reaches the engine.
    pub kind: OpKind,
    /// The key changes it makes, in order (none for a flush).
    pub writes: Vec<Write>,
}

/// The keys of a store as read back: each key's version, or absent.
pub type State = Vec<Option<Version>>;

/// What a check found wrong, key by key. All zero for a correct store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems {
    /// Keys absent or older than the durable state, where that state holds a value: an
    /// acknowledged (durable) write is lost.
    pub lost: u64,
    /// Keys holding an older value where the durable state has them deleted.
    pub resurrected: u64,
    /// Keys holding a version no write of this epoch or the baseline produced.
    pub phantom: u64,
    /// 1 if every key on its own is explained by some allowed prefix but no single prefix
    /// explains them all: a later write survived an earlier one.
    pub not_a_prefix: u64,
    /// One line per problem key, for the report (bounded).
    pub details: Vec<String>,
}

impl Problems {
    /// The number of problems of every kind; 0 for a correct store.
    pub fn total(&self) -> u64 {
        self.lost + self.resurrected + self.phantom + self.not_a_prefix
    }
}

/// The outcome of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The store is in `state(prefix)`.
    Prefix(usize),
    /// The store is in no allowed state: what is wrong with it.
    Wrong(Problems),
}

/// Details kept per check: enough to find the key, not a flood.
const MAX_DETAILS: usize = 12;

/// The single writer's operations since the last verified state.
#[derive(Clone, Debug)]
pub struct Oracle {
    baseline: State,
    ops: Vec<Op>,
    acked: usize,
    durable: usize,
    /// `state(ops.len())`: what reads must see when nothing is in flight.
    current: State,
    next_version: Version,
}

impl Oracle {
    /// An oracle of `keys` keys, all absent; versions start at 1.
    pub fn new(keys: u32) -> Oracle {
        Oracle::from_state(vec![None; keys as usize], 1)
    }

    /// An oracle whose verified state is `state`, handing out versions from `next_version`.
    pub fn from_state(state: State, next_version: Version) -> Oracle {
        Oracle {
            current: state.clone(),
            baseline: state,
            ops: Vec::new(),
            acked: 0,
            durable: 0,
            next_version,
        }
    }

    /// Size of the key space.
    pub fn keys(&self) -> u32 {
        self.baseline.len() as u32
    }

    /// A fresh version, never handed out before.
    pub fn new_version(&mut self) -> Version {
        let v = self.next_version;
        self.next_version += 1;
        v
    }

    /// The first version not handed out yet.
    pub fn next_version(&self) -> Version {
        self.next_version
    }

    /// Operations begun since the baseline.
    pub fn begun(&self) -> usize {
        self.ops.len()
    }

    /// Operations acknowledged since the baseline (a prefix of those begun).
    pub fn acked(&self) -> usize {
        self.acked
    }

    /// Operations promised to survive a crash (a prefix of those acknowledged): up to the
    /// last synced write or flush.
    pub fn durable(&self) -> usize {
        self.durable
    }

    /// The operation begun and not acknowledged yet, if any.
    pub fn in_flight(&self) -> Option<&Op> {
        self.ops.get(self.acked)
    }

    /// Acknowledged individual key writes (puts and deletes) since the baseline.
    pub fn acked_writes(&self) -> u64 {
        self.ops
            .iter()
            .take(self.acked)
            .map(|op| op.writes.len() as u64)
            .sum()
    }

    /// Whether every key `op` writes is in the key space: an operation read from outside
    /// (a child's log) is checked before [`Oracle::begin`].
    pub fn check_keys(&self, op: &Op) -> Result<(), String> {
        match op.writes.iter().find(|w| w.key >= self.keys()) {
            Some(w) => Err(format!(
                "an operation writes key {}, outside the {} keys of the store",
                w.key,
                self.keys()
            )),
            None => Ok(()),
        }
    }

    /// The writer is about to issue `op` (its intent). Versions it carries that this
    /// oracle did not hand out (a child process's) are taken into account. Its keys are in
    /// the key space (see [`Oracle::check_keys`]); a key outside it is not tracked.
    pub fn begin(&mut self, op: Op) {
        assert_eq!(
            self.acked,
            self.ops.len(),
            "a single writer begins an operation only after the previous one returned"
        );
        for w in &op.writes {
            if let Some(slot) = self.current.get_mut(w.key as usize) {
                *slot = w.version;
            }
            if let Some(v) = w.version {
                self.next_version = self.next_version.max(v + 1);
            }
        }
        self.ops.push(op);
    }

    /// The operation in flight returned `Ok`. `durable`: everything up to it is promised to
    /// survive (a synced write, a flush).
    pub fn ack(&mut self, durable: bool) {
        assert!(self.acked < self.ops.len(), "no operation in flight");
        self.acked += 1;
        if durable {
            self.durable = self.acked;
        }
    }

    /// What a read of key `k` must return now (nothing in flight); absent for a key
    /// outside the key space.
    pub fn expected(&self, k: u32) -> Option<Version> {
        self.current.get(k as usize).copied().flatten()
    }

    /// The state after the first `i` operations.
    pub fn state(&self, i: usize) -> State {
        let mut s = self.baseline.clone();
        for w in self.ops.iter().take(i).flat_map(|op| &op.writes) {
            if let Some(slot) = s.get_mut(w.key as usize) {
                *slot = w.version;
            }
        }
        s
    }

    /// Checks a recovered store: the longest allowed prefix whose state it is, or what is
    /// wrong with it.
    pub fn check(&self, found: &State) -> Verdict {
        assert_eq!(found.len(), self.baseline.len(), "key space size");
        let mut state = self.state(self.durable);
        let mut mismatched = state.iter().zip(found).filter(|(a, b)| a != b).count();
        let mut best = None;
        for i in self.durable..=self.ops.len() {
            if mismatched == 0 {
                best = Some(i);
            }
            let Some(op) = self.ops.get(i) else { break };
            for w in &op.writes {
                let k = w.key as usize;
                let (Some(s), Some(f)) = (state.get_mut(k), found.get(k)) else {
                    continue;
                };
                let was = s == f;
                *s = w.version;
                let is = s == f;
                mismatched = mismatched + usize::from(was && !is) - usize::from(is && !was);
            }
        }
        match best {
            Some(i) => Verdict::Prefix(i),
            None => Verdict::Wrong(self.problems(found)),
        }
    }

    /// Classifies each key that no allowed prefix explains (see [`Problems`]).
    fn problems(&self, found: &State) -> Problems {
        let durable_state = self.state(self.durable);
        let allowed = self.allowed_per_key(&durable_state);
        let known = self.known_versions();
        let mut p = Problems::default();
        let keys = found.iter().zip(&allowed).zip(&durable_state);
        for (k, ((f, allowed), &expected)) in keys.enumerate() {
            if allowed.contains(f) {
                continue;
            }
            let what = match f {
                Some(v) if !known.contains_key(v) => {
                    p.phantom += 1;
                    "a version never written"
                }
                Some(_) if expected.is_none() => {
                    p.resurrected += 1;
                    "a deleted key came back"
                }
                _ => {
                    p.lost += 1;
                    "an acknowledged durable write is lost"
                }
            };
            if p.details.len() < MAX_DETAILS {
                p.details.push(format!(
                    "key {k}: found {f:?}, durable state {expected:?}, allowed {allowed:?}: {what}"
                ));
            }
        }
        if p.total() == 0 {
            p.not_a_prefix = 1;
            p.details.push(format!(
                "every key is explained by some prefix in {}..={}, but no single prefix \
                 explains all of them: a later write survived an earlier one",
                self.durable,
                self.ops.len()
            ));
        }
        p
    }

    /// Per key, every value it holds in the allowed states `durable..=begun`.
    fn allowed_per_key(&self, durable_state: &State) -> Vec<Vec<Option<Version>>> {
        let mut allowed: Vec<Vec<Option<Version>>> =
            durable_state.iter().map(|&v| vec![v]).collect();
        for w in self.ops.iter().skip(self.durable).flat_map(|op| &op.writes) {
            if let Some(a) = allowed.get_mut(w.key as usize) {
                a.push(w.version);
            }
        }
        allowed
    }

    /// Every version of the baseline or of an operation since, with its key.
    fn known_versions(&self) -> HashMap<Version, u32> {
        let base = self
            .baseline
            .iter()
            .enumerate()
            .filter_map(|(k, v)| v.map(|v| (v, k as u32)));
        let written = self
            .ops
            .iter()
            .flat_map(|op| &op.writes)
            .filter_map(|w| w.version.map(|v| (v, w.key)));
        base.chain(written).collect()
    }

    /// Makes `state(prefix)` the new verified baseline (after a check found it): the
    /// operations after it were lost and are forgotten; their versions are never reused.
    pub fn rebase(&mut self, prefix: usize) {
        self.baseline = self.state(prefix);
        self.current = self.baseline.clone();
        self.ops.clear();
        self.acked = 0;
        self.durable = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: u32, v: Version) -> Op {
        Op {
            kind: OpKind::Put,
            writes: vec![Write {
                key,
                version: Some(v),
            }],
        }
    }

    fn del(key: u32) -> Op {
        Op {
            kind: OpKind::Delete,
            writes: vec![Write { key, version: None }],
        }
    }

    /// put k0=1, put k1=2, delete k0, put k1=3, with `durable` set after op `durable_at`.
    fn oracle(durable_at: usize, in_flight: bool) -> Oracle {
        let mut o = Oracle::new(3);
        let ops = [put(0, 1), put(1, 2), del(0), put(1, 3)];
        let n = ops.len();
        for (i, op) in ops.into_iter().enumerate() {
            o.begin(op);
            if !(in_flight && i == n - 1) {
                o.ack(i + 1 == durable_at);
            }
        }
        o
    }

    #[test]
    fn every_state_from_the_durable_one_to_the_last_begun_is_accepted() {
        let o = oracle(2, true);
        assert_eq!(o.check(&vec![Some(1), Some(2), None]), Verdict::Prefix(2));
        assert_eq!(o.check(&vec![None, Some(2), None]), Verdict::Prefix(3));
        assert_eq!(o.check(&vec![None, Some(3), None]), Verdict::Prefix(4));
    }

    #[test]
    fn a_lost_durable_write_is_lost() {
        let o = oracle(4, false);
        let Verdict::Wrong(p) = o.check(&vec![None, Some(2), None]) else {
            panic!("accepted a stale k1");
        };
        assert_eq!((p.lost, p.resurrected, p.phantom), (1, 0, 0), "{p:?}");
    }

    #[test]
    fn a_deleted_key_coming_back_is_a_resurrection() {
        let o = oracle(3, false);
        let Verdict::Wrong(p) = o.check(&vec![Some(1), Some(2), None]) else {
            panic!("accepted a resurrected k0");
        };
        assert_eq!((p.lost, p.resurrected), (0, 1), "{p:?}");
    }

    #[test]
    fn a_version_never_written_is_a_phantom() {
        let o = oracle(0, false);
        assert_eq!(o.check(&vec![Some(1), None, None]), Verdict::Prefix(1));
        let Verdict::Wrong(p) = o.check(&vec![None, None, Some(7)]) else {
            panic!("accepted a phantom");
        };
        assert_eq!(p.phantom, 1, "{p:?}");
    }

    #[test]
    fn a_later_write_without_an_earlier_one_is_not_a_prefix() {
        // Nothing durable: k0 absent is allowed (state 0), k1=2 is allowed (state 2), but
        // not together: state 2 has k0=1.
        let mut o = Oracle::new(2);
        o.begin(put(0, 1));
        o.ack(false);
        o.begin(put(1, 2));
        o.ack(false);
        let Verdict::Wrong(p) = o.check(&vec![None, Some(2)]) else {
            panic!("accepted the second write without the first");
        };
        assert_eq!((p.not_a_prefix, p.lost), (1, 0), "{p:?}");
    }

    #[test]
    fn a_key_outside_the_key_space_is_an_error_not_a_panic() {
        // A child's log that names key 3 of a 3-key store.
        let mut o = Oracle::new(3);
        let op = put(3, 1);
        let err = o.check_keys(&op).unwrap_err();
        assert!(err.contains("key 3"), "{err}");
        assert!(o.check_keys(&put(2, 1)).is_ok());
        // Past the check, such a key is not tracked.
        o.begin(op);
        o.ack(true);
        assert_eq!(o.expected(3), None);
        assert_eq!(o.check(&vec![None; 3]), Verdict::Prefix(1));
    }

    #[test]
    fn rebase_keeps_the_found_state_and_fresh_versions() {
        let mut o = oracle(0, false);
        let Verdict::Prefix(i) = o.check(&vec![Some(1), Some(2), None]) else {
            panic!()
        };
        o.rebase(i);
        assert_eq!(
            (o.begun(), o.expected(0), o.expected(1)),
            (0, Some(1), Some(2))
        );
        assert_eq!(o.new_version(), 4);
    }
}
