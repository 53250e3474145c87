//! The database's answer to the zone cleaner's question "where would this live SST go if
//! it were written now?" (`zkv_zonefs::fs::HintSource`). The cleaner asks when its placement
//! policy reads neighbourhoods (CAZA, CAZA+): an SST it migrates is then placed next to
//! the files it will most likely be compacted with *now*, not next to those it had when it
//! was written (the neighbourhood a hint rebuilt from the file layer's metadata lacks).

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Instant;

use zkv_zonefs::fs::HintSource;
use zkv_zonefs::placement::{Neighbors, PlacementHint};

use crate::version::{FileMeta, Version};

use super::compact::FsZones;
use super::files::{live_sst_hint, parse_file_name, DbFile, SstExtras};
use super::hints::{neighbors, HintScope};
use super::inner::{holds_versions_lock, DbInner};

/// Holds only a weak reference: the file system keeps its hint source alive, and must not
/// keep the database alive.
pub(crate) struct LiveHints {
    pub inner: Weak<DbInner>,
}

impl HintSource for LiveHints {
    fn hint_of(&self, name: &str) -> Option<PlacementHint> {
        let DbFile::Sst(number) = parse_file_name(name) else {
            return None;
        };
        // A thread inside a manifest write is changing the version: the answer could name
        // files its edit deletes. The cleaner then uses the hint rebuilt from metadata.
        if holds_versions_lock() {
            return None;
        }
        self.inner.upgrade()?.live_sst_hint(number)
    }
}

impl DbInner {
    /// The hint of live SST `number` now: its level, lifetime, size and key range, and
    /// what the policy reads of a new SST of its level and key range: the neighbourhood
    /// (the file itself left out of every list), the predicted death (predicted afresh: the
    /// file is placed as if written now). `None` if the current version does not hold it.
    pub(crate) fn live_sst_hint(&self, number: u64) -> Option<PlacementHint> {
        let (version, compacting) = self.version_and_compacting();
        let (level, file) = version.all_files().find(|(_, f)| f.number == number)?;
        let file = Arc::clone(file);
        let neighbors = crate::fs::wants_neighbors(&self.fs)
            .then(|| self.live_neighbors(&version, &compacting, level, &file));
        let itself = [Arc::clone(&file)];
        let death = self
            .predict_new(level, &file, &itself, &[])
            .map(|(_, death)| death);
        let extras = SstExtras {
            neighbors,
            lifetime: None,
            death,
        };
        Some(live_sst_hint(level, &file, extras))
    }

    fn live_neighbors(
        &self,
        version: &Version,
        compacting: &HashSet<u64>,
        level: usize,
        file: &FileMeta,
    ) -> Neighbors {
        let start = Instant::now();
        let itself: HashSet<u64> = HashSet::from([file.number]);
        let scope = HintScope {
            version,
            options: &self.options,
            compacting,
            job_inputs: &itself,
            job_outputs: &[],
            zones: &FsZones(&self.fs),
        };
        let (smallest, largest) = (file.smallest_user_key(), file.largest_user_key());
        let n = neighbors(&scope, level, smallest, largest);
        self.count_neighbors(start);
        n
    }
}
