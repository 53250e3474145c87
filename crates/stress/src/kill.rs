//! Process kills: a child process (the `zkv-stress child` command) writes through the
//! engine on a file-backed image and is killed with SIGKILL at a random point. The child
//! logs each operation's intent before it and its acknowledgement after it to a plain file
//! (the `journal` module), so the parent knows exactly what was acknowledged. Between two
//! kills the parent reopens the image itself, checks the store against its oracle and
//! closes it cleanly, then starts the next child.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_engine::options::ExecMode;
use zkv_zns::FileDevice;
use zkv_zonefs::fs::CleaningMode;

use crate::inproc::STUCK_AFTER;
use crate::journal::{self, Event, FileJournal};
use crate::oracle::{OpKind, Oracle};
use crate::setup::{self, Activity, CrashKind, Setup};
use crate::totals::Totals;
use crate::value::Version;
use crate::verify::{self, verify};
use crate::workload::{read_back, End, Generator, Writer};

/// The signal `Child::kill` sends.
const SIGKILL: i32 = 9;
/// The longest a child may take to reach its kill point before the round fails.
const CHILD_DEADLINE: Duration = Duration::from_secs(120);
/// How long a child that ran out of operations waits for its kill before it gives up.
const CHILD_IDLE: Duration = Duration::from_secs(120);
/// The child writes its counters every this many actions.
const ACTIVITY_EVERY: u64 = 16;

/// What the child is told: the store, its modes, where its versions start.
#[derive(Clone, Debug, clap::Args)]
pub struct ChildArgs {
    /// The store's image file.
    #[arg(long)]
    pub image: PathBuf,
    /// The log of intents and acknowledgements.
    #[arg(long)]
    pub log: PathBuf,
    /// Sync the WAL on every write.
    #[arg(long)]
    pub sync: bool,
    /// `threaded` or `deterministic`.
    #[arg(long, value_parser = parse_exec)]
    pub exec: ExecMode,
    /// `copy`, `compact` or `compensate`.
    #[arg(long, value_parser = parse_gc_mode)]
    pub gc_mode: CleaningMode,
    /// Size of the key space.
    #[arg(long)]
    pub keys: u32,
    /// Largest value body, in bytes.
    #[arg(long)]
    pub max_value: usize,
    /// Seed of the child's action generator.
    #[arg(long)]
    pub seed: u64,
    /// The first version the child may hand out (the parent's next one).
    #[arg(long)]
    pub first_version: Version,
    /// Actions to issue before waiting for the kill.
    #[arg(long)]
    pub ops: u64,
    /// On an out-of-space error, log it and exit with [`CHILD_OUT_OF_SPACE`].
    #[arg(long)]
    pub tolerate_out_of_space: bool,
    /// BlobDB on (see `Setup::blob`).
    #[arg(long)]
    pub blob: bool,
}

/// The exit code of a child that ran out of space, with `--tolerate-out-of-space`.
pub const CHILD_OUT_OF_SPACE: u8 = 5;

fn parse_exec(s: &str) -> Result<ExecMode, String> {
    ExecMode::from_name(s).ok_or_else(|| format!("unknown exec mode {s:?}"))
}

fn parse_gc_mode(s: &str) -> Result<CleaningMode, String> {
    CleaningMode::from_name(s).ok_or_else(|| format!("unknown cleaning mode {s:?}"))
}

impl ChildArgs {
    /// The command-line arguments that parse back into `self`.
    fn to_args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--image".into(),
            self.image.display().to_string(),
            "--log".into(),
            self.log.display().to_string(),
        ];
        if self.sync {
            a.push("--sync".into());
        }
        if self.tolerate_out_of_space {
            a.push("--tolerate-out-of-space".into());
        }
        if self.blob {
            a.push("--blob".into());
        }
        let pairs = [
            ("--exec", self.exec.name().to_string()),
            ("--gc-mode", self.gc_mode.name().to_string()),
            ("--keys", self.keys.to_string()),
            ("--max-value", self.max_value.to_string()),
            ("--seed", self.seed.to_string()),
            ("--first-version", self.first_version.to_string()),
            ("--ops", self.ops.to_string()),
        ];
        for (flag, value) in pairs {
            a.push(flag.into());
            a.push(value);
        }
        a
    }

    fn setup(&self) -> Setup {
        Setup {
            keys: self.keys,
            max_value: self.max_value,
            gc_mode: self.gc_mode,
            tolerate_out_of_space: self.tolerate_out_of_space,
            blob: self.blob,
            ..Setup::new(CrashKind::Kill, self.sync, self.exec, self.seed)
        }
    }
}

