//! End-to-end tests of `zkv mkfs` and `zkv inspect`: the real binary on image files, with
//! files written through the library (`zkv_zonefs::fs::ZoneFs`) in between.

mod common;
use common::*;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use zkv_zns::{FileDevice, Geometry, ZonedDevice};
use zkv_zonefs::fs::{CleaningMode, FsOptions, ZoneFs};
use zkv_zonefs::meta::{dump_zone, FileKind, FrameKind, Superblock, SUPERBLOCK_LEN};
use zkv_zonefs::placement::{Lifetime, PlacementHint};

/// The zones and zone capacity of [`IMAGE_GEOMETRY`].
const ZONES: u32 = 16;
const CAP: u64 = 768 * KIB;

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an unsigned integer in {v}"))
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not a list in {v}"))
}

impl Img {
    /// A new image formatted by `zkv mkfs` with the test geometry.
    fn formatted() -> Img {
        let img = Img::none();
        let out = ok(&img.mkfs_new(&[]));
        assert!(out.contains("formatted"), "{out}");
        img
    }

    fn mkfs<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["mkfs", "--device", &self.spec];
        v.extend_from_slice(extra);
        v
    }

    /// `zkv mkfs` that creates the image with the test geometry, and `extra` flags.
    fn mkfs_new<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut flags = IMAGE_GEOMETRY.to_vec();
        flags.extend_from_slice(extra);
        self.mkfs(&flags)
    }

    fn inspect<'a>(&'a self, what: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["inspect", what, "--device", &self.spec];
        v.extend_from_slice(extra);
        v
    }

    fn inspect_json(&self, what: &str) -> Value {
        json(&ok(&self.inspect(what, &["--json"])))
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("read image")
    }

    /// Mounts the image with the library (with the recorded options), runs `f`, and
    /// releases the image.
    fn with_fs<T>(&self, f: impl FnOnce(&ZoneFs) -> T) -> T {
        let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(&self.path).expect("open"));
        let fs = ZoneFs::mount_stored(dev).expect("mount");
        f(&fs)
    }

    /// Overwrites bytes of the image at zone `zone`, offset `off` (relative to the zone).
    fn poke(&self, zone: u32, off: u64, f: impl FnOnce(&mut [u8])) {
        let mut bytes = self.bytes();
        let at = (data_offset(ZONES) + u64::from(zone) * MIB + off) as usize;
        f(&mut bytes[at..at + 16]);
        std::fs::write(&self.path, bytes).expect("write image");
    }
}

/// Where zone data starts in an image (docs/DEVICE.md): the header block and the zone
/// table, rounded up to 4 KiB.
fn data_offset(zones: u32) -> u64 {
    (4096 + 16 * u64::from(zones)).next_multiple_of(4096)
}

fn hint(kind: FileKind, level: Option<u8>) -> PlacementHint {
    PlacementHint {
        kind: Some(kind),
        level,
        lifetime: Lifetime::for_file(kind, level, 1),
        ..Default::default()
    }
}

fn data(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// Files of every kind: SSTs of two levels (one spanning zones), a WAL synced twice, a
/// manifest, and a deleted SST that leaves invalid bytes behind.
fn write_files(fs: &ZoneFs) {
    let put = |name: &str, kind, level, len: usize| {
        let mut w = fs.create(name, kind, hint(kind, level)).expect("create");
        w.append(&data(name.len() as u8, len)).expect("append");
        w.close().expect("close");
    };
    put("000010.sst", FileKind::Sst, Some(1), 1_000_000);
    put("000011.sst", FileKind::Sst, Some(2), 200_000);
    put("MANIFEST-000001", FileKind::Manifest, None, 5000);
    put("000012.sst", FileKind::Sst, Some(1), 300 * 1024);
    let mut wal = fs
        .create("000001.log", FileKind::Wal, hint(FileKind::Wal, None))
        .expect("create");
    wal.append(&data(1, 100)).expect("append");
    wal.sync().expect("sync");
    wal.append(&data(2, 50)).expect("append");
    wal.close().expect("close");
    fs.delete("000012.sst").expect("delete");
}

fn formatted_with_files() -> Img {
    let img = Img::formatted();
    img.with_fs(write_files);
    img
}

#[test]
fn mkfs_creates_and_formats_a_new_image() {
    let _serial = serial();
    let img = Img::none();
    let out = ok(&img.mkfs_new(&["--max-open", "6", "--max-active", "8", "--meta-zones", "2"]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "created {}: 16 zones of 1 MiB (capacity 768 KiB), 4 KiB blocks, max open 6, \
             max active 8",
            img.spec
        )
    );
    assert_eq!(
        lines[1],
        format!(
            "formatted {}: 2 metadata zones, 14 data zones, 10752 KiB usable",
            img.spec
        )
    );
    // The library mounts it, with the metadata zone count the superblock records.
    let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(&img.path).unwrap());
    assert_eq!(
        dev.geometry(),
        Geometry::new(16, MIB).with_capacity(CAP).with_limits(6, 8)
    );
    let fs = ZoneFs::mount(dev, FsOptions::default().with_meta_zones(2)).unwrap();
    assert_eq!(fs.list(), vec![]);
    drop(fs);
    // inspect finds the metadata zone count by itself.
    let df = json(&ok(&img.inspect("df", &["--json", "--reserved-zones", "1"])));
    assert_eq!(u(&df, "meta_zones"), 2);
    assert_eq!(u(&df, "data_zones"), 14);
    assert_eq!(u(&df, "usable_bytes"), 13 * CAP);
    assert_eq!(u(&df, "free_bytes"), 13 * CAP);
}

