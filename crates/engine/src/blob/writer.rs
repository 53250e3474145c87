//! Writing a blob file: the header, one record per [`BlobFileWriter::add`], the footer at
//! [`BlobFileWriter::finish`].

use crate::log::LogSink;
use crate::{Error, Result};

use super::format::{
    blob_record_bytes, encode_header, Footer, RecordHeader, FOOTER_LEN, HEADER_LEN,
    RECORD_HEADER_LEN,
};
use super::BlobIndex;

/// What a finished blob file holds, as its footer says it (and as the version will record
/// it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlobFileSummary {
    /// The file's number.
    pub number: u64,
    /// Records (blobs) in the file.
    pub blob_count: u64,
    /// Σ [`blob_record_bytes`](super::blob_record_bytes) of its records: every byte
    /// between the header and the footer.
    pub blob_bytes: u64,
    /// The file's size: header, records and footer.
    pub file_size: u64,
}

/// Appends a blob file to a [`LogSink`]. After a sink error the writer refuses every later
/// call: the sink may hold a partial record.
pub struct BlobFileWriter<S: LogSink> {
    sink: S,
    number: u64,
    blob_count: u64,
    blob_bytes: u64,
    failed: Option<String>,
}

impl<S: LogSink> BlobFileWriter<S> {
    /// Starts blob file `number` (never 0) in `sink`, which must be empty: writes the
    /// header.
    pub fn new(mut sink: S, number: u64) -> Result<Self> {
        if number == 0 {
            return Err(Error::InvalidArgument("blob file number 0".into()));
        }
        sink.append(&encode_header(number))?;
        Ok(BlobFileWriter {
            sink,
            number,
            blob_count: 0,
            blob_bytes: 0,
            failed: None,
        })
    }

    /// Appends one record (`user_key`, `value`, each at most `u32::MAX` bytes) and returns
    /// the index of its value. Nothing is durable until the caller syncs the sink after
    /// [`Self::finish`].
    pub fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<BlobIndex> {
        self.check_usable()?;
        let limit = u32::MAX as usize;
        if user_key.len() > limit || value.len() > limit {
            return Err(Error::InvalidArgument(format!(
                "blob too large for a blob file (key {} bytes, value {} bytes)",
                user_key.len(),
                value.len()
            )));
        }
        let index = BlobIndex {
            file: self.number,
            offset: self.file_size() + RECORD_HEADER_LEN + user_key.len() as u64,
            size: value.len() as u64,
        };
        let header = RecordHeader::of(user_key, value);
        let result = self
            .sink
            .append(&header)
            .and_then(|()| self.sink.append(user_key))
            .and_then(|()| self.sink.append(value));
        self.note(result)?;
        self.blob_count += 1;
        self.blob_bytes += blob_record_bytes(user_key.len(), value.len());
        Ok(index)
    }

    /// The file's number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Records added so far.
    pub fn blob_count(&self) -> u64 {
        self.blob_count
    }

    /// Σ [`blob_record_bytes`](super::blob_record_bytes) of the records added so far.
    pub fn blob_bytes(&self) -> u64 {
        self.blob_bytes
    }

    /// Bytes written so far (header and records; the footer once finished).
    pub fn file_size(&self) -> u64 {
        HEADER_LEN + self.blob_bytes
    }

    /// The sink (what an unfinished file holds so far).
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// Writes the footer and gives the sink back with the file's summary. It does not sync:
    /// the caller decides when the file must be durable.
    pub fn finish(mut self) -> Result<(S, BlobFileSummary)> {
        self.check_usable()?;
        let footer = Footer {
            blob_count: self.blob_count,
            blob_bytes: self.blob_bytes,
        };
        self.sink.append(&footer.encode())?;
        let summary = BlobFileSummary {
            number: self.number,
            blob_count: self.blob_count,
            blob_bytes: self.blob_bytes,
            file_size: self.file_size() + FOOTER_LEN,
        };
        Ok((self.sink, summary))
    }

    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            Some(first) => Err(Error::NotWritable(format!(
                "blob file {} failed earlier: {first}",
                self.number
            ))),
            None => Ok(()),
        }
    }

    fn note(&mut self, result: Result<()>) -> Result<()> {
        if let Err(e) = &result {
            self.failed = Some(e.to_string());
        }
        result
    }
}
