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
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest sequence number of its entries.
    pub smallest_seq: u64,
    /// Largest sequence number of its entries.
    pub largest_seq: u64,
    /// Entries (table property; RocksDB's compensated size uses it, as the three below).
    pub entries: u64,
    /// Deletions (tombstones) among the entries.
    pub deletions: u64,
    /// Σ key bytes of the entries, uncompressed (internal keys).
    pub raw_key_size: u64,
    /// Σ value bytes of the entries as the table holds them, uncompressed (a blob value
    /// counts its blob index).
    pub raw_value_size: u64,
    /// The lifetime predicted when the file was created, when the database predicts
    /// lifetimes (Prophet); kept in the manifest.
    pub lifetime: Option<FileLifetime>,
    /// The lowest blob file number among the blob references the table holds (`None`:
    /// none); the blob file is then "linked" to this table (RocksDB's
    /// `oldest_blob_file_number`), which keeps it in the version until the table goes.
    pub oldest_blob_file: Option<u64>,
}

impl FileMeta {
    /// The user key of [`FileMeta::smallest`].
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }

    /// The user key of [`FileMeta::largest`].
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }

    /// Whether the file's user-key range meets `[begin, end]` (`None` = unbounded).
    pub fn overlaps(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        let before = end.is_some_and(|e| self.smallest_user_key() > e);
        let after = begin.is_some_and(|b| self.largest_user_key() < b);
        !(before || after)
    }

    /// Tombstones beyond the values, `2 · deletions - entries`, for a file holding at least
    /// as many tombstones as values (RocksDB compensates only those); `None` otherwise.
    pub fn surplus_deletions(&self) -> Option<u64> {
        self.deletions.saturating_mul(2).checked_sub(self.entries)
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

/// A blob file of the version (RocksDB's `BlobFileMetaData`): what it was written with and
/// how much of it is garbage (blobs no table references any more).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobFileMeta {
    /// File number; the file is named `{number:06}.blob`.
    pub number: u64,
    /// Blobs written.
    pub total_count: u64,
    /// Their bytes (record header, key and value each).
    pub total_bytes: u64,
    /// Blobs no table references any more.
    pub garbage_count: u64,
    /// Their bytes, counted as `total_bytes` is.
    pub garbage_bytes: u64,
    /// The file's size in bytes.
    pub file_size: u64,
}

impl BlobFileMeta {
    /// Whether every blob of the file is garbage.
    pub fn all_garbage(&self) -> bool {
        self.garbage_count >= self.total_count
    }

    /// Live bytes: written and not garbage.
    pub fn live_bytes(&self) -> u64 {
        self.total_bytes.saturating_sub(self.garbage_bytes)
    }
}

/// Blobs of one blob file that an edit finds no table references any more (RocksDB's
/// `BlobFileGarbage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlobGarbage {
    /// The blob file's number.
    pub number: u64,
    /// Blobs that became garbage.
    pub count: u64,
    /// Their bytes (record header, key and value each).
    pub bytes: u64,
}