#[test]
fn mkfs_records_the_options_and_inspect_shows_them() {
    let _serial = serial();
    let img = Img::none();
    let out = ok(&img.mkfs_new(&[
        "--reserved-zones",
        "2",
        "--placement",
        "liza",
        "--finish-threshold",
        "15",
        "--gc-start",
        "10",
        "--gc-stop",
        "30",
        "--gc-mode",
        "compensate",
    ]));
    assert!(
        out.ends_with(
            "\noptions: reserved zones 2, placement liza, finish threshold 15%, gc start 10%, \
             gc stop 30%, gc mode compensate\n"
        ),
        "{out}"
    );
    let df = img.inspect_json("df");
    let o = &df["options"];
    assert_eq!(
        (
            u(o, "reserved_zones"),
            s(o, "placement"),
            u(o, "finish_threshold")
        ),
        (2, "liza", 15)
    );
    assert_eq!(
        (u(o, "gc_start"), u(o, "gc_stop"), s(o, "gc_mode")),
        (10, 30, "compensate")
    );
    // The figures use the recorded reserve; the mount was read-only.
    assert_eq!(u(&df, "reserved_zones"), 2);
    assert_eq!(u(&df, "usable_bytes"), 11 * CAP);
    assert_eq!(df["mount"]["read_only"], Value::Bool(true));
    let dump = json(&ok(&img.inspect("dump", &[])));
    assert_eq!(dump["df"]["options"], df["options"]);

    // The library mounts with the recorded options...
    let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(&img.path).unwrap());
    let fs = ZoneFs::mount_stored(Arc::clone(&dev)).unwrap();
    let want = FsOptions::default()
        .with_reserved_zones(2)
        .with_finish_threshold(Some(15))
        .with_gc(10, 30)
        .with_gc_mode(CleaningMode::Compensate);
    assert_eq!(fs.options(), &want);
    drop(fs);
    // ... and a mount with other options records those.
    drop(ZoneFs::mount(dev, FsOptions::default().with_reserved_zones(1)).unwrap());
    let df = img.inspect_json("df");
    assert_eq!(u(&df["options"], "reserved_zones"), 1);
    assert!(df["options"]["finish_threshold"].is_null());
    assert_eq!(s(&df["options"], "gc_mode"), "copy");
    let human = ok(&img.inspect("df", &[]));
    assert!(
        human.lines().any(|l| l
            == "options: reserved zones 1, placement liza, finish threshold none, \
                gc start 20%, gc stop 25%, gc mode copy"),
        "{human}"
    );
}

#[test]
fn an_image_of_an_older_format_is_a_clear_error() {
    let _serial = serial();
    let img = formatted_with_files();
    // The superblock an older build wrote: the same layout, format version 1.
    let mut bytes = img.bytes();
    let at = data_offset(ZONES) as usize;
    let mut sb = Superblock::decode(&bytes[at..at + SUPERBLOCK_LEN]).unwrap();
    sb.version = 1;
    bytes[at..at + SUPERBLOCK_LEN].copy_from_slice(&sb.encode());
    bytes[at + 4096..at + 4096 + SUPERBLOCK_LEN].copy_from_slice(&sb.encode());
    std::fs::write(&img.path, &bytes).unwrap();
    let want = format!(
        "{}: metadata zone 0: format version 1 is not supported (this build reads versions 2 \
         to 3); reformat the device",
        img.spec
    );
    for what in ["zones", "files", "df"] {
        assert_eq!(fails(&img.inspect(what, &[])), want, "{what}");
    }
    let (run, msg) = fails_run(&img.inspect("dump", &[]), 1);
    assert_eq!(msg, want);
    assert_eq!(
        u(
            &arr(&json(&run.stdout), "metadata_zones")[0]["superblock"],
            "version"
        ),
        1
    );
    assert!(img.bytes() == bytes, "inspect changed the image");
    let msg = fails(&img.mkfs(&[]));
    assert!(
        msg.contains("already holds a zkv file system (its metadata cannot be read: ")
            && msg.contains("format version 1 is not supported"),
        "{msg}"
    );
    assert!(img.bytes() == bytes, "a refused mkfs changed the image");
    // Reformatting is the way out.
    ok(&img.mkfs(&["--force"]));
    assert!(arr(&img.inspect_json("files"), "files").is_empty());
}

