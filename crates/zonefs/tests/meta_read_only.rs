//! Read-only recovery and the probe: the same state as a read-write recovery, a report of
//! what that one would repair, and not one write to the device.

mod common;
mod footprint;

use common::{mem_device, small_geometry, Harness};
use footprint::footprint;
use zkv_zns::{IoCategory, ZoneState, ZonedDevice};
use zkv_zonefs::meta::{probe, FileId, MetaError, MetaLog, Record, Superblock, FORMAT_VERSION};

const META_ZONES: u32 = 3;

/// The written bytes of a zone.
fn zone_bytes(dev: &dyn ZonedDevice, zone: u32) -> Vec<u8> {
    let info = dev.zone_info(zone).unwrap();
    let mut bytes = vec![0u8; info.used() as usize];
    dev.read(info.start, &mut bytes, IoCategory::Metadata)
        .unwrap();
    bytes
}

#[test]
fn a_torn_tail_is_recovered_and_reported_without_a_write() {
    let (_, dev) = mem_device(small_geometry());
    let mut h = Harness::format(dev.clone(), META_ZONES, 11);
    h.run(4).unwrap();
    assert_eq!(h.log.active_zone(), 0);
    let model = h.work.model.clone();
    drop(h);
    // Garbage after the last batch, as a write cut by a power loss leaves it.
    let wp = dev.zone_info(0).unwrap().written();
    dev.write(wp, &[0xa5; 4096], IoCategory::Metadata).unwrap();
    let before = footprint(dev.as_ref());

    let (state, mut log) = MetaLog::recover_read_only(dev.clone(), META_ZONES).unwrap();
    model.assert_matches(&state);
    let report = log.mount_report().unwrap().clone();
    assert_eq!(report.torn_tail, Some(wp));
    assert_eq!(report.roll_to, Some(1));
    assert!(!report.rolled);
    assert!(report.stale.is_empty());
    assert!(log.is_read_only());
    let rec = Record::FileDelete { id: FileId(1) };
    assert!(matches!(log.append(&rec), Err(MetaError::ReadOnly)));
    assert!(matches!(log.sync(&state), Err(MetaError::ReadOnly)));
    assert!(matches!(log.roll_now(&state), Err(MetaError::ReadOnly)));
    assert_eq!(footprint(dev.as_ref()), before, "read-only recovery wrote");

    // The read-write recovery finds the same state and does what the report announced.
    let (rw_state, rw_log) = MetaLog::recover(dev.clone(), META_ZONES).unwrap();
    assert_eq!(rw_state, state);
    let rw = rw_log.mount_report().unwrap();
    assert_eq!(
        (rw.torn_tail, rw.roll_to, rw.rolled),
        (Some(wp), Some(1), true)
    );
    assert_eq!(rw_log.active_zone(), 1);
    assert_eq!(dev.zone_info(0).unwrap().state, ZoneState::Empty);
}

#[test]
fn an_older_generation_is_reported_stale_and_left_alone() {
    let (_, dev) = mem_device(small_geometry());
    let mut h = Harness::format(dev.clone(), META_ZONES, 5);
    h.run(2).unwrap();
    let first_generation = zone_bytes(dev.as_ref(), 0);
    while h.log.active_zone() == 0 {
        h.run(1).unwrap();
    }
    let model = h.work.model.clone();
    drop(h);
    // The reset of the older generation was lost: it is back in zone 0.
    dev.write(0, &first_generation, IoCategory::Metadata)
        .unwrap();
    let before = footprint(dev.as_ref());

    let (state, log) = MetaLog::recover_read_only(dev.clone(), META_ZONES).unwrap();
    model.assert_matches(&state);
    let report = log.mount_report().unwrap();
    assert_eq!((report.zone, report.seq), (1, 2));
    assert_eq!(report.stale, vec![0]);
    assert_eq!(report.roll_to, None);
    assert_eq!(footprint(dev.as_ref()), before, "read-only recovery wrote");

    let (rw_state, _) = MetaLog::recover(dev.clone(), META_ZONES).unwrap();
    assert_eq!(rw_state, state);
    assert_eq!(dev.zone_info(0).unwrap().state, ZoneState::Empty);
}

#[test]
fn the_probe_finds_the_newest_superblock_without_writing() {
    let (_, dev) = mem_device(small_geometry());
    assert!(matches!(probe(dev.as_ref()), Err(MetaError::NotFormatted)));

    let mut h = Harness::format(dev.clone(), 4, 3);
    while h.log.active_zone() < 2 {
        h.run(1).unwrap();
    }
    let before = footprint(dev.as_ref());
    let found = probe(dev.as_ref()).unwrap();
    assert_eq!(footprint(dev.as_ref()), before, "the probe wrote");
    assert_eq!(found.meta_zones(), 4);
    assert_eq!(found.version(), FORMAT_VERSION);
    assert_eq!((found.superblock.zone, found.superblock.seq), (2, 3));
    assert_eq!(found.damaged, None);
    drop(h);

    // Only a damaged superblock: something is there, but it cannot be used.
    let (_, damaged) = mem_device(small_geometry());
    let mut sb = Superblock::new(&damaged.geometry(), META_ZONES, 0, 1).encode();
    sb[20] ^= 1;
    let mut block = vec![0u8; 4096];
    block[..sb.len()].copy_from_slice(&sb);
    damaged.write(0, &block, IoCategory::Metadata).unwrap();
    match probe(damaged.as_ref()) {
        Err(MetaError::Corrupt {
            zone: 0,
            offset: 0,
            reason,
        }) => assert!(reason.contains("superblock checksum mismatch"), "{reason}"),
        other => panic!("expected a damaged superblock, got {other:?}"),
    }

    // Data that is not metadata in zone 0: not a file system.
    let (_, data) = mem_device(small_geometry());
    data.write(0, &[7u8; 4096], IoCategory::User).unwrap();
    assert!(matches!(probe(data.as_ref()), Err(MetaError::NotFormatted)));
}
