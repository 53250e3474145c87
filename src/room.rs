//! Room kept for recovery: while a store is nearly full of live data, writes that add data
//! are refused, so that the room left lets the store open again (flush its WAL, write a
//! new manifest), take deletes and compact them away (`Db::compact_range`): the way a full
//! store gets its space back. RocksDB keeps no such room; a RocksDB that runs out of space
//! stops until space is freed from outside.

use std::sync::atomic::{AtomicU64, Ordering};

use zkv_engine::db::Db as EngineDb;
use zkv_zns::ZoneState;

use crate::error::{Error, Result};

/// What a store keeps free for recovery, worked out at open.
#[derive(Debug)]
pub(crate) struct Room {
    /// Free bytes below which a write that adds data may be refused: the zones kept for
    /// recovery, and the cleaner's empty zone when zones are cleaned (writers never take
    /// it). 0: never refused.
    kept: u64,
    /// The most the memtables can hold before they must be flushed: while free space is
    /// above `kept` by this much, no write needs a closer look.
    memtables: u64,
    /// Bytes that may still be written before the free space is looked at again: an
    /// eighth of the headroom found at the last look (the LSM writes several times what
    /// it is given, and the cleaner copies on top), so that a roomy store does not take
    /// the zone table's lock on every write.
    credit: AtomicU64,
}

impl Room {
    /// `room` bytes kept for recovery on `engine`'s zoned file system (`None`: a quarter
    /// of a zone's capacity; 0: none, writes fill the device as RocksDB's do);
    /// `cleaning`: the cleaner's empty zone is kept too. Nothing on a directory.
    pub(crate) fn new(engine: &EngineDb, room: Option<u64>, cleaning: bool) -> Room {
        let capacity = engine
            .zone_fs()
            .map_or(0, |fs| fs.device().geometry().zone_capacity);
        let kept = match room.unwrap_or(capacity / 4) {
            0 => 0,
            n => n.saturating_add(if cleaning { capacity } else { 0 }),
        };
        let o = engine.options();
        // A full memtable may hold a little more than the buffer size (RocksDB's rule).
        let memtables = zkv_engine::memtable::full_size_bound(o.write_buffer_size)
            .saturating_mul(u64::from(o.max_write_buffer_number.max(1)));
        Room {
            kept,
            memtables,
            credit: AtomicU64::new(0),
        }
    }

    /// Refuses a write that adds data when the free space, with what cleaning the full
    /// zones could still free, is below the room kept plus what the memtables will write
    /// when they are flushed. Deletes (`None`) always go through.
    /// `bytes`: what the write adds (its keys and values).
    pub(crate) fn admit(&self, engine: &EngineDb, device: &str, bytes: Option<u64>) -> Result<()> {
        let Some(bytes) = bytes.filter(|_| self.kept > 0) else {
            return Ok(());
        };
        let Some(fs) = engine.zone_fs() else {
            return Ok(());
        };
        let spent = self
            .credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                c.checked_sub(bytes)
            });
        if spent.is_ok() {
            return Ok(());
        }
        let free = fs.free_bytes();
        let roomy = self.kept.saturating_add(self.memtables);
        if free >= roomy {
            self.credit.store((free - roomy) / 8, Ordering::Relaxed);
            return Ok(());
        }
        let stats = fs.zone_stats().map_err(|e| Error::fs(device, e))?;
        let reclaimable: u64 = (stats.iter())
            .filter(|z| z.state == ZoneState::Full)
            .map(|z| z.invalid)
            .sum();
        let unflushed = engine.memtables().bytes;
        if free.saturating_add(reclaimable) >= self.kept.saturating_add(unflushed) {
            return Ok(());
        }
        Err(Error::Full {
            device: device.to_string(),
            free,
            kept: self.kept,
        })
    }
}
