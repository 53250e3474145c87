//! RocksDB's `kOldestSmallestSeqFirst`: the file holding the oldest entry comes first (the
//! data that has waited longest to move down).

use super::picker::{sorted_indexes, PickCtx, Picker};

/// Smallest `smallest_seq` first.
#[derive(Clone, Copy, Debug, Default)]
pub struct OldestSmallestSeq;

impl Picker for OldestSmallestSeq {
    fn name(&self) -> &'static str {
        "oldest-smallest-seq"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        let files = ctx.version.files(level);
        sorted_indexes(files, |a, b| {
            files[a].smallest_seq.cmp(&files[b].smallest_seq)
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
    fn oldest_entry_first_ties_by_key() {
        let v = version_of(
            3,
            &[
                (1, file_seq(1, (b"a", 50), (b"b", 90), 10)),
                (1, file_seq(2, (b"c", 10), (b"d", 95), 10)),
                (1, file_seq(3, (b"e", 70), (b"f", 50), 10)),
                (1, file_seq(4, (b"g", 60), (b"h", 80), 10)),
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
        let got: Vec<u64> = OldestSmallestSeq
            .order(&ctx, 1)
            .iter()
            .map(|&i| files[i].number)
            .collect();
        // Smallest sequences: 1 → 50, 2 → 10, 3 → 50, 4 → 60.
        assert_eq!(got, [2, 1, 3, 4]);
    }
}
