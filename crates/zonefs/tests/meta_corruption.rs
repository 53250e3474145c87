//! Damaged metadata: what mount does with bit flips, truncations, foreign superblocks.
//! A damaged last write is an interrupted write and is ignored; damage followed by valid
//! records is corruption and is reported, never replayed around.

mod common;

use std::sync::Arc;

use common::{mem_device, rewrite_zone, small_geometry, Harness, Model};
use zns::{FaultControl, Geometry, IoCategory, MemDevice, TearMode, ZonedDevice};
use zonefs::meta::{
    dump_zone, probe, FileId, FileKind, FileMeta, FrameInfo, FrameKind, MetaError, MetaLog, Record,
    Superblock, FORMAT_VERSION, SUPERBLOCK_LEN,
};

const META_ZONES: u32 = 3;

/// A log in zone 0 with `syncs` small batches (no roll), and the model after each.
fn small_log(syncs: usize) -> (Arc<MemDevice>, Harness, Vec<Model>) {
    let (mem, dev) = mem_device(small_geometry());
    let mut h = Harness::format(dev, META_ZONES, 7);
    let mut models = vec![h.work.model.clone()];
    for _ in 0..syncs {
        h.append_one();
        h.append_one();
        h.sync().unwrap();
        models.push(h.work.model.clone());
    }
    assert_eq!(h.log.active_zone(), 0, "the test log must not roll");
    (mem, h, models)
}

