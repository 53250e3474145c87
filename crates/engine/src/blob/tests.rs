//! Blob files against a model: round trips, every bit flip, truncation, indexes that do not
//! fit, a failing sink, and a blob file stored in a zoned file.

use std::sync::Arc;

use proptest::prelude::*;

use super::format::Footer;
use super::*;
use crate::log::{Flaky, LogSink};
use crate::source::{MemFile, RandomAccess};
use crate::{Error, Result};

const NUMBER: u64 = 7;

type Blobs = Vec<(Vec<u8>, Vec<u8>)>;

/// The file holding `blobs` in order, and the index of each.
fn build(blobs: &Blobs) -> (Vec<u8>, BlobFileSummary, Vec<BlobIndex>) {
    let mut w = BlobFileWriter::new(Vec::new(), NUMBER).unwrap();
    let indexes = blobs.iter().map(|(k, v)| w.add(k, v).unwrap()).collect();
    let (data, summary) = w.finish().unwrap();
    (data, summary, indexes)
}

fn open(data: Vec<u8>) -> Result<BlobFileReader> {
    let file: Arc<dyn RandomAccess> = Arc::new(MemFile::new(blob_file_name(NUMBER), data));
    BlobFileReader::open(file, NUMBER)
}

/// A small file: an empty value, an empty key, and a few ordinary blobs.
fn small() -> Blobs {
    vec![
        (b"apple".to_vec(), b"red and round".to_vec()),
        (b"empty".to_vec(), Vec::new()),
        (Vec::new(), b"no key".to_vec()),
        (b"kiwi".to_vec(), vec![0xa5; 40]),
    ]
}

fn assert_corruption<T: std::fmt::Debug>(got: Result<T>, needle: &str) -> String {
    let err = got.unwrap_err();
    let text = err.to_string();
    assert!(err.is_corruption(), "{text}");
    assert!(text.contains("000007.blob"), "names the file: {text}");
    assert!(text.contains(needle), "expected {needle:?} in: {text}");
    text
}

#[test]
fn a_small_file_round_trips() {
    let blobs = small();
    let (data, summary, indexes) = build(&blobs);
    let bytes: u64 = blobs
        .iter()
        .map(|(k, v)| blob_record_bytes(k.len(), v.len()))
        .sum();
    assert_eq!(
        summary,
        BlobFileSummary {
            number: NUMBER,
            blob_count: 4,
            blob_bytes: bytes,
            file_size: HEADER_LEN + bytes + FOOTER_LEN,
        }
    );
    assert_eq!(data.len() as u64, summary.file_size);
    // The index points at the value itself.
    let first = indexes[0];
    assert_eq!(first.offset, HEADER_LEN + RECORD_HEADER_LEN + 5);
    assert_eq!(&data[first.offset as usize..][..13], b"red and round");
    let reader = open(data).unwrap();
    assert_eq!(reader.summary(), summary);
    for ((k, v), index) in blobs.iter().zip(&indexes) {
        assert_eq!(&reader.get(k, index).unwrap(), v);
    }
    let records = reader.records().unwrap();
    assert_eq!(records.len(), 4);
    for (r, ((k, v), index)) in records.iter().zip(blobs.iter().zip(&indexes)) {
        assert_eq!((&r.key, &r.value), (k, v));
        assert_eq!(r.index(NUMBER), *index);
    }
}

#[test]
fn an_empty_file_opens_with_no_records() {
    let (data, summary, _) = build(&Vec::new());
    assert_eq!(data.len() as u64, HEADER_LEN + FOOTER_LEN);
    assert_eq!(summary.blob_count, 0);
    let reader = open(data).unwrap();
    assert_eq!(reader.records().unwrap(), []);
}

