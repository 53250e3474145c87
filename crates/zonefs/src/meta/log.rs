//! The metadata log writer: a rolling log over the first `meta_zones` zones.
//!
//! Each metadata zone holds one generation: a superblock (in blocks 0 and 1), a snapshot of
//! the whole state, then batches of delta records, one batch per [`MetaLog::sync`]. Every
//! batch, the snapshot's included, is written twice, back to back in one device write, so
//! that damage to one copy is repaired from the other at the next mount. When a batch no longer
//! fits, the log rolls: the next metadata zone receives a superblock with the next
//! sequence number and a snapshot of the current state; once that is durable the old zone
//! is reset. Recovery lives in `recover.rs`.

use std::fmt;
use std::sync::Arc;

use zkv_zns::{Geometry, IoCategory, ZoneState, ZonedDevice};

use super::batch::Batch;
use super::error::{MetaError, MetaResult};
use super::record::Record;
use super::state::{FsState, StateError, ZoneLayout};
use super::superblock::Superblock;

/// Metadata zones used when the caller has no opinion.
pub const DEFAULT_META_ZONES: u32 = 3;
/// A roll needs a second zone to write the new generation into.
pub const MIN_META_ZONES: u32 = 2;

/// Counters since the log was formatted or mounted, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaLogStats {
    /// Records written to the device: delta records plus one snapshot per roll.
    pub records: u64,
    /// Writes to the device (one per sync that had records, one per roll).
    pub batches: u64,
    /// Bytes written to the device, superblocks and padding included.
    pub bytes: u64,
    /// Times the log moved to the next metadata zone.
    pub rolls: u64,
    /// Calls to [`MetaLog::sync`].
    pub syncs: u64,
    /// Metadata zone resets.
    pub resets: u64,
}

/// What mount found and did, for logs and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountReport {
    /// The metadata zone replayed and its superblock sequence number.
    pub zone: u32,
    /// The replayed zone's superblock sequence number.
    pub seq: u64,
    /// Number of the last committed batch replayed.
    pub commit: u64,
    /// Delta batches replayed after the snapshot.
    pub batches: u64,
    /// Delta records replayed after the snapshot.
    pub records: u64,
    /// Offset in `zone` of an interrupted last write that was ignored.
    pub torn_tail: Option<u64>,
    /// Metadata zones that were passed over, with the reason (a damaged superblock, or a
    /// newer generation whose snapshot never became complete).
    pub skipped: Vec<(u32, String)>,
    /// Damage in the replayed zone that was read past by using the other copy: (offset,
    /// why). A read-write mount rolls to a clean generation when there is any.
    pub repaired: Vec<(u64, String)>,
    /// The zone the log must roll to before it can append, because `zone` ends with a torn
    /// tail or is full. A read-write recovery rolls there; a read-only one leaves the log
    /// as it is.
    pub roll_to: Option<u32>,
    /// Whether mount moved the log to a fresh zone (to `roll_to`).
    pub rolled: bool,
    /// The other metadata zones holding data (older generations, passed-over ones), in
    /// zone order. A read-write recovery resets them; a read-only one leaves them.
    pub stale: Vec<u32>,
}

/// The writer side of the metadata log. Not thread-safe by itself: the file layer keeps it
/// behind the same lock as the [`FsState`] it logs.
pub struct MetaLog {
    pub(crate) dev: Arc<dyn ZonedDevice>,
    pub(crate) geo: Geometry,
    pub(crate) layout: ZoneLayout,
    /// The metadata zone being appended to, and its superblock sequence number.
    pub(crate) active: u32,
    pub(crate) seq: u64,
    /// Where the next batch goes, relative to the active zone's start (block aligned).
    pub(crate) write_off: u64,
    /// Records appended since the last write, already framed.
    pub(crate) pending: Batch,
    /// Number the next written batch gets.
    pub(crate) next_commit: u64,
    /// Older metadata zones to reset once the active zone's base is durable.
    pub(crate) stale: Vec<u32>,
    pub(crate) stats: MetaLogStats,
    pub(crate) mount: Option<MountReport>,
    /// Recovered by [`MetaLog::recover_read_only`]: every write is refused.
    pub(crate) read_only: bool,
}

impl fmt::Debug for MetaLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetaLog")
            .field("device", &self.dev.describe())
            .field("layout", &self.layout)
            .field("active", &self.active)
            .field("seq", &self.seq)
            .field("write_off", &self.write_off)
            .field("pending_records", &self.pending.records())
            .field("next_commit", &self.next_commit)
            .field("stale", &self.stale)
            .finish()
    }
}

