//! Running the workloads against the database: one operation at a time (db_bench's and
//! YCSB's single client thread), timing each put, get, scan and delete, feeding the oracle
//! and sampling the time series. Writes can be paced to a byte rate, and mixgraph's
//! operations to its sine rate, both on the database's clock, which also ends a db_bench
//! workload at `--duration`.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use zkv_bench::mixgraph::{RateSchedule, SineRate};
use zkv_bench::{DbBenchGenerator, MixGraphGenerator, Op, OpKind, ValueGenerator, YcsbWorkload};
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::iter::DbIter;
use zkv_zonefs::fs::InvalidRatios;

use super::progress::Progress;
use super::report::{rate_line, result_line};
use super::verify::Oracle;
use crate::cli::error::{CliError, CliResult};
use crate::cli::Out;

/// One workload of `--workload`, with its request stream ready.
pub enum Job {
    DbBench(Box<DbBenchGenerator>),
    /// db_bench's mixgraph, paced by its sine rate when it has one.
    MixGraph(Box<MixGraphGenerator>),
    /// YCSB: the load phase, then the run phase, on the same generator (each if asked
    /// for); every write puts the spec's value length (the ops carry it).
    Ycsb {
        name: &'static str,
        workload: Box<YcsbWorkload>,
        load: bool,
        run: bool,
    },
    /// No request for this long (`idle`): the database's clock runs on (virtual time in
    /// deterministic mode), its background work goes on.
    Idle(Duration),
}

/// What one phase (a db_bench benchmark, or a YCSB load or run) did.
#[derive(Clone, Debug, Default)]
pub struct PhaseResult {
    pub name: String,
    pub ops: u64,
    pub puts: u64,
    pub gets: u64,
    pub scans: u64,
    pub deletes: u64,
    /// Gets that found their key.
    pub found: u64,
    /// Key + value bytes written by puts and returned by gets and scans (db_bench's MB/s).
    pub bytes: u64,
    pub seconds: f64,
    /// Deterministic mode: the phase's length on the database's virtual clock.
    pub virtual_seconds: Option<f64>,
    /// Seeks whose iterator landed on the key sought (db_bench's seek "found").
    pub seek_found: u64,
    /// Records the scans returned.
    pub scanned: u64,
    /// Value bytes the puts wrote.
    pub value_bytes: u64,
    /// mixgraph's phase: its line ends with db_bench's MixGraph summary.
    pub mixgraph: bool,
    /// mixgraph with `--sine-mix-rate`: the rate and the steps the phase reached.
    pub rate: Option<RateRecord>,
    /// A YCSB phase: the latency of each kind of operation, as YCSB measures it.
    pub ycsb: Option<OpLatency>,
}

/// YCSB's measurements of one phase: per kind of operation (READ, UPDATE, INSERT, SCAN,
/// READ-MODIFY-WRITE, in YCSB's order), the latency of each operation in nanoseconds, all
/// its calls together (a read-modify-write's get and put), without the time a rate limit
/// held it back.
#[derive(Clone, Debug)]
pub struct OpLatency(pub Vec<(&'static str, Histogram<u64>)>);

impl OpLatency {
    fn new() -> CliResult<OpLatency> {
        let kinds = [
            OpKind::Read,
            OpKind::Update,
            OpKind::Insert,
            OpKind::Scan { len: 0 },
            OpKind::ReadModifyWrite,
        ];
        let histograms = kinds
            .into_iter()
            .map(|k| Ok((k.name(), histogram()?)))
            .collect::<CliResult<_>>()?;
        Ok(OpLatency(histograms))
    }

    fn record(&mut self, kind: OpKind, ns: u64) {
        let kind = kind.name();
        if let Some((_, h)) = self.0.iter_mut().find(|(name, _)| *name == kind) {
            h.saturating_record(ns.max(1));
        }
    }
}

/// The sine rate of a mixgraph phase: its parameters, and each step it reached as (seconds
/// since the phase started, operations per second), the first being db_bench's initial
/// rate.
#[derive(Clone, Debug)]
pub struct RateRecord {
    pub sine: SineRate,
    pub steps: Vec<(f64, f64)>,
}

/// Per-operation latencies in nanoseconds, one histogram per kind of call.
pub struct Latency {
    pub put: Histogram<u64>,
    pub get: Histogram<u64>,
    pub scan: Histogram<u64>,
    pub delete: Histogram<u64>,
}

/// Up to an hour per operation; longer ones are recorded as an hour.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

fn histogram() -> CliResult<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3)
        .map_err(|e| CliError::invalid(format!("latency histogram: {e}")))
}

