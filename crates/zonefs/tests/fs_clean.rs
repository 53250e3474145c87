//! Zone cleaning in copy mode, run inline or by explicit calls: the victim choice, the
//! thresholds, zero-copy resets, migration (content, never into the victim, remount), the
//! out-of-space path, reader pins, open writers, options and metrics.
//!
//! Most tests pack files in zone order: files whose lifetime is "none" only share zones of
//! that class, so consecutive files fill one zone after the other and each test knows
//! which zone holds which file.

mod fs_support;

use std::collections::BTreeMap;

use fs_support::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::{IoCategory, ZoneState};
use zkv_zonefs::fs::{CleanStop, CleaningMode, FsError, FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint};

type Files = BTreeMap<String, Vec<u8>>;

const ZONE: u64 = 256 * KIB;
const PIECE: usize = 64 * 1024;

/// A hint that packs files in zone order.
fn packed(kind: FileKind) -> PlacementHint {
    PlacementHint {
        kind: Some(kind),
        level: (kind == FileKind::Sst).then_some(1),
        lifetime: Lifetime::None,
        ..Default::default()
    }
}

fn write(fs: &ZoneFs, files: &mut Files, name: &str, content: Vec<u8>) {
    write_file(fs, name, FileKind::Other, packed(FileKind::Other), &content);
    files.insert(name.to_string(), content);
}

/// `n` files of 64 KiB named f00, f01, ...: four per zone, from the first data zone on.
fn write_pieces(fs: &ZoneFs, files: &mut Files, n: usize) {
    for i in 0..n {
        write(fs, files, &format!("f{i:02}"), data(i as u64, 0, PIECE));
    }
}

fn delete(fs: &ZoneFs, files: &mut Files, names: &[usize]) {
    for i in names {
        let name = format!("f{i:02}");
        fs.delete(&name).unwrap();
        files.remove(&name);
    }
}

fn valid_of(fs: &ZoneFs, zone: u32) -> u64 {
    fs.metadata().valid_bytes(zone)
}

#[test]
fn the_victim_is_the_full_zone_with_the_fewest_valid_bytes() {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 24);
    write(&fs, &mut files, "open-zone", data(99, 0, PIECE));
    for i in 0..24 {
        assert_eq!(zone_of(&fs, &format!("f{i:02}")), vec![2 + i as u32 / 4]);
    }
    assert_eq!(zone_of(&fs, "open-zone"), vec![8]);
    // Valid bytes: zone 2: 192 KiB, 3: 64, 4: 128, 5: 64 (ties with 3), 6: 256 (all
    // valid), 7: nothing (reset at once, without copying), 8: 64 but not full.
    let resets = fs.stats().zero_copy_resets;
    delete(
        &fs,
        &mut files,
        &[0, 4, 5, 6, 8, 9, 12, 13, 14, 20, 21, 22, 23],
    );
    assert_eq!(fs.stats().zero_copy_resets, resets + 1);
    assert_eq!(fs.stats().gc.runs, 0, "nothing cleans unless asked");

    assert_eq!(
        fs.pick_victim(),
        Some(3),
        "fewest valid, lowest zone of equals"
    );
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.zone, v.valid, v.copied_bytes), (3, 64 * KIB, 64 * KIB));
    assert!(v.cleaned && v.reset && !v.no_room, "{v:?}");
    assert_eq!(v.files_copied, 1);
    assert!(
        !zone_of(&fs, "f07").contains(&3),
        "a copy never lands in the victim"
    );
    assert_files(&fs, &files, "after the first victim");

    // Then 5 (64 KiB), 4 (128 KiB), 2 (192 KiB); zone 6 is all valid: nothing to gain.
    for (zone, valid) in [(5, 64), (4, 128), (2, 192)] {
        assert_eq!(fs.pick_victim(), Some(zone));
        let before: Vec<String> = files
            .keys()
            .filter(|n| zone_of(&fs, n).contains(&zone))
            .cloned()
            .collect();
        let v = fs.clean_one().unwrap().unwrap();
        assert_eq!((v.zone, v.copied_bytes), (zone, valid * KIB), "{v:?}");
        for name in &before {
            assert!(
                !zone_of(&fs, name).contains(&zone),
                "{name} left zone {zone}"
            );
        }
        assert_files(&fs, &files, &format!("after victim {zone}"));
    }
    let full_and_valid = fs
        .zone_stats()
        .unwrap()
        .into_iter()
        .filter(|z| z.state == ZoneState::Full)
        .all(|z| z.valid == z.written);
    assert!(full_and_valid);
    assert_eq!(fs.pick_victim(), None);
    assert_eq!(fs.clean_one().unwrap(), None);

    let s = fs.stats();
    assert_eq!(s.gc.victims, 4);
    assert_eq!(s.gc.copy_bytes, (64 + 64 + 128 + 192) * KIB);
    assert_eq!(s.gc.resets, 4);
    assert_eq!(s.zone_resets, 5);
    assert_eq!(
        s.zero_copy_resets, 1,
        "copied victims are not zero-copy resets"
    );
    assert_eq!(s.device_written(IoCategory::GcCopy), s.gc.copy_bytes);
    assert_eq!(
        s.device_read_bytes[IoCategory::GcCopy.index()],
        s.gc.copy_bytes
    );
    drop(fs);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after remount");
}

