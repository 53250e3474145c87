//! Running the workloads against the database: each client one operation at a time, one
//! client per phase or, with `--threads N`, N of them on as many threads against the same
//! database (db_bench's `--threads`); timing each put, get, scan and delete, feeding the
//! oracle and sampling the time series. Writes can be paced to a byte rate, and mixgraph's
//! operations to its sine rate, both on the database's clock, which also ends a db_bench
//! workload at `--duration`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use zkv_bench::mixgraph::{RateSchedule, SineRate};
use zkv_bench::{
    DbBenchGenerator, DbBenchWorkload, MixGraphGenerator, Op, OpKind, ValueGenerator, YcsbWorkload,
};
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::fs::FileSystem;
use zkv_engine::iter::DbIter;
use zkv_zonefs::fs::{FsStats, InvalidRatios};

use super::progress::{self, Progress};
use super::report::{rate_line, result_line};
use super::verify::{Oracle, Span};
use crate::cli::error::{CliError, CliResult};
use crate::cli::Out;

/// One workload of `--workload`, with its request stream ready.
pub enum Job {
    /// A db_bench benchmark: a request stream per client thread.
    DbBench(Vec<DbBenchGenerator>),
    /// db_bench's readwhilewriting: readrandom's streams for the reader threads, and the
    /// writer's endless overwrite stream, written until the readers are done.
    ReadWhileWriting {
        readers: Vec<DbBenchGenerator>,
        writer: Box<DbBenchGenerator>,
    },
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
    /// Client threads of the phase (readwhilewriting: its readers).
    pub threads: usize,
    /// The clients' seconds added up (db_bench's micros/op: each thread's time per
    /// operation); `seconds` with one client.
    pub client_seconds: f64,
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

    /// Adds another client's latencies.
    fn add(&mut self, other: &Latency) {
        merge(&mut self.put, &other.put);
        merge(&mut self.get, &other.get);
        merge(&mut self.scan, &other.scan);
        merge(&mut self.delete, &other.delete);
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

/// The file layer's figures and the full zones' invalid ratios: the zoned file layer's
/// own; on any other file system (a directory) only the bytes written and read per
/// category, with no zone, no cleaning and no free-space figure.
pub fn fs_figures(fs: &dyn FileSystem) -> (FsStats, InvalidRatios) {
    if let Some(zoned) = fs.zoned() {
        return (zoned.stats(), zoned.invalid_ratio_distribution());
    }
    let io = fs.io_stats();
    let stats = FsStats {
        device_write_bytes: io.write_bytes,
        device_read_bytes: io.read_bytes,
        ..FsStats::default()
    };
    (stats, InvalidRatios::default())
}

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

/// A run's clients and what they share, from phase to phase.
pub struct Runner<'a> {
    shared: Shared<'a>,
    /// The clients: the first runs every phase and holds the run's oracle; the others join
    /// it in the phases of several threads. Each keeps its values' sequence from phase to
    /// phase, so that every put of the run writes a value of its own.
    clients: Vec<Client<'a>>,
    /// The values' seed and random fraction, for the clients made later.
    seed: u64,
    ratio: f64,
    /// Set while a mixgraph phase is being set up: its sine rate pacer, if it has one.
    mix: Option<Option<OpPacer>>,
    /// db_bench's `--duration`: how long a timed workload runs at most.
    duration: Option<Duration>,
    /// Set while a YCSB phase runs: its operations are measured one by one.
    ycsb: bool,
    phases: Vec<PhaseResult>,
    /// The run's latencies, the clients' added up at its end.
    latency: Latency,
}

/// What the clients of a phase share: the database and its clock, the pacers, the count of
/// operations and the time series; behind locks and atomics, as a phase of several clients
/// reaches them from as many threads.
struct Shared<'a> {
    db: &'a Db,
    /// When the runner started (the threaded mode's clock).
    origin: Instant,
    /// db_bench's `--benchmark_write_rate_limit`, one for all the clients, as db_bench's.
    pacer: Mutex<Option<Pacer>>,
    /// YCSB's `-target`.
    target: Mutex<Option<Pacer>>,
    /// mixgraph's sine rate, while its phase runs.
    mix: Mutex<Option<OpPacer>>,
    sample_interval: u64,
    /// Operations done so far, over all phases and clients.
    ops_done: AtomicU64,
    samples: Mutex<Vec<Sample>>,
    progress: Mutex<Progress>,
    /// The phase's operations so far (its foreground clients'), for the progress.
    phase_ops: AtomicU64,
    /// The phase's foreground clients still running.
    running: AtomicUsize,
    /// Set when the phase's clients are to stop: one failed, or the foreground ones are
    /// done (readwhilewriting's writer then stops).
    stop: AtomicBool,
    /// The counter the write spans of `--verify` take their tickets from.
    tickets: AtomicU64,
}

