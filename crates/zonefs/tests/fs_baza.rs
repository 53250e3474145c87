//! BAZA in the file layer (blob placement `baza`): blob files fill zones of their own in
//! blob file number order, a concurrent blob writer takes another zone (the WP lock) and the
//! next file returns to the first one, SSTs and WALs keep their policy and their zones, the
//! cleaner's copies of blob files stay in blob zones, and YBIZ is recorded when a blob zone
//! fills (or is finished), kept across remounts and dropped at reset.

mod fs_support;

use std::collections::{BTreeMap, BTreeSet};

use fs_support::*;
use proptest::prelude::*;
use zkv_zns::ZonedDevice;
use zkv_zonefs::fs::{FsError, FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{is_blob_zone, ybiz_of, PlacementHint};

const ZONE: u64 = 256 * KIB;

fn baza() -> FsOptions {
    opts().with_blob_placement("baza")
}

fn blob_name(number: u64) -> String {
    format!("{number:06}.blob")
}

fn blob_hint(number: u64) -> PlacementHint {
    PlacementHint {
        blob_file: Some(number),
        ..hint(FileKind::Blob, Some(1))
    }
}

fn write_blob(fs: &ZoneFs, number: u64, len: u64) {
    let content = data(number, 0, len as usize);
    write_file(
        fs,
        &blob_name(number),
        FileKind::Blob,
        blob_hint(number),
        &content,
    );
}

fn create_blob(fs: &ZoneFs, number: u64) -> zkv_zonefs::fs::FileWriter {
    fs.create(&blob_name(number), FileKind::Blob, blob_hint(number))
        .unwrap()
}

fn class_of(fs: &ZoneFs, zone: u32) -> u8 {
    zone_stat(fs, zone).class
}

/// A 16-zone device (14 data zones of 256 KiB) formatted with `opts`.
fn small_fs(opts: FsOptions) -> (std::sync::Arc<dyn ZonedDevice>, ZoneFs) {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts);
    (dev, fs)
}

#[test]
fn blob_files_fill_their_zones_in_number_order_apart_from_ssts() {
    let (_, fs) = small_fs(baza());
    // Each blob file starts where the previous one ended, or in a new zone once that one
    // is full.
    let mut used: Vec<u32> = Vec::new();
    for n in 1..=8u64 {
        let room = used.last().map(|&z| (z, zone_stat(&fs, z).written < ZONE));
        write_blob(&fs, n, 100 * KIB);
        write_sst(&fs, &format!("{n:06}.sst"), 1, &data(100 + n, 0, 40_000));
        let zones = zone_of(&fs, &blob_name(n));
        match room {
            Some((last, true)) => assert_eq!(zones[0], last, "blob {n}"),
            _ => assert!(!used.contains(&zones[0]), "blob {n} in an older zone"),
        }
        for z in zones {
            if used.last() != Some(&z) {
                used.push(z);
            }
        }
    }
    assert_eq!(
        used.len(),
        4,
        "8 × 100 KiB fill 3 zones and start a fourth: {used:?}"
    );
    for &z in &used {
        assert!(is_blob_zone(class_of(&fs, z)), "zone {z}");
    }
    for n in 1..=8u64 {
        for z in zone_of(&fs, &format!("{n:06}.sst")) {
            assert!(!used.contains(&z) && !is_blob_zone(class_of(&fs, z)));
        }
    }
    // Full blob zones carry the youngest blob file number written into them.
    let ybiz = fs.blob_zone_ybiz();
    assert_eq!(ybiz, vec![(used[0], 3), (used[1], 6), (used[2], 8)]);
    assert_eq!(fs.min_blob_zone_ybiz(), Some(3));
    assert_eq!(fs.placement_policy(), "liza/baza");
    assert_consistent(&fs, "after the writes");
}

