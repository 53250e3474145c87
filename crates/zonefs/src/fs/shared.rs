//! The state every handle of one mounted file system shares, and the steps that need
//! both the metadata and the zone table.
//!
//! Lock order: `meta` before `zones`, never the other way round. The zone table lock is
//! held for short decisions and zone commands; the metadata lock also covers metadata
//! syncs, so that records reach the log in the order they were applied.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};

use zkv_zns::{DeviceStats, Geometry, ZonedDevice};

use crate::meta::{FileId, FsState, MetaLog, Record, ZoneLayout, ZonePlacement};
use crate::placement::PlacementPolicy;

use super::cleaner::CleanerCore;
use super::error::{FsError, FsResult};
use super::options::FsOptions;
use super::reader::Readers;
use super::table::ZoneTable;

/// The metadata state and its log, kept together so that they never disagree.
pub(crate) struct MetaStore {
    pub state: FsState,
    pub log: MetaLog,
    /// Files with an open writer: they cannot be deleted, renamed or replaced.
    pub writing: BTreeSet<FileId>,
    /// Open readers by file, for the cleaner's moves to reach them.
    pub readers: Readers,
}

impl MetaStore {
    /// Applies and queues records, stopping at the first the state refuses (the earlier
    /// ones stay applied and queued, so state and log still agree).
    pub fn stage(&mut self, recs: &[Record], context: &dyn Fn() -> String) -> FsResult<()> {
        for rec in recs {
            self.state
                .apply(rec)
                .map_err(|e| FsError::rejected(context(), e))?;
            self.log
                .append(rec)
                .map_err(|e| FsError::meta(context(), e))?;
        }
        Ok(())
    }

    /// Makes everything staged durable.
    pub fn sync(&mut self, context: &dyn Fn() -> String) -> FsResult<()> {
        self.log
            .sync(&self.state)
            .map_err(|e| FsError::meta(context(), e))
    }

    /// Stages and syncs: after `Ok` the records survive any power cut.
    pub fn commit(&mut self, recs: &[Record], context: &dyn Fn() -> String) -> FsResult<()> {
        self.stage(recs, context)?;
        self.sync(context)
    }
}

/// Event counters of the file layer (device byte counts come from the device).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub resets: AtomicU64,
    pub zero_copy_resets: AtomicU64,
    pub finishes: AtomicU64,
    pub placement_decisions: AtomicU64,
    pub placement_ns: AtomicU64,
    pub lease_waits: AtomicU64,
    pub lease_wait_ns: AtomicU64,
    pub revocations: AtomicU64,
    pub gc_runs: AtomicU64,
    pub gc_victims: AtomicU64,
    pub gc_copy_bytes: AtomicU64,
    /// The share of `gc_copy_bytes` that belonged to blob files.
    pub gc_blob_copy_bytes: AtomicU64,
    pub gc_compacted_bytes: AtomicU64,
    pub gc_blocking_ns: AtomicU64,
    pub gc_blocking_events: AtomicU64,
    pub gc_compaction_requests: AtomicU64,
    /// Bytes copied out of each victim, in the order the victims were reset: one entry per
    /// victim reset (their count is `GcStats::resets`).
    pub gc_victim_copy_bytes: Mutex<Vec<u64>>,
}

impl Counters {
    /// A victim was reset after the cleaner copied `copied` bytes out of it.
    pub fn note_victim_reset(&self, copied: u64) {
        self.gc_victim_copy_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(copied);
    }

