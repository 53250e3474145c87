//! A run's flags as RocksDB's db_bench takes them, for `zkv compare`'s `rocksdb` scheme: the
//! workloads and every engine option with a db_bench equivalent, at the run's effective
//! values (a preset's and zkv's defaults too, since db_bench's own defaults differ: its bloom
//! filter is off, its hard pending-compaction limit is half RocksDB's). The flags without an
//! equivalent are refused in one message; the zkv-only ones that the comparison's command
//! line gives are left to the zkv schemes before this (docs/CLI.md, "The rocksdb scheme").

use zkv_bench::WorkloadName;
use zkv_engine::options::{ExecMode, Options};

use super::{dbbench, BenchArgs, Plan};
use crate::cli::error::{CliError, CliResult};

/// What a db_bench run of a zkv run's flags is.
#[derive(Clone, Debug)]
pub(crate) struct DbBenchPlan {
    /// db_bench's flags, `--name=value`, without `--db`.
    pub flags: Vec<String>,
    /// Key and value bytes of one put: a run's user bytes are its puts times this.
    pub put_bytes: u64,
    /// The workloads, comma separated (the report's `workload`).
    pub workload: String,
}

impl BenchArgs {
    /// The db_bench run of these flags, or one error naming every flag db_bench has no
    /// equivalent of.
    pub(crate) fn db_bench_plan(&self, plan: &Plan) -> CliResult<DbBenchPlan> {
        let refused = self.without_db_bench_equivalent();
        if !refused.is_empty() {
            return Err(CliError::invalid(format!(
                "db_bench has no equivalent of {}; leave {} out for the rocksdb scheme",
                refused.join(", "),
                if refused.len() == 1 { "it" } else { "them" }
            )));
        }
        let o = &plan.options;
        let mut flags = self.db_bench_workload_flags();
        flags.extend(engine_flags(o));
        flags.extend(self.db_bench_write_flags(o));
        flags.extend(blob_flags(o));
        // Exact byte counters, and each operation's latency as the client sees it (zkv's).
        flags.push("--statistics=1".into());
        flags.push("--histogram=1".into());
        Ok(DbBenchPlan {
            flags,
            put_bytes: self.key_size + self.value_size,
            workload: self.workload_names(),
        })
    }

