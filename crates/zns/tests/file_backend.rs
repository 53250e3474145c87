//! The file-backed emulator: what survives a reopen, and every kind of bad image.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use zkv_zns::{FileDevice, Geometry, IoCategory, ZnsError, ZoneState, ZonedDevice};

fn geo() -> Geometry {
    Geometry::new(8, 64 * 1024)
        .with_capacity(48 * 1024)
        .with_limits(4, 6)
}

fn kind<T>(r: zkv_zns::Result<T>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => e.kind(),
    }
}

#[test]
fn state_and_data_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
    {
        let dev = FileDevice::create(&path, geo()).unwrap();
        dev.append(0, &data, IoCategory::User).unwrap(); // implicitly open
        dev.append(1, &data[..4096], IoCategory::User).unwrap();
        dev.close_zone(1).unwrap(); // closed
        dev.append(2, &data[..4096], IoCategory::User).unwrap();
        dev.finish_zone(2).unwrap(); // full (finished)
        dev.open_zone(3).unwrap(); // explicitly open, nothing written
        dev.append(4, &vec![7u8; 48 * 1024], IoCategory::User)
            .unwrap(); // full (written)
        dev.sync().unwrap();
    }
    let dev = FileDevice::open(&path).unwrap();
    assert_eq!(dev.geometry(), geo());
    let z = dev.report_zones(0, 8).unwrap();
    let seen: Vec<(ZoneState, u64)> = z.iter().map(|z| (z.state, z.wp - z.start)).collect();
    let size = geo().zone_size;
    assert_eq!(
        seen[..5],
        [
            // A restart is not a power cut: every zone keeps its state.
            (ZoneState::ImplicitOpen, 8192),
            (ZoneState::Closed, 4096),
            (ZoneState::Full, size),
            (ZoneState::ExplicitOpen, 0),
            (ZoneState::Full, size),
        ]
    );
    let mut back = vec![0u8; 8192];
    dev.read(0, &mut back, IoCategory::User).unwrap();
    assert_eq!(back, data);
    // The finished zone reads zeros past what was written, after the reopen too.
    let mut tail = vec![1u8; 4096];
    dev.read(geo().zone_start(2) + 4096, &mut tail, IoCategory::User)
        .unwrap();
    assert!(tail.iter().all(|&b| b == 0));
    // Writing continues at the recovered write pointer.
    dev.append(0, &data[..4096], IoCategory::User).unwrap();
    assert_eq!(dev.zone_info(0).unwrap().wp, 12288);
}

#[test]
fn opening_an_image_writes_nothing_and_read_only_opens_share() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    {
        let dev = FileDevice::create(&path, geo()).unwrap();
        dev.append(0, &[3u8; 4096], IoCategory::User).unwrap();
        dev.open_zone(1).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let a = FileDevice::open_read_only(&path).unwrap();
    let b = FileDevice::open_read_only(&path).unwrap();
    assert_eq!(a.zone_info(1).unwrap().state, ZoneState::ExplicitOpen);
    let mut buf = vec![0u8; 4096];
    b.read(0, &mut buf, IoCategory::User).unwrap();
    assert_eq!(buf, vec![3u8; 4096]);
    assert_eq!(kind(a.reset_zone(0)), "read_only_device");
    assert_eq!(
        kind(a.append(0, &[1u8; 4096], IoCategory::User)),
        "read_only_device"
    );
    // Readers hold no lock: a writer may open the image next to them.
    drop(FileDevice::open(&path).unwrap());
    drop((a, b));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn failed_create_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.img");
    // Larger than any file system allows: sizing the file fails after it was created.
    let huge = Geometry::new(1 << 20, 1 << 40);
    assert!(FileDevice::create(&path, huge).is_err());
    assert!(!path.exists());
}

#[test]
fn power_cut_state_is_what_reopen_sees() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    {
        let dev = FileDevice::create(&path, geo()).unwrap();
        dev.append(0, &[1u8; 4096], IoCategory::User).unwrap();
        dev.sync().unwrap();
        dev.append(0, &[2u8; 4096], IoCategory::User).unwrap();
        dev.faults().unwrap().power_cut(zkv_zns::TearMode::Drop);
    }
    let dev = FileDevice::open(&path).unwrap();
    let z = dev.zone_info(0).unwrap();
    assert_eq!((z.state, z.wp), (ZoneState::Closed, 4096));
    let mut b = vec![0u8; 8192];
    dev.read(0, &mut b, IoCategory::User).unwrap();
    assert!(b[..4096].iter().all(|&x| x == 1) && b[4096..].iter().all(|&x| x == 0));
}

