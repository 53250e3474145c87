//! The fuzz targets. Each takes any bytes, runs one decoder of zkv on them the way zkv's
//! own readers do, and goes on with whatever decodes (iterating, seeking, applying,
//! re-encoding) so that the fuzzer also reaches the code that trusts a decoded value.
//!
//! A target panics only on a bug: a decoder that panicked, overflowed or allocated beyond
//! [`crate::ALLOC_LIMIT`], or a decoded value that breaks a property its users rely on
//! (each `assert!` says which).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::fixup;

use zkv_engine::batch::WriteBatch;
use zkv_engine::blob::{
    blob_file_name, BlobFileReader, BlobFileWriter, BlobIndex, BlobRecord, HEADER_LEN,
    RECORD_HEADER_LEN,
};
use zkv_engine::iter::InternalIterator;
use zkv_engine::key::{self, ValueKind, MAX_SEQ};
use zkv_engine::log::read_log;
use zkv_engine::memtable::Memtable;
use zkv_engine::source::MemFile;
use zkv_engine::sst::{parts, Table};
use zkv_engine::version::{Version, VersionEdit};
use zkv_zns::{Geometry, IoCategory, MemDevice, ZonedDevice};
use zkv_zonefs::meta::{
    check_frame, decode_frame, dump_zone, probe, Extent, FileId, FileKind, FileMeta, FrameKind,
    FsState, MetaLog, Record, Superblock, ZoneLayout,
};

/// Runs `decode` on the input as it is, then on its copy with every checksum recomputed
/// (`fix`), when that differs: the first run covers the checksum checks, the second the
/// decoders behind them (see [`crate::fixup`]).
fn raw_and_fixed(data: &[u8], fix: fn(&[u8]) -> Vec<u8>, decode: fn(&[u8])) {
    decode(data);
    let fixed = fix(data);
    if fixed != data {
        decode(&fixed);
    }
}

/// Levels of the engine's default options (`Options::num_levels`).
const NUM_LEVELS: usize = 7;

/// Keys the block and table targets seek to besides those they find: before, between and
/// after the generator's keys, and degenerate ones.
fn probe_keys() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        vec![0; 3],
        key::internal_key(b"", MAX_SEQ, ValueKind::Put),
        key::internal_key(b"key0005", 7, ValueKind::Put),
        key::internal_key(b"key0010x", 1, ValueKind::Delete),
        key::internal_key(b"zzzz", 0, ValueKind::Put),
        vec![0xff; 20],
    ]
}

// ---- engine SST ---------------------------------------------------------------------

/// The 64-byte table footer.
pub fn sst_footer(data: &[u8]) {
    raw_and_fixed(data, fixup::sst_footer, decode_footer);
}

fn decode_footer(data: &[u8]) {
    let _ = parts::decode_footer(data);
}

/// A data block's contents: validated decode, then an unvalidated walk and seeks.
pub fn sst_data_block(data: &[u8]) {
    let probes = probe_keys();
    let targets: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
    let _ = parts::probe_block(data.to_vec(), &targets);
    if let Ok(entries) = parts::decode_data_block(data.to_vec()) {
        for pair in entries.windows(2) {
            assert_eq!(
                key::compare(&pair[0].0, &pair[1].0),
                Ordering::Less,
                "a validated block's keys ascend"
            );
        }
        let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).take(64).collect();
        let walked = parts::probe_block(data.to_vec(), &keys);
        assert_eq!(
            walked.ok(),
            Some(entries.len()),
            "a validated block can be walked and seeked"
        );
    }
}

/// An index block's contents: entries whose values are block handles.
pub fn sst_index_block(data: &[u8]) {
    let probes = probe_keys();
    let targets: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
    let _ = parts::probe_block(data.to_vec(), &targets);
    if let Ok(entries) = parts::decode_index_block(data.to_vec()) {
        let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_slice()).take(64).collect();
        assert!(parts::probe_block(data.to_vec(), &keys).is_ok());
    }
}

