//! BlobDB: with blob files on, the database holds exactly what a `BTreeMap` model holds
//! through puts, overwrites, deletes, flushes, compactions and reopens, in both modes;
//! blob files are dropped and deleted once all their blobs are garbage; blob garbage
//! collection relocates the blobs of the oldest files; a damaged blob is a clean error.

mod support;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::*;
use zkv_engine::blob::{parse_blob_file_name, BlobIndex};
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_zonefs::fs::ZoneFs;

fn blob_options(mode: ExecMode) -> Options {
    Options {
        enable_blob_files: true,
        min_blob_size: 64,
        blob_file_size: 8 * 1024,
        ..tiny_options(mode)
    }
}

/// The blob files on the file system.
fn blob_files_on(fs: &ZoneFs) -> Vec<u64> {
    let mut n: Vec<u64> = fs
        .list()
        .into_iter()
        .filter_map(|f| parse_blob_file_name(&f.name))
        .collect();
    n.sort_unstable();
    n
}

fn keys(model: &Model) -> Vec<Vec<u8>> {
    model.keys().cloned().collect()
}

#[test]
fn the_model_holds_with_blobs_through_reopens() {
    for mode in [ExecMode::Deterministic, ExecMode::Threaded] {
        let (_mem, dev) = device(64, 256);
        let fs = format(&dev, fs_options());
        let mut model = Model::new();
        for round in 0..3u64 {
            let db = Db::open(Arc::clone(&fs), blob_options(mode)).unwrap();
            assert_holds(
                &db,
                &model,
                &keys(&model),
                &format!("{mode:?} reopen {round}"),
            );
            // Values of 20..120 bytes: some inline, most in blob files.
            let mut rng = ChaCha8Rng::seed_from_u64(round);
            for i in 0..1500u64 {
                let k = churn_key(rng.random_range(0..300));
                if rng.random_bool(0.1) {
                    db.delete(&WriteOptions::default(), &k).unwrap();
                    model.remove(&k);
                } else {
                    let v = value(round * 10_000 + i, rng.random_range(20..120));
                    db.put(&WriteOptions::default(), &k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            let all: Vec<Vec<u8>> = (0..300).map(churn_key).collect();
            db.wait_for_background().unwrap();
            assert_holds(&db, &model, &all, &format!("{mode:?} round {round}"));
            let blobs = db.blob_files();
            assert!(!blobs.is_empty(), "{mode:?}: no blob files");
            // Every blob file of the version is on the file system, and no other.
            let numbers: Vec<u64> = blobs.iter().map(|b| b.number).collect();
            assert_eq!(blob_files_on(&fs), numbers, "{mode:?}: blob files on disk");
            db.close().unwrap();
        }
    }
}

#[test]
fn small_values_stay_inline_and_large_ones_move_out() {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), blob_options(ExecMode::Deterministic)).unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, b"small", &[1u8; 63]).unwrap();
    db.put(&wo, b"large", &[2u8; 64]).unwrap();
    db.flush().unwrap();
    let files = db.live_files();
    assert_eq!(files.len(), 1);
    let blobs = db.blob_files();
    assert_eq!(blobs.len(), 1);
    assert_eq!(blobs[0].total_count, 1);
    assert_eq!(files[0].1.oldest_blob_file, Some(blobs[0].number));
    let ro = ReadOptions::default();
    assert_eq!(db.get(&ro, b"small").unwrap(), Some(vec![1u8; 63]));
    assert_eq!(db.get(&ro, b"large").unwrap(), Some(vec![2u8; 64]));
}

