//! The mover: reads a victim's extents and writes them again (tagged `gc_copy`) to the
//! zones the placement policy chooses, with a lease like a writer's. Separate from the
//! commit in `copy.rs`: the mover only writes bytes and counts them; nothing refers to
//! them until the commit.

use std::collections::BTreeMap;

use zkv_zns::IoCategory;

use crate::fs::alloc::Request;
use crate::fs::error::{FsError, FsResult};
use crate::fs::shared::Shared;
use crate::fs::table::{Lease, Slot, WriteSlot};
use crate::meta::Extent;
use crate::placement::PlacementHint;

use super::victim::Live;

/// Bytes read from a victim at a time while moving an extent.
const COPY_CHUNK: u64 = 1 << 20;

/// An extent moved: where it was, and the pieces it became.
pub(super) type Moved = (Extent, Vec<Extent>);

pub(super) fn round_up(len: u64, block: u64) -> u64 {
    len.div_ceil(block) * block
}

/// Writes the cleaner's copies: a lease like a writer's (non-WAL), given back after each
/// extent so that the policy decides again for the next one. The zones it opens stay the
/// cleaner's until it is dropped (`Slot::cleaner_hold`), so that no other writer takes
/// the room the victim's later extents need.
pub(super) struct Mover<'a> {
    sh: &'a Shared,
    victim: u32,
    /// The victim's epoch: the zone may be reset (all its files deleted) and reused while
    /// the mover works; only the victim itself must never receive copies.
    epoch: u64,
    lease: Option<Lease>,
    /// Bytes written per zone (live in their zones until released).
    written: BTreeMap<u32, u64>,
}

impl<'a> Mover<'a> {
    pub(super) fn new(sh: &'a Shared, victim: u32, epoch: u64) -> Mover<'a> {
        Mover {
            sh,
            victim,
            epoch,
            lease: None,
            written: BTreeMap::new(),
        }
    }

    /// Moves the file's extents in the victim, placed with the engine's hint when the policy
    /// wants one (asked with no lock and no lease held), each extent as a file of its own
    /// size.
    pub(super) fn move_file(&mut self, f: &Live) -> FsResult<Vec<Moved>> {
        let mut hint = self.sh.migration_hint(&f.name, f.hint());
        let mut out = Vec::with_capacity(f.extents.len());
        for e in &f.extents {
            hint.size = round_up(e.len, self.sh.block_size());
            let pieces = self.move_extent(f, &hint, *e);
            self.release_lease();
            out.push((*e, pieces?));
        }
        Ok(out)
    }

    /// Copies one extent (whole blocks: a trimmed extent ends inside its last block) and
    /// returns the extents it became; only the last may end inside a block.
    fn move_extent(&mut self, f: &Live, hint: &PlacementHint, e: Extent) -> FsResult<Vec<Extent>> {
        let sh = self.sh;
        let total = round_up(e.len, sh.block_size());
        let base = sh.geo.zone_start(self.victim) + e.offset;
        let mut pieces: Vec<Extent> = Vec::new();
        let mut done = 0;
        while done < total {
            let n = (total - done).min(COPY_CHUNK);
            let mut buf = vec![0u8; n as usize];
            sh.dev
                .read(base + done, &mut buf, IoCategory::GcCopy)
                .map_err(|err| {
                    FsError::device(
                        format!(
                            "read '{}' in zone {} at offset {} to move it",
                            f.name,
                            self.victim,
                            e.offset + done
                        ),
                        err,
                    )
                })?;
            let mut off = 0;
            let mut rest = buf.as_slice();
            while !rest.is_empty() {
                let slot = self.zone_for(f, hint, total - done - off)?;
                let (chunk, tail) = rest.split_at(slot.room.min(rest.len() as u64) as usize);
                let k = chunk.len() as u64;
                rest = tail;
                let zone = slot.lease.zone;
                let addr = sh.geo.zone_start(zone) + slot.wp;
                let result = sh.dev.write(addr, chunk, IoCategory::GcCopy);
                let ok = result.is_ok();
                if !sh.end_write(slot.lease, if ok { k } else { 0 }) {
                    self.lease = None;
                }
                result.map_err(|err| {
                    FsError::device(
                        format!("move '{}' to zone {zone} at offset {}", f.name, slot.wp),
                        err,
                    )
                })?;
                *self.written.entry(zone).or_default() += k;
                let len = k.min(e.len - (done + off));
                match pieces.last_mut() {
                    Some(last) if last.zone == zone && last.end() == slot.wp => last.len += len,
                    _ => pieces.push(Extent {
                        zone,
                        offset: slot.wp,
                        len,
                    }),
                }
                off += k;
            }
            done += n;
        }
        Ok(pieces)
    }

    /// The zone to write to: the lease held, or a new one from the policy for the file,
    /// looking for room for the rest of the extent.
    fn zone_for(&mut self, f: &Live, hint: &PlacementHint, rest: u64) -> FsResult<WriteSlot> {
        let req = Request {
            name: &f.name,
            kind: f.kind,
            hint,
            min_capacity: rest.min(self.sh.geo.zone_capacity),
            gc: true,
            cleaning: false,
        };
        let slot = self.sh.begin_write(&mut self.lease, &req)?;
        let zone = slot.lease.zone;
        let same = |s: &Slot| s.epoch == self.epoch;
        if zone == self.victim && self.sh.lock_zones().slot(zone).is_some_and(same) {
            self.sh.end_write(slot.lease, 0);
            return Err(FsError::Inconsistent {
                zone,
                reason: "the allocator gave the cleaner its own victim".into(),
            });
        }
        Ok(slot)
    }

    pub(super) fn release_lease(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.sh.lock_zones().release(lease);
            self.sh.zone_freed.notify_all();
        }
    }

    /// Nothing will reference the copies: they are dead space now.
    pub(super) fn abandon(mut self) {
        self.release_lease();
        let written = std::mem::take(&mut self.written);
        self.sh.release_live(written);
        self.sh.reclaim_quietly(&mut self.sh.lock_meta());
    }

    pub(super) fn into_written(mut self) -> BTreeMap<u32, u64> {
        self.release_lease();
        std::mem::take(&mut self.written)
    }
}

impl Drop for Mover<'_> {
    fn drop(&mut self) {
        self.release_lease();
        // Moved or given up: the zones it opened are anybody's again.
        self.sh.lock_zones().clear_cleaner_holds();
    }
}
