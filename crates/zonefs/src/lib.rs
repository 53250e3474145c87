//! zkv zoned file layer.
//!
//! [`meta`] holds the crash-safe metadata: the file table, its per-zone derived figures
//! and the rolling metadata log in the reserved metadata zones. [`placement`] holds the
//! placement decision (which zone a file goes to) and its policies, LIZA first. [`fs`] is
//! the file layer proper: files as extents in zones, the zone budget and allocator,
//! the zone cleaner.

// Library code returns errors instead of panicking on I/O and decoding paths (no unwrap,
// expect or unchecked indexing); unit tests may panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

pub mod fs;
pub mod meta;
pub mod placement;
