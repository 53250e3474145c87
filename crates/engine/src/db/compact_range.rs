//! Manual compaction of a key range (RocksDB's `CompactRange` with its defaults): every
//! entry of the range goes down to the last level that holds data in it, so deleted and
//! overwritten entries there are dropped and their space comes back. This is how a store
//! whose device filled up with live data gets room again after deletes.
//!
//! It goes level by level, one file of a level (with the next level's files it overlaps)
//! per step, not all of a level at once: a step needs room only for its own outputs, and
//! its inputs are deleted before the next step starts, so a nearly full device can still
//! be compacted. As in RocksDB (`bottommost_level_compaction = kIfHaveCompactionFilter`),
//! the last level is not rewritten.

use crate::compaction::pick_requested;
use crate::version::Version;
use crate::Result;

use super::inner::DbInner;

impl DbInner {
    /// Moves every entry of `[begin, end]` (user keys; `None` = unbounded) down to the last
    /// level holding data in that range. The caller has flushed the memtable.
    pub(crate) fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let Some(bottom) = self.bottom_level(begin, end) else {
            return Ok(());
        };
        for level in 0..bottom {
            while let Some(first) = self.first_file_in(level, begin, end) {
                self.compact_one(level, first)?;
            }
        }
        Ok(())
    }

    /// The last level with a file in the range.
    fn bottom_level(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Option<usize> {
        let v = self.current_version();
        (0..v.num_levels())
            .rev()
            .find(|&l| !v.overlapping(l, begin, end).is_empty())
    }

    /// The number of the first file of `level` (in level order) in the range.
    fn first_file_in(&self, level: usize, begin: Option<&[u8]>, end: Option<&[u8]>) -> Option<u64> {
        let v = self.current_version();
        let first = v.overlapping(level, begin, end).first().map(|f| f.number);
        first
    }

    /// Compacts `file` of `level` into the next level, waiting for running jobs first
    /// when they hold a file it needs.
    fn compact_one(&self, level: usize, file: u64) -> Result<()> {
        for _ in 0..2 {
            let picked = self.pick_with(true, |ctx| pick_requested(ctx, level, &[file]))?;
            if let Some(p) = picked {
                self.run_picked(p)?;
                return Ok(());
            }
            // A background job holds one of its files: let it finish, then pick again
            // (the file may have moved down meanwhile, which is progress too).
            self.wait_background_idle()?;
            if self.current_version().position(level, file).is_none() {
                return Ok(());
            }
        }
        Err(crate::Error::InvalidArgument(format!(
            "manual compaction: file {file} of L{level} could not be compacted"
        )))
    }

    fn current_version(&self) -> std::sync::Arc<Version> {
        std::sync::Arc::clone(&self.lock_state().version)
    }
}
