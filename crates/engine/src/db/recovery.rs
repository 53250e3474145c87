//! Open: create or recover the version set, delete files no version needs, replay the WALs
//! into memtables and flush them to L0 (RocksDB's default), start a new WAL.
//!
//! Recovery comes in two steps. The first only reads: recover the version set, find the
//! WALs to replay (and the files no version needs) and replay the WALs' records into
//! memtables. A read-only open ([`recover_read_only`]) stops there and keeps the memtables.
//! A read-write open ([`recover`]) runs the same step with the writes around it: it may
//! create the version set, deletes the obsolete files, writes each memtable to L0 as it
//! fills (and the last one at the end), logs the edit that adds those tables and moves the
//! log number to a new WAL, creates that WAL and deletes the replayed ones.
//!
//! WAL replay follows RocksDB's point-in-time recovery: records are replayed in WAL order
//! up to the first torn tail. A torn tail (a record cut by a crash) ends the replay and is
//! reported in [`RecoveryReport::truncated`]; it may only be in the last WAL that holds
//! records, since a WAL is closed (synced) before the next one starts. Damage before a
//! tail, a torn tail followed by more records, or a record that is not a valid batch is
//! `Error::Corruption`.

use std::collections::HashSet;
use std::sync::Arc;

use zonefs::fs::ZoneFs;
use zonefs::meta::FileKind;

use crate::batch::WriteBatch;
use crate::key::SeqNo;
use crate::log::{read_log, LogContents, LogTail, LogWriter};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::sst::TableOptions;
use crate::version::{VersionEdit, VersionSet, DEFAULT_MAX_MANIFEST_BYTES};
use crate::{Error, Result};

use zonefs::placement::Neighbors;

use crate::compaction::JobOutput;
use crate::sst::BuiltTable;
use crate::version::FileMeta;

use super::compact::FsZones;
use super::files::{delete_file, parse_file_name, wal_file_name, wal_hint, write_table, DbFile};
use super::flush::build_l0;
use super::hints::{table_neighbors, HintScope};
use super::inner::Writer;

/// What open found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The database was created by this open.
    pub created: bool,
    /// WALs replayed, in order.
    pub wals: Vec<u64>,
    /// Bytes of the WALs replayed (their file sizes).
    pub wal_bytes: u64,
    /// Batches replayed.
    pub batches: u64,
    /// Operations (puts and deletions) in them.
    pub operations: u64,
    /// A torn WAL tail that ended the replay: (WAL name, offset of the ignored bytes, why).
    pub truncated: Option<(String, u64, String)>,
    /// L0 tables written from the replayed writes (none for a read-only open, which keeps
    /// them in its memtable).
    pub tables: u64,
    /// The flushes that wrote them (counted in the database's statistics as flushes).
    pub flushes: Vec<JobOutput>,
    /// Files deleted because no version needs them (old WALs, SSTs of interrupted jobs,
    /// temporary files). A read-only open deletes nothing.
    pub deleted: Vec<String>,
}

/// The recovered parts a database starts from.
pub(crate) struct Recovered {
    pub versions: VersionSet,
    pub writer: Writer,
    pub last_seq: SeqNo,
    /// Read-only open: the replayed writes, which stay in memory (`None` after a
    /// read-write open, which flushed them to L0).
    pub mem: Option<Arc<Memtable>>,
    pub report: RecoveryReport,
}

/// What the reading step found: the version set (file numbers found marked used), the
/// WALs' contents in order, and the files no version needs.
struct Found {
    versions: VersionSet,
    logs: Vec<(u64, LogContents)>,
    obsolete: Vec<String>,
}

/// Creates or recovers the database on `fs`: the reading step, then the writes (obsolete
/// files deleted, replayed memtables flushed to L0, the edit logged, a new WAL started,
/// the replayed WALs deleted).
pub(crate) fn recover(fs: &Arc<ZoneFs>, options: &Options) -> Result<Recovered> {
    let mut report = RecoveryReport::default();
    let mut vs = open_versions(fs, options, true, &mut report)?;
    vs.set_max_manifest_bytes(manifest_limit(fs));
    let Found {
        versions: mut vs,
        logs,
        obsolete,
    } = find(fs, vs, &mut report)?;
    for name in obsolete {
        delete_file(fs, &name)?;
        report.deleted.push(name);
    }
    let mut l0 = RecoveryFlush {
        fs,
        options,
        table: TableOptions::from(options),
        written: Vec::new(),
    };
    let start = vs.last_sequence();
    let mut flush_full =
        |mem: &Arc<Memtable>, report: &mut RecoveryReport| l0.flush(mem, &mut vs, report);
    let (last_seq, mem) = replay(options, logs, start, Some(&mut flush_full), &mut report)?;
    if !mem.is_empty() {
        l0.flush(&mem, &mut vs, &mut report)?;
    }
    let mut edit = VersionEdit::new();
    for meta in l0.written {
        edit.add_file(0, meta);
    }
    let wal = vs.new_file_number();
    edit.log_number = Some(wal);
    vs.set_last_sequence(last_seq);
    vs.log_and_apply(edit)?;
    let name = wal_file_name(wal);
    let file = fs
        .create(&name, FileKind::Wal, wal_hint())
        .map_err(|e| Error::fs(format!("create WAL '{name}'"), e))?;
    for n in &report.wals {
        let name = wal_file_name(*n);
        delete_file(fs, &name)?;
        report.deleted.push(name);
    }
    Ok(Recovered {
        versions: vs,
        writer: Writer::new(Some(LogWriter::new(file)), wal),
        last_seq,
        mem: None,
        report,
    })
}