#[test]
fn the_wp_lock_sends_a_concurrent_blob_elsewhere_and_the_next_back() {
    // The Same-Victim paper's Fig. 5: B7 is being written to zone 1, B8 at the same time
    // cannot append there and takes zone 2; B9, after B7, returns to zone 1.
    let (_, fs) = small_fs(baza());
    write_blob(&fs, 5, 20 * KIB);
    write_blob(&fs, 6, 20 * KIB);
    let zone1 = zone_of(&fs, &blob_name(5))[0];
    let mut b7 = create_blob(&fs, 7);
    b7.append(&data(7, 0, 16_384)).unwrap();
    let mut b8 = create_blob(&fs, 8);
    b8.append(&data(8, 0, 16_384)).unwrap();
    b7.close().unwrap();
    write_blob(&fs, 9, 20 * KIB);
    b8.close().unwrap();
    let zone2 = zone_of(&fs, &blob_name(8))[0];
    assert_ne!(zone1, zone2);
    for n in [6, 7, 9] {
        assert_eq!(zone_of(&fs, &blob_name(n)), vec![zone1], "B{n}");
    }
    // Zone 1 is still the one being filled: B10 goes there too, not to zone 2.
    write_blob(&fs, 10, 20 * KIB);
    assert_eq!(zone_of(&fs, &blob_name(10)), vec![zone1]);
    assert!(is_blob_zone(class_of(&fs, zone2)));
}

#[test]
fn ybiz_is_set_when_a_blob_zone_fills_kept_across_remounts_and_dropped_at_reset() {
    let (dev, fs) = small_fs(baza());
    write_blob(&fs, 1, 200 * KIB);
    let zone = zone_of(&fs, &blob_name(1))[0];
    let mut w = create_blob(&fs, 2);
    // Up to one block before the end of the zone: not full, no YBIZ.
    w.append(&data(2, 0, (ZONE - 200 * KIB - 4096) as usize))
        .unwrap();
    assert_eq!(fs.blob_zone_ybiz(), vec![]);
    assert_eq!(zone_stat(&fs, zone).ybiz, None);
    // The block that fills the zone sets it, before the file is even synced.
    w.append(&data(2, 1, 4096)).unwrap();
    assert_eq!(fs.blob_zone_ybiz(), vec![(zone, 2)]);
    w.append(&data(2, 2, 10_000)).unwrap();
    w.close().unwrap();
    assert_eq!(zone_stat(&fs, zone).ybiz, Some(2));
    drop(fs);

    let fs = ZoneFs::mount_stored(dev.clone()).unwrap();
    assert_eq!(fs.options().blob_placement, "baza");
    assert_eq!(fs.blob_zone_ybiz(), vec![(zone, 2)], "after a remount");
    // Both files dead: the zone is reset and its YBIZ goes with it.
    fs.delete(&blob_name(1)).unwrap();
    assert_eq!(
        fs.blob_zone_ybiz(),
        vec![(zone, 2)],
        "file 2 still lives there"
    );
    fs.delete(&blob_name(2)).unwrap();
    assert_eq!(zone_stat(&fs, zone).written, 0);
    assert_eq!(fs.blob_zone_ybiz(), vec![]);
    assert!(fs.metadata().placement(zone).is_none());
    drop(fs);
    let fs = ZoneFs::mount_stored(dev).unwrap();
    assert_eq!(fs.blob_zone_ybiz(), vec![], "after a second remount");
}

#[test]
fn a_mount_computes_a_ybiz_whose_record_never_became_durable() {
    let (dev, fs) = small_fs(baza());
    write_blob(&fs, 1, 200 * KIB);
    let zone = zone_of(&fs, &blob_name(1))[0];
    // Blob 2 fills the zone; its YBIZ record waits for a metadata sync that never comes
    // (the writer is dropped without a sync, then the file system).
    let mut w = create_blob(&fs, 2);
    w.append(&data(2, 0, 100 * KIB as usize)).unwrap();
    assert_eq!(fs.blob_zone_ybiz(), vec![(zone, 2)]);
    drop(w);
    drop(fs);
    let fs = mount(&dev, baza());
    assert_eq!(zone_stat(&fs, zone).written, ZONE);
    // Blob 2's data was never recorded: blob 1 is the youngest with data there.
    assert_eq!(fs.blob_zone_ybiz(), vec![(zone, 1)]);
    // ... and recorded by the mount.
    let recorded = fs.metadata().placement(zone).cloned().unwrap_or_default();
    assert_eq!(ybiz_of(recorded.class, &recorded.policy), Some(1));
}

