//! The file-system options live in the metadata: format records them, they survive
//! remounts and metadata log rolls, a mount with other options records those, and a mount
//! with the recorded options needs nothing but the device.

mod fs_support;

use std::sync::Arc;

use fs_support::*;
use zkv_zns::{IoCategory, ZonedDevice};
use zkv_zonefs::fs::{CleaningMode, FsError, FsOptions, ZoneFs};
use zkv_zonefs::meta::{
    dump_zone, FrameKind, MetaError, MetaLog, Record, StoredOptions, Superblock, SUPERBLOCK_LEN,
};

/// Options that differ from the defaults in every field.
fn custom() -> FsOptions {
    opts()
        .with_reserved_zones(2)
        .with_finish_threshold(Some(10))
        .with_gc(30, 40)
        .with_gc_mode(CleaningMode::Compact)
}

/// `Options` frames in the active metadata zone (the snapshot's copy not counted).
/// Options records in the active metadata zone (every batch is written twice: one each).
fn options_frames(fs: &ZoneFs) -> usize {
    let zone = fs.mount_report().map_or(0, |r| r.roll_to.unwrap_or(r.zone));
    let dump = dump_zone(fs.device().as_ref(), zone).unwrap();
    let frames = dump
        .frames
        .iter()
        .filter(|f| f.kind == FrameKind::Options)
        .count();
    assert_eq!(frames % 2, 0, "an options record without its copy");
    frames / 2
}

#[test]
fn format_records_the_options_and_a_stored_mount_uses_them() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let fs = format(&dev, custom());
    assert_eq!(fs.metadata().options(), Some(&custom().to_stored()));
    // They are in the first snapshot: format writes no extra batch.
    assert_eq!(fs.stats().meta.batches, 1);
    drop(fs);
    let fs = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    assert_eq!(fs.options(), &custom());
    assert_eq!(fs.stats().reserved_zones, 2);
    drop(fs);
    let fs = ZoneFs::mount_read_only(Arc::clone(&dev)).unwrap();
    assert_eq!(fs.options(), &custom());
}

#[test]
fn options_survive_metadata_log_rolls() {
    // Zones of 64 KiB: the metadata log rolls after a few dozen commits.
    let (_, dev) = mem_device(geometry(24, 64, 14, 14));
    let fs = format(&dev, custom());
    for i in 0..200u64 {
        let name = format!("{i:06}.sst");
        write_sst(&fs, &name, 1, &data(i, 0, 100));
        if i >= 4 {
            fs.delete(&format!("{:06}.sst", i - 4)).unwrap();
        }
    }
    let rolls = fs.stats().meta.rolls;
    assert!(rolls >= 2, "the metadata log rolled {rolls} times");
    assert_eq!(fs.metadata().options(), Some(&custom().to_stored()));
    drop(fs);
    // The zone where the options record was written is gone: the snapshots carry them.
    let fs = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    assert_eq!(fs.options(), &custom());
    assert_eq!(fs.list().len(), 4);
}

#[test]
fn a_mount_with_other_options_records_them_once() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    drop(format(&dev, opts()));
    let fs = mount(&dev, custom());
    assert_eq!(fs.metadata().options(), Some(&custom().to_stored()));
    assert_eq!(options_frames(&fs), 1);
    drop(fs);
    // The same options again: nothing new to record.
    let fs = mount(&dev, custom());
    assert_eq!(options_frames(&fs), 1);
    drop(fs);
    let fs = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    assert_eq!(fs.options(), &custom());
    drop(fs);
    // Back to the defaults: recorded too.
    drop(mount(&dev, opts()));
    let fs = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    assert_eq!(fs.options(), &opts());
    assert_eq!(options_frames(&fs), 2);
}

#[test]
fn metadata_without_options_mounts_with_the_defaults_and_records_them() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    drop(MetaLog::format(Arc::clone(&dev), 3).unwrap());
    let fs = ZoneFs::mount_read_only(Arc::clone(&dev)).unwrap();
    assert_eq!(fs.options(), &FsOptions::default());
    assert_eq!(fs.metadata().options(), None);
    drop(fs);
    let fs = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    assert_eq!(
        fs.metadata().options(),
        Some(&FsOptions::default().to_stored())
    );
}

#[test]
fn recorded_options_are_checked_when_used() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    let mut log = MetaLog::format(Arc::clone(&dev), 2).unwrap();
    let mut state = zkv_zonefs::meta::FsState::new(log.layout());
    let rec = Record::Options(StoredOptions {
        placement: "nope".into(),
        ..opts().to_stored()
    });
    state.apply(&rec).unwrap();
    log.append(&rec).unwrap();
    log.sync(&state).unwrap();
    drop(log);
    let err = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap_err();
    assert!(matches!(err, FsError::InvalidOptions { .. }), "{err}");
    assert!(err.to_string().contains("'nope'"), "{err}");

    let bad_mode = StoredOptions {
        gc_mode: "sweep".into(),
        ..opts().to_stored()
    };
    let err = FsOptions::from_stored(2, Some(&bad_mode)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid file system options: the recorded cleaning mode 'sweep' is unknown"
    );
}

type Mount = fn(&Arc<dyn ZonedDevice>) -> Result<ZoneFs, FsError>;

#[test]
fn an_old_format_version_is_a_clear_error() {
    let (_, dev) = mem_device(geometry(16, 256, 14, 14));
    drop(format(&dev, opts()));
    // What a build of format version 1 wrote: the same superblock, version 1.
    let mut zone0 = vec![0u8; 4096];
    dev.read(0, &mut zone0, IoCategory::Metadata).unwrap();
    let mut sb = Superblock::decode(&zone0).unwrap();
    sb.version = 1;
    let written = dev.zone_info(0).unwrap().written() as usize;
    let mut bytes = vec![0u8; written];
    dev.read(0, &mut bytes, IoCategory::Metadata).unwrap();
    bytes[..SUPERBLOCK_LEN].copy_from_slice(&sb.encode());
    bytes[4096..4096 + SUPERBLOCK_LEN].copy_from_slice(&sb.encode());
    dev.reset_zone(0).unwrap();
    dev.write(0, &bytes, IoCategory::Metadata).unwrap();

    let mounts: [Mount; 3] = [
        |d| ZoneFs::mount(Arc::clone(d), opts()),
        |d| ZoneFs::mount_stored(Arc::clone(d)),
        |d| ZoneFs::mount_read_only(Arc::clone(d)),
    ];
    for mount in mounts {
        match mount(&dev) {
            Err(FsError::Meta {
                source: e @ MetaError::UnsupportedVersion { found: 1, .. },
                ..
            }) => assert_eq!(
                e.to_string(),
                "metadata zone 0: format version 1 is not supported (this build reads \
                 versions 2 to 3); reformat the device"
            ),
            other => panic!("expected a version refusal, got {other:?}"),
        }
    }
    // Formatting again is the way out.
    drop(format(&dev, opts()));
    assert!(ZoneFs::mount_stored(dev).is_ok());
}
