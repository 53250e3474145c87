//! The version set: the current version, the file-number and sequence counters, the
//! manifest that logs every edit, and the CURRENT file that names the manifest.
//!
//! # Files
//!
//! - `MANIFEST-{number:06}`: a record log ([`crate::log`]) of [`VersionEdit`]s. Its first
//!   record is a snapshot of the whole state (every file, the counters, the compaction
//!   cursors); each later record is one edit.
//! - `CURRENT`: the name of the live manifest followed by a newline.
//!
//! # Replacing CURRENT atomically
//!
//! The file layer's `create_or_replace` drops the old file's content in the step that
//! creates the new, empty one, so a crash before the new content is synced would leave an
//! empty CURRENT. CURRENT is therefore written as `CURRENT.dbtmp` (created or replaced),
//! synced and closed, then renamed over `CURRENT`: a rename is atomic and durable when it
//! returns, so after any crash CURRENT names either the old or the new manifest, complete.
//!
//! # Writing
//!
//! [`VersionSet::log_and_apply`] checks the edit against the current version, appends it to
//! the manifest, syncs, and only then installs the new version. A new manifest is started
//! (snapshot + the edit, synced, CURRENT switched, the old manifest deleted) when there is
//! none yet (after recovery: a recovered manifest is never appended to), when the manifest
//! reached its size limit, or after a manifest write failed.
//!
//! After a failed `log_and_apply` the edit may or may not be durable: the in-memory
//! version stays as it was, and the next `log_and_apply` writes a new manifest from it,
//! which supersedes whatever the failed write left. Until then a crash may recover the
//! failed edit, so the caller must keep the files it added (RocksDB stops background work
//! on a manifest error for this reason).
//!
//! # Recovery
//!
//! CURRENT → manifest → replay. The manifest is read with absolute consistency, whatever
//! the WAL recovery mode: a bad record anywhere in it (a failed check, a log ending inside
//! a record, an unknown record type, an edit that does not decode or apply) is
//! `Error::Corruption` naming the manifest and the offset, as RocksDB refuses a corrupt
//! manifest; so is a CURRENT that is malformed or names a manifest that does not exist.
//! Dropping a bad last edit instead could lose a flushed SST whose WAL is already deleted.
//!
//! No legitimate torn tail can reach this reader. Every manifest write is records added to
//! a file writer, then a sync: the file layer shows a file as of its last acknowledged sync
//! (or of the sync in flight at a crash, never a mix), records reach the writer whole, and
//! a writer that failed an append or a sync is dropped, which discards its unsynced bytes.
//! A new manifest that crashed before its first sync is empty and not named by CURRENT
//! (CURRENT is switched only after the sync), so it is never read. A bad record is
//! therefore damage, not a write cut by a crash.
//!
//! Manifests CURRENT does not name (left by a crash during a switch) are deleted once the
//! next manifest is live.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::fs::{FileSystem, WritableFile};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, PlacementHint};

use crate::key::SeqNo;
use crate::lifetime::{Clock, LifetimeStats, Outcome};
use crate::log::{read_log, LogRecord, LogWriter};
use crate::options::Options;
use crate::{Error, Result};

use super::version::Builder;
use super::{BlobFileMeta, BlobGarbage, FileMeta, Version, VersionEdit};

/// Name of the file naming the live manifest.
pub const CURRENT: &str = "CURRENT";

/// The temporary file CURRENT is written to before it is renamed over CURRENT.
const CURRENT_TEMP: &str = "CURRENT.dbtmp";

/// A manifest larger than this is replaced by a new one at the next edit.
pub const DEFAULT_MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// A manifest with extents in more zones than this is rolled at the next edit. The file
/// layer never cleans a zone that holds extents of a file open for writing, and the
/// manifest stays open for as long as it is not rolled, its small appends landing in
/// whichever zone its class writes to: left alone, it ends up keeping a dozen zones of
/// otherwise dead data from the cleaner (a sustained-update run on a nearly full device
/// died of it).
pub const MAX_MANIFEST_ZONES: usize = 2;

const MANIFEST_PREFIX: &str = "MANIFEST-";

