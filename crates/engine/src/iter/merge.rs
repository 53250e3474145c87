//! The merging iterator: one sorted view over several sorted sources (memtables, L0 tables,
//! level iterators), as RocksDB's MergingIterator.
//!
//! A binary heap holds the indices of the valid children, ordered by their current key:
//! a min-heap moving forward, a max-heap moving backward. Equal keys are ordered by child
//! index, so a source listed first comes first forward (callers list newer sources first)
//! and last backward.

use std::cmp::Ordering;

use crate::iter::InternalIterator;
use crate::key;
use crate::Result;

/// Which way the heap is ordered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// An [`InternalIterator`] over the union of its children's entries.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of valid children; `heap[0]` is the current one.
    heap: Vec<usize>,
    direction: Direction,
}

impl MergingIterator {
    /// Merges `children`; it is unpositioned until a seek.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        let heap = Vec::with_capacity(children.len());
        MergingIterator {
            children,
            heap,
            direction: Direction::Forward,
        }
    }

    /// Whether child `x` comes before child `y` in the merged order.
    fn precedes(&self, x: usize, y: usize) -> bool {
        let key = |i: usize| self.children.get(i).map_or(&[][..], |c| c.key());
        let order = key::compare(key(x), key(y)).then(x.cmp(&y));
        order == Ordering::Less
    }

    /// The child on the current entry.
    fn current(&self) -> Option<&dyn InternalIterator> {
        let top = self.heap.first()?;
        self.children.get(*top).map(|c| &**c)
    }

    /// Whether heap slot `a` belongs above slot `b` in the current direction.
    fn above(&self, a: usize, b: usize) -> bool {
        let (Some(&x), Some(&y)) = (self.heap.get(a), self.heap.get(b)) else {
            return false;
        };
        match self.direction {
            Direction::Forward => self.precedes(x, y),
            Direction::Backward => self.precedes(y, x),
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (left, right) = (2 * at + 1, 2 * at + 2);
            let mut top = at;
            if left < self.heap.len() && self.above(left, top) {
                top = left;
            }
            if right < self.heap.len() && self.above(right, top) {
                top = right;
            }
            if top == at {
                return;
            }
            self.heap.swap(at, top);
            at = top;
        }
    }

    /// Rebuilds the heap from the children that are valid after a seek.
    fn rebuild(&mut self) {
        self.heap.clear();
        let valid = self.children.iter().enumerate().filter(|(_, c)| c.valid());
        self.heap.extend(valid.map(|(i, _)| i));
        for at in (0..self.heap.len() / 2).rev() {
            self.sift_down(at);
        }
    }

    /// Runs `position` on every child (with its index), then rebuilds the heap for
    /// `direction`. On an error the iterator is left invalid, so a caller that ignores it
    /// cannot read a wrong entry.
    fn position_all(
        &mut self,
        direction: Direction,
        mut position: impl FnMut(usize, &mut dyn InternalIterator) -> Result<()>,
    ) -> Result<()> {
        self.heap.clear();
        self.direction = direction;
        for (i, child) in self.children.iter_mut().enumerate() {
            position(i, child.as_mut())?;
        }
        self.rebuild();
        Ok(())
    }

    /// Moves the current child one step (`step`) and restores the heap.
    fn step_top(
        &mut self,
        step: impl FnOnce(&mut dyn InternalIterator) -> Result<()>,
    ) -> Result<()> {
        let Some(child) = self
            .heap
            .first()
            .and_then(|&top| self.children.get_mut(top))
        else {
            return Ok(());
        };
        if let Err(e) = step(child.as_mut()) {
            self.heap.clear();
            return Err(e);
        }
        if !child.valid() {
            self.heap.swap_remove(0);
        }
        self.sift_down(0);
        Ok(())
    }

    /// Turns the heap around at the current entry: every child moves to its entry that
    /// comes right after (`Forward`) or before (`Backward`) the current one in the merged
    /// order, and the heap is rebuilt, so that it is on the next (previous) entry.
    fn turn(&mut self, direction: Direction) -> Result<()> {
        let Some(&current) = self.heap.first() else {
            return Ok(());
        };
        let Some(at) = self.children.get(current).map(|c| c.key().to_vec()) else {
            return Ok(());
        };
        self.position_all(direction, |i, child| {
            child.seek(&at)?;
            // The child is on its first entry >= `at`. An equal key of another child
            // comes before the current entry exactly when its index is lower.
            let on_at = child.valid() && key::compare(child.key(), &at) == Ordering::Equal;
            match direction {
                Direction::Forward if on_at && i <= current => child.next(),
                Direction::Forward => Ok(()),
                Direction::Backward if on_at && i < current => Ok(()),
                Direction::Backward if child.valid() => child.prev(),
                Direction::Backward => child.seek_to_last(),
            }
        })
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.position_all(Direction::Forward, |_, c| c.seek_to_first())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.position_all(Direction::Forward, |_, c| c.seek(target))
    }

    fn next(&mut self) -> Result<()> {
        if self.direction == Direction::Backward {
            return self.turn(Direction::Forward);
        }
        self.step_top(|c| c.next())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.position_all(Direction::Backward, |_, c| c.seek_to_last())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.position_all(Direction::Backward, |_, c| c.seek_for_prev(target))
    }

    fn prev(&mut self) -> Result<()> {
        if self.direction == Direction::Forward {
            return self.turn(Direction::Backward);
        }
        self.step_top(|c| c.prev())
    }

    fn key(&self) -> &[u8] {
        self.current().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current().map_or(&[], |c| c.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::test_util::{drain, drain_back, Entries, FailingIter, VecIter};
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
        // A source never holds one internal key twice; two sources may.
        let child = prop::collection::btree_set((0u8..20, 1u64..40), 0..25);
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

    proptest! {
        #[test]
        fn backward_iteration_is_the_reversed_union(children in children_strategy()) {
            let mut it = merging(&children);
            it.seek_to_last().unwrap();
            let mut expected = model(&children);
            expected.reverse();
            prop_assert_eq!(drain_back(&mut it).unwrap(), expected);
        }

        /// Any walk of steps both ways, from any seek, follows the model.
        #[test]
        fn walks_both_ways_follow_the_union(
            children in children_strategy(),
            user in 0u8..21,
            seq in 0u64..41,
            backward in any::<bool>(),
            steps in prop::collection::vec(any::<bool>(), 0..40),
        ) {
            let expected = model(&children);
            let mut it = merging(&children);
            let target = internal_key(&[user], seq, ValueKind::Put);
            let mut at = if backward {
                it.seek_for_prev(&target).unwrap();
                expected
                    .partition_point(|(k, _)| key::compare(k, &target).is_le())
                    .checked_sub(1)
            } else {
                it.seek(&target).unwrap();
                Some(expected.partition_point(|(k, _)| key::compare(k, &target).is_lt()))
            };
            for forward in steps {
                let want = at.and_then(|i| expected.get(i));
                let got = it.valid().then(|| (it.key().to_vec(), it.value().to_vec()));
                prop_assert_eq!(got.as_ref(), want);
                if want.is_none() {
                    break;
                }
                if forward {
                    it.next().unwrap();
                    at = at.map(|i| i + 1);
                } else {
                    it.prev().unwrap();
                    at = at.and_then(|i| i.checked_sub(1));
                }
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
        it.seek_to_last().unwrap();
        assert!(!it.valid());
        it.prev().unwrap();
    }

    #[test]
    fn child_error_on_prev_is_returned() {
        let ok = vec![entry(1, 1, 0), entry(5, 1, 0)];
        let failing = vec![entry(2, 1, 1), entry(3, 1, 1)];
        let mut it = MergingIterator::new(vec![VecIter::boxed(ok), FailingIter::boxed(failing, 2)]);
        it.seek_to_last().unwrap();
        let mut result = Ok(());
        while it.valid() && result.is_ok() {
            result = it.prev();
        }
        assert!(result.unwrap_err().is_corruption());
        assert!(!it.valid());
    }
}
