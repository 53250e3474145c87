//! Seeds of the corpus: real objects encoded by zkv's own writers, plus a few damaged
//! copies. `make-corpus` writes them to `corpus/<target>/`; everything is deterministic, so
//! running it again rewrites the same files.

use std::sync::Arc;

use zkv_engine::batch::WriteBatch;
use zkv_engine::blob::{BlobFileReader, BlobFileWriter};
use zkv_engine::key::{internal_key, ValueKind};
use zkv_engine::lifetime::{Case, Clock, FileLifetime};
use zkv_engine::log::LogWriter;
use zkv_engine::sst::{parts, CompressionType, TableBuilder, TableOptions};
use zkv_engine::version::{BlobFileMeta, BlobGarbage, FileMeta as SstMeta, VersionEdit};
use zkv_zns::{Geometry, IoCategory, MemDevice, ZoneOp, ZonedDevice};
use zkv_zonefs::meta::{
    decode_frame, frames_start, Extent, FileId, FileKind, FileMeta, Frame, FrameKind, FsState,
    MetaLog, Record, StoredOptions, Superblock, ZonePlacement, FORMAT_VERSION,
};

use crate::targets::{blob_sample, meta_geometry, meta_layout, BLOB_FILE, META_ZONES};

/// A named input.
pub type Seed = (String, Vec<u8>);

/// The seeds of every target, by target name.
pub fn all() -> Vec<(&'static str, Vec<Seed>)> {
    let tables = tables();
    let mut footers = Vec::new();
    let mut data_blocks = Vec::new();
    let mut index_blocks = Vec::new();
    let mut filters = Vec::new();
    let mut props = Vec::new();
    for (name, table) in &tables {
        let footer_bytes = &table[table.len() - 64..];
        footers.push((name.clone(), footer_bytes.to_vec()));
        let footer = parts::decode_footer(footer_bytes).expect("a built footer decodes");
        let block = |h| parts::block_contents(table, h).expect("a built block checks");
        let index = block(footer.index);
        for (i, (_, handle)) in parts::decode_index_block(index.clone())
            .expect("a built index decodes")
            .into_iter()
            .enumerate()
            .take(2)
        {
            data_blocks.push((format!("{name}-{i}"), block(handle)));
        }
        index_blocks.push((name.clone(), index));
        filters.push((name.clone(), block(footer.filter)));
        props.push((name.clone(), block(footer.props)));
    }
    let batches = batches();
    let edits = edits();
    vec![
        ("sst_footer", with_damage(footers)),
        ("sst_data_block", with_damage(data_blocks)),
        ("sst_index_block", with_damage(index_blocks)),
        ("sst_filter", with_damage(filters)),
        ("sst_props", with_damage(props)),
        ("sst_table", with_damage(tables)),
        ("blob_file", with_damage(blob_files())),
        ("blob_index", with_damage(blob_indexes())),
        ("engine_wal", with_damage(logs("wal", &batches))),
        ("engine_manifest", with_damage(logs("manifest", &edits))),
        ("version_edit", with_damage(edits)),
        ("write_batch", with_damage(batches)),
        ("meta_frame", with_damage(frames())),
        ("meta_record", with_damage(record_payloads())),
        ("meta_superblock", with_damage(superblocks())),
        ("meta_zone", with_damage(meta_zones())),
        ("zns_image", with_damage(zns_images())),
    ]
}

/// The seeds, and for each a copy with one byte flipped in the middle and one cut to two
/// thirds (the empty input once).
fn with_damage(seeds: Vec<Seed>) -> Vec<Seed> {
    let mut out = Vec::new();
    for (name, bytes) in seeds {
        if !bytes.is_empty() {
            let mut flipped = bytes.clone();
            flipped[bytes.len() / 2] ^= 0x5a;
            out.push((format!("{name}.flip"), flipped));
            out.push((format!("{name}.cut"), bytes[..bytes.len() * 2 / 3].to_vec()));
        }
        out.push((name, bytes));
    }
    out.push(("empty".into(), Vec::new()));
    out
}

// ---- engine ---------------------------------------------------------------------------

fn table(opts: TableOptions, entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut b = TableBuilder::new(opts);
    for (k, v) in entries {
        b.add(k, v).expect("entries ascend");
    }
    b.finish().expect("the table builds").data
}

