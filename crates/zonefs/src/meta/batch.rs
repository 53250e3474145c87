//! The bytes of one write to the metadata log: frames packed back to back, closed by a
//! commit frame; then the same frames again with their own commit frame (the batch's copy);
//! then zero padding up to the device block boundary.
//!
//! Placement rule shared with the reader: a frame never starts in the last three bytes of
//! a block (those are left zero), so a length word never straddles a block boundary and a
//! zero length word always means "padding, continue at the next block".

use std::ops::Range;

use super::codec::EncodeError;
use super::record::{encode_state_snapshot, Commit, Record};
use super::state::FsState;
use super::superblock::Superblock;

/// Bytes a length word needs; fewer left in a block means the block ends here.
pub(crate) const LENGTH_WORD: usize = 4;

#[derive(Debug)]
pub(crate) struct Batch {
    buf: Vec<u8>,
    records: u32,
    block: usize,
    /// Where each record frame of the batch lies in `buf`, to write them again as the copy.
    frames: Vec<Range<usize>>,
}

impl Batch {
    /// An empty batch that will be written at a block boundary.
    pub fn new(block: usize) -> Batch {
        Batch {
            buf: Vec::new(),
            records: 0,
            block,
            frames: Vec::new(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn len(&self) -> u64 {
        self.buf.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn records(&self) -> u32 {
        self.records
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.records = 0;
        self.frames.clear();
    }

    /// The superblock opens a zone's first write, in a block of its own; the zone's second
    /// block holds its copy.
    pub fn push_superblock(&mut self, sb: &Superblock) {
        self.buf.extend_from_slice(&sb.encode());
        self.pad_block();
    }

    /// The superblock as format 2 wrote it: the snapshot follows in the same block.
    #[cfg(test)]
    pub fn push_superblock_format_2(&mut self, sb: &Superblock) {
        self.buf.extend_from_slice(&sb.encode());
    }

    pub fn push_record(&mut self, rec: &Record) -> Result<(), EncodeError> {
        let records = self.one_more()?;
        let start = self.start_frame();
        rec.encode_frame(&mut self.buf)?;
        self.frames.push(start..self.buf.len());
        self.records = records;
        Ok(())
    }

    pub fn push_snapshot(&mut self, state: &FsState) -> Result<(), EncodeError> {
        let records = self.one_more()?;
        let start = self.start_frame();
        encode_state_snapshot(state, &mut self.buf)?;
        self.frames.push(start..self.buf.len());
        self.records = records;
        Ok(())
    }

    /// Closes the batch with commit `seq`, writes its copy (the same record frames and a
    /// commit of its own) and pads both to the block boundary. Returns the length before
    /// sealing, for [`Batch::unseal`] if the write fails.
    pub fn seal(&mut self, seq: u64) -> Result<usize, EncodeError> {
        let mark = self.buf.len();
        let sealed = self.seal_copies(seq);
        if let Err(e) = sealed {
            self.buf.truncate(mark);
            return Err(e);
        }
        self.pad_block();
        Ok(mark)
    }

    fn seal_copies(&mut self, seq: u64) -> Result<(), EncodeError> {
        let first = self.frames.first().map(|f| f.start);
        self.push_commit(seq, first)?;
        let mut copy_start = None;
        let frames = std::mem::take(&mut self.frames);
        for frame in &frames {
            let start = self.start_frame();
            copy_start.get_or_insert(start);
            self.buf.extend_from_within(frame.clone());
        }
        self.frames = frames;
        self.push_commit(seq, copy_start)
    }

    /// A commit frame closing the frames that start at `first` (none: an empty batch).
    fn push_commit(&mut self, seq: u64, first: Option<usize>) -> Result<(), EncodeError> {
        let start = self.start_frame();
        let span = first.map_or(0, |f| start - f);
        let span = u32::try_from(span).map_err(|_| EncodeError::TooLong {
            what: "batch",
            len: span as u64,
        })?;
        let commit = Commit {
            seq,
            records: self.records,
            span: Some(span),
        };
        commit.encode_frame(&mut self.buf)
    }

    /// Closes the batch as format 2 did: one copy, a commit without span. Only to build
    /// old-format zones in tests.
    #[cfg(test)]
    pub fn seal_format_2(&mut self, seq: u64) -> Result<usize, EncodeError> {
        let mark = self.buf.len();
        self.start_frame();
        let commit = Commit {
            seq,
            records: self.records,
            span: None,
        };
        commit.encode_frame(&mut self.buf)?;
        self.pad_block();
        Ok(mark)
    }

    /// Pads the bytes so far to the block boundary.
    fn pad_block(&mut self) {
        let tail = self.buf.len() % self.block;
        if tail != 0 {
            self.buf.resize(self.buf.len() + self.block - tail, 0);
        }
    }

    /// Undoes [`Batch::seal`]: the records stay pending.
    pub fn unseal(&mut self, mark: usize) {
        self.buf.truncate(mark);
    }

    /// The record count after one more record (the commit frame stores it as a u32).
    fn one_more(&self) -> Result<u32, EncodeError> {
        self.records.checked_add(1).ok_or(EncodeError::TooLong {
            what: "batch",
            len: u64::from(u32::MAX) + 1,
        })
    }

    /// Skips the end of the block when a length word would not fit in it; returns where
    /// the next frame starts.
    fn start_frame(&mut self) -> usize {
        let left = self.block - self.buf.len() % self.block;
        if left < LENGTH_WORD {
            self.buf.resize(self.buf.len() + left, 0);
        }
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::record::FRAME_HEADER_LEN;
    use crate::meta::state::FileId;

    #[test]
    fn length_words_never_straddle_blocks_and_batches_end_on_a_boundary() {
        let block = 512;
        for name_len in 1..600 {
            let mut b = Batch::new(block);
            let rec = Record::FileRename {
                id: FileId(1),
                name: "n".repeat(name_len),
            };
            let mut starts = Vec::new();
            for _ in 0..3 {
                let before = b.buf.len();
                b.push_record(&rec).unwrap();
                // The frame starts where the header is, after any skipped block end.
                let frame_len = FRAME_HEADER_LEN + 1 + 8 + 4 + name_len;
                starts.push(b.buf.len() - frame_len);
                assert!(b.buf.len() - frame_len >= before);
            }
            b.seal(7).unwrap();
            assert_eq!(b.buf.len() % block, 0);
            for s in starts {
                assert!(block - s % block >= LENGTH_WORD, "frame at {s}");
            }
            assert_eq!(b.records(), 3);
        }
    }

    #[test]
    fn unseal_restores_the_pending_records() {
        let mut b = Batch::new(4096);
        b.push_record(&Record::FileDelete { id: FileId(3) })
            .unwrap();
        let before = b.bytes().to_vec();
        let mark = b.seal(1).unwrap();
        assert_eq!(b.len(), 4096);
        b.unseal(mark);
        assert_eq!(b.bytes(), &before[..]);
    }
}
