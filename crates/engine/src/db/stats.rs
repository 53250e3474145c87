//! Statistics of the database (DESIGN.md section 7): byte and count counters, the shape of
//! the LSM, and one record per compaction with its zone figures.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::compaction::CompactionStats;
use crate::lifetime::{Clock, LifetimeStats};

/// Counters updated by the write path and the jobs.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub user_bytes: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub writes: AtomicU64,
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub flushes: AtomicU64,
    pub compaction_read_bytes: AtomicU64,
    pub compaction_write_bytes: AtomicU64,
    pub compactions: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub trivial_move_bytes: AtomicU64,
    pub subcompactions: AtomicU64,
    pub compaction_micros: AtomicU64,
    pub requested_compactions: AtomicU64,
    pub stall_ns: AtomicU64,
    pub stops: AtomicU64,
    pub delays: AtomicU64,
    /// Threaded writers waited for the zone cleaner (see `write.rs`, `space_stall`).
    pub space_stalls: AtomicU64,
    pub grouped_writes: AtomicU64,
    /// Flushes and compactions that found no room for an output and ran again later.
    pub no_room_retries: AtomicU64,
    pub picker_ns: AtomicU64,
    pub picker_calls: AtomicU64,
    pub neighbors_ns: AtomicU64,
    pub neighbors_calls: AtomicU64,
    pub prediction_ns: AtomicU64,
    pub prediction_calls: AtomicU64,
    /// Blob files written by flushes and compactions, and their bytes.
    pub blob_files_created: AtomicU64,
    pub blob_file_bytes: AtomicU64,
    /// Blob files deleted once their version dropped them.
    pub blob_files_deleted: AtomicU64,
    /// Blobs and blob bytes that blob garbage collection read and wrote again.
    pub blob_gc_relocated: AtomicU64,
    pub blob_gc_relocated_bytes: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Adds one timed call that started at `start` to `ns` and `calls`.
    pub(crate) fn time(ns: &AtomicU64, calls: &AtomicU64, start: Instant) {
        let elapsed = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Counters::add(ns, elapsed);
        Counters::add(calls, 1);
    }
}

/// Files and bytes of one level now, with its compaction score.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelShape {
    /// Level number (0 = L0).
    pub level: usize,
    /// Files of the level.
    pub files: usize,
    /// Σ file sizes of the level.
    pub bytes: u64,
    /// RocksDB's score (L0: files / trigger; Ln: bytes / target), files being compacted
    /// excluded.
    pub score: f64,
}

/// One input file of a compaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionInput {
    /// File number.
    pub number: u64,
    /// The level the file was in.
    pub level: usize,
    /// File size in bytes.
    pub size: u64,
    /// The zones holding the file and its bytes in each, just before it was deleted.
    pub zones: Vec<(u32, u64)>,
}

/// One output file of a compaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionOutput {
    /// File number.
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
}

/// What one (non-trivial) compaction read, wrote, and did to the zones of its inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionRecord {
    /// 1 for the first compaction of this database handle, and so on.
    pub id: u64,
    /// The level the compaction started from.
    pub level: usize,
    /// The level it wrote.
    pub output_level: usize,
    /// Asked for by the zone cleaner (`compact`/`compensate` cleaning).
    pub requested: bool,
    /// Why it ran (`CompactionReason::name`).
    pub reason: &'static str,
    /// Files it read, of every input level.
    pub inputs: Vec<CompactionInput>,
    /// Files it wrote.
    pub outputs: Vec<CompactionOutput>,
    /// Bytes of the inputs in each zone holding them (S_m), by zone.
    pub zone_bytes: Vec<(u32, u64)>,
    /// Σ S_m² / (Σ S_m)² over the zones holding inputs: 1 when one zone holds them all.
    pub s_same: f64,
    /// Mean over the zones holding inputs of invalid bytes / zone capacity right after the
    /// inputs were deleted. A zone that the deletion emptied (and the file layer reset at
    /// once) counts the bytes it held before as invalid.
    pub s_inval: f64,
    /// Deterministic mode: the virtual instants (ns since open) the compaction started and
    /// ended on its virtual thread. `None` in threaded mode and for the zone cleaner's
    /// requested compactions (they run inside the cleaner's own step).
    pub virtual_span: Option<(u64, u64)>,
}

impl CompactionRecord {
    /// Σ input sizes.
    pub fn input_bytes(&self) -> u64 {
        self.inputs.iter().map(|f| f.size).sum()
    }

    /// Σ output sizes.
    pub fn output_bytes(&self) -> u64 {
        self.outputs.iter().map(|f| f.size).sum()
    }

    /// Number of zones that held inputs.
    pub fn zones(&self) -> usize {
        self.zone_bytes.len()
    }
}

