//! Version edits: the records of the manifest.
//!
//! An edit is a list of tagged fields. Each field starts with its tag (a varint); the tag
//! says what follows:
//!
//! | tag | field | body |
//! |---|---|---|
//! | 1 | log number | varint64 |
//! | 2 | next file number | varint64 |
//! | 3 | last sequence | varint64 |
//! | 4 | deleted file | varint32 level, varint64 number |
//! | 5 | new file | varint32 level, varint64 number, size, bytes smallest, bytes largest, varint64 smallest_seq, largest_seq, entries, deletions, raw_key_size, raw_value_size |
//! | 6 | compact cursor | varint32 level, bytes key |
//! | 7 | lifetime clock | varint64 tick, compacting levels, compactions, deleted files, count n, then n × (Σ passive lifetime, passive deaths) |
//! | 8 | file lifetime | varint64 number (of a file the edit adds, before it), created tick, predicted lifetime, case (1 c1, 2 c2A, 3 c2B, 4 c3), level, moved (0/1) |
//! | 9 | blob file addition | varint64 number, blob count, blob bytes, file size |
//! | 10 | blob file garbage | varint64 number, garbage blob count, garbage blob bytes |
//! | 11 | oldest blob file | varint64 number (of a file the edit adds, before it), blob file number |
//!
//! `bytes` is a varint64 length followed by that many bytes. Varints are LEB128 (7 bits per
//! byte, low bits first), at most 10 bytes for 64 bits and 5 for 32 bits.
//!
//! Decoding is strict: an unknown tag, a truncated or overlong varint, a length beyond the
//! record, a file whose keys are not internal keys or whose smallest key is above its
//! largest is `Error::Corruption`. A per-file field added later gets a new tag (a new file
//! record), so an old reader refuses a manifest it cannot understand instead of dropping
//! data silently.

use std::cmp::Ordering;

use crate::coding::{
    get_length_prefixed, put_length_prefixed, put_varint64, read_varint, DecodeError,
};
use crate::key::{self, SeqNo};
use crate::lifetime::{Case, Clock, FileLifetime};
use crate::{Error, Result};

use super::{BlobFileMeta, BlobGarbage, FileMeta};

const TAG_LOG_NUMBER: u32 = 1;
const TAG_NEXT_FILE_NUMBER: u32 = 2;
const TAG_LAST_SEQUENCE: u32 = 3;
const TAG_DELETED_FILE: u32 = 4;
const TAG_NEW_FILE: u32 = 5;
const TAG_COMPACT_CURSOR: u32 = 6;
const TAG_CLOCK: u32 = 7;
const TAG_FILE_LIFETIME: u32 = 8;
const TAG_BLOB_FILE: u32 = 9;
const TAG_BLOB_GARBAGE: u32 = 10;
const TAG_OLDEST_BLOB_FILE: u32 = 11;

/// A change to the set of SSTs and to the counters of the version set (RocksDB's
/// `VersionEdit`). Deletions apply before additions, so one edit can move a file from one
/// level to another.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WALs numbered below this hold nothing that is not in SSTs.
    pub log_number: Option<u64>,
    /// The next file number to hand out.
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<SeqNo>,
    /// Files added, with their level.
    pub new_files: Vec<(u32, FileMeta)>,
    /// Files removed: (level, file number).
    pub deleted_files: Vec<(u32, u64)>,
    /// Round-robin compaction cursors: (level, key where the next pick starts).
    pub compact_cursors: Vec<(u32, Vec<u8>)>,
    /// The lifetime clock after this edit, when the database predicts lifetimes.
    pub clock: Option<Clock>,
    /// Blob files added (their garbage fields are 0: garbage comes in `blob_garbage`).
    pub blob_files: Vec<BlobFileMeta>,
    /// Blobs of existing blob files that became garbage.
    pub blob_garbage: Vec<BlobGarbage>,
}

impl VersionEdit {
    /// An edit that changes nothing.
    pub fn new() -> VersionEdit {
        VersionEdit::default()
    }