#[test]
fn mkfs_refuses_a_file_system_without_force() {
    let _serial = serial();
    let img = formatted_with_files();
    let before = img.bytes();
    let msg = fails(&img.mkfs(&[]));
    assert_eq!(
        msg,
        format!(
            "{} already holds a zkv file system (4 files, 1205150 B of data); formatting \
             would erase it: add --force to format it anyway",
            img.spec
        )
    );
    assert!(img.bytes() == before, "a refused mkfs changed the image");

    // Geometry flags may repeat the image's geometry, never contradict it.
    let msg = fails(&img.mkfs(&["--force", "--zones", "8"]));
    assert!(
        msg.starts_with("--zones 8: ") && msg.contains("already exists with --zones 16"),
        "{msg}"
    );
    assert!(img.bytes() == before);

    let out = ok(&img.mkfs(&["--force", "--zones", "16", "--zone-size", "1M"]));
    assert!(out.starts_with("erased "), "{out}");
    assert!(out.contains("formatted"), "{out}");
    img.with_fs(|fs| assert!(fs.list().is_empty()));
    let files = img.inspect_json("files");
    assert_eq!(arr(&files, "files").len(), 0);
}

#[test]
fn mkfs_formats_a_zone_image_and_refuses_bad_options() {
    let _serial = serial();
    let img = Img::blank(8, "1M");
    ok(&[
        "zone", "write", "--device", &img.spec, "--zone", "5", "--offset", "0", "--len", "8K",
    ]);
    let before = img.bytes();
    // Values the file layer refuses: one error line, nothing written.
    for (extra, want) in [
        (
            &["--meta-zones", "1"][..],
            "1 metadata zones do not fit a device of 8 zones",
        ),
        (
            &["--meta-zones", "8"],
            "8 metadata zones do not fit a device of 8 zones",
        ),
        (
            &["--reserved-zones", "5"],
            "invalid file system options: 5 reserved zones leave none of the 5 data zones",
        ),
        (
            &["--gc-start", "30", "--gc-stop", "20"],
            "invalid zone cleaning thresholds: gc_start 30% and gc_stop 20%",
        ),
        (&["--gc-start", "0"], "invalid zone cleaning thresholds"),
        (
            &["--finish-threshold", "101"],
            "finish threshold 101% is above 100%",
        ),
    ] {
        let msg = fails(&img.mkfs(extra));
        assert!(msg.contains(want), "{extra:?}: {msg}");
        assert!(img.bytes() == before, "{extra:?} changed the image");
    }
    // Values that are not values at all are usage errors.
    for (extra, want) in [
        (&["--placement", "nope"][..], "'nope'"),
        (
            &["--gc-mode", "sweep"],
            "unknown cleaning mode (known: copy, compact, compensate)",
        ),
        (&["--gc-stop", "300"], "'300'"),
        (&["--reserved-zones", "-1"], "'-1'"),
    ] {
        let (_, msg) = fails_run(&img.mkfs(extra), 2);
        assert!(msg.contains(want), "{extra:?}: {msg}");
        assert!(img.bytes() == before, "{extra:?} changed the image");
    }
    let (_, msg) = fails_run(&img.mkfs(&["--placement", "nope"]), 2);
    assert!(msg.contains("liza"), "the known policies are listed: {msg}");

    // An image without a file system is formatted without --force; its data is erased.
    let out = ok(&img.mkfs(&[]));
    assert_eq!(
        out,
        format!(
            "erased 1 written zone\nformatted {}: 3 metadata zones, 5 data zones, 5 MiB usable\n\
             options: reserved zones 0, placement liza, finish threshold none, gc start 20%, \
             gc stop 25%, gc mode copy\n",
            img.spec
        )
    );
    let zones = img.inspect_json("zones");
    assert!(arr(&zones, "zones")
        .iter()
        .all(|z| s(z, "state") == "empty"));
}

