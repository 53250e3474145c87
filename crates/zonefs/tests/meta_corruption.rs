//! Damaged metadata: what mount does with bit flips, truncations, foreign superblocks.
//! Every batch and the superblock are stored twice: damage to one copy is repaired from the
//! other and reported. A last write cut short is an interrupted write and is ignored; both
//! copies damaged with valid records after them is corruption, never replayed around.

mod common;

use std::sync::Arc;

use common::{mem_device, rewrite_zone, small_geometry, Harness, Model};
use zkv_zns::{FaultControl, Geometry, IoCategory, MemDevice, TearMode, ZonedDevice};
use zkv_zonefs::meta::{
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

/// Frames of the delta batches of a zone, one pair of copies per batch (commit included).
fn batches(dev: &dyn ZonedDevice, zone: u32) -> Vec<[Vec<FrameInfo>; 2]> {
    let dump = dump_zone(dev, zone).unwrap();
    assert_eq!(dump.stopped, None);
    let mut all = vec![];
    let mut cur = vec![];
    // The base (snapshot and commit) and its copy come first.
    for f in dump.frames.into_iter().skip(4) {
        cur.push(f);
        if f.kind == FrameKind::Commit {
            all.push(std::mem::take(&mut cur));
        }
    }
    assert_eq!(all.len() % 2, 0, "a batch without its copy");
    let mut pairs = vec![];
    let mut it = all.into_iter();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        assert_eq!(a.len(), b.len());
        pairs.push([a, b]);
    }
    pairs
}

fn recover(h: &Harness) -> Result<(zkv_zonefs::meta::FsState, MetaLog), MetaError> {
    MetaLog::recover(h.dev.clone(), META_ZONES)
}

/// After a mount that dropped a damaged tail or repaired a copy, the log must keep working.
fn keeps_working(h: &Harness, model: Model) {
    let (state, log) = recover(h).unwrap();
    model.assert_matches(&state);
    let mut h = Harness::resume(h.dev.clone(), log, state, model, 99);
    h.run(20).unwrap();
    let (state, _) = recover(&h).unwrap();
    h.work.model.assert_matches(&state);
}

/// Every bit of a middle record flipped in one copy: the other copy is used, nothing is
/// lost, the mount says where the damage was and rolls to a clean generation. The same
/// bit flipped in both copies is corruption at the first copy.
#[test]
fn every_bit_flip_in_one_copy_of_a_middle_record_is_repaired() {
    let (_, h, _) = small_log(5);
    let pair = batches(h.dev.as_ref(), 0)[2].clone();
    let victim = pair[0][0];
    for bit in 0..victim.len * 8 {
        for copies in [&[0][..], &[1], &[0, 1]] {
            let (_, h, models) = small_log(5);
            rewrite_zone(h.dev.as_ref(), 0, |b| {
                for c in copies {
                    let at = (pair[*c][0].offset + bit / 8) as usize;
                    b[at] ^= 1 << (bit % 8);
                }
            });
            match (copies.len(), recover(&h)) {
                (1, Ok((state, log))) => {
                    models[5].assert_matches(&state);
                    let report = log.mount_report().unwrap();
                    let at = pair[copies[0]][0].offset;
                    assert_eq!(report.repaired.len(), 1, "bit {bit}");
                    assert_eq!(report.repaired[0].0, at, "bit {bit}");
                    assert!(report.rolled, "a repaired zone is rewritten");
                }
                (2, Err(MetaError::Corrupt { zone, offset, .. })) => {
                    assert_eq!((zone, offset), (0, victim.offset), "bit {bit}");
                }
                (n, other) => panic!("bit {bit}, {n} copies: got {other:?}"),
            }
        }
    }
    println!(
        "metadata record: {} flips in one copy repaired, {} in both copies corruption",
        2 * victim.len * 8,
        victim.len * 8
    );
}

