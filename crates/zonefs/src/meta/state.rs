//! The file layer's metadata state: files, their extents and placement facts, the name
//! index, and the persisted placement metadata of data zones.
//!
//! [`FsState::apply`] is the only way the state changes, and it is all-or-nothing: a
//! record is validated completely before anything is modified, so a rejected record leaves
//! the state exactly as it was.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use zkv_zns::Geometry;

use super::index::{ExtentIndex, ExtentMark};
use super::options::StoredOptions;
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
#[non_exhaustive]
pub enum FileKind {
    /// A write-ahead log.
    Wal,
    /// The engine's manifest (its version edits).
    Manifest,
    /// A sorted table.
    Sst,
    /// A blob file (BlobDB's values).
    Blob,
    /// Anything else (the engine's small files, files of other users).
    Other,
}

impl FileKind {
    /// Every kind, in code order.
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

    /// The kind of that [`FileKind::code`]; `None` for a byte that is none.
    pub fn from_code(code: u8) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// A contiguous run of a file's bytes inside one zone (an extent never spans zones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Extent {
    /// The zone holding it.
    pub zone: u32,
    /// Offset from the zone start.
    pub offset: u64,
    /// Its length, in bytes.
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
    /// The file's name (1 to [`MAX_NAME_LEN`] bytes).
    pub name: String,
    /// What the file holds.
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

    /// The number of a blob file: the engine names blob file n `{n:06}.blob` (docs/BLOB.md).
    /// `None` for other files and other names.
    pub fn blob_number(&self) -> Option<u64> {
        let digits = self.name.strip_suffix(".blob")?;
        let plain = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        (self.kind == FileKind::Blob && plain)
            .then(|| digits.parse().ok())
            .flatten()
    }

    /// Σ extent lengths (saturating, so that it is safe on unvalidated input).
    pub fn extent_bytes(&self) -> u64 {
        self.extents
            .iter()
            .fold(0u64, |a, e| a.saturating_add(e.len))
    }
}

/// Placement facts a policy keeps about a data zone and needs again after a remount: a
/// class byte (e.g. a lifetime hint) and an opaque blob only the policy interprets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZonePlacement {
    /// The zone's class (0: none).
    pub class: u8,
    /// The policy's own bytes (at most [`MAX_POLICY_LEN`]).
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
    /// Zones of the device.
    pub zones: u32,
    /// Bytes each zone holds.
    pub zone_capacity: u64,
    /// Metadata zones at the start of the device.
    pub meta_zones: u32,
}

impl ZoneLayout {
    /// A layout of `zones` zones of `zone_capacity` bytes, the first `meta_zones` of them
    /// for the metadata.
    pub fn new(zones: u32, zone_capacity: u64, meta_zones: u32) -> ZoneLayout {
        ZoneLayout {
            zones,
            zone_capacity,
            meta_zones,
        }
    }

    /// The layout of a device of geometry `geo` with `meta_zones` metadata zones.
    pub fn of_device(geo: &Geometry, meta_zones: u32) -> ZoneLayout {
        ZoneLayout::new(geo.zones, geo.zone_capacity, meta_zones)
    }

    /// The zones that hold files.
    pub fn data_zones(&self) -> Range<u32> {
        self.meta_zones.min(self.zones)..self.zones
    }

    /// Whether `zone` holds files.
    pub fn is_data_zone(&self, zone: u32) -> bool {
        self.data_zones().contains(&zone)
    }
}

/// The persisted form of a whole [`FsState`] (the payload of a snapshot record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The zone layout the state was made for.
    pub layout: ZoneLayout,
    /// The id the next created file takes.
    pub next_file_id: u64,
    /// The file-system options, once the file layer recorded them.
    pub options: Option<StoredOptions>,
    /// Every file, in id order.
    pub files: Vec<(FileId, FileMeta)>,
    /// Every zone with placement metadata, in zone order.
    pub zones: Vec<(u32, ZonePlacement)>,
}