/// How a child ends when nobody kills it.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChildEnd {
    /// The engine ran out of space (tolerated): exit with [`CHILD_OUT_OF_SPACE`].
    OutOfSpace,
}

/// The child: opens the store, reads it to seed its own oracle (for checking its reads),
/// then writes until killed. Returns only when it stops by itself: a tolerated
/// out-of-space error, or a failure.
pub fn child_main(args: &ChildArgs) -> Result<ChildEnd, String> {
    let setup = args.setup();
    let mut journal = FileJournal::create(&args.log).map_err(|e| log_error(&e))?;
    let dev = setup::open_image(&args.image, FileDevice::open)?;
    let stack = match setup::open(Arc::new(dev), &setup) {
        Ok(stack) => stack,
        Err(e) if e.is_out_of_space() && setup.tolerate_out_of_space => {
            return out_of_space(&mut journal, &e);
        }
        Err(e) => return Err(e.to_string()),
    };
    let rb = read_back(&stack.db, setup.keys).map_err(|e| format!("read back: {e}"))?;
    if let Some(bad) = rb.bad.iter().chain(&rb.get_vs_scan).next() {
        return Err(format!("read back: {bad}"));
    }
    let mut oracle = Oracle::from_state(rb.state, args.first_version);
    journal.event(&Event::Ready).map_err(|e| log_error(&e))?;
    let writer = Writer {
        sync: setup.sync,
        max_value: setup.max_value,
    };
    let mut gen = Generator::new(args.seed, setup.keys);
    let mut left = args.ops;
    let mut reported = Activity::default();
    while left > 0 {
        let n = left.min(ACTIVITY_EVERY);
        left -= n;
        match writer
            .run(&stack.db, &mut gen, &mut oracle, &mut journal, n)
            .0
        {
            End::Done => {}
            End::Error(e) if setup::is_out_of_space(&e) && setup.tolerate_out_of_space => {
                return out_of_space(&mut journal, &e);
            }
            End::Error(e) => return Err(format!("engine error without a crash: {e}")),
            End::Mismatch(m) => return Err(format!("wrong read: {m}")),
            End::Journal(e) => return Err(log_error(&e)),
        }
        let now = stack.activity();
        if now != reported {
            reported = now;
            journal
                .event(&Event::Activity(now))
                .map_err(|e| log_error(&e))?;
        }
    }
    journal.event(&Event::End).map_err(|e| log_error(&e))?;
    std::thread::sleep(CHILD_IDLE);
    Err("ran out of operations and was never killed".into())
}

fn log_error(e: &std::io::Error) -> String {
    format!("write the log: {e}")
}

fn out_of_space(journal: &mut FileJournal, e: &dyn std::fmt::Display) -> Result<ChildEnd, String> {
    // The parent reads it from the child's stderr.
    eprintln!("{e}");
    journal
        .event(&Event::OutOfSpace)
        .map_err(|e| log_error(&e))?;
    Ok(ChildEnd::OutOfSpace)
}

/// When the parent kills the child.
enum KillAt {
    /// This long after the start: often inside the child's mount or recovery.
    Start(Duration),
    /// Once this many operations were acknowledged, plus a pause.
    Acked(u64, Duration),
}

/// One store under process kills.
pub struct Killed {
    setup: Setup,
    image: PathBuf,
    log: PathBuf,
    stderr: PathBuf,
    exe: PathBuf,
    oracle: Oracle,
    rng: ChaCha8Rng,
    round: u64,
    /// Opens in a row that failed for want of space (tolerated).
    failed_opens: u32,
}

