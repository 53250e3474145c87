//! Damaged files: a flipped bit in an SST, the manifest or a WAL (anywhere, the last
//! record included) is a checksum error on open or on read with the default options, never
//! a panic and never a wrong value. `db_wal_recovery` covers the other WAL recovery modes.

mod support;

use std::sync::Arc;

use support::*;
use zkv_engine::db::{Db, WriteOptions};
use zkv_engine::version::CURRENT;
use zkv_engine::Error;
use zkv_zns::ZonedDevice;
use zkv_zonefs::fs::ZoneFs;

/// A database holding `table_model()` in one SST, closed; returns the device and the SST's
/// name.
fn closed_table() -> (Arc<dyn ZonedDevice>, String) {
    let (_, fs, db, name) = one_table();
    db.close().unwrap();
    (Arc::clone(fs.device()), name)
}

/// Flips one bit of `name` with the file system unmounted, then mounts again.
fn damage(dev: &Arc<dyn ZonedDevice>, name: &str, offset: u64, bit: u8) -> Arc<ZoneFs> {
    let fs = mount(dev, fs_options());
    flip_file_bit(&fs, dev.as_ref(), name, offset, bit);
    drop(fs);
    mount(dev, fs_options())
}

#[test]
fn sst_bit_flips_are_checksum_errors() {
    let (dev, name) = closed_table();
    let size = mount(&dev, fs_options()).file_info(&name).unwrap().size;
    let mut detected = 0;
    let offsets: Vec<u64> = (0..size).step_by(37).chain([size - 1, size - 20]).collect();
    for (i, &offset) in offsets.iter().enumerate() {
        let (dev, name) = closed_table();
        let fs = damage(&dev, &name, offset, (i % 8) as u8);
        match Db::open(fs, table_options()) {
            Ok(db) => {
                detected += u32::from(read_checked(&db, &table_model(), Error::is_corruption) > 0)
            }
            Err(e) => {
                assert!(e.is_corruption(), "open: {e}");
                detected += 1;
            }
        }
    }
    // Every byte of a table is under a checksum (blocks, index, filter, properties,
    // footer).
    assert_eq!(detected as usize, offsets.len(), "flips detected");
    println!("SST: {} flips, every one a corruption error", offsets.len());
}

/// A database with several manifest records (one per flush), closed.
fn several_edits() -> Arc<dyn ZonedDevice> {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), table_options()).unwrap();
    for (i, (k, v)) in table_model().into_iter().enumerate() {
        db.put(&WriteOptions::default(), &k, &v).unwrap();
        if i % 100 == 99 {
            db.flush().unwrap();
        }
    }
    db.close().unwrap();
    dev
}

fn manifest_name(fs: &ZoneFs) -> String {
    let current = fs.open(CURRENT).unwrap().read_all().unwrap();
    String::from_utf8(current).unwrap().trim().to_string()
}

#[test]
fn manifest_bit_flips_are_corruption() {
    let dev = several_edits();
    let fs = mount(&dev, fs_options());
    let manifest = manifest_name(&fs);
    let size = fs.file_info(&manifest).unwrap().size;
    drop(fs);
    // Every byte, the last record's included: a manifest is read strictly.
    for offset in 0..size {
        let dev = several_edits();
        let fs = damage(&dev, &manifest, offset, (offset % 8) as u8);
        match Db::open(fs, table_options()) {
            Err(e) => assert!(e.is_corruption(), "offset {offset}: {e}"),
            Ok(db) => panic!("offset {offset}: opened {:?}", db.live_files().len()),
        }
    }
    println!("manifest: {size} flips, every one a corruption error");
}

/// A database whose writes are only in its WAL (synced, no flush), closed.
fn wal_only(batches: u64) -> (Arc<dyn ZonedDevice>, String) {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), table_options()).unwrap();
    for k in 0..batches {
        db.put(&WriteOptions::synced(), &table_key(k), &value(k, 50))
            .unwrap();
    }
    db.close().unwrap();
    let wal = the_wal(&fs);
    (dev, wal)
}

#[test]
fn wal_bit_flips_are_corruption_even_in_the_last_record() {
    let (dev, wal) = wal_only(20);
    let size = mount(&dev, fs_options()).file_info(&wal).unwrap().size;
    // Every byte of every record, the last one's included.
    for offset in 0..size {
        let (dev, wal) = wal_only(20);
        let fs = damage(&dev, &wal, offset, (offset % 8) as u8);
        let err = Db::open(fs, table_options()).unwrap_err();
        assert!(err.is_corruption(), "offset {offset}: {err}");
        assert!(err.to_string().contains(&wal), "offset {offset}: {err}");
    }
    println!("WAL: {size} flips, every one a corruption error");
}
