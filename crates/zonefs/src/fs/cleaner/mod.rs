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
//!   copies without freeing anything for now. [`ZoneFs::make_room`] (nothing is being
//!   written) may also finish an idle active zone worth cleaning when no full one is.
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
//!
//! The code, one concern a file:
//! - `coordination.rs`: one run at a time, and what writers do about cleaning (clean
//!   inline, wake the background thread, wait for it).
//! - `run.rs`: a cleaning run, victim after victim, and the engine's compactions.
//! - `victim.rs`: which zone is the victim, and the files with valid data in it.
//! - `copy.rs`: copying the victim's valid data out and committing the new extents.
//! - `mover.rs`: writing the copies to the zones the policy chooses.
//! - `thread.rs`: the background cleaner thread.
//! - `free_space.rs`: the free-space figures runs go by, and their time series.
//!
//! This file holds the public types and the cleaner's part of the shared state.

mod coordination;
mod copy;
mod free_space;
mod mover;
mod run;
mod thread;
mod victim;

use std::fmt;
use std::sync::{Arc, Mutex};

use super::hint_source::HintSource;
use super::shared::Hook;
use super::stats::FreeSpaceSample;
#[cfg(doc)]
use super::ZoneFs;

use coordination::Signal;

pub use thread::CleanerThread;

/// What the cleaner does with a victim zone's valid data (DESIGN 6.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
    /// Every mode, in the order `--help` lists them.
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

    /// The mode of that [`CleaningMode::name`], if any.
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
    /// The file's name.
    pub name: String,
    /// The file's LSM level, if the engine gave one.
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
    /// Compacts what it agrees to of `files` (the valid SSTs of zone `victim`) and returns
    /// the names of the files it compacted (and deleted).
    fn request(
        &self,
        victim: u32,
        files: &[CompactionCandidate],
        mode: CleaningMode,
    ) -> Vec<String>;
}

/// Why a cleaning run stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The victim zone.
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
    /// Victim zones picked.
    pub victims: u32,
    /// Victims left without valid data.
    pub cleaned: u32,
    /// Victims reset during the run.
    pub reset: u32,
    /// Valid bytes moved to other zones.
    pub copied_bytes: u64,
    /// Bytes freed by the engine's compactions.
    pub compacted_bytes: u64,
    /// Why the run stopped.
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
#[non_exhaustive]
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
