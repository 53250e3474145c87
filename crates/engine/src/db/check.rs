//! Checking a database without writing: every file the database needs is read whole and
//! verified (the manifest strictly, every block of every live table, every WAL record), and
//! every file it does not need is named. RocksDB's `ldb checkconsistency` and
//! `verify_checksum` in one pass.
//!
//! A check goes on past damage: each damaged part is one [`Finding`] with the user keys
//! whose newest writes it may hold, so that a reader knows what a repair cannot bring back
//! ([`super::salvage`] copies everything else). When the manifest cannot be read, there is
//! no version to tell live tables from leftovers: every table and every WAL on the file
//! system is checked, as RocksDB's repair scans them all.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::fs::{FileSystem, SharedFileSystem};

use crate::batch::WriteBatch;
use crate::blob::{blob_file_name, BlobFileReader, BlobIndex};
use crate::key::{self, ValueKind};
use crate::log::{read_log, LogContents};
use crate::options::Options;
use crate::source::RandomAccess;
use crate::sst::Table;
use crate::version::{
    manifest_file_name, parse_manifest_name, sst_file_name, BlobFileMeta, FileMeta, VersionSet,
    CURRENT,
};
use crate::{Error, Result};

use super::files::{parse_file_name, DbFile};

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Data that cannot be read: a read or an open fails, writes may be lost.
    Damage,
    /// Nothing is lost: leftovers a read-write open deletes, files that are not the
    /// database's.
    Notice,
}

/// User keys, both ends included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    /// The first user key.
    pub smallest: Vec<u8>,
    /// The last user key.
    pub largest: Vec<u8>,
}

impl KeyRange {
    fn of_file(meta: &FileMeta) -> KeyRange {
        KeyRange {
            smallest: meta.smallest_user_key().to_vec(),
            largest: meta.largest_user_key().to_vec(),
        }
    }

    fn of_internal(smallest: &[u8], largest: &[u8]) -> KeyRange {
        KeyRange {
            smallest: key::user_key(smallest).to_vec(),
            largest: key::user_key(largest).to_vec(),
        }
    }
}

/// One thing a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Whether data is lost or not.
    pub severity: Severity,
    /// The file it is about; `None` for the database as a whole.
    pub file: Option<String>,
    /// What is wrong, in a sentence for the user.
    pub what: String,
    /// For damage: the user keys whose newest writes the damaged part may hold (`None`:
    /// not known, e.g. a WAL record, or every key when the manifest is lost).
    pub keys: Option<KeyRange>,
}

/// What a check read and what it found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// The manifest CURRENT names, if it could be read.
    pub manifest: Option<String>,
    /// The last sequence number the manifest records, if it could be read.
    pub last_sequence: Option<u64>,
    /// Whether the live files came from the manifest (false: it could not be read, and
    /// every table and WAL on the file system was checked).
    pub version_known: bool,
    /// Tables opened.
    pub tables: u64,
    /// Size in bytes of those tables.
    pub table_bytes: u64,
    /// Data blocks read.
    pub data_blocks: u64,
    /// Entries in those blocks.
    pub entries: u64,
    /// WALs read.
    pub wals: u64,
    /// Size in bytes of those WALs.
    pub wal_bytes: u64,
    /// Records read from those WALs.
    pub wal_records: u64,
    /// Blob files read.
    pub blob_files: u64,
    /// Size in bytes of those blob files.
    pub blob_bytes: u64,
    /// Blobs in those files.
    pub blobs: u64,
    /// Everything found, in the order it was found.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// Findings that are damage.
    pub fn damage(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Damage)
    }

    fn add(
        &mut self,
        severity: Severity,
        file: Option<&str>,
        what: String,
        keys: Option<KeyRange>,
    ) {
        self.findings.push(Finding {
            severity,
            file: file.map(str::to_string),
            what,
            keys,
        });
    }

    fn damaged(&mut self, file: &str, what: String, keys: Option<KeyRange>) {
        self.add(Severity::Damage, Some(file), what, keys);
    }

    fn notice(&mut self, file: &str, what: &str) {
        self.add(Severity::Notice, Some(file), what.to_string(), None);
    }
}

