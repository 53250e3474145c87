//! Reading a finished blob file: [`BlobFileReader::open`] checks the header and footer,
//! [`BlobFileReader::get`] reads one value through its index, [`BlobFileReader::records`]
//! walks every record.

use std::sync::Arc;

use crate::source::RandomAccess;
use crate::{Error, Result};

use super::format::{
    decode_header, Footer, RecordHeader, FOOTER_LEN, HEADER_LEN, RECORD_HEADER_LEN,
};
use super::{BlobFileSummary, BlobIndex};

/// One record of a blob file, as [`BlobFileReader::records`] returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobRecord {
    /// The offset of the value in the file (the index's offset).
    pub offset_of_value: u64,
    /// The user key stored with the value.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
}

impl BlobRecord {
    /// The index of this record's value in blob file `file`.
    pub fn index(&self, file: u64) -> BlobIndex {
        BlobIndex {
            file,
            offset: self.offset_of_value,
            size: self.value.len() as u64,
        }
    }
}

/// A finished blob file, open for reads. Every failed check is `Error::Corruption` naming
/// the file and the offset of the part that is bad.
pub struct BlobFileReader {
    file: Arc<dyn RandomAccess>,
    summary: BlobFileSummary,
}

impl std::fmt::Debug for BlobFileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobFileReader")
            .field("file", &self.file.what())
            .field("summary", &self.summary)
            .finish()
    }
}

impl BlobFileReader {
    /// Opens blob file `number`: checks the header (magic, checksum, format version, the
    /// file number) and the footer (magic, checksum, and that its blob bytes are exactly
    /// the bytes between header and footer). A file without a valid footer — one cut
    /// short, or never finished — is corruption: blob files are read only once finished.
    pub fn open(file: Arc<dyn RandomAccess>, number: u64) -> Result<Self> {
        let size = file.size();
        let what = file.what();
        if size < HEADER_LEN + FOOTER_LEN {
            return Err(Error::corruption(
                what,
                format!(
                    "{size} bytes: too short for a blob file's header and footer ({} bytes)",
                    HEADER_LEN + FOOTER_LEN
                ),
            ));
        }
        let mut header = [0u8; HEADER_LEN as usize];
        file.read_exact_at(0, &mut header)?;
        let stored = decode_header(&header)
            .map_err(|detail| Error::corruption(format!("{what}, header"), detail))?;
        if stored != number {
            return Err(Error::corruption(
                format!("{what}, header"),
                format!("holds blob file number {stored}, expected {number}"),
            ));
        }
        let footer_at = size - FOOTER_LEN;
        let footer_what = format!("{what}, footer at offset {footer_at}");
        let mut footer = [0u8; FOOTER_LEN as usize];
        file.read_exact_at(footer_at, &mut footer)?;
        let footer = Footer::decode(&footer)
            .map_err(|detail| Error::corruption(footer_what.as_str(), detail))?;
        check_footer(&footer, footer_at - HEADER_LEN)
            .map_err(|d| Error::corruption(footer_what, d))?;
        let summary = BlobFileSummary {
            number,
            blob_count: footer.blob_count,
            blob_bytes: footer.blob_bytes,
            file_size: size,
        };
        Ok(BlobFileReader { file, summary })
    }

    /// The file's summary, from its footer.
    pub fn summary(&self) -> BlobFileSummary {
        self.summary
    }

    /// Reads the value `index` points at, stored with `user_key`. The whole record is read
    /// and checked: its lengths must be the key's and the index's size, its checksum must
    /// match, its key must be `user_key`. An index of another file or pointing outside the
    /// records is corruption, found before anything is read.
    pub fn get(&self, user_key: &[u8], index: &BlobIndex) -> Result<Vec<u8>> {
        let key_len = user_key.len();
        let start = self.record_start(key_len as u64, index)?;
        let what = self.record_what(start);
        let value_at = RECORD_HEADER_LEN as usize + key_len;
        // Bounded by the file size: record_start checked the record lies inside the file.
        let mut record = vec![0u8; value_at + index.size as usize];
        self.file.read_exact_at(start, &mut record)?;
        let Some((header_bytes, body)) =
            record.split_first_chunk::<{ RECORD_HEADER_LEN as usize }>()
        else {
            return Err(Error::corruption(what, "record shorter than its header"));
        };
        let header = RecordHeader::decode(header_bytes);
        let lengths = (u64::from(header.key_len), u64::from(header.value_len));
        if lengths != (key_len as u64, index.size) {
            return Err(Error::corruption(
                what,
                format!(
                    "record of a {}-byte key and a {}-byte value, the index expects a {key_len}-byte key and a {}-byte value",
                    lengths.0, lengths.1, index.size
                ),
            ));
        }
        header
            .check(&[&header_bytes[4..], body])
            .map_err(|d| Error::corruption(what.as_str(), d))?;
        if body.get(..key_len) != Some(user_key) {
            return Err(Error::corruption(
                what,
                "the record holds another key than the one the index was read with",
            ));
        }
        record.drain(..value_at);
        Ok(record)
    }

