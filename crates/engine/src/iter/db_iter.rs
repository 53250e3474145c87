//! The user's view of the database: for each user key, the newest entry visible at a
//! snapshot, with deleted keys hidden, within `[lower, upper)` bounds, moving both ways
//! (RocksDB's DBIter).
//!
//! Forward, the inner iterator stands on the entry shown. Backward, it stands on the last
//! entry of the next smaller user key: a key's entries come oldest first that way, so the
//! newest visible one is known only after passing them all.

use std::sync::Arc;

use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};
use crate::{Error, Result};

/// Reads the value a blob reference points at: the database's blob files, as a read sees
/// them.
pub trait BlobFetch: Send + Sync {
    /// The value of `user_key` that the encoded blob index `index` points at.
    fn fetch(&self, user_key: &[u8], index: &[u8]) -> Result<Vec<u8>>;
}

/// Entries skipped one by one before the iterator reseeks past them instead (RocksDB's
/// `max_sequential_skip_in_iterations`, 8): many versions of one key cost a seek, not a scan.
const MAX_SEQUENTIAL_SKIP: usize = 8;

/// Which way the iterator last moved: it says where the inner iterator stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Backward,
}

/// An iterator over user keys and values at a snapshot, both ways.
pub struct DbIter {
    inner: Box<dyn InternalIterator>,
    direction: Direction,
    snapshot: SeqNo,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    valid: bool,
    /// Whether a positioning call was made (the `Iterator` impl starts with a seek otherwise).
    positioned: bool,
    /// Whether the `Iterator` impl walks backward ([`DbIter::reversed`]).
    reversed: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// An error met while advancing for the `Iterator` impl, returned on the following call.
    pending_error: Option<Error>,
    /// Where blob references are resolved (`None`: a blob reference is corruption).
    blobs: Option<Arc<dyn BlobFetch>>,
}

impl DbIter {
    /// A view of `inner` at `snapshot`, limited to user keys in `[lower, upper)`.
    pub fn new(
        inner: Box<dyn InternalIterator>,
        snapshot: SeqNo,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Self {
        DbIter {
            inner,
            direction: Direction::Forward,
            // Seek keys carry the snapshot in their trailer, which holds 56 bits.
            snapshot: snapshot.min(key::MAX_SEQ),
            lower,
            upper,
            valid: false,
            positioned: false,
            reversed: false,
            key: Vec::new(),
            value: Vec::new(),
            pending_error: None,
            blobs: None,
        }
    }

    /// Resolves blob references through `blobs`.
    pub fn with_blobs(mut self, blobs: Arc<dyn BlobFetch>) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// Makes the `Iterator` impl walk backward: from the last key (unless positioned
    /// already), in descending key order.
    pub fn reversed(mut self) -> Self {
        self.reversed = true;
        self
    }

    /// Moves to the first visible key (at or after the lower bound).
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.begin();
        let result = match &self.lower {
            Some(lower) => self.inner.seek(&key::seek_key(lower, self.snapshot)),
            None => self.inner.seek_to_first(),
        };
        self.settle(result, None)
    }

