//! Runs the conformance suite against the in-memory and file-backed emulators, over
//! geometries that exercise every case: QEMU-like equal limits with capacity < size,
//! active > open limits, unlimited, and 512-byte blocks.

use zkv_zns::conformance::{cases, run_all, Needs};
use zkv_zns::{FileDevice, Geometry, MemDevice, ZonedDevice};

const KIB: u64 = 1024;

fn geometries() -> Vec<(&'static str, Geometry)> {
    vec![
        (
            "qemu_like",
            Geometry::new(16, 256 * KIB)
                .with_capacity(192 * KIB)
                .with_limits(14, 14),
        ),
        (
            "open3_active5",
            Geometry::new(10, 64 * KIB).with_limits(3, 5),
        ),
        ("unlimited", Geometry::new(8, 64 * KIB).with_limits(0, 0)),
        (
            "small_blocks",
            Geometry::new(8, 16 * KIB)
                .with_block_size(512)
                .with_capacity(15 * KIB)
                .with_limits(2, 4),
        ),
    ]
}

/// Which needs a geometry cannot meet: the suite must skip exactly those cases.
fn unmet(geo: &Geometry) -> Vec<Needs> {
    let mut v = Vec::new();
    if geo.max_open == 0 {
        v.extend([Needs::OpenLimit, Needs::AutoClose, Needs::EqualLimits]);
    } else if geo.max_open == geo.max_active {
        v.extend([Needs::ActiveLimit, Needs::AutoClose]);
    } else {
        v.push(Needs::EqualLimits);
    }
    if geo.max_active == 0 {
        v.push(Needs::ActiveLimit);
    }
    v
}

fn check(name: &str, dev: &dyn ZonedDevice, geo: &Geometry) {
    let summary = run_all(dev, false);
    assert!(
        summary.failed.is_empty(),
        "{name}: {} case(s) failed: {:#?}",
        summary.failed.len(),
        summary.failed
    );
    let expected: Vec<String> = cases()
        .into_iter()
        .filter(|c| unmet(geo).contains(&c.needs))
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(summary.skipped, expected, "{name}: unexpected skips");
    assert_eq!(summary.passed + summary.skipped.len(), cases().len());
}

#[test]
fn memory_backend_conforms() {
    for (name, geo) in geometries() {
        let dev = MemDevice::new(geo).unwrap();
        check(name, &dev, &geo);
    }
}

#[test]
fn file_backend_conforms() {
    let dir = tempfile::tempdir().unwrap();
    for (name, geo) in geometries() {
        let path = dir.path().join(format!("{name}.img"));
        let dev = FileDevice::create(&path, geo).unwrap();
        check(name, &dev, &geo);
    }
}

/// The file backend must also conform after being closed and reopened mid-way: the zone
/// conditions it recovers must be a valid starting point for every case.
#[test]
fn reopened_file_backend_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let (_, geo) = geometries().remove(1);
    let path = dir.path().join("reopen.img");
    {
        let dev = FileDevice::create(&path, geo).unwrap();
        dev.append(0, &[1u8; 4096], zkv_zns::IoCategory::User)
            .unwrap();
        dev.open_zone(1).unwrap();
        dev.finish_zone(2).unwrap();
        dev.sync().unwrap();
    }
    let dev = FileDevice::open(&path).unwrap();
    check("reopened", &dev, &geo);
}
