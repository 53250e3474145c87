//! The table cache: file number → open [`Table`], so the footer, index and filter of an SST
//! are read once.
//!
//! A table reads its file through a [`ZoneFile`]: a reader of the file layer that can be
//! swapped for a fresh one. A reader pins the zones of the extents it saw at open (the file
//! layer resets a zone only when no reader pins it), so a table kept open forever would keep
//! every zone the zone cleaner migrated data out of from being reset. After cleaning, the
//! database calls [`TableCache::refresh`], which reopens each cached file: the new reader
//! sees the migrated extents, and dropping the old one releases the victims. A file that
//! was deleted meanwhile keeps its old reader, so iterators pinned to an old version keep
//! reading it.
//!
//! Maps are ordered by file number, so that reopening after cleaning and dropping pinned
//! tables release readers, and with them let the file layer reset zones, in the same order
//! on every run: the deterministic mode's device I/O (and the timing model fed by it)
//! must not depend on hash order.
//!
//! Entries leave the cache when their file is deleted ([`TableCache::evict`]); tables
//! already handed out stay readable (and their zones pinned) until their last user drops
//! them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use zonefs::fs::{FileReader, ZoneFs};

use crate::iter::level::TableOpener;
use crate::source::RandomAccess;
use crate::sst::Table;
use crate::version::{FileMeta, Version};
use crate::{Error, Result};

use super::files::sst_file_name;

/// An SST file read through a swappable file-layer reader.
pub(crate) struct ZoneFile {
    fs: Arc<ZoneFs>,
    name: String,
    size: u64,
    reader: RwLock<Arc<FileReader>>,
}

impl ZoneFile {
    fn open(fs: &Arc<ZoneFs>, name: &str) -> Result<ZoneFile> {
        let reader = fs
            .open(name)
            .map_err(|e| Error::fs(format!("open table '{name}'"), e))?;
        Ok(ZoneFile {
            fs: Arc::clone(fs),
            name: name.to_string(),
            size: reader.size(),
            reader: RwLock::new(Arc::new(reader)),
        })
    }

    fn current(&self) -> Arc<FileReader> {
        Arc::clone(&self.reader.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Reopens the file so that reads follow its current extents; keeps the old reader if
    /// the file is gone or changed size (it can only be gone: SSTs are written once).
    fn refresh(&self) {
        if let Ok(fresh) = self.fs.open(&self.name) {
            if fresh.size() == self.size {
                *self.reader.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
            }
        }
    }
}

impl RandomAccess for ZoneFile {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.current().read_exact_at(offset, buf)
    }

    fn what(&self) -> String {
        format!("table '{}'", self.name)
    }
}

struct Entry {
    table: Arc<Table>,
    file: Arc<ZoneFile>,
}

/// Open tables by file number.
pub(crate) struct TableCache {
    fs: Arc<ZoneFs>,
    entries: Mutex<BTreeMap<u64, Entry>>,
}

impl TableCache {
    pub(crate) fn new(fs: Arc<ZoneFs>) -> TableCache {
        TableCache {
            fs,
            entries: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open table of `meta`, opening it on a miss (the file's size must match the
    /// version's, else the version and the file disagree: corruption).
    pub(crate) fn get(&self, meta: &FileMeta) -> Result<Arc<Table>> {
        if let Some(e) = self.lock().get(&meta.number) {
            return Ok(Arc::clone(&e.table));
        }
        // Open without the lock: it reads the footer, index and filter from the device.
        let name = sst_file_name(meta.number);
        let file = Arc::new(ZoneFile::open(&self.fs, &name)?);
        if file.size != meta.size {
            return Err(Error::corruption(
                format!("table '{name}'"),
                format!(
                    "the file holds {} bytes, the version says {}",
                    file.size, meta.size
                ),
            ));
        }
        let table = Arc::new(Table::open(Arc::clone(&file) as Arc<dyn RandomAccess>)?);
        let mut entries = self.lock();
        let entry = entries.entry(meta.number).or_insert(Entry { table, file });
        Ok(Arc::clone(&entry.table))
    }

    /// Forgets the table of a deleted file.
    pub(crate) fn evict(&self, number: u64) {
        self.lock().remove(&number);
    }

    /// Reopens every cached file (see the module doc).
    pub(crate) fn refresh(&self) {
        let files: Vec<Arc<ZoneFile>> = self.lock().values().map(|e| Arc::clone(&e.file)).collect();
        for f in files {
            f.refresh();
        }
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
