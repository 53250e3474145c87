//! End-to-end tests of `zkv backup`, `zkv restore` and `zkv inspect fs-info`: the real
//! binary on image files, a database filled by `zkv bench` and `zkv put`.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;
use zkv_zns::{FileDevice, ZonedDevice};
use zkv_zonefs::fs::ZoneFs;
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::PlacementHint;

/// A database on a new image: a small fillrandom (SSTs, a manifest, CURRENT, a WAL),
/// then puts and a delete by hand, which stay in the WAL.
fn filled_store() -> Img {
    let img = Img::none();
    let mut args = vec!["bench", "--device", &img.spec, "--num", "3000"];
    args.extend_from_slice(&SMALL_STORE);
    ok(&args);
    for (key, value) in [("k1", "v1"), ("k2", "v2"), ("k3", "v3")] {
        ok(&["put", "--device", &img.spec, key, value]);
    }
    ok(&["delete", "--device", &img.spec, "k2"]);
    img
}

/// A temporary directory for backups; `path(name)` is a path in it that does not exist yet.
struct Dir {
    dir: TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn backup(img: &Img, to: &Path) -> String {
    ok(&["backup", "--device", &img.spec, "--to", s(to)])
}

fn restore(from: &Path, img: &Img, extra: &[&str]) -> String {
    let mut args = vec!["restore", "--from", s(from), "--device", &img.spec];
    args.extend_from_slice(extra);
    ok(&args)
}

fn restore_fails(from: &Path, img: &Img, extra: &[&str]) -> String {
    let mut args = vec!["restore", "--from", s(from), "--device", &img.spec];
    args.extend_from_slice(extra);
    fails(&args)
}

fn scan(img: &Img) -> String {
    ok(&["scan", "--device", &img.spec])
}

fn manifest(dir: &Path) -> Value {
    read_json(&dir.join("zkv-backup.json"))
}

fn inspect(img: &Img, what: &str) -> Value {
    json(&ok(&["inspect", what, "--device", &img.spec, "--json"]))
}

/// The files as `inspect files` lists them, without where they are.
fn files(img: &Img) -> Vec<Value> {
    let listed = inspect(img, "files");
    listed["files"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|f| {
            let keep = ["name", "kind", "size", "level", "lifetime"];
            keep.iter().map(|k| (k.to_string(), f[k].clone())).collect()
        })
        .collect()
}

/// The entry of `name` in a backup manifest.
fn entry<'a>(manifest: &'a Value, name: &str) -> &'a Value {
    manifest["files"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the manifest"))
}

fn first_sst(manifest: &Value) -> String {
    manifest["files"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|f| f["kind"] == "sst")
        .and_then(|f| f["name"].as_str())
        .expect("an SST in the backup")
        .to_string()
}

