//! SST lifetime prediction on the FC-tick clock (Prophet, MSST'24, section III).
//!
//! - [`Clock`]: the LSM state clock. One FC-tick per flush and per compaction (a trivial
//!   move is a compaction: RocksDB runs it as a compaction job and the paper counts every
//!   compaction event). It also keeps what predictions are made of: the levels that
//!   compact, files deleted per compaction (D_num) and, per level, the mean lifetime of
//!   files deleted passively (by a compaction started in the level above). It is stored in
//!   the manifest with every edit that ticks, so a reopen continues it.
//! - `predict`: the cases c1, c2A, c2B, c3 and the predicted deletion tick of a new SST.
//! - [`LifetimeStats`]: the accuracy of the predictions, as files die.
//!
//! This module knows nothing of zones; the database turns a prediction into a placement
//! hint ([`zkv_zonefs::placement::PredictedDeath`]) and answers the cleaner's compensation
//! question from it. `docs/PROPHET.md` records the choices where the paper is ambiguous.

mod clock;
mod predict;
mod stats;

pub use clock::{Clock, Outcome};
pub use predict::{predict, PredictCtx};
pub use stats::{CaseCell, LifetimeStats, ERROR_BIN, LIFETIME_BIN, MISS_FACTOR};

/// How the predictor expects an SST to die.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Case {
    /// c1: it is picked by its own level's compaction, after `rank` compactions of the
    /// level.
    C1,
    /// c2A: merged passively by a compaction from the level above, after the mean lifetime
    /// of such files in its level.
    C2A,
    /// c2B: it overlapped a file of the level above when created, and dies with it.
    C2B,
    /// c3: it is picked by its own level but nothing overlaps it below: a trivial move,
    /// then the mean lifetime of the level below.
    C3,
}

impl Case {
    /// Every case, in code order.
    pub const ALL: [Case; 4] = [Case::C1, Case::C2A, Case::C2B, Case::C3];

    /// The paper's name: `P1`, `P2A`, `P2B`, `P3`.
    pub fn name(self) -> &'static str {
        match self {
            Case::C1 => "P1",
            Case::C2A => "P2A",
            Case::C2B => "P2B",
            Case::C3 => "P3",
        }
    }

    /// The case's code in the manifest (1 to 4).
    pub(crate) fn code(self) -> u64 {
        match self {
            Case::C1 => 1,
            Case::C2A => 2,
            Case::C2B => 3,
            Case::C3 => 4,
        }
    }

    /// The case stored as `code`; `None` for an unknown code.
    pub(crate) fn from_code(code: u64) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.code() == code)
    }
}

/// How an SST really died.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Death {
    /// D1: an input of the level its compaction started from (its own level's trigger).
    D1,
    /// D2: an input of the output level (merged by a compaction from the level above).
    D2,
}

impl Death {
    /// The paper's name: `D1`, `D2`.
    pub fn name(self) -> &'static str {
        match self {
            Death::D1 => "D1",
            Death::D2 => "D2",
        }
    }
}

/// What the engine predicted for an SST when it created it; stored in the manifest with
/// the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileLifetime {
    /// The FC-tick of the event that installed the file.
    pub created: u64,
    /// The predicted lifetime PL, in ticks.
    pub lifetime: u64,
    /// How the predictor expected it to die.
    pub case: Case,
    /// The level it was created in.
    pub level: u8,
    /// It has been moved to the next level by a trivial move since.
    pub moved: bool,
}

impl FileLifetime {
    /// The predicted deletion tick PD = creation tick + PL.
    pub fn deletion_tick(&self) -> u64 {
        self.created.saturating_add(self.lifetime)
    }

    /// Prophet's compensation rule: compact the file now (rather than copy it) when it was
    /// predicted to trigger its own compaction (c1) and that is still ahead of `now`. A file
    /// moved down since was predicted for its old level: not taken.
    pub fn compact_ahead(&self, now: u64) -> bool {
        self.case == Case::C1 && !self.moved && self.deletion_tick() > now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensation_takes_only_c1_files_whose_tick_is_ahead() {
        let l = |case, created, lifetime| FileLifetime {
            created,
            lifetime,
            case,
            level: 2,
            moved: false,
        };
        assert!(l(Case::C1, 10, 5).compact_ahead(14));
        // Moved down since the prediction: it was for the old level.
        let moved = FileLifetime {
            moved: true,
            ..l(Case::C1, 10, 5)
        };
        assert!(!moved.compact_ahead(14));
        // At or past the predicted tick the prediction was wrong: copy.
        assert!(!l(Case::C1, 10, 5).compact_ahead(15));
        assert!(!l(Case::C1, 10, 5).compact_ahead(40));
        for case in [Case::C2A, Case::C2B, Case::C3] {
            assert!(!l(case, 10, 5).compact_ahead(11), "{case:?}");
        }
        assert_eq!(l(Case::C1, u64::MAX, 5).deletion_tick(), u64::MAX);
        for c in Case::ALL {
            assert_eq!(Case::from_code(c.code()), Some(c));
        }
        assert_eq!(Case::from_code(0), None);
    }
}
