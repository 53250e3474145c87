//! Append throughput through the file layer against raw device appends, on the in-memory
//! device: the overhead of the layer (block buffering, extents, leases, placement) and the
//! cost of metadata syncs.
//!
//! `cargo bench -p zkv-zonefs --bench fs_throughput`
//!
//! Each iteration writes 16 MiB:
//! - `raw/append/{4KiB,1MiB}`: appends to one 16 MiB zone, then one device sync;
//! - `fs/append/{4KiB,1MiB}`: a new file of 16 MiB written with appends of that size, then
//!   closed (one sync: a device flush and one metadata record);
//! - `raw/append-sync64K/4KiB` and `fs/append-sync64K/4KiB`: 4 KiB appends with a sync every
//!   64 KiB, as a WAL synced per write batch would (256 syncs per iteration; through the
//!   file layer each one also writes a metadata record and syncs the metadata log).
//!
//! Only the writes and syncs are timed: the zone reset (raw) or the file deletion (fs) that
//! makes room for the next iteration is not. Every benchmark runs a raw round and a file
//! round back to back and reports one of the two (see [`Rig::pair`]), so that the figures of
//! one size compare under the same conditions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zkv_zns::{Geometry, IoCategory, MemDevice, ZonedDevice};
use zkv_zonefs::fs::{FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint};

const ZONE: u64 = 16 << 20;
const FILE: u64 = 16 << 20;
const SYNC_EVERY: u64 = 64 << 10;

fn geometry() -> Geometry {
    // 3 metadata zones and 13 data zones: a 16 MiB file takes one or two zones.
    Geometry::new(16, ZONE)
}

fn label(io: usize) -> &'static str {
    if io == 4096 {
        "4KiB"
    } else {
        "1MiB"
    }
}

/// Appends `FILE` bytes to zone 0 of a raw device, syncing every `sync_every` bytes and at
/// the end; returns the time taken. The zone is reset afterwards, untimed.
fn raw_round(dev: &dyn ZonedDevice, io: &[u8], sync_every: u64) -> Duration {
    let start = Instant::now();
    let mut done = 0u64;
    while done < FILE {
        dev.append(0, io, IoCategory::User).expect("append");
        done += io.len() as u64;
        if done.is_multiple_of(sync_every) {
            dev.sync().expect("sync");
        }
    }
    if !done.is_multiple_of(sync_every) {
        dev.sync().expect("sync");
    }
    let took = start.elapsed();
    dev.reset_zone(0).expect("reset");
    took
}

fn sst_hint() -> PlacementHint {
    PlacementHint {
        kind: Some(FileKind::Sst),
        level: Some(1),
        lifetime: Lifetime::Medium,
        ..Default::default()
    }
}

/// Writes a `FILE`-byte file with appends of `io`, syncing every `sync_every` bytes and
/// closing it; returns the time taken. The file is deleted afterwards, untimed (its zones
/// are reset at once, as every byte in them is dead).
fn fs_round(fs: &ZoneFs, io: &[u8], sync_every: u64) -> Duration {
    let start = Instant::now();
    let mut w = fs
        .create("bench.sst", FileKind::Sst, sst_hint())
        .expect("create");
    let mut done = 0u64;
    while done < FILE {
        w.append(io).expect("append");
        done += io.len() as u64;
        if done.is_multiple_of(sync_every) && done < FILE {
            w.sync().expect("sync");
        }
    }
    w.close().expect("close");
    let took = start.elapsed();
    fs.delete("bench.sst").expect("delete");
    took
}

/// The two devices under test: a raw in-memory device and a file system on another one.
struct Rig {
    raw: Arc<dyn ZonedDevice>,
    fs: ZoneFs,
}

impl Rig {
    fn new() -> Rig {
        let dev: Arc<dyn ZonedDevice> = Arc::new(MemDevice::new(geometry()).expect("mem"));
        Rig {
            raw: Arc::new(MemDevice::new(geometry()).expect("mem")),
            fs: ZoneFs::format(dev, FsOptions::default()).expect("format"),
        }
    }

    /// One raw round and one file round, back to back; returns both times. Every benchmark
    /// runs both and reports one of them, so that raw and file writes always run under the
    /// same conditions: the in-memory device frees a zone's buffer at each reset and grows
    /// it again while writing, so the allocator's state carries over from one benchmark to
    /// the next and would otherwise favour whichever ran after a certain other one.
    fn pair(&self, io: &[u8], sync_every: u64) -> (Duration, Duration) {
        let raw = raw_round(self.raw.as_ref(), io, sync_every);
        let fs = fs_round(&self.fs, io, sync_every);
        (raw, fs)
    }
}

fn bench(c: &mut Criterion) {
    let rig = Rig::new();
    let mut g = c.benchmark_group("append");
    g.throughput(Throughput::Bytes(FILE));
    g.sample_size(10);
    let cases = [
        ("raw", "fs", 4096usize, FILE),
        ("raw", "fs", 1 << 20, FILE),
        ("raw-sync64K", "fs-sync64K", 4096, SYNC_EVERY),
    ];
    for (raw_name, fs_name, io_size, sync_every) in cases {
        let io = vec![0x5Au8; io_size];
        g.bench_function(BenchmarkId::new(raw_name, label(io_size)), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| rig.pair(&io, sync_every).0).sum())
        });
        g.bench_function(BenchmarkId::new(fs_name, label(io_size)), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| rig.pair(&io, sync_every).1).sum())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
