//! Shared support of the engine's tests: small zoned devices, tiny LSM options that make
//! flushes and compactions happen after a few writes, and readers of the whole database.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_engine::Error;
use zkv_zns::{Geometry, IoCategory, MemDevice, ZoneState, ZonedDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

pub const KIB: u64 = 1024;

/// `zones` zones of `zone_kib` KiB, 4 KiB blocks, ZN540-like open/active limits.
pub fn device(zones: u32, zone_kib: u64) -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
    let geo = Geometry::new(zones, zone_kib * KIB)
        .with_block_size(4096)
        .with_limits(14, 14);
    let mem = Arc::new(MemDevice::new(geo).expect("valid geometry"));
    let dev: Arc<dyn ZonedDevice> = mem.clone();
    (mem, dev)
}

pub fn fs_options() -> FsOptions {
    FsOptions::default().with_meta_zones(2)
}

pub fn format(dev: &Arc<dyn ZonedDevice>, opts: FsOptions) -> Arc<ZoneFs> {
    Arc::new(ZoneFs::format(dev.clone(), opts).expect("format"))
}

pub fn mount(dev: &Arc<dyn ZonedDevice>, opts: FsOptions) -> Arc<ZoneFs> {
    Arc::new(ZoneFs::mount(dev.clone(), opts).expect("mount"))
}

/// Options small enough that a few hundred writes flush, compact (into L1, L2, L3) and
/// move files: 4 KiB memtables, 4 KiB SSTs of 512-byte blocks, L1 of 12 KiB, × 4 per level,
/// L0 compaction at 2 files.
pub fn tiny_options(mode: ExecMode) -> Options {
    Options {
        write_buffer_size: 4096,
        target_file_size_base: 4096,
        max_bytes_for_level_base: 12 * KIB,
        max_bytes_for_level_multiplier: 4.0,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 8,
        level0_stop_writes_trigger: 12,
        num_levels: 5,
        block_size: 512,
        mode,
        ..Options::default()
    }
}

/// Every key and value of the database, through an iterator.
pub fn scan_all(db: &Db, opts: &ReadOptions<'_>) -> Model {
    let mut out = Model::new();
    for item in db.iter(opts).expect("iterator") {
        let (k, v) = item.expect("iterate");
        out.insert(k, v);
    }
    out
}

/// Panics unless the database holds exactly `model` (by scan and by point reads of every
/// key of `keys`).
pub fn assert_holds(db: &Db, model: &Model, keys: &[Vec<u8>], context: &str) {
    let ro = ReadOptions::default();
    assert_eq!(&scan_all(db, &ro), model, "{context}: scan");
    for k in keys {
        let got = db.get(&ro, k).expect("get");
        assert_eq!(got.as_ref(), model.get(k), "{context}: get {k:?}");
    }
}

/// A value of `len` bytes determined by `seed`.
pub fn value(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| ((seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 17) ^ (i * 31)) as u8)
        .collect()
}

/// Rewrites a zone's written bytes after `f` changed them (a zone is only rewritable
/// whole): a way to damage stored data on purpose. The file system must not be mounted.
/// Key `k` of the churn tests: `key0042`.
pub fn churn_key(k: u64) -> Vec<u8> {
    format!("key{k:04}").into_bytes()
}

/// `ops` random writes over keys `0..keys` (values of 20..120 bytes), a `deletes` share of
/// them deletes (none drawn when 0); returns the model of what they leave.
pub fn churn(db: &Db, seed: u64, ops: u64, keys: u64, deletes: f64) -> Model {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut model = Model::new();
    let wo = WriteOptions::default();
    for i in 0..ops {
        let k = churn_key(rng.random_range(0..keys));
        if deletes > 0.0 && rng.random_bool(deletes) {
            db.delete(&wo, &k).unwrap();
            model.remove(&k);
        } else {
            let v = value(seed * 100_000 + i, rng.random_range(20..120));
            db.put(&wo, &k, &v).unwrap();
            model.insert(k, v);
        }
    }
    model
}

pub fn rewrite_zone(dev: &dyn ZonedDevice, zone: u32, f: impl FnOnce(&mut Vec<u8>)) {
    let geo = dev.geometry();
    let info = dev.zone_info(zone).unwrap();
    let len = match info.state {
        ZoneState::Full => geo.zone_capacity,
        _ => info.written(),
    };
    let mut bytes = vec![0u8; len as usize];
    dev.read(info.start, &mut bytes, IoCategory::User).unwrap();
    f(&mut bytes);
    let block = geo.block_size as usize;
    bytes.resize(bytes.len().div_ceil(block) * block, 0);
    dev.reset_zone(zone).unwrap();
    if !bytes.is_empty() {
        dev.write(info.start, &bytes, IoCategory::User).unwrap();
    }
    dev.sync().unwrap();
}