#[test]
fn a_finished_blob_zone_gets_its_ybiz() {
    // Zones with less than half their room left are finished before a new one opens.
    let (dev, fs) = small_fs(baza().with_finish_threshold(Some(50)));
    write_blob(&fs, 4, 160 * KIB);
    let zone = zone_of(&fs, &blob_name(4))[0];
    assert_eq!(fs.blob_zone_ybiz(), vec![]);
    write_sst(&fs, "000005.sst", 1, &data(5, 0, 10_000));
    assert_eq!(fs.stats().finishes, 1);
    assert_eq!(fs.blob_zone_ybiz(), vec![(zone, 4)]);
    drop(fs);
    let fs = mount(&dev, baza().with_finish_threshold(Some(50)));
    assert_eq!(fs.blob_zone_ybiz(), vec![(zone, 4)]);
}

#[test]
fn zones_without_blob_placement_have_no_ybiz() {
    let (_, fs) = small_fs(opts());
    write_blob(&fs, 1, 300 * KIB);
    assert!(fs.zone_stats().unwrap().iter().any(|z| z.written == ZONE));
    assert_eq!(fs.blob_zone_ybiz(), vec![]);
    assert_eq!(fs.placement_policy(), "liza");
}

#[test]
fn the_cleaner_moves_blob_extents_into_blob_zones() {
    let (_, fs) = small_fs(baza());
    for n in 1..=3 {
        write_blob(&fs, n, 96 * KIB);
    }
    for n in 1..=3 {
        write_sst(&fs, &format!("{n:06}.sst"), 2, &data(n, 0, 30_000));
    }
    let victim = zone_of(&fs, &blob_name(1))[0];
    fs.delete(&blob_name(1)).unwrap();
    let moved = fs.clean_one().unwrap().expect("a victim");
    assert_eq!(moved.zone, victim);
    for z in zone_of(&fs, &blob_name(2)) {
        assert!(is_blob_zone(class_of(&fs, z)), "blob 2 moved to zone {z}");
    }
    for n in 1..=3 {
        for z in zone_of(&fs, &format!("{n:06}.sst")) {
            assert!(!is_blob_zone(class_of(&fs, z)));
        }
    }
    assert_eq!(read_file(&fs, &blob_name(2)), data(2, 0, 96 * KIB as usize));
}

#[test]
fn every_file_policy_combines_with_baza() {
    for files in zkv_zonefs::placement::policy_names() {
        let (_, fs) = small_fs(opts().with_placement(files).with_blob_placement("baza"));
        assert_eq!(fs.placement_policy(), format!("{files}/baza"));
        write_blob(&fs, 1, 40 * KIB);
        write_sst(&fs, "000002.sst", 1, &data(2, 0, 40_000));
        write_file(
            &fs,
            "000003.log",
            FileKind::Wal,
            hint(FileKind::Wal, None),
            &data(3, 0, 10_000),
        );
        let blob_zone = zone_of(&fs, &blob_name(1))[0];
        assert!(is_blob_zone(class_of(&fs, blob_zone)), "{files}");
        for name in ["000002.sst", "000003.log"] {
            let z = zone_of(&fs, name)[0];
            assert!(
                !is_blob_zone(class_of(&fs, z)),
                "{files}: {name} in zone {z}"
            );
        }
    }
}

#[test]
fn unknown_blob_placements_are_refused() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let err = ZoneFs::format(dev, opts().with_blob_placement("lifo")).unwrap_err();
    assert!(matches!(err, FsError::InvalidOptions { .. }), "{err}");
    assert!(
        err.to_string().contains("unknown blob placement 'lifo'"),
        "{err}"
    );
}