/// Checks the metadata zone count against the device and returns the zone layout.
pub(crate) fn check_layout(geo: &Geometry, meta_zones: u32) -> MetaResult<ZoneLayout> {
    if meta_zones < MIN_META_ZONES || meta_zones >= geo.zones {
        return Err(MetaError::BadMetaZoneCount {
            meta_zones,
            zones: geo.zones,
        });
    }
    Ok(ZoneLayout::of_device(geo, meta_zones))
}

impl MetaLog {
    /// A log positioned nowhere yet; `format` and `recover` place it.
    pub(crate) fn unplaced(dev: Arc<dyn ZonedDevice>, layout: ZoneLayout) -> MetaLog {
        let geo = dev.geometry();
        MetaLog {
            dev,
            geo,
            layout,
            active: 0,
            seq: 0,
            write_off: 0,
            pending: Batch::new(geo.block_size as usize),
            next_commit: 0,
            stale: Vec::new(),
            stats: MetaLogStats::default(),
            mount: None,
            read_only: false,
        }
    }

    /// Erases the metadata zones and writes an empty file system (generation 1 in zone
    /// 0, commit 0). The empty state is `FsState::new(log.layout())`.
    pub fn format(dev: Arc<dyn ZonedDevice>, meta_zones: u32) -> MetaResult<MetaLog> {
        let layout = check_layout(&dev.geometry(), meta_zones)?;
        MetaLog::format_state(dev, &FsState::new(layout))
    }

    /// Erases the metadata zones and writes `state` as the first generation (zone 0,
    /// commit 0): how a file system starts with its options recorded. The state's layout
    /// must be the device's with a valid metadata zone count.
    pub fn format_state(dev: Arc<dyn ZonedDevice>, state: &FsState) -> MetaResult<MetaLog> {
        let layout = check_layout(&dev.geometry(), state.layout().meta_zones)?;
        if layout != state.layout() {
            return Err(MetaError::State(StateError::LayoutMismatch {
                expected: layout,
                found: state.layout(),
            }));
        }
        let mut log = MetaLog::unplaced(dev, layout);
        for zone in 0..layout.meta_zones {
            log.reset_if_used(zone)?;
        }
        log.write_base(0, state, 0)?;
        log.dev.sync()?;
        Ok(log)
    }

    /// Queues a record for the next [`MetaLog::sync`]. The caller applies the same record
    /// to its [`FsState`] (first, so that a rejected record is never logged).
    pub fn append(&mut self, rec: &Record) -> MetaResult<()> {
        self.check_writable()?;
        self.pending.push_record(rec)?;
        Ok(())
    }

    /// Writes the queued records as one batch and makes everything written durable.
    ///
    /// `state` must be the state with every appended record applied: when the active zone
    /// is out of room, the log rolls and `state` is what the new zone's snapshot holds.
    /// After `Ok`, every record appended before this call survives any power cut. After an
    /// error nothing is promised: the batch may or may not survive, but a recovery sees it
    /// entirely or not at all.
    pub fn sync(&mut self, state: &FsState) -> MetaResult<()> {
        self.check_writable()?;
        self.stats.syncs += 1;
        if !self.pending.is_empty() {
            self.write_pending(state)?;
        }
        self.dev.sync()?;
        self.reset_stale()
    }

    /// Rolls to the next metadata zone now, whatever room is left in the active one.
    /// `state` must include every appended record, as for [`MetaLog::sync`].
    pub fn roll_now(&mut self, state: &FsState) -> MetaResult<()> {
        self.check_writable()?;
        self.roll(state)?;
        self.dev.sync()?;
        self.reset_stale()
    }

    /// Which zones hold files.
    pub fn layout(&self) -> ZoneLayout {
        self.layout
    }

    /// Zones at the start of the device that hold the log.
    pub fn meta_zones(&self) -> u32 {
        self.layout.meta_zones
    }

    /// The device the log is on.
    pub fn device(&self) -> &Arc<dyn ZonedDevice> {
        &self.dev
    }

    /// The metadata zone being appended to.
    pub fn active_zone(&self) -> u32 {
        self.active
    }

    /// Superblock sequence number of the active zone (1 after format, +1 per roll).
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// Number of the last state written to the log: 0 is the format, each sync that
    /// writes records adds one. After a mount, the number of the recovered state.
    pub fn last_commit(&self) -> u64 {
        self.next_commit.saturating_sub(1)
    }

    /// Records appended but not yet written.
    pub fn pending_records(&self) -> u32 {
        self.pending.records()
    }

    /// Bytes left in the active zone.
    pub fn free_bytes(&self) -> u64 {
        self.geo.zone_capacity - self.write_off
    }

    /// The log's counters since it was formatted or mounted.
    pub fn stats(&self) -> MetaLogStats {
        self.stats
    }

    /// What mount found, when this log came from [`MetaLog::recover`] or
    /// [`MetaLog::recover_read_only`].
    pub fn mount_report(&self) -> Option<&MountReport> {
        self.mount.as_ref()
    }

