//! The deterministic mode's simulation of the background threads: jobs run on virtual
//! threads for modelled durations, so L0 piles up behind a long L0→L1 compaction, two
//! virtual compaction threads run two compactions at once, a stop trigger stops writes in
//! virtual time, a slower writer lets compaction keep up; and the result depends on nothing
//! but the operations and the options (not on the machine's speed or load, nor on other
//! tests running at the same time).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::*;
use zkv_engine::db::{CompactionRecord, Db, DbStats, WriteOptions};
use zkv_engine::options::{ExecMode, Options, SimCosts};
use zkv_zns::MemDevice;
use zkv_zonefs::fs::ZoneFs;

/// L0→L1 compactions take 2 ms of virtual time per KiB of input, writes 10 µs each: a
/// compaction of a few 4 KiB files spans hundreds of writes.
fn slow_compactions(mode: ExecMode) -> Options {
    Options {
        sim: SimCosts {
            write_op_ns: 10_000,
            write_byte_ps: 0,
            compaction_byte_ps: 2_000_000,
            ..SimCosts::default()
        },
        level0_slowdown_writes_trigger: 40,
        level0_stop_writes_trigger: 48,
        ..tiny_options(mode)
    }
}

/// `n` puts of 100-byte values over random keys, each followed by `after`.
fn fill(db: &Db, n: u64, seed: u64, mut after: impl FnMut(&Db)) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..n {
        let k = format!("k{:06}", rng.random_range(0..20_000)).into_bytes();
        db.put(&WriteOptions::default(), &k, &value(i, 100))
            .unwrap();
        after(db);
    }
}

/// Flushes and compactions that take no virtual time (foreground costs as calibrated).
fn free_jobs() -> SimCosts {
    SimCosts {
        job_ns: 0,
        flush_byte_ps: 0,
        flush_entry_ns: 0,
        compaction_byte_ps: 0,
        compaction_entry_ns: 0,
        ..SimCosts::default()
    }
}

fn open(options: Options) -> Db {
    let (_mem, dev) = device(256, 256);
    Db::open(format(&dev, fs_options()), options).unwrap()
}

/// L0 files taken by each L0→L1 compaction.
fn l0_inputs(records: &[CompactionRecord]) -> Vec<usize> {
    records
        .iter()
        .filter(|r| r.level == 0)
        .map(|r| r.inputs.iter().filter(|f| f.level == 0).count())
        .collect()
}

#[test]
fn l0_grows_past_the_trigger_while_an_l0_compaction_runs() {
    let db = open(slow_compactions(ExecMode::Deterministic));
    let trigger = db.options().level0_file_num_compaction_trigger as usize;
    let mut most_l0 = 0;
    fill(&db, 3000, 1, |db| {
        most_l0 = most_l0.max(db.stats().levels[0].files)
    });
    db.wait_for_background().unwrap();
    let taken = l0_inputs(&db.compaction_records());
    assert!(!taken.is_empty());
    // The first compaction starts at the trigger; later ones find the files flushed while
    // the one before ran.
    assert_eq!(taken[0], trigger, "{taken:?}");
    assert!(
        taken.iter().any(|&n| n >= 3 * trigger),
        "L0 inputs per compaction: {taken:?}"
    );
    assert!(most_l0 >= 3 * trigger, "at most {most_l0} L0 files");
    // Each compaction occupied its thread for its modelled duration.
    for r in db.compaction_records() {
        let (start, end) = r
            .virtual_span
            .expect("deterministic compactions have a span");
        let kib = r.input_bytes() / 1024;
        assert!(end - start >= kib * 2_000_000, "{r:?}");
    }
}

#[test]
fn inline_compaction_with_fast_jobs_keeps_l0_at_the_trigger() {
    // The opposite of the test above: jobs cost (almost) nothing, so each L0→L1 compaction
    // starts, and ends, as soon as L0 reaches the trigger.
    let options = Options {
        sim: free_jobs(),
        ..slow_compactions(ExecMode::Deterministic)
    };
    let db = open(options);
    let trigger = db.options().level0_file_num_compaction_trigger as usize;
    fill(&db, 3000, 1, |_| {});
    let taken = l0_inputs(&db.compaction_records());
    assert!(!taken.is_empty());
    assert!(taken.iter().all(|&n| n == trigger), "{taken:?}");
}

