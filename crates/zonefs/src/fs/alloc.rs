//! The allocator: finds the zone a writer appends to next, and carries out the placement
//! policy's [`Decision`].
//!
//! A writer asks only when it holds no zone (its zone filled up, or its idle lease was
//! taken back), so a writer never waits while holding a zone: waiting cannot deadlock.
//! The order of attempts:
//! 1. a lease token ([`Budget`](super::budget::Budget)): free, or taken back from an idle
//!    writer, or wait until a write ends;
//! 2. the policy's decision: `Use(zone)`, or `OpenEmpty` (finish the zone it names, apply
//!    the finish threshold, take the lowest-numbered empty zone and tag it with the class);
//!    before asking, zones without live data are reset when no empty zone can be opened;
//! 3. when that cannot be done for lack of empty zones: any idle zone with room whatever
//!    its class (space beats placement quality), resetting dead zones, taking back an idle
//!    lease, waiting for a write in progress. A policy that keeps kinds of files apart
//!    (`PlacementPolicy::may_share`) gets a zone of another kind only after the resets
//!    and the lease taken back, before the wait;
//! 4. the zone cleaner (when inline or background cleaning is on), then a bounded wait for
//!    a zone to be freed (readers of deleted files letting go, other writers' jobs ending),
//!    one last look, then an out-of-space error (see [`Shared::reclaim_space`]).
//!
//! Before any of this, a writer's request notes the free space: below `gc_start` it runs
//! the cleaner inline or wakes the background cleaner. The cleaner's own requests (`gc`)
//! skip that, may use the reserved zones, never use the WAL's token, and fail at once
//! with out-of-space instead of asking for reclaiming (they come from the cleaner).

use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use crate::meta::{FileKind, ZonePlacement};
use crate::placement::{Decision, PlacementCtx, PlacementHint};

use super::error::{FsError, FsResult};
use super::shared::{Counters, Shared};
use super::table::{Lease, WriteSlot, ZoneTable};

/// How many cleaner runs that cleaned something one allocation may wait for.
const MAX_RECLAIM_ROUNDS: u32 = 64;

/// How long a writer waits for readers to let go of zones that hold only dead data (or,
/// in threaded use, for other writers' jobs to free zones) before it gets an
/// out-of-space error, counted from the last zone reset: while zones are still being
/// reset (the cleaner or a job freeing some), the device is not out of space yet, only
/// busy. Readers of deleted files are a running compaction's inputs or an iterator's
/// tables: the first let go within a job, the second may never (an iterator the writing
/// thread itself holds), hence a bound.
const READER_WAIT: Duration = Duration::from_secs(2);

/// A WAL writer waits longer than [`READER_WAIT`]: a flush or compaction that gives up
/// changes nothing and runs again after its table is deleted (which may free the very zone
/// the WAL needs), while a WAL append that gives up stops the database. So the jobs give
/// up first.
const WAL_WAIT: Duration = Duration::from_secs(4);

/// The longest a writer waits for a zone in all, however long others keep resetting
/// zones (other writers may take every zone freed).
const RECLAIM_LIMIT: Duration = Duration::from_secs(60);

/// Files that may use the reserved zones (all but the cleaner's last one): manifests (the
/// engine's MANIFEST and CURRENT). A few kilobytes, but a database whose manifest write
/// fails stops taking writes, and a writer holding the manifest must not wait for the
/// cleaner, which may be waiting for the manifest (a compaction it asked the engine for).
pub(crate) fn uses_reserve(kind: FileKind) -> bool {
    kind == FileKind::Manifest
}

/// What a writer that found no zone has spent on reclaiming so far.
#[derive(Default)]
pub(crate) struct Reclaim {
    /// How long it waits without a zone reset: [`READER_WAIT`], or [`WAL_WAIT`] for a WAL
    /// (set by [`Reclaim::for_kind`], its only constructor).
    patience: Duration,
    rounds: u32,
    /// Waited since the last zone reset seen.
    waited: Duration,
    /// Waited in all.
    total: Duration,
    /// The file system's zone resets when last looked.
    resets: Option<u64>,
    last_look: bool,
}

