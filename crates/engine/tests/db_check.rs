//! `check` and `salvage` against the corruption trials of `db_corruption`: a flipped bit in
//! any table, the manifest, CURRENT or a WAL is a damage finding naming the file, and a
//! salvage returns every key no damage finding covers, exactly.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use support::*;
use zkv_engine::db::{check, salvage, CheckReport, Db, Severity, WriteOptions};
use zkv_engine::version::CURRENT;
use zkv_zns::ZonedDevice;
use zkv_zonefs::fs::ZoneFs;

/// Keys written to the WAL only (after the last flush).
fn wal_key(k: u64) -> Vec<u8> {
    format!("wal{k:03}").into_bytes()
}

/// Three L0 tables of `table_model()`, then synced writes in the WAL: new keys, an
/// overwrite and a delete of table keys. Returns the closed store's device and its model.
fn store() -> (Arc<dyn ZonedDevice>, Model) {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), table_options()).unwrap();
    let mut model = table_model();
    for (i, (k, v)) in table_model().into_iter().enumerate() {
        db.put(&WriteOptions::default(), &k, &v).unwrap();
        if i % 100 == 99 {
            db.flush().unwrap();
        }
    }
    for k in 0..20 {
        db.put(&WriteOptions::synced(), &wal_key(k), &value(k, 40))
            .unwrap();
        model.insert(wal_key(k), value(k, 40));
    }
    db.put(&WriteOptions::synced(), &table_key(7), b"newer")
        .unwrap();
    model.insert(table_key(7), b"newer".to_vec());
    db.delete(&WriteOptions::synced(), &table_key(5)).unwrap();
    model.remove(&table_key(5));
    db.close().unwrap();
    (dev, model)
}

/// Every key the salvage hands over.
fn salvaged(fs: &Arc<ZoneFs>) -> (Model, CheckReport) {
    let mut got = BTreeMap::new();
    let report = salvage(fs, &table_options(), &mut |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        Ok(())
    })
    .unwrap();
    (got, report.check)
}

/// Whether a damage finding may have lost `key`: it lies in a finding's key range, or a
/// finding without one is about `file_of_key`'s kind of file (a WAL record holds unknown
/// keys; a lost manifest loses nothing by itself, the tables and WALs are all merged).
fn covered(report: &CheckReport, key: &[u8]) -> bool {
    report.damage().any(|f| match &f.keys {
        Some(r) => r.smallest.as_slice() <= key && key <= r.largest.as_slice(),
        None => {
            let wal = f.file.as_deref().is_some_and(|n| n.ends_with(".log"));
            wal && (key.starts_with(b"wal") || key == table_key(7) || key == table_key(5))
        }
    })
}

/// The salvage holds exactly the model outside what the damage covers.
fn assert_salvage_exact(fs: &Arc<ZoneFs>, model: &Model, context: &str) {
    let (got, report) = salvaged(fs);
    for (k, v) in model {
        if !covered(&report, k) {
            assert_eq!(
                got.get(k),
                Some(v),
                "{context}: key {:?}",
                String::from_utf8_lossy(k)
            );
        }
    }
    for k in got.keys() {
        assert!(
            model.contains_key(k) || covered(&report, k),
            "{context}: salvaged key {:?} is no key of the model",
            String::from_utf8_lossy(k)
        );
    }
}

/// Flips one bit of `name` in a fresh store; returns the store's file system and model.
fn damaged(name_of: impl Fn(&ZoneFs) -> String, offset: u64) -> (Arc<ZoneFs>, Model, String) {
    let (dev, model) = store();
    let fs = mount(&dev, fs_options());
    let name = name_of(&fs);
    flip_file_bit(&fs, dev.as_ref(), &name, offset, (offset % 8) as u8);
    drop(fs);
    (mount(&dev, fs_options()), model, name)
}

fn size_of(name_of: &impl Fn(&ZoneFs) -> String) -> u64 {
    let (dev, _) = store();
    let fs = mount(&dev, fs_options());
    fs.file_info(&name_of(&fs)).unwrap().size
}

#[test]
fn a_clean_store_checks_clean_and_salvages_whole() {
    let (dev, model) = store();
    let fs = mount(&dev, fs_options());
    let report = check(&fs, &table_options()).unwrap();
    assert_eq!(report.damage().count(), 0, "{:?}", report.findings);
    assert_eq!((report.tables, report.wals), (3, 1));
    assert_eq!(report.entries, 300);
    assert!(report.version_known);
    let (got, _) = salvaged(&fs);
    assert_eq!(got, model);
}

/// Runs the trials of one file: every `step`th byte and the last.
fn trials(what: &str, name_of: impl Fn(&ZoneFs) -> String, step: usize) {
    let size = size_of(&name_of);
    let offsets: Vec<u64> = (0..size).step_by(step).chain([size - 1]).collect();
    for &offset in &offsets {
        let (fs, model, name) = damaged(&name_of, offset);
        let context = format!("{what} {name}, offset {offset}");
        let report = check(&fs, &table_options()).unwrap();
        let damage: Vec<_> = report.damage().collect();
        assert!(!damage.is_empty(), "{context}: no damage found");
        let named = |f: &&zkv_engine::db::Finding| {
            f.file.as_deref() == Some(name.as_str()) || (what != "table" && f.file.is_none())
        };
        assert!(damage.iter().any(named), "{context}: {damage:?}");
        assert!(damage.iter().all(|f| f.severity == Severity::Damage));
        assert_salvage_exact(&fs, &model, &context);
    }
    println!("{what}: {} flips, every one found", offsets.len());
}

#[test]
fn every_table_flip_is_found_and_the_rest_salvaged() {
    for t in 0..3 {
        trials("table", move |fs| ssts(fs)[t].clone(), 37);
    }
}

#[test]
fn every_manifest_flip_is_found_and_everything_salvaged() {
    let manifest = |fs: &ZoneFs| {
        let current = fs.open(CURRENT).unwrap().read_all().unwrap();
        String::from_utf8(current).unwrap().trim().to_string()
    };
    trials("manifest", manifest, 1);
    trials("CURRENT", |_| CURRENT.to_string(), 1);
}

#[test]
fn every_wal_flip_is_found_and_the_tables_salvaged() {
    trials("WAL", the_wal, 3);
}
