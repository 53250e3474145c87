//! The runtime zone table: per data zone, what the allocator needs to know right now.
//!
//! It is rebuilt at mount from the device's zone report and the recovered metadata, and
//! kept under one mutex. Besides the written bytes and the placement class it tracks:
//! - `live`: bytes some file may still need: the extents of the metadata state, plus bytes
//!   writers appended but have not recorded yet, plus bytes a newer in-memory state dropped
//!   but a durable one may still reference. A zone is only reset when this is 0, which is
//!   what makes eager resets crash safe;
//! - `pins`: open readers whose snapshot of a file has extents in the zone;
//! - `owner`: the lease of the writer that owns the zone's write pointer (the WP lock);
//! - the blob file numbers written into it: the first (BAZA's fill order) and the youngest,
//!   which becomes a blob zone's YBIZ when the zone turns full (see `note_full`).

use zkv_zns::{ZoneInfo, ZoneState};

use crate::placement::{is_blob_zone, ybiz_of, ybiz_policy, ZoneUse, ZoneView};

use super::budget::Budget;

/// A data zone's condition as the allocator sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cond {
    /// Nothing written since the last reset.
    Empty,
    /// Written and not full: holds an active resource.
    Active,
    /// Full or finished: nothing more can be written.
    Full,
    /// Read-only or offline: never written again.
    Unusable(ZoneState),
}

/// The writer that owns a zone's write pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub lease: u64,
    pub wal: bool,
    /// Inside a device write right now; a lease not in use may be revoked.
    pub in_use: bool,
    /// Allocator clock at the last use, to revoke the longest idle lease first.
    pub last_use: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub cond: Cond,
    /// Bytes written since the last reset; a finished zone counts its whole capacity.
    pub written: u64,
    pub live: u64,
    pub pins: u32,
    pub class: u8,
    /// The placement policy's own facts about the zone (e.g. Prophet's deletion window).
    pub policy: Vec<u8>,
    pub owner: Option<Owner>,
    /// The zone cleaner picked the zone as a victim (cleared by the reset).
    pub victim: bool,
    /// The cleaner opened the zone for the copies of the victim it is moving: until that
    /// victim is moved, only the cleaner may write to it or finish it (see
    /// [`ZoneTable::clear_cleaner_holds`]).
    pub cleaner_hold: bool,
    /// Bytes the cleaner copied out of the zone (recorded migrations) since its last reset;
    /// its reset is a zero-copy one only if this is 0.
    pub copied: u64,
    /// Resets of the zone by this mount: tells a victim from the same zone reused since.
    pub epoch: u64,
    /// The blob file number of the first blob data written since the last reset (at mount:
    /// of the first live blob data in the zone).
    pub first_blob: Option<u64>,
    /// The largest blob file number written since the last reset (at mount: of the live
    /// blob data in the zone).
    pub youngest_blob: Option<u64>,
    /// The zone's YBIZ was set in `policy` and is not in the metadata log yet.
    pub ybiz_unlogged: bool,
}

impl Slot {
    fn new(cond: Cond, written: u64) -> Slot {
        Slot {
            cond,
            written,
            live: 0,
            pins: 0,
            class: 0,
            policy: Vec::new(),
            owner: None,
            victim: false,
            cleaner_hold: false,
            copied: 0,
            epoch: 0,
            first_blob: None,
            youngest_blob: None,
            ybiz_unlogged: false,
        }
    }

    /// Blob file `number` wrote data into the zone.
    pub fn note_blob(&mut self, number: u64) {
        self.first_blob.get_or_insert(number);
        self.youngest_blob = self.youngest_blob.max(Some(number));
    }

    /// The zone just became full (written to capacity, or finished): a blob zone records
    /// its YBIZ, the youngest blob file number written into it, to be logged.
    pub fn note_full(&mut self) {
        let Some(ybiz) = self.youngest_blob else {
            return;
        };
        if is_blob_zone(self.class) && self.ybiz().is_none() {
            self.policy = ybiz_policy(ybiz);
            self.ybiz_unlogged = true;
        }
    }

    /// The YBIZ the zone holds (full blob zones only).
    pub fn ybiz(&self) -> Option<u64> {
        ybiz_of(self.class, &self.policy)
    }

    /// Holds no data anybody needs: can be reset. An active zone with nothing written
    /// (opened explicitly by someone else before mount) holds a resource for nothing.
    fn is_dead(&self) -> bool {
        matches!(self.cond, Cond::Active | Cond::Full)
            && self.live == 0
            && self.pins == 0
            && self.owner.is_none()
    }

