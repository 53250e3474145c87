//! The level iterator: one sorted view over the files of a level L1+ (sorted by key and
//! disjoint), opening each table only when the cursor reaches it, as RocksDB's
//! LevelIterator. A level of hundreds of files costs one open table at a time.

use std::sync::Arc;

use crate::iter::InternalIterator;
use crate::key;
use crate::sst::{Table, TableIter};
use crate::version::FileMeta;
use crate::Result;

/// Opens the table of a file (the database answers from its table cache).
pub trait TableOpener: Send + Sync {
    /// The open table of `meta`.
    fn open_table(&self, meta: &FileMeta) -> Result<Arc<Table>>;
}

/// Which way a positioning call moves over files it finds exhausted.
#[derive(Clone, Copy)]
enum Direction {
    Forward,
    Backward,
}

/// An [`InternalIterator`] over a sorted, disjoint run of files.
pub struct LevelIterator {
    files: Vec<Arc<FileMeta>>,
    opener: Arc<dyn TableOpener>,
    /// Index of the file `current` iterates (meaningful only when `current` is set).
    index: usize,
    current: Option<TableIter>,
    /// A compaction's input: its blocks do not enter the block cache.
    compaction: bool,
}

impl LevelIterator {
    /// Iterates `files` (sorted by smallest key, disjoint); it is unpositioned until a seek.
    pub fn new(files: Vec<Arc<FileMeta>>, opener: Arc<dyn TableOpener>) -> Self {
        LevelIterator {
            files,
            opener,
            index: 0,
            current: None,
            compaction: false,
        }
    }

    /// [`LevelIterator::new`] for a compaction's input ([`Table::compaction_iter`]).
    pub fn for_compaction(files: Vec<Arc<FileMeta>>, opener: Arc<dyn TableOpener>) -> Self {
        LevelIterator {
            compaction: true,
            ..LevelIterator::new(files, opener)
        }
    }

    /// Makes `current` iterate file `index` (none past the last file), reusing the open
    /// one when it is the same file. On an error the iterator is left invalid.
    fn open(&mut self, index: usize) -> Result<()> {
        if self.current.is_some() && self.index == index {
            return Ok(());
        }
        self.current = None;
        self.index = index;
        let Some(meta) = self.files.get(index) else {
            return Ok(());
        };
        let table = self.opener.open_table(meta)?;
        self.current = Some(if self.compaction {
            table.compaction_iter()
        } else {
            table.iter()
        });
        Ok(())
    }

