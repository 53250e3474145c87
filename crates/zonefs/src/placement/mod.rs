//! Placement: which zone a new file (or an extent the cleaner migrates) goes to.
//!
//! A policy is a pure decision over a [`PlacementCtx`]: the hint the engine built for the
//! file and a view of the data zones. It returns a [`Decision`] the allocator carries out
//! (take resources, finish a zone, open an empty one and tag it). Keeping policies pure makes
//! each one a single file that can be tested case by case on hand-built zone tables.
//!
//! Policies: [`Liza`] (ZenFS's lifetime classes), [`Caza`] (compaction-aware, HotStorage'22),
//! [`CazaPlus`] (compaction-aware with level scores and SST sizes, MSST'24) and [`Prophet`]
//! (windows of predicted deletion ticks, MSST'24). The two
//! key-range-aware ones share `key_range.rs`. Blob files may have a policy of their own,
//! [`Baza`] (ascending blob file numbers, the Same-Victim GC paper), combined with the file
//! policy by [`BlobSplit`]. `docs/PLACEMENT.md` describes them as built.

mod baza;
mod blob_split;
mod caza;
mod caza_plus;
mod key_range;
mod liza;
pub mod prophet;

pub use baza::Baza;
pub use blob_split::{is_blob_zone, ybiz_of, ybiz_policy, BlobSplit, BLOB_ZONE};
pub use caza::Caza;
pub use caza_plus::CazaPlus;
pub use liza::Liza;
pub use prophet::Prophet;

use crate::meta::FileKind;

/// RocksDB's write-lifetime hints, with RocksDB's numbering (ZenFS compares the numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Lifetime {
    /// No hint given.
    #[default]
    NotSet = 0,
    /// Explicitly no expected lifetime.
    None = 1,
    /// Short-lived (WAL, manifest).
    Short = 2,
    /// Medium (L0 and base-level SSTs).
    Medium = 3,
    /// Long (SSTs one level below the base).
    Long = 4,
    /// Extreme (deeper SSTs).
    Extreme = 5,
}

impl Lifetime {
    /// RocksDB's number of the hint, as recorded in a zone's class.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The hint of that [`Lifetime::code`]; `None` for a number that is none.
    pub fn from_code(code: u8) -> Option<Lifetime> {
        Some(match code {
            0 => Lifetime::NotSet,
            1 => Lifetime::None,
            2 => Lifetime::Short,
            3 => Lifetime::Medium,
            4 => Lifetime::Long,
            5 => Lifetime::Extreme,
            _ => return None,
        })
    }

    /// RocksDB's hint for a file: WAL and manifest SHORT; an SST by its output level relative
    /// to the base level (L0 and base MEDIUM, base+1 LONG, deeper EXTREME).
    pub fn for_file(kind: FileKind, level: Option<u8>, base_level: u8) -> Lifetime {
        match (kind, level) {
            (FileKind::Wal | FileKind::Manifest, _) => Lifetime::Short,
            (FileKind::Sst | FileKind::Blob, Some(l)) if l == 0 || l <= base_level => {
                Lifetime::Medium
            }
            (FileKind::Sst | FileKind::Blob, Some(l)) if l == base_level + 1 => Lifetime::Long,
            (FileKind::Sst | FileKind::Blob, Some(_)) => Lifetime::Extreme,
            _ => Lifetime::NotSet,
        }
    }
}

/// What the engine tells the file layer about a file before its first byte is written.
/// Policies read what they need and ignore the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlacementHint {
    /// The file's kind, if the engine said.
    pub kind: Option<FileKind>,
    /// The SST's (or blob file's) output level, if any.
    pub level: Option<u8>,
    /// RocksDB's write-lifetime hint for the file.
    pub lifetime: Lifetime,
    /// Bytes still to be placed under this hint: the expected file size when the file is
    /// created (exact for SSTs built in memory; 0 = unknown). A writer lowers it by what it
    /// already wrote each time it asks for another zone, and the cleaner sets it to the
    /// extent it moves, so a policy can ask for a zone with room for the rest.
    pub size: u64,
    /// The SST's smallest user key (empty when unknown or not an SST).
    pub smallest_key: Vec<u8>,
    /// The SST's largest user key (empty when unknown or not an SST).
    pub largest_key: Vec<u8>,
    /// The SSTs around this one when it was created, for key-range-aware policies (CAZA,
    /// CAZA+). `None` when the policy does not want them
    /// ([`PlacementPolicy::wants_neighbors`]), for files that are not SSTs, and in hints the
    /// cleaner rebuilds from metadata to migrate an extent when the engine's
    /// [`HintSource`](crate::fs::HintSource) cannot answer.
    pub neighbors: Option<Neighbors>,
    /// When the engine predicts the SST dies, for lifetime-aware policies (Prophet). `None`
    /// unless the policy asks ([`PlacementPolicy::wants_prediction`]), and for files that
    /// are not SSTs.
    pub death: Option<PredictedDeath>,
    /// For blob files, the blob file number (blob files are numbered in the order they are
    /// created: a policy may place them in that order, as BAZA does).
    pub blob_file: Option<u64>,
    /// For blob files, the engine job writing it (flush or compaction, and the
    /// subcompaction): blob files of different jobs are written at the same time by their
    /// own threads. For information (no policy reads it yet): the zone's writer lease, seen
    /// as [`ZoneView::busy`], is what keeps concurrent writers out of each other's zones.
    pub job: Option<WriterJob>,
}