/// Where byte `offset` of file `name` lies: its zone and the offset in that zone.
fn file_location(fs: &ZoneFs, name: &str, offset: u64) -> (u32, u64) {
    let state = fs.metadata();
    let (_, meta) = state
        .files()
        .find(|(_, m)| m.name == name)
        .unwrap_or_else(|| panic!("no file {name}"));
    let mut at = offset;
    for e in &meta.extents {
        if at < e.len {
            return (e.zone, e.offset + at);
        }
        at -= e.len;
    }
    panic!("offset {offset} is beyond file {name}");
}

/// The device address of byte `offset` of file `name`.
pub fn file_addr(fs: &ZoneFs, name: &str, offset: u64) -> u64 {
    let (zone, pos) = file_location(fs, name, offset);
    fs.device().geometry().zone_start(zone) + pos
}

/// Flips bit `bit` of byte `offset` of file `name` on the device (unmounted after this).
pub fn flip_file_bit(fs: &ZoneFs, dev: &dyn ZonedDevice, name: &str, offset: u64, bit: u8) {
    let (zone, pos) = file_location(fs, name, offset);
    rewrite_zone(dev, zone, |bytes| bytes[pos as usize] ^= 1 << bit);
}

/// Reads every key of `want` with `get` and scans the whole store: every value returned
/// must be the one `want` holds. Returns how many errors showed (each must satisfy
/// `is_expected`); a scan stops at its first error.
pub fn read_checked(db: &Db, want: &Model, is_expected: impl Fn(&Error) -> bool) -> usize {
    let ro = ReadOptions::default();
    let mut errors = 0;
    let mut note = |e: Error| {
        assert!(is_expected(&e), "unexpected error: {e}");
        errors += 1;
    };
    for k in want.keys() {
        match db.get(&ro, k) {
            Ok(got) => assert_eq!(got.as_ref(), want.get(k), "get {k:?}"),
            Err(e) => note(e),
        }
    }
    match db.iter(&ro) {
        Ok(it) => {
            for item in it {
                match item {
                    Ok((k, v)) => assert_eq!(Some(&v), want.get(&k), "scan {k:?}"),
                    Err(e) => {
                        note(e);
                        break;
                    }
                }
            }
        }
        Err(e) => note(e),
    }
    errors
}

/// Names and sizes of every file.
pub fn file_list(fs: &ZoneFs) -> Vec<(String, u64)> {
    fs.list().into_iter().map(|f| (f.name, f.size)).collect()
}

/// Every file's content.
pub fn file_contents(fs: &ZoneFs) -> BTreeMap<String, Vec<u8>> {
    fs.list()
        .into_iter()
        .map(|f| {
            let data = fs.open(&f.name).unwrap().read_all().unwrap();
            (f.name, data)
        })
        .collect()
}

/// Names of the SST files.
pub fn ssts(fs: &ZoneFs) -> Vec<String> {
    files_ending(fs, ".sst")
}

/// The name of the one WAL on `fs`.
pub fn the_wal(fs: &ZoneFs) -> String {
    let wals = files_ending(fs, ".log");
    assert_eq!(wals.len(), 1, "{wals:?}");
    wals[0].clone()
}

fn files_ending(fs: &ZoneFs, suffix: &str) -> Vec<String> {
    fs.list()
        .into_iter()
        .map(|f| f.name)
        .filter(|n| n.ends_with(suffix))
        .collect()
}

/// Keys of the one-table fixture: `key0000` ...
pub fn table_key(k: u64) -> Vec<u8> {
    format!("key{k:04}").into_bytes()
}

/// Keys in the one-table fixture.
pub const TABLE_KEYS: u64 = 300;

/// What the one-table fixture holds.
pub fn table_model() -> Model {
    (0..TABLE_KEYS)
        .map(|k| (table_key(k), value(k, 50)))
        .collect()
}

/// Options of the one-table fixture: one memtable holds everything, so `flush` writes one
/// table.
/// No block cache: the fault tests that use these options damage the device under a
/// running database and expect its reads to meet the damage.
pub fn table_options() -> Options {
    Options {
        write_buffer_size: 1 << 20,
        block_cache_size: 0,
        ..tiny_options(ExecMode::Deterministic)
    }
}

/// An open database holding `table_model()` in one SST, with its device, file system and
/// the SST's name.
pub fn one_table() -> (Arc<MemDevice>, Arc<ZoneFs>, Db, String) {
    one_table_with(table_options())
}

/// [`one_table`] with other options.
pub fn one_table_with(options: Options) -> (Arc<MemDevice>, Arc<ZoneFs>, Db, String) {
    let (mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    for (k, v) in table_model() {
        db.put(&zkv_engine::db::WriteOptions::default(), &k, &v)
            .unwrap();
    }
    db.flush().unwrap();
    let tables = ssts(&fs);
    assert_eq!(tables.len(), 1, "{tables:?}");
    let name = tables[0].clone();
    (mem, fs, db, name)
}
