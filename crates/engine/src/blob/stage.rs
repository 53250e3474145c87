//! The blob side of a flush or compaction job (RocksDB's `BlobFileBuilder`, the compaction
//! iterator's blob garbage collection and `BlobGarbageMeter` in one [`ValueStage`]).
//!
//! - **Separation**: a job whose output level writes blob files puts every kept value of
//!   at least `min_blob_size` bytes into the job's current blob file (a new one once it
//!   reaches `blob_file_size`) and writes the blob's index in the table instead.
//! - **Garbage collection**: a blob in a file numbered below the cutoff is read and
//!   written again, into this job's blob files if the output level writes them (else
//!   inline), so its old copy becomes garbage.
//! - **Garbage metering**: every blob reference the job reads flows in, every one it
//!   writes back unchanged flows out; what flowed in and not out is garbage of its file.

use std::collections::BTreeMap;

use crate::compaction::job::ValueStage;
use crate::iter::BlobFetch;
use crate::key::ValueKind;
use crate::log::LogSink;
use crate::version::{BlobFileMeta, BlobGarbage};
use crate::Result;

use super::{blob_record_bytes, BlobFileWriter, BlobIndex};

/// Where a job's new blob files come from, and how a finished one is closed.
pub trait BlobSinks {
    /// Where one blob file's bytes go.
    type Sink: LogSink;
    /// A new blob file: its number and where its bytes go.
    fn create(&mut self) -> Result<(u64, Self::Sink)>;
    /// Makes a finished blob file durable and closes it.
    fn close(&mut self, sink: Self::Sink) -> Result<()>;
}

/// What a job's stage decides from the options and the version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlobRules {
    /// Values of at least this many bytes go to blob files; `None`: the job writes none
    /// (blob files off, or an output level above `blob_file_starting_level`).
    pub min_blob_size: Option<u64>,
    /// A blob file is finished once it reaches this size.
    pub blob_file_size: u64,
    /// Blobs in files numbered below this are relocated; `None`: no garbage collection.
    pub gc_cutoff: Option<u64>,
}

/// Blobs and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlobCount {
    /// Blobs.
    pub count: u64,
    /// Their bytes as stored (record header, key and value each).
    pub bytes: u64,
}

impl BlobCount {
    /// Counts one blob of `bytes`.
    pub fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
    }
}

/// What a job's stage did: the blob files it wrote, the garbage it made, what it moved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobOutcome {
    /// The blob files the job wrote, for the version edit.
    pub added: Vec<BlobFileMeta>,
    /// Blobs of older files that the job's outputs no longer reference, per file.
    pub garbage: Vec<BlobGarbage>,
    /// Blobs garbage collection read and wrote again.
    pub relocated: BlobCount,
}

impl BlobOutcome {
    /// Adds what another part of the same job (a subcompaction) did; the garbage of a
    /// blob file both made is summed into one record.
    pub fn absorb(&mut self, other: BlobOutcome) {
        self.added.extend(other.added);
        for g in other.garbage {
            match self.garbage.iter_mut().find(|m| m.number == g.number) {
                Some(mine) => {
                    mine.count += g.count;
                    mine.bytes += g.bytes;
                }
                None => self.garbage.push(g),
            }
        }
        self.relocated.count += other.relocated.count;
        self.relocated.bytes += other.relocated.bytes;
    }
}

/// The stage of one job (see the module documentation).
pub struct BlobStage<'a, F: BlobSinks> {
    rules: BlobRules,
    fetch: Option<&'a dyn BlobFetch>,
    sinks: F,
    current: Option<BlobFileWriter<F::Sink>>,
    /// Numbers of every blob file this job created, finished or not.
    created: Vec<u64>,
    outcome: BlobOutcome,
    inflow: BTreeMap<u64, BlobCount>,
    outflow: BTreeMap<u64, BlobCount>,
}

