//! Records of the metadata log and their binary encoding (format version 2; the byte
//! layout is specified in `docs/METADATA.md`).
//!
//! Every frame on disk is `length u32 | crc32c u32 | type u8 | payload`, little endian,
//! where `length` counts the type byte and the payload and the checksum covers the same
//! bytes. Decoding never panics: every malformed input is a typed [`FrameError`].

use super::codec::{
    put_bytes, put_len, put_u32, put_u64, put_u8, u32_at, ByteReader, DecodeError, EncodeError,
};
use super::options::StoredOptions;
use super::state::{
    Extent, FileId, FileKind, FileMeta, FsState, Snapshot, ZoneLayout, ZonePlacement,
};

/// Bytes before the type byte: the length word and the checksum.
pub const FRAME_HEADER_LEN: usize = 8;

/// One change of the metadata state.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record {
    /// The whole state (first record of every metadata zone).
    Snapshot(Snapshot),
    /// Creates the file or replaces all of its metadata.
    FileUpdate {
        /// The file.
        id: FileId,
        /// All of its metadata.
        meta: FileMeta,
    },
    /// Deletes the file.
    FileDelete {
        /// The file.
        id: FileId,
    },
    /// Renames a file, deleting any other file that has the new name.
    FileRename {
        /// The file.
        id: FileId,
        /// Its new name.
        name: String,
    },
    /// Sets (or, with the empty value, clears) a data zone's placement metadata.
    ZoneMeta {
        /// The data zone.
        zone: u32,
        /// Its placement metadata.
        placement: ZonePlacement,
    },
    /// Replaces the recorded file-system options.
    Options(StoredOptions),
}

/// Marks the end of one sync's batch of records: the records before it (back to the
/// previous commit) take effect together or not at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// Batches are numbered from the format (0) on, one per write; numbers are consecutive.
    pub seq: u64,
    /// Records in the batch.
    pub records: u32,
    /// Bytes from the start of the batch's first frame to the start of this commit frame
    /// (format 3 on; `None` in format 2 commits): from an intact commit, the start of its
    /// batch can be found even when the frames before it cannot be walked.
    pub span: Option<u32>,
}

/// What one frame holds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Frame {
    /// A change of the state.
    Record(Record),
    /// The end of a batch.
    Commit(Commit),
}

/// The frame type byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrameKind {
    /// [`Record::Snapshot`].
    Snapshot,
    /// [`Record::FileUpdate`].
    FileUpdate,
    /// [`Record::FileDelete`].
    FileDelete,
    /// [`Record::FileRename`].
    FileRename,
    /// [`Record::ZoneMeta`].
    ZoneMeta,
    /// [`Record::Options`].
    Options,
    /// [`Frame::Commit`].
    Commit,
}

impl FrameKind {
    /// Every kind, in code order.
    pub const ALL: [FrameKind; 7] = [
        FrameKind::Snapshot,
        FrameKind::FileUpdate,
        FrameKind::FileDelete,
        FrameKind::FileRename,
        FrameKind::ZoneMeta,
        FrameKind::Options,
        FrameKind::Commit,
    ];

    /// The type byte written in the frame.
    pub fn code(self) -> u8 {
        match self {
            FrameKind::Snapshot => 1,
            FrameKind::FileUpdate => 2,
            FrameKind::FileDelete => 3,
            FrameKind::FileRename => 4,
            FrameKind::ZoneMeta => 5,
            FrameKind::Options => 6,
            FrameKind::Commit => 16,
        }
    }

    /// The kind of that type byte; `None` for a byte that is none.
    pub fn from_code(code: u8) -> Option<FrameKind> {
        FrameKind::ALL.into_iter().find(|k| k.code() == code)
    }
}