/// Greedy order, and the run stops as soon as the free ratio reaches `gc_stop` although
/// victims remain.
#[test]
fn a_run_stops_once_the_free_ratio_reaches_gc_stop() {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let o = opts().with_gc(35, 40);
    let fs = format(&dev, o.clone());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 48); // zones 2..=13 full, 14 and 15 empty
                                       // Zone 2 + k keeps 4 − (k % 4) of its files.
    let doomed: Vec<usize> = (0..12)
        .flat_map(|k| (0..k % 4).map(move |j| 4 * k + j))
        .collect();
    delete(&fs, &mut files, &doomed);
    let usable = fs.stats().usable_bytes;
    assert_eq!(usable, 14 * ZONE);
    let mut free = fs.stats().free_bytes;
    assert!(free * 100 < usable * 35);

    // What the greedy run must do: cheapest zones first, each nets capacity − valid.
    let mut expected = Vec::new();
    let mut order: Vec<(u64, u32)> = (2..14)
        .map(|z| (valid_of(&fs, z), z))
        .filter(|(v, _)| *v < ZONE)
        .collect();
    order.sort();
    for (valid, zone) in order {
        if free * 100 >= usable * 40 {
            break;
        }
        expected.push(zone);
        free += ZONE - valid;
    }
    assert_eq!(expected.len(), 6);
    let runs = fs.stats().gc.runs;
    let r = fs.maybe_clean().unwrap();
    assert_eq!(r.stop, CleanStop::Reached, "{r:?}");
    assert_eq!(r.victims as usize, expected.len());
    assert_eq!(fs.stats().gc.runs, runs + 1);
    assert_eq!(fs.stats().free_bytes, free);
    assert!(fs.free_ratio() >= 0.40);
    // Exactly the expected victims were reset (the device counts resets per zone).
    let wear = dev.stats().zone_resets;
    for zone in 2..16u32 {
        let reset = wear[zone as usize] > 0;
        assert_eq!(reset, expected.contains(&zone), "zone {zone}");
    }
    assert!(fs.pick_victim().is_some(), "it stopped with victims left");
    assert_files(&fs, &files, "after the run");

    // Above gc_start nothing happens; clean_now ignores gc_start but not gc_stop.
    let r = fs.maybe_clean().unwrap();
    assert_eq!((r.stop, r.victims), (CleanStop::NotNeeded, 0));
    let r = fs.clean_now().unwrap();
    assert_eq!((r.stop, r.victims), (CleanStop::Reached, 0));
    assert_eq!(fs.stats().gc.runs, runs + 2);

    // A samples series was taken at the start and end of each run.
    let samples = fs.samples();
    assert_eq!(samples.len(), 4);
    assert!(samples[0].free_ratio < 0.35 && samples[1].free_ratio >= 0.40);
    assert!(samples.windows(2).all(|w| w[0].t <= w[1].t));
    assert_eq!(samples[1].gc_copy_bytes, fs.stats().gc.copy_bytes);
    drop(fs);
    let fs = mount(&dev, o);
    assert_files(&fs, &files, "after remount");
}

