//! The directory file system: the database's files as plain files in one directory of a
//! conventional file system (the same engine on a conventional SSD).
//!
//! Durability as RocksDB's `PosixFileSystem` gives it: [`WritableFile::sync`] is
//! `fdatasync`; create, rename and delete sync the directory before they return, so a
//! crash keeps the file's name as well as its synced bytes; rename is `rename(2)`, atomic.
//!
//! What it does not do: placement (the hints are taken and ignored), zones, zone cleaning,
//! free-space figures. It counts the bytes appended to and read from its files per
//! [`IoCategory`] ([`PosixFs::stats`]), the category chosen from the file's kind and level
//! as the zoned file layer chooses it, so that a run reports its write amplification;
//! without zone cleaning, the bytes written are the LSM's own.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use zkv_zns::{Counters, DeviceStats, IoCategory};
use zkv_zonefs::fs::{default_category, FsError, FsResult};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::PlacementHint;

use super::{FileSystem, ReadableFile, WritableFile};
use crate::db::{parse_file_name, DbFile};

/// Appends are gathered up to this many bytes before they go to the operating system.
/// The buffer goes out only between appends, so the file never ends inside an append
/// after a process crash (a log record is one append): only a power cut can tear one.
const WRITE_BUFFER: usize = 64 * 1024;

/// A directory as the engine's file system. Cheap to clone; clones share the counters.
#[derive(Clone)]
pub struct PosixFs {
    shared: Arc<Shared>,
}

struct Shared {
    dir: PathBuf,
    counters: Counters,
    /// The I/O category of each file created through this handle, for its reads. Files
    /// found in the directory are categorised by their names (see [`category_of_name`]).
    categories: Mutex<HashMap<String, IoCategory>>,
}

