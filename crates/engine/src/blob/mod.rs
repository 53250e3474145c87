//! Blob files: values separated from their keys (RocksDB's integrated BlobDB). A flush or
//! compaction writes large values to blob files and stores a [`BlobIndex`] in the table in
//! their place; a read follows the index to the value.
//!
//! - the format: names, the blob index, writing and reading a blob file (`docs/BLOB.md`
//!   describes the bytes);
//! - [`stage`]: what a flush or compaction job does with blobs (separation, garbage
//!   collection, garbage metering).

mod format;
mod reader;
pub mod stage;
mod writer;

pub use format::{
    blob_file_name, blob_record_bytes, parse_blob_file_name, BlobIndex, FOOTER_LEN, HEADER_LEN,
    RECORD_HEADER_LEN,
};
pub use reader::{BlobFileReader, BlobRecord};
pub use stage::{gc_cutoff_file, BlobCount, BlobOutcome, BlobRules, BlobSinks, BlobStage};
pub use writer::{BlobFileSummary, BlobFileWriter};
