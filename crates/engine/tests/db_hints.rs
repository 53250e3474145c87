//! The neighbourhood in SST placement hints (`PlacementHint::neighbors`): filled for flush
//! and compaction outputs when the placement policy asks, with the overlapping SSTs of the
//! adjacent levels (the job's own inputs left out) and the zones holding them; never
//! computed when it does not (LIZA). The zone cleaner's migrations get the hint of the live
//! file now (the database's hint source). Also `compact_all` and recovery flushes in the
//! statistics.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use support::*;
use zkv_engine::db::{CompactionRecord, Db, WriteOptions};
use zkv_engine::options::ExecMode;
use zkv_engine::version::FileMeta;
use zkv_zonefs::fs::ZoneFs;
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Decision, Liza, PlacementCtx, PlacementHint, PlacementPolicy, SstRef};

/// What the policy saw when it placed an SST.
struct Seen {
    hint: PlacementHint,
    /// The database's live files at that moment.
    live: Vec<(usize, FileMeta)>,
    /// Compaction records at that moment: the running compaction's record comes next.
    records: usize,
    /// Placed while the test ran the zone cleaner: a migration.
    cleaning: bool,
}

/// LIZA's decisions, recording the SST hints it is asked about.
#[derive(Default)]
struct Recorder {
    wants: bool,
    db: OnceLock<Weak<Db>>,
    seen: Mutex<Vec<Seen>>,
    cleaning: AtomicBool,
}

struct Recording(Arc<Recorder>);

impl PlacementPolicy for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        let r = &self.0;
        let db = r.db.get().and_then(Weak::upgrade);
        if let (Some(db), Some(FileKind::Sst)) = (db, ctx.hint.kind) {
            let mut seen = r.seen.lock().unwrap();
            // A file spanning zones asks again with the same hint, sized as what is left
            // to write (and the cleaner asks once per extent, sized as the extent).
            let without_size = |h: &PlacementHint| PlacementHint {
                size: 0,
                ..h.clone()
            };
            if seen.last().map(|s| without_size(&s.hint)) != Some(without_size(ctx.hint)) {
                seen.push(Seen {
                    hint: ctx.hint.clone(),
                    live: db.live_files(),
                    records: db.compaction_records().len(),
                    cleaning: r.cleaning.load(Ordering::Relaxed),
                });
            }
        }
        Liza.place(ctx)
    }

    fn wants_neighbors(&self) -> bool {
        self.0.wants
    }
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// A deterministic database on a file system placing with a recorder; random puts.
fn run(wants: bool) -> (Arc<Recorder>, Arc<ZoneFs>, Arc<Db>) {
    let (_mem, dev) = device(64, 256);
    let recorder = Arc::new(Recorder {
        wants,
        ..Recorder::default()
    });
    let policy = Box::new(Recording(Arc::clone(&recorder)));
    let fs = Arc::new(ZoneFs::format_with_policy(dev, fs_options(), policy).unwrap());
    assert_eq!(fs.placement_wants_neighbors(), wants);
    let db = Arc::new(Db::open(Arc::clone(&fs), tiny_options(ExecMode::Deterministic)).unwrap());
    recorder.db.set(Arc::downgrade(&db)).unwrap();
    for i in 0..4000u64 {
        let k = key(i * 7919 % 1500);
        db.put(&WriteOptions::default(), &k, &value(i, 80)).unwrap();
    }
    db.flush().unwrap();
    // A running compaction may have written its outputs (deterministic jobs may write
    // before they end: `SimCosts::output_at_pct`) but has no record yet.
    db.wait_for_background().unwrap();
    (recorder, fs, db)
}

/// Zones of every SST that ever existed: the live ones now, the deleted ones just before
/// their deletion (the cleaner never runs here, so an SST never moves).
fn zones_by_number(
    fs: &ZoneFs,
    db: &Db,
    records: &[CompactionRecord],
) -> HashMap<u64, Vec<(u32, u64)>> {
    let mut zones: HashMap<u64, Vec<(u32, u64)>> = records
        .iter()
        .flat_map(|r| r.inputs.iter().map(|i| (i.number, i.zones.clone())))
        .collect();
    for (_, f) in db.live_files() {
        let name = format!("{:06}.sst", f.number);
        zones.insert(f.number, fs.zones_of(&name).unwrap());
    }
    zones
}

fn overlaps(f: &FileMeta, lo: &[u8], hi: &[u8]) -> bool {
    f.smallest_user_key() <= hi && lo <= f.largest_user_key()
}

