//! The `compact` and `compensate` cleaning modes: the cleaner offers the victim's valid
//! SSTs to the engine's callback; what the engine compacts (writes an output, deletes the
//! input) is freed without copying; everything still valid afterwards is copied.

mod fs_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use fs_support::*;
use zkv_zonefs::fs::{CleaningMode, CompactionCandidate, CompactionRequester, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint};

type Files = BTreeMap<String, Vec<u8>>;

const PIECE: usize = 64 * 1024;

fn packed(kind: FileKind) -> PlacementHint {
    PlacementHint {
        kind: Some(kind),
        level: (kind == FileKind::Sst).then_some(2),
        lifetime: Lifetime::None,
        ..Default::default()
    }
}

fn write(fs: &ZoneFs, files: &mut Files, name: &str, kind: FileKind, content: Vec<u8>) {
    write_file(fs, name, kind, packed(kind), &content);
    files.insert(name.to_string(), content);
}

#[derive(Clone, Debug, PartialEq)]
struct Call {
    victim: u32,
    names: Vec<String>,
    mode: CleaningMode,
}

/// A stand-in for the engine: "compacts" the files it agrees to (writes their content to a
/// new SST `c-<name>` from inside the callback, then deletes the input), refuses the
/// others, and may claim a file it did not touch.
struct Engine {
    fs: ZoneFs,
    agree: BTreeSet<String>,
    claim_untouched: BTreeSet<String>,
    calls: Mutex<Vec<Call>>,
}

impl CompactionRequester for Engine {
    fn request(
        &self,
        victim: u32,
        files: &[CompactionCandidate],
        mode: CleaningMode,
    ) -> Vec<String> {
        self.calls.lock().unwrap().push(Call {
            victim,
            names: files.iter().map(|c| c.name.clone()).collect(),
            mode,
        });
        let mut done = Vec::new();
        for c in files {
            if self.agree.contains(&c.name) {
                let content = read_file(&self.fs, &c.name);
                assert_eq!(content.len() as u64, c.size);
                let out = format!("c-{}", c.name);
                let mut w = self
                    .fs
                    .create(&out, FileKind::Sst, packed(FileKind::Sst))
                    .unwrap();
                w.append(&content).unwrap();
                w.close().unwrap();
                self.fs.delete(&c.name).unwrap();
                done.push(c.name.clone());
            } else if self.claim_untouched.contains(&c.name) {
                done.push(c.name.clone());
            }
        }
        done
    }
}

fn engine(fs: &ZoneFs, agree: &[&str], claim: &[&str]) -> Arc<Engine> {
    let e = Arc::new(Engine {
        fs: fs.clone(),
        agree: agree.iter().map(|s| s.to_string()).collect(),
        claim_untouched: claim.iter().map(|s| s.to_string()).collect(),
        calls: Mutex::new(Vec::new()),
    });
    fs.set_compaction_requester(e.clone());
    e
}

/// Zone 2: SSTs a0 and a1, another file o2, SST a3 (deleted): 192 KiB valid.
/// Zone 3: four SSTs, all valid.
fn setup(mode: CleaningMode) -> (std::sync::Arc<dyn zkv_zns::ZonedDevice>, ZoneFs, Files) {
    let (_, dev) = mem_device(geometry(16, 256, 0, 0));
    let fs = format(&dev, opts().with_gc_mode(mode));
    fs.set_inline_cleaning(true);
    let mut files = Files::new();
    write(&fs, &mut files, "a0", FileKind::Sst, data(1, 0, PIECE));
    write(&fs, &mut files, "a1", FileKind::Sst, data(2, 0, PIECE));
    write(&fs, &mut files, "o2", FileKind::Other, data(3, 0, PIECE));
    write(&fs, &mut files, "a3", FileKind::Sst, data(4, 0, PIECE));
    for i in 0..4 {
        write(
            &fs,
            &mut files,
            &format!("b{i}"),
            FileKind::Sst,
            data(10 + i, 0, PIECE),
        );
    }
    fs.delete("a3").unwrap();
    files.remove("a3");
    assert_eq!(fs.pick_victim(), Some(2));
    (dev, fs, files)
}

fn finish(
    dev: &std::sync::Arc<dyn zkv_zns::ZonedDevice>,
    fs: ZoneFs,
    files: &Files,
    mode: CleaningMode,
) {
    assert_files(&fs, files, "after cleaning");
    fs.clear_compaction_requester();
    drop(fs);
    let fs = mount(dev, opts().with_gc_mode(mode));
    assert_files(&fs, files, "after remount");
}