/// Name of manifest number `number`.
pub fn manifest_file_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// Name of WAL number `number`.
pub fn wal_file_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// The number of a manifest file name, if `name` is one.
pub(crate) fn parse_manifest_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(MANIFEST_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The live manifest being appended to.
struct Manifest {
    number: u64,
    log: LogWriter<Box<dyn WritableFile>>,
}

/// The current version and everything the manifest persists.
pub struct VersionSet {
    fs: Arc<dyn FileSystem>,
    current: Arc<Version>,
    next_file_number: u64,
    last_sequence: SeqNo,
    log_number: u64,
    cursors: Vec<Option<Vec<u8>>>,
    /// `None` until the first edit after recovery, and after a manifest write failed.
    manifest: Option<Manifest>,
    /// The manifest CURRENT names, as far as this set knows.
    manifest_number: u64,
    /// Manifests to delete once a newer one is live.
    stale: Vec<u64>,
    manifest_bytes: u64,
    max_manifest_bytes: u64,
    /// The lifetime clock and the predictions' outcomes, when the database predicts
    /// lifetimes (`None`: edits carry no clock).
    lifetimes: Option<Lifetimes>,
    /// The last clock the manifest holds (replayed), whether or not this run tracks it.
    replayed_clock: Option<Clock>,
    /// See [`VersionSet::set_time`].
    now_ns: u64,
}

/// The clock and the accuracy statistics of a database that predicts lifetimes.
#[derive(Clone, Debug, Default)]
struct Lifetimes {
    clock: Clock,
    stats: LifetimeStats,
    /// The clock's tick when tracking started (time 0 of the database's clock).
    start_tick: u64,
    /// Files created since: when (ns of the database's clock), and the mean ns of a tick
    /// then (Table I's seconds prediction). Not persisted: a reopen times only new files.
    born: HashMap<u64, (u64, f64)>,
}

impl Lifetimes {
    /// Books the files `edit` creates and the deaths, at `now` ns.
    fn time(&mut self, edit: &VersionEdit, outcomes: &[Outcome], now: u64) {
        let ticks = self.clock.tick.saturating_sub(self.start_tick);
        let ns_per_tick = if ticks == 0 {
            0.0
        } else {
            now as f64 / ticks as f64
        };
        let deleted: HashSet<u64> = edit.deleted_files.iter().map(|&(_, n)| n).collect();
        for (_, f) in &edit.new_files {
            // Before the clock has a rate (the tables recovery writes at open, at time 0)
            // a file has no prediction in seconds: it is not timed.
            if f.lifetime.is_some() && !deleted.contains(&f.number) && ns_per_tick > 0.0 {
                self.born.insert(f.number, (now, ns_per_tick));
            }
        }
        for o in outcomes {
            self.stats.add(o);
            if let Some((born, per_tick)) = self.born.remove(&o.number) {
                let real = now.saturating_sub(born) as f64 / 1e9;
                self.stats
                    .add_timed(real, o.file.lifetime as f64 * per_tick / 1e9);
            }
        }
    }
}

impl VersionSet {
    /// Creates an empty database: manifest 1 holding the initial state, and CURRENT.
    /// Refused if the file system already holds a database.
    pub fn create(fs: Arc<dyn FileSystem>, options: &Options) -> Result<VersionSet> {
        if VersionSet::exists(&fs) {
            return Err(Error::InvalidArgument(
                "a database already exists on this file system (CURRENT is present)".into(),
            ));
        }
        let mut set = VersionSet::empty(fs, options, 1);
        let number = set.new_file_number();
        set.roll_manifest(number, None)?;
        Ok(set)
    }

    /// Opens the database's state: reads CURRENT, replays the manifest it names.
    pub fn recover(fs: Arc<dyn FileSystem>, options: &Options) -> Result<VersionSet> {
        let (manifest, number) = read_current(&fs)?;
        let data = read_manifest(&fs, &manifest)?;
        let records = read_log(&data).require_intact(&manifest)?;
        let mut set = VersionSet::empty(fs, options, 0);
        set.manifest_number = number;
        set.replay(&manifest, &records)?;
        set.mark_file_number_used(number);
        for other in manifests_on(&set.fs)? {
            set.mark_file_number_used(other);
            if other != number {
                set.stale.push(other);
            }
        }
        Ok(set)
    }

    /// Whether the file system holds a database (a CURRENT file).
    pub fn exists(fs: &dyn FileSystem) -> bool {
        fs.exists(CURRENT)
    }

    fn empty(fs: Arc<dyn FileSystem>, options: &Options, next_file_number: u64) -> VersionSet {
        let levels = options.num_levels as usize;
        VersionSet {
            fs,
            current: Arc::new(Version::new(levels)),
            next_file_number,
            last_sequence: 0,
            log_number: 0,
            cursors: vec![None; levels],
            manifest: None,
            manifest_number: 0,
            stale: Vec::new(),
            manifest_bytes: 0,
            max_manifest_bytes: DEFAULT_MAX_MANIFEST_BYTES,
            lifetimes: None,
            replayed_clock: None,
            now_ns: 0,
        }
    }

    /// Applies every record of the manifest `what`; the counters must have been logged.
    fn replay(&mut self, what: &str, records: &[LogRecord]) -> Result<()> {
        let base = Version::new(self.current.num_levels());
        let mut builder = Builder::new(&base);
        let (mut next_file, mut last_seq) = (None, None);
        for (i, record) in records.iter().enumerate() {
            let at = |e: Error| in_record(e, what, i, record.offset);
            let edit = VersionEdit::decode(&record.payload).map_err(at)?;
            builder.apply(&edit).map_err(at)?;
            next_file = next_file.max(edit.next_file_number);
            last_seq = last_seq.max(edit.last_sequence);
            self.log_number = self.log_number.max(edit.log_number.unwrap_or(0));
            self.set_cursors(&edit);
            if edit.clock.is_some() {
                self.replayed_clock.clone_from(&edit.clock);
            }
        }
        let missing = |field: &str| Error::corruption(what, format!("no record holds the {field}"));
        self.next_file_number = next_file.ok_or_else(|| missing("next file number"))?;
        self.last_sequence = last_seq.ok_or_else(|| missing("last sequence"))?;
        let version = builder.finish().map_err(|e| match e {
            Error::Corruption {
                what: inner,
                detail,
            } => Error::corruption(
                what,
                format!("after {} records: {inner}: {detail}", records.len()),
            ),
            other => other,
        })?;
        let highest = version.all_files().map(|(_, f)| f.number).max();
        self.mark_file_number_used(highest.unwrap_or(0).max(self.log_number));
        self.current = Arc::new(version);
        Ok(())
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// Logs `edit` durably and installs the version it makes (RocksDB's `LogAndApply`).
    /// The set fills in the next file number and the last sequence (the larger of its own
    /// and the edit's). An edit the current version refuses is never logged. On `Err`
    /// nothing is installed, but the edit may be durable (see the module documentation).
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<()> {
        let full = |m: &Manifest| {
            m.log.bytes_written() >= self.max_manifest_bytes
                || self.fs.zoned().is_some_and(|z| {
                    z.zones_of(&manifest_file_name(m.number))
                        .is_ok_and(|zones| zones.len() > MAX_MANIFEST_ZONES)
                })
        };
        let roll = self.manifest.as_ref().is_none_or(full);
        let new_manifest = roll.then(|| self.new_file_number());
        if let Some(n) = edit.next_file_number {
            self.mark_file_number_used(n.saturating_sub(1));
        }
        let last_sequence = self.last_sequence.max(edit.last_sequence.unwrap_or(0));
        edit.next_file_number = Some(self.next_file_number);
        edit.last_sequence = Some(last_sequence);
        let mut lifetimes = self.lifetimes.clone();
        let outcomes = match &mut lifetimes {
            Some(l) => {
                let outcomes = l.clock.advance(&mut edit, &self.current);
                edit.clock = Some(l.clock.clone());
                outcomes
            }
            None => Vec::new(),
        };
        let version = self.current.apply(&edit)?;
        match new_manifest {
            Some(number) => self.roll_manifest(number, Some(&edit))?,
            None => self.append(&edit)?,
        }
        self.current = Arc::new(version);
        self.last_sequence = last_sequence;
        self.log_number = self.log_number.max(edit.log_number.unwrap_or(0));
        self.set_cursors(&edit);
        if let Some(mut l) = lifetimes {
            l.time(&edit, &outcomes, self.now_ns);
            self.lifetimes = Some(l);
        }
        Ok(())
    }

    /// Starts (or stops) keeping the lifetime clock: from the clock the manifest holds, or
    /// from zero. While on, every edit that ticks stores the clock.
    /// The clock never starts behind a live file's creation tick (a manifest written
    /// without the clock, e.g. by an older zkv, still holds the files' predictions).
    pub fn track_lifetimes(&mut self, on: bool) {
        let newest = self
            .current
            .all_files()
            .filter_map(|(_, f)| f.lifetime.map(|l| l.created))
            .max()
            .unwrap_or(0);
        self.lifetimes = on.then(|| {
            let mut clock = self.replayed_clock.clone().unwrap_or_default();
            clock.tick = clock.tick.max(newest);
            Lifetimes {
                start_tick: clock.tick,
                clock,
                ..Lifetimes::default()
            }
        });
    }

    /// The database's clock now, in ns since the open (virtual in deterministic mode): the
    /// time the next edits are installed at, for the lifetime statistics in seconds.
    pub fn set_time(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    /// The lifetime clock, if this set keeps it.
    pub fn clock(&self) -> Option<&Clock> {
        self.lifetimes.as_ref().map(|l| &l.clock)
    }

    /// Ticks since this set started keeping the clock.
    pub fn ticks_since_start(&self) -> Option<u64> {
        let l = self.lifetimes.as_ref()?;
        Some(l.clock.tick.saturating_sub(l.start_tick))
    }

    /// The accuracy of the predictions whose files died since the set was opened.
    pub fn lifetime_stats(&self) -> Option<&LifetimeStats> {
        self.lifetimes.as_ref().map(|l| &l.stats)
    }

    fn set_cursors(&mut self, edit: &VersionEdit) {
        for (level, key) in &edit.compact_cursors {
            if let Some(slot) = self.cursors.get_mut(*level as usize) {
                *slot = Some(key.clone());
            }
        }
    }

    /// Appends one edit to the live manifest and syncs it. A failure retires the manifest.
    fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        let Some(manifest) = self.manifest.as_mut() else {
            return Err(Error::NotWritable("no manifest is open".into()));
        };
        let before = manifest.log.bytes_written();
        let result = manifest
            .log
            .add_record(&edit.encode())
            .and_then(|()| manifest.log.sync());
        self.manifest_bytes += manifest.log.bytes_written() - before;
        if result.is_err() {
            self.manifest = None;
        }
        result
    }

    /// Writes manifest `number` (a snapshot of the current state, then `edit`), syncs it,
    /// points CURRENT at it, and deletes the manifests it replaces.
    fn roll_manifest(&mut self, number: u64, edit: Option<&VersionEdit>) -> Result<()> {
        let result = self.try_roll_manifest(number, edit);
        if result.is_err() {
            // CURRENT may name the old manifest or, if the rename went through after all,
            // the new one: neither is appended to again, the next edit starts another.
            self.manifest = None;
        }
        result
    }

    fn try_roll_manifest(&mut self, number: u64, edit: Option<&VersionEdit>) -> Result<()> {
        let name = manifest_file_name(number);
        // Until CURRENT names it, the new manifest is garbage whatever happens.
        self.stale.push(number);
        let hint = PlacementHint {
            kind: Some(FileKind::Manifest),
            lifetime: Lifetime::for_file(FileKind::Manifest, None, 1),
            ..PlacementHint::default()
        };
        let writer = self
            .fs
            .create_or_replace(&name, FileKind::Manifest, hint)
            .map_err(|e| Error::fs(format!("create manifest '{name}'"), e))?;
        let mut log = LogWriter::new(writer);
        let mut result = log.add_record(&self.snapshot().encode());
        if let Some(edit) = edit {
            result = result.and_then(|()| log.add_record(&edit.encode()));
        }
        result = result.and_then(|()| log.sync());
        self.manifest_bytes += log.bytes_written();
        result?;
        write_current(&self.fs, &name)?;
        self.stale.retain(|&n| n != number);
        self.stale.push(self.manifest_number);
        self.manifest = Some(Manifest { number, log });
        self.manifest_number = number;
        self.delete_stale();
        Ok(())
    }

    /// Deletes replaced manifests; one that cannot be deleted now is tried again later
    /// (its edits are all in the live manifest, so it is only wasted space).
    fn delete_stale(&mut self) {
        let live = self.manifest_number;
        let fs = Arc::clone(&self.fs);
        self.stale.sort_unstable();
        self.stale.dedup();
        self.stale.retain(|&n| {
            if n == live || n == 0 {
                return false;
            }
            let name = manifest_file_name(n);
            fs.delete(&name).is_err() && fs.exists(&name)
        });
    }

    /// One edit that rebuilds the whole state from nothing.
    fn snapshot(&self) -> VersionEdit {
        let cursors = self.cursors.iter().enumerate();
        VersionEdit {
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            new_files: self
                .current
                .all_files()
                .map(|(level, f)| (level as u32, FileMeta::clone(f)))
                .collect(),
            deleted_files: Vec::new(),
            compact_cursors: cursors
                .filter_map(|(level, c)| Some((level as u32, c.clone()?)))
                .collect(),
            // A run that does not track keeps the clock it replayed: the files keep their
            // predictions, and a later run that tracks must go on from where they were made.
            clock: self.clock().or(self.replayed_clock.as_ref()).cloned(),
            blob_files: self
                .current
                .blob_files()
                .map(|b| BlobFileMeta {
                    garbage_count: 0,
                    garbage_bytes: 0,
                    ..BlobFileMeta::clone(b)
                })
                .collect(),
            blob_garbage: self
                .current
                .blob_files()
                .filter(|b| b.garbage_count > 0)
                .map(|b| BlobGarbage {
                    number: b.number,
                    count: b.garbage_count,
                    bytes: b.garbage_bytes,
                })
                .collect(),
        }
    }

    /// Hands out a file number (persisted by the next `log_and_apply`).
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// The number the next `new_file_number` returns.
    pub fn next_file_number(&self) -> u64 {
        self.next_file_number
    }

    /// Makes sure `number` is never handed out (e.g. a WAL found at recovery that was
    /// created after the last edit was logged).
    pub fn mark_file_number_used(&mut self, number: u64) {
        self.next_file_number = self.next_file_number.max(number.saturating_add(1));
    }

    /// The last sequence number used.
    pub fn last_sequence(&self) -> SeqNo {
        self.last_sequence
    }

    /// Sets the last sequence number (logged with the next edit).
    pub fn set_last_sequence(&mut self, seq: SeqNo) {
        self.last_sequence = seq;
    }

    /// WALs numbered below this are obsolete.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// The round-robin compaction cursor of `level`.
    pub fn compact_cursor(&self, level: usize) -> Option<&[u8]> {
        self.cursors.get(level)?.as_deref()
    }

    /// Every level's round-robin compaction cursor.
    pub fn compact_cursors(&self) -> &[Option<Vec<u8>>] {
        &self.cursors
    }

    /// Bytes written to manifests by this set (snapshots and edits, with record headers).
    pub fn manifest_bytes(&self) -> u64 {
        self.manifest_bytes
    }

    /// The number of the manifest CURRENT names.
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Sets the size at which the manifest is replaced by a new one
    /// ([`DEFAULT_MAX_MANIFEST_BYTES`] by default).
    pub fn set_max_manifest_bytes(&mut self, bytes: u64) {
        self.max_manifest_bytes = bytes;
    }
}

impl std::fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionSet")
            .field("manifest_number", &self.manifest_number)
            .field("manifest_open", &self.manifest.as_ref().map(|m| m.number))
            .field("next_file_number", &self.next_file_number)
            .field("last_sequence", &self.last_sequence)
            .field("log_number", &self.log_number)
            .finish()
    }
}

