//! The zone cleaner (ZC): frees zones whose data is partly dead.
//!
//! - **When**: the free-space ratio is free / usable capacity (see `stats.rs`). A run
//!   starts when it is below `gc_start` and stops once it is at or above `gc_stop`, or when
//!   nothing more can be cleaned. Runs happen at explicit calls ([`ZoneFs::maybe_clean`],
//!   [`ZoneFs::clean_now`], [`ZoneFs::clean_one`]), inline in the allocator (when a writer
//!   asks for a zone while the ratio is below `gc_start`, and when it finds no zone at all),
//!   or in a background thread ([`ZoneFs::start_cleaner`]) that the allocator wakes. One
//!   run at a time.
//! - **Victim**: greedy: among the full (or finished) data zones worth cleaning, the one
//!   with the fewest valid bytes; ties go to the lowest zone number. A zone is worth
//!   cleaning when it holds valid data, has something to gain (valid < written), and its
//!   data is all recorded and settled (live = valid): no open writer has extents in it,
//!   synced or not, and no dropped data is waiting for its record to become durable. Zones
//!   a reader pins come last: their reset has to wait for the readers, so cleaning them
//!   copies without freeing anything for now.
//! - **What happens to the victim's valid data** ([`CleaningMode`]): `copy` moves every
//!   live extent; `compact` and `compensate` first give the victim's SSTs to the engine's
//!   [`CompactionRequester`], then copy whatever is still valid. Without a requester, both
//!   copy everything.
//! - **Moving**: extents are read and written again (tagged `gc_copy`) to a zone the
//!   placement policy chooses for the file (the engine's [`HintSource`] answer when the
//!   policy wants neighbourhoods, else the hint rebuilt from the file's metadata; size and
//!   `min_capacity` = the extent), split over several zones when needed, never into the
//!   victim. Then the device is synced, and one metadata batch replaces the moved extents
//!   of every file (`FileUpdate`). Only once that batch is durable are the victim's bytes
//!   released, and the existing eager reset resets the victim when no reader pins it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use zkv_zns::IoCategory;

use crate::meta::{Extent, FileId, FileKind, FsState, Record};
use crate::placement::{Lifetime, PlacementHint};

use super::alloc::{elapsed_ns, Request};
use super::error::{FsError, FsResult};
use super::hint_source::HintSource;
use super::shared::{Counters, Hook, MetaStore, Shared};
use super::stats::{FreeSpaceSample, InvalidRatios};
use super::table::{Cond, Lease, WriteSlot, ZoneTable};
use super::ZoneFs;

/// Bytes read from a victim at a time while moving an extent.
const COPY_CHUNK: u64 = 1 << 20;

/// How long a writer that found no zone waits for the cleaner to come back from the
/// engine's compaction callback before it gives up.
const CALLBACK_WAIT: Duration = Duration::from_secs(2);

/// What the cleaner does with a victim zone's valid data (DESIGN 6.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CleaningMode {
    /// Migrate every valid extent to another zone, then reset the victim.
    #[default]
    Copy,
    /// Full compaction: ask the engine to compact every valid SST of the victim; copy
    /// what remains.
    Compact,
    /// Compaction compensation (Prophet GC-CC): offer every valid SST of the victim; the
    /// engine compacts those its predicate selects; copy what remains.
    Compensate,
}

impl CleaningMode {
    pub const ALL: [CleaningMode; 3] = [
        CleaningMode::Copy,
        CleaningMode::Compact,
        CleaningMode::Compensate,
    ];

    /// The name used by options and reports: `copy`, `compact`, `compensate`.
    pub fn name(self) -> &'static str {
        match self {
            CleaningMode::Copy => "copy",
            CleaningMode::Compact => "compact",
            CleaningMode::Compensate => "compensate",
        }
    }

    pub fn from_name(name: &str) -> Option<CleaningMode> {
        CleaningMode::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl fmt::Display for CleaningMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A valid SST of a victim zone, offered to the engine for compaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionCandidate {
    pub name: String,
    pub level: Option<u8>,
    /// The file's size (as of its last sync).
    pub size: u64,
    /// The file's bytes in the victim zone (what compacting it frees there).
    pub victim_bytes: u64,
}

/// The one thing that flows up from the file layer: "compact these files now, if you
/// agree; tell me which you compacted".
///
/// Contract:
/// - `request` is called with no lock of the file system held and from the cleaning
///   thread; it may use the file system like any client (read the files, write compaction
///   output, delete the inputs). It must not wait for another thread that needs the
///   cleaner to free space: while it runs, writers that find no zone get an out-of-space
///   error instead of waiting for the cleaner.
/// - The engine deletes the files it compacted before it returns, and returns their names
///   (a subset of the candidates). A name it returns whose file still exists is copied
///   like any other valid data; files it does not return are copied.
/// - `mode` is [`CleaningMode::Compact`] (compact every candidate you can) or
///   [`CleaningMode::Compensate`] (compact only those your predicate selects, e.g. those
///   predicted to trigger their own compaction soon).
/// - The file system keeps the requester alive: an engine that owns the file system should
///   hand in an object holding a weak reference to itself.
pub trait CompactionRequester: Send + Sync {
    fn request(
        &self,
        victim: u32,
        files: &[CompactionCandidate],
        mode: CleaningMode,
    ) -> Vec<String>;
}

/// Why a cleaning run stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CleanStop {
    /// The free-space ratio is at or above `gc_stop`.
    Reached,
    /// `maybe_clean`: the free-space ratio was not below `gc_start`; nothing done.
    #[default]
    NotNeeded,
    /// No full zone is worth cleaning (every full zone is entirely valid, held by an open
    /// writer, or was already cleaned in this run).
    NoVictim,
    /// The victim's valid data does not fit in the room left (the reserve included).
    NoRoom,
    /// Not run: the calling thread is the cleaner itself, or the running cleaner is inside
    /// the engine's compaction callback.
    Busy,
}