impl Killed {
    /// Formats a new store in an image file in `dir`; `exe` is the `zkv-stress` binary the
    /// children run.
    pub fn create(setup: Setup, dir: &Path, exe: &Path) -> Result<Killed, String> {
        let name = |ext: &str| dir.join(format!("kill-{}.{ext}", setup.seed));
        let image = name("img");
        let dev = FileDevice::create(&image, setup.geometry())
            .map_err(|e| format!("create {}: {e}", image.display()))?;
        let mut oracle = Oracle::new(setup.keys);
        setup::create(Arc::new(dev), &setup, &mut oracle)?;
        Ok(Killed {
            log: name("log"),
            stderr: name("stderr"),
            image,
            exe: exe.to_path_buf(),
            oracle,
            rng: ChaCha8Rng::seed_from_u64(setup.seed),
            round: 0,
            failed_opens: 0,
            setup,
        })
    }

    /// Checks the store, then runs a child and kills it; false once the store failed.
    pub fn round(&mut self, totals: &mut Totals) -> bool {
        self.round += 1;
        let label = format!("{} round {}", self.setup.label(), self.round);
        if let Err(e) = self.check(totals, &label) {
            totals.failures.unexpected_errors += 1;
            totals.fail(format!("{label}: {e}"));
        }
        if totals.failed() {
            return false;
        }
        match self
            .kill_child()
            .and_then(|killed| self.absorb(killed, totals))
        {
            Ok(()) => true,
            Err(e) => {
                totals.failures.unexpected_errors += 1;
                totals.fail(format!("{label}: {e}"));
                false
            }
        }
    }

    /// Whether the store can no longer be opened: its last opens (here or in the child)
    /// all failed for want of space (see `InProcess::stuck`).
    pub fn stuck(&self) -> bool {
        self.failed_opens >= STUCK_AFTER
    }

    /// Counts an open that failed for want of space (tolerated).
    fn failed_open(&mut self, totals: &mut Totals, what: String) {
        self.failed_opens += 1;
        totals.out_of_space(what.clone());
        if self.stuck() {
            totals.counts.stuck_out_of_space += 1;
            totals.note_stuck(what);
        }
    }

    /// Checks the store after the last kill; false if the check failed.
    pub fn final_check(&mut self, totals: &mut Totals) -> bool {
        let label = format!("{} final check", self.setup.label());
        if let Err(e) = self.check(totals, &label) {
            totals.failures.unexpected_errors += 1;
            totals.fail(format!("{label}: {e}"));
        }
        !totals.failed()
    }

    /// Opens the image in this process, checks the store and closes it cleanly. A check
    /// failure is counted in `totals`; an error is a failure to get that far.
    fn check(&mut self, totals: &mut Totals, label: &str) -> Result<(), String> {
        let dev = setup::open_image(&self.image, FileDevice::open)?;
        let stack = match setup::open(Arc::new(dev), &self.setup) {
            Ok(stack) => stack,
            Err(e) if e.is_out_of_space() && self.setup.tolerate_out_of_space => {
                self.failed_open(totals, format!("{label}: recovery: {e}"));
                return Ok(());
            }
            Err(e) => return Err(format!("recovery: {e}")),
        };
        let verified = verify(&stack, &mut self.oracle, totals, label)
            .map_err(|e| format!("reading back: {e}"))?;
        self.failed_opens = 0;
        totals.activity.add(&stack.activity());
        if verified {
            verify::close(stack, &self.setup, totals)?;
        }
        Ok(())
    }

    fn spawn(&mut self) -> Result<Child, String> {
        let args = ChildArgs {
            image: self.image.clone(),
            log: self.log.clone(),
            sync: self.setup.sync,
            exec: self.setup.exec,
            gc_mode: self.setup.gc_mode,
            keys: self.setup.keys,
            max_value: self.setup.max_value,
            seed: self.rng.random(),
            first_version: self.oracle.next_version(),
            ops: 100_000,
            tolerate_out_of_space: self.setup.tolerate_out_of_space,
            blob: self.setup.blob,
        };
        // An empty log now: a stale one must not be read as this child's.
        std::fs::write(&self.log, b"").map_err(|e| format!("empty the log: {e}"))?;
        let stderr = std::fs::File::create(&self.stderr)
            .map_err(|e| format!("create {}: {e}", self.stderr.display()))?;
        Command::new(&self.exe)
            .arg("child")
            .args(args.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("start {}: {e}", self.exe.display()))
    }