impl Latency {
    fn new() -> CliResult<Latency> {
        Ok(Latency {
            put: histogram()?,
            get: histogram()?,
            scan: histogram()?,
            delete: histogram()?,
        })
    }
}

/// Records one call's latency; returns it in nanoseconds, for the operation's total.
fn record(h: &mut Histogram<u64>, elapsed: Duration) -> u64 {
    let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
    h.saturating_record(ns.max(1));
    ns
}

/// One point of the time series, taken every `sample_interval` operations.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Operations done so far, over all phases (the x axis; not wall time, so that
    /// deterministic runs give identical series).
    pub t: u64,
    pub phase: String,
    pub free_ratio: f64,
    pub gc_copy_bytes: u64,
    pub device_write_bytes: u64,
    pub zone_resets: u64,
    pub stall_ns: u64,
    /// Full zones now, and how many of them fall in each [`INVALID_BUCKETS`] bucket of
    /// invalid ratio.
    pub full_zones: u64,
    pub invalid_ratios: [u64; INVALID_BUCKETS],
}

/// Buckets of a time-series point's invalid-ratio distribution: bucket b < 20 counts the
/// full zones whose invalid ratio is in [b/20, (b+1)/20), bucket 20 those entirely invalid
/// (the HotStorage'22 paper's Figure 4 shows the same distribution in 5 % steps, and a
/// zone that is all invalid is the one a reset frees without copying).
pub const INVALID_BUCKETS: usize = 21;

/// The full zones' invalid ratios counted into [`INVALID_BUCKETS`] buckets.
pub fn invalid_buckets(d: &InvalidRatios) -> [u64; INVALID_BUCKETS] {
    let steps = (INVALID_BUCKETS - 1) as f64;
    let mut counts = [0u64; INVALID_BUCKETS];
    for &r in &d.ratios {
        let b = if r >= 1.0 {
            INVALID_BUCKETS - 1
        } else {
            // Ratios are never negative; a NaN (impossible: capacity > 0) lands in 0.
            ((r.max(0.0) * steps) as usize).min(INVALID_BUCKETS - 2)
        };
        counts[b] += 1;
    }
    counts
}

/// Everything the run measured.
pub struct Measured {
    pub phases: Vec<PhaseResult>,
    pub latency: Latency,
    pub samples: Vec<Sample>,
    pub oracle: Option<Oracle>,
}

pub struct Runner<'a> {
    db: &'a Db,
    write: WriteOptions,
    values: ValueGenerator,
    value_size: usize,
    value: Vec<u8>,
    sample_interval: u64,
    ops_done: u64,
    pacer: Option<Pacer>,
    /// Set while a mixgraph phase runs: its sine rate pacer, if it has one.
    mix: Option<Option<OpPacer>>,
    /// db_bench's `--duration`: how long a timed workload runs at most.
    duration: Option<Duration>,
    /// YCSB's `-target`: every operation paced to this many per second.
    target: Option<Pacer>,
    /// Set while a YCSB phase runs: its operations are measured one by one.
    ycsb: bool,
    /// Nanoseconds the calls of the operation running took so far.
    op_ns: u64,
    /// Set while fillbatch runs: the batch being filled.
    batch: Option<Batch>,
    /// Set while readseq runs, from its first operation: the iterator it reads.
    seq: Option<DbIter>,
    /// When the runner started (the threaded mode's clock).
    origin: Instant,
    progress: Progress,
    m: Measured,
}

/// db_bench's `--benchmark_write_rate_limit`: writes (key and value bytes) paced to `rate`
/// bytes per second on the database's clock; also YCSB's `-target`, `rate` operations per
/// second.
struct Pacer {
    rate: u64,
    due: Due,
}

