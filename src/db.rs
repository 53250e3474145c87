//! [`Db`]: a zkv store opened from a device spec, with every handle it needs.

use std::sync::Arc;

use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db as EngineDb, ReadOptions, Snapshot, WriteOptions};
use zkv_engine::iter::DbIter;
use zkv_engine::key::ValueKind;
use zkv_engine::options::{ExecMode, Options};
use zkv_engine::version::VersionSet;
use zkv_zns::{DeviceSpec, ZonedDevice};
use zkv_zonefs::fs::{CleanerThread, InlineCleaning, ZoneFs};

use crate::error::{Error, Result};
use crate::open;
use crate::options::DbOptions;
use crate::room::Room;

/// A zkv store: a zoned device, the zoned file system on it, its zone cleaning and the
/// LSM database, opened together by [`Db::open`] and closed together by [`Db::close`].
///
/// Reads and writes take keys and values as anything that is bytes (`&str`, `&[u8]`,
/// `Vec<u8>`, ...). [`Db::put`], [`Db::delete`] and [`Db::write`] use the default
/// [`WriteOptions`]: the write goes to the WAL but is not synced, as in RocksDB; it
/// survives a crash of the program once [`Db::close`] has returned, and a power cut only
/// if synced (`put_opt` with [`WriteOptions::synced`]). Everything else the engine offers
/// (flush, compaction, statistics) is on [`Db::engine`].
///
/// `Db` is `Send + Sync`: share it between threads behind an `Arc`.
///
/// # Examples
///
/// Open an in-memory store, write, read, delete and close it:
///
/// ```
/// use zkv::{Db, DbOptions};
///
/// # fn main() -> zkv::Result<()> {
/// let db = Db::open("mem", DbOptions::default())?;
/// db.put("user1", "alice")?;
/// assert_eq!(db.get("user1")?, Some(b"alice".to_vec()));
/// db.delete("user1")?;
/// assert_eq!(db.get("user1")?, None);
/// db.close()?;
/// # Ok(())
/// # }
/// ```
///
/// A batch is applied whole or not at all; a snapshot keeps reading what was there when
/// it was taken; an iterator lists keys in order:
///
/// ```
/// use zkv::{Db, DbOptions, ReadOptions, WriteBatch};
///
/// # fn main() -> zkv::Result<()> {
/// let db = Db::open("mem", DbOptions::default())?;
/// let mut batch = WriteBatch::new();
/// batch.put(b"a", b"1");
/// batch.put(b"b", b"2");
/// batch.delete(b"c");
/// db.write(batch)?;
///
/// let snapshot = db.snapshot();
/// db.put("a", "changed")?;
/// assert_eq!(db.get_opt("a", &ReadOptions::at(&snapshot))?, Some(b"1".to_vec()));
/// assert_eq!(db.get("a")?, Some(b"changed".to_vec()));
///
/// let mut keys = Vec::new();
/// for entry in db.iter()? {
///     let (key, _value) = entry?;
///     keys.push(key);
/// }
/// assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
/// db.close()?;
/// # Ok(())
/// # }
/// ```
///
/// # Closing
///
/// [`Db::close`] waits for the background work, stops the zone cleaner, syncs the WAL and
/// the device, and reports what failed. Dropping a `Db` without closing it does the same
/// steps as far as it can and ignores their errors; background jobs that had not started
/// yet are left to the next open, which finds every write in the WAL.
pub struct Db {
    // Field order is drop order: a `Db` dropped without `close` stops the database (its
    // threads, its WAL), then the cleaner, then syncs the device.
    engine: EngineDb,
    cleaner: Option<CleanerThread>,
    sync: SyncOnDrop,
    device: Arc<str>,
    room: Room,
}

