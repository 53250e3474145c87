//! What the engine knows about one SST.

use crate::key;
use crate::lifetime::FileLifetime;

/// An SST of a version. Keys are internal keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// File number; the file is named `{number:06}.sst`.
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
    /// Smallest and largest internal keys.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// Smallest and largest sequence numbers of its entries.
    pub smallest_seq: u64,
    pub largest_seq: u64,
    /// Entries, deletions (tombstones) among them, and raw key/value bytes (table
    /// properties; RocksDB's compensated size uses them).
    pub entries: u64,
    pub deletions: u64,
    pub raw_key_size: u64,
    pub raw_value_size: u64,
    /// The lifetime predicted when the file was created, when the database predicts
    /// lifetimes (Prophet); kept in the manifest.
    pub lifetime: Option<FileLifetime>,
}

impl FileMeta {
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }

    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }

    /// Whether the file's user-key range meets `[begin, end]` (`None` = unbounded).
    pub fn overlaps(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        let before = end.is_some_and(|e| self.smallest_user_key() > e);
        let after = begin.is_some_and(|b| self.largest_user_key() < b);
        !(before || after)
    }

    /// The file's name on the file layer.
    pub fn file_name(&self) -> String {
        sst_file_name(self.number)
    }
}

/// Name of SST number `number`.
pub fn sst_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}
