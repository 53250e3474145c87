//! A read-only mount never writes the device, refuses every change with a typed error,
//! shows the figures a read-write mount shows, and reports what that one would repair.

mod footprint;
mod fs_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use footprint::footprint;
use fs_support::*;
use zkv_zns::{IoCategory, ZoneState, ZonedDevice};
use zkv_zonefs::fs::{FsError, SettlePlan, ZoneFs};
use zkv_zonefs::meta::FileKind;

/// A formatted device with files: SSTs spanning zones, a WAL synced twice (padding), and a
/// deleted file (dead bytes). Returns the files' contents.
fn populated() -> (Arc<dyn ZonedDevice>, BTreeMap<String, Vec<u8>>) {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts().with_reserved_zones(1));
    let mut files = BTreeMap::new();
    for (i, len) in [300_000usize, 5000, 200_000, 100_000]
        .into_iter()
        .enumerate()
    {
        let name = format!("{i:06}.sst");
        let content = data(i as u64, 0, len);
        write_file(
            &fs,
            &name,
            FileKind::Sst,
            hint(FileKind::Sst, Some(i as u8)),
            &content,
        );
        files.insert(name, content);
    }
    let mut wal = fs
        .create("000009.log", FileKind::Wal, hint(FileKind::Wal, None))
        .unwrap();
    wal.append(&data(9, 0, 100)).unwrap();
    wal.sync().unwrap();
    wal.append(&data(9, 100, 50)).unwrap();
    wal.close().unwrap();
    files.insert("000009.log".into(), data(9, 0, 150));
    fs.delete("000003.sst").unwrap();
    files.remove("000003.sst");
    (dev, files)
}

#[test]
fn a_read_only_mount_writes_nothing_and_reads_everything() {
    let (dev, files) = populated();
    let before = footprint(dev.as_ref());
    let fs = ZoneFs::mount_read_only(Arc::clone(&dev)).unwrap();
    assert!(fs.is_read_only());
    assert_files(&fs, &files, "read-only");
    let readers: Vec<_> = files.keys().map(|n| fs.open(n).unwrap()).collect();
    let _ = (fs.zone_stats().unwrap(), fs.stats(), fs.settle_plan());
    let _ = (
        fs.pick_victim(),
        fs.invalid_ratio_distribution(),
        fs.sample(),
    );
    drop(readers);
    drop(fs);
    assert_eq!(footprint(dev.as_ref()), before, "the read-only mount wrote");
}

#[test]
fn every_change_fails_with_the_read_only_error() {
    let (dev, files) = populated();
    let before = footprint(dev.as_ref());
    let fs = ZoneFs::mount_read_only(Arc::clone(&dev)).unwrap();
    let h = hint(FileKind::Sst, Some(1));
    let errors = [
        fs.create("new.sst", FileKind::Sst, h.clone()).err(),
        fs.create_or_replace("000000.sst", FileKind::Sst, h).err(),
        fs.rename("000000.sst", "x.sst").err(),
        fs.delete("000000.sst").err(),
        fs.sync_metadata().err(),
        fs.clean_now().err(),
        fs.maybe_clean().err(),
        fs.clean_one().err(),
        fs.start_cleaner().err(),
    ];
    for e in errors {
        match e {
            Some(e @ FsError::ReadOnly { .. }) => {
                assert!(e.is_read_only());
                assert!(e
                    .to_string()
                    .ends_with(": the file system is mounted read-only"));
            }
            other => panic!("expected a read-only error, got {other:?}"),
        }
    }
    assert_files(&fs, &files, "after the refused changes");
    drop(fs);
    assert_eq!(footprint(dev.as_ref()), before, "a refused change wrote");
}