/// Holds the caller back until `pacer` (if any) allows `units` more (bytes, operations).
fn wait_for(
    pacer: &mut Option<Pacer>,
    db: &Db,
    origin: Instant,
    units: u64,
) -> zkv_engine::Result<()> {
    let Some(p) = pacer else {
        return Ok(());
    };
    let now = clock(db, origin);
    let cost = Duration::from_secs_f64(units as f64 / p.rate as f64);
    match p.due.charge(now, cost, slack(db)) {
        Some(wait) => db.pass_time(wait),
        None => Ok(()),
    }
}

/// mixgraph's `--sine-mix-rate`: every operation paced to the schedule's rate at the time,
/// counted from the phase's start. db_bench splits the rate between a read and a write
/// limiter by the mix's shares, which together pace the mix at the same total.
struct OpPacer {
    schedule: RateSchedule,
    start: Duration,
    due: Due,
}

/// fillbatch's batch being filled, and the key and value bytes of its entries.
struct Batch {
    entries: usize,
    batch: WriteBatch,
    bytes: u64,
    value_bytes: u64,
}

impl Batch {
    fn new(entries: usize) -> Batch {
        Batch {
            entries,
            batch: WriteBatch::new(),
            bytes: 0,
            value_bytes: 0,
        }
    }
}

/// When the work paced so far is due, as RocksDB's rate limiter paces it: work held back (a
/// stall, a slow stretch) gets at most [`PACE_REFILL`] of unused rate to catch up with,
/// never the whole backlog.
#[derive(Default)]
struct Due {
    next: Duration,
}

impl Due {
    /// Adds `cost` of work at `now`; returns how long to wait, if the work is ahead by
    /// more than `slack`.
    fn charge(&mut self, now: Duration, cost: Duration, slack: Duration) -> Option<Duration> {
        self.next = self
            .next
            .max(now.saturating_sub(PACE_REFILL))
            .saturating_add(cost);
        (self.next > now + slack).then(|| self.next - now)
    }
}

/// RocksDB's rate limiter refills every 100 ms and keeps no more than about one refill of
/// unused bytes.
const PACE_REFILL: Duration = Duration::from_millis(100);

/// Threaded mode sleeps only once writes are this far ahead (a sleep costs more than a
/// put); the virtual clock waits exactly.
const PACE_SLACK: Duration = Duration::from_millis(1);

/// The database's clock: virtual time in deterministic mode, else the wall time since the
/// runner started.
fn clock(db: &Db, origin: Instant) -> Duration {
    db.virtual_time().unwrap_or_else(|| origin.elapsed())
}

/// How far ahead paced work may run before the runner waits: threaded mode sleeps only
/// once it is [`PACE_SLACK`] ahead; the virtual clock waits exactly.
fn slack(db: &Db) -> Duration {
    match db.virtual_time() {
        Some(_) => Duration::ZERO,
        None => PACE_SLACK,
    }
}