    /// Records that `meta` is added to `level`.
    pub fn add_file(&mut self, level: u32, meta: FileMeta) {
        self.new_files.push((level, meta));
    }

    /// Records that file `number` leaves `level`.
    pub fn delete_file(&mut self, level: u32, number: u64) {
        self.deleted_files.push((level, number));
    }

    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == VersionEdit::default()
    }

    /// The edit as the bytes of one manifest record.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let counters = [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE_NUMBER, self.next_file_number),
            (TAG_LAST_SEQUENCE, self.last_sequence),
        ];
        for (tag, value) in counters {
            if let Some(v) = value {
                put_varint64(&mut out, u64::from(tag));
                put_varint64(&mut out, v);
            }
        }
        for &(level, number) in &self.deleted_files {
            put_varint64(&mut out, u64::from(TAG_DELETED_FILE));
            put_varint64(&mut out, u64::from(level));
            put_varint64(&mut out, number);
        }
        for (level, meta) in &self.new_files {
            put_varint64(&mut out, u64::from(TAG_NEW_FILE));
            put_varint64(&mut out, u64::from(*level));
            encode_file(&mut out, meta);
            if let Some(l) = &meta.lifetime {
                put_varint64(&mut out, u64::from(TAG_FILE_LIFETIME));
                encode_lifetime(&mut out, meta.number, l);
            }
            if let Some(blob) = meta.oldest_blob_file {
                put_varint64(&mut out, u64::from(TAG_OLDEST_BLOB_FILE));
                put_varint64(&mut out, meta.number);
                put_varint64(&mut out, blob);
            }
        }
        for b in &self.blob_files {
            put_varint64(&mut out, u64::from(TAG_BLOB_FILE));
            for v in [b.number, b.total_count, b.total_bytes, b.file_size] {
                put_varint64(&mut out, v);
            }
        }
        for g in &self.blob_garbage {
            put_varint64(&mut out, u64::from(TAG_BLOB_GARBAGE));
            for v in [g.number, g.count, g.bytes] {
                put_varint64(&mut out, v);
            }
        }
        for (level, cursor) in &self.compact_cursors {
            put_varint64(&mut out, u64::from(TAG_COMPACT_CURSOR));
            put_varint64(&mut out, u64::from(*level));
            put_length_prefixed(&mut out, cursor);
        }
        if let Some(clock) = &self.clock {
            put_varint64(&mut out, u64::from(TAG_CLOCK));
            encode_clock(&mut out, clock);
        }
        out
    }

    /// Decodes one manifest record; anything malformed is `Error::Corruption`.
    pub fn decode(data: &[u8]) -> Result<VersionEdit> {
        let mut r = Reader { data, pos: 0 };
        let mut edit = VersionEdit::default();
        while !r.at_end() {
            let at = r.pos;
            let tag = r.varint32("tag")?;
            match tag {
                TAG_LOG_NUMBER => edit.log_number = Some(r.varint64("log number")?),
                TAG_NEXT_FILE_NUMBER => {
                    edit.next_file_number = Some(r.varint64("next file number")?)
                }
                TAG_LAST_SEQUENCE => edit.last_sequence = Some(r.sequence("last sequence")?),
                TAG_DELETED_FILE => {
                    let level = r.varint32("level of a deleted file")?;
                    let number = r.varint64("number of a deleted file")?;
                    edit.deleted_files.push((level, number));
                }
                TAG_NEW_FILE => {
                    let level = r.varint32("level of a new file")?;
                    edit.new_files.push((level, decode_file(&mut r)?));
                }
                TAG_COMPACT_CURSOR => {
                    let level = r.varint32("level of a compact cursor")?;
                    let key = r.bytes("compact cursor")?.to_vec();
                    edit.compact_cursors.push((level, key));
                }
                TAG_CLOCK => edit.clock = Some(decode_clock(&mut r)?),
                TAG_FILE_LIFETIME => {
                    let (number, lifetime) = decode_lifetime(&mut r)?;
                    let file = edit.new_files.iter_mut().rev().map(|(_, f)| f);
                    let Some(file) = file.into_iter().find(|f| f.number == number) else {
                        return Err(bad(format!(
                            "lifetime of file {number} at byte {at}: the edit adds no such file before it"
                        )));
                    };
                    file.lifetime = Some(lifetime);
                }
                TAG_OLDEST_BLOB_FILE => {
                    let number = r.varint64("number of a file linked to a blob file")?;
                    let blob = r.varint64("oldest blob file")?;
                    let file = edit.new_files.iter_mut().rev().map(|(_, f)| f);
                    let Some(file) = file.into_iter().find(|f| f.number == number) else {
                        return Err(bad(format!(
                            "oldest blob file of file {number} at byte {at}: the edit adds no such file before it"
                        )));
                    };
                    file.oldest_blob_file = Some(blob);
                }
                TAG_BLOB_FILE => edit.blob_files.push(BlobFileMeta {
                    number: r.varint64("blob file number")?,
                    total_count: r.varint64("blob count")?,
                    total_bytes: r.varint64("blob bytes")?,
                    file_size: r.varint64("blob file size")?,
                    ..BlobFileMeta::default()
                }),
                TAG_BLOB_GARBAGE => edit.blob_garbage.push(BlobGarbage {
                    number: r.varint64("number of a blob file with garbage")?,
                    count: r.varint64("garbage blob count")?,
                    bytes: r.varint64("garbage blob bytes")?,
                }),
                other => return Err(bad(format!("unknown tag {other} at byte {at}"))),
            }
        }
        Ok(edit)
    }
}