/// What one victim cost and gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VictimReport {
    pub zone: u32,
    /// Valid bytes when it was picked.
    pub valid: u64,
    /// Valid bytes moved to other zones.
    pub copied_bytes: u64,
    /// Bytes freed by the engine's compactions.
    pub compacted_bytes: u64,
    /// Files whose extents were moved.
    pub files_copied: u32,
    /// No valid data is left in the zone.
    pub cleaned: bool,
    /// The zone was reset already (false while a reader still pins it).
    pub reset: bool,
    /// Its valid data did not fit in the room left: nothing was changed.
    pub no_room: bool,
}

/// What a cleaning run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanReport {
    pub victims: u32,
    /// Victims left without valid data.
    pub cleaned: u32,
    /// Victims reset during the run.
    pub reset: u32,
    pub copied_bytes: u64,
    pub compacted_bytes: u64,
    pub stop: CleanStop,
}

impl CleanReport {
    fn add(&mut self, v: &VictimReport) {
        self.victims += 1;
        self.cleaned += u32::from(v.cleaned);
        self.reset += u32::from(v.reset);
        self.copied_bytes += v.copied_bytes;
        self.compacted_bytes += v.compacted_bytes;
    }
}

/// When a writer cleans zones itself (no background cleaner).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InlineCleaning {
    /// Never: without a background cleaner, a writer that finds no zone fails.
    #[default]
    Off,
    /// Only a writer that finds no zone cleans, before it gives up; a writer that asks for
    /// a zone below `gc_start` leaves a request ([`ZoneFs::take_cleaning_request`]). For a
    /// caller that runs the cleaner itself, like the engine's deterministic mode, whose
    /// cleaner is a virtual thread.
    OutOfSpace,
    /// A writer that asks for a zone while the free-space ratio is below `gc_start` cleans
    /// first (a whole run, to `gc_stop`), and a writer that finds no zone cleans before it
    /// gives up.
    Eager,
}

/// Coordination of cleaning runs, shared with the background thread.
#[derive(Debug, Default)]
struct RunState {
    /// The thread running a cleaning run.
    running: Option<ThreadId>,
    /// That run is inside the engine's compaction callback.
    in_callback: bool,
    runs_started: u64,
    runs_done: u64,
    /// Victims left without valid data, ever.
    progress: u64,
    inline: InlineCleaning,
    /// A background thread is alive.
    background: bool,
    wake: bool,
    /// `InlineCleaning::OutOfSpace`: a writer asked for a zone below `gc_start`, for the
    /// caller that runs the cleaner to see (`ZoneFs::take_cleaning_request`).
    wake_caller: bool,
    /// A writer found no zone and waits: the next run cleans at least one victim.
    wake_reclaim: bool,
    stop: bool,
    last_error: Option<String>,
}

#[derive(Debug, Default)]
struct Signal {
    state: Mutex<RunState>,
    changed: Condvar,
}

impl Signal {
    fn lock(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, st: MutexGuard<'a, RunState>) -> MutexGuard<'a, RunState> {
        self.changed
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, f: impl FnOnce(&mut RunState)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }

    fn is_cleaning_thread(&self) -> bool {
        self.lock().running == Some(std::thread::current().id())
    }

    /// Writer side, background mode: wake the thread for a run that cleans at least one
    /// victim, and wait until a victim was cleaned or that run ended. While the cleaner is
    /// inside the engine's callback, waits for the callback to end first, but at most
    /// [`CALLBACK_WAIT`]: the engine may need this writer (a lock it holds).
    fn wake_and_wait(&self) -> bool {
        let mut st = self.lock();
        let deadline = Instant::now() + CALLBACK_WAIT;
        while st.background && st.in_callback {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        if !st.background {
            return false;
        }
        let progress = st.progress;
        let target = st.runs_started + 1;
        st.wake = true;
        st.wake_reclaim = true;
        self.changed.notify_all();
        while st.background && !st.in_callback && st.progress == progress && st.runs_done < target {
            st = self.wait(st);
        }
        st.progress != progress
    }
}

/// The cleaner's part of the shared state of a mounted file system.
#[derive(Default)]
pub(crate) struct CleanerCore {
    signal: Arc<Signal>,
    requester: Hook<dyn CompactionRequester>,
    /// The engine's hints for migrated files (`hint_source.rs`).
    pub(super) hints: Hook<dyn HintSource>,
    samples: Mutex<Vec<FreeSpaceSample>>,
}

impl CleanerCore {
    /// The file system goes away: a background thread stops.
    pub fn shutdown(&self) {
        self.signal.update(|st| st.stop = true);
    }
}

/// One cleaning run at a time: held while a run goes on.
struct RunGuard<'a> {
    signal: &'a Signal,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.signal.update(|st| {
            st.running = None;
            st.in_callback = false;
            st.runs_done += 1;
        });
    }
}