#[test]
fn mkfs_needs_a_geometry_for_a_new_image_and_leaves_nothing_when_refused() {
    let _serial = serial();
    let img = Img::none();
    let msg = fails(&img.mkfs(&[]));
    assert!(
        msg.starts_with("--zones and --zone-size are required: ")
            && msg.contains("does not exist yet"),
        "{msg}"
    );
    let msg = fails(&img.mkfs(&["--zones", "4"]));
    assert!(msg.starts_with("--zone-size is required"), "{msg}");
    // Bad geometry, and options the new device cannot take: no image is left behind.
    for (extra, want) in [
        (
            &["--zones", "4", "--zone-size", "3M"][..],
            "not a power of two",
        ),
        (
            &["--zones", "4", "--zone-size", "1M", "--meta-zones", "4"],
            "4 metadata zones do not fit",
        ),
        (
            &["--zones", "6", "--zone-size", "1M", "--max-open", "2"],
            "invalid file system options",
        ),
    ] {
        let msg = fails(&img.mkfs(extra));
        assert!(msg.contains(want), "{extra:?}: {msg}");
        assert!(
            !img.path.exists(),
            "{extra:?} left {} behind",
            img.path.display()
        );
    }
}

#[test]
fn mem_and_zbd_are_handled() {
    let _serial = serial();
    let msg = fails(&[
        "mkfs",
        "--device",
        "mem",
        "--zones",
        "4",
        "--zone-size",
        "1M",
    ]);
    assert!(
        msg.starts_with("--device mem: an in-memory device does not outlive the command"),
        "{msg}"
    );
    for what in ["zones", "files", "df", "dump"] {
        let msg = fails(&["inspect", what, "--device", "mem"]);
        assert!(msg.starts_with("--device mem: "), "{what}: {msg}");
    }
    let msg = fails(&[
        "mkfs",
        "--device",
        "zbd:/nonexistent/zkv-dev",
        "--zones",
        "4",
    ]);
    assert!(
        msg.contains("--zones") && msg.contains("zoned block device"),
        "{msg}"
    );
    let msg = fails(&["inspect", "df", "--device", "zbd:/nonexistent/zkv-dev"]);
    assert!(msg.contains("/nonexistent/zkv-dev"), "{msg}");
}

#[test]
fn inspect_zones_matches_the_library_and_changes_nothing() {
    let _serial = serial();
    let img = formatted_with_files();
    let before = img.bytes();
    let v = img.inspect_json("zones");
    assert!(img.bytes() == before, "inspect changed the image");

    assert_eq!(s(&v, "device"), img.spec);
    assert_eq!(u(&v, "meta_zones"), 3);
    assert_eq!(u(&v["geometry"], "zone_capacity"), CAP);
    assert_eq!(v["mount"]["would_write"], Value::Bool(false));
    assert!(arr(&v["mount"], "changes").is_empty());
    let log = &v["mount"]["log"];
    assert_eq!(u(log, "zone"), 0);
    assert_eq!(u(log, "generation"), 1);
    assert!(u(log, "commit") > 5, "{log}");
    assert!(log["torn_tail"].is_null());

    let zones = arr(&v, "zones");
    assert_eq!(zones.len(), 13);
    let stats = img.with_fs(|fs| fs.zone_stats().unwrap());
    assert_eq!(stats.len(), zones.len());
    let mut invalid_somewhere = false;
    for (z, st) in zones.iter().zip(&stats) {
        assert_eq!(u(z, "zone"), u64::from(st.zone));
        assert_eq!(s(z, "state"), st.state.name());
        assert_eq!(u(z, "written"), st.written, "{z}");
        assert_eq!(u(z, "valid"), st.valid, "{z}");
        assert_eq!(u(z, "invalid"), st.invalid, "{z}");
        assert_eq!(u(z, "class"), u64::from(st.class), "{z}");
        assert_eq!(u(z, "written"), u(z, "valid") + u(z, "invalid"));
        assert!(z["resets"].is_null());
        assert!(z["files"].is_u64());
        match st.class {
            0 => assert!(z["class_name"].is_null()),
            _ => assert!(z["class_name"].is_string()),
        }
        invalid_somewhere |= st.invalid > 0;
    }
    assert!(
        invalid_somewhere,
        "the deleted file and the WAL padding leave invalid bytes"
    );
    // A zone spanned by the big SST is full with its capacity written.
    assert!(zones
        .iter()
        .any(|z| s(z, "state") == "full" && u(z, "written") == CAP));

    let human = ok(&img.inspect("zones", &[]));
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "{}: 16 zones of 1 MiB (capacity 768 KiB), 4 KiB blocks, max open 14, max active 14",
            img.spec
        )
    );
    assert!(
        lines[1].starts_with("metadata: zones 0-2; generation 1 in zone 0, commit "),
        "{human}"
    );
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["zone", "state", "written", "valid", "invalid", "class", "files"]
    );
    assert_eq!(lines.len(), 3 + 13, "{human}");
    // Columns are aligned: every row is as long as its header up to the last column.
    let width = lines[2].find("files").unwrap() + "files".len();
    for l in &lines[3..] {
        assert_eq!(l.len(), width, "{human}");
    }
    assert!(!human.contains("note:"), "{human}");
    assert!(img.bytes() == before, "inspect changed the image");
}