impl<'a, F: BlobSinks> BlobStage<'a, F> {
    /// A stage under `rules`; `fetch` reads the blobs garbage collection relocates (needed
    /// only with a cutoff).
    pub fn new(rules: BlobRules, fetch: Option<&'a dyn BlobFetch>, sinks: F) -> Self {
        BlobStage {
            rules,
            fetch,
            sinks,
            current: None,
            created: Vec::new(),
            outcome: BlobOutcome::default(),
            inflow: BTreeMap::new(),
            outflow: BTreeMap::new(),
        }
    }

    /// Gives up: drops the open blob file's writer (a file being written cannot be
    /// deleted) and returns the numbers of every blob file this job created, for the
    /// caller to delete.
    pub fn abandon(mut self) -> Vec<u64> {
        self.current = None;
        std::mem::take(&mut self.created)
    }

    /// Numbers of the blob files created so far: what to delete if [`Self::finish`]
    /// fails (it drops the open writer either way).
    pub fn created(&self) -> Vec<u64> {
        self.created.clone()
    }

    /// Finishes the current blob file; the job's outcome.
    pub fn finish(mut self) -> Result<BlobOutcome> {
        self.finish_file()?;
        for (number, inflow) in &self.inflow {
            let out = self.outflow.get(number).copied().unwrap_or_default();
            let count = inflow.count.saturating_sub(out.count);
            if count > 0 {
                self.outcome.garbage.push(BlobGarbage {
                    number: *number,
                    count,
                    bytes: inflow.bytes.saturating_sub(out.bytes),
                });
            }
        }
        Ok(self.outcome)
    }

    fn finish_file(&mut self) -> Result<()> {
        let Some(writer) = self.current.take() else {
            return Ok(());
        };
        let (sink, summary) = writer.finish()?;
        self.sinks.close(sink)?;
        self.outcome.added.push(BlobFileMeta {
            number: summary.number,
            total_count: summary.blob_count,
            total_bytes: summary.blob_bytes,
            file_size: summary.file_size,
            ..BlobFileMeta::default()
        });
        Ok(())
    }

    /// Writes `value` to the current blob file; its index.
    fn separate(&mut self, user_key: &[u8], value: &[u8]) -> Result<Vec<u8>> {
        if self.current.is_none() {
            let (number, sink) = self.sinks.create()?;
            self.created.push(number);
            self.current = Some(BlobFileWriter::new(sink, number)?);
        }
        let Some(writer) = self.current.as_mut() else {
            return Err(crate::Error::InvalidArgument("no blob file open".into()));
        };
        let index = writer.add(user_key, value)?;
        if writer.file_size() >= self.rules.blob_file_size {
            self.finish_file()?;
        }
        Ok(index.encode())
    }

    /// A value as this job writes it: to a blob file if it is large enough, else inline.
    fn place(&mut self, user_key: &[u8], value: &[u8]) -> Result<(ValueKind, Vec<u8>)> {
        match self.rules.min_blob_size {
            Some(min) if value.len() as u64 >= min => {
                Ok((ValueKind::BlobIndex, self.separate(user_key, value)?))
            }
            _ => Ok((ValueKind::Put, value.to_vec())),
        }
    }

    /// A blob reference the job keeps: relocated if its file is below the cutoff.
    fn keep_blob(
        &mut self,
        user_key: &[u8],
        encoded: &[u8],
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        let index = BlobIndex::decode(encoded)?;
        let old = self
            .rules
            .gc_cutoff
            .is_some_and(|cutoff| index.file < cutoff);
        let fetch = self.fetch.filter(|_| old);
        let Some(fetch) = fetch else {
            let bytes = blob_record_bytes(user_key.len(), index.size as usize);
            self.outflow.entry(index.file).or_default().add(bytes);
            return Ok(None);
        };
        let value = fetch.fetch(user_key, encoded)?;
        let bytes = blob_record_bytes(user_key.len(), value.len());
        self.outcome.relocated.add(bytes);
        self.place(user_key, &value).map(Some)
    }
}