/// Marks the run as inside the engine's callback.
struct CallbackGuard<'a> {
    signal: &'a Signal,
}

impl Drop for CallbackGuard<'_> {
    fn drop(&mut self) {
        self.signal.update(|st| st.in_callback = false);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunKind {
    /// Only if free < gc_start; until free ≥ gc_stop.
    Maybe,
    /// Until free ≥ gc_stop.
    Now,
    /// A writer found no zone: at least one victim, then until free ≥ gc_stop.
    Reclaim,
}

/// A file with valid data in the victim.
#[derive(Clone, Debug)]
struct Live {
    id: FileId,
    name: String,
    kind: FileKind,
    level: Option<u8>,
    lifetime: u8,
    size: u64,
    /// A blob file's number.
    blob_file: Option<u64>,
    /// Its extents in the victim, in file order.
    extents: Vec<Extent>,
}

impl Live {
    fn victim_bytes(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }

    /// The placement hint the file's metadata still tells (without a neighbourhood).
    fn hint(&self) -> PlacementHint {
        PlacementHint {
            kind: Some(self.kind),
            level: self.level,
            lifetime: Lifetime::from_code(self.lifetime).unwrap_or_default(),
            size: self.size,
            blob_file: self.blob_file,
            ..Default::default()
        }
    }
}

/// A victim as picked: its epoch tells it from the same zone reset and reused since.
struct Picked {
    zone: u32,
    epoch: u64,
    valid: u64,
    files: Vec<Live>,
}

/// An extent moved: where it was, and the pieces it became.
type Moved = (Extent, Vec<Extent>);

/// The greedy victim: see the module comment.
fn victim_of(meta: &MetaStore, zones: &ZoneTable, exclude: &BTreeSet<u32>) -> Option<u32> {
    let state = &meta.state;
    let written_to: BTreeSet<u32> = meta
        .writing
        .iter()
        .filter_map(|id| state.file(*id))
        .flat_map(|m| m.extents.iter().map(|e| e.zone))
        .collect();
    zones
        .zones()
        .filter(|(z, s)| {
            let valid = state.valid_bytes(*z);
            s.cond == Cond::Full
                && s.owner.is_none()
                && !exclude.contains(z)
                && !written_to.contains(z)
                && valid > 0
                && valid < s.written
                && s.live == valid
        })
        .min_by_key(|(z, s)| (s.pins > 0, s.live, *z))
        .map(|(z, _)| z)
}

/// The files with valid data in `zone`, in the order of their first extent there.
fn live_files(state: &FsState, zone: u32) -> Vec<Live> {
    let mut seen = BTreeSet::new();
    let order: Vec<FileId> = state
        .zone_extents(zone)
        .filter_map(|(_, id)| seen.insert(id).then_some(id))
        .collect();
    order
        .into_iter()
        .filter_map(|id| {
            let m = state.file(id)?;
            Some(Live {
                id,
                name: m.name.clone(),
                kind: m.kind,
                level: m.level,
                lifetime: m.lifetime,
                size: m.size,
                blob_file: m.blob_number(),
                extents: m
                    .extents
                    .iter()
                    .filter(|e| e.zone == zone)
                    .copied()
                    .collect(),
            })
        })
        .collect()
}

fn round_up(len: u64, block: u64) -> u64 {
    len.div_ceil(block) * block
}

impl Shared {
    fn begin_run(&self) -> Option<RunGuard<'_>> {
        let signal = &*self.cleaner.signal;
        let me = std::thread::current().id();
        let mut st = signal.lock();
        loop {
            match st.running {
                None => break,
                Some(t) if t == me => return None,
                Some(_) if st.in_callback => return None,
                Some(_) => st = signal.wait(st),
            }
        }
        st.running = Some(me);
        st.runs_started += 1;
        Some(RunGuard { signal })
    }

    fn below(&self, percent: u8) -> bool {
        self.lock_zones().free_below(percent)
    }

    fn clean_run(&self, kind: RunKind) -> FsResult<CleanReport> {
        self.check_writable(|| "clean zones".to_string())?;
        let mut report = CleanReport::default();
        if kind == RunKind::Maybe && !self.below(self.opts.gc_start) {
            return Ok(report);
        }
        let Some(_guard) = self.begin_run() else {
            report.stop = CleanStop::Busy;
            return Ok(report);
        };
        if kind == RunKind::Maybe && !self.below(self.opts.gc_start) {
            return Ok(report);
        }
        Counters::add(&self.counters.gc_runs, 1);
        self.sample();
        let result = self.clean_loop(kind, &mut report);
        self.sample();
        result.map(|()| report)
    }

    fn clean_loop(&self, kind: RunKind, report: &mut CleanReport) -> FsResult<()> {
        self.reclaim_dead(&mut self.lock_meta())?;
        let mut visited = BTreeSet::new();
        loop {
            let forced = kind == RunKind::Reclaim && report.victims == 0;
            if !forced && !self.below(self.opts.gc_stop) {
                report.stop = CleanStop::Reached;
                return Ok(());
            }
            let Some(picked) = self.select_victim(&visited) else {
                report.stop = CleanStop::NoVictim;
                return Ok(());
            };
            visited.insert(picked.zone);
            let v = self.clean_victim(picked)?;
            report.add(&v);
            if v.no_room {
                report.stop = CleanStop::NoRoom;
                return Ok(());
            }
        }
    }

    /// Picks the victim and marks it, in one step under the locks.
    fn select_victim(&self, exclude: &BTreeSet<u32>) -> Option<Picked> {
        let meta = self.lock_meta();
        let mut zones = self.lock_zones();
        let zone = victim_of(&meta, &zones, exclude)?;
        let slot = zones.slot_mut(zone)?;
        slot.victim = true;
        let epoch = slot.epoch;
        Counters::add(&self.counters.gc_victims, 1);
        Some(Picked {
            zone,
            epoch,
            valid: meta.state.valid_bytes(zone),
            files: live_files(&meta.state, zone),
        })
    }

    fn clean_victim(&self, picked: Picked) -> FsResult<VictimReport> {
        let Picked {
            zone,
            epoch,
            valid,
            mut files,
        } = picked;
        let mut rep = VictimReport {
            zone,
            valid,
            ..Default::default()
        };
        if self.opts.gc_mode != CleaningMode::Copy {
            if let Some(freed) = self.request_compaction(zone, &files) {
                rep.compacted_bytes = freed;
                match self.regather(zone, epoch) {
                    Some(left) => files = left,
                    None => {
                        // Every valid byte went away and the victim was reset meanwhile.
                        rep.cleaned = true;
                        rep.reset = true;
                        self.note_progress();
                        return Ok(rep);
                    }
                }
            }
        }
        if files.is_empty() {
            self.reclaim_dead(&mut self.lock_meta())?;
            rep.cleaned = true;
            rep.reset = self.was_reset(zone, epoch);
            self.note_progress();
            return Ok(rep);
        }
        self.copy_victim(zone, epoch, files, &mut rep)?;
        if rep.cleaned {
            self.note_progress();
        }
        Ok(rep)
    }

    /// The victim's files after the engine's callback; `None` if it was reset meanwhile.
    fn regather(&self, zone: u32, epoch: u64) -> Option<Vec<Live>> {
        let meta = self.lock_meta();
        let zones = self.lock_zones();
        let slot = zones.slot(zone)?;
        (slot.epoch == epoch && slot.cond == Cond::Full).then(|| live_files(&meta.state, zone))
    }

    fn was_reset(&self, zone: u32, epoch: u64) -> bool {
        self.lock_zones()
            .slot(zone)
            .is_none_or(|s| s.epoch != epoch)
    }

    /// The victim keeps its valid data after all: it is not a victim any more.
    fn unmark(&self, zone: u32, epoch: u64) {
        if let Some(s) = self.lock_zones().slot_mut(zone) {
            if s.epoch == epoch {
                s.victim = false;
            }
        }
    }

    fn note_progress(&self) {
        self.cleaner.signal.update(|st| st.progress += 1);
    }

    /// Offers the victim's SSTs to the engine; returns the bytes its compactions freed in
    /// the victim, or `None` without a requester (everything is copied then).
    fn request_compaction(&self, zone: u32, files: &[Live]) -> Option<u64> {
        let requester = self.cleaner.requester.get()?;
        let ssts: Vec<&Live> = files.iter().filter(|f| f.kind == FileKind::Sst).collect();
        if ssts.is_empty() {
            return Some(0);
        }
        let candidates: Vec<CompactionCandidate> = ssts
            .iter()
            .map(|f| CompactionCandidate {
                name: f.name.clone(),
                level: f.level,
                size: f.size,
                victim_bytes: f.victim_bytes(),
            })
            .collect();
        let compacted: BTreeSet<String> = {
            let signal = &*self.cleaner.signal;
            signal.update(|st| st.in_callback = true);
            let _guard = CallbackGuard { signal };
            requester
                .request(zone, &candidates, self.opts.gc_mode)
                .into_iter()
                .collect()
        };
        Counters::add(&self.counters.gc_compaction_requests, 1);
        let meta = self.lock_meta();
        let freed = ssts
            .iter()
            .filter(|f| compacted.contains(&f.name) && meta.state.file(f.id).is_none())
            .map(|f| f.victim_bytes())
            .sum();
        Counters::add(&self.counters.gc_compacted_bytes, freed);
        Some(freed)
    }

    /// Moves every extent of `files` out of the victim and records the new extents.
    fn copy_victim(
        &self,
        zone: u32,
        epoch: u64,
        files: Vec<Live>,
        rep: &mut VictimReport,
    ) -> FsResult<()> {
        let block = self.block_size();
        let need: u64 = files
            .iter()
            .flat_map(|f| &f.extents)
            .map(|e| round_up(e.len, block))
            .sum();
        if self.lock_zones().room_with_reserve() < need {
            rep.no_room = true;
            self.unmark(zone, epoch);
            return Ok(());
        }
        let mut mover = Mover::new(self, zone, epoch);
        let mut moved = Vec::with_capacity(files.len());
        let mut failure = None;
        for f in files {
            if self.was_reset(zone, epoch) {
                // Every file of the victim was deleted meanwhile: nothing left to move.
                mover.abandon();
                rep.cleaned = true;
                rep.reset = true;
                return Ok(());
            }
            if self.lock_meta().state.file(f.id).is_none() {
                continue;
            }
            match mover.move_file(&f) {
                Ok(extents) => moved.push((f, extents)),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        mover.release_lease();
        if failure.is_none() {
            if let Err(e) = self.dev.sync() {
                failure = Some(FsError::device(
                    format!("sync the data moved out of zone {zone}"),
                    e,
                ));
            }
        }
        if let Some(e) = failure {
            mover.abandon();
            self.unmark(zone, epoch);
            if e.is_out_of_space() {
                rep.no_room = true;
                return Ok(());
            }
            return Err(e);
        }
        self.commit_moves(zone, epoch, moved, mover, rep)
    }

    /// Replaces the moved extents of every file still as it was, in one metadata batch;
    /// once that is durable, releases the victim's bytes and resets it if it can.
    fn commit_moves(
        &self,
        zone: u32,
        epoch: u64,
        moved: Vec<(Live, Vec<Moved>)>,
        mover: Mover<'_>,
        rep: &mut VictimReport,
    ) -> FsResult<()> {
        let mut meta = self.lock_meta();
        let mut recs = Vec::new();
        let mut kept = Vec::new();
        for (f, extents) in moved {
            // A file deleted (or replaced) meanwhile keeps nothing; a file cannot get a
            // writer again, so its extents are otherwise as they were.
            let Some(current) = meta.state.file(f.id) else {
                continue;
            };
            if !extents.iter().all(|(old, _)| current.extents.contains(old)) {
                continue;
            }
            let mut updated = current.clone();
            updated.extents = current
                .extents
                .iter()
                .flat_map(|e| match extents.iter().find(|(old, _)| old == e) {
                    Some((_, pieces)) => pieces.clone(),
                    None => vec![*e],
                })
                .collect();
            let blob = updated.kind == FileKind::Blob;
            recs.push(Record::FileUpdate {
                id: f.id,
                meta: updated,
            });
            kept.push((blob, extents));
        }
        if !recs.is_empty() {
            // On failure the batch may or may not be durable: the copies and the victim
            // both stay live (a mount recomputes them), like a writer's uncertain sync.
            meta.commit(&recs, &|| {
                format!("record the files moved out of zone {zone}")
            })?;
        }
        for rec in &recs {
            if let Record::FileUpdate { id, meta: moved } = rec {
                meta.readers.follow(*id, &moved.extents, self);
            }
        }
        let mut release = mover.into_written();
        let (mut copied, mut blob_copied) = (0, 0);
        for (blob, extents) in &kept {
            for (old, pieces) in extents {
                copied += old.len;
                blob_copied += if *blob { old.len } else { 0 };
                for p in pieces {
                    if let Some(w) = release.get_mut(&p.zone) {
                        *w = w.saturating_sub(p.len);
                    }
                }
            }
        }
        if let Some(s) = self.lock_zones().slot_mut(zone) {
            if s.epoch == epoch {
                s.live = s.live.saturating_sub(copied);
                s.copied += copied;
            }
        }
        self.release_live(release);
        Counters::add(&self.counters.gc_copy_bytes, copied);
        Counters::add(&self.counters.gc_blob_copy_bytes, blob_copied);
        rep.copied_bytes = copied;
        rep.files_copied = kept.len() as u32;
        rep.cleaned = self.was_reset(zone, epoch) || meta.state.valid_bytes(zone) == 0;
        self.reclaim_dead(&mut meta)?;
        drop(meta);
        rep.reset = self.was_reset(zone, epoch);
        Ok(())
    }

    /// Bytes the device wrote since this mount, every category.
    fn device_written(&self) -> u64 {
        let now = self.dev.stats();
        now.write_bytes
            .iter()
            .zip(self.baseline.write_bytes.iter())
            .map(|(n, b)| n.saturating_sub(*b))
            .sum()
    }

    fn sample(&self) -> FreeSpaceSample {
        let t = self.device_written();
        let free_ratio = self.lock_zones().free_ratio();
        let s = FreeSpaceSample {
            t,
            free_ratio,
            gc_copy_bytes: Counters::get(&self.counters.gc_copy_bytes),
        };
        self.cleaner
            .samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(s);
        s
    }

    fn note_blocking(&self, start: Instant) {
        Counters::add(&self.counters.gc_blocking_ns, elapsed_ns(start));
        Counters::add(&self.counters.gc_blocking_events, 1);
    }

    /// Inline cleaning, and whether a background cleaner runs.
    fn triggers(&self) -> (InlineCleaning, bool) {
        let st = self.cleaner.signal.lock();
        (st.inline, st.background)
    }

    /// A background cleaner thread runs.
    pub(crate) fn background_cleaner(&self) -> bool {
        self.cleaner.signal.lock().background
    }

    pub(crate) fn cleaning_enabled(&self) -> bool {
        let (inline, background) = self.triggers();
        inline != InlineCleaning::Off || background
    }

    /// A writer asks for a zone: below `gc_start`, clean inline (eager inline cleaning) or
    /// wake the background cleaner.
    pub(crate) fn before_allocation(&self) -> FsResult<()> {
        let (inline, background) = self.triggers();
        let asks = background || inline != InlineCleaning::Off;
        if !asks || !self.below(self.opts.gc_start) {
            return Ok(());
        }
        if background {
            self.cleaner.signal.update(|st| st.wake = true);
            return Ok(());
        }
        if inline == InlineCleaning::OutOfSpace {
            self.cleaner.signal.update(|st| st.wake_caller = true);
            return Ok(());
        }
        if self.cleaner.signal.is_cleaning_thread() {
            return Ok(());
        }
        let start = Instant::now();
        let result = self.clean_run(RunKind::Maybe);
        self.note_blocking(start);
        result.map(|_| ())
    }

    /// A writer found no zone at all: clean (inline) or wait for the background cleaner.
    /// True when a victim was cleaned meanwhile ("look again").
    pub(crate) fn cleaner_reclaim(&self) -> FsResult<bool> {
        let (inline, background) = self.triggers();
        let inline = inline != InlineCleaning::Off;
        if !(inline || background) || self.cleaner.signal.is_cleaning_thread() {
            return Ok(false);
        }
        let start = Instant::now();
        let result = if background {
            Ok(self.cleaner.signal.wake_and_wait())
        } else {
            self.clean_run(RunKind::Reclaim).map(|r| r.cleaned > 0)
        };
        self.note_blocking(start);
        result
    }
}

/// Writes the cleaner's copies: a lease like a writer's (non-WAL), given back after each
/// extent so that the policy decides again for the next one.
struct Mover<'a> {
    sh: &'a Shared,
    victim: u32,
    /// The victim's epoch: the zone may be reset (all its files deleted) and reused while
    /// the mover works; only the victim itself must never receive copies.
    epoch: u64,
    lease: Option<Lease>,
    /// Bytes written per zone (live in their zones until released).
    written: BTreeMap<u32, u64>,
}

impl<'a> Mover<'a> {
    fn new(sh: &'a Shared, victim: u32, epoch: u64) -> Mover<'a> {
        Mover {
            sh,
            victim,
            epoch,
            lease: None,
            written: BTreeMap::new(),
        }
    }

    /// Moves the file's extents in the victim, placed with the engine's hint when the policy
    /// wants one (asked with no lock and no lease held), each extent as a file of its own
    /// size.
    fn move_file(&mut self, f: &Live) -> FsResult<Vec<Moved>> {
        let mut hint = self.sh.migration_hint(&f.name, f.hint());
        let mut out = Vec::with_capacity(f.extents.len());
        for e in &f.extents {
            hint.size = round_up(e.len, self.sh.block_size());
            let pieces = self.move_extent(f, &hint, *e);
            self.release_lease();
            out.push((*e, pieces?));
        }
        Ok(out)
    }

    /// Copies one extent (whole blocks: a trimmed extent ends inside its last block) and
    /// returns the extents it became; only the last may end inside a block.
    fn move_extent(&mut self, f: &Live, hint: &PlacementHint, e: Extent) -> FsResult<Vec<Extent>> {
        let sh = self.sh;
        let total = round_up(e.len, sh.block_size());
        let base = sh.geo.zone_start(self.victim) + e.offset;
        let mut pieces: Vec<Extent> = Vec::new();
        let mut done = 0;
        while done < total {
            let n = (total - done).min(COPY_CHUNK);
            let mut buf = vec![0u8; n as usize];
            sh.dev
                .read(base + done, &mut buf, IoCategory::GcCopy)
                .map_err(|err| {
                    FsError::device(
                        format!(
                            "read '{}' in zone {} at offset {} to move it",
                            f.name,
                            self.victim,
                            e.offset + done
                        ),
                        err,
                    )
                })?;
            let mut off = 0;
            while off < n {
                let slot = self.zone_for(f, hint, total - done - off)?;
                let k = slot.room.min(n - off);
                let zone = slot.lease.zone;
                let addr = sh.geo.zone_start(zone) + slot.wp;
                let result = sh.dev.write(
                    addr,
                    &buf[off as usize..(off + k) as usize],
                    IoCategory::GcCopy,
                );
                let ok = result.is_ok();
                if !sh.end_write(slot.lease, if ok { k } else { 0 }) {
                    self.lease = None;
                }
                result.map_err(|err| {
                    FsError::device(
                        format!("move '{}' to zone {zone} at offset {}", f.name, slot.wp),
                        err,
                    )
                })?;
                *self.written.entry(zone).or_default() += k;
                let len = k.min(e.len - (done + off));
                match pieces.last_mut() {
                    Some(last) if last.zone == zone && last.end() == slot.wp => last.len += len,
                    _ => pieces.push(Extent {
                        zone,
                        offset: slot.wp,
                        len,
                    }),
                }
                off += k;
            }
            done += n;
        }
        Ok(pieces)
    }

    /// The zone to write to: the lease held, or a new one from the policy for the file,
    /// looking for room for the rest of the extent.
    fn zone_for(&mut self, f: &Live, hint: &PlacementHint, rest: u64) -> FsResult<WriteSlot> {
        let req = Request {
            name: &f.name,
            kind: f.kind,
            hint,
            min_capacity: rest.min(self.sh.geo.zone_capacity),
            gc: true,
            cleaning: false,
        };
        let slot = self.sh.begin_write(&mut self.lease, &req)?;
        let zone = slot.lease.zone;
        let same = |s: &super::table::Slot| s.epoch == self.epoch;
        if zone == self.victim && self.sh.lock_zones().slot(zone).is_some_and(same) {
            self.sh.end_write(slot.lease, 0);
            return Err(FsError::Inconsistent {
                zone,
                reason: "the allocator gave the cleaner its own victim".into(),
            });
        }
        Ok(slot)
    }

    fn release_lease(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.sh.lock_zones().release(lease);
            self.sh.zone_freed.notify_all();
        }
    }

    /// Nothing will reference the copies: they are dead space now.
    fn abandon(mut self) {
        self.release_lease();
        let written = std::mem::take(&mut self.written);
        self.sh.release_live(written);
        self.sh.reclaim_quietly(&mut self.sh.lock_meta());
    }

    fn into_written(mut self) -> BTreeMap<u32, u64> {
        self.release_lease();
        std::mem::take(&mut self.written)
    }
}

impl Drop for Mover<'_> {
    fn drop(&mut self) {
        self.release_lease();
    }
}

