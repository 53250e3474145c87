//! Table properties: what a table knows about itself, stored in its properties block and
//! copied into the version's [`FileMeta`].
//!
//! Encoding: smallest and largest key (each a varint length + bytes), then the ten counters
//! as varints in field order. Decoding must consume the block exactly.

use std::cmp::Ordering;

use super::format::{get_varint64, put_varint64};
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

    /// Upper bound of the encoded size.
    pub(crate) fn encoded_len_bound(smallest: usize, largest: usize) -> usize {
        smallest + largest + 2 * 10 + 10 * 10
    }

    /// The properties block contents.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len_bound(
            self.smallest.len(),
            self.largest.len(),
        ));
        for k in [&self.smallest, &self.largest] {
            put_length_prefixed(&mut out, k);
        }
        for c in self.counters() {
            put_varint64(&mut out, c);
        }
        out
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
        };
        props.check()?;
        Ok(props)
    }

    /// Checks that the properties are self-consistent.
    fn check(&self) -> Result<(), String> {
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
        }
    }

    #[test]
    fn round_trips_and_refuses_garbage() {
        let p = sample();
        let enc = p.encode();
        assert!(enc.len() <= TableProps::encoded_len_bound(p.smallest.len(), p.largest.len()));
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