fn tables() -> Vec<Seed> {
    let small = TableOptions {
        block_size: 160,
        block_restart_interval: 4,
        bloom_bits_per_key: 10,
        compression: Default::default(),
    };
    let plain = TableOptions {
        block_size: 4096,
        block_restart_interval: 16,
        bloom_bits_per_key: 0,
        compression: Default::default(),
    };
    let mut many = Vec::new();
    for i in 0..24u32 {
        let user = format!("key{:04}", i * 2);
        // Two versions of every third key, newest first; every fifth entry a deletion.
        for seq in [100 + u64::from(i), 50 + u64::from(i)]
            .iter()
            .take(1 + (i % 3 == 0) as usize)
        {
            let kind = if i % 5 == 4 {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            let value = match kind {
                ValueKind::Delete => Vec::new(),
                _ => format!("value-{i}-{seq}").into_bytes(),
            };
            many.push((internal_key(user.as_bytes(), *seq, kind), value));
        }
    }
    let one = vec![(internal_key(b"key0001", 7, ValueKind::Put), b"v".to_vec())];
    let mut seeds: Vec<Seed> = vec![
        ("empty-table".into(), table(small, &[])),
        ("one-entry".into(), table(small, &one)),
        ("many-blocks".into(), table(small, &many)),
        ("no-filter".into(), table(plain, &many[..12])),
    ];
    // Values that compress, so every block is stored compressed, one table per codec.
    let compressible: Vec<_> = many
        .iter()
        .map(|(k, v)| (k.clone(), v.repeat(12)))
        .collect();
    for codec in ["snappy", "lz4", "zstd"] {
        let opts = TableOptions {
            block_size: 512,
            compression: CompressionType::from_name(codec).expect("a codec zkv knows"),
            ..small
        };
        seeds.push((format!("compressed-{codec}"), table(opts, &compressible)));
    }
    seeds
}

fn batches() -> Vec<Seed> {
    let mut one = WriteBatch::new();
    one.set_sequence(1);
    one.put(b"key0001", b"value1");
    let mut mixed = WriteBatch::new();
    mixed.set_sequence(42);
    mixed.put(b"key0002", b"v2");
    mixed.delete(b"key0001");
    mixed.put(b"", b"");
    mixed.put(b"key0003", &[7u8; 200]);
    mixed.delete(b"k");
    let mut empty = WriteBatch::new();
    empty.set_sequence(9);
    vec![
        ("one-put".into(), one.data().to_vec()),
        ("mixed".into(), mixed.data().to_vec()),
        ("no-ops".into(), empty.data().to_vec()),
    ]
}

fn sst(number: u64, lo: &[u8], hi: &[u8], seqs: (u64, u64)) -> SstMeta {
    SstMeta {
        number,
        size: 4096 + number,
        smallest: internal_key(lo, seqs.1, ValueKind::Put),
        largest: internal_key(hi, seqs.0, ValueKind::Put),
        smallest_seq: seqs.0,
        largest_seq: seqs.1,
        entries: 10,
        deletions: 1,
        raw_key_size: 150,
        raw_value_size: 900,
        lifetime: None,
        oldest_blob_file: None,
    }
}

fn edits() -> Vec<Seed> {
    let base = VersionEdit {
        log_number: Some(3),
        next_file_number: Some(8),
        last_sequence: Some(120),
        ..VersionEdit::new()
    };
    let mut flush = VersionEdit::new();
    flush.add_file(0, sst(5, b"key0000", b"key0040", (1, 60)));
    flush.add_file(0, sst(6, b"key0010", b"key0020", (61, 90)));
    flush.log_number = Some(7);
    let mut compaction = VersionEdit::new();
    compaction.delete_file(0, 5);
    compaction.delete_file(0, 6);
    compaction.add_file(1, sst(9, b"key0000", b"key0019", (1, 90)));
    compaction.add_file(1, sst(10, b"key0020", b"key0040", (1, 90)));
    compaction
        .compact_cursors
        .push((1, internal_key(b"key0020", 5, ValueKind::Put)));
    compaction.next_file_number = Some(11);
    // Prophet's records: a file's predicted lifetime and the FC-tick clock.
    let mut predicted = compaction.clone();
    for (_, f) in &mut predicted.new_files {
        f.lifetime = Some(FileLifetime {
            created: 12,
            lifetime: 30,
            case: Case::C1,
            level: 1,
            moved: false,
        });
    }
    predicted.clock = Some(Clock {
        tick: 12,
        compacting_levels: 1,
        compactions: 3,
        deleted: 7,
        passive: vec![(0, 0), (40, 2)],
    });
    // BlobDB's records: a blob file added, garbage of another, a table linked to its
    // oldest blob file.
    let mut blob = compaction.clone();
    for (_, f) in &mut blob.new_files {
        f.oldest_blob_file = Some(4);
    }
    blob.blob_files.push(BlobFileMeta {
        number: 12,
        total_count: 40,
        total_bytes: 41_000,
        file_size: 41_052,
        ..BlobFileMeta::default()
    });
    blob.blob_garbage.push(BlobGarbage {
        number: 4,
        count: 3,
        bytes: 3_100,
    });
    vec![
        ("base".into(), base.encode()),
        ("flush".into(), flush.encode()),
        ("compaction".into(), compaction.encode()),
        ("prophet".into(), predicted.encode()),
        ("blob".into(), blob.encode()),
    ]
}

/// One log holding every record of `records` (in order), and one with only the first.
fn logs(kind: &str, records: &[Seed]) -> Vec<Seed> {
    let write = |records: &[Seed]| {
        let mut w = LogWriter::new(Vec::new());
        for (_, r) in records {
            w.add_record(r).expect("a record of a Vec log");
        }
        w.into_inner()
    };
    vec![
        (format!("{kind}-all"), write(records)),
        (format!("{kind}-first"), write(&records[..1])),
    ]
}

// ---- engine blob files -------------------------------------------------------------

/// The sample `blob_index` reads, a file of one blob, and one of none.
fn blob_files() -> Vec<Seed> {
    let file = |blobs: &[(&[u8], &[u8])]| {
        let mut w = BlobFileWriter::new(Vec::new(), BLOB_FILE).expect("a blob file starts");
        for (k, v) in blobs {
            w.add(k, v).expect("a blob is added");
        }
        w.finish().expect("the blob file finishes").0
    };
    vec![
        ("sample".into(), blob_sample()),
        ("one".into(), file(&[(b"key0005", b"value")])),
        ("no-blobs".into(), file(&[])),
    ]
}

/// The index of every blob of the sample, and one of another file.
fn blob_indexes() -> Vec<Seed> {
    let file = Arc::new(zkv_engine::source::MemFile::new("sample", blob_sample()));
    let reader = BlobFileReader::open(file, BLOB_FILE).expect("the sample opens");
    let records = reader.records().expect("the sample's records read");
    let mut out: Vec<Seed> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("sample-{i}"), r.index(BLOB_FILE).encode()))
        .collect();
    let other = records[1].index(BLOB_FILE + 1);
    out.push(("other-file".into(), other.encode()));
    out
}