#[test]
fn overwritten_blobs_become_garbage_and_their_file_goes() {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let options = Options {
        // One L0 file starts a compaction to L1, which drops the overwritten versions.
        level0_file_num_compaction_trigger: 2,
        ..blob_options(ExecMode::Deterministic)
    };
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    let wo = WriteOptions::default();
    for k in 0..10u64 {
        db.put(&wo, &churn_key(k), &value(k, 100)).unwrap();
    }
    db.flush().unwrap();
    let first = db.blob_files();
    assert_eq!(first.len(), 1);
    for k in 0..10u64 {
        db.put(&wo, &churn_key(k), &value(k + 50, 100)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_background().unwrap();
    // The compaction of both L0 files dropped every blob of the first file: all garbage,
    // no table links it, so it left the version and the file system.
    let now = db.blob_files();
    assert!(now.iter().all(|b| b.number != first[0].number), "{now:?}");
    assert!(!blob_files_on(&fs).contains(&first[0].number));
    for k in 0..10u64 {
        let got = db.get(&ReadOptions::default(), &churn_key(k)).unwrap();
        assert_eq!(got, Some(value(k + 50, 100)));
    }
    let stats = db.stats();
    assert!(stats.blob.files_deleted >= 1, "{:?}", stats.blob);
}

#[test]
fn garbage_collection_relocates_the_oldest_blobs() {
    let (_mem, dev) = device(64, 256);
    let fs = format(&dev, fs_options());
    let options = Options {
        enable_blob_garbage_collection: true,
        blob_garbage_collection_age_cutoff: 1.0,
        ..blob_options(ExecMode::Deterministic)
    };
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    let model = churn(&db, 7, 2000, 200, 0.0);
    db.wait_for_background().unwrap();
    let stats = db.stats();
    // With a cutoff of 1.0 every blob a compaction keeps is rewritten.
    assert!(stats.blob.gc_relocated > 0, "{:?}", stats.blob);
    assert_holds(&db, &model, &keys(&model), "after blob GC");
    // Every blob reference of every table points at a blob file of the version.
    let blobs: Vec<u64> = db.blob_files().iter().map(|b| b.number).collect();
    for (_, f) in db.live_files() {
        if let Some(oldest) = f.oldest_blob_file {
            assert!(blobs.contains(&oldest), "table {} links {oldest}", f.number);
        }
    }
}

#[test]
fn a_damaged_blob_is_a_corruption_error() {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), blob_options(ExecMode::Deterministic)).unwrap();
    db.put(&WriteOptions::default(), b"key", &[7u8; 200])
        .unwrap();
    db.flush().unwrap();
    let blob = db.blob_files()[0].number;
    db.close().unwrap();
    let name = zkv_engine::blob::blob_file_name(blob);
    // The value's first byte: after the file header and the record's header and key.
    let index_at = zkv_engine::blob::HEADER_LEN + zkv_engine::blob::RECORD_HEADER_LEN + 3;
    flip_file_bit(&fs, dev.as_ref(), &name, index_at, 2);
    drop(fs);
    let fs = mount(&dev, fs_options());
    let db = Db::open(fs, blob_options(ExecMode::Deterministic)).unwrap();
    let err = db.get(&ReadOptions::default(), b"key").unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(&name), "{err}");
    let _ = BlobIndex::decode;
}

#[test]
fn the_force_threshold_compacts_the_tables_of_the_oldest_blob_file() {
    let (_mem, dev) = device(64, 256);
    let fs = format(&dev, fs_options());
    let options = Options {
        enable_blob_garbage_collection: true,
        blob_garbage_collection_age_cutoff: 0.5,
        blob_garbage_collection_force_threshold: 0.0,
        ..blob_options(ExecMode::Deterministic)
    };
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    let model = churn(&db, 11, 1500, 200, 0.0);
    db.wait_for_background().unwrap();
    let stats = db.stats();
    let forced = stats
        .records
        .iter()
        .filter(|r| r.reason == "forced-blob-gc")
        .count();
    assert!(
        forced > 0,
        "no forced blob GC among {} compactions",
        stats.records.len()
    );
    assert_holds(&db, &model, &keys(&model), "after forced blob GC");
    // Every forced compaction rewrote files into their own level.
    for r in stats
        .records
        .iter()
        .filter(|r| r.reason == "forced-blob-gc")
    {
        assert_eq!(r.level, r.output_level);
    }
    assert!(stats.blob.gc_relocated > 0);
}

