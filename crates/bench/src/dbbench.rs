//! db_bench's workloads (RocksDB `tools/db_bench_tool.cc`): how it turns an integer into a
//! key, which integers each benchmark draws, and in which order reads and writes come.
//!
//! - Key: `GenerateKeyFromInt` without a key prefix: the low `min(key_size, 8)` bytes of
//!   the integer, most significant first, then ASCII `'0'` up to `key_size` bytes. Keys of
//!   8 bytes or more sort as their integers do.
//! - `fillseq`: integers 0, 1, ..., num - 1 (`KeyGenerator` in SEQUENTIAL mode).
//! - `fillrandom`, `overwrite`: `rand % num`, with replacement (RANDOM mode), so some keys
//!   are written twice and others never; `overwrite` differs only in running on a filled
//!   store.
//! - `readrandom`: `rand % num` (`GetRandomKey` without an exponential range).
//! - `readrandomwriterandom`: a key `rand % num` per operation; in each batch of 100
//!   operations the first `readwritepercent` are reads and the rest writes.
//! - `fillbatch`: `fillseq`'s keys, written 1000 to a batch.
//! - `readseq`: one forward iterator from the first key, an operation per entry read.
//! - `readreverse`: the same backward, from the last key.
//! - `seekrandom`: a seek to `rand % num`, then `seek_nexts` nexts.
//! - `deleterandom`: a delete of `rand % num`, with replacement.
//! - `readwhilewriting`: `readrandom`'s reads, run by the reader threads while one more
//!   thread overwrites `rand % num` until they are done ([`DbBenchGenerator::endless`]
//!   makes that writer's stream, an `overwrite` without end).
//!
//! With `--threads N` every thread runs the whole count of its benchmark with a seed of its
//! own (db_bench's `ThreadState` seeds each thread apart): `--num` and `--reads` are per
//! thread, not divided among them.
//!
//! The read benchmarks (readrandom, readrandomwriterandom, readseq, seekrandom,
//! readwhilewriting's readers) run
//! `--reads` operations, deleterandom `--deletes`, the others `--num`; each is `--num`
//! unless given.
//!
//! db_bench draws from its own `Random64` (a Mersenne twister); zkv draws from the seeded
//! ChaCha of [`crate::gen::BenchRng`]: the same uniform `rand % num`, another sequence.

use crate::error::{check_range, Result};
use crate::gen::{rng_from_seed, BenchRng, RngCore};
use crate::op::{Op, OpKind};

/// The db_bench benchmarks zkv runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DbBenchWorkload {
    /// `fillseq`: inserts keys `0..num` in order.
    FillSeq,
    /// `fillrandom`: inserts `num` uniformly random keys of `0..num`.
    FillRandom,
    /// `overwrite`: updates `num` uniformly random keys.
    Overwrite,
    /// `readrandom`: gets `reads` uniformly random keys.
    ReadRandom,
    /// `readrandomwriterandom`: `reads` operations on random keys, `readwritepercent` gets
    /// per 100 and updates for the rest.
    ReadRandomWriteRandom,
    /// `fillbatch`: inserts keys `0..num` in order, [`FILLBATCH_ENTRIES`] per write batch.
    FillBatch,
    /// `readseq`: reads `reads` records forward with one iterator.
    ReadSeq,
    /// `readreverse`: reads `reads` records backward with one iterator.
    ReadReverse,
    /// `seekrandom`: `reads` seeks to random keys, each followed by `seek_nexts` reads.
    SeekRandom,
    /// `deleterandom`: deletes `deletes` uniformly random keys.
    DeleteRandom,
    /// `readwhilewriting`: readrandom's `reads` reads per reader thread, while one more
    /// thread overwrites random keys until the readers are done.
    ReadWhileWriting,
}

/// Entries per write batch of `fillbatch` (db_bench sets its batch size to this).
pub const FILLBATCH_ENTRIES: usize = 1000;

impl DbBenchWorkload {
    /// Every workload, in the order `--help` lists them.
    pub const ALL: [DbBenchWorkload; 11] = [
        Self::FillSeq,
        Self::FillRandom,
        Self::Overwrite,
        Self::ReadRandom,
        Self::ReadRandomWriteRandom,
        Self::FillBatch,
        Self::ReadSeq,
        Self::ReadReverse,
        Self::SeekRandom,
        Self::DeleteRandom,
        Self::ReadWhileWriting,
    ];