/// Adds the record index and offset to an error found while replaying a manifest.
fn in_record(e: Error, what: &str, index: usize, offset: u64) -> Error {
    match e {
        Error::Corruption {
            what: inner,
            detail,
        } => Error::corruption(
            format!("{what} (record {index} at offset {offset})"),
            format!("{inner}: {detail}"),
        ),
        other => other,
    }
}

/// The manifest name CURRENT holds, and its number.
fn read_current(fs: &dyn FileSystem) -> Result<(String, u64)> {
    if !fs.exists(CURRENT) {
        return Err(Error::InvalidArgument(
            "no database on this file system (no CURRENT file)".into(),
        ));
    }
    let data = fs
        .open(CURRENT)
        .and_then(|r| r.read_all())
        .map_err(|e| Error::fs("read CURRENT", e))?;
    let bad = |detail: String| Error::corruption(CURRENT, detail);
    let Some(body) = data.strip_suffix(b"\n") else {
        return Err(bad(format!("{} bytes not ending in a newline", data.len())));
    };
    let name = std::str::from_utf8(body).map_err(|_| bad("not UTF-8".into()))?;
    match parse_manifest_name(name) {
        Some(number) => Ok((name.to_string(), number)),
        None => Err(bad(format!(
            "'{}' is not a manifest name",
            name.escape_debug()
        ))),
    }
}