/// A filter block's contents.
pub fn sst_filter(data: &[u8]) {
    if let Ok(Some(filter)) = parts::decode_filter(data.to_vec()) {
        for k in [
            &b""[..],
            b"key0001",
            b"user",
            data.get(..8).unwrap_or_default(),
        ] {
            let _ = filter.may_contain(k);
        }
    }
}

/// A properties block's contents.
pub fn sst_props(data: &[u8]) {
    if let Ok(props) = parts::decode_props(data) {
        let meta = props.file_meta(1, data.len() as u64);
        assert_eq!(meta.entries, props.entries);
    }
}

/// A whole table file: open (footer, properties, index, filter), then iterate every entry,
/// seek, and get, as reads and compactions do.
pub fn sst_table(data: &[u8]) {
    raw_and_fixed(data, fixup::sst_table, read_table);
}

fn read_table(data: &[u8]) {
    let file = Arc::new(MemFile::new("fuzz.sst", data.to_vec()));
    let Ok(table) = Table::open(file) else {
        return;
    };
    let table = Arc::new(table);
    let mut seen = Vec::new();
    let mut it = table.iter();
    let mut step = it.seek_to_first();
    while step.is_ok() && it.valid() {
        if seen.len() < 32 {
            seen.push(it.key().to_vec());
        }
        let _ = it.value();
        step = it.next();
    }
    let mut targets = probe_keys();
    targets.extend(seen.iter().cloned());
    for target in &targets {
        if it.seek(target).is_ok() && it.valid() {
            let _ = (it.key(), it.value());
            let _ = it.next();
        }
        let user_key = key::user_key(target);
        let _ = table.may_contain(user_key);
        let _ = table.get(user_key, MAX_SEQ);
        let _ = table.get(user_key, 3);
    }
}

// ---- engine blob files ------------------------------------------------------------------

/// The number of the blob files the blob targets open (and the seeds are written with).
pub const BLOB_FILE: u64 = 7;

/// A small blob file (number [`BLOB_FILE`]): keys like the probe keys', an empty key, an
/// empty value, values of a few sizes. The `blob_index` target reads it; it is also a seed
/// of `blob_file`.
pub fn blob_sample() -> Vec<u8> {
    let mut w = BlobFileWriter::new(Vec::new(), BLOB_FILE).expect("a blob file starts");
    for i in 0..6u8 {
        let key = format!("key{:04}", u32::from(i) * 5);
        let value = vec![b'a' + i; usize::from(i) * usize::from(i) * 3];
        w.add(key.as_bytes(), &value).expect("a blob is added");
    }
    w.add(b"", b"a value under the empty key")
        .expect("a blob is added");
    w.finish().expect("the blob file finishes").0
}

fn open_blob_file(data: &[u8]) -> Option<BlobFileReader> {
    let file = Arc::new(MemFile::new(blob_file_name(BLOB_FILE), data.to_vec()));
    BlobFileReader::open(file, BLOB_FILE).ok()
}

/// A get must return the value of the record the index and key name, or fail: never
/// another value.
fn check_get(reader: &BlobFileReader, records: &[BlobRecord], key: &[u8], index: &BlobIndex) {
    let Ok(value) = reader.get(key, index) else {
        return;
    };
    let found = records
        .iter()
        .any(|r| r.key == key && r.offset_of_value == index.offset && r.value == value);
    assert!(
        found,
        "a get returns the value of the record its index and key name"
    );
}

/// A whole blob file: open (header, footer), get every record the record lengths lead to,
/// walk the records, read each back through its index, and get through indexes that do not
/// fit the file.
pub fn blob_file(data: &[u8]) {
    raw_and_fixed(data, fixup::blob_file, read_blob_file);
}

