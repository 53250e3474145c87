//! The FC-tick clock and the running figures predictions are made of.

use std::collections::HashSet;

use crate::version::{Version, VersionEdit};

use super::{Death, FileLifetime};

/// The LSM state clock (persisted with the version state).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// Flushes + compactions so far.
    pub tick: u64,
    /// How many levels start compactions: the deepest level a compaction started from, + 1
    /// (0 before the first compaction). The paper's max_level (Fig. 2: levels 0–5 compact,
    /// C = 6 + 4).
    pub compacting_levels: u32,
    /// Compactions so far (trivial moves included).
    pub compactions: u64,
    /// SSTs compactions deleted so far (a trivially moved file is not deleted).
    pub deleted: u64,
    /// Per level (of deletion): Σ lifetime and count of the files deleted passively.
    pub passive: Vec<(u64, u64)>,
}

/// An SST with a prediction that died.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The SST's file number.
    pub number: u64,
    /// What was predicted for it at creation.
    pub file: FileLifetime,
    /// The tick of the compaction that deleted it.
    pub died: u64,
    /// How it died.
    pub death: Death,
    /// The level it was deleted from.
    pub level: u8,
}

impl Outcome {
    /// The real lifetime in ticks.
    pub fn real(&self) -> u64 {
        self.died.saturating_sub(self.file.created)
    }

    /// Predicted minus real deletion tick.
    pub fn error(&self) -> i64 {
        let predicted = i128::from(self.file.deletion_tick());
        let error = predicted - i128::from(self.died);
        i64::try_from(error).unwrap_or(if error < 0 { i64::MIN } else { i64::MAX })
    }
}

impl Clock {
    /// The cycle C = max_level + flush_num (at least one tick), `flush_num` being the L0
    /// compaction trigger.
    pub fn cycle(&self, flush_num: u32) -> u64 {
        (u64::from(self.compacting_levels) + u64::from(flush_num)).max(1)
    }

    /// The mean lifetime of the files of `level` deleted passively so far (Average_level);
    /// `None` before the first.
    pub fn passive_mean(&self, level: usize) -> Option<u64> {
        let &(sum, count) = self.passive.get(level)?;
        (count > 0).then(|| sum / count)
    }

    /// SSTs expected to die per tick: C_rate × D_num, with C_rate the compactions of a
    /// cycle over C (max_level / C in zkv's reading of max_level, at least one compaction)
    /// and D_num the mean number of files a compaction deletes (1 before the first).
    pub fn deaths_per_tick(&self, flush_num: u32) -> f64 {
        let per_cycle = f64::from(self.compacting_levels.max(1));
        let c_rate = per_cycle / self.cycle(flush_num) as f64;
        let d_num = match self.compactions {
            0 => 1.0,
            n => self.deleted as f64 / n as f64,
        };
        c_rate * d_num
    }

    /// The tick a file created now gets: that of the event that will install it.
    pub fn next_tick(&self) -> u64 {
        self.tick.saturating_add(1)
    }

    /// Advances the clock over `edit`, to be installed on `before`: a tick if the edit
    /// adds or deletes files (a flush or a compaction), the compaction figures, and the
    /// files with a prediction that die. The files the edit adds get its tick as their
    /// creation tick (a threaded flush may install before a compaction that predicted
    /// earlier); files it moves to another level (trivial moves) are marked `moved` and
    /// do not die. The last level never starts a compaction by its size: one started
    /// there (the cleaner's) does not count as a compacting level.
    pub fn advance(&mut self, edit: &mut VersionEdit, before: &Version) -> Vec<Outcome> {
        if edit.new_files.is_empty() && edit.deleted_files.is_empty() {
            return Vec::new();
        }
        self.tick = self.tick.saturating_add(1);
        let deleted: HashSet<u64> = edit.deleted_files.iter().map(|&(_, n)| n).collect();
        for (_, f) in &mut edit.new_files {
            if let (false, Some(l)) = (deleted.contains(&f.number), f.lifetime.as_mut()) {
                l.created = self.tick;
            }
        }
        let Some(start) = edit.deleted_files.iter().map(|&(l, _)| l).min() else {
            return Vec::new();
        };
        self.compactions += 1;
        let last = u32::try_from(before.num_levels().saturating_sub(1)).unwrap_or(u32::MAX);
        if start < last {
            self.compacting_levels = self.compacting_levels.max(start + 1);
        }
        let added: HashSet<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
        let mut moved = HashSet::new();
        let mut outcomes = Vec::new();
        for &(level, number) in &edit.deleted_files {
            if added.contains(&number) {
                moved.insert(number);
                continue;
            }
            self.deleted += 1;
            let file = find(before, level as usize, number).and_then(|f| f.lifetime);
            let Some(file) = file else { continue };
            let death = if level == start { Death::D1 } else { Death::D2 };
            let outcome = Outcome {
                number,
                file,
                died: self.tick,
                death,
                level: u8::try_from(level).unwrap_or(u8::MAX),
            };
            if death == Death::D2 {
                self.add_passive(level as usize, outcome.real());
            }
            outcomes.push(outcome);
        }
        for (_, f) in &mut edit.new_files {
            if let (true, Some(l)) = (moved.contains(&f.number), f.lifetime.as_mut()) {
                l.moved = true;
            }
        }
        outcomes
    }

