//! Compaction: level scores, the pickers (RocksDB's `compaction_pri`), the choice of a
//! compaction's inputs (RocksDB 7.8's leveled `LevelCompactionBuilder`) and the per-level
//! compaction statistics. `docs/COMPACTION.md` describes the rules and the RocksDB
//! functions they follow.

mod acc;
pub mod forced_blob_gc;
mod groups;
mod min_overlap;
mod oldest_largest_seq;
mod oldest_smallest_seq;
mod pick;
mod picker;
#[cfg(test)]
mod reference;
mod registry;
mod round_robin;
mod score;
mod sica;
mod stats;
pub mod subcompaction;
#[cfg(test)]
pub(crate) mod test_util;
mod zaca;
mod zone_drain;

pub use acc::Acc;
pub(crate) use groups::GroupMemo;
pub use min_overlap::MinOverlap;
pub use oldest_largest_seq::OldestLargestSeq;
pub use oldest_smallest_seq::OldestSmallestSeq;
pub use pick::{
    level0_non_overlapping, pick_compaction, pick_requested, Compaction, CompactionReason,
};
pub(crate) use picker::NO_LAYOUT;
pub use picker::{NoZones, PickCtx, Picker, ZoneLookup};
pub use registry::{
    picker_by_name, picker_entry, picker_names, picker_with, pickers_help, pickers_markdown,
    PickerEntry, PICKER_TABLE,
};
pub use round_robin::RoundRobin;
pub use score::{
    compute_scores, estimated_compaction_needed_bytes, scores_by_level, Compensation, LevelScore,
};
pub use sica::Sica;
pub use stats::{CompactionStats, JobOutput, LevelStats};
pub use zaca::{s_same, Zaca};
pub use zkv_zonefs::meta::ExtentMark;
pub use zone_drain::{drain_score, ZoneDrain};
pub mod job;
