//! The file layer's basic contract: files as extents, padding, names, options, remount.

mod fs_support;

use std::collections::BTreeMap;

use fs_support::*;
use zkv_zns::ZoneState;
use zkv_zonefs::fs::{FsError, FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;

#[test]
fn written_files_read_back_after_remount() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let mut files = BTreeMap::new();
    for (i, len) in [0usize, 1, 4095, 4096, 4097, 300_000, 700_000]
        .into_iter()
        .enumerate()
    {
        let name = format!("{i:06}.sst");
        let mut w = fs
            .create(&name, FileKind::Sst, hint(FileKind::Sst, Some(1)))
            .unwrap();
        let content = data(i as u64, 0, len);
        // Uneven pieces cross block and zone boundaries in every way.
        for piece in content.chunks(7919) {
            w.append(piece).unwrap();
        }
        w.close().unwrap();
        files.insert(name, content);
    }
    assert_files(&fs, &files, "before remount");
    drop(fs);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after remount");
    // An extent never spans zones, and a big file spans several.
    let big = fs.zones_of("000006.sst").unwrap();
    assert!(big.len() >= 3, "{big:?}");
    let cap = dev.geometry().zone_capacity;
    for (_, m) in fs.metadata().files() {
        for e in &m.extents {
            assert!(e.offset + e.len <= cap);
        }
    }
}

#[test]
fn a_sync_pads_the_last_block_and_the_next_append_starts_a_fresh_block() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let mut w = fs
        .create("wal", FileKind::Wal, hint(FileKind::Wal, None))
        .unwrap();
    w.append(&data(1, 0, 100)).unwrap();
    w.sync().unwrap();
    let m = fs.metadata();
    let f = m.file(m.file_id("wal").unwrap()).unwrap().clone();
    assert_eq!(f.size, 100);
    assert_eq!(f.extent_bytes(), 4096, "the padding stays in the extent");
    // A second sync with nothing new writes nothing.
    let before = dev.stats().total_written();
    w.sync().unwrap();
    assert_eq!(dev.stats().total_written(), before);
    w.append(&data(1, 100, 50)).unwrap();
    w.sync().unwrap();
    let m = fs.metadata();
    let f = m.file(m.file_id("wal").unwrap()).unwrap().clone();
    assert_eq!(f.size, 150);
    assert_eq!(f.extents.len(), 2);
    assert_eq!(f.extents[0].len, 100, "the padding left the first extent");
    assert_eq!(
        f.extents[1].offset, 4096,
        "the next data starts at a fresh block"
    );
    assert_eq!(read_file(&fs, "wal"), data(1, 0, 150));
    w.close().unwrap();
    assert_consistent(&fs, "after close");
    drop(fs);
    let fs = mount(&dev, opts());
    assert_eq!(read_file(&fs, "wal"), data(1, 0, 150));
    let zone = fs.zones_of("wal").unwrap()[0].0;
    let z = zone_stat(&fs, zone);
    assert_eq!(
        (z.written, z.valid, z.invalid),
        (8192, 4096 + 100, 4096 - 100)
    );
}

#[test]
fn names_are_refused_replaced_and_renamed_like_posix() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let write = |name: &str, seed: u64| {
        let mut w = fs
            .create_or_replace(name, FileKind::Other, Default::default())
            .unwrap();
        w.append(&data(seed, 0, 5000)).unwrap();
        w.close().unwrap();
    };
    write("CURRENT", 1);
    assert!(matches!(
        fs.create("CURRENT", FileKind::Other, Default::default()),
        Err(FsError::AlreadyExists { .. })
    ));
    write("CURRENT", 2);
    assert_eq!(read_file(&fs, "CURRENT"), data(2, 0, 5000));
    write("CURRENT.tmp", 3);
    fs.rename("CURRENT.tmp", "CURRENT").unwrap();
    assert_eq!(read_file(&fs, "CURRENT"), data(3, 0, 5000));
    assert!(!fs.exists("CURRENT.tmp"));
    fs.rename("CURRENT", "CURRENT").unwrap();
    assert!(matches!(fs.open("nope"), Err(FsError::NotFound { .. })));
    assert!(matches!(fs.delete("nope"), Err(FsError::NotFound { .. })));
    assert!(matches!(
        fs.rename("nope", "x"),
        Err(FsError::NotFound { .. })
    ));
    assert!(matches!(
        fs.create("", FileKind::Other, Default::default()),
        Err(FsError::Rejected { .. })
    ));
    // A file being written can be read (as of its last sync) but not removed.
    let mut w = fs
        .create("open", FileKind::Sst, Default::default())
        .unwrap();
    w.append(&data(4, 0, 9000)).unwrap();
    assert_eq!(fs.open("open").unwrap().size(), 0);
    w.sync().unwrap();
    assert_eq!(read_file(&fs, "open"), data(4, 0, 9000));
    assert!(matches!(fs.delete("open"), Err(FsError::Busy { .. })));
    assert!(matches!(fs.rename("open", "x"), Err(FsError::Busy { .. })));
    assert!(matches!(
        fs.rename("CURRENT", "open"),
        Err(FsError::Busy { .. })
    ));
    assert!(matches!(
        fs.create_or_replace("open", FileKind::Sst, Default::default()),
        Err(FsError::Busy { .. })
    ));
    w.close().unwrap();
    fs.delete("open").unwrap();
    assert_consistent(&fs, "end");
}

