//! The record log: the format of the write-ahead log (WAL) and of the manifest.
//!
//! # Format
//!
//! A log is a sequence of records, each a 13-byte header followed by its payload:
//!
//! ```text
//! offset  size  field
//!      0     4  header check: masked CRC32C of header bytes 4..13 (u32 LE)
//!      4     4  record CRC: masked CRC32C of the type byte, the length (4 bytes LE) and the payload
//!      8     4  payload length (u32 LE)
//!     12     1  record type (1 = full record; 0 and the rest are never written)
//!     13     n  payload
//! ```
//!
//! CRCs are masked (rotated and offset) so that a payload which itself holds CRCs — a WAL
//! record stored as a value — does not produce accidental matches.
//!
//! # Why whole records and not RocksDB's 32 KiB blocks
//!
//! RocksDB cuts records into fragments inside 32 KiB blocks, zero-padding the end of a
//! block. The blocks let a reader resynchronise after damage at the next block boundary and
//! let RocksDB recycle preallocated log files. Neither applies on the zoned file layer:
//! files are append-only, never preallocated or reused (a new log is a new file, so stale
//! records of an older log never follow the live ones), and a file's visible content is
//! exactly the bytes of its last sync (the file layer's padding is outside the file size).
//! A record is therefore written whole, in one piece, with its length in the header.
//!
//! A reader that meets damage still has to find out whether valid records follow it, and
//! where. Without blocks it scans every later offset for a record; the separate header
//! check makes that scan linear (a random offset is rejected from 13 bytes, the payload
//! CRC is computed only for a header that checks) and makes a damaged length field
//! detectable before it is trusted.
//!
//! # Reading
//!
//! [`read_log`] is a pure decoder: it returns every intact record with its offset
//! ([`LogContents::records`]) and a description of every stretch that is not one
//! ([`LogContents::bad`]: offset, length up to the next valid record or the end of the
//! log, and the [`LogDefect`]). It judges nothing; the caller decides what a bad spot
//! means — the WAL's recovery mode ([`crate::options::WalRecoveryMode`], applied in
//! `db::recovery`), or absolute consistency for the manifest
//! ([`LogContents::require_intact`]).
//!
//! After a spot that is not an intact record the decoder resynchronises:
//! - a record whose header checks but whose payload does not (a flipped payload bit) is
//!   skipped whole: the header check vouches for its length;
//! - otherwise (a header that does not check, a log ending inside a header or payload) it
//!   scans forward for the next offset where a header and its payload both check.
//!
//! Consecutive damaged records make one bad spot. A record whose checks pass but whose type
//! is unknown ([`LogDefect::UnknownType`]) is a bad spot of its own, exactly that record: it
//! is intact data that this build cannot interpret, not damage ([`LogDefect::is_damage`]).
//! A valid-looking record found by the scan only by coincidence (bytes of a damaged payload
//! that themselves hold a whole encoded record) is returned as a record; a reader that
//! accepts no bad spot never sees it, since the damage before it is reported.
//!
//! # Durability (with a [`zkv_zonefs::fs::FileWriter`] sink)
//!
//! [`LogWriter::add_record`] hands the record to the file writer, which buffers it; it is
//! neither visible to readers nor durable. [`LogWriter::sync`] runs
//! [`zkv_zonefs::fs::FileWriter::sync`]: after it returns `Ok`, every record added before it
//! survives any crash and is returned by [`read_log`]. A crash at any other moment leaves
//! the file with the content of the last acknowledged sync or of the sync in flight,
//! never a mix; because records reach the file whole, that content always ends on a
//! record boundary: records added after the last acknowledged sync are all present or all
//! absent, and they are lost by any crash — including a process crash, since the file
//! layer discards unsynced bytes of a writer dropped without `close`. A failed append or
//! sync fails the file writer, and the file keeps its last synced content.
//!
//! A torn tail is therefore never produced through the file layer: every record a reader
//! sees there was synced whole, and a record that fails a check is damage (a flipped bit
//! on the medium, a bug), not a write cut by a crash. That is why zkv's default WAL
//! recovery mode accepts no bad spot at all, and why the manifest is always read that way.
//! The decoder still describes torn tails (other sinks, copies of a log), and a caller that
//! tolerated one must start a new log rather than append to it, or the next reading would
//! see damage followed by valid records.