/// Recovers the database on `fs` without writing anything: the reading step only. The
/// replayed writes stay in one memtable (none is cut at `write_buffer_size`: nothing would
/// flush it), the WALs and obsolete files stay, no WAL is started (the writer has none).
/// Works on a read-only mount.
pub(crate) fn recover_read_only(fs: &Arc<ZoneFs>, options: &Options) -> Result<Recovered> {
    let mut report = RecoveryReport::default();
    let vs = open_versions(fs, options, false, &mut report)?;
    let Found {
        versions: mut vs,
        logs,
        obsolete: _,
    } = find(fs, vs, &mut report)?;
    let (last_seq, mem) = replay(options, logs, vs.last_sequence(), None, &mut report)?;
    vs.set_last_sequence(last_seq);
    let log_number = vs.log_number();
    Ok(Recovered {
        versions: vs,
        writer: Writer::new(None, log_number),
        last_seq,
        mem: Some(mem),
        report,
    })
}

/// The reading step after the version set: sorts the files and reads the WALs to replay.
fn find(fs: &ZoneFs, mut vs: VersionSet, report: &mut RecoveryReport) -> Result<Found> {
    let (wals, obsolete) = sort_files(fs, &mut vs);
    let logs = read_wals(fs, &wals, report)?;
    Ok(Found {
        versions: vs,
        logs,
        obsolete,
    })
}

/// The manifest size at which a new manifest starts. The manifest's writer stays open,
/// every sync puts its record in a new block of whatever zone placement picks, and the zone
/// cleaner never takes a zone holding extents of an open writer: a long manifest would keep
/// more and more zones from being cleaned. Rolling it once it reaches 1/16 of a zone (and
/// at most the version set's default) bounds that, at the cost of a snapshot record per
/// roll.
fn manifest_limit(fs: &ZoneFs) -> u64 {
    let zone = fs.device().geometry().zone_capacity;
    DEFAULT_MAX_MANIFEST_BYTES.min(zone / 16).max(4096)
}

fn open_versions(
    fs: &Arc<ZoneFs>,
    options: &Options,
    may_create: bool,
    report: &mut RecoveryReport,
) -> Result<VersionSet> {
    if VersionSet::exists(fs) {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(
                "a database exists on this file system and error_if_exists is set".into(),
            ));
        }
        return VersionSet::recover(Arc::clone(fs), options);
    }
    if !may_create {
        return Err(Error::InvalidArgument(
            "no database on this file system (a read-only open cannot create one)".into(),
        ));
    }
    if !options.create_if_missing {
        return Err(Error::InvalidArgument(
            "no database on this file system and create_if_missing is not set".into(),
        ));
    }
    report.created = true;
    VersionSet::create(Arc::clone(fs), options)
}

/// Sorts the files: returns the WALs to replay (numbered ≥ the log number), in order, and
/// the files no version needs (SSTs the version does not hold, temporary files, WALs below
/// the log number). Keeps every number found from being handed out again.
fn sort_files(fs: &ZoneFs, vs: &mut VersionSet) -> (Vec<u64>, Vec<String>) {
    let version = vs.current();
    let live: HashSet<u64> = version.all_files().map(|(_, f)| f.number).collect();
    let mut wals = Vec::new();
    let mut obsolete = Vec::new();
    for f in fs.list() {
        let unneeded = match parse_file_name(&f.name) {
            DbFile::Sst(n) => {
                vs.mark_file_number_used(n);
                !live.contains(&n)
            }
            DbFile::Wal(n) => {
                vs.mark_file_number_used(n);
                let replay = n >= vs.log_number();
                if replay {
                    wals.push(n);
                }
                !replay
            }
            DbFile::Temp => true,
            DbFile::Other => false,
        };
        if unneeded {
            obsolete.push(f.name);
        }
    }
    wals.sort_unstable();
    (wals, obsolete)
}