fn read_blob_file(data: &[u8]) {
    let Some(reader) = open_blob_file(data) else {
        return;
    };
    if let Ok(records) = reader.records() {
        assert_eq!(records.len() as u64, reader.summary().blob_count);
        for r in records.iter().take(64) {
            let got = reader.get(&r.key, &r.index(BLOB_FILE));
            assert_eq!(
                got.ok().as_ref(),
                Some(&r.value),
                "a record of the walk reads back through its index"
            );
        }
    }
    // The records the lengths lead to, damaged or not, as reads through tables meet them.
    for span in fixup::blob_spans(data).into_iter().take(64) {
        let key = &data[span.start + RECORD_HEADER_LEN as usize..span.value_at];
        let value = &data[span.value_at..span.end];
        let index = BlobIndex {
            file: BLOB_FILE,
            offset: span.value_at as u64,
            size: value.len() as u64,
        };
        if let Ok(got) = reader.get(key, &index) {
            assert_eq!(got, value, "a get returns the bytes its index points at");
        }
    }
    let first = HEADER_LEN + RECORD_HEADER_LEN;
    for (offset, size) in [
        (first, 0),
        (first, u64::MAX),
        (u64::MAX, 1),
        (data.len() as u64, 0),
    ] {
        let index = BlobIndex {
            file: BLOB_FILE,
            offset,
            size,
        };
        let _ = reader.get(b"", &index);
        let _ = reader.get(b"key0005", &index);
    }
}

/// A blob index (what a table stores in place of a separated value): decode, re-encode,
/// then get from [`blob_sample`] with every key of the sample, which must return the value
/// of the record the index and key name or fail.
pub fn blob_index(data: &[u8]) {
    let Ok(index) = BlobIndex::decode(data) else {
        return;
    };
    assert_eq!(
        BlobIndex::decode(&index.encode()).ok(),
        Some(index),
        "a decoded index re-encodes"
    );
    let reader = open_blob_file(&blob_sample()).expect("the sample opens");
    let records = reader.records().expect("the sample's records read");
    for r in &records {
        check_get(&reader, &records, &r.key, &index);
    }
    check_get(&reader, &records, b"key0010x", &index);
}

// ---- engine logs, edits, batches ------------------------------------------------------

/// What WAL recovery (`db::recovery::replay`) does with a decoded batch: every operation
/// gets sequence number `sequence + i`, the batch's last is `sequence + count - 1`, and
/// both go into internal keys, whose sequence numbers have 56 bits (`MAX_SEQ`).
fn replay_batch(mem: &Memtable, batch: &WriteBatch) {
    let seq = batch.sequence();
    let mut ops = 0u32;
    for (i, op) in batch.ops().enumerate() {
        let op_seq = seq + i as u64;
        assert!(
            op_seq <= MAX_SEQ,
            "a decoded batch's sequence numbers fit internal keys"
        );
        mem.add(op_seq, op.kind, op.key, op.value);
        ops += 1;
    }
    assert_eq!(
        ops,
        batch.count(),
        "a decoded batch iterates all its operations"
    );
    if batch.count() > 0 {
        let _last = seq + u64::from(batch.count()) - 1;
    }
}

/// A write-ahead log: the record reader, then each record as a write batch replayed into
/// a memtable.
pub fn engine_wal(data: &[u8]) {
    raw_and_fixed(data, fixup::record_log, replay_wal);
}

fn replay_wal(data: &[u8]) {
    let contents = read_log(data);
    check_tiling(&contents);
    let mem = Memtable::new();
    for record in contents.records {
        if let Ok(batch) = WriteBatch::from_data(record.payload) {
            replay_batch(&mem, &batch);
        }
    }
    for k in [&b""[..], b"key0001", b"k"] {
        let _ = mem.get(k, MAX_SEQ);
    }
}

/// Records and bad spots of a decoded log tile it, in order (`LogContents`' contract).
fn check_tiling(contents: &zkv_engine::log::LogContents) {
    let mut parts: Vec<(u64, u64)> = contents
        .records
        .iter()
        .map(|r| (r.offset, r.encoded_len()))
        .chain(contents.bad.iter().map(|b| (b.offset, b.len)))
        .collect();
    parts.sort_unstable();
    let mut at = 0;
    for (offset, len) in parts {
        assert_eq!(offset, at, "log parts tile the log");
        assert!(len > 0);
        at += len;
    }
    assert_eq!(at, contents.len, "log parts cover the log");
}