#[test]
fn a_restored_store_holds_what_the_original_held() {
    let _serial = serial();
    let img = filled_store();
    let dir = Dir::new();
    let to = dir.path("backup");
    let out = backup(&img, &to);
    assert!(
        out.starts_with(&format!("backed up {} to ", img.spec)),
        "{out}"
    );

    // The manifest lists every file of the file system, with sizes and checksums of the
    // bytes in the backup; the source's geometry and options are recorded.
    let m = manifest(&to);
    assert_eq!(
        (m["format"].as_str(), m["version"].as_u64()),
        (Some("zkv-backup"), Some(1))
    );
    let listed = files(&img);
    assert_eq!(m["files"].as_array().unwrap().len(), listed.len());
    for f in &listed {
        let name = f["name"].as_str().unwrap();
        let e = entry(&m, name);
        for k in ["kind", "size", "level", "lifetime"] {
            assert_eq!(e[k], f[k], "{name}: {k}");
        }
        let bytes = std::fs::read(to.join("files").join(name)).expect("the file's bytes");
        assert_eq!(bytes.len() as u64, e["size"].as_u64().unwrap(), "{name}");
        assert_eq!(
            u64::from(crc32c::crc32c(&bytes)),
            e["crc32c"].as_u64().unwrap()
        );
    }
    for kind in ["sst", "wal", "manifest"] {
        assert!(
            listed.iter().any(|f| f["kind"] == kind),
            "no {kind} in {listed:?}"
        );
    }
    let info = inspect(&img, "fs-info");
    assert_eq!(m["source"]["geometry"], info["geometry"]);
    assert_eq!(m["source"]["options"], info["options"]);
    assert_eq!(m["source"]["meta_zones"], info["meta_zones"]);
    assert_eq!(m["source"]["commit"], info["mount"]["log"]["commit"]);

    // Restored into a new image: the same geometry, options, files and data.
    let copy = Img::none();
    let out = restore(&to, &copy, &[]);
    assert!(out.contains(&format!("created {}", copy.spec)), "{out}");
    assert!(out.contains("every checksum verified"), "{out}");
    let restored = inspect(&copy, "fs-info");
    for k in ["geometry", "meta_zones", "options", "files", "file_bytes"] {
        assert_eq!(restored[k], info[k], "{k}");
    }
    assert_eq!(files(&copy), listed);
    let original = scan(&img);
    assert!(original.lines().count() > 1000, "{original}");
    assert_eq!(scan(&copy), original);
    let get = |img: &Img, key| ok(&["get", "--device", &img.spec, key]);
    assert_eq!(get(&copy, "k3"), "v3\n");
    assert!(fails(&["get", "--device", &copy.spec, "k2"]).contains("not found"));

    // The restored database takes writes, and the original was never written.
    let before = std::fs::read(&img.path).unwrap();
    backup(&img, &dir.path("again"));
    assert_eq!(std::fs::read(&img.path).unwrap(), before);
    ok(&["put", "--device", &copy.spec, "k4", "v4"]);
    assert_eq!(get(&copy, "k4"), "v4\n");
}

#[test]
fn restore_takes_geometry_and_options_from_flags() {
    let _serial = serial();
    let img = filled_store();
    let dir = Dir::new();
    let to = dir.path("backup");
    backup(&img, &to);
    let copy = Img::none();
    restore(
        &to,
        &copy,
        &[
            "--zones",
            "40",
            "--placement",
            "caza",
            "--reserved-zones",
            "2",
            "--finish-threshold",
            "10",
        ],
    );
    let info = inspect(&copy, "fs-info");
    assert_eq!(info["geometry"]["zones"], 40);
    assert_eq!(info["geometry"]["zone_size"], 1 << 20);
    assert_eq!(info["options"]["placement"], "caza");
    assert_eq!(info["options"]["reserved_zones"], 2);
    assert_eq!(info["options"]["finish_threshold"], 10);
    assert_eq!(scan(&copy), scan(&img));

    // An existing file system is refused without --force, as mkfs refuses it.
    let msg = restore_fails(&to, &copy, &[]);
    assert!(
        msg.contains("already holds a zkv file system") && msg.contains("--force"),
        "{msg}"
    );
    let out = restore(&to, &copy, &["--force", "--finish-threshold", "none"]);
    assert!(out.contains("erased"), "{out}");
    let info = inspect(&copy, "fs-info");
    assert_eq!(
        info["geometry"]["zones"], 40,
        "an existing image keeps its geometry"
    );
    assert_eq!(
        info["options"]["placement"], "liza",
        "the backup's options again"
    );
    assert_eq!(info["options"]["finish_threshold"], Value::Null);
    assert_eq!(scan(&copy), scan(&img));
}

/// A copy of the backup at `to` in `dir`, under `name`.
fn copy_backup(to: &Path, dir: &Dir, name: &str) -> PathBuf {
    let copy = dir.path(name);
    std::fs::create_dir_all(copy.join("files")).unwrap();
    std::fs::copy(to.join("zkv-backup.json"), copy.join("zkv-backup.json")).unwrap();
    for e in std::fs::read_dir(to.join("files")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.join("files").join(e.file_name())).unwrap();
    }
    copy
}

