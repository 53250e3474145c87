//! RocksDB's `kOldestSmallestSeqFirst`: the file holding the oldest entry comes first (the
//! data that has waited longest to move down).

use crate::version::FileRank;

use super::picker::{ranked_order, PickCtx, Picker};

/// The rank depends on the file alone: the version memoises the order of a deep level.
static RANK: FileRank = FileRank {
    key: |f, _| Some([f.smallest_seq, 0]),
};

/// Smallest `smallest_seq` first.
#[derive(Clone, Copy, Debug, Default)]
pub struct OldestSmallestSeq;

impl Picker for OldestSmallestSeq {
    fn name(&self) -> &'static str {
        "oldest-smallest-seq"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        ranked_order(ctx.version, level, &RANK, |_, f| [f.smallest_seq, 0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file_seq, picked_order, version_of};

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
        // Smallest sequences: 1 → 50, 2 → 10, 3 → 50, 4 → 60.
        assert_eq!(picked_order(&OldestSmallestSeq, &v, 1, &[]), [2, 1, 3, 4]);
    }
}
