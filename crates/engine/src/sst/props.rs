//! Table properties: what a table knows about itself, stored in its properties block and
//! copied into the version's [`FileMeta`].
//!
//! Encoding: smallest and largest key (each a varint length + bytes), then the ten counters
//! as varints in field order, then, in a table holding blob references only, the blob
//! section: the number of blob files referenced, then per file (ascending) the number's
//! increase over the previous one (over 0 for the first), the count and the bytes of its
//! blobs, all varints. Decoding must consume the block exactly; a block that ends after the
//! counters (every table written before the section existed) references no blob.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::format::{get_varint64, put_varint64};
use crate::blob::BlobCount;
use crate::coding::{get_length_prefixed, put_length_prefixed};
use crate::key;
use crate::version::FileMeta;

/// Properties of one table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProps {
    /// Smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    /// Smallest sequence number of the entries (0 for an empty table).
    pub smallest_seq: u64,
    /// Largest sequence number of the entries (0 for an empty table).
    pub largest_seq: u64,
    /// Number of entries.
    pub entries: u64,
    /// Number of deletions (tombstones) among the entries.
    pub deletions: u64,
    /// Σ internal key lengths (user key + 8-byte trailer), as RocksDB counts them.
    pub raw_key_size: u64,
    /// Σ value lengths.
    pub raw_value_size: u64,
    /// Bytes of the data blocks with their trailers (= offset where data blocks end).
    pub data_size: u64,
    /// Bytes of the index block with its trailer.
    pub index_size: u64,
    /// Bytes of the filter block with its trailer.
    pub filter_size: u64,
    /// Number of data blocks.
    pub data_blocks: u64,
    /// The blobs the table's blob references point to, by blob file number: how many and
    /// their bytes as blob files count them (`blob_record_bytes`). What a compaction of
    /// the table would read and write again if garbage collection relocated a file's
    /// blobs, known before it runs.
    pub blob_refs: BTreeMap<u64, BlobCount>,
}

impl TableProps {
    /// The version's record of this table as file `number` of `size` bytes.
    pub fn file_meta(&self, number: u64, size: u64) -> FileMeta {
        FileMeta {
            number,
            size,
            smallest: self.smallest.clone(),
            largest: self.largest.clone(),
            smallest_seq: self.smallest_seq,
            largest_seq: self.largest_seq,
            entries: self.entries,
            deletions: self.deletions,
            raw_key_size: self.raw_key_size,
            raw_value_size: self.raw_value_size,
            lifetime: None,
            oldest_blob_file: None,
        }
    }

    fn counters(&self) -> [u64; 10] {
        [
            self.smallest_seq,
            self.largest_seq,
            self.entries,
            self.deletions,
            self.raw_key_size,
            self.raw_value_size,
            self.data_size,
            self.index_size,
            self.filter_size,
            self.data_blocks,
        ]
    }

    /// Upper bound of the encoded size with keys of these lengths and blob references
    /// into `blob_files` files.
    pub(crate) fn encoded_len_bound(smallest: usize, largest: usize, blob_files: usize) -> usize {
        let blobs = match blob_files {
            0 => 0,
            n => 10 + n * 3 * 10,
        };
        smallest + largest + 2 * 10 + 10 * 10 + blobs
    }