/// The background cleaner: stops (and is joined) when dropped.
pub struct CleanerThread {
    signal: Arc<Signal>,
    handle: Option<JoinHandle<()>>,
}

impl CleanerThread {
    /// Stops the thread after its current run and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    /// The error of the last run that failed, if any (a failed run does not stop the
    /// thread; the next wake-up tries again).
    pub fn last_error(&self) -> Option<String> {
        self.signal.lock().last_error.clone()
    }

    fn halt(&mut self) {
        self.signal.update(|st| st.stop = true);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for CleanerThread {
    fn drop(&mut self) {
        self.halt();
    }
}

impl fmt::Debug for CleanerThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CleanerThread")
            .field("running", &self.handle.is_some())
            .finish()
    }
}

/// Marks the thread gone however it ends, so that nobody waits for it.
struct Alive<'a>(&'a Signal);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.update(|st| {
            st.background = false;
            st.wake = false;
            st.wake_reclaim = false;
        });
    }
}

fn background_loop(signal: &Signal, fs: &Weak<Shared>) {
    let _alive = Alive(signal);
    loop {
        let reclaim = {
            let mut st = signal.lock();
            loop {
                if st.stop {
                    return;
                }
                if st.wake {
                    st.wake = false;
                    break std::mem::take(&mut st.wake_reclaim);
                }
                st = signal.wait(st);
            }
        };
        let Some(shared) = fs.upgrade() else {
            return;
        };
        let kind = if reclaim {
            RunKind::Reclaim
        } else {
            RunKind::Maybe
        };
        if let Err(e) = shared.clean_run(kind) {
            signal.lock().last_error = Some(e.to_string());
        }
    }
}

