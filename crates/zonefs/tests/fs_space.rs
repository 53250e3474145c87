//! Space: running out of zones, eager zero-copy resets, readers pinning zones, reserved
//! zones and the finish threshold.

mod fs_support;

use std::collections::BTreeMap;

use fs_support::*;
use zkv_zns::ZoneState;
use zkv_zonefs::fs::{FsError, ZoneFs};
use zkv_zonefs::meta::FileKind;

const FILE: usize = 100_000;

/// Writes synced files of `FILE` bytes until the device is full; `files` gets what each
/// file holds (the synced part of the one that hit the error).
fn fill(fs: &ZoneFs, files: &mut BTreeMap<String, Vec<u8>>) {
    for i in 0.. {
        let name = format!("{i:04}.sst");
        let mut w = match fs.create(&name, FileKind::Sst, hint(FileKind::Sst, Some(1))) {
            Ok(w) => w,
            Err(e) => {
                assert!(e.is_out_of_space(), "{e}");
                return;
            }
        };
        files.insert(name.clone(), Vec::new());
        let content = data(i, 0, FILE);
        for (n, piece) in content.chunks(30_000).enumerate() {
            if let Err(e) = w.append(piece).and_then(|()| w.sync()) {
                assert!(e.is_out_of_space(), "{e}");
                assert!(matches!(w.append(b"x"), Err(FsError::WriterFailed { .. })));
                drop(w);
                let synced = content.chunks(30_000).take(n).flatten().copied().collect();
                files.insert(name, synced);
                return;
            }
        }
        w.close().unwrap();
        files.insert(name, content);
    }
    unreachable!()
}

#[test]
fn a_full_device_keeps_synced_data_and_works_again_after_deletes() {
    // 8 data zones of 256 KiB, no limits.
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let fs = format(&dev, opts());
    let mut files = BTreeMap::new();
    fill(&fs, &mut files);
    assert!(files.len() >= 15, "{}", files.len());
    assert_files(&fs, &files, "when full");
    let err = fs.create("more", FileKind::Sst, Default::default());
    assert!(err.is_ok() || err.as_ref().is_err_and(FsError::is_out_of_space));
    drop(err);
    let stats = fs.stats();
    assert!(stats.free_ratio < 0.05, "{stats:?}");
    // Deleting files frees the zones they alone used at once, without copying (LIZA spread
    // the files over all zones, so most must go before a zone is entirely dead).
    let before = fs.stats().zero_copy_resets;
    let victims: Vec<String> = files.keys().take(files.len() - 2).cloned().collect();
    for name in &victims {
        fs.delete(name).unwrap();
        files.remove(name);
    }
    assert!(fs.stats().zero_copy_resets > before);
    assert!(fs
        .zone_stats()
        .unwrap()
        .iter()
        .any(|z| z.state == ZoneState::Empty));
    write_file(
        &fs,
        "again",
        FileKind::Sst,
        Default::default(),
        &data(99, 0, FILE),
    );
    files.insert("again".into(), data(99, 0, FILE));
    assert_files(&fs, &files, "after deletes");
    drop(fs);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after remount");
}

#[test]
fn reserved_zones_are_never_given_to_files() {
    let (_, dev) = mem_device(geometry(12, 256, 0, 0));
    let fs = format(&dev, opts().with_reserved_zones(3));
    let stats = fs.stats();
    assert_eq!(stats.usable_bytes, 7 * 256 * KIB);
    assert_eq!(stats.free_ratio, 1.0);
    let mut files = BTreeMap::new();
    fill(&fs, &mut files);
    let empty = fs
        .zone_stats()
        .unwrap()
        .iter()
        .filter(|z| z.state == ZoneState::Empty)
        .count();
    assert_eq!(empty, 3);
    assert_eq!(fs.stats().free_bytes, 0);
}

#[test]
fn a_zone_is_reset_once_its_last_live_byte_dies_and_no_reader_pins_it() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let write = |name: &str, len: usize| {
        write_sst(&fs, name, 1, &data(1, 0, len));
    };
    // LIZA opens a fresh zone for b (same class, an active resource is free).
    write("a", 40_000);
    write("b", 40_000);
    let zone = zone_of(&fs, "a")[0];
    assert_ne!(zone_of(&fs, "b")[0], zone);
    let resets = fs.stats().zone_resets;
    let reader = fs.open("a").unwrap();
    fs.delete("a").unwrap();
    // a's zone is dead but pinned by the reader: not reset yet.
    assert_eq!(fs.stats().zone_resets, resets);
    assert_eq!(reader.read_all().unwrap(), data(1, 0, 40_000));
    drop(reader);
    assert_eq!(fs.stats().zone_resets, resets + 1);
    fs.delete("b").unwrap();
    let z = fs.zone_stats().unwrap();
    assert!(z.iter().all(|z| z.written == 0), "every zone was reset");
    assert_eq!(fs.stats().zero_copy_resets, fs.stats().zone_resets);
    assert_consistent(&fs, "end");
}

