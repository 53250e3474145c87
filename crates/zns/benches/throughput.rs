//! Device throughput: append and read of whole zones with 4 KiB and 1 MiB I/Os on the
//! in-memory and file-backed emulators.
//!
//! `cargo bench -p zkv-zns --bench throughput`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zkv_zns::{FileDevice, Geometry, IoCategory, MemDevice, ZonedDevice};

const ZONE: u64 = 16 << 20;

fn fill_zone(dev: &dyn ZonedDevice, zone: u32, io: &[u8]) {
    for _ in 0..ZONE / io.len() as u64 {
        dev.append(zone, io, IoCategory::User).expect("append");
    }
}

fn devices(dir: &std::path::Path) -> Vec<(&'static str, Box<dyn ZonedDevice>)> {
    let geo = Geometry::new(4, ZONE);
    vec![
        ("mem", Box::new(MemDevice::new(geo).expect("mem"))),
        (
            "file",
            Box::new(FileDevice::create(&dir.join("bench.img"), geo).expect("file")),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, dev) in devices(dir.path()) {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(ZONE));
        g.sample_size(10);
        for io_size in [4096usize, 1 << 20] {
            let io = vec![0x5Au8; io_size];
            let label = if io_size == 4096 { "4KiB" } else { "1MiB" };
            g.bench_function(BenchmarkId::new("append", label), |b| {
                b.iter(|| {
                    fill_zone(dev.as_ref(), 0, &io);
                    dev.reset_zone(0).expect("reset");
                })
            });
            fill_zone(dev.as_ref(), 1, &io);
            let mut buf = vec![0u8; io_size];
            g.bench_function(BenchmarkId::new("read", label), |b| {
                b.iter(|| {
                    for i in 0..ZONE / io_size as u64 {
                        dev.read(ZONE + i * io_size as u64, &mut buf, IoCategory::User)
                            .expect("read");
                    }
                })
            });
            dev.reset_zone(1).expect("reset");
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
