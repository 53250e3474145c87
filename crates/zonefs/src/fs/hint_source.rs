//! Where the zone cleaner gets the placement hint of a file it migrates.
//!
//! A file's metadata keeps only what LIZA needs (kind, level, lifetime class), as they were
//! when the file was created. A key-range-aware policy (CAZA, CAZA+) places by the file's
//! neighbourhood, which only the engine knows, and which has changed since: the file may
//! have moved down a level, its overlapping SSTs have come and gone. A lifetime-aware
//! policy (Prophet) places by the file's predicted death, which only the engine predicts.
//! So when the policy wants neighbourhoods or predictions, the cleaner asks the engine's
//! [`HintSource`] for the hint of each file it moves, as if the file were created now;
//! without a source, or when it cannot answer, the hint rebuilt from the metadata is used
//! (and such a policy places by LIZA).

use std::sync::Arc;

use crate::placement::{Lifetime, PlacementHint};

use super::shared::Shared;
use super::ZoneFs;

/// The engine's side of migrations: the placement hint of one of its live files now.
///
/// Contract:
/// - `hint_of(name)` returns the hint the engine would build for a new SST of the file's
///   current level with the file's key range and size: kind, level, lifetime for that
///   level, size, key range, and what the policy reads: the neighbourhood (the file itself
///   excluded from every list), the predicted death. `None`: an unknown file, not an SST,
///   or the engine cannot answer now.
/// - It is called by the cleaner (inline in a writer's allocation, or in the background
///   thread), only when the policy wants neighbourhoods or predictions, and never while the file system
///   holds a lock: the answer may call [`ZoneFs::zones_of`].
/// - It must not wait for anything a writer waiting for the cleaner may hold (answer
///   `None` rather than block on a lock that may be held by a thread whose write needs the
///   cleaner).
/// - The file system keeps the source alive: an engine that owns the file system should
///   hand in an object holding a weak reference to itself.
pub trait HintSource: Send + Sync {
    /// The placement hint of the file `name`, or `None` (see the contract above).
    fn hint_of(&self, name: &str) -> Option<PlacementHint>;
}

impl ZoneFs {
    /// Installs the engine's [`HintSource`], asked for the hints of migrated files.
    pub fn set_hint_source(&self, source: Arc<dyn HintSource>) {
        self.shared.cleaner.hints.set(Some(source));
    }

    /// Removes the hint source: migrated files are then placed by the hint rebuilt from
    /// their metadata (kind, level, lifetime class).
    pub fn clear_hint_source(&self) {
        self.shared.cleaner.hints.set(None);
    }
}

impl Shared {
    /// The hint to migrate `name` with: the source's answer when the policy wants
    /// neighbourhoods or predictions and the source gives one, else `rebuilt` (from the metadata). What the
    /// answer leaves unset is taken from `rebuilt`.
    pub(crate) fn migration_hint(&self, name: &str, rebuilt: PlacementHint) -> PlacementHint {
        if !self.policy.wants_neighbors() && !self.policy.wants_prediction() {
            return rebuilt;
        }
        let Some(mut hint) = self.cleaner.hints.get().and_then(|s| s.hint_of(name)) else {
            return rebuilt;
        };
        hint.kind = hint.kind.or(rebuilt.kind);
        hint.level = hint.level.or(rebuilt.level);
        hint.blob_file = hint.blob_file.or(rebuilt.blob_file);
        if hint.lifetime == Lifetime::NotSet {
            hint.lifetime = rebuilt.lifetime;
        }
        hint
    }
}