#[test]
fn rename_over_a_file_resets_the_zones_only_the_replaced_file_used() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    write_sst(&fs, "MANIFEST", 3, &data(1, 0, 300_000));
    let old_zones = fs.zones_of("MANIFEST").unwrap();
    write_file(
        &fs,
        "tmp",
        FileKind::Wal,
        hint(FileKind::Wal, None),
        &data(2, 0, 1000),
    );
    // The short-lived file may share the tail zone of the old one (LIZA puts it in a
    // longer-lived zone): that zone stays.
    let tmp_zones = fs.zones_of("tmp").unwrap();
    let alone = old_zones
        .iter()
        .filter(|(z, _)| tmp_zones.iter().all(|(t, _)| t != z))
        .count() as u64;
    assert!(alone >= 1);
    let resets = fs.stats().zero_copy_resets;
    fs.rename("tmp", "MANIFEST").unwrap();
    assert_eq!(fs.stats().zero_copy_resets, resets + alone);
    assert_eq!(read_file(&fs, "MANIFEST"), data(2, 0, 1000));
    assert_consistent(&fs, "end");
}

#[test]
fn the_finish_threshold_finishes_nearly_full_zones_before_opening_new_ones() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts().with_finish_threshold(Some(50)));
    // 200 KiB of 256: less than 50% left in its zone.
    write_sst(&fs, "a", 2, &data(1, 0, 200 * 1024));
    let zone = zone_of(&fs, "a")[0];
    assert_eq!(fs.stats().finishes, 0);
    // A longer-lived file cannot use a's zone: a new zone opens, a's is finished first.
    write_sst(&fs, "b", 3, &data(2, 0, 4096));
    assert_eq!(fs.stats().finishes, 1);
    let z = zone_stat(&fs, zone);
    assert_eq!(z.state, ZoneState::Full);
    assert_eq!((z.written, z.valid), (256 * KIB, 200 * KIB));
    assert_eq!(read_file(&fs, "a"), data(1, 0, 200 * 1024));
    drop(fs);
    let fs = mount(&dev, opts());
    assert_eq!(read_file(&fs, "a"), data(1, 0, 200 * 1024));
    assert_consistent(&fs, "after remount");
}

/// 32 files of 64 KiB that fill the 8 data zones of a 10-zone device in order (their
/// lifetime "none" keeps them in zones of their own class), four per zone; then a reader
/// opens the four files of the first data zone and they are deleted: that zone holds only
/// dead data the reader still uses, and nothing else is free.
fn full_but_for_a_pinned_zone(fs: &ZoneFs) -> (Vec<zkv_zonefs::fs::FileReader>, Vec<u32>) {
    let hint = zkv_zonefs::placement::PlacementHint {
        kind: Some(FileKind::Other),
        lifetime: zkv_zonefs::placement::Lifetime::None,
        ..Default::default()
    };
    for i in 0..32 {
        write_file(
            fs,
            &format!("f{i:02}"),
            FileKind::Other,
            hint.clone(),
            &data(i, 0, 65_536),
        );
    }
    let names: Vec<String> = (0..4).map(|i| format!("f{i:02}")).collect();
    let zones: Vec<u32> = names.iter().flat_map(|n| zone_of(fs, n)).collect();
    let readers = names.iter().map(|n| fs.open(n).unwrap()).collect();
    for n in &names {
        fs.delete(n).unwrap();
    }
    assert_eq!(fs.stats().free_bytes, 0);
    (readers, zones)
}

/// A writer that finds no zone while a zone holds only data of deleted files that open
/// readers still use (a running compaction's inputs, an iterator's tables) waits for them
/// instead of failing, and gets the zone once they let go.
#[test]
fn a_writer_waits_for_readers_of_deleted_files_to_let_go() {
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let fs = format(&dev, opts());
    let (readers, zones) = full_but_for_a_pinned_zone(&fs);
    assert!(
        zones.iter().all(|&z| zone_stat(&fs, z).pins > 0),
        "{zones:?}"
    );
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            for (i, r) in readers.into_iter().enumerate() {
                assert_eq!(r.read_all().unwrap(), data(i as u64, 0, 65_536));
            }
        });
        write_file(
            &fs,
            "more",
            FileKind::Other,
            Default::default(),
            &data(99, 0, 65_536),
        );
    });
    assert_eq!(read_file(&fs, "more"), data(99, 0, 65_536));
    assert_consistent(&fs, "end");
}

/// Readers that never let go: the wait is bounded, and the error says why.
#[test]
fn readers_that_never_let_go_end_the_wait_with_a_clear_error() {
    let (_, dev) = mem_device(geometry(10, 256, 0, 0));
    let fs = format(&dev, opts());
    let (readers, _) = full_but_for_a_pinned_zone(&fs);
    let start = std::time::Instant::now();
    let err = fs
        .create("more", FileKind::Other, Default::default())
        .unwrap_err();
    assert!(
        start.elapsed() >= std::time::Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    match &err {
        FsError::OutOfSpace { pinned_zones, .. } => assert_eq!(*pinned_zones, 1),
        other => panic!("{other}"),
    }
    assert!(
        err.to_string()
            .contains("1 zones hold only deleted data that open readers still use"),
        "{err}"
    );
    drop(readers);
    write_file(
        &fs,
        "more",
        FileKind::Other,
        Default::default(),
        &data(99, 0, 4096),
    );
}
