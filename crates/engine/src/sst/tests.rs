//! Tables against a model: round trips, seeks, gets, the filter, corruption of every kind,
//! and a table stored in a zoned file.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::block::BlockBuilder;
use super::format::{append_block, BlockHandle, Footer, BLOCK_TRAILER_LEN};
use super::*;
use crate::iter::test_util::drain_back;
use crate::iter::InternalIterator;
use crate::key::{self, internal_key, InternalKey, SeqNo, ValueKind};
use crate::source::{MemFile, RandomAccess};
use crate::Result;

type Model = BTreeMap<InternalKey, Vec<u8>>;

fn build(model: &Model, opts: TableOptions) -> BuiltTable {
    let mut b = TableBuilder::new(opts);
    for (k, v) in model {
        b.add(k.as_bytes(), v).unwrap();
    }
    b.finish().unwrap()
}

fn open(data: Vec<u8>) -> Result<Arc<Table>> {
    let file: Arc<dyn RandomAccess> = Arc::new(MemFile::new("000007.sst", data));
    Table::open(file).map(Arc::new)
}

fn scan(table: &Arc<Table>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut it = table.iter();
    let mut out = Vec::new();
    it.seek_to_first()?;
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next()?;
    }
    Ok(out)
}

fn model_entries(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .map(|(k, v)| (k.0.clone(), v.clone()))
        .collect()
}

fn model_get(model: &Model, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, Vec<u8>)> {
    let target = InternalKey(key::seek_key(user_key, snapshot));
    let (k, v) = model.range(target..).next()?;
    let p = key::parse(&k.0)?;
    (p.user_key == user_key).then(|| (p.kind, v.clone()))
}

fn opts(block_size: u32, interval: u32, bits: u32) -> TableOptions {
    TableOptions {
        block_size,
        block_restart_interval: interval,
        bloom_bits_per_key: bits,
        compression: Default::default(),
    }
}

/// User keys from a small alphabet (so prefixes are shared and collide), sometimes long.
fn user_key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0u8), Just(0xffu8)], 0..12),
        1 => proptest::collection::vec(any::<u8>(), 200..1200),
    ]
}

fn model_strategy() -> impl Strategy<Value = Model> {
    let entry = (
        user_key_strategy(),
        proptest::collection::vec((1u64..60, any::<bool>(), 0usize..120), 1..5),
    );
    proptest::collection::vec(entry, 0..120).prop_map(|keys| {
        let mut model = Model::new();
        for (uk, versions) in keys {
            for (seq, put, vlen) in versions {
                let kind = if put {
                    ValueKind::Put
                } else {
                    ValueKind::Delete
                };
                let value = match kind {
                    ValueKind::Delete => Vec::new(),
                    _ => (0..vlen).map(|i| (i as u8) ^ (seq as u8)).collect(),
                };
                model.insert(InternalKey::new(&uk, seq, kind), value);
            }
        }
        model
    })
}