    fn add_passive(&mut self, level: usize, lifetime: u64) {
        if self.passive.len() <= level {
            self.passive.resize(level + 1, (0, 0));
        }
        if let Some(slot) = self.passive.get_mut(level) {
            slot.0 = slot.0.saturating_add(lifetime);
            slot.1 += 1;
        }
    }
}

fn find(v: &Version, level: usize, number: u64) -> Option<&crate::version::FileMeta> {
    if level >= v.num_levels() {
        return None;
    }
    v.files(level)
        .iter()
        .find(|f| f.number == number)
        .map(|f| &**f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file, version_of};
    use crate::lifetime::Case;

    fn predicted(
        mut f: crate::version::FileMeta,
        created: u64,
        pl: u64,
        level: u8,
    ) -> crate::version::FileMeta {
        f.lifetime = Some(FileLifetime {
            created,
            lifetime: pl,
            case: Case::C1,
            level,
            moved: false,
        });
        f
    }

    #[test]
    fn flushes_and_compactions_tick_and_feed_the_figures() {
        let mut clock = Clock::default();
        // A flush: one tick, no compaction.
        let mut flush = VersionEdit::new();
        flush.add_file(0, predicted(file(1, b"a", b"c", 10), 0, 5, 0));
        let empty = version_of(4, &[]);
        assert!(clock.advance(&mut flush, &empty).is_empty());
        assert_eq!((clock.tick, clock.compactions), (1, 0));
        // The file is created at the tick of the edit that installs it.
        assert_eq!(flush.new_files[0].1.lifetime.map(|l| l.created), Some(1));
        // An edit that changes no file does not tick.
        let mut log_only = VersionEdit::new();
        log_only.log_number = Some(9);
        clock.advance(&mut log_only, &empty);
        assert_eq!(clock.tick, 1);
        // A compaction from L1: file 2 (L1, created at 0) is D1, file 3 (L2, created at 1)
        // is D2 and feeds the passive mean of L2; file 4 is trivially moved L1 → L2.
        let v = version_of(
            4,
            &[
                (1, predicted(file(2, b"a", b"b", 10), 0, 5, 1)),
                (2, predicted(file(3, b"a", b"b", 10), 1, 9, 2)),
                (1, predicted(file(4, b"x", b"y", 10), 1, 2, 1)),
            ],
        );
        let mut c = VersionEdit::new();
        c.delete_file(1, 2);
        c.delete_file(2, 3);
        c.delete_file(1, 4);
        c.add_file(2, predicted(file(4, b"x", b"y", 10), 1, 2, 1));
        let out = clock.advance(&mut c, &v);
        assert_eq!(clock.tick, 2);
        assert_eq!(
            (clock.compactions, clock.deleted, clock.compacting_levels),
            (1, 2, 2)
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].death, out[0].real(), out[0].error()),
            (Death::D1, 2, 3)
        );
        assert_eq!(
            (out[1].death, out[1].real(), out[1].level),
            (Death::D2, 1, 2)
        );
        assert_eq!(clock.passive_mean(2), Some(1));
        assert_eq!(clock.passive_mean(1), None);
        // The moved file keeps its creation tick.
        assert!(c.new_files[0]
            .1
            .lifetime
            .is_some_and(|l| l.moved && l.created == 1));
        // C = 2 + 4; C_rate = 2/6 (two compactions a cycle), D_num = 2.
        assert_eq!(clock.cycle(4), 6);
        assert!((clock.deaths_per_tick(4) - 2.0 / 3.0).abs() < 1e-9);
        // A compaction started in the last level (the cleaner's) is no compacting level.
        let last = version_of(4, &[(3, file(9, b"a", b"b", 10))]);
        let mut c = VersionEdit::new();
        c.delete_file(3, 9);
        clock.advance(&mut c, &last);
        assert_eq!((clock.compacting_levels, clock.compactions), (2, 2));
    }

    #[test]
    fn c_is_max_level_plus_flush_num() {
        // Fig. 2: levels 0–5 compact, 4 flushes fill L0: C = 6 + 4 = 10.
        let clock = Clock {
            compacting_levels: 6,
            ..Clock::default()
        };
        assert_eq!(clock.cycle(4), 10);
        assert_eq!(Clock::default().cycle(0), 1);
    }
}