use crate::coding::mask_crc;
use crate::fs::WritableFile;
use crate::{Error, Result};

/// Bytes of a record header.
pub const HEADER_LEN: usize = 13;

/// The largest payload a record can carry (the length field is 32 bits).
pub const MAX_PAYLOAD: usize = u32::MAX as usize;

/// The record type of a whole record (the only one written).
const TYPE_FULL: u8 = 1;

fn record_crc(kind: u8, len: [u8; 4], payload: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&[kind]);
    let crc = crc32c::crc32c_append(crc, &len);
    mask_crc(crc32c::crc32c_append(crc, payload))
}

fn encode_header(payload: &[u8]) -> [u8; HEADER_LEN] {
    let len = (payload.len() as u32).to_le_bytes();
    let mut header = [0u8; HEADER_LEN];
    header[4..8].copy_from_slice(&record_crc(TYPE_FULL, len, payload).to_le_bytes());
    header[8..12].copy_from_slice(&len);
    header[12] = TYPE_FULL;
    let check = mask_crc(crc32c::crc32c(&header[4..]));
    header[..4].copy_from_slice(&check.to_le_bytes());
    header
}

/// Where the log's records go: a file of the engine's file system, or memory.
pub trait LogSink {
    /// Appends bytes after everything appended before.
    fn append(&mut self, data: &[u8]) -> Result<()>;

    /// Appends `parts` as one append (a record's header and payload; see
    /// [`WritableFile::append_parts`]). By default one `append` per part.
    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        parts.iter().try_for_each(|part| self.append(part))
    }
    /// Makes everything appended durable (a no-op for memory).
    fn sync(&mut self) -> Result<()>;
}

impl<T: WritableFile + ?Sized> LogSink for T {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        WritableFile::append(self, data)
            .map_err(|e| Error::fs(format!("append to log '{}'", self.name()), e))
    }

    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        WritableFile::append_parts(self, parts)
            .map_err(|e| Error::fs(format!("append to log '{}'", self.name()), e))
    }

    fn sync(&mut self) -> Result<()> {
        WritableFile::sync(self).map_err(|e| Error::fs(format!("sync log '{}'", self.name()), e))
    }
}

impl LogSink for Vec<u8> {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.extend_from_slice(data);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Writes records to a [`LogSink`]. After a sink error the writer refuses every later
/// call: the sink may hold a partial record, and records after it would read as damage.
pub struct LogWriter<S: LogSink> {
    sink: S,
    written: u64,
    failed: Option<String>,
}

impl<S: LogSink> LogWriter<S> {
    /// A writer appending after whatever `sink` already holds (nothing, for a new log).
    pub fn new(sink: S) -> Self {
        LogWriter {
            sink,
            written: 0,
            failed: None,
        }
    }

    /// Appends one record. It is durable only after a later [`Self::sync`] returned `Ok`.
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.check_usable()?;
        if payload.len() > MAX_PAYLOAD {
            return Err(Error::InvalidArgument(format!(
                "log record of {} bytes exceeds the maximum of {MAX_PAYLOAD}",
                payload.len()
            )));
        }
        // Header and payload as one append, without copying the payload: a directory's
        // file never ends inside a record after a process crash.
        let result = self.sink.append_parts(&[&encode_header(payload), payload]);
        self.note(result)?;
        self.written += (HEADER_LEN + payload.len()) as u64;
        Ok(())
    }

    /// Makes every record added so far durable.
    pub fn sync(&mut self) -> Result<()> {
        self.check_usable()?;
        let result = self.sink.sync();
        self.note(result)
    }

    /// Bytes this writer appended (headers and payloads).
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// Gives the sink back (e.g. to close a file writer).
    pub fn into_inner(self) -> S {
        self.sink
    }

    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            Some(first) => Err(Error::NotWritable(format!(
                "the log failed earlier: {first}"
            ))),
            None => Ok(()),
        }
    }

    fn note(&mut self, result: Result<()>) -> Result<()> {
        if let Err(e) = &result {
            self.failed = Some(e.to_string());
        }
        result
    }
}

/// One intact record of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Where its header starts.
    pub offset: u64,
    /// Its payload.
    pub payload: Vec<u8>,
}