/// A table as the check left it: open (its index read) with the data blocks that failed.
pub(crate) struct CheckedTable {
    pub table: Arc<Table>,
    pub bad_blocks: HashSet<usize>,
}

/// Everything a check read that a repair goes on with.
pub(crate) struct Survey {
    pub report: CheckReport,
    /// The tables that opened, in file-number order.
    pub tables: Vec<CheckedTable>,
    /// The WALs to replay, in order, decoded.
    pub wals: Vec<(String, LogContents)>,
}

/// Checks the database on `fs` (see the module documentation). Fails only when the file
/// system holds no database; everything else found is in the report.
pub fn check(fs: &impl SharedFileSystem, options: &Options) -> Result<CheckReport> {
    Ok(survey(&fs.shared(), options)?.report)
}

/// The live files: the version's tables and the first WAL to replay, or `None` when the
/// manifest cannot be read.
struct Live {
    tables: BTreeMap<u64, FileMeta>,
    blobs: BTreeMap<u64, BlobFileMeta>,
    log_number: u64,
    manifest: u64,
}

pub(crate) fn survey(fs: &Arc<dyn FileSystem>, options: &Options) -> Result<Survey> {
    if !VersionSet::exists(fs) {
        return Err(Error::InvalidArgument(
            "no database on this file system (no CURRENT file)".into(),
        ));
    }
    let mut survey = Survey {
        report: CheckReport::default(),
        tables: Vec::new(),
        wals: Vec::new(),
    };
    let live = read_version(fs, options, &mut survey.report);
    let mut present = HashSet::new();
    let mut wals = Vec::new();
    let names = fs.list().map_err(|e| Error::fs("list the files", e))?;
    for name in names {
        match parse_file_name(&name) {
            DbFile::Sst(n) => {
                present.insert(n);
                match &live {
                    Some(l) if !l.tables.contains_key(&n) => survey.report.notice(
                        &name,
                        "a table no version holds (left by an interrupted flush or \
                         compaction); the next read-write open deletes it",
                    ),
                    _ => {
                        let meta = live.as_ref().and_then(|l| l.tables.get(&n));
                        let blobs = live.as_ref().map(|l| &l.blobs);
                        let t = check_table(fs, &name, meta, blobs, &mut survey.report);
                        if let Some(t) = t {
                            survey.tables.push(t);
                        }
                    }
                }
            }
            DbFile::Wal(n) if live.as_ref().is_some_and(|l| n < l.log_number) => {
                survey.report.notice(
                    &name,
                    "a WAL whose writes are all in tables; the next read-write open deletes it",
                )
            }
            DbFile::Wal(n) => wals.push((n, name)),
            DbFile::Blob(n) => {
                present.insert(n);
                match &live {
                    Some(l) if !l.blobs.contains_key(&n) => survey.report.notice(
                        &name,
                        "a blob file no version holds (left by an interrupted flush or \
                         compaction); the next read-write open deletes it",
                    ),
                    _ => {
                        let meta = live.as_ref().and_then(|l| l.blobs.get(&n));
                        check_blob_file(fs, &name, n, meta, &mut survey.report)
                    }
                }
            }
            DbFile::Temp => survey.report.notice(
                &name,
                "a temporary file left by a crash; the next read-write open deletes it",
            ),
            DbFile::Other => other_file(&name, live.as_ref(), &mut survey.report),
        }
    }
    if let Some(l) = &live {
        for n in l.blobs.keys().filter(|n| !present.contains(n)) {
            survey.report.damaged(
                &blob_file_name(*n),
                "the version holds this blob file but the file system has no such file: \
                 the values it held are lost"
                    .into(),
                None,
            );
        }
        for (n, meta) in l.tables.iter().filter(|(n, _)| !present.contains(n)) {
            survey.report.damaged(
                &sst_file_name(*n),
                "the version holds this table but the file system has no such file".into(),
                Some(KeyRange::of_file(meta)),
            );
        }
    }
    wals.sort_unstable();
    for (_, name) in wals {
        if let Some(contents) = check_wal(fs, &name, &mut survey.report) {
            survey.wals.push((name, contents));
        }
    }
    Ok(survey)
}

