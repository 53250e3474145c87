//! Cost of the zone-aware policies on the engine's side (DESIGN.md section 7, "policy
//! cost"; the MSST'24 paper's Table III reports SICA 271 µs and ZACA 1094 µs per call).
//!
//! `cargo bench -p zkv-engine --bench policy_cost`
//!
//! Versions of 1k, 10k and 100k SSTs shaped like RocksDB's static leveled LSM with its
//! defaults: 64 MiB files (48–64 MiB), L1 of 4 files and ×10 per level (40, 400, 4000,
//! 40000), the last level holding the rest, 4 overlapping L0 files. Files are spread over
//! 1 GiB zones by a fake zone lookup (a pseudo-random zone per file, every eighth file
//! split over two zones), which answers from memory: the file layer's own lookup adds a
//! metadata lock and a name lookup per file.
//!
//! - `order/{picker}/{n}`: one `Picker::order` of the deepest level that compacts into the
//!   last one (L3, L4, L5 for 1k, 10k, 100k files: the largest level a picker orders);
//!   `zaca` looks up the zones of that level and of the last level's overlapping files.
//! - `order-moved/{picker}/{n}`: the same after one file of that level moved to another
//!   zone since the last call (zaca and zone-drain keep their groups from call to call and
//!   look up again only those the move touched).
//! - `apply/{n}`: the version after a compaction-like edit of that level (one of its files
//!   deleted, the next-level files it overlaps replaced by as many new ones; a different
//!   file call to call), what every compaction and flush pays to install its edit.
//! - `edit-order/{picker}/{n}`: `apply/{n}` and then one `Picker::order` of the level in
//!   the new version, the previous version's order having been asked for: what the first
//!   pick on a new version costs (`order` repeats a pick on an unchanged version).
//! - `neighbors/{n}`: the neighbourhood of a new SST of that level (a key range the size
//!   of one of its files, varied call to call): overlaps in the levels above and below,
//!   closest files of its level, their zones, the level scores (`zkv_engine::db::neighbors_in`).
//! - `predict/{picker}/{n}`: one lifetime prediction (Prophet) of a compaction output of
//!   that level replacing one of its files (a different one call to call), the level with a
//!   round-robin cursor in its middle: `round-robin` ranks by binary search, `sica` through
//!   its order of the level.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use zkv_engine::compaction::{picker_by_name, ExtentMark, PickCtx, ZoneLookup};
use zkv_engine::db::neighbors_in;
use zkv_engine::key::{self, ValueKind};
use zkv_engine::lifetime::{predict, Clock, PredictCtx};
use zkv_engine::options::Options;
use zkv_engine::version::{FileMeta, Version, VersionEdit};

const MIB: u64 = 1 << 20;
const FILE: u64 = 64 * MIB;
const ZONE: u64 = 1024 * MIB;
const LEVELS: usize = 7;
/// Files of L1; each deeper level holds ten times more, the last level the rest.
const L1_FILES: usize = 4;
const L0_FILES: usize = 4;
/// Key space: 16-byte keys (as in the paper's runs), numbers below this.
const KEYS: u64 = 1 << 40;

/// A deterministic pseudo-random sequence (splitmix64): the version is the same every run.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn user_key(k: u64) -> Vec<u8> {
    format!("{k:016x}").into_bytes()
}

fn sst(number: u64, lo: u64, hi: u64, size: u64) -> FileMeta {
    FileMeta {
        number,
        size,
        smallest: key::internal_key(&user_key(lo), number, ValueKind::Put),
        largest: key::internal_key(&user_key(hi), number, ValueKind::Put),
        smallest_seq: number,
        largest_seq: number,
        entries: size / 1040,
        deletions: 0,
        raw_key_size: size / 1040 * 16,
        raw_value_size: size / 1040 * 1024,
        lifetime: None,
        oldest_blob_file: None,
    }
}

/// Files per level for `n` files in all.
fn shape(n: usize) -> Vec<usize> {
    let mut counts = vec![0; LEVELS];
    counts[0] = L0_FILES;
    let mut left = n - L0_FILES;
    let mut per_level = L1_FILES;
    for count in counts.iter_mut().skip(1) {
        *count = per_level.min(left);
        left -= *count;
        per_level *= 10;
    }
    // What the levels' targets do not take goes to the deepest level used.
    if let Some(last) = counts.iter().rposition(|&c| c > 0) {
        counts[last] += left;
    }
    counts
}

/// The version of `n` files and the level that compacts into the last non-empty one.
fn lsm(n: usize) -> (Version, usize) {
    let counts = shape(n);
    let mut mix = Mix(n as u64);
    let mut edit = VersionEdit::new();
    let mut number = 1;
    for (level, &count) in counts.iter().enumerate() {
        for i in 0..count as u64 {
            let size = FILE - mix.next() % (16 * MIB);
            let (lo, hi) = if level == 0 {
                // L0 files overlap each other: each covers most of the key space.
                (mix.next() % (KEYS / 8), KEYS - 1 - mix.next() % (KEYS / 8))
            } else {
                // Level files partition the key space, with a small gap at each end.
                let span = KEYS / count as u64;
                (i * span + span / 64, (i + 1) * span - span / 64)
            };
            edit.add_file(level as u32, sst(number, lo, hi, size));
            number += 1;
        }
    }
    let v = Version::new(LEVELS).apply(&edit).expect("a valid version");
    let last = counts.iter().rposition(|&c| c > 0).expect("files");
    (v, last - 1)
}

