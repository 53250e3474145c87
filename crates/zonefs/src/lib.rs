//! zkv zoned file layer.
//!
//! [`meta`] holds the crash-safe metadata: the file table, its per-zone derived figures
//! and the rolling metadata log in the reserved metadata zones.

pub mod meta;
