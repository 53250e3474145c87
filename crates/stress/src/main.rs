//! `zkv-stress`: the crash harness from the command line (see `docs/RELIABILITY.md`).
//!
//! `zkv-stress --hours 1 --seed 7 --kinds kill,power,crashpoint --dir /tmp/soak` runs every
//! chosen crash kind in both WAL modes and both execution modes until the time is up,
//! prints progress lines and the totals, and exits non-zero on any failure.
//! `zkv-stress child ...` is the writer process that kill rounds start; not for people.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use zkv_engine::options::ExecMode;
use zkv_stress::kill::{child_main, ChildArgs, ChildEnd, CHILD_OUT_OF_SPACE};
use zkv_stress::run::{run, Plan, Rounds, Until};
use zkv_stress::setup::{CrashKind, Setup};
use zkv_zonefs::fs::CleaningMode;

#[derive(Parser, Debug)]
#[command(name = "zkv-stress", about = "Crash harness of zkv")]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// Run for this many hours (fractions allowed; 0.01 if neither this nor --rounds).
    #[arg(long, conflicts_with = "rounds")]
    hours: Option<f64>,
    /// Instead of a time: this many rounds per store (kill stores run a fifth of them).
    #[arg(long)]
    rounds: Option<u64>,
    /// Fixes every store's workload and crash points (store i gets seed × 1000 + i).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Crash kinds, comma-separated: kill, power, crashpoint.
    #[arg(long, default_value = "kill,power,crashpoint", value_delimiter = ',')]
    kinds: Vec<String>,
    /// WAL modes: sync (every write synced), nosync, or both.
    #[arg(long, default_value = "both")]
    wal: String,
    /// Execution modes: threaded, deterministic, or both.
    #[arg(long, default_value = "both")]
    exec: String,
    /// Where image files and child logs go (created if missing; a temporary directory
    /// by default).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Zones of each device (default 24).
    #[arg(long)]
    zones: Option<u32>,
    /// Zone size in KiB (default 256).
    #[arg(long)]
    zone_kib: Option<u64>,
    /// Keys of each store (default 800).
    #[arg(long)]
    keys: Option<u32>,
    /// Largest value body in bytes (default 2000).
    #[arg(long)]
    max_value: Option<usize>,
    /// Zone cleaning mode of every store: copy, compact or compensate (default: copy for
    /// half the stores, compact for the other half, see `Setup::matrix`).
    #[arg(long)]
    gc_mode: Option<String>,
    /// Count an out-of-space error without a crash as a failure (by default it is counted
    /// as `out_of_space`, a known bug of threaded mode, and the store is crashed there).
    #[arg(long)]
    strict_space: bool,
    /// BlobDB in every store: values of 512 bytes and more in blob files, blob garbage
    /// collection on.
    #[arg(long)]
    blob: bool,
    /// Seconds between progress lines.
    #[arg(long, default_value_t = 30)]
    progress: u64,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// The writer process of kill rounds (started by the harness itself).
    #[command(hide = true)]
    Child(ChildArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Cmd::Child(args)) = &cli.command {
        // Returns only when the child stops by itself: it is meant to die by SIGKILL.
        return match child_main(args) {
            Ok(ChildEnd::OutOfSpace) => ExitCode::from(CHILD_OUT_OF_SPACE),
            // An end this binary has no exit code for is a failure, not a success.
            Ok(other) => {
                eprintln!("zkv-stress child: stopped without an exit code for it: {other:?}");
                ExitCode::from(3)
            }
            Err(e) => {
                eprintln!("zkv-stress child: {e}");
                ExitCode::from(3)
            }
        };
    }
    match soak(&cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("zkv-stress: {e}");
            ExitCode::from(2)
        }
    }
}

/// The setups the flags ask for: every kind × WAL mode × execution mode.
fn setups(cli: &Cli) -> Result<Vec<Setup>, String> {
    let kinds = cli
        .kinds
        .iter()
        .map(|k| CrashKind::from_name(k).ok_or_else(|| format!("unknown crash kind {k:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    let wal: &[bool] = match cli.wal.as_str() {
        "sync" => &[true],
        "nosync" => &[false],
        "both" => &[true, false],
        other => return Err(format!("--wal {other:?}: sync, nosync or both")),
    };
    let exec: &[ExecMode] = match cli.exec.as_str() {
        "both" => &[ExecMode::Threaded, ExecMode::Deterministic],
        name => &[ExecMode::from_name(name).ok_or_else(|| format!("--exec {name:?}"))?],
    };
    let gc_mode = match &cli.gc_mode {
        Some(name) => {
            Some(CleaningMode::from_name(name).ok_or_else(|| format!("--gc-mode {name:?}"))?)
        }
        None => None,
    };
    let out = Setup::matrix(&kinds, wal, exec, cli.seed.wrapping_mul(1000))
        .into_iter()
        .map(|d| Setup {
            zones: cli.zones.unwrap_or(d.zones),
            zone_kib: cli.zone_kib.unwrap_or(d.zone_kib),
            keys: cli.keys.unwrap_or(d.keys),
            max_value: cli.max_value.unwrap_or(d.max_value),
            gc_mode: gc_mode.unwrap_or(d.gc_mode),
            tolerate_out_of_space: !cli.strict_space,
            blob: cli.blob,
            ..d
        })
        .collect();
    Ok(out)
}

fn soak(cli: &Cli) -> Result<bool, String> {
    let tmp;
    let dir = match &cli.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("create {}: {e}", d.display()))?;
            d.clone()
        }
        None => {
            tmp = TempDir::new()?;
            tmp.0.clone()
        }
    };
    let until = match (cli.hours, cli.rounds) {
        (_, Some(n)) => Until::Rounds(Rounds {
            kill: n.div_ceil(5),
            power: n,
            crashpoint: n,
        }),
        (hours, None) => {
            let secs = hours.unwrap_or(0.01) * 3600.0;
            Until::Deadline(Instant::now() + Duration::from_secs_f64(secs.max(0.0)))
        }
    };
    let exe = std::env::current_exe().map_err(|e| format!("find my own binary: {e}"))?;
    let plan = Plan {
        setups: setups(cli)?,
        dir,
        exe: Some(exe),
        until,
        slice: Duration::from_secs(2),
        jobs: cli.jobs,
        progress: Duration::from_secs(cli.progress.max(1)),
    };
    let say = |line: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    let outcome = run(&plan, &say)?;
    for store in &outcome.stores {
        say(&store.summary());
    }
    say(outcome.totals.report().trim_end());
    Ok(!outcome.totals.failed())
}

/// A directory removed when dropped (without a dependency for one call).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        let base = std::env::temp_dir().join(format!("zkv-stress-{}", std::process::id()));
        std::fs::create_dir_all(&base).map_err(|e| format!("create {}: {e}", base.display()))?;
        Ok(TempDir(base))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