    /// The flags of zkv's own engine and bench given with other values than their defaults,
    /// which a db_bench run does without (a comparison leaves them to its zkv schemes).
    pub(crate) fn zkv_engine_only_flags(&self) -> Vec<&'static str> {
        let given = |on: bool, flag| on.then_some(flag);
        [
            given(self.mode == ExecMode::Deterministic, "--mode deterministic"),
            given(!self.sim_cost.is_empty(), "--sim-cost"),
            given(self.verify, "--verify"),
            given(self.sample_interval.is_some(), "--sample-interval"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The flags given with a value db_bench cannot take, as the user wrote them.
    fn without_db_bench_equivalent(&self) -> Vec<String> {
        let mut refused: Vec<String> = (self.workload.0.iter())
            .filter(|w| !matches!(w, WorkloadName::DbBench(_)))
            .map(|w| format!("--workload {}", w.name()))
            .collect();
        if dbbench::compaction_pri(&self.picker).is_none() {
            let known = dbbench::rocksdb_pickers().join(", ");
            refused.push(format!("--picker {} (RocksDB's: {known})", self.picker));
        }
        if let Some(target) = self.target {
            refused.push(format!("--target {target}"));
        }
        if let Some(d) = self.duration_limit().filter(|d| d.subsec_nanos() != 0) {
            refused.push(format!(
                "--duration {} (whole seconds only)",
                d.as_secs_f64()
            ));
        }
        refused
    }

    /// `--benchmarks` (with db_bench's `waitforcompaction` where zkv waits too, and its
    /// `stats` last) and the workloads' own flags.
    fn db_bench_workload_flags(&self) -> Vec<String> {
        let mut benchmarks = self.workload_names();
        if self.wait_for_compaction {
            benchmarks.push_str(",waitforcompaction");
        }
        // db_bench's seed 0 takes the clock: zkv's default seed runs as db_bench's 1.
        let seed = self.seed.max(1);
        let mut flags = vec![
            format!("--benchmarks={benchmarks},stats"),
            format!("--num={}", self.num),
            format!("--key_size={}", self.key_size),
            format!("--value_size={}", self.value_size),
            format!("--seed={seed}"),
            format!("--threads={}", self.threads),
            format!("--readwritepercent={}", self.readwritepercent),
            format!("--seek_nexts={}", self.seek_nexts),
        ];
        let count = |n: Option<u64>| n.map_or(-1, |n| n as i64);
        if let Some(reads) = self.reads {
            flags.push(format!("--reads={}", count(reads.0)));
        }
        if let Some(deletes) = self.deletes {
            flags.push(format!("--deletes={}", count(deletes.0)));
        }
        if let Some(d) = self.duration_limit() {
            flags.push(format!("--duration={}", d.as_secs()));
        }
        flags
    }

    /// How writes go: WAL, sync, rate limit, values' compressibility.
    fn db_bench_write_flags(&self, o: &Options) -> Vec<String> {
        let mut flags = vec![
            format!("--disable_wal={}", u8::from(self.disable_wal)),
            format!("--sync={}", u8::from(self.sync)),
            format!("--compression_type={}", o.compression.name()),
            format!("--compression_ratio={}", self.value_ratio().unwrap_or(1.0)),
        ];
        if let Some(rate) = self.benchmark_write_rate_limit {
            flags.push(format!("--benchmark_write_rate_limit={rate}"));
        }
        flags
    }
}

/// The LSM's shape, its triggers and limits, its threads, the picker and the tables.
fn engine_flags(o: &Options) -> Vec<String> {
    let pri = dbbench::compaction_pri(&o.compaction_pri).unwrap_or("0");
    [
        ("write_buffer_size", o.write_buffer_size.to_string()),
        (
            "max_write_buffer_number",
            o.max_write_buffer_number.to_string(),
        ),
        ("num_levels", o.num_levels.to_string()),
        ("target_file_size_base", o.target_file_size_base.to_string()),
        (
            "target_file_size_multiplier",
            o.target_file_size_multiplier.to_string(),
        ),
        (
            "max_bytes_for_level_base",
            o.max_bytes_for_level_base.to_string(),
        ),
        (
            "max_bytes_for_level_multiplier",
            o.max_bytes_for_level_multiplier.to_string(),
        ),
        (
            "level0_file_num_compaction_trigger",
            o.level0_file_num_compaction_trigger.to_string(),
        ),
        (
            "level0_slowdown_writes_trigger",
            o.level0_slowdown_writes_trigger.to_string(),
        ),
        (
            "level0_stop_writes_trigger",
            o.level0_stop_writes_trigger.to_string(),
        ),
        (
            "soft_pending_compaction_bytes_limit",
            o.soft_pending_compaction_bytes_limit.to_string(),
        ),
        (
            "hard_pending_compaction_bytes_limit",
            o.hard_pending_compaction_bytes_limit.to_string(),
        ),
        ("max_compaction_bytes", o.max_compaction_bytes().to_string()),
        (
            "max_background_compactions",
            o.max_background_compactions.to_string(),
        ),
        (
            "max_background_flushes",
            o.max_background_flushes.to_string(),
        ),
        ("subcompactions", o.max_subcompactions.to_string()),
        ("compaction_pri", pri.to_string()),
        ("bloom_bits", o.bloom_bits_per_key.to_string()),
        ("block_size", o.block_size.to_string()),
        (
            "block_restart_interval",
            o.block_restart_interval.to_string(),
        ),
        ("cache_size", o.block_cache_size.to_string()),
        ("open_files", o.max_open_files.to_string()),
        (
            "allow_concurrent_memtable_write",
            u8::from(o.allow_concurrent_memtable_write).to_string(),
        ),
    ]
    .into_iter()
    .map(flag)
    .collect()
}

/// BlobDB's options, when blob files are on.
fn blob_flags(o: &Options) -> Vec<String> {
    if !o.enable_blob_files {
        return Vec::new();
    }
    let gc = o.enable_blob_garbage_collection;
    [
        ("enable_blob_files", "1".to_string()),
        ("min_blob_size", o.min_blob_size.to_string()),
        ("blob_file_size", o.blob_file_size.to_string()),
        (
            "blob_file_starting_level",
            o.blob_file_starting_level.to_string(),
        ),
        ("enable_blob_garbage_collection", u8::from(gc).to_string()),
        (
            "blob_garbage_collection_age_cutoff",
            o.blob_garbage_collection_age_cutoff.to_string(),
        ),
        (
            "blob_garbage_collection_force_threshold",
            o.blob_garbage_collection_force_threshold.to_string(),
        ),
    ]
    .into_iter()
    .map(flag)
    .collect()
}

/// `--name=value`, the one spelling db_bench's gflags always read as one flag.
fn flag((name, value): (&str, String)) -> String {
    format!("--{name}={value}")
}
