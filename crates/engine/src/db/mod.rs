//! The database: open and recovery, writes, reads, flush, compaction scheduling, stalls,
//! placement hints and statistics. `docs/ENGINE.md` describes the whole as built.
//!
//! - `api`: [`Db`], [`WriteOptions`], [`ReadOptions`];
//! - `recovery`: open, read-write and read-only (version set, WAL replay, obsolete files);
//! - `check`, `salvage`: verifying every file without writing, and copying out what can
//!   still be read from a damaged database;
//! - `write`: the write path, stalls, memtable switches; `read`: gets and iterators;
//! - `flush`, `compact`: the jobs; `background`: threads and the zone cleaner's compaction
//!   requests; `sim`: the deterministic mode's simulation of the threads, `spread`: its
//!   compactions' tables written one by one;
//! - `hints`: the neighbourhood in SST placement hints; `hint_source`: the hints of live
//!   SSTs the zone cleaner moves;
//! - `table_cache`, `files`, `snapshot`, `stall`, `stats`: their helpers.

mod api;
mod background;
mod blobs;
mod check;
mod compact;
mod compact_range;
mod files;
mod flush;
mod hint_source;
mod hints;
mod inner;
mod lifetimes;
mod read;
mod recovery;
mod salvage;
mod sim;
mod snapshot;
mod spread;
mod stall;
mod stats;
mod table_cache;
mod write;
mod write_group;

pub use api::{prefix_end, Db, MemtableShape, ReadOptions, WriteOptions};
pub use check::{check, CheckReport, Finding, KeyRange, Severity};
pub(crate) use files::{parse_file_name, DbFile};
pub use hints::neighbors_in;
pub use recovery::{DroppedRegion, RecoveryReport};
pub use salvage::{salvage, SalvageReport};
pub use snapshot::Snapshot;
pub use stats::{
    BlobStats, CompactionInput, CompactionOutput, CompactionRecord, DbStats, LevelShape,
    LifetimeSummary,
};
