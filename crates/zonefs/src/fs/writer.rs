//! Writing a file: buffering to the block size, appending full blocks at the write pointer
//! of the zone the writer owns, moving to a new zone when it fills, and recording the
//! extents in the metadata at sync.
//!
//! Padding: `sync` must make a partial last block durable, so it writes it padded with
//! zeros. The padded block belongs to the file's last extent (the extent covers whole
//! blocks); the file's size excludes the padding. The next append starts at a fresh block:
//! the padding is cut out of the extent (whose length then ends at the last data byte) and
//! the new data goes to a new extent, so a file is always the concatenation of its extents
//! and only the last one may end with padding. The bytes cut out are dead space in their
//! zone once the next sync is durable.

use std::collections::BTreeMap;
use std::sync::Arc;

use zkv_zns::IoCategory;

use crate::meta::{Extent, FileId, FileKind, FileMeta, Record};
use crate::placement::PlacementHint;

use super::alloc::Request;
use super::error::{FsError, FsResult};
use super::shared::Shared;
use super::table::{Lease, WriteSlot};

/// An open file being written. Only what [`FileWriter::sync`] (or
/// [`FileWriter::close`]) returned `Ok` for is promised to survive; dropping a writer
/// without closing it discards what was appended since its last sync.
pub struct FileWriter {
    shared: Arc<Shared>,
    id: FileId,
    meta: FileMeta,
    hint: PlacementHint,
    /// The size the hint announced at create; `hint.size` is what is left of it.
    expected: u64,
    cat: IoCategory,
    /// The partial block not written yet (always shorter than a block).
    buf: Vec<u8>,
    /// Bytes appended (the file size once synced).
    appended: u64,
    /// Zero bytes at the end of the last extent, written by the last sync.
    padding: u64,
    lease: Option<Lease>,
    /// Bytes written since the last recorded update, per zone: no record references them.
    unrecorded: BTreeMap<u32, u64>,
    /// Padding cut out of extents since the last recorded update: the durable metadata
    /// still references it.
    trimmed: BTreeMap<u32, u64>,
    /// Something changed since the last recorded update.
    dirty: bool,
    failed: Option<String>,
    /// A metadata commit failed after it was staged: the record may or may not be durable,
    /// so none of this writer's bytes may ever be counted dead.
    uncertain: bool,
    closed: bool,
}