    /// Would be dead but for open readers: free once they let go.
    fn waits_for_readers(&self) -> bool {
        matches!(self.cond, Cond::Active | Cond::Full)
            && self.live == 0
            && self.pins > 0
            && self.owner.is_none()
    }

    fn is_idle_active(&self) -> bool {
        self.cond == Cond::Active && self.owner.is_none()
    }

    /// Whether the cleaner (`gc`) or another writer may write to or finish the zone as
    /// far as the cleaner's hold goes.
    fn open_to(&self, gc: bool) -> bool {
        gc || !self.cleaner_hold
    }
}

/// A writer's claim on a zone's write pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lease {
    pub zone: u32,
    pub id: u64,
    /// The blob file number of the file written through it (blob files only).
    pub blob: Option<u64>,
}

/// Where a writer may write now: its write pointer and the room left in the zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WriteSlot {
    pub lease: Lease,
    pub wp: u64,
    pub room: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct ZoneTable {
    first: u32,
    capacity: u64,
    slots: Vec<Slot>,
    pub budget: Budget,
    next_lease: u64,
    clock: u64,
}

impl ZoneTable {
    /// A table from the device's report of the data zones (no live data yet).
    pub fn from_report(report: &[ZoneInfo], first: u32, capacity: u64, budget: Budget) -> Self {
        let slots = report
            .iter()
            .map(|info| match info.state {
                ZoneState::Empty => Slot::new(Cond::Empty, 0),
                // Linux reports a full zone's write pointer at the zone end: do not use it.
                ZoneState::Full => Slot::new(Cond::Full, capacity),
                s if s.is_active() => Slot::new(Cond::Active, info.written().min(capacity)),
                s => Slot::new(Cond::Unusable(s), info.written().min(capacity)),
            })
            .collect();
        ZoneTable {
            first,
            capacity,
            slots,
            budget,
            next_lease: 1,
            clock: 0,
        }
    }

    pub fn slot(&self, zone: u32) -> Option<&Slot> {
        zone.checked_sub(self.first)
            .and_then(|i| self.slots.get(i as usize))
    }

    pub fn slot_mut(&mut self, zone: u32) -> Option<&mut Slot> {
        zone.checked_sub(self.first)
            .and_then(|i| self.slots.get_mut(i as usize))
    }

