//! Device errors: a failed write or sync fails the writer, never the file system; an
//! uncertain metadata commit never lets a zone be reset under data it may reference; odd
//! zone states left by others are cleaned up at mount.

mod fs_support;

use fs_support::*;
use zkv_zns::{FaultControl, FaultOp, ZoneOp, ZoneState};
use zkv_zonefs::fs::FsError;
use zkv_zonefs::meta::FileKind;

#[test]
fn an_injected_write_error_fails_the_writer_and_keeps_its_synced_content() {
    let (mem, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let mut w = fs.create("a", FileKind::Sst, Default::default()).unwrap();
    w.append(&data(1, 0, 10_000)).unwrap();
    w.sync().unwrap();
    mem.inject_error(FaultOp::Write, None, 1);
    let err = w.append(&data(1, 10_000, 10_000)).unwrap_err();
    assert!(matches!(err, FsError::Device { .. }), "{err}");
    assert!(matches!(w.sync(), Err(FsError::WriterFailed { .. })));
    assert!(w.close().is_err());
    assert_eq!(read_file(&fs, "a"), data(1, 0, 10_000));
    assert_consistent(&fs, "after the failed writer");
    // The file system goes on.
    write_file(
        &fs,
        "b",
        FileKind::Sst,
        Default::default(),
        &data(2, 0, 10_000),
    );
    fs.delete("a").unwrap();
    drop(fs);
    let fs = mount(&dev, opts());
    assert_eq!(read_file(&fs, "b"), data(2, 0, 10_000));
    assert!(!fs.exists("a"));
    assert_consistent(&fs, "after remount");
}

#[test]
fn a_failed_metadata_sync_keeps_the_zone_until_the_next_mount() {
    let (mem, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    let mut w = fs.create("a", FileKind::Sst, Default::default()).unwrap();
    w.append(&data(1, 0, 10_000)).unwrap();
    // The data flush passes, the metadata log's flush fails: the record may or may not
    // be durable, so the zone must not be counted dead.
    mem.inject_error(FaultOp::Sync, None, 2);
    let err = w.sync().unwrap_err();
    assert!(matches!(err, FsError::Meta { .. }), "{err}");
    drop(w);
    let zone = fs.zones_of("a").unwrap()[0].0;
    let z = zone_stat(&fs, zone);
    assert_eq!(z.state, ZoneState::ImplicitOpen, "not reset");
    // The record was written (only the flush failed): the next commit makes it durable.
    fs.sync_metadata().unwrap();
    drop(fs);
    let fs = mount(&dev, opts());
    assert_eq!(read_file(&fs, "a"), data(1, 0, 10_000));
    assert_consistent(&fs, "after remount");
}

#[test]
fn mount_resets_zones_left_open_without_data_and_tolerates_dead_ones() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, opts());
    write_file(
        &fs,
        "a",
        FileKind::Sst,
        Default::default(),
        &data(1, 0, 10_000),
    );
    drop(fs);
    // Someone opened a zone explicitly and wrote a stray block to another.
    dev.zone_op(10, ZoneOp::Open).unwrap();
    dev.write(
        dev.geometry().zone_start(11),
        &[7u8; 4096],
        zkv_zns::IoCategory::User,
    )
    .unwrap();
    let fs = mount(&dev, opts());
    let zones = fs.zone_stats().unwrap();
    for z in [10, 11] {
        let s = zones.iter().find(|s| s.zone == z).unwrap();
        assert_eq!((s.state, s.written), (ZoneState::Empty, 0), "zone {z}");
    }
    assert_eq!(fs.stats().active_zones, 1);
    assert_eq!(read_file(&fs, "a"), data(1, 0, 10_000));
}