/// Why bytes are not a frame.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A zero length word: padding or unwritten space, no frame.
    #[error("zero length word (padding or unwritten space)")]
    Empty,

    /// The frame's length word says more bytes than there are.
    #[error("frame needs {need} bytes but only {have} remain")]
    Truncated {
        /// Bytes the frame needs.
        need: u64,
        /// Bytes left.
        have: u64,
    },

    /// The stored checksum does not match the frame's bytes.
    #[error("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// The CRC32C recorded.
        stored: u32,
        /// The CRC32C of the bytes read.
        computed: u32,
    },

    /// A type byte this build does not know (with a matching checksum).
    #[error("unknown frame type {code}")]
    UnknownType {
        /// The type byte.
        code: u8,
    },

    /// A commit whose record count is not the number of records before it.
    #[error("commit counts {counted} records, found {found}")]
    CountMismatch {
        /// Records the commit counts.
        counted: u32,
        /// Records found in its batch.
        found: u32,
    },

    /// A frame whose payload cannot be decoded (with a matching checksum).
    #[error("undecodable {kind:?} payload: {source}")]
    Payload {
        /// The frame's kind.
        kind: FrameKind,
        /// Why the payload cannot be decoded.
        #[source]
        source: DecodeError,
    },
}

impl FrameError {
    /// True for what a torn write or a damaged medium produces (no frame, a cut frame, a
    /// checksum mismatch). False when the checksum matched, i.e. the frame was written
    /// like this and this build cannot read it.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            FrameError::Empty | FrameError::Truncated { .. } | FrameError::Checksum { .. }
        )
    }
}

impl Record {
    /// The frame kind the record is written as.
    pub fn kind(&self) -> FrameKind {
        match self {
            Record::Snapshot(_) => FrameKind::Snapshot,
            Record::FileUpdate { .. } => FrameKind::FileUpdate,
            Record::FileDelete { .. } => FrameKind::FileDelete,
            Record::FileRename { .. } => FrameKind::FileRename,
            Record::ZoneMeta { .. } => FrameKind::ZoneMeta,
            Record::Options(_) => FrameKind::Options,
        }
    }

    /// Appends the payload (without frame header or type byte).
    pub fn encode_payload(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Record::Snapshot(s) => put_snapshot(out, &SnapshotParts::of_snapshot(s)),
            Record::FileUpdate { id, meta } => {
                put_u64(out, id.0);
                put_file(out, meta)
            }
            Record::FileDelete { id } => {
                put_u64(out, id.0);
                Ok(())
            }
            Record::FileRename { id, name } => {
                put_u64(out, id.0);
                put_bytes(out, name.as_bytes(), "file name")
            }
            Record::ZoneMeta { zone, placement } => {
                put_u32(out, *zone);
                put_placement(out, placement)
            }
            Record::Options(options) => put_options(out, options),
        }
    }

    /// Decodes a payload of the given kind; the whole payload must be consumed.
    pub fn decode_payload(kind: FrameKind, payload: &[u8]) -> Result<Record, DecodeError> {
        let mut r = ByteReader::new(payload);
        let rec = match kind {
            FrameKind::Snapshot => Record::Snapshot(get_snapshot(&mut r)?),
            FrameKind::FileUpdate => Record::FileUpdate {
                id: FileId(r.u64("file id")?),
                meta: get_file(&mut r)?,
            },
            FrameKind::FileDelete => Record::FileDelete {
                id: FileId(r.u64("file id")?),
            },
            FrameKind::FileRename => Record::FileRename {
                id: FileId(r.u64("file id")?),
                name: r.string("file name")?,
            },
            FrameKind::ZoneMeta => Record::ZoneMeta {
                zone: r.u32("zone")?,
                placement: get_placement(&mut r)?,
            },
            FrameKind::Options => Record::Options(get_options(&mut r)?),
            FrameKind::Commit => {
                return Err(DecodeError::UnknownCode {
                    what: "record type",
                    code: kind.code(),
                })
            }
        };
        r.finish("record payload")?;
        Ok(rec)
    }

    /// Appends the record as a complete frame.
    pub fn encode_frame(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        encode_frame(out, self.kind(), |o| self.encode_payload(o))
    }
}

