//! File operations: create, open, rename, delete, list, and which zones hold a file.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::meta::{ExtentMark, FileId, FileKind, FileMeta, FsState, Record};
use crate::placement::{Lifetime, PlacementHint};

use super::alloc::{uses_reserve, Reclaim};
use super::{FileInfo, FileReader, FileWriter, FsError, FsResult, ZoneFs};

impl ZoneFs {
    /// Creates an empty file for writing; an existing name is refused
    /// ([`FsError::AlreadyExists`]). The (empty) file is durable when this returns.
    ///
    /// A hint without a lifetime gets RocksDB's default for its kind and level (base
    /// level 1): WAL and manifest short, L0/L1 medium, L2 long, deeper extreme.
    pub fn create(&self, name: &str, kind: FileKind, hint: PlacementHint) -> FsResult<FileWriter> {
        self.create_file(name, kind, hint, false)
    }

    /// Like [`ZoneFs::create`], but an existing file of that name is replaced (its data is
    /// gone once this returns), as `open(O_CREAT | O_TRUNC)` does.
    pub fn create_or_replace(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<FileWriter> {
        self.create_file(name, kind, hint, true)
    }

    fn create_file(
        &self,
        name: &str,
        kind: FileKind,
        mut hint: PlacementHint,
        replace: bool,
    ) -> FsResult<FileWriter> {
        self.shared.check_writable(|| format!("create '{name}'"))?;
        self.ensure_some_space(name, kind)?;
        hint.kind = Some(kind);
        if hint.lifetime == Lifetime::NotSet {
            hint.lifetime = Lifetime::for_file(kind, hint.level, 1);
        }
        let sh = &self.shared;
        let mut meta = sh.lock_meta();
        let old = match meta.state.file_id(name) {
            Some(id) if meta.writing.contains(&id) => return Err(busy(name)),
            Some(_) if !replace => return Err(FsError::AlreadyExists { name: name.into() }),
            other => other,
        };
        let id = meta.state.next_file_id();
        let mut file = FileMeta::new(name, kind);
        file.level = hint.level;
        file.lifetime = hint.lifetime.code();
        let mut recs = Vec::new();
        let freed = old
            .map(|old| extents_of(&meta.state, old))
            .unwrap_or_default();
        if let Some(old) = old {
            recs.push(Record::FileDelete { id: old });
        }
        recs.push(Record::FileUpdate {
            id,
            meta: file.clone(),
        });
        meta.commit(&recs, &|| format!("create '{name}'"))?;
        meta.writing.insert(id);
        sh.release_live(freed);
        sh.reclaim_quietly(&mut meta);
        Ok(FileWriter::new(Arc::clone(sh), id, file, hint))
    }

    /// Refuses to create files when not one byte is free and nothing can be reclaimed.
    /// Metadata files may use the reserve (see [`uses_reserve`]).
    fn ensure_some_space(&self, name: &str, kind: FileKind) -> FsResult<()> {
        let sh = &self.shared;
        if uses_reserve(kind) {
            return Ok(());
        }
        let mut reclaim = Reclaim::for_kind(kind);
        loop {
            {
                let mut meta = sh.lock_meta();
                if sh.lock_zones().free_bytes() > 0 {
                    return Ok(());
                }
                if sh.reclaim_dead(&mut meta)? > 0 {
                    continue;
                }
            }
            if !sh.reclaim_space(&mut reclaim)? {
                break;
            }
        }
        let free = sh.lock_zones().free_bytes();
        match free {
            0 => Err(sh.out_of_space(name)),
            _ => Ok(()),
        }
    }

    /// Opens a file for reading: a snapshot of its content as of its last sync.
    pub fn open(&self, name: &str) -> FsResult<FileReader> {
        let mut meta = self.shared.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        let file = meta
            .state
            .file(id)
            .cloned()
            .ok_or_else(|| not_found(name))?;
        Ok(FileReader::pin(
            Arc::clone(&self.shared),
            &mut meta,
            id,
            file,
        ))
    }

    /// Renames `old` to `new`; an existing `new` is replaced in the same atomic step, as
    /// POSIX rename does. Durable when it returns.
    pub fn rename(&self, old: &str, new: &str) -> FsResult<()> {
        let sh = &self.shared;
        sh.check_writable(|| format!("rename '{old}' to '{new}'"))?;
        let mut meta = sh.lock_meta();
        let id = meta.state.file_id(old).ok_or_else(|| not_found(old))?;
        if meta.writing.contains(&id) {
            return Err(busy(old));
        }
        if old == new {
            return Ok(());
        }
        let target = meta.state.file_id(new);
        if target.is_some_and(|t| meta.writing.contains(&t)) {
            return Err(busy(new));
        }
        let freed = target
            .map(|t| extents_of(&meta.state, t))
            .unwrap_or_default();
        let rec = Record::FileRename {
            id,
            name: new.into(),
        };
        meta.commit(&[rec], &|| format!("rename '{old}' to '{new}'"))?;
        sh.release_live(freed);
        sh.reclaim_quietly(&mut meta);
        Ok(())
    }

    /// Deletes a file. Durable when it returns; zones left without valid data are reset.
    pub fn delete(&self, name: &str) -> FsResult<()> {
        let sh = &self.shared;
        sh.check_writable(|| format!("delete '{name}'"))?;
        let mut meta = sh.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        if meta.writing.contains(&id) {
            return Err(busy(name));
        }
        let freed = extents_of(&meta.state, id);
        meta.commit(&[Record::FileDelete { id }], &|| format!("delete '{name}'"))?;
        sh.release_live(freed);
        sh.reclaim_quietly(&mut meta);
        Ok(())
    }

    /// Whether a file of that name exists.
    pub fn exists(&self, name: &str) -> bool {
        self.shared.lock_meta().state.file_id(name).is_some()
    }

    /// Every file, in name order.
    pub fn list(&self) -> Vec<FileInfo> {
        let meta = self.shared.lock_meta();
        let mut files: Vec<FileInfo> = meta.state.files().map(|(_, m)| FileInfo::of(m)).collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files
    }

    /// What [`ZoneFs::list`] tells about one file; [`FsError::NotFound`] if there is none.
    pub fn file_info(&self, name: &str) -> FsResult<FileInfo> {
        let meta = self.shared.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        meta.state
            .file(id)
            .map(FileInfo::of)
            .ok_or_else(|| not_found(name))
    }

    /// The zones holding a file's synced extents and its bytes in each, in zone order.
    pub fn zones_of(&self, name: &str) -> FsResult<Vec<(u32, u64)>> {
        let meta = self.shared.lock_meta();
        let id = meta.state.file_id(name).ok_or_else(|| not_found(name))?;
        Ok(per_zone(&extents_of(&meta.state, id)))
    }

    /// Where the files' extents stand now: a mark to ask [`ZoneFs::zones_changed_since`]
    /// about later.
    pub fn extent_mark(&self) -> ExtentMark {
        self.shared.lock_meta().state.extent_mark()
    }

    /// Adds to `out`, in zone order, the zones that gained or lost a file's extent since
    /// `since` (a file deleted, moved by the cleaner or renamed): a file with no extent in
    /// them that was not being written at `since` has the same [`ZoneFs::zones_of`] as then
    /// (a file written further stamps no zone). False if `since` is
    /// not a mark of this state (then any file may have moved).
    pub fn zones_changed_since(&self, since: ExtentMark, out: &mut Vec<u32>) -> bool {
        self.shared
            .lock_meta()
            .state
            .zones_changed_since(since, out)
    }
}

fn not_found(name: &str) -> FsError {
    FsError::NotFound { name: name.into() }
}

fn busy(name: &str) -> FsError {
    FsError::Busy { name: name.into() }
}

fn extents_of(state: &FsState, id: FileId) -> Vec<(u32, u64)> {
    state
        .file(id)
        .map(|m| m.extents.iter().map(|e| (e.zone, e.len)).collect())
        .unwrap_or_default()
}

fn per_zone(extents: &[(u32, u64)]) -> Vec<(u32, u64)> {
    let mut zones: BTreeMap<u32, u64> = BTreeMap::new();
    for &(zone, len) in extents {
        *zones.entry(zone).or_default() += len;
    }
    zones.into_iter().collect()
}