#[test]
fn zones_without_valid_data_are_reset_without_copies() {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 12);
    // Zone 3 dies while a reader pins it: not reset, and not worth cleaning.
    let reader = fs.open("f05").unwrap();
    delete(&fs, &mut files, &[4, 5, 6, 7]);
    let s = fs.stats();
    assert_eq!((s.zone_resets, s.zero_copy_resets), (0, 0));
    assert_eq!(fs.pick_victim(), None);
    let r = fs.clean_now().unwrap();
    assert_eq!((r.victims, r.copied_bytes), (0, 0));
    assert_eq!(r.stop, CleanStop::Reached);
    assert_eq!(reader.read_all().unwrap(), data(5, 0, PIECE));
    drop(reader);
    let s = fs.stats();
    assert_eq!((s.zone_resets, s.zero_copy_resets), (1, 1));
    // Zone 4 dies outright: reset at once, zero-copy too. No copies anywhere.
    delete(&fs, &mut files, &[8, 9, 10, 11]);
    let s = fs.stats();
    assert_eq!(
        (s.zone_resets, s.zero_copy_resets, s.gc.copy_bytes),
        (2, 2, 0)
    );
    assert_eq!(s.device_written(IoCategory::GcCopy), 0);
    assert_files(&fs, &files, "end");
}

/// A file with several extents in the victim, some ending inside a block (padding cut out
/// after a sync), moves byte-exact; extents never span zones.
#[test]
fn extents_ending_inside_a_block_move_byte_exact() {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for f in 0..6 {
        let name = format!("s{f}");
        let mut w = fs
            .create(&name, FileKind::Other, packed(FileKind::Other))
            .unwrap();
        let mut content = Vec::new();
        for _ in 0..rng.random_range(2..8) {
            let piece = data(f, content.len() as u64, rng.random_range(1..40_000));
            w.append(&piece).unwrap();
            content.extend_from_slice(&piece);
            if rng.random_bool(0.6) {
                w.sync().unwrap();
            }
        }
        w.close().unwrap();
        files.insert(name, content);
    }
    // Kill every other file, then clean everything worth cleaning.
    for f in [0, 2, 4] {
        let name = format!("s{f}");
        fs.delete(&name).unwrap();
        files.remove(&name);
    }
    // Zones holding extents that end inside a block (the padding of a sync cut out).
    let unaligned: Vec<u32> = fs
        .metadata()
        .files()
        .flat_map(|(_, m)| m.extents.clone())
        .filter(|e| e.len % 4096 != 0)
        .map(|e| e.zone)
        .collect();
    assert!(!unaligned.is_empty());
    let wear_before = dev.stats().zone_resets;
    while fs.clean_one().unwrap().is_some() {}
    assert!(fs.stats().gc.copy_bytes > 0);
    let wear = dev.stats().zone_resets;
    assert!(
        unaligned
            .iter()
            .any(|z| wear[*z as usize] > wear_before[*z as usize]),
        "a zone with an extent ending inside a block was cleaned"
    );
    let state = fs.metadata();
    for (_, m) in state.files() {
        for e in &m.extents {
            assert!(e.offset + e.len <= ZONE);
        }
    }
    assert_files(&fs, &files, "after cleaning");
    drop(fs);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after remount");
}