    /// Moves forward over exhausted files to the first entry of the next non-empty one.
    fn skip_exhausted(&mut self) -> Result<()> {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            let next = self.index + 1;
            self.open(next)?;
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first()?;
            }
        }
        Ok(())
    }

    /// Moves backward over exhausted files to the last entry of the previous non-empty one.
    fn skip_exhausted_back(&mut self) -> Result<()> {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            let Some(prev) = self.index.checked_sub(1) else {
                self.current = None;
                return Ok(());
            };
            self.open(prev)?;
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last()?;
            }
        }
        Ok(())
    }

    /// Runs a positioning call on the current table, then moves over exhausted files in
    /// the call's direction, leaving the iterator invalid if it fails.
    fn with_current(
        &mut self,
        direction: Direction,
        op: impl FnOnce(&mut TableIter) -> Result<()>,
    ) -> Result<()> {
        let result = match self.current.as_mut() {
            Some(c) => op(c).and_then(|()| match direction {
                Direction::Forward => self.skip_exhausted(),
                Direction::Backward => self.skip_exhausted_back(),
            }),
            None => Ok(()),
        };
        if result.is_err() {
            self.current = None;
        }
        result
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.open(0)?;
        self.with_current(Direction::Forward, |c| c.seek_to_first())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let Some(last) = self.files.len().checked_sub(1) else {
            self.current = None;
            return Ok(());
        };
        self.open(last)?;
        self.with_current(Direction::Backward, |c| c.seek_to_last())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        // The last file whose smallest key is not above the target holds the answer; if the
        // target falls in a gap, its last entry is the answer.
        let after = self
            .files
            .partition_point(|f| key::compare(&f.smallest, target).is_le());
        let Some(index) = after.checked_sub(1) else {
            self.current = None;
            return Ok(());
        };
        self.open(index)?;
        self.with_current(Direction::Backward, |c| c.seek_for_prev(target))
    }

    fn prev(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.with_current(Direction::Backward, |c| c.prev())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        // The first file whose largest key is not below the target holds the answer, or
        // (if the target falls in a gap) its first entry is the answer.
        let index = self
            .files
            .partition_point(|f| key::compare(&f.largest, target).is_lt());
        self.open(index)?;
        self.with_current(Direction::Forward, |c| c.seek(target))
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.with_current(Direction::Forward, |c| c.next())
    }

    fn key(&self) -> &[u8] {
        self.current
            .as_ref()
            .filter(|c| c.valid())
            .map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current
            .as_ref()
            .filter(|c| c.valid())
            .map_or(&[], |c| c.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::test_util::{drain, drain_back, Entries};
    use crate::key::{internal_key, ValueKind};
    use crate::source::MemFile;
    use crate::sst::{TableBuilder, TableOptions};
    use crate::Error;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Tables by file number; counts opens; fails for the numbers in `broken`.
    #[derive(Default)]
    struct MapOpener {
        tables: HashMap<u64, Arc<Table>>,
        broken: Vec<u64>,
        opens: AtomicUsize,
    }

    impl TableOpener for MapOpener {
        fn open_table(&self, meta: &FileMeta) -> Result<Arc<Table>> {
            self.opens.fetch_add(1, Ordering::Relaxed);
            if self.broken.contains(&meta.number) {
                return Err(Error::corruption(meta.file_name(), "injected failure"));
            }
            Ok(Arc::clone(&self.tables[&meta.number]))
        }
    }

    fn table_opts() -> TableOptions {
        TableOptions {
            block_size: 64,
            block_restart_interval: 4,
            bloom_bits_per_key: 10,
            compression: Default::default(),
        }
    }

    /// Builds one table per run of `entries` (sorted) cut at `cuts`.
    fn level(entries: &Entries, cuts: &[usize]) -> (Vec<Arc<FileMeta>>, MapOpener) {
        let mut bounds: Vec<usize> = cuts.iter().map(|&c| c % (entries.len() + 1)).collect();
        bounds.extend([0, entries.len()]);
        bounds.sort_unstable();
        bounds.dedup();
        let mut opener = MapOpener::default();
        let mut files = Vec::new();
        for (number, run) in bounds.windows(2).enumerate() {
            let mut builder = TableBuilder::new(table_opts());
            for (k, v) in &entries[run[0]..run[1]] {
                builder.add(k, v).unwrap();
            }
            let built = builder.finish().unwrap();
            let size = built.data.len() as u64;
            let meta = built.props.file_meta(number as u64, size);
            let file = MemFile::new(meta.file_name(), built.data);
            let table = Table::open(Arc::new(file)).unwrap();
            opener.tables.insert(number as u64, Arc::new(table));
            files.push(Arc::new(meta));
        }
        (files, opener)
    }

    fn entries_strategy() -> impl Strategy<Value = Entries> {
        prop::collection::btree_set((0u16..300, 1u64..4), 1..120).prop_map(|set| {
            let mut entries: Entries = set
                .into_iter()
                .map(|(user, seq)| {
                    let ikey = internal_key(&user.to_be_bytes(), seq, ValueKind::Put);
                    (ikey, format!("v{user}.{seq}").into_bytes())
                })
                .collect();
            entries.sort_by(|a, b| key::compare(&a.0, &b.0));
            entries
        })
    }

    proptest! {
        #[test]
        fn level_reads_like_the_concatenation(
            entries in entries_strategy(),
            cuts in prop::collection::vec(any::<usize>(), 0..6),
            targets in prop::collection::vec((0u16..310, 0u64..5), 1..6),
        ) {
            let (files, opener) = level(&entries, &cuts);
            let opener = Arc::new(opener);
            let mut it = LevelIterator::new(files, opener.clone());
            prop_assert_eq!(opener.opens.load(Ordering::Relaxed), 0);
            it.seek_to_first().unwrap();
            prop_assert_eq!(drain(&mut it).unwrap(), entries.clone());
            for (user, seq) in targets {
                let target = internal_key(&user.to_be_bytes(), seq, ValueKind::Put);
                let before = opener.opens.load(Ordering::Relaxed);
                it.seek(&target).unwrap();
                // Only the file holding the answer is opened.
                prop_assert!(opener.opens.load(Ordering::Relaxed) <= before + 1);
                let from = entries.partition_point(|(k, _)| key::compare(k, &target).is_lt());
                prop_assert_eq!(drain(&mut it).unwrap(), entries[from..].to_vec());
                it.seek_for_prev(&target).unwrap();
                let upto = entries.partition_point(|(k, _)| key::compare(k, &target).is_le());
                let mut expect = entries[..upto].to_vec();
                expect.reverse();
                prop_assert_eq!(drain_back(&mut it).unwrap(), expect);
            }
            it.seek_to_last().unwrap();
            let mut back = entries.clone();
            back.reverse();
            prop_assert_eq!(drain_back(&mut it).unwrap(), back);
        }
    }

    #[test]
    fn open_error_is_returned_and_leaves_the_iterator_invalid() {
        let entries: Entries = (0u8..40)
            .map(|i| (internal_key(&[i], 1, ValueKind::Put), vec![i]))
            .collect();
        let (files, mut opener) = level(&entries, &[10, 20, 30]);
        opener.broken.push(2);
        let mut it = LevelIterator::new(files, Arc::new(opener));
        it.seek_to_first().unwrap();
        let mut result = Ok(());
        let mut seen = 0;
        while it.valid() && result.is_ok() {
            seen += 1;
            result = it.next();
        }
        assert_eq!(seen, 20);
        assert!(result.unwrap_err().is_corruption());
        assert!(!it.valid());
        assert_eq!(it.key(), b"");
        assert!(it.seek(&internal_key(&[25], 1, ValueKind::Put)).is_err());
        it.seek(&internal_key(&[35], 1, ValueKind::Put)).unwrap();
        assert_eq!(it.value(), &[35]);
    }

    #[test]
    fn empty_level_is_empty() {
        let mut it = LevelIterator::new(Vec::new(), Arc::new(MapOpener::default()));
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.seek(b"anything").unwrap();
        assert!(!it.valid());
        it.next().unwrap();
        it.seek_to_last().unwrap();
        assert!(!it.valid());
        it.seek_for_prev(b"anything").unwrap();
        assert!(!it.valid());
        it.prev().unwrap();
    }
}