impl Db {
    /// Opens the store on `device`: `mem` (a new in-memory device), `file:PATH` (an
    /// emulated zoned device in one image file) or `zbd:/dev/DEV` (a Linux zoned block
    /// device). What is missing (the image, the file system, the database) is created if
    /// [`DbOptions::create_if_missing`] allows it; zone cleaning is started unless
    /// [`DbOptions::cleaning`] is off.
    ///
    /// An image is locked while open: a second open of it, from this process or another,
    /// fails with [`Error::Device`] until the first is closed. If the open fails, an image
    /// it created is removed again.
    ///
    /// ```
    /// use zkv::{Db, DbOptions};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let device = format!("file:{}", dir.path().join("zkv.img").display());
    /// let db = Db::open(&device, DbOptions::default())?;
    /// db.put("k", "v")?;
    /// db.close()?;
    ///
    /// let db = Db::open(&device, DbOptions { create_if_missing: false, ..DbOptions::default() })?;
    /// assert_eq!(db.get("k")?, Some(b"v".to_vec()));
    /// db.close()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(device: &str, options: DbOptions) -> Result<Db> {
        let spec: DeviceSpec = device.parse().map_err(|e| Error::device_error(device, e))?;
        let mounted = open::mount(&spec, &options)?;
        Db::open_on(mounted.fs, options).inspect_err(|_| {
            if let Some(path) = &mounted.created {
                let _ = std::fs::remove_file(path);
            }
        })
    }

    /// Opens the database on a file system the caller mounted itself (for a device opened
    /// its own way): starts zone cleaning as [`Db::open`] does and opens the database,
    /// creating it if it is missing and [`DbOptions::create_if_missing`] allows it.
    /// [`DbOptions::geometry`] and [`DbOptions::fs`] play no part here. [`Db::close`] syncs
    /// the file system's device.
    pub fn open_on(fs: Arc<ZoneFs>, options: DbOptions) -> Result<Db> {
        let device: Arc<str> = fs.device().describe().into();
        let exists = VersionSet::exists(&fs);
        if exists && options.error_if_exists {
            return Err(Error::AlreadyExists {
                device: device.to_string(),
            });
        }
        if !exists && !options.create_if_missing {
            return Err(Error::not_found(
                &device,
                "the file system holds no zkv database",
            ));
        }
        let cleaner = start_cleaning(&fs, &options).map_err(|e| Error::fs(&device, e))?;
        let engine_options = Options {
            create_if_missing: options.create_if_missing,
            error_if_exists: options.error_if_exists,
            ..options.engine
        };
        let sync = SyncOnDrop(Some(Arc::clone(fs.device())));
        let engine = EngineDb::open(fs, engine_options).map_err(|e| Error::engine(&device, e))?;
        let room = Room::new(&engine, options.recovery_room, options.cleaning);
        Ok(Db {
            engine,
            cleaner,
            sync,
            device,
            room,
        })
    }

    /// Sets `key` to `value`, with the default [`WriteOptions`] (not synced).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Sets `key` to `value` with `options` (e.g. [`WriteOptions::synced`]).
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &WriteOptions,
    ) -> Result<()> {
        let bytes = (key.as_ref().len() + value.as_ref().len()) as u64;
        self.room.admit(&self.engine, &self.device, Some(bytes))?;
        let done = self.engine.put(options, key.as_ref(), value.as_ref());
        done.map_err(|e| self.error(e))
    }

    /// The value of `key`, or `None` if it has none (never written, or deleted).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// The value of `key` as `options` read it (e.g. at a snapshot: [`ReadOptions::at`]).
    pub fn get_opt(
        &self,
        key: impl AsRef<[u8]>,
        options: &ReadOptions<'_>,
    ) -> Result<Option<Vec<u8>>> {
        let found = self.engine.get(options, key.as_ref());
        found.map_err(|e| self.error(e))
    }

    /// Deletes `key`, with the default [`WriteOptions`] (not synced).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Deletes `key` with `options`.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, options: &WriteOptions) -> Result<()> {
        let done = self.engine.delete(options, key.as_ref());
        done.map_err(|e| self.error(e))
    }

    /// Compacts the keys `[begin, end]` (`None` = unbounded) down to the last level holding
    /// data there, so deleted and overwritten values stop taking space (RocksDB's
    /// `CompactRange`). It goes one table at a time, so it works on a device that deletes
    /// were written to after it filled up: the way a full store gets room back.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let done = self.engine.compact_range(begin, end);
        done.map_err(|e| self.error(e))
    }

    /// Applies `batch` atomically (readers and recovery see all of it or none of it), with
    /// the default [`WriteOptions`] (not synced).
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Applies `batch` atomically with `options`.
    pub fn write_opt(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        let adds = batch.ops().any(|op| op.kind != ValueKind::Delete);
        let bytes = adds.then(|| batch.user_bytes());
        self.room.admit(&self.engine, &self.device, bytes)?;
        let done = self.engine.write(options, batch);
        done.map_err(|e| self.error(e))
    }

    /// A snapshot of the store now, for reads that must not see later writes
    /// ([`ReadOptions::at`]). Released when dropped.
    pub fn snapshot(&self) -> Snapshot {
        self.engine.snapshot()
    }

    /// Every key and its value, in key order, as of now.
    pub fn iter(&self) -> Result<Iter> {
        self.iter_opt(&ReadOptions::default())
    }

    /// The keys and values `options` select, in key order: within its bounds
    /// (`lower_bound` inclusive, `upper_bound` exclusive), as of its snapshot or of now.
    /// Writes made after the call do not change what the iterator returns.
    ///
    /// ```
    /// use zkv::{Db, DbOptions, ReadOptions};
    ///
    /// # fn main() -> zkv::Result<()> {
    /// let db = Db::open("mem", DbOptions::default())?;
    /// for key in ["apple", "banana", "cherry"] {
    ///     db.put(key, "fruit")?;
    /// }
    /// let options = ReadOptions {
    ///     lower_bound: Some(b"b".to_vec()),
    ///     upper_bound: Some(b"c".to_vec()),
    ///     ..ReadOptions::default()
    /// };
    /// let keys: Vec<Vec<u8>> = db
    ///     .iter_opt(&options)?
    ///     .map(|entry| entry.map(|(key, _)| key))
    ///     .collect::<zkv::Result<_>>()?;
    /// assert_eq!(keys, [b"banana".to_vec()]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn iter_opt(&self, options: &ReadOptions<'_>) -> Result<Iter> {
        let inner = self.engine.iter(options).map_err(|e| self.error(e))?;
        Ok(Iter {
            inner,
            device: Arc::clone(&self.device),
        })
    }

    /// Every key and its value, in descending key order, as of now.
    pub fn iter_rev(&self) -> Result<Iter> {
        self.iter_rev_opt(&ReadOptions::default())
    }

    /// The keys and values `options` select, in descending key order (see
    /// [`Db::iter_opt`]); e.g. the newest keys of a prefix with [`ReadOptions::prefix`].
    /// [`Iter::into_inner`] gives a cursor that moves both ways (`seek_for_prev`, `prev`).
    ///
    /// ```
    /// use zkv::{Db, DbOptions, ReadOptions};
    ///
    /// # fn main() -> zkv::Result<()> {
    /// let db = Db::open("mem", DbOptions::default())?;
    /// for key in ["log/001", "log/002", "log/003", "user/1"] {
    ///     db.put(key, "entry")?;
    /// }
    /// let options = ReadOptions::default().prefix(b"log/");
    /// let newest: Vec<Vec<u8>> = db
    ///     .iter_rev_opt(&options)?
    ///     .take(2)
    ///     .map(|entry| entry.map(|(key, _)| key))
    ///     .collect::<zkv::Result<_>>()?;
    /// assert_eq!(newest, [b"log/003".to_vec(), b"log/002".to_vec()]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn iter_rev_opt(&self, options: &ReadOptions<'_>) -> Result<Iter> {
        let inner = self.engine.iter(options).map_err(|e| self.error(e))?;
        Ok(Iter {
            inner: inner.reversed(),
            device: Arc::clone(&self.device),
        })
    }

    /// The database itself, for everything this type does not forward: flush, compaction,
    /// statistics, the file system and the device under it.
    pub fn engine(&self) -> &EngineDb {
        &self.engine
    }

    /// The device, as its spec is written (`mem`, `file:PATH`, `zbd:PATH`).
    pub fn device(&self) -> &str {
        &self.device
    }

    /// Closes the store: waits for the database's background work, stops its threads and
    /// syncs its WAL, stops the zone cleaner, then syncs the device. Every step runs even
    /// if one before it failed; the first failure is returned, and a failed run of the
    /// background zone cleaner counts as one ([`Error::Cleaner`]).
    pub fn close(self) -> Result<()> {
        let Db {
            engine,
            cleaner,
            sync,
            device,
            room: _,
        } = self;
        let closed = engine.close().map_err(|e| Error::engine(&device, e));
        let cleaned = match cleaner {
            Some(cleaner) => {
                let failed = cleaner.last_error();
                cleaner.stop();
                failed.map_or(Ok(()), |message| {
                    Err(Error::Cleaner {
                        device: device.to_string(),
                        message,
                    })
                })
            }
            None => Ok(()),
        };
        let synced = sync.now().map_err(|e| Error::device_error(&device, e));
        closed.and(cleaned).and(synced)
    }

    fn error(&self, e: zkv_engine::Error) -> Error {
        Error::engine(&self.device, e)
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("device", &self.device)
            .field("engine", &self.engine)
            .field("cleaner", &self.cleaner)
            .finish()
    }
}