    /// Moves to the first visible key `>= user_key` (and at or after the lower bound).
    pub fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        self.begin();
        let target = match &self.lower {
            Some(lower) if lower.as_slice() > user_key => lower.as_slice(),
            _ => user_key,
        };
        let result = self.inner.seek(&key::seek_key(target, self.snapshot));
        self.settle(result, None)
    }

    /// Moves to the next visible key. Does nothing when the iterator is not valid.
    // The cursor API names this `next` like the other iterators; `Iterator` is implemented too.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        self.valid = false;
        let current = std::mem::take(&mut self.key);
        let result = match self.direction {
            Direction::Forward => self.inner.next(),
            // The inner iterator stands before the key's entries: go to its last one (if
            // present, it is skipped with the others).
            Direction::Backward => {
                self.direction = Direction::Forward;
                self.inner
                    .seek(&key::internal_key(&current, 0, ValueKind::Delete))
            }
        };
        self.settle(result, Some(current))
    }

    /// Moves to the last visible key (before the upper bound).
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.begin();
        self.direction = Direction::Backward;
        let result = match self.upper.clone() {
            Some(upper) => self.position_before(&upper),
            None => self.inner.seek_to_last(),
        };
        self.settle_back(result)
    }

    /// Moves to the last visible key `<= user_key` (and before the upper bound).
    pub fn seek_for_prev(&mut self, user_key: &[u8]) -> Result<()> {
        if self.upper.as_deref().is_some_and(|upper| user_key >= upper) {
            return self.seek_to_last();
        }
        self.begin();
        self.direction = Direction::Backward;
        // (key, 0, Delete) sorts after every other entry of the key.
        let target = key::internal_key(user_key, 0, ValueKind::Delete);
        let result = self.inner.seek_for_prev(&target);
        self.settle_back(result)
    }

    /// Moves to the previous visible key. Does nothing when the iterator is not valid.
    pub fn prev(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        self.valid = false;
        let result = match self.direction {
            Direction::Backward => Ok(()),
            Direction::Forward => {
                self.direction = Direction::Backward;
                let current = std::mem::take(&mut self.key);
                self.position_before(&current)
            }
        };
        self.settle_back(result)
    }

    /// Whether the iterator is on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        if self.valid {
            &self.key
        } else {
            &[]
        }
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        if self.valid {
            &self.value
        } else {
            &[]
        }
    }

    fn begin(&mut self) {
        self.direction = Direction::Forward;
        self.positioned = true;
        self.valid = false;
        self.pending_error = None;
    }

    /// After the inner iterator moved (with `result`), finds the next visible key, skipping
    /// entries of `skip` (a user key already shown or deleted).
    fn settle(&mut self, result: Result<()>, skip: Option<Vec<u8>>) -> Result<()> {
        result
            .and_then(|()| self.find_visible(skip))
            .inspect_err(|_| {
                self.valid = false;
            })
    }

    /// Puts the inner iterator on the last entry whose user key is below `user_key`.
    fn position_before(&mut self, user_key: &[u8]) -> Result<()> {
        self.inner.seek(&key::seek_key(user_key, key::MAX_SEQ))?;
        if self.inner.valid() {
            self.inner.prev()
        } else {
            self.inner.seek_to_last()
        }
    }

    /// [`DbIter::settle`] moving backward.
    fn settle_back(&mut self, result: Result<()>) -> Result<()> {
        result
            .and_then(|()| self.find_visible_back())
            .inspect_err(|_| {
                self.valid = false;
            })
    }

    /// From the last entry of a user key, finds the previous visible key: for each user
    /// key its newest entry the snapshot sees, skipping keys whose newest is a deletion.
    fn find_visible_back(&mut self) -> Result<()> {
        while self.inner.valid() {
            let user_key = key::parse(self.inner.key())
                .ok_or_else(|| Error::corruption("iterator", "malformed internal key"))?
                .user_key
                .to_vec();
            if self
                .lower
                .as_deref()
                .is_some_and(|lower| user_key.as_slice() < lower)
            {
                return Ok(());
            }
            let newest = self.newest_visible_back(&user_key)?;
            if let Some(kind) = newest {
                if self.show(kind, user_key)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Reads the entries of `user_key` backward (oldest first) and returns the kind of the
    /// newest one the snapshot sees, its value in `self.value`; the inner iterator ends on
    /// the last entry of the previous user key. Many versions cost a seek, not a scan.
    fn newest_visible_back(&mut self, user_key: &[u8]) -> Result<Option<ValueKind>> {
        let mut newest = None;
        let mut seen = 0;
        while self.inner.valid() {
            let parsed = key::parse(self.inner.key())
                .ok_or_else(|| Error::corruption("iterator", "malformed internal key"))?;
            if parsed.user_key != user_key {
                break;
            }
            seen += 1;
            if seen > MAX_SEQUENTIAL_SKIP {
                return self.newest_visible_by_seek(user_key);
            }
            if parsed.seq <= self.snapshot {
                newest = Some(parsed.kind);
                self.value.clear();
                self.value.extend_from_slice(self.inner.value());
            }
            self.inner.prev()?;
        }
        Ok(newest)
    }

    /// [`DbIter::newest_visible_back`] by a seek to the key's newest visible entry, then
    /// one before its first entry.
    fn newest_visible_by_seek(&mut self, user_key: &[u8]) -> Result<Option<ValueKind>> {
        self.inner.seek(&key::seek_key(user_key, self.snapshot))?;
        let mut newest = None;
        if self.inner.valid() {
            let parsed = key::parse(self.inner.key())
                .ok_or_else(|| Error::corruption("iterator", "malformed internal key"))?;
            if parsed.user_key == user_key {
                newest = Some(parsed.kind);
                self.value.clear();
                self.value.extend_from_slice(self.inner.value());
            }
        }
        self.position_before(user_key)?;
        Ok(newest)
    }

    /// Shows `user_key` with the value in `self.value` if `kind` is a value (resolving a
    /// blob reference); false for a deletion.
    fn show(&mut self, kind: ValueKind, user_key: Vec<u8>) -> Result<bool> {
        match kind {
            ValueKind::Delete => return Ok(false),
            ValueKind::Put => {}
            ValueKind::BlobIndex => {
                let Some(blobs) = &self.blobs else {
                    return Err(Error::corruption(
                        "iterator",
                        "a blob reference where no blob files are read",
                    ));
                };
                self.value = blobs.fetch(&user_key, &self.value)?;
            }
        }
        self.key = user_key;
        self.valid = true;
        Ok(true)
    }

    fn find_visible(&mut self, mut skip: Option<Vec<u8>>) -> Result<()> {
        let mut skipped = 0;
        while self.inner.valid() {
            let ikey = self.inner.key();
            let parsed = key::parse(ikey)
                .ok_or_else(|| Error::corruption("iterator", "malformed internal key"))?;
            if self
                .upper
                .as_deref()
                .is_some_and(|upper| parsed.user_key >= upper)
            {
                return Ok(());
            }
            let hidden = parsed.seq > self.snapshot;
            if hidden || skip.as_deref() == Some(parsed.user_key) {
                skipped += 1;
                if skipped > MAX_SEQUENTIAL_SKIP {
                    skipped = 0;
                    let target = Self::skip_target(parsed, skip.as_deref(), self.snapshot);
                    self.inner.seek(&target)?;
                } else {
                    self.inner.next()?;
                }
                continue;
            }
            skipped = 0;
            match parsed.kind {
                ValueKind::Delete => {
                    skip = Some(parsed.user_key.to_vec());
                    self.inner.next()?;
                }
                ValueKind::Put => {
                    self.key = parsed.user_key.to_vec();
                    self.value = self.inner.value().to_vec();
                    self.valid = true;
                    return Ok(());
                }
                ValueKind::BlobIndex => {
                    let Some(blobs) = &self.blobs else {
                        return Err(Error::corruption(
                            "iterator",
                            "a blob reference where no blob files are read",
                        ));
                    };
                    self.value = blobs.fetch(parsed.user_key, self.inner.value())?;
                    self.key = parsed.user_key.to_vec();
                    self.valid = true;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Where a reseek lands: past every entry of a skipped key, or on the newest entry of
    /// this key that the snapshot sees.
    fn skip_target(parsed: key::ParsedKey<'_>, skip: Option<&[u8]>, snapshot: SeqNo) -> Vec<u8> {
        if skip == Some(parsed.user_key) {
            // (key, 0, Delete) sorts after every other entry of the key; it is itself
            // skipped if present.
            key::internal_key(parsed.user_key, 0, ValueKind::Delete)
        } else {
            key::seek_key(parsed.user_key, snapshot)
        }
    }
}

impl Iterator for DbIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending_error.take() {
            return Some(Err(e));
        }
        if !self.positioned {
            let start = match self.reversed {
                false => self.seek_to_first(),
                true => self.seek_to_last(),
            };
            if let Err(e) = start {
                return Some(Err(e));
            }
        }
        if !self.valid {
            return None;
        }
        let item = (self.key.clone(), self.value.clone());
        let step = match self.reversed {
            false => DbIter::next(self),
            true => self.prev(),
        };
        if let Err(e) = step {
            self.pending_error = Some(e);
        }
        Some(Ok(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::test_util::{Entries, FailingIter, VecIter};
    use crate::key::internal_key;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// A history: operations in write order; operation `i` has sequence number `i + 1`.
    type History = Vec<(Vec<u8>, Option<Vec<u8>>)>;

    fn history_strategy() -> impl Strategy<Value = History> {
        let op = (
            prop::collection::vec(0u8..4, 1..3),
            prop::option::weighted(0.7, prop::collection::vec(any::<u8>(), 0..4)),
        );
        prop::collection::vec(op, 0..60)
    }

    fn entries(history: &History) -> Entries {
        history
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                let seq = i as u64 + 1;
                match v {
                    Some(v) => (internal_key(k, seq, ValueKind::Put), v.clone()),
                    None => (internal_key(k, seq, ValueKind::Delete), Vec::new()),
                }
            })
            .collect()
    }

    fn model(
        history: &History,
        snapshot: SeqNo,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut state = BTreeMap::new();
        for (k, v) in history.iter().take(snapshot as usize) {
            match v {
                Some(v) => state.insert(k.clone(), v.clone()),
                None => state.remove(k),
            };
        }
        state
            .into_iter()
            .filter(|(k, _)| lower.is_none_or(|l| k.as_slice() >= l))
            .filter(|(k, _)| upper.is_none_or(|u| k.as_slice() < u))
            .collect()
    }

    fn bound() -> impl Strategy<Value = Option<Vec<u8>>> {
        prop::option::of(prop::collection::vec(0u8..4, 0..3))
    }

    proptest! {
        #[test]
        fn iteration_matches_model_at_snapshot(
            history in history_strategy(),
            snapshot in 0u64..70,
            lower in bound(),
            upper in bound(),
        ) {
            let inner = VecIter::boxed(entries(&history));
            let it = DbIter::new(inner, snapshot, lower.clone(), upper.clone());
            let got: Vec<_> = it.collect::<Result<_>>().unwrap();
            prop_assert_eq!(got, model(&history, snapshot, lower.as_deref(), upper.as_deref()));
        }

        #[test]
        fn seek_matches_model(
            history in history_strategy(),
            snapshot in 0u64..70,
            lower in bound(),
            upper in bound(),
            target in prop::collection::vec(0u8..4, 0..3),
        ) {
            let inner = VecIter::boxed(entries(&history));
            let mut it = DbIter::new(inner, snapshot, lower.clone(), upper.clone());
            it.seek(&target).unwrap();
            let got: Vec<_> = (&mut it).collect::<Result<_>>().unwrap();
            let expected: Vec<_> = model(&history, snapshot, lower.as_deref(), upper.as_deref())
                .into_iter()
                .filter(|(k, _)| *k >= target)
                .collect();
            prop_assert_eq!(got, expected);
            prop_assert!(!it.valid());
        }

        #[test]
        fn backward_iteration_matches_model(
            history in history_strategy(),
            snapshot in 0u64..70,
            lower in bound(),
            upper in bound(),
            target in prop::option::of(prop::collection::vec(0u8..4, 0..3)),
        ) {
            let inner = VecIter::boxed(entries(&history));
            let mut it = DbIter::new(inner, snapshot, lower.clone(), upper.clone());
            match &target {
                Some(t) => it.seek_for_prev(t).unwrap(),
                None => it.seek_to_last().unwrap(),
            }
            let mut got = Vec::new();
            while it.valid() {
                got.push((it.key().to_vec(), it.value().to_vec()));
                it.prev().unwrap();
            }
            let mut expected: Vec<_> = model(&history, snapshot, lower.as_deref(), upper.as_deref())
                .into_iter()
                .filter(|(k, _)| target.as_ref().is_none_or(|t| k <= t))
                .collect();
            expected.reverse();
            prop_assert_eq!(got, expected);
            prop_assert_eq!((it.key(), it.value()), (&b""[..], &b""[..]));
        }

        /// Steps both ways, turning at random, follow the model.
        #[test]
        fn walks_both_ways_match_model(
            history in history_strategy(),
            snapshot in 0u64..70,
            lower in bound(),
            upper in bound(),
            target in prop::collection::vec(0u8..4, 0..3),
            backward in any::<bool>(),
            steps in prop::collection::vec(any::<bool>(), 0..30),
        ) {
            let expected = model(&history, snapshot, lower.as_deref(), upper.as_deref());
            let mut it = DbIter::new(VecIter::boxed(entries(&history)), snapshot, lower, upper);
            let mut at = if backward {
                it.seek_for_prev(&target).unwrap();
                expected.iter().rposition(|(k, _)| *k <= target)
            } else {
                it.seek(&target).unwrap();
                Some(expected.partition_point(|(k, _)| *k < target))
            };
            for forward in steps {
                let want = at.and_then(|i| expected.get(i));
                let got = it.valid().then(|| (it.key().to_vec(), it.value().to_vec()));
                prop_assert_eq!(got.as_ref(), want);
                if want.is_none() {
                    break;
                }
                if forward {
                    DbIter::next(&mut it).unwrap();
                    at = at.map(|i| i + 1);
                } else {
                    it.prev().unwrap();
                    at = at.and_then(|i| i.checked_sub(1));
                }
            }
        }
    }

    #[test]
    fn many_versions_are_skipped_by_reseeking() {
        let mut history: History = Vec::new();
        for i in 0..50u8 {
            history.push((b"a".to_vec(), Some(vec![i])));
            history.push((b"b".to_vec(), if i % 2 == 0 { None } else { Some(vec![i]) }));
        }
        history.push((b"c".to_vec(), Some(b"c".to_vec())));
        for snapshot in [0, 1, 2, 3, 10, 51, 100, 101, 200] {
            let it = DbIter::new(VecIter::boxed(entries(&history)), snapshot, None, None);
            let got: Vec<_> = it.collect::<Result<_>>().unwrap();
            let mut expected = model(&history, snapshot, None, None);
            assert_eq!(got, expected, "snapshot {snapshot}");
            let mut it = DbIter::new(VecIter::boxed(entries(&history)), snapshot, None, None);
            it.seek_to_last().unwrap();
            let mut back = Vec::new();
            while it.valid() {
                back.push((it.key().to_vec(), it.value().to_vec()));
                it.prev().unwrap();
            }
            expected.reverse();
            assert_eq!(back, expected, "backward, snapshot {snapshot}");
        }
    }

    #[test]
    fn positioning_methods_and_accessors() {
        let history: History = vec![
            (b"a".to_vec(), Some(b"1".to_vec())),
            (b"b".to_vec(), Some(b"2".to_vec())),
            (b"a".to_vec(), None),
        ];
        let mut it = DbIter::new(VecIter::boxed(entries(&history)), 3, None, None);
        it.seek_to_first().unwrap();
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&b"b"[..], &b"2"[..]));
        DbIter::next(&mut it).unwrap();
        assert!(!it.valid());
        DbIter::next(&mut it).unwrap();
        it.seek(b"a").unwrap();
        assert_eq!(it.key(), b"b");
    }

    #[test]
    fn inner_error_is_returned_not_swallowed() {
        let history: History = (0..5u8).map(|i| (vec![i], Some(vec![i]))).collect();
        let inner = FailingIter::boxed(entries(&history), 2);
        let got: Vec<_> = DbIter::new(inner, 10, None, None).collect();
        assert_eq!(got.len(), 3);
        assert!(got[0].is_ok() && got[1].is_ok());
        assert!(got[2].as_ref().unwrap_err().is_corruption());

        let mut it = DbIter::new(FailingIter::boxed(entries(&history), 0), 10, None, None);
        assert!(it.seek_to_first().is_err());
        assert!(!it.valid());
    }

    #[test]
    fn malformed_internal_key_is_corruption() {
        let inner = VecIter::boxed(vec![(b"short".to_vec(), Vec::new())]);
        let mut it = DbIter::new(inner, 10, None, None);
        assert!(it.seek_to_first().unwrap_err().is_corruption());
        assert!(!it.valid());
    }
}
