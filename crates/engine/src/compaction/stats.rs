//! Per-level compaction statistics, RocksDB's "Compaction Stats" table
//! (`InternalStats::DumpCFMapStats` / `PrintLevelStats`). Work is booked on the level it
//! writes to: a flush on L0, a compaction on its output level, a trivial move on the level
//! it moves into.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::version::Version;

use super::pick::Compaction;

const KIB: f64 = 1024.0;
const GIB: f64 = KIB * KIB * KIB;

/// What one flush or compaction wrote (the job's result).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobOutput {
    /// Bytes of the tables the job wrote.
    pub bytes_written: u64,
    /// Tables the job wrote.
    pub files_written: u64,
    /// Entries read (RocksDB's KeyIn).
    pub records_in: u64,
    /// Entries read but not written (RocksDB's KeyDrop).
    pub records_dropped: u64,
    /// Wall time of the job (0 where time is not measured).
    pub micros: u64,
}

/// The work booked on one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Bytes read from levels other than this one (Rn).
    pub bytes_read_non_output: u64,
    /// Bytes read from this level (Rnp1).
    pub bytes_read_output: u64,
    /// Bytes written to this level by flushes and compactions (Write).
    pub bytes_written: u64,
    /// Bytes that arrived by trivial move (Moved).
    pub bytes_moved: u64,
    /// Files read from levels other than this one.
    pub files_read_non_output: u64,
    /// Files read from this level.
    pub files_read_output: u64,
    /// Files written to this level.
    pub files_written: u64,
    /// Flushes and compactions that wrote this level (Comp(cnt); trivial moves excluded,
    /// as in RocksDB).
    pub count: u64,
    /// Trivial moves into this level.
    pub moves: u64,
    /// Entries the jobs writing this level read (KeyIn).
    pub records_in: u64,
    /// Entries those jobs dropped (KeyDrop).
    pub records_dropped: u64,
    /// Time those jobs took, in microseconds (Comp(sec)).
    pub micros: u64,
}

impl LevelStats {
    /// Rn + Rnp1.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read_non_output + self.bytes_read_output
    }

    /// Bytes written beyond what was read from this level (Wnew; negative when the
    /// compaction shrank the level's data).
    pub fn bytes_new(&self) -> i128 {
        i128::from(self.bytes_written) - i128::from(self.bytes_read_output)
    }

    fn add(&mut self, o: &LevelStats) {
        self.bytes_read_non_output += o.bytes_read_non_output;
        self.bytes_read_output += o.bytes_read_output;
        self.bytes_written += o.bytes_written;
        self.bytes_moved += o.bytes_moved;
        self.files_read_non_output += o.files_read_non_output;
        self.files_read_output += o.files_read_output;
        self.files_written += o.files_written;
        self.count += o.count;
        self.moves += o.moves;
        self.records_in += o.records_in;
        self.records_dropped += o.records_dropped;
        self.micros += o.micros;
    }

    fn add_output(&mut self, out: &JobOutput) {
        self.bytes_written += out.bytes_written;
        self.files_written += out.files_written;
        self.records_in += out.records_in;
        self.records_dropped += out.records_dropped;
        self.micros += out.micros;
        self.count += 1;
    }

    fn is_used(&self) -> bool {
        self.count > 0 || self.moves > 0
    }
}

/// Compaction statistics of every level, plus the bytes flushed (the ingest that write
/// amplification is measured against).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionStats {
    levels: Vec<LevelStats>,
    flush_ingest: u64,
}

impl CompactionStats {
    /// Empty statistics for `num_levels` levels.
    pub fn new(num_levels: usize) -> CompactionStats {
        CompactionStats {
            levels: vec![LevelStats::default(); num_levels],
            flush_ingest: 0,
        }
    }

    /// Books a flush (memtable → L0).
    pub fn add_flush(&mut self, out: &JobOutput) {
        self.flush_ingest += out.bytes_written;
        self.level_mut(0).add_output(out);
    }

    /// Books a compaction that rewrote its inputs. Inputs from the output level itself
    /// (output-level files, or every input of an intra-level compaction) count as Rnp1.
    pub fn add_compaction(&mut self, c: &Compaction, out: &JobOutput) {
        let (start, output) = (c.inputs.len() as u64, c.output_inputs.len() as u64);
        let (start_bytes, output_bytes) = (c.start_level_bytes(), c.output_level_bytes());
        let stats = self.level_mut(c.output_level);
        if c.level == c.output_level {
            stats.bytes_read_output += start_bytes + output_bytes;
            stats.files_read_output += start + output;
        } else {
            stats.bytes_read_non_output += start_bytes;
            stats.files_read_non_output += start;
            stats.bytes_read_output += output_bytes;
            stats.files_read_output += output;
        }
        stats.add_output(out);
    }

