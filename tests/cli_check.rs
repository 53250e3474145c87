//! `zkv check` and `zkv salvage` on damaged images: every damage is found and named, the
//! exit code says so, and a salvage returns every key the check does not report lost.

mod common;

use common::*;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use zkv_zns::{FileDevice, ZonedDevice};
use zkv_zonefs::fs::ZoneFs;

/// A store on an image: tables from a small fillrandom and three puts, the last one in the
/// WAL.
fn store() -> Img {
    let img = Img::filled(&[]);
    for key in ["wal-a", "wal-b", "wal-c"] {
        ok(&["put", "--device", &img.spec, key, "v"]);
    }
    img
}

/// Every key and value, in hex, as `zkv scan --hex` lists them.
fn scan(spec: &str) -> BTreeMap<String, String> {
    lines_to_map(&ok(&["scan", "--device", spec, "--hex"]))
}

fn lines_to_map(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').expect("KEY<tab>VALUE");
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// Where byte `offset` of file `name` lies in the image file.
fn image_offset(img: &Img, name: &str, offset: u64) -> u64 {
    let header = std::fs::read(&img.path).expect("read image");
    let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    // The header holds the zone size at byte 32 and the data offset at 56 (docs/DEVICE.md).
    let (zone_size, data) = (word(32), word(56));
    let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open_read_only(&img.path).unwrap());
    let fs = ZoneFs::mount_read_only(dev).unwrap();
    let state = fs.metadata();
    let (_, meta) = state.files().find(|(_, m)| m.name == name).unwrap();
    let mut at = offset;
    for e in &meta.extents {
        if at < e.len {
            return data + u64::from(e.zone) * zone_size + e.offset + at;
        }
        at -= e.len;
    }
    panic!("offset {offset} is beyond {name}");
}

fn flip(img: &Img, at: u64) {
    let mut bytes = std::fs::read(&img.path).unwrap();
    bytes[at as usize] ^= 0x10;
    std::fs::write(&img.path, bytes).unwrap();
}

fn file_named(img: &Img, suffix: &str) -> String {
    let out = ok(&["inspect", "files", "--device", &img.spec, "--json"]);
    let files = json(&out);
    let names = files["files"].as_array().unwrap().iter();
    names
        .map(|f| f["name"].as_str().unwrap().to_string())
        .find(|n| n.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} file"))
}

fn check_json(img: &Img) -> (i32, Value) {
    let r = zkv(&["check", "--device", &img.spec, "--json"]);
    (r.code, json(&r.stdout))
}

/// Whether `key` (hex) lies in the key range of a damage finding.
fn in_lost_range(check: &Value, key: &str) -> bool {
    check["findings"].as_array().unwrap().iter().any(|f| {
        let keys = &f["keys"];
        f["severity"] == "damage"
            && keys.is_object()
            && keys["smallest_hex"].as_str().unwrap() <= key
            && key <= keys["largest_hex"].as_str().unwrap()
    })
}

#[test]
fn a_clean_store_checks_clean() {
    let _serial = serial();
    let img = store();
    let out = ok(&["check", "--device", &img.spec]);
    assert!(
        out.contains("checked the file system and the database"),
        "{out}"
    );
    assert!(
        out.ends_with("result: clean (0 damaged findings, 0 notices)\n"),
        "{out}"
    );
    let (code, report) = check_json(&img);
    assert_eq!(code, 0);
    assert_eq!(report["clean"], true);
    assert!(
        report["database"]["tables"].as_u64().unwrap() > 1,
        "{report}"
    );
    // Each put opens the database anew, which writes the WAL it found to L0: the last
    // put is the WAL's one record.
    assert_eq!(report["database"]["wal_records"], 1);
}

#[test]
fn a_damaged_table_is_found_and_everything_else_salvaged() {
    let _serial = serial();
    let img = store();
    let want = scan(&img.spec);
    let table = file_named(&img, ".sst");
    flip(&img, image_offset(&img, &table, 100));
    let msg = fails(&["check", "--device", &img.spec]);
    assert!(
        msg.contains("damaged (1 damaged finding; see the report)"),
        "{msg}"
    );
    let (code, report) = check_json(&img);
    assert_eq!(code, 1);
    let finding = &report["findings"][0];
    assert_eq!(finding["file"], table.as_str());
    assert!(finding["what"]
        .as_str()
        .unwrap()
        .contains("checksum mismatch"));
    assert!(finding["keys"].is_object(), "{finding}");

    let dump = TempJson::new();
    let out = ok(&["salvage", "--device", &img.spec, "--dump", &dump.arg]);
    assert!(
        out.contains(&format!("lost: {table}: data block 0")),
        "{out}"
    );
    let got = lines_to_map(&std::fs::read_to_string(&dump.path).unwrap());
    let mut lost = 0;
    for (k, v) in &want {
        if in_lost_range(&report, k) {
            lost += usize::from(got.get(k) != Some(v));
        } else {
            assert_eq!(got.get(k), Some(v), "key {k} not salvaged");
        }
    }
    assert!(lost > 0, "the damaged block lost nothing");
    assert!(got.keys().all(|k| want.contains_key(k)));

    // Into a new image: the same keys, and a store that checks clean.
    let saved = Img::none();
    ok(&["salvage", "--device", &img.spec, "--to", &saved.spec]);
    assert_eq!(scan(&saved.spec), got);
    ok(&["check", "--device", &saved.spec]);
}

