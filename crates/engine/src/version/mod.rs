//! Versions: which SSTs make up each level, the edits that change them, the manifest that
//! logs the edits and the CURRENT file that names the manifest.

mod edit;
mod level;
mod meta;
mod set;
#[allow(clippy::module_inception)]
mod version;

pub use edit::VersionEdit;
pub(crate) use level::merge_sorted;
pub use level::{FileRank, NextBytes, Ranked};
pub use meta::{sst_file_name, BlobFileMeta, BlobGarbage, FileMeta};
pub(crate) use set::parse_manifest_name;
pub use set::{manifest_file_name, wal_file_name, VersionSet, CURRENT, DEFAULT_MAX_MANIFEST_BYTES};
pub use version::{FileTotals, Version};
