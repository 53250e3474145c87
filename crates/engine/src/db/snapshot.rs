//! Snapshots: a sequence number that reads use and that flushes and compactions respect
//! (they keep, for each snapshot, the newest entry of a key it can see).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::key::SeqNo;

/// The live snapshots of a database: sequence number → number of handles.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    seqs: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<SeqNo, usize>> {
        self.seqs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a snapshot at `seq`.
    pub(crate) fn acquire(self: &Arc<Self>, seq: SeqNo) -> Snapshot {
        *self.lock().entry(seq).or_default() += 1;
        Snapshot {
            seq,
            list: Arc::clone(self),
        }
    }

    fn release(&self, seq: SeqNo) {
        let mut seqs = self.lock();
        if let Some(n) = seqs.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                seqs.remove(&seq);
            }
        }
    }

    /// The live snapshot sequence numbers, ascending, each once.
    pub(crate) fn list(&self) -> Vec<SeqNo> {
        self.lock().keys().copied().collect()
    }
}

/// A consistent read point: reads with it see exactly the writes acknowledged before it
/// was taken. Released when dropped. It does not keep the database open.
pub struct Snapshot {
    seq: SeqNo,
    list: Arc<SnapshotList>,
}

impl Snapshot {
    /// The sequence number of the last write the snapshot sees.
    pub fn sequence(&self) -> SeqNo {
        self.seq
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.list.release(self.seq);
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot").field("seq", &self.seq).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_counted_and_released_on_drop() {
        let list = Arc::new(SnapshotList::default());
        let a = list.acquire(5);
        let b = list.acquire(5);
        let c = list.acquire(2);
        assert_eq!(list.list(), vec![2, 5]);
        drop(a);
        assert_eq!(list.list(), vec![2, 5]);
        drop(b);
        assert_eq!(list.list(), vec![2]);
        assert_eq!(c.sequence(), 2);
        drop(c);
        assert!(list.list().is_empty());
    }
}