    /// db_bench's benchmark name.
    pub fn name(self) -> &'static str {
        match self {
            Self::FillSeq => "fillseq",
            Self::FillRandom => "fillrandom",
            Self::Overwrite => "overwrite",
            Self::ReadRandom => "readrandom",
            Self::ReadRandomWriteRandom => "readrandomwriterandom",
            Self::FillBatch => "fillbatch",
            Self::ReadSeq => "readseq",
            Self::ReadReverse => "readreverse",
            Self::SeekRandom => "seekrandom",
            Self::DeleteRandom => "deleterandom",
            Self::ReadWhileWriting => "readwhilewriting",
        }
    }

    /// The workload of that db_bench name, if zkv runs it.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Whether `--reads` (not `--num`) sets how many operations it runs, as in db_bench.
    pub fn runs_reads(self) -> bool {
        matches!(
            self,
            Self::ReadRandom
                | Self::ReadRandomWriteRandom
                | Self::ReadSeq
                | Self::ReadReverse
                | Self::SeekRandom
                | Self::ReadWhileWriting
        )
    }

    /// Whether db_bench's `--duration` bounds it: the benchmarks of random keys. The
    /// sequential ones (fillseq, fillbatch, readseq, readreverse) always run to their end
    /// in db_bench.
    pub fn timed(self) -> bool {
        !matches!(
            self,
            Self::FillSeq | Self::FillBatch | Self::ReadSeq | Self::ReadReverse
        )
    }

    /// Entries per write: [`FILLBATCH_ENTRIES`] for fillbatch, 1 for the others.
    pub fn entries_per_batch(self) -> usize {
        match self {
            Self::FillBatch => FILLBATCH_ENTRIES,
            _ => 1,
        }
    }
}

/// db_bench's flags that shape the request stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbBenchConfig {
    /// `--num`: operations, and the key space `0..num`.
    pub num: u64,
    /// `--key_size` (zkv: `--key-size`), in bytes.
    pub key_size: usize,
    /// `--readwritepercent`: reads per 100 operations of `readrandomwriterandom`.
    pub read_write_percent: u32,
    /// `--reads`: operations of the read benchmarks (readrandomwriterandom's writes
    /// included, as db_bench counts them without `--writes`); `None`: `num`.
    pub reads: Option<u64>,
    /// `--deletes`: operations of `deleterandom`; `None`: `num`.
    pub deletes: Option<u64>,
    /// `--seek_nexts`: records read after each seek of `seekrandom`.
    pub seek_nexts: u64,
}

impl Default for DbBenchConfig {
    /// db_bench's defaults: 1 000 000 keys of 16 bytes, 90 % reads, `num` reads and
    /// deletes, no nexts after a seek.
    fn default() -> Self {
        DbBenchConfig {
            num: 1_000_000,
            key_size: 16,
            read_write_percent: 90,
            reads: None,
            deletes: None,
            seek_nexts: 0,
        }
    }
}

/// Largest `key_size` accepted: far above any benchmark's keys, small enough that a typo
/// cannot ask for gigabytes per key.
pub const MAX_KEY_SIZE: usize = 1 << 20;

impl DbBenchConfig {
    /// Checks every field's range: at least one operation and key, keys of 1 byte to
    /// [`MAX_KEY_SIZE`], `read_write_percent` at most 100.
    pub fn validate(&self) -> Result<()> {
        check_range("num", self.num, 1, i64::MAX as u64)?;
        check_range("key size", self.key_size as u64, 1, MAX_KEY_SIZE as u64)?;
        let percent = u64::from(self.read_write_percent);
        check_range("readwritepercent", percent, 0, 100)?;
        check_range("reads", self.reads.unwrap_or(1), 1, i64::MAX as u64)?;
        check_range("deletes", self.deletes.unwrap_or(1), 1, i64::MAX as u64)
    }

    /// Operations `workload` runs: `--reads`, `--deletes` or `--num`.
    pub fn operations(&self, workload: DbBenchWorkload) -> u64 {
        match workload {
            w if w.runs_reads() => self.reads.unwrap_or(self.num),
            DbBenchWorkload::DeleteRandom => self.deletes.unwrap_or(self.num),
            _ => self.num,
        }
    }
}