/// One step of the property test: one writer at a time.
#[derive(Clone, Debug)]
enum Op {
    /// The next blob file, of this many KiB.
    Blob(u64),
    /// An SST of this level and size in KiB.
    Sst(u8, u64),
    /// Blob GC: the oldest blob file goes.
    DeleteOldestBlob,
    DeleteOldestSst,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (4u64..300).prop_map(Op::Blob),
        2 => (0u8..4, 4u64..64).prop_map(|(l, k)| Op::Sst(l, k)),
        2 => Just(Op::DeleteOldestBlob),
        1 => Just(Op::DeleteOldestSst),
    ]
}

/// The blob file numbers in each zone holding blob data, in the order of the data.
fn blobs_by_zone(fs: &ZoneFs) -> BTreeMap<u32, Vec<u64>> {
    let state = fs.metadata();
    let mut out: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let zones: BTreeSet<u32> = fs.zone_stats().unwrap().iter().map(|z| z.zone).collect();
    for zone in zones {
        for (_, id) in state.zone_extents(zone) {
            let Some(n) = state.file(id).and_then(|m| m.blob_number()) else {
                continue;
            };
            let list = out.entry(zone).or_default();
            if list.last() != Some(&n) {
                list.push(n);
            }
        }
    }
    out
}

fn check_blob_zones(fs: &ZoneFs) -> Result<(), TestCaseError> {
    let by_zone = blobs_by_zone(fs);
    let stats: BTreeMap<u32, _> = fs
        .zone_stats()
        .unwrap()
        .into_iter()
        .map(|z| (z.zone, z))
        .collect();
    let ssts: BTreeSet<u32> = fs
        .list()
        .iter()
        .filter(|f| f.kind != FileKind::Blob)
        .flat_map(|f| zone_of(fs, &f.name))
        .collect();
    let mut ranges = Vec::new();
    for (zone, numbers) in &by_zone {
        prop_assert!(is_blob_zone(stats[zone].class), "blob data in zone {zone}");
        prop_assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "zone {zone} holds {numbers:?}"
        );
        ranges.push((numbers[0], numbers[numbers.len() - 1], *zone));
        // Oldest first deletion: the youngest file of a zone dies last.
        if stats[zone].written == ZONE {
            prop_assert_eq!(stats[zone].ybiz, numbers.last().copied(), "zone {}", zone);
        }
    }
    for z in &ssts {
        prop_assert!(!is_blob_zone(stats[z].class), "an SST in blob zone {z}");
    }
    // Ranges of different zones never interleave (a file spanning two zones is the last
    // of one and the first of the next).
    ranges.sort();
    for w in ranges.windows(2) {
        prop_assert!(w[0].1 <= w[1].0, "interleaved zones: {:?}", ranges);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn one_writer_at_a_time_fills_blob_zones_with_ascending_disjoint_ranges(
        ops in prop::collection::vec(op(), 1..60)
    ) {
        let (_, dev) = mem_device(geometry(34, 256, 14, 14));
        let fs = format(&dev, baza());
        let (mut next, mut blobs, mut ssts) = (1u64, Vec::new(), Vec::new());
        for op in ops {
            match op {
                Op::Blob(kib) => {
                    write_blob(&fs, next, kib * KIB);
                    blobs.push((next, kib));
                    next += 1;
                }
                Op::Sst(level, kib) => {
                    let name = format!("{next:06}.sst");
                    write_sst(&fs, &name, level, &data(next, 0, (kib * KIB) as usize));
                    ssts.push(name);
                    next += 1;
                }
                Op::DeleteOldestBlob if !blobs.is_empty() => {
                    fs.delete(&blob_name(blobs.remove(0).0)).unwrap();
                }
                Op::DeleteOldestSst if !ssts.is_empty() => fs.delete(&ssts.remove(0)).unwrap(),
                _ => {}
            }
            // Keep the live data well below the device (as blob GC and compactions do).
            while blobs.iter().map(|b| b.1).sum::<u64>() > 3 * 1024 {
                fs.delete(&blob_name(blobs.remove(0).0)).unwrap();
            }
            while ssts.len() > 12 {
                fs.delete(&ssts.remove(0)).unwrap();
            }
            check_blob_zones(&fs)?;
        }
        assert_consistent(&fs, "at the end");
    }
}