#[test]
fn dropping_a_writer_discards_what_it_did_not_sync() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let mut w = fs.create("a", FileKind::Sst, Default::default()).unwrap();
    w.append(&data(1, 0, 10_000)).unwrap();
    w.sync().unwrap();
    w.append(&data(1, 10_000, 50_000)).unwrap();
    drop(w);
    assert_eq!(read_file(&fs, "a"), data(1, 0, 10_000));
    assert_consistent(&fs, "after drop");
    // A writer never synced leaves an empty file; its zone is reset at once.
    let resets = fs.stats().zone_resets;
    let mut w = fs.create("b", FileKind::Wal, Default::default()).unwrap();
    w.append(&data(2, 0, 100_000)).unwrap();
    drop(w);
    assert_eq!(read_file(&fs, "b"), Vec::<u8>::new());
    assert!(fs.stats().zone_resets > resets);
    assert_consistent(&fs, "after second drop");
}

#[test]
fn bad_options_and_unformatted_devices_are_clear_errors() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let err = |o: FsOptions| ZoneFs::format(dev.clone(), o).err().map(|e| e.to_string());
    let msg = err(opts().with_placement("nope")).unwrap();
    assert!(msg.contains("unknown placement policy 'nope'"), "{msg}");
    assert!(err(opts().with_meta_zones(1)).is_some());
    assert!(err(opts().with_meta_zones(16)).is_some());
    assert!(err(opts().with_reserved_zones(14)).is_some());
    assert!(err(opts().with_finish_threshold(Some(101))).is_some());
    let (_, tight) = mem_device(geometry(16, 256, 2, 2));
    assert!(ZoneFs::format(tight, opts()).is_err());
    let msg = ZoneFs::mount(dev.clone(), opts())
        .err()
        .map(|e| e.to_string())
        .unwrap();
    assert!(msg.contains("not formatted"), "{msg}");
    let fs = format(&dev, opts());
    drop(fs);
    let msg = ZoneFs::mount(dev.clone(), opts().with_meta_zones(3))
        .err()
        .map(|e| e.to_string())
        .unwrap();
    assert!(msg.contains("metadata"), "{msg}");
}

#[test]
fn format_erases_everything() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    write_file(
        &fs,
        "a",
        FileKind::Sst,
        Default::default(),
        &data(1, 0, 600_000),
    );
    drop(fs);
    let fs = format(&dev, opts());
    assert!(fs.list().is_empty());
    let zones = fs.zone_stats().unwrap();
    assert!(zones
        .iter()
        .all(|z| z.state == ZoneState::Empty && z.written == 0));
    assert_eq!(fs.stats().free_ratio, 1.0);
}

#[test]
fn files_survive_reopening_a_file_backed_device() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zns.img");
    let geo = geometry(16, 256, 14, 14);
    let open = |create: bool| -> std::sync::Arc<dyn zkv_zns::ZonedDevice> {
        let dev = if create {
            zkv_zns::FileDevice::create(&path, geo)
        } else {
            zkv_zns::FileDevice::open(&path)
        };
        std::sync::Arc::new(dev.unwrap())
    };
    let dev = open(true);
    let fs = format(&dev, opts());
    let mut files = BTreeMap::new();
    for (i, len) in [5000usize, 256 * 1024, 600_000].into_iter().enumerate() {
        let name = format!("f{i}");
        write_sst(&fs, &name, i as u8, &data(i as u64, 0, len));
        files.insert(name, data(i as u64, 0, len));
    }
    let classes: Vec<(u32, u8)> = fs
        .zone_stats()
        .unwrap()
        .iter()
        .map(|z| (z.zone, z.class))
        .collect();
    drop(fs);
    drop(dev);
    let dev = open(false);
    let fs = mount(&dev, opts());
    assert_files(&fs, &files, "after reopening the image");
    let again: Vec<(u32, u8)> = fs
        .zone_stats()
        .unwrap()
        .iter()
        .map(|z| (z.zone, z.class))
        .collect();
    assert_eq!(again, classes);
    // A zone filled exactly is FULL: its written bytes come from the capacity.
    assert!(fs
        .zone_stats()
        .unwrap()
        .iter()
        .any(|z| z.state == ZoneState::Full));
}

/// A policy given at format time places the files, the file system says whether it wants
/// neighbourhoods in hints, and the hint reaches it whole.
#[test]
fn a_policy_given_at_format_places_and_sees_the_whole_hint() {
    use std::sync::{Arc, Mutex};
    use zkv_zonefs::placement::{Decision, Liza, Neighbors, PlacementCtx, PlacementPolicy};

    struct Asking(Arc<Mutex<Vec<Option<Neighbors>>>>);
    impl PlacementPolicy for Asking {
        fn name(&self) -> &'static str {
            "asking"
        }
        fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
            self.0.lock().unwrap().push(ctx.hint.neighbors.clone());
            Liza.place(ctx)
        }
        fn wants_neighbors(&self) -> bool {
            true
        }
    }

    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let policy = Box::new(Asking(Arc::clone(&seen)));
    let fs = ZoneFs::format_with_policy(dev.clone(), opts(), policy).unwrap();
    assert!(fs.placement_wants_neighbors());
    assert_eq!(fs.placement_policy(), "asking");
    let neighbors = Neighbors {
        level_scores: vec![1.5, 0.5],
        ..Neighbors::default()
    };
    let mut h = hint(FileKind::Sst, Some(1));
    h.neighbors = Some(neighbors.clone());
    write_file(&fs, "000001.sst", FileKind::Sst, h, &data(1, 0, 10_000));
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|n| n == &Some(neighbors.clone())));
    assert!(!seen.lock().unwrap().is_empty());
    assert!(!fs.inline_cleaning());
    fs.set_inline_cleaning(true);
    assert!(fs.inline_cleaning());
    drop(fs);
    // A later mount places with the policy the options name.
    let fs = mount(&dev, opts());
    assert!(!fs.placement_wants_neighbors());
    assert_eq!(fs.placement_policy(), "liza");
}
