//! The database's blob files on the file layer: a cache of open readers that resolves blob
//! references, the blob files a job creates, and the files a version drops.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use zkv_zonefs::fs::{FsError, ZoneFs};

use crate::fs::{FileSystem, WritableFile};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint, WriterJob};

use crate::blob::{
    blob_file_name, blob_record_bytes, first_kept_file, gc_estimate, BlobCount, BlobFileReader,
    BlobIndex, BlobOutcome, BlobRules, BlobSinks, BlobZones,
};
use crate::compaction::Compaction;
use crate::iter::BlobFetch;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::source::RandomAccess;
use crate::version::Version;
use crate::{Error, Result};

use super::files::{delete_file, sst_file_name, BASE_LEVEL};
use super::inner::DbInner;
use super::stats::Counters;

/// Open blob file readers by number, opened on first use. Ordered maps (here and in
/// [`PinnedBlobs`]): dropping a reader of a deleted file may reset its zones, and the
/// deterministic mode must reset them in the same order every run.
pub(crate) struct BlobCache {
    fs: Arc<dyn FileSystem>,
    readers: Mutex<BTreeMap<u64, Arc<BlobFileReader>>>,
}

impl BlobCache {
    pub(crate) fn new(fs: Arc<dyn FileSystem>) -> BlobCache {
        BlobCache {
            fs,
            readers: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<BlobFileReader>>> {
        self.readers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The reader of blob file `number`.
    pub(crate) fn reader(&self, number: u64) -> Result<Arc<BlobFileReader>> {
        if let Some(r) = self.lock().get(&number) {
            return Ok(Arc::clone(r));
        }
        // Opened without the lock: it reads the header and footer from the device.
        let name = blob_file_name(number);
        let file = self
            .fs
            .open(&name)
            .map_err(|e| Error::fs(format!("open blob file '{name}'"), e))?;
        let reader = Arc::new(BlobFileReader::open(
            Arc::new(file) as Arc<dyn RandomAccess>,
            number,
        )?);
        let mut readers = self.lock();
        // A file deleted meanwhile is not cached: its reader would keep its zones, and no
        // eviction would come. Deletion comes before eviction, so under the lock "still
        // there" means any eviction is yet to come.
        if !self.fs.exists(&name) {
            return Ok(reader);
        }
        Ok(Arc::clone(readers.entry(number).or_insert(reader)))
    }

    /// Forgets the reader of a deleted blob file.
    pub(crate) fn evict(&self, number: u64) {
        self.lock().remove(&number);
    }

    /// The readers of every blob file of `version`, for an iterator that must keep reading
    /// them after a compaction drops them.
    pub(crate) fn pin(&self, version: &Version) -> Result<PinnedBlobs> {
        let readers = version
            .blob_files()
            .map(|b| Ok((b.number, self.reader(b.number)?)))
            .collect::<Result<_>>()?;
        Ok(PinnedBlobs { readers })
    }
}

impl BlobFetch for BlobCache {
    fn fetch(&self, user_key: &[u8], index: &[u8]) -> Result<Vec<u8>> {
        let index = BlobIndex::decode(index)?;
        self.reader(index.file)?.get(user_key, &index)
    }
}

/// The blob files of one version, open.
pub(crate) struct PinnedBlobs {
    readers: BTreeMap<u64, Arc<BlobFileReader>>,
}

impl BlobFetch for PinnedBlobs {
    fn fetch(&self, user_key: &[u8], index: &[u8]) -> Result<Vec<u8>> {
        let index = BlobIndex::decode(index)?;
        let reader = self.readers.get(&index.file).ok_or_else(|| {
            Error::corruption(
                blob_file_name(index.file),
                "a table refers to a blob file its version does not hold",
            )
        })?;
        reader.get(user_key, &index)
    }
}

impl DbInner {
    /// What a job writing to `level` does with blobs, given the version it started from.
    pub(crate) fn blob_rules(&self, level: usize, version: &Version) -> BlobRules {
        let options = &self.options;
        let gc_cutoff = options.enable_blob_garbage_collection.then(|| {
            let numbers: Vec<u64> = version.blob_files().map(|b| b.number).collect();
            first_kept_file(&numbers, self.blob_cutoff.oldest_files(&numbers))
        });
        BlobRules {
            min_blob_size: options
                .writes_blobs_at(level)
                .then_some(options.min_blob_size),
            blob_file_size: options.blob_file_size,
            gc_cutoff: gc_cutoff.flatten(),
        }
    }

    /// How many of the oldest blob files of `version` garbage collection relocates now (0
    /// with it off).
    pub(crate) fn blob_gc_files(&self, version: &Version) -> usize {
        if !self.options.enable_blob_garbage_collection {
            return 0;
        }
        let numbers: Vec<u64> = version.blob_files().map(|b| b.number).collect();
        self.blob_cutoff.oldest_files(&numbers)
    }
}

/// The file layer's full blob zones, for Z_Cutoff.
pub(crate) struct FsBlobZones(pub Arc<dyn FileSystem>);

impl BlobZones for FsBlobZones {
    fn full_zone_ybiz(&self) -> Vec<u64> {
        // No zones, no full blob zones: Z_Cutoff then keeps every blob file where it is.
        let zones = self.0.zoned().map(ZoneFs::blob_zone_ybiz);
        zones.into_iter().flatten().map(|(_, ybiz)| ybiz).collect()
    }
}

/// The blobs a flush of `mems` will write to blob files, known before it runs: every put
/// whose value reaches `min_blob_size`, if L0 writes blob files (exact up to the older
/// versions of a key the flush drops). The deterministic mode's cost of the flush.
pub(crate) fn flush_blobs<'a>(
    options: &Options,
    mems: impl Iterator<Item = &'a Memtable>,
) -> BlobCount {
    let mut blobs = BlobCount::default();
    if options.writes_blobs_at(0) {
        for (key, value) in mems.flat_map(|m| m.large_puts(options.min_blob_size)) {
            blobs.add(blob_record_bytes(key, value));
        }
    }
    blobs
}

/// The blob files of a job writing to `level`, created on the file layer.
pub(crate) struct FsBlobSinks<'a> {
    pub inner: &'a DbInner,
    pub level: usize,
    pub job: WriterJob,
}

impl BlobSinks for FsBlobSinks<'_> {
    type Sink = Box<dyn WritableFile>;