    pub fn victim_copy_bytes(&self) -> Vec<u64> {
        self.gc_victim_copy_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// An engine object the file system calls back (reclaimer, compaction requester, hint
/// source): installed and removed at any time, read by cloning the `Arc` so that the call
/// itself runs with no lock held. A poisoned lock still holds a valid pointer.
pub(crate) struct Hook<T: ?Sized>(RwLock<Option<Arc<T>>>);

impl<T: ?Sized> Default for Hook<T> {
    fn default() -> Self {
        Hook(RwLock::new(None))
    }
}

impl<T: ?Sized> Hook<T> {
    pub fn set(&self, value: Option<Arc<T>>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = value;
    }

    pub fn get(&self) -> Option<Arc<T>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

pub(crate) struct Shared {
    pub dev: Arc<dyn ZonedDevice>,
    pub geo: Geometry,
    pub layout: ZoneLayout,
    /// Mounted read-only: nothing may write to the device.
    pub read_only: bool,
    pub opts: FsOptions,
    pub policy: Box<dyn PlacementPolicy>,
    pub meta: Mutex<MetaStore>,
    pub zones: Mutex<ZoneTable>,
    /// Signalled whenever a lease ends or a write finishes: waiting writers look again.
    pub zone_freed: Condvar,
    pub counters: Counters,
    /// Device counters when the file system was mounted; statistics are deltas from here.
    pub baseline: DeviceStats,
    /// The zone cleaner: run coordination, the engine's callback, samples.
    pub cleaner: CleanerCore,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // A background cleaner only holds a weak handle: tell it to go.
        self.cleaner.shutdown();
    }
}

impl Shared {
    pub fn lock_meta(&self) -> MutexGuard<'_, MetaStore> {
        // A panic elsewhere must not turn every later call into a panic too.
        self.meta.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn lock_zones(&self) -> MutexGuard<'_, ZoneTable> {
        self.zones.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn block_size(&self) -> u64 {
        u64::from(self.geo.block_size)
    }

    /// Refuses `operation` on a read-only mount, before it takes a lock or touches the
    /// device.
    pub fn check_writable(&self, operation: impl FnOnce() -> String) -> FsResult<()> {
        if self.read_only {
            return Err(FsError::ReadOnly {
                operation: operation(),
            });
        }
        Ok(())
    }

    /// Resets every zone no file needs any more and forgets its placement class.
    ///
    /// Called with the metadata lock held, after the change that killed the data is
    /// durable: a zone is dead only when no state that a mount could recover references it
    /// (see `table.rs`), so resetting it can never lose acknowledged data.
    /// A read-only mount resets nothing: its dead zones stay reclaimable.
    pub fn reclaim_dead(&self, meta: &mut MetaStore) -> FsResult<u32> {
        if self.read_only {
            return Ok(0);
        }
        let mut zones = self.lock_zones();
        let mut reset = 0;
        for zone in zones.dead_zones() {
            self.dev
                .reset_zone(zone)
                .map_err(|e| FsError::device(format!("reset dead zone {zone}"), e))?;
            let (victim, copied) = zones
                .slot(zone)
                .map_or((false, 0), |s| (s.victim, s.copied));
            zones.mark_reset(zone);
            reset += 1;
            Counters::add(&self.counters.resets, 1);
            if copied == 0 {
                Counters::add(&self.counters.zero_copy_resets, 1);
            }
            if victim {
                self.counters.note_victim_reset(copied);
            }
            if meta.state.placement(zone).is_some() {
                // Durable with the next metadata sync; a mount clears it anyway.
                let clear = Record::ZoneMeta {
                    zone,
                    placement: ZonePlacement::default(),
                };
                meta.stage(&[clear], &|| format!("clear the class of zone {zone}"))?;
            }
        }
        if reset > 0 {
            self.zone_freed.notify_all();
        }
        Ok(reset)
    }

    /// Lowers the live bytes of zones once the metadata that referenced them is durable.
    pub fn release_live(&self, freed: impl IntoIterator<Item = (u32, u64)>) {
        let mut zones = self.lock_zones();
        for (zone, bytes) in freed {
            if let Some(s) = zones.slot_mut(zone) {
                s.live = s.live.saturating_sub(bytes);
            }
        }
    }

    /// Best effort for destructors: release what is dead now, or leave it to the next
    /// reclaim (the allocator and mount reclaim too).
    pub fn reclaim_quietly(&self, meta: &mut MetaStore) {
        let _ = self.reclaim_dead(meta);
    }

    /// Stages the YBIZ of the blob zones that became full since the last call (their
    /// placement record: class and YBIZ). Durable with the next metadata sync; a mount that
    /// finds a full blob zone without one computes it from the zone's files. A read-only
    /// mount stages nothing.
    pub fn log_ybiz(&self, meta: &mut MetaStore) -> FsResult<()> {
        if self.read_only {
            return Ok(());
        }
        let unlogged = self.lock_zones().take_unlogged_ybiz();
        for (i, (zone, class, policy)) in unlogged.iter().enumerate() {
            let rec = Record::ZoneMeta {
                zone: *zone,
                placement: ZonePlacement {
                    class: *class,
                    policy: policy.clone(),
                },
            };
            if let Err(e) = meta.stage(&[rec], &|| format!("record the YBIZ of zone {zone}")) {
                // Try these again at the next call.
                let mut zones = self.lock_zones();
                for (zone, ..) in unlogged.iter().skip(i) {
                    if let Some(s) = zones.slot_mut(*zone) {
                        s.ybiz_unlogged = true;
                    }
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// [`Shared::log_ybiz`] for callers holding no lock, best effort: what cannot be
    /// staged now is staged at the next call.
    pub fn log_ybiz_quietly(&self) {
        let pending = self.lock_zones().zones().any(|(_, s)| s.ybiz_unlogged);
        if pending {
            let _ = self.log_ybiz(&mut self.lock_meta());
        }
    }

    /// Stages the class of a zone just opened for a writer (or the cleaner). It is logged
    /// before any record can reference the zone (nobody else can write to the zone before
    /// the first write ends), so whenever a file in it is durable, so is its class.
    pub fn stage_zone_class(&self, zone: u32, placement: ZonePlacement) -> FsResult<()> {
        let rec = Record::ZoneMeta { zone, placement };
        let mut meta = self.lock_meta();
        meta.stage(&[rec], &|| format!("record the class of zone {zone}"))
    }
}
