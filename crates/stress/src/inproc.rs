//! Crashes inside the harness's own process: power cuts of the in-memory device, and kill
//! points of the file-backed emulator between its storage steps. Both count the device's
//! mutating work from the moment the device is armed, before the mount, so a crash point
//! can land anywhere: in the mount, in the database's recovery, or in the workload.
//!
//! One round: arm the device with a budget, mount and open (recovery), check the store
//! against the oracle, run the writer until the crash, collect the counters, disarm.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::emu::{CrashPoint, Emulated, FileStorage};
use zkv_zns::{FaultControl, FileDevice, MemDevice, TearMode, ZonedDevice};

use crate::oracle::Oracle;
use crate::setup::{self, CrashKind, Setup, Stack};
use crate::totals::Totals;
use crate::verify::{self, verify};
use crate::workload::{End, Generator, NoJournal, Writer};

/// A device the harness can crash after a budget of mutating work.
trait Target: Send {
    /// A device that crashes once `budget` units of work are done.
    fn arm(&mut self, budget: u64, rng: &mut ChaCha8Rng) -> Result<Arc<dyn ZonedDevice>, String>;
    /// Units of work done since `arm`.
    fn used(&self) -> u64;
    fn crashed(&self) -> bool;
    /// Ends the round: crashes now if the crash has not happened (power) and readies the
    /// device for the next `arm`. Every handle on the device must be gone.
    fn disarm(&mut self);
    /// Whether a round without a crash still ended in one (`disarm` cuts the power).
    fn crashes_at_disarm(&self) -> bool;
    /// The device with no crash armed, for the final check (dropped handles close it).
    fn unarmed(&mut self) -> Result<Arc<dyn ZonedDevice>, String>;
}

/// The in-memory device: a power cut after `budget` mutating commands, dropping or tearing
/// what was not synced; the same device is powered on again for the next round.
struct Power {
    mem: Arc<MemDevice>,
    start: u64,
    mode: TearMode,
}

impl Target for Power {
    fn arm(&mut self, budget: u64, rng: &mut ChaCha8Rng) -> Result<Arc<dyn ZonedDevice>, String> {
        self.mode = match rng.random_bool(0.5) {
            true => TearMode::Drop,
            false => TearMode::Tear { seed: rng.random() },
        };
        self.start = self.mem.mutating_commands();
        self.mem.schedule_power_cut(budget, self.mode);
        Ok(self.mem.clone())
    }

    fn used(&self) -> u64 {
        self.mem.mutating_commands() - self.start
    }

    fn crashed(&self) -> bool {
        !self.mem.is_powered()
    }

    fn disarm(&mut self) {
        if self.mem.is_powered() {
            self.mem.power_cut(self.mode);
        }
        self.mem.restart();
    }

    fn crashes_at_disarm(&self) -> bool {
        true
    }

    fn unarmed(&mut self) -> Result<Arc<dyn ZonedDevice>, String> {
        // `disarm` powered it on again, and a restart clears any scheduled cut.
        Ok(self.mem.clone())
    }
}

type CrashDevice = Emulated<CrashPoint<FileStorage>>;

/// The file-backed emulator opened with a kill point: its storage dies at the
/// `budget`-th mutating step (write, persist, truncate, sync), a write cut to a random
/// block prefix; the image is reopened for the next round.
struct Steps {
    image: PathBuf,
    dev: Option<Arc<CrashDevice>>,
}

impl Target for Steps {
    fn arm(&mut self, budget: u64, rng: &mut ChaCha8Rng) -> Result<Arc<dyn ZonedDevice>, String> {
        let seed = rng.random();
        let open = |path: &Path| FileDevice::open_with_crash_point(path, budget, seed);
        let dev = Arc::new(setup::open_image(&self.image, open)?);
        self.dev = Some(Arc::clone(&dev));
        Ok(dev)
    }

    fn used(&self) -> u64 {
        self.dev.as_ref().map_or(0, |d| d.storage().steps())
    }

    fn crashed(&self) -> bool {
        self.dev.as_ref().is_some_and(|d| d.storage().dead())
    }

    fn disarm(&mut self) {
        // Dropping the last handle closes the image and releases its lock.
        self.dev = None;
    }

    fn crashes_at_disarm(&self) -> bool {
        false
    }

    fn unarmed(&mut self) -> Result<Arc<dyn ZonedDevice>, String> {
        Ok(Arc::new(setup::open_image(&self.image, FileDevice::open)?))
    }
}

/// Where crash points are placed: learns how much work a recovery and an operation take,
/// and aims at a random point of the recovery (sometimes) or of the next epoch (mostly).
#[derive(Debug)]
struct Aim {
    recovery: f64,
    per_op: f64,
}