#[test]
fn compact_mode_copies_only_what_the_engine_refused() {
    let mode = CleaningMode::Compact;
    let (dev, fs, mut files) = setup(mode);
    let e = engine(&fs, &["a0"], &[]);
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!(
        *e.calls.lock().unwrap(),
        vec![Call {
            victim: 2,
            names: vec!["a0".into(), "a1".into()],
            mode,
        }],
        "every valid SST of the victim, nothing else"
    );
    // a0 compacted away; a1 (refused) and o2 (not an SST) copied.
    assert_eq!(
        (v.compacted_bytes, v.copied_bytes),
        (64 * KIB, 128 * KIB),
        "{v:?}"
    );
    assert!(v.cleaned && v.reset);
    let content = files.remove("a0").unwrap();
    files.insert("c-a0".into(), content);
    let s = fs.stats();
    assert_eq!(
        (s.gc.compacted_bytes, s.gc.copy_bytes),
        (64 * KIB, 128 * KIB)
    );
    assert_eq!(
        (s.gc.victims, s.gc.resets, s.gc.compaction_requests),
        (1, 1, 1)
    );
    assert!(!fs.zones_of("a1").unwrap().iter().any(|(z, _)| *z == 2));
    finish(&dev, fs, &files, mode);
}

#[test]
fn compensate_mode_lets_the_engine_choose_and_copies_the_rest() {
    let mode = CleaningMode::Compensate;
    let (dev, fs, mut files) = setup(mode);
    // The engine compacts a1, and claims a0 without compacting it: a0 is still valid, so
    // it is copied and not counted as compacted.
    let e = engine(&fs, &["a1"], &["a0"]);
    let v = fs.clean_one().unwrap().unwrap();
    let calls = e.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].mode, CleaningMode::Compensate);
    assert_eq!(calls[0].names, vec!["a0".to_string(), "a1".into()]);
    assert_eq!(
        (v.compacted_bytes, v.copied_bytes),
        (64 * KIB, 128 * KIB),
        "{v:?}"
    );
    let content = files.remove("a1").unwrap();
    files.insert("c-a1".into(), content);
    finish(&dev, fs, &files, mode);
}

#[test]
fn a_victim_compacted_entirely_is_a_zero_copy_reset() {
    let mode = CleaningMode::Compact;
    let (dev, fs, mut files) = setup(mode);
    // Make zone 3 the victim with SSTs only.
    fs.delete("b1").unwrap();
    files.remove("b1");
    fs.delete("b2").unwrap();
    files.remove("b2");
    assert_eq!(fs.pick_victim(), Some(3));
    let _e = engine(&fs, &["b0", "b3"], &[]);
    let zero_copy = fs.stats().zero_copy_resets;
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!(
        (v.zone, v.compacted_bytes, v.copied_bytes),
        (3, 128 * KIB, 0)
    );
    assert!(v.cleaned && v.reset, "{v:?}");
    let s = fs.stats();
    assert_eq!(s.zero_copy_resets, zero_copy + 1);
    assert_eq!((s.gc.resets, s.gc.copy_bytes), (1, 0));
    for b in ["b0", "b3"] {
        let content = files.remove(b).unwrap();
        files.insert(format!("c-{b}"), content);
    }
    finish(&dev, fs, &files, mode);
}

#[test]
fn without_a_callback_compact_modes_copy_everything() {
    for mode in [CleaningMode::Compact, CleaningMode::Compensate] {
        let (dev, fs, files) = setup(mode);
        let v = fs.clean_one().unwrap().unwrap();
        assert_eq!((v.compacted_bytes, v.copied_bytes), (0, 192 * KIB), "{v:?}");
        assert_eq!(fs.stats().gc.compaction_requests, 0);
        finish(&dev, fs, &files, mode);
    }
}

/// In copy mode the callback is never asked.
#[test]
fn copy_mode_never_asks_the_engine() {
    let mode = CleaningMode::Copy;
    let (dev, fs, files) = setup(mode);
    let e = engine(&fs, &["a0", "a1"], &[]);
    let v = fs.clean_one().unwrap().unwrap();
    assert_eq!((v.compacted_bytes, v.copied_bytes), (0, 192 * KIB));
    assert!(e.calls.lock().unwrap().is_empty());
    finish(&dev, fs, &files, mode);
}