/// Reads CURRENT and replays the manifest strictly; damage is a finding.
fn read_version(
    fs: &Arc<dyn FileSystem>,
    options: &Options,
    report: &mut CheckReport,
) -> Option<Live> {
    match VersionSet::recover(Arc::clone(fs), options) {
        Ok(vs) => {
            let version = vs.current();
            let tables = version
                .all_files()
                .map(|(_, f)| (f.number, FileMeta::clone(f)));
            report.manifest = Some(manifest_file_name(vs.manifest_number()));
            report.last_sequence = Some(vs.last_sequence());
            report.version_known = true;
            Some(Live {
                tables: tables.collect(),
                blobs: version
                    .blob_files()
                    .map(|b| (b.number, BlobFileMeta::clone(b)))
                    .collect(),
                log_number: vs.log_number(),
                manifest: vs.manifest_number(),
            })
        }
        Err(e) => {
            report.add(
                Severity::Damage,
                None,
                format!(
                    "the database's version cannot be read ({e}); every table and WAL on \
                     the file system is checked, and which keys are lost is not known"
                ),
                None,
            );
            None
        }
    }
}

/// CURRENT, manifests and names that are not the database's.
fn other_file(name: &str, live: Option<&Live>, report: &mut CheckReport) {
    if name == CURRENT {
        return;
    }
    match (parse_manifest_name(name), live) {
        (Some(n), Some(l)) if n != l.manifest => report.notice(
            name,
            "a manifest CURRENT does not name; the next read-write open deletes it",
        ),
        (Some(_), _) => {}
        (None, _) => report.notice(name, "not a file of the database; left alone"),
    }
}

/// Opens table `name` and reads every data block; `meta` is the version's record of it
/// (`None` when the manifest is lost). `None` if the table cannot be opened at all.
fn check_table(
    fs: &dyn FileSystem,
    name: &str,
    meta: Option<&FileMeta>,
    blobs: Option<&BTreeMap<u64, BlobFileMeta>>,
    report: &mut CheckReport,
) -> Option<CheckedTable> {
    let whole = meta.map(KeyRange::of_file);
    let file = match fs.open(name) {
        Ok(file) => file,
        Err(e) => {
            report.damaged(name, format!("cannot be opened: {e}"), whole);
            return None;
        }
    };
    report.tables += 1;
    report.table_bytes += file.size();
    if let Some(meta) = meta.filter(|m| m.size != file.size()) {
        let what = format!(
            "the file holds {} bytes, the version says {}",
            file.size(),
            meta.size
        );
        report.damaged(name, what, whole);
        return None;
    }
    let table = match Table::open(Arc::new(file) as Arc<dyn RandomAccess>) {
        Ok(table) => Arc::new(table),
        Err(e) => {
            report.damaged(name, format!("the table cannot be opened: {e}"), whole);
            return None;
        }
    };
    let bad_blocks = check_blocks(name, &table, blobs, report);
    if let Some(meta) = meta {
        check_against_version(name, &table, meta, bad_blocks.is_empty(), report);
    }
    Some(CheckedTable { table, bad_blocks })
}

/// Reads every data block of `table`; returns the ones that failed.
fn check_blocks(
    name: &str,
    table: &Table,
    blobs: Option<&BTreeMap<u64, BlobFileMeta>>,
    report: &mut CheckReport,
) -> HashSet<usize> {
    let mut bad = HashSet::new();
    for i in 0..table.data_blocks() {
        report.data_blocks += 1;
        match table.data_block_entries(i) {
            Ok(entries) => {
                report.entries += entries.len() as u64;
                check_references(name, &entries, blobs, report);
            }
            Err(e) => {
                let keys = table
                    .data_block_bounds(i)
                    .map(|(a, b)| KeyRange::of_internal(a, b));
                report.damaged(name, format!("data block {i}: {e}"), keys);
                bad.insert(i);
            }
        }
    }
    bad
}

