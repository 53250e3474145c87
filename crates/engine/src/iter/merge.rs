//! The merging iterator: one sorted view over several sorted sources (memtables, L0 tables,
//! level iterators), as RocksDB's MergingIterator.
//!
//! A binary min-heap holds the indices of the valid children, ordered by their current key;
//! equal keys are ordered by child index, so a source listed first wins ties (callers list
//! newer sources first).

use std::cmp::Ordering;

use crate::iter::InternalIterator;
use crate::key;
use crate::Result;

/// An [`InternalIterator`] over the union of its children's entries.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of valid children; `heap[0]` is the current one.
    heap: Vec<usize>,
}

impl MergingIterator {
    /// Merges `children`; it is unpositioned until a seek.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        let heap = Vec::with_capacity(children.len());
        MergingIterator { children, heap }
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (self.heap[a], self.heap[b]);
        match key::compare(self.children[x].key(), self.children[y].key()) {
            Ordering::Less => true,
            Ordering::Equal => x < y,
            Ordering::Greater => false,
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (left, right) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if left < self.heap.len() && self.less(left, least) {
                least = left;
            }
            if right < self.heap.len() && self.less(right, least) {
                least = right;
            }
            if least == at {
                return;
            }
            self.heap.swap(at, least);
            at = least;
        }
    }

    /// Rebuilds the heap from the children that are valid after a seek.
    fn rebuild(&mut self) {
        self.heap.clear();
        self.heap
            .extend((0..self.children.len()).filter(|&i| self.children[i].valid()));
        for at in (0..self.heap.len() / 2).rev() {
            self.sift_down(at);
        }
    }

    /// Runs `position` on every child, then rebuilds the heap. On an error the iterator is
    /// left invalid, so a caller that ignores it cannot read a wrong entry.
    fn position_all(
        &mut self,
        mut position: impl FnMut(&mut dyn InternalIterator) -> Result<()>,
    ) -> Result<()> {
        self.heap.clear();
        for child in &mut self.children {
            position(child.as_mut())?;
        }
        self.rebuild();
        Ok(())
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.position_all(|c| c.seek_to_first())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.position_all(|c| c.seek(target))
    }

    fn next(&mut self) -> Result<()> {
        let Some(&top) = self.heap.first() else {
            return Ok(());
        };
        if let Err(e) = self.children[top].next() {
            self.heap.clear();
            return Err(e);
        }
        if !self.children[top].valid() {
            self.heap.swap_remove(0);
        }
        self.sift_down(0);
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.heap.first().map_or(&[], |&i| self.children[i].key())
    }

    fn value(&self) -> &[u8] {
        self.heap.first().map_or(&[], |&i| self.children[i].value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::test_util::{drain, Entries, FailingIter, VecIter};
    use crate::key::{internal_key, ValueKind};
    use proptest::prelude::*;

    fn entry(user: u8, seq: u64, tag: usize) -> (Vec<u8>, Vec<u8>) {
        let kind = if seq.is_multiple_of(3) {
            ValueKind::Delete
        } else {
            ValueKind::Put
        };
        (
            internal_key(&[user], seq, kind),
            format!("{user}-{seq}-{tag}").into_bytes(),
        )
    }

    fn children_strategy() -> impl Strategy<Value = Vec<Entries>> {
        let child = prop::collection::vec((0u8..20, 1u64..40), 0..25);
        prop::collection::vec(child, 0..6).prop_map(|children| {
            children
                .into_iter()
                .enumerate()
                .map(|(tag, c)| c.into_iter().map(|(u, s)| entry(u, s, tag)).collect())
                .collect()
        })
    }

    /// The expected union: equal keys keep child order (a stable sort of the concatenation).
    fn model(children: &[Entries]) -> Entries {
        let mut all: Entries = Vec::new();
        for c in children {
            let mut c = c.clone();
            c.sort_by(|a, b| key::compare(&a.0, &b.0));
            all.extend(c);
        }
        all.sort_by(|a, b| key::compare(&a.0, &b.0));
        all
    }

    fn merging(children: &[Entries]) -> MergingIterator {
        MergingIterator::new(children.iter().cloned().map(VecIter::boxed).collect())
    }

    proptest! {
        #[test]
        fn full_iteration_is_the_sorted_union(children in children_strategy()) {
            let mut it = merging(&children);
            prop_assert!(!it.valid());
            it.seek_to_first().unwrap();
            prop_assert_eq!(drain(&mut it).unwrap(), model(&children));
        }

        #[test]
        fn seek_lands_on_first_entry_not_below_target(
            children in children_strategy(),
            targets in prop::collection::vec((0u8..21, 0u64..41), 1..8),
        ) {
            let expected = model(&children);
            let mut it = merging(&children);
            for (user, seq) in targets {
                let target = internal_key(&[user], seq, ValueKind::Put);
                it.seek(&target).unwrap();
                let from = expected.partition_point(|(k, _)| key::compare(k, &target).is_lt());
                prop_assert_eq!(drain(&mut it).unwrap(), expected[from..].to_vec());
            }
        }
    }

    #[test]
    fn child_error_on_next_is_returned() {
        let ok = vec![entry(1, 1, 0), entry(5, 1, 0)];
        let failing = vec![entry(2, 1, 1), entry(3, 1, 1)];
        let mut it = MergingIterator::new(vec![VecIter::boxed(ok), FailingIter::boxed(failing, 1)]);
        it.seek_to_first().unwrap();
        let mut result = Ok(());
        while it.valid() && result.is_ok() {
            result = it.next();
        }
        assert!(result.unwrap_err().is_corruption());
        assert!(!it.valid());
    }

    #[test]
    fn child_error_on_seek_is_returned() {
        let mut it = MergingIterator::new(vec![
            VecIter::boxed(vec![entry(1, 1, 0)]),
            FailingIter::boxed(vec![entry(2, 1, 1)], 0),
        ]);
        assert!(it.seek_to_first().unwrap_err().is_corruption());
        assert!(!it.valid());
        assert!(it.seek(&internal_key(b"a", 1, ValueKind::Put)).is_err());
    }

    #[test]
    fn no_children_is_empty() {
        let mut it = MergingIterator::new(Vec::new());
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        assert_eq!(it.key(), b"");
        it.next().unwrap();
    }
}
