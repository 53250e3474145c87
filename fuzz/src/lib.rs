//! Fuzz targets of zkv's decoders and the harness that runs them.
//!
//! Every target is a function of untrusted bytes ([`targets`]) that must never panic,
//! overflow, or allocate more than [`ALLOC_LIMIT`] at once. Each binary of `src/bin/` is one
//! target, run by [`run`]:
//! - built with `cargo afl build --features afl`, it is an AFL++ persistent-mode loop;
//! - built plainly, it replays the files (and the files of the directories) given as
//!   arguments, or stdin when there are none: how a crash is reproduced and debugged.
//!
//! `tests/corpus.rs` replays the whole corpus (`corpus/<target>/`) in `cargo test`.
//! `docs/FUZZING.md` says how the targets were chosen, how to run them, and what they found.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};

pub mod fixup;
pub mod seeds;
pub mod targets;

/// The largest single allocation a target may make. Inputs are at most 1 MiB (AFL++'s
/// limit) and the largest fixed allocation of a target is its 160 KiB emulated device, so
/// anything bigger comes from a length field that was trusted.
pub const ALLOC_LIMIT: usize = 64 << 20;

/// The system allocator, aborting on any single allocation above [`ALLOC_LIMIT`]. An
/// abort is a crash to AFL++ and a failed test to the replay. Zeroed allocations are
/// checked too: the kernel would hand out an untouched huge `calloc` without complaint.
struct Capped;

fn too_big(size: usize) -> ! {
    let _ = std::io::stderr().write_all(b"zkv-fuzz: allocation above ALLOC_LIMIT\n");
    let _ = size;
    std::process::abort()
}

// SAFETY: every call is forwarded unchanged to `System`; only the size is checked first.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOC_LIMIT {
            too_big(layout.size());
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOC_LIMIT {
            too_big(layout.size());
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > ALLOC_LIMIT {
            too_big(new_size);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Capped = Capped;

/// A fuzz target: any bytes in, no panic out.
pub type Target = fn(&[u8]);

/// Every target: its name (= its binary and its corpus directory) and its function.
pub const TARGETS: &[(&str, Target)] = &[
    ("sst_footer", targets::sst_footer),
    ("sst_data_block", targets::sst_data_block),
    ("sst_index_block", targets::sst_index_block),
    ("sst_filter", targets::sst_filter),
    ("sst_props", targets::sst_props),
    ("sst_table", targets::sst_table),
    ("blob_file", targets::blob_file),
    ("blob_index", targets::blob_index),
    ("engine_wal", targets::engine_wal),
    ("engine_manifest", targets::engine_manifest),
    ("version_edit", targets::version_edit),
    ("write_batch", targets::write_batch),
    ("meta_frame", targets::meta_frame),
    ("meta_record", targets::meta_record),
    ("meta_superblock", targets::meta_superblock),
    ("meta_zone", targets::meta_zone),
    ("zns_image", targets::zns_image),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The corpus directory of the fuzz crate (`fuzz/corpus`).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// The files of `path`: itself if it is a file, else its files (not recursing), sorted.
pub fn input_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let p = entry?.path();
        let hidden = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.') || n == "README.txt");
        if p.is_file() && !hidden {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// The entry point of a target binary (see the crate documentation).
pub fn run(name: &str, target: Target) {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if !args.is_empty() {
        let mut n = 0;
        for arg in &args {
            let files = input_files(arg).unwrap_or_else(|e| {
                eprintln!("{name}: cannot read {}: {e}", arg.display());
                std::process::exit(2)
            });
            for file in files {
                let data = std::fs::read(&file).unwrap_or_else(|e| {
                    eprintln!("{name}: cannot read {}: {e}", file.display());
                    std::process::exit(2)
                });
                eprintln!("{name}: {}", file.display());
                target(&data);
                n += 1;
            }
        }
        println!("{name}: {n} inputs replayed, no panic");
        return;
    }
    fuzz_loop(target);
}

#[cfg(feature = "afl")]
fn fuzz_loop(target: Target) {
    afl::fuzz!(|data: &[u8]| target(data));
}

#[cfg(not(feature = "afl"))]
fn fuzz_loop(target: Target) {
    use std::io::Read;
    let mut data = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut data) {
        eprintln!("cannot read stdin: {e}");
        std::process::exit(2);
    }
    target(&data);
}