    /// Every record, in file order (for checks, salvage and garbage collection). The walk
    /// must end exactly at the footer with the footer's blob count.
    pub fn records(&self) -> Result<Vec<BlobRecord>> {
        let end = self.records_end();
        let mut out = Vec::new();
        let mut at = HEADER_LEN;
        while at < end {
            let (record, len) = self.record_at(at, end)?;
            out.push(record);
            at += len;
        }
        if out.len() as u64 != self.summary.blob_count {
            return Err(Error::corruption(
                format!("{}, footer at offset {end}", self.file.what()),
                format!(
                    "{} records in the file, the footer counts {}",
                    out.len(),
                    self.summary.blob_count
                ),
            ));
        }
        Ok(out)
    }

    /// The record at `at` (records end at `end`) and its length.
    fn record_at(&self, at: u64, end: u64) -> Result<(BlobRecord, u64)> {
        let what = self.record_what(at);
        if end - at < RECORD_HEADER_LEN {
            return Err(Error::corruption(
                what,
                format!(
                    "{} bytes left before the footer: a partial record header",
                    end - at
                ),
            ));
        }
        let mut header_bytes = [0u8; RECORD_HEADER_LEN as usize];
        self.file.read_exact_at(at, &mut header_bytes)?;
        let header = RecordHeader::decode(&header_bytes);
        let len = header.record_len();
        if len > end - at {
            return Err(Error::corruption(
                what,
                format!(
                    "record of a {}-byte key and a {}-byte value passes the footer at offset {end}",
                    header.key_len, header.value_len
                ),
            ));
        }
        // Bounded by the file size: the record lies before the footer.
        let mut body = vec![0u8; (len - RECORD_HEADER_LEN) as usize];
        self.file.read_exact_at(at + RECORD_HEADER_LEN, &mut body)?;
        header
            .check(&[&header_bytes[4..], &body])
            .map_err(|d| Error::corruption(what, d))?;
        let key: Vec<u8> = body.drain(..header.key_len as usize).collect();
        let record = BlobRecord {
            offset_of_value: at + RECORD_HEADER_LEN + key.len() as u64,
            key,
            value: body,
        };
        Ok((record, len))
    }

    /// Where the record of a `key_len`-byte key holding the value at `index` starts, once
    /// the index is known to name this file and the record to lie inside its records.
    fn record_start(&self, key_len: u64, index: &BlobIndex) -> Result<u64> {
        let what = self.file.what();
        if index.file != self.summary.number {
            return Err(Error::corruption(
                what,
                format!(
                    "a blob index of blob file {} used to read blob file {}",
                    index.file, self.summary.number
                ),
            ));
        }
        let start = index
            .offset
            .checked_sub(key_len + RECORD_HEADER_LEN)
            .filter(|&start| start >= HEADER_LEN);
        let end = index.offset.checked_add(index.size);
        match (start, end) {
            (Some(start), Some(end)) if end <= self.records_end() => Ok(start),
            _ => Err(Error::corruption(
                what,
                format!(
                    "blob index (offset {}, size {}, key of {key_len} bytes) points outside the records (bytes {HEADER_LEN}..{})",
                    index.offset,
                    index.size,
                    self.records_end()
                ),
            )),
        }
    }

    /// Where the records end and the footer starts.
    fn records_end(&self) -> u64 {
        self.summary.file_size - FOOTER_LEN
    }

    fn record_what(&self, at: u64) -> String {
        format!("{}, blob record at offset {at}", self.file.what())
    }
}

/// The footer's counts against the `records_len` bytes between header and footer.
fn check_footer(footer: &Footer, records_len: u64) -> std::result::Result<(), String> {
    if footer.blob_bytes != records_len {
        return Err(format!(
            "{} blob bytes, but {records_len} bytes lie between header and footer",
            footer.blob_bytes
        ));
    }
    let least = footer.blob_count.checked_mul(RECORD_HEADER_LEN);
    if least.is_none_or(|least| least > records_len) {
        return Err(format!(
            "{} blobs cannot fit in {records_len} bytes",
            footer.blob_count
        ));
    }
    if footer.blob_count == 0 && records_len > 0 {
        return Err(format!("no blobs, but {records_len} bytes of records"));
    }
    Ok(())
}
