//! Versions: which SSTs make up each level, the edits that change them, the manifest that
//! logs the edits and the CURRENT file that names the manifest.

mod meta;

pub use meta::FileMeta;
