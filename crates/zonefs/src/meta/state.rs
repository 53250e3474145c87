//! The file layer's metadata state: files, their extents and placement facts, the name
//! index, and the persisted placement metadata of data zones.
//!
//! [`FsState::apply`] is the only way the state changes, and it is all-or-nothing: a
//! record is validated completely before anything is modified, so a rejected record leaves
//! the state exactly as it was.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use zns::Geometry;

use super::index::ExtentIndex;
use super::record::Record;

/// Longest file name, in bytes.
pub const MAX_NAME_LEN: usize = 4096;
/// Largest placement-policy blob per zone, in bytes.
pub const MAX_POLICY_LEN: usize = 4096;

/// A file's identity. Ids are handed out in increasing order and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u64);

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "file {}", self.0)
    }
}

/// What a file holds; placement policies treat kinds differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    Wal,
    Manifest,
    Sst,
    Blob,
    Other,
}

impl FileKind {
    pub const ALL: [FileKind; 5] = [
        FileKind::Wal,
        FileKind::Manifest,
        FileKind::Sst,
        FileKind::Blob,
        FileKind::Other,
    ];

    /// Stable one-byte encoding used on disk.
    pub fn code(self) -> u8 {
        match self {
            FileKind::Wal => 1,
            FileKind::Manifest => 2,
            FileKind::Sst => 3,
            FileKind::Blob => 4,
            FileKind::Other => 5,
        }
    }

    pub fn from_code(code: u8) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// A contiguous run of a file's bytes inside one zone (an extent never spans zones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Extent {
    pub zone: u32,
    /// Offset from the zone start.
    pub offset: u64,
    pub len: u64,
}

impl Extent {
    /// First offset past the extent (saturating: validation rejects overflowing extents).
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// Everything persisted about one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMeta {
    pub name: String,
    pub kind: FileKind,
    /// Logical size; at most the bytes of the extents (the last one may hold padding).
    pub size: u64,
    /// In file order.
    pub extents: Vec<Extent>,
    /// LSM level, for files that have one (SSTs).
    pub level: Option<u8>,
    /// Lifetime class the placement policy assigned (e.g. a LIZA lifetime hint).
    pub lifetime: u8,
}

impl FileMeta {
    /// An empty file.
    pub fn new(name: impl Into<String>, kind: FileKind) -> FileMeta {
        FileMeta {
            name: name.into(),
            kind,
            size: 0,
            extents: Vec::new(),
            level: None,
            lifetime: 0,
        }
    }

    /// Σ extent lengths (saturating, so that it is safe on unvalidated input).
    pub fn extent_bytes(&self) -> u64 {
        self.extents.iter().fold(0u64, |a, e| a.saturating_add(e.len))
    }
}

/// Placement facts a policy keeps about a data zone and needs again after a remount: a
/// class byte (e.g. a lifetime hint) and an opaque blob only the policy interprets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZonePlacement {
    pub class: u8,
    pub policy: Vec<u8>,
}

impl ZonePlacement {
    /// The default value means "no placement facts"; the state stores only non-empty ones.
    pub fn is_empty(&self) -> bool {
        self.class == 0 && self.policy.is_empty()
    }
}

/// Which zones hold files: zones `meta_zones .. zones`, each with `zone_capacity` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneLayout {
    pub zones: u32,
    pub zone_capacity: u64,
    pub meta_zones: u32,
}

impl ZoneLayout {
    pub fn new(zones: u32, zone_capacity: u64, meta_zones: u32) -> ZoneLayout {
        ZoneLayout {
            zones,
            zone_capacity,
            meta_zones,
        }
    }

    pub fn of_device(geo: &Geometry, meta_zones: u32) -> ZoneLayout {
        ZoneLayout::new(geo.zones, geo.zone_capacity, meta_zones)
    }

    pub fn data_zones(&self) -> Range<u32> {
        self.meta_zones.min(self.zones)..self.zones
    }

    pub fn is_data_zone(&self, zone: u32) -> bool {
        self.data_zones().contains(&zone)
    }
}