impl PosixFs {
    /// Opens the directory `dir` as a file system, creating it (and its parents) if
    /// it does not exist.
    pub fn open(dir: impl Into<PathBuf>) -> FsResult<PosixFs> {
        let dir = dir.into();
        let context = || dir.display().to_string();
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                let e = std::io::Error::new(ErrorKind::NotADirectory, "not a directory");
                return Err(io(context(), e));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                std::fs::create_dir_all(&dir).map_err(|e| io(format!("create {}", context()), e))?
            }
            Err(e) => return Err(io(context(), e)),
        }
        Ok(PosixFs {
            shared: Arc::new(Shared {
                dir,
                counters: Counters::new(0),
                categories: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The directory holding the database's files.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Bytes appended and read per category, appends and reads, syncs (no resets, no
    /// finishes: there are no zones).
    pub fn stats(&self) -> DeviceStats {
        self.shared.counters.snapshot()
    }

    fn path(&self, name: &str) -> FsResult<PathBuf> {
        let flat = !name.is_empty() && name != "." && name != ".." && !name.contains('/');
        if !flat {
            let e = std::io::Error::new(ErrorKind::InvalidInput, "not a plain file name");
            return Err(io(format!("file name '{}'", name.escape_debug()), e));
        }
        Ok(self.shared.dir.join(name))
    }

    fn categories(&self) -> MutexGuard<'_, HashMap<String, IoCategory>> {
        let c = &self.shared.categories;
        c.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes the directory's entries durable (after a create, rename or delete).
    fn sync_dir(&self, context: impl FnOnce() -> String) -> FsResult<()> {
        File::open(&self.shared.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io(format!("{}: sync the directory", context()), e))?;
        self.shared.counters.on_sync();
        Ok(())
    }

    fn create_new(
        &self,
        name: &str,
        kind: FileKind,
        hint: &PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>> {
        let path = self.path(name)?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| match e.kind() {
                ErrorKind::AlreadyExists => FsError::AlreadyExists { name: name.into() },
                _ => io(format!("create '{name}'"), e),
            })?;
        self.sync_dir(|| format!("create '{name}'"))?;
        let cat = default_category(kind, hint.level);
        self.categories().insert(name.to_string(), cat);
        Ok(Box::new(PosixWriter {
            shared: Arc::clone(&self.shared),
            name: name.to_string(),
            file,
            buf: Vec::new(),
            size: 0,
            cat,
            failed: None,
        }))
    }
}

impl FileSystem for PosixFs {
    fn create(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>> {
        self.create_new(name, kind, &hint)
    }

    fn create_or_replace(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>> {
        match std::fs::remove_file(self.path(name)?) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io(format!("replace '{name}'"), e)),
        }
        self.create_new(name, kind, &hint)
    }

    fn open(&self, name: &str) -> FsResult<Box<dyn ReadableFile>> {
        let file = File::open(self.path(name)?).map_err(|e| not_found_or(name, "open", e))?;
        let size = file
            .metadata()
            .map_err(|e| io(format!("open '{name}'"), e))?
            .len();
        let cat = self.categories().get(name).copied();
        Ok(Box::new(PosixReader {
            shared: Arc::clone(&self.shared),
            name: name.to_string(),
            file,
            size,
            cat: cat.unwrap_or_else(|| category_of_name(name)),
        }))
    }

    fn rename(&self, old: &str, new: &str) -> FsResult<()> {
        let (from, to) = (self.path(old)?, self.path(new)?);
        std::fs::rename(from, to)
            .map_err(|e| not_found_or(old, &format!("rename to '{new}'"), e))?;
        let mut categories = self.categories();
        if let Some(cat) = categories.remove(old) {
            categories.insert(new.to_string(), cat);
        }
        drop(categories);
        self.sync_dir(|| format!("rename '{old}' to '{new}'"))
    }

    fn delete(&self, name: &str) -> FsResult<()> {
        std::fs::remove_file(self.path(name)?).map_err(|e| not_found_or(name, "delete", e))?;
        self.categories().remove(name);
        self.sync_dir(|| format!("delete '{name}'"))
    }

    fn exists(&self, name: &str) -> bool {
        self.path(name)
            .is_ok_and(|p| p.symlink_metadata().is_ok_and(|m| m.is_file()))
    }

    fn list(&self) -> FsResult<Vec<String>> {
        let dir = &self.shared.dir;
        let context = || format!("list {}", dir.display());
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io(context(), e))? {
            let entry = entry.map_err(|e| io(context(), e))?;
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            // Names that are not UTF-8 are not the database's: left alone.
            if let (true, Ok(name)) = (is_file, entry.file_name().into_string()) {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn io_stats(&self) -> DeviceStats {
        self.stats()
    }

    fn describe(&self) -> String {
        format!("posix:{}", self.shared.dir.display())
    }
}

impl std::fmt::Debug for PosixFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PosixFs")
            .field("dir", &self.shared.dir)
            .finish()
    }
}

/// The category of a file this handle did not create, from its name: the level of an
/// SST is not in its name, so every SST counts as compaction output.
fn category_of_name(name: &str) -> IoCategory {
    match parse_file_name(name) {
        DbFile::Wal(_) => IoCategory::Wal,
        DbFile::Sst(_) => IoCategory::Compaction,
        DbFile::Blob(_) => IoCategory::Blob,
        DbFile::Temp | DbFile::Other => IoCategory::User,
    }
}

fn io(context: String, source: std::io::Error) -> FsError {
    FsError::Io { context, source }
}

fn not_found_or(name: &str, step: &str, e: std::io::Error) -> FsError {
    match e.kind() {
        ErrorKind::NotFound => FsError::NotFound { name: name.into() },
        _ => io(format!("{step} '{name}'"), e),
    }
}

struct PosixWriter {
    shared: Arc<Shared>,
    name: String,
    file: File,
    /// Whole appends not handed to the operating system yet.
    buf: Vec<u8>,
    size: u64,
    cat: IoCategory,
    /// The first failure: a writer that failed refuses everything after it (a failed
    /// fsync may have dropped pages that a second one would not write again).
    failed: Option<String>,
}

impl PosixWriter {
    fn check(&self) -> FsResult<()> {
        match &self.failed {
            Some(reason) => Err(FsError::WriterFailed {
                name: self.name.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    fn fail(&mut self, step: &str, e: std::io::Error) -> FsError {
        self.failed = Some(format!("{step}: {e}"));
        io(format!("{step} '{}'", self.name), e)
    }

    /// Hands the buffered appends to the operating system.
    fn write_out(&mut self) -> std::io::Result<()> {
        let written = self.file.write_all(&self.buf);
        self.buf.clear();
        written
    }
}

impl Drop for PosixWriter {
    /// A writer dropped without `close` still hands its whole appends to the operating
    /// system (not synced: a power cut may lose them).
    fn drop(&mut self) {
        if self.failed.is_none() {
            let _ = self.write_out();
        }
    }
}

impl WritableFile for PosixWriter {
    fn name(&self) -> &str {
        &self.name
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn append(&mut self, data: &[u8]) -> FsResult<()> {
        self.append_parts(&[data])
    }

    /// The parts go to the operating system together: into the buffer (written out before
    /// them if they would not fit), or, as large as the buffer, in one write.
    fn append_parts(&mut self, parts: &[&[u8]]) -> FsResult<()> {
        self.check()?;
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if self.buf.len() + total > WRITE_BUFFER {
            if let Err(e) = self.write_out() {
                return Err(self.fail("append to", e));
            }
        }
        let direct = match parts {
            [one] if total >= WRITE_BUFFER => self.file.write_all(one),
            _ if total >= WRITE_BUFFER => self.file.write_all(&parts.concat()),
            _ => {
                parts.iter().for_each(|p| self.buf.extend_from_slice(p));
                Ok(())
            }
        };
        if let Err(e) = direct {
            return Err(self.fail("append to", e));
        }
        self.size += total as u64;
        self.shared.counters.on_write(self.cat, total as u64);
        Ok(())
    }

    fn sync(&mut self) -> FsResult<()> {
        self.check()?;
        let synced = self.write_out().and_then(|()| self.file.sync_data());
        if let Err(e) = synced {
            return Err(self.fail("sync", e));
        }
        self.shared.counters.on_sync();
        Ok(())
    }

    fn close(mut self: Box<Self>) -> FsResult<()> {
        self.sync()
    }
}

struct PosixReader {
    shared: Arc<Shared>,
    name: String,
    file: File,
    size: u64,
    cat: IoCategory,
}

impl ReadableFile for PosixReader {
    fn name(&self) -> &str {
        &self.name
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        let end = self.size.min(offset.saturating_add(buf.len() as u64));
        if offset >= end {
            return Ok(0);
        }
        let want = (end - offset) as usize;
        let mut done = 0;
        // `want <= buf.len()` (the end above is capped by it) and `done < want`.
        while let Some(rest) = buf.get_mut(done..want) {
            if rest.is_empty() {
                break;
            }
            match self.file.read_at(rest, offset + done as u64) {
                Ok(0) => break, // shortened under us: the caller sees a short read
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    let context = format!("read '{}' at offset {offset}", self.name);
                    return Err(io(context, e));
                }
            }
        }
        self.shared.counters.on_read(self.cat, done as u64);
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs() -> (tempfile::TempDir, PosixFs) {
        let dir = tempfile::tempdir().unwrap();
        let fs = PosixFs::open(dir.path().join("db")).unwrap();
        (dir, fs)
    }

    #[test]
    fn files_are_created_written_read_renamed_and_deleted() {
        let (_dir, fs) = fs();
        let hint = PlacementHint::default();
        let mut w = fs
            .create("000001.log", FileKind::Wal, hint.clone())
            .unwrap();
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.size(), 11);
        w.close().unwrap();
        let err = fs.create("000001.log", FileKind::Wal, hint.clone());
        assert!(matches!(err, Err(FsError::AlreadyExists { .. })));
        let r = fs.open("000001.log").unwrap();
        assert_eq!(r.read_all().unwrap(), b"hello world");
        let mut buf = [0u8; 8];
        assert_eq!(r.read_at(6, &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"world");
        assert_eq!(r.read_at(11, &mut buf).unwrap(), 0);
        fs.rename("000001.log", "x").unwrap();
        assert_eq!(fs.list().unwrap(), vec!["x".to_string()]);
        // An open reader keeps its snapshot after the delete, as POSIX keeps the inode.
        fs.delete("x").unwrap();
        assert_eq!(r.read_all().unwrap(), b"hello world");
        assert!(!fs.exists("x"));
        assert!(matches!(fs.delete("x"), Err(FsError::NotFound { .. })));
        assert!(matches!(fs.open("x"), Err(FsError::NotFound { .. })));
    }

    #[test]
    fn the_parts_of_one_append_reach_the_file_together() {
        let (dir, fs) = fs();
        let hint = PlacementHint::default();
        let mut w = fs.create("000001.log", FileKind::Wal, hint).unwrap();
        let on_disk = || {
            std::fs::metadata(dir.path().join("db/000001.log"))
                .unwrap()
                .len()
        };
        // The first part would still fit in the buffer, the second not: both stay
        // buffered, after what was there is written out.
        let fill = WRITE_BUFFER - 30;
        w.append(&vec![1u8; fill]).unwrap();
        w.append_parts(&[&[2u8; 20], &[3u8; 20]]).unwrap();
        assert_eq!(on_disk(), fill as u64);
        // Parts as large as the buffer go out in one write.
        let big = vec![4u8; WRITE_BUFFER];
        w.append_parts(&[&[5u8; 13], &big]).unwrap();
        assert_eq!(on_disk(), (fill + 40 + 13 + WRITE_BUFFER) as u64);
        assert_eq!(w.size(), on_disk());
        w.close().unwrap();
    }

    #[test]
    fn bytes_are_counted_by_category() {
        let (_dir, fs) = fs();
        let l0 = PlacementHint {
            level: Some(0),
            ..PlacementHint::default()
        };
        let mut w = fs.create("000002.sst", FileKind::Sst, l0).unwrap();
        w.append(&[7u8; 100]).unwrap();
        w.close().unwrap();
        let mut w = fs
            .create("000003.log", FileKind::Wal, PlacementHint::default())
            .unwrap();
        w.append(&[1u8; 10]).unwrap();
        w.sync().unwrap();
        fs.open("000002.sst").unwrap().read_all().unwrap();
        let s = fs.stats();
        assert_eq!(s.written(IoCategory::Flush), 100);
        assert_eq!(s.written(IoCategory::Wal), 10);
        assert_eq!(s.read(IoCategory::Flush), 100);
        assert_eq!(s.total_written(), 110);
    }

    #[test]
    fn replace_and_bad_names() {
        let (_dir, fs) = fs();
        let hint = PlacementHint::default();
        let mut w = fs
            .create("CURRENT", FileKind::Manifest, hint.clone())
            .unwrap();
        w.append(b"old").unwrap();
        w.close().unwrap();
        let mut w = fs
            .create_or_replace("CURRENT", FileKind::Manifest, hint.clone())
            .unwrap();
        w.append(b"new!").unwrap();
        w.close().unwrap();
        assert_eq!(fs.open("CURRENT").unwrap().read_all().unwrap(), b"new!");
        for bad in ["", "..", "a/b"] {
            let err = fs.create(bad, FileKind::Other, hint.clone()).err().unwrap();
            assert!(matches!(err, FsError::Io { .. }), "{err}");
            assert!(!fs.exists(bad));
        }
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let err = PosixFs::open(&file).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
    }
}
