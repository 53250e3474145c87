//! Copying a victim's valid data out: check that it fits, move every file's extents with
//! the [`Mover`], sync the device, then replace the moved extents of every file in one
//! metadata batch and release the victim's bytes once that batch is durable. Separate
//! from the mover, which only writes bytes: this is where the copies become the files'
//! data, or are abandoned.

use crate::fs::error::{FsError, FsResult};
use crate::fs::shared::{Counters, Shared};
use crate::meta::{FileKind, Record};

use super::mover::{round_up, Moved, Mover};
use super::victim::Live;
use super::VictimReport;

impl Shared {
    /// Moves every extent of `files` out of the victim and records the new extents.
    pub(super) fn copy_victim(
        &self,
        zone: u32,
        epoch: u64,
        files: Vec<Live>,
        rep: &mut VictimReport,
    ) -> FsResult<()> {
        let block = self.block_size();
        let need: u64 = files
            .iter()
            .flat_map(|f| &f.extents)
            .map(|e| round_up(e.len, block))
            .sum();
        if self.lock_zones().room_with_reserve() < need {
            rep.no_room = true;
            self.unmark(zone, epoch);
            return Ok(());
        }
        let mut mover = Mover::new(self, zone, epoch);
        let mut moved = Vec::with_capacity(files.len());
        let mut failure = None;
        for f in files {
            if self.was_reset(zone, epoch) {
                // Every file of the victim was deleted meanwhile: nothing left to move.
                mover.abandon();
                rep.cleaned = true;
                rep.reset = true;
                return Ok(());
            }
            if self.lock_meta().state.file(f.id).is_none() {
                continue;
            }
            match mover.move_file(&f) {
                Ok(extents) => moved.push((f, extents)),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        mover.release_lease();
        if failure.is_none() {
            if let Err(e) = self.dev.sync() {
                failure = Some(FsError::device(
                    format!("sync the data moved out of zone {zone}"),
                    e,
                ));
            }
        }
        if let Some(e) = failure {
            mover.abandon();
            self.unmark(zone, epoch);
            if e.is_out_of_space() {
                rep.no_room = true;
                return Ok(());
            }
            return Err(e);
        }
        self.commit_moves(zone, epoch, moved, mover, rep)
    }

    /// Replaces the moved extents of every file still as it was, in one metadata batch;
    /// once that is durable, releases the victim's bytes and resets it if it can.
    fn commit_moves(
        &self,
        zone: u32,
        epoch: u64,
        moved: Vec<(Live, Vec<Moved>)>,
        mover: Mover<'_>,
        rep: &mut VictimReport,
    ) -> FsResult<()> {
        let mut meta = self.lock_meta();
        let mut recs = Vec::new();
        let mut kept = Vec::new();
        for (f, extents) in moved {
            // A file deleted (or replaced) meanwhile keeps nothing; a file cannot get a
            // writer again, so its extents are otherwise as they were.
            let Some(current) = meta.state.file(f.id) else {
                continue;
            };
            if !extents.iter().all(|(old, _)| current.extents.contains(old)) {
                continue;
            }
            let mut updated = current.clone();
            updated.extents = current
                .extents
                .iter()
                .flat_map(|e| match extents.iter().find(|(old, _)| old == e) {
                    Some((_, pieces)) => pieces.clone(),
                    None => vec![*e],
                })
                .collect();
            let blob = updated.kind == FileKind::Blob;
            recs.push(Record::FileUpdate {
                id: f.id,
                meta: updated,
            });
            kept.push((blob, extents));
        }
        if !recs.is_empty() {
            // On failure the batch may or may not be durable: the copies and the victim
            // both stay live (a mount recomputes them), like a writer's uncertain sync.
            meta.commit(&recs, &|| {
                format!("record the files moved out of zone {zone}")
            })?;
        }
        for rec in &recs {
            if let Record::FileUpdate { id, meta: moved } = rec {
                meta.readers.follow(*id, &moved.extents, self);
            }
        }
        let mut release = mover.into_written();
        let (mut copied, mut blob_copied) = (0, 0);
        for (blob, extents) in &kept {
            for (old, pieces) in extents {
                copied += old.len;
                blob_copied += if *blob { old.len } else { 0 };
                for p in pieces {
                    if let Some(w) = release.get_mut(&p.zone) {
                        *w = w.saturating_sub(p.len);
                    }
                }
            }
        }
        if let Some(s) = self.lock_zones().slot_mut(zone) {
            if s.epoch == epoch {
                s.live = s.live.saturating_sub(copied);
                s.copied += copied;
            }
        }
        self.release_live(release);
        Counters::add(&self.counters.gc_copy_bytes, copied);
        Counters::add(&self.counters.gc_blob_copy_bytes, blob_copied);
        rep.copied_bytes = copied;
        rep.files_copied = kept.len() as u32;
        rep.cleaned = self.was_reset(zone, epoch) || meta.state.valid_bytes(zone) == 0;
        self.reclaim_dead(&mut meta)?;
        drop(meta);
        rep.reset = self.was_reset(zone, epoch);
        Ok(())
    }
}
