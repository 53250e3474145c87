//! Hand-built versions for the compaction tests.

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::picker::{NoZones, PickCtx, Picker};
use crate::key::{self, ValueKind};
use crate::options::Options;
use crate::version::{FileMeta, Version, VersionEdit};

/// File `number` over user keys `[smallest, largest]`, `size` bytes; both boundary entries
/// and its sequence range are `number` (so newer files have larger numbers). Entries and raw
/// sizes are chosen so that compensation never changes the size.
pub fn file(number: u64, smallest: &[u8], largest: &[u8], size: u64) -> FileMeta {
    file_seq(number, (smallest, number), (largest, number), size)
}

/// Like [`file`] with explicit sequence numbers for the two boundary entries (two files of a
/// deep level may share a user key when the left one holds the newer entry).
pub fn file_seq(number: u64, smallest: (&[u8], u64), largest: (&[u8], u64), size: u64) -> FileMeta {
    FileMeta {
        number,
        size,
        smallest: key::internal_key(smallest.0, smallest.1, ValueKind::Put),
        largest: key::internal_key(largest.0, largest.1, ValueKind::Put),
        smallest_seq: smallest.1.min(largest.1),
        largest_seq: smallest.1.max(largest.1),
        entries: 10,
        deletions: 0,
        raw_key_size: 100,
        raw_value_size: 100,
    }
}

/// A version of `levels` levels holding `files`.
pub fn version_of(levels: usize, files: &[(u32, FileMeta)]) -> Version {
    let edit = VersionEdit {
        new_files: files.to_vec(),
        ..VersionEdit::default()
    };
    Version::new(levels)
        .apply(&edit)
        .expect("a valid hand-built version")
}

/// File numbers, in order.
pub fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
    files.iter().map(|f| f.number).collect()
}

/// Numbers of the files of `level`, in the order `picker` tries them (default options, no
/// running compactions, no zones, the given round-robin cursors).
pub fn picked_order(
    picker: &dyn Picker,
    v: &Version,
    level: usize,
    cursors: &[Option<Vec<u8>>],
) -> Vec<u64> {
    let (o, busy) = (Options::default(), HashSet::new());
    let ctx = PickCtx {
        version: v,
        options: &o,
        compacting: &busy,
        zones: &NoZones,
        free_ratio: 1.0,
        cursors,
    };
    let files = v.files(level);
    picker
        .order(&ctx, level)
        .iter()
        .map(|&i| files[i].number)
        .collect()
}