impl Reclaim {
    /// The budget of a writer of a `kind` file.
    pub(crate) fn for_kind(kind: FileKind) -> Reclaim {
        Reclaim {
            patience: match kind {
                FileKind::Wal => WAL_WAIT,
                _ => READER_WAIT,
            },
            ..Reclaim::default()
        }
    }

    /// Whether a writer that found no zone may wait once more, `resets` being the file
    /// system's zone resets so far: for its patience since the last reset it saw, and
    /// [`RECLAIM_LIMIT`] in all.
    fn may_wait(&mut self, resets: u64) -> bool {
        if self
            .resets
            .replace(resets)
            .is_some_and(|seen| seen != resets)
        {
            self.waited = Duration::ZERO;
        }
        self.waited < self.patience && self.total < RECLAIM_LIMIT
    }

    fn waited_for(&mut self, time: Duration) {
        self.waited += time;
        self.total += time;
    }
}

/// Who needs a zone.
#[derive(Clone, Copy)]
pub(crate) struct Request<'a> {
    pub name: &'a str,
    pub kind: FileKind,
    pub hint: &'a PlacementHint,
    /// The room the policy should look for (a block for writers, the extent for the
    /// cleaner's copies).
    pub min_capacity: u64,
    /// The zone cleaner writes copies.
    pub gc: bool,
    /// Zones are cleaned (inline or in the background): set by the allocator.
    pub cleaning: bool,
}

impl Request<'_> {
    fn wal(&self) -> bool {
        self.kind == FileKind::Wal && !self.gc
    }

    /// Empty zones this request must leave: the reserved zones for files, and while zones
    /// are cleaned at least one, so that the cleaner always has room to move a victim's
    /// valid data (without it, a device filled to the last block with partly dead zones
    /// could never be cleaned again). The cleaner itself may take them all; metadata
    /// files ([`uses_reserve`]) may take the reserved zones but the last.
    fn keep_empty(&self, zones: &ZoneTable) -> u32 {
        let last = u32::from(self.cleaning);
        match (self.gc, uses_reserve(self.kind)) {
            (true, _) => 0,
            (false, true) => last,
            (false, false) => zones.budget.reserved.max(last),
        }
    }

    /// The blob file number of a blob file's data: the YBIZ of the zones it goes to.
    fn blob(&self) -> Option<u64> {
        (self.kind == FileKind::Blob)
            .then_some(self.hint.blob_file)
            .flatten()
    }
}

/// A zone handed to a writer, in use from now on.
pub(crate) struct Grant {
    pub slot: WriteSlot,
    /// The class (and policy facts) of a zone opened empty for this writer: they must be
    /// logged before any file references the zone.
    pub opened: Option<ZonePlacement>,
}

enum Step {
    Granted(Grant),
    Retry,
    Wait,
    Reclaim,
    OutOfSpace,
}

type Zones<'a> = MutexGuard<'a, ZoneTable>;

impl Shared {
    pub fn acquire(&self, req: &Request<'_>) -> FsResult<Grant> {
        if !req.gc {
            self.before_allocation()?;
        }
        let req = &Request {
            cleaning: self.cleaning_enabled(),
            ..*req
        };
        let mut reclaim = Reclaim::for_kind(req.kind);
        loop {
            let zones = self.wait_for_token(self.lock_zones(), req.wal());
            let (zones, step) = self.step(zones, req)?;
            match step {
                Step::Granted(grant) => return Ok(grant),
                Step::Retry => drop(zones),
                Step::Wait => drop(self.wait(zones)),
                Step::Reclaim => {
                    drop(zones);
                    let mut meta = self.lock_meta();
                    self.reclaim_dead(&mut meta)?;
                }
                Step::OutOfSpace => {
                    drop(zones);
                    if req.gc {
                        return Err(self.out_of_space(req.name));
                    }
                    if !self.reclaim_space(&mut reclaim)? {
                        // Zones may have come free while it waited (a compaction ended):
                        // one more look before the error.
                        if reclaim.last_look {
                            return Err(self.out_of_space(req.name));
                        }
                        reclaim.last_look = true;
                    }
                }
            }
        }
    }