fn numbers(refs: &[SstRef]) -> Vec<u64> {
    refs.iter().map(|r| r.number).collect()
}

/// Which compaction wrote the SST of `seen`, if one did: the next record, when it has an
/// output of that level and size.
fn job_of<'r>(seen: &Seen, records: &'r [CompactionRecord]) -> Option<&'r CompactionRecord> {
    let level = usize::from(seen.hint.level?);
    records
        .get(seen.records)
        .filter(|r| r.output_level == level && r.outputs.iter().any(|o| o.size == seen.hint.size))
}

/// Checks one hint against the live files when it was made.
fn check(seen: &Seen, job: Option<&CompactionRecord>, zones: &HashMap<u64, Vec<(u32, u64)>>) {
    let h = &seen.hint;
    let n = h
        .neighbors
        .as_ref()
        .expect("the policy asked for neighbours");
    let level = usize::from(h.level.expect("an SST has a level"));
    let inputs: Vec<u64> = job.map_or(Vec::new(), |j| j.inputs.iter().map(|i| i.number).collect());
    let (lo, hi) = (&h.smallest_key[..], &h.largest_key[..]);
    let expected = |l: usize| -> Vec<u64> {
        seen.live
            .iter()
            .filter(|(fl, f)| *fl == l && overlaps(f, lo, hi) && !inputs.contains(&f.number))
            .map(|(_, f)| f.number)
            .collect()
    };
    assert_eq!(
        numbers(&n.overlap_below),
        expected(level + 1),
        "below, {h:?}"
    );
    let above = level.checked_sub(1).map(expected).unwrap_or_default();
    assert_eq!(numbers(&n.overlap_above), above, "above, {h:?}");
    assert_eq!(n.level_scores.len(), 5);
    let refs = n.overlap_above.iter().chain(&n.overlap_below);
    for r in refs.chain(&n.closest_before).chain(&n.closest_after) {
        assert_eq!(Some(&r.zones), zones.get(&r.number), "zones of {r:?}");
        // Extents are whole blocks: the zone bytes cover the size.
        assert!(r.zones.iter().map(|z| z.1).sum::<u64>() >= r.size, "{r:?}");
        assert!(!inputs.contains(&r.number), "{r:?} is an input of the job");
        let live = seen.live.iter().find(|(_, f)| f.number == r.number);
        if let Some((l, f)) = live {
            assert_eq!((usize::from(r.level), r.size), (*l, f.size));
            assert_eq!(r.smallest_key, f.smallest_user_key());
            assert_eq!(r.largest_key, f.largest_user_key());
        } else {
            // Not in the version yet: an earlier output of the same job.
            let outputs = job.map(|j| &j.outputs);
            assert!(
                outputs.is_some_and(|o| o.iter().any(|o| o.number == r.number)),
                "{r:?}"
            );
        }
    }
    if let Some(b) = &n.closest_before {
        assert!(
            usize::from(b.level) == level && &b.largest_key[..] < lo,
            "{b:?}"
        );
    }
    if let Some(a) = &n.closest_after {
        assert!(
            usize::from(a.level) == level && &a.smallest_key[..] > hi,
            "{a:?}"
        );
    }
}

#[test]
fn compaction_outputs_list_the_overlapping_files_and_their_zones() {
    let (recorder, fs, db) = run(true);
    let records = db.compaction_records();
    let zones = zones_by_number(&fs, &db, &records);
    let seen = recorder.seen.lock().unwrap();
    let (mut outputs, mut below, mut above, mut excluded) = (0, 0, 0, 0);
    for s in seen.iter() {
        let job = job_of(s, &records);
        check(s, job, &zones);
        let n = s.hint.neighbors.as_ref().unwrap();
        if let Some(job) = job {
            outputs += 1;
            below += usize::from(!n.overlap_below.is_empty());
            above += usize::from(!n.overlap_above.is_empty());
            let level = usize::from(s.hint.level.unwrap());
            // The job's output-level inputs overlap the output but are left out.
            let meets = |i: &&zkv_engine::db::CompactionInput| i.level == level;
            excluded += job.inputs.iter().filter(meets).count();
        }
    }
    assert!(outputs > 20, "{outputs} compaction outputs");
    assert!(
        below > 0 && above > 0 && excluded > 0,
        "{below} {above} {excluded}"
    );
}