fn encode_file(out: &mut Vec<u8>, m: &FileMeta) {
    put_varint64(out, m.number);
    put_varint64(out, m.size);
    put_length_prefixed(out, &m.smallest);
    put_length_prefixed(out, &m.largest);
    for v in [
        m.smallest_seq,
        m.largest_seq,
        m.entries,
        m.deletions,
        m.raw_key_size,
        m.raw_value_size,
    ] {
        put_varint64(out, v);
    }
}

fn encode_lifetime(out: &mut Vec<u8>, number: u64, l: &FileLifetime) {
    let fields = [
        number,
        l.created,
        l.lifetime,
        l.case.code(),
        u64::from(l.level),
        u64::from(l.moved),
    ];
    for v in fields {
        put_varint64(out, v);
    }
}

fn decode_lifetime(r: &mut Reader<'_>) -> Result<(u64, FileLifetime)> {
    let number = r.varint64("number of a file lifetime")?;
    let created = r.varint64("creation tick")?;
    let lifetime = r.varint64("predicted lifetime")?;
    let at = r.pos;
    let code = r.varint64("lifetime case")?;
    let case = Case::from_code(code)
        .ok_or_else(|| bad(format!("unknown lifetime case {code} at byte {at}")))?;
    let level = r.varint32("level of a file lifetime")?;
    let level = u8::try_from(level)
        .map_err(|_| bad(format!("lifetime level {level} at byte {at} exceeds 255")))?;
    let moved = match r.varint64("moved flag")? {
        0 => false,
        1 => true,
        other => {
            return Err(bad(format!(
                "moved flag {other} at byte {at} is not 0 or 1"
            )))
        }
    };
    let l = FileLifetime {
        created,
        lifetime,
        case,
        level,
        moved,
    };
    Ok((number, l))
}

fn encode_clock(out: &mut Vec<u8>, c: &Clock) {
    let head = [
        c.tick,
        u64::from(c.compacting_levels),
        c.compactions,
        c.deleted,
        c.passive.len() as u64,
    ];
    for v in head {
        put_varint64(out, v);
    }
    for &(sum, count) in &c.passive {
        put_varint64(out, sum);
        put_varint64(out, count);
    }
}

/// The largest number of levels a clock may describe (a bound for corrupt counts).
const MAX_CLOCK_LEVELS: u64 = 64;

