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
//! Recovery still has to tell a torn tail from damage in the middle. Without blocks the
//! reader finds out whether valid records follow a damaged spot by scanning every later
//! offset for a record; the separate header check makes that scan linear (a random offset
//! is rejected from 13 bytes, the payload CRC is computed only for a header that checks)
//! and makes a damaged length field detectable before it is trusted.
//!
//! # Reading
//!
//! [`read_log`] returns every intact record from the start. At the first spot that is not
//! an intact record it looks for any valid record after that spot:
//! - none: the spot is a torn tail (a partial header, a partial payload, a checksum
//!   mismatch in the last record, trailing garbage) and the log ends there:
//!   [`LogTail::Truncated`];
//! - one: the log was damaged *before* acknowledged data, and [`Error::Corruption`] names
//!   the damaged offset and the next valid record.
//!
//! A record whose checks pass but whose type is unknown is corruption wherever it is:
//! it is intact data that this build cannot interpret. A valid-looking record found after
//! damage only by coincidence (a torn payload that itself holds a whole encoded record)
//! makes the reader report corruption instead of a torn tail; it never returns wrong data.
//!
//! # Durability (with a [`zonefs::fs::FileWriter`] sink)
//!
//! [`LogWriter::add_record`] hands the record to the file writer, which buffers it; it is
//! neither visible to readers nor durable. [`LogWriter::sync`] runs
//! [`zonefs::fs::FileWriter::sync`]: after it returns `Ok`, every record added before it
//! survives any crash and is returned by [`read_log`]. A crash at any other moment leaves
//! the file with the content of the last acknowledged sync or of the sync in flight,
//! never a mix; because records reach the file whole, that content always ends on a
//! record boundary: records added after the last acknowledged sync are all present or all
//! absent, and they are lost by any crash — including a process crash, since the file
//! layer discards unsynced bytes of a writer dropped without `close`. A torn tail is
//! therefore never produced through the file layer; the reader tolerates one anyway (other
//! sinks, copies of a log). After recovering a log with a torn tail, writers must start a
//! new log rather than append to it, or the next recovery would see damage followed by
//! valid records.

use zonefs::fs::FileWriter;

use crate::coding::mask_crc;
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

/// Where the log's records go: a file of the zoned file layer, or memory.
pub trait LogSink {
    /// Appends bytes after everything appended before.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Makes everything appended durable (a no-op for memory).
    fn sync(&mut self) -> Result<()>;
}

impl LogSink for FileWriter {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        FileWriter::append(self, data)
            .map_err(|e| Error::fs(format!("append to log '{}'", self.name()), e))
    }

    fn sync(&mut self) -> Result<()> {
        FileWriter::sync(self).map_err(|e| Error::fs(format!("sync log '{}'", self.name()), e))
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
        let header = encode_header(payload);
        let result = self
            .sink
            .append(&header)
            .and_then(|()| self.sink.append(payload));
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

/// The records of a log and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogContents {
    /// Every intact record from the start, in order.
    pub records: Vec<Vec<u8>>,
    /// How the data ended after the last record.
    pub tail: LogTail,
}

/// How a log ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTail {
    /// Right after the last record.
    Clean,
    /// A torn tail from `offset` on (a write cut by a crash) was ignored: no valid record
    /// follows it.
    Truncated {
        /// Where the ignored bytes start (the end of the last intact record).
        offset: u64,
        /// What was wrong there.
        reason: String,
    },
}

/// What is at one offset of a log.
enum Parsed<'a> {
    Record {
        payload: &'a [u8],
        end: usize,
    },
    /// Checks pass but the type is unknown.
    UnknownType(u8),
    /// Not an intact record.
    Bad(Damage),
}

/// Why an offset does not hold an intact record. Kept cheap (no text) because recovery
/// tests every offset after a damaged spot.
#[derive(Clone, Copy, Debug)]
enum Damage {
    PartialHeader { have: usize },
    HeaderChecksum,
    PartialPayload { have: usize, len: usize },
    PayloadChecksum { len: usize },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Damage::PartialHeader { have } => {
                write!(f, "partial record header ({have} of {HEADER_LEN} bytes)")
            }
            Damage::HeaderChecksum => write!(f, "record header checksum mismatch"),
            Damage::PartialPayload { have, len } => {
                write!(f, "partial record ({have} of {len} payload bytes)")
            }
            Damage::PayloadChecksum { len } => {
                write!(f, "checksum mismatch in a record of {len} bytes")
            }
        }
    }
}

