//! Sharing an image: commands that only read run next to a writer (here a device or a
//! database held open by the test process), two writers exclude each other, and `--wait`
//! waits for the writer to let go.

mod common;
use common::*;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zkv_engine::db::{Db, WriteOptions};
use zkv_engine::options::{ExecMode, Options};
use zkv_zns::{FileDevice, ZonedDevice};
use zkv_zonefs::fs::ZoneFs;

/// A file system image holding `alpha` = `one`, made and written by the CLI.
fn image_with_a_key() -> Img {
    let img = Img::none();
    ok(&[&["mkfs", "--device", &img.spec][..], &IMAGE_GEOMETRY].concat());
    ok(&["put", "--device", &img.spec, "alpha", "one"]);
    img
}

/// The image's writer lock, held by this process until the device is dropped.
fn hold(img: &Img) -> FileDevice {
    FileDevice::open(&img.path).expect("open the image read-write")
}

#[test]
fn read_commands_run_while_a_writer_holds_the_image() {
    let _s = serial();
    let img = image_with_a_key();
    let _writer = hold(&img);
    let spec = img.spec.as_str();
    assert_eq!(ok(&["get", "--device", spec, "alpha"]), "one\n");
    assert_eq!(ok(&["scan", "--device", spec]), "alpha\tone\n");
    ok(&["inspect", "zones", "--device", spec]);
    ok(&["inspect", "levels", "--device", spec]);
    ok(&["inspect", "dump", "--device", spec]);
    ok(&["zone", "report", "--device", spec]);
    ok(&[
        "zone", "read", "--device", spec, "--zone", "0", "--len", "4KiB",
    ]);
    // Writers still exclude each other, and fail at once without --wait.
    let msg = fails(&["put", "--device", spec, "beta", "two"]);
    assert!(
        msg.ends_with("image is already in use by another process"),
        "{msg}"
    );
    let msg = fails(&["zone", "reset", "--device", spec, "--zone", "5"]);
    assert!(msg.contains("already in use"), "{msg}");
}

#[test]
fn a_reader_sees_what_a_running_database_has_synced() {
    let _s = serial();
    let img = image_with_a_key();
    let dev: Arc<dyn ZonedDevice> = Arc::new(hold(&img));
    let fs = Arc::new(ZoneFs::mount_stored(dev).expect("mount"));
    let options = Options {
        mode: ExecMode::Deterministic,
        ..Options::default()
    };
    let db = Db::open(fs, options).expect("open the database");
    db.put(&WriteOptions::synced(), b"alpha", b"uno").unwrap();
    db.put(&WriteOptions::synced(), b"beta", b"two").unwrap();
    let spec = img.spec.as_str();
    assert_eq!(ok(&["get", "--device", spec, "alpha"]), "uno\n");
    assert_eq!(ok(&["scan", "--device", spec]), "alpha\tuno\nbeta\ttwo\n");
    db.close().unwrap();
}

#[test]
fn wait_waits_for_the_writer_to_let_go() {
    let _s = serial();
    let img = image_with_a_key();
    let writer = hold(&img);
    let holder = thread::spawn(move || {
        thread::sleep(Duration::from_millis(400));
        drop(writer);
    });
    let start = Instant::now();
    ok(&["put", "--device", &img.spec, "--wait", "20", "beta", "two"]);
    assert!(start.elapsed() >= Duration::from_millis(300));
    holder.join().unwrap();
    assert_eq!(ok(&["get", "--device", &img.spec, "beta"]), "two\n");
}

#[test]
fn wait_gives_up_and_says_how_long_it_waited() {
    let _s = serial();
    let img = image_with_a_key();
    let _writer = hold(&img);
    let start = Instant::now();
    let msg = fails(&["delete", "--device", &img.spec, "--wait", "0.3", "alpha"]);
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert!(
        msg.ends_with("image is already in use by another process (waited 0.3 s for it)"),
        "{msg}"
    );
    let msg = fails(&["mkfs", "--device", &img.spec, "--force", "--wait", "0.1"]);
    assert!(msg.contains("(waited 0.1 s for it)"), "{msg}");
}

#[test]
fn a_bad_wait_is_a_usage_error() {
    for bad in ["-1", "soon", "inf"] {
        let (_, msg) = fails_run(&["get", "--device", "file:x.img", "--wait", bad, "k"], 2);
        assert!(msg.contains("--wait <SECONDS>"), "{msg}");
    }
}