#[test]
fn two_virtual_compaction_threads_run_two_compactions_at_once() {
    let run = |threads: u32| {
        let db = open(Options {
            max_background_compactions: threads,
            sim: SimCosts {
                compaction_byte_ps: 200_000,
                ..SimCosts::default()
            },
            ..tiny_options(ExecMode::Deterministic)
        });
        fill(&db, 6000, 2, |_| {});
        db.wait_for_background().unwrap();
        let spans: Vec<(u64, u64)> = db
            .compaction_records()
            .iter()
            .filter_map(|r| r.virtual_span)
            .collect();
        let overlapping = spans
            .iter()
            .enumerate()
            .filter(|(i, a)| spans[i + 1..].iter().any(|b| b.0 < a.1 && a.0 < b.1))
            .count();
        (overlapping, db.virtual_time().unwrap())
    };
    let (one_overlap, one_time) = run(1);
    let (two_overlap, two_time) = run(2);
    assert_eq!(one_overlap, 0, "one thread runs one compaction at a time");
    assert!(two_overlap > 0, "two threads never overlapped");
    assert!(two_time <= one_time, "{two_time:?} > {one_time:?}");
}

#[test]
fn two_running_compactions_never_share_input_files_and_lose_nothing() {
    let db = open(Options {
        max_background_compactions: 3,
        sim: SimCosts {
            compaction_byte_ps: 200_000,
            ..SimCosts::default()
        },
        ..tiny_options(ExecMode::Deterministic)
    });
    let mut model = Model::new();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for i in 0..6000u64 {
        let k = format!("k{:06}", rng.random_range(0..3000)).into_bytes();
        let v = value(i, 100);
        db.put(&WriteOptions::default(), &k, &v).unwrap();
        model.insert(k, v);
    }
    db.wait_for_background().unwrap();
    let records = db.compaction_records();
    for (i, a) in records.iter().enumerate() {
        for b in &records[i + 1..] {
            let (Some(sa), Some(sb)) = (a.virtual_span, b.virtual_span) else {
                continue;
            };
            if sb.0 < sa.1 && sa.0 < sb.1 {
                let files = |r: &CompactionRecord| -> Vec<u64> {
                    r.inputs.iter().map(|f| f.number).collect()
                };
                let fa = files(a);
                assert!(files(b).iter().all(|n| !fa.contains(n)), "{a:?} {b:?}");
            }
        }
    }
    assert_eq!(scan_all(&db, &Default::default()), model);
}

#[test]
fn a_stop_trigger_stops_writes_in_virtual_time() {
    let options = Options {
        level0_slowdown_writes_trigger: 5,
        level0_stop_writes_trigger: 6,
        ..slow_compactions(ExecMode::Deterministic)
    };
    let stop = options.level0_stop_writes_trigger as usize;
    let db = open(options);
    let mut most_l0 = 0;
    fill(&db, 3000, 3, |db| {
        most_l0 = most_l0.max(db.stats().levels[0].files)
    });
    let s = db.stats();
    assert_eq!(most_l0, stop, "L0 reached the stop trigger and no more");
    assert!(s.stall_stops > 0, "{} stops", s.stall_stops);
    // The writes waited: the clock ran past what 3000 writes cost by the stall time.
    let writes_ns = 3000 * db.options().sim.write_ns(0);
    let now = db.virtual_time().unwrap().as_nanos() as u64;
    assert!(
        s.stall_ns > 0 && now >= writes_ns + s.stall_ns,
        "stalled {} ns, clock {now} ns",
        s.stall_ns
    );
}

#[test]
fn a_slower_writer_lets_compaction_keep_up() {
    let run = |pause: Option<Duration>| {
        let db = open(Options {
            sim: SimCosts {
                compaction_byte_ps: 100_000,
                ..SimCosts::default()
            },
            ..tiny_options(ExecMode::Deterministic)
        });
        fill(&db, 4000, 4, |db| {
            if let Some(p) = pause {
                db.pass_time(p).unwrap();
            }
        });
        db.wait_for_background().unwrap();
        let taken = l0_inputs(&db.compaction_records());
        taken.iter().sum::<usize>() as f64 / taken.len() as f64
    };
    let fast = run(None);
    let slow = run(Some(Duration::from_micros(200)));
    assert!(
        fast > slow,
        "L0 files per L0 compaction: fast {fast} slow {slow}"
    );
}