// ---- zonefs metadata ----------------------------------------------------------------------

fn file(name: &str, kind: FileKind, zone: u32, offset: u64, len: u64) -> FileMeta {
    FileMeta {
        name: name.into(),
        kind,
        size: len,
        extents: vec![Extent { zone, offset, len }],
        level: (kind == FileKind::Sst).then_some(1),
        lifetime: 2,
    }
}

fn options() -> StoredOptions {
    StoredOptions {
        reserved_zones: 1,
        placement: "caza".into(),
        finish_threshold: Some(10),
        gc_start: 20,
        gc_stop: 30,
        gc_mode: "greedy".into(),
    }
}

/// Records valid for [`meta_layout`], applied in this order to an empty state.
fn meta_records() -> Vec<Record> {
    vec![
        Record::FileUpdate {
            id: FileId(1),
            meta: file("000001.sst", FileKind::Sst, 3, 0, 4096),
        },
        Record::FileUpdate {
            id: FileId(2),
            meta: file("000002.log", FileKind::Wal, 4, 0, 1024),
        },
        Record::ZoneMeta {
            zone: 3,
            placement: ZonePlacement {
                class: 2,
                policy: b"l1".to_vec(),
            },
        },
        Record::FileRename {
            id: FileId(2),
            name: "000003.log".into(),
        },
        Record::Options(options()),
        Record::FileDelete { id: FileId(1) },
    ]
}

/// A state with some of everything, as a snapshot record.
fn snapshot_record() -> Record {
    let mut state = FsState::new(meta_layout());
    for rec in &meta_records()[..5] {
        state.apply(rec).expect("the seed records apply");
    }
    Record::Snapshot(state.to_snapshot())
}

fn frames() -> Vec<Seed> {
    let mut out = Vec::new();
    let mut records = meta_records();
    records.push(snapshot_record());
    for (i, rec) in records.iter().enumerate() {
        let mut buf = Vec::new();
        rec.encode_frame(&mut buf).expect("a seed record encodes");
        out.push((format!("{i}-{:?}", rec.kind()).to_lowercase(), buf));
    }
    // Commit frames as the log writes them, taken from a real metadata zone.
    let zone = meta_zones().swap_remove(1).1;
    let block = meta_geometry().block_size as usize;
    let mut pos = frames_start(FORMAT_VERSION, block);
    let mut commits = 0;
    while commits < 2 && pos < zone.len() {
        match decode_frame(&zone[pos..]) {
            Ok((frame, len)) => {
                if let Frame::Commit(_) = frame {
                    out.push((format!("commit-{commits}"), zone[pos..pos + len].to_vec()));
                    commits += 1;
                }
                pos += len;
            }
            Err(_) => pos = (pos + 1).next_multiple_of(block),
        }
    }
    assert_eq!(commits, 2, "the metadata zone holds commits");
    out
}