/// A finished zone (its unwritten rest given up) is a victim like a full one: the rest
/// counts as invalid.
#[test]
fn a_finished_zone_is_a_victim_like_a_full_one() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let o = opts().with_finish_threshold(Some(50));
    let fs = format(&dev, o.clone());
    let mut files = Files::new();
    write_sst(&fs, "a", 2, &data(1, 0, 200 * 1024));
    files.insert("a".into(), data(1, 0, 200 * 1024));
    // A longer-lived file cannot use a's zone: it is finished before a new one opens.
    write_sst(&fs, "b", 3, &data(2, 0, 4096));
    files.insert("b".into(), data(2, 0, 4096));
    let zone = zone_of(&fs, "a")[0];
    assert_eq!(fs.stats().finishes, 1);
    assert_eq!(fs.invalid_ratio_distribution().ratios, vec![56.0 / 256.0]);
    assert_eq!(fs.pick_victim(), Some(zone));
    // What a zone-aware picker sees: the one full zone and the bytes a cleaning would copy.
    assert_eq!(fs.full_zone_live_bytes(), vec![(zone, 200 * KIB)]);
    assert_eq!(fs.stats().gc.victims, 0);
    let mark = fs.extent_mark();
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.zone, v.copied_bytes), (zone, 200 * KIB));
    assert!(v.reset);
    assert_eq!(fs.stats().gc.victims, 1);
    assert_eq!(fs.full_zone_live_bytes(), vec![]);
    // What a zone-aware picker asks: the zones a left and entered changed, no other.
    let mut moved = Vec::new();
    assert!(fs.zones_changed_since(mark, &mut moved));
    let mut want = vec![zone];
    want.extend(zone_of(&fs, "a"));
    want.sort_unstable();
    want.dedup();
    assert_eq!(moved, want);
    moved.clear();
    assert!(fs.zones_changed_since(fs.extent_mark(), &mut moved));
    assert_eq!(moved, Vec::<u32>::new());
    assert_files(&fs, &files, "after cleaning the finished zone");
    let mark = fs.extent_mark();
    drop(fs);
    let fs = mount(&dev, o);
    assert_files(&fs, &files, "after remount");
    // Another mount cannot say what moved since a mark of the one before.
    assert!(!fs.zones_changed_since(mark, &mut moved));
}

#[test]
fn all_valid_full_zones_mean_out_of_space_with_data_intact() {
    // 8 data zones, 32 files of 64 KiB fill them exactly: every full zone is all valid.
    // Cleaning is off while they are written, so the writers take every zone (with
    // cleaning on they leave one to the cleaner, see the next test).
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 32);
    fs.set_inline_cleaning(true);
    assert_eq!(fs.stats().free_bytes, 0);
    assert_eq!(fs.pick_victim(), None);
    let err = fs
        .create("more", FileKind::Other, packed(FileKind::Other))
        .unwrap_err();
    assert!(err.is_out_of_space(), "{err}");
    assert!(err.to_string().contains("out of space"), "{err}");
    let r = fs.clean_now().unwrap();
    assert_eq!((r.stop, r.victims), (CleanStop::NoVictim, 0));
    assert_files(&fs, &files, "when full");

    // One dead file: a victim now, but there is no room to copy its zone's valid data.
    delete(&fs, &mut files, &[1]);
    let err = fs
        .create("more", FileKind::Other, packed(FileKind::Other))
        .unwrap_err();
    assert!(err.is_out_of_space(), "{err}");
    let r = fs.clean_now().unwrap();
    assert_eq!((r.stop, r.copied_bytes), (CleanStop::NoRoom, 0));
    assert_eq!(fs.stats().gc.copy_bytes, 0);
    assert_files(&fs, &files, "no room");
    drop(fs);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after remount");
}

/// While zones are cleaned, writers leave the last empty zone to the cleaner even with no
/// reserved zones: a device full of partly dead zones can always be cleaned again.
#[test]
fn writers_leave_the_cleaner_an_empty_zone() {
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let fs = format(&dev, opts());
    fs.set_inline_cleaning(true);
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 28);
    assert_eq!(fs.stats().empty_zones, 1);
    let piece = data(8, 0, PIECE);
    let err = fs
        .create("more", FileKind::Other, packed(FileKind::Other))
        .and_then(|mut w| {
            w.append(&piece)?;
            w.close()
        })
        .unwrap_err();
    assert!(err.is_out_of_space(), "all valid: nothing to clean");
    assert_eq!(
        fs.stats().empty_zones,
        1,
        "a writer took the cleaner's zone"
    );
    fs.delete("more").unwrap();
    delete(&fs, &mut files, &[2]);
    write(&fs, &mut files, "more", data(7, 0, PIECE));
    let s = fs.stats();
    assert_eq!((s.gc.victims, s.gc.resets), (1, 1));
    assert_files(&fs, &files, "after the kept zone was used");
}