#[test]
fn inspect_files_lists_every_file() {
    let _serial = serial();
    let img = formatted_with_files();
    let before = img.bytes();
    let v = img.inspect_json("files");
    let files = arr(&v, "files");
    let (list, zones_of) = img.with_fs(|fs| {
        let list = fs.list();
        let zones: Vec<Vec<(u32, u64)>> =
            list.iter().map(|f| fs.zones_of(&f.name).unwrap()).collect();
        (list, zones)
    });
    assert_eq!(files.len(), 4);
    for ((f, info), zones) in files.iter().zip(&list).zip(&zones_of) {
        assert_eq!(s(f, "name"), info.name);
        assert_eq!(u(f, "size"), info.size);
        assert_eq!(u(f, "extent_count"), info.extents as u64);
        assert_eq!(u(f, "lifetime"), u64::from(info.lifetime));
        assert!(u(f, "id") > 0);
        assert!(u(f, "extent_bytes") >= info.size);
        assert!(
            f.get("extents").is_none(),
            "extents are listed by dump only"
        );
        match info.level {
            Some(l) => assert_eq!(u(f, "level"), u64::from(l)),
            None => assert!(f["level"].is_null()),
        }
        let got: Vec<(u32, u64)> = arr(f, "zones")
            .iter()
            .map(|z| (u(z, "zone") as u32, u(z, "bytes")))
            .collect();
        assert_eq!(&got, zones);
    }
    let by_name = |n: &str| files.iter().find(|f| s(f, "name") == n).unwrap();
    assert_eq!(s(by_name("000001.log"), "kind"), "wal");
    assert_eq!(s(by_name("000001.log"), "lifetime_name"), "short");
    assert_eq!(
        u(by_name("000001.log"), "extent_count"),
        2,
        "a sync then more data"
    );
    assert_eq!(u(by_name("000001.log"), "size"), 150);
    assert_eq!(s(by_name("MANIFEST-000001"), "kind"), "manifest");
    assert_eq!(s(by_name("000010.sst"), "kind"), "sst");
    assert_eq!(s(by_name("000010.sst"), "lifetime_name"), "medium");
    assert_eq!(s(by_name("000011.sst"), "lifetime_name"), "long");
    assert!(
        arr(by_name("000010.sst"), "zones").len() >= 2,
        "1 MB spans zones of 768 KiB"
    );

    let human = ok(&img.inspect("files", &[]));
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["name", "kind", "size", "level", "lifetime", "extents", "zones"]
    );
    assert_eq!(
        lines[3].split_whitespace().collect::<Vec<_>>()[..6],
        ["000001.log", "wal", "150", "B", "-", "short"],
        "{human}"
    );
    assert!(human.contains("000010.sst "), "{human}");
    assert_eq!(lines.last().copied(), Some("4 files, 1205150 B"));
    assert!(img.bytes() == before);
}