impl ZoneFs {
    /// Cleans if the free-space ratio is below `gc_start`, until it is at or above
    /// `gc_stop` or nothing more can be cleaned.
    pub fn maybe_clean(&self) -> FsResult<CleanReport> {
        self.shared.clean_run(RunKind::Maybe)
    }

    /// Cleans until the free-space ratio is at or above `gc_stop` (whatever `gc_start`
    /// says) or nothing more can be cleaned.
    pub fn clean_now(&self) -> FsResult<CleanReport> {
        self.shared.clean_run(RunKind::Now)
    }

    /// Cleans one victim, whatever the thresholds; `None` if no zone is worth cleaning
    /// (or this thread is the cleaner, or the cleaner is inside the engine's callback).
    pub fn clean_one(&self) -> FsResult<Option<VictimReport>> {
        self.clean_one_excluding(&BTreeSet::new())
    }

    /// [`ZoneFs::clean_one`], never taking a zone of `exclude` as the victim (a caller's
    /// own cleaning run visits each zone once, as the built-in runs do).
    pub fn clean_one_excluding(&self, exclude: &BTreeSet<u32>) -> FsResult<Option<VictimReport>> {
        let sh = &self.shared;
        sh.check_writable(|| "clean a zone".to_string())?;
        let Some(_guard) = sh.begin_run() else {
            return Ok(None);
        };
        Counters::add(&sh.counters.gc_runs, 1);
        sh.reclaim_dead(&mut sh.lock_meta())?;
        let result = match sh.select_victim(exclude) {
            Some(picked) => sh.clean_victim(picked).map(Some),
            None => Ok(None),
        };
        sh.sample();
        result
    }

