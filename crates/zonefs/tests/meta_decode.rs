//! Decoding never panics: random bytes and mutated valid encodings, at the frame level,
//! the payload level (past the checksum), the superblock, and whole zones given to mount.

mod common;

use common::{mem_device, small_geometry};
use proptest::prelude::*;
use zkv_zns::IoCategory;
use zkv_zonefs::meta::{
    decode_frame, probe, Extent, FileId, FileKind, FileMeta, Frame, FrameKind, MetaLog, Record,
    Snapshot, StoredOptions, Superblock, ZoneLayout, ZonePlacement, SUPERBLOCK_LEN,
};

fn file_meta() -> impl Strategy<Value = FileMeta> {
    (
        ".{0,20}",
        0..FileKind::ALL.len(),
        any::<u64>(),
        prop::collection::vec((any::<u32>(), any::<u64>(), any::<u64>()), 0..5),
        any::<Option<u8>>(),
        any::<u8>(),
    )
        .prop_map(|(name, kind, size, extents, level, lifetime)| FileMeta {
            name,
            kind: FileKind::ALL[kind],
            size,
            extents: extents
                .into_iter()
                .map(|(zone, offset, len)| Extent { zone, offset, len })
                .collect(),
            level,
            lifetime,
        })
}

fn placement() -> impl Strategy<Value = ZonePlacement> {
    (any::<u8>(), prop::collection::vec(any::<u8>(), 0..16))
        .prop_map(|(class, policy)| ZonePlacement { class, policy })
}

fn options() -> impl Strategy<Value = StoredOptions> {
    (
        any::<u32>(),
        ".{0,20}",
        any::<Option<u8>>(),
        any::<(u8, u8)>(),
        ".{0,20}",
    )
        .prop_map(
            |(reserved_zones, placement, finish_threshold, (gc_start, gc_stop), gc_mode)| {
                StoredOptions {
                    reserved_zones,
                    placement,
                    finish_threshold,
                    gc_start,
                    gc_stop,
                    gc_mode,
                }
            },
        )
}

fn record() -> impl Strategy<Value = Record> {
    let snapshot = (
        any::<(u32, u64, u32)>(),
        any::<u64>(),
        prop::option::of(options()),
        prop::collection::vec((any::<u64>(), file_meta()), 0..4),
        prop::collection::vec((any::<u32>(), placement()), 0..4),
    )
        .prop_map(
            |((zones, cap, meta), next_file_id, options, files, zones_meta)| {
                Record::Snapshot(Snapshot {
                    layout: ZoneLayout::new(zones, cap, meta),
                    next_file_id,
                    options,
                    files: files.into_iter().map(|(id, m)| (FileId(id), m)).collect(),
                    zones: zones_meta,
                })
            },
        );
    prop_oneof![
        snapshot,
        (any::<u64>(), file_meta()).prop_map(|(id, meta)| Record::FileUpdate {
            id: FileId(id),
            meta
        }),
        any::<u64>().prop_map(|id| Record::FileDelete { id: FileId(id) }),
        (any::<u64>(), ".{0,20}").prop_map(|(id, name)| Record::FileRename {
            id: FileId(id),
            name
        }),
        (any::<u32>(), placement())
            .prop_map(|(zone, placement)| Record::ZoneMeta { zone, placement }),
        options().prop_map(Record::Options),
    ]
}

/// A change to a byte string: flip a bit, drop a byte, insert one, or cut the end.
#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Remove(usize),
    Insert(usize, u8),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Remove),
        (any::<usize>(), any::<u8>()).prop_map(|(i, v)| Mutation::Insert(i, v)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(bytes: &mut Vec<u8>, muts: &[Mutation]) {
    for m in muts {
        let n = bytes.len();
        match *m {
            Mutation::Flip(i, b) if n > 0 => bytes[i % n] ^= 1 << b,
            Mutation::Remove(i) if n > 0 => {
                bytes.remove(i % n);
            }
            Mutation::Insert(i, v) => bytes.insert(i % (n + 1), v),
            Mutation::Truncate(i) => bytes.truncate(i % (n + 1)),
            _ => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn records_round_trip(rec in record()) {
        let mut buf = Vec::new();
        rec.encode_frame(&mut buf).unwrap();
        prop_assert_eq!(decode_frame(&buf).unwrap(), (Frame::Record(rec), buf.len()));
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_frame(&bytes);
        let _ = Superblock::decode(&bytes);
        for kind in FrameKind::ALL {
            let _ = Record::decode_payload(kind, &bytes);
        }
    }

    #[test]
    fn mutated_encodings_never_panic(
        rec in record(),
        muts in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut frame = Vec::new();
        rec.encode_frame(&mut frame).unwrap();
        mutate(&mut frame, &muts);
        let _ = decode_frame(&frame);
        // The checksum rejects most mutated frames; go past it to reach the payload decoder.
        let mut payload = Vec::new();
        rec.encode_payload(&mut payload).unwrap();
        mutate(&mut payload, &muts);
        if let Ok(decoded) = Record::decode_payload(rec.kind(), &payload) {
            let mut again = Vec::new();
            decoded.encode_payload(&mut again).unwrap();
            prop_assert_eq!(Record::decode_payload(rec.kind(), &again).unwrap(), decoded);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Mount over a valid superblock followed by garbage returns an error or a state,
    /// never panics.
    #[test]
    fn mount_never_panics_on_garbage(
        blocks in prop::collection::vec(prop::collection::vec(any::<u8>(), 4096), 1..4),
        zero_prefix in 0usize..64,
    ) {
        let (_, dev) = mem_device(small_geometry());
        let mut zone = Superblock::new(&dev.geometry(), 3, 0, 1).encode().to_vec();
        for b in &blocks {
            zone.extend_from_slice(b);
        }
        zone[SUPERBLOCK_LEN..SUPERBLOCK_LEN + zero_prefix].fill(0);
        zone.truncate(blocks.len() * 4096);
        dev.write(0, &zone, IoCategory::User).unwrap();
        let _ = probe(dev.as_ref());
        let _ = MetaLog::recover_read_only(dev.clone(), 3);
        let _ = MetaLog::recover(dev, 3);
    }

    /// Mount over a real log with random damage returns an error or a valid state.
    #[test]
    fn mount_never_panics_on_a_damaged_log(
        seed in any::<u64>(),
        muts in prop::collection::vec((any::<usize>(), 0u8..8), 1..8),
    ) {
        let (_, dev) = mem_device(small_geometry());
        let mut h = common::Harness::format(dev.clone(), 3, seed);
        h.run(8).unwrap();
        let zone = h.log.active_zone();
        common::rewrite_zone(dev.as_ref(), zone, |b| {
            for (i, bit) in &muts {
                let n = b.len();
                b[i % n] ^= 1 << bit;
            }
        });
        let _ = probe(dev.as_ref());
        let read_only = MetaLog::recover_read_only(dev.clone(), 3).map(|(state, _)| state);
        match MetaLog::recover(dev, 3) {
            Ok((state, _)) => {
                state.check_invariants().unwrap();
                // Both recoveries choose the same state.
                prop_assert_eq!(read_only.ok(), Some(state));
            }
            Err(_) => prop_assert!(read_only.is_err()),
        }
    }
}