fn check_props(model: &Model, props: &TableProps) {
    assert_eq!(props.entries, model.len() as u64);
    let dels = model
        .keys()
        .filter(|k| key::parse(&k.0).unwrap().kind == ValueKind::Delete);
    assert_eq!(props.deletions, dels.count() as u64);
    let raw_keys: usize = model.keys().map(|k| k.0.len()).sum();
    let raw_values: usize = model.values().map(Vec::len).sum();
    assert_eq!(props.raw_key_size, raw_keys as u64);
    assert_eq!(props.raw_value_size, raw_values as u64);
    let first = model.keys().next().map(|k| k.0.clone()).unwrap_or_default();
    let last = model.keys().last().map(|k| k.0.clone()).unwrap_or_default();
    assert_eq!((&props.smallest, &props.largest), (&first, &last));
    let seqs = model.keys().map(|k| key::parse(&k.0).unwrap().seq);
    assert_eq!(props.smallest_seq, seqs.clone().min().unwrap_or(0));
    assert_eq!(props.largest_seq, seqs.max().unwrap_or(0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn tables_agree_with_the_model(
        model in model_strategy(),
        block_size in 64u32..2048,
        interval in 1u32..20,
        bits in prop_oneof![Just(0u32), 1u32..16],
        targets in proptest::collection::vec((user_key_strategy(), 0u64..70, any::<bool>()), 1..40),
        flips in proptest::collection::vec(any::<prop::sample::Index>(), 8),
        codec in prop::sample::select(CompressionType::NAMES.to_vec()),
    ) {
        let compression = CompressionType::from_name(codec).unwrap();
        let built = build(&model, TableOptions { compression, ..opts(block_size, interval, bits) });
        check_props(&model, &built.props);
        for pick in &flips {
            let bit = pick.index(built.data.len() * 8);
            let mut bad = built.data.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let outcome = open(bad).and_then(|t| scan(&t));
            prop_assert!(outcome.is_err_and(|e| e.is_corruption()), "bit {} unnoticed", bit);
        }
        let table = open(built.data).unwrap();
        prop_assert_eq!(table.props(), &built.props);
        prop_assert_eq!(scan(&table).unwrap(), model_entries(&model));
        let mut back = table.iter();
        back.seek_to_last().unwrap();
        let mut expect = model_entries(&model);
        expect.reverse();
        prop_assert_eq!(drain_back(&mut back).unwrap(), expect);

        // Targets: random user keys, and the user keys of the table itself.
        let own = model.keys().step_by(7).map(|k| (k.user_key().to_vec(), 30, true));
        let mut it = table.iter();
        for (uk, seq, put) in targets.into_iter().chain(own) {
            let kind = if put { ValueKind::Put } else { ValueKind::Delete };
            let target = InternalKey::new(&uk, seq, kind);
            it.seek(&target.0).unwrap();
            let expect = model.range(target.clone()..).next();
            let got = it.valid().then(|| (it.key().to_vec(), it.value().to_vec()));
            prop_assert_eq!(got, expect.map(|(k, v)| (k.0.clone(), v.clone())));
            // The iterator continues correctly after a seek.
            if it.valid() {
                it.next().unwrap();
                let expect = model.range(target.clone()..).nth(1);
                let got = it.valid().then(|| it.key().to_vec());
                prop_assert_eq!(got, expect.map(|(k, _)| k.0.clone()));
            }
            // Backwards from the last entry at or before the target.
            it.seek_for_prev(&target.0).unwrap();
            let expect: Vec<_> = model.range(..=target.clone()).rev().take(3).collect();
            for (k, v) in expect {
                prop_assert!(it.valid());
                prop_assert_eq!((it.key(), it.value()), (&k.0[..], &v[..]));
                it.prev().unwrap();
            }
            prop_assert_eq!(table.get(&uk, seq).unwrap(), model_get(&model, &uk, seq));
            if model.keys().any(|k| k.user_key() == &uk[..]) {
                prop_assert!(table.may_contain(&uk));
            }
        }
    }
}

#[test]
fn get_sees_the_newest_visible_version() {
    let mut model = Model::new();
    for (seq, kind) in [
        (3, ValueKind::Put),
        (5, ValueKind::Delete),
        (9, ValueKind::Put),
    ] {
        model.insert(
            InternalKey::new(b"k", seq, kind),
            format!("v{seq}").into_bytes(),
        );
    }
    model.insert(InternalKey::new(b"j", 1, ValueKind::Put), b"j".to_vec());
    let table = open(build(&model, opts(64, 1, 10)).data).unwrap();
    let get = |s| table.get(b"k", s).unwrap();
    assert_eq!(get(2), None);
    assert_eq!(get(3), Some((ValueKind::Put, b"v3".to_vec())));
    assert_eq!(get(7), Some((ValueKind::Delete, b"v5".to_vec())));
    assert_eq!(get(u64::MAX), Some((ValueKind::Put, b"v9".to_vec())));
    assert_eq!(table.get(b"kk", u64::MAX).unwrap(), None);
    assert_eq!(table.get(b"", u64::MAX).unwrap(), None);
}

#[test]
fn empty_table_round_trips() {
    for bits in [0, 10] {
        let built = TableBuilder::new(opts(4096, 16, bits)).finish().unwrap();
        assert_eq!(
            built.props,
            TableProps {
                data_size: 0,
                filter_size: built.props.filter_size,
                index_size: built.props.index_size,
                ..TableProps::default()
            }
        );
        let table = open(built.data).unwrap();
        assert!(scan(&table).unwrap().is_empty());
        let mut it = table.iter();
        it.seek(&internal_key(b"a", 1, ValueKind::Put)).unwrap();
        assert!(!it.valid());
        assert_eq!(table.get(b"a", 10).unwrap(), None);
    }
}

fn numbered_model(n: u32, value_len: usize) -> Model {
    (0..n)
        .map(|i| {
            let k = InternalKey::new(
                format!("user{i:06}").as_bytes(),
                u64::from(i) + 1,
                ValueKind::Put,
            );
            (k, vec![b'x'; value_len])
        })
        .collect()
}

#[test]
fn a_recycled_buffer_starts_the_next_table_empty() {
    // Recycle several large tables' buffers, so that the next builders take them (other
    // tests running at once may take some; the spare list holds at most two).
    let large = numbered_model(2000, 100);
    let large_len = build(&large, opts(4096, 16, 10)).data.len();
    for _ in 0..8 {
        build(&large, opts(4096, 16, 10)).recycle();
    }
    let small = numbered_model(3, 4);
    for _ in 0..8 {
        let built = build(&small, opts(4096, 16, 10));
        assert!(built.data.len() < large_len / 10);
        let table = open(built.data).unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>)> = small
            .iter()
            .map(|(k, v)| (k.0.clone(), v.clone()))
            .collect();
        assert_eq!(scan(&table).unwrap(), want);
    }
}

#[test]
fn bloom_has_no_false_negatives_and_few_false_positives() {
    let n = 10_000;
    let table = open(build(&numbered_model(n, 4), opts(4096, 16, 10)).data).unwrap();
    for i in 0..n {
        assert!(table.may_contain(format!("user{i:06}").as_bytes()));
    }
    let fp = (0..n)
        .filter(|i| table.may_contain(format!("absent{i:06}").as_bytes()))
        .count();
    let rate = fp as f64 / f64::from(n);
    assert!(rate < 0.02, "false-positive rate {rate}");
    // Without a filter every key may be present.
    let table = open(build(&numbered_model(10, 4), opts(4096, 16, 0)).data).unwrap();
    assert!(table.may_contain(b"absent"));
}

#[test]
fn blocks_are_cut_near_block_size() {
    let built = build(&numbered_model(2000, 50), opts(1024, 16, 10));
    let p = &built.props;
    let avg = (p.data_size - p.data_blocks * BLOCK_TRAILER_LEN) / p.data_blocks;
    assert!((900..=1100).contains(&avg), "average block {avg} bytes");
}

/// What a table answers: its full scan and gets of present and absent keys (or the error).
fn answers(data: Vec<u8>, probes: &[Vec<u8>]) -> Result<Vec<String>> {
    let table = open(data)?;
    let mut out: Vec<String> = scan(&table)?
        .into_iter()
        .map(|e| format!("{e:?}"))
        .collect();
    for uk in probes {
        out.push(format!("{:?}", table.get(uk, u64::MAX)?));
    }
    Ok(out)
}

#[test]
fn every_bit_flip_is_detected() {
    let mut model = numbered_model(40, 9);
    model.insert(
        InternalKey::new(b"user000003", 100, ValueKind::Delete),
        Vec::new(),
    );
    let built = build(&model, opts(128, 3, 10));
    assert!(built.props.data_blocks >= 5, "{:?}", built.props);
    let data = built.data;
    assert!(
        data.len() < 4096,
        "keep the table small: {} bytes",
        data.len()
    );
    let probes: Vec<Vec<u8>> = (0..45)
        .map(|i| format!("user{i:06}").into_bytes())
        .collect();
    answers(data.clone(), &probes).unwrap();
    for bit in 0..data.len() * 8 {
        let mut bad = data.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        match answers(bad, &probes) {
            Err(e) => {
                assert!(e.is_corruption(), "bit {bit}: {e}");
                assert!(e.to_string().contains("000007.sst"), "bit {bit}: {e}");
            }
            Ok(_) => panic!("flip of bit {bit} (byte {}) went unnoticed", bit / 8),
        }
    }
}

#[test]
fn data_block_damage_names_file_and_offset() {
    let built = build(&numbered_model(100, 20), opts(256, 4, 10));
    let mut bad = built.data;
    bad[300] ^= 0x10;
    let table = open(bad).unwrap();
    let err = scan(&table).unwrap_err();
    let text = err.to_string();
    assert!(
        err.is_corruption() && text.contains("000007.sst") && text.contains("data block at offset"),
        "{text}"
    );
}

#[test]
fn truncation_and_extension_are_corruption() {
    let data = build(&numbered_model(30, 7), opts(128, 4, 10)).data;
    for len in 0..data.len() {
        let err = open(data[..len].to_vec()).unwrap_err();
        assert!(err.is_corruption(), "length {len}: {err}");
    }
    let mut longer = data.clone();
    longer.push(0);
    assert!(open(longer).unwrap_err().is_corruption());
    let mut prefixed = vec![0u8];
    prefixed.extend_from_slice(&data);
    assert!(open(prefixed).unwrap_err().is_corruption());
}

/// Assembles a table from raw data blocks and their index separators, with consistent
/// checksums and properties, so structural checks can be tested past the checksums.
fn assemble(
    blocks: &[(Vec<u8>, Vec<u8>)],
    smallest: &[u8],
    largest: &[u8],
    entries: u64,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut index = BlockBuilder::new(1);
    for (contents, sep) in blocks {
        let h = append_block(&mut out, contents);
        let mut v = Vec::new();
        h.encode_to(&mut v);
        index.add(sep, &v);
    }
    let data_size = out.len() as u64;
    let filter = append_block(&mut out, &[]);
    let index = append_block(&mut out, &index.finish());
    let props = TableProps {
        smallest: smallest.to_vec(),
        largest: largest.to_vec(),
        smallest_seq: 1,
        largest_seq: 1,
        entries,
        deletions: 0,
        raw_key_size: 0,
        raw_value_size: 0,
        data_size,
        index_size: index.size + BLOCK_TRAILER_LEN,
        filter_size: filter.size + BLOCK_TRAILER_LEN,
        data_blocks: blocks.len() as u64,
        blob_refs: BTreeMap::new(),
    };
    let props = append_block(&mut out, &props.encode());
    out.extend_from_slice(
        &Footer {
            filter,
            index,
            props,
        }
        .encode(),
    );
    out
}

fn raw_block(keys: &[&[u8]]) -> Vec<u8> {
    let mut b = BlockBuilder::new(2);
    for k in keys {
        b.add(k, b"v");
    }
    b.finish()
}

fn ik(user_key: &[u8]) -> Vec<u8> {
    internal_key(user_key, 1, ValueKind::Put)
}

fn expect_corruption(data: Vec<u8>, probe: &[u8]) {
    let outcome = open(data).and_then(|t| {
        scan(&t)?;
        t.get(probe, 5)
    });
    match outcome {
        Err(e) => assert!(e.is_corruption(), "{e}"),
        Ok(v) => panic!("structural damage went unnoticed (get gave {v:?})"),
    }
}

#[test]
fn consistent_checksums_do_not_hide_structural_damage() {
    let (a, b, c, d) = (ik(b"a"), ik(b"b"), ik(b"c"), ik(b"d"));
    // The assembler itself makes valid tables.
    let good = assemble(
        &[
            (raw_block(&[&a, &b]), b.clone()),
            (raw_block(&[&c, &d]), d.clone()),
        ],
        &a,
        &d,
        4,
    );
    assert_eq!(scan(&open(good).unwrap()).unwrap().len(), 4);
    // Keys that do not ascend inside a block.
    expect_corruption(
        assemble(&[(raw_block(&[&b, &a]), b.clone())], &b, &a, 2),
        b"a",
    );
    // A block holding keys beyond its index separator, or not above the previous one.
    expect_corruption(
        assemble(
            &[
                (raw_block(&[&a, &c]), b.clone()),
                (raw_block(&[&d]), d.clone()),
            ],
            &a,
            &d,
            3,
        ),
        b"c",
    );
    expect_corruption(
        assemble(
            &[
                (raw_block(&[&a, &c]), c.clone()),
                (raw_block(&[&b, &d]), d.clone()),
            ],
            &a,
            &d,
            4,
        ),
        b"b",
    );
    // Smallest / largest that disagree with the blocks.
    expect_corruption(
        assemble(&[(raw_block(&[&a, &b]), b.clone())], &c, &d, 2),
        b"a",
    );
    // An empty data block, a non-key in a block, entries without data blocks.
    expect_corruption(assemble(&[(raw_block(&[]), b.clone())], &a, &b, 1), b"a");
    expect_corruption(
        assemble(&[(raw_block(&[b"short"]), b.clone())], &a, &b, 1),
        b"a",
    );
    expect_corruption(assemble(&[], &a, &b, 1), b"a");
    // Restart array garbage under a valid checksum.
    let mut block = raw_block(&[&a, &b, &c]);
    let n = block.len();
    block[n - 8..n - 4].copy_from_slice(&1u32.to_le_bytes());
    expect_corruption(assemble(&[(block, c.clone())], &a, &c, 3), b"a");
}

#[test]
fn index_handles_must_tile_the_data() {
    let (a, b) = (ik(b"a"), ik(b"b"));
    let blocks = [(raw_block(&[&a]), a.clone()), (raw_block(&[&b]), b.clone())];
    let good = assemble(&blocks, &a, &b, 2);
    open(good.clone()).unwrap();
    // Rebuild the index with a handle that skips a byte, overlaps, or lies past the file.
    let first = BlockHandle {
        offset: 0,
        size: blocks[0].0.len() as u64,
    };
    let second_at = first.end().unwrap();
    for second in [
        BlockHandle {
            offset: second_at + 1,
            size: 1,
        },
        BlockHandle {
            offset: second_at - 1,
            size: blocks[1].0.len() as u64,
        },
        BlockHandle {
            offset: 1 << 40,
            size: 1 << 40,
        },
    ] {
        let mut index = BlockBuilder::new(1);
        for (h, sep) in [(first, &a), (second, &b)] {
            let mut v = Vec::new();
            h.encode_to(&mut v);
            index.add(sep, &v);
        }
        let data = replace_index(&good, &index.finish());
        let err = open(data).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }
}

/// Rewrites a table with another index block (same data, filter and properties).
fn replace_index(table: &[u8], index_contents: &[u8]) -> Vec<u8> {
    let footer_at = table.len() - 64;
    let footer = Footer::decode(&table[footer_at..]).unwrap();
    let mut out = table[..footer.index.offset as usize].to_vec();
    let index = append_block(&mut out, index_contents);
    let old_props = &table[footer.props.offset as usize..][..footer.props.size as usize];
    let mut props = TableProps::decode(old_props).unwrap();
    props.index_size = index.size + BLOCK_TRAILER_LEN;
    let props = append_block(&mut out, &props.encode());
    out.extend_from_slice(
        &Footer {
            filter: footer.filter,
            index,
            props,
        }
        .encode(),
    );
    out
}

#[test]
fn wrong_options_and_huge_snapshots_are_harmless() {
    // Restart interval 0 behaves as 1; snapshots above the largest sequence are clamped.
    let model = numbered_model(50, 3);
    let table = open(build(&model, opts(64, 0, 10)).data).unwrap();
    assert_eq!(scan(&table).unwrap(), model_entries(&model));
    assert_eq!(
        table.get(b"user000010", u64::MAX).unwrap(),
        Some((ValueKind::Put, vec![b'x'; 3]))
    );
}

#[test]
fn iterator_stays_invalid_after_an_error() {
    let mut data = build(&numbered_model(100, 20), opts(256, 4, 10)).data;
    data[10] ^= 1;
    let table = open(data).unwrap();
    let mut it = table.iter();
    assert!(it.seek_to_first().unwrap_err().is_corruption());
    assert!(!it.valid());
    assert_eq!((it.key(), it.value()), (&[][..], &[][..]));
    // A later seek to an intact block works again.
    it.seek(&internal_key(b"user000099", 1000, ValueKind::Put))
        .unwrap();
    assert!(it.valid());
    assert_eq!(key::user_key(it.key()), b"user000099");
}

#[test]
fn a_table_in_a_zoned_file() {
    use zkv_zonefs::fs::{FsOptions, ZoneFs};
    use zkv_zonefs::meta::FileKind;
    use zkv_zonefs::placement::{Lifetime, PlacementHint};

    let geo = zkv_zns::Geometry::new(16, 256 * 1024)
        .with_block_size(4096)
        .with_limits(8, 8);
    let dev: Arc<dyn zkv_zns::ZonedDevice> = Arc::new(zkv_zns::MemDevice::new(geo).unwrap());
    let fs = ZoneFs::format(dev, FsOptions::default().with_meta_zones(2)).unwrap();
    let model = numbered_model(3000, 30);
    let built = build(&model, TableOptions::default());
    let hint = PlacementHint {
        kind: Some(FileKind::Sst),
        level: Some(0),
        lifetime: Lifetime::for_file(FileKind::Sst, Some(0), 1),
        ..Default::default()
    };
    let mut w = fs.create("000012.sst", FileKind::Sst, hint).unwrap();
    w.append(&built.data).unwrap();
    w.sync().unwrap();
    w.close().unwrap();
    let reader: Arc<dyn RandomAccess> = Arc::new(fs.open("000012.sst").unwrap());
    assert_eq!(reader.size(), built.data.len() as u64);
    let table = Arc::new(Table::open(reader).unwrap());
    assert_eq!(table.props(), &built.props);
    assert_eq!(scan(&table).unwrap(), model_entries(&model));
    assert_eq!(
        table.get(b"user001234", 5000).unwrap(),
        Some((ValueKind::Put, vec![b'x'; 30]))
    );
    assert_eq!(table.get(b"user001234", 1000).unwrap(), None);
    let meta = table.props().file_meta(12, built.data.len() as u64);
    assert_eq!(meta.file_name(), "000012.sst");
    assert_eq!(meta.smallest_user_key(), b"user000000");
}

#[test]
fn table_iterators_are_send() {
    fn is_send<T: Send>() {}
    is_send::<TableIter>();
    fn is_sync<T: Send + Sync>() {}
    is_sync::<Table>();
}

#[test]
fn a_table_records_the_blobs_its_references_point_to() {
    use crate::blob::{blob_record_bytes, BlobCount, BlobIndex};
    // Keys k0..k5: two references into blob file 4, three into file 9, one inline value.
    let refs = [(4, 100), (9, 2_000), (4, 300), (9, 50), (9, 7)];
    let mut model = Model::new();
    for (i, &(file, size)) in refs.iter().enumerate() {
        let index = BlobIndex {
            file,
            offset: 1_000,
            size,
        };
        let k = InternalKey::new(format!("k{i}").as_bytes(), 10, ValueKind::BlobIndex);
        model.insert(k, index.encode());
    }
    model.insert(
        InternalKey::new(b"k9", 10, ValueKind::Put),
        b"inline".to_vec(),
    );
    let built = build(&model, opts(4096, 16, 10));
    let count = |count, sizes: &[u64]| BlobCount {
        count,
        bytes: sizes
            .iter()
            .map(|s| blob_record_bytes(2, *s as usize))
            .sum(),
    };
    let expected = BTreeMap::from([(4, count(2, &[100, 300])), (9, count(3, &[2_000, 50, 7]))]);
    assert_eq!(built.props.blob_refs, expected);
    assert_eq!(built.oldest_blob_file, Some(4));
    // Read back from the file: what a compaction's pick reads through the table cache.
    assert_eq!(open(built.data).unwrap().props().blob_refs, expected);
    // A table without references writes no blob section.
    let plain = build(&numbered_model(20, 1), opts(4096, 16, 10));
    assert!(plain.props.blob_refs.is_empty() && plain.oldest_blob_file.is_none());
}

/// A file that counts its reads.
struct CountingFile {
    inner: MemFile,
    reads: std::sync::atomic::AtomicU64,
}

impl RandomAccess for CountingFile {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_exact_at(offset, buf)
    }

    fn what(&self) -> String {
        self.inner.what()
    }
}

