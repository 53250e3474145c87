//! CAZA and CAZA+ in the file layer: a new SST lands in the zone of the SSTs its hint names,
//! the cleaner asks the engine's hint source for the files it migrates (only when the
//! policy wants neighbourhoods), writers ask for the rest of their announced size, and the
//! per-victim copy figures.

mod fs_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use fs_support::*;
use zkv_zonefs::fs::{HintSource, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{
    Decision, Lifetime, Liza, Neighbors, PlacementCtx, PlacementHint, PlacementPolicy, SstRef,
};

const PIECE: usize = 64 * 1024;

fn caza_fs(policy: &str) -> ZoneFs {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    format(&dev, opts().with_placement(policy))
}

/// The hint of a new SST of `level` with a neighbourhood.
fn sst_hint(level: u8, size: usize, neighbors: Neighbors) -> PlacementHint {
    PlacementHint {
        size: size as u64,
        smallest_key: b"k30".to_vec(),
        largest_key: b"k50".to_vec(),
        neighbors: Some(neighbors),
        ..hint(FileKind::Sst, Some(level))
    }
}

/// An existing SST as the engine would list it.
fn sst_ref(fs: &ZoneFs, name: &str, level: u8) -> SstRef {
    SstRef {
        name: name.to_string(),
        level,
        size: PIECE as u64,
        smallest_key: b"k00".to_vec(),
        largest_key: b"k99".to_vec(),
        zones: fs.zones_of(name).unwrap(),
        ..Default::default()
    }
}

/// Writes the SST `name` of `PIECE` bytes under hint `h`.
fn write_piece(fs: &ZoneFs, name: &str, h: PlacementHint, seed: u64) {
    write_file(fs, name, FileKind::Sst, h, &data(seed, 0, PIECE));
}

/// Two L2 SSTs in new key ranges, each in a zone of its own (zones 2 and 3).
fn two_l2_ssts(fs: &ZoneFs) {
    write_piece(
        fs,
        "000010.sst",
        sst_hint(2, PIECE, Neighbors::default()),
        10,
    );
    write_piece(
        fs,
        "000011.sst",
        sst_hint(2, PIECE, Neighbors::default()),
        11,
    );
    assert_eq!(zone_of(fs, "000010.sst"), vec![2]);
    assert_eq!(zone_of(fs, "000011.sst"), vec![3]);
}

#[test]
fn caza_places_a_new_sst_in_the_zone_of_the_l_plus_1_sst_it_overlaps() {
    let fs = caza_fs("caza");
    two_l2_ssts(&fs);
    // An L1 SST overlapping 000010 joins it in zone 2 (LIZA would take the later of the
    // two equally long-lived zones, 3).
    let n = Neighbors {
        overlap_below: vec![sst_ref(&fs, "000010.sst", 2)],
        ..Default::default()
    };
    write_piece(&fs, "000012.sst", sst_hint(1, PIECE, n.clone()), 12);
    assert_eq!(zone_of(&fs, "000012.sst"), vec![2]);
    // Without room for the whole file in zone 2 (128 KiB left), an empty zone.
    let big = 3 * PIECE;
    write_file(
        &fs,
        "000013.sst",
        FileKind::Sst,
        sst_hint(1, big, n),
        &data(13, 0, big),
    );
    assert_eq!(zone_of(&fs, "000013.sst"), vec![4]);
    assert_consistent(&fs, "caza");
}

#[test]
fn caza_plus_follows_the_level_scores() {
    let fs = caza_fs("caza+");
    two_l2_ssts(&fs);
    // L1 busier than L0: an L1 SST is placed by its L2 overlaps, the smallest first.
    let mut n = Neighbors {
        overlap_below: vec![sst_ref(&fs, "000011.sst", 2)],
        level_scores: vec![0.5, 1.0, 2.0, 0.0],
        ..Default::default()
    };
    let mut smaller = sst_ref(&fs, "000010.sst", 2);
    smaller.size -= 1;
    n.overlap_below.push(smaller);
    write_piece(&fs, "000012.sst", sst_hint(1, PIECE, n), 12);
    assert_eq!(zone_of(&fs, "000012.sst"), vec![2]);
    // L1 busier than L2: an L2 SST joins the L1 SST above it (LIZA would open a zone).
    let n = Neighbors {
        overlap_above: vec![sst_ref(&fs, "000012.sst", 1)],
        overlap_below: vec![],
        level_scores: vec![0.5, 2.0, 1.0, 0.0],
        ..Default::default()
    };
    write_piece(&fs, "000014.sst", sst_hint(2, PIECE, n), 14);
    assert_eq!(zone_of(&fs, "000014.sst"), vec![2]);
    assert_consistent(&fs, "caza+");
}

/// A hint source that answers from a table and notes every name it is asked about.
#[derive(Default)]
struct Table {
    hints: Mutex<BTreeMap<String, PlacementHint>>,
    asked: Mutex<Vec<String>>,
}

impl HintSource for Table {
    fn hint_of(&self, name: &str) -> Option<PlacementHint> {
        self.asked.lock().unwrap().push(name.to_string());
        self.hints.lock().unwrap().get(name).cloned()
    }
}

/// A hint that packs files in zone order (LIZA only matches zones of lifetime "none").
fn packed() -> PlacementHint {
    PlacementHint {
        lifetime: Lifetime::None,
        ..hint(FileKind::Sst, Some(1))
    }
}

/// Zone 2 full of four SSTs of which the first two are deleted (the victim), and an L2 SST
/// "000009.sst" in an active zone of its own (3). The engine's hint for 000003 names
/// 000009 as its overlap below.
fn victim_and_target(policy: &str) -> (ZoneFs, Arc<Table>) {
    let fs = caza_fs(policy);
    for i in 1..=4 {
        write_piece(&fs, &format!("00000{i}.sst"), packed(), i);
    }
    write_piece(
        &fs,
        "000009.sst",
        sst_hint(2, PIECE, Neighbors::default()),
        9,
    );
    for i in 1..=4 {
        assert_eq!(zone_of(&fs, &format!("00000{i}.sst")), vec![2]);
    }
    assert_eq!(zone_of(&fs, "000009.sst"), vec![3]);
    fs.delete("000001.sst").unwrap();
    fs.delete("000002.sst").unwrap();
    let table = Arc::new(Table::default());
    let n = Neighbors {
        overlap_below: vec![sst_ref(&fs, "000009.sst", 2)],
        ..Default::default()
    };
    table
        .hints
        .lock()
        .unwrap()
        .insert("000003.sst".into(), sst_hint(1, PIECE, n));
    fs.set_hint_source(table.clone());
    (fs, table)
}

#[test]
fn the_cleaner_places_migrated_files_with_the_engines_hint() {
    let (fs, table) = victim_and_target("caza");
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.zone, v.copied_bytes), (2, 2 * PIECE as u64));
    assert_eq!(
        *table.asked.lock().unwrap(),
        vec!["000003.sst".to_string(), "000004.sst".to_string()]
    );
    // 000003 follows its overlap into zone 3; 000004, unknown to the engine, is placed by
    // LIZA from its metadata (a new zone of its class).
    assert_eq!(zone_of(&fs, "000003.sst"), vec![3]);
    let other = zone_of(&fs, "000004.sst");
    assert!(!other.contains(&2) && !other.contains(&3), "{other:?}");
    assert_eq!(read_file(&fs, "000003.sst"), data(3, 0, PIECE));
    let gc = fs.stats().gc;
    assert_eq!(gc.victim_copy_bytes, vec![2 * PIECE as u64]);
    assert_eq!(gc.resets, 1);
    assert_consistent(&fs, "after cleaning");
}

