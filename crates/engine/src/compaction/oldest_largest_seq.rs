//! RocksDB's `kOldestLargestSeqFirst`: the file whose newest entry is oldest comes first
//! (files not updated for the longest time).

use crate::version::FileRank;

use super::picker::{ranked_order, PickCtx, Picker};

/// The rank depends on the file alone: the version memoises the order of a deep level.
static RANK: FileRank = FileRank {
    key: |f, _| Some([f.largest_seq, 0]),
};

/// Smallest `largest_seq` first.
#[derive(Clone, Copy, Debug, Default)]
pub struct OldestLargestSeq;

impl Picker for OldestLargestSeq {
    fn name(&self) -> &'static str {
        "oldest-largest-seq"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        ranked_order(ctx.version, level, &RANK, |_, f| [f.largest_seq, 0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file_seq, picked_order, version_of};

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
        assert_eq!(picked_order(&OldestLargestSeq, &v, 1, &[]), [3, 4, 1, 2]);
        assert_eq!(picked_order(&OldestLargestSeq, &v, 0, &[]), [5]);
    }
}