#[test]
fn a_cached_table_reads_each_block_once_and_compactions_add_nothing() {
    let model = numbered_model(2000, 40);
    let built = build(&model, opts(512, 16, 10));
    let file = Arc::new(CountingFile {
        inner: MemFile::new("000009.sst", built.data),
        reads: Default::default(),
    });
    let reads = || file.reads.load(std::sync::atomic::Ordering::Relaxed);
    let cache = BlockCache::new(1 << 20).unwrap();
    let slot = CacheSlot {
        cache: Arc::clone(&cache),
        file: 9,
    };
    let table = Arc::new(Table::open_cached(file.clone(), Some(slot)).unwrap());
    let opened = reads();
    // A compaction's scan reads every block and leaves the cache empty.
    let mut it = table.compaction_iter();
    it.seek_to_first().unwrap();
    while it.valid() {
        it.next().unwrap();
    }
    let blocks = table.data_blocks() as u64;
    assert_eq!(reads() - opened, blocks);
    assert_eq!(cache.stats().bytes, 0);
    // A user scan reads them again, once, and keeps them; then every get is a hit.
    assert_eq!(scan(&table).unwrap(), model_entries(&model));
    assert_eq!(reads() - opened, 2 * blocks);
    for i in (0..2000).step_by(7) {
        let key = format!("user{i:06}");
        let got = table.get(key.as_bytes(), u64::MAX >> 8).unwrap();
        assert_eq!(got, Some((ValueKind::Put, vec![b'x'; 40])), "{key}");
    }
    assert_eq!(reads() - opened, 2 * blocks, "a get went to the file");
    assert!(cache.stats().hits > 0);
    // The same file number names the same blocks for another handle of the table.
    let again = Table::open_cached(file.clone(), Some(CacheSlot { cache, file: 9 })).unwrap();
    let before = reads();
    assert!(again.get(b"user000100", u64::MAX >> 8).unwrap().is_some());
    assert_eq!(reads(), before);
}

