//! The table cache: file number → open [`Table`], so the footer, index and filter of an SST
//! are read once.
//!
//! A table reads its file through a file-layer reader, which pins the zones the file's
//! extents are in (the file layer resets a zone only when no reader pins it). When the zone
//! cleaner moves a live file, the file layer moves its open readers along, so a cached
//! table never holds a cleaned zone back. A deleted file's reader keeps its zones until
//! its last user (an iterator over an old version, a running compaction) drops it.
//!
//! Maps are ordered by file number, so that dropping pinned tables releases readers, and
//! with them lets the file layer reset zones, in the same order on every run: the
//! deterministic mode's device I/O (and the timing model fed by it) must not depend on
//! hash order.
//!
//! Entries leave the cache when their file is deleted ([`TableCache::evict`], after the
//! deletion); tables already handed out stay readable (and their zones pinned) until their
//! last user drops them. A table opened by a reader that raced with the deletion is handed
//! out but not cached.
//!
//! With `max_open_files` set, the cache keeps at most that many tables: opening one more
//! closes the least recently used (its index and filter are read again when it is next
//! used). Its data blocks stay in the block cache, keyed by file number.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::fs::FileSystem;

use crate::iter::level::TableOpener;
use crate::options::Options;
use crate::source::RandomAccess;
use crate::sst::{BlockCache, BlockCacheStats, CacheSlot, Table};
use crate::version::{FileMeta, Version};
use crate::{Error, Result};

use super::files::sst_file_name;

/// Open tables by file number.
pub(crate) struct TableCache {
    fs: Arc<dyn FileSystem>,
    blocks: Option<Arc<BlockCache>>,
    /// The most tables kept open (`None`: no limit).
    limit: Option<usize>,
    entries: Mutex<Entries>,
}

/// The open tables, and (with a limit) the order they were last used in.
#[derive(Default)]
struct Entries {
    tables: BTreeMap<u64, (Arc<Table>, u64)>,
    /// Last use → file number; kept only with a limit, which is all it is for.
    by_use: BTreeMap<u64, u64>,
    clock: u64,
}

impl Entries {
    /// The open table of `number`, noted as used now if `limit` is set.
    fn touch(&mut self, number: u64, limit: Option<usize>) -> Option<Arc<Table>> {
        let (table, used) = self.tables.get_mut(&number)?;
        if limit.is_some() {
            self.clock += 1;
            self.by_use.remove(used);
            *used = self.clock;
            self.by_use.insert(self.clock, number);
        }
        Some(Arc::clone(table))
    }

    /// Keeps `table` (or the one a racing reader kept first) and closes the least
    /// recently used tables beyond `limit`.
    fn keep(&mut self, number: u64, table: Arc<Table>, limit: Option<usize>) -> Arc<Table> {
        if let Some(kept) = self.touch(number, limit) {
            return kept;
        }
        self.clock += 1;
        self.tables.insert(number, (Arc::clone(&table), self.clock));
        if limit.is_some() {
            self.by_use.insert(self.clock, number);
        }
        while limit.is_some_and(|l| self.tables.len() > l) {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            self.tables.remove(&oldest);
        }
        table
    }

    fn remove(&mut self, number: u64) {
        if let Some((_, used)) = self.tables.remove(&number) {
            self.by_use.remove(&used);
        }
    }
}

impl TableCache {
    pub(crate) fn new(fs: Arc<dyn FileSystem>, options: &Options) -> TableCache {
        TableCache {
            fs,
            blocks: BlockCache::new(options.block_cache_size),
            limit: usize::try_from(options.max_open_files).ok(),
            entries: Mutex::new(Entries::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The block cache's figures (`None` without a block cache).
    pub(crate) fn block_cache_stats(&self) -> Option<BlockCacheStats> {
        self.blocks.as_ref().map(|c| c.stats())
    }

    /// How many tables are open now.
    pub(crate) fn open_tables(&self) -> usize {
        self.lock().tables.len()
    }

    /// The open table of `meta`, opening it on a miss (the file's size must match the
    /// version's, else the version and the file disagree: corruption).
    pub(crate) fn get(&self, meta: &FileMeta) -> Result<Arc<Table>> {
        if let Some(table) = self.lock().touch(meta.number, self.limit) {
            return Ok(table);
        }
        // Open without the lock: it reads the footer, index and filter from the device.
        let name = sst_file_name(meta.number);
        let file = self
            .fs
            .open(&name)
            .map_err(|e| Error::fs(format!("open table '{name}'"), e))?;
        if file.size() != meta.size {
            return Err(Error::corruption(
                format!("table '{name}'"),
                format!(
                    "the file holds {} bytes, the version says {}",
                    file.size(),
                    meta.size
                ),
            ));
        }
        let slot = self.blocks.as_ref().map(|cache| CacheSlot {
            cache: Arc::clone(cache),
            file: meta.number,
        });
        let file = Arc::new(file) as Arc<dyn RandomAccess>;
        let table = Arc::new(Table::open_cached(file, slot)?);
        let mut entries = self.lock();
        // A compaction may have deleted the file (and evicted it) since this version was
        // read: a cached table of a deleted file would pin its zones until the database
        // closes. A compaction deletes before it evicts, so under the lock "still there"
        // means any eviction is yet to come.
        if !self.fs.exists(&name) {
            return Ok(table);
        }
        Ok(entries.keep(meta.number, table, self.limit))
    }

    /// Forgets the table of a deleted file.
    pub(crate) fn evict(&self, number: u64) {
        self.lock().remove(number);
    }

    /// Opens every table of `version` now: an iterator over the version keeps them, so it
    /// keeps working when compactions delete its files.
    pub(crate) fn pin_version(&self, version: &Version) -> Result<PinnedTables> {
        let mut tables = BTreeMap::new();
        for (_, f) in version.all_files() {
            tables.insert(f.number, self.get(f)?);
        }
        Ok(PinnedTables { tables })
    }
}

impl TableOpener for TableCache {
    fn open_table(&self, meta: &FileMeta) -> Result<Arc<Table>> {
        self.get(meta)
    }
}

/// The tables of one version, opened when an iterator was created.
pub(crate) struct PinnedTables {
    tables: BTreeMap<u64, Arc<Table>>,
}

impl PinnedTables {
    pub(crate) fn table(&self, number: u64) -> Result<Arc<Table>> {
        self.tables.get(&number).cloned().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "table {number} is not part of the iterator's version"
            ))
        })
    }
}

impl TableOpener for PinnedTables {
    fn open_table(&self, meta: &FileMeta) -> Result<Arc<Table>> {
        self.table(meta.number)
    }
}