/// One client's request stream in a phase.
struct Source<'s> {
    next: Box<dyn FnMut() -> CliResult<Option<Op>> + Send + 's>,
    /// readwhilewriting's writer: it runs until the foreground clients are done, and its
    /// operations are not the phase's (as db_bench leaves its writer out of the figures).
    background: bool,
}

impl<'s> Source<'s> {
    fn new(next: impl FnMut() -> CliResult<Option<Op>> + Send + 's) -> Self {
        Source {
            next: Box::new(next),
            background: false,
        }
    }

    fn background(next: impl FnMut() -> CliResult<Option<Op>> + Send + 's) -> Self {
        Source {
            background: true,
            ..Source::new(next)
        }
    }
}

/// One client: what it needs to issue operations (its values, its batch or iterator) and
/// what it measures (its latencies, its oracle).
struct Client<'a> {
    db: &'a Db,
    write: WriteOptions,
    values: ValueGenerator,
    value_size: usize,
    value: Vec<u8>,
    /// Nanoseconds the calls of the operation running took so far.
    op_ns: u64,
    /// Set while fillbatch runs: the batch being filled.
    batch: Option<Batch>,
    /// Set while readseq runs, from its first operation: the iterator it reads.
    seq: Option<DbIter>,
    latency: Latency,
    oracle: Option<Oracle>,
    /// Whether its writes take tickets for their spans: a phase of several clients.
    spans: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Values of client `t` of a run seeded `seed`: the first one's are the run's seed's, so a
/// run of one client writes the values it always wrote.
fn client_seed(seed: u64, t: usize) -> u64 {
    seed.wrapping_add((t as u64) << 32)
}

/// db_bench's `--benchmark_write_rate_limit`: writes (key and value bytes) paced to `rate`
/// bytes per second on the database's clock; also YCSB's `-target`, `rate` operations per
/// second.
struct Pacer {
    rate: u64,
    due: Due,
}

impl Pacer {
    fn new(rate: u64) -> Pacer {
        Pacer {
            rate: rate.max(1),
            due: Due::default(),
        }
    }
}

/// mixgraph's `--sine-mix-rate`: every operation paced to the schedule's rate at the time,
/// counted from the phase's start. db_bench splits the rate between a read and a write
/// limiter by the mix's shares, which together pace the mix at the same total.
struct OpPacer {
    schedule: RateSchedule,
    start: Duration,
    due: Due,
    /// Each rate step reached, as [`RateRecord::steps`].
    steps: Vec<(f64, f64)>,
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

impl<'a> Shared<'a> {
    fn new(db: &'a Db, sample_interval: u64, progress: Progress) -> Self {
        Shared {
            db,
            origin: Instant::now(),
            pacer: Mutex::new(None),
            target: Mutex::new(None),
            mix: Mutex::new(None),
            sample_interval: sample_interval.max(1),
            ops_done: AtomicU64::new(0),
            samples: Mutex::new(Vec::new()),
            progress: Mutex::new(progress),
            phase_ops: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            tickets: AtomicU64::new(0),
        }
    }