#[test]
fn the_figures_are_those_of_a_read_write_mount() {
    let (dev, _) = populated();
    let ro = ZoneFs::mount_read_only(Arc::clone(&dev)).unwrap();
    let (ro_zones, ro_stats) = (ro.zone_stats().unwrap(), ro.stats());
    let ro_ratios = ro.invalid_ratio_distribution();
    // Nothing to reset or finish; the class of the zone the delete reset is still recorded
    // (its clearing waits for the next metadata sync), so a read-write mount clears it.
    let plan = ro.settle_plan();
    assert!(
        plan.reclaimable.is_empty() && plan.finish.is_empty(),
        "{plan:?}"
    );
    assert!(!plan.cleared_classes.is_empty(), "{plan:?}");
    let ro_meta = ro.metadata();
    drop(ro);
    let rw = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    assert!(!rw.is_read_only());
    for zone in plan.cleared_classes {
        assert!(ro_meta.placement(zone).is_some());
        assert_eq!(rw.metadata().placement(zone), None, "zone {zone}");
    }
    assert_eq!(rw.settle_plan(), SettlePlan::default());
    assert_eq!(ro_zones, rw.zone_stats().unwrap());
    assert!(ro_zones.iter().any(|z| z.invalid > 0), "{ro_zones:?}");
    let rw_stats = rw.stats();
    let figures = |s: &zkv_zonefs::fs::FsStats| {
        (
            s.usable_bytes,
            s.free_bytes,
            s.files,
            s.data_zones,
            s.reserved_zones,
            (s.empty_zones, s.active_zones, s.full_zones),
        )
    };
    assert_eq!(figures(&ro_stats), figures(&rw_stats));
    assert_eq!(ro_stats.reserved_zones, 1, "the recorded reserve");
    assert_eq!(ro_ratios, rw.invalid_ratio_distribution());
}

#[test]
fn a_torn_metadata_tail_and_dead_zones_are_reported_not_repaired() {
    let (dev, files) = populated();
    // A metadata write cut by a power loss, and a data zone written behind the file
    // system's back (no file owns its data).
    let meta_wp = dev.zone_info(0).unwrap().written();
    dev.write(meta_wp, &[0x5a; 4096], IoCategory::Metadata)
        .unwrap();
    let geo = dev.geometry();
    let stray = geo.zones - 1;
    assert_eq!(dev.zone_info(stray).unwrap().state, ZoneState::Empty);
    dev.write(geo.zone_start(stray), &[1; 8192], IoCategory::User)
        .unwrap();
    let before = footprint(dev.as_ref());

    let ro = ZoneFs::mount_read_only(Arc::clone(&dev)).unwrap();
    assert_files(&ro, &files, "read-only over a torn tail");
    let report = ro.mount_report().unwrap();
    assert_eq!(report.torn_tail, Some(meta_wp));
    assert_eq!((report.roll_to, report.rolled), (Some(1), false));
    let plan = ro.settle_plan();
    assert_eq!(plan.reclaimable, vec![stray]);
    assert!(plan.finish.is_empty());
    let zones = ro.zone_stats().unwrap();
    let z = zones.iter().find(|z| z.zone == stray).unwrap();
    assert_eq!((z.written, z.valid, z.invalid), (8192, 0, 8192));
    let free = ro.stats().free_bytes;
    drop(ro);
    assert_eq!(footprint(dev.as_ref()), before, "the read-only mount wrote");

    // A read-write mount repairs: it rolls the log and resets the stray zone, which is
    // then free; every other figure is the same.
    let rw = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    let report = rw.mount_report().unwrap();
    assert_eq!((report.roll_to, report.rolled), (Some(1), true));
    assert_eq!(dev.zone_info(stray).unwrap().state, ZoneState::Empty);
    assert_eq!(rw.stats().free_bytes, free + 8192);
    let rw_zones = rw.zone_stats().unwrap();
    for (a, b) in zones.iter().zip(&rw_zones) {
        if a.zone != stray {
            assert_eq!(a, b);
        }
    }
    assert_eq!(rw.settle_plan(), SettlePlan::default());
    assert_files(&rw, &files, "after the repair");
}