fn read_manifest(fs: &dyn FileSystem, name: &str) -> Result<Vec<u8>> {
    if !fs.exists(name) {
        return Err(Error::corruption(
            CURRENT,
            format!("it names '{name}', which does not exist"),
        ));
    }
    fs.open(name)
        .and_then(|r| r.read_all())
        .map_err(|e| Error::fs(format!("read manifest '{name}'"), e))
}

/// Points CURRENT at `manifest` atomically (see the module documentation).
fn write_current(fs: &dyn FileSystem, manifest: &str) -> Result<()> {
    let hint = PlacementHint {
        kind: Some(FileKind::Manifest),
        // CURRENT lives as long as the manifest it names.
        lifetime: Lifetime::for_file(FileKind::Manifest, None, 1),
        ..PlacementHint::default()
    };
    let context = |step: &str| format!("{step} '{CURRENT_TEMP}' naming '{manifest}'");
    let mut w = fs
        .create_or_replace(CURRENT_TEMP, FileKind::Manifest, hint)
        .map_err(|e| Error::fs(context("create"), e))?;
    w.append(format!("{manifest}\n").as_bytes())
        .map_err(|e| Error::fs(context("write"), e))?;
    w.close().map_err(|e| Error::fs(context("sync"), e))?;
    fs.rename(CURRENT_TEMP, CURRENT)
        .map_err(|e| Error::fs(format!("rename '{CURRENT_TEMP}' to '{CURRENT}'"), e))
}