fn read_wals(
    fs: &ZoneFs,
    wals: &[u64],
    report: &mut RecoveryReport,
) -> Result<Vec<(u64, LogContents)>> {
    let mut logs = Vec::with_capacity(wals.len());
    for &n in wals {
        let name = wal_file_name(n);
        let data = fs
            .open(&name)
            .and_then(|r| r.read_all())
            .map_err(|e| Error::fs(format!("read WAL '{name}'"), e))?;
        report.wal_bytes += data.len() as u64;
        logs.push((n, read_log(&data, &name)?));
    }
    // Point in time: nothing after a torn tail may be replayed, and a later WAL with
    // records means the tail was not torn by a crash.
    let torn = logs
        .iter()
        .position(|(_, c)| matches!(c.tail, LogTail::Truncated { .. }));
    if let Some(i) = torn {
        let name = wal_file_name(logs[i].0);
        let later = logs[i + 1..].iter().any(|(_, c)| !c.records.is_empty());
        if let LogTail::Truncated { offset, reason } = &logs[i].1.tail {
            if later {
                return Err(Error::corruption(
                    format!("WAL '{name}'"),
                    format!("damaged at offset {offset} ({reason}) but later WALs hold records"),
                ));
            }
            report.truncated = Some((name, *offset, reason.clone()));
        }
    }
    report.wals = wals.to_vec();
    Ok(logs)
}

/// What replay does with a memtable that reached `write_buffer_size` (replay then goes on
/// in a new one). Without it, replay keeps every record in one memtable.
type OnFull<'a> = Option<&'a mut dyn FnMut(&Arc<Memtable>, &mut RecoveryReport) -> Result<()>>;

/// Replays the WAL records into memtables, handing each full one to `on_full`; returns
/// the last sequence number (`start` if no record is newer) and the last memtable.
fn replay(
    options: &Options,
    logs: Vec<(u64, LogContents)>,
    start: SeqNo,
    mut on_full: OnFull<'_>,
    report: &mut RecoveryReport,
) -> Result<(SeqNo, Arc<Memtable>)> {
    let mut last = start;
    let mut mem = Arc::new(Memtable::new());
    for (n, contents) in logs {
        for record in contents.records {
            let batch = WriteBatch::from_data(record).map_err(|e| in_wal(e, n))?;
            let seq = batch.sequence();
            for (i, op) in batch.ops().enumerate() {
                mem.add(seq + i as u64, op.kind, op.key, op.value);
            }
            if batch.count() > 0 {
                last = last.max(seq + u64::from(batch.count()) - 1);
            }
            report.batches += 1;
            report.operations += u64::from(batch.count());
            if let Some(full) = on_full.as_mut() {
                if mem.approximate_memory_usage() >= options.write_buffer_size {
                    full(&mem, report)?;
                    mem = Arc::new(Memtable::new());
                }
            }
        }
    }
    Ok((last, mem))
}

/// Writes replayed memtables to L0 (before the database exists, so with the recovered
/// version as the hints' neighbourhood).
struct RecoveryFlush<'a> {
    fs: &'a ZoneFs,
    options: &'a Options,
    table: TableOptions,
    /// Tables written so far, in order.
    written: Vec<FileMeta>,
}

impl RecoveryFlush<'_> {
    fn flush(
        &mut self,
        mem: &Arc<Memtable>,
        vs: &mut VersionSet,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        let (Some(built), job) = build_l0(std::slice::from_ref(mem), &[], self.table)? else {
            return Ok(());
        };
        let neighbors = self.neighbors(vs, &built);
        let meta = write_table(self.fs, vs.new_file_number(), 0, &built, neighbors)?;
        report.tables += 1;
        report.flushes.push(JobOutput {
            bytes_written: meta.size,
            files_written: 1,
            records_in: job.input_entries,
            records_dropped: job.input_entries.saturating_sub(job.output_entries),
            micros: 0,
        });
        self.written.push(meta);
        Ok(())
    }

    fn neighbors(&self, vs: &VersionSet, built: &BuiltTable) -> Option<Neighbors> {
        if !self.fs.placement_wants_neighbors() {
            return None;
        }
        let none = HashSet::new();
        let scope = HintScope {
            version: &vs.current(),
            options: self.options,
            compacting: &none,
            job_inputs: &none,
            job_outputs: &self.written,
            zones: &FsZones(self.fs),
        };
        Some(table_neighbors(&scope, 0, built))
    }
}

fn in_wal(e: Error, number: u64) -> Error {
    match e {
        Error::Corruption { what, detail } => Error::corruption(
            format!("WAL '{}'", wal_file_name(number)),
            format!("{what}: {detail}"),
        ),
        other => other,
    }
}