/// Σ per zone of the bytes the inputs hold there.
pub(crate) fn zone_bytes(inputs: &[CompactionInput]) -> Vec<(u32, u64)> {
    let mut per_zone: BTreeMap<u32, u64> = BTreeMap::new();
    for (zone, bytes) in inputs.iter().flat_map(|f| &f.zones) {
        *per_zone.entry(*zone).or_default() += bytes;
    }
    per_zone.into_iter().collect()
}

/// S_same = Σ S_m² / (Σ S_m)² (DESIGN.md 6.5); 0 for no bytes. ZACA ranks groups by it.
pub(crate) use crate::compaction::s_same;

/// S_inval: the mean of `invalid / capacity` over `zones`, where `invalid` gives each
/// zone's invalid bytes after the compaction.
pub(crate) fn s_inval(zones: &[(u32, u64)], capacity: u64, invalid: impl Fn(u32) -> u64) -> f64 {
    if zones.is_empty() || capacity == 0 {
        return 0.0;
    }
    let sum: f64 = zones
        .iter()
        .map(|(z, _)| invalid(*z) as f64 / capacity as f64)
        .sum();
    sum / zones.len() as f64
}

/// Everything [`crate::db::Db::stats`] reports.
#[derive(Clone, Debug, Default)]
pub struct DbStats {
    /// Σ key + value bytes of puts.
    pub user_bytes: u64,
    /// Bytes appended to WALs (record headers included).
    pub wal_bytes: u64,
    /// Write calls (batches).
    pub writes: u64,
    /// Puts in those batches.
    pub puts: u64,
    /// Deletes in those batches.
    pub deletes: u64,
    /// Bytes of the L0 files flushes wrote.
    pub flush_bytes: u64,
    /// Flushes, those recovery made at open included.
    pub flushes: u64,
    /// Bytes compactions read (input files).
    pub compaction_read_bytes: u64,
    /// Bytes compactions wrote (output files).
    pub compaction_write_bytes: u64,
    /// Compactions that merged files (trivial moves excluded).
    pub compactions: u64,
    /// Files moved down a level without rewriting.
    pub trivial_moves: u64,
    /// Bytes of those files.
    pub trivial_move_bytes: u64,
    /// Key ranges run by compactions split into subcompactions (those not split count
    /// nothing).
    pub subcompactions: u64,
    /// Time compactions took (merges; trivial moves take none), in microseconds: wall
    /// time in threaded mode, virtual time in deterministic mode (RocksDB's Comp(sec) of
    /// the levels below L0, plus L0's intra-L0 compactions).
    pub compaction_micros: u64,
    /// Compactions asked for by the zone cleaner (included in `compactions`).
    pub requested_compactions: u64,
    /// Bytes appended to manifests.
    pub manifest_bytes: u64,
    /// Time writers spent stopped or delayed, in nanoseconds.
    pub stall_ns: u64,
    /// Writes stopped until flushes or compactions caught up.
    pub stall_stops: u64,
    /// Writes paused to slow the write rate down.
    pub stall_delays: u64,
    /// Threaded writers that waited for the zone cleaner (low free space).
    pub space_stalls: u64,
    /// Writes another write's leader applied in its group (group commit; threaded mode).
    pub grouped_writes: u64,
    /// Flushes and compactions that found no room for an output and ran again later.
    pub no_room_retries: u64,
    /// Wall time spent in `Picker::order` while picking compactions, and the number of
    /// those calls (policy cost; measured in both modes, so it varies from run to run).
    pub picker_ns: u64,
    /// Calls of `Picker::order` that `picker_ns` covers.
    pub picker_calls: u64,
    /// Wall time spent computing the neighbourhood of placement hints (new SSTs and the
    /// zone cleaner's `hint_of`), in nanoseconds.
    pub neighbors_ns: u64,
    /// Neighbourhood computations that `neighbors_ns` covers.
    pub neighbors_calls: u64,
    /// Wall time spent predicting SST lifetimes, in nanoseconds.
    pub prediction_ns: u64,
    /// Lifetime predictions that `prediction_ns` covers.
    pub prediction_calls: u64,
    /// The lifetime clock and the accuracy of the predictions whose files died since the
    /// database opened; `None` when it predicts nothing.
    pub lifetime: Option<LifetimeSummary>,
    /// Files, bytes and score of each level now.
    pub levels: Vec<LevelShape>,
    /// The work booked per level (RocksDB's compaction stats).
    pub level_stats: CompactionStats,
    /// Every compaction record so far.
    pub records: Vec<CompactionRecord>,
    /// Blob files (key-value separation).
    pub blob: BlobStats,
    /// The block cache's capacity, fill, hits and misses (`None`: no block cache).
    pub block_cache: Option<crate::sst::BlockCacheStats>,
    /// Tables open now (their index and filter in memory; `max_open_files` bounds it).
    pub open_tables: usize,
}

