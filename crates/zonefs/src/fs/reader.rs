//! Reading a file: a snapshot of its content taken at open.
//!
//! A reader pins the zones its snapshot uses, so that they are not reset under it even if
//! the file is deleted or replaced meanwhile (as POSIX keeps an unlinked open file).
//!
//! A live file's readers follow the zone cleaner: when it moves extents of the file, its
//! commit remaps every open reader of the file to the new extents and moves the pins with
//! them ([`ReaderView::follow`]), so an idle reader never holds a cleaned victim back from
//! its reset. The remap waits for reads in progress (they hold the view's read lock), so
//! no read uses a zone after its pin is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, Weak};

use zkv_zns::IoCategory;

use crate::meta::{Extent, FileId, FileKind, FileMeta};

use super::error::{FsError, FsResult};
use super::shared::{MetaStore, Shared};
use super::table::ZoneTable;
use super::writer::default_category;

/// Reads one file: a snapshot of its content as of its last sync before
/// [`ZoneFs::open`](super::ZoneFs::open). Later appends are not seen.
pub struct FileReader {
    shared: Arc<Shared>,
    view: Arc<ReaderView>,
    name: String,
    kind: FileKind,
    cat: IoCategory,
}

/// What one reader sees of its file: the first `size` bytes, at `extents`.
pub(crate) struct ReaderView {
    file: FileId,
    size: u64,
    at: RwLock<Placed>,
}

struct Placed {
    extents: Vec<Extent>,
    /// The distinct zones of `extents`, each pinned once by this reader.
    pinned: Vec<u32>,
}

impl Placed {
    fn new(extents: Vec<Extent>) -> Placed {
        let pinned: Vec<u32> = extents
            .iter()
            .map(|e| e.zone)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        Placed { extents, pinned }
    }

    fn pin(&self, zones: &mut ZoneTable) {
        for &zone in &self.pinned {
            if let Some(s) = zones.slot_mut(zone) {
                s.pins += 1;
            }
        }
    }

    fn unpin(&self, zones: &mut ZoneTable) {
        for &zone in &self.pinned {
            if let Some(s) = zones.slot_mut(zone) {
                s.pins = s.pins.saturating_sub(1);
            }
        }
    }
}

impl ReaderView {
    fn read(&self) -> RwLockReadGuard<'_, Placed> {
        self.at.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Points the view at `extents`, the file's extents after the cleaner moved some of
    /// them, and moves its pins along. The file is append-only, so the view's bytes are
    /// the first `size` bytes of the new extents. Waits for the view's reads in progress.
    fn follow(&self, extents: &[Extent], shared: &Shared) {
        let mut at = self.at.write().unwrap_or_else(PoisonError::into_inner);
        let moved = Placed::new(prefix(extents, self.size));
        let mut zones = shared.lock_zones();
        moved.pin(&mut zones);
        at.unpin(&mut zones);
        *at = moved;
    }
}

/// The extents holding the first `size` bytes of a file laid out in `extents`.
fn prefix(extents: &[Extent], size: u64) -> Vec<Extent> {
    let mut out = Vec::new();
    let mut left = size;
    for e in extents {
        if left == 0 {
            break;
        }
        let len = e.len.min(left);
        out.push(Extent { len, ..*e });
        left -= len;
    }
    out
}

impl FileReader {
    /// Pins the zones of `meta` and registers the reader with its file, so that the
    /// cleaner's moves reach it. The caller holds the metadata lock, so the snapshot is
    /// current when the pins are taken.
    pub(crate) fn pin(
        shared: Arc<Shared>,
        meta_store: &mut MetaStore,
        id: FileId,
        meta: FileMeta,
    ) -> FileReader {
        let placed = Placed::new(meta.extents);
        placed.pin(&mut shared.lock_zones());
        let view = Arc::new(ReaderView {
            file: id,
            size: meta.size,
            at: RwLock::new(placed),
        });
        meta_store.readers.add(&view);
        let cat = default_category(meta.kind, meta.level);
        FileReader {
            shared,
            view,
            name: meta.name,
            kind: meta.kind,
            cat,
        }
    }

    /// The file's name when it was opened.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's kind.
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// The file's size when it was opened (its last synced size).
    pub fn size(&self) -> u64 {
        self.view.size
    }

    /// Counts this reader's reads under `cat` from now on (by default from the file's
    /// kind and level).
    pub fn set_category(&mut self, cat: IoCategory) {
        self.cat = cat;
    }

    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (fewer only
    /// at the end of the file, 0 at or past it).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        let end = self.view.size.min(offset.saturating_add(buf.len() as u64));
        if offset >= end {
            return Ok(0);
        }
        let at = self.view.read();
        let mut start = 0u64; // logical offset of the current extent
        for e in &at.extents {
            let (lo, hi) = (offset.max(start), end.min(start + e.len));
            if lo < hi {
                // lo ≥ offset and hi ≤ end ≤ offset + buf.len(): the range is in `buf`.
                let range = (lo - offset) as usize..(hi - offset) as usize;
                let dst = buf.get_mut(range).ok_or_else(|| FsError::Inconsistent {
                    zone: e.zone,
                    reason: format!("extent bytes {lo}..{hi} fall outside the read"),
                })?;
                let addr = self.shared.geo.zone_start(e.zone) + e.offset + (lo - start);
                self.shared.dev.read(addr, dst, self.cat).map_err(|err| {
                    FsError::device(
                        format!("read '{}' at offset {lo} (zone {})", self.name, e.zone),
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
        let len = usize::try_from(self.view.size).map_err(|_| FsError::Inconsistent {
            zone: self.view.read().extents.first().map_or(0, |e| e.zone),
            reason: format!("'{}' is too large to read into memory", self.name),
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
        meta.readers.remove(&self.view);
        self.view.read().unpin(&mut shared.lock_zones());
        shared.reclaim_quietly(&mut meta);
    }
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader")
            .field("name", &self.name)
            .field("size", &self.view.size)
            .field("extents", &self.view.read().extents.len())
            .finish()
    }
}

/// The open readers of each file (kept with the metadata, under its lock).
#[derive(Default)]
pub(crate) struct Readers {
    by_file: BTreeMap<FileId, Vec<Weak<ReaderView>>>,
}

impl Readers {
    fn add(&mut self, view: &Arc<ReaderView>) {
        let views = self.by_file.entry(view.file).or_default();
        views.push(Arc::downgrade(view));
    }

    fn remove(&mut self, view: &Arc<ReaderView>) {
        let target = Arc::downgrade(view);
        if let Some(views) = self.by_file.get_mut(&view.file) {
            views.retain(|v| !v.ptr_eq(&target));
            if views.is_empty() {
                self.by_file.remove(&view.file);
            }
        }
    }

    /// The cleaner moved extents of file `id`, now at `extents`: every open reader of the
    /// file follows (see [`ReaderView::follow`]).
    pub(crate) fn follow(&self, id: FileId, extents: &[Extent], shared: &Shared) {
        for view in self.by_file.get(&id).into_iter().flatten() {
            if let Some(view) = view.upgrade() {
                view.follow(extents, shared);
            }
        }
    }
}