    /// Books a trivial move (RocksDB's `IncBytesMoved`: bytes only, no compaction count).
    pub fn add_trivial_move(&mut self, c: &Compaction) {
        let stats = self.level_mut(c.output_level);
        stats.bytes_moved += c.start_level_bytes();
        stats.moves += 1;
    }

    /// Bytes written by flushes.
    pub fn flush_ingest(&self) -> u64 {
        self.flush_ingest
    }

    /// The statistics of `level` (empty beyond the last level).
    pub fn level(&self, level: usize) -> LevelStats {
        self.levels.get(level).cloned().unwrap_or_default()
    }

    /// All levels added up (the Sum row).
    pub fn sum(&self) -> LevelStats {
        let mut sum = LevelStats::default();
        for l in &self.levels {
            sum.add(l);
        }
        sum
    }

    /// RocksDB's per-level W-Amp: bytes written / bytes entering from above (the flush
    /// ingest for L0, Rn below).
    pub fn level_write_amp(&self, level: usize) -> f64 {
        let l = self.level(level);
        let input = if level == 0 {
            self.flush_ingest
        } else {
            l.bytes_read_non_output
        };
        ratio(l.bytes_written, input)
    }

    /// RocksDB's Sum W-Amp: every byte written by flushes and compactions / (flush ingest +
    /// 1).
    pub fn write_amp(&self) -> f64 {
        self.sum().bytes_written as f64 / (self.flush_ingest as f64 + 1.0)
    }

    /// The "Compaction Stats" table, laid out as RocksDB prints it (a subset of its
    /// columns; GB with three decimals, since zkv's runs are small). A level gets a row if
    /// it holds files or was written. `scores` are by level ([`super::scores_by_level`]).
    pub fn to_table(&self, version: &Version, scores: &[f64], compacting: &HashSet<u64>) -> String {
        let header = "Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) \
                      Wnew(GB) Moved(GB) W-Amp Comp(cnt)";
        let mut out = format!(
            "** Compaction Stats **\n{header}\n{}\n",
            "-".repeat(header.len())
        );
        let levels = self.levels.len().max(version.num_levels());
        let (mut files, mut busy, mut bytes) = (0usize, 0usize, 0u64);
        for level in 0..levels {
            let n = version.files(level).len();
            let b = version
                .files(level)
                .iter()
                .filter(|f| compacting.contains(&f.number))
                .count();
            let stats = self.level(level);
            if n == 0 && !stats.is_used() {
                continue;
            }
            (files, busy, bytes) = (files + n, busy + b, bytes + version.level_bytes(level));
            let row = Row {
                files: (n, b),
                bytes: version.level_bytes(level),
                score: scores.get(level).copied().unwrap_or(0.0),
                write_amp: self.level_write_amp(level),
            };
            row.print(&mut out, &format!("L{level}"), &stats);
        }
        let sum = Row {
            files: (files, busy),
            bytes,
            score: 0.0,
            write_amp: self.write_amp(),
        };
        sum.print(&mut out, "Sum", &self.sum());
        out
    }

    // In bounds: the resize above the index makes `level` a position of `levels`.
    #[allow(clippy::indexing_slicing)]
    fn level_mut(&mut self, level: usize) -> &mut LevelStats {
        if self.levels.len() <= level {
            self.levels.resize(level + 1, LevelStats::default());
        }
        &mut self.levels[level]
    }
}

/// The columns of a row that come from the version rather than the booked work.
struct Row {
    files: (usize, usize),
    bytes: u64,
    score: f64,
    write_amp: f64,
}