impl LogRecord {
    /// Bytes it takes in the log (header and payload).
    pub fn encoded_len(&self) -> u64 {
        (HEADER_LEN + self.payload.len()) as u64
    }
}

/// Why a stretch of a log is not an intact record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogDefect {
    /// The log ends less than a header after the spot.
    #[error("partial record header ({have} of {} bytes)", HEADER_LEN)]
    PartialHeader {
        /// Bytes left in the log.
        have: u64,
    },
    /// The header's own check fails: the length and type cannot be trusted.
    #[error("record header checksum mismatch")]
    HeaderChecksum,
    /// The header checks, but the log ends before the payload does.
    #[error("partial record ({have} of {len} payload bytes)")]
    PartialPayload {
        /// Payload bytes present.
        have: u64,
        /// The payload length the header gives.
        len: u64,
    },
    /// The header checks, the payload does not match its CRC.
    #[error("checksum mismatch in a record of {len} bytes")]
    PayloadChecksum {
        /// The payload length the header gives.
        len: u64,
    },
    /// Header and payload check, but the type is not one this build writes: intact data
    /// it cannot interpret, not damage.
    #[error("intact record of unknown type {kind} ({len} payload bytes)")]
    UnknownType {
        /// The record type.
        kind: u8,
        /// The payload length.
        len: u64,
    },
}

impl LogDefect {
    /// Whether the bytes are damaged (a check failed or the log ends inside a record), as
    /// opposed to an intact record of an unknown type.
    pub fn is_damage(&self) -> bool {
        !matches!(self, LogDefect::UnknownType { .. })
    }
}

/// A stretch of a log that holds no intact record: from a spot that is not an intact
/// record up to the next valid record (or the end of the log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadSpot {
    /// Where it starts.
    pub offset: u64,
    /// Its length: up to the next valid record, or to the end of the log.
    pub len: u64,
    /// What is wrong at `offset`.
    pub defect: LogDefect,
}

impl BadSpot {
    /// The offset right after it: the next valid record's, or the log's length.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

impl std::fmt::Display for BadSpot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at offset {} ({} bytes up to offset {})",
            self.defect,
            self.offset,
            self.len,
            self.end()
        )
    }
}

/// What a log holds: its intact records and its bad spots, both in log order. Every byte
/// of the log is in exactly one record or one bad spot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogContents {
    /// Every intact record of a known type, in order (records after a bad spot included).
    pub records: Vec<LogRecord>,
    /// Every stretch that is not such a record, in order.
    pub bad: Vec<BadSpot>,
    /// Bytes of the log.
    pub len: u64,
}

impl LogContents {
    /// Whether `spot` (one of [`Self::bad`]) is at the tail: no valid record follows it.
    pub fn is_tail(&self, spot: &BadSpot) -> bool {
        spot.end() >= self.len
    }

    /// The records, or [`Error::Corruption`] naming `what` and the first bad spot if there
    /// is one: a log read with absolute consistency.
    pub fn require_intact(self, what: &str) -> Result<Vec<LogRecord>> {
        match self.bad.first() {
            None => Ok(self.records),
            Some(spot) => Err(Error::corruption(what, spot.to_string())),
        }
    }
}

/// What is at one offset of a log.
enum Parsed<'a> {
    Record {
        payload: &'a [u8],
        end: usize,
    },
    /// Not an intact record of a known type; `end` is where the record ends when its
    /// header checks (the length can be trusted), `None` when it does not.
    Bad {
        defect: LogDefect,
        end: Option<usize>,
    },
}

