//! Blob files: values separated from their keys (RocksDB's integrated BlobDB). A flush or
//! compaction writes large values to blob files and stores a [`BlobIndex`] in the table in
//! their place; a read follows the index to the value. `docs/BLOB.md` describes the bytes
//! and the design.
//!
//! - the format layer: names, the blob index, writing and reading a blob file. A blob file
//!   is a header, one record per blob (a header with a checksum, the user key, the value)
//!   and a footer with the blob count and bytes. It is written once, in order, through a
//!   [`LogSink`](crate::log::LogSink) ([`BlobFileWriter`]), and read only once finished,
//!   through [`RandomAccess`](crate::source::RandomAccess) ([`BlobFileReader`]). Blob
//!   bytes ([`blob_record_bytes`]: record header, key and value) are what the engine counts
//!   per file as total and, once unreferenced, garbage bytes;
//! - [`stage`]: what a flush or compaction job does with blobs (separation, garbage
//!   collection, garbage metering);
//! - [`cutoff`]: which blob files garbage collection relocates (RocksDB's age cutoff, the
//!   Same-Victim paper's Z_Cutoff).

pub mod cutoff;
mod format;
mod reader;
pub mod stage;
#[cfg(test)]
mod tests;
mod writer;

pub use cutoff::{first_kept_file, BlobGcCutoff, BlobZones, FixedCutoff, ZoneCutoff};
pub use format::{
    blob_file_name, blob_record_bytes, parse_blob_file_name, BlobIndex, FOOTER_LEN, HEADER_LEN,
    RECORD_HEADER_LEN,
};
pub use reader::{BlobFileReader, BlobRecord};
pub use stage::{gc_estimate, BlobCount, BlobOutcome, BlobRules, BlobSinks, BlobStage};
pub use writer::{BlobFileSummary, BlobFileWriter};