impl Row {
    fn print(&self, out: &mut String, name: &str, s: &LevelStats) {
        let gb = |bytes: u64| bytes as f64 / GIB;
        let _ = writeln!(
            out,
            "{name:>4} {:>6}/{:<3} {:>8} {:>5.1} {:>8.3} {:>7.3} {:>8.3} {:>9.3} {:>8.3} {:>9.3} {:>5.1} {:>9}",
            self.files.0,
            self.files.1,
            human_bytes(self.bytes),
            self.score,
            gb(s.bytes_read()),
            gb(s.bytes_read_non_output),
            gb(s.bytes_read_output),
            gb(s.bytes_written),
            s.bytes_new() as f64 / GIB,
            gb(s.bytes_moved),
            self.write_amp,
            s.count,
        );
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// RocksDB's `BytesToHumanString`: KB, MB, GB or TB with two decimals, never below KB.
fn human_bytes(bytes: u64) -> String {
    let (mut size, mut unit) = (bytes as f64 / KIB, "KB");
    for larger in ["MB", "GB", "TB"] {
        if size < KIB {
            break;
        }
        size /= KIB;
        unit = larger;
    }
    format!("{size:.2} {unit}")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::compaction::pick::CompactionReason;
    use crate::compaction::test_util::{file, version_of};

    const GB: u64 = 1 << 30;

    fn compaction(level: usize, inputs: &[(u64, u64)], outputs: &[(u64, u64)]) -> Compaction {
        let meta = |&(n, size): &(u64, u64)| Arc::new(file(n, b"a", b"z", size));
        Compaction {
            level,
            output_level: level + 1,
            inputs: inputs.iter().map(meta).collect(),
            output_inputs: outputs.iter().map(meta).collect(),
            grandparents: Vec::new(),
            trivial_move: outputs.is_empty(),
            score: 1.0,
            reason: CompactionReason::LevelSize,
            bottommost: false,
            max_output_file_size: 64 << 20,
            compact_cursor: None,
        }
    }

    fn written(bytes: u64) -> JobOutput {
        JobOutput {
            bytes_written: bytes,
            files_written: 1,
            ..JobOutput::default()
        }
    }

    #[test]
    fn work_is_booked_on_the_level_written() {
        let mut s = CompactionStats::new(4);
        s.add_flush(&written(2 * GB));
        s.add_flush(&written(2 * GB));
        s.add_compaction(
            &compaction(0, &[(1, 2 * GB), (2, 2 * GB)], &[(3, GB)]),
            &written(4 * GB),
        );
        s.add_trivial_move(&compaction(1, &[(4, GB)], &[]));
        assert_eq!(s.flush_ingest(), 4 * GB);
        let l0 = s.level(0);
        assert_eq!((l0.bytes_written, l0.count), (4 * GB, 2));
        assert_eq!(s.level_write_amp(0), 1.0);
        let l1 = s.level(1);
        assert_eq!(
            (l1.bytes_read_non_output, l1.bytes_read_output),
            (4 * GB, GB)
        );
        assert_eq!(
            (l1.bytes_written, l1.bytes_new(), l1.count),
            (4 * GB, i128::from(3 * GB), 1)
        );
        assert_eq!(s.level_write_amp(1), 1.0);
        let l2 = s.level(2);
        assert_eq!((l2.bytes_moved, l2.moves, l2.count), (GB, 1, 0));
        let sum = s.sum();
        assert_eq!(sum.bytes_written, 8 * GB);
        assert!((s.write_amp() - 2.0).abs() < 1e-6);
    }

    #[test]
    fn intra_level_inputs_count_as_output_level_reads() {
        let mut s = CompactionStats::new(3);
        let mut c = compaction(0, &[(1, 100), (2, 100)], &[]);
        c.output_level = 0;
        s.add_compaction(&c, &written(150));
        let l0 = s.level(0);
        assert_eq!((l0.bytes_read_non_output, l0.bytes_read_output), (0, 200));
        assert_eq!(l0.bytes_new(), -50);
    }

    #[test]
    fn table_lists_used_levels_and_the_sum() {
        let v = version_of(
            5,
            &[
                (0, file(1, b"a", b"c", 3 << 20)),
                (1, file(2, b"a", b"c", 5 << 20)),
                (1, file(3, b"d", b"f", 5 << 20)),
            ],
        );
        let mut s = CompactionStats::new(5);
        s.add_flush(&written(GB));
        s.add_compaction(&compaction(0, &[(9, GB)], &[(8, GB / 2)]), &written(GB));
        let busy: HashSet<u64> = [3].into();
        let table = s.to_table(&v, &[0.0, 2.5], &busy);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "** Compaction Stats **");
        assert!(
            lines[1].starts_with("Level    Files   Size     Score Read(GB)"),
            "{table}"
        );
        assert_eq!(lines[2].len(), lines[1].len());
        assert_eq!(lines.len(), 6, "L0, L1, Sum:\n{table}");
        assert!(
            lines[3].starts_with("  L0      1/0    3.00 MB   0.0"),
            "{table}"
        );
        assert!(
            lines[4].starts_with("  L1      2/1   10.00 MB   2.5    1.500   1.000    0.500"),
            "{table}"
        );
        assert!(
            lines[5].starts_with(" Sum      3/1   13.00 MB   0.0"),
            "{table}"
        );
        assert!(
            lines[5].trim_end().ends_with(" 2"),
            "two jobs in all:\n{table}"
        );
    }

    #[test]
    fn human_bytes_like_rocksdb() {
        assert_eq!(human_bytes(0), "0.00 KB");
        assert_eq!(human_bytes(1536), "1.50 KB");
        assert_eq!(human_bytes(96 << 20), "96.00 MB");
        assert_eq!(human_bytes(5 << 40), "5.00 TB");
        assert_eq!(human_bytes(u64::MAX), "16777216.00 TB");
    }
}