/// The persisted form of a whole [`FsState`] (the payload of a snapshot record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub layout: ZoneLayout,
    pub next_file_id: u64,
    pub files: Vec<(FileId, FileMeta)>,
    pub zones: Vec<(u32, ZonePlacement)>,
}

/// Why a record cannot be applied (or a state is inconsistent).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("{id} does not exist")]
    UnknownFile { id: FileId },

    #[error("name '{name}' is already used by {existing}")]
    DuplicateName { name: String, existing: FileId },

    #[error("{id} cannot be created: ids below {next} were already handed out")]
    StaleFileId { id: FileId, next: u64 },

    #[error("{id} appears twice in a snapshot")]
    DuplicateFileId { id: FileId },

    #[error("invalid file name: {reason}")]
    InvalidName { reason: &'static str },

    #[error("zone {zone} is not a data zone (data zones are {first}..{end})")]
    NotDataZone { zone: u32, first: u32, end: u32 },

    #[error("{id}: bad extent (zone {zone}, offset {offset}, length {len}): {reason}")]
    BadExtent {
        id: FileId,
        zone: u32,
        offset: u64,
        len: u64,
        reason: &'static str,
    },

    #[error("{id}: extent at zone {zone} offset {offset} overlaps bytes of {other}")]
    Overlap {
        id: FileId,
        other: FileId,
        zone: u32,
        offset: u64,
    },

    #[error("{id}: size {size} exceeds the {extent_bytes} bytes of its extents")]
    SizeBeyondExtents {
        id: FileId,
        size: u64,
        extent_bytes: u64,
    },

    #[error("zone {zone}: placement metadata of {len} bytes exceeds {max}")]
    PolicyTooLarge { zone: u32, len: usize, max: usize },

    #[error("snapshot layout {found:?} does not match this device's {expected:?}")]
    LayoutMismatch {
        expected: ZoneLayout,
        found: ZoneLayout,
    },

    #[error("invariant broken: {reason}")]
    Invariant { reason: String },
}

pub type StateResult<T> = Result<T, StateError>;

/// The metadata state of the file layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsState {
    layout: ZoneLayout,
    next_file_id: u64,
    files: BTreeMap<FileId, FileMeta>,
    names: BTreeMap<String, FileId>,
    placements: BTreeMap<u32, ZonePlacement>,
    extents: ExtentIndex,
}

impl FsState {
    /// An empty file system over `layout`. File ids start at 1 (0 is never a file).
    pub fn new(layout: ZoneLayout) -> FsState {
        FsState {
            layout,
            next_file_id: 1,
            files: BTreeMap::new(),
            names: BTreeMap::new(),
            placements: BTreeMap::new(),
            extents: ExtentIndex::new(layout.zones),
        }
    }

    pub fn layout(&self) -> ZoneLayout {
        self.layout
    }

    /// The id the next created file should take.
    pub fn next_file_id(&self) -> FileId {
        FileId(self.next_file_id)
    }

    pub fn file(&self, id: FileId) -> Option<&FileMeta> {
        self.files.get(&id)
    }

    pub fn file_id(&self, name: &str) -> Option<FileId> {
        self.names.get(name).copied()
    }

