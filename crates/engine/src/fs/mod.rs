//! The file system the engine talks to (RocksDB's `FileSystem`): [`FileSystem`] creates,
//! opens, renames, deletes and lists the database's files; [`WritableFile`] appends and
//! syncs one of them, [`ReadableFile`] reads one at any offset.
//!
//! Two implementations:
//! - the zoned file layer, [`ZoneFs`] (`zoned.rs`): files as extents in zones, placed by
//!   the hint every `create` carries, with a zone cleaner;
//! - [`PosixFs`] (`posix.rs`): plain files in a directory of a conventional file system,
//!   for the same engine on a conventional SSD. It takes the hints and ignores them.
//!
//! The zone-only features the engine uses (the cleaner's compaction requests and hint
//! source, inline cleaning, zone statistics, free space) are not part of the trait: the
//! engine asks [`FileSystem::zoned`] and, on a directory, simply has no zone cleaner.
//!
//! Errors are the zoned file layer's [`FsError`] on both, so that the engine tells a
//! missing file or a full device apart the same way on either (`FsError::Io` carries the
//! directory's operating-system errors).

mod posix;
mod zoned;

use std::sync::Arc;

use zkv_zns::DeviceStats;
use zkv_zonefs::fs::{FsError, FsResult, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::PlacementHint;

pub use posix::PosixFs;

/// A file being written: appended to, synced, closed. Dropping it without [`close`]
/// keeps (at least) what its last sync made durable.
///
/// [`close`]: WritableFile::close
pub trait WritableFile: Send + Sync {
    /// The file's name on its file system.
    fn name(&self) -> &str;

    /// Bytes appended so far.
    fn size(&self) -> u64;

    /// Appends `data` after everything appended before.
    fn append(&mut self, data: &[u8]) -> FsResult<()>;

    /// Appends `parts` one after another as one append: a file system that hands whole
    /// appends to the operating system (a directory's) never leaves some of them without
    /// the rest after a process crash (a log record's header and payload). By default one
    /// `append` per part: the zoned file layer shows nothing past the last sync anyway.
    fn append_parts(&mut self, parts: &[&[u8]]) -> FsResult<()> {
        parts.iter().try_for_each(|part| self.append(part))
    }

    /// Makes everything appended durable: after `Ok`, a crash keeps it.
    fn sync(&mut self) -> FsResult<()>;

    /// Syncs and closes the file.
    fn close(self: Box<Self>) -> FsResult<()>;
}

/// A file opened for reading: a snapshot of its first [`size`](ReadableFile::size) bytes.
/// It stays readable if the file is deleted or replaced meanwhile.
pub trait ReadableFile: Send + Sync {
    /// The file's name on its file system.
    fn name(&self) -> &str;

    /// The file's size when it was opened.
    fn size(&self) -> u64;

    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (fewer only
    /// at the end of the file, 0 at or past it).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> FsResult<usize>;

    /// The whole file.
    fn read_all(&self) -> FsResult<Vec<u8>> {
        let len = usize::try_from(self.size()).map_err(|_| FsError::Io {
            context: format!("read '{}'", self.name()),
            source: std::io::Error::other("too large to read into memory"),
        })?;
        let mut buf = vec![0u8; len];
        let n = self.read_at(0, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
}

/// The file system a database lives on. Names are flat (no directories). Every change
/// (create, rename, delete) is durable when it returns.
pub trait FileSystem: Send + Sync + std::fmt::Debug {
    /// Creates an empty file for writing; an existing name is refused
    /// (`FsError::AlreadyExists`). `kind` and `hint` say what the file is and how long it
    /// will live (RocksDB's `write_hint`); a file system without placement ignores them.
    fn create(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>>;

    /// As [`FileSystem::create`], but an existing file of that name is replaced.
    fn create_or_replace(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>>;

    /// Opens a file for reading (`FsError::NotFound` if there is none).
    fn open(&self, name: &str) -> FsResult<Box<dyn ReadableFile>>;

    /// Renames `old` to `new`, replacing an existing `new` in the same atomic step.
    fn rename(&self, old: &str, new: &str) -> FsResult<()>;

    /// Deletes a file (`FsError::NotFound` if there is none); files open for reading stay
    /// readable.
    fn delete(&self, name: &str) -> FsResult<()>;

    /// Whether a file named `name` exists.
    fn exists(&self, name: &str) -> bool;

    /// The names of every file, in name order.
    fn list(&self) -> FsResult<Vec<String>>;

    /// Bytes written and read, by I/O category: on a zoned device the device's own
    /// counters; on a directory the bytes appended to and read from its files since it was
    /// opened.
    fn io_stats(&self) -> DeviceStats;

    /// What the file system is, for people: `zoned (…)`, `posix:DIR`.
    fn describe(&self) -> String;

    /// The zoned file layer, when that is what this is: the engine's zone-only features
    /// (the cleaner's requests and hints, inline cleaning, zone figures) use it, and are
    /// absent on any other file system.
    fn zoned(&self) -> Option<&ZoneFs> {
        None
    }
}

impl<T: WritableFile + ?Sized> WritableFile for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn size(&self) -> u64 {
        (**self).size()
    }

    fn append(&mut self, data: &[u8]) -> FsResult<()> {
        (**self).append(data)
    }

    fn append_parts(&mut self, parts: &[&[u8]]) -> FsResult<()> {
        (**self).append_parts(parts)
    }

    fn sync(&mut self) -> FsResult<()> {
        (**self).sync()
    }

    fn close(self: Box<Self>) -> FsResult<()> {
        (*self).close()
    }
}

impl<T: ReadableFile + ?Sized> ReadableFile for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        (**self).read_at(offset, buf)
    }

    fn read_all(&self) -> FsResult<Vec<u8>> {
        (**self).read_all()
    }
}

/// A shared handle on a file system, as the database's entry points take it: an
/// `Arc<ZoneFs>`, an `Arc<PosixFs>`, an `Arc<dyn FileSystem>`.
pub trait SharedFileSystem {
    /// Another handle on the same file system.
    fn shared(&self) -> Arc<dyn FileSystem>;
}

impl<T: FileSystem + 'static> SharedFileSystem for Arc<T> {
    fn shared(&self) -> Arc<dyn FileSystem> {
        Arc::clone(self) as Arc<dyn FileSystem>
    }
}

impl SharedFileSystem for Arc<dyn FileSystem> {
    fn shared(&self) -> Arc<dyn FileSystem> {
        Arc::clone(self)
    }
}

/// A shared file system is one: `&Arc<dyn FileSystem>` serves where `&dyn FileSystem` is
/// asked for.
impl<T: FileSystem + ?Sized> FileSystem for Arc<T> {
    fn create(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>> {
        (**self).create(name, kind, hint)
    }

    fn create_or_replace(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>> {
        (**self).create_or_replace(name, kind, hint)
    }

    fn open(&self, name: &str) -> FsResult<Box<dyn ReadableFile>> {
        (**self).open(name)
    }

    fn rename(&self, old: &str, new: &str) -> FsResult<()> {
        (**self).rename(old, new)
    }

    fn delete(&self, name: &str) -> FsResult<()> {
        (**self).delete(name)
    }

    fn exists(&self, name: &str) -> bool {
        (**self).exists(name)
    }

    fn list(&self) -> FsResult<Vec<String>> {
        (**self).list()
    }

    fn io_stats(&self) -> DeviceStats {
        (**self).io_stats()
    }

    fn describe(&self) -> String {
        (**self).describe()
    }

    fn zoned(&self) -> Option<&ZoneFs> {
        (**self).zoned()
    }
}

/// Whether the placement policy reads neighbourhoods (never without zones).
pub(crate) fn wants_neighbors(fs: &dyn FileSystem) -> bool {
    fs.zoned().is_some_and(ZoneFs::placement_wants_neighbors)
}

/// Whether anything uses lifetime predictions (never without zones).
pub(crate) fn wants_lifetimes(fs: &dyn FileSystem) -> bool {
    fs.zoned().is_some_and(ZoneFs::wants_lifetimes)
}

/// The free share of the usable space: the zoned file layer's figure; a directory counts
/// as all free (zone-aware orders, which start below a turning point, never start).
pub(crate) fn free_ratio(fs: &dyn FileSystem) -> f64 {
    fs.zoned().map_or(1.0, ZoneFs::free_ratio)
}