/// Compressed tables read back as written; a compressed block whose checksum matches but
/// whose bytes do not decode is a corruption error naming the block, never a panic.
#[test]
fn compressed_tables_read_back_and_bad_compressed_blocks_are_corruption() {
    let model = numbered_model(3000, 100);
    let raw = build(&model, opts(4096, 16, 10)).data;
    for name in &CompressionType::NAMES[1..] {
        let compression = CompressionType::from_name(name).unwrap();
        let built = build(
            &model,
            TableOptions {
                compression,
                ..opts(4096, 16, 10)
            },
        );
        assert!(
            built.data.len() < raw.len() / 2,
            "{name}: {} of {}",
            built.data.len(),
            raw.len()
        );
        let table = open(built.data.clone()).unwrap();
        assert_eq!(scan(&table).unwrap(), model_entries(&model), "{name}");
        // Garble the first data block's compressed bytes and fix its checksum.
        let handle = table.data_block_handle(0);
        let mut bad = built.data.clone();
        let (start, len) = (handle.offset as usize, handle.size as usize);
        for b in &mut bad[start + 2..start + len] {
            *b = 0xff;
        }
        let block_type = bad[start + len];
        let sum = super::format::block_checksum(&bad[start..start + len], block_type);
        bad[start + len + 1..start + len + 5].copy_from_slice(&sum.to_le_bytes());
        let err = open(bad).and_then(|t| scan(&t)).unwrap_err();
        assert!(err.is_corruption(), "{name}: {err}");
        assert!(
            err.to_string().contains("data block at offset 0"),
            "{name}: {err}"
        );
    }
}