    /// The properties block contents.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len_bound(
            self.smallest.len(),
            self.largest.len(),
            self.blob_refs.len(),
        ));
        for k in [&self.smallest, &self.largest] {
            put_length_prefixed(&mut out, k);
        }
        for c in self.counters() {
            put_varint64(&mut out, c);
        }
        if !self.blob_refs.is_empty() {
            put_varint64(&mut out, self.blob_refs.len() as u64);
            let mut previous = 0;
            for (&file, refs) in &self.blob_refs {
                for v in [file - previous, refs.count, refs.bytes] {
                    put_varint64(&mut out, v);
                }
                previous = file;
            }
        }
        out
    }

    /// The blob section from `pos` to the end of `data` (none if `pos` is the end).
    fn decode_blob_refs(data: &[u8], pos: &mut usize) -> Result<BTreeMap<u64, BlobCount>, String> {
        let mut refs = BTreeMap::new();
        if *pos == data.len() {
            return Ok(refs);
        }
        let mut varint = || get_varint64(data, pos).ok_or("blob references overrun the block");
        let files = varint()?;
        if files == 0 {
            return Err("an empty blob section".into());
        }
        let mut file = 0u64;
        for _ in 0..files {
            let (step, count, bytes) = (varint()?, varint()?, varint()?);
            file = file
                .checked_add(step)
                .filter(|_| step > 0)
                .ok_or("blob file numbers not strictly ascending")?;
            refs.insert(file, BlobCount { count, bytes });
        }
        Ok(refs)
    }

    /// Decodes and checks properties block contents; the error says what is wrong.
    pub(crate) fn decode(data: &[u8]) -> Result<TableProps, String> {
        let mut pos = 0;
        let mut bytes = || get_length_prefixed(data, &mut pos).ok().map(<[u8]>::to_vec);
        let keys = (bytes(), bytes());
        let (Some(smallest), Some(largest)) = keys else {
            return Err("properties keys overrun the block".into());
        };
        let mut c = [0u64; 10];
        for slot in &mut c {
            *slot = get_varint64(data, &mut pos).ok_or("properties counters overrun the block")?;
        }
        let blob_refs = Self::decode_blob_refs(data, &mut pos)?;
        if pos != data.len() {
            return Err(format!(
                "{} stray bytes after the properties",
                data.len() - pos
            ));
        }
        let props = TableProps {
            smallest,
            largest,
            smallest_seq: c[0],
            largest_seq: c[1],
            entries: c[2],
            deletions: c[3],
            raw_key_size: c[4],
            raw_value_size: c[5],
            data_size: c[6],
            index_size: c[7],
            filter_size: c[8],
            data_blocks: c[9],
            blob_refs,
        };
        props.check()?;
        Ok(props)
    }

    /// Checks that the properties are self-consistent.
    fn check(&self) -> Result<(), String> {
        let refs = self.blob_refs.values();
        let blobs = refs.clone().fold(0u64, |n, r| n.saturating_add(r.count));
        if refs.clone().any(|r| r.count == 0) || blobs > self.entries {
            return Err("blob references to no blob, or more of them than entries".into());
        }
        if self.entries == 0 {
            let empty = self.smallest.is_empty()
                && self.largest.is_empty()
                && self.data_blocks == 0
                && self.deletions == 0;
            return match empty {
                true => Ok(()),
                false => Err("an empty table with keys, deletions or data blocks".into()),
            };
        }
        let (Some(s), Some(l)) = (key::parse(&self.smallest), key::parse(&self.largest)) else {
            return Err("smallest or largest is not an internal key".into());
        };
        let ordered = key::compare(&self.smallest, &self.largest) != Ordering::Greater;
        let seqs = self.smallest_seq <= self.largest_seq
            && (self.smallest_seq..=self.largest_seq).contains(&s.seq)
            && (self.smallest_seq..=self.largest_seq).contains(&l.seq);
        if !ordered || !seqs || self.deletions > self.entries || self.data_blocks == 0 {
            return Err("inconsistent key range, sequence numbers or counts".into());
        }
        if self.data_blocks > self.entries {
            return Err("more data blocks than entries".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{internal_key, ValueKind};

    fn sample() -> TableProps {
        TableProps {
            smallest: internal_key(b"a", 3, ValueKind::Put),
            largest: internal_key(b"z", 9, ValueKind::Delete),
            smallest_seq: 2,
            largest_seq: 9,
            entries: 100,
            deletions: 10,
            raw_key_size: 1234,
            raw_value_size: 1 << 40,
            data_size: 5000,
            index_size: 77,
            filter_size: 130,
            data_blocks: 2,
            blob_refs: BTreeMap::new(),
        }
    }

    #[test]
    fn round_trips_and_refuses_garbage() {
        let p = sample();
        let enc = p.encode();
        assert!(enc.len() <= TableProps::encoded_len_bound(p.smallest.len(), p.largest.len(), 0));
        assert_eq!(TableProps::decode(&enc), Ok(p.clone()));
        for cut in 0..enc.len() {
            assert!(TableProps::decode(&enc[..cut]).is_err(), "cut {cut}");
        }
        let mut long = enc.clone();
        long.push(0);
        assert!(TableProps::decode(&long).is_err());
        let bad = TableProps {
            deletions: 101,
            ..p.clone()
        };
        assert!(TableProps::decode(&bad.encode()).is_err());
        let empty = TableProps::default();
        assert_eq!(TableProps::decode(&empty.encode()), Ok(empty));
    }

    fn with_blobs() -> TableProps {
        let refs = [(7, 3, 3_084), (9, 1, 1_028), (300, 90, 92_520)];
        let blob_refs = refs.map(|(file, count, bytes)| (file, BlobCount { count, bytes }));
        TableProps {
            blob_refs: blob_refs.into_iter().collect(),
            ..sample()
        }
    }

    #[test]
    fn blob_references_round_trip_and_old_tables_have_none() {
        let p = with_blobs();
        let enc = p.encode();
        let bound = TableProps::encoded_len_bound(p.smallest.len(), p.largest.len(), 3);
        assert!(enc.len() <= bound);
        assert_eq!(TableProps::decode(&enc), Ok(p.clone()));
        // A table written before the section existed: its block ends after the counters.
        let old = TableProps {
            blob_refs: BTreeMap::new(),
            ..p.clone()
        };
        let old_enc = old.encode();
        assert_eq!(old_enc, sample().encode());
        assert!(enc.starts_with(&old_enc));
        assert_eq!(TableProps::decode(&old_enc), Ok(sample()));
        // Cut anywhere inside the section, or with a byte too many: refused.
        for cut in old_enc.len() + 1..enc.len() {
            assert!(TableProps::decode(&enc[..cut]).is_err(), "cut {cut}");
        }
        let mut long = enc.clone();
        long.push(0);
        assert!(TableProps::decode(&long).is_err());
    }

    #[test]
    fn damaged_blob_sections_are_refused() {
        let section = |files: &[[u64; 3]]| {
            let mut enc = sample().encode();
            put_varint64(&mut enc, files.len() as u64);
            for v in files.iter().flatten() {
                put_varint64(&mut enc, *v);
            }
            TableProps::decode(&enc)
        };
        assert!(section(&[[7, 3, 3_084], [2, 1, 1_028]]).is_ok());
        // An empty section, a file number not above the previous one, file 0, a file
        // referenced by no blob, more blobs than entries.
        assert!(section(&[]).is_err());
        assert!(section(&[[7, 3, 3_084], [0, 1, 1_028]]).is_err());
        assert!(section(&[[0, 3, 3_084]]).is_err());
        assert!(section(&[[7, 0, 0]]).is_err());
        assert!(section(&[[7, 60, 100], [1, 41, 100]]).is_err());
        assert!(section(&[[u64::MAX, 1, 1], [1, 1, 1]]).is_err());
    }

    #[test]
    fn file_meta_copies_the_properties() {
        let p = sample();
        let m = p.file_meta(42, 9999);
        assert_eq!((m.number, m.size), (42, 9999));
        assert_eq!(m.smallest, p.smallest);
        assert_eq!(m.largest_user_key(), b"z");
        assert_eq!(
            (m.entries, m.deletions, m.raw_value_size),
            (100, 10, 1 << 40)
        );
    }
}