    /// Returns once the writer may take a lease, taking one back from an idle writer if
    /// that is what it takes, else waiting for a write to end.
    fn wait_for_token<'a>(&self, mut zones: Zones<'a>, wal: bool) -> Zones<'a> {
        loop {
            if zones.may_lease(wal) {
                return zones;
            }
            if let Some(zone) = zones.revocable_for(wal) {
                zones.revoke(zone);
                Counters::add(&self.counters.revocations, 1);
                return zones;
            }
            zones = self.wait(zones);
        }
    }

    /// When no zone can be found: the zone cleaner (inline, or the background one woken
    /// and waited for), then a wait for a zone to be freed: by readers that pin zones
    /// holding only dead data, or, with a background cleaner, by any other writer's job.
    /// True means "look again"; both are bounded by `budget`.
    pub(crate) fn reclaim_space(&self, budget: &mut Reclaim) -> FsResult<bool> {
        if budget.rounds < MAX_RECLAIM_ROUNDS && self.cleaner_reclaim()? {
            budget.rounds += 1;
            return Ok(true);
        }
        // Threaded (a background cleaner runs): other writers' jobs may free zones any
        // moment (a compaction deleting its inputs), so wait for that too.
        let others = self.background_cleaner();
        let zones = self.lock_zones();
        let waits = others || zones.pinned_dead() > 0;
        if !waits || !budget.may_wait(Counters::get(&self.counters.resets)) {
            return Ok(false);
        }
        let start = Instant::now();
        Counters::add(&self.counters.lease_waits, 1);
        let slice = READER_WAIT / 20;
        drop(self.zone_freed.wait_timeout(zones, slice));
        Counters::add(&self.counters.lease_wait_ns, elapsed_ns(start));
        budget.waited_for(start.elapsed());
        Ok(true)
    }

    fn wait<'a>(&self, zones: Zones<'a>) -> Zones<'a> {
        let start = Instant::now();
        Counters::add(&self.counters.lease_waits, 1);
        let zones = self
            .zone_freed
            .wait(zones)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Counters::add(&self.counters.lease_wait_ns, elapsed_ns(start));
        zones
    }

    fn step<'a>(&self, mut zones: Zones<'a>, req: &Request<'_>) -> FsResult<(Zones<'a>, Step)> {
        // Zones without live data are empty zones in waiting: when no empty zone can be
        // opened (none beyond the reserve, or no active resource), reset them before the
        // policy looks, so that "open an empty zone" never depends on a copy or a finish
        // that a reset would have made unnecessary.
        if !zones.can_open(req.keep_empty(&zones)) && zones.has_dead() {
            return Ok((zones, Step::Reclaim));
        }
        let step = match self.decide(&zones, req) {
            Decision::Use(zone) => self.carry_out_use(&mut zones, zone, req)?,
            Decision::OpenEmpty {
                class,
                policy,
                finish,
            } => {
                let tag = ZonePlacement { class, policy };
                self.carry_out_open(&mut zones, tag, finish, req)?
            }
        };
        let step = match step {
            Some(step) => step,
            None => self.fallback(&mut zones, req)?,
        };
        Ok((zones, step))
    }

    /// Asks the policy, and times it.
    fn decide(&self, zones: &ZoneTable, req: &Request<'_>) -> Decision {
        let views = zones.views(req.gc);
        let ctx = PlacementCtx {
            hint: req.hint,
            zones: &views,
            can_open: zones.can_open(req.keep_empty(zones)),
            min_capacity: req.min_capacity.max(self.block_size()),
            zone_capacity: self.geo.zone_capacity,
        };
        let start = Instant::now();
        let decision = self.policy.place(&ctx);
        Counters::add(&self.counters.placement_ns, elapsed_ns(start));
        Counters::add(&self.counters.placement_decisions, 1);
        decision
    }

    fn carry_out_use(
        &self,
        zones: &mut ZoneTable,
        zone: u32,
        req: &Request<'_>,
    ) -> FsResult<Option<Step>> {
        if !zones.usable(zone, self.block_size(), req.gc) {
            return Err(self.bad_decision(format!(
                "zone {zone} is not an idle active zone with room (for '{}')",
                req.name
            )));
        }
        Ok(grant(zones, zone, req, None))
    }

    /// `OpenEmpty`: nothing is finished unless an empty zone can really be taken after.
    fn carry_out_open(
        &self,
        zones: &mut ZoneTable,
        tag: ZonePlacement,
        finish: Option<u32>,
        req: &Request<'_>,
    ) -> FsResult<Option<Step>> {
        if !zones.empty_available(req.keep_empty(zones)) {
            return Ok(None);
        }
        if let Some(zone) = finish {
            if !zones.finishable(zone, req.gc) {
                return Err(self.bad_decision(format!(
                    "zone {zone} cannot be finished: it is not an idle active zone"
                )));
            }
            self.finish(zones, zone)?;
        }
        self.open_empty(zones, tag, req)
    }

    /// Applies the finish threshold, then takes the lowest-numbered empty zone if an
    /// active resource is free.
    fn open_empty(
        &self,
        zones: &mut ZoneTable,
        tag: ZonePlacement,
        req: &Request<'_>,
    ) -> FsResult<Option<Step>> {
        if let Some(percent) = self.opts.finish_threshold {
            for zone in zones.below_threshold(percent) {
                self.finish(zones, zone)?;
            }
        }
        if zones.active_count() >= zones.budget.active {
            return Ok(None);
        }
        Ok(zones
            .first_empty()
            .and_then(|zone| grant(zones, zone, req, Some(tag))))
    }

    /// When the decision could not be carried out: see the module comment, step 3.
    fn fallback(&self, zones: &mut ZoneTable, req: &Request<'_>) -> FsResult<Step> {
        let min = self.block_size();
        let shares = |class| self.policy.may_share(req.hint, class);
        if let Some(zone) = zones.any_with_room(min, req.gc, shares) {
            if let Some(step) = grant(zones, zone, req, None) {
                return Ok(step);
            }
        }
        if zones.empty_available(req.keep_empty(zones)) {
            if zones.active_count() >= zones.budget.active {
                if let Some(zone) = zones.cheapest_to_finish(req.gc) {
                    self.finish(zones, zone)?;
                }
            }
            // The class the policy gives such a zone (a blob zone stays one).
            let tag = ZonePlacement {
                class: self.policy.fallback_class(req.hint),
                policy: Vec::new(),
            };
            if let Some(step) = self.open_empty(zones, tag, req)? {
                return Ok(step);
            }
        }
        if zones.has_dead() {
            return Ok(Step::Reclaim);
        }
        // Another side's zone helps only by being finished for an empty zone.
        let opens = zones.empty_available(req.keep_empty(zones));
        if let Some(zone) = zones.idle_lease_with_room(min, |class| opens || shares(class)) {
            zones.revoke(zone);
            Counters::add(&self.counters.revocations, 1);
            return Ok(Step::Retry);
        }
        // Space beats keeping kinds of files apart.
        if let Some(zone) = zones.any_with_room(min, req.gc, |_| true) {
            if let Some(step) = grant(zones, zone, req, None) {
                return Ok(step);
            }
        }
        if zones.write_in_progress() {
            return Ok(Step::Wait);
        }
        Ok(Step::OutOfSpace)
    }

    /// The zone a writer (or the cleaner) writes to next, in use from now on: the one
    /// `lease` holds, or a new one from the allocator (then held by `lease`). A zone opened
    /// empty gets its class staged before anything is written to it.
    pub fn begin_write(&self, lease: &mut Option<Lease>, req: &Request<'_>) -> FsResult<WriteSlot> {
        if let Some(held) = *lease {
            if let Some(slot) = self.lock_zones().begin_write(held) {
                return Ok(slot);
            }
            *lease = None;
        }
        let grant = self.acquire(req);
        // Zones the allocation finished may have recorded their YBIZ.
        self.log_ybiz_quietly();
        let grant = grant?;
        *lease = Some(grant.slot.lease);
        if let Some(tag) = grant.opened {
            if let Err(e) = self.stage_zone_class(grant.slot.lease.zone, tag) {
                self.end_write(grant.slot.lease, 0);
                return Err(e);
            }
        }
        Ok(grant.slot)
    }

    /// Ends a write begun with [`Shared::begin_write`] and wakes waiting writers; false
    /// when the lease ended with it (the zone is full). Called with no lock held.
    pub fn end_write(&self, lease: Lease, written: u64) -> bool {
        let keeps = self.lock_zones().end_write(lease, written);
        self.zone_freed.notify_all();
        if !keeps {
            self.log_ybiz_quietly();
        }
        keeps
    }

    pub fn finish(&self, zones: &mut ZoneTable, zone: u32) -> FsResult<()> {
        self.dev
            .finish_zone(zone)
            .map_err(|e| FsError::device(format!("finish zone {zone}"), e))?;
        zones.mark_finished(zone);
        Counters::add(&self.counters.finishes, 1);
        Ok(())
    }

    pub fn out_of_space(&self, name: &str) -> FsError {
        let zones = self.lock_zones();
        FsError::OutOfSpace {
            name: name.to_string(),
            free: zones.free_bytes(),
            usable: zones.usable_bytes(),
            reserved_zones: zones.budget.reserved,
            pinned_zones: u32::try_from(zones.pinned_dead()).unwrap_or(u32::MAX),
        }
    }

    fn bad_decision(&self, reason: String) -> FsError {
        FsError::Placement {
            policy: self.policy.name(),
            reason,
        }
    }
}

