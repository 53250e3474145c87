//! RocksDB's `kOldestLargestSeqFirst`: the file whose newest entry is oldest comes first
//! (files not updated for the longest time).

use super::picker::{sorted_indexes, PickCtx, Picker};

/// Smallest `largest_seq` first.
#[derive(Clone, Copy, Debug, Default)]
pub struct OldestLargestSeq;

impl Picker for OldestLargestSeq {
    fn name(&self) -> &'static str {
        "oldest-largest-seq"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        let files = ctx.version.files(level);
        sorted_indexes(files, |a, b| {
            files[a].largest_seq.cmp(&files[b].largest_seq)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::compaction::picker::NoZones;
    use crate::compaction::test_util::{file_seq, version_of};
    use crate::options::Options;

    #[test]
    fn oldest_newest_entry_first_ties_by_key() {
        let v = version_of(
            3,
            &[
                (1, file_seq(1, (b"a", 50), (b"b", 90), 10)),
                (1, file_seq(2, (b"c", 10), (b"d", 95), 10)),
                (1, file_seq(3, (b"e", 70), (b"f", 80), 10)),
                (1, file_seq(4, (b"g", 60), (b"h", 80), 10)),
                (0, file_seq(5, (b"a", 100), (b"z", 110), 10)),
            ],
        );
        let (o, busy) = (Options::default(), HashSet::new());
        let ctx = PickCtx {
            version: &v,
            options: &o,
            compacting: &busy,
            zones: &NoZones,
            free_ratio: 1.0,
            cursors: &[],
        };
        let files = v.files(1);
        let got: Vec<u64> = OldestLargestSeq
            .order(&ctx, 1)
            .iter()
            .map(|&i| files[i].number)
            .collect();
        assert_eq!(got, [3, 4, 1, 2]);
        assert_eq!(OldestLargestSeq.order(&ctx, 0), [0]);
    }
}