#[test]
fn a_damaged_or_incomplete_backup_restores_nothing() {
    let _serial = serial();
    let img = filled_store();
    let dir = Dir::new();
    let to = dir.path("backup");
    backup(&img, &to);
    let sst = first_sst(&manifest(&to));

    let flipped = copy_backup(&to, &dir, "flipped");
    let path = flipped.join("files").join(&sst);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
    let copy = Img::none();
    let msg = restore_fails(&flipped, &copy, &[]);
    assert!(
        msg.contains(&format!("'{sst}'")) && msg.contains("checksum"),
        "{msg}"
    );
    assert!(msg.contains("nothing was restored"), "{msg}");
    assert!(
        !copy.path.exists(),
        "no image is created for a damaged backup"
    );

    let missing = copy_backup(&to, &dir, "missing");
    std::fs::remove_file(missing.join("files").join("CURRENT")).unwrap();
    let msg = restore_fails(&missing, &copy, &[]);
    assert!(msg.contains("'CURRENT' is missing"), "{msg}");
    assert!(!copy.path.exists());

    let truncated = copy_backup(&to, &dir, "truncated");
    std::fs::write(truncated.join("files").join(&sst), b"short").unwrap();
    let msg = restore_fails(&truncated, &copy, &[]);
    assert!(
        msg.contains(&format!("'{sst}'")) && msg.contains("holds 5 B"),
        "{msg}"
    );

    // A directory without the manifest is no backup (a backup writes it last).
    let unfinished = copy_backup(&to, &dir, "unfinished");
    std::fs::remove_file(unfinished.join("zkv-backup.json")).unwrap();
    let msg = restore_fails(&unfinished, &copy, &[]);
    assert!(msg.contains("no zkv-backup.json"), "{msg}");
    std::fs::write(unfinished.join("zkv-backup.json"), "{}").unwrap();
    let msg = restore_fails(&unfinished, &copy, &[]);
    assert!(msg.contains("not a zkv backup manifest"), "{msg}");
    assert!(!copy.path.exists());

    // A device too small for the files: the new image is removed again, and an existing
    // device is left without a database (CURRENT is written last).
    let msg = restore_fails(
        &to,
        &copy,
        &["--zones", "5", "--zone-size", "128KiB", "--meta-zones", "2"],
    );
    assert!(msg.contains("the new image was removed"), "{msg}");
    assert!(!copy.path.exists());
    ok(&[
        "zone",
        "create",
        "--device",
        &copy.spec,
        "--zones",
        "5",
        "--zone-size",
        "128KiB",
    ]);
    let msg = restore_fails(&to, &copy, &["--meta-zones", "2"]);
    assert!(msg.contains("holds no database"), "{msg}");
    let msg = fails(&["scan", "--device", &copy.spec]);
    assert!(msg.contains("no zkv database"), "{msg}");
}

#[test]
fn backup_refuses_a_destination_that_is_not_empty_and_leaves_no_partial_backup() {
    let _serial = serial();
    let img = filled_store();
    let dir = Dir::new();
    let full = dir.path("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("keep.txt"), b"mine").unwrap();
    let msg = fails(&["backup", "--device", &img.spec, "--to", s(&full)]);
    assert!(msg.contains("exists and is not empty"), "{msg}");
    let left: Vec<_> = std::fs::read_dir(&full).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing was written");

    let msg = fails(&[
        "backup",
        "--device",
        &img.spec,
        "--to",
        s(&full.join("keep.txt")),
    ]);
    assert!(msg.contains("not a directory"), "{msg}");

    // An empty directory is fine.
    let empty = dir.path("empty");
    std::fs::create_dir(&empty).unwrap();
    backup(&img, &empty);
    assert!(empty.join("zkv-backup.json").exists());

    // A device without a file system: nothing is created.
    let blank = Img::blank(4, "1MiB");
    let to = dir.path("of-blank");
    let msg = fails(&["backup", "--device", &blank.spec, "--to", s(&to)]);
    assert!(msg.contains("no zkv file system"), "{msg}");
    assert!(!to.exists());
}

#[test]
fn files_of_any_name_and_size_round_trip() {
    let _serial = serial();
    let img = Img::none();
    ok(&[&["mkfs", "--device", &img.spec][..], &IMAGE_GEOMETRY].concat());
    let named: [(&str, FileKind, usize); 4] = [
        ("dir/odd name%.bin", FileKind::Other, 70_000),
        ("..", FileKind::Blob, 10),
        ("empty", FileKind::Other, 0),
        ("000007.sst", FileKind::Sst, 5000),
    ];
    let data = |len: usize| (0..len).map(|i| (i * 13 % 251) as u8).collect::<Vec<u8>>();
    let mount = |img: &Img| {
        let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(&img.path).expect("open"));
        ZoneFs::mount_stored(dev).expect("mount")
    };
    {
        let fs = mount(&img);
        for (name, kind, len) in named {
            let level = (kind == FileKind::Sst).then_some(2);
            let hint = PlacementHint {
                level,
                ..PlacementHint::default()
            };
            let mut w = fs.create(name, kind, hint).expect("create");
            w.append(&data(len)).expect("append");
            w.close().expect("close");
        }
    }
    let dir = Dir::new();
    let to = dir.path("backup");
    backup(&img, &to);
    assert!(to.join("files").join("dir%2Fodd%20name%25.bin").exists());
    assert!(to.join("files").join("%2E%2E").exists());
    let copy = Img::none();
    restore(&to, &copy, &[]);
    assert_eq!(files(&copy), files(&img));
    let fs = mount(&copy);
    for (name, _, len) in named {
        let got = fs.open(name).expect("open").read_all().expect("read");
        assert_eq!(got, data(len), "{name}");
    }
}

