//! Write stalls, as RocksDB 7.8 decides them (`GetWriteStallConditionAndCause`).
//!
//! Writes **stop** while the immutable memtables reach `max_write_buffer_number`, while L0
//! holds `level0_stop_writes_trigger` files or more, or while the estimated pending
//! compaction bytes reach `hard_pending_compaction_bytes_limit`. They are **delayed**
//! (slowed to [`DELAYED_WRITE_RATE`]) when `max_write_buffer_number > 3` and the immutable
//! memtables reach `max_write_buffer_number − 1`, at `level0_slowdown_writes_trigger` L0
//! files, or at `soft_pending_compaction_bytes_limit`. A limit of 0 is off. Pending bytes
//! are RocksDB's estimate (`compaction::estimated_compaction_needed_bytes`).

use std::sync::{Arc, Weak};

use crate::compaction::estimated_compaction_needed_bytes;
use crate::options::Options;
use crate::version::Version;

/// RocksDB's `delayed_write_rate` when no rate limiter is set: 16 MiB/s.
pub(crate) const DELAYED_WRITE_RATE: u64 = 16 << 20;

/// Why writes stall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    Memtables,
    L0Files,
    PendingBytes,
}

/// What the write path must do before a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stall {
    None,
    Delay(Cause),
    Stop(Cause),
}

/// The stall condition with `immutable` memtables waiting for a flush and `version`.
pub(crate) fn condition(immutable: usize, version: &Version, o: &Options) -> Stall {
    let l0 = version.num_files(0) as u64;
    let pending = estimated_compaction_needed_bytes(version, o);
    let max_mem = u64::from(o.max_write_buffer_number);
    let imm = immutable as u64;
    let limit = |limit: u64| limit > 0 && pending >= limit;
    if imm >= max_mem {
        Stall::Stop(Cause::Memtables)
    } else if l0 >= u64::from(o.level0_stop_writes_trigger) {
        Stall::Stop(Cause::L0Files)
    } else if limit(o.hard_pending_compaction_bytes_limit) {
        Stall::Stop(Cause::PendingBytes)
    } else if max_mem > 3 && imm + 1 >= max_mem {
        Stall::Delay(Cause::Memtables)
    } else if l0 >= u64::from(o.level0_slowdown_writes_trigger) {
        Stall::Delay(Cause::L0Files)
    } else if limit(o.soft_pending_compaction_bytes_limit) {
        Stall::Delay(Cause::PendingBytes)
    } else {
        Stall::None
    }
}

/// The last stall condition with what it was computed from. The condition depends only on
/// the number of immutable memtables and the version, which change a few times per
/// memtable, while estimating the pending compaction bytes on each write is a visible
/// part of a small write's cost. The version is held weakly (a write must not keep an old
/// version's files alive); a live weak reference also keeps its address from being
/// reused, so an equal address means the same version.
#[derive(Debug, Default)]
pub(crate) struct ConditionCache {
    last: Option<(Weak<Version>, usize, Stall)>,
}

impl ConditionCache {
    /// [`condition`], recomputed only when `immutable` or `version` differ from the last call.
    pub(crate) fn condition(
        &mut self,
        immutable: usize,
        version: &Arc<Version>,
        o: &Options,
    ) -> Stall {
        if let Some((v, imm, stall)) = &self.last {
            if *imm == immutable && std::ptr::eq(v.as_ptr(), Arc::as_ptr(version)) {
                return *stall;
            }
        }
        let stall = condition(immutable, version, o);
        self.last = Some((Arc::downgrade(version), immutable, stall));
        stall
    }
}

/// Paces delayed writes to a byte rate: each write reserves `bytes / rate` seconds of the
/// write path, and a writer that comes before its slot waits until it. Time is in
/// nanoseconds on the caller's clock: the wall clock since the writer started (threaded
/// mode) or the virtual clock (deterministic mode).
#[derive(Debug)]
pub(crate) struct DelayLimiter {
    rate: u64,
    next_free: Option<u64>,
}

impl DelayLimiter {
    pub(crate) fn new(rate: u64) -> DelayLimiter {
        DelayLimiter {
            rate: rate.max(1),
            next_free: None,
        }
    }

