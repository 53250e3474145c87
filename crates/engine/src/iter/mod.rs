//! Iterators over internal entries (internal key + value), as RocksDB's internal iterators.
//!
//! Every source (memtable, SST, merged levels) implements [`InternalIterator`]; positioning
//! calls return a `Result` because reading an SST block can fail its checksum. Every source
//! moves both ways, so the user's iterator can too.

use std::cmp::Ordering;

use crate::key;
use crate::Result;

/// A cursor over internal entries in [`crate::key::compare`] order.
pub trait InternalIterator: Send {
    /// Whether the cursor is on an entry. `key` and `value` may only be called when it is.
    fn valid(&self) -> bool;

    /// Moves to the first entry.
    fn seek_to_first(&mut self) -> Result<()>;

    /// Moves to the first entry whose internal key is `>= target` (an internal key).
    fn seek(&mut self, target: &[u8]) -> Result<()>;

    /// Moves to the next entry (the cursor must be valid).
    fn next(&mut self) -> Result<()>;

    /// Moves to the last entry.
    fn seek_to_last(&mut self) -> Result<()>;

    /// Moves to the previous entry (the cursor must be valid); before the first entry the
    /// cursor is invalid.
    fn prev(&mut self) -> Result<()>;

    /// Moves to the last entry whose internal key is `<= target`. Every source gets it from
    /// a seek and one step back; a source with a cheaper way may override it.
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.seek(target)?;
        if !self.valid() {
            return self.seek_to_last();
        }
        if key::compare(self.key(), target) == Ordering::Greater {
            self.prev()?;
        }
        Ok(())
    }

    /// The internal key of the current entry.
    fn key(&self) -> &[u8];

    /// The value of the current entry (empty for a deletion).
    fn value(&self) -> &[u8];
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        (**self).seek_to_first()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek(target)
    }
    fn next(&mut self) -> Result<()> {
        (**self).next()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        (**self).seek_to_last()
    }
    fn prev(&mut self) -> Result<()> {
        (**self).prev()
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek_for_prev(target)
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
}

pub mod db_iter;
pub mod level;
pub mod merge;
#[cfg(test)]
pub(crate) mod test_util;

pub use db_iter::{BlobFetch, DbIter};
pub use level::{LevelIterator, TableOpener};
pub use merge::MergingIterator;