    /// Data zones with their slots, in zone order.
    pub fn zones(&self) -> impl Iterator<Item = (u32, &Slot)> + '_ {
        (self.first..).zip(self.slots.iter())
    }

    /// The placement view of every data zone, for the cleaner (`gc`) or another writer: to
    /// the others, a zone the cleaner holds is busy.
    pub fn views(&self, gc: bool) -> Vec<ZoneView> {
        self.zones()
            .map(|(zone, s)| ZoneView {
                zone,
                state: match s.cond {
                    Cond::Empty => ZoneUse::Empty,
                    Cond::Active => ZoneUse::Active,
                    Cond::Full | Cond::Unusable(_) => ZoneUse::Full,
                },
                remaining: match s.cond {
                    Cond::Empty | Cond::Active => self.capacity - s.written,
                    _ => 0,
                },
                valid: s.live,
                busy: s.owner.is_some() || !s.open_to(gc),
                class: s.class,
                policy: s.policy.clone(),
                first_blob: s.first_blob,
            })
            .collect()
    }

    /// Zones holding an active resource: written and not full, or leased.
    pub fn active_count(&self) -> u32 {
        self.count(|s| s.cond == Cond::Active || (s.cond == Cond::Empty && s.owner.is_some()))
    }

    /// Empty zones nobody holds.
    pub fn free_empty(&self) -> u32 {
        self.count(|s| s.cond == Cond::Empty && s.owner.is_none())
    }

    /// An empty zone may be opened while more than `keep` are empty (the reserve a
    /// request must leave, see `Request::keep_empty`).
    pub fn empty_available(&self, keep: u32) -> bool {
        self.free_empty() > keep
    }

    pub fn can_open(&self, keep: u32) -> bool {
        self.empty_available(keep) && self.active_count() < self.budget.active
    }

    fn count(&self, f: impl Fn(&Slot) -> bool) -> u32 {
        self.slots.iter().filter(|s| f(s)).count() as u32
    }

    /// Leases held: all, and those of non-WAL writers.
    pub fn leases(&self) -> (u32, u32) {
        let owners = self.slots.iter().filter_map(|s| s.owner);
        owners.fold((0, 0), |(all, other), o| {
            (all + 1, other + u32::from(!o.wal))
        })
    }

    pub fn may_lease(&self, wal: bool) -> bool {
        let (all, other) = self.leases();
        self.budget.may_lease(wal, all, other)
    }

    /// A lease not in use whose revocation lets a writer (`wal` or not) take one: the
    /// longest idle, preferring non-WAL leases so that the WAL keeps its zone.
    pub fn revocable_for(&self, wal: bool) -> Option<u32> {
        let (all, other) = self.leases();
        let helps = |o: &Owner| {
            self.budget
                .may_lease(wal, all - 1, other - u32::from(!o.wal))
        };
        self.zones()
            .filter_map(|(z, s)| s.owner.map(|o| (z, o)))
            .filter(|(_, o)| !o.in_use && helps(o))
            .min_by_key(|(_, o)| (o.wal, o.last_use))
            .map(|(z, _)| z)
    }

    /// Takes the lease away from an idle writer; it gets a new zone at its next write.
    pub fn revoke(&mut self, zone: u32) {
        if let Some(s) = self.slot_mut(zone) {
            s.owner = None;
        }
    }

    /// Hands the zone's write pointer to a writer, in use from now on.
    pub fn lease(&mut self, zone: u32, wal: bool) -> Option<WriteSlot> {
        let id = self.next_lease;
        self.clock += 1;
        let (clock, capacity) = (self.clock, self.capacity);
        let s = self.slot_mut(zone)?;
        if s.owner.is_some() || !matches!(s.cond, Cond::Empty | Cond::Active) {
            return None;
        }
        s.owner = Some(Owner {
            lease: id,
            wal,
            in_use: true,
            last_use: clock,
        });
        let wp = s.written;
        self.next_lease += 1;
        let lease = Lease {
            zone,
            id,
            blob: None,
        };
        Some(WriteSlot {
            lease,
            wp,
            room: capacity - wp,
        })
    }

    /// Marks a held lease in use again; `None` if it was revoked meanwhile.
    pub fn begin_write(&mut self, lease: Lease) -> Option<WriteSlot> {
        self.clock += 1;
        let (clock, capacity) = (self.clock, self.capacity);
        let s = self.slot_mut(lease.zone)?;
        let o = s.owner.as_mut().filter(|o| o.lease == lease.id)?;
        o.in_use = true;
        o.last_use = clock;
        Some(WriteSlot {
            lease,
            wp: s.written,
            room: capacity - s.written,
        })
    }

    /// Ends a write of `written` bytes (0 if it failed). Returns false when the lease
    /// ended because the zone is now full.
    pub fn end_write(&mut self, lease: Lease, written: u64) -> bool {
        let capacity = self.capacity;
        let Some(s) = self.slot_mut(lease.zone) else {
            return false;
        };
        s.written += written;
        s.live += written;
        if let (true, Some(number)) = (written > 0, lease.blob) {
            s.note_blob(number);
        }
        if s.written > 0 && s.cond == Cond::Empty {
            s.cond = Cond::Active;
        }
        if s.written >= capacity {
            s.cond = Cond::Full;
            s.owner = None;
            s.note_full();
            return false;
        }
        match s.owner.as_mut().filter(|o| o.lease == lease.id) {
            Some(o) => {
                o.in_use = false;
                true
            }
            None => false,
        }
    }

    /// Gives a lease up (writer closed or dropped).
    pub fn release(&mut self, lease: Lease) {
        if let Some(s) = self.slot_mut(lease.zone) {
            if s.owner.is_some_and(|o| o.lease == lease.id) {
                s.owner = None;
            }
        }
    }

    /// Whether `Use(zone)` can be carried out for a write of at least `min` bytes, by the
    /// cleaner (`gc`) or another writer.
    pub fn usable(&self, zone: u32, min: u64, gc: bool) -> bool {
        self.slot(zone).is_some_and(|s| {
            s.is_idle_active() && s.open_to(gc) && self.capacity - s.written >= min
        })
    }

    /// Whether the cleaner (`gc`) or another writer may finish `zone`.
    pub fn finishable(&self, zone: u32, gc: bool) -> bool {
        self.slot(zone)
            .is_some_and(|s| s.is_idle_active() && s.open_to(gc))
    }

    /// Ends the holds of the cleaner's zones (it moved its victim, or gave up on it).
    pub fn clear_cleaner_holds(&mut self) {
        for s in &mut self.slots {
            s.cleaner_hold = false;
        }
    }

    /// The lowest-numbered empty zone nobody holds.
    pub fn first_empty(&self) -> Option<u32> {
        self.zones()
            .find(|(_, s)| s.cond == Cond::Empty && s.owner.is_none())
            .map(|(z, _)| z)
    }

    /// Any idle active zone with room whose class `shares` accepts (last resort before
    /// giving up).
    pub fn any_with_room(&self, min: u64, gc: bool, shares: impl Fn(u8) -> bool) -> Option<u32> {
        self.zones()
            .filter(|(z, s)| self.usable(*z, min, gc) && shares(s.class))
            .max_by_key(|(_, s)| self.capacity - s.written)
            .map(|(z, _)| z)
    }

    /// A zone with room whose lease is not in use and whose class `helps`: taking it back
    /// makes the zone usable.
    pub fn idle_lease_with_room(&self, min: u64, helps: impl Fn(u8) -> bool) -> Option<u32> {
        self.zones()
            .filter(|(_, s)| s.owner.is_some_and(|o| !o.in_use) && helps(s.class))
            .find(|(_, s)| {
                matches!(s.cond, Cond::Empty | Cond::Active) && self.capacity - s.written >= min
            })
            .map(|(z, _)| z)
    }

    /// Some writer is inside a write to a zone with room: waiting may yield a zone.
    pub fn write_in_progress(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.owner.is_some_and(|o| o.in_use) && s.written < self.capacity)
    }

    /// Idle active zones with less than `percent`% of their capacity left.
    pub fn below_threshold(&self, percent: u8) -> Vec<u32> {
        let cap = u128::from(self.capacity);
        self.zones()
            .filter(|(_, s)| s.is_idle_active())
            .filter(|(_, s)| {
                u128::from(self.capacity - s.written) * 100 < cap * u128::from(percent)
            })
            .map(|(z, _)| z)
            .collect()
    }

    /// The idle active zone with the least room (what LIZA finishes).
    pub fn cheapest_to_finish(&self, gc: bool) -> Option<u32> {
        self.zones()
            .filter(|(z, _)| self.finishable(*z, gc))
            .min_by_key(|(_, s)| self.capacity - s.written)
            .map(|(z, _)| z)
    }

    /// The idle active zones settling finishes, fullest first, until the active zones fit
    /// the active budget. Worked out on a copy of the table, so that it can also be asked
    /// without finishing anything.
    pub fn excess_active(&self) -> Vec<u32> {
        let mut after = self.clone();
        let mut finish = Vec::new();
        while after.active_count() > after.budget.active {
            let Some(zone) = after.cheapest_to_finish(true) else {
                break;
            };
            after.mark_finished(zone);
            finish.push(zone);
        }
        finish
    }

    /// The zones of `zones` that are empty (a class recorded for them is stale).
    pub fn empty_among(&self, zones: impl Iterator<Item = u32>) -> Vec<u32> {
        zones
            .filter(|z| self.slot(*z).is_some_and(|s| s.cond == Cond::Empty))
            .collect()
    }

    pub fn dead_zones(&self) -> Vec<u32> {
        self.zones()
            .filter(|(_, s)| s.is_dead())
            .map(|(z, _)| z)
            .collect()
    }

    pub fn has_dead(&self) -> bool {
        self.slots.iter().any(Slot::is_dead)
    }

    /// Zones that hold no live data but are pinned by open readers.
    pub fn pinned_dead(&self) -> usize {
        self.slots.iter().filter(|s| s.waits_for_readers()).count()
    }

    pub fn mark_finished(&mut self, zone: u32) {
        let capacity = self.capacity;
        if let Some(s) = self.slot_mut(zone) {
            s.cond = Cond::Full;
            // The rest of a finished zone can never be written: it counts as used.
            s.written = capacity;
            s.note_full();
        }
    }

    pub fn mark_reset(&mut self, zone: u32) {
        if let Some(s) = self.slot_mut(zone) {
            s.cond = Cond::Empty;
            s.written = 0;
            s.class = 0;
            s.policy.clear();
            s.victim = false;
            s.cleaner_hold = false;
            s.copied = 0;
            s.epoch += 1;
            s.first_blob = None;
            s.youngest_blob = None;
            s.ybiz_unlogged = false;
        }
    }

    /// Full blob zones and their YBIZ, in zone order.
    pub fn ybiz(&self) -> Vec<(u32, u64)> {
        self.zones()
            .filter(|(_, s)| s.cond == Cond::Full)
            .filter_map(|(z, s)| Some((z, s.ybiz()?)))
            .collect()
    }

    /// The zones whose YBIZ is not logged yet, with their placement to log; marked logged.
    pub fn take_unlogged_ybiz(&mut self) -> Vec<(u32, u8, Vec<u8>)> {
        let first = self.first;
        let mut out = Vec::new();
        for (zone, s) in (first..).zip(self.slots.iter_mut()) {
            if std::mem::take(&mut s.ybiz_unlogged) {
                out.push((zone, s.class, s.policy.clone()));
            }
        }
        out
    }

    /// Room left in empty and active zones, the reserve included (what the cleaner may
    /// write its copies to).
    pub fn room_with_reserve(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| matches!(s.cond, Cond::Empty | Cond::Active))
            .map(|s| self.capacity - s.written)
            .sum()
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes files may still write: room in empty and active zones, minus the reserve.
    pub fn free_bytes(&self) -> u64 {
        self.room_with_reserve()
            .saturating_sub(u64::from(self.budget.reserved) * self.capacity)
    }

    /// free / usable, 0 when nothing is usable.
    pub fn free_ratio(&self) -> f64 {
        ratio(self.free_bytes(), self.usable_bytes())
    }

    /// Whether free bytes are below `percent`% of the usable bytes (exact integer test).
    pub fn free_below(&self, percent: u8) -> bool {
        u128::from(self.free_bytes()) * 100 < u128::from(self.usable_bytes()) * u128::from(percent)
    }

    /// Capacity of the writable data zones minus the reserve.
    pub fn usable_bytes(&self) -> u64 {
        let zones = self.count(|s| !matches!(s.cond, Cond::Unusable(_)));
        u64::from(zones.saturating_sub(self.budget.reserved)) * self.capacity
    }
}

