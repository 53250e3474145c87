//! Replays the whole corpus (`corpus/<target>/`: seeds, the fuzzer's finds, regressions)
//! through every target as plain Rust: CI's `scripts/fuzz.sh replay`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use zkv_fuzz::{corpus_dir, input_files, TARGETS};

#[test]
fn every_target_has_a_corpus_and_every_corpus_a_target() {
    for (name, _) in TARGETS {
        let dir = corpus_dir().join(name);
        let files = input_files(&dir).unwrap_or_default();
        assert!(files.len() >= 2, "{}: no corpus", dir.display());
    }
    for entry in std::fs::read_dir(corpus_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            zkv_fuzz::target(&name).is_some(),
            "corpus/{name} has no target"
        );
    }
}

#[test]
fn corpus_replays_without_panic() {
    let (mut total, mut bytes) = (0, 0);
    let mut panicked = Vec::new();
    for (name, target) in TARGETS {
        let files = input_files(&corpus_dir().join(name)).unwrap();
        for file in &files {
            let data = std::fs::read(file).unwrap();
            bytes += data.len();
            if catch_unwind(AssertUnwindSafe(|| target(&data))).is_err() {
                panicked.push(file.display().to_string());
            }
        }
        eprintln!("corpus: {name}: {} inputs", files.len());
        total += files.len();
    }
    eprintln!("corpus: {total} inputs ({bytes} bytes) replayed");
    assert!(panicked.is_empty(), "inputs that panic: {panicked:#?}");
}

#[test]
fn seeds_are_deterministic() {
    assert_eq!(zkv_fuzz::seeds::all(), zkv_fuzz::seeds::all());
}

/// The regressions of the record-log targets reach the decoder that was fixed: the log's
/// checksums are fixed up, its one record is the crashing batch or edit, now refused.
#[test]
fn log_regressions_reach_the_fixed_decoders() {
    let record = |target: &str, name: &str| {
        let data = std::fs::read(corpus_dir().join(target).join(name)).unwrap();
        let log = zkv_engine::log::read_log(&zkv_fuzz::fixup::record_log(&data));
        assert_eq!(
            (log.records.len(), log.bad.len()),
            (1, 0),
            "{target}/{name}"
        );
        log.records[0].payload.clone()
    };
    let batch = record("engine_wal", "regression-seq-overflow");
    let err = zkv_engine::batch::WriteBatch::from_data(batch).unwrap_err();
    assert!(err.to_string().contains("passes the largest"), "{err}");
    let edit = record("engine_manifest", "regression-last-sequence");
    let err = zkv_engine::version::VersionEdit::decode(&edit).unwrap_err();
    assert!(err.to_string().contains("exceeds the largest"), "{err}");
}