impl Aim {
    /// Of the crash points, this share lands in the mount or the recovery.
    const IN_RECOVERY: f64 = 0.15;

    fn budget(&self, rng: &mut ChaCha8Rng, ops: u64) -> u64 {
        let recovery = self.recovery.max(1.0) as u64;
        if rng.random_bool(Self::IN_RECOVERY) {
            return rng.random_range(0..recovery);
        }
        recovery + rng.random_range(0..=(ops as f64 * self.per_op).max(1.0) as u64)
    }

    fn learn_recovery(&mut self, used: u64) {
        self.recovery = 0.7 * self.recovery + 0.3 * used as f64;
    }

    /// A crash cut a recovery after `used` units: if the estimate was below that, the
    /// recovery is longer than thought (a backlog of compactions), and aiming below the
    /// old estimate would cut every following recovery too.
    fn learn_cut_recovery(&mut self, used: u64) {
        if used as f64 >= self.recovery {
            self.recovery = 1.5 * used as f64;
        }
    }

    fn learn_epoch(&mut self, used: u64, ops: u64) {
        if ops >= 10 {
            self.per_op = 0.7 * self.per_op + 0.3 * used as f64 / ops as f64;
        }
    }
}

/// One store under in-process crashes.
pub struct InProcess {
    setup: Setup,
    target: Box<dyn Target>,
    oracle: Oracle,
    rng: ChaCha8Rng,
    aim: Aim,
    round: u64,
    /// Opens in a row that failed for want of space (tolerated); see [`InProcess::stuck`].
    failed_opens: u32,
}

/// Opens in a row that fail for want of space before a store counts as stuck.
pub(crate) const STUCK_AFTER: u32 = 5;

impl InProcess {
    /// Formats a new store: on an in-memory device for power cuts, in an image file in
    /// `dir` for kill points.
    pub fn create(setup: Setup, dir: &Path) -> Result<InProcess, String> {
        let geo = setup.geometry();
        let mut oracle = Oracle::new(setup.keys);
        let target: Box<dyn Target> = match setup.kind {
            CrashKind::PowerCut => {
                let mem = Arc::new(MemDevice::new(geo).map_err(|e| e.to_string())?);
                setup::create(mem.clone(), &setup, &mut oracle)?;
                Box::new(Power {
                    mem,
                    start: 0,
                    mode: TearMode::Drop,
                })
            }
            CrashKind::CrashPoint => {
                let image = dir.join(format!("crashpoint-{}.img", setup.seed));
                let dev = FileDevice::create(&image, geo)
                    .map_err(|e| format!("create {}: {e}", image.display()))?;
                setup::create(Arc::new(dev), &setup, &mut oracle)?;
                Box::new(Steps { image, dev: None })
            }
            CrashKind::Kill => return Err("kills run in a child process".into()),
        };
        Ok(InProcess {
            oracle,
            rng: ChaCha8Rng::seed_from_u64(setup.seed),
            target,
            aim: Aim {
                recovery: 100.0,
                per_op: 4.0,
            },
            round: 0,
            failed_opens: 0,
            setup,
        })
    }

    /// Whether the store can no longer be opened: its last opens all failed for want of
    /// space. It is retired (more rounds would only count the same failure).
    pub fn stuck(&self) -> bool {
        self.failed_opens >= STUCK_AFTER
    }

    /// One crash point; false once the store failed a check (it cannot go on).
    pub fn round(&mut self, totals: &mut Totals) -> bool {
        self.round += 1;
        let label = format!("{} round {}", self.setup.label(), self.round);
        let ops = self
            .rng
            .random_range(1..=u64::from(self.setup.max_epoch_ops));
        let budget = self.aim.budget(&mut self.rng, ops);
        let ok = match self.target.arm(budget, &mut self.rng) {
            Ok(dev) => self.open_check_run(dev, ops, totals, &label),
            Err(e) => {
                unexpected(totals, format!("{label}: {e}"));
                false
            }
        };
        let crashed = self.target.crashed();
        self.target.disarm();
        if crashed || self.target.crashes_at_disarm() {
            totals.crash(self.setup.kind);
        }
        ok
    }

    /// Recovers and checks the store after its last crash, then closes it cleanly: every
    /// crash point of the store gets checked. False if the check failed.
    pub fn final_check(&mut self, totals: &mut Totals) -> bool {
        let label = format!("{} final check", self.setup.label());
        let dev = match self.target.unarmed() {
            Ok(dev) => dev,
            Err(e) => {
                unexpected(totals, format!("{label}: {e}"));
                return false;
            }
        };
        match self.recover(dev, totals, &label) {
            Next::Go(stack) => match verify::close(*stack, &self.setup, totals) {
                Ok(()) => true,
                Err(e) => {
                    unexpected(totals, format!("{label}: {e}"));
                    false
                }
            },
            Next::Crashed => true,
            Next::Failed => false,
        }
    }