fn parse_at(data: &[u8], pos: usize) -> Parsed<'_> {
    let rest = data.get(pos..).unwrap_or_default();
    let Some(header) = rest.first_chunk::<HEADER_LEN>() else {
        let have = rest.len() as u64;
        let defect = LogDefect::PartialHeader { have };
        return Parsed::Bad { defect, end: None };
    };
    let [h0, h1, h2, h3, c0, c1, c2, c3, l0, l1, l2, l3, kind] = *header;
    let (header_crc, payload_crc, len_bytes) =
        ([h0, h1, h2, h3], [c0, c1, c2, c3], [l0, l1, l2, l3]);
    if u32::from_le_bytes(header_crc) != mask_crc(crc32c::crc32c(&header[4..])) {
        let defect = LogDefect::HeaderChecksum;
        return Parsed::Bad { defect, end: None };
    }
    let len = u32::from_le_bytes(len_bytes) as usize;
    let payload = HEADER_LEN
        .checked_add(len)
        .and_then(|end| rest.get(HEADER_LEN..end));
    let Some(payload) = payload else {
        let have = (rest.len() - HEADER_LEN) as u64;
        let defect = LogDefect::PartialPayload {
            have,
            len: len as u64,
        };
        return Parsed::Bad { defect, end: None };
    };
    let end = pos + HEADER_LEN + len;
    let len = len as u64;
    if u32::from_le_bytes(payload_crc) != record_crc(kind, len_bytes, payload) {
        let defect = LogDefect::PayloadChecksum { len };
        return Parsed::Bad {
            defect,
            end: Some(end),
        };
    }
    if kind != TYPE_FULL {
        let defect = LogDefect::UnknownType { kind, len };
        return Parsed::Bad {
            defect,
            end: Some(end),
        };
    }
    Parsed::Record { payload, end }
}

/// Whether a record whose header and payload check (of any type) starts at `at`.
fn checks_at(data: &[u8], at: usize) -> bool {
    match parse_at(data, at) {
        Parsed::Record { .. } => true,
        Parsed::Bad { defect, .. } => !defect.is_damage(),
    }
}

/// The first offset from `from` on where a record whose header and payload check starts;
/// the length of `data` if there is none.
fn resync(data: &[u8], from: usize) -> usize {
    let Some(last) = data.len().checked_sub(HEADER_LEN) else {
        return data.len();
    };
    (from..=last)
        .find(|&at| checks_at(data, at))
        .unwrap_or(data.len())
}

/// Decodes a whole log: every intact record, and every stretch that is not one.
///
/// A pure decoder: it judges nothing, the caller decides what a bad spot means (see the
/// module documentation). Never panics, whatever `data` holds, and takes time linear in
/// its length.
pub fn read_log(data: &[u8]) -> LogContents {
    let mut contents = LogContents {
        len: data.len() as u64,
        ..LogContents::default()
    };
    let mut pos = 0;
    while pos < data.len() {
        match parse_at(data, pos) {
            Parsed::Record { payload, end } => {
                contents.records.push(LogRecord {
                    offset: pos as u64,
                    payload: payload.to_vec(),
                });
                pos = end;
            }
            Parsed::Bad { defect, end } => {
                let next = if defect.is_damage() {
                    // A damaged record whose header checks is skipped whole (its length is
                    // trusted); the scan goes on from there in case more is damaged.
                    resync(data, end.unwrap_or(pos + 1))
                } else {
                    end.unwrap_or(data.len())
                };
                let next = next.clamp(pos + 1, data.len());
                contents.bad.push(BadSpot {
                    offset: pos as u64,
                    len: (next - pos) as u64,
                    defect,
                });
                pos = next;
            }
        }
    }
    contents
}

/// A sink that fails its `fail_at`-th append (tests of writers that stop on a failure).
#[cfg(test)]
pub(crate) struct Flaky {
    pub data: Vec<u8>,
    appends: usize,
    fail_at: usize,
    /// Bytes of the failing append that get out before it fails (a short write).
    keep: usize,
}

#[cfg(test)]
impl Flaky {
    pub(crate) fn failing_at(fail_at: usize) -> Flaky {
        Flaky {
            data: Vec::new(),
            appends: 0,
            fail_at,
            keep: 0,
        }
    }

    /// The failing append writes its first `keep` bytes before it fails.
    pub(crate) fn keeping(mut self, keep: usize) -> Flaky {
        self.keep = keep;
        self
    }
}

#[cfg(test)]
impl LogSink for Flaky {
    /// A record is one append here, as on a directory.
    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        self.append(&parts.concat())
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.appends += 1;
        if self.appends == self.fail_at {
            self.data
                .extend_from_slice(&data[..self.keep.min(data.len())]);
            return Err(Error::InvalidArgument("injected".into()));
        }
        self.data.extend_from_slice(data);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Deterministic pseudo-random bytes.
    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    /// The log of `records` and where each record ends.
    fn encode(records: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
        let mut w = LogWriter::new(Vec::new());
        let mut ends = Vec::new();
        for r in records {
            w.add_record(r).unwrap();
            ends.push(w.bytes_written() as usize);
        }
        w.sync().unwrap();
        assert_eq!(w.sink().len() as u64, w.bytes_written());
        (w.into_inner(), ends)
    }