#[test]
fn inspect_df_matches_the_library() {
    let _serial = serial();
    let img = formatted_with_files();
    let v = img.inspect_json("df");
    let zones = img.inspect_json("zones");
    let stats = img.with_fs(|fs| fs.stats());
    assert_eq!(u(&v, "usable_bytes"), stats.usable_bytes);
    assert_eq!(u(&v, "free_bytes"), stats.free_bytes);
    let ratio = v["free_ratio"].as_f64().unwrap();
    assert!(
        (ratio - stats.free_ratio).abs() < 1e-12,
        "{ratio} vs {}",
        stats.free_ratio
    );
    assert_eq!(u(&v, "total_bytes"), 13 * CAP);
    assert_eq!(u(&v, "data_zones"), 13);
    assert_eq!(u(&v, "files"), 4);
    assert_eq!(u(&v, "empty_zones"), u64::from(stats.empty_zones));
    assert_eq!(u(&v, "full_zones"), u64::from(stats.full_zones));
    assert_eq!(u(&v, "active_zones"), u64::from(stats.active_zones));
    let sum = |key: &str| -> u64 { arr(&zones, "zones").iter().map(|z| u(z, key)).sum() };
    assert_eq!(u(&v, "used_bytes"), sum("written"));
    assert_eq!(u(&v, "valid_bytes"), sum("valid"));
    assert_eq!(u(&v, "reclaimable_bytes"), sum("invalid"));
    assert_eq!(
        u(&v, "used_bytes"),
        u(&v, "valid_bytes") + u(&v, "reclaimable_bytes")
    );
    // used + free = total here (no reserve, no unavailable zones).
    assert_eq!(
        u(&v, "used_bytes") + u(&v, "free_bytes"),
        u(&v, "total_bytes")
    );
    let amp = v["space_amplification"].as_f64().unwrap();
    let want = u(&v, "used_bytes") as f64 / u(&v, "valid_bytes") as f64;
    assert!((amp - want).abs() < 1e-12 && amp > 1.0, "{amp}");

    // The reserve counts as neither usable nor free.
    let r = json(&ok(&img.inspect("df", &["--json", "--reserved-zones", "2"])));
    assert_eq!(u(&r, "reserved_zones"), 2);
    assert_eq!(u(&r, "usable_bytes"), u(&v, "usable_bytes") - 2 * CAP);
    assert_eq!(u(&r, "free_bytes"), u(&v, "free_bytes") - 2 * CAP);

    let human = ok(&img.inspect("df", &[]));
    let line = |key: &str| {
        human
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in {human}"))
            .to_string()
    };
    assert!(
        line("total").contains("9.8 MiB  13 data zones × 768 KiB"),
        "{human}"
    );
    // Sizes for people; the JSON keeps exact bytes (9984 KiB here).
    assert_eq!(u(&v, "total_bytes"), 9984 * 1024);
    assert!(line("free ").contains("% of usable"), "{human}");
    assert!(
        line("space amplification:").ends_with("(used / valid)"),
        "{human}"
    );
    assert_eq!(
        line("free-space ratio:"),
        format!("free-space ratio: {:.1}%", ratio * 100.0)
    );
}

#[test]
fn inspect_dump_has_zones_files_extents_and_frames() {
    let _serial = serial();
    let img = formatted_with_files();
    let before = img.bytes();
    let v = json(&ok(&img.inspect("dump", &[])));
    // --json is accepted and changes nothing.
    assert_eq!(json(&ok(&img.inspect("dump", &["--json"]))), v);
    assert!(img.bytes() == before);
    for key in [
        "device",
        "geometry",
        "meta_zones",
        "mount",
        "df",
        "zones",
        "files",
        "metadata_zones",
    ] {
        assert!(v.get(key).is_some(), "dump lacks {key}");
    }
    assert_eq!(arr(&v, "zones").len(), 13);
    assert_eq!(v["zones"], img.inspect_json("zones")["zones"]);
    let state = img.with_fs(|fs| fs.metadata());
    let files = arr(&v, "files");
    assert_eq!(files.len(), state.file_count());
    for f in files {
        let id = state.file_id(s(f, "name")).expect("known file");
        let meta = state.file(id).unwrap();
        assert_eq!(u(f, "id"), id.0);
        let extents: Vec<(u64, u64, u64)> = arr(f, "extents")
            .iter()
            .map(|e| (u(e, "zone"), u(e, "offset"), u(e, "len")))
            .collect();
        let want: Vec<(u64, u64, u64)> = meta
            .extents
            .iter()
            .map(|e| (u64::from(e.zone), e.offset, e.len))
            .collect();
        assert_eq!(extents, want);
    }
    let meta = arr(&v, "metadata_zones");
    assert_eq!(meta.len(), 3);
    let z0 = &meta[0];
    assert_eq!(
        s(z0, "state"),
        "implicit_open",
        "zone states survive between processes"
    );
    let sb = &z0["superblock"];
    assert_eq!(u(sb, "version"), 3);
    assert_eq!(u(sb, "generation"), 1);
    assert_eq!(u(sb, "meta_zones"), 3);
    assert_eq!(u(sb, "zone_capacity"), CAP);
    assert!(z0["superblock_error"].is_null());
    assert!(z0["stopped"].is_null());
    // The frame list matches the library's own dump of the zone.
    let dev = FileDevice::open_read_only(&img.path).unwrap();
    let lib = dump_zone(&dev, 0).unwrap();
    let frames = arr(z0, "frames");
    assert_eq!(frames.len(), lib.frames.len());
    for (f, l) in frames.iter().zip(&lib.frames) {
        assert_eq!((u(f, "offset"), u(f, "len")), (l.offset, l.len));
    }
    assert_eq!(s(&frames[0], "kind"), "snapshot");
    let commits = lib
        .frames
        .iter()
        .filter(|f| f.kind == FrameKind::Commit)
        .count() as u64;
    assert_eq!(u(&z0["frame_counts"], "commit"), commits);
    // Every batch is stored twice.
    assert_eq!(u(&z0["frame_counts"], "snapshot"), 2);
    assert!(u(&z0["frame_counts"], "file_update") >= 10);
    assert_eq!(u(&z0["frame_counts"], "file_delete"), 2);
    for other in &meta[1..] {
        assert_eq!(s(other, "state"), "empty");
        assert!(other["superblock"].is_null());
        assert!(arr(other, "frames").is_empty());
    }
}