    /// Mounts, recovers and checks, then runs the writer until the crash.
    fn open_check_run(
        &mut self,
        dev: Arc<dyn ZonedDevice>,
        ops: u64,
        totals: &mut Totals,
        label: &str,
    ) -> bool {
        match self.recover(dev, totals, label) {
            Next::Go(stack) => self.run_epoch(&stack, ops, totals, label),
            Next::Crashed => true,
            Next::Failed => false,
        }
    }

    /// Mounts, opens the database (its recovery) and checks the store.
    fn recover(&mut self, dev: Arc<dyn ZonedDevice>, totals: &mut Totals, label: &str) -> Next {
        let stack = match setup::open(dev, &self.setup) {
            Ok(stack) => stack,
            Err(e) => {
                let what = format!("recovery failed: {e}");
                return self.interrupted(e.is_out_of_space(), what, totals, label);
            }
        };
        match verify(&stack, &mut self.oracle, totals, label) {
            Ok(true) => {
                self.failed_opens = 0;
                // Measured after the check: in threaded mode the recovery's compactions
                // run on in the background meanwhile.
                self.aim.learn_recovery(self.target.used());
                Next::Go(Box::new(stack))
            }
            Ok(false) => Next::Failed,
            // A background job of the recovery may have met the crash before the check
            // could read.
            Err(e) => {
                let what = format!("reading back: {e}");
                self.interrupted(setup::is_out_of_space(&e), what, totals, label)
            }
        }
    }

    /// A recovery that returned an error: the crash (as expected), a tolerated
    /// out-of-space error, or a failure.
    fn interrupted(&mut self, oos: bool, what: String, totals: &mut Totals, label: &str) -> Next {
        if self.target.crashed() {
            totals.counts.crashes_in_recovery += 1;
            self.aim.learn_cut_recovery(self.target.used());
            return Next::Crashed;
        }
        if oos && self.setup.tolerate_out_of_space {
            self.failed_opens += 1;
            totals.out_of_space(format!("{label}: {what}"));
            if self.stuck() {
                totals.counts.stuck_out_of_space += 1;
                totals.note_stuck(format!("{label}: {what}"));
            }
            return Next::Crashed;
        }
        unexpected(totals, format!("{label}: {what}"))
    }

    /// Runs the writer until the crash (or `4 × ops + 50` actions, if the crash point lies
    /// beyond the epoch) and counts what happened.
    fn run_epoch(&mut self, stack: &Stack, ops: u64, totals: &mut Totals, label: &str) -> bool {
        let recovered_at = self.target.used();
        let writer = Writer {
            sync: self.setup.sync,
            max_value: self.setup.max_value,
        };
        let mut gen = Generator::new(self.rng.random(), self.setup.keys);
        let (end, done) = writer.run(
            &stack.db,
            &mut gen,
            &mut self.oracle,
            &mut NoJournal,
            4 * ops + 50,
        );
        totals.counts.ops += done.ops;
        totals.counts.reads_checked += done.reads;
        totals.activity.add(&stack.activity());
        self.aim
            .learn_epoch(self.target.used() - recovered_at, done.ops);
        let crashed = self.target.crashed();
        let error = match end {
            End::Done => None,
            End::Error(_) if crashed => None,
            End::Error(e) => Some((setup::is_out_of_space(&e), e.to_string())),
            End::Journal(e) => Some((false, format!("journal: {e}"))),
            End::Mismatch(m) => {
                totals.failures.read_mismatches += 1;
                totals.fail(format!("{label}: {m}"));
                return false;
            }
        };
        // The background cleaner reports its own failures.
        let error = error.or_else(|| {
            let e = stack.cleaner_error().filter(|_| !crashed)?;
            Some((e.contains("out of space"), format!("cleaner: {e}")))
        });
        match error {
            None => {
                totals.counts.crashes_at_end += u64::from(!crashed);
                true
            }
            Some((true, what)) if self.setup.tolerate_out_of_space => {
                let space = stack.space_report();
                totals.out_of_space(format!("{label}: {what}; {space}"));
                true
            }
            Some((_, what)) => {
                let space = stack.space_report();
                unexpected(totals, format!("{label}: {what}; {space}"));
                false
            }
        }
    }
}

/// How the recovery of a round ended.
enum Next {
    /// The store is open and checked (boxed: the other variants are empty).
    Go(Box<Stack>),
    /// A crash (or a tolerated out-of-space error) ended the round early.
    Crashed,
    /// The round failed (counted in the totals).
    Failed,
}

/// Counts an unexpected error: the round failed.
fn unexpected(totals: &mut Totals, what: String) -> Next {
    totals.failures.unexpected_errors += 1;
    totals.fail(what);
    Next::Failed
}