/// db_bench's `GenerateKeyFromInt` (no prefix): the key of `v`.
pub fn key_from_int(v: u64, key_size: usize) -> Vec<u8> {
    let mut key = Vec::with_capacity(key_size);
    key.extend(v.to_be_bytes().iter().skip(8 - key_size.min(8)));
    key.resize(key_size, b'0');
    key
}

/// The request stream of one db_bench benchmark: [`DbBenchConfig::operations`] of them.
#[derive(Debug, Clone)]
pub struct DbBenchGenerator {
    workload: DbBenchWorkload,
    config: DbBenchConfig,
    rng: BenchRng,
    total: u64,
    done: u64,
    get_weight: u32,
    put_weight: u32,
}

impl DbBenchGenerator {
    /// The stream of `workload` under `config` (validated first); the same seed gives the
    /// same stream.
    pub fn new(workload: DbBenchWorkload, config: DbBenchConfig, seed: u64) -> Result<Self> {
        config.validate()?;
        Ok(DbBenchGenerator {
            workload,
            config,
            rng: rng_from_seed(seed),
            total: config.operations(workload),
            done: 0,
            get_weight: 0,
            put_weight: 0,
        })
    }

    /// The benchmark it generates.
    pub fn workload(&self) -> DbBenchWorkload {
        self.workload
    }

    /// Operations left.
    pub fn remaining(&self) -> u64 {
        self.total - self.done
    }

    /// The same stream without an end: readwhilewriting's writer, which writes until the
    /// readers are done.
    pub fn endless(mut self) -> Self {
        self.total = u64::MAX;
        self
    }

    /// The next operation; `None` once [`DbBenchConfig::operations`] were generated.
    pub fn next_op(&mut self) -> Option<Op> {
        if self.done == self.total {
            return None;
        }
        let seq = self.done;
        self.done += 1;
        let (kind, keynum) = match self.workload {
            DbBenchWorkload::FillSeq | DbBenchWorkload::FillBatch => (OpKind::Insert, seq),
            DbBenchWorkload::FillRandom => (OpKind::Insert, self.random_key()),
            DbBenchWorkload::Overwrite => (OpKind::Update, self.random_key()),
            DbBenchWorkload::ReadRandom | DbBenchWorkload::ReadWhileWriting => {
                (OpKind::Read, self.random_key())
            }
            DbBenchWorkload::ReadRandomWriteRandom => {
                let keynum = self.random_key();
                (self.next_mixed_kind(), keynum)
            }
            DbBenchWorkload::SeekRandom => {
                let len = self.config.seek_nexts;
                (OpKind::Scan { len }, self.random_key())
            }
            DbBenchWorkload::DeleteRandom => (OpKind::Delete, self.random_key()),
            // The iterator decides the keys; the op only says "one more".
            DbBenchWorkload::ReadSeq | DbBenchWorkload::ReadReverse => {
                let kind = match self.workload {
                    DbBenchWorkload::ReadSeq => OpKind::Next,
                    _ => OpKind::Prev,
                };
                return Some(Op {
                    kind,
                    keynum: seq as i64,
                    key: Vec::new(),
                    value_size: None,
                });
            }
        };
        Some(Op {
            kind,
            keynum: keynum as i64,
            key: key_from_int(keynum, self.config.key_size),
            value_size: None,
        })
    }

    /// `rand % num`, db_bench's uniform key.
    fn random_key(&mut self) -> u64 {
        self.rng.next_u64() % self.config.num
    }

