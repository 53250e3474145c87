//! The driver: a set of stores (one per setup), each carried across its crashes, run in
//! time slices by a few worker threads until every store has run its rounds or a
//! deadline passes, with progress lines and the totals at the end. The first failure
//! stops every worker.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::inproc::InProcess;
use crate::kill::Killed;
use crate::setup::{CrashKind, Setup};
use crate::totals::Totals;

/// One store and what it went through.
pub struct Store {
    setup: Setup,
    crashes: Crashes,
    rounds: u64,
    totals: Totals,
}

enum Crashes {
    InProcess(InProcess),
    Killed(Killed),
}

impl Store {
    /// Formats the store of `setup` (image files go to `dir`; `exe` is the `zkv-stress`
    /// binary that kill rounds start as their child).
    pub fn create(setup: Setup, dir: &Path, exe: Option<&Path>) -> Result<Store, String> {
        let crashes = match (setup.kind, exe) {
            (CrashKind::Kill, Some(exe)) => {
                Crashes::Killed(Killed::create(setup.clone(), dir, exe)?)
            }
            (CrashKind::Kill, None) => return Err("kill rounds need the zkv-stress binary".into()),
            _ => Crashes::InProcess(InProcess::create(setup.clone(), dir)?),
        };
        Ok(Store {
            setup,
            crashes,
            rounds: 0,
            totals: Totals::default(),
        })
    }

    /// One round; its counts go to `totals` too. False once the store failed.
    fn round(&mut self, totals: &Mutex<Totals>) -> bool {
        let mut t = Totals::default();
        let ok = match &mut self.crashes {
            Crashes::InProcess(s) => s.round(&mut t),
            Crashes::Killed(s) => s.round(&mut t),
        };
        self.rounds += 1;
        self.totals.add(&t);
        lock(totals).add(&t);
        ok && !t.failed()
    }

    /// Whether the store can no longer be opened (see `InProcess::stuck`).
    fn stuck(&self) -> bool {
        match &self.crashes {
            Crashes::InProcess(s) => s.stuck(),
            Crashes::Killed(s) => s.stuck(),
        }
    }

    /// Checks the store after its last crash (see `InProcess::final_check`).
    fn final_check(&mut self, totals: &Mutex<Totals>) -> bool {
        let mut t = Totals::default();
        let ok = match &mut self.crashes {
            Crashes::InProcess(s) => s.final_check(&mut t),
            Crashes::Killed(s) => s.final_check(&mut t),
        };
        self.totals.add(&t);
        lock(totals).add(&t);
        ok && !t.failed()
    }

    fn report(&self) -> StoreReport {
        StoreReport {
            setup: self.setup.clone(),
            rounds: self.rounds,
            totals: self.totals.clone(),
        }
    }
}

/// What one store went through.
#[derive(Clone, Debug)]
pub struct StoreReport {
    /// The store's setup.
    pub setup: Setup,
    /// Crash rounds it ran.
    pub rounds: u64,
    /// Its counters, summed over its rounds.
    pub totals: Totals,
}

