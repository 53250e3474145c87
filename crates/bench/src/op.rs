//! The operations a workload asks the store to do.

/// What to do with one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpKind {
    /// Get the key's value.
    Read,
    /// Put a new value for a key that exists (YCSB update, db_bench overwrite).
    Update,
    /// Put a value for a new key (YCSB insert, db_bench fill).
    Insert,
    /// Read `len` records in key order from the key on (YCSB scan).
    Scan {
        /// Records to read, the first one included.
        len: u64,
    },
    /// Get the key's value, then put a new one (YCSB read-modify-write).
    ReadModifyWrite,
    /// Delete the key (db_bench's deleterandom).
    Delete,
    /// Read the next record of one forward pass over the whole store (db_bench's readseq):
    /// the phase's first such operation opens an iterator at the first key, each later one
    /// moves it on; the operation has no key of its own.
    Next,
    /// The same backward, from the last key (db_bench's readreverse).
    Prev,
}

impl OpKind {
    /// Whether the operation writes a value.
    pub fn writes(self) -> bool {
        matches!(
            self,
            OpKind::Update | OpKind::Insert | OpKind::ReadModifyWrite
        )
    }

    /// YCSB's name of the operation (as in its reports).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan { .. } => "SCAN",
            OpKind::ReadModifyWrite => "READ-MODIFY-WRITE",
            OpKind::Delete => "DELETE",
            OpKind::Next => "NEXT",
            OpKind::Prev => "PREV",
        }
    }
}

/// One operation: its kind, the record number it was drawn as, and the key bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// What to do.
    pub kind: OpKind,
    /// db_bench's key integer, or YCSB's record number before hashing.
    pub keynum: i64,
    /// The key as stored (empty for [`OpKind::Next`] and [`OpKind::Prev`]).
    pub key: Vec<u8>,
    /// Bytes of the value a write puts when the workload draws it (db_bench's mixgraph);
    /// `None`: the run's fixed value size.
    pub value_size: Option<usize>,
}