fn parse_at(data: &[u8], pos: usize) -> Parsed<'_> {
    let rest = data.get(pos..).unwrap_or_default();
    let Some(header) = rest.get(..HEADER_LEN) else {
        return Parsed::Bad(Damage::PartialHeader { have: rest.len() });
    };
    let field = |at: usize| [header[at], header[at + 1], header[at + 2], header[at + 3]];
    if u32::from_le_bytes(field(0)) != mask_crc(crc32c::crc32c(&header[4..])) {
        return Parsed::Bad(Damage::HeaderChecksum);
    }
    let len = u32::from_le_bytes(field(8)) as usize;
    let kind = header[12];
    let payload = HEADER_LEN
        .checked_add(len)
        .and_then(|end| rest.get(HEADER_LEN..end));
    let Some(payload) = payload else {
        let have = rest.len() - HEADER_LEN;
        return Parsed::Bad(Damage::PartialPayload { have, len });
    };
    if u32::from_le_bytes(field(4)) != record_crc(kind, field(8), payload) {
        return Parsed::Bad(Damage::PayloadChecksum { len });
    }
    if kind != TYPE_FULL {
        return Parsed::UnknownType(kind);
    }
    Parsed::Record {
        payload,
        end: pos + HEADER_LEN + len,
    }
}

/// The first offset after `pos` where a record with a valid header and payload starts.
fn next_valid_record(data: &[u8], pos: usize) -> Option<usize> {
    let last = data.len().checked_sub(HEADER_LEN)?;
    (pos + 1..=last).find(|&at| !matches!(parse_at(data, at), Parsed::Bad(_)))
}

/// Reads a whole log. `what` names it in errors (e.g. "WAL 000012.log").
///
/// Returns every intact record and how the log ended; a torn tail is not an error. Damage
/// followed by a valid record, or an intact record of an unknown type, is
/// [`Error::Corruption`]. Never panics, whatever `data` holds.
pub fn read_log(data: &[u8], what: &str) -> Result<LogContents> {
    let mut records = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        match parse_at(data, pos) {
            Parsed::Record { payload, end } => {
                records.push(payload.to_vec());
                pos = end;
            }
            Parsed::UnknownType(kind) => {
                return Err(Error::corruption(
                    what,
                    format!("record of unknown type {kind} at offset {pos}"),
                ));
            }
            Parsed::Bad(reason) => {
                let tail = torn_tail(data, pos, reason, what)?;
                return Ok(LogContents { records, tail });
            }
        }
    }
    Ok(LogContents {
        records,
        tail: LogTail::Clean,
    })
}