    fn kill_at(&mut self) -> KillAt {
        if self.rng.random_bool(0.1) {
            return KillAt::Start(Duration::from_micros(self.rng.random_range(0..60_000)));
        }
        let acked = self
            .rng
            .random_range(1..=u64::from(self.setup.max_epoch_ops));
        KillAt::Acked(
            acked,
            Duration::from_micros(self.rng.random_range(0..3_000)),
        )
    }

    /// Starts a child and kills it at a random point. True if the kill ended it; false if
    /// it stopped by itself for a tolerated reason (out of space).
    fn kill_child(&mut self) -> Result<bool, String> {
        let at = self.kill_at();
        let mut child = self.spawn()?;
        let waited = self.wait_for(&mut child, &at);
        // Killed even if waiting failed, so no child outlives its round.
        let _ = child.kill();
        let status = child
            .wait()
            .map_err(|e| format!("wait for the child: {e}"))?;
        waited?;
        if status.signal() == Some(SIGKILL) {
            return Ok(true);
        }
        let out_of_space = status.code() == Some(i32::from(CHILD_OUT_OF_SPACE));
        if out_of_space && self.setup.tolerate_out_of_space {
            return Ok(false);
        }
        let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        Err(format!("the child ended by itself ({status}): {err}"))
    }

    /// Waits until the kill point, or until the child ends by itself (its exit status
    /// tells why); fails if it takes too long.
    fn wait_for(&self, child: &mut Child, at: &KillAt) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Ok(());
            }
            let due = match at {
                KillAt::Start(after) => (started.elapsed() >= *after).then_some(Duration::ZERO),
                KillAt::Acked(n, pause) => (acked_in_log(&self.log) >= *n).then_some(*pause),
            };
            if let Some(pause) = due {
                std::thread::sleep(pause);
                return Ok(());
            }
            if started.elapsed() > CHILD_DEADLINE {
                return Err(format!(
                    "the child made too little progress in {CHILD_DEADLINE:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Feeds the child's log into the oracle and the totals; `killed`: the child died by
    /// the kill (a crash point), not by itself.
    fn absorb(&mut self, killed: bool, totals: &mut Totals) -> Result<(), String> {
        if killed {
            totals.crash(CrashKind::Kill);
        }
        let mut ready = false;
        let mut activity = Activity::default();
        for event in journal::read(&self.log)? {
            match event {
                Event::Ready => ready = true,
                Event::Intent(op) => {
                    totals.counts.ops += 1;
                    if self.oracle.begun() > self.oracle.acked() {
                        return Err("two intents without an acknowledgement".into());
                    }
                    self.oracle.check_keys(&op)?;
                    self.oracle.begin(op);
                }
                Event::Acked => {
                    let Some(op) = self.oracle.in_flight() else {
                        return Err("an acknowledgement without an intent".into());
                    };
                    let flush = op.kind == OpKind::Flush;
                    self.oracle.ack(self.setup.sync || flush);
                }
                Event::Read(n) => {
                    totals.counts.ops += 1;
                    totals.counts.reads_checked += n;
                }
                Event::Activity(a) => activity = a,
                Event::End => totals.counts.crashes_at_end += 1,
                Event::OutOfSpace => {
                    let why = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                    let what = format!("{}: child: {}", self.setup.label(), why.trim());
                    match ready {
                        true => totals.out_of_space(what),
                        false => self.failed_open(totals, what),
                    }
                }
            }
        }
        // Killed before the child had opened and read the store: in its mount or recovery.
        totals.counts.crashes_in_recovery += u64::from(killed && !ready);
        totals.activity.add(&activity);
        Ok(())
    }
}

/// Acknowledgements in the log so far (0 if it cannot be read yet).
fn acked_in_log(log: &Path) -> u64 {
    std::fs::read_to_string(log)
        .map(|text| text.lines().filter(|l| *l == "A").count() as u64)
        .unwrap_or(0)
}
