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
//! # WAL replay and the recovery mode
//!
//! The WALs are decoded by [`read_log`], which returns every intact record and describes
//! every bad spot (offset, length, defect) without judging it. The records are replayed in
//! WAL order; what happens at a bad spot is [`Options::wal_recovery_mode`]'s choice
//! ([`WalRecoveryMode`], RocksDB's four modes):
//!
//! - `AbsoluteConsistency` (zkv's default): any bad spot is `Error::Corruption` naming the
//!   WAL and the offset;
//! - `TolerateCorruptedTailRecords`: damage that no valid record follows (in its WAL or a
//!   later one) ends the replay; other bad spots are corruption;
//! - `PointInTime` (RocksDB's default): replay stops at the first damage; the rest of that
//!   WAL and every later WAL are ignored;
//! - `SkipAnyCorruptedRecords`: every bad spot is skipped and replay goes on.
//!
//! An intact record that cannot be replayed — an unknown record type, a payload that is
//! not a valid write batch — is corruption in every mode but `SkipAnyCorruptedRecords`,
//! which skips it: it is not damage a mode could explain away, and RocksDB's default would
//! otherwise drop data a newer build wrote.
//!
//! Nothing is dropped silently: every region not replayed (WAL name, offset, bytes,
//! intact records in it, why) is listed in [`RecoveryReport::dropped`].
//!
//! Why the default is not RocksDB's: RocksDB's WALs can end in a record torn by a crash,
//! which point-in-time recovery cuts off. zkv's file layer never exposes a torn record (a
//! file's visible content is exactly the bytes of its last sync, see [`crate::log`],
//! "Durability"), so every record recovery reads was synced, and a bad one is damage:
//! dropping it would lose an acknowledged write. A WAL is also never appended to after
//! recovery (a read-write open starts a new one and deletes the replayed ones), so what a
//! tolerant mode dropped does not turn into damage before valid records at the next open.

use std::collections::HashSet;
use std::sync::Arc;

use crate::fs::FileSystem;
use zkv_zonefs::meta::FileKind;

use crate::batch::WriteBatch;
use crate::key::SeqNo;
use crate::log::{read_log, BadSpot, LogContents, LogWriter};
use crate::memtable::{AddError, Memtable};
use crate::options::{Options, WalRecoveryMode};
use crate::sst::TableOptions;
use crate::version::{VersionEdit, VersionSet, DEFAULT_MAX_MANIFEST_BYTES};
use crate::{Error, Result};

use zkv_zonefs::placement::Neighbors;

use crate::compaction::job::KeepValues;
use crate::compaction::JobOutput;
use crate::sst::BuiltTable;
use crate::version::{FileMeta, Version};

use super::compact::FsZones;
use super::files::{
    delete_file, parse_file_name, wal_file_name, wal_hint, write_table, DbFile, SstExtras,
};
use super::flush::build_l0;
use super::hints::{table_neighbors, HintScope};
use super::inner::Writer;
use super::lifetimes::recovery_prediction;

/// What open found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The database was created by this open.
    pub created: bool,
    /// WALs read for replay, in order (a read-write open deletes them once their writes
    /// are in L0).
    pub wals: Vec<u64>,
    /// Bytes of those WALs (their file sizes).
    pub wal_bytes: u64,
    /// Batches replayed.
    pub batches: u64,
    /// Operations (puts and deletions) in them.
    pub operations: u64,
    /// The WAL regions that were not replayed, in WAL and offset order: bad records the
    /// WAL recovery mode skipped or stopped at, and what it ignored after them. Always
    /// empty with the default mode, which refuses to open instead.
    pub dropped: Vec<DroppedRegion>,
    /// L0 tables written from the replayed writes (none for a read-only open, which keeps
    /// them in its memtable).
    pub tables: u64,
    /// The flushes that wrote them (counted in the database's statistics as flushes).
    pub flushes: Vec<JobOutput>,
    /// Files deleted because no version needs them (old WALs, SSTs of interrupted jobs,
    /// temporary files). A read-only open deletes nothing.
    pub deleted: Vec<String>,
}