fn grant(
    zones: &mut ZoneTable,
    zone: u32,
    req: &Request<'_>,
    tag: Option<ZonePlacement>,
) -> Option<Step> {
    let mut slot = zones.lease(zone, req.wal())?;
    slot.lease.blob = req.blob();
    if let (Some(tag), Some(s)) = (&tag, zones.slot_mut(zone)) {
        s.class = tag.class;
        s.policy.clone_from(&tag.policy);
        // The cleaner opened it, maybe as the last empty zone: other writers must not
        // take its room while the victim's copies still need it.
        s.cleaner_hold = req.gc;
    }
    Some(Step::Granted(Grant { slot, opened: tag }))
}

pub(crate) fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::budget::Budget;
    use crate::placement::PlacementHint;
    use zkv_zns::Geometry;

    #[test]
    fn the_cleaner_always_keeps_an_empty_zone_to_work_with() {
        let geo = Geometry::new(12, 1 << 16);
        let hint = PlacementHint::default();
        let req = |gc, cleaning| Request {
            name: "f",
            kind: FileKind::Sst,
            hint: &hint,
            min_capacity: 4096,
            gc,
            cleaning,
        };
        for reserved in [0, 2] {
            let budget = Budget::new(&geo, 2, reserved).unwrap();
            let zones = ZoneTable::from_report(&[], 2, geo.zone_capacity, budget);
            assert_eq!(req(false, false).keep_empty(&zones), reserved);
            assert_eq!(req(false, true).keep_empty(&zones), reserved.max(1));
            assert_eq!(req(true, true).keep_empty(&zones), 0);
        }
    }

    /// A writer that finds no zone gives up after `READER_WAIT` without a zone reset, but
    /// not while zones keep being reset (the device is busy, not full), and never after
    /// `RECLAIM_LIMIT` in all.
    #[test]
    fn a_writer_waits_for_space_while_zones_keep_being_reset() {
        let slice = READER_WAIT / 2;
        let mut quiet = Reclaim::for_kind(FileKind::Sst);
        assert!(quiet.may_wait(7));
        quiet.waited_for(slice);
        assert!(quiet.may_wait(7));
        quiet.waited_for(slice);
        assert!(!quiet.may_wait(7), "no reset for READER_WAIT: out of space");

        let mut busy = Reclaim::for_kind(FileKind::Sst);
        let mut resets = 0;
        while busy.may_wait(resets) {
            busy.waited_for(slice);
            resets += 1;
        }
        assert!(busy.total >= RECLAIM_LIMIT, "{:?}", busy.total);
        assert!(busy.total < RECLAIM_LIMIT + slice, "{:?}", busy.total);

        // A WAL outwaits the jobs: they give up (and free their tables' zones) first.
        let mut job = Reclaim::for_kind(FileKind::Sst);
        let mut wal = Reclaim::for_kind(FileKind::Wal);
        while job.may_wait(7) {
            job.waited_for(slice);
            assert!(wal.may_wait(7));
            wal.waited_for(slice);
        }
        assert!(wal.may_wait(7), "the WAL still waits when the job gives up");
        while wal.may_wait(7) {
            wal.waited_for(slice);
        }
        assert_eq!(wal.total, WAL_WAIT);
    }
}