#[test]
fn policies_without_neighbourhoods_never_ask_the_hint_source() {
    let (fs, table) = victim_and_target("liza");
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!(v.copied_bytes, 2 * PIECE as u64);
    assert!(table.asked.lock().unwrap().is_empty());
    assert!(!zone_of(&fs, "000003.sst").contains(&3));
    // Cleared, the source is not asked either.
    let (fs, table) = victim_and_target("caza");
    fs.clear_hint_source();
    fs.clean_one().unwrap().unwrap();
    assert!(table.asked.lock().unwrap().is_empty());
    assert!(!zone_of(&fs, "000003.sst").contains(&3));
}

#[test]
fn victim_copy_bytes_lists_each_reset_victim_and_no_deleted_zone() {
    let (fs, _) = victim_and_target("caza");
    // Zones 4 and 5 full of packed files; zone 4 emptied by deletions (a zero-copy reset,
    // not a victim), zone 5 left with one valid file.
    for i in 20..28 {
        write_piece(&fs, &format!("0000{i}.sst"), packed(), i);
    }
    assert_eq!(zone_of(&fs, "000020.sst"), vec![4]);
    assert_eq!(zone_of(&fs, "000027.sst"), vec![5]);
    let resets = fs.stats().zero_copy_resets;
    for i in 20..27 {
        fs.delete(&format!("0000{i}.sst")).unwrap();
    }
    assert_eq!(fs.stats().zero_copy_resets, resets + 1);
    // Fewest valid bytes first: zone 5 (one file), then zone 2 (two).
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.zone, v.copied_bytes), (5, PIECE as u64));
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.zone, v.copied_bytes), (2, 2 * PIECE as u64));
    let gc = fs.stats().gc;
    assert_eq!(gc.victim_copy_bytes, vec![PIECE as u64, 2 * PIECE as u64]);
    assert_eq!(gc.victim_copy_bytes.len() as u64, gc.resets);
    assert_eq!(gc.victim_copy_bytes.iter().sum::<u64>(), gc.copy_bytes);
    assert_consistent(&fs, "after two victims");
}

