//! zkv LSM engine on the zoned file layer.
//!
//! The layout follows RocksDB's, because the papers' effects come from how RocksDB creates
//! and deletes SSTs:
//! - [`key`]: internal keys (user key + sequence number + kind) and their order;
//! - [`batch`], [`log`], [`memtable`]: the write path (atomic batches, the WAL and manifest
//!   record log, the skiplist memtable);
//! - [`coding`]: varints and length-prefixed strings, shared by the on-disk formats;
//! - [`sst`]: the table format (blocks, index, bloom filter, properties, footer);
//! - [`blob`]: the blob file format (values separated from their keys) and blob indexes;
//! - [`version`]: files per level, version edits, the manifest and CURRENT;
//! - [`compaction`]: level scores, the pickers (`compaction_pri`), the choice of inputs and
//!   the compaction job;
//! - [`iter`]: the iterator trait, the merging iterator and the user-facing iterator;
//! - [`fs`]: the file system the engine talks to, and its two implementations (the zoned
//!   file layer, a plain directory);
//! - [`db`]: the database: open and recovery, writes, reads, flush, compaction scheduling,
//!   stalls, placement hints and statistics.

// Library code returns errors instead of panicking on I/O and decoding paths; unit tests
// may unwrap.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

mod arena_model;
pub mod batch;
pub mod blob;
pub mod coding;
pub mod compaction;
pub mod db;
pub mod error;
pub mod fs;
pub mod iter;
pub mod key;
pub mod lifetime;
pub mod log;
pub mod memtable;
pub mod options;
pub mod source;
pub mod sst;
pub mod version;

pub use error::{Error, Result};
