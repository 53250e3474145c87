//! Which blob files garbage collection relocates: the one decision behind RocksDB's age
//! cutoff and the Same-Victim paper's Z_Cutoff ([`BlobGcCutoff`]).
//!
//! Both select the oldest live blob files (blob GC is "oldest first"); they differ in how
//! many. Compactions relocate the live blobs of the selected files they meet, and the force
//! threshold looks at the same selection (`compaction::forced_blob_gc`).

/// How many of the oldest live blob files garbage collection relocates now.
pub trait BlobGcCutoff: Send + Sync {
    /// The cutoff's name (`fixed` or `zone`, as `--blob-gc-cutoff` spells them).
    fn name(&self) -> &'static str;

    /// Of the live blob files `numbers` (ascending), how many of the oldest are relocated.
    fn oldest_files(&self, numbers: &[u64]) -> usize;
}

/// RocksDB's `blob_garbage_collection_age_cutoff`: a fixed fraction of the live blob files.
#[derive(Clone, Copy, Debug)]
pub struct FixedCutoff {
    /// The fraction of the live blob files, oldest first, whose blobs are relocated
    /// (0..=1; the count is rounded down).
    pub age_cutoff: f64,
}

impl BlobGcCutoff for FixedCutoff {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn oldest_files(&self, numbers: &[u64]) -> usize {
        // RocksDB truncates: 0.25 of 7 files is 1 file.
        ((self.age_cutoff * numbers.len() as f64) as usize).min(numbers.len())
    }
}

/// Where the file layer keeps blob files: the youngest blob file number of each full zone
/// holding blob files (the Same-Victim paper's YBIZ, recorded when the zone became full).
pub trait BlobZones: Send + Sync {
    /// The YBIZ of every full zone holding blob file data, in any order.
    fn full_zone_ybiz(&self) -> Vec<u64>;
}

/// The Same-Victim paper's Z_Cutoff: relocate the blob files up to the smallest YBIZ of
/// the full blob zones, so that blob GC empties exactly the oldest full zone(s) and the zone
/// cleaner finds them without live data. The paper's cutoff ratio is that count over the
/// number of live blob files (YBIZ 4 of files 1..=20: 4 / 20 = 0.2). Without a full blob
/// zone, nothing is relocated: no zone is a cleaning victim yet, and the paper derives the
/// cutoff from full zones only.
pub struct ZoneCutoff<Z: BlobZones> {
    /// The file layer's view of the full blob zones.
    pub zones: Z,
}

impl<Z: BlobZones> BlobGcCutoff for ZoneCutoff<Z> {
    fn name(&self) -> &'static str {
        "zone"
    }

    fn oldest_files(&self, numbers: &[u64]) -> usize {
        // A zone whose blob files are all gone but which still holds other live data
        // (blob files placed beside tables) has a YBIZ below every live blob file: it
        // selects nothing, and must not hide the zones that would.
        let oldest = numbers.first().copied().unwrap_or(u64::MAX);
        let ybiz = self
            .zones
            .full_zone_ybiz()
            .into_iter()
            .filter(|&y| y >= oldest)
            .min();
        ybiz.map_or(0, |y| numbers.partition_point(|&n| n <= y))
    }
}

/// The first live blob file garbage collection does *not* relocate, given how many of the
/// oldest it does (`u64::MAX`: all of them); `None` when it relocates none.
pub fn first_kept_file(numbers: &[u64], oldest: usize) -> Option<u64> {
    if oldest == 0 {
        return None;
    }
    Some(numbers.get(oldest).copied().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ybiz(Vec<u64>);

    impl BlobZones for Ybiz {
        fn full_zone_ybiz(&self) -> Vec<u64> {
            self.0.clone()
        }
    }

    #[test]
    fn the_fixed_cutoff_is_rocksdbs_truncated_fraction() {
        let files: Vec<u64> = (1..=7).collect();
        let fixed = FixedCutoff { age_cutoff: 0.25 };
        assert_eq!(fixed.oldest_files(&files), 1);
        assert_eq!(first_kept_file(&files, 1), Some(2));
        assert_eq!(fixed.oldest_files(&files[..3]), 0);
        assert_eq!(first_kept_file(&files, 0), None);
        assert_eq!(FixedCutoff { age_cutoff: 1.0 }.oldest_files(&files), 7);
        assert_eq!(fixed.oldest_files(&[]), 0);
        let four = [5, 6, 7, 8];
        assert_eq!(first_kept_file(&four, fixed.oldest_files(&four)), Some(6));
        assert_eq!(first_kept_file(&files, 7), Some(u64::MAX));
    }

    /// The paper's worked example (§IV-C, Fig. 5): 20 blob files, full zones with YBIZ 4
    /// and 9: the cutoff ratio is 4 / 20 = 0.2; once files 1..=4 are gone, 16 remain and
    /// the smallest YBIZ is 9: 5 / 16 = 0.3125.
    #[test]
    fn z_cutoff_follows_the_papers_worked_example() {
        let first: Vec<u64> = (1..=20).collect();
        let cutoff = ZoneCutoff {
            zones: Ybiz(vec![9, 4]),
        };
        let n = cutoff.oldest_files(&first);
        assert_eq!(n, 4);
        assert!((n as f64 / first.len() as f64 - 0.2).abs() < 1e-12);
        assert_eq!(first_kept_file(&first, n), Some(5));

        let then: Vec<u64> = (5..=20).collect();
        let cutoff = ZoneCutoff {
            zones: Ybiz(vec![9]),
        };
        let n = cutoff.oldest_files(&then);
        assert_eq!(n, 5);
        assert!((n as f64 / then.len() as f64 - 0.3125).abs() < 1e-12);
        assert_eq!(first_kept_file(&then, n), Some(10));
    }

    #[test]
    fn z_cutoff_relocates_nothing_without_a_full_blob_zone() {
        let files: Vec<u64> = (1..=20).collect();
        let none = ZoneCutoff {
            zones: Ybiz(vec![]),
        };
        assert_eq!(none.oldest_files(&files), 0);
        // A YBIZ below every live file (its blob files are gone, other data keeps the
        // zone) selects nothing and does not hide the next zone's.
        let gone = ZoneCutoff {
            zones: Ybiz(vec![0]),
        };
        assert_eq!(gone.oldest_files(&files), 0);
        let next = ZoneCutoff {
            zones: Ybiz(vec![0, 6]),
        };
        assert_eq!(next.oldest_files(&files), 6);
        // A YBIZ beyond every live file: all of them.
        let all = ZoneCutoff {
            zones: Ybiz(vec![99]),
        };
        assert_eq!(all.oldest_files(&files), 20);
    }
}