#[test]
fn inspect_reports_what_a_mount_would_write_and_writes_nothing() {
    let _serial = serial();
    let img = formatted_with_files();
    // An interrupted metadata write (garbage after the last batch) and a data zone written
    // by something else, without live data.
    let wp = {
        let dev = FileDevice::open_read_only(&img.path).unwrap();
        dev.zone_info(0).unwrap().written()
    };
    let wps = wp.to_string();
    ok(&[
        "zone", "write", "--device", &img.spec, "--zone", "0", "--offset", &wps, "--len", "4K",
    ]);
    ok(&[
        "zone", "write", "--device", &img.spec, "--zone", "14", "--offset", "0", "--len", "8K",
    ]);
    let before = img.bytes();

    let v = img.inspect_json("zones");
    assert!(img.bytes() == before, "inspect changed the image");
    let mount = &v["mount"];
    assert_eq!(mount["would_write"], Value::Bool(true));
    assert_eq!(u(&mount["log"], "torn_tail"), wp);
    let changes = arr(mount, "changes");
    let change = |zone: u64| changes.iter().find(|c| u(c, "zone") == zone);
    let c14 = change(14).expect("zone 14 is reset by a mount");
    assert_eq!(
        (
            s(c14, "state_before"),
            u(c14, "written_before"),
            s(c14, "state_after"),
            u(c14, "written_after")
        ),
        ("implicit_open", 8 * KIB, "empty", 0)
    );
    assert_eq!(s(c14, "action"), "reset");
    let c0 = change(0).expect("the metadata log rolls away from the torn zone");
    assert_eq!((s(c0, "action"), s(c0, "state_after")), ("reset", "empty"));
    let c1 = change(1).expect("the next generation goes to zone 1");
    assert_eq!(s(c1, "action"), "roll");
    assert!(c1["written_after"].is_null(), "known once written: {c1}");
    assert_eq!(mount["read_only"], Value::Bool(true));
    assert_eq!(u(&mount["log"], "roll_to"), 1);
    // The figures show the device as it is.
    let z14 = arr(&v, "zones")
        .iter()
        .find(|z| u(z, "zone") == 14)
        .unwrap();
    assert_eq!(
        (s(z14, "state"), u(z14, "written"), u(z14, "invalid")),
        ("implicit_open", 8 * KIB, 8 * KIB)
    );

    let human = ok(&img.inspect("df", &[]));
    assert!(
        human.contains("note: mounting would change the device"),
        "{human}"
    );
    assert!(
        human.contains(&format!("ends with an interrupted write at offset {wp}")),
        "{human}"
    );
    assert!(
        human.contains("zone 14 would go from implicit_open with 8 KiB to empty"),
        "{human}"
    );
    assert!(img.bytes() == before, "inspect changed the image");

    // A real mount does exactly that; afterwards inspect has nothing to report.
    img.with_fs(|fs| assert_eq!(fs.list().len(), 4));
    let v = img.inspect_json("zones");
    assert_eq!(
        v["mount"]["would_write"],
        Value::Bool(false),
        "{}",
        v["mount"]
    );
    assert_eq!(u(&v["mount"]["log"], "zone"), 1);
}

