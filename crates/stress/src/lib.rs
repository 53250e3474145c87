//! zkv's crash harness, after RocksDB's db_stress crash test and LevelDB's fault-injection
//! environment: one store per setup is carried across many crashes, and after each one it
//! is checked against an oracle of what a single writer was told had succeeded.
//!
//! - `value`: keys and self-describing values (key, [`Version`], checked body);
//! - [`oracle`]: the writer's operations since the last verified state and the prefix
//!   check of a recovered store;
//! - [`workload`]: the writer (random puts, deletes, batches, flushes, checked reads);
//! - [`setup`]: device, file-system and engine options, opening a store;
//! - `verify`: the check after a recovery;
//! - `inproc`: power cuts and emulator kill points in this process;
//! - [`kill`], `journal`: a child process killed with SIGKILL, and its log;
//! - [`run`]: the driver; [`totals`]: the counters and their report.
//!
//! `docs/RELIABILITY.md`, section "Crash harness", says what is guaranteed and checked.

// As in the other library crates: an I/O path reports its errors, it does not panic (no
// unwrap, expect or unchecked indexing).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

mod counters;
mod inproc;
mod journal;
pub mod kill;
pub mod oracle;
pub mod run;
pub mod setup;
pub mod totals;
mod value;
mod verify;
pub mod workload;

pub use value::Version;