    /// How many nanoseconds a write of `bytes` must wait at `now`.
    pub(crate) fn delay(&mut self, bytes: u64, now: u64) -> u64 {
        let start = self.next_free.filter(|t| *t > now).unwrap_or(now);
        let cost = u128::from(bytes) * 1_000_000_000 / u128::from(self.rate);
        self.next_free = Some(start.saturating_add(u64::try_from(cost).unwrap_or(u64::MAX)));
        start - now
    }

    /// Forgets the reservations (the delay condition ended).
    pub(crate) fn reset(&mut self) {
        self.next_free = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::{FileMeta, VersionEdit};

    fn file(number: u64, lo: &[u8], hi: &[u8], size: u64) -> FileMeta {
        FileMeta {
            number,
            size,
            smallest: crate::key::internal_key(lo, number, crate::key::ValueKind::Put),
            largest: crate::key::internal_key(hi, number, crate::key::ValueKind::Put),
            smallest_seq: number,
            largest_seq: number,
            entries: 1,
            deletions: 0,
            raw_key_size: 1,
            raw_value_size: 1,
            lifetime: None,
            oldest_blob_file: None,
        }
    }

    fn version(files: &[(u32, FileMeta)]) -> Version {
        let mut edit = VersionEdit::new();
        for (level, f) in files {
            edit.add_file(*level, f.clone());
        }
        Version::new(7).apply(&edit).unwrap()
    }

    fn opts() -> Options {
        Options {
            level0_file_num_compaction_trigger: 2,
            level0_slowdown_writes_trigger: 3,
            level0_stop_writes_trigger: 4,
            max_bytes_for_level_base: 100,
            soft_pending_compaction_bytes_limit: 1000,
            hard_pending_compaction_bytes_limit: 2000,
            ..Options::default()
        }
    }

    #[test]
    fn conditions_in_rocksdb_order() {
        let o = opts();
        let empty = Version::new(7);
        assert_eq!(condition(0, &empty, &o), Stall::None);
        assert_eq!(condition(2, &empty, &o), Stall::Stop(Cause::Memtables));
        let l0: Vec<(u32, FileMeta)> = (1..=3).map(|n| (0, file(n, b"a", b"b", 1))).collect();
        assert_eq!(
            condition(0, &version(&l0), &o),
            Stall::Delay(Cause::L0Files)
        );
        let l0: Vec<(u32, FileMeta)> = (1..=4).map(|n| (0, file(n, b"a", b"b", 1))).collect();
        assert_eq!(condition(0, &version(&l0), &o), Stall::Stop(Cause::L0Files));
        // L1 600 > 100: excess 500 × (600/600 + 1) = 1000 ≥ the soft limit.
        let big = version(&[(1, file(1, b"a", b"m", 600)), (2, file(2, b"a", b"z", 600))]);
        assert_eq!(condition(0, &big, &o), Stall::Delay(Cause::PendingBytes));
        let huge = version(&[
            (1, file(1, b"a", b"m", 3000)),
            (2, file(2, b"a", b"z", 3000)),
        ]);
        assert_eq!(condition(0, &huge, &o), Stall::Stop(Cause::PendingBytes));
        let many = Options {
            max_write_buffer_number: 4,
            ..opts()
        };
        assert_eq!(condition(3, &empty, &many), Stall::Delay(Cause::Memtables));
    }

    #[test]
    fn cache_follows_the_version_and_memtables() {
        let o = opts();
        let mut cache = ConditionCache::default();
        let empty = Arc::new(Version::new(7));
        assert_eq!(cache.condition(0, &empty, &o), Stall::None);
        assert_eq!(
            cache.condition(2, &empty, &o),
            Stall::Stop(Cause::Memtables)
        );
        let l0: Vec<(u32, FileMeta)> = (1..=4).map(|n| (0, file(n, b"a", b"b", 1))).collect();
        let full = Arc::new(version(&l0));
        assert_eq!(cache.condition(0, &full, &o), Stall::Stop(Cause::L0Files));
        assert_eq!(cache.condition(0, &full, &o), Stall::Stop(Cause::L0Files));
        assert_eq!(cache.condition(0, &empty, &o), Stall::None);
    }

    #[test]
    fn limiter_paces_to_the_rate() {
        let mut l = DelayLimiter::new(1000);
        let t0 = 7_000_000_000;
        assert_eq!(l.delay(500, t0), 0);
        assert_eq!(l.delay(500, t0), 500_000_000);
        assert_eq!(l.delay(1, t0 + 5_000_000_000), 0);
        l.reset();
        assert_eq!(l.delay(1, t0), 0);
    }
}