#[test]
fn corrupt_metadata_is_a_clear_error() {
    let _serial = serial();
    let img = formatted_with_files();
    // Damage a record in the middle of the log, in both of its copies: later batches
    // follow it, so this is corruption, not an interrupted write.
    let (frame, copy) = metadata_frame_copies(&img.path);
    img.poke(0, frame, |b| b[9] ^= 0xff);
    img.poke(0, copy, |b| b[9] ^= 0xff);
    let before = img.bytes();
    for what in ["zones", "files", "df"] {
        let msg = fails(&img.inspect(what, &[]));
        let prefix = format!(
            "{}: the zkv file system is damaged: metadata zone 0, offset {}: corrupt metadata: ",
            img.spec, frame
        );
        assert!(msg.starts_with(&prefix), "{what}: {msg}");
        assert!(msg.contains("checksum mismatch"), "{msg}");
        assert!(msg.contains("do not run zkv mkfs"), "{msg}");
    }
    // dump prints what it can read (the frames up to the damage), then fails the same way.
    let (run, msg) = fails_run(&img.inspect("dump", &[]), 1);
    assert!(msg.contains("corrupt metadata"), "{msg}");
    let v = json(&run.stdout);
    assert_eq!(s(&v, "error"), msg);
    let z0 = &arr(&v, "metadata_zones")[0];
    assert_eq!(u(&z0["stopped"], "offset"), frame);
    assert!(s(&z0["stopped"], "reason").contains("checksum mismatch"));
    assert!(img.bytes() == before);

    // A damaged superblock in the only metadata generation.
    let img = formatted_with_files();
    // One copy damaged: the other is used.
    img.poke(0, 20, |b| b[0] ^= 0x01);
    assert_eq!(arr(&img.inspect_json("files"), "files").len(), 4);
    // Both damaged.
    img.poke(0, 4096 + 20, |b| b[0] ^= 0x01);
    let msg = fails(&img.inspect("zones", &[]));
    assert!(
        msg.starts_with(&format!(
            "{}: the zkv file system is damaged: metadata zone 0, offset 0: corrupt metadata: ",
            img.spec
        )) && msg.contains("superblock checksum mismatch"),
        "{msg}"
    );
    // mkfs sees what it is and still refuses without --force.
    let msg = fails(&img.mkfs(&[]));
    assert!(
        msg.contains("already holds a zkv file system (damaged: metadata zone 0"),
        "{msg}"
    );
}

#[test]
fn a_device_without_a_file_system_is_a_clear_error() {
    let _serial = serial();
    let img = Img::blank(8, "1M");
    let want = format!("no zkv file system on {} (run zkv mkfs)", img.spec);
    for what in ["zones", "files", "df", "dump"] {
        assert_eq!(fails(&img.inspect(what, &[])), want, "{what}");
    }
    // Data that is not a file system (the zone test pattern in zone 0).
    ok(&[
        "zone", "write", "--device", &img.spec, "--zone", "0", "--offset", "0", "--len", "4K",
    ]);
    assert_eq!(fails(&img.inspect("zones", &[])), want);
    // Not an image at all, and no file.
    std::fs::write(&img.path, b"hello").unwrap();
    let msg = fails(&img.inspect("zones", &[]));
    assert!(msg.contains("not a zkv zone image"), "{msg}");
    std::fs::remove_file(&img.path).unwrap();
    let msg = fails(&img.inspect("zones", &[]));
    assert!(msg.contains(&img.path.display().to_string()), "{msg}");
}

#[test]
fn inspect_shares_the_image_with_readers_and_a_writer() {
    let _serial = serial();
    let img = formatted_with_files();
    let reader = FileDevice::open_read_only(&img.path).unwrap();
    ok(&img.inspect("df", &[]));
    drop(reader);
    let writer = FileDevice::open(&img.path).unwrap();
    ok(&img.inspect("df", &[]));
    // A second writer is refused.
    let msg = fails(&img.mkfs(&["--force"]));
    assert!(
        msg.ends_with("image is already in use by another process"),
        "{msg}"
    );
    drop(writer);
}

#[test]
fn help_lists_the_commands_and_flags() {
    let _serial = serial();
    let top = ok(&["--help"]);
    assert!(top.contains("mkfs") && top.contains("inspect"), "{top}");
    let mkfs = ok(&["mkfs", "--help"]);
    for flag in [
        "--device",
        "--zones",
        "--zone-size",
        "--zone-capacity",
        "--max-open",
        "--max-active",
        "--meta-zones",
        "--reserved-zones",
        "--placement",
        "--finish-threshold",
        "--gc-start",
        "--gc-stop",
        "--gc-mode",
        "--force",
    ] {
        assert!(mkfs.contains(flag), "mkfs --help lacks {flag}");
    }
    let inspect = ok(&["inspect", "--help"]);
    for word in ["zones", "files", "df", "dump", "levels", "Examples"] {
        assert!(inspect.contains(word), "inspect --help lacks {word}");
    }
    let (_, msg) = fails_run(&["inspect", "tree", "--device", "file:x.img"], 2);
    assert!(msg.contains("'tree'"), "{msg}");
    assert!(!Path::new("x.img").exists());
}