/// What must not vary between two runs of the same operations.
fn outcome(db: &Db, fs: &zkv_zonefs::fs::ZoneFs) -> (String, String, u64) {
    let mut s: DbStats = db.stats();
    (s.picker_ns, s.neighbors_ns) = (0, 0);
    let files = format!("{:?}", file_contents(fs));
    (
        format!("{s:?}"),
        files,
        db.virtual_time().unwrap().as_nanos() as u64,
    )
}

/// A run with the virtual cleaner busy: 12 zones, cleaning from 70 % free space.
fn deterministic_run(seed: u64) -> (String, String, u64) {
    deterministic_run_with(seed, false)
}

/// The same, `spread` saying whether compactions write their tables one by one.
fn deterministic_run_with(seed: u64, spread: bool) -> (String, String, u64) {
    let (_mem, dev) = device(12, 256);
    let fs = format(&dev, fs_options().with_gc(70, 80));
    let mut options = slow_compactions(ExecMode::Deterministic);
    options.sim.spread_outputs = spread;
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    db.set_inline_cleaning(true);
    fill(&db, 2500, seed, |_| {});
    assert!(fs.stats().gc.victims > 0, "the cleaner never ran");
    db.flush().unwrap();
    let out = outcome(&db, &fs);
    db.close().unwrap();
    out
}

#[test]
fn the_same_run_is_identical_on_parallel_threads_and_under_load() {
    let alone = deterministic_run(9);
    // Four copies at once, and a thread burning CPU meanwhile: a schedule that depended on
    // wall time or on thread timing would differ.
    let busy = Arc::new(AtomicBool::new(true));
    let burner = {
        let busy = Arc::clone(&busy);
        std::thread::spawn(move || {
            let mut x = 0u64;
            while busy.load(Ordering::Relaxed) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            x
        })
    };
    let runs: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(|| deterministic_run(9)))
        .collect();
    for r in runs {
        assert!(r.join().unwrap() == alone, "a parallel run differs");
    }
    busy.store(false, Ordering::Relaxed);
    burner.join().unwrap();
    assert!(
        deterministic_run(10) != alone,
        "another seed gives another run"
    );
    // Tables written one by one: as exact, and another schedule.
    let spread = deterministic_run_with(9, true);
    assert!(
        deterministic_run_with(9, true) == spread,
        "a spread run differs"
    );
    assert!(spread != alone, "spreading the tables changed nothing");
}

#[test]
fn a_slowdown_trigger_paces_writes_at_the_delayed_write_rate() {
    // Writes of 100 ns each would run at about a gigabyte per second; past the slowdown
    // trigger they go at RocksDB's delayed write rate (16 MiB/s) instead.
    // Flushes cost nothing and L0 never reaches a stop: every stall is a delay.
    let options = Options {
        level0_slowdown_writes_trigger: 3,
        level0_stop_writes_trigger: 10_000,
        sim: SimCosts {
            write_op_ns: 100,
            write_byte_ps: 0,
            job_ns: 0,
            flush_byte_ps: 0,
            flush_entry_ns: 0,
            compaction_byte_ps: 2_000_000,
            ..SimCosts::default()
        },
        ..slow_compactions(ExecMode::Deterministic)
    };
    let db = open(options);
    fill(&db, 3000, 3, |_| {});
    let s = db.stats();
    assert_eq!(s.stall_stops, 0);
    assert!(s.stall_delays > 1000, "{} delays", s.stall_delays);
    // Each delayed write of about 110 bytes waits about 6.5 µs.
    let per_delay = s.stall_ns / s.stall_delays;
    assert!(
        (5_000..9_000).contains(&per_delay),
        "{per_delay} ns per delay"
    );
}