#[test]
fn migrated_ssts_are_placed_with_their_neighbourhood_now() {
    let (recorder, fs, db) = run(true);
    let calls_before = db.stats().neighbors_calls;
    recorder.cleaning.store(true, Ordering::Relaxed);
    let victims = (0..6).filter(|_| fs.clean_one().unwrap().is_some()).count();
    recorder.cleaning.store(false, Ordering::Relaxed);
    assert!(
        victims > 0 && fs.stats().gc.copy_bytes > 0,
        "nothing was copied"
    );
    let seen = recorder.seen.lock().unwrap();
    let migrations: Vec<&Seen> = seen.iter().filter(|s| s.cleaning).collect();
    assert!(!migrations.is_empty());
    for s in &migrations {
        let h = &s.hint;
        let (lo, hi) = (&h.smallest_key[..], &h.largest_key[..]);
        // The hint describes a live file as it is now: its level and key range.
        let level = usize::from(h.level.expect("an SST has a level"));
        let (_, moved) = s
            .live
            .iter()
            .find(|(l, f)| *l == level && f.smallest_user_key() == lo && f.largest_user_key() == hi)
            .unwrap_or_else(|| panic!("no live file for {h:?}"));
        let n = h.neighbors.as_ref().expect("the database answered");
        let expected = |l: usize| -> Vec<u64> {
            s.live
                .iter()
                .filter(|(fl, f)| *fl == l && overlaps(f, lo, hi) && f.number != moved.number)
                .map(|(_, f)| f.number)
                .collect()
        };
        assert_eq!(numbers(&n.overlap_below), expected(level + 1), "{h:?}");
        let above = level.checked_sub(1).map(expected).unwrap_or_default();
        assert_eq!(numbers(&n.overlap_above), above, "{h:?}");
        let refs = n.overlap_above.iter().chain(&n.overlap_below);
        for r in refs.chain(&n.closest_before).chain(&n.closest_after) {
            assert_ne!(r.number, moved.number, "the moved file lists itself: {h:?}");
        }
    }
    // Each answer is a neighbourhood computation of the database.
    let answers = db.stats().neighbors_calls - calls_before;
    assert!(answers >= migrations.len() as u64, "{answers}");
}

#[test]
fn without_the_policy_asking_no_neighbours_are_computed() {
    let (recorder, _fs, _db) = run(false);
    let seen = recorder.seen.lock().unwrap();
    assert!(seen.len() > 20, "{} SSTs placed", seen.len());
    for s in seen.iter() {
        assert_eq!(s.hint.neighbors, None, "{:?}", s.hint);
        assert!(s.hint.size > 0 && s.hint.level.is_some());
    }
    let (_mem, dev) = device(16, 256);
    let liza = ZoneFs::format(dev, fs_options()).unwrap();
    assert_eq!(liza.placement_policy(), "liza");
    assert!(!liza.placement_wants_neighbors());
}

fn max_score(db: &Db) -> f64 {
    db.stats()
        .levels
        .iter()
        .map(|l| l.score)
        .fold(0.0, f64::max)
}

#[test]
fn compact_all_leaves_no_level_to_compact() {
    for mode in [ExecMode::Threaded, ExecMode::Deterministic] {
        let (_mem, dev) = device(64, 256);
        let fs = format(&dev, fs_options());
        let db = Db::open(Arc::clone(&fs), tiny_options(mode)).unwrap();
        for i in 0..3000u64 {
            db.put(
                &WriteOptions::default(),
                &key(i * 7919 % 1500),
                &value(i, 80),
            )
            .unwrap();
        }
        db.flush().unwrap();
        db.compact_all().unwrap();
        assert!(max_score(&db) < 1.0, "{mode:?}: {:?}", db.stats().levels);
    }
}

#[test]
fn recovery_flushes_count_as_flushes() {
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options());
    let db = Db::open(Arc::clone(&fs), tiny_options(ExecMode::Deterministic)).unwrap();
    for i in 0..20u64 {
        db.put(&WriteOptions::default(), &key(i), &value(i, 40))
            .unwrap();
    }
    db.close().unwrap();
    let db = Db::open(Arc::clone(&fs), tiny_options(ExecMode::Deterministic)).unwrap();
    let rec = db.recovery();
    assert_eq!(rec.tables, 1);
    let s = db.stats();
    assert_eq!(s.flushes, 1);
    assert_eq!(s.flush_bytes, rec.flushes[0].bytes_written);
    assert!(s.flush_bytes > 0);
    assert_eq!(s.level_stats.sum().bytes_written, s.flush_bytes);
}