pub(crate) fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkv_zns::Geometry;

    fn table(zones: u32, limits: (u32, u32)) -> ZoneTable {
        let geo = Geometry::new(zones + 2, 1 << 16).with_limits(limits.0, limits.1);
        let budget = Budget::new(&geo, 2, 0).unwrap();
        let report: Vec<ZoneInfo> = (2..zones + 2)
            .map(|z| ZoneInfo {
                zone: z,
                start: geo.zone_start(z),
                size: geo.zone_size,
                capacity: geo.zone_capacity,
                wp: geo.zone_start(z),
                state: ZoneState::Empty,
            })
            .collect();
        ZoneTable::from_report(&report, 2, geo.zone_capacity, budget)
    }

    /// Writes `bytes` to `zone` under a non-WAL lease and gives the lease back.
    fn write_idle(t: &mut ZoneTable, zone: u32, bytes: u64) {
        let w = t.lease(zone, false).unwrap();
        t.end_write(w.lease, bytes);
        t.release(w.lease);
    }

    #[test]
    fn a_lease_is_exclusive_until_released_or_revoked() {
        let mut t = table(4, (4, 6));
        let w = t.lease(2, false).unwrap();
        assert!(t.lease(2, true).is_none());
        assert!(t.end_write(w.lease, 4096));
        assert_eq!(t.revocable_for(true), Some(2));
        t.revoke(2);
        assert!(t.begin_write(w.lease).is_none());
        let again = t.lease(2, true).unwrap();
        assert_eq!(again.wp, 4096);
        assert_eq!(t.slot(2).map(|s| s.live), Some(4096));
    }

    /// A zone the cleaner opened for a victim's copies is the cleaner's alone until the
    /// victim is moved: other writers see it busy and may neither use nor finish it, so
    /// that the copies still to come find the room they were picked for.
    #[test]
    fn a_zone_the_cleaner_holds_is_only_the_cleaners() {
        let mut t = table(4, (4, 6));
        write_idle(&mut t, 2, 4096);
        if let Some(s) = t.slot_mut(2) {
            s.cleaner_hold = true;
        }
        let busy = |t: &ZoneTable, gc| t.views(gc).iter().any(|v| v.zone == 2 && v.busy);
        assert!(busy(&t, false) && !busy(&t, true));
        assert!(!t.usable(2, 4096, false) && t.usable(2, 4096, true));
        assert!(!t.finishable(2, false) && t.finishable(2, true));
        assert_eq!(t.any_with_room(4096, false, |_| true), None);
        assert_eq!(t.cheapest_to_finish(false), None);
        assert_eq!(t.any_with_room(4096, true, |_| true), Some(2));
        t.clear_cleaner_holds();
        assert!(!busy(&t, false) && t.usable(2, 4096, false));
        assert_eq!(t.cheapest_to_finish(false), Some(2));
    }

    #[test]
    fn a_full_zone_ends_its_lease() {
        let mut t = table(4, (4, 6));
        let w = t.lease(3, false).unwrap();
        assert!(!t.end_write(w.lease, 1 << 16));
        assert_eq!(t.slot(3).map(|s| s.cond), Some(Cond::Full));
        assert_eq!(t.leases(), (0, 0));
    }

    #[test]
    fn the_wal_token_is_kept_and_wal_leases_are_revoked_last() {
        // tokens = min(4 - 1, 6 - 2) = 3: two for others, one kept for the WAL.
        let mut t = table(6, (4, 6));
        let a = t.lease(2, false).unwrap();
        t.end_write(a.lease, 4096);
        let b = t.lease(3, false).unwrap();
        t.end_write(b.lease, 4096);
        assert!(!t.may_lease(false));
        assert!(t.may_lease(true));
        assert_eq!(t.revocable_for(false), Some(2));
        let w = t.lease(4, true).unwrap();
        t.end_write(w.lease, 4096);
        assert_eq!(t.revocable_for(true), Some(2));
    }

    #[test]
    fn dead_zones_are_unpinned_unowned_and_written() {
        let mut t = table(4, (0, 0));
        write_idle(&mut t, 2, 8192);
        assert!(!t.has_dead());
        if let Some(s) = t.slot_mut(2) {
            s.live = 0;
            s.pins = 1;
        }
        assert!(!t.has_dead());
        if let Some(s) = t.slot_mut(2) {
            s.pins = 0;
        }
        assert_eq!(t.dead_zones(), vec![2]);
        t.mark_reset(2);
        assert!(!t.has_dead());
    }

    /// A lease of a blob file's writer on `zone`, a blob zone.
    fn blob_lease(t: &mut ZoneTable, zone: u32, number: u64) -> Lease {
        if let Some(s) = t.slot_mut(zone) {
            s.class = crate::placement::BLOB_ZONE | 1;
        }
        let mut w = t.lease(zone, false).unwrap();
        w.lease.blob = Some(number);
        w.lease
    }

    #[test]
    fn a_blob_zone_records_its_ybiz_when_it_fills() {
        let mut t = table(4, (0, 0));
        let a = blob_lease(&mut t, 2, 7);
        assert!(t.end_write(a, 4096));
        t.release(a);
        let b = blob_lease(&mut t, 2, 9);
        assert!(t.end_write(b, 8192));
        assert_eq!(t.ybiz(), vec![], "not full yet");
        let s = t.slot(2).unwrap();
        assert_eq!((s.first_blob, s.youngest_blob), (Some(7), Some(9)));
        // An older file (a cleaner's copy) fills it: the youngest stays 9.
        t.release(b);
        let c = blob_lease(&mut t, 2, 3);
        assert!(!t.end_write(c, (1 << 16) - 3 * 4096));
        assert_eq!(t.ybiz(), vec![(2, 9)]);
        assert_eq!(t.take_unlogged_ybiz().len(), 1);
        assert!(t.take_unlogged_ybiz().is_empty());
        t.mark_reset(2);
        assert_eq!(t.ybiz(), vec![]);
        let s = t.slot(2).unwrap();
        assert_eq!((s.first_blob, s.youngest_blob), (None, None));
    }

    #[test]
    fn a_finished_blob_zone_records_its_ybiz_and_other_zones_never_do() {
        let mut t = table(4, (0, 0));
        let w = blob_lease(&mut t, 3, 12);
        t.end_write(w, 4096);
        t.release(w);
        t.mark_finished(3);
        assert_eq!(t.ybiz(), vec![(3, 12)]);
        // A zone of another class holding blob data (LIZA's) has no YBIZ.
        let mut w = t.lease(4, false).unwrap();
        w.lease.blob = Some(13);
        t.end_write(w.lease, 4096);
        t.release(w.lease);
        t.mark_finished(4);
        assert_eq!(t.ybiz(), vec![(3, 12)]);
        assert_eq!(t.slot(4).and_then(|s| s.first_blob), Some(13));
        // A failed write notes nothing.
        let w = blob_lease(&mut t, 5, 20);
        t.end_write(w, 0);
        assert_eq!(t.slot(5).and_then(|s| s.first_blob), None);
    }
}
