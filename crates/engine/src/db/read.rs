//! The read path: point lookups and iterators over the memtables and the version.

use std::sync::Arc;

use crate::iter::level::{LevelIterator, TableOpener};
use crate::iter::{BlobFetch, DbIter, InternalIterator, MergingIterator};
use crate::key::{SeqNo, ValueKind};
use crate::memtable::Memtable;
use crate::version::Version;
use crate::Result;

use super::blobs::PinnedBlobs;
use super::files::is_missing_file;
use super::inner::DbInner;
use super::ReadOptions;

/// A compaction may delete a file between the moment a read took its version and the
/// moment it opens the file; the read then starts over from the new version. More
/// attempts than this in a row would mean a file is missing for good.
const READ_ATTEMPTS: usize = 8;

/// What a read sees: the memtables and the version at one moment.
struct View {
    mem: Arc<Memtable>,
    /// Newest first.
    imm: Vec<Arc<Memtable>>,
    version: Arc<Version>,
}

impl DbInner {
    fn view(&self) -> View {
        let st = self.lock_state();
        View {
            mem: Arc::clone(&st.mem),
            imm: st.imm.iter().rev().map(|i| Arc::clone(&i.mem)).collect(),
            version: Arc::clone(&st.version),
        }
    }

    /// The sequence number a read sees: its snapshot's, or the last write's. Taken before
    /// the view: every entry up to it is then in the view's memtables or version.
    fn read_seq(&self, opts: &ReadOptions<'_>) -> SeqNo {
        opts.snapshot
            .map_or_else(|| self.last_sequence(), |s| s.sequence())
    }

    /// The value of `key` at the read's sequence number, or `None`.
    pub(crate) fn get(&self, opts: &ReadOptions<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let seq = self.read_seq(opts);
        let mut attempt = 0;
        loop {
            let view = self.view();
            match self.get_in(&view, key, seq) {
                Err(e) if is_missing_file(&e) && attempt + 1 < READ_ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    fn get_in(&self, view: &View, key: &[u8], seq: SeqNo) -> Result<Option<Vec<u8>>> {
        let found = std::iter::once(&view.mem)
            .chain(&view.imm)
            .find_map(|m| m.get(key, seq));
        if let Some(entry) = found {
            return self.visible(key, entry);
        }
        for (_, file) in view.version.files_for_key(key) {
            // `Table::get` asks the bloom filter first.
            if let Some(entry) = self.tables.get(&file)?.get(key, seq)? {
                return self.visible(key, entry);
            }
        }
        Ok(None)
    }

    /// An iterator over the memtables and every table of the version, pinned to them.
    pub(crate) fn iter(&self, opts: &ReadOptions<'_>) -> Result<DbIter> {
        let seq = self.read_seq(opts);
        let mut attempt = 0;
        loop {
            let view = self.view();
            match self.iter_in(view) {
                Err(e) if is_missing_file(&e) && attempt + 1 < READ_ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
                Ok((inner, blobs)) => {
                    let (lower, upper) = (opts.lower_bound.clone(), opts.upper_bound.clone());
                    let it = DbIter::new(Box::new(inner), seq, lower, upper);
                    return Ok(it.with_blobs(Arc::new(blobs)));
                }
            }
        }
    }

    fn iter_in(&self, view: View) -> Result<(MergingIterator, PinnedBlobs)> {
        // Open every table and blob file now: the iterator keeps them (and their zones)
        // even when a compaction deletes their files later.
        let pinned = Arc::new(self.tables.pin_version(&view.version)?);
        let blobs = self.blobs.pin(&view.version)?;
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(view.mem.iter()));
        for m in &view.imm {
            children.push(Box::new(m.iter()));
        }
        for f in view.version.files(0) {
            children.push(Box::new(pinned.table(f.number)?.iter()));
        }
        let opener: Arc<dyn TableOpener> = pinned;
        for level in 1..view.version.num_levels() {
            let files = view.version.files(level);
            if !files.is_empty() {
                let it = LevelIterator::new(files.to_vec(), Arc::clone(&opener));
                children.push(Box::new(it));
            }
        }
        Ok((MergingIterator::new(children), blobs))
    }
}

impl DbInner {
    /// The value an entry gives its key: its own, the blob it refers to, or none.
    fn visible(&self, key: &[u8], (kind, value): (ValueKind, Vec<u8>)) -> Result<Option<Vec<u8>>> {
        match kind {
            ValueKind::Put => Ok(Some(value)),
            ValueKind::BlobIndex => self.blobs.fetch(key, &value).map(Some),
            ValueKind::Delete => Ok(None),
        }
    }
}