#[test]
fn a_damaged_wal_record_is_found_and_the_tables_salvaged() {
    let _serial = serial();
    let img = store();
    let want = scan(&img.spec);
    let wal = file_named(&img, ".log");
    flip(&img, image_offset(&img, &wal, 10));
    let (code, report) = check_json(&img);
    assert_eq!(code, 1);
    assert_eq!(report["damage"], 1, "{report}");
    assert_eq!(report["findings"][0]["file"], wal.as_str());
    let r = zkv(&["salvage", "--device", &img.spec, "--dump", "-", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let salvage = json(&r.stderr);
    assert_eq!(salvage["lost"][0]["file"], wal.as_str());
    let got = lines_to_map(&r.stdout);
    let from_wal = |k: &str| k.starts_with(&hex("wal-"));
    for (k, v) in want.iter().filter(|(k, _)| !from_wal(k)) {
        assert_eq!(got.get(k), Some(v), "key {k}");
    }
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn metadata_damage_is_a_notice_in_one_copy_and_damage_in_both() {
    let _serial = serial();
    let img = store();
    let (first, second) = metadata_frame_copies(&img.path);
    let zone0 = |off: u64| {
        let header = std::fs::read(&img.path).unwrap();
        u64::from_le_bytes(header[56..64].try_into().unwrap()) + off + 9
    };
    flip(&img, zone0(first));
    let out = ok(&["check", "--device", &img.spec]);
    assert!(out.contains("notice  zone 0: metadata at offset"), "{out}");
    assert!(out.contains("read from the other copy"), "{out}");
    flip(&img, zone0(second));
    let (code, report) = check_json(&img);
    assert_eq!(code, 1);
    assert_eq!(report["mounted"], false);
    let what = report["findings"][0]["what"].as_str().unwrap();
    assert!(what.contains("the file system cannot be mounted"), "{what}");
    let msg = fails(&["salvage", "--device", &img.spec, "--dump", "-"]);
    assert!(msg.starts_with("cannot salvage: "), "{msg}");
}

#[test]
fn leftovers_are_notices() {
    let _serial = serial();
    let img = store();
    {
        let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(&img.path).unwrap());
        let fs = ZoneFs::mount_stored(dev).unwrap();
        let hint = zkv_zonefs::placement::PlacementHint::default();
        let kind = zkv_zonefs::meta::FileKind::Other;
        for name in ["notes.txt", "000999.sst", "CURRENT.dbtmp"] {
            let mut w = fs.create(name, kind, hint.clone()).unwrap();
            w.append(b"x").unwrap();
            w.close().unwrap();
        }
    }
    let out = ok(&["check", "--device", &img.spec]);
    assert!(
        out.contains("notice  notes.txt: not a file of the database"),
        "{out}"
    );
    assert!(
        out.contains("notice  000999.sst: a table no version holds"),
        "{out}"
    );
    assert!(
        out.contains("notice  CURRENT.dbtmp: a temporary file"),
        "{out}"
    );
    assert!(
        out.contains("result: clean (0 damaged findings, 3 notices)"),
        "{out}"
    );
}

#[test]
fn salvage_refuses_what_it_cannot_do() {
    let _serial = serial();
    let img = store();
    let msg = fails_run(&["salvage", "--device", &img.spec], 2).1;
    assert!(msg.contains("--to"), "{msg}");
    let msg = fails(&["salvage", "--device", &img.spec, "--to", &img.spec]);
    assert!(msg.contains("already exists"), "{msg}");
    let empty = Img::none();
    let mut mkfs = vec!["mkfs", "--device", &empty.spec];
    mkfs.extend(IMAGE_GEOMETRY);
    ok(&mkfs);
    let msg = fails(&["salvage", "--device", &empty.spec, "--dump", "-"]);
    assert!(msg.contains("no zkv database"), "{msg}");
    let out = ok(&["check", "--device", &empty.spec]);
    assert!(out.contains("it holds no database"), "{out}");
}