#[test]
fn a_cleaner_that_cannot_reach_its_target_stops_when_nothing_changes() {
    // Cleaning from 90 % free space up to 95 %: a run can never reach its target once the
    // store holds more than 5 % of the device, and moving live data around does not free
    // any. Each run visits a zone once and the next one waits for a write or a job to
    // change the space, so waiting for the background work ends.
    let (_mem, dev) = device(32, 256);
    let fs = format(&dev, fs_options().with_gc(90, 95));
    let db = Db::open(Arc::clone(&fs), tiny_options(ExecMode::Deterministic)).unwrap();
    db.set_inline_cleaning(true);
    let (done, finished) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        fill(&db, 8000, 6, |_| {});
        db.wait_for_background().unwrap();
        let victims = db.zone_fs().unwrap().stats().gc.victims;
        db.close().unwrap();
        let _ = done.send(victims);
    });
    let victims = finished
        .recv_timeout(Duration::from_secs(120))
        .expect("the cleaner kept the database busy");
    worker.join().unwrap();
    assert!(victims > 0, "the cleaner never ran");
}

/// Flushes take about twice as long as a memtable takes to fill (4 KiB memtables of
/// ~110-byte writes at 10 µs each; 150 ns per memtable byte): one flush thread falls behind
/// and flushes the queued memtables together; with two, a second flush starts while the
/// first runs. Flushes still install in memtable order: every read sees the newest write.
#[test]
fn two_virtual_flush_threads_flush_side_by_side() {
    let run = |threads: u32| {
        let db = open(Options {
            max_background_flushes: threads,
            max_write_buffer_number: 4,
            sim: SimCosts {
                write_op_ns: 10_000,
                write_byte_ps: 0,
                flush_byte_ps: 150_000,
                ..SimCosts::default()
            },
            ..tiny_options(ExecMode::Deterministic)
        });
        let model = churn(&db, 7, 4000, 500, 0.1);
        db.wait_for_background().unwrap();
        let keys: Vec<Vec<u8>> = (0..500).map(churn_key).collect();
        assert_holds(&db, &model, &keys, &format!("{threads} flush threads"));
        db.stats()
    };
    let one = run(1);
    let two = run(2);
    eprintln!(
        "flushes {} vs {}, stalled {} vs {} ms",
        one.flushes,
        two.flushes,
        one.stall_ns / 1_000_000,
        two.stall_ns / 1_000_000
    );
    assert!(
        two.flushes * 2 > one.flushes * 3,
        "{} vs {}",
        two.flushes,
        one.flushes
    );
    assert!(
        two.stall_ns < one.stall_ns,
        "{} vs {}",
        two.stall_ns,
        one.stall_ns
    );
}

/// With `max_subcompactions` 4, L0→L1 compactions split into key ranges that run side by
/// side: they end sooner on the virtual clock, and their outputs (disjoint per range, as
/// the version checks on install) hold every key.
#[test]
fn subcompactions_split_l0_compactions_and_run_side_by_side() {
    let run = |subs: u32| {
        let db = open(Options {
            max_subcompactions: subs,
            ..slow_compactions(ExecMode::Deterministic)
        });
        let model = churn(&db, 9, 3000, 800, 0.1);
        db.wait_for_background().unwrap();
        let keys: Vec<Vec<u8>> = (0..800).map(churn_key).collect();
        assert_holds(&db, &model, &keys, &format!("{subs} subcompactions"));
        let records = db.compaction_records();
        let l0: Vec<&CompactionRecord> = records.iter().filter(|r| r.level == 0).collect();
        // Virtual ns per input byte of L0 compactions.
        let ns: u64 = l0
            .iter()
            .filter_map(|r| r.virtual_span)
            .map(|(s, e)| e - s)
            .sum();
        let bytes: u64 = l0.iter().map(|r| r.input_bytes()).sum();
        (db.stats().subcompactions, ns as f64 / bytes as f64)
    };
    let (none, whole) = run(1);
    let (ranges, split) = run(4);
    assert_eq!(none, 0);
    assert!(ranges > 0, "no compaction was split");
    assert!(split < whole * 0.75, "{split} ns/B split vs {whole} whole");
}