#[test]
fn image_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    let _held = FileDevice::create(&path, geo()).unwrap();
    let err = FileDevice::open(&path).unwrap_err();
    assert!(matches!(err, ZnsError::InUse { .. }), "{err}");
    assert!(err.to_string().contains("already in use"));
}

#[test]
fn existing_path_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    std::fs::write(&path, b"precious").unwrap();
    assert_eq!(kind(FileDevice::create(&path, geo())), "bad_image");
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
}

#[test]
fn invalid_geometry_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    for bad in [
        Geometry::new(0, 65536),
        Geometry::new(4, 65536 + 4096),
        Geometry::new(4, 65536).with_capacity(131072),
        Geometry::new(4, 65536).with_limits(5, 2),
    ] {
        assert_eq!(kind(FileDevice::create(&path, bad)), "invalid_geometry");
        assert!(!path.exists());
    }
}

fn corrupt_and_open(mutate: impl FnOnce(&std::path::Path)) -> ZnsError {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    drop(FileDevice::create(&path, geo()).unwrap());
    mutate(&path);
    let before = std::fs::read(&path).unwrap();
    let err = FileDevice::open(&path).unwrap_err();
    // A refused open changes nothing on disk.
    assert_eq!(std::fs::read(&path).unwrap(), before);
    err
}

fn poke(path: &std::path::Path, at: u64, byte: u8) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&[byte], at).unwrap();
}

type Mutation = Box<dyn FnOnce(&std::path::Path)>;

#[test]
fn bad_images_give_clear_errors() {
    let cases: Vec<(&str, Mutation, &str)> = vec![
        (
            "empty file",
            Box::new(|p| std::fs::write(p, b"").unwrap()),
            "truncated image",
        ),
        (
            "foreign file",
            Box::new(|p| std::fs::write(p, vec![0x42u8; 8192]).unwrap()),
            "bad magic",
        ),
        (
            "short foreign file",
            Box::new(|p| std::fs::write(p, b"root:x:0:0:root:/root:/bin/bash\n").unwrap()),
            "not a zkv zone image (bad magic)",
        ),
        (
            "the first bytes of an image",
            Box::new(|p| {
                let f = OpenOptions::new().write(true).open(p).unwrap();
                f.set_len(5).unwrap();
            }),
            "truncated image: 5 bytes",
        ),
        (
            "truncated data",
            Box::new(|p| {
                let f = OpenOptions::new().write(true).open(p).unwrap();
                f.set_len(100_000).unwrap();
            }),
            "truncated image",
        ),
        (
            "flipped header bit",
            Box::new(|p| poke(p, 33, 0x80)),
            "header checksum mismatch",
        ),
        (
            "newer version",
            Box::new(|p| poke(p, 8, 9)),
            "version 9 is not supported",
        ),
        (
            "flipped zone entry bit",
            Box::new(|p| poke(p, 4096 + 16 * 3 + 1, 0x10)),
            "zone 3: zone table entry checksum mismatch",
        ),
    ];
    for (name, mutate, want) in cases {
        let err = corrupt_and_open(mutate);
        assert!(
            err.to_string().contains(want),
            "{name}: expected '{want}' in '{err}'"
        );
    }
}

/// What one zone looks like from outside: condition, write pointer, and its bytes.
fn zone_view(dev: &dyn ZonedDevice, zone: u32) -> (ZoneState, u64, Vec<u8>) {
    let info = dev.zone_info(zone).unwrap();
    let mut bytes = vec![0u8; info.written() as usize];
    dev.read(info.start, &mut bytes, IoCategory::User).unwrap();
    (info.state, info.written(), bytes)
}