/// Every blob reference among `entries` must decode and name a blob file of the version
/// (`blobs`; not checked without a version): a read of the key would fail otherwise.
fn check_references(
    name: &str,
    entries: &[(Vec<u8>, Vec<u8>)],
    blobs: Option<&BTreeMap<u64, BlobFileMeta>>,
    report: &mut CheckReport,
) {
    for (ikey, value) in entries {
        let Some(k) = key::parse(ikey).filter(|k| k.kind == ValueKind::BlobIndex) else {
            continue;
        };
        let problem = match BlobIndex::decode(value) {
            Err(e) => Some(format!("a blob reference that does not decode: {e}")),
            Ok(index) if blobs.is_some_and(|b| !b.contains_key(&index.file)) => Some(format!(
                "a blob reference to blob file {}, which the version does not hold",
                index.file
            )),
            Ok(_) => None,
        };
        if let Some(what) = problem {
            let keys = KeyRange {
                smallest: k.user_key.to_vec(),
                largest: k.user_key.to_vec(),
            };
            report.damaged(name, what, Some(keys));
        }
    }
}

/// The table's own properties against what the version says of it.
fn check_against_version(
    name: &str,
    table: &Table,
    meta: &FileMeta,
    all_read: bool,
    report: &mut CheckReport,
) {
    let props = table.props();
    if props.smallest != meta.smallest || props.largest != meta.largest {
        report.damaged(
            name,
            "the table's key range differs from the one the version records".into(),
            Some(KeyRange::of_file(meta)),
        );
    }
    if all_read && props.entries != meta.entries {
        report.damaged(
            name,
            format!(
                "the table holds {} entries, the version says {}",
                props.entries, meta.entries
            ),
            Some(KeyRange::of_file(meta)),
        );
    }
}

/// Opens blob file `name` and reads every record (checksums, lengths); its footer must
/// agree with what the version records of it (`meta`).
fn check_blob_file(
    fs: &dyn FileSystem,
    name: &str,
    number: u64,
    meta: Option<&BlobFileMeta>,
    report: &mut CheckReport,
) {
    let read = fs
        .open(name)
        .map_err(|e| Error::fs(format!("open blob file '{name}'"), e))
        .and_then(|file| {
            report.blob_files += 1;
            report.blob_bytes += file.size();
            BlobFileReader::open(Arc::new(file) as Arc<dyn RandomAccess>, number)
        })
        .and_then(|reader| Ok((reader.summary(), reader.records()?.len() as u64)));
    match read {
        Ok((summary, count)) => {
            report.blobs += count;
            let found = (summary.blob_count, summary.blob_bytes, summary.file_size);
            if let Some(m) = meta.filter(|m| (m.total_count, m.total_bytes, m.file_size) != found) {
                let what = format!(
                    "the file holds {} blobs of {} bytes in {} bytes, the version says {} \
                     blobs of {} bytes in {} bytes",
                    found.0, found.1, found.2, m.total_count, m.total_bytes, m.file_size
                );
                report.damaged(name, what, None);
            }
        }
        Err(e) => report.damaged(
            name,
            format!("{e}: the values the file holds may be lost"),
            None,
        ),
    }
}

/// Reads and decodes WAL `name`: every bad spot and every intact record that is not a
/// write batch is damage. `None` if it cannot be read at all.
fn check_wal(fs: &dyn FileSystem, name: &str, report: &mut CheckReport) -> Option<LogContents> {
    let data = match fs.open(name).and_then(|r| r.read_all()) {
        Ok(data) => data,
        Err(e) => {
            report.damaged(name, format!("cannot be read: {e}"), None);
            return None;
        }
    };
    report.wals += 1;
    report.wal_bytes += data.len() as u64;
    let contents = read_log(&data);
    for spot in &contents.bad {
        report.damaged(name, format!("{spot}: the writes in it are lost"), None);
    }
    for record in &contents.records {
        report.wal_records += 1;
        if let Err(e) = WriteBatch::from_data(record.payload.clone()) {
            let what = format!(
                "the record at offset {} is not a write batch: {e}",
                record.offset
            );
            report.damaged(name, what, None);
        }
    }
    Some(contents)
}