    /// Files in id order.
    pub fn files(&self) -> impl Iterator<Item = (FileId, &FileMeta)> + '_ {
        self.files.iter().map(|(id, m)| (*id, m))
    }

    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    pub fn placement(&self, zone: u32) -> Option<&ZonePlacement> {
        self.placements.get(&zone)
    }

    /// Zones with placement metadata, in zone order.
    pub fn placements(&self) -> impl Iterator<Item = (u32, &ZonePlacement)> + '_ {
        self.placements.iter().map(|(z, p)| (*z, p))
    }

    /// Σ live extent bytes in `zone`.
    pub fn valid_bytes(&self, zone: u32) -> u64 {
        self.extents.valid_bytes(zone)
    }

    /// Live extents of `zone` in offset order, with the files owning them.
    pub fn zone_extents(&self, zone: u32) -> impl Iterator<Item = (Extent, FileId)> + '_ {
        self.extents.zone_extents(zone)
    }

    /// Applies one record, or rejects it and changes nothing.
    pub fn apply(&mut self, rec: &Record) -> StateResult<()> {
        match rec {
            Record::Snapshot(s) => {
                *self = FsState::from_snapshot(s.clone(), self.layout)?;
                Ok(())
            }
            Record::FileUpdate { id, meta } => self.put_file(*id, meta),
            Record::FileDelete { id } => self.delete_file(*id),
            Record::FileRename { id, name } => self.rename_file(*id, name),
            Record::ZoneMeta { zone, placement } => self.set_placement(*zone, placement),
        }
    }

    /// A copy of the persisted part of the state.
    pub fn to_snapshot(&self) -> Snapshot {
        Snapshot {
            layout: self.layout,
            next_file_id: self.next_file_id,
            files: self.files().map(|(id, m)| (id, m.clone())).collect(),
            zones: self.placements().map(|(z, p)| (z, p.clone())).collect(),
        }
    }

    /// Rebuilds a state from a snapshot, checking it as strictly as individual records.
    pub fn from_snapshot(snap: Snapshot, expected: ZoneLayout) -> StateResult<FsState> {
        if snap.layout != expected {
            return Err(StateError::LayoutMismatch {
                expected,
                found: snap.layout,
            });
        }
        let mut state = FsState::new(snap.layout);
        for (id, meta) in snap.files {
            if state.files.contains_key(&id) {
                return Err(StateError::DuplicateFileId { id });
            }
            if id.0 >= snap.next_file_id {
                return Err(StateError::StaleFileId {
                    id,
                    next: snap.next_file_id,
                });
            }
            state.validate_file(id, &meta)?;
            state.insert_file(id, meta);
        }
        for (zone, placement) in snap.zones {
            state.set_placement(zone, &placement)?;
        }
        state.next_file_id = snap.next_file_id;
        Ok(state)
    }

    /// Creates the file or replaces its metadata.
    fn put_file(&mut self, id: FileId, meta: &FileMeta) -> StateResult<()> {
        if !self.files.contains_key(&id) && id.0 < self.next_file_id {
            return Err(StateError::StaleFileId {
                id,
                next: self.next_file_id,
            });
        }
        self.validate_file(id, meta)?;
        self.remove_file(id);
        self.insert_file(id, meta.clone());
        self.next_file_id = self.next_file_id.max(id.0.saturating_add(1));
        Ok(())
    }

    fn delete_file(&mut self, id: FileId) -> StateResult<()> {
        self.remove_file(id)
            .map(|_| ())
            .ok_or(StateError::UnknownFile { id })
    }

    /// Renames `id`; a different file already called `name` is deleted in the same step,
    /// as POSIX rename replaces its target.
    fn rename_file(&mut self, id: FileId, name: &str) -> StateResult<()> {
        check_name(name)?;
        let mut meta = self
            .files
            .get(&id)
            .cloned()
            .ok_or(StateError::UnknownFile { id })?;
        if let Some(victim) = self.file_id(name).filter(|v| *v != id) {
            self.remove_file(victim);
        }
        self.remove_file(id);
        meta.name = name.to_owned();
        self.insert_file(id, meta);
        Ok(())
    }

    fn set_placement(&mut self, zone: u32, placement: &ZonePlacement) -> StateResult<()> {
        self.check_data_zone(zone)?;
        if placement.policy.len() > MAX_POLICY_LEN {
            return Err(StateError::PolicyTooLarge {
                zone,
                len: placement.policy.len(),
                max: MAX_POLICY_LEN,
            });
        }
        if placement.is_empty() {
            self.placements.remove(&zone);
        } else {
            self.placements.insert(zone, placement.clone());
        }
        Ok(())
    }

    /// Everything `put_file` needs to know before it changes anything.
    fn validate_file(&self, id: FileId, meta: &FileMeta) -> StateResult<()> {
        check_name(&meta.name)?;
        if let Some(existing) = self.file_id(&meta.name).filter(|e| *e != id) {
            return Err(StateError::DuplicateName {
                name: meta.name.clone(),
                existing,
            });
        }
        for e in &meta.extents {
            self.check_extent(id, e)?;
        }
        check_self_overlap(id, &meta.extents)?;
        let extent_bytes = meta.extent_bytes();
        if meta.size > extent_bytes {
            return Err(StateError::SizeBeyondExtents {
                id,
                size: meta.size,
                extent_bytes,
            });
        }
        Ok(())
    }

    fn check_extent(&self, id: FileId, e: &Extent) -> StateResult<()> {
        self.check_data_zone(e.zone)?;
        let bad = |reason| StateError::BadExtent {
            id,
            zone: e.zone,
            offset: e.offset,
            len: e.len,
            reason,
        };
        if e.len == 0 {
            return Err(bad("empty extent"));
        }
        match e.offset.checked_add(e.len) {
            Some(end) if end <= self.layout.zone_capacity => {}
            _ => return Err(bad("extent ends beyond the zone capacity")),
        }
        match self.extents.overlapping(id, e) {
            Some(other) => Err(StateError::Overlap {
                id,
                other,
                zone: e.zone,
                offset: e.offset,
            }),
            None => Ok(()),
        }
    }

    fn check_data_zone(&self, zone: u32) -> StateResult<()> {
        if self.layout.is_data_zone(zone) {
            return Ok(());
        }
        let data = self.layout.data_zones();
        Err(StateError::NotDataZone {
            zone,
            first: data.start,
            end: data.end,
        })
    }

    fn insert_file(&mut self, id: FileId, meta: FileMeta) {
        self.extents.insert(id, &meta.extents);
        self.names.insert(meta.name.clone(), id);
        self.files.insert(id, meta);
    }

    fn remove_file(&mut self, id: FileId) -> Option<FileMeta> {
        let meta = self.files.remove(&id)?;
        self.extents.remove(&meta.extents);
        self.names.remove(&meta.name);
        Some(meta)
    }

    /// Recomputes every derived structure from the files and compares; checks every rule
    /// `apply` enforces. Meant for tests and for paranoid mounts.
    pub fn check_invariants(&self) -> StateResult<()> {
        let broken = |reason: String| Err(StateError::Invariant { reason });
        let mut rebuilt = FsState::new(self.layout);
        rebuilt.next_file_id = self.next_file_id;
        for (id, meta) in self.files() {
            if id.0 >= self.next_file_id {
                return broken(format!("{id} is not below next id {}", self.next_file_id));
            }
            rebuilt.validate_file(id, meta)?;
            rebuilt.insert_file(id, meta.clone());
        }
        for (zone, placement) in self.placements() {
            if placement.is_empty() {
                return broken(format!("zone {zone} stores empty placement metadata"));
            }
            rebuilt.set_placement(zone, placement)?;
        }
        if rebuilt.names != self.names {
            return broken("name index differs from the files' names".into());
        }
        if rebuilt.extents != self.extents {
            return broken("extent index or valid bytes differ from the files' extents".into());
        }
        Ok(())
    }
}

fn check_name(name: &str) -> StateResult<()> {
    if name.is_empty() {
        return Err(StateError::InvalidName {
            reason: "the name is empty",
        });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(StateError::InvalidName {
            reason: "the name is longer than 4096 bytes",
        });
    }
    Ok(())
}

/// A file's own extents must not overlap each other either.
fn check_self_overlap(id: FileId, extents: &[Extent]) -> StateResult<()> {
    let mut sorted: Vec<&Extent> = extents.iter().collect();
    sorted.sort_by_key(|e| (e.zone, e.offset));
    for pair in sorted.windows(2) {
        if pair[0].zone == pair[1].zone && pair[0].end() > pair[1].offset {
            return Err(StateError::Overlap {
                id,
                other: id,
                zone: pair[1].zone,
                offset: pair[1].offset,
            });
        }
    }
    Ok(())
}
