//! BAZA, BlobDB-aware zone allocation (the Same-Victim GC paper, section IV-A/B): blob files
//! fill zones in ascending blob file number, so that blob GC, which collects the oldest
//! files first, empties whole zones and zone cleaning finds nothing left to copy.
//!
//! One zone is being filled in order: of BAZA's active zones, the one whose first blob
//! data has the smallest blob file number ([`ZoneView::first_blob`]). A blob file goes there
//! until it is full. When another writer holds that zone's write pointer (`busy`: the WP
//! lock), the file takes the next active BAZA zone in that order that is idle, else an empty
//! zone; the file after it returns to the first zone (the paper's Fig. 5: B7 in zone 1,
//! a concurrent B8 in zone 2, B9 in zone 1 again). When zone 1 fills, zone 2 is the oldest:
//! it is filled next, B8 followed by the files after zone 1's last.
//!
//! With no BAZA zone to use and no free active resource, the idle BAZA zone with the least
//! room is finished to open a new one (LIZA's rule).

use super::liza::{cheapest_to_finish, is_candidate};
use super::{Decision, PlacementCtx, PlacementHint, PlacementPolicy, ZoneUse, ZoneView};

/// The class of BAZA's zones (as the blob side of a [`BlobSplit`](super::BlobSplit) sees
/// it, without the blob bit).
pub const BAZA_CLASS: u8 = 1;

/// BAZA: blob files fill zones in ascending blob file number (see the module's text).
#[derive(Clone, Copy, Debug, Default)]
pub struct Baza;

impl Baza {
    /// BAZA's active zones in fill order: by the blob file number of their first blob data,
    /// zones without any last, then by zone number.
    pub fn fill_order(zones: &[ZoneView]) -> Vec<&ZoneView> {
        let mut own: Vec<&ZoneView> = zones
            .iter()
            .filter(|z| z.class == BAZA_CLASS && z.state == ZoneUse::Active)
            .collect();
        own.sort_by_key(|z| (z.first_blob.is_none(), z.first_blob, z.zone));
        own
    }
}

impl PlacementPolicy for Baza {
    fn name(&self) -> &'static str {
        "baza"
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        let next = Baza::fill_order(ctx.zones)
            .into_iter()
            .find(|z| is_candidate(z, ctx.min_capacity));
        if let Some(z) = next {
            return Decision::Use(z.zone);
        }
        let own: Vec<ZoneView> = ctx
            .zones
            .iter()
            .filter(|z| z.class == BAZA_CLASS)
            .cloned()
            .collect();
        Decision::OpenEmpty {
            class: BAZA_CLASS,
            policy: Vec::new(),
            finish: if ctx.can_open {
                None
            } else {
                cheapest_to_finish(&own)
            },
        }
    }

    fn fallback_class(&self, _hint: &PlacementHint) -> u8 {
        BAZA_CLASS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::FileKind;
    use crate::placement::key_range::test_util::{active, ctx, empty, full};

    const ROOM: u64 = 1 << 20;

    fn zone(zone: u32, first_blob: u64, remaining: u64) -> ZoneView {
        ZoneView {
            class: BAZA_CLASS,
            first_blob: Some(first_blob),
            ..active(zone, remaining)
        }
    }

    fn busy(mut z: ZoneView) -> ZoneView {
        z.busy = true;
        z
    }

    fn hint(number: u64) -> PlacementHint {
        PlacementHint {
            kind: Some(FileKind::Blob),
            blob_file: Some(number),
            ..Default::default()
        }
    }

    fn place(number: u64, zones: &[ZoneView], can_open: bool) -> Decision {
        Baza.place(&ctx(&hint(number), zones, can_open))
    }

    fn open(finish: Option<u32>) -> Decision {
        Decision::OpenEmpty {
            class: BAZA_CLASS,
            policy: Vec::new(),
            finish,
        }
    }

    #[test]
    fn files_fill_the_oldest_zone_until_it_is_full() {
        // Zone 9 was opened for older files than zone 4: it is filled first.
        let zones = [zone(4, 20, ROOM), zone(9, 5, ROOM), empty(11, ROOM)];
        assert_eq!(place(21, &zones, true), Decision::Use(9));
        // Full: the next one in order.
        let zones = [zone(4, 20, ROOM), full(9), empty(11, ROOM)];
        assert_eq!(place(21, &zones, true), Decision::Use(4));
        // No BAZA zone left: an empty one.
        let zones = [full(4), full(9), empty(11, ROOM)];
        assert_eq!(place(21, &zones, true), open(None));
    }

    #[test]
    fn the_wp_lock_sends_a_concurrent_file_elsewhere_and_the_next_back() {
        // The paper's Fig. 5: B7 is being written to zone 1; B8 cannot append there.
        let mut zones = vec![busy(zone(1, 5, ROOM)), empty(2, ROOM)];
        assert_eq!(place(8, &zones, true), open(None));
        // Zone 2 opened for B8, B8 still being written; B7 done: B9 goes back to zone 1.
        zones[0].busy = false;
        zones[1] = busy(zone(2, 8, ROOM));
        assert_eq!(place(9, &zones, true), Decision::Use(1));
        // With both idle, zone 1 still comes first; once full, zone 2.
        zones[1].busy = false;
        assert_eq!(place(10, &zones, true), Decision::Use(1));
        zones[0] = full(1);
        assert_eq!(place(11, &zones, true), Decision::Use(2));
    }

    #[test]
    fn a_busy_first_zone_prefers_another_active_zone_over_an_empty_one() {
        let zones = [busy(zone(1, 5, ROOM)), zone(3, 9, ROOM), empty(4, ROOM)];
        assert_eq!(place(12, &zones, true), Decision::Use(3));
    }

    #[test]
    fn never_a_zone_of_another_class_dead_or_without_room() {
        let mut dead = zone(2, 1, ROOM);
        dead.valid = 0;
        let small = zone(3, 2, 100);
        let other = ZoneView {
            first_blob: Some(0),
            ..active(5, ROOM)
        };
        let zones = [dead, small, other, empty(6, ROOM)];
        assert_eq!(place(9, &zones, true), open(None));
    }

    #[test]
    fn without_a_free_resource_the_fullest_idle_baza_zone_is_finished() {
        let other = active(2, 10); // not BAZA's: never finished by it
        let zones = [
            other.clone(),
            zone(3, 1, 100),
            zone(4, 2, 50),
            busy(zone(5, 3, 10)),
        ];
        // Room for 4096 bytes is needed: none of BAZA's zones has it.
        assert_eq!(place(9, &zones, false), open(Some(4)));
        let none = [other, busy(zone(5, 3, ROOM))];
        assert_eq!(place(9, &none, false), open(None));
    }

    #[test]
    fn zones_without_blob_numbers_come_last() {
        let unknown = ZoneView {
            first_blob: None,
            ..zone(2, 0, ROOM)
        };
        let zones = [unknown, zone(7, 30, ROOM)];
        assert_eq!(place(31, &zones, true), Decision::Use(7));
    }
}