/// Applies an edit as manifest recovery does, and checks what recovery relies on: the last
/// sequence number becomes the database's, the next write takes the one after it
/// (`db::write`: `last_sequence() + 1`), and internal keys hold 56-bit sequence numbers.
fn apply_edit(version: &mut Version, edit: &VersionEdit) {
    if let Some(seq) = edit.last_sequence {
        assert!(seq <= MAX_SEQ, "a decoded last sequence fits internal keys");
    }
    if let Ok(next) = version.apply(edit) {
        *version = next;
    }
}

/// A manifest: the record reader, then each record as a version edit applied in order.
pub fn engine_manifest(data: &[u8]) {
    raw_and_fixed(data, fixup::record_log, replay_manifest);
}

fn replay_manifest(data: &[u8]) {
    let contents = read_log(data);
    check_tiling(&contents);
    let mut version = Version::new(NUM_LEVELS);
    for record in &contents.records {
        if let Ok(edit) = VersionEdit::decode(&record.payload) {
            apply_edit(&mut version, &edit);
        }
    }
    let _ = version.files_for_key(b"key0001");
    let _ = version.overlapping(0, Some(b"a"), Some(b"z"));
    let _ = version.file_totals();
}

/// One version edit: decode, re-encode (which must decode to the same edit), apply.
pub fn version_edit(data: &[u8]) {
    let Ok(edit) = VersionEdit::decode(data) else {
        return;
    };
    let again = VersionEdit::decode(&edit.encode()).expect("a decoded edit re-encodes");
    assert_eq!(again, edit, "decode(encode(edit)) == edit");
    let mut version = Version::new(NUM_LEVELS);
    apply_edit(&mut version, &edit);
    apply_edit(&mut version, &edit);
}

/// One write batch (a WAL record's payload): decode, iterate, replay, re-encode.
pub fn write_batch(data: &[u8]) {
    let Ok(batch) = WriteBatch::from_data(data.to_vec()) else {
        return;
    };
    replay_batch(&Memtable::new(), &batch);
    let mut again = WriteBatch::new();
    again.set_sequence(batch.sequence());
    for op in batch.ops() {
        match op.kind {
            ValueKind::Delete => again.delete(op.key),
            // A decoded batch holds puts and deletes only (a blob reference is refused).
            _ => again.put(op.key, op.value),
        }
    }
    let decoded = WriteBatch::from_data(again.data().to_vec()).expect("a re-encoded batch decodes");
    assert!(
        decoded.ops().eq(batch.ops()),
        "re-encoding keeps the operations"
    );
    assert_eq!(decoded.user_bytes(), batch.user_bytes());
}

// ---- zonefs metadata ------------------------------------------------------------------

/// The device the metadata targets use: 10 zones of 16 KiB with 512-byte blocks, the first
/// 3 of them metadata zones (the geometry of zonefs' own tiny-block tests).
pub fn meta_geometry() -> Geometry {
    Geometry::new(10, 16 << 10).with_block_size(512)
}

/// Metadata zones of [`meta_geometry`].
pub const META_ZONES: u32 = 3;

/// The layout of [`meta_geometry`] with [`META_ZONES`].
pub fn meta_layout() -> ZoneLayout {
    ZoneLayout::of_device(&meta_geometry(), META_ZONES)
}

/// One frame: framing and checksum, then the payload decoder.
pub fn meta_frame(data: &[u8]) {
    raw_and_fixed(data, fixup::meta_frame, decode_one_frame);
}

fn decode_one_frame(data: &[u8]) {
    let _ = check_frame(data);
    if let Ok((frame, len)) = decode_frame(data) {
        assert!(len <= data.len());
        let mut again = Vec::new();
        frame
            .encode(&mut again)
            .expect("a decoded frame re-encodes");
        assert_eq!(decode_frame(&again).ok(), Some((frame, again.len())));
    }
}