#[test]
fn the_writer_counts_as_it_goes() {
    let mut w = BlobFileWriter::new(Vec::new(), NUMBER).unwrap();
    assert_eq!((w.number(), w.blob_count(), w.blob_bytes()), (NUMBER, 0, 0));
    assert_eq!(w.file_size(), HEADER_LEN);
    let index = w.add(b"k", b"value").unwrap();
    assert_eq!(
        index,
        BlobIndex {
            file: NUMBER,
            offset: HEADER_LEN + RECORD_HEADER_LEN + 1,
            size: 5
        }
    );
    assert_eq!(
        (w.blob_count(), w.blob_bytes()),
        (1, blob_record_bytes(1, 5))
    );
    assert_eq!(w.file_size(), HEADER_LEN + blob_record_bytes(1, 5));
    let (data, summary) = w.finish().unwrap();
    assert_eq!(data.len() as u64, summary.file_size);
    assert!(matches!(
        BlobFileWriter::new(Vec::new(), 0),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn every_bit_flip_is_detected() {
    let blobs = small();
    let (data, _, indexes) = build(&blobs);
    assert!(
        data.len() < 256,
        "keep the file small: {} bytes",
        data.len()
    );
    for bit in 0..data.len() * 8 {
        let mut bad = data.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let reader = match open(bad) {
            Ok(reader) => reader,
            Err(e) => {
                assert_corruption::<()>(Err(e), "");
                continue;
            }
        };
        let mut noticed = false;
        for ((k, v), index) in blobs.iter().zip(&indexes) {
            match reader.get(k, index) {
                Ok(got) => assert_eq!(&got, v, "bit {bit}: a wrong value"),
                Err(e) => {
                    assert_corruption::<()>(Err(e), "blob record at offset");
                    noticed = true;
                }
            }
        }
        assert!(
            noticed,
            "flip of bit {bit} (byte {}) went unnoticed",
            bit / 8
        );
        assert_corruption(reader.records(), "blob record at offset");
    }
}

#[test]
fn truncated_extended_and_unfinished_files_are_corruption() {
    let blobs = small();
    let (data, ..) = build(&blobs);
    for len in 0..data.len() {
        let err = open(data[..len].to_vec()).err();
        assert!(
            err.as_ref().is_some_and(Error::is_corruption),
            "cut to {len}: {err:?}"
        );
    }
    let mut longer = data.clone();
    longer.push(0);
    assert_corruption(open(longer), "magic");
    let mut w = BlobFileWriter::new(Vec::new(), NUMBER).unwrap();
    for (k, v) in &blobs {
        w.add(k, v).unwrap();
    }
    let unfinished = open(w.sink().clone());
    assert_corruption(unfinished, "no blob file footer");
    assert_corruption(open(Vec::new()), "too short");
}

#[test]
fn another_files_number_is_corruption() {
    let (data, ..) = build(&small());
    let file: Arc<dyn RandomAccess> = Arc::new(MemFile::new("000007.blob", data));
    let got = BlobFileReader::open(file, 8);
    assert_corruption(got, "holds blob file number 7, expected 8");
}

#[test]
fn footer_counts_must_match_the_records() {
    let (data, summary, _) = build(&small());
    let footer_at = data.len() - FOOTER_LEN as usize;
    let with_footer = |blob_count, blob_bytes| {
        let mut d = data.clone();
        d[footer_at..].copy_from_slice(
            &Footer {
                blob_count,
                blob_bytes,
            }
            .encode(),
        );
        d
    };
    let (count, bytes) = (summary.blob_count, summary.blob_bytes);
    assert_corruption(
        open(with_footer(count, bytes + 1)),
        "between header and footer",
    );
    assert_corruption(open(with_footer(u64::MAX, bytes)), "cannot fit");
    assert_corruption(open(with_footer(0, bytes)), "no blobs");
    let reader = open(with_footer(count + 1, bytes)).unwrap();
    assert_corruption(
        reader.records(),
        "4 records in the file, the footer counts 5",
    );
}

#[test]
fn a_record_length_past_the_footer_is_corruption() {
    let (mut data, ..) = build(&small());
    // The first record's key length.
    let at = HEADER_LEN as usize + 4;
    data[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let reader = open(data).unwrap();
    assert_corruption(reader.records(), "passes the footer");
}

#[test]
fn wrong_key_size_offset_or_file_are_corruption() {
    let blobs = small();
    let (data, _, indexes) = build(&blobs);
    let end = data.len() as u64 - FOOTER_LEN;
    let reader = open(data).unwrap();
    let (key, index) = (&blobs[0].0, indexes[0]);
    assert_corruption(reader.get(b"apply", &index), "another key");
    // A key one byte longer moves the record's start back into the previous record.
    let got = reader.get(b"empty!", &indexes[1]);
    assert_corruption(got, "the index expects a 6-byte key");
    let size = BlobIndex {
        size: index.size - 1,
        ..index
    };
    assert_corruption(reader.get(key, &size), "and a 12-byte value");
    let offset = BlobIndex {
        offset: indexes[1].offset,
        ..index
    };
    assert!(reader.get(key, &offset).unwrap_err().is_corruption());
    let file = BlobIndex { file: 8, ..index };
    assert_corruption(
        reader.get(key, &file),
        "of blob file 8 used to read blob file 7",
    );
    // Outside the records: before them, past the footer, sizes no file holds.
    for (offset, size) in [
        (0, 0),
        (HEADER_LEN + RECORD_HEADER_LEN, 0),
        (end, 1),
        (end + 1, 0),
        (index.offset, u64::from(u32::MAX)),
        (index.offset, u64::MAX),
        (u64::MAX, 1),
    ] {
        let far = BlobIndex {
            offset,
            size,
            ..index
        };
        assert_corruption(reader.get(key, &far), "points outside the records");
    }
}

#[test]
fn a_failed_append_stops_the_writer() {
    let flaky = Flaky::failing_at;
    assert!(BlobFileWriter::new(flaky(1), NUMBER).is_err());
    // The header, one record (3 appends), then the second record's key fails.
    let mut w = BlobFileWriter::new(flaky(6), NUMBER).unwrap();
    w.add(b"first", b"value").unwrap();
    let size = w.file_size();
    assert!(w.add(b"second", b"value").is_err());
    assert_eq!((w.blob_count(), w.file_size()), (1, size));
    let err = w.add(b"third", b"value").unwrap_err();
    assert!(matches!(err, Error::NotWritable(_)), "{err}");
    assert!(matches!(w.finish(), Err(Error::NotWritable(_))));
}

#[test]
fn a_blob_file_in_a_zoned_file() {
    use zkv_zonefs::fs::{FsOptions, ZoneFs};
    use zkv_zonefs::meta::FileKind;
    use zkv_zonefs::placement::PlacementHint;

    let geo = zkv_zns::Geometry::new(16, 256 * 1024)
        .with_block_size(4096)
        .with_limits(8, 8);
    let dev: Arc<dyn zkv_zns::ZonedDevice> = Arc::new(zkv_zns::MemDevice::new(geo).unwrap());
    let fs = ZoneFs::format(dev, FsOptions::default().with_meta_zones(2)).unwrap();
    let name = blob_file_name(12);
    let hint = PlacementHint {
        kind: Some(FileKind::Blob),
        ..Default::default()
    };
    let sink = fs.create(&name, FileKind::Blob, hint).unwrap();
    let mut w = BlobFileWriter::new(sink, 12).unwrap();
    let blobs: Blobs = (0..200u32)
        .map(|i| {
            (
                format!("key{i:05}").into_bytes(),
                vec![i as u8; 100 + i as usize * 37],
            )
        })
        .collect();
    let indexes: Vec<BlobIndex> = blobs.iter().map(|(k, v)| w.add(k, v).unwrap()).collect();
    let (mut sink, summary) = w.finish().unwrap();
    LogSink::sync(&mut sink).unwrap();
    sink.close().unwrap();
    let file: Arc<dyn RandomAccess> = Arc::new(fs.open(&name).unwrap());
    assert_eq!(file.size(), summary.file_size);
    let reader = BlobFileReader::open(file, 12).unwrap();
    assert_eq!(reader.summary(), summary);
    assert_eq!(
        reader.get(&blobs[123].0, &indexes[123]).unwrap(),
        blobs[123].1
    );
    let records = reader.records().unwrap();
    let got: Blobs = records.into_iter().map(|r| (r.key, r.value)).collect();
    assert_eq!(got, blobs);
}

fn blobs_strategy() -> impl Strategy<Value = Blobs> {
    let key = proptest::collection::vec(any::<u8>(), 0..24);
    let value = prop_oneof![
        Just(Vec::new()),
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::collection::vec(any::<u8>(), 0..4096),
    ];
    proptest::collection::vec((key, value), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn files_round_trip_against_a_model(blobs in blobs_strategy()) {
        let (data, summary, indexes) = build(&blobs);
        let bytes: u64 = blobs.iter().map(|(k, v)| blob_record_bytes(k.len(), v.len())).sum();
        prop_assert_eq!(summary.blob_count, blobs.len() as u64);
        prop_assert_eq!(summary.blob_bytes, bytes);
        prop_assert_eq!(summary.file_size, data.len() as u64);
        let reader = open(data).unwrap();
        prop_assert_eq!(reader.summary(), summary);
        for ((k, v), index) in blobs.iter().zip(&indexes) {
            prop_assert_eq!(BlobIndex::decode(&index.encode()).unwrap(), *index);
            prop_assert_eq!(&reader.get(k, index).unwrap(), v);
        }
        let records = reader.records().unwrap();
        prop_assert_eq!(records.len(), blobs.len());
        for (r, ((k, v), index)) in records.iter().zip(blobs.iter().zip(&indexes)) {
            prop_assert_eq!((&r.key, &r.value), (k, v));
            prop_assert_eq!(r.index(NUMBER), *index);
        }
    }
}

/// The example of `docs/BLOB.md`.
#[test]
fn the_documented_example() {
    let (data, summary, indexes) = build(&vec![(b"k".to_vec(), b"v1".to_vec())]);
    assert_eq!((data.len(), summary.blob_bytes), (67, 15));
    assert_eq!(indexes[0].offset, 37);
    assert_eq!(indexes[0].encode(), [0x01, 0x07, 0x25, 0x02]);
}