/// Zones for files: a pseudo-random zone each, every eighth file split over two zones;
/// files moved by [`SpreadZones::move_file`] whole in the zone they moved to.
struct SpreadZones {
    zones: u64,
    mark: Cell<ExtentMark>,
    moved: RefCell<HashMap<u64, u32>>,
    /// Per zone, the change count (`mark.changes`) when a file last moved into or out of it.
    stamps: RefCell<Vec<u64>>,
    /// Live bytes added to each full zone's.
    extra_live: RefCell<Vec<u64>>,
}

impl SpreadZones {
    fn placed(&self, n: u64) -> Vec<(u32, u64)> {
        if let Some(&zone) = self.moved.borrow().get(&n) {
            return vec![(zone, FILE)];
        }
        let zone = (n.wrapping_mul(2_654_435_761) % self.zones) as u32;
        if n.is_multiple_of(8) {
            let next = (u64::from(zone) + 1) % self.zones;
            vec![(zone, FILE / 2), (next as u32, FILE / 2)]
        } else {
            vec![(zone, FILE)]
        }
    }

    /// File `n` moves whole to the zone after its first, as the zone cleaner moves a file;
    /// the live bytes of the zone it leaves change.
    fn move_file(&self, n: u64) {
        let from = self.placed(n);
        let to = (u64::from(from[0].0) + 1) % self.zones;
        self.moved.borrow_mut().insert(n, to as u32);
        let mut stamps = self.stamps.borrow_mut();
        for zone in from.iter().map(|&(z, _)| z).chain([to as u32]) {
            let mut mark = self.mark.get();
            mark.changes += 1;
            self.mark.set(mark);
            stamps[zone as usize] = mark.changes;
        }
        self.extra_live.borrow_mut()[from[0].0 as usize] += MIB;
    }
}

impl ZoneLookup for SpreadZones {
    fn zones_of(&self, n: u64) -> Vec<(u32, u64)> {
        self.placed(n)
    }

    /// Every zone full, holding from one file to a whole zone of live data.
    fn full_zone_live(&self) -> Vec<(u32, u64)> {
        let extra = self.extra_live.borrow();
        (0..self.zones)
            .map(|z| {
                let live = FILE + z.wrapping_mul(2_654_435_761) % (ZONE - FILE);
                (z as u32, live + extra[z as usize])
            })
            .collect()
    }

    fn mark(&self) -> Option<ExtentMark> {
        Some(self.mark.get())
    }

    fn moved_since(&self, since: ExtentMark, moved: &mut Vec<u32>) -> bool {
        let stamps = self.stamps.borrow();
        let changed = (0u32..)
            .zip(stamps.iter())
            .filter(|(_, &s)| s > since.changes);
        moved.extend(changed.map(|(z, _)| z));
        since.lineage == self.mark.get().lineage
    }
}

fn zones_for(n: usize) -> SpreadZones {
    let zones = (n as u64 * FILE).div_ceil(ZONE) + 1;
    SpreadZones {
        zones,
        mark: Cell::new(ExtentMark::fresh()),
        moved: RefCell::default(),
        stamps: RefCell::new(vec![0; zones as usize]),
        extra_live: RefCell::new(vec![0; zones as usize]),
    }
}

fn bench_order(c: &mut Criterion) {
    let mut g = c.benchmark_group("order");
    let options = Options::default();
    let busy = HashSet::new();
    for n in [1_000, 10_000, 100_000] {
        let (v, level) = lsm(n);
        let zones = zones_for(n);
        if n == 100_000 {
            g.sample_size(10);
        }
        for name in ["sica", "min-overlap", "zaca", "zone-drain"] {
            let picker = picker_by_name(name).expect("a known picker");
            let ctx = PickCtx {
                version: &v,
                options: &options,
                compacting: &busy,
                zones: &zones,
                free_ratio: 0.1,
                cursors: &[],
                blob_gc_files: 0,
            };
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| black_box(picker.order(&ctx, level)))
            });
        }
    }
    g.finish();
}

/// `order-moved/{picker}/{n}`: one `order` after one file of the level moved to another
/// zone (a different file call to call; the live bytes of the zone it left change): what a
/// pick costs when the zone cleaner moved a file since the last one.
fn bench_order_moved(c: &mut Criterion) {
    let mut g = c.benchmark_group("order-moved");
    let options = Options::default();
    let busy = HashSet::new();
    for n in [1_000, 10_000] {
        let (v, level) = lsm(n);
        let files = v.files(level);
        for name in ["zaca", "zone-drain"] {
            let zones = zones_for(n);
            let picker = picker_by_name(name).expect("a known picker");
            let ctx = PickCtx {
                version: &v,
                options: &options,
                compacting: &busy,
                zones: &zones,
                free_ratio: 0.1,
                cursors: &[],
                blob_gc_files: 0,
            };
            let mut mix = Mix(5);
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    let f = &files[(mix.next() % files.len() as u64) as usize];
                    zones.move_file(f.number);
                    black_box(picker.order(&ctx, level))
                })
            });
        }
    }
    g.finish();
}