/// Frames of the delta batches of a zone, one vector per batch (commit included).
fn batches(dev: &dyn ZonedDevice, zone: u32) -> Vec<Vec<FrameInfo>> {
    let dump = dump_zone(dev, zone).unwrap();
    assert_eq!(dump.stopped, None);
    let mut out = vec![];
    let mut cur = vec![];
    for f in dump.frames.into_iter().skip(2) {
        cur.push(f);
        if f.kind == FrameKind::Commit {
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

fn recover(h: &Harness) -> Result<(zonefs::meta::FsState, MetaLog), MetaError> {
    MetaLog::recover(h.dev.clone(), META_ZONES)
}

/// After a mount that dropped a damaged tail, the log must keep working.
fn keeps_working(h: &Harness, model: Model) {
    let (state, log) = recover(h).unwrap();
    model.assert_matches(&state);
    let mut h = Harness::resume(h.dev.clone(), log, state, model, 99);
    h.run(20).unwrap();
    let (state, _) = recover(&h).unwrap();
    h.work.model.assert_matches(&state);
}

#[test]
fn every_bit_flip_in_a_middle_record_is_corruption() {
    let (_, h, _) = small_log(5);
    let victim = batches(h.dev.as_ref(), 0)[2][0];
    for bit in 0..victim.len * 8 {
        let (_, h, _) = small_log(5);
        let at = (victim.offset + bit / 8) as usize;
        rewrite_zone(h.dev.as_ref(), 0, |b| b[at] ^= 1 << (bit % 8));
        match recover(&h) {
            Err(MetaError::Corrupt { zone, offset, .. }) => {
                assert_eq!((zone, offset), (0, victim.offset), "bit {bit}");
            }
            other => panic!("bit {bit}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn bit_flip_in_the_last_batch_is_an_ignored_torn_tail() {
    for frame in 0..3 {
        let (_, h, models) = small_log(5);
        let last = batches(h.dev.as_ref(), 0)[4].clone();
        let victim = last[frame.min(last.len() - 1)];
        rewrite_zone(h.dev.as_ref(), 0, |b| {
            b[victim.offset as usize + 10] ^= 0x10
        });
        let (state, log) = recover(&h).unwrap();
        models[4].assert_matches(&state);
        let report = log.mount_report().unwrap();
        assert_eq!(report.torn_tail, Some(last[0].offset));
        assert!(report.rolled, "mount must not append after a torn tail");
        drop(log);
        keeps_working(&h, models[4].clone());
    }
}

#[test]
fn truncated_last_batch_is_an_ignored_torn_tail() {
    let (_, mut h, _) = small_log(3);
    let before = h.work.model.clone();
    for _ in 0..120 {
        h.append_one();
    }
    h.sync().unwrap();
    let last = batches(h.dev.as_ref(), 0)[3].clone();
    let end = last.last().unwrap().offset + last.last().unwrap().len;
    assert!(
        end - last[0].offset > 4096,
        "the last batch must span blocks"
    );
    // Cut inside a record: every byte after the cut reads as zero, as unwritten space.
    for cut in [
        last[0].offset + 4096,
        last[1].offset + 5,
        last[0].offset + 1,
    ] {
        let (_, mut g, _) = small_log(3);
        for _ in 0..120 {
            g.append_one();
        }
        g.sync().unwrap();
        rewrite_zone(g.dev.as_ref(), 0, |b| b.truncate(cut as usize));
        let (state, log) = recover(&g).unwrap();
        before.assert_matches(&state);
        assert_eq!(log.mount_report().unwrap().torn_tail, Some(last[0].offset));
    }
}

#[test]
fn truncated_record_followed_by_valid_batches_is_corruption() {
    let (_, h, _) = small_log(5);
    let victim = batches(h.dev.as_ref(), 0)[1][0];
    let from = (victim.offset + victim.len / 2) as usize;
    let to = (victim.offset + victim.len) as usize;
    rewrite_zone(h.dev.as_ref(), 0, |b| b[from..to].fill(0));
    assert!(matches!(
        recover(&h),
        Err(MetaError::Corrupt { zone: 0, offset, .. }) if offset == victim.offset
    ));
}

#[test]
fn a_missing_batch_is_corruption() {
    let (_, h, _) = small_log(5);
    let lost = batches(h.dev.as_ref(), 0)[2].clone();
    let from = lost[0].offset as usize;
    rewrite_zone(h.dev.as_ref(), 0, |b| b[from..from + 4096].fill(0));
    assert!(matches!(
        recover(&h),
        Err(MetaError::Corrupt { zone: 0, .. })
    ));
}

/// A roll interrupted after its snapshot was durable but before the old zone was reset
/// leaves two generations. Damage to the newer superblock falls back to the older one.
#[test]
fn damaged_newest_superblock_falls_back_to_the_older_generation() {
    let (mem, mut h, models) = small_log(4);
    h.append_one();
    // Roll: write zone 1, device sync, then the cut hits the reset of zone 0.
    mem.schedule_power_cut(2, TearMode::Drop);
    let rolled = h.log.roll_now(&h.state);
    assert!(rolled.unwrap_err().is_power_loss());
    mem.restart();
    // Zone 0 holds generation 1, zone 1 generation 2; damage generation 2's superblock.
    rewrite_zone(h.dev.as_ref(), 1, |b| b[50] ^= 4);
    let (state, log) = recover(&h).unwrap();
    models[4].assert_matches(&state);
    let report = log.mount_report().unwrap();
    assert_eq!(report.zone, 0);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].0, 1);
    drop(log);
    keeps_working(&h, models[4].clone());
}

#[test]
fn newer_generation_wins_over_a_leftover_older_one() {
    let (mem, mut h, _) = small_log(4);
    h.append_one();
    let rolled_model = h.work.model.clone();
    mem.schedule_power_cut(2, TearMode::Drop);
    assert!(h.log.roll_now(&h.state).unwrap_err().is_power_loss());
    mem.restart();
    let (state, log) = recover(&h).unwrap();
    rolled_model.assert_matches(&state);
    assert_eq!(log.mount_report().unwrap().zone, 1);
    // Mount erased the leftover generation.
    assert!(dump_zone(h.dev.as_ref(), 0).unwrap().superblock.is_none());
}

#[test]
fn damaged_superblock_without_an_older_generation_is_an_error() {
    let (_, h, _) = small_log(3);
    rewrite_zone(h.dev.as_ref(), 0, |b| b[20] ^= 1);
    match recover(&h) {
        Err(MetaError::Corrupt {
            zone: 0,
            offset: 0,
            reason,
        }) => {
            assert!(reason.contains("checksum"), "{reason}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn damaged_snapshot_without_an_older_generation_is_an_error() {
    let (_, h, _) = small_log(3);
    rewrite_zone(h.dev.as_ref(), 0, |b| b[SUPERBLOCK_LEN + 30] ^= 1);
    assert!(matches!(
        recover(&h),
        Err(MetaError::Corrupt { zone: 0, offset, .. }) if offset == SUPERBLOCK_LEN as u64
    ));
}

#[test]
fn a_well_formed_record_that_cannot_apply_is_corruption() {
    let (_, mut h, _) = small_log(2);
    // Logged without being applied: deleting a file that never existed.
    h.log
        .append(&Record::FileDelete { id: FileId(4242) })
        .unwrap();
    h.sync().unwrap();
    match recover(&h) {
        Err(MetaError::Corrupt { reason, .. }) => {
            assert!(reason.contains("cannot be applied"), "{reason}")
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn blank_or_foreign_devices_are_not_formatted() {
    let (_, dev) = mem_device(small_geometry());
    assert!(matches!(
        MetaLog::recover(dev.clone(), META_ZONES),
        Err(MetaError::NotFormatted)
    ));
    dev.write(0, &[0xa5; 4096], IoCategory::User).unwrap();
    assert!(matches!(
        MetaLog::recover(dev, META_ZONES),
        Err(MetaError::NotFormatted)
    ));
}

#[test]
fn superblocks_of_another_geometry_or_layout_are_refused() {
    let (_, h, _) = small_log(2);
    let mut zone0 = vec![0u8; 8192];
    h.dev.read(0, &mut zone0, IoCategory::User).unwrap();
    let (_, bigger) = mem_device(Geometry::new(12, 64 << 10));
    bigger.write(0, &zone0, IoCategory::User).unwrap();
    match MetaLog::recover(bigger, META_ZONES) {
        Err(MetaError::GeometryMismatch {
            zone: 0,
            field,
            on_disk: 10,
            expected: 12,
        }) => assert_eq!(field, "zone count"),
        other => panic!("expected a geometry mismatch, got {other:?}"),
    }
    assert!(matches!(
        MetaLog::recover(h.dev.clone(), META_ZONES + 1),
        Err(MetaError::GeometryMismatch {
            field: "metadata zone count",
            ..
        })
    ));
}

#[test]
fn older_and_newer_format_versions_are_refused() {
    assert_eq!(FORMAT_VERSION, 2);
    for version in [1, FORMAT_VERSION + 1] {
        let (_, h, _) = small_log(1);
        let mut sb = Superblock::new(&h.dev.geometry(), META_ZONES, 0, 1);
        sb.version = version;
        rewrite_zone(h.dev.as_ref(), 0, |b| {
            b[..SUPERBLOCK_LEN].copy_from_slice(&sb.encode())
        });
        // The probe reports the version as found; recovery refuses it, read-only or not.
        assert_eq!(probe(h.dev.as_ref()).unwrap().version(), version);
        let read_only = MetaLog::recover_read_only(h.dev.clone(), META_ZONES);
        for result in [recover(&h).map(|_| ()), read_only.map(|_| ())] {
            match result {
                Err(
                    e @ MetaError::UnsupportedVersion {
                        zone: 0,
                        found,
                        supported: 2,
                    },
                ) => {
                    assert_eq!(found, version);
                    assert_eq!(
                        e.to_string(),
                        format!(
                            "metadata zone 0: format version {version} is not supported \
                             (this build reads version 2 only); reformat the device"
                        )
                    );
                }
                other => panic!("version {version}: expected a refusal, got {other:?}"),
            }
        }
    }
}

#[test]
fn metadata_zone_counts_are_checked() {
    let (_, dev) = mem_device(small_geometry());
    for bad in [0, 1, 10, 11] {
        assert!(matches!(
            MetaLog::format(dev.clone(), bad),
            Err(MetaError::BadMetaZoneCount { .. })
        ));
    }
    MetaLog::format(dev, 9).unwrap();
}

#[test]
fn a_snapshot_larger_than_a_zone_is_out_of_metadata_space() {
    let (_, mut h, _) = small_log(1);
    let mut last_ok = h.work.model.clone();
    let err = loop {
        let id = h.state.next_file_id();
        let meta = FileMeta::new(format!("{}-{}", "x".repeat(2000), id.0), FileKind::Other);
        let rec = Record::FileUpdate { id, meta };
        h.state.apply(&rec).unwrap();
        h.work.model.apply(&rec);
        h.log.append(&rec).unwrap();
        match h.log.sync(&h.state) {
            Ok(()) => last_ok = h.work.model.clone(),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(err, MetaError::OutOfMetaSpace { capacity: 65536, needed } if needed > 65536),
        "{err}"
    );
    let (state, _) = recover(&h).unwrap();
    last_ok.assert_matches(&state);
}

#[test]
fn a_file_backed_device_keeps_the_metadata_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zns.img");
    let expected = {
        let dev: Arc<dyn ZonedDevice> =
            Arc::new(zns::FileDevice::create(&path, small_geometry()).unwrap());
        let mut h = Harness::format(dev, META_ZONES, 3);
        h.run(40).unwrap();
        h.append_one(); // never synced: lost
        assert!(h.log.stats().rolls > 0);
        h.history[&h.last_ok].clone()
    };
    let dev: Arc<dyn ZonedDevice> = Arc::new(zns::FileDevice::open(&path).unwrap());
    let (state, _) = MetaLog::recover(dev, META_ZONES).unwrap();
    expected.assert_matches(&state);
}