fn torn_tail(data: &[u8], pos: usize, reason: Damage, what: &str) -> Result<LogTail> {
    match next_valid_record(data, pos) {
        Some(next) => Err(Error::corruption(
            what,
            format!("{reason} at offset {pos}, but a valid record follows at offset {next}"),
        )),
        None => Ok(LogTail::Truncated {
            offset: pos as u64,
            reason: format!("{reason}; {} bytes ignored", data.len() - pos),
        }),
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

    fn records_strategy(min: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
        let size = prop_oneof![4 => 0usize..64, 2 => 0usize..3000, 1 => 64_000usize..70_000];
        prop::collection::vec((size, any::<u64>()), min..8)
            .prop_map(|v| v.into_iter().map(|(len, seed)| bytes(seed, len)).collect())
    }

    fn truncated_at(tail: &LogTail) -> Option<u64> {
        match tail {
            LogTail::Clean => None,
            LogTail::Truncated { offset, .. } => Some(*offset),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn records_round_trip(records in records_strategy(0)) {
            let (data, _) = encode(&records);
            let got = read_log(&data, "log").unwrap();
            prop_assert_eq!(got.tail, LogTail::Clean);
            prop_assert!(got.records == records);
        }

        #[test]
        fn any_truncation_gives_a_prefix(records in records_strategy(1), cut in any::<prop::sample::Index>()) {
            let (data, ends) = encode(&records);
            let cut = cut.index(data.len() + 1);
            let got = read_log(&data[..cut], "log").unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            let boundary = if whole == 0 { 0 } else { ends[whole - 1] };
            prop_assert!(got.records[..] == records[..whole]);
            if boundary == cut {
                prop_assert_eq!(got.tail, LogTail::Clean);
            } else {
                prop_assert_eq!(truncated_at(&got.tail), Some(boundary as u64));
            }
        }

        #[test]
        fn a_bit_flip_is_corruption_unless_in_the_last_record(
            records in records_strategy(1),
            at in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let (mut data, ends) = encode(&records);
            let at = at.index(data.len());
            data[at] ^= 1 << bit;
            let hit = ends.iter().filter(|&&e| e <= at).count();
            let result = read_log(&data, "wal 7");
            if hit + 1 < records.len() {
                let err = result.unwrap_err();
                prop_assert!(err.is_corruption(), "{}", err);
                prop_assert!(err.to_string().contains("wal 7"), "{}", err);
            } else {
                let got = result.unwrap();
                let start = if hit == 0 { 0 } else { ends[hit - 1] };
                prop_assert!(got.records[..] == records[..hit]);
                prop_assert_eq!(truncated_at(&got.tail), Some(start as u64));
            }
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..600)) {
            // Any answer but a panic; a garbage log almost never holds a record.
            if let Ok(got) = read_log(&data, "garbage") {
                prop_assert!(got.records.len() <= data.len() / HEADER_LEN);
            }
        }

        #[test]
        fn garbage_after_records_is_a_torn_tail(
            records in records_strategy(0),
            tail in prop::collection::vec(any::<u8>(), 1..300),
        ) {
            let (mut data, _) = encode(&records);
            let end = data.len() as u64;
            data.extend_from_slice(&tail);
            let got = read_log(&data, "log").unwrap();
            prop_assert!(got.records == records);
            prop_assert_eq!(truncated_at(&got.tail), Some(end));
        }
    }

    #[test]
    fn empty_log_is_clean() {
        let got = read_log(&[], "log").unwrap();
        assert!(got.records.is_empty());
        assert_eq!(got.tail, LogTail::Clean);
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

    #[test]
    fn zeroed_tail_is_torn() {
        let (mut data, _) = encode(&[b"one".to_vec(), b"two".to_vec()]);
        let end = data.len();
        data.resize(end + 4096, 0);
        let got = read_log(&data, "log").unwrap();
        assert_eq!(got.records.len(), 2);
        assert_eq!(truncated_at(&got.tail), Some(end as u64));
    }

    #[test]
    fn a_large_torn_record_is_recognised_quickly() {
        // Recovery tests every offset after the damage; the header check keeps that linear.
        let (data, ends) = encode(&[b"small".to_vec(), bytes(3, 4 << 20)]);
        let started = std::time::Instant::now();
        let got = read_log(&data[..data.len() - 1], "log").unwrap();
        assert_eq!(got.records, vec![b"small".to_vec()]);
        assert_eq!(truncated_at(&got.tail), Some(ends[0] as u64));
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    }

    #[test]
    fn damaged_length_before_valid_records_is_corruption() {
        let (mut data, _) = encode(&[vec![7; 100], vec![8; 100]]);
        // A length far past the end looks like a partial payload, but the header check
        // exposes it and the valid record after it proves acknowledged data follows.
        data[11] = 0x7f;
        let err = read_log(&data, "MANIFEST-000002").unwrap_err();
        let msg = err.to_string();
        assert!(
            err.is_corruption() && msg.contains("MANIFEST-000002"),
            "{msg}"
        );
        assert!(
            msg.contains("offset 0") && msg.contains("offset 113"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_record_type_is_corruption_even_at_the_end() {
        let (mut data, _) = encode(&[b"ok".to_vec(), b"future".to_vec()]);
        let start = HEADER_LEN + 2;
        let len = 6u32.to_le_bytes();
        let crc = record_crc(9, len, b"future");
        data[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        data[start + 12] = 9;
        let check = mask_crc(crc32c::crc32c(&data[start + 4..start + HEADER_LEN]));
        data[start..start + 4].copy_from_slice(&check.to_le_bytes());
        let err = read_log(&data, "log").unwrap_err();
        assert!(err.to_string().contains("unknown type 9"), "{err}");
    }

    mod on_zonefs {
        use std::sync::Arc;

        use rand::{Rng, SeedableRng};
        use rand_chacha::ChaCha8Rng;
        use zns::{Geometry, MemDevice, TearMode, ZonedDevice};
        use zonefs::fs::{FsOptions, ZoneFs};
        use zonefs::meta::FileKind;

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
                let got = read_log(&data, "000004.log").unwrap();
                // The file layer restores whole syncs, so the log always ends cleanly.
                assert_eq!(got.tail, LogTail::Clean, "seed {seed}");
                let n = got.records.len();
                assert!(n >= acked && n <= added.len(), "seed {seed}: {n} records");
                assert!(got.records[..] == added[..n], "seed {seed}: not a prefix");
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
            let got = read_log(&data, "manifest").unwrap();
            assert_eq!(got.records, vec![b"synced".to_vec()]);
            assert_eq!(got.tail, LogTail::Clean);
        }
    }

    /// A sink that fails its `fail_at`-th append.
    struct Flaky {
        data: Vec<u8>,
        appends: usize,
        fail_at: usize,
    }

    impl LogSink for Flaky {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.appends += 1;
            if self.appends == self.fail_at {
                return Err(Error::InvalidArgument("injected".into()));
            }
            self.data.extend_from_slice(data);
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_append_stops_the_writer() {
        let sink = Flaky {
            data: Vec::new(),
            appends: 0,
            fail_at: 4,
        };
        let mut w = LogWriter::new(sink);
        w.add_record(b"first").unwrap();
        let written = w.bytes_written();
        // The payload append of the second record fails after its header went out.
        assert!(w.add_record(b"second").is_err());
        assert_eq!(w.bytes_written(), written);
        let err = w.add_record(b"third").unwrap_err();
        assert!(matches!(err, Error::NotWritable(_)), "{err}");
        assert!(w.sync().is_err());
        let got = read_log(&w.sink().data, "log").unwrap();
        assert_eq!(got.records, vec![b"first".to_vec()]);
        assert_eq!(truncated_at(&got.tail), Some(written));
    }
}