    /// The zone the cleaner would pick now, if any.
    pub fn pick_victim(&self) -> Option<u32> {
        self.pick_victim_excluding(&BTreeSet::new())
    }

    /// The zone the cleaner would pick now outside `exclude`, if any.
    pub fn pick_victim_excluding(&self, exclude: &BTreeSet<u32>) -> Option<u32> {
        let meta = self.shared.lock_meta();
        let zones = self.shared.lock_zones();
        victim_of(&meta, &zones, exclude)
    }

    /// Eager inline cleaning ([`InlineCleaning::Eager`]) on or off: a writer that asks for
    /// a zone while the free-space ratio is below `gc_start` cleans first, and a writer that
    /// finds no zone cleans before it gives up. Off by default. A running background
    /// cleaner takes precedence.
    pub fn set_inline_cleaning(&self, on: bool) {
        let mode = if on {
            InlineCleaning::Eager
        } else {
            InlineCleaning::Off
        };
        self.set_inline_mode(mode);
    }

    /// Whether a writer asked for a zone while the free-space ratio was below `gc_start`
    /// since the last call; clears it. With [`InlineCleaning::OutOfSpace`] this is when a
    /// background cleaner would have been woken: the caller that runs the cleaner itself
    /// starts a run then.
    pub fn take_cleaning_request(&self) -> bool {
        std::mem::take(&mut self.shared.cleaner.signal.lock().wake_caller)
    }

