//! LIZA in the file layer: files of different lifetimes go to zones of their class while
//! tokens allow, never to a shorter-lived zone, and zone classes survive a remount.

mod fs_support;

use std::collections::BTreeMap;

use fs_support::*;
use zkv_zonefs::fs::ZoneFs;
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::Lifetime;

/// name, kind, level
const FILES: [(&str, FileKind, Option<u8>); 5] = [
    ("wal", FileKind::Wal, None),
    ("l0", FileKind::Sst, Some(0)),
    ("l1", FileKind::Sst, Some(1)),
    ("l2", FileKind::Sst, Some(2)),
    ("l3", FileKind::Sst, Some(3)),
];

fn classes(fs: &ZoneFs) -> BTreeMap<u32, u8> {
    fs.zone_stats()
        .unwrap()
        .into_iter()
        .filter(|z| z.written > 0)
        .map(|z| (z.zone, z.class))
        .collect()
}

#[test]
fn files_land_in_zones_of_their_lifetime_class_and_classes_survive_remount() {
    let (_, dev) = mem_device(geometry(32, 256, 14, 14));
    let fs = format(&dev, opts());
    // All writers open at once: every zone in use is busy, so each file opens zones of
    // its own class (LIZA prefers a fresh zone over an equal-class one while it can open).
    let mut writers: Vec<_> = FILES
        .iter()
        .map(|&(name, kind, level)| fs.create(name, kind, hint(kind, level)).unwrap())
        .collect();
    for round in 0..12u64 {
        for (i, w) in writers.iter_mut().enumerate() {
            w.append(&data(i as u64, round * 50_000, 50_000)).unwrap();
        }
    }
    for w in writers {
        w.close().unwrap();
    }
    let by_zone = classes(&fs);
    for &(name, kind, level) in &FILES {
        let class = Lifetime::for_file(kind, level, 1).code();
        let zones = fs.zones_of(name).unwrap();
        assert!(zones.len() >= 3, "{name} spans several zones: {zones:?}");
        for (zone, _) in zones {
            assert_eq!(by_zone[&zone], class, "{name} in zone {zone}");
        }
    }
    drop(fs);
    let fs = mount(&dev, opts());
    assert_eq!(classes(&fs), by_zone, "zone classes after remount");
    // Later files never go to a zone of a shorter lifetime than theirs.
    for (i, &(name, kind, level)) in FILES.iter().enumerate() {
        let name = format!("{name}-2");
        write_file(
            &fs,
            &name,
            kind,
            hint(kind, level),
            &data(10 + i as u64, 0, 30_000),
        );
        let class = Lifetime::for_file(kind, level, 1).code();
        let by_zone = classes(&fs);
        for (zone, _) in fs.zones_of(&name).unwrap() {
            assert!(by_zone[&zone] >= class, "{name} in zone {zone}");
        }
    }
    assert!(fs.stats().placement_decisions > 0);
}

#[test]
fn without_a_free_active_resource_liza_finishes_the_fullest_idle_zone() {
    // 6 active: 4 for data (2 kept for the metadata log); tokens = min(5, 4) = 4.
    let (_, dev) = mem_device(geometry(32, 256, 6, 6));
    let fs = format(&dev, opts());
    let wal = hint(FileKind::Wal, None);
    // Two WAL files open at once take two short-lived zones.
    let mut w1 = fs.create("wal1", FileKind::Wal, wal.clone()).unwrap();
    let mut w2 = fs.create("wal2", FileKind::Wal, wal).unwrap();
    w1.append(&data(1, 0, 10_000)).unwrap();
    w2.append(&data(2, 0, 20_000)).unwrap();
    w1.close().unwrap();
    w2.close().unwrap();
    // Medium and long files fit no short-lived zone: each opens its own.
    for (name, level, len) in [("l0", 0u8, 30_000), ("l2", 2, 40_000)] {
        write_sst(&fs, name, level, &data(3, 0, len));
    }
    assert_eq!(fs.stats().active_zones, 4);
    assert_eq!(fs.stats().finishes, 0);
    // An extreme-lived file fits none and no active resource is free: the fullest idle
    // zone (l2's) is finished and a new zone opens.
    write_sst(&fs, "l3", 3, &data(9, 0, 4096));
    assert_eq!(fs.stats().finishes, 1);
    assert_eq!(fs.stats().active_zones, 4);
    let l2 = zone_of(&fs, "l2")[0];
    let z = zone_stat(&fs, l2);
    assert_eq!(z.state, zkv_zns::ZoneState::Full);
    assert_consistent(&fs, "end");
}