/// Numbers of the manifest files present.
fn manifests_on(fs: &dyn FileSystem) -> Result<Vec<u64>> {
    let names = fs.list().map_err(|e| Error::fs("list the files", e))?;
    Ok(names
        .iter()
        .filter_map(|name| parse_manifest_name(name))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key;
    use crate::log::LogWriter;
    use crate::version::edit::tests::file;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::cmp::Ordering;
    use zkv_zns::{FaultControl, FaultOp, Geometry, MemDevice, TearMode, ZonedDevice};
    use zkv_zonefs::fs::{FsOptions, ZoneFs};

    fn device(zones: u32, zone_kib: u64) -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
        let geo = Geometry::new(zones, zone_kib * 1024)
            .with_block_size(4096)
            .with_limits(6, 8);
        let mem = Arc::new(MemDevice::new(geo).unwrap());
        let dev: Arc<dyn ZonedDevice> = mem.clone();
        (mem, dev)
    }

    fn fs_options() -> FsOptions {
        FsOptions::default().with_meta_zones(2)
    }

    fn format(dev: &Arc<dyn ZonedDevice>) -> Arc<ZoneFs> {
        Arc::new(ZoneFs::format(dev.clone(), fs_options()).unwrap())
    }

    fn mount(dev: &Arc<dyn ZonedDevice>) -> Arc<ZoneFs> {
        Arc::new(ZoneFs::mount(dev.clone(), fs_options()).unwrap())
    }

    fn options() -> Options {
        Options {
            num_levels: 4,
            ..Options::default()
        }
    }

    /// What recovery must bring back.
    #[derive(Clone, Debug, PartialEq)]
    struct State {
        version: Version,
        last_sequence: SeqNo,
        log_number: u64,
        cursors: Vec<Option<Vec<u8>>>,
    }

    fn state(vs: &VersionSet) -> State {
        State {
            version: Version::clone(&vs.current()),
            last_sequence: vs.last_sequence(),
            log_number: vs.log_number(),
            cursors: vs.compact_cursors().to_vec(),
        }
    }

    fn manifests(fs: &ZoneFs) -> Vec<u64> {
        manifests_on(fs).unwrap()
    }

    /// Edits a database would make: flushes to L0, compactions and trivial moves, new WAL
    /// numbers, cursors. Deterministic for a seed and the versions it sees.
    struct Workload {
        rng: ChaCha8Rng,
        seq: u64,
    }

    impl Workload {
        fn new(seed: u64) -> Workload {
            Workload {
                rng: ChaCha8Rng::seed_from_u64(seed),
                seq: 0,
            }
        }

        fn edit(&mut self, vs: &mut VersionSet) -> VersionEdit {
            let v = vs.current();
            let deep = (0..v.num_levels() - 1).filter(|&l| v.num_files(l) > 0);
            let deep: Vec<usize> = deep.collect();
            let mut edit = if deep.is_empty() || self.rng.random_bool(0.5) {
                self.flush(vs)
            } else {
                let level = deep[self.rng.random_range(0..deep.len())];
                self.compact(vs, &v, level)
            };
            if self.rng.random_bool(0.2) {
                edit.log_number = Some(vs.new_file_number());
            }
            if self.rng.random_bool(0.2) {
                let level = self.rng.random_range(0..v.num_levels() as u32);
                let k = self.rng.random_range(0..100u8);
                edit.compact_cursors.push((level, key::seek_key(&[k], 0)));
            }
            edit
        }

        fn flush(&mut self, vs: &mut VersionSet) -> VersionEdit {
            let a = self.rng.random_range(0..100u8);
            let b = a.saturating_add(self.rng.random_range(0..30u8));
            let n = self.rng.random_range(1..50);
            let meta = file(
                vs.new_file_number(),
                &[a],
                &[b],
                (self.seq + 1, self.seq + n),
            );
            self.seq += n;
            VersionEdit {
                new_files: vec![(0, meta)],
                last_sequence: Some(self.seq),
                ..VersionEdit::default()
            }
        }

        fn compact(&mut self, vs: &mut VersionSet, v: &Version, level: usize) -> VersionEdit {
            let files = v.files(level);
            let seed = &files[self.rng.random_range(0..files.len())];
            let (lo, hi) = (seed.smallest_user_key(), seed.largest_user_key());
            let inputs = v.overlapping(level, Some(lo), Some(hi));
            let lo = inputs.iter().map(|f| f.smallest_user_key()).min().unwrap();
            let hi = inputs.iter().map(|f| f.largest_user_key()).max().unwrap();
            let outputs = v.overlapping(level + 1, Some(lo), Some(hi));
            let mut edit = VersionEdit::new();
            let (l, next) = (level as u32, level as u32 + 1);
            if outputs.is_empty() && inputs.len() == 1 {
                edit.delete_file(l, inputs[0].number);
                edit.add_file(next, FileMeta::clone(&inputs[0]));
                return edit;
            }
            for f in &inputs {
                edit.delete_file(l, f.number);
            }
            for f in &outputs {
                edit.delete_file(next, f.number);
            }
            let all: Vec<&Arc<FileMeta>> = inputs.iter().chain(&outputs).collect();
            let mut out = FileMeta::clone(all[0]);
            out.number = vs.new_file_number();
            for f in &all[1..] {
                if key::compare(&f.smallest, &out.smallest) == Ordering::Less {
                    out.smallest = f.smallest.clone();
                }
                if key::compare(&f.largest, &out.largest) == Ordering::Greater {
                    out.largest = f.largest.clone();
                }
                out.smallest_seq = out.smallest_seq.min(f.smallest_seq);
                out.largest_seq = out.largest_seq.max(f.largest_seq);
                out.size += f.size;
            }
            // Cut the output in two at a user key when it spans several.
            let (lo, hi) = (out.smallest_user_key()[0], out.largest_user_key()[0]);
            if lo < hi {
                let mid = self.rng.random_range(lo..hi);
                let mut second = out.clone();
                second.number = vs.new_file_number();
                out.largest = key::internal_key(&[mid], 0, key::ValueKind::Delete);
                second.smallest = key::internal_key(&[mid + 1], key::MAX_SEQ, key::ValueKind::Put);
                edit.add_file(next, second);
            }
            edit.add_file(next, out);
            edit
        }
    }

    #[test]
    fn create_then_recover_and_refuse_twice() {
        let (_, dev) = device(24, 128);
        let fs = format(&dev);
        assert!(!VersionSet::exists(&fs));
        let vs = VersionSet::create(fs.clone(), &options()).unwrap();
        assert!(VersionSet::exists(&fs));
        assert_eq!((vs.manifest_number(), vs.next_file_number()), (1, 2));
        assert!(vs.manifest_bytes() > 0);
        let again = VersionSet::create(fs.clone(), &options()).unwrap_err();
        assert!(again.to_string().contains("already exists"), "{again}");
        let expected = state(&vs);
        drop(vs);
        let fs = mount(&dev);
        let back = VersionSet::recover(fs, &options()).unwrap();
        assert_eq!(state(&back), expected);
        assert_eq!(back.next_file_number(), 2);
    }

    #[test]
    fn many_edits_recover_to_the_same_state() {
        let (_, dev) = device(64, 256);
        let fs = format(&dev);
        let mut vs = VersionSet::create(fs.clone(), &options()).unwrap();
        let mut w = Workload::new(7);
        for i in 0..300 {
            let edit = w.edit(&mut vs);
            vs.log_and_apply(edit).unwrap();
            // Rolled at the edit after its extents spread past MAX_MANIFEST_ZONES.
            let name = manifest_file_name(vs.manifest_number());
            let zones = fs.zones_of(&name).unwrap().len();
            assert!(zones <= MAX_MANIFEST_ZONES + 1, "edit {i}: {zones} zones");
            if i % 100 == 50 {
                // A reader of the live manifest sees every synced edit.
                let peek = VersionSet::recover(fs.clone(), &options()).unwrap();
                assert_eq!(state(&peek), state(&vs));
            }
        }
        assert!(vs.current().all_files().count() > 5);
        assert!(vs.current().num_files(2) > 0, "compactions reached L2");
        // Rolled over on the way (its appends spread over more than two zones, far below
        // the size limit): only the live manifest is left.
        assert!(vs.manifest_number() > 1);
        assert_eq!(manifests(&fs), [vs.manifest_number()]);
        let (expected, next) = (state(&vs), vs.next_file_number());
        drop(vs);
        let fs = mount(&dev);
        let mut back = VersionSet::recover(fs.clone(), &options()).unwrap();
        assert_eq!(state(&back), expected);
        assert!(back.next_file_number() >= next);
        // The first edit after recovery starts a new manifest and retires the old one.
        let edit = w.edit(&mut back);
        back.log_and_apply(edit).unwrap();
        assert_eq!(manifests(&fs), [back.manifest_number()]);
        assert!(back.manifest_number() >= next);
        let expected = state(&back);
        drop(back);
        let back = VersionSet::recover(mount(&dev), &options()).unwrap();
        assert_eq!(state(&back), expected);
    }

    #[test]
    fn large_manifests_roll_over() {
        let (_, dev) = device(24, 128);
        let fs = format(&dev);
        let mut vs = VersionSet::create(fs.clone(), &options()).unwrap();
        vs.set_max_manifest_bytes(1500);
        let mut w = Workload::new(3);
        let mut numbers = vec![vs.manifest_number()];
        for _ in 0..200 {
            let edit = w.edit(&mut vs);
            vs.log_and_apply(edit).unwrap();
            if numbers.last() != Some(&vs.manifest_number()) {
                numbers.push(vs.manifest_number());
                assert_eq!(manifests(&fs), [vs.manifest_number()]);
            }
        }
        assert!(numbers.len() > 5, "{numbers:?}");
        assert!(numbers.windows(2).all(|p| p[0] < p[1]));
        let expected = state(&vs);
        let bytes = vs.manifest_bytes();
        drop(vs);
        let back = VersionSet::recover(mount(&dev), &options()).unwrap();
        assert_eq!(state(&back), expected);
        assert!(bytes > 200 * 20, "{bytes}");
    }

    #[test]
    fn refused_edits_are_not_logged() {
        let (_, dev) = device(24, 128);
        let fs = format(&dev);
        let mut vs = VersionSet::create(fs.clone(), &options()).unwrap();
        let mut w = Workload::new(5);
        for _ in 0..5 {
            let edit = w.edit(&mut vs);
            vs.log_and_apply(edit).unwrap();
        }
        let before = state(&vs);
        let bytes = vs.manifest_bytes();
        let mut bad = VersionEdit::new();
        bad.delete_file(1, 999_999);
        bad.last_sequence = Some(1 << 40);
        let err = vs.log_and_apply(bad).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert_eq!(state(&vs), before);
        assert_eq!(vs.manifest_bytes(), bytes);
        drop(vs);
        assert_eq!(state(&VersionSet::recover(fs, &options()).unwrap()), before);
    }

    #[test]
    fn a_failed_manifest_write_is_superseded_by_a_new_manifest() {
        let (mem, dev) = device(24, 128);
        let fs = format(&dev);
        let mut vs = VersionSet::create(fs.clone(), &options()).unwrap();
        let mut w = Workload::new(11);
        for _ in 0..5 {
            let edit = w.edit(&mut vs);
            vs.log_and_apply(edit).unwrap();
        }
        let before = state(&vs);
        mem.inject_error(FaultOp::Write, None, 1);
        let edit = w.edit(&mut vs);
        assert!(vs.log_and_apply(edit).is_err());
        assert_eq!(state(&vs), before);
        let old = vs.manifest_number();
        let edit = w.edit(&mut vs);
        vs.log_and_apply(edit).unwrap();
        assert!(vs.manifest_number() > old);
        assert_eq!(manifests(&fs), [vs.manifest_number()]);
        let expected = state(&vs);
        drop(vs);
        let back = VersionSet::recover(mount(&dev), &options()).unwrap();
        assert_eq!(state(&back), expected);
    }

    fn write_file(fs: &ZoneFs, name: &str, data: &[u8]) {
        let mut w = fs
            .create_or_replace(name, FileKind::Other, PlacementHint::default())
            .unwrap();
        w.append(data).unwrap();
        w.close().unwrap();
    }

    fn recover_err(fs: &Arc<ZoneFs>) -> Error {
        VersionSet::recover(fs.clone(), &options()).unwrap_err()
    }

    #[test]
    fn bad_current_files_are_clear_errors() {
        let (_, dev) = device(24, 128);
        let fs = format(&dev);
        let err = recover_err(&fs);
        assert!(err.to_string().contains("no CURRENT"), "{err}");
        drop(VersionSet::create(fs.clone(), &options()).unwrap());
        fs.delete(&manifest_file_name(1)).unwrap();
        let err = recover_err(&fs);
        assert!(err.is_corruption(), "{err}");
        assert!(
            err.to_string()
                .contains("'MANIFEST-000001', which does not exist"),
            "{err}"
        );
        for (content, says) in [
            (&b"MANIFEST-000001"[..], "newline"),
            (b"MANIFEST-\n", "not a manifest name"),
            (b"000001.sst\n", "not a manifest name"),
            (b"\xff\n", "UTF-8"),
        ] {
            write_file(&fs, CURRENT, content);
            let err = recover_err(&fs);
            assert!(err.is_corruption(), "{err}");
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    /// A manifest made of `records`, named by CURRENT.
    fn install_manifest(fs: &ZoneFs, records: &[Vec<u8>], tail: &[u8]) {
        let mut log = LogWriter::new(Vec::new());
        for r in records {
            log.add_record(r).unwrap();
        }
        let mut data = log.into_inner();
        data.extend_from_slice(tail);
        write_file(fs, &manifest_file_name(9), &data);
        write_file(fs, CURRENT, b"MANIFEST-000009\n");
    }

    fn base_edit() -> VersionEdit {
        VersionEdit {
            next_file_number: Some(20),
            last_sequence: Some(100),
            log_number: Some(4),
            new_files: vec![(1, file(12, b"a", b"c", (1, 5)))],
            ..VersionEdit::default()
        }
    }

    #[test]
    fn any_bad_record_is_corruption_even_at_the_tail() {
        let (_, dev) = device(24, 128);
        let fs = format(&dev);
        let second = VersionEdit {
            new_files: vec![(0, file(13, b"b", b"d", (6, 9)))],
            ..VersionEdit::default()
        };
        let records = [base_edit().encode(), second.encode()];
        install_manifest(&fs, &records, b"");
        let vs = VersionSet::recover(fs.clone(), &options()).unwrap();
        assert_eq!(vs.current().all_files().count(), 2);
        assert_eq!(
            (vs.next_file_number(), vs.last_sequence(), vs.log_number()),
            (20, 100, 4)
        );

        // Half of a third record: the file layer never shows one, so it is damage, not a
        // torn write, and the manifest is refused rather than read without it.
        let mut third = LogWriter::new(Vec::new());
        third.add_record(&second.encode()).unwrap();
        let third = third.into_inner();
        install_manifest(&fs, &records, &third[..third.len() / 2]);
        let err = recover_err(&fs);
        let at = records.iter().map(|r| r.len() + 13).sum::<usize>();
        assert!(err.is_corruption(), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("MANIFEST-000009") && msg.contains(&format!("offset {at}")),
            "{msg}"
        );

        // A flipped bit in the last record.
        let mut log = LogWriter::new(Vec::new());
        for r in &records {
            log.add_record(r).unwrap();
        }
        let mut data = log.into_inner();
        let last = data.len() - 2;
        data[last] ^= 0x04;
        write_file(&fs, &manifest_file_name(9), &data);
        let msg = recover_err(&fs).to_string();
        assert!(msg.contains("checksum mismatch"), "{msg}");
        assert!(
            msg.contains(&format!("offset {}", records[0].len() + 13)),
            "{msg}"
        );

        // Damage in the first record, with a valid record after it.
        let mut log = LogWriter::new(Vec::new());
        for r in &records {
            log.add_record(r).unwrap();
        }
        let mut data = log.into_inner();
        data[20] ^= 0x10;
        write_file(&fs, &manifest_file_name(9), &data);
        assert!(recover_err(&fs).is_corruption());

        // Intact records whose edits are bad.
        let mut unknown = base_edit().encode();
        unknown.push(77);
        install_manifest(&fs, &[unknown], b"");
        let err = recover_err(&fs);
        assert!(
            err.to_string().contains("record 0 at offset 0") && err.is_corruption(),
            "{err}"
        );
        let overlap = VersionEdit {
            new_files: vec![(1, file(14, b"b", b"d", (6, 9)))],
            ..VersionEdit::default()
        };
        install_manifest(&fs, &[base_edit().encode(), overlap.encode()], b"");
        let err = recover_err(&fs);
        assert!(err.to_string().contains("overlapping"), "{err}");
        let deep = VersionEdit {
            new_files: vec![(6, file(14, b"x", b"y", (6, 9)))],
            ..VersionEdit::default()
        };
        install_manifest(&fs, &[base_edit().encode(), deep.encode()], b"");
        let err = recover_err(&fs);
        assert!(
            err.to_string().contains("4 levels") && err.is_corruption(),
            "{err}"
        );
        let no_counters = VersionEdit {
            next_file_number: None,
            ..base_edit()
        };
        install_manifest(&fs, &[no_counters.encode()], b"");
        assert!(recover_err(&fs).to_string().contains("next file number"));
    }

    #[test]
    fn recovery_numbers_files_past_everything_it_saw() {
        let (_, dev) = device(24, 128);
        let fs = format(&dev);
        let edit = VersionEdit {
            next_file_number: Some(3),
            log_number: Some(15),
            ..base_edit()
        };
        install_manifest(&fs, &[edit.encode()], b"");
        // A manifest of a switch that never reached CURRENT.
        write_file(&fs, &manifest_file_name(40), b"");
        let mut vs = VersionSet::recover(fs.clone(), &options()).unwrap();
        assert_eq!(vs.next_file_number(), 41);
        vs.mark_file_number_used(60);
        assert_eq!(vs.new_file_number(), 61);
        vs.log_and_apply(VersionEdit::new()).unwrap();
        assert_eq!(manifests(&fs), [vs.manifest_number()]);
        assert!(!fs.exists(CURRENT_TEMP));
    }

    /// Runs the workload on `vs` for `edits` edits or until one fails. Returns the states
    /// after each acknowledged edit (with the next file number then), and the state the
    /// failed edit would have made.
    fn run(
        vs: &mut VersionSet,
        w: &mut Workload,
        edits: usize,
    ) -> (Vec<(State, u64)>, Option<State>) {
        let mut acked = vec![(state(vs), vs.next_file_number())];
        for _ in 0..edits {
            let edit = w.edit(vs);
            let mut maybe = state(vs);
            maybe.version = maybe.version.apply(&edit).unwrap();
            maybe.log_number = maybe.log_number.max(edit.log_number.unwrap_or(0));
            maybe.last_sequence = maybe.last_sequence.max(edit.last_sequence.unwrap_or(0));
            for (level, k) in &edit.compact_cursors {
                maybe.cursors[*level as usize] = Some(k.clone());
            }
            match vs.log_and_apply(edit) {
                Ok(()) => {
                    assert_eq!(state(vs), maybe);
                    acked.push((maybe, vs.next_file_number()));
                }
                Err(e) => {
                    assert!(e.is_power_loss(), "{e}");
                    return (acked, Some(maybe));
                }
            }
        }
        (acked, None)
    }

    const CRASH_EDITS: usize = 40;

    fn crash_device() -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
        device(24, 128)
    }

    /// Mutating device commands of the whole workload of `seed` without a cut.
    fn commands_of(seed: u64) -> u64 {
        let (mem, dev) = crash_device();
        let fs = format(&dev);
        let start = mem.mutating_commands();
        let mut vs = VersionSet::create(fs, &options()).unwrap();
        vs.set_max_manifest_bytes(1200);
        let (_, failed) = run(&mut vs, &mut Workload::new(seed), CRASH_EDITS);
        assert!(failed.is_none());
        mem.mutating_commands() - start
    }

    /// How the crash runs went.
    #[derive(Debug, Default)]
    struct Outcomes {
        cut_in_create: u32,
        cut_in_edit: u32,
        failed_edit_durable: u32,
        cut_after_recovery: u32,
    }

    type Acked = Vec<(State, u64)>;

    /// Recovers after a cut and checks the state against what the run promised.
    fn recover_checked(
        fs: &Arc<ZoneFs>,
        (acked, maybe): &(Acked, Option<State>),
        out: &mut Outcomes,
        seed: u64,
    ) -> VersionSet {
        let vs = VersionSet::recover(fs.clone(), &options())
            .unwrap_or_else(|e| panic!("seed {seed}: recover: {e}"));
        let got = state(&vs);
        let last = acked.last().map(|(s, _)| s);
        let ok = last == Some(&got) || maybe.as_ref() == Some(&got);
        assert!(
            ok,
            "seed {seed}: recovered {got:?}\nacked {last:?}\nmaybe {maybe:?}"
        );
        out.failed_edit_durable += u32::from(last != Some(&got));
        if let Some((_, next)) = acked.last() {
            assert!(vs.next_file_number() >= *next, "seed {seed}");
        }
        vs
    }

    fn power_cycle(mem: &MemDevice, dev: &Arc<dyn ZonedDevice>, mode: TearMode) -> Arc<ZoneFs> {
        if mem.is_powered() {
            mem.power_cut(mode);
        }
        mem.restart();
        mount(dev)
    }

    /// A cut at a random point of creation and edits; sometimes a second cut in the first
    /// edits after recovery (new manifest, CURRENT switch, stale manifest deletion).
    fn crash_once(seed: u64, out: &mut Outcomes) {
        let total = commands_of(seed);
        let (mem, dev) = crash_device();
        let fs = format(&dev);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
        let mode = match seed % 2 {
            0 => TearMode::Drop,
            _ => TearMode::Tear { seed },
        };
        mem.schedule_power_cut(rng.random_range(0..=total), mode);
        let result = match VersionSet::create(fs.clone(), &options()) {
            Ok(mut vs) => {
                vs.set_max_manifest_bytes(1200);
                run(&mut vs, &mut Workload::new(seed), CRASH_EDITS)
            }
            Err(e) => {
                assert!(e.is_power_loss(), "{e}");
                out.cut_in_create += 1;
                (Vec::new(), Some(state(&empty_set(&fs))))
            }
        };
        out.cut_in_edit += u32::from(result.1.is_some() && !result.0.is_empty());
        drop(fs);
        let mut fs = power_cycle(&mem, &dev, mode);
        if result.0.is_empty() && !VersionSet::exists(&fs) {
            return; // the cut hit the creation before CURRENT existed
        }
        let mut vs = recover_checked(&fs, &result, out, seed);
        let mut w = Workload::new(seed + 1000);
        if rng.random_bool(0.4) {
            out.cut_after_recovery += 1;
            mem.schedule_power_cut(rng.random_range(0..40), mode);
            w.seq = vs.last_sequence();
            vs.set_max_manifest_bytes(1200);
            let result = run(&mut vs, &mut w, 8);
            drop(vs);
            drop(fs);
            fs = power_cycle(&mem, &dev, mode);
            vs = recover_checked(&fs, &result, out, seed);
        }
        // The recovered set keeps working, and stale manifests go away.
        w.seq = vs.last_sequence();
        vs.set_max_manifest_bytes(1200);
        let (acked, failed) = run(&mut vs, &mut w, 5);
        assert!(failed.is_none());
        assert_eq!(manifests(&fs), [vs.manifest_number()], "seed {seed}");
        drop(vs);
        let back = VersionSet::recover(mount(&dev), &options()).unwrap();
        assert_eq!(Some(&state(&back)), acked.last().map(|(s, _)| s));
    }

    fn empty_set(fs: &Arc<ZoneFs>) -> VersionSet {
        let mut vs = VersionSet::empty(fs.clone(), &options(), 2);
        vs.manifest_number = 1;
        vs
    }

    #[test]
    fn power_cuts_recover_a_prefix_of_the_synced_edits() {
        let mut out = Outcomes::default();
        for seed in 0..120 {
            crash_once(seed, &mut out);
        }
        // The cuts hit every phase: creation, edits, edits that were durable though their
        // call failed, the first edits after a recovery.
        assert!(out.cut_in_create > 0, "{out:?}");
        assert!(out.cut_in_edit > 60, "{out:?}");
        assert!(out.failed_edit_durable > 0, "{out:?}");
        assert!(out.cut_after_recovery > 20, "{out:?}");
    }

    #[test]
    fn version_sets_can_move_between_threads() {
        fn is_send<T: Send>() {}
        is_send::<VersionSet>();
    }
}