/// A region of a WAL that recovery did not replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedRegion {
    /// The WAL's file name.
    pub wal: String,
    /// Where the region starts in the WAL.
    pub offset: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Intact records in it that were not replayed (a damaged record cannot be read and
    /// is not counted).
    pub records: u64,
    /// Why it was not replayed.
    pub reason: String,
}

impl std::fmt::Display for DroppedRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WAL '{}': {} bytes from offset {} ({} intact records) not replayed: {}",
            self.wal, self.bytes, self.offset, self.records, self.reason
        )
    }
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
/// batches to replay in order, and the files no version needs.
struct Found {
    versions: VersionSet,
    batches: Vec<WriteBatch>,
    obsolete: Vec<String>,
}

/// Creates or recovers the database on `fs`: the reading step, then the writes (obsolete
/// files deleted, replayed memtables flushed to L0, the edit logged, a new WAL started,
/// the replayed WALs deleted).
pub(crate) fn recover(fs: &Arc<dyn FileSystem>, options: &Options) -> Result<Recovered> {
    let mut report = RecoveryReport::default();
    let mut vs = open_versions(fs, options, true, &mut report)?;
    vs.set_max_manifest_bytes(manifest_limit(fs));
    vs.track_lifetimes(crate::fs::wants_lifetimes(fs));
    let Found {
        versions: mut vs,
        batches,
        obsolete,
    } = find(fs, vs, options, &mut report)?;
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
    let (last_seq, mem) = replay(options, batches, start, Some(&mut flush_full), &mut report)?;
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
        writer: Writer::new(Some(LogWriter::new(file)), wal, options.mode),
        last_seq,
        mem: None,
        report,
    })
}

/// Recovers the database on `fs` without writing anything: the reading step only. The
/// replayed writes stay in one memtable (none is cut at `write_buffer_size`: nothing would
/// flush it), the WALs and obsolete files stay, no WAL is started (the writer has none).
/// Works on a read-only mount.
pub(crate) fn recover_read_only(fs: &Arc<dyn FileSystem>, options: &Options) -> Result<Recovered> {
    let mut report = RecoveryReport::default();
    let vs = open_versions(fs, options, false, &mut report)?;
    let Found {
        versions: mut vs,
        batches,
        obsolete: _,
    } = find(fs, vs, options, &mut report)?;
    let (last_seq, mem) = replay(options, batches, vs.last_sequence(), None, &mut report)?;
    vs.set_last_sequence(last_seq);
    let log_number = vs.log_number();
    Ok(Recovered {
        versions: vs,
        writer: Writer::new(None, log_number, options.mode),
        last_seq,
        mem: Some(mem),
        report,
    })
}

/// The reading step after the version set: sorts the files, reads the WALs to replay and
/// picks their batches as the WAL recovery mode says.
fn find(
    fs: &dyn FileSystem,
    mut vs: VersionSet,
    options: &Options,
    report: &mut RecoveryReport,
) -> Result<Found> {
    let (wals, obsolete) = sort_files(fs, &mut vs)?;
    let logs = read_wals(fs, &wals, report)?;
    let Selected { batches, dropped } = select(logs, options.wal_recovery_mode)?;
    report.dropped = dropped;
    Ok(Found {
        versions: vs,
        batches,
        obsolete,
    })
}

/// The manifest size at which a new manifest starts. The manifest's writer stays open,
/// every sync puts its record in a new block of whatever zone placement picks, and the zone
/// cleaner never takes a zone holding extents of an open writer: a long manifest would keep
/// more and more zones from being cleaned. Rolling it once it reaches 1/16 of a zone (and
/// at most the version set's default) bounds that, at the cost of a snapshot record per
/// roll. A directory has no zones to keep from cleaning: the version set's default.
fn manifest_limit(fs: &dyn FileSystem) -> u64 {
    let Some(zoned) = fs.zoned() else {
        return DEFAULT_MAX_MANIFEST_BYTES;
    };
    let zone = zoned.device().geometry().zone_capacity;
    DEFAULT_MAX_MANIFEST_BYTES.min(zone / 16).max(4096)
}