/// With a reserved zone the cleaner has room to copy into (the reserve), and a writer
/// that found no zone gets one after the inline cleaner made room.
#[test]
fn the_cleaner_copies_into_the_reserve_when_writers_find_no_zone() {
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let o = opts().with_reserved_zones(1);
    let fs = format(&dev, o.clone());
    fs.set_inline_cleaning(true);
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 28);
    assert_eq!(fs.stats().free_bytes, 0);
    let err = fs
        .create("more", FileKind::Other, packed(FileKind::Other))
        .unwrap_err();
    assert!(
        err.is_out_of_space(),
        "all valid: nothing to gain even with a reserve"
    );
    delete(&fs, &mut files, &[2]);
    let before = fs.stats().gc.blocking_events;
    write(&fs, &mut files, "more", data(7, 0, PIECE));
    let s = fs.stats();
    assert_eq!(
        (s.gc.victims, s.gc.copy_bytes, s.gc.resets),
        (1, 192 * KIB, 1)
    );
    assert!(
        s.gc.blocking_events > before && s.gc.blocking_ns > 0,
        "{:?}",
        s.gc
    );
    assert_files(&fs, &files, "after the reserve was used");
    drop(fs);
    let fs = mount(&dev, o);
    assert_files(&fs, &files, "after remount");
}

/// A reader of a live file follows the cleaner's move: the victim is reset at once, and
/// the reader reads the copy.
#[test]
fn a_pinned_zone_is_cleaned_last_and_its_reader_follows_the_copy() {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 8);
    delete(&fs, &mut files, &[0, 1, 2, 4, 5]); // zone 2: 64 KiB valid, zone 3: 128
    let reader = fs.open("f03").unwrap();
    assert_eq!(fs.pick_victim(), Some(3), "the unpinned zone goes first");
    assert_eq!(fs.clean_one().unwrap().unwrap().zone, 3);
    assert_eq!(fs.pick_victim(), Some(2), "then the pinned one");
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.zone, v.copied_bytes), (2, 64 * KIB));
    assert!(v.cleaned && v.reset, "{v:?}");
    assert_eq!(zone_stat(&fs, 2).state, ZoneState::Empty);
    let copy = zone_of(&fs, "f03");
    assert!(!copy.contains(&2));
    assert!(
        copy.iter().all(|&z| zone_stat(&fs, z).pins == 1),
        "the pin moved along"
    );
    // Zone 2 holds nothing now: the reader reads the copy.
    assert_eq!(reader.read_all().unwrap(), data(3, 0, PIECE));
    drop(reader);
    assert!(copy.iter().all(|&z| zone_stat(&fs, z).pins == 0));
    assert_eq!(fs.stats().zero_copy_resets, 0);
    assert_files(&fs, &files, "end");
}

/// A full zone holding extents of a file still open for writing is never a victim: the
/// writer's next sync records its extent list from its own view.
#[test]
fn zones_holding_an_open_writers_extents_are_skipped() {
    // tokens = 2: one for WAL files, one for the rest, so a second writer takes the idle
    // lease of the first and fills the first one's zone.
    let (_, dev) = mem_device(geometry(16, 256, 3, 4));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    let mut w = fs
        .create("w", FileKind::Other, packed(FileKind::Other))
        .unwrap();
    w.append(&data(1, 0, PIECE)).unwrap();
    w.sync().unwrap();
    write(&fs, &mut files, "filler", data(2, 0, 3 * PIECE));
    assert_eq!(zone_of(&fs, "w"), vec![2]);
    assert_eq!(zone_of(&fs, "filler"), vec![2]);
    fs.delete("filler").unwrap();
    files.remove("filler");
    write(&fs, &mut files, "g", data(3, 0, 2 * PIECE));
    write(&fs, &mut files, "h", data(4, 0, 2 * PIECE));
    assert_eq!(zone_of(&fs, "h"), vec![3]);
    fs.delete("h").unwrap();
    files.remove("h");
    assert_eq!(valid_of(&fs, 2), 64 * KIB);
    assert_eq!(valid_of(&fs, 3), 128 * KIB);
    assert_eq!(
        fs.pick_victim(),
        Some(3),
        "zone 2 has fewer valid bytes but a writer"
    );
    let r = fs.clean_now().unwrap();
    assert_eq!(
        (r.victims, r.stop),
        (0, CleanStop::Reached),
        "plenty of free space"
    );
    assert_eq!(fs.clean_one().unwrap().map(|v| v.zone), Some(3));
    assert_eq!(fs.pick_victim(), None);
    assert!(zone_of(&fs, "w").contains(&2));
    // The writer goes on and syncs: its extent list stays right.
    w.append(&data(1, PIECE as u64, 5000)).unwrap();
    w.sync().unwrap();
    w.close().unwrap();
    let mut content = data(1, 0, PIECE);
    content.extend_from_slice(&data(1, PIECE as u64, 5000));
    files.insert("w".into(), content);
    assert_files(&fs, &files, "after the writer closed");
    assert_eq!(fs.pick_victim(), Some(2), "closed: now it may go");
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.zone, v.copied_bytes), (2, 64 * KIB));
    assert_files(&fs, &files, "after cleaning zone 2");
    drop(fs);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after remount");
}

