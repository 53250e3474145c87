//! End-to-end tests of `zkv backup`, `zkv restore` and `zkv inspect fs-info`: the real
//! binary on image files, a database filled by `zkv bench` and `zkv put`.

mod common;
use common::*;

use serde_json::Value;

fn inspect(img: &Img, what: &str) -> Value {
    json(&ok(&["inspect", what, "--device", &img.spec, "--json"]))
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
    assert_eq!(field("image format"), "version 1");
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
    assert_eq!(j["image_format_version"], 1);
    assert_eq!(j["metadata_format_version"], 3);
    assert_eq!(j["metadata_versions_read"], serde_json::json!([2, 3]));
    assert_eq!(j["mount"]["log"]["generation"], 1);
    assert!(j["mount"]["log"]["commit"].as_u64().unwrap() > 0);
    assert_eq!(j["options"]["gc_start"], 10);
    assert_eq!(j["options"]["gc_mode"], "copy");
    assert!(j["files"].as_u64().unwrap() >= 3, "{j}");

    let blank = Img::none();
    ok(&[
        "zone",
        "create",
        "--device",
        &blank.spec,
        "--zones",
        "4",
        "--zone-size",
        "1MiB",
    ]);
    let msg = fails(&["inspect", "fs-info", "--device", &blank.spec]);
    assert!(msg.contains("no zkv file system"), "{msg}");
}