impl StoreReport {
    /// One line: the store's setup, its crash points and checks, what the engine and the
    /// zone cleaner did, its failures.
    pub fn summary(&self) -> String {
        let t = &self.totals;
        let (c, a) = (&t.counts, &t.activity);
        format!(
            "store {} rounds={} crash_points={} in_recovery={} ops={} acked_writes_checked={} \
             unsynced_ops_lost={} flushes={} compactions={} gc_victims={} gc_resets={} \
             failures={}",
            self.setup.label(),
            self.rounds,
            t.crash_points(),
            c.crashes_in_recovery,
            c.ops,
            c.acked_writes_checked,
            c.unsynced_ops_lost,
            a.flushes,
            a.compactions,
            a.gc_victims,
            a.gc_resets,
            t.failures.sum()
        )
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked holding the lock left counters, which are still worth printing.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Rounds per store, by crash kind.
#[derive(Clone, Copy, Debug)]
pub struct Rounds {
    /// Rounds of a [`CrashKind::Kill`] store.
    pub kill: u64,
    /// Rounds of a [`CrashKind::PowerCut`] store.
    pub power: u64,
    /// Rounds of a [`CrashKind::CrashPoint`] store.
    pub crashpoint: u64,
}

impl Rounds {
    fn of(&self, kind: CrashKind) -> u64 {
        match kind {
            CrashKind::Kill => self.kill,
            CrashKind::PowerCut => self.power,
            CrashKind::CrashPoint => self.crashpoint,
        }
    }
}

/// When a run ends.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Until {
    /// Every store has run its kind's number of rounds.
    Rounds(Rounds),
    /// This instant has passed (each store finishes its current round).
    Deadline(Instant),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// One store per setup.
    pub setups: Vec<Setup>,
    /// Where image files and child logs go.
    pub dir: PathBuf,
    /// The `zkv-stress` binary, for kill rounds.
    pub exe: Option<PathBuf>,
    /// When the run ends.
    pub until: Until,
    /// How long a worker runs rounds of one store before it takes the next (at least one
    /// round): every store gets its share of the time, whatever its rounds cost.
    pub slice: Duration,
    /// Worker threads.
    pub jobs: usize,
    /// How often a progress line is printed.
    pub progress: Duration,
}

/// The result of a run: the totals and each store's share.
pub struct Outcome {
    /// The counters of every store, summed.
    pub totals: Totals,
    /// Each store's report, in the order of [`Plan::setups`].
    pub stores: Vec<StoreReport>,
}

/// Runs the plan; `say` prints progress lines.
pub fn run(plan: &Plan, say: &(dyn Fn(&str) + Sync)) -> Result<Outcome, String> {
    let stores = plan
        .setups
        .iter()
        .map(|s| Store::create(s.clone(), &plan.dir, plan.exe.as_deref()))
        .collect::<Result<VecDeque<_>, _>>()?;
    let queue = Mutex::new(stores);
    let finished = Mutex::new(Vec::new());
    let totals = Mutex::new(Totals::default());
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..plan.jobs.max(1))
            .map(|_| s.spawn(|| work(plan, &queue, &finished, &totals, &stop)))
            .collect();
        let mut next = start + plan.progress;
        while !workers.iter().all(|w| w.is_finished()) {
            std::thread::sleep(Duration::from_millis(50));
            if Instant::now() >= next {
                say(&lock(&totals).progress(start.elapsed().as_secs()));
                next += plan.progress;
            }
        }
    });
    let mut stores: Vec<Store> = lock(&finished).drain(..).collect();
    stores.extend(lock(&queue).drain(..));
    stores.sort_by_key(|s| s.setup.seed);
    let totals = lock(&totals).clone();
    say(&totals.progress(start.elapsed().as_secs()));
    Ok(Outcome {
        totals,
        stores: stores.iter().map(Store::report).collect(),
    })
}

/// A worker: takes a store, runs a slice of its rounds, puts it back, until nothing is
/// left to do or a store failed.
fn work(
    plan: &Plan,
    queue: &Mutex<VecDeque<Store>>,
    finished: &Mutex<Vec<Store>>,
    totals: &Mutex<Totals>,
    stop: &AtomicBool,
) {
    let _stop_on_panic = StopOnPanic(stop);
    while !stop.load(Ordering::SeqCst) {
        let Some(mut store) = lock(queue).pop_front() else {
            return;
        };
        let start = Instant::now();
        loop {
            if store_done(&store, plan.until) || stop.load(Ordering::SeqCst) {
                break;
            }
            if !store.round(totals) {
                stop.store(true, Ordering::SeqCst);
            }
            if start.elapsed() >= plan.slice {
                break;
            }
        }
        // A stopped run or a stuck store gets no final check: the store cannot be opened
        // (stuck), or the run is over already.
        if stop.load(Ordering::SeqCst) || store.stuck() {
            lock(finished).push(store);
        } else if store_done(&store, plan.until) {
            if !store.final_check(totals) {
                stop.store(true, Ordering::SeqCst);
            }
            lock(finished).push(store);
        } else {
            lock(queue).push_back(store);
        }
    }
}

/// Stops the other workers when this one panics (an assertion of the harness, or a panic
/// in the engine: a finding), instead of letting them run to the deadline first.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

fn store_done(store: &Store, until: Until) -> bool {
    if store.stuck() {
        return true;
    }
    match until {
        Until::Rounds(r) => store.rounds >= r.of(store.setup.kind),
        Until::Deadline(at) => Instant::now() >= at,
    }
}