/// The engine job writing a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriterJob {
    /// Flush or compaction.
    pub kind: JobKind,
    /// The job's number among jobs of its kind (from 1 since the database opened).
    pub id: u64,
    /// The subcompaction (key range) of the job writing the file; 0 for the first, and for
    /// jobs that are not split.
    pub part: u32,
}

/// What kind of job writes a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JobKind {
    /// A memtable flush.
    Flush,
    /// A compaction (or blob garbage collection within one).
    Compaction,
}

/// An SST's predicted death on the engine's FC-tick clock (flushes + compactions so far),
/// with what a policy needs to size deletion-time windows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PredictedDeath {
    /// The predicted deletion tick (creation tick + predicted lifetime).
    pub tick: u64,
    /// Short-lived: the file's level is at most the engine's short threshold, or it
    /// overlapped a file of the level above when it was created (Prophet's case c2B).
    pub short_lived: bool,
    /// SSTs expected to die per tick: C_rate × D_num (compactions per tick × files each
    /// deletes).
    pub deaths_per_tick: f64,
    /// The SST size deaths are counted in (the target file size).
    pub sst_size: u64,
}

/// An existing SST as the engine saw it when it built a hint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SstRef {
    /// Its file name in this file system.
    pub name: String,
    /// The engine's file number.
    pub number: u64,
    /// Its LSM level.
    pub level: u8,
    /// Its size, in bytes.
    pub size: u64,
    /// Its smallest user key.
    pub smallest_key: Vec<u8>,
    /// Its largest user key.
    pub largest_key: Vec<u8>,
    /// The zones holding it and its bytes in each, in zone order (`ZoneFs::zones_of`).
    pub zones: Vec<(u32, u64)>,
}

/// The neighbourhood of a new SST of level L with user-key range K, taken from the
/// engine's current version at creation time. Files the job creating the SST is about to
/// delete (its own inputs) are left out of every list: no policy should follow them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Neighbors {
    /// SSTs of level L−1 whose key range meets K, in key order (empty for L0).
    pub overlap_above: Vec<SstRef>,
    /// SSTs of level L+1 whose key range meets K, in key order.
    pub overlap_below: Vec<SstRef>,
    /// The SST of level L whose largest key is the greatest one below K's smallest key.
    pub closest_before: Option<SstRef>,
    /// The SST of level L whose smallest key is the least one above K's largest key.
    pub closest_after: Option<SstRef>,
    /// RocksDB's compaction score of each level (index = level; the last level has none
    /// and shows 0).
    pub level_scores: Vec<f64>,
}

/// How a data zone is used right now, as the allocator sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ZoneUse {
    /// Nothing written: can be opened for a new class.
    Empty,
    /// Written, not full: holds an active resource.
    Active,
    /// Full or finished.
    Full,
}

/// One data zone in the placement view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneView {
    /// The zone's number.
    pub zone: u32,
    /// How it is used now.
    pub state: ZoneUse,
    /// Bytes still writable.
    pub remaining: u64,
    /// Bytes of live file data.
    pub valid: u64,
    /// A writer holds the zone's write pointer: nobody else may append to it now.
    pub busy: bool,
    /// The class the zone was opened with (for LIZA, a [`Lifetime`] code).
    pub class: u8,
    /// What the policy recorded about the zone when it opened it (e.g. Prophet's deletion
    /// window); empty for policies that record nothing. Kept across remounts. A full blob
    /// zone holds its YBIZ here instead ([`ybiz_of`]).
    pub policy: Vec<u8>,
    /// The blob file number of the first blob data written into the zone since its reset
    /// (after a remount: of the first blob data still live in it); `None` for a zone
    /// without blob file data. BAZA fills its zones in this order.
    pub first_blob: Option<u64>,
}