/// A record payload past the checksum: the first byte picks the frame type, the rest is
/// the payload. A decoded record is then applied to a small state (a snapshot rebuilds
/// it), whose invariants must hold afterwards.
pub fn meta_record(data: &[u8]) {
    let Some((&code, payload)) = data.split_first() else {
        return;
    };
    let kind = FrameKind::ALL[usize::from(code) % FrameKind::ALL.len()];
    let Ok(rec) = Record::decode_payload(kind, payload) else {
        return;
    };
    let mut again = Vec::new();
    rec.encode_payload(&mut again)
        .expect("a decoded record re-encodes");
    assert_eq!(
        Record::decode_payload(kind, &again).ok().as_ref(),
        Some(&rec)
    );
    let mut state = FsState::new(meta_layout());
    let mut file = FileMeta::new("000001.sst", FileKind::Sst);
    file.size = 100;
    file.extents.push(Extent {
        zone: 3,
        offset: 0,
        len: 512,
    });
    let setup = Record::FileUpdate {
        id: FileId(1),
        meta: file,
    };
    state.apply(&setup).expect("the setup record applies");
    if state.apply(&rec).is_ok() {
        if let Err(e) = state.check_invariants() {
            panic!("state breaks its invariants after an accepted record: {e}");
        }
    }
}

/// The 64-byte superblock at the start of a metadata zone.
pub fn meta_superblock(data: &[u8]) {
    raw_and_fixed(data, fixup::meta_superblock, decode_superblock);
}

fn decode_superblock(data: &[u8]) {
    if let Ok(sb) = Superblock::decode(data) {
        let _ = sb.mismatch(&meta_geometry(), META_ZONES, 0);
        assert_eq!(
            Superblock::decode(&sb.encode()),
            Ok(sb),
            "a decoded superblock re-encodes"
        );
    }
}

/// [`crate::fixup::meta_zone`] for the zones of [`meta_geometry`].
pub fn fix_meta_zone(data: &[u8]) -> Vec<u8> {
    let geo = meta_geometry();
    fixup::meta_zone(data, geo.zone_capacity as usize, geo.block_size as usize)
}

/// Whole metadata zones replayed by a read-only mount: the input is written to the
/// metadata zones of a [`meta_geometry`] device, 16 KiB (one zone's capacity) per zone,
/// the last piece padded with zeros to a block; then probe, dump and mount it.
pub fn meta_zone(data: &[u8]) {
    raw_and_fixed(data, fix_meta_zone, mount_zones);
}

fn mount_zones(data: &[u8]) {
    let geo = meta_geometry();
    let dev: Arc<dyn ZonedDevice> = Arc::new(MemDevice::new(geo).expect("valid geometry"));
    let block = geo.block_size as usize;
    for (zone, piece) in data
        .chunks(geo.zone_capacity as usize)
        .take(META_ZONES as usize)
        .enumerate()
    {
        let mut piece = piece.to_vec();
        piece.resize(piece.len().next_multiple_of(block), 0);
        dev.write(geo.zone_start(zone as u32), &piece, IoCategory::Metadata)
            .expect("a write inside an empty zone");
    }
    let _ = probe(dev.as_ref());
    for zone in 0..META_ZONES {
        let _ = dump_zone(dev.as_ref(), zone);
    }
    if let Ok((state, log)) = MetaLog::recover_read_only(dev, META_ZONES) {
        if let Err(e) = state.check_invariants() {
            panic!("a mounted state breaks its invariants: {e}");
        }
        let _ = (log.mount_report(), log.stats());
    }
}

// ---- zns file image ---------------------------------------------------------------------

/// A zone image file (`FileDevice`): header and zone table. The input is the whole file;
/// after a successful open every zone is reported and its written bytes read.
pub fn zns_image(data: &[u8]) {
    raw_and_fixed(data, fixup::zns_image, open_image);
}

fn open_image(data: &[u8]) {
    let path = std::env::temp_dir().join(format!("zkv-fuzz-zns-{}.img", std::process::id()));
    std::fs::write(&path, data).expect("write the image to a temporary file");
    if let Ok(dev) = zkv_zns::FileDevice::open_read_only(&path) {
        let geo = dev.geometry();
        if let Ok(zones) = dev.report_zones(0, geo.zones) {
            for z in zones {
                let len = usize::try_from(z.written()).expect("a zone's bytes fit memory");
                let mut buf = vec![0u8; len.min(64 << 10)];
                let _ = dev.read(z.start, &mut buf, IoCategory::User);
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}