/// A bit flip in either copy of the last batch loses nothing; in both, the batch cannot be
/// told from a torn write and is dropped as one.
#[test]
fn bit_flips_in_the_last_batch() {
    for frame in 0..3 {
        for copies in [&[0][..], &[1], &[0, 1]] {
            let (_, h, models) = small_log(5);
            let pair = batches(h.dev.as_ref(), 0)[4].clone();
            rewrite_zone(h.dev.as_ref(), 0, |b| {
                for c in copies {
                    let victim = pair[*c][frame.min(pair[*c].len() - 1)];
                    b[victim.offset as usize + 10] ^= 0x10;
                }
            });
            let (state, log) = recover(&h).unwrap();
            let report = log.mount_report().unwrap();
            assert!(report.rolled, "mount must not append after damage");
            let expect = if copies.len() == 2 { 4 } else { 5 };
            models[expect].assert_matches(&state);
            if copies.len() == 2 {
                assert_eq!(report.torn_tail, Some(pair[0][0].offset));
            }
            drop(log);
            keeps_working(&h, models[expect].clone());
        }
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
    let after = h.work.model.clone();
    let pair = batches(h.dev.as_ref(), 0)[3].clone();
    let [first, second] = &pair;
    let end = first.last().unwrap().offset + first.last().unwrap().len;
    assert!(
        end - first[0].offset > 4096,
        "the last batch must span blocks"
    );
    // Cut inside a record: every byte after the cut reads as zero, as unwritten space.
    // Inside the first copy the batch is lost; inside the second the first one holds it.
    for (cut, model, tail) in [
        (first[0].offset + 4096, &before, first[0].offset),
        (first[1].offset + 5, &before, first[0].offset),
        (first[0].offset + 1, &before, first[0].offset),
        (second[0].offset + 4096, &after, second[0].offset),
        (second[1].offset + 5, &after, second[0].offset),
    ] {
        let (_, mut g, _) = small_log(3);
        for _ in 0..120 {
            g.append_one();
        }
        g.sync().unwrap();
        rewrite_zone(g.dev.as_ref(), 0, |b| b.truncate(cut as usize));
        let (state, log) = recover(&g).unwrap();
        model.assert_matches(&state);
        assert_eq!(log.mount_report().unwrap().torn_tail, Some(tail));
    }
}

#[test]
fn truncated_record_in_both_copies_followed_by_valid_batches_is_corruption() {
    let (_, h, _) = small_log(5);
    let pair = batches(h.dev.as_ref(), 0)[1].clone();
    rewrite_zone(h.dev.as_ref(), 0, |b| {
        for copy in &pair {
            let victim = copy[0];
            let from = (victim.offset + victim.len / 2) as usize;
            let to = (victim.offset + victim.len) as usize;
            b[from..to].fill(0);
        }
    });
    assert!(matches!(
        recover(&h),
        Err(MetaError::Corrupt { zone: 0, offset, .. }) if offset == pair[0][0].offset
    ));
}

#[test]
fn a_missing_batch_is_corruption() {
    let (_, h, _) = small_log(5);
    let lost = batches(h.dev.as_ref(), 0)[2].clone();
    let from = lost[0][0].offset as usize;
    let to = lost[1][0].offset as usize + 4096;
    rewrite_zone(h.dev.as_ref(), 0, |b| b[from..to].fill(0));
    assert!(matches!(
        recover(&h),
        Err(MetaError::Corrupt { zone: 0, .. })
    ));
}

/// A roll interrupted after its snapshot was durable but before the old zone was reset
/// leaves two generations. Damage to both copies of the newer superblock falls back to the
/// older one; damage to one is repaired from the other.
#[test]
fn damaged_newest_superblock() {
    for copies in [&[0usize][..], &[0, 1]] {
        let (mem, mut h, models) = small_log(4);
        h.append_one();
        let rolled_model = h.work.model.clone();
        // Roll: write zone 1, device sync, then the cut hits the reset of zone 0.
        mem.schedule_power_cut(2, TearMode::Drop);
        let rolled = h.log.roll_now(&h.state);
        assert!(rolled.unwrap_err().is_power_loss());
        mem.restart();
        // Zone 0 holds generation 1, zone 1 generation 2; damage generation 2's superblock.
        rewrite_zone(h.dev.as_ref(), 1, |b| {
            for c in copies {
                b[c * 4096 + 50] ^= 4;
            }
        });
        let (state, log) = recover(&h).unwrap();
        let report = log.mount_report().unwrap();
        if copies.len() == 2 {
            models[4].assert_matches(&state);
            assert_eq!(report.zone, 0);
            assert_eq!(report.skipped.len(), 1);
            assert_eq!(report.skipped[0].0, 1);
            drop(log);
            keeps_working(&h, models[4].clone());
        } else {
            rolled_model.assert_matches(&state);
            assert_eq!(report.zone, 1);
            assert_eq!(report.repaired[0].0, 0);
            assert!(report.rolled);
        }
    }
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
fn a_damaged_superblock_is_read_from_its_copy_and_both_damaged_is_an_error() {
    let (_, h, models) = small_log(3);
    rewrite_zone(h.dev.as_ref(), 0, |b| b[20] ^= 1);
    let (state, log) = recover(&h).unwrap();
    models[3].assert_matches(&state);
    assert!(log.mount_report().unwrap().rolled);
    // The probe finds the copy too: a flipped magic byte is not "not formatted".
    let (_, h, _) = small_log(3);
    rewrite_zone(h.dev.as_ref(), 0, |b| b[0] ^= 1);
    assert_eq!(probe(h.dev.as_ref()).unwrap().meta_zones(), META_ZONES);

    let (_, h, _) = small_log(3);
    rewrite_zone(h.dev.as_ref(), 0, |b| {
        b[20] ^= 1;
        b[4096 + 20] ^= 1;
    });
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
fn a_damaged_snapshot_is_read_from_its_copy_and_both_damaged_is_an_error() {
    let (_, h, models) = small_log(3);
    let snapshot = dump_zone(h.dev.as_ref(), 0).unwrap().frames[..4].to_vec();
    assert_eq!(snapshot[0].kind, FrameKind::Snapshot);
    assert_eq!(snapshot[2].kind, FrameKind::Snapshot);
    rewrite_zone(h.dev.as_ref(), 0, |b| {
        b[snapshot[0].offset as usize + 30] ^= 1
    });
    let (state, _) = recover(&h).unwrap();
    models[3].assert_matches(&state);

    let (_, h, _) = small_log(3);
    rewrite_zone(h.dev.as_ref(), 0, |b| {
        b[snapshot[0].offset as usize + 30] ^= 1;
        b[snapshot[2].offset as usize + 30] ^= 1;
    });
    assert!(matches!(
        recover(&h),
        Err(MetaError::Corrupt { zone: 0, offset, .. }) if offset == snapshot[0].offset
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
    assert_eq!(FORMAT_VERSION, 3);
    for version in [1, FORMAT_VERSION + 1] {
        let (_, h, _) = small_log(1);
        let mut sb = Superblock::new(&h.dev.geometry(), META_ZONES, 0, 1);
        sb.version = version;
        rewrite_zone(h.dev.as_ref(), 0, |b| {
            b[..SUPERBLOCK_LEN].copy_from_slice(&sb.encode());
            b[4096..4096 + SUPERBLOCK_LEN].copy_from_slice(&sb.encode());
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
                        oldest: 2,
                        newest: 3,
                    },
                ) => {
                    assert_eq!(found, version);
                    assert_eq!(
                        e.to_string(),
                        format!(
                            "metadata zone 0: format version {version} is not supported \
                             (this build reads versions 2 to 3); reformat the device"
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
            Arc::new(zkv_zns::FileDevice::create(&path, small_geometry()).unwrap());
        let mut h = Harness::format(dev, META_ZONES, 3);
        h.run(40).unwrap();
        h.append_one(); // never synced: lost
        assert!(h.log.stats().rolls > 0);
        h.history[&h.last_ok].clone()
    };
    let dev: Arc<dyn ZonedDevice> = Arc::new(zkv_zns::FileDevice::open(&path).unwrap());
    let (state, _) = MetaLog::recover(dev, META_ZONES).unwrap();
    expected.assert_matches(&state);
}

/// A metadata zone that claims data but reads zeros (what an interrupted zone reset once
/// left behind) must not hide the generation in the next zone, from the probe or a mount.
#[test]
fn a_zone_that_reads_zeros_does_not_hide_the_next_generation() {
    let (_, mut h, _) = small_log(1);
    while h.log.active_zone() == 0 {
        h.run(1).unwrap();
    }
    assert_eq!(h.dev.zone_info(0).unwrap().written(), 0);
    h.dev.write(0, &[0u8; 8192], IoCategory::Metadata).unwrap();
    let found = probe(h.dev.as_ref()).unwrap();
    assert_eq!((found.superblock.zone, found.meta_zones()), (1, META_ZONES));
    let (state, log) = recover(&h).unwrap();
    h.work.model.assert_matches(&state);
    assert_eq!(log.mount_report().unwrap().stale, vec![0]);
    assert_eq!(
        h.dev.zone_info(0).unwrap().written(),
        0,
        "the stale zone is reset"
    );
}
