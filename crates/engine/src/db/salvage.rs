//! Salvage: every key that can still be read from a damaged database, newest write first,
//! as RocksDB's repair rebuilds a database from what is left.
//!
//! A salvage runs [`super::check`]'s survey, then merges what it found readable: every
//! data block of the live tables that passed its checksum, and every intact record of the
//! WALs to replay (a damaged record is skipped, as `skip-any-corrupted-records` recovery
//! does). For each user key the newest entry wins by sequence number; a key whose newest
//! entry is a deletion stays deleted. What was lost is the check's damage: a key in the
//! range of a damaged block or table may be missing, or come back with an older value (or
//! come back although deleted) when its newest entry was in the damaged part.
//!
//! Without a readable manifest every table and WAL on the file system is merged. Tables
//! and WALs that a finished compaction had made obsolete are then merged too; their
//! entries are older than the ones that replaced them, but a deletion that a compaction
//! dropped at the last level no longer hides them: keys deleted long ago may come back.

use std::collections::HashSet;
use std::sync::Arc;

use crate::fs::SharedFileSystem;

use crate::iter::{BlobFetch, InternalIterator, MergingIterator};
use crate::key::{self, ValueKind};
use crate::options::{Options, WalRecoveryMode};
use crate::sst::Table;
use crate::Result;

use super::blobs::BlobCache;
use super::check::{survey, CheckReport, CheckedTable, Finding, KeyRange, Severity};
use super::recovery::{replay, select, RecoveryReport, Selected, Wal};

/// What a salvage copied and what it could not.
#[derive(Clone, Debug, Default)]
pub struct SalvageReport {
    /// Keys handed to the sink (live values; deleted keys are not).
    pub keys: u64,
    /// Value bytes handed to the sink.
    pub value_bytes: u64,
    /// Entries read from tables and WAL records, every version of every key.
    pub entries: u64,
    /// The check that preceded the copy: its damage is what was lost.
    pub check: CheckReport,
}

/// Where a salvage hands each live key and its value.
pub type KeySink<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> Result<()>;

/// Reads every readable key of the database on `fs` and hands each live one, in key order,
/// to `sink` (user key, value). Fails only when the file system holds no database, a block
/// that passed the check fails when read again, or `sink` fails.
pub fn salvage(
    fs: &impl SharedFileSystem,
    options: &Options,
    sink: KeySink<'_>,
) -> Result<SalvageReport> {
    let fs = &fs.shared();
    let survey = survey(fs, options)?;
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let wals = survey
        .wals
        .into_iter()
        .map(|(name, contents)| Wal { name, contents });
    // Every damaged record is already a finding of the check.
    let Selected { batches, .. } =
        select(wals.collect(), WalRecoveryMode::SkipAnyCorruptedRecords)?;
    let (_, mem) = replay(options, batches, 0, None, &mut RecoveryReport::default())?;
    children.push(Box::new(mem.iter()));
    for t in survey.tables {
        children.push(Box::new(ReadableBlocks::new(t)));
    }
    let mut report = SalvageReport {
        check: survey.report,
        ..SalvageReport::default()
    };
    let blobs = BlobCache::new(Arc::clone(fs));
    let mut merged = MergingIterator::new(children);
    merged.seek_to_first()?;
    let mut last: Option<Vec<u8>> = None;
    while merged.valid() {
        report.entries += 1;
        let ikey = merged.key();
        let parsed = key::parse(ikey);
        let user_key = parsed.as_ref().map_or(ikey, |p| p.user_key);
        if last.as_deref() != Some(user_key) {
            last = Some(user_key.to_vec());
            // Entries come newest first within a user key: the first one decides.
            let value = match parsed.map(|p| p.kind) {
                Some(ValueKind::Put) => Some(merged.value().to_vec()),
                Some(ValueKind::BlobIndex) => {
                    blob_value(&blobs, user_key, merged.value(), &mut report)
                }
                _ => None,
            };
            if let Some(value) = value {
                sink(user_key, &value)?;
                report.keys += 1;
                report.value_bytes += value.len() as u64;
            }
        }
        merged.next()?;
    }
    Ok(report)
}

/// The value a blob reference points at; a blob that cannot be read is a loss of its key
/// (added to the report's damage), not the end of the salvage.
fn blob_value(
    blobs: &BlobCache,
    user_key: &[u8],
    index: &[u8],
    report: &mut SalvageReport,
) -> Option<Vec<u8>> {
    match blobs.fetch(user_key, index) {
        Ok(value) => Some(value),
        Err(e) => {
            report.check.findings.push(Finding {
                severity: Severity::Damage,
                file: None,
                what: format!("the value of a key cannot be read from its blob file: {e}"),
                keys: Some(KeyRange {
                    smallest: user_key.to_vec(),
                    largest: user_key.to_vec(),
                }),
            });
            None
        }
    }
}

/// A cursor over the data blocks of a table that passed the check, skipping the others.
/// Blocks are decoded whole, one at a time.
struct ReadableBlocks {
    table: Arc<Table>,
    bad: HashSet<usize>,
    /// The block `entries` came from.
    block: usize,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
}

impl ReadableBlocks {
    fn new(t: CheckedTable) -> ReadableBlocks {
        ReadableBlocks {
            table: t.table,
            bad: t.bad_blocks,
            block: 0,
            entries: Vec::new(),
            pos: 0,
        }
    }

    /// Loads the first readable block at or after `from` (none: the cursor is invalid).
    fn load_from(&mut self, from: usize) -> Result<()> {
        self.entries.clear();
        self.pos = 0;
        let mut i = from;
        while i < self.table.data_blocks() {
            if !self.bad.contains(&i) {
                self.entries = self.table.data_block_entries(i)?;
                if !self.entries.is_empty() {
                    break;
                }
            }
            i += 1;
        }
        self.block = i;
        Ok(())
    }

    /// Loads the last readable block at or before `from` and stands on its last entry
    /// (none: the cursor is invalid).
    fn load_back_from(&mut self, from: Option<usize>) -> Result<()> {
        self.entries.clear();
        self.pos = 0;
        let mut at = from;
        while let Some(i) = at {
            if !self.bad.contains(&i) {
                self.entries = self.table.data_block_entries(i)?;
                if !self.entries.is_empty() {
                    self.block = i;
                    self.pos = self.entries.len() - 1;
                    return Ok(());
                }
            }
            at = i.checked_sub(1);
        }
        Ok(())
    }
}

impl InternalIterator for ReadableBlocks {
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.load_from(0)
    }

    /// Linear: a salvage reads every entry once from the first.
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.load_from(0)?;
        while self.valid() && key::compare(self.key(), target) == std::cmp::Ordering::Less {
            self.next()?;
        }
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.pos += 1;
        if self.pos >= self.entries.len() {
            self.load_from(self.block + 1)?;
        }
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.load_back_from(self.table.data_blocks().checked_sub(1))
    }

    fn prev(&mut self) -> Result<()> {
        match self.pos.checked_sub(1) {
            Some(pos) => {
                self.pos = pos;
                Ok(())
            }
            None => self.load_back_from(self.block.checked_sub(1)),
        }
    }

    fn key(&self) -> &[u8] {
        self.entries.get(self.pos).map_or(&[], |e| &e.0[..])
    }

    fn value(&self) -> &[u8] {
        self.entries.get(self.pos).map_or(&[], |e| &e.1[..])
    }
}