fn decode_clock(r: &mut Reader<'_>) -> Result<Clock> {
    let mut c = Clock {
        tick: r.varint64("clock tick")?,
        compacting_levels: r.varint32("compacting levels")?,
        compactions: r.varint64("compactions")?,
        deleted: r.varint64("deleted files")?,
        passive: Vec::new(),
    };
    let at = r.pos;
    let n = r.varint64("clock levels")?;
    if n > MAX_CLOCK_LEVELS {
        return Err(bad(format!("clock of {n} levels at byte {at}")));
    }
    for _ in 0..n {
        let sum = r.varint64("passive lifetime sum")?;
        let count = r.varint64("passive deaths")?;
        c.passive.push((sum, count));
    }
    Ok(c)
}

fn decode_file(r: &mut Reader<'_>) -> Result<FileMeta> {
    let meta = FileMeta {
        number: r.varint64("file number")?,
        size: r.varint64("file size")?,
        smallest: r.bytes("smallest key")?.to_vec(),
        largest: r.bytes("largest key")?.to_vec(),
        smallest_seq: r.varint64("smallest sequence")?,
        largest_seq: r.varint64("largest sequence")?,
        entries: r.varint64("entries")?,
        deletions: r.varint64("deletions")?,
        raw_key_size: r.varint64("raw key size")?,
        raw_value_size: r.varint64("raw value size")?,
        lifetime: None,
        oldest_blob_file: None,
    };
    check_file(&meta)?;
    Ok(meta)
}

/// The checks every file of a version must pass.
pub(super) fn check_file(m: &FileMeta) -> Result<()> {
    let n = m.number;
    if key::parse(&m.smallest).is_none() || key::parse(&m.largest).is_none() {
        return Err(bad(format!("file {n}: a boundary is not an internal key")));
    }
    if key::compare(&m.smallest, &m.largest) == Ordering::Greater {
        return Err(bad(format!("file {n}: smallest key above largest key")));
    }
    if m.smallest_seq > m.largest_seq {
        return Err(bad(format!(
            "file {n}: smallest sequence {} above largest {}",
            m.smallest_seq, m.largest_seq
        )));
    }
    Ok(())
}

fn bad(detail: String) -> Error {
    Error::corruption("version edit", detail)
}

/// A cursor over a record that turns every shortfall into a corruption error.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn at_end(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn varint64(&mut self, what: &str) -> Result<u64> {
        let start = self.pos;
        read_varint(self.data, &mut self.pos, 64).map_err(|e| decode_error(what, start, e))
    }

    fn varint32(&mut self, what: &str) -> Result<u32> {
        let start = self.pos;
        let v = self.varint64(what)?;
        u32::try_from(v).map_err(|_| bad(format!("{what}: {v} at byte {start} exceeds 32 bits")))
    }

    /// A sequence number: internal keys hold 56 bits, and the next write takes the number
    /// after the last one, so anything above `MAX_SEQ` is corruption.
    fn sequence(&mut self, what: &str) -> Result<u64> {
        let start = self.pos;
        let v = self.varint64(what)?;
        if v > key::MAX_SEQ {
            return Err(bad(format!(
                "{what}: {v} at byte {start} exceeds the largest sequence number {}",
                key::MAX_SEQ
            )));
        }
        Ok(v)
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let start = self.pos;
        get_length_prefixed(self.data, &mut self.pos).map_err(|e| decode_error(what, start, e))
    }
}