    /// The database's clock: virtual time in deterministic mode, else the wall time since
    /// the runner started.
    fn clock(&self) -> Duration {
        self.db
            .virtual_time()
            .unwrap_or_else(|| self.origin.elapsed())
    }

    /// How far ahead paced work may run before the runner waits: threaded mode sleeps only
    /// once it is [`PACE_SLACK`] ahead; the virtual clock waits exactly.
    fn slack(&self) -> Duration {
        match self.db.virtual_time() {
            Some(_) => Duration::ZERO,
            None => PACE_SLACK,
        }
    }

    /// Holds the caller back until `pacer` (if any) allows `units` more (bytes,
    /// operations). The wait is worked out under the pacer's lock and waited outside it.
    fn pace(&self, pacer: &Mutex<Option<Pacer>>, units: u64) -> zkv_engine::Result<()> {
        let wait = {
            let mut pacer = lock(pacer);
            let Some(p) = pacer.as_mut() else {
                return Ok(());
            };
            let cost = Duration::from_secs_f64(units as f64 / p.rate as f64);
            p.due.charge(self.clock(), cost, self.slack())
        };
        wait.map_or(Ok(()), |w| self.db.pass_time(w))
    }

    /// Holds mixgraph back until its sine rate allows one more operation, and records the
    /// rate's steps as they come.
    fn pace_op(&self) -> zkv_engine::Result<()> {
        let wait = {
            let mut mix = lock(&self.mix);
            let Some(p) = mix.as_mut() else {
                return Ok(());
            };
            let now = self.clock();
            let step = p.schedule.step();
            let rate = p.schedule.rate_at(now.saturating_sub(p.start));
            if p.schedule.step() != step {
                let at = p.schedule.step_start(p.schedule.step()).as_secs_f64();
                p.steps.push((at, rate));
            }
            // The rate is positive (the schedule keeps only positive ones); one so small
            // that its cost overflows a Duration waits for ever, as db_bench's limiter
            // would.
            let cost = Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::MAX);
            p.due.charge(now, cost, self.slack())
        };
        wait.map_or(Ok(()), |w| self.db.pass_time(w))
    }

    /// A ticket of the write spans' counter.
    fn ticket(&self) -> u64 {
        self.tickets.fetch_add(1, Ordering::SeqCst)
    }