/// Blob files since the open, and in the version now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobStats {
    /// Blob files flushes and compactions wrote.
    pub files_created: u64,
    /// Bytes of those blob files.
    pub bytes_written: u64,
    /// Blob files deleted once the version dropped them.
    pub files_deleted: u64,
    /// Blobs that garbage collection read and wrote again.
    pub gc_relocated: u64,
    /// Bytes of those blobs.
    pub gc_relocated_bytes: u64,
    /// Blob files in the version now.
    pub live_files: u64,
    /// Size in bytes of those files.
    pub file_bytes: u64,
    /// Blob bytes written to those files (record header, key and value each).
    pub total_bytes: u64,
    /// Blob bytes among `total_bytes` that no table references any more.
    pub garbage_bytes: u64,
}

/// The lifetime clock now and how the predictions fared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LifetimeSummary {
    /// The lifetime clock now.
    pub clock: Clock,
    /// The cycle C now, in ticks.
    pub cycle: u64,
    /// The expected deaths per tick (C_rate × D_num) now.
    pub deaths_per_tick: f64,
    /// Ticks since the open; with `seconds_since_open`, the mean rate of the clock
    /// (Table I's conversion between ticks and seconds).
    pub ticks_since_open: u64,
    /// Seconds of the database's clock (virtual in deterministic mode) since the open.
    pub seconds_since_open: f64,
    /// The accuracy of the predictions whose files died since the open.
    pub stats: LifetimeStats,
}

impl DbStats {
    /// LSM write amplification: (flush + compaction + blob file bytes written) / user
    /// bytes (RocksDB's W-Amp; WAL excluded). 0 before any user byte.
    pub fn lsm_write_amp(&self) -> f64 {
        if self.user_bytes == 0 {
            return 0.0;
        }
        let written = self.flush_bytes + self.compaction_write_bytes + self.blob.bytes_written;
        written as f64 / self.user_bytes as f64
    }

    /// Mean S_same and S_inval over the compaction records (0 without records).
    pub fn mean_zone_figures(&self) -> (f64, f64) {
        if self.records.is_empty() {
            return (0.0, 0.0);
        }
        let n = self.records.len() as f64;
        let same: f64 = self.records.iter().map(|r| r.s_same).sum();
        let inval: f64 = self.records.iter().map(|r| r.s_inval).sum();
        (same / n, inval / n)
    }

    /// Files in every level.
    pub fn total_files(&self) -> usize {
        self.levels.iter().map(|l| l.files).sum()
    }

    /// Mean time of one picker call, in microseconds (0 without calls).
    pub fn picker_mean_us(&self) -> f64 {
        mean_us(self.picker_ns, self.picker_calls)
    }

    /// Mean time of one lifetime prediction, in microseconds (0 without any).
    pub fn prediction_mean_us(&self) -> f64 {
        mean_us(self.prediction_ns, self.prediction_calls)
    }

    /// Mean time of one neighbourhood computation, in microseconds (0 without any).
    pub fn neighbors_mean_us(&self) -> f64 {
        mean_us(self.neighbors_ns, self.neighbors_calls)
    }
}

fn mean_us(ns: u64, calls: u64) -> f64 {
    if calls == 0 {
        return 0.0;
    }
    ns as f64 / calls as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_figures_follow_design_formulas() {
        let inputs = vec![
            CompactionInput {
                number: 1,
                level: 1,
                size: 300,
                zones: vec![(4, 100), (5, 200)],
            },
            CompactionInput {
                number: 2,
                level: 2,
                size: 100,
                zones: vec![(5, 100)],
            },
        ];
        let zb = zone_bytes(&inputs);
        assert_eq!(zb, vec![(4, 100), (5, 300)]);
        // (100² + 300²) / 400² = 100000 / 160000.
        assert!((s_same(&zb) - 0.625).abs() < 1e-12);
        assert_eq!(s_same(&[(1, 7)]), 1.0);
        assert_eq!(s_same(&[]), 0.0);
        let inval = s_inval(&zb, 1000, |z| if z == 4 { 500 } else { 1000 });
        assert!((inval - 0.75).abs() < 1e-12);
    }

    #[test]
    fn write_amp_is_flush_plus_compaction_over_user() {
        let s = DbStats {
            user_bytes: 100,
            flush_bytes: 100,
            compaction_write_bytes: 150,
            ..DbStats::default()
        };
        assert!((s.lsm_write_amp() - 2.5).abs() < 1e-12);
        assert_eq!(DbStats::default().lsm_write_amp(), 0.0);
    }

    #[test]
    fn policy_costs_are_means_in_microseconds() {
        let s = DbStats {
            picker_ns: 9_000,
            picker_calls: 3,
            neighbors_ns: 500,
            neighbors_calls: 2,
            ..DbStats::default()
        };
        assert_eq!(s.picker_mean_us(), 3.0);
        assert_eq!(s.neighbors_mean_us(), 0.25);
        assert_eq!(DbStats::default().picker_mean_us(), 0.0);
    }
}