/// The corruption error for a field `what` at byte `start` that cannot be decoded.
fn decode_error(what: &str, start: usize, e: DecodeError) -> Error {
    bad(match e {
        DecodeError::Truncated => format!("{what}: varint cut at byte {start}"),
        DecodeError::Overlong => format!("{what}: varint too long at byte {start}"),
        DecodeError::PastEnd { len, left } => {
            format!("{what}: length {len} at byte {start} beyond the {left} bytes left")
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::key::ValueKind;
    use proptest::prelude::*;

    /// A file with the given user-key range and sequence range.
    pub(crate) fn file(number: u64, small: &[u8], large: &[u8], seqs: (u64, u64)) -> FileMeta {
        FileMeta {
            number,
            size: 1000 + number,
            smallest: key::internal_key(small, seqs.1, ValueKind::Put),
            largest: key::internal_key(large, seqs.0, ValueKind::Delete),
            smallest_seq: seqs.0,
            largest_seq: seqs.1,
            entries: 10,
            deletions: 1,
            raw_key_size: 100,
            raw_value_size: 900,
            lifetime: None,
            oldest_blob_file: None,
        }
    }

    fn arb_file() -> impl Strategy<Value = FileMeta> {
        (
            any::<u64>(),
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..12),
            proptest::collection::vec(any::<u8>(), 0..12),
            (0..key::MAX_SEQ, 0..key::MAX_SEQ),
            any::<[u64; 4]>(),
            proptest::option::of(arb_lifetime()),
            proptest::option::of(any::<u64>()),
        )
            .prop_map(|(number, size, a, b, (s1, s2), counts, lifetime, blob)| {
                let (small, large) = if a <= b { (a, b) } else { (b, a) };
                let (lo, hi) = (s1.min(s2), s1.max(s2));
                FileMeta {
                    number,
                    size,
                    smallest: key::internal_key(&small, hi, ValueKind::Put),
                    largest: key::internal_key(&large, lo, ValueKind::Delete),
                    smallest_seq: lo,
                    largest_seq: hi,
                    entries: counts[0],
                    deletions: counts[1],
                    raw_key_size: counts[2],
                    raw_value_size: counts[3],
                    lifetime,
                    oldest_blob_file: blob,
                }
            })
            .prop_filter("smallest <= largest", |m| {
                key::compare(&m.smallest, &m.largest) != Ordering::Greater
            })
    }

    fn arb_lifetime() -> impl Strategy<Value = FileLifetime> {
        (
            any::<u64>(),
            any::<u64>(),
            0usize..4,
            any::<u8>(),
            any::<bool>(),
        )
            .prop_map(|(created, lifetime, case, level, moved)| FileLifetime {
                created,
                lifetime,
                case: Case::ALL[case],
                level,
                moved,
            })
    }

    fn arb_clock() -> impl Strategy<Value = Clock> {
        (
            any::<[u64; 3]>(),
            any::<u32>(),
            proptest::collection::vec(any::<(u64, u64)>(), 0..8),
        )
            .prop_map(|(v, compacting_levels, passive)| Clock {
                tick: v[0],
                compacting_levels,
                compactions: v[1],
                deleted: v[2],
                passive,
            })
    }

    pub(crate) fn arb_edit() -> impl Strategy<Value = VersionEdit> {
        (
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(0..=key::MAX_SEQ),
            proptest::collection::vec((any::<u32>(), arb_file()), 0..4),
            proptest::collection::vec((any::<u32>(), any::<u64>()), 0..4),
            proptest::collection::vec(
                (any::<u32>(), proptest::collection::vec(any::<u8>(), 0..16)),
                0..3,
            ),
            proptest::option::of(arb_clock()),
            proptest::collection::vec(any::<[u64; 4]>(), 0..3),
            proptest::collection::vec(any::<[u64; 3]>(), 0..3),
        )
            .prop_map(
                |(log, next, last, new_files, deleted_files, cursors, clock, blobs, garbage)| {
                    VersionEdit {
                        log_number: log,
                        next_file_number: next,
                        last_sequence: last,
                        new_files,
                        deleted_files,
                        compact_cursors: cursors,
                        clock,
                        blob_files: blobs
                            .into_iter()
                            .map(
                                |[number, total_count, total_bytes, file_size]| BlobFileMeta {
                                    number,
                                    total_count,
                                    total_bytes,
                                    file_size,
                                    ..BlobFileMeta::default()
                                },
                            )
                            .collect(),
                        blob_garbage: garbage
                            .into_iter()
                            .map(|[number, count, bytes]| BlobGarbage {
                                number,
                                count,
                                bytes,
                            })
                            .collect(),
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn edits_round_trip(edit in arb_edit()) {
            let bytes = edit.encode();
            prop_assert_eq!(VersionEdit::decode(&bytes)?, edit);
        }

        /// A cut inside a field is an error; a cut between fields is a shorter edit.
        #[test]
        fn truncated_edits_never_panic(edit in arb_edit(), cut in any::<prop::sample::Index>()) {
            let bytes = edit.encode();
            let cut = cut.index(bytes.len() + 1);
            if let Ok(short) = VersionEdit::decode(&bytes[..cut]) {
                prop_assert_eq!(short.encode(), &bytes[..cut]);
            }
        }

        #[test]
        fn flipped_bits_never_panic(edit in arb_edit(), at in any::<prop::sample::Index>(), bit in 0..8u8) {
            let mut bytes = edit.encode();
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] ^= 1 << bit;
                let _ = VersionEdit::decode(&bytes);
            }
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Err(e) = VersionEdit::decode(&bytes) {
                prop_assert!(e.is_corruption());
            }
        }
    }

    fn corrupt(bytes: &[u8]) -> String {
        match VersionEdit::decode(bytes) {
            Err(e) if e.is_corruption() => e.to_string(),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn malformed_records_are_corruption() {
        assert!(corrupt(&[99, 1]).contains("unknown tag 99"));
        assert!(corrupt(&[1]).contains("cut"));
        assert!(corrupt(&[1, 0x80]).contains("cut"));
        let mut overlong = vec![1];
        overlong.extend_from_slice(&[0xff; 10]);
        overlong.push(0);
        assert!(corrupt(&overlong).contains("too long"));
        // 2^64 does not fit.
        let mut too_big = vec![1];
        too_big.extend_from_slice(&[0x80; 9]);
        too_big.push(0x02);
        assert!(corrupt(&too_big).contains("too long"));
        // A level above 32 bits.
        assert!(corrupt(&[4, 0x80, 0x80, 0x80, 0x80, 0x10, 1]).contains("32 bits"));
        // A cursor whose length runs past the end.
        assert!(corrupt(&[6, 1, 5, b'a']).contains("beyond"));
    }

    #[test]
    fn files_with_bad_keys_are_corruption() {
        let mut edit = VersionEdit::new();
        edit.add_file(1, file(7, b"b", b"a", (1, 2)));
        assert!(corrupt(&edit.encode()).contains("smallest key above"));
        let mut m = file(7, b"a", b"b", (1, 2));
        m.largest = b"short".to_vec();
        let edit = VersionEdit {
            new_files: vec![(1, m)],
            ..VersionEdit::default()
        };
        assert!(corrupt(&edit.encode()).contains("not an internal key"));
        let mut m = file(7, b"a", b"b", (1, 2));
        m.smallest_seq = 3;
        let edit = VersionEdit {
            new_files: vec![(1, m)],
            ..VersionEdit::default()
        };
        assert!(corrupt(&edit.encode()).contains("sequence"));
    }

    #[test]
    fn largest_values_round_trip() {
        let edit = VersionEdit {
            log_number: Some(u64::MAX),
            next_file_number: Some(0),
            last_sequence: Some(key::MAX_SEQ),
            deleted_files: vec![(u32::MAX, u64::MAX)],
            ..VersionEdit::default()
        };
        assert_eq!(VersionEdit::decode(&edit.encode()).unwrap(), edit);
        assert!(VersionEdit::decode(&[]).unwrap().is_empty());
    }

    /// Found by the fuzzer (`fuzz/corpus/version_edit/regression-last-sequence`): a last
    /// sequence above `MAX_SEQ` decoded, became the database's, and the next write's
    /// `last_sequence() + 1` overflowed (or made an internal key that cannot hold it).
    #[test]
    fn last_sequence_above_max_seq_is_corruption() {
        for seq in [key::MAX_SEQ + 1, u64::MAX] {
            let edit = VersionEdit {
                last_sequence: Some(seq),
                ..VersionEdit::default()
            };
            assert!(corrupt(&edit.encode()).contains("exceeds the largest sequence number"));
        }
    }
}