/// Starts the zone cleaning `options` ask for: threaded mode, the background cleaner
/// thread; deterministic mode, the engine's virtual cleaner thread, which runs while the
/// file layer cleans inline only for a writer that finds no zone. Before the database
/// opens, since recovery writes too (the replayed WAL goes to L0 and a new manifest is
/// written): below `gc_start`, zones are cleaned first ([`ZoneFs::make_room`]).
fn start_cleaning(
    fs: &ZoneFs,
    options: &DbOptions,
) -> zkv_zonefs::fs::FsResult<Option<CleanerThread>> {
    if !options.cleaning {
        return Ok(None);
    }
    // Nothing writes yet: a full store's open gets room for its own writes first.
    fs.make_room()?;
    match options.engine.mode {
        ExecMode::Threaded => fs.start_cleaner().map(Some),
        ExecMode::Deterministic => {
            fs.set_inline_mode(InlineCleaning::OutOfSpace);
            Ok(None)
        }
    }
}

/// Syncs the device when dropped, unless [`SyncOnDrop::now`] did it already.
struct SyncOnDrop(Option<Arc<dyn ZonedDevice>>);

impl SyncOnDrop {
    fn now(mut self) -> zkv_zns::Result<()> {
        match self.0.take() {
            Some(dev) => dev.sync(),
            None => Ok(()),
        }
    }
}

impl Drop for SyncOnDrop {
    fn drop(&mut self) {
        if let Some(dev) = self.0.take() {
            let _ = dev.sync();
        }
    }
}

/// The keys and values of a [`Db`] in key order ([`Db::iter`], [`Db::iter_opt`]) or in
/// descending key order ([`Db::iter_rev`], [`Db::iter_rev_opt`]). It reads the store as it
/// was when it was made.
pub struct Iter {
    inner: DbIter,
    device: Arc<str>,
}

impl Iter {
    /// The engine's iterator, for seeking and stepping by hand.
    pub fn into_inner(self) -> DbIter {
        self.inner
    }
}

impl Iterator for Iter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = Iterator::next(&mut self.inner)?;
        Some(next.map_err(|e| Error::engine(&self.device, e)))
    }
}
