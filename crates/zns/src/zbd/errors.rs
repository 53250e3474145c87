//! How a refused or failed command becomes the typed error the emulators give: the
//! errnos the kernel uses for the open and active limits, and, after an `EIO`, the rule
//! that the zone's fresh report shows was broken. The zone-management rules checked
//! before a command are the same ones. Separate so that the mapping is pure and unit
//! tested against the emulator's behaviour.

use std::io;

use rustix::io::Errno;

use crate::error::ZnsError;
use crate::types::{ZoneOp, ZoneState};

use super::device::ZbdDevice;
use super::zone_cache::ZoneCache;

/// How a failed command's errno is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ErrnoClass {
    /// `EOVERFLOW` (`BLK_STS_ZONE_ACTIVE_RESOURCE`).
    TooManyActive,
    /// `ETOOMANYREFS` (`BLK_STS_ZONE_OPEN_RESOURCE`).
    TooManyOpen,
    /// `EIO`: report the zone again to learn which rule the device enforced.
    Recheck,
    /// Anything else is an I/O error.
    Other,
}

pub(super) fn classify_errno(raw: Option<i32>) -> ErrnoClass {
    match raw {
        Some(e) if e == Errno::OVERFLOW.raw_os_error() => ErrnoClass::TooManyActive,
        Some(e) if e == Errno::TOOMANYREFS.raw_os_error() => ErrnoClass::TooManyOpen,
        Some(e) if e == Errno::IO.raw_os_error() => ErrnoClass::Recheck,
        _ => ErrnoClass::Other,
    }
}

/// The typed error behind a write that failed with `EIO`, given the zone as the device
/// reports it afterwards. `None` when the zone does not explain it (a media error).
pub(super) fn explain_write_failure(
    zone: u32,
    fresh: ZoneCache,
    offset: u64,
    len: u64,
    capacity: u64,
) -> Option<ZnsError> {
    match fresh.state {
        ZoneState::Offline => Some(ZnsError::Offline { zone }),
        ZoneState::ReadOnly => Some(ZnsError::ReadOnly { zone }),
        ZoneState::Full => Some(ZnsError::ZoneFull { zone }),
        _ if fresh.wp != offset => Some(ZnsError::InvalidWritePosition {
            zone,
            offset,
            wp: fresh.wp,
        }),
        _ if offset + len > capacity => Some(ZnsError::BoundaryCrossed {
            zone,
            offset,
            len,
            capacity,
        }),
        _ => None,
    }
}

/// The typed error behind a zone management command that failed with `EIO`, or the error
/// our own rules give before issuing it (the same function serves both).
pub(super) fn zone_op_rule(zone: u32, op: ZoneOp, state: ZoneState) -> Option<ZnsError> {
    match state {
        ZoneState::Offline => return Some(ZnsError::Offline { zone }),
        ZoneState::ReadOnly => return Some(ZnsError::ReadOnly { zone }),
        _ => {}
    }
    let invalid = match op {
        ZoneOp::Open => state == ZoneState::Full,
        ZoneOp::Close => matches!(state, ZoneState::Empty | ZoneState::Full),
        ZoneOp::Finish | ZoneOp::Reset => false,
    };
    invalid.then_some(ZnsError::InvalidTransition { zone, op, state })
}

impl ZbdDevice {
    /// The typed error for a failed command's errno; `recheck` explains an `EIO`.
    pub(super) fn map_errno(
        &self,
        zone: u32,
        err: io::Error,
        what: String,
        recheck: impl FnOnce() -> Option<ZnsError>,
    ) -> ZnsError {
        match classify_errno(err.raw_os_error()) {
            ErrnoClass::TooManyActive => ZnsError::TooManyActive {
                zone,
                limit: self.geo.max_active,
            },
            ErrnoClass::TooManyOpen => ZnsError::TooManyOpen {
                zone,
                limit: self.geo.max_open,
            },
            ErrnoClass::Recheck => recheck().unwrap_or_else(|| ZnsError::io(what, err)),
            ErrnoClass::Other => ZnsError::io(what, err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_classes() {
        let raw = |e: Errno| Some(e.raw_os_error());
        assert_eq!(
            classify_errno(raw(Errno::OVERFLOW)),
            ErrnoClass::TooManyActive
        );
        assert_eq!(
            classify_errno(raw(Errno::TOOMANYREFS)),
            ErrnoClass::TooManyOpen
        );
        assert_eq!(classify_errno(raw(Errno::IO)), ErrnoClass::Recheck);
        assert_eq!(classify_errno(raw(Errno::INVAL)), ErrnoClass::Other);
        assert_eq!(classify_errno(None), ErrnoClass::Other);
    }

    #[test]
    fn eio_on_write_is_explained_by_the_fresh_report() {
        let cap = 1 << 20;
        let at = |state, wp| ZoneCache { state, wp };
        let kind = |e: Option<ZnsError>| e.map(|e| e.kind());
        let f = |c| explain_write_failure(3, c, 8192, 4096, cap);
        assert_eq!(kind(f(at(ZoneState::Offline, 0))), Some("offline"));
        assert_eq!(kind(f(at(ZoneState::ReadOnly, 0))), Some("read_only"));
        assert_eq!(kind(f(at(ZoneState::Full, cap))), Some("zone_full"));
        assert_eq!(
            kind(f(at(ZoneState::ImplicitOpen, 4096))),
            Some("invalid_write_position")
        );
        assert_eq!(kind(f(at(ZoneState::ImplicitOpen, 8192))), None);
        assert_eq!(
            kind(explain_write_failure(
                3,
                at(ZoneState::Closed, cap - 4096),
                cap - 4096,
                8192,
                cap
            )),
            Some("boundary_crossed")
        );
    }

    #[test]
    fn zone_op_rules_match_the_emulator() {
        use ZoneOp::*;
        use ZoneState::*;
        let kind = |op, st| zone_op_rule(0, op, st).map(|e| e.kind());
        for op in [Open, Close, Finish, Reset] {
            assert_eq!(kind(op, Offline), Some("offline"));
            assert_eq!(kind(op, ReadOnly), Some("read_only"));
        }
        assert_eq!(kind(Open, Full), Some("invalid_transition"));
        assert_eq!(kind(Close, Empty), Some("invalid_transition"));
        assert_eq!(kind(Close, Full), Some("invalid_transition"));
        for st in [Empty, ImplicitOpen, ExplicitOpen, Closed] {
            assert_eq!(kind(Open, st), None);
        }
        for st in [ImplicitOpen, ExplicitOpen, Closed] {
            assert_eq!(kind(Close, st), None);
        }
        for st in [Empty, ImplicitOpen, ExplicitOpen, Closed, Full] {
            assert_eq!(kind(Finish, st), None);
            assert_eq!(kind(Reset, st), None);
        }
    }
}