    /// db_bench's batches of 100: `readwritepercent` gets first, then the puts.
    fn next_mixed_kind(&mut self) -> OpKind {
        if self.get_weight == 0 && self.put_weight == 0 {
            self.get_weight = self.config.read_write_percent;
            self.put_weight = 100 - self.get_weight;
        }
        if self.get_weight > 0 {
            self.get_weight -= 1;
            OpKind::Read
        } else {
            self.put_weight -= 1;
            OpKind::Update
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::stats::{chi_square_bound, chi_square_uniform};
    use proptest::prelude::*;

    #[test]
    fn keys_are_big_endian_then_ascii_zeros() {
        assert_eq!(
            key_from_int(0x0102, 16),
            b"\0\0\0\0\0\0\x01\x0200000000".to_vec()
        );
        assert_eq!(key_from_int(0x0102, 8), b"\0\0\0\0\0\0\x01\x02".to_vec());
        // Shorter keys keep the low bytes, as db_bench's shift loop does.
        assert_eq!(key_from_int(0x01_0203_0405, 4), vec![2, 3, 4, 5]);
        assert_eq!(key_from_int(7, 1), vec![7]);
    }

    proptest! {
        #[test]
        fn keys_sort_as_integers(a: u64, b: u64, size in 8usize..40) {
            let (ka, kb) = (key_from_int(a, size), key_from_int(b, size));
            prop_assert_eq!(ka.len(), size);
            prop_assert_eq!(a.cmp(&b), ka.cmp(&kb));
        }
    }

    fn ops(w: DbBenchWorkload, num: u64, seed: u64) -> Vec<Op> {
        let config = DbBenchConfig {
            num,
            ..DbBenchConfig::default()
        };
        let mut g = DbBenchGenerator::new(w, config, seed).unwrap();
        std::iter::from_fn(|| g.next_op()).collect()
    }

    #[test]
    fn fillseq_is_sequential() {
        let all = ops(DbBenchWorkload::FillSeq, 1000, 1);
        assert_eq!(all.len(), 1000);
        for (i, op) in all.iter().enumerate() {
            assert_eq!((op.kind, op.keynum), (OpKind::Insert, i as i64));
            assert_eq!(op.key, key_from_int(i as u64, 16));
        }
    }

    #[test]
    fn random_keys_are_uniform() {
        for w in [DbBenchWorkload::FillRandom, DbBenchWorkload::ReadRandom] {
            let all = ops(w, 200_000, 2);
            let mut counts = vec![0u64; 200];
            for op in &all {
                counts[(op.keynum % 200) as usize] += 1;
            }
            let chi = chi_square_uniform(&counts);
            assert!(
                chi < chi_square_bound(199),
                "{}: chi-square {chi}",
                w.name()
            );
        }
        let over = ops(DbBenchWorkload::Overwrite, 10, 3);
        assert!(over.iter().all(|op| op.kind == OpKind::Update));
    }

    #[test]
    fn read_write_mix_comes_in_batches_of_100() {
        let all = ops(DbBenchWorkload::ReadRandomWriteRandom, 250, 4);
        let pattern = |i: usize| {
            if i % 100 < 90 {
                OpKind::Read
            } else {
                OpKind::Update
            }
        };
        for (i, op) in all.iter().enumerate() {
            assert_eq!(op.kind, pattern(i), "op {i}");
        }
    }

    #[test]
    fn all_reads_or_all_writes() {
        for (pct, kind) in [(100, OpKind::Read), (0, OpKind::Update)] {
            let config = DbBenchConfig {
                num: 300,
                key_size: 8,
                read_write_percent: pct,
                ..DbBenchConfig::default()
            };
            let mut g =
                DbBenchGenerator::new(DbBenchWorkload::ReadRandomWriteRandom, config, 5).unwrap();
            while let Some(op) = g.next_op() {
                assert_eq!(op.kind, kind);
            }
        }
    }

    fn ops_with(w: DbBenchWorkload, config: DbBenchConfig) -> Vec<Op> {
        let mut g = DbBenchGenerator::new(w, config, 6).unwrap();
        std::iter::from_fn(|| g.next_op()).collect()
    }

    #[test]
    fn reads_and_deletes_count_their_workloads_operations() {
        let config = DbBenchConfig {
            num: 500,
            reads: Some(120),
            deletes: Some(70),
            seek_nexts: 4,
            ..DbBenchConfig::default()
        };
        let count = |w| ops_with(w, config).len();
        for w in DbBenchWorkload::ALL {
            let want = match w {
                DbBenchWorkload::DeleteRandom => 70,
                w if w.runs_reads() => 120,
                _ => 500,
            };
            assert_eq!(count(w), want, "{}", w.name());
            assert_eq!(config.operations(w), want as u64, "{}", w.name());
        }
        // Without --reads and --deletes every workload runs --num operations.
        let plain = DbBenchConfig {
            num: 500,
            ..DbBenchConfig::default()
        };
        assert!(DbBenchWorkload::ALL
            .iter()
            .all(|&w| plain.operations(w) == 500));
    }

    #[test]
    fn new_workloads_draw_as_db_bench() {
        let config = DbBenchConfig {
            num: 1000,
            seek_nexts: 3,
            ..DbBenchConfig::default()
        };
        // fillbatch: fillseq's keys (the runner writes them 1000 to a batch).
        let batch = ops_with(DbBenchWorkload::FillBatch, config);
        assert_eq!(batch, ops_with(DbBenchWorkload::FillSeq, config));
        assert_eq!(DbBenchWorkload::FillBatch.entries_per_batch(), 1000);
        assert_eq!(DbBenchWorkload::FillSeq.entries_per_batch(), 1);
        // readseq: one step of the iterator per operation, no key of its own.
        let seq = ops_with(DbBenchWorkload::ReadSeq, config);
        assert!(seq
            .iter()
            .all(|op| op.kind == OpKind::Next && op.key.is_empty()));
        let reverse = ops_with(DbBenchWorkload::ReadReverse, config);
        assert_eq!(reverse.len(), seq.len());
        assert!(reverse
            .iter()
            .all(|op| op.kind == OpKind::Prev && op.key.is_empty()));
        // seekrandom and deleterandom: random keys of 0..num.
        let seeks = ops_with(DbBenchWorkload::SeekRandom, config);
        assert!(seeks.iter().all(|op| op.kind == OpKind::Scan { len: 3 }));
        let deletes = ops_with(DbBenchWorkload::DeleteRandom, config);
        assert!(deletes.iter().all(|op| op.kind == OpKind::Delete));
        for op in seeks.iter().chain(&deletes) {
            assert!((0..1000).contains(&op.keynum));
            assert_eq!(op.key, key_from_int(op.keynum as u64, 16));
        }
        let distinct: std::collections::HashSet<i64> = deletes.iter().map(|op| op.keynum).collect();
        assert!(
            distinct.len() > 500 && distinct.len() < 1000,
            "{}",
            distinct.len()
        );
    }

    #[test]
    fn readwhilewriting_reads_and_its_writer_never_ends() {
        let config = DbBenchConfig {
            num: 100,
            reads: Some(50),
            ..DbBenchConfig::default()
        };
        let reads = ops_with(DbBenchWorkload::ReadWhileWriting, config);
        assert_eq!(reads.len(), 50);
        assert!(reads.iter().all(|op| op.kind == OpKind::Read));
        let g = DbBenchGenerator::new(DbBenchWorkload::Overwrite, config, 7).unwrap();
        let mut writer = g.endless();
        for _ in 0..1000 {
            let op = writer.next_op().unwrap();
            assert_eq!(op.kind, OpKind::Update);
            assert!((0..100).contains(&op.keynum));
        }
    }

    #[test]
    fn only_random_benchmarks_are_timed() {
        let timed: Vec<&str> = DbBenchWorkload::ALL
            .into_iter()
            .filter(|w| w.timed())
            .map(DbBenchWorkload::name)
            .collect();
        assert_eq!(
            timed,
            [
                "fillrandom",
                "overwrite",
                "readrandom",
                "readrandomwriterandom",
                "seekrandom",
                "deleterandom",
                "readwhilewriting"
            ]
        );
    }

    #[test]
    fn bad_configs_are_errors() {
        let ok = DbBenchConfig::default();
        for bad in [
            DbBenchConfig { num: 0, ..ok },
            DbBenchConfig { key_size: 0, ..ok },
            DbBenchConfig {
                key_size: MAX_KEY_SIZE + 1,
                ..ok
            },
            DbBenchConfig {
                read_write_percent: 101,
                ..ok
            },
            DbBenchConfig {
                reads: Some(0),
                ..ok
            },
            DbBenchConfig {
                deletes: Some(0),
                ..ok
            },
        ] {
            assert!(DbBenchGenerator::new(DbBenchWorkload::FillSeq, bad, 0).is_err());
        }
        assert_eq!(
            DbBenchWorkload::from_name("fillrandom"),
            Some(DbBenchWorkload::FillRandom)
        );
        assert_eq!(DbBenchWorkload::from_name("fill"), None);
    }
}
