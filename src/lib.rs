//! zkv: a key-value store for zoned (ZNS) SSDs, as a library.
//!
//! [`Db::open`] takes a device and [`DbOptions`], and gives a store ready for reads and
//! writes: it opens or creates the device, formats or mounts the zoned file system on it,
//! starts zone cleaning and opens the LSM database. [`Db::close`] ends it all.
//!
//! Devices are written as on the command line: `mem` (in memory, gone with the store),
//! `file:PATH` (an emulated zoned device in one image file, created when missing) or
//! `zbd:/dev/DEV` (a Linux zoned block device).
//!
//! ```
//! use zkv::{Db, DbOptions};
//!
//! # fn main() -> zkv::Result<()> {
//! let db = Db::open("mem", DbOptions::default())?;
//! db.put("hello", "world")?;
//! assert_eq!(db.get("hello")?, Some(b"world".to_vec()));
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! The layers underneath are re-exported for what the front door does not cover:
//! [`zns`] (zoned devices), [`zonefs`] (the zoned file layer, its placement policies and
//! zone cleaner) and [`engine`] (the LSM engine; [`Db::engine`] is its handle).
//! `docs/ARCHITECTURE.md` describes how they fit together.

// Library code returns errors instead of panicking on I/O and decoding paths, and does
// not index without a bounds check, as the crates below it; unit tests may unwrap.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

mod db;
mod error;
mod open;
mod options;
mod room;

pub use db::{Db, Iter};
pub use error::{Error, Result};
pub use options::{DbOptions, DEFAULT_ZONES, DEFAULT_ZONE_SIZE};

pub use zkv_engine as engine;
pub use zkv_zns as zns;
pub use zkv_zonefs as zonefs;

pub use zkv_engine::batch::WriteBatch;
pub use zkv_engine::db::{ReadOptions, Snapshot, WriteOptions};
pub use zkv_engine::options::{ExecMode, Options};
pub use zkv_zns::Geometry;
pub use zkv_zonefs::fs::FsOptions;

/// The two policy traits a program implements to plug in its own policies (see
/// [`DbOptions::placement`] and [`Options::with_picker`]), with what they are given, and
/// zkv's own policies as values, each with its knobs:
///
/// ```
/// use std::sync::Arc;
/// use zkv::policy::Acc;
///
/// // ACC switching to ZACA at 30 % free space, from L2 on.
/// let acc = Acc::new(0.30, 2).expect("a turning point in [0, 1]");
/// let options = zkv::Options::default().with_picker(Arc::new(acc));
/// assert_eq!(options.compaction_pri, "acc");
/// ```
pub mod policy {
    pub use zkv_engine::compaction::{
        Acc, MinOverlap, OldestLargestSeq, OldestSmallestSeq, PickCtx, Picker, RoundRobin, Sica,
        Zaca, ZoneDrain,
    };
    pub use zkv_engine::version::{FileMeta, Version};
    pub use zkv_zonefs::placement::{Baza, BlobSplit, Caza, CazaPlus, Liza, Prophet};
    pub use zkv_zonefs::placement::{
        Decision, Lifetime, PlacementCtx, PlacementHint, PlacementPolicy, ZoneUse, ZoneView,
    };
}