#[test]
fn cleaning_options_are_checked() {
    let d = FsOptions::default();
    assert_eq!(
        (d.gc_start, d.gc_stop, d.gc_mode),
        (20, 25, CleaningMode::Copy)
    );
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    for (start, stop) in [(0, 25), (30, 25), (20, 100), (0, 0), (100, 100)] {
        let o = opts().with_gc(start, stop);
        let err = ZoneFs::format(dev.clone(), o.clone()).unwrap_err();
        assert!(
            matches!(err, FsError::GcThresholds { start: s, stop: t } if s == start && t == stop),
            "{err}"
        );
        assert!(err.to_string().contains("gc_start"), "{err}");
        assert!(o.check_gc().is_err());
    }
    for (start, stop) in [(1, 1), (20, 25), (99, 99), (5, 45)] {
        assert!(opts().with_gc(start, stop).check_gc().is_ok());
    }
    drop(format(&dev, opts()));
    let err = ZoneFs::mount(dev.clone(), opts().with_gc(30, 20)).unwrap_err();
    assert!(matches!(err, FsError::GcThresholds { .. }), "{err}");
    for m in CleaningMode::ALL {
        assert_eq!(CleaningMode::from_name(m.name()), Some(m));
    }
    assert_eq!(CleaningMode::from_name("gc"), None);
}

#[test]
fn the_invalid_ratio_distribution_covers_the_full_zones() {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 21);
    delete(&fs, &mut files, &[0, 4, 5, 6, 8, 9]);
    // Zones 2..=6 full with 1, 3, 2, 0, 0 dead files; zone 7 active.
    let d = fs.invalid_ratio_distribution();
    assert_eq!(d.ratios, vec![0.0, 0.0, 0.25, 0.5, 0.75]);
    assert_eq!(d.len(), fs.stats().full_zones as usize);
    assert_eq!(d.histogram(4), vec![2, 1, 1, 1]);
    assert!((d.mean() - 0.3).abs() < 1e-9);
    let s = fs.sample();
    assert_eq!(s.gc_copy_bytes, 0);
    assert_eq!(s.t, fs.stats().device_written_total());
    assert!((s.free_ratio - fs.stats().free_ratio).abs() < 1e-12);
    assert_eq!(fs.take_samples(), vec![s]);
    assert!(fs.samples().is_empty());
}