#[test]
fn fs_info_shows_geometry_formats_metadata_and_options() {
    let _serial = serial();
    let img = Img::none();
    ok(&[
        &["mkfs", "--device", &img.spec][..],
        &IMAGE_GEOMETRY,
        &[
            "--max-open",
            "6",
            "--max-active",
            "8",
            "--gc-start",
            "10",
            "--gc-stop",
            "15",
        ],
    ]
    .concat());
    ok(&["put", "--device", &img.spec, "k", "v"]);
    let out = ok(&["inspect", "fs-info", "--device", &img.spec]);
    let field = |name: &str| -> String {
        out.lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .filter(|rest| rest.starts_with("  "))
                    .map(|rest| rest.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no '{name}' in {out}"))
    };
    assert_eq!(field("device"), img.spec);
    assert_eq!(field("zones"), "16");
    assert_eq!(field("zone size"), "1 MiB");
    assert_eq!(field("zone capacity"), "768 KiB");
    assert_eq!(field("block size"), "4 KiB");
    assert_eq!(field("max open zones"), "6");
    assert_eq!(field("max active zones"), "8");
    assert_eq!(field("metadata zones"), "3 (zones 0-2)");
    assert_eq!(field("data zones"), "13 (zones 3-15)");
    assert_eq!(field("image format"), "version 2");
    assert!(field("metadata format").starts_with("version 3 ("), "{out}");
    assert!(
        field("metadata log").starts_with("generation 1 in zone 0, commit "),
        "{out}"
    );
    assert_eq!(field("gc start/stop"), "10% / 15%");
    assert_eq!(field("placement"), "liza");
    assert_eq!(field("finish threshold"), "none");

    let j = inspect(&img, "fs-info");
    assert_eq!(j["device"], img.spec.as_str());
    assert_eq!(j["geometry"]["max_active"], 8);
    assert_eq!(j["meta_zones"], 3);
    assert_eq!(j["data_zones"], 13);
    assert_eq!(j["image_format_version"], 2);
    assert_eq!(j["metadata_format_version"], 3);
    assert_eq!(j["metadata_versions_read"], serde_json::json!([2, 3]));
    assert_eq!(j["mount"]["log"]["generation"], 1);
    assert!(j["mount"]["log"]["commit"].as_u64().unwrap() > 0);
    assert_eq!(j["options"]["gc_start"], 10);
    assert_eq!(j["options"]["gc_mode"], "copy");
    assert!(j["files"].as_u64().unwrap() >= 3, "{j}");

    let blank = Img::blank(4, "1MiB");
    let msg = fails(&["inspect", "fs-info", "--device", &blank.spec]);
    assert!(msg.contains("no zkv file system"), "{msg}");
}