/// Compaction-like edits of `level`: file `i` deleted, the next-level files it overlaps
/// replaced by new files over the same keys (new numbers, a little larger).
fn compaction_edits(v: &Version, level: usize, count: usize) -> Vec<VersionEdit> {
    let files = v.files(level);
    let mut number = v.all_files().map(|(_, f)| f.number).max().unwrap_or(0) + 1;
    let mut mix = Mix(3);
    (0..count)
        .map(|_| {
            let f = &files[(mix.next() % files.len() as u64) as usize];
            let mut edit = VersionEdit::new();
            edit.delete_file(level as u32, f.number);
            let (b, e) = (f.smallest_user_key(), f.largest_user_key());
            let below = v.overlapping(level + 1, Some(b), Some(e));
            for g in below {
                edit.delete_file(level as u32 + 1, g.number);
                let grown = FileMeta {
                    number,
                    size: g.size + MIB,
                    ..FileMeta::clone(&g)
                };
                edit.add_file(level as u32 + 1, grown);
                number += 1;
            }
            edit
        })
        .collect()
}

/// `apply` and `edit-order`, size by size (one version alive at a time, so that both run
/// on the same heap).
fn bench_edit(c: &mut Criterion) {
    let options = Options::default();
    let busy = HashSet::new();
    for n in [1_000, 10_000, 100_000] {
        let (v, level) = lsm(n);
        let zones = zones_for(n);
        let edits = compaction_edits(&v, level, 16);
        let samples = if n == 100_000 { 10 } else { 100 };
        let mut g = c.benchmark_group("apply");
        g.sample_size(samples);
        let mut k = 0;
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                k = (k + 1) % edits.len();
                black_box(v.apply(&edits[k]).expect("a valid edit"))
            })
        });
        g.finish();
        let mut g = c.benchmark_group("edit-order");
        g.sample_size(samples);
        for name in ["sica", "min-overlap", "zaca", "zone-drain"] {
            let picker = picker_by_name(name).expect("a known picker");
            let order = |version: &Version| {
                let ctx = PickCtx {
                    version,
                    options: &options,
                    compacting: &busy,
                    zones: &zones,
                    free_ratio: 0.1,
                    cursors: &[],
                    blob_gc_files: 0,
                };
                picker.order(&ctx, level)
            };
            black_box(order(&v));
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    k = (k + 1) % edits.len();
                    let next = v.apply(&edits[k]).expect("a valid edit");
                    black_box(order(&next))
                })
            });
        }
        g.finish();
    }
}

fn bench_neighbors(c: &mut Criterion) {
    let mut g = c.benchmark_group("neighbors");
    let options = Options::default();
    for n in [1_000, 10_000, 100_000] {
        let (v, level) = lsm(n);
        let zones = zones_for(n);
        let span = KEYS / v.num_files(level).max(1) as u64;
        let mut mix = Mix(7);
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                let lo = mix.next() % (KEYS - span);
                let (lo, hi) = (user_key(lo), user_key(lo + span));
                black_box(neighbors_in(&v, &options, &zones, level, &lo, &hi))
            })
        });
    }
    g.finish();
}

fn bench_predict(c: &mut Criterion) {
    let mut g = c.benchmark_group("predict");
    let options = Options::default();
    let busy = HashSet::new();
    let clock = Clock {
        tick: 10_000,
        compacting_levels: 5,
        compactions: 5_000,
        deleted: 40_000,
        passive: vec![(50_000, 1_000); LEVELS],
    };
    for n in [1_000, 10_000, 100_000] {
        let (v, level) = lsm(n);
        let zones = zones_for(n);
        let files = v.files(level);
        let mut cursors = vec![None; LEVELS];
        cursors[level] = files.get(files.len() / 2).map(|f| f.smallest.clone());
        if n == 100_000 {
            g.sample_size(10);
        }
        for name in ["round-robin", "sica"] {
            let picker = picker_by_name(name).expect("a known picker");
            let mut mix = Mix(11);
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    let old = &files[(mix.next() % files.len() as u64) as usize];
                    let inputs = [std::sync::Arc::clone(old)];
                    let new = FileMeta {
                        number: u64::MAX,
                        ..FileMeta::clone(old)
                    };
                    let ctx = PredictCtx {
                        version: &v,
                        options: &options,
                        picker: &*picker,
                        cursors: &cursors,
                        compacting: &busy,
                        zones: &zones,
                        free_ratio: 0.5,
                        clock: &clock,
                        job_inputs: &inputs,
                        job_outputs: &[],
                    };
                    black_box(predict(&ctx, level, &new))
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_order, bench_order_moved, bench_edit, bench_neighbors, bench_predict
}
criterion_main!(benches);
