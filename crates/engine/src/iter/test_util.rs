//! Iterators for the iterator and compaction tests: one over a sorted vector of entries and
//! one that fails after a number of steps.

use crate::iter::InternalIterator;
use crate::key;
use crate::{Error, Result};

/// Entries `(internal key, value)`.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// An internal iterator over entries sorted by [`key::compare`].
pub struct VecIter {
    entries: Entries,
    pos: usize,
}

impl VecIter {
    /// Sorts `entries` (stably, so equal keys keep their order) and iterates over them.
    pub fn new(mut entries: Entries) -> VecIter {
        entries.sort_by(|a, b| key::compare(&a.0, &b.0));
        let pos = entries.len();
        VecIter { entries, pos }
    }

    /// The same, boxed.
    pub fn boxed(entries: Entries) -> Box<dyn InternalIterator> {
        Box::new(VecIter::new(entries))
    }
}

impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.pos = 0;
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.pos = self
            .entries
            .partition_point(|(k, _)| key::compare(k, target).is_lt());
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        self.pos += 1;
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.pos = self
            .entries
            .len()
            .checked_sub(1)
            .unwrap_or(self.entries.len());
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.entries.len());
        Ok(())
    }
    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }
    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }
}

/// Wraps an iterator and fails (a corruption error) once `ok_steps` positioning calls have
/// succeeded.
pub struct FailingIter {
    inner: VecIter,
    ok_steps: usize,
}

impl FailingIter {
    pub fn boxed(entries: Entries, ok_steps: usize) -> Box<dyn InternalIterator> {
        Box::new(FailingIter {
            inner: VecIter::new(entries),
            ok_steps,
        })
    }

    fn step(&mut self) -> Result<()> {
        if self.ok_steps == 0 {
            return Err(Error::corruption("test table", "injected failure"));
        }
        self.ok_steps -= 1;
        Ok(())
    }
}

impl InternalIterator for FailingIter {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.step()?;
        self.inner.seek_to_first()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.step()?;
        self.inner.seek(target)
    }
    fn next(&mut self) -> Result<()> {
        self.step()?;
        self.inner.next()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.step()?;
        self.inner.seek_to_last()
    }
    fn prev(&mut self) -> Result<()> {
        self.step()?;
        self.inner.prev()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

/// Every entry from the current position back to the first, in reverse order.
pub fn drain_back(iter: &mut dyn InternalIterator) -> Result<Entries> {
    let mut out = Vec::new();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.prev()?;
    }
    Ok(out)
}

/// Every entry from the current position to the end.
pub fn drain(iter: &mut dyn InternalIterator) -> Result<Entries> {
    let mut out = Vec::new();
    while iter.valid() {
        out.push((iter.key().to_vec(), iter.value().to_vec()));
        iter.next()?;
    }
    Ok(out)
}