impl<'a> Runner<'a> {
    pub fn new(
        db: &'a Db,
        write: WriteOptions,
        seed: u64,
        value_size: usize,
        sample_interval: u64,
        verify: bool,
        progress: Progress,
    ) -> CliResult<Runner<'a>> {
        Ok(Runner {
            db,
            write,
            values: ValueGenerator::new(seed),
            value_size,
            value: Vec::with_capacity(value_size),
            sample_interval: sample_interval.max(1),
            ops_done: 0,
            pacer: None,
            mix: None,
            duration: None,
            target: None,
            ycsb: false,
            op_ns: 0,
            batch: None,
            seq: None,
            origin: Instant::now(),
            progress,
            m: Measured {
                phases: Vec::new(),
                latency: Latency::new()?,
                samples: Vec::new(),
                oracle: verify.then(Oracle::default),
            },
        })
    }

    /// The store is an existing database: what a key held before this run wrote it is not
    /// known to the oracle.
    pub fn on_existing_db(mut self, existing: bool) -> Self {
        if let (true, Some(oracle)) = (existing, &mut self.m.oracle) {
            oracle.set_existing_db();
        }
        self
    }

    /// Paces every operation to `rate` per second (`None`: as fast as they go).
    pub fn with_target(mut self, rate: Option<u64>) -> Self {
        self.target = rate.map(|rate| Pacer {
            rate: rate.max(1),
            due: Due::default(),
        });
        self
    }

    /// Values of which only `ratio` is random (`ValueGenerator::with_compression_ratio`).
    pub fn with_compression_ratio(mut self, ratio: f64) -> Self {
        self.values = self.values.with_compression_ratio(ratio);
        self
    }

    /// Paces the writes of every workload to `rate` bytes per second (`None`: as fast as
    /// they go).
    pub fn with_write_rate_limit(mut self, rate: Option<u64>) -> Self {
        self.pacer = rate.map(|rate| Pacer {
            rate: rate.max(1),
            due: Due::default(),
        });
        self
    }

    /// Ends each timed workload (db_bench's random ones and mixgraph) after `limit` on the
    /// database's clock (virtual in deterministic mode); `None`: when its operations are
    /// done.
    pub fn with_duration(mut self, limit: Option<Duration>) -> Self {
        self.duration = limit;
        self
    }

    /// Holds the writer back until the rate limit allows `bytes` more.
    fn pace(&mut self, bytes: u64) -> zkv_engine::Result<()> {
        let (db, origin) = (self.db, self.origin);
        wait_for(&mut self.pacer, db, origin, bytes)
    }

    /// Holds the next operation back until `--target` allows it.
    fn pace_target(&mut self) -> zkv_engine::Result<()> {
        let (db, origin) = (self.db, self.origin);
        wait_for(&mut self.target, db, origin, 1)
    }

    /// Holds mixgraph back until its sine rate allows one more operation, and records the
    /// rate's steps as they come.
    fn pace_op(&mut self, r: &mut PhaseResult) -> zkv_engine::Result<()> {
        let Some(Some(p)) = &mut self.mix else {
            return Ok(());
        };
        let now = clock(self.db, self.origin);
        let step = p.schedule.step();
        let rate = p.schedule.rate_at(now.saturating_sub(p.start));
        if let (true, Some(record)) = (p.schedule.step() != step, &mut r.rate) {
            let at = p.schedule.step_start(p.schedule.step()).as_secs_f64();
            record.steps.push((at, rate));
        }
        // The rate is positive (the schedule keeps only positive ones); one so small that
        // its cost overflows a Duration waits for ever, as db_bench's limiter would.
        let cost = Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::MAX);
        match p.due.charge(now, cost, slack(self.db)) {
            Some(wait) => self.db.pass_time(wait),
            None => Ok(()),
        }
    }

    /// Starts the mixgraph pacer's clock at the phase's start; the phase's record of its
    /// rate steps starts with the initial rate.
    fn start_mix(&mut self, r: &mut PhaseResult) {
        let Some(mix) = &mut self.mix else {
            return;
        };
        r.mixgraph = true;
        if let Some(p) = mix {
            let now = clock(self.db, self.origin);
            p.start = now;
            p.due.next = now;
            r.rate = Some(RateRecord {
                sine: p.schedule.sine(),
                steps: vec![(0.0, p.schedule.rate_at(Duration::ZERO))],
            });
        }
    }

    /// Runs the jobs in order, printing each phase's line as it ends. A failure (e.g. out
    /// of space) stops the run; what was measured up to it is kept and returned with it.
    pub fn run(mut self, jobs: Vec<Job>, out: &mut Out) -> (Measured, Option<CliError>) {
        self.sample("start");
        let mut failed = None;
        for job in jobs {
            if let Err(e) = self.run_job(job, out) {
                failed = Some(e);
                break;
            }
        }
        (self.m, failed)
    }

    fn run_job(&mut self, job: Job, out: &mut Out) -> CliResult {
        match job {
            Job::DbBench(mut g) => {
                let w = g.workload();
                let limit = self.duration.filter(|_| w.timed());
                let entries = w.entries_per_batch();
                self.batch = (entries > 1).then(|| Batch::new(entries));
                let total = g.remaining();
                let done = self.phase(w.name(), total, limit, out, || Ok(g.next_op()));
                self.batch = None;
                done
            }
            Job::MixGraph(mut g) => {
                self.mix = Some(g.rate_schedule().map(|schedule| OpPacer {
                    schedule,
                    start: Duration::ZERO,
                    due: Due::default(),
                }));
                let total = g.remaining();
                let done = self.phase(
                    zkv_bench::workload::MIXGRAPH,
                    total,
                    self.duration,
                    out,
                    || Ok(g.next_op()),
                );
                self.mix = None;
                done
            }
            Job::Idle(d) => {
                let mut waited = false;
                self.phase(zkv_bench::workload::IDLE, 0, None, out, || {
                    if !waited {
                        waited = true;
                        self.db
                            .pass_time(d)
                            .map_err(|e| CliError::invalid(format!("idle: {e}")))?;
                    }
                    Ok(None)
                })
            }
            Job::Ycsb {
                name,
                workload,
                load,
                run,
            } => {
                let mut w = workload;
                let (loads, ops) = w.remaining();
                self.ycsb = true;
                let mut done = Ok(());
                if load {
                    done = self.phase(&format!("{name}-load"), loads, None, out, || {
                        Ok(w.next_load())
                    });
                }
                if run && done.is_ok() {
                    done = self.phase(name, ops, None, out, || {
                        w.next_op()
                            .map_err(|e| CliError::invalid(format!("{name}: {e}")))
                    });
                }
                self.ycsb = false;
                done
            }
        }
    }

    /// Runs one phase to its end (or to `limit` on the database's clock), then prints its
    /// db_bench line. The phase's figures are kept even when an operation fails.
    fn phase(
        &mut self,
        name: &str,
        total: u64,
        limit: Option<Duration>,
        out: &mut Out,
        mut next: impl FnMut() -> CliResult<Option<Op>>,
    ) -> CliResult {
        self.progress.start(name, total);
        let mut r = PhaseResult {
            name: name.to_string(),
            ycsb: self.ycsb.then(OpLatency::new).transpose()?,
            ..PhaseResult::default()
        };
        let start = Instant::now();
        let virtual_start = self.db.virtual_time();
        if let Some(p) = &mut self.pacer {
            p.due.next = clock(self.db, self.origin);
        }
        self.start_mix(&mut r);
        let end = limit.map(|d| clock(self.db, self.origin).saturating_add(d));
        let outcome = loop {
            if end.is_some_and(|end| clock(self.db, self.origin) >= end) {
                break Ok(());
            }
            let op = match next() {
                Ok(Some(op)) => op,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            self.op_ns = 0;
            let done = self.exec(&op, &mut r);
            if let (Ok(_), Some(l)) = (&done, &mut r.ycsb) {
                l.record(op.kind, self.op_ns);
            }
            let done = done.and_then(|more| {
                self.pace_op(&mut r)?;
                self.pace_target()?;
                Ok(more)
            });
            match done {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(operation_error(name, r.ops + 1, op.kind, e)),
            }
            r.ops += 1;
            self.ops_done += 1;
            if self.ops_done.is_multiple_of(self.sample_interval) {
                self.sample(name);
            }
            self.progress.advance(r.ops);
        };
        // fillbatch's last batch, short when num is not a multiple of its size.
        let outcome = outcome.and_then(|()| {
            self.write_batch(&mut r)
                .map_err(|e| operation_error(name, r.ops, OpKind::Insert, e))
        });
        self.seq = None;
        r.seconds = start.elapsed().as_secs_f64();
        r.virtual_seconds = virtual_start
            .zip(self.db.virtual_time())
            .map(|(from, to)| (to - from).as_secs_f64());
        self.progress.finish();
        // The phase's last point, unless its last operation has just taken it (a failed
        // operation may still have changed the store: sampled again).
        let sampled = r.ops > 0 && self.ops_done.is_multiple_of(self.sample_interval);
        if !(sampled && outcome.is_ok()) {
            self.sample(name);
        }
        let line = result_line(&r);
        let rate = r.rate.as_ref().map(rate_line);
        let none_found = (r.gets > 0 && r.found == 0).then_some(r.mixgraph);
        self.m.phases.push(r);
        outcome?;
        out.line(line)?;
        if let Some(rate) = rate {
            out.line(rate)?;
        }
        if let Some(mixgraph) = none_found {
            // Not an error (db_bench reports it the same way), but almost always a store
            // that was never filled: say so where a person looks.
            crate::cli::warn(none_found_warning(name, mixgraph));
        }
        out.flush()
    }

    /// Runs one operation. `false`: there was nothing left to run it on (readseq past the
    /// last entry), which ends the phase without counting it.
    fn exec(&mut self, op: &Op, r: &mut PhaseResult) -> zkv_engine::Result<bool> {
        match op.kind {
            OpKind::Read => self.get(&op.key, r)?,
            OpKind::Insert | OpKind::Update if self.batch.is_some() => {
                self.batch_put(&op.key, op.value_size, r)?
            }
            OpKind::Insert | OpKind::Update => self.put(&op.key, op.value_size, r)?,
            OpKind::ReadModifyWrite => {
                self.get(&op.key, r)?;
                self.put(&op.key, op.value_size, r)?
            }
            OpKind::Scan { len } => self.scan(&op.key, len, r)?,
            OpKind::Delete => self.delete(&op.key, r)?,
            OpKind::Next => return self.next_entry(r, false),
            OpKind::Prev => return self.next_entry(r, true),
            // A kind of a newer workload crate that this runner cannot issue.
            other => {
                return Err(zkv_engine::Error::InvalidArgument(format!(
                    "operation {other:?} is not supported by the bench runner"
                )))
            }
        }
        Ok(true)
    }

    /// Adds a put to fillbatch's batch, and writes the batch once it is full.
    fn batch_put(
        &mut self,
        key: &[u8],
        size: Option<usize>,
        r: &mut PhaseResult,
    ) -> zkv_engine::Result<()> {
        let Some(b) = &mut self.batch else {
            // Not batching after all: a put of its own, never a write dropped.
            return self.put(key, size, r);
        };
        self.values
            .fill(size.unwrap_or(self.value_size), &mut self.value);
        b.batch.put(key, &self.value);
        b.bytes += (key.len() + self.value.len()) as u64;
        b.value_bytes += self.value.len() as u64;
        if (b.batch.count() as usize) < b.entries {
            return Ok(());
        }
        self.write_batch(r)
    }

    /// Writes fillbatch's batch, if it holds anything, as one write (timed as one put, as
    /// db_bench times it); its entries count as puts.
    fn write_batch(&mut self, r: &mut PhaseResult) -> zkv_engine::Result<()> {
        let Some(b) = &mut self.batch else {
            return Ok(());
        };
        if b.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut b.batch);
        let (bytes, value_bytes) = (
            std::mem::take(&mut b.bytes),
            std::mem::take(&mut b.value_bytes),
        );
        let entries = u64::from(batch.count());
        // The write takes the batch; the oracle needs its entries after.
        let copy = self.m.oracle.as_ref().map(|_| batch.clone());
        let start = Instant::now();
        let done = self.db.write(&self.write, batch);
        self.op_ns += record(&mut self.m.latency.put, start.elapsed());
        if let (Some(oracle), Some(copy)) = (&mut self.m.oracle, copy) {
            for op in copy.ops() {
                match &done {
                    Ok(()) => oracle.put(op.key, op.value),
                    Err(_) => oracle.put_uncertain(op.key, op.value),
                }
            }
        }
        done?;
        r.puts += entries;
        r.value_bytes += value_bytes;
        r.bytes += bytes;
        self.pace(bytes)
    }

    /// A delete, timed; db_bench counts no bytes for it.
    fn delete(&mut self, key: &[u8], r: &mut PhaseResult) -> zkv_engine::Result<()> {
        let start = Instant::now();
        let done = self.db.delete(&self.write, key);
        self.op_ns += record(&mut self.m.latency.delete, start.elapsed());
        if let Some(oracle) = &mut self.m.oracle {
            match &done {
                Ok(()) => oracle.delete(key),
                Err(_) => oracle.delete_uncertain(key),
            }
        }
        done?;
        r.deletes += 1;
        Ok(())
    }

    /// readseq's next entry (readreverse's previous one, `backward`): the first call opens
    /// the iterator at the first (last) key, each later one moves it on. `false` once it
    /// has run past the end.
    fn next_entry(&mut self, r: &mut PhaseResult, backward: bool) -> zkv_engine::Result<bool> {
        let start = Instant::now();
        let it = match &mut self.seq {
            Some(it) => {
                match backward {
                    false => it.next()?,
                    true => it.prev()?,
                }
                it
            }
            None => {
                let mut it = self.db.iter(&ReadOptions::default())?;
                match backward {
                    false => it.seek_to_first()?,
                    true => it.seek_to_last()?,
                }
                self.seq.insert(it)
            }
        };
        if !it.valid() {
            return Ok(false);
        }
        r.bytes += (it.key().len() + it.value().len()) as u64;
        r.scanned += 1;
        self.op_ns += record(&mut self.m.latency.scan, start.elapsed());
        Ok(true)
    }

    /// A put of `size` bytes of value (the run's `--value-size` if the workload does not
    /// draw it).
    fn put(
        &mut self,
        key: &[u8],
        size: Option<usize>,
        r: &mut PhaseResult,
    ) -> zkv_engine::Result<()> {
        self.values
            .fill(size.unwrap_or(self.value_size), &mut self.value);
        let start = Instant::now();
        let done = self.db.put(&self.write, key, &self.value);
        self.op_ns += record(&mut self.m.latency.put, start.elapsed());
        if let Some(oracle) = &mut self.m.oracle {
            match done {
                Ok(()) => oracle.put(key, &self.value),
                Err(_) => oracle.put_uncertain(key, &self.value),
            }
        }
        done?;
        r.puts += 1;
        r.value_bytes += self.value.len() as u64;
        let bytes = (key.len() + self.value.len()) as u64;
        r.bytes += bytes;
        self.pace(bytes)
    }

    fn get(&mut self, key: &[u8], r: &mut PhaseResult) -> zkv_engine::Result<()> {
        let start = Instant::now();
        let found = self.db.get(&ReadOptions::default(), key)?;
        self.op_ns += record(&mut self.m.latency.get, start.elapsed());
        r.gets += 1;
        if let Some(v) = found {
            r.found += 1;
            r.bytes += (key.len() + v.len()) as u64;
        }
        Ok(())
    }

    /// YCSB's scan, db_bench's seek: `len` records in key order from `key` on.
    fn scan(&mut self, key: &[u8], len: u64, r: &mut PhaseResult) -> zkv_engine::Result<()> {
        let start = Instant::now();
        let mut it = self.db.iter(&ReadOptions::default())?;
        it.seek(key)?;
        if it.valid() && it.key() == key {
            r.seek_found += 1;
        }
        let mut n = 0;
        while n < len && it.valid() {
            r.bytes += (it.key().len() + it.value().len()) as u64;
            n += 1;
            it.next()?;
        }
        self.op_ns += record(&mut self.m.latency.scan, start.elapsed());
        r.scans += 1;
        r.scanned += n;
        Ok(())
    }

    fn sample(&mut self, phase: &str) {
        let fs_layer = self.db.file_system();
        let fs = fs_layer.stats();
        let invalid = fs_layer.invalid_ratio_distribution();
        let db = self.db.stats();
        self.m.samples.push(Sample {
            t: self.ops_done,
            phase: phase.to_string(),
            free_ratio: fs.free_ratio,
            gc_copy_bytes: fs.gc.copy_bytes,
            device_write_bytes: fs.device_written_total(),
            zone_resets: fs.zone_resets,
            stall_ns: db.stall_ns,
            full_zones: invalid.len() as u64,
            invalid_ratios: invalid_buckets(&invalid),
        });
    }
}

/// The error of operation `n` of phase `name`.
fn operation_error(name: &str, n: u64, kind: OpKind, e: zkv_engine::Error) -> CliError {
    CliError::invalid(format!("{name}: operation {n} ({}): {e}", kind.name()))
}

/// The warning after a phase whose gets found nothing.
fn none_found_warning(name: &str, mixgraph: bool) -> String {
    let why = if mixgraph {
        "mixgraph's own puts rarely help: the draw that picks a key also picks its kind, so \
         with uniform keys a key is only ever read or only ever written, as in db_bench; "
    } else {
        "an empty store? "
    };
    format!(
        "{name} found none of the keys it read: the store holds none of them ({why}run a fill \
         workload first, e.g. --workload fillrandom,{name})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_ratios_fall_in_twenty_steps_and_one_for_all_invalid() {
        let d = InvalidRatios {
            ratios: vec![0.0, 0.049, 0.05, 0.5, 0.949, 0.95, 0.999, 1.0],
        };
        let b = invalid_buckets(&d);
        assert_eq!(b.iter().sum::<u64>(), 8);
        assert_eq!((b[0], b[1], b[10]), (2, 1, 1));
        assert_eq!((b[18], b[19], b[20]), (1, 2, 1));
    }
}