    /// Whether the log refuses writes (it came from [`MetaLog::recover_read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn check_writable(&self) -> MetaResult<()> {
        if self.read_only {
            return Err(MetaError::ReadOnly);
        }
        Ok(())
    }

    /// Writes the pending batch in the active zone, or rolls when it does not fit.
    fn write_pending(&mut self, state: &FsState) -> MetaResult<()> {
        let mark = self.pending.seal(self.next_commit)?;
        if self.write_off + self.pending.len() > self.geo.zone_capacity {
            self.pending.unseal(mark);
            return self.roll(state);
        }
        let addr = self.geo.zone_start(self.active) + self.write_off;
        let written = self
            .dev
            .write(addr, self.pending.bytes(), IoCategory::Metadata);
        if let Err(e) = written {
            // A failed command changes nothing: the records stay queued for a retry.
            self.pending.unseal(mark);
            return Err(e.into());
        }
        self.write_off += self.pending.len();
        self.next_commit = self.next_commit.saturating_add(1);
        self.count_batch(u64::from(self.pending.records()), self.pending.len());
        self.pending.clear();
        Ok(())
    }

    /// Starts the next generation in the next metadata zone. The pending records are
    /// dropped: the snapshot of `state` already contains them.
    ///
    /// The base batch carries the number of the state it captures: a new number when
    /// pending records are folded in (this is their sync point), otherwise the number of
    /// the last batch, so that a number always names one state, even across a mount.
    pub(crate) fn roll(&mut self, state: &FsState) -> MetaResult<()> {
        let old = self.active;
        let target = self.next_zone(old);
        let commit = if self.pending.is_empty() {
            self.last_commit()
        } else {
            self.next_commit
        };
        self.write_base(target, state, commit)?;
        if !self.stale.contains(&old) {
            self.stale.push(old);
        }
        self.pending.clear();
        self.stats.rolls += 1;
        Ok(())
    }

    /// The metadata zone after `zone` in ring order: where a roll from `zone` goes.
    pub(crate) fn next_zone(&self, zone: u32) -> u32 {
        (zone + 1) % self.layout.meta_zones
    }

    /// Writes superblock (next sequence) + snapshot + commit number `commit` at the start
    /// of `target` and makes it the active zone. Not durable until the next device sync.
    fn write_base(&mut self, target: u32, state: &FsState, commit: u64) -> MetaResult<()> {
        // Numbers read back from disk are not trusted not to be at the limit.
        let seq = self.seq.saturating_add(1);
        let sb = Superblock::new(&self.geo, self.layout.meta_zones, target, seq);
        let mut base = Batch::new(self.geo.block_size as usize);
        base.push_superblock(&sb);
        base.push_superblock(&sb);
        base.push_snapshot(state)?;
        base.seal(commit)?;
        if base.len() > self.geo.zone_capacity {
            return Err(MetaError::OutOfMetaSpace {
                needed: base.len(),
                capacity: self.geo.zone_capacity,
            });
        }
        self.clear_roll_target(target)?;
        self.stale.retain(|z| *z != target);
        let addr = self.geo.zone_start(target);
        self.dev.write(addr, base.bytes(), IoCategory::Metadata)?;
        self.active = target;
        self.seq = seq;
        self.write_off = base.len();
        self.next_commit = commit.saturating_add(1);
        self.count_batch(1, base.len());
        Ok(())
    }

    fn count_batch(&mut self, records: u64, bytes: u64) {
        self.stats.records += records;
        self.stats.batches += 1;
        self.stats.bytes += bytes;
    }

    /// Resets the older generations. Only called once the active zone's base is durable,
    /// so at every moment some zone holds a complete, durable generation.
    pub(crate) fn reset_stale(&mut self) -> MetaResult<()> {
        while let Some(&zone) = self.stale.first() {
            self.reset_if_used(zone)?;
            self.stale.remove(0);
        }
        Ok(())
    }

    /// Empties the zone a roll writes into. It may hold the older generation, which is
    /// the only complete one if the active zone's base is still volatile (its device sync
    /// failed, or mount read it from a cache): make the active zone durable first.
    fn clear_roll_target(&mut self, zone: u32) -> MetaResult<()> {
        if self.dev.zone_info(zone)?.state == ZoneState::Empty {
            return Ok(());
        }
        self.dev.sync()?;
        self.dev.reset_zone(zone)?;
        self.stats.resets += 1;
        Ok(())
    }

    /// Resets a zone unless it is already empty (a reset costs an erase).
    fn reset_if_used(&mut self, zone: u32) -> MetaResult<()> {
        if self.dev.zone_info(zone)?.state != ZoneState::Empty {
            self.dev.reset_zone(zone)?;
            self.stats.resets += 1;
        }
        Ok(())
    }
}
