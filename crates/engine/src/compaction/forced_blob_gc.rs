//! RocksDB's forced blob garbage collection (`blob_garbage_collection_force_threshold`):
//! once the oldest blob files, those within the age cutoff, are garbage to at least the
//! threshold (in bytes), the tables linked to the oldest blob file are compacted, each into
//! its own level, so that garbage collection relocates their live blobs and the oldest
//! file can go. Picked only when no level needs a compaction by its score.

use std::sync::Arc;

use crate::options::Options;
use crate::version::{FileMeta, Version};

/// The tables marked for a forced blob garbage collection, with their levels, in level
/// order (RocksDB's `ComputeFilesMarkedForForcedBlobGC`), given how many of the oldest
/// blob files the cutoff selects (`cutoff`). Empty unless blob garbage collection is on
/// with a threshold below 1 and the cutoff selects a file.
pub fn marked_files(
    version: &Version,
    options: &Options,
    cutoff: usize,
) -> Vec<(usize, Arc<FileMeta>)> {
    let on = options.enable_blob_garbage_collection
        && options.blob_garbage_collection_force_threshold < 1.0;
    if !on {
        return Vec::new();
    }
    let blobs: Vec<_> = version.blob_files().collect();
    let (Some(oldest), true) = (blobs.first(), cutoff > 0) else {
        return Vec::new();
    };
    let batch = blobs.get(..cutoff).unwrap_or(&blobs);
    let total: u64 = batch.iter().map(|b| b.total_bytes).sum();
    let garbage: u64 = batch.iter().map(|b| b.garbage_bytes).sum();
    // Unlike RocksDB, a batch without garbage is never forced, whatever the threshold: a
    // threshold of 0 would otherwise rewrite the oldest files forever.
    if garbage == 0
        || (garbage as f64) < options.blob_garbage_collection_force_threshold * total as f64
    {
        return Vec::new();
    }
    version
        .all_files()
        .filter(|(_, f)| f.oldest_blob_file == Some(oldest.number))
        .map(|(level, f)| (level, Arc::clone(f)))
        .collect()
}