    /// Whether the free-space ratio is below `percent` (the cleaner's own test).
    pub fn free_below(&self, percent: u8) -> bool {
        self.shared.below(percent)
    }

    /// The writers' space stall (threaded engines): while the free-space ratio is below
    /// half of `gc_start` and the background cleaner cleans victims, waits for it, at most
    /// `limit`. A writer that outruns the cleaner would otherwise take the zones it frees
    /// until none is left. Returns whether it waited. Without a background cleaner, or
    /// once a run ends without cleaning anything, it returns at once.
    pub fn wait_for_cleaner(&self, limit: Duration) -> bool {
        let low = self.shared.opts.gc_start / 2;
        let start = Instant::now();
        let mut waited = false;
        while self.shared.below(low) && start.elapsed() < limit {
            if self.shared.cleaner.signal.is_cleaning_thread()
                || !self.shared.cleaner.signal.wake_and_wait()
            {
                break;
            }
            waited = true;
        }
        waited
    }

    /// Sets when writers clean inline ([`InlineCleaning`]).
    pub fn set_inline_mode(&self, mode: InlineCleaning) {
        self.shared.cleaner.signal.update(|st| st.inline = mode);
    }

    /// When writers clean inline.
    pub fn inline_mode(&self) -> InlineCleaning {
        self.shared.cleaner.signal.lock().inline
    }