/// Inline cleaning keeps a small device writable under a random delete/create workload
/// that runs out of space without it.
#[test]
fn inline_cleaning_keeps_a_churning_device_writable() {
    let run = |inline: bool| -> Result<(ZoneFs, Files), FsError> {
        let (_, dev) = mem_device(geometry(16, 256, 0, 0));
        let fs = format(&dev, opts());
        fs.set_inline_cleaning(inline);
        let mut files = Files::new();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut live = 0usize;
        for i in 0..400 {
            let name = format!("n{i:03}");
            let len = rng.random_range(16_000..96_000);
            let content = data(i, 0, len);
            let mut w = fs.create(&name, FileKind::Other, packed(FileKind::Other))?;
            let cut = rng.random_range(0..len);
            w.append(&content[..cut])?;
            if rng.random_bool(0.5) {
                w.sync()?;
            }
            w.append(&content[cut..])?;
            w.close()?;
            files.insert(name, content);
            live += len;
            while live > 1_600_000 {
                let k = rng.random_range(0..files.len());
                let victim = files.keys().nth(k).cloned().unwrap_or_default();
                fs.delete(&victim)?;
                live -= files.remove(&victim).map_or(0, |c| c.len());
            }
        }
        Ok((fs, files))
    };
    let err = run(false).err();
    assert!(
        err.as_ref().is_some_and(FsError::is_out_of_space),
        "{err:?}"
    );
    let (fs, files) = run(true).unwrap_or_else(|e| panic!("{e}"));
    let s = fs.stats();
    assert!(
        s.gc.runs > 0 && s.gc.victims > 0 && s.gc.copy_bytes > 0,
        "{:?}",
        s.gc
    );
    assert!(
        s.gc.blocking_events > 0 && s.gc.blocking_ns > 0,
        "{:?}",
        s.gc
    );
    assert_eq!(s.gc.compacted_bytes, 0);
    assert!(s.gc.resets > 0 && s.zone_resets >= s.gc.resets);
    assert_files(&fs, &files, "end");
}

#[test]
fn make_room_cleans_the_dead_data_of_an_idle_active_zone() {
    // Zones 2-7 full and all valid; zone 8 holds three pieces, two of them deleted, and
    // is still active; zone 9 is empty. No full zone is worth cleaning, so a run finds no
    // victim; make_room (nothing is being written) finishes zone 8 and cleans it.
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 27);
    delete(&fs, &mut files, &[24, 25]);
    assert_eq!(zone_of(&fs, "f26"), vec![8]);
    assert_eq!(zone_stat(&fs, 8).state, ZoneState::ImplicitOpen);
    assert_eq!(fs.pick_victim(), None);
    let r = fs.maybe_clean().unwrap();
    assert_eq!((r.stop, r.victims), (CleanStop::NoVictim, 0));
    let free = fs.stats().free_bytes;
    assert_eq!(free, 5 * ZONE / 4);

    let r = fs.make_room().unwrap();
    assert_eq!((r.victims, r.cleaned), (1, 1), "{r:?}");
    assert_eq!(fs.stats().free_bytes, free + 2 * PIECE as u64);
    assert_ne!(zone_of(&fs, "f26"), vec![8]);
    assert_files(&fs, &files, "after make_room");
    drop(fs);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after remount");
}

#[test]
fn make_room_leaves_an_idle_zone_whose_data_has_nowhere_to_go() {
    // As above, but zone 9 is full too: zone 8's valid data would have no room, so it
    // is neither finished nor cleaned.
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write_pieces(&fs, &mut files, 31);
    delete(&fs, &mut files, &[28]);
    assert_eq!(zone_of(&fs, "f30"), vec![9]);
    let r = fs.make_room().unwrap();
    assert_eq!((r.stop, r.victims), (CleanStop::NoVictim, 0));
    assert_eq!(zone_stat(&fs, 9).state, ZoneState::ImplicitOpen);
    assert_files(&fs, &files, "after make_room");
}

#[test]
fn a_file_written_further_changes_no_zone_and_a_delete_does() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let mut files = Files::new();
    write(&fs, &mut files, "a", data(1, 0, PIECE));
    let mut w = fs
        .create("b", FileKind::Sst, packed(FileKind::Sst))
        .unwrap();
    w.append(&data(2, 0, PIECE)).unwrap();
    w.sync().unwrap();
    let mark = fs.extent_mark();
    // Written further over a zone boundary and closed: no zone counts as changed.
    for piece in 1..5 {
        w.append(&data(2, piece * PIECE as u64, PIECE)).unwrap();
        w.sync().unwrap();
    }
    w.close().unwrap();
    assert!(zone_of(&fs, "b").len() > 1, "{:?}", zone_of(&fs, "b"));
    let mut moved = Vec::new();
    assert!(fs.zones_changed_since(mark, &mut moved));
    assert_eq!(moved, Vec::<u32>::new());
    // Deleting a finished file does change its zones.
    let zones = zone_of(&fs, "a");
    fs.delete("a").unwrap();
    assert!(fs.zones_changed_since(mark, &mut moved));
    assert_eq!(moved, zones);
}