/// Everything a policy may look at to decide.
#[derive(Clone, Copy, Debug)]
pub struct PlacementCtx<'a> {
    /// What the engine said about the file.
    pub hint: &'a PlacementHint,
    /// The data zones, in zone order.
    pub zones: &'a [ZoneView],
    /// An active resource is free, so an empty zone can be opened without finishing one.
    pub can_open: bool,
    /// The zone must have room for at least this many bytes (the cleaner's extents).
    pub min_capacity: u64,
    /// Bytes a data zone holds.
    pub zone_capacity: u64,
}

/// What the allocator should do.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Append to this (active, not busy) zone.
    Use(u32),
    /// Open an empty zone and tag it with `class` and the policy's own facts `policy` (both
    /// logged, and seen again in [`ZoneView`]); first finish `finish` (if any) to free an
    /// active resource.
    OpenEmpty {
        /// The zone's class (for LIZA a [`Lifetime`] code).
        class: u8,
        /// The policy's own facts about the zone (may be empty).
        policy: Vec<u8>,
        /// An idle active zone to finish first, if any.
        finish: Option<u32>,
    },
}

/// The one decision of placement.
pub trait PlacementPolicy: Send + Sync {
    /// The policy's name, as options and the metadata record it (`liza`, `caza`, ...).
    fn name(&self) -> &'static str;

    /// The decision for the file `ctx.hint` describes, from the zones in `ctx.zones`. It
    /// must be one the allocator can carry out (else [`crate::fs::FsError::Placement`]).
    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision;

    /// Whether the policy reads [`PlacementHint::neighbors`]. Finding the overlapping SSTs
    /// and their zones costs the engine a version walk and a metadata lookup per file, so
    /// it fills them only when the policy says yes.
    fn wants_neighbors(&self) -> bool {
        false
    }

    /// Whether the policy reads [`PlacementHint::death`]: the engine predicts lifetimes
    /// only when some policy uses them.
    fn wants_prediction(&self) -> bool {
        false
    }

    /// The class of a zone the allocator opens for this file on its own, when the policy's
    /// decision could not be carried out (see the allocator's fallbacks): the file's
    /// lifetime class unless the policy keeps classes of its own.
    fn fallback_class(&self, hint: &PlacementHint) -> u8 {
        hint.lifetime.code()
    }

    /// Whether the allocator's last resort ("any idle zone with room, whatever its class")
    /// may put this file's data into a zone of `class`. Every zone by default; a policy
    /// whose zones must never mix kinds of files says no to the others'.
    fn may_share(&self, _hint: &PlacementHint, _class: u8) -> bool {
        true
    }
}

impl std::fmt::Debug for dyn PlacementPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlacementPolicy({:?})", self.name())
    }
}

/// A shared policy places as the policy it points at (a program keeps a handle on its own
/// policy, e.g. to read what it counted, while the file system uses it).
impl<P: PlacementPolicy + ?Sized> PlacementPolicy for std::sync::Arc<P> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        (**self).place(ctx)
    }
    fn wants_neighbors(&self) -> bool {
        (**self).wants_neighbors()
    }
    fn wants_prediction(&self) -> bool {
        (**self).wants_prediction()
    }
    fn fallback_class(&self, hint: &PlacementHint) -> u8 {
        (**self).fallback_class(hint)
    }
    fn may_share(&self, hint: &PlacementHint, class: u8) -> bool {
        (**self).may_share(hint, class)
    }
}

/// One placement policy of zkv's: its name (`FsOptions::placement`, `--placement`), what it
/// is, and how it is built. The tables below are the one source of the names, the command
/// line's help and the lists in docs/CLI.md; a program may instead give its own policy as a
/// value (`ZoneFs::mount_with_policy`).
pub struct PolicyEntry {
    /// The name the metadata records and the command line takes.
    pub name: &'static str,
    /// One line: where the policy comes from and what it does.
    pub about: &'static str,
    build: fn() -> Box<dyn PlacementPolicy>,
}

fn prophet(name: &str) -> Box<dyn PlacementPolicy> {
    match Prophet::by_name(name) {
        Some(p) => Box::new(p),
        None => Box::new(Liza),
    }
}