/// Why a record cannot be applied (or a state is inconsistent).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// A record names a file that does not exist.
    #[error("{id} does not exist")]
    UnknownFile {
        /// The file.
        id: FileId,
    },

    /// Another file has the name.
    #[error("name '{name}' is already used by {existing}")]
    DuplicateName {
        /// The name.
        name: String,
        /// The file that has it.
        existing: FileId,
    },

    /// A file id with no id after it: the next file could not be numbered.
    #[error("{id} cannot be a file id: it is the largest, no id would be left after it")]
    LastFileId {
        /// The id.
        id: FileId,
    },

    /// A new file with an id handed out before.
    #[error("{id} cannot be created: ids below {next} were already handed out")]
    StaleFileId {
        /// The new file's id.
        id: FileId,
        /// The first id not handed out.
        next: u64,
    },

    /// A snapshot lists a file twice.
    #[error("{id} appears twice in a snapshot")]
    DuplicateFileId {
        /// The file.
        id: FileId,
    },

    /// A name that is empty or too long.
    #[error("invalid file name: {reason}")]
    InvalidName {
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A zone number outside the data zones.
    #[error("zone {zone} is not a data zone (data zones are {first}..{end})")]
    NotDataZone {
        /// The zone.
        zone: u32,
        /// The first data zone.
        first: u32,
        /// One past the last data zone.
        end: u32,
    },

    /// An extent that is empty or does not fit its zone.
    #[error("{id}: bad extent (zone {zone}, offset {offset}, length {len}): {reason}")]
    BadExtent {
        /// The file.
        id: FileId,
        /// The zone.
        zone: u32,
        /// The extent's offset in the zone.
        offset: u64,
        /// The extent's length.
        len: u64,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// An extent that covers bytes of another file's extent.
    #[error("{id}: extent at zone {zone} offset {offset} overlaps bytes of {other}")]
    Overlap {
        /// The file.
        id: FileId,
        /// The file whose bytes it covers.
        other: FileId,
        /// The zone.
        zone: u32,
        /// The extent's offset in the zone.
        offset: u64,
    },

    /// A file size beyond the bytes its extents hold.
    #[error("{id}: size {size} exceeds the {extent_bytes} bytes of its extents")]
    SizeBeyondExtents {
        /// The file.
        id: FileId,
        /// Its size.
        size: u64,
        /// The bytes of its extents.
        extent_bytes: u64,
    },

    /// A zone's policy bytes longer than [`MAX_POLICY_LEN`].
    #[error("zone {zone}: placement metadata of {len} bytes exceeds {max}")]
    PolicyTooLarge {
        /// The zone.
        zone: u32,
        /// Their length.
        len: usize,
        /// The most allowed.
        max: usize,
    },

    /// A policy or cleaning-mode name in the options that is empty or too long.
    #[error("file system options: a {what} name of {len} bytes (1 to {max} allowed)")]
    BadOptionName {
        /// Which name.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The most allowed.
        max: usize,
    },

    /// A snapshot made for another zone layout.
    #[error("snapshot layout {found:?} does not match this device's {expected:?}")]
    LayoutMismatch {
        /// The layout of the device.
        expected: ZoneLayout,
        /// The layout the snapshot records.
        found: ZoneLayout,
    },

    /// A derived structure disagrees with the files ([`FsState::check_invariants`]).
    #[error("invariant broken: {reason}")]
    Invariant {
        /// Which rule is broken.
        reason: String,
    },
}

/// `Result` with [`StateError`].
pub type StateResult<T> = Result<T, StateError>;

/// The metadata state of the file layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsState {
    layout: ZoneLayout,
    next_file_id: u64,
    files: BTreeMap<FileId, FileMeta>,
    names: BTreeMap<String, FileId>,
    placements: BTreeMap<u32, ZonePlacement>,
    options: Option<StoredOptions>,
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
            options: None,
            extents: ExtentIndex::new(layout.zones),
        }
    }

    /// Which zones hold files.
    pub fn layout(&self) -> ZoneLayout {
        self.layout
    }

    /// The id the next created file should take.
    pub fn next_file_id(&self) -> FileId {
        FileId(self.next_file_id)
    }

    /// The file of that id, if it exists.
    pub fn file(&self, id: FileId) -> Option<&FileMeta> {
        self.files.get(&id)
    }

    /// The id of the file of that name, if any.
    pub fn file_id(&self, name: &str) -> Option<FileId> {
        self.names.get(name).copied()
    }

    /// Files in id order.
    pub fn files(&self) -> impl Iterator<Item = (FileId, &FileMeta)> + '_ {
        self.files.iter().map(|(id, m)| (*id, m))
    }

    /// Number of files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The placement metadata of `zone`, if it has any.
    pub fn placement(&self, zone: u32) -> Option<&ZonePlacement> {
        self.placements.get(&zone)
    }

    /// Zones with placement metadata, in zone order.
    pub fn placements(&self) -> impl Iterator<Item = (u32, &ZonePlacement)> + '_ {
        self.placements.iter().map(|(z, p)| (*z, p))
    }

    /// The file-system options last recorded; `None` until the file layer records some.
    pub fn options(&self) -> Option<&StoredOptions> {
        self.options.as_ref()
    }

    /// Σ live extent bytes in `zone`.
    pub fn valid_bytes(&self, zone: u32) -> u64 {
        self.extents.valid_bytes(zone)
    }

    /// Live extents of `zone` in offset order, with the files owning them.
    pub fn zone_extents(&self, zone: u32) -> impl Iterator<Item = (Extent, FileId)> + '_ {
        self.extents.zone_extents(zone)
    }

    /// Where the files' extents stand now: a mark to ask [`FsState::zones_changed_since`]
    /// about later.
    pub fn extent_mark(&self) -> ExtentMark {
        self.extents.mark()
    }

    /// Adds to `out`, in zone order, the zones that gained or lost a file's extent (a file
    /// deleted, moved or renamed; not a file written further, whose zones are its own
    /// until it is finished) after `since`. False if `since` is a mark of
    /// another state (another mount, or a state rebuilt from a snapshot since): then any
    /// file may have moved.
    pub fn zones_changed_since(&self, since: ExtentMark, out: &mut Vec<u32>) -> bool {
        let same = since.lineage == self.extents.mark().lineage;
        if same {
            self.extents.changed_since(since, out);
        }
        same
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
            Record::Options(options) => self.set_options(options),
        }
    }

    /// A copy of the persisted part of the state.
    pub fn to_snapshot(&self) -> Snapshot {
        Snapshot {
            layout: self.layout,
            next_file_id: self.next_file_id,
            options: self.options.clone(),
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
        if let Some(options) = &snap.options {
            state.set_options(options)?;
        }
        state.next_file_id = snap.next_file_id;
        Ok(state)
    }

    /// Creates the file or replaces its metadata.
    fn put_file(&mut self, id: FileId, meta: &FileMeta) -> StateResult<()> {
        // Every id stays below `next_file_id` (what `check_invariants` checks).
        if id.0 == u64::MAX {
            return Err(StateError::LastFileId { id });
        }
        if !self.files.contains_key(&id) && id.0 < self.next_file_id {
            return Err(StateError::StaleFileId {
                id,
                next: self.next_file_id,
            });
        }
        self.validate_file(id, meta)?;
        let old = self.files.insert(id, meta.clone());
        if let Some(old) = &old {
            self.names.remove(&old.name);
        }
        self.names.insert(meta.name.clone(), id);
        match &old {
            Some(old) => self.extents.replace(id, &old.extents, &meta.extents),
            None => self.extents.insert(id, &meta.extents),
        }
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

    fn set_options(&mut self, options: &StoredOptions) -> StateResult<()> {
        options.check()?;
        self.options = Some(options.clone());
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
        if let Some(options) = &self.options {
            options.check()?;
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
    for (a, b) in sorted.iter().zip(sorted.iter().skip(1)) {
        if a.zone == b.zone && a.end() > b.offset {
            return Err(StateError::Overlap {
                id,
                other: id,
                zone: b.zone,
                offset: b.offset,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::options::MAX_OPTION_NAME_LEN;

    /// 8 zones of 1 MiB, the first 2 for metadata.
    fn state() -> FsState {
        FsState::new(ZoneLayout::new(8, 1 << 20, 2))
    }

    fn ext(zone: u32, offset: u64, len: u64) -> Extent {
        Extent { zone, offset, len }
    }

    fn file(name: &str, extents: &[Extent]) -> FileMeta {
        let mut m = FileMeta::new(name, FileKind::Sst);
        m.extents = extents.to_vec();
        m.size = m.extent_bytes();
        m.level = Some(1);
        m.lifetime = 3;
        m
    }

    fn put(s: &mut FsState, id: u64, meta: FileMeta) -> StateResult<()> {
        s.apply(&Record::FileUpdate {
            id: FileId(id),
            meta,
        })
    }

    /// Applies `rec`, expects `err`, and checks that nothing changed.
    fn rejects(s: &mut FsState, rec: Record, err: StateError) {
        let before = s.clone();
        assert_eq!(s.apply(&rec), Err(err));
        assert_eq!(*s, before);
        s.check_invariants().unwrap();
    }

    #[test]
    fn blob_files_are_numbered_by_their_names() {
        let blob = |name: &str| FileMeta::new(name, FileKind::Blob).blob_number();
        assert_eq!(blob("000012.blob"), Some(12));
        assert_eq!(blob("1234567.blob"), Some(1_234_567));
        for other in ["x.blob", ".blob", "12.sst", "+12.blob", "000012.blob.tmp"] {
            assert_eq!(blob(other), None, "{other}");
        }
        assert_eq!(
            FileMeta::new("000012.blob", FileKind::Sst).blob_number(),
            None
        );
    }

    #[test]
    fn files_live_and_die_with_their_bytes() {
        let mut s = state();
        put(&mut s, 1, file("a", &[ext(2, 0, 100), ext(3, 0, 50)])).unwrap();
        put(&mut s, 2, file("b", &[ext(2, 100, 10)])).unwrap();
        assert_eq!(s.next_file_id(), FileId(3));
        assert_eq!((s.valid_bytes(2), s.valid_bytes(3)), (110, 50));
        assert_eq!(s.file_id("b"), Some(FileId(2)));
        // An update may keep its extents and add one.
        put(
            &mut s,
            1,
            file("a", &[ext(2, 0, 100), ext(3, 0, 50), ext(3, 50, 7)]),
        )
        .unwrap();
        assert_eq!(s.valid_bytes(3), 57);
        let owners: Vec<FileId> = s.zone_extents(2).map(|(_, id)| id).collect();
        assert_eq!(owners, [FileId(1), FileId(2)]);
        s.apply(&Record::FileDelete { id: FileId(1) }).unwrap();
        assert_eq!((s.valid_bytes(2), s.valid_bytes(3)), (10, 0));
        assert_eq!(s.file_id("a"), None);
        s.check_invariants().unwrap();
    }

    #[test]
    fn rename_replaces_the_target_like_posix() {
        let mut s = state();
        put(&mut s, 1, file("CURRENT.tmp", &[ext(4, 0, 8)])).unwrap();
        put(&mut s, 2, file("CURRENT", &[ext(4, 8, 8)])).unwrap();
        let rename = Record::FileRename {
            id: FileId(1),
            name: "CURRENT".into(),
        };
        s.apply(&rename).unwrap();
        assert_eq!(s.file_id("CURRENT"), Some(FileId(1)));
        assert_eq!(s.file(FileId(2)), None);
        assert_eq!(s.file_id("CURRENT.tmp"), None);
        assert_eq!(s.valid_bytes(4), 8);
        // Renaming a file to its own name changes nothing.
        let before = s.clone();
        s.apply(&rename).unwrap();
        assert_eq!(s, before);
        s.check_invariants().unwrap();
    }

    #[test]
    fn zone_placement_is_kept_and_cleared() {
        let mut s = state();
        let p = ZonePlacement {
            class: 2,
            policy: vec![1, 2, 3],
        };
        s.apply(&Record::ZoneMeta {
            zone: 5,
            placement: p.clone(),
        })
        .unwrap();
        assert_eq!(s.placement(5), Some(&p));
        s.apply(&Record::ZoneMeta {
            zone: 5,
            placement: ZonePlacement::default(),
        })
        .unwrap();
        assert_eq!(s.placement(5), None);
    }

    #[test]
    fn impossible_records_are_rejected_without_effect() {
        let mut s = state();
        put(&mut s, 1, file("a", &[ext(2, 0, 100)])).unwrap();
        put(&mut s, 2, file("b", &[ext(2, 100, 100)])).unwrap();
        let id = FileId(3);
        let upd = |meta: FileMeta| Record::FileUpdate { id, meta };
        rejects(
            &mut s,
            Record::FileDelete { id },
            StateError::UnknownFile { id },
        );
        rejects(
            &mut s,
            Record::FileRename {
                id,
                name: "z".into(),
            },
            StateError::UnknownFile { id },
        );
        rejects(
            &mut s,
            upd(file("a", &[])),
            StateError::DuplicateName {
                name: "a".into(),
                existing: FileId(1),
            },
        );
        rejects(
            &mut s,
            Record::FileUpdate {
                id: FileId(2),
                meta: file("a", &[ext(2, 100, 100)]),
            },
            StateError::DuplicateName {
                name: "a".into(),
                existing: FileId(1),
            },
        );
        s.apply(&Record::FileDelete { id: FileId(2) }).unwrap();
        rejects(
            &mut s,
            Record::FileUpdate {
                id: FileId(2),
                meta: file("b", &[]),
            },
            StateError::StaleFileId {
                id: FileId(2),
                next: 3,
            },
        );
        // Found by the meta_record fuzz target: the largest id was accepted, and then
        // no next id was left above it.
        rejects(
            &mut s,
            Record::FileUpdate {
                id: FileId(u64::MAX),
                meta: file("max", &[]),
            },
            StateError::LastFileId {
                id: FileId(u64::MAX),
            },
        );
        for zone in [0, 1, 8, u32::MAX] {
            rejects(
                &mut s,
                upd(file("c", &[ext(zone, 0, 1)])),
                StateError::NotDataZone {
                    zone,
                    first: 2,
                    end: 8,
                },
            );
        }
        let bad = |offset, len, reason| StateError::BadExtent {
            id,
            zone: 3,
            offset,
            len,
            reason,
        };
        rejects(
            &mut s,
            upd(file("c", &[ext(3, 0, 0)])),
            bad(0, 0, "empty extent"),
        );
        let beyond = "extent ends beyond the zone capacity";
        rejects(
            &mut s,
            upd(file("c", &[ext(3, 1 << 20, 1)])),
            bad(1 << 20, 1, beyond),
        );
        rejects(
            &mut s,
            upd(file("c", &[ext(3, u64::MAX, 2)])),
            bad(u64::MAX, 2, beyond),
        );
        rejects(
            &mut s,
            upd(file("c", &[ext(2, 99, 2)])),
            StateError::Overlap {
                id,
                other: FileId(1),
                zone: 2,
                offset: 99,
            },
        );
        rejects(
            &mut s,
            upd(file("c", &[ext(3, 0, 10), ext(3, 5, 10)])),
            StateError::Overlap {
                id,
                other: id,
                zone: 3,
                offset: 5,
            },
        );
        let mut big = file("c", &[ext(3, 0, 10)]);
        big.size = 11;
        rejects(
            &mut s,
            upd(big),
            StateError::SizeBeyondExtents {
                id,
                size: 11,
                extent_bytes: 10,
            },
        );
        rejects(
            &mut s,
            upd(file("", &[])),
            StateError::InvalidName {
                reason: "the name is empty",
            },
        );
        rejects(
            &mut s,
            upd(file(&"x".repeat(MAX_NAME_LEN + 1), &[])),
            StateError::InvalidName {
                reason: "the name is longer than 4096 bytes",
            },
        );
        rejects(
            &mut s,
            Record::ZoneMeta {
                zone: 1,
                placement: ZonePlacement::default(),
            },
            StateError::NotDataZone {
                zone: 1,
                first: 2,
                end: 8,
            },
        );
        rejects(
            &mut s,
            Record::ZoneMeta {
                zone: 3,
                placement: ZonePlacement {
                    class: 1,
                    policy: vec![0; MAX_POLICY_LEN + 1],
                },
            },
            StateError::PolicyTooLarge {
                zone: 3,
                len: MAX_POLICY_LEN + 1,
                max: MAX_POLICY_LEN,
            },
        );
    }

    #[test]
    fn snapshots_rebuild_the_same_state() {
        let mut s = state();
        put(&mut s, 1, file("a", &[ext(2, 0, 100)])).unwrap();
        put(&mut s, 4, file("b", &[ext(6, 0, 1), ext(7, 9, 9)])).unwrap();
        s.apply(&Record::ZoneMeta {
            zone: 6,
            placement: ZonePlacement {
                class: 9,
                policy: vec![7; 12],
            },
        })
        .unwrap();
        let snap = s.to_snapshot();
        assert_eq!(
            FsState::from_snapshot(snap.clone(), s.layout()),
            Ok(s.clone())
        );
        let mut other = state();
        other.apply(&Record::Snapshot(snap.clone())).unwrap();
        assert_eq!(other, s);

        let mut dup = snap.clone();
        dup.files.push(dup.files[0].clone());
        assert_eq!(
            FsState::from_snapshot(dup, s.layout()),
            Err(StateError::DuplicateFileId { id: FileId(1) })
        );
        let mut low = snap.clone();
        low.next_file_id = 4;
        assert!(matches!(
            FsState::from_snapshot(low, s.layout()),
            Err(StateError::StaleFileId { .. })
        ));
        let moved = ZoneLayout::new(9, 1 << 20, 2);
        assert!(matches!(
            FsState::from_snapshot(snap, moved),
            Err(StateError::LayoutMismatch { .. })
        ));
    }

    fn options(placement: &str) -> StoredOptions {
        StoredOptions {
            reserved_zones: 1,
            placement: placement.into(),
            finish_threshold: Some(10),
            gc_start: 20,
            gc_stop: 25,
            gc_mode: "copy".into(),
        }
    }

    #[test]
    fn options_are_replaced_kept_in_snapshots_and_checked() {
        let mut s = state();
        assert_eq!(s.options(), None);
        s.apply(&Record::Options(options("liza"))).unwrap();
        s.apply(&Record::Options(options("other"))).unwrap();
        assert_eq!(s.options(), Some(&options("other")));
        let snap = s.to_snapshot();
        assert_eq!(snap.options, Some(options("other")));
        assert_eq!(FsState::from_snapshot(snap, s.layout()), Ok(s.clone()));
        for (name, len) in [("", 0), (&*"x".repeat(65), 65)] {
            rejects(
                &mut s,
                Record::Options(options(name)),
                StateError::BadOptionName {
                    what: "placement policy",
                    len,
                    max: MAX_OPTION_NAME_LEN,
                },
            );
        }
    }

    #[test]
    fn invariant_check_catches_inconsistent_indexes() {
        let mut s = state();
        put(&mut s, 1, file("a", &[ext(2, 0, 100)])).unwrap();
        s.check_invariants().unwrap();
        let mut broken = s.clone();
        broken.names.insert("ghost".into(), FileId(1));
        assert!(matches!(
            broken.check_invariants(),
            Err(StateError::Invariant { .. })
        ));
        let mut broken = s.clone();
        broken.extents = ExtentIndex::new(8);
        assert!(matches!(
            broken.check_invariants(),
            Err(StateError::Invariant { .. })
        ));
        let mut broken = s;
        if let Some(m) = broken.files.get_mut(&FileId(1)) {
            m.extents.push(ext(0, 0, 1));
        }
        assert!(broken.check_invariants().is_err());
    }
}
