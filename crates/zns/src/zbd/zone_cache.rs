//! Each zone's cached condition and write pointer: a mutex held for the whole of a
//! command on the zone, and a packed copy that readers take without waiting. Separate
//! because it is the one piece of state the device keeps, shared by writes, zone
//! management and reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::types::ZoneState;

/// A zone's condition as we last knew it. `wp` is relative to the zone start; for a FULL
/// zone it is how much was written when we know it (the zone was finished by us), else the
/// capacity (Linux reports a FULL zone's write pointer at the zone end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ZoneCache {
    pub(super) state: ZoneState,
    pub(super) wp: u64,
}

impl ZoneCache {
    /// Packs the cache into one word for lock-free readers: state code in the top byte.
    fn pack(self) -> u64 {
        (u64::from(self.state.code()) << 56) | (self.wp & ((1 << 56) - 1))
    }

    fn unpack(word: u64) -> Option<ZoneCache> {
        Some(ZoneCache {
            state: ZoneState::from_code((word >> 56) as u8)?,
            wp: word & ((1 << 56) - 1),
        })
    }
}

pub(super) struct Slot {
    /// Held for the whole of a write or zone management command on this zone.
    cache: Mutex<ZoneCache>,
    /// A copy of `cache` that readers take without waiting for a write in flight.
    seen: AtomicU64,
}

impl Slot {
    pub(super) fn new(c: ZoneCache) -> Slot {
        Slot {
            cache: Mutex::new(c),
            seen: AtomicU64::new(c.pack()),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, ZoneCache> {
        // The cache is a plain value updated in one assignment, so a panic while the
        // lock was held cannot leave it half-written.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set(&self, guard: &mut MutexGuard<'_, ZoneCache>, c: ZoneCache) {
        **guard = c;
        self.seen.store(c.pack(), Ordering::Release);
    }

    pub(super) fn seen(&self) -> Option<ZoneCache> {
        ZoneCache::unpack(self.seen.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_packing_round_trips() {
        for state in ZoneState::ALL {
            for wp in [0u64, 4096, (62 << 20), (1 << 40)] {
                let c = ZoneCache { state, wp };
                assert_eq!(ZoneCache::unpack(c.pack()), Some(c));
            }
        }
    }
}