    /// Where record `i` starts.
    fn start(ends: &[usize], i: usize) -> usize {
        if i == 0 {
            0
        } else {
            ends[i - 1]
        }
    }

    fn payloads(c: &LogContents) -> Vec<Vec<u8>> {
        c.records.iter().map(|r| r.payload.clone()).collect()
    }

    fn spot(offset: usize, len: usize, defect: LogDefect) -> BadSpot {
        BadSpot {
            offset: offset as u64,
            len: len as u64,
            defect,
        }
    }

    /// Records and bad spots tile the log: in order, without gap or overlap.
    fn assert_tiles(c: &LogContents) {
        let mut parts: Vec<(u64, u64)> = c
            .records
            .iter()
            .map(|r| (r.offset, r.encoded_len()))
            .collect();
        parts.extend(c.bad.iter().map(|b| (b.offset, b.len)));
        parts.sort_unstable();
        let mut at = 0;
        for (offset, len) in parts {
            assert_eq!(offset, at, "{c:?}");
            assert!(len > 0);
            at += len;
        }
        assert_eq!(at, c.len);
    }

    fn records_strategy(min: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
        let size = prop_oneof![4 => 0usize..64, 2 => 0usize..3000, 1 => 64_000usize..70_000];
        prop::collection::vec((size, any::<u64>()), min..8)
            .prop_map(|v| v.into_iter().map(|(len, seed)| bytes(seed, len)).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn records_round_trip(records in records_strategy(0)) {
            let (data, ends) = encode(&records);
            let got = read_log(&data);
            prop_assert!(got.bad.is_empty());
            prop_assert!(payloads(&got) == records);
            let offsets: Vec<u64> = got.records.iter().map(|r| r.offset).collect();
            let want: Vec<u64> = (0..records.len()).map(|i| start(&ends, i) as u64).collect();
            prop_assert_eq!(offsets, want);
        }

        #[test]
        fn a_truncation_is_one_partial_record_at_the_tail(
            records in records_strategy(1),
            cut in any::<prop::sample::Index>(),
        ) {
            let (data, ends) = encode(&records);
            let cut = cut.index(data.len() + 1);
            let got = read_log(&data[..cut]);
            assert_tiles(&got);
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            let boundary = start(&ends, whole);
            prop_assert!(payloads(&got)[..] == records[..whole]);
            if boundary == cut {
                prop_assert!(got.bad.is_empty());
            } else {
                let have = (cut - boundary) as u64;
                let defect = if have < HEADER_LEN as u64 {
                    LogDefect::PartialHeader { have }
                } else {
                    let len = records[whole].len() as u64;
                    LogDefect::PartialPayload { have: have - HEADER_LEN as u64, len }
                };
                prop_assert_eq!(&got.bad, &vec![spot(boundary, cut - boundary, defect)]);
                prop_assert!(got.is_tail(&got.bad[0]));
            }
        }

        #[test]
        fn a_flipped_byte_is_one_bad_spot_covering_its_record(
            records in records_strategy(1),
            at in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let (mut data, ends) = encode(&records);
            let at = at.index(data.len());
            data[at] ^= mask;
            let hit = ends.iter().filter(|&&e| e <= at).count();
            let begin = start(&ends, hit);
            let got = read_log(&data);
            assert_tiles(&got);
            let mut want = records.clone();
            want.remove(hit);
            prop_assert!(payloads(&got) == want);
            let defect = if at - begin < HEADER_LEN {
                LogDefect::HeaderChecksum
            } else {
                LogDefect::PayloadChecksum { len: records[hit].len() as u64 }
            };
            prop_assert_eq!(&got.bad, &vec![spot(begin, ends[hit] - begin, defect)]);
            prop_assert_eq!(got.is_tail(&got.bad[0]), hit + 1 == records.len());
        }

        #[test]
        fn garbage_never_panics_and_is_described_whole(
            data in prop::collection::vec(any::<u8>(), 0..600),
        ) {
            let got = read_log(&data);
            assert_tiles(&got);
        }

        #[test]
        fn garbage_after_records_is_one_tail_spot(
            records in records_strategy(0),
            tail in prop::collection::vec(any::<u8>(), 1..300),
        ) {
            let (mut data, _) = encode(&records);
            let end = data.len();
            data.extend_from_slice(&tail);
            let got = read_log(&data);
            prop_assert!(payloads(&got) == records);
            prop_assert_eq!(got.bad.len(), 1);
            prop_assert_eq!((got.bad[0].offset, got.bad[0].len), (end as u64, tail.len() as u64));
            prop_assert!(got.is_tail(&got.bad[0]));
        }
    }

    #[test]
    fn empty_log_is_clean() {
        let got = read_log(&[]);
        assert_eq!(got, LogContents::default());
        assert!(got.require_intact("log").unwrap().is_empty());
    }

    #[test]
    fn header_layout_is_stable() {
        let (data, _) = encode(&[b"abc".to_vec()]);
        assert_eq!(data.len(), HEADER_LEN + 3);
        assert_eq!(&data[8..12], &3u32.to_le_bytes());
        assert_eq!(data[12], TYPE_FULL);
        let crc = mask_crc(crc32c::crc32c(&[1, 3, 0, 0, 0, b'a', b'b', b'c']));
        assert_eq!(&data[4..8], &crc.to_le_bytes());
        assert_eq!(&data[13..], b"abc");
    }

    /// Three records of 20, 30 and 40 bytes: (log, where each ends).
    fn three() -> (Vec<u8>, Vec<usize>) {
        encode(&[vec![1; 20], vec![2; 30], vec![3; 40]])
    }

    #[test]
    fn a_flipped_byte_in_the_last_record_is_a_tail_spot() {
        let (mut data, ends) = three();
        data[ends[2] - 5] ^= 0x40;
        let got = read_log(&data);
        assert_eq!(payloads(&got), [vec![1; 20], vec![2; 30]]);
        let want = spot(ends[1], 53, LogDefect::PayloadChecksum { len: 40 });
        assert_eq!(got.bad, std::slice::from_ref(&want));
        assert!(got.is_tail(&want));
        assert_eq!(
            want.to_string(),
            "checksum mismatch in a record of 40 bytes at offset 76 (53 bytes up to offset 129)"
        );
        let err = got.require_intact("WAL '000007.log'").unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("000007.log") && msg.contains("offset 76"),
            "{msg}"
        );
    }