/// A process killed between any two storage steps of a zone command leaves the zone as it
/// was before the command or as the command left it, never a mix: in particular never a
/// zone whose table entry claims bytes that the file no longer holds (an interrupted reset
/// once left such a zone, and the metadata probe read zeros where a superblock had been).
#[test]
fn a_kill_between_storage_steps_leaves_each_zone_before_or_after_its_command() {
    type Cmd = fn(&dyn ZonedDevice) -> zkv_zns::Result<()>;
    let data: Vec<u8> = (0..16384u32).map(|i| (i * 7 % 251) as u8).collect();
    let cmds: Vec<(&str, Cmd)> = vec![
        ("append", |d| {
            d.append(0, &[5u8; 16384], IoCategory::User).map(|_| ())
        }),
        ("reset", |d| d.reset_zone(1)),
        ("finish", |d| d.finish_zone(1)),
        ("close", |d| d.close_zone(1)),
        ("reset full", |d| d.reset_zone(2)),
    ];
    for (name, cmd) in cmds {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.img");
        {
            let dev = FileDevice::create(&path, geo()).unwrap();
            dev.append(0, &data[..4096], IoCategory::User).unwrap();
            dev.append(1, &data, IoCategory::User).unwrap();
            dev.append(2, &vec![9u8; 48 * 1024], IoCategory::User)
                .unwrap();
            dev.sync().unwrap();
        }
        let before: Vec<_> = {
            let dev = FileDevice::open(&path).unwrap();
            (0..3).map(|z| zone_view(&dev, z)).collect()
        };
        let pristine = std::fs::read(&path).unwrap();
        let after: Vec<_> = {
            let counting = FileDevice::open_with_crash_point(&path, u64::MAX, 0).unwrap();
            cmd(&counting).unwrap();
            (0..3).map(|z| zone_view(&counting, z)).collect()
        };
        let steps = {
            std::fs::write(&path, &pristine).unwrap();
            let counting = FileDevice::open_with_crash_point(&path, u64::MAX, 0).unwrap();
            cmd(&counting).unwrap();
            counting.storage().steps()
        };
        assert!(steps >= 1, "{name}: no storage step");
        for budget in 0..steps {
            for seed in 0..3 {
                std::fs::write(&path, &pristine).unwrap();
                {
                    let dev = FileDevice::open_with_crash_point(&path, budget, seed).unwrap();
                    assert!(cmd(&dev).is_err(), "{name}: killed at step {budget}");
                }
                let dev = FileDevice::open(&path).unwrap();
                for z in 0..3u32 {
                    let seen = zone_view(&dev, z);
                    let (b, a) = (&before[z as usize], &after[z as usize]);
                    assert!(
                        seen == *b || seen == *a,
                        "{name}, kill at step {budget}: zone {z} is {:?} at {}, \
                         neither before ({:?} at {}) nor after ({:?} at {})",
                        seen.0,
                        seen.1,
                        b.0,
                        b.1,
                        a.0,
                        a.1
                    );
                }
            }
        }
    }
}

/// A persistent injected error fails every matching command until cleared; bit rot changes
/// a stored byte in place and nothing else, on both emulators.
#[test]
fn persistent_errors_and_bit_rot() {
    use zkv_zns::{FaultControl, FaultOp, MemDevice};
    let dir = tempfile::tempdir().unwrap();
    let file = FileDevice::create(&dir.path().join("z.img"), geo()).unwrap();
    let mem = MemDevice::new(geo()).unwrap();
    let devices: [(&dyn ZonedDevice, &dyn FaultControl); 2] = [(&file, &file), (&mem, &mem)];
    for (dev, faults) in devices {
        let data = vec![0x5au8; 8192];
        dev.append(1, &data, IoCategory::User).unwrap();
        dev.append(2, &data, IoCategory::User).unwrap();
        let start = dev.zone_info(1).unwrap().start;
        faults.inject_persistent(FaultOp::Read, Some(1));
        let mut buf = vec![0u8; 4096];
        for _ in 0..3 {
            assert_eq!(
                kind(dev.read(start, &mut buf, IoCategory::User)),
                "injected"
            );
        }
        let other = dev.zone_info(2).unwrap().start;
        dev.read(other, &mut buf, IoCategory::User).unwrap();
        faults.clear_injection();
        dev.read(start, &mut buf, IoCategory::User).unwrap();

        faults.rot(start + 100, 3).unwrap();
        let mut all = vec![0u8; 8192];
        dev.read(start, &mut all, IoCategory::User).unwrap();
        let mut want = data.clone();
        want[100] ^= 1 << 3;
        assert_eq!(all, want);
        assert_eq!(
            dev.zone_info(1).unwrap().written(),
            8192,
            "rot changed the zone"
        );
        // Nothing is stored past the write pointer: nothing to rot.
        assert!(faults.rot(start + 8192, 0).is_err());
    }
}
