//! The zone budget: how many zones files may write to at once, derived from the device
//! limits once at mount.
//!
//! A writer holds a *lease* on the zone whose write pointer it owns. Leases are the
//! tokens: at most `tokens` at a time, of which one is kept for WAL files so that
//! foreground writes never wait behind compaction output. `tokens` is bounded by
//! - the open limit, minus one open zone for the metadata log;
//! - the active limit, minus two active zones for the metadata log (its zone, plus the
//!   next one while it rolls);
//! - the data zones files may use (all data zones minus the reserved ones).
//!
//! Because leases never exceed the active budget, a writer that needs a new zone while
//! every active resource is taken always finds an idle active zone to finish.

use zkv_zns::Geometry;

use super::error::{FsError, FsResult};

/// Open zones the metadata log may hold.
const META_OPEN: u32 = 1;
/// Active zones the metadata log may hold (two while it rolls).
const META_ACTIVE: u32 = 2;
/// One token for WAL files and at least one for everything else.
const MIN_TOKENS: u32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Leases (zones being written by a writer) at once.
    pub tokens: u32,
    /// Active data zones (written and not full, or leased) at once.
    pub active: u32,
    /// Empty zones the allocator leaves alone.
    pub reserved: u32,
    /// Data zones, reserved ones included.
    pub data_zones: u32,
}

impl Budget {
    pub fn new(geo: &Geometry, meta_zones: u32, reserved: u32) -> FsResult<Budget> {
        let bad = |reason: String| Err(FsError::InvalidOptions { reason });
        let data_zones = geo.zones.saturating_sub(meta_zones);
        if reserved >= data_zones {
            return bad(format!(
                "{reserved} reserved zones leave none of the {data_zones} data zones to files"
            ));
        }
        let usable = data_zones - reserved;
        let open = limit(geo.max_open, META_OPEN, usable);
        let active = limit(geo.max_active, META_ACTIVE, usable);
        let tokens = open.min(active).min(usable);
        if tokens < MIN_TOKENS {
            return bad(format!(
                "the device limits (max open {}, max active {}) and {usable} usable data \
                 zones leave {tokens} zone(s) for writers; at least {MIN_TOKENS} are needed \
                 (one is kept for WAL files)",
                geo.max_open, geo.max_active
            ));
        }
        Ok(Budget {
            tokens,
            active,
            reserved,
            data_zones,
        })
    }

    /// Whether one more lease may be handed out to a writer (`wal` or not) given the
    /// leases held now.
    pub fn may_lease(&self, wal: bool, leases: u32, non_wal: u32) -> bool {
        leases < self.tokens && (wal || non_wal < self.tokens - 1)
    }
}

/// A device limit minus what the metadata needs; 0 (unlimited) means every data zone.
fn limit(device: u32, meta: u32, usable: u32) -> u32 {
    if device == 0 {
        usable
    } else {
        device.saturating_sub(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_leave_room_for_the_metadata_log() {
        let geo = Geometry::new(32, 1 << 20).with_limits(14, 14);
        let b = Budget::new(&geo, 3, 2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (b.tokens, b.active, b.reserved, b.data_zones),
            (12, 12, 2, 29)
        );
        let unlimited = Geometry::new(8, 1 << 20).with_limits(0, 0);
        let b = Budget::new(&unlimited, 2, 0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((b.tokens, b.active), (6, 6));
    }

    #[test]
    fn one_token_is_kept_for_wal_files() {
        let geo = Geometry::new(16, 1 << 20).with_limits(4, 6);
        let b = Budget::new(&geo, 2, 0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.tokens, 3);
        assert!(b.may_lease(false, 1, 1));
        assert!(!b.may_lease(false, 2, 2));
        assert!(b.may_lease(true, 2, 2));
        assert!(!b.may_lease(true, 3, 2));
    }

    #[test]
    fn too_small_budgets_are_refused() {
        let tiny = Geometry::new(16, 1 << 20).with_limits(2, 2);
        assert!(Budget::new(&tiny, 2, 0).is_err());
        let geo = Geometry::new(4, 1 << 20);
        assert!(Budget::new(&geo, 2, 2).is_err());
        assert!(Budget::new(&geo, 2, 1).is_err());
    }
}