    #[test]
    fn a_flipped_byte_in_a_middle_record_is_a_spot_followed_by_records() {
        let (mut data, ends) = three();
        // In the header: the spot runs from the record to the next valid one.
        data[ends[0] + 9] ^= 0x01;
        let got = read_log(&data);
        assert_eq!(payloads(&got), [vec![1; 20], vec![3; 40]]);
        assert_eq!(got.records[1].offset, ends[1] as u64);
        let want = spot(ends[0], ends[1] - ends[0], LogDefect::HeaderChecksum);
        assert_eq!(got.bad, std::slice::from_ref(&want));
        assert!(!got.is_tail(&want));
    }

    #[test]
    fn a_truncated_tail_is_a_partial_record() {
        let (data, ends) = three();
        let got = read_log(&data[..ends[2] - 1]);
        assert_eq!(got.records.len(), 2);
        let defect = LogDefect::PartialPayload { have: 39, len: 40 };
        assert_eq!(got.bad, [spot(ends[1], 52, defect)]);
        let got = read_log(&data[..ends[1] + 4]);
        let defect = LogDefect::PartialHeader { have: 4 };
        assert_eq!(got.bad, [spot(ends[1], 4, defect)]);
        assert_eq!(defect.to_string(), "partial record header (4 of 13 bytes)");
    }

    #[test]
    fn garbage_appended_is_a_tail_spot() {
        let (mut data, ends) = three();
        data.extend_from_slice(&bytes(5, 100));
        let got = read_log(&data);
        assert_eq!(got.records.len(), 3);
        assert_eq!(got.bad.len(), 1, "{:?}", got.bad);
        assert_eq!((got.bad[0].offset, got.bad[0].len), (ends[2] as u64, 100));
        assert!(got.is_tail(&got.bad[0]));
        // A zero-filled tail is no record either.
        let (mut data, ends) = three();
        data.resize(ends[2] + 4096, 0);
        let got = read_log(&data);
        assert_eq!(got.records.len(), 3);
        assert_eq!(got.bad, [spot(ends[2], 4096, LogDefect::HeaderChecksum)]);
    }