fn open_versions(
    fs: &Arc<dyn FileSystem>,
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
fn sort_files(fs: &dyn FileSystem, vs: &mut VersionSet) -> Result<(Vec<u64>, Vec<String>)> {
    let version = vs.current();
    let live: HashSet<u64> = version.all_files().map(|(_, f)| f.number).collect();
    let mut wals = Vec::new();
    let mut obsolete = Vec::new();
    for name in fs.list().map_err(|e| Error::fs("list the files", e))? {
        let unneeded = match parse_file_name(&name) {
            DbFile::Sst(n) => {
                vs.mark_file_number_used(n);
                !live.contains(&n)
            }
            DbFile::Blob(n) => {
                vs.mark_file_number_used(n);
                version.blob_file(n).is_none()
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
            obsolete.push(name);
        }
    }
    wals.sort_unstable();
    Ok((wals, obsolete))
}

/// One WAL, decoded.
pub(super) struct Wal {
    pub name: String,
    pub contents: LogContents,
}

fn read_wals(fs: &dyn FileSystem, wals: &[u64], report: &mut RecoveryReport) -> Result<Vec<Wal>> {
    let mut logs = Vec::with_capacity(wals.len());
    for &n in wals {
        let name = wal_file_name(n);
        let data = fs
            .open(&name)
            .and_then(|r| r.read_all())
            .map_err(|e| Error::fs(format!("read WAL '{name}'"), e))?;
        report.wal_bytes += data.len() as u64;
        let contents = read_log(&data);
        logs.push(Wal { name, contents });
    }
    report.wals = wals.to_vec();
    Ok(logs)
}

/// The batches to replay, in order, and the regions left out.
#[derive(Debug, Default)]
pub(super) struct Selected {
    pub batches: Vec<WriteBatch>,
    pub dropped: Vec<DroppedRegion>,
}

/// What the recovery mode does with one bad spot.
enum Verdict {
    /// Refuse to open.
    Fail(&'static str),
    /// Leave the spot out and go on.
    Skip(&'static str),
    /// Stop the replay here (point in time).
    Stop,
}

fn verdict(mode: WalRecoveryMode, spot: &BadSpot, nothing_valid_after: bool) -> Verdict {
    use WalRecoveryMode::*;
    if !spot.defect.is_damage() && mode != SkipAnyCorruptedRecords {
        return Verdict::Fail(UNREPLAYABLE);
    }
    match mode {
        AbsoluteConsistency => Verdict::Fail(ABSOLUTE),
        TolerateCorruptedTailRecords if nothing_valid_after => Verdict::Skip(TAIL_IGNORED),
        TolerateCorruptedTailRecords => Verdict::Fail(NOT_A_TAIL),
        PointInTime => Verdict::Stop,
        SkipAnyCorruptedRecords => Verdict::Skip(SKIPPED),
    }
}

const ABSOLUTE: &str = "wal_recovery_mode absolute-consistency accepts no bad record (a \
    tolerant mode opens the database without the damaged writes)";

const TAIL_IGNORED: &str =
    "damage at the tail of the WALs, ignored by wal_recovery_mode tolerate-corrupted-tail-records";

const NOT_A_TAIL: &str = "a valid record follows (in this WAL or a later one), and \
    wal_recovery_mode tolerate-corrupted-tail-records accepts damage only at the tail";

const SKIPPED: &str = "skipped by wal_recovery_mode skip-any-corrupted-records";

/// Why an intact record that cannot be replayed is refused.
const UNREPLAYABLE: &str = "an intact record that cannot be replayed is corruption in every \
    wal_recovery_mode but skip-any-corrupted-records";

/// Applies the WAL recovery mode to the decoded WALs (see the module documentation):
/// the batches to replay, or `Error::Corruption` naming the WAL and the offset.
pub(super) fn select(wals: Vec<Wal>, mode: WalRecoveryMode) -> Result<Selected> {
    let last_with_records = wals.iter().rposition(|w| !w.contents.records.is_empty());
    let mut out = Selected::default();
    // Point in time: where the replay stopped (WAL name, offset).
    let mut stopped: Option<(String, u64)> = None;
    for (i, Wal { name, contents }) in wals.into_iter().enumerate() {
        if let Some((at_wal, at)) = &stopped {
            if contents.len > 0 {
                out.dropped.push(DroppedRegion {
                    wal: name,
                    offset: 0,
                    bytes: contents.len,
                    records: contents.records.len() as u64,
                    reason: format!(
                        "after the damage in WAL '{at_wal}' at offset {at}, where \
                         wal_recovery_mode point-in-time stopped the replay"
                    ),
                });
            }
            continue;
        }
        let mut dropped = Vec::new();
        let mut cut = contents.len;
        for spot in &contents.bad {
            let later_records = last_with_records.is_some_and(|l| l > i);
            let nothing_valid_after = contents.is_tail(spot) && !later_records;
            match verdict(mode, spot, nothing_valid_after) {
                Verdict::Fail(why) => {
                    return Err(Error::corruption(
                        format!("WAL '{name}'"),
                        format!("{spot}; {why}"),
                    ));
                }
                Verdict::Skip(why) => dropped.push(DroppedRegion {
                    wal: name.clone(),
                    offset: spot.offset,
                    bytes: spot.len,
                    records: u64::from(!spot.defect.is_damage()),
                    reason: format!("{spot}; {why}"),
                }),
                Verdict::Stop => {
                    let after = contents.records.iter().filter(|r| r.offset > spot.offset);
                    dropped.push(DroppedRegion {
                        wal: name.clone(),
                        offset: spot.offset,
                        bytes: contents.len - spot.offset,
                        records: after.count() as u64,
                        reason: format!(
                            "{spot}; wal_recovery_mode point-in-time stopped the replay \
                             here, ignoring the rest of the WAL and every later WAL"
                        ),
                    });
                    stopped = Some((name.clone(), spot.offset));
                    cut = spot.offset;
                    break;
                }
            }
        }
        for record in contents.records.into_iter().take_while(|r| r.offset < cut) {
            let (offset, bytes) = (record.offset, record.encoded_len());
            match WriteBatch::from_data(record.payload) {
                Ok(batch) => out.batches.push(batch),
                Err(e) if mode == WalRecoveryMode::SkipAnyCorruptedRecords => {
                    let e = batch_error(&e);
                    dropped.push(DroppedRegion {
                        wal: name.clone(),
                        offset,
                        bytes,
                        records: 1,
                        reason: format!(
                            "intact record that is not a valid write batch ({e}); skipped by \
                             wal_recovery_mode skip-any-corrupted-records"
                        ),
                    });
                }
                Err(e) => {
                    let e = batch_error(&e);
                    return Err(Error::corruption(
                        format!("WAL '{name}'"),
                        format!(
                            "the record at offset {offset} is not a valid write batch ({e}); \
                             {UNREPLAYABLE}"
                        ),
                    ));
                }
            }
        }
        dropped.sort_by_key(|d| d.offset);
        out.dropped.extend(dropped);
    }
    Ok(out)
}

/// What replay does with a memtable that reached `write_buffer_size` (replay then goes on
/// in a new one). Without it, replay keeps every record in one memtable.
pub(super) type OnFull<'a> =
    Option<&'a mut dyn FnMut(&Arc<Memtable>, &mut RecoveryReport) -> Result<()>>;

/// Replays the batches into memtables, handing each full one to `on_full`; returns the
/// last sequence number (`start` if no batch is newer) and the last memtable.
pub(super) fn replay(
    options: &Options,
    batches: Vec<WriteBatch>,
    start: SeqNo,
    mut on_full: OnFull<'_>,
    report: &mut RecoveryReport,
) -> Result<(SeqNo, Arc<Memtable>)> {
    let mut last = start;
    let mut mem = Arc::new(Memtable::with_write_buffer_size(options.write_buffer_size));
    for batch in batches {
        let seq = batch.sequence();
        for (i, op) in batch.ops().enumerate() {
            match mem.try_add(seq + i as u64, op.kind, op.key, op.value) {
                Ok(()) => {}
                // Two logged operations with one key and number: damage, not a write.
                Err(AddError::Exists) => {
                    return Err(Error::corruption(
                        "the WAL",
                        format!(
                            "sequence number {} of a key is logged twice",
                            seq + i as u64
                        ),
                    ))
                }
                // Writes refuse such keys: damage too.
                Err(AddError::Full) => {
                    return Err(Error::corruption(
                        "the WAL",
                        format!(
                        "sequence number {} has a key of {} bytes, longer than a memtable takes",
                        seq + i as u64,
                        op.key.len()
                    ),
                    ))
                }
            }
        }
        if batch.count() > 0 {
            last = last.max(seq + u64::from(batch.count()) - 1);
        }
        report.batches += 1;
        report.operations += u64::from(batch.count());
        if let Some(full) = on_full.as_mut() {
            if mem.is_full() {
                full(&mem, report)?;
                mem = Arc::new(Memtable::with_write_buffer_size(options.write_buffer_size));
            }
        }
    }
    Ok((last, mem))
}

/// Writes replayed memtables to L0 (before the database exists, so with the recovered
/// version as the hints' neighbourhood).
struct RecoveryFlush<'a> {
    fs: &'a dyn FileSystem,
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
        let (Some(built), job) =
            build_l0(std::slice::from_ref(mem), &[], self.table, &mut KeepValues)?
        else {
            return Ok(());
        };
        let extras = self.extras(vs, &built);
        let meta = write_table(self.fs, vs.new_file_number(), 0, built, extras)?;
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

    fn extras(&self, vs: &VersionSet, built: &BuiltTable) -> SstExtras {
        let version = vs.current();
        let predicted = recovery_prediction(
            self.fs,
            self.options,
            &version,
            vs.clock(),
            built,
            &self.written,
        );
        let (lifetime, death) = predicted.unzip();
        SstExtras {
            neighbors: self.neighbors(&version, built),
            lifetime,
            death,
        }
    }

    fn neighbors(&self, version: &Version, built: &BuiltTable) -> Option<Neighbors> {
        if !crate::fs::wants_neighbors(self.fs) {
            return None;
        }
        let none = HashSet::new();
        let scope = HintScope {
            version,
            options: self.options,
            compacting: &none,
            job_inputs: &none,
            job_outputs: &self.written,
            zones: &FsZones(self.fs),
        };
        Some(table_neighbors(&scope, 0, built))
    }
}

/// What is wrong with a record that is not a valid write batch.
fn batch_error(e: &Error) -> String {
    match e {
        Error::Corruption { detail, .. } => detail.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use WalRecoveryMode::*;

    /// An operation: (delete?, key, value).
    type Op = (bool, Vec<u8>, Vec<u8>);

    /// The WALs' logs, each of its batches' data as records; batches numbered in order.
    fn encode(wals: &[Vec<Vec<Op>>]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let (mut logs, mut all) = (Vec::new(), Vec::new());
        let mut seq = 1;
        for batches in wals {
            let mut log = LogWriter::new(Vec::new());
            for ops in batches {
                let mut b = WriteBatch::new();
                for (delete, k, v) in ops {
                    match delete {
                        true => b.delete(k),
                        false => b.put(k, v),
                    }
                }
                b.set_sequence(seq);
                seq += u64::from(b.count());
                log.add_record(b.data()).unwrap();
                all.push(b.data().to_vec());
            }
            logs.push(log.into_inner());
        }
        (logs, all)
    }

    fn decode(logs: &[Vec<u8>]) -> Vec<Wal> {
        let names = (10u64..).map(wal_file_name);
        logs.iter()
            .zip(names)
            .map(|(data, name)| Wal {
                name,
                contents: read_log(data),
            })
            .collect()
    }

    /// A key logged twice under one sequence number is damage: replay says so instead of
    /// keeping one of the two values.
    #[test]
    fn replay_refuses_an_operation_logged_twice() {
        let batch = |value: &[u8]| {
            let mut b = WriteBatch::new();
            b.put(b"k", value);
            b.set_sequence(7);
            b
        };
        let mut report = RecoveryReport::default();
        let once = replay(&Options::default(), vec![batch(b"a")], 0, None, &mut report);
        assert_eq!(once.map(|(last, _)| last).ok(), Some(7));
        let twice = vec![batch(b"a"), batch(b"b")];
        match replay(&Options::default(), twice, 0, None, &mut report) {
            Err(Error::Corruption { .. }) => {}
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a key logged twice under one number was replayed"),
        }
    }

    fn replayed(s: &Selected) -> Vec<Vec<u8>> {
        s.batches.iter().map(|b| b.data().to_vec()).collect()
    }

    fn wals_strategy() -> impl Strategy<Value = Vec<Vec<Vec<Op>>>> {
        let op = (
            any::<bool>(),
            prop::collection::vec(any::<u8>(), 0..8),
            prop::collection::vec(any::<u8>(), 0..300),
        );
        let batch = prop::collection::vec(op, 1..4);
        prop::collection::vec(prop::collection::vec(batch, 0..5), 1..4)
    }

    /// Flips one byte (xor `mask`) at the `at`-th byte of all the logs together; returns
    /// the WAL hit and the index (over all WALs) of the batch whose record holds it.
    fn flip(logs: &mut [Vec<u8>], at: prop::sample::Index, mask: u8) -> (usize, usize) {
        let total: usize = logs.iter().map(Vec::len).sum();
        let mut at = at.index(total);
        let mut before = 0;
        for (w, log) in logs.iter_mut().enumerate() {
            if at < log.len() {
                let contents = read_log(log);
                let hit = contents.records.iter().filter(|r| r.offset <= at as u64);
                let index = before + hit.count() - 1;
                log[at] ^= mask;
                return (w, index);
            }
            at -= log.len();
            before += read_log(log).records.len();
        }
        unreachable!("the index is within the logs")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn absolute_consistency_replays_every_record_or_fails(
            wals in wals_strategy(),
            at in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let (mut logs, all) = encode(&wals);
            prop_assume!(!all.is_empty());
            let (w, _) = flip(&mut logs, at, mask);
            match select(decode(&logs), AbsoluteConsistency) {
                Ok(s) => {
                    prop_assert!(replayed(&s) == all);
                    prop_assert!(s.dropped.is_empty());
                }
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(e.is_corruption(), "{}", msg);
                    prop_assert!(msg.contains(&wal_file_name(10 + w as u64)), "{}", msg);
                    prop_assert!(msg.contains("at offset"), "{}", msg);
                }
            }
        }

        #[test]
        fn the_other_modes_drop_the_damage_and_say_so(
            wals in wals_strategy(),
            at in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let (mut logs, all) = encode(&wals);
            prop_assume!(!all.is_empty());
            let (w, hit) = flip(&mut logs, at, mask);
            let name = wal_file_name(10 + w as u64);
            let total: u64 = logs.iter().map(|l| l.len() as u64).sum();

            let s = select(decode(&logs), PointInTime).unwrap();
            prop_assert!(replayed(&s)[..] == all[..hit]);
            prop_assert_eq!(&s.dropped[0].wal, &name);
            let dropped: u64 = s.dropped.iter().map(|d| d.bytes).sum();
            let kept: u64 = s.batches.iter().map(|b| b.data().len() as u64 + 13).sum();
            prop_assert_eq!(kept + dropped, total);
            let ignored: u64 = s.dropped.iter().map(|d| d.records).sum();
            prop_assert_eq!(ignored as usize, all.len() - hit - 1);

            let mut others = all.clone();
            others.remove(hit);
            let s = select(decode(&logs), SkipAnyCorruptedRecords).unwrap();
            prop_assert!(replayed(&s) == others);
            prop_assert_eq!(s.dropped.len(), 1);
            prop_assert_eq!((&s.dropped[0].wal, s.dropped[0].records), (&name, 0));
            prop_assert_eq!(s.dropped[0].bytes, all[hit].len() as u64 + 13);

            match select(decode(&logs), TolerateCorruptedTailRecords) {
                Ok(s) => {
                    prop_assert_eq!(hit + 1, all.len(), "only the last record may go");
                    prop_assert!(replayed(&s) == others);
                    prop_assert_eq!(s.dropped.len(), 1);
                }
                Err(e) => {
                    prop_assert!(hit + 1 < all.len(), "{}", e);
                    prop_assert!(e.is_corruption() && e.to_string().contains(&name), "{}", e);
                }
            }
        }
    }

    fn ops(key: &[u8]) -> Vec<Op> {
        vec![(false, key.to_vec(), b"value".to_vec())]
    }

    #[test]
    fn point_in_time_ignores_every_later_wal_and_reports_it() {
        let wals = [
            vec![ops(b"a"), ops(b"b")],
            vec![ops(b"c")],
            vec![],
            vec![ops(b"d")],
        ];
        let (mut logs, all) = encode(&wals);
        let second = logs[0].len() - 3;
        logs[0][second] ^= 1;
        let s = select(decode(&logs), PointInTime).unwrap();
        assert_eq!(replayed(&s), all[..1]);
        let regions: Vec<(&str, u64, u64, u64)> = s
            .dropped
            .iter()
            .map(|d| (d.wal.as_str(), d.offset, d.bytes, d.records))
            .collect();
        let first = all[0].len() as u64 + 13;
        assert_eq!(
            regions,
            [
                ("000010.log", first, logs[0].len() as u64 - first, 0),
                ("000011.log", 0, logs[1].len() as u64, 1),
                ("000013.log", 0, logs[3].len() as u64, 1),
            ]
        );
        assert!(s.dropped[0].reason.contains("checksum mismatch"));
        assert!(s.dropped[1].reason.contains("'000010.log' at offset"));
        let shown = s.dropped[0].to_string();
        assert!(shown.starts_with("WAL '000010.log': "), "{shown}");
    }

    #[test]
    fn tail_damage_before_records_in_a_later_wal_is_not_a_tail() {
        let (mut logs, _) = encode(&[vec![ops(b"a")], vec![ops(b"b")]]);
        let last = logs[0].len() - 1;
        logs[0][last] ^= 1;
        let err = select(decode(&logs), TolerateCorruptedTailRecords).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("'000010.log'") && msg.contains("later"),
            "{msg}"
        );
        // A later WAL with garbage only holds no valid record: still the tail.
        let (mut logs, all) = encode(&[vec![ops(b"a"), ops(b"b")], vec![]]);
        let last = logs[0].len() - 1;
        logs[0][last] ^= 1;
        logs[1] = vec![0xee; 40];
        let s = select(decode(&logs), TolerateCorruptedTailRecords).unwrap();
        assert_eq!(replayed(&s), all[..1]);
        let wals: Vec<&str> = s.dropped.iter().map(|d| d.wal.as_str()).collect();
        assert_eq!(wals, ["000010.log", "000011.log"]);
    }

    #[test]
    fn an_intact_record_that_is_not_a_batch_is_corruption_except_in_skip_any() {
        let (logs, all) = encode(&[vec![ops(b"a")]]);
        let mut log = LogWriter::new(logs[0].clone());
        log.add_record(b"not a batch").unwrap();
        let mut logs = vec![log.into_inner()];
        logs[0].extend(encode(&[vec![ops(b"b")]]).0.remove(0));
        for mode in [
            AbsoluteConsistency,
            TolerateCorruptedTailRecords,
            PointInTime,
        ] {
            let msg = select(decode(&logs), mode).unwrap_err().to_string();
            assert!(msg.contains("not a valid write batch"), "{mode}: {msg}");
            let offset = all[0].len() + 13;
            assert!(msg.contains(&format!("offset {offset}")), "{mode}: {msg}");
        }
        let s = select(decode(&logs), SkipAnyCorruptedRecords).unwrap();
        assert_eq!(s.batches.len(), 2);
        assert_eq!(s.dropped.len(), 1);
        assert_eq!((s.dropped[0].bytes, s.dropped[0].records), (11 + 13, 1));
    }
}
