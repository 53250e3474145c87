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
use crate::options::{ExecMode, Options};
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

/// How often RocksDB's write controller grants delayed writes more bytes: about a
/// millisecond (1,024 µs).
const REFILL_NS: u64 = 1_024_000;

/// RocksDB's write controller as threaded mode paces delayed writes with it: writes pass
/// on credit, and the one that finds too little waits a whole refill interval (longer for a
/// write larger than an interval's bytes), which buys the bytes of that interval. The rate
/// is [`DelayLimiter`]'s; the waits are fewer and longer: at 16 MiB/s a 1 KB write waits
/// about 1 ms, then the next fifteen pass at once. Time is in nanoseconds on the wall clock
/// since the writer started.
#[derive(Debug)]
pub(crate) struct CreditLimiter {
    rate: u64,
    credit: u64,
    /// When the credit was last topped up; in the future while a granted wait runs.
    refilled: Option<u64>,
}

impl CreditLimiter {
    pub(crate) fn new(rate: u64) -> CreditLimiter {
        CreditLimiter {
            rate: rate.max(1),
            credit: 0,
            refilled: None,
        }
    }

    /// How many nanoseconds a write of `bytes` must wait at `now`.
    pub(crate) fn delay(&mut self, bytes: u64, now: u64) -> u64 {
        if let Some(left) = self.credit.checked_sub(bytes) {
            self.credit = left;
            return 0;
        }
        let mut debt = 0;
        match self.refilled {
            Some(at) if at > now => debt = at - now,
            Some(at) => {
                self.credit = self.credit.saturating_add(self.bytes_in(now - at));
                if now - at >= REFILL_NS && self.credit > bytes {
                    self.refilled = Some(now);
                    self.credit -= bytes;
                    return 0;
                }
            }
            None => {}
        }
        let interval = self.bytes_in(REFILL_NS);
        let wait = match self.credit.saturating_add(interval).checked_sub(bytes) {
            Some(left) => {
                self.credit = left;
                REFILL_NS
            }
            None => self.ns_for(bytes),
        };
        let wait = wait.saturating_add(debt);
        self.refilled = Some(now.saturating_add(wait));
        wait
    }

    /// Forgets the credit (the delay condition ended).
    pub(crate) fn reset(&mut self) {
        self.credit = 0;
        self.refilled = None;
    }

    fn bytes_in(&self, ns: u64) -> u64 {
        let bytes = u128::from(ns) * u128::from(self.rate) / 1_000_000_000;
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }

    fn ns_for(&self, bytes: u64) -> u64 {
        let ns = u128::from(bytes) * 1_000_000_000 / u128::from(self.rate);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

/// How the write path paces delayed writes: deterministic mode makes each wait its own
/// turn on the virtual clock ([`DelayLimiter`]), threaded mode paces as RocksDB's write
/// controller ([`CreditLimiter`]). The same rate either way.
#[derive(Debug)]
pub(crate) enum Pacing {
    Exact(DelayLimiter),
    Credit(CreditLimiter),
}

impl Pacing {
    pub(crate) fn for_mode(mode: ExecMode) -> Pacing {
        match mode {
            ExecMode::Deterministic => Pacing::Exact(DelayLimiter::new(DELAYED_WRITE_RATE)),
            ExecMode::Threaded => Pacing::Credit(CreditLimiter::new(DELAYED_WRITE_RATE)),
        }
    }

    /// How many nanoseconds a write of `bytes` must wait at `now` (the mode's clock).
    pub(crate) fn delay(&mut self, bytes: u64, now: u64) -> u64 {
        match self {
            Pacing::Exact(l) => l.delay(bytes, now),
            Pacing::Credit(l) => l.delay(bytes, now),
        }
    }

    /// The delay condition ended.
    pub(crate) fn reset(&mut self) {
        match self {
            Pacing::Exact(l) => l.reset(),
            Pacing::Credit(l) => l.reset(),
        }
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

    #[test]
    fn credit_makes_few_writes_wait_a_refill_interval_each() {
        // 16 MiB/s, 1 KiB writes: an interval's credit is 16 KiB, so the first write
        // waits one interval, then the next fifteen pass at once, then one waits again.
        let mut l = CreditLimiter::new(16 << 20);
        let t0 = 3_000_000_000;
        assert_eq!(l.delay(1024, t0), REFILL_NS);
        let now = t0 + REFILL_NS;
        for i in 0..15 {
            assert_eq!(l.delay(1024, now), 0, "write {i}");
        }
        assert!(l.delay(1024, now) > 0);
        // A write larger than an interval's bytes waits for all of them.
        l.reset();
        assert_eq!(l.delay(1 << 20, t0), 1_000_000_000 / 16);
        l.reset();
        assert_eq!(l.delay(0, t0), 0);
    }

    #[test]
    fn credit_paces_to_the_rate_on_average() {
        // A writer that takes 5 µs per write and sleeps what it is told: its long-run rate
        // is the limiter's, within a refill interval's worth.
        for (rate, bytes) in [(16u64 << 20, 1_000u64), (1 << 20, 100), (16 << 20, 40_000)] {
            let mut l = CreditLimiter::new(rate);
            let mut now = 1_000_000u64;
            let start = now;
            let writes = 20_000;
            let mut waited = 0;
            for _ in 0..writes {
                let pause = l.delay(bytes, now);
                waited += u64::from(pause > 0);
                now += pause + 5_000;
            }
            let expect = writes * bytes * 1_000_000_000 / rate;
            let took = now - start;
            let off = took.abs_diff(expect) as f64 / expect as f64;
            assert!(
                off < 0.02,
                "rate {rate}, {bytes} B: took {took} ns, expected {expect}"
            );
            if bytes * 16 <= l.bytes_in(REFILL_NS) {
                assert!(waited * 10 < writes, "{waited} of {writes} writes waited");
            }
        }
    }
}
