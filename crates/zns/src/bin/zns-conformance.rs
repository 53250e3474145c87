//! `zns-conformance DEVICE_SPEC`: runs the zoned-device conformance suite against one device
//! and prints one line per case, then `N passed, M failed[, K skipped]`.
//!
//! DEVICE_SPEC is `zbd:/dev/nvmeXnY` (a Linux zoned block device), `mem` (an in-memory
//! emulator) or `file:PATH` (a file-backed emulator in a new image). The emulators use
//! a small default geometry; `file:` creates a new image and refuses an existing path. Exit
//! status: 0 if no case failed, 1 if a case failed or the device could not be opened, 2 on
//! bad arguments.

use std::process::ExitCode;

use zkv_zns::{DeviceSpec, FileDevice, Geometry};

const USAGE: &str =
    "usage: zns-conformance DEVICE_SPEC   (zbd:/dev/nvmeXnY | mem | file:NEW_IMAGE_PATH)";

/// The geometry of `mem` and new `file:` devices: small and fast, with an active limit
/// above the open limit so that the limit cases which need CLOSED zones can run.
fn default_geometry() -> Geometry {
    Geometry::new(16, 1 << 20)
        .with_capacity(960 << 10)
        .with_limits(4, 6)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = match args.as_slice() {
        [a] if a == "-h" || a == "--help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        [a] => a.clone(),
        [] => {
            eprintln!("zns-conformance: missing DEVICE_SPEC; {USAGE}");
            return ExitCode::from(2);
        }
        _ => {
            eprintln!(
                "zns-conformance: expected one argument, got {}; {USAGE}",
                args.len()
            );
            return ExitCode::from(2);
        }
    };
    let spec: DeviceSpec = match arg.parse() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("zns-conformance: {e}; {USAGE}");
            return ExitCode::from(2);
        }
    };
    let geo = default_geometry();
    if let DeviceSpec::File(path) = &spec {
        // The suite wears zones out for good (read-only, offline) in a persistent image, so
        // it always starts from a new one.
        if path.exists() {
            eprintln!(
                "zns-conformance: {} exists; file: needs a path for a new image (the suite \
                 leaves zones read-only or offline in it)",
                path.display()
            );
            return ExitCode::from(2);
        }
        if let Err(e) = FileDevice::create(path, geo) {
            eprintln!("zns-conformance: cannot create {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    let dev = match zkv_zns::open_device(&spec, geo) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("zns-conformance: cannot open {spec}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let g = dev.geometry();
    println!(
        "device {}: {} zones of {} bytes, capacity {}, block {}, max open {}, max active {}; {} cases",
        dev.describe(),
        g.zones,
        g.zone_size,
        g.zone_capacity,
        g.block_size,
        g.max_open,
        g.max_active,
        zkv_zns::conformance::cases().len()
    );
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        zkv_zns::conformance::run_all(dev.as_ref(), true)
    }));
    let summary = match run {
        Ok(s) => s,
        Err(_) => {
            eprintln!("zns-conformance: a case panicked; the suite was stopped");
            println!("0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    let mut line = format!("{} passed, {} failed", summary.passed, summary.failed.len());
    if !summary.skipped.is_empty() {
        line.push_str(&format!(", {} skipped", summary.skipped.len()));
    }
    println!("{line}");
    if summary.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
