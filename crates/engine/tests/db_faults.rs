//! The wider fault model, with the database running: bit rot of stored data (found by the
//! checksums, reported, never returned as data), persistent read and write errors (clean
//! errors, nothing acknowledged lost), and running out of space inside a compaction.

mod support;

use std::sync::Arc;

use support::*;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_engine::Error;
use zkv_zns::{FaultControl, FaultOp, TearMode};

/// Bit rot while the database runs, anywhere in a table: a read of the damaged part is a
/// corruption error, every other read returns the right value. The store is not reopened:
/// the damage happens under a running database, which re-validates what it reads.
#[test]
fn bit_rot_under_a_running_database_is_a_corruption_error() {
    let (_, fs, db, name) = one_table();
    let size = fs.file_info(&name).unwrap().size;
    drop(db);
    let mut detected = 0;
    let offsets: Vec<u64> = (0..size).step_by(397).chain([size - 1]).collect();
    for (i, &offset) in offsets.iter().enumerate() {
        let (mem, fs, db, name) = one_table();
        // Reads from the table before the damage (the table is open and cached).
        assert_eq!(read_checked(&db, &table_model(), |_| false), 0);
        mem.rot(file_addr(&fs, &name, offset), (i % 8) as u8)
            .unwrap();
        detected += usize::from(read_checked(&db, &table_model(), Error::is_corruption) > 0);
    }
    // Blocks are checked when read; the footer, index and filter were read at open and are
    // not read again, so a flip there is found at the next open (db_corruption covers it).
    assert!(
        detected * 2 > offsets.len(),
        "{detected} of {} flips detected",
        offsets.len()
    );
    println!(
        "SST bit rot while running: {} flips, {detected} found by reads, none read as data",
        offsets.len()
    );
}

/// With a block cache, blocks read before the damage are served from the cache (the copy
/// validated when it was read); nothing damaged is ever returned as data.
#[test]
fn bit_rot_behind_the_block_cache_never_reads_as_data() {
    let options = Options {
        block_cache_size: 1 << 20,
        ..table_options()
    };
    let (_, fs, db, name) = one_table_with(options.clone());
    let size = fs.file_info(&name).unwrap().size;
    drop(db);
    for (i, offset) in (0..size).step_by(397).enumerate() {
        let (mem, fs, db, name) = one_table_with(options.clone());
        assert_eq!(read_checked(&db, &table_model(), |_| false), 0);
        mem.rot(file_addr(&fs, &name, offset), (i % 8) as u8)
            .unwrap();
        // Every data block is cached: the reads meet no damage and return the data.
        assert_eq!(
            read_checked(&db, &table_model(), |_| false),
            0,
            "offset {offset}"
        );
    }
}

/// A zone that cannot be read: every read of the table in it fails with a clean error,
/// never "not found" and never a wrong value; once the medium answers again, everything
/// is there.
#[test]
fn persistent_read_errors_are_errors_never_missing_keys() {
    let (mem, fs, db, name) = one_table();
    let zone = fs
        .metadata()
        .files()
        .find(|(_, m)| m.name == name)
        .unwrap()
        .1
        .extents[0]
        .zone;
    mem.inject_persistent(FaultOp::Read, Some(zone));
    let failed = read_checked(&db, &table_model(), |e| e.to_string().contains("injected"));
    assert!(failed as u64 > TABLE_KEYS / 2, "{failed} reads failed");
    mem.clear_injection();
    assert_eq!(read_checked(&db, &table_model(), |_| false), 0);
}