#[test]
fn check_and_salvage_name_a_lost_blob_file_and_its_keys() {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let options = blob_options(ExecMode::Deterministic);
    let db = Db::open(Arc::clone(&fs), options.clone()).unwrap();
    let wo = WriteOptions::default();
    db.put(&wo, b"inline", &[1u8; 10]).unwrap();
    db.put(&wo, b"separated", &[2u8; 100]).unwrap();
    db.flush().unwrap();
    let blob = zkv_engine::blob::blob_file_name(db.blob_files()[0].number);
    db.close().unwrap();
    fs.delete(&blob).unwrap();
    let report = zkv_engine::db::check(&fs, &options).unwrap();
    let damage: Vec<_> = report.damage().collect();
    assert_eq!(damage.len(), 1, "{damage:?}");
    assert_eq!(damage[0].file.as_deref(), Some(blob.as_str()));
    let mut got = Model::new();
    let salvage = zkv_engine::db::salvage(&fs, &options, &mut |k, v| {
        got.insert(k.to_vec(), v.to_vec());
        Ok(())
    })
    .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got.get(&b"inline"[..]), Some(&vec![1u8; 10]));
    let lost = salvage.check.damage().find(|f| f.keys.is_some()).unwrap();
    assert_eq!(lost.keys.as_ref().unwrap().smallest, b"separated");
}

/// LIZA's decisions, recording the hints of blob files.
struct BlobHints(Arc<std::sync::Mutex<Vec<zkv_zonefs::placement::PlacementHint>>>);

impl zkv_zonefs::placement::PlacementPolicy for BlobHints {
    fn name(&self) -> &'static str {
        "blob-hints"
    }

    fn place(
        &self,
        ctx: &zkv_zonefs::placement::PlacementCtx<'_>,
    ) -> zkv_zonefs::placement::Decision {
        if ctx.hint.kind == Some(zkv_zonefs::meta::FileKind::Blob) {
            self.0.lock().unwrap().push(ctx.hint.clone());
        }
        zkv_zonefs::placement::Liza.place(ctx)
    }
}

#[test]
fn blob_files_are_placed_with_their_number_level_and_lifetime() {
    let (_mem, dev) = device(32, 256);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let policy = Box::new(BlobHints(Arc::clone(&seen)));
    let fs = Arc::new(ZoneFs::format_with_policy(Arc::clone(&dev), fs_options(), policy).unwrap());
    let db = Db::open(Arc::clone(&fs), blob_options(ExecMode::Deterministic)).unwrap();
    db.put(&WriteOptions::default(), b"k", &[3u8; 100]).unwrap();
    db.flush().unwrap();
    let number = db.blob_files()[0].number;
    let seen = seen.lock().unwrap();
    let hint = seen.first().expect("a blob file was placed");
    assert_eq!(hint.blob_file, Some(number));
    assert_eq!(hint.level, Some(0));
    assert_eq!(hint.lifetime, zkv_zonefs::placement::Lifetime::Medium);
}

/// Every blob file's hint names the job writing it: flushes by their number, compactions
/// by theirs and by the subcompaction (key range) writing it, so a placement policy can
/// tell blob files written at the same time by different threads apart.
#[test]
fn blob_file_hints_name_the_flush_or_subcompaction_writing_them() {
    use zkv_zonefs::placement::JobKind;
    let (_mem, dev) = device(64, 256);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let policy = Box::new(BlobHints(Arc::clone(&seen)));
    let fs = Arc::new(ZoneFs::format_with_policy(Arc::clone(&dev), fs_options(), policy).unwrap());
    let options = Options {
        max_background_flushes: 2,
        max_background_compactions: 2,
        max_subcompactions: 4,
        enable_blob_garbage_collection: true,
        ..blob_options(ExecMode::Deterministic)
    };
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    let model = churn(&db, 3, 3000, 400, 0.05);
    db.wait_for_background().unwrap();
    assert_holds(&db, &model, &keys(&model), "after the churn");
    assert!(db.stats().subcompactions > 0, "no compaction was split");
    let seen = seen.lock().unwrap();
    let jobs: Vec<_> = seen.iter().filter_map(|h| h.job).collect();
    assert_eq!(jobs.len(), seen.len(), "a blob file without its job");
    let flushes: Vec<u64> = jobs
        .iter()
        .filter(|j| j.kind == JobKind::Flush)
        .map(|j| j.id)
        .collect();
    assert!(!flushes.is_empty() && flushes.windows(2).all(|w| w[0] <= w[1]));
    assert!(
        jobs.iter()
            .any(|j| j.kind == JobKind::Compaction && j.part > 0),
        "no blob file written by a second subcompaction: {jobs:?}"
    );
}