impl FileWriter {
    pub(crate) fn new(
        shared: Arc<Shared>,
        id: FileId,
        meta: FileMeta,
        mut hint: PlacementHint,
    ) -> Self {
        let cat = default_category(meta.kind, meta.level);
        // The file layer notes which blob files write into a zone (its YBIZ).
        hint.blob_file = hint.blob_file.or_else(|| meta.blob_number());
        FileWriter {
            shared,
            id,
            meta,
            expected: hint.size,
            hint,
            cat,
            buf: Vec::new(),
            appended: 0,
            padding: 0,
            lease: None,
            unrecorded: BTreeMap::new(),
            trimmed: BTreeMap::new(),
            dirty: false,
            failed: None,
            uncertain: false,
            closed: false,
        }
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// The file's kind.
    pub fn kind(&self) -> FileKind {
        self.meta.kind
    }

    /// Bytes appended so far, synced or not.
    pub fn size(&self) -> u64 {
        self.appended
    }

    /// The device category this file's writes are counted under (by default from its kind
    /// and level: WAL, flush for level 0, compaction for other SSTs, blob, user).
    pub fn category(&self) -> IoCategory {
        self.cat
    }

    /// Counts this file's writes under `cat` from now on (see [`FileWriter::category`]).
    pub fn set_category(&mut self, cat: IoCategory) {
        self.cat = cat;
    }

    /// Appends bytes. Full blocks go to the device at once; a partial block waits for more
    /// data or a sync. After an error the writer is failed: every later call returns
    /// [`FsError::WriterFailed`] and the file keeps the content of its last sync.
    pub fn append(&mut self, data: &[u8]) -> FsResult<()> {
        self.check_usable()?;
        if data.is_empty() {
            return Ok(());
        }
        let result = self.append_inner(data);
        self.note_failure(&result);
        result
    }

    /// Makes everything appended durable: writes the full blocks, the partial last block
    /// padded with zeros, flushes the device, then records the file's extents and size in
    /// the metadata log and syncs it. After `Ok`, the file's content up to [`Self::size`]
    /// survives any power cut.
    pub fn sync(&mut self) -> FsResult<()> {
        self.check_usable()?;
        let result = self.sync_inner();
        self.note_failure(&result);
        result
    }

    /// Syncs and gives the zone up.
    pub fn close(mut self) -> FsResult<()> {
        let result = self.sync();
        self.release();
        result
    }

    fn check_usable(&self) -> FsResult<()> {
        match &self.failed {
            Some(reason) => Err(FsError::WriterFailed {
                name: self.meta.name.clone(),
                reason: reason.clone(),
            }),
            None if self.closed => Err(FsError::WriterFailed {
                name: self.meta.name.clone(),
                reason: "the writer is closed".into(),
            }),
            None => Ok(()),
        }
    }

    fn note_failure<T>(&mut self, result: &FsResult<T>) {
        if let Err(e) = result {
            self.failed = Some(e.to_string());
        }
    }

    fn append_inner(&mut self, mut data: &[u8]) -> FsResult<()> {
        self.trim_padding();
        self.appended += data.len() as u64;
        self.dirty = true;
        let block = self.shared.geo.block_size as usize;
        if !self.buf.is_empty() {
            let (head, rest) = data.split_at((block - self.buf.len()).min(data.len()));
            self.buf.extend_from_slice(head);
            data = rest;
            if self.buf.len() == block {
                let full = std::mem::take(&mut self.buf);
                self.write_blocks(&full)?;
            }
        }
        let (blocks, tail) = data.split_at(data.len() / block * block);
        if !blocks.is_empty() {
            self.write_blocks(blocks)?;
        }
        self.buf.extend_from_slice(tail);
        Ok(())
    }

    /// The next data starts at a fresh block: the padding of the last sync leaves the
    /// extent (it stays referenced by the durable metadata until the next sync).
    fn trim_padding(&mut self) {
        if self.padding == 0 {
            return;
        }
        if let Some(last) = self.meta.extents.last_mut() {
            last.len = last.len.saturating_sub(self.padding);
            *self.trimmed.entry(last.zone).or_default() += self.padding;
        }
        self.padding = 0;
    }

    fn sync_inner(&mut self) -> FsResult<()> {
        if !self.dirty {
            return Ok(());
        }
        if !self.buf.is_empty() {
            let mut block = std::mem::take(&mut self.buf);
            let tail = block.len() as u64;
            block.resize(self.shared.geo.block_size as usize, 0);
            self.write_blocks(&block)?;
            self.padding = self.shared.block_size() - tail;
        }
        let name = &self.meta.name;
        self.shared
            .dev
            .sync()
            .map_err(|e| FsError::device(format!("sync the data of '{name}'"), e))?;
        self.meta.size = self.appended;
        self.record()
    }

    /// Logs the file's new extents and size and makes the record durable.
    fn record(&mut self) -> FsResult<()> {
        let update = Record::FileUpdate {
            id: self.id,
            meta: self.meta.clone(),
        };
        let shared = Arc::clone(&self.shared);
        let mut meta = shared.lock_meta();
        let name = &self.meta.name;
        if let Err(e) = meta.commit(&[update], &|| format!("record the extents of '{name}'")) {
            self.uncertain = true;
            return Err(e);
        }
        self.unrecorded.clear();
        shared.release_live(std::mem::take(&mut self.trimmed));
        self.dirty = false;
        // The sync is durable whatever happens now; a zone left dead is reclaimed later.
        shared.reclaim_quietly(&mut meta);
        Ok(())
    }

    /// Writes whole blocks at the write pointer of the writer's zone, moving on to new
    /// zones as zones fill up. Each device write extends the file's extents.
    fn write_blocks(&mut self, mut data: &[u8]) -> FsResult<()> {
        while !data.is_empty() {
            let slot = self.zone_for_write()?;
            let n = slot.room.min(data.len() as u64);
            let (chunk, rest) = data.split_at(n as usize);
            let zone = slot.lease.zone;
            let addr = self.shared.geo.zone_start(zone) + slot.wp;
            let result = self.shared.dev.write(addr, chunk, self.cat);
            let written = if result.is_ok() { n } else { 0 };
            let keeps = self.shared.end_write(slot.lease, written);
            if !keeps {
                self.lease = None;
            }
            result.map_err(|e| FsError::device(self.write_context(zone, slot.wp), e))?;
            self.push_extent(zone, slot.wp, n);
            *self.unrecorded.entry(zone).or_default() += n;
            data = rest;
        }
        Ok(())
    }

    fn write_context(&self, zone: u32, wp: u64) -> String {
        format!("write '{}' to zone {zone} at offset {wp}", self.meta.name)
    }

    /// The writer's zone, in use; a new one from the allocator when it has none (or its
    /// idle lease was taken back), asked for the rest of the announced size: what the
    /// file's extents do not hold yet (a sync's padding is cut out of them before the next
    /// write).
    fn zone_for_write(&mut self) -> FsResult<WriteSlot> {
        let placed: u64 = self.meta.extents.iter().map(|e| e.len).sum();
        self.hint.size = self.expected.saturating_sub(placed);
        let req = Request {
            name: &self.meta.name,
            kind: self.meta.kind,
            hint: &self.hint,
            min_capacity: self.shared.block_size(),
            gc: false,
            cleaning: false,
        };
        self.shared.begin_write(&mut self.lease, &req)
    }

    fn push_extent(&mut self, zone: u32, offset: u64, len: u64) {
        match self.meta.extents.last_mut() {
            Some(last) if last.zone == zone && last.end() == offset => last.len += len,
            _ => self.meta.extents.push(Extent { zone, offset, len }),
        }
    }

    /// Gives the zone up and forgets the writer. Bytes no record references are dead
    /// unless a failed commit may have made them durable after all.
    fn release(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let shared = Arc::clone(&self.shared);
        let mut meta = shared.lock_meta();
        meta.writing.remove(&self.id);
        {
            let mut zones = shared.lock_zones();
            if let Some(lease) = self.lease.take() {
                zones.release(lease);
            }
        }
        shared.zone_freed.notify_all();
        if !self.uncertain {
            shared.release_live(std::mem::take(&mut self.unrecorded));
        }
        shared.reclaim_quietly(&mut meta);
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        self.release();
    }
}

impl std::fmt::Debug for FileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWriter")
            .field("name", &self.meta.name)
            .field("id", &self.id)
            .field("appended", &self.appended)
            .field("extents", &self.meta.extents.len())
            .field("zone", &self.lease.map(|l| l.zone))
            .field("failed", &self.failed)
            .finish()
    }
}

/// The device category of a file's writes when the caller does not set one.
pub fn default_category(kind: FileKind, level: Option<u8>) -> IoCategory {
    match (kind, level) {
        (FileKind::Wal, _) => IoCategory::Wal,
        (FileKind::Sst, Some(0)) => IoCategory::Flush,
        (FileKind::Sst, _) => IoCategory::Compaction,
        (FileKind::Blob, _) => IoCategory::Blob,
        (FileKind::Manifest | FileKind::Other, _) => IoCategory::User,
    }
}