/// A device whose writes fail for good: writes return errors (no panic), reads keep
/// working, and after the medium is replaced (the error cleared) and a power cut, every
/// acknowledged write is there and nothing deleted came back.
#[test]
fn persistent_write_errors_lose_nothing_acknowledged() {
    for mode in [ExecMode::Deterministic, ExecMode::Threaded] {
        let (mem, dev) = device(32, 256);
        let fs = format(&dev, fs_options());
        let db = Db::open(Arc::clone(&fs), tiny_options(mode)).unwrap();
        let mut model = Model::new();
        let sync = WriteOptions::synced();
        for k in 0..400u64 {
            if k == 250 {
                mem.inject_persistent(FaultOp::Write, None);
            }
            let (key, v) = (table_key(k % 150), value(k, 40));
            let r = if k % 7 == 3 {
                db.delete(&sync, &key).map(|()| model.remove(&key))
            } else {
                db.put(&sync, &key, &v)
                    .map(|()| model.insert(key, v.clone()))
            };
            if let Err(e) = r {
                assert!(k >= 250, "{mode:?}: write {k} failed before the fault: {e}");
            }
        }
        // Reads still work on what is there.
        let seen = scan_all(&db, &ReadOptions::default());
        for (k, v) in &seen {
            assert_eq!(model.get(k), Some(v), "{mode:?}: {k:?}");
        }
        drop(db);
        drop(fs);
        mem.power_cut(TearMode::Drop);
        mem.restart();
        let fs = mount(&dev, fs_options());
        let db = Db::open(fs, tiny_options(mode)).unwrap();
        assert_eq!(scan_all(&db, &ReadOptions::default()), model, "{mode:?}");
    }
}

/// A device too small for the data: the compaction (or flush) that runs out of space fails
/// with a clean out-of-space error, and every write acknowledged before it is readable,
/// now and after a reopen.
#[test]
fn out_of_space_inside_a_compaction_is_a_clean_error() {
    let (_mem, dev) = device(12, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), tiny_options(ExecMode::Deterministic)).unwrap();
    // Cleaning reclaims the padding of the synced WAL writes; the live data alone grows
    // past the device.
    db.set_inline_cleaning(true);
    let mut model = Model::new();
    let mut failure = None;
    for k in 0..100_000u64 {
        let (key, v) = (
            table_key(k.wrapping_mul(2_654_435_761) % 6000),
            value(k, 200),
        );
        match db.put(&WriteOptions::synced(), &key, &v) {
            Ok(()) => {
                model.insert(key, v);
            }
            Err(e) => {
                failure = Some((e, key, v));
                break;
            }
        }
    }
    let (e, key, v) = failure.expect("the device never filled");
    // The failed put may have been applied (its WAL record and memtable insert came
    // before the background step that failed): either outcome is right.
    let got = db.get(&ReadOptions::default(), &key).unwrap();
    if got.as_ref() == Some(&v) {
        model.insert(key, v);
    }
    assert!(e.to_string().contains("out of space"), "{e}");
    let stats = db.stats();
    assert!(
        stats.compactions > 0,
        "no compaction ran before the device filled: {e}, {stats:?}"
    );
    same(
        &scan_all(&db, &ReadOptions::default()),
        &model,
        &format!("open, after: {e}"),
    );
    drop(db);
    drop(fs);
    let fs = mount(&dev, fs_options());
    let db = Db::open_read_only(fs, tiny_options(ExecMode::Deterministic)).unwrap();
    same(&scan_all(&db, &ReadOptions::default()), &model, "reopened");
}

/// Asserts two models are equal, naming the first keys that differ.
fn same(got: &Model, want: &Model, context: &str) {
    let keys: std::collections::BTreeSet<&Vec<u8>> = got.keys().chain(want.keys()).collect();
    let diff: Vec<String> = keys
        .into_iter()
        .filter(|k| got.get(*k) != want.get(*k))
        .take(5)
        .map(|k| {
            let show = |m: &Model| m.get(k).map(|v| v.len());
            format!(
                "{} (got {:?}, want {:?})",
                String::from_utf8_lossy(k),
                show(got),
                show(want)
            )
        })
        .collect();
    assert!(
        diff.is_empty(),
        "{context}: {} keys differ, first {diff:?}",
        diff.len()
    );
}