    #[test]
    fn consecutive_damaged_records_make_one_spot() {
        let (mut data, ends) = three();
        data[5] ^= 0x10;
        data[ends[0] + 20] ^= 0x10;
        let got = read_log(&data);
        assert_eq!(payloads(&got), [vec![3; 40]]);
        assert_eq!(got.bad, [spot(0, ends[1], LogDefect::HeaderChecksum)]);
    }

    #[test]
    fn a_large_torn_record_is_recognised_quickly() {
        // The decoder scans every offset after damage; the header check keeps that linear.
        let (mut data, ends) = encode(&[b"small".to_vec(), bytes(3, 4 << 20)]);
        data[ends[0] + 2] ^= 0x08;
        let started = std::time::Instant::now();
        let got = read_log(&data[..data.len() - 1]);
        assert_eq!(payloads(&got), [b"small".to_vec()]);
        let len = data.len() - 1 - ends[0];
        assert_eq!(got.bad, [spot(ends[0], len, LogDefect::HeaderChecksum)]);
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    }

    #[test]
    fn damaged_length_before_valid_records_is_described() {
        let (mut data, _) = encode(&[vec![7; 100], vec![8; 100]]);
        // A length far past the end would look like a partial payload, but the header
        // check exposes it and the valid record after it is found.
        data[11] = 0x7f;
        let got = read_log(&data);
        assert_eq!(got.bad, [spot(0, 113, LogDefect::HeaderChecksum)]);
        assert_eq!(payloads(&got), [vec![8; 100]]);
        let err = got.require_intact("MANIFEST-000002").unwrap_err();
        let msg = err.to_string();
        assert!(
            err.is_corruption() && msg.contains("MANIFEST-000002"),
            "{msg}"
        );
        assert!(
            msg.contains("at offset 0") && msg.contains("up to offset 113"),
            "{msg}"
        );
    }