/// The first byte picks the kind, as `targets::meta_record` reads it.
fn record_payloads() -> Vec<Seed> {
    let mut records = meta_records();
    records.push(snapshot_record());
    records
        .into_iter()
        .enumerate()
        .map(|(i, rec)| {
            let code = FrameKind::ALL
                .iter()
                .position(|k| *k == rec.kind())
                .expect("every kind is listed");
            let mut buf = vec![code as u8];
            rec.encode_payload(&mut buf).expect("a seed record encodes");
            (format!("{i}-{:?}", rec.kind()).to_lowercase(), buf)
        })
        .collect()
}

fn superblocks() -> Vec<Seed> {
    let geo = meta_geometry();
    let mut v2 = Superblock::new(&geo, META_ZONES, 1, 7);
    v2.version = 2;
    vec![
        (
            "zone0".into(),
            Superblock::new(&geo, META_ZONES, 0, 1).encode().to_vec(),
        ),
        ("zone2-v2".into(), v2.encode().to_vec()),
    ]
}

/// The written bytes of `zone`.
fn zone_bytes(dev: &dyn ZonedDevice, zone: u32) -> Vec<u8> {
    let info = dev.zone_info(zone).expect("the zone exists");
    let mut buf = vec![0u8; info.written() as usize];
    dev.read(info.start, &mut buf, IoCategory::Metadata)
        .expect("written bytes read back");
    buf
}

/// Metadata zones as `targets::meta_zone` takes them: each zone but the last padded to
/// the zone capacity.
fn meta_zone_input(dev: &dyn ZonedDevice, zones: u32) -> Vec<u8> {
    let cap = meta_geometry().zone_capacity as usize;
    let mut out = Vec::new();
    for zone in 0..zones {
        if zone > 0 {
            out.resize(cap * zone as usize, 0);
        }
        out.extend_from_slice(&zone_bytes(dev, zone));
    }
    out
}

fn meta_zones() -> Vec<Seed> {
    let geo = meta_geometry();
    let dev: Arc<dyn ZonedDevice> = Arc::new(MemDevice::new(geo).expect("valid geometry"));
    let mut log = MetaLog::format(dev.clone(), META_ZONES).expect("format");
    let formatted = meta_zone_input(dev.as_ref(), 1);
    let mut state = FsState::new(meta_layout());
    let records = meta_records();
    for batch in records.chunks(2) {
        for rec in batch {
            state.apply(rec).expect("the seed records apply");
            log.append(rec).expect("append");
        }
        log.sync(&state).expect("sync");
    }
    let batches = meta_zone_input(dev.as_ref(), 1);
    // A new generation in zone 1; zone 0 is left as it was (a read-only mount never resets
    // it), so the mount has two generations to choose from.
    log.roll_now(&state).expect("roll");
    let rec = Record::FileUpdate {
        id: FileId(4),
        meta: file("000004.sst", FileKind::Sst, 5, 0, 512),
    };
    state.apply(&rec).expect("the seed record applies");
    log.append(&rec).expect("append");
    log.sync(&state).expect("sync");
    let rolled = meta_zone_input(dev.as_ref(), 2);
    vec![
        ("formatted".into(), formatted),
        ("batches".into(), batches),
        ("rolled".into(), rolled),
    ]
}

// ---- zns file images ----------------------------------------------------------------------

fn zns_images() -> Vec<Seed> {
    let dir = std::env::temp_dir().join(format!("zkv-fuzz-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let image = |name: &str, geo: Geometry, fill: &dyn Fn(&zkv_zns::FileDevice)| {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        {
            let dev = zkv_zns::FileDevice::create(&path, geo).expect("create an image");
            fill(&dev);
            dev.sync().expect("sync the image");
        }
        let bytes = std::fs::read(&path).expect("read the image back");
        std::fs::remove_file(&path).expect("remove the image");
        (name.to_string(), bytes)
    };
    let geo = Geometry::new(4, 1024)
        .with_block_size(512)
        .with_limits(2, 3);
    let out = vec![
        image("fresh", geo, &|_| {}),
        image("written", geo, &|dev| {
            dev.write(0, &[0xab; 512], IoCategory::User)
                .expect("write zone 0");
            dev.write(geo.zone_start(1), &[0xcd; 1024], IoCategory::User)
                .expect("fill zone 1");
            dev.write(geo.zone_start(2), &[0xef; 512], IoCategory::User)
                .expect("write zone 2");
            dev.zone_op(2, ZoneOp::Finish).expect("finish zone 2");
        }),
    ];
    let _ = std::fs::remove_dir(&dir);
    out
}