impl Commit {
    /// Appends the commit as a complete frame.
    pub fn encode_frame(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        encode_frame(out, FrameKind::Commit, |o| {
            put_u64(o, self.seq);
            put_u32(o, self.records);
            if let Some(span) = self.span {
                put_u32(o, span);
            }
            Ok(())
        })
    }

    fn decode_payload(payload: &[u8]) -> Result<Commit, DecodeError> {
        let mut r = ByteReader::new(payload);
        let seq = r.u64("commit sequence")?;
        let records = r.u32("commit record count")?;
        let span = match r.remaining() {
            0 => None,
            _ => Some(r.u32("commit span")?),
        };
        let commit = Commit { seq, records, span };
        r.finish("commit payload")?;
        Ok(commit)
    }
}

impl Frame {
    /// The frame's kind.
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Record(r) => r.kind(),
            Frame::Commit(_) => FrameKind::Commit,
        }
    }

    /// Appends the frame, complete.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Frame::Record(r) => r.encode_frame(out),
            Frame::Commit(c) => c.encode_frame(out),
        }
    }
}

/// Appends a frame whose payload `body` writes. On error `out` is left as it was.
pub fn encode_frame(
    out: &mut Vec<u8>,
    kind: FrameKind,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    // The header covers the bytes after it, so they are encoded first.
    let mut covered = vec![kind.code()];
    body(&mut covered)?;
    let len = u32::try_from(covered.len()).map_err(|_| EncodeError::TooLong {
        what: "frame",
        len: covered.len() as u64,
    })?;
    out.reserve(FRAME_HEADER_LEN + covered.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&covered).to_le_bytes());
    out.extend_from_slice(&covered);
    Ok(())
}

/// Checks the framing and checksum of the frame at the start of `buf` without decoding
/// the payload. Returns the type code, the payload and the frame's total length.
pub fn check_frame(buf: &[u8]) -> Result<(u8, &[u8], usize), FrameError> {
    let have = buf.len() as u64;
    let len = u32_at(buf, 0).ok_or(FrameError::Truncated { need: 4, have })?;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    let total = FRAME_HEADER_LEN as u64 + u64::from(len);
    if total > have {
        return Err(FrameError::Truncated { need: total, have });
    }
    let stored = u32_at(buf, 4).ok_or(FrameError::Truncated { need: 8, have })?;
    let covered = buf
        .get(FRAME_HEADER_LEN..total as usize)
        .ok_or(FrameError::Truncated { need: total, have })?;
    let computed = crc32c::crc32c(covered);
    if stored != computed {
        return Err(FrameError::Checksum { stored, computed });
    }
    let (&code, payload) = covered.split_first().ok_or(FrameError::Empty)?;
    Ok((code, payload, total as usize))
}

/// Decodes the frame at the start of `buf`; returns it and its total length in bytes.
pub fn decode_frame(buf: &[u8]) -> Result<(Frame, usize), FrameError> {
    let (code, payload, total) = check_frame(buf)?;
    let kind = FrameKind::from_code(code).ok_or(FrameError::UnknownType { code })?;
    let frame = match kind {
        FrameKind::Commit => Commit::decode_payload(payload).map(Frame::Commit),
        _ => Record::decode_payload(kind, payload).map(Frame::Record),
    };
    frame
        .map(|f| (f, total))
        .map_err(|source| FrameError::Payload { kind, source })
}

/// Appends a snapshot frame of `state` without copying it.
pub(crate) fn encode_state_snapshot(state: &FsState, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let parts = SnapshotParts {
        layout: state.layout(),
        next_file_id: state.next_file_id().0,
        options: state.options(),
        files: state.files().collect(),
        zones: state.placements().collect(),
    };
    encode_frame(out, FrameKind::Snapshot, |o| put_snapshot(o, &parts))
}