impl<F: BlobSinks> ValueStage for BlobStage<'_, F> {
    fn read(&mut self, kind: ValueKind, user_key: &[u8], value: &[u8]) -> Result<()> {
        if kind == ValueKind::BlobIndex {
            let index = BlobIndex::decode(value)?;
            let bytes = blob_record_bytes(user_key.len(), index.size as usize);
            self.inflow.entry(index.file).or_default().add(bytes);
        }
        Ok(())
    }

    fn write(
        &mut self,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        match kind {
            ValueKind::BlobIndex => self.keep_blob(user_key, value),
            ValueKind::Put if self.rules.min_blob_size.is_some() => {
                let (kind, placed) = self.place(user_key, value)?;
                Ok((kind == ValueKind::BlobIndex).then_some((kind, placed)))
            }
            _ => Ok(None),
        }
    }
}

/// The blobs a compaction's garbage collection will read and write again, known before it
/// runs: every blob its input tables reference (`tables`: each one's blob references by
/// file, the tables' `blob_refs` property) in a file numbered below `cutoff`. Exact up to
/// the references the compaction drops (older versions of a key, deleted keys), whose blobs
/// it does not move.
pub fn gc_estimate<'a>(
    tables: impl IntoIterator<Item = &'a BTreeMap<u64, BlobCount>>,
    cutoff: u64,
) -> BlobCount {
    let mut total = BlobCount::default();
    for (_, refs) in tables.into_iter().flat_map(|t| t.range(..cutoff)) {
        total.count = total.count.saturating_add(refs.count);
        total.bytes = total.bytes.saturating_add(refs.bytes);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::BlobFileReader;
    use crate::source::MemFile;
    use std::sync::{Arc, Mutex};

    /// Blob files in memory: finished ones by number.
    #[derive(Default)]
    struct MemSinks {
        next: u64,
        closed: Arc<Mutex<BTreeMap<u64, Vec<u8>>>>,
    }

    struct Numbered(u64, Vec<u8>);

    impl LogSink for Numbered {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.1.extend_from_slice(data);
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
    }

    impl BlobSinks for MemSinks {
        type Sink = Numbered;
        fn create(&mut self) -> Result<(u64, Numbered)> {
            self.next += 1;
            Ok((self.next + 100, Numbered(self.next + 100, Vec::new())))
        }
        fn close(&mut self, sink: Numbered) -> Result<()> {
            self.closed.lock().unwrap().insert(sink.0, sink.1);
            Ok(())
        }
    }

    /// Reads blobs from the closed files of `MemSinks`.
    struct MemFetch(Arc<Mutex<BTreeMap<u64, Vec<u8>>>>);

    impl BlobFetch for MemFetch {
        fn fetch(&self, user_key: &[u8], index: &[u8]) -> Result<Vec<u8>> {
            let index = BlobIndex::decode(index)?;
            let data = self.0.lock().unwrap()[&index.file].clone();
            let reader = BlobFileReader::open(Arc::new(MemFile::new("blob", data)), index.file)?;
            reader.get(user_key, &index)
        }
    }

    fn rules(min: u64, cutoff: Option<u64>) -> BlobRules {
        BlobRules {
            min_blob_size: Some(min),
            blob_file_size: 1 << 20,
            gc_cutoff: cutoff,
        }
    }

    #[test]
    fn large_values_go_to_blob_files_and_small_ones_stay() {
        let sinks = MemSinks::default();
        let closed = Arc::clone(&sinks.closed);
        let mut stage = BlobStage::new(rules(10, None), None, sinks);
        assert_eq!(stage.write(ValueKind::Put, b"a", b"short").unwrap(), None);
        let (kind, index) = stage
            .write(ValueKind::Put, b"b", b"long enough")
            .unwrap()
            .unwrap();
        assert_eq!(kind, ValueKind::BlobIndex);
        assert_eq!(stage.write(ValueKind::Delete, b"c", b"").unwrap(), None);
        let out = stage.finish().unwrap();
        assert_eq!(out.added.len(), 1);
        assert_eq!(out.added[0].total_count, 1);
        assert!(out.garbage.is_empty());
        let fetch = MemFetch(closed);
        assert_eq!(fetch.fetch(b"b", &index).unwrap(), b"long enough");
    }

    #[test]
    fn dropped_references_are_garbage_and_old_blobs_move() {
        // A first job writes three blobs into file 101.
        let sinks = MemSinks::default();
        let closed = Arc::clone(&sinks.closed);
        let mut first = BlobStage::new(rules(1, None), None, sinks);
        let refs: Vec<Vec<u8>> = [b"k1", b"k2", b"k3"]
            .iter()
            .map(|k| {
                first
                    .write(ValueKind::Put, *k, b"value")
                    .unwrap()
                    .unwrap()
                    .1
            })
            .collect();
        first.finish().unwrap();
        // A second job reads all three, drops k1 and k2, and relocates k3 (cutoff 102:
        // file 101 is old).
        let fetch = MemFetch(Arc::clone(&closed));
        let sinks = MemSinks {
            next: 10,
            closed: Arc::clone(&closed),
        };
        let mut second = BlobStage::new(rules(1, Some(102)), Some(&fetch), sinks);
        for (k, r) in [b"k1", b"k2", b"k3"].iter().zip(&refs) {
            second.read(ValueKind::BlobIndex, *k, r).unwrap();
        }
        let moved = second
            .write(ValueKind::BlobIndex, b"k3", &refs[2])
            .unwrap()
            .unwrap();
        let out = second.finish().unwrap();
        assert_eq!(out.relocated.count, 1);
        // Every blob of 101 is garbage: two dropped, one moved to a new file.
        assert_eq!(out.garbage.len(), 1);
        assert_eq!(out.garbage[0].number, 101);
        assert_eq!(out.garbage[0].count, 3);
        assert_eq!(out.added.len(), 1);
        assert_eq!(fetch.fetch(b"k3", &moved.1).unwrap(), b"value");
        assert_ne!(BlobIndex::decode(&moved.1).unwrap().file, 101);
    }

    #[test]
    fn a_kept_reference_below_no_cutoff_is_not_garbage() {
        let sinks = MemSinks::default();
        let mut first = BlobStage::new(rules(1, None), None, sinks);
        let r = first.write(ValueKind::Put, b"k", b"v").unwrap().unwrap().1;
        first.finish().unwrap();
        let mut second = BlobStage::new(rules(1, None), None, MemSinks::default());
        second.read(ValueKind::BlobIndex, b"k", &r).unwrap();
        assert_eq!(second.write(ValueKind::BlobIndex, b"k", &r).unwrap(), None);
        let out = second.finish().unwrap();
        assert!(out.garbage.is_empty() && out.added.is_empty());
    }

    #[test]
    fn the_estimate_sums_the_inputs_references_below_the_cutoff() {
        let refs = |list: &[(u64, u64, u64)]| -> BTreeMap<u64, BlobCount> {
            let refs = list
                .iter()
                .map(|&(f, count, bytes)| (f, BlobCount { count, bytes }));
            refs.collect()
        };
        // Three input tables: one into old and new files, one into new files only, one
        // with no blob reference.
        let tables = [
            refs(&[(5, 10, 10_280), (6, 2, 2_056), (9, 7, 7_196)]),
            refs(&[(8, 3, 3_084), (9, 1, 1_028)]),
            refs(&[]),
        ];
        // Cutoff 8: files 5 and 6 are relocated, 8 (the cutoff itself) and 9 are not.
        let expected = BlobCount {
            count: 12,
            bytes: 12_336,
        };
        assert_eq!(gc_estimate(&tables, 8), expected);
        let all = BlobCount {
            count: 23,
            bytes: 23_644,
        };
        assert_eq!(gc_estimate(&tables, u64::MAX), all);
        assert_eq!(gc_estimate(&tables, 5), BlobCount::default());
        assert_eq!(gc_estimate([], 8), BlobCount::default());
    }
}