    fn create(&mut self) -> Result<(u64, Box<dyn WritableFile>)> {
        let number = self.inner.new_file_number();
        let name = blob_file_name(number);
        let level = u8::try_from(self.level).unwrap_or(u8::MAX);
        let hint = PlacementHint {
            kind: Some(FileKind::Blob),
            level: Some(level),
            lifetime: Lifetime::for_file(FileKind::Blob, Some(level), BASE_LEVEL),
            size: self.inner.options.blob_file_size,
            blob_file: Some(number),
            job: Some(self.job),
            ..PlacementHint::default()
        };
        let writer = self
            .inner
            .fs
            .create(&name, FileKind::Blob, hint)
            .map_err(|e| failed("create", &name, e))?;
        Ok((number, writer))
    }

    fn close(&mut self, sink: Box<dyn WritableFile>) -> Result<()> {
        let name = sink.name().to_string();
        sink.close().map_err(|e| failed("close", &name, e))
    }
}

/// A blob file that cannot be written: out of space is a job without room for its output
/// (the threaded mode retries it once the cleaner made room), as for tables.
fn failed(step: &str, name: &str, e: FsError) -> Error {
    let context = format!("{step} blob file '{name}'");
    if e.is_out_of_space() {
        Error::NoRoomForOutput { context, source: e }
    } else {
        Error::fs(context, e)
    }
}

impl DbInner {
    /// The blobs the garbage collection of `c`, picked from `version`, will relocate
    /// ([`gc_estimate`] under the cutoff its job will use), from its inputs' `blob_refs`
    /// properties through the table cache: only inputs linked to a blob file below the
    /// cutoff are opened. The deterministic mode's cost of the compaction. A table that
    /// cannot be opened counts for nothing here: the compaction fails on it when it runs,
    /// and that failure is the one reported.
    pub(crate) fn gc_blobs(&self, c: &Compaction, rules: &BlobRules) -> BlobCount {
        let Some(cutoff) = rules.gc_cutoff else {
            return BlobCount::default();
        };
        let old = c
            .input_files()
            .filter(|f| f.oldest_blob_file.is_some_and(|b| b < cutoff));
        let tables: Vec<_> = old.filter_map(|f| self.tables.get(f).ok()).collect();
        gc_estimate(tables.iter().map(|t| &t.props().blob_refs), cutoff)
    }

    /// Deletes the blob files `before` held and `after` does not (RocksDB deletes a blob
    /// file once the version dropped it). A file that cannot be deleted now is left for the
    /// next open, which deletes blob files no version holds: the job that dropped it did
    /// its work, and failing it would leave its inputs behind instead.
    pub(crate) fn delete_dropped_blobs(&self, before: &Version, after: &Version) {
        for b in before.blob_files() {
            if after.blob_file(b.number).is_none()
                && delete_file(&self.fs, &blob_file_name(b.number)).is_ok()
            {
                self.blobs.evict(b.number);
                Counters::add(&self.counters.blob_files_deleted, 1);
            }
        }
    }

    /// Counts what a job's blob stage did.
    pub(crate) fn count_blob_files(&self, outcome: &BlobOutcome) {
        let c = &self.counters;
        Counters::add(&c.blob_files_created, outcome.added.len() as u64);
        let bytes = outcome.added.iter().map(|b| b.file_size).sum();
        Counters::add(&c.blob_file_bytes, bytes);
        Counters::add(&c.blob_gc_relocated, outcome.relocated.count);
        Counters::add(&c.blob_gc_relocated_bytes, outcome.relocated.bytes);
    }

    /// Deletes blob files a failed job created. One that cannot be deleted now stays as
    /// a leftover the next open deletes: the job's own error is what the caller reports.
    pub(crate) fn delete_blob_files(&self, numbers: &[u64]) {
        for &n in numbers {
            let _ = delete_file(&self.fs, &blob_file_name(n));
        }
    }

    /// Deletes tables a failed job wrote (as [`Self::delete_blob_files`]).
    pub(crate) fn delete_tables(&self, numbers: impl Iterator<Item = u64>) {
        for n in numbers {
            let _ = delete_file(&self.fs, &sst_file_name(n));
        }
    }
}
