//! zkv zoned file layer.
//!
//! [`meta`] holds the crash-safe metadata: the file table, its per-zone derived figures
//! and the rolling metadata log in the reserved metadata zones. [`placement`] holds the
//! placement decision (which zone a file goes to) and its policies, LIZA first. [`fs`] is
//! the file layer proper: files as extents in zones, the zone budget and allocator,
//! the zone cleaner.

pub mod fs;
pub mod meta;
pub mod placement;