    /// Whether inline cleaning is on, in either mode ([`ZoneFs::set_inline_cleaning`],
    /// [`ZoneFs::set_inline_mode`]).
    pub fn inline_cleaning(&self) -> bool {
        self.inline_mode() != InlineCleaning::Off
    }

    /// Starts the background cleaner: a thread woken when a writer asks for a zone while
    /// the free-space ratio is below `gc_start` (and when a writer finds no zone, which then
    /// waits for it). It sleeps on a condition variable otherwise. Dropping the handle
    /// stops it; it also stops when the file system goes away (it holds a weak handle).
    pub fn start_cleaner(&self) -> FsResult<CleanerThread> {
        self.shared
            .check_writable(|| "start the zone cleaner".to_string())?;
        let signal = Arc::clone(&self.shared.cleaner.signal);
        {
            let mut st = signal.lock();
            if st.background {
                return Err(FsError::CleanerRunning);
            }
            st.background = true;
            st.stop = false;
            st.wake = true;
            st.last_error = None;
        }
        let fs = Arc::downgrade(&self.shared);
        let thread_signal = Arc::clone(&signal);
        let spawned = std::thread::Builder::new()
            .name("zonefs-cleaner".into())
            .spawn(move || background_loop(&thread_signal, &fs));
        match spawned {
            Ok(handle) => Ok(CleanerThread {
                signal,
                handle: Some(handle),
            }),
            Err(source) => {
                signal.update(|st| st.background = false);
                Err(FsError::CleanerThread { source })
            }
        }
    }

    /// Installs the engine's compaction callback used by the `compact` and `compensate`
    /// cleaning modes (see [`CompactionRequester`]).
    pub fn set_compaction_requester(&self, requester: Arc<dyn CompactionRequester>) {
        self.shared.cleaner.requester.set(Some(requester));
    }

    pub fn clear_compaction_requester(&self) {
        self.shared.cleaner.requester.set(None);
    }

    /// free / usable bytes now.
    pub fn free_ratio(&self) -> f64 {
        self.shared.lock_zones().free_ratio()
    }

    /// Bytes files may still write now: room in empty and active zones, minus the
    /// reserve (the cleaner's).
    pub fn free_bytes(&self) -> u64 {
        self.shared.lock_zones().free_bytes()
    }

    /// Takes a point of the free-space time series now (runs take one when they start
    /// and one when they end).
    pub fn sample(&self) -> FreeSpaceSample {
        self.shared.sample()
    }

    /// The time series so far.
    pub fn samples(&self) -> Vec<FreeSpaceSample> {
        self.shared
            .cleaner
            .samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The time series so far, emptied.
    pub fn take_samples(&self) -> Vec<FreeSpaceSample> {
        std::mem::take(
            &mut *self
                .shared
                .cleaner
                .samples
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Invalid ratios of the full (or finished) data zones now.
    pub fn invalid_ratio_distribution(&self) -> InvalidRatios {
        let meta = self.shared.lock_meta();
        let zones = self.shared.lock_zones();
        let capacity = zones.capacity();
        let mut ratios: Vec<f64> = zones
            .zones()
            .filter(|(_, s)| s.cond == Cond::Full)
            .map(|(z, s)| {
                let held = s.live.max(meta.state.valid_bytes(z));
                s.written.saturating_sub(held) as f64 / capacity.max(1) as f64
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        InvalidRatios { ratios }
    }
}
