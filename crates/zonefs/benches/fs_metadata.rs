//! Metadata costs of the file layer on the in-memory device.
//!
//! `cargo bench -p zkv-zonefs --bench fs_metadata`
//!
//! - `meta-records/batch/{1,64}`: FileUpdate records appended to the metadata log
//!   (`MetaLog::append`) and made durable by `MetaLog::sync` after every record or every 64
//!   records. The records update 64 files of one extent each, so each is about 60 bytes; the
//!   log rolls to the next metadata zone (16 MiB) whenever one fills, as in real use.
//!   Throughput is in records.
//! - `mount/10k-files/{log,snapshot}`: `ZoneFs::mount` of a file system holding 10,000 small
//!   files (1 KiB each, created, written and closed one after another; every create and
//!   every close is a metadata sync). `log`: mounted as the writes left it, so recovery
//!   replays the snapshot of the last roll and every batch after it; `snapshot`: after the
//!   log rolled once more, so recovery reads one snapshot of the 10,000 files and no batch.
//!   Repeated mounts of an undamaged file system write nothing, so every iteration mounts
//!   the same device.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zkv_zns::{Geometry, MemDevice, ZonedDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs};
use zkv_zonefs::meta::{Extent, FileId, FileKind, FileMeta, FsState, MetaLog, Record};
use zkv_zonefs::placement::{Lifetime, PlacementHint};

const ZONE: u64 = 16 << 20;
const META_ZONES: u32 = 3;
const FILES: u64 = 64;
const MOUNT_FILES: usize = 10_000;

fn device(zones: u32) -> Arc<dyn ZonedDevice> {
    Arc::new(MemDevice::new(Geometry::new(zones, ZONE)).expect("mem"))
}

/// The metadata of file `k` (one extent in its own data zone) at its `n`th update.
fn file_meta(k: u64, n: u64) -> FileMeta {
    let len = 4096 * (1 + n % 256);
    FileMeta {
        name: format!("{:06}.sst", k + 1),
        kind: FileKind::Sst,
        size: len - 100,
        extents: vec![Extent {
            zone: META_ZONES + k as u32,
            offset: 0,
            len,
        }],
        level: Some(1),
        lifetime: Lifetime::Medium.code(),
    }
}

/// A formatted log and a state holding the 64 files.
fn log_with_files() -> (MetaLog, FsState) {
    let dev = device(META_ZONES + FILES as u32);
    let mut log = MetaLog::format(dev, META_ZONES).expect("format");
    let mut state = FsState::new(log.layout());
    for k in 0..FILES {
        let rec = Record::FileUpdate {
            id: FileId(k + 1),
            meta: file_meta(k, 0),
        };
        state.apply(&rec).expect("apply");
        log.append(&rec).expect("append");
    }
    log.sync(&state).expect("sync");
    (log, state)
}

/// Appends and syncs `records` FileUpdate records, `batch` per sync; returns the time.
fn records_round(
    log: &mut MetaLog,
    state: &mut FsState,
    next: &mut u64,
    records: u64,
    batch: u64,
) -> Duration {
    let start = Instant::now();
    for i in 0..records {
        let n = *next;
        *next += 1;
        let k = n % FILES;
        let rec = Record::FileUpdate {
            id: FileId(k + 1),
            meta: file_meta(k, n / FILES + 1),
        };
        state.apply(&rec).expect("apply");
        log.append(&rec).expect("append");
        if (i + 1).is_multiple_of(batch) {
            log.sync(state).expect("sync");
        }
    }
    if !records.is_multiple_of(batch) {
        log.sync(state).expect("sync");
    }
    start.elapsed()
}

fn bench_records(c: &mut Criterion) {
    let mut g = c.benchmark_group("meta-records");
    g.sample_size(10);
    for batch in [1u64, 64] {
        let (mut log, mut state) = log_with_files();
        let mut next = 0;
        let per_iter = 64 * batch.max(16);
        g.throughput(Throughput::Elements(per_iter));
        g.bench_function(BenchmarkId::new("batch", batch), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| records_round(&mut log, &mut state, &mut next, per_iter, batch))
                    .sum()
            })
        });
    }
    g.finish();
}

/// A device holding a file system with `MOUNT_FILES` small files, released.
fn device_with_files() -> Arc<dyn ZonedDevice> {
    let dev = device(64);
    let fs = ZoneFs::format(Arc::clone(&dev), FsOptions::default()).expect("format");
    let hint = PlacementHint {
        kind: Some(FileKind::Sst),
        level: Some(1),
        lifetime: Lifetime::Medium,
        ..Default::default()
    };
    let data = vec![0x5Au8; 1024];
    for i in 0..MOUNT_FILES {
        let mut w = fs
            .create(&format!("{i:06}.sst"), FileKind::Sst, hint.clone())
            .expect("create");
        w.append(&data).expect("append");
        w.close().expect("close");
    }
    drop(fs);
    dev
}

/// Describes what a mount of `dev` replays (printed once, next to the figures).
fn describe_log(dev: &Arc<dyn ZonedDevice>, what: &str) {
    let (state, log) = MetaLog::recover(Arc::clone(dev), META_ZONES).expect("recover");
    if let Some(m) = log.mount_report() {
        eprintln!(
            "mount/{what}: {} files; replays metadata zone {} (generation {}): snapshot + {} \
             batches, {} records, {} KiB of log",
            state.file_count(),
            m.zone,
            m.seq,
            m.batches,
            m.records,
            (dev.geometry().zone_capacity - log.free_bytes()) / 1024
        );
    }
}

fn bench_mount(c: &mut Criterion) {
    let mut g = c.benchmark_group("mount");
    g.sample_size(10);
    g.throughput(Throughput::Elements(MOUNT_FILES as u64));
    let dev = device_with_files();
    describe_log(&dev, "log");
    g.bench_function(BenchmarkId::new("10k-files", "log"), |b| {
        b.iter_with_large_drop(|| {
            ZoneFs::mount(Arc::clone(&dev), FsOptions::default()).expect("mount")
        })
    });
    // Roll the log: the next mounts read one snapshot.
    let (state, mut log) = MetaLog::recover(Arc::clone(&dev), META_ZONES).expect("recover");
    log.roll_now(&state).expect("roll");
    drop(log);
    describe_log(&dev, "snapshot");
    g.bench_function(BenchmarkId::new("10k-files", "snapshot"), |b| {
        b.iter_with_large_drop(|| {
            ZoneFs::mount(Arc::clone(&dev), FsOptions::default()).expect("mount")
        })
    });
    g.finish();
}

criterion_group!(benches, bench_records, bench_mount);
criterion_main!(benches);