    /// Counts an operation done: a point of the time series every `sample_interval`
    /// operations, the progress of the phase's own (`foreground`) ones.
    fn count_op(&self, phase: &str, foreground: bool) {
        let done = self.ops_done.fetch_add(1, Ordering::Relaxed) + 1;
        if done.is_multiple_of(self.sample_interval) {
            self.sample(phase);
        }
        if foreground {
            let ops = self.phase_ops.fetch_add(1, Ordering::Relaxed) + 1;
            if ops.is_multiple_of(progress::STEP) {
                lock(&self.progress).advance(ops);
            }
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn sample(&self, phase: &str) {
        let (fs, invalid) = fs_figures(self.db.file_system());
        let db = self.db.stats();
        let t = self.ops_done.load(Ordering::Relaxed);
        lock(&self.samples).push(Sample {
            t,
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
        let mut first = Client::new(db, write, ValueGenerator::new(seed), value_size)?;
        first.oracle = verify.then(Oracle::default);
        Ok(Runner {
            shared: Shared::new(db, sample_interval, progress),
            clients: vec![first],
            seed,
            ratio: 1.0,
            mix: None,
            duration: None,
            ycsb: false,
            phases: Vec::new(),
            latency: Latency::new()?,
        })
    }

    /// The store is an existing database: what a key held before this run wrote it is not
    /// known to the oracle.
    pub fn on_existing_db(mut self, existing: bool) -> Self {
        if let (true, Some(oracle)) = (existing, &mut self.clients[0].oracle) {
            oracle.set_existing_db();
        }
        self
    }

    /// Paces every operation to `rate` per second (`None`: as fast as they go).
    pub fn with_target(mut self, rate: Option<u64>) -> Self {
        *self
            .shared
            .target
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = rate.map(Pacer::new);
        self
    }

    /// Values of which only `ratio` is random (`ValueGenerator::with_compression_ratio`).
    pub fn with_compression_ratio(mut self, ratio: f64) -> Self {
        self.ratio = ratio;
        for c in &mut self.clients {
            c.values = c.values.clone().with_compression_ratio(ratio);
        }
        self
    }

    /// Paces the writes of every workload to `rate` bytes per second (`None`: as fast as
    /// they go), all the clients' together.
    pub fn with_write_rate_limit(mut self, rate: Option<u64>) -> Self {
        *self
            .shared
            .pacer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = rate.map(Pacer::new);
        self
    }

    /// Ends each timed workload (db_bench's random ones and mixgraph) after `limit` on the
    /// database's clock (virtual in deterministic mode); `None`: when its operations are
    /// done.
    pub fn with_duration(mut self, limit: Option<Duration>) -> Self {
        self.duration = limit;
        self
    }

    /// Makes sure there are `n` clients.
    fn clients(&mut self, n: usize) -> CliResult<&mut [Client<'a>]> {
        while self.clients.len() < n {
            let t = self.clients.len();
            let values =
                ValueGenerator::new(client_seed(self.seed, t)).with_compression_ratio(self.ratio);
            let first = &self.clients[0];
            let client = Client::new(first.db, first.write, values, first.value_size)?;
            self.clients.push(client);
        }
        Ok(&mut self.clients[..n])
    }

    /// Runs the jobs in order, printing each phase's line as it ends. A failure (e.g. out
    /// of space) stops the run; what was measured up to it is kept and returned with it.
    pub fn run(mut self, jobs: Vec<Job>, out: &mut Out) -> (Measured, Option<CliError>) {
        self.shared.sample("start");
        let mut failed = None;
        for job in jobs {
            if let Err(e) = self.run_job(job, out) {
                failed = Some(e);
                break;
            }
        }
        let mut latency = self.latency;
        for c in &self.clients {
            latency.add(&c.latency);
        }
        let oracle = self.clients.first_mut().and_then(|c| c.oracle.take());
        let mut samples = self
            .shared
            .samples
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        // Clients of one phase take their points as they come; the series is in operation
        // order.
        samples.sort_by_key(|s| s.t);
        let m = Measured {
            phases: self.phases,
            latency,
            samples,
            oracle,
        };
        (m, failed)
    }

    fn run_job(&mut self, job: Job, out: &mut Out) -> CliResult {
        match job {
            Job::DbBench(gens) => {
                let Some(w) = gens.first().map(DbBenchGenerator::workload) else {
                    return Ok(());
                };
                let limit = self.duration.filter(|_| w.timed());
                let entries = w.entries_per_batch();
                for c in self.clients(gens.len())? {
                    c.batch = (entries > 1).then(|| Batch::new(entries));
                }
                let total = gens.iter().map(DbBenchGenerator::remaining).sum();
                let sources = gens
                    .into_iter()
                    .map(|mut g| Source::new(move || Ok(g.next_op())))
                    .collect();
                let done = self.phase(w.name(), total, limit, out, sources);
                for c in &mut self.clients {
                    c.batch = None;
                }
                done
            }
            Job::ReadWhileWriting { readers, writer } => {
                let w = DbBenchWorkload::ReadWhileWriting;
                let limit = self.duration;
                let total = readers.iter().map(DbBenchGenerator::remaining).sum();
                let mut writer = writer;
                let mut sources = vec![Source::background(move || Ok(writer.next_op()))];
                sources.extend(
                    readers
                        .into_iter()
                        .map(|mut g| Source::new(move || Ok(g.next_op()))),
                );
                self.phase(w.name(), total, limit, out, sources)
            }
            Job::MixGraph(mut g) => {
                self.mix = Some(g.rate_schedule().map(|schedule| OpPacer {
                    schedule,
                    start: Duration::ZERO,
                    due: Due::default(),
                    steps: Vec::new(),
                }));
                let total = g.remaining();
                let source = Source::new(move || Ok(g.next_op()));
                let name = zkv_bench::workload::MIXGRAPH;
                self.phase(name, total, self.duration, out, vec![source])
            }
            Job::Idle(d) => {
                let db = self.shared.db;
                let mut waited = false;
                let source = Source::new(move || {
                    if !waited {
                        waited = true;
                        db.pass_time(d)
                            .map_err(|e| CliError::invalid(format!("idle: {e}")))?;
                    }
                    Ok(None)
                });
                self.phase(zkv_bench::workload::IDLE, 0, None, out, vec![source])
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
                    let source = Source::new(|| Ok(w.next_load()));
                    done = self.phase(&format!("{name}-load"), loads, None, out, vec![source]);
                }
                if run && done.is_ok() {
                    let source = Source::new(|| {
                        w.next_op()
                            .map_err(|e| CliError::invalid(format!("{name}: {e}")))
                    });
                    done = self.phase(name, ops, None, out, vec![source]);
                }
                self.ycsb = false;
                done
            }
        }
    }

    /// Starts the mixgraph pacer's clock at the phase's start (the phase's record of its
    /// rate steps starts with the initial rate) and hands it to the clients.
    fn start_mix(&mut self, r: &mut PhaseResult) {
        let Some(mix) = self.mix.take() else {
            return;
        };
        r.mixgraph = true;
        let pacer = mix.map(|mut p| {
            let now = self.shared.clock();
            p.start = now;
            p.due.next = now;
            p.steps = vec![(0.0, p.schedule.rate_at(Duration::ZERO))];
            p
        });
        *lock(&self.shared.mix) = pacer;
    }

    /// The mixgraph pacer's record of the phase's rate, once it is over.
    fn end_mix(&mut self, r: &mut PhaseResult) {
        if let Some(p) = lock(&self.shared.mix).take() {
            r.rate = Some(RateRecord {
                sine: p.schedule.sine(),
                steps: p.steps,
            });
        }
    }

    /// Runs one phase, a client per source, to its end (or to `limit` on the database's
    /// clock), then prints its db_bench line. One source runs on this thread; several run
    /// on a thread each, against the same database. The phase's figures are kept even when
    /// an operation fails.
    fn phase(
        &mut self,
        name: &str,
        total: u64,
        limit: Option<Duration>,
        out: &mut Out,
        sources: Vec<Source<'_>>,
    ) -> CliResult {
        lock(&self.shared.progress).start(name, total);
        let foreground = sources.iter().filter(|s| !s.background).count();
        let mut r = PhaseResult {
            name: name.to_string(),
            threads: foreground,
            ..PhaseResult::default()
        };
        let start = Instant::now();
        let virtual_start = self.shared.db.virtual_time();
        if let Some(p) = lock(&self.shared.pacer).as_mut() {
            p.due.next = self.shared.clock();
        }
        self.start_mix(&mut r);
        let end = limit.map(|d| self.shared.clock().saturating_add(d));
        self.shared.phase_ops.store(0, Ordering::Relaxed);
        self.shared.running.store(foreground, Ordering::Relaxed);
        self.shared.stop.store(false, Ordering::Relaxed);
        let ycsb = self.ycsb;
        let outcomes = self.run_clients(name, end, ycsb, sources)?;
        let mut outcome = Ok(());
        for c in outcomes {
            let done = r.absorb(c);
            outcome = outcome.and(done);
        }
        r.seconds = start.elapsed().as_secs_f64();
        if foreground == 1 {
            r.client_seconds = r.seconds;
        }
        r.virtual_seconds = virtual_start
            .zip(self.shared.db.virtual_time())
            .map(|(from, to)| (to - from).as_secs_f64());
        self.end_mix(&mut r);
        lock(&self.shared.progress).finish();
        // The phase's last point, unless its last operation has just taken it (a failed
        // operation may still have changed the store: sampled again).
        let ops_done = self.shared.ops_done.load(Ordering::Relaxed);
        let sampled = r.ops > 0 && ops_done.is_multiple_of(self.shared.sample_interval);
        if !(sampled && outcome.is_ok()) {
            self.shared.sample(name);
        }
        let line = result_line(&r);
        let rate = r.rate.as_ref().map(rate_line);
        let none_found = (r.gets > 0 && r.found == 0).then_some(r.mixgraph);
        self.phases.push(r);
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

    /// Runs a client per source: one on this thread, several on a thread each. Several
    /// clients each record their writes in an oracle of their own, folded into the run's
    /// once they are done.
    fn run_clients(
        &mut self,
        name: &str,
        end: Option<Duration>,
        ycsb: bool,
        mut sources: Vec<Source<'_>>,
    ) -> CliResult<Vec<ClientOutcome>> {
        let n = sources.len();
        let mut results = (0..n)
            .map(|_| {
                Ok(PhaseResult {
                    ycsb: ycsb.then(OpLatency::new).transpose()?,
                    ..PhaseResult::default()
                })
            })
            .collect::<CliResult<Vec<_>>>()?;
        self.clients(n)?;
        let shared = &self.shared;
        let clients = &mut self.clients[..n];
        if n == 1 {
            if let (Some(source), Some(r)) = (sources.pop(), results.pop()) {
                return Ok(vec![clients[0].run(shared, name, end, source, r)]);
            }
        }
        let run_oracle = clients[0].oracle.take();
        for c in clients.iter_mut() {
            c.oracle = run_oracle.as_ref().map(|_| Oracle::for_client());
            c.spans = true;
        }
        let outcomes = std::thread::scope(|s| {
            let handles: Vec<_> = clients
                .iter_mut()
                .zip(sources.into_iter().zip(results))
                .map(|(c, (source, r))| s.spawn(move || c.run(shared, name, end, source, r)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for c in clients.iter_mut() {
            c.spans = false;
        }
        if let Some(mut oracle) = run_oracle {
            oracle.absorb(clients.iter_mut().filter_map(|c| c.oracle.take()).collect());
            clients[0].oracle = Some(oracle);
        }
        Ok(outcomes)
    }
}

/// What one client of a phase did.
struct ClientOutcome {
    r: PhaseResult,
    background: bool,
    seconds: f64,
    done: CliResult,
}

impl PhaseResult {
    /// Adds a client's figures: all of them, or of a background client (readwhilewriting's
    /// writer) only its writes, as db_bench leaves the writer out of the phase's rate.
    fn absorb(&mut self, c: ClientOutcome) -> CliResult {
        let o = c.r;
        self.puts += o.puts;
        self.deletes += o.deletes;
        self.value_bytes += o.value_bytes;
        if c.background {
            return c.done;
        }
        self.ops += o.ops;
        self.gets += o.gets;
        self.scans += o.scans;
        self.found += o.found;
        self.bytes += o.bytes;
        self.seek_found += o.seek_found;
        self.scanned += o.scanned;
        self.client_seconds += c.seconds;
        match (&mut self.ycsb, o.ycsb) {
            (Some(mine), Some(theirs)) => {
                for ((_, h), (_, other)) in mine.0.iter_mut().zip(&theirs.0) {
                    merge(h, other);
                }
            }
            (mine, theirs) => *mine = mine.take().or(theirs),
        }
        c.done
    }
}

/// Adds `from`'s counts to `into` (histograms of the same bounds: exact).
fn merge(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    for v in from.iter_recorded() {
        into.saturating_record_n(v.value_iterated_to(), v.count_at_value());
    }
}

impl<'a> Client<'a> {
    fn new(
        db: &'a Db,
        write: WriteOptions,
        values: ValueGenerator,
        value_size: usize,
    ) -> CliResult<Client<'a>> {
        Ok(Client {
            db,
            write,
            values,
            value_size,
            value: Vec::with_capacity(value_size),
            op_ns: 0,
            batch: None,
            seq: None,
            latency: Latency::new()?,
            oracle: None,
            spans: false,
        })
    }

    /// Runs `source` into `r`; the last foreground client to finish, or one that fails,
    /// stops the others.
    fn run(
        &mut self,
        shared: &Shared<'_>,
        name: &str,
        end: Option<Duration>,
        mut source: Source<'_>,
        mut r: PhaseResult,
    ) -> ClientOutcome {
        let start = Instant::now();
        let background = source.background;
        let done = self.drive(shared, name, end, background, &mut r, &mut source.next);
        let last = !background && shared.running.fetch_sub(1, Ordering::Relaxed) == 1;
        if last || done.is_err() {
            shared.stop.store(true, Ordering::Relaxed);
        }
        ClientOutcome {
            r,
            background,
            seconds: start.elapsed().as_secs_f64(),
            done,
        }
    }

    /// Issues operations until `next` has none left, the phase reaches `end` on the
    /// database's clock, or it is stopped.
    fn drive(
        &mut self,
        shared: &Shared<'_>,
        name: &str,
        end: Option<Duration>,
        background: bool,
        r: &mut PhaseResult,
        next: &mut dyn FnMut() -> CliResult<Option<Op>>,
    ) -> CliResult {
        let outcome = loop {
            if shared.stopped() || end.is_some_and(|end| shared.clock() >= end) {
                break Ok(());
            }
            let op = match next() {
                Ok(Some(op)) => op,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            self.op_ns = 0;
            let done = self.exec(&op, r, shared);
            if let (Ok(_), Some(l)) = (&done, &mut r.ycsb) {
                l.record(op.kind, self.op_ns);
            }
            let done = done.and_then(|more| {
                shared.pace_op()?;
                shared.pace(&shared.target, 1)?;
                Ok(more)
            });
            match done {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(operation_error(name, r.ops + 1, op.kind, e)),
            }
            r.ops += 1;
            shared.count_op(name, !background);
        };
        // fillbatch's last batch, short when num is not a multiple of its size.
        let outcome = outcome.and_then(|()| {
            self.write_batch(r, shared)
                .map_err(|e| operation_error(name, r.ops, OpKind::Insert, e))
        });
        self.seq = None;
        outcome
    }

    /// Runs `write`, a call of the database, between two tickets of the spans' counter
    /// when the phase has several clients (else its span is empty: the writes of one
    /// client are in its order).
    fn spanned<T>(&self, shared: &Shared<'_>, write: impl FnOnce() -> T) -> (T, Span) {
        if !self.spans {
            return (write(), Span::default());
        }
        let start = shared.ticket();
        let done = write();
        (
            done,
            Span {
                start,
                end: shared.ticket(),
            },
        )
    }

    /// Runs one operation. `false`: there was nothing left to run it on (readseq past the
    /// last entry), which ends the phase without counting it.
    fn exec(
        &mut self,
        op: &Op,
        r: &mut PhaseResult,
        shared: &Shared<'_>,
    ) -> zkv_engine::Result<bool> {
        match op.kind {
            OpKind::Read => self.get(&op.key, r)?,
            OpKind::Insert | OpKind::Update if self.batch.is_some() => {
                self.batch_put(&op.key, op.value_size, r, shared)?
            }
            OpKind::Insert | OpKind::Update => self.put(&op.key, op.value_size, r, shared)?,
            OpKind::ReadModifyWrite => {
                self.get(&op.key, r)?;
                self.put(&op.key, op.value_size, r, shared)?
            }
            OpKind::Scan { len } => self.scan(&op.key, len, r)?,
            OpKind::Delete => self.delete(&op.key, r, shared)?,
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
        shared: &Shared<'_>,
    ) -> zkv_engine::Result<()> {
        let Some(b) = &mut self.batch else {
            // Not batching after all: a put of its own, never a write dropped.
            return self.put(key, size, r, shared);
        };
        self.values
            .fill(size.unwrap_or(self.value_size), &mut self.value);
        b.batch.put(key, &self.value);
        b.bytes += (key.len() + self.value.len()) as u64;
        b.value_bytes += self.value.len() as u64;
        if (b.batch.count() as usize) < b.entries {
            return Ok(());
        }
        self.write_batch(r, shared)
    }

    /// Writes fillbatch's batch, if it holds anything, as one write (timed as one put, as
    /// db_bench times it); its entries count as puts.
    fn write_batch(&mut self, r: &mut PhaseResult, shared: &Shared<'_>) -> zkv_engine::Result<()> {
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
        let copy = self.oracle.as_ref().map(|_| batch.clone());
        let (db, write) = (self.db, self.write);
        let ((done, elapsed), span) = self.spanned(shared, || {
            let start = Instant::now();
            (db.write(&write, batch), start.elapsed())
        });
        self.op_ns += record(&mut self.latency.put, elapsed);
        if let (Some(oracle), Some(copy)) = (&mut self.oracle, copy) {
            for op in copy.ops() {
                oracle.record(op.key, Some(op.value), done.is_ok(), span);
            }
        }
        done?;
        r.puts += entries;
        r.value_bytes += value_bytes;
        r.bytes += bytes;
        shared.pace(&shared.pacer, bytes)
    }

    /// A delete, timed; db_bench counts no bytes for it.
    fn delete(
        &mut self,
        key: &[u8],
        r: &mut PhaseResult,
        shared: &Shared<'_>,
    ) -> zkv_engine::Result<()> {
        let (db, write) = (self.db, self.write);
        let ((done, elapsed), span) = self.spanned(shared, || {
            let start = Instant::now();
            (db.delete(&write, key), start.elapsed())
        });
        self.op_ns += record(&mut self.latency.delete, elapsed);
        if let Some(oracle) = &mut self.oracle {
            oracle.record(key, None, done.is_ok(), span);
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
        self.op_ns += record(&mut self.latency.scan, start.elapsed());
        Ok(true)
    }

    /// A put of `size` bytes of value (the run's `--value-size` if the workload does not
    /// draw it).
    fn put(
        &mut self,
        key: &[u8],
        size: Option<usize>,
        r: &mut PhaseResult,
        shared: &Shared<'_>,
    ) -> zkv_engine::Result<()> {
        self.values
            .fill(size.unwrap_or(self.value_size), &mut self.value);
        let (db, write, value) = (self.db, self.write, &self.value);
        let ((done, elapsed), span) = self.spanned(shared, || {
            let start = Instant::now();
            (db.put(&write, key, value), start.elapsed())
        });
        self.op_ns += record(&mut self.latency.put, elapsed);
        if let Some(oracle) = &mut self.oracle {
            oracle.record(key, Some(&self.value), done.is_ok(), span);
        }
        done?;
        r.puts += 1;
        r.value_bytes += self.value.len() as u64;
        let bytes = (key.len() + self.value.len()) as u64;
        r.bytes += bytes;
        shared.pace(&shared.pacer, bytes)
    }

    fn get(&mut self, key: &[u8], r: &mut PhaseResult) -> zkv_engine::Result<()> {
        let start = Instant::now();
        let found = self.db.get(&ReadOptions::default(), key)?;
        self.op_ns += record(&mut self.latency.get, start.elapsed());
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
        self.op_ns += record(&mut self.latency.scan, start.elapsed());
        r.scans += 1;
        r.scanned += n;
        Ok(())
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