/// Blob files for every value and garbage collection of the older half of them; background
/// work costs nothing but `gc_blob_ns` per blob garbage collection reads.
fn gc_only_costs(gc_blob_ns: u64) -> Options {
    Options {
        enable_blob_files: true,
        blob_file_size: 8 * 1024,
        enable_blob_garbage_collection: true,
        blob_garbage_collection_age_cutoff: 0.5,
        sim: SimCosts {
            blob_write_ns: 0,
            blob_write_byte_ps: 0,
            blob_read_ns: gc_blob_ns,
            blob_read_byte_ps: 0,
            ..free_jobs()
        },
        ..tiny_options(ExecMode::Deterministic)
    }
}

/// 2000 distinct keys in random order, 100-byte values.
fn fill_distinct(db: &Db) {
    let mut keys: Vec<u64> = (0..2000).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.random_range(0..=i));
    }
    for k in keys {
        let key = format!("k{k:06}").into_bytes();
        db.put(&WriteOptions::default(), &key, &value(k, 100))
            .unwrap();
    }
    db.wait_for_background().unwrap();
}

#[test]
fn blob_garbage_collection_lengthens_a_compaction_by_the_blobs_it_relocates() {
    let spans = |db: &Db| -> Vec<u64> {
        let records = db.compaction_records();
        records
            .iter()
            .map(|r| r.virtual_span.map_or(0, |(s, e)| e - s))
            .collect()
    };
    // Free background work: every compaction ends the instant it starts.
    let free = open(gc_only_costs(0));
    fill_distinct(&free);
    assert!(free.stats().blob.gc_relocated > 0);
    assert!(spans(&free).iter().all(|&ns| ns == 0), "{:?}", spans(&free));
    // 1 ms per relocated blob: each compaction lasts exactly as long as its garbage
    // collection takes. No key is written twice, so no compaction drops a reference and
    // the estimate made at the pick is exactly what the job relocates.
    let db = open(gc_only_costs(1_000_000));
    fill_distinct(&db);
    let relocated = db.stats().blob.gc_relocated;
    let durations = spans(&db);
    assert!(relocated > 0 && durations.iter().any(|&ns| ns > 0));
    assert!(
        durations.iter().all(|ns| ns % 1_000_000 == 0),
        "{durations:?}"
    );
    assert_eq!(durations.iter().sum::<u64>(), relocated * 1_000_000);
}

/// A store on a device of `zones` zones of 256 KiB whose jobs write their outputs at
/// `output_at_pct` of their duration, a compaction's tables one by one if `spread`: the
/// device's memory (kept alive), its file layer and the store.
fn open_writing_at(
    zones: u32,
    mut options: Options,
    output_at_pct: u64,
    spread: bool,
) -> (Arc<MemDevice>, Arc<ZoneFs>, Db) {
    let (mem, dev) = device(zones, 256);
    let fs = format(&dev, fs_options());
    options.sim.output_at_pct = output_at_pct;
    options.sim.spread_outputs = spread;
    let db = Db::open(Arc::clone(&fs), options).unwrap();
    (mem, fs, db)
}

/// On a device too small for the store, with no cleaner running on its own, a flush or
/// compaction whose output finds no room fails when it writes (as it starts, midway, or as
/// it ends: `SimCosts::output_at_pct`; or table by table: `spread_outputs`): the cleaner
/// runs (one run per failure) and the job is taken again, a bounded number of times; then
/// the store stops with the out-of-space error, and every write it acknowledged reads back
/// as written.
#[test]
fn a_job_that_finds_no_room_runs_again_after_cleaning_wherever_it_writes() {
    for (output_at_pct, spread) in [(0, false), (50, false), (100, false), (100, true)] {
        let options = tiny_options(ExecMode::Deterministic);
        let (_mem, fs, db) = open_writing_at(12, options, output_at_pct, spread);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut model = Model::new();
        let error = (0..30_000u64).find_map(|i| {
            let k = format!("k{:05}", rng.random_range(0..3000)).into_bytes();
            let v = value(i, 100);
            match db.put(&WriteOptions::default(), &k, &v) {
                Ok(()) => {
                    model.insert(k, v);
                    None
                }
                Err(e) => Some(e),
            }
        });
        let at = format!("output_at_pct {output_at_pct}, spread {spread}");
        let error = error.unwrap_or_else(|| panic!("{at}: the device never filled up"));
        assert!(error.to_string().contains("out of space"), "{at}: {error}");
        let retries = db.stats().no_room_retries;
        let victims = fs.stats().gc.victims;
        assert!(retries > 0, "{at}: no job was taken again");
        assert!(
            victims >= retries,
            "{at}: {victims} victims, {retries} retries"
        );
        // The failure is the background error: writes stay refused, reads still work.
        assert!(db.put(&WriteOptions::default(), b"k", b"v").is_err());
        for (k, v) in &model {
            assert_eq!(
                db.get(&Default::default(), k).unwrap().as_ref(),
                Some(v),
                "{at}"
            );
        }
    }
}