/// Notes the size each decision was asked for.
struct Sizes(Arc<Mutex<Vec<u64>>>);

impl PlacementPolicy for Sizes {
    fn name(&self) -> &'static str {
        "sizes"
    }
    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        self.0.lock().unwrap().push(ctx.hint.size);
        Liza.place(ctx)
    }
}

#[test]
fn a_writer_asks_each_new_zone_for_the_rest_of_its_announced_size() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let fs = ZoneFs::format_with_policy(dev, opts(), Box::new(Sizes(seen.clone()))).unwrap();
    let len = 600 * KIB as usize;
    let h = PlacementHint {
        size: len as u64,
        ..hint(FileKind::Sst, Some(1))
    };
    write_file(&fs, "big.sst", FileKind::Sst, h, &data(1, 0, len));
    let k = KIB;
    assert_eq!(*seen.lock().unwrap(), vec![600 * k, 344 * k, 88 * k]);
    // A file longer than announced asks for nothing more than the minimum.
    seen.lock().unwrap().clear();
    let h = PlacementHint {
        size: 100 * k,
        ..hint(FileKind::Sst, Some(1))
    };
    write_file(&fs, "more.sst", FileKind::Sst, h, &data(2, 0, len));
    assert_eq!(seen.lock().unwrap().last(), Some(&0));
    // The padding of a sync is not the file's: the rest counts file bytes only.
    seen.lock().unwrap().clear();
    let h = PlacementHint {
        size: len as u64,
        ..hint(FileKind::Sst, Some(1))
    };
    let mut w = fs.create("synced.sst", FileKind::Sst, h).unwrap();
    w.append(&data(3, 0, 1000)).unwrap();
    w.sync().unwrap();
    w.append(&data(3, 1000, len - 1000)).unwrap();
    w.close().unwrap();
    // The first zone holds the 1000 bytes and, after their padded block, 252 KiB more.
    let first = 1000 + 252 * k;
    assert_eq!(
        *seen.lock().unwrap(),
        vec![600 * k, 600 * k - first, 600 * k - first - 256 * k]
    );
}