/// The file placement policies: `caza` is the HotStorage'22 algorithm, `caza+` the MSST'24
/// one; `prophet` and `prophet-gc` place alike (they differ in cleaning).
pub const POLICY_TABLE: &[PolicyEntry] = &[
    PolicyEntry {
        name: "liza",
        about: "ZenFS's lifetime-based allocation (LIZA): a file joins the open zone whose \
                lifetime class is closest to its own",
        build: || Box::new(Liza),
    },
    PolicyEntry {
        name: "caza",
        about: "HotStorage'22 CAZA: an SST joins the zone holding most of the next-level \
                SSTs it overlaps (its compaction partners)",
        build: || Box::new(Caza),
    },
    PolicyEntry {
        name: "caza+",
        about: "MSST'24 enhanced CAZA: an SST joins the zone of the neighbour the picker is \
                likeliest to compact it with (the largest one above, or the smallest below)",
        build: || Box::new(CazaPlus),
    },
    PolicyEntry {
        name: "prophet",
        about: "MSST'24 Prophet: an SST goes to the zone whose window holds its predicted \
                deletion; cleaning by compensation compaction",
        build: || prophet("prophet"),
    },
    PolicyEntry {
        name: "prophet-gc",
        about: "Prophet's placement with plain copying cleaning",
        build: || prophet("prophet-gc"),
    },
    PolicyEntry {
        name: "prophet-gc-no",
        about: "Prophet's placement without window rounding and short-lived segregation",
        build: || prophet("prophet-gc-no"),
    },
];

/// The blob placements: `liza` leaves blob files to the file policy (as ZenFS does: LIZA
/// classes by their job's level, in the zones of SSTs); `baza` gives them zones of their own,
/// filled in blob file number order ([`Baza`], combined by [`BlobSplit`]).
pub const BLOB_POLICY_TABLE: &[PolicyEntry] = &[
    PolicyEntry {
        name: "liza",
        about: "blob files placed by the file policy, among the SSTs (ZenFS's behaviour)",
        build: || Box::new(Liza),
    },
    PolicyEntry {
        name: "baza",
        about: "Same-Victim GC's BAZA: blob files in zones of their own, filled in blob file \
                number order",
        build: || Box::new(Baza),
    },
];

/// The blob placement that leaves blob files to the file policy.
pub const DEFAULT_BLOB_POLICY: &str = "liza";

/// The names of [`POLICY_TABLE`].
pub fn policy_names() -> Vec<&'static str> {
    POLICY_TABLE.iter().map(|e| e.name).collect()
}

/// The names of [`BLOB_POLICY_TABLE`].
pub fn blob_policy_names() -> Vec<&'static str> {
    BLOB_POLICY_TABLE.iter().map(|e| e.name).collect()
}

/// Builds a policy by name: a file policy of [`POLICY_TABLE`], or `FILE/BLOB` for a file
/// policy combined with a blob placement of [`BLOB_POLICY_TABLE`] other than the default (the
/// name [`combined_name`] gives). An unknown name is a clear error listing the known ones.
pub fn policy_by_name(name: &str) -> Result<Box<dyn PlacementPolicy>, String> {
    if let Some((files, blobs)) = name.split_once('/') {
        if blobs == DEFAULT_BLOB_POLICY {
            return policy_by_name(files);
        }
        let split = BlobSplit::new(policy_by_name(files)?, blob_policy(blobs)?);
        return Ok(Box::new(split));
    }
    match POLICY_TABLE.iter().find(|e| e.name == name) {
        Some(e) => Ok((e.build)()),
        None => Err(format!(
            "unknown placement policy '{name}' (known: {}; a policy a program gave as \
             a value must be given again to write to its store)",
            policy_names().join(", ")
        )),
    }
}

/// The policy of a blob placement that is not the default one.
fn blob_policy(name: &str) -> Result<Box<dyn PlacementPolicy>, String> {
    match BLOB_POLICY_TABLE.iter().find(|e| e.name == name) {
        Some(e) if name != DEFAULT_BLOB_POLICY => Ok((e.build)()),
        _ => Err(format!(
            "unknown blob placement '{name}' (known: {})",
            blob_policy_names().join(", ")
        )),
    }
}

/// A table of policies as Markdown (docs/CLI.md holds both tables; a test checks them).
pub fn policies_markdown(table: &[PolicyEntry]) -> String {
    let mut out = String::from("| placement | what it does |\n|---|---|\n");
    for e in table {
        out.push_str(&format!("| `{}` | {} |\n", e.name, e.about));
    }
    out
}

/// The name [`policy_by_name`] takes for file policy `files` with blob placement `blobs`:
/// `files` itself for the default blob placement, else `files/blobs`.
pub fn combined_name(files: &str, blobs: &str) -> String {
    if blobs == DEFAULT_BLOB_POLICY {
        files.to_string()
    } else {
        format!("{files}/{blobs}")
    }
}
