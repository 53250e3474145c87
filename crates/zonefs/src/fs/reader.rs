//! Reading a file: a snapshot of its extents taken at open.
//!
//! A reader pins the zones its snapshot uses, so that they are not reset under it even if
//! the file is deleted or replaced meanwhile (as POSIX keeps an unlinked open file).

use std::collections::BTreeSet;
use std::sync::Arc;

use zns::IoCategory;

use crate::meta::{FileKind, FileMeta};

use super::error::{FsError, FsResult};
use super::shared::Shared;
use super::writer::default_category;

pub struct FileReader {
    shared: Arc<Shared>,
    meta: FileMeta,
    pinned: Vec<u32>,
    cat: IoCategory,
}

impl FileReader {
    /// Pins the zones of `meta`. The caller holds the metadata lock, so the snapshot is
    /// current when the pins are taken.
    pub(crate) fn pin(shared: Arc<Shared>, meta: FileMeta) -> FileReader {
        let pinned: Vec<u32> = meta
            .extents
            .iter()
            .map(|e| e.zone)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        {
            let mut zones = shared.lock_zones();
            for &zone in &pinned {
                if let Some(s) = zones.slot_mut(zone) {
                    s.pins += 1;
                }
            }
        }
        let cat = default_category(meta.kind, meta.level);
        FileReader {
            shared,
            meta,
            pinned,
            cat,
        }
    }

    pub fn name(&self) -> &str {
        &self.meta.name
    }

    pub fn kind(&self) -> FileKind {
        self.meta.kind
    }

    /// The file's size when it was opened (its last synced size).
    pub fn size(&self) -> u64 {
        self.meta.size
    }

    pub fn set_category(&mut self, cat: IoCategory) {
        self.cat = cat;
    }

    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (fewer only
    /// at the end of the file, 0 at or past it).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        let end = self.meta.size.min(offset.saturating_add(buf.len() as u64));
        if offset >= end {
            return Ok(0);
        }
        let mut start = 0u64; // logical offset of the current extent
        for e in &self.meta.extents {
            let (lo, hi) = (offset.max(start), end.min(start + e.len));
            if lo < hi {
                let dst = &mut buf[(lo - offset) as usize..(hi - offset) as usize];
                let addr = self.shared.geo.zone_start(e.zone) + e.offset + (lo - start);
                self.shared.dev.read(addr, dst, self.cat).map_err(|err| {
                    FsError::device(
                        format!("read '{}' at offset {lo} (zone {})", self.meta.name, e.zone),
                        err,
                    )
                })?;
            }
            start += e.len;
            if start >= end {
                break;
            }
        }
        Ok((end - offset) as usize)
    }

    /// The whole file.
    pub fn read_all(&self) -> FsResult<Vec<u8>> {
        let len = usize::try_from(self.meta.size).map_err(|_| FsError::Inconsistent {
            zone: self.meta.extents.first().map_or(0, |e| e.zone),
            reason: format!("'{}' is too large to read into memory", self.meta.name),
        })?;
        let mut buf = vec![0u8; len];
        let n = self.read_at(0, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
}

impl Drop for FileReader {
    fn drop(&mut self) {
        let shared = Arc::clone(&self.shared);
        let mut meta = shared.lock_meta();
        {
            let mut zones = shared.lock_zones();
            for &zone in &self.pinned {
                if let Some(s) = zones.slot_mut(zone) {
                    s.pins = s.pins.saturating_sub(1);
                }
            }
        }
        shared.reclaim_quietly(&mut meta);
    }
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader")
            .field("name", &self.meta.name)
            .field("size", &self.meta.size)
            .field("extents", &self.meta.extents.len())
            .finish()
    }
}