/// Borrowed view of a snapshot, so that a live state and a [`Snapshot`] encode the same way.
struct SnapshotParts<'a> {
    layout: ZoneLayout,
    next_file_id: u64,
    options: Option<&'a StoredOptions>,
    files: Vec<(FileId, &'a FileMeta)>,
    zones: Vec<(u32, &'a ZonePlacement)>,
}

impl<'a> SnapshotParts<'a> {
    fn of_snapshot(s: &'a Snapshot) -> SnapshotParts<'a> {
        SnapshotParts {
            layout: s.layout,
            next_file_id: s.next_file_id,
            options: s.options.as_ref(),
            files: s.files.iter().map(|(id, m)| (*id, m)).collect(),
            zones: s.zones.iter().map(|(z, p)| (*z, p)).collect(),
        }
    }
}

/// Smallest encoded file entry of a snapshot: id, name length, kind, size, level flag,
/// lifetime, extent count.
const MIN_SNAPSHOT_FILE: usize = 8 + 4 + 1 + 8 + 1 + 1 + 4;
/// Encoded extent: zone, offset, length.
const EXTENT_LEN: usize = 4 + 8 + 8;
/// Smallest encoded zone entry: zone, class, policy length.
const MIN_ZONE_ENTRY: usize = 4 + 1 + 4;

fn put_snapshot(out: &mut Vec<u8>, s: &SnapshotParts<'_>) -> Result<(), EncodeError> {
    put_u32(out, s.layout.zones);
    put_u64(out, s.layout.zone_capacity);
    put_u32(out, s.layout.meta_zones);
    put_u64(out, s.next_file_id);
    match s.options {
        None => put_u8(out, 0),
        Some(options) => {
            put_u8(out, 1);
            put_options(out, options)?;
        }
    }
    put_len(out, s.files.len(), "snapshot file count")?;
    for (id, meta) in &s.files {
        put_u64(out, id.0);
        put_file(out, meta)?;
    }
    put_len(out, s.zones.len(), "snapshot zone count")?;
    for (zone, placement) in &s.zones {
        put_u32(out, *zone);
        put_placement(out, placement)?;
    }
    Ok(())
}

fn get_snapshot(r: &mut ByteReader<'_>) -> Result<Snapshot, DecodeError> {
    let layout = ZoneLayout::new(
        r.u32("layout zones")?,
        r.u64("layout zone capacity")?,
        r.u32("layout metadata zones")?,
    );
    let next_file_id = r.u64("next file id")?;
    let options = if flag(r, "options flag")? {
        Some(get_options(r)?)
    } else {
        None
    };
    let count = r.count("snapshot file count", MIN_SNAPSHOT_FILE)?;
    let mut files = Vec::with_capacity(count);
    for _ in 0..count {
        files.push((FileId(r.u64("file id")?), get_file(r)?));
    }
    let count = r.count("snapshot zone count", MIN_ZONE_ENTRY)?;
    let mut zones = Vec::with_capacity(count);
    for _ in 0..count {
        zones.push((r.u32("zone")?, get_placement(r)?));
    }
    Ok(Snapshot {
        layout,
        next_file_id,
        options,
        files,
        zones,
    })
}

fn put_file(out: &mut Vec<u8>, m: &FileMeta) -> Result<(), EncodeError> {
    put_bytes(out, m.name.as_bytes(), "file name")?;
    put_u8(out, m.kind.code());
    put_u64(out, m.size);
    put_opt_u8(out, m.level);
    put_u8(out, m.lifetime);
    put_len(out, m.extents.len(), "extent count")?;
    for e in &m.extents {
        put_u32(out, e.zone);
        put_u64(out, e.offset);
        put_u64(out, e.len);
    }
    Ok(())
}

fn get_file(r: &mut ByteReader<'_>) -> Result<FileMeta, DecodeError> {
    let name = r.string("file name")?;
    let code = r.u8("file kind")?;
    let kind = FileKind::from_code(code).ok_or(DecodeError::UnknownCode {
        what: "file kind",
        code,
    })?;
    let size = r.u64("file size")?;
    let level = get_opt_u8(r, "level flag", "level")?;
    let lifetime = r.u8("lifetime class")?;
    let count = r.count("extent count", EXTENT_LEN)?;
    let mut extents = Vec::with_capacity(count);
    for _ in 0..count {
        extents.push(Extent {
            zone: r.u32("extent zone")?,
            offset: r.u64("extent offset")?,
            len: r.u64("extent length")?,
        });
    }
    Ok(FileMeta {
        name,
        kind,
        size,
        extents,
        level,
        lifetime,
    })
}

/// An optional byte: a flag (0 absent, 1 present), then the byte if present.
fn put_opt_u8(out: &mut Vec<u8>, v: Option<u8>) {
    match v {
        None => put_u8(out, 0),
        Some(v) => {
            put_u8(out, 1);
            put_u8(out, v);
        }
    }
}

fn get_opt_u8(
    r: &mut ByteReader<'_>,
    flag_what: &'static str,
    what: &'static str,
) -> Result<Option<u8>, DecodeError> {
    if flag(r, flag_what)? {
        Ok(Some(r.u8(what)?))
    } else {
        Ok(None)
    }
}

/// A presence flag: 0 or 1, anything else is not ours.
fn flag(r: &mut ByteReader<'_>, what: &'static str) -> Result<bool, DecodeError> {
    match r.u8(what)? {
        0 => Ok(false),
        1 => Ok(true),
        code => Err(DecodeError::UnknownCode { what, code }),
    }
}

fn put_options(out: &mut Vec<u8>, o: &StoredOptions) -> Result<(), EncodeError> {
    put_u32(out, o.reserved_zones);
    put_bytes(out, o.placement.as_bytes(), "placement policy name")?;
    put_opt_u8(out, o.finish_threshold);
    put_u8(out, o.gc_start);
    put_u8(out, o.gc_stop);
    put_bytes(out, o.gc_mode.as_bytes(), "cleaning mode name")
}

fn get_options(r: &mut ByteReader<'_>) -> Result<StoredOptions, DecodeError> {
    Ok(StoredOptions {
        reserved_zones: r.u32("reserved zones")?,
        placement: r.string("placement policy name")?,
        finish_threshold: get_opt_u8(r, "finish threshold flag", "finish threshold")?,
        gc_start: r.u8("gc start")?,
        gc_stop: r.u8("gc stop")?,
        gc_mode: r.string("cleaning mode name")?,
    })
}

fn put_placement(out: &mut Vec<u8>, p: &ZonePlacement) -> Result<(), EncodeError> {
    put_u8(out, p.class);
    put_bytes(out, &p.policy, "zone policy metadata")
}

fn get_placement(r: &mut ByteReader<'_>) -> Result<ZonePlacement, DecodeError> {
    Ok(ZonePlacement {
        class: r.u8("zone class")?,
        policy: r.bytes("zone policy metadata")?.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, level: Option<u8>, extents: usize) -> FileMeta {
        FileMeta {
            name: name.into(),
            kind: FileKind::Blob,
            size: 12345,
            extents: (0..extents as u64)
                .map(|i| Extent {
                    zone: 3 + i as u32,
                    offset: i * 4096,
                    len: 8192 + i,
                })
                .collect(),
            level,
            lifetime: 4,
        }
    }

    fn options(finish_threshold: Option<u8>) -> StoredOptions {
        StoredOptions {
            reserved_zones: u32::MAX,
            placement: "liza".into(),
            finish_threshold,
            gc_start: 1,
            gc_stop: 99,
            gc_mode: "compensate".into(),
        }
    }

    fn samples() -> Vec<Record> {
        let snapshot = Snapshot {
            layout: ZoneLayout::new(64, 1 << 30, 3),
            next_file_id: 99,
            options: Some(options(None)),
            files: vec![
                (FileId(7), file("000007.sst", Some(2), 3)),
                (FileId(8), file("MANIFEST-000008", None, 0)),
            ],
            zones: vec![
                (
                    5,
                    ZonePlacement {
                        class: 1,
                        policy: vec![1, 2, 3, 4],
                    },
                ),
                (6, ZonePlacement::default()),
            ],
        };
        let empty = Snapshot {
            layout: ZoneLayout::new(4, 4096, 2),
            next_file_id: 1,
            options: None,
            files: vec![],
            zones: vec![],
        };
        let mut all = vec![Record::Snapshot(snapshot), Record::Snapshot(empty)];
        for kind in FileKind::ALL {
            let mut meta = file("ünïcode ✓", Some(0), 2);
            meta.kind = kind;
            all.push(Record::FileUpdate {
                id: FileId(u64::MAX),
                meta,
            });
        }
        all.extend([
            Record::FileDelete { id: FileId(0) },
            Record::FileRename {
                id: FileId(3),
                name: "CURRENT".into(),
            },
            Record::ZoneMeta {
                zone: u32::MAX,
                placement: ZonePlacement {
                    class: 255,
                    policy: vec![0xab; 300],
                },
            },
            Record::Options(options(Some(100))),
            Record::Options(options(None)),
        ]);
        all
    }

    #[test]
    fn every_record_round_trips() {
        for rec in samples() {
            let mut buf = Vec::new();
            rec.encode_frame(&mut buf).unwrap();
            let (frame, len) = decode_frame(&buf).unwrap();
            assert_eq!(len, buf.len());
            assert_eq!(frame, Frame::Record(rec.clone()));
            let mut payload = Vec::new();
            rec.encode_payload(&mut payload).unwrap();
            assert_eq!(Record::decode_payload(rec.kind(), &payload), Ok(rec));
        }
        for span in [None, Some(4242)] {
            let commit = Commit {
                seq: u64::MAX,
                records: 17,
                span,
            };
            let mut buf = Vec::new();
            Frame::Commit(commit).encode(&mut buf).unwrap();
            assert_eq!(decode_frame(&buf), Ok((Frame::Commit(commit), buf.len())));
        }
    }

    #[test]
    fn frames_carry_length_checksum_and_type() {
        let rec = Record::FileDelete { id: FileId(5) };
        let mut buf = Vec::new();
        rec.encode_frame(&mut buf).unwrap();
        assert_eq!(buf.len(), FRAME_HEADER_LEN + 1 + 8);
        assert_eq!(&buf[0..4], &9u32.to_le_bytes());
        assert_eq!(&buf[4..8], &crc32c::crc32c(&buf[8..]).to_le_bytes());
        assert_eq!(buf[8], FrameKind::FileDelete.code());
    }

    #[test]
    fn every_bit_flip_and_every_truncation_is_detected() {
        let mut buf = Vec::new();
        samples()[0].encode_frame(&mut buf).unwrap();
        for bit in 0..buf.len() * 8 {
            let mut b = buf.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_frame(&b).is_err(), "bit {bit}");
        }
        for len in 0..buf.len() {
            assert!(decode_frame(&buf[..len]).is_err(), "length {len}");
        }
    }

    #[test]
    fn well_framed_but_unreadable_frames_are_not_damage() {
        let unknown = {
            let mut b = Vec::new();
            encode_frame(&mut b, FrameKind::FileDelete, |o| {
                put_u64(o, 1);
                Ok(())
            })
            .unwrap();
            b[8] = 99;
            let crc = crc32c::crc32c(&b[8..]);
            b[4..8].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let err = decode_frame(&unknown).unwrap_err();
        assert_eq!(err, FrameError::UnknownType { code: 99 });
        assert!(!err.is_damage());

        let mut trailing = Vec::new();
        encode_frame(&mut trailing, FrameKind::FileDelete, |o| {
            put_u64(o, 1);
            put_u8(o, 0);
            Ok(())
        })
        .unwrap();
        let err = decode_frame(&trailing).unwrap_err();
        assert!(matches!(err, FrameError::Payload { .. }));
        assert!(!err.is_damage());
        assert!(FrameError::Empty.is_damage());
    }

    #[test]
    fn failed_encoding_leaves_the_buffer_as_it_was() {
        let mut buf = vec![1, 2, 3];
        let err = encode_frame(&mut buf, FrameKind::Commit, |_| {
            Err(EncodeError::TooLong {
                what: "test",
                len: 0,
            })
        });
        assert!(err.is_err());
        assert_eq!(buf, [1, 2, 3]);
    }
}