    /// Rewrites the record at `start` (payload `payload`) with type `kind`, checks intact.
    fn set_type(data: &mut [u8], start: usize, payload: &[u8], kind: u8) {
        let len = (payload.len() as u32).to_le_bytes();
        let crc = record_crc(kind, len, payload);
        data[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        data[start + 12] = kind;
        let check = mask_crc(crc32c::crc32c(&data[start + 4..start + HEADER_LEN]));
        data[start..start + 4].copy_from_slice(&check.to_le_bytes());
    }

    #[test]
    fn an_unknown_record_type_is_a_spot_of_exactly_that_record() {
        let (mut data, _) = encode(&[b"ok".to_vec(), b"future".to_vec(), b"after".to_vec()]);
        let start = HEADER_LEN + 2;
        set_type(&mut data, start, b"future", 9);
        let got = read_log(&data);
        assert_eq!(payloads(&got), [b"ok".to_vec(), b"after".to_vec()]);
        let defect = LogDefect::UnknownType { kind: 9, len: 6 };
        assert!(!defect.is_damage());
        assert_eq!(got.bad, [spot(start, HEADER_LEN + 6, defect)]);
        let err = got.require_intact("log").unwrap_err();
        assert!(err.to_string().contains("unknown type 9"), "{err}");
    }

    #[test]
    fn damage_before_an_unknown_type_is_a_spot_of_its_own() {
        let (mut data, ends) = three();
        set_type(&mut data, ends[0], &[2; 30], 4);
        data[3] ^= 0x01;
        let got = read_log(&data);
        assert_eq!(payloads(&got), [vec![3; 40]]);
        let unknown = LogDefect::UnknownType { kind: 4, len: 30 };
        assert_eq!(
            got.bad,
            [
                spot(0, ends[0], LogDefect::HeaderChecksum),
                spot(ends[0], ends[1] - ends[0], unknown),
            ]
        );
    }

    mod on_zonefs {
        use std::sync::Arc;

        use rand::{Rng, SeedableRng};
        use rand_chacha::ChaCha8Rng;
        use zkv_zns::{Geometry, MemDevice, TearMode, ZonedDevice};
        use zkv_zonefs::fs::{FsOptions, ZoneFs};
        use zkv_zonefs::meta::FileKind;

        use super::*;

        fn device() -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
            let geo = Geometry::new(12, 256 * 1024)
                .with_block_size(4096)
                .with_limits(6, 6);
            let mem = Arc::new(MemDevice::new(geo).unwrap());
            let dev: Arc<dyn ZonedDevice> = mem.clone();
            (mem, dev)
        }

        fn opts() -> FsOptions {
            FsOptions::default().with_meta_zones(2)
        }

        /// Writes records with occasional syncs until the scheduled power cut: (records
        /// added, records acknowledged by a sync).
        fn write_until_cut(fs: &ZoneFs, rng: &mut ChaCha8Rng) -> (Vec<Vec<u8>>, usize) {
            let writer = fs
                .create("000004.log", FileKind::Wal, Default::default())
                .unwrap();
            let mut log = LogWriter::new(writer);
            let (mut added, mut acked) = (Vec::new(), 0);
            for _ in 0..200 {
                let len = rng.random_range(0..12_000);
                let record = bytes(rng.random(), len);
                let result = log.add_record(&record).map(|()| added.push(record));
                let result = result.and_then(|()| match rng.random_range(0..3) {
                    0 => log.sync().map(|()| acked = added.len()),
                    _ => Ok(()),
                });
                match result {
                    Ok(()) => {}
                    Err(e) if e.is_power_loss() => break,
                    Err(e) => panic!("unexpected error: {e}"),
                }
            }
            (added, acked)
        }

        #[test]
        fn after_a_power_cut_the_log_holds_the_records_of_a_sync_point() {
            for seed in 0..12u64 {
                let (mem, dev) = device();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let fs = ZoneFs::format(dev.clone(), opts()).unwrap();
                let faults = mem.faults().unwrap();
                faults.schedule_power_cut(rng.random_range(0..60), TearMode::Tear { seed });
                let (added, acked) = write_until_cut(&fs, &mut rng);
                faults.power_cut(TearMode::Tear { seed });
                drop(fs);
                faults.restart();
                let fs = ZoneFs::mount(dev, opts()).unwrap();
                let data = fs.open("000004.log").unwrap().read_all().unwrap();
                let got = read_log(&data);
                // The file layer restores whole syncs: never a bad spot, torn or other.
                assert!(got.bad.is_empty(), "seed {seed}: {:?}", got.bad);
                let n = got.records.len();
                assert!(n >= acked && n <= added.len(), "seed {seed}: {n} records");
                assert!(
                    payloads(&got)[..] == added[..n],
                    "seed {seed}: not a prefix"
                );
            }
        }

        #[test]
        fn unsynced_records_of_a_dropped_writer_are_gone() {
            let (_mem, dev) = device();
            let fs = ZoneFs::format(dev, opts()).unwrap();
            let writer = fs.create("MANIFEST-000001", FileKind::Manifest, Default::default());
            let mut log = LogWriter::new(writer.unwrap());
            log.add_record(b"synced").unwrap();
            log.sync().unwrap();
            log.add_record(b"not synced").unwrap();
            assert_eq!(log.sink().size(), log.bytes_written());
            drop(log);
            let data = fs.open("MANIFEST-000001").unwrap().read_all().unwrap();
            let got = read_log(&data);
            assert_eq!(payloads(&got), [b"synced".to_vec()]);
            assert!(got.bad.is_empty(), "{:?}", got.bad);
        }
    }

    #[test]
    fn a_failed_append_stops_the_writer() {
        let sink = Flaky::failing_at(2).keeping(HEADER_LEN);
        let mut w = LogWriter::new(sink);
        w.add_record(b"first").unwrap();
        let written = w.bytes_written();
        // The append of the second record fails after its header went out.
        assert!(w.add_record(b"second").is_err());
        assert_eq!(w.bytes_written(), written);
        let err = w.add_record(b"third").unwrap_err();
        assert!(matches!(err, Error::NotWritable(_)), "{err}");
        assert!(w.sync().is_err());
        // A partial record that only a sink without the file layer's promises can hold.
        let got = read_log(&w.sink().data);
        assert_eq!(payloads(&got), [b"first".to_vec()]);
        let defect = LogDefect::PartialPayload { have: 0, len: 6 };
        assert_eq!(got.bad, [spot(written as usize, HEADER_LEN, defect)]);
    }
}
