//! The hook where the zone cleaner plugs in.
//!
//! When the allocator finds no zone for a writer (no zone with room, no empty zone beyond
//! the reserve, no dead zone to reset, no lease to take back) it asks the installed
//! [`SpaceReclaimer`] to free space before it gives up with an out-of-space error. It
//! calls it with no lock held, so the reclaimer may use the file system like any client
//! (read extents, write copies, update files); the allocator looks again after each call
//! that reports progress, a bounded number of times.

use crate::meta::FileKind;

/// What the writer that found no zone needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpaceRequest {
    pub file: String,
    pub kind: FileKind,
    /// At least this many bytes (one device block).
    pub bytes: u64,
}

/// Frees space on demand (the zone cleaner). Without one, running out of zones is an
/// out-of-space error at once.
pub trait SpaceReclaimer: Send + Sync {
    /// Tries to free space. Returns true if anything was freed (the allocator retries),
    /// false if nothing can be done.
    fn reclaim(&self, req: &SpaceRequest) -> bool;
}