/// `output_at_pct` below 100: a running job's outputs are on the device (files the
/// version does not hold yet) while it runs; at 100 (the default) never, since a job
/// writes them as it installs them, unless its tables are spread (all but the last are
/// written before it ends). Either way the store holds every write.
#[test]
fn outputs_are_on_the_device_while_the_job_runs_unless_written_at_its_end() {
    for (output_at_pct, spread, ahead) in [
        (0, false, true),
        (50, false, true),
        (100, false, false),
        (100, true, true),
    ] {
        let options = slow_compactions(ExecMode::Deterministic);
        let (_mem, fs, db) = open_writing_at(256, options, output_at_pct, spread);
        let mut seen_ahead = false;
        fill(&db, 3000, 9, |db| {
            let on_device = fs
                .list()
                .iter()
                .filter(|f| f.name.ends_with(".sst"))
                .count();
            seen_ahead |= on_device > db.live_files().len();
        });
        let at = format!("output_at_pct {output_at_pct}, spread {spread}");
        assert_eq!(seen_ahead, ahead, "{at}");
        db.wait_for_background().unwrap();
        let on_device = fs
            .list()
            .iter()
            .filter(|f| f.name.ends_with(".sst"))
            .count();
        assert_eq!(on_device, db.live_files().len(), "{at}");
    }
}

/// When each output of every compaction with two tables or more was first seen on the
/// device (virtual ns, observed after every put), with the compaction's span.
fn outputs_first_seen(output_at_pct: u64, spread: bool) -> Vec<((u64, u64), Vec<u64>)> {
    let options = slow_compactions(ExecMode::Deterministic);
    let (_mem, fs, db) = open_writing_at(256, options, output_at_pct, spread);
    let mut seen = std::collections::BTreeMap::new();
    fill(&db, 3000, 9, |db| {
        let now = db.virtual_time().unwrap().as_nanos() as u64;
        for name in ssts(&fs) {
            let number: u64 = name.trim_end_matches(".sst").parse().unwrap();
            seen.entry(number).or_insert(now);
        }
    });
    db.wait_for_background().unwrap();
    let records = db.compaction_records();
    let jobs = records.iter().filter(|r| r.outputs.len() >= 2);
    let first_seen = |r: &CompactionRecord| -> Option<Vec<u64>> {
        r.outputs
            .iter()
            .map(|o| seen.get(&o.number).copied())
            .collect()
    };
    jobs.filter_map(|r| Some((r.virtual_span?, first_seen(r)?)))
        .collect()
}

/// `spread_outputs`: a compaction's tables reach the device one by one, table `k` of `n`
/// no sooner than `k / n` of the job (written as it starts: `output_at_pct` 0); without
/// it, all of them at once.
#[test]
fn spread_tables_reach_the_device_one_by_one_over_the_job() {
    let together = outputs_first_seen(0, false);
    assert!(!together.is_empty(), "no compaction wrote two tables");
    for (span, at) in &together {
        assert!(at.iter().all(|t| *t == at[0]), "{span:?}: {at:?}");
    }
    let spread = outputs_first_seen(0, true);
    assert!(!spread.is_empty(), "no compaction wrote two tables");
    for ((start, end), at) in &spread {
        let n = at.len() as u64;
        for (k, t) in (0u64..).zip(at) {
            assert!(
                *t >= start + (end - start) * k / n,
                "{k}/{n} at {t}: {at:?}"
            );
        }
    }
    let stepwise = spread
        .iter()
        .filter(|(_, at)| at.windows(2).all(|w| w[0] < w[1]));
    assert!(stepwise.count() > 0, "no job wrote its tables one by one");
}
