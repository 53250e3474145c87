//! The `zkv` command line. Each subcommand lives in its own module and exposes a clap `Args`
//! type and a `run` function; `Command` below lists them. Shared pieces: [`size`] (byte sizes
//! with units), [`device`] (`--device` specs), [`geometry`] (the geometry flags of a new
//! image), [`fsview`] (reading a file system through a read-only mount),
//! [`table`] (aligned tables), [`error`] (the one error type) and [`Out`].
//!
//! Contract (docs/CLI.md): success exits 0; a failure prints exactly one `error: <message>`
//! line on stderr and exits 1, or 2 for a usage error (bad flag or value).

pub mod backup;
pub mod bench;
pub mod check;
pub mod compare;
pub mod device;
pub mod error;
pub mod fsinfo;
pub mod fsview;
pub mod geometry;
pub mod inspect;
pub mod kv;
pub mod levels;
pub mod mkfs;
pub mod pattern;
pub mod repro;
pub mod restore;
pub mod salvage;
pub mod size;
pub mod table;
pub mod zone;

use std::fmt::Display;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};

use error::{CliError, CliResult};

#[derive(Debug, Parser)]
#[command(
    name = "zkv",
    version,
    about = "zkv: a key-value store for zoned (ZNS) SSDs",
    long_about = "zkv: a key-value store for zoned (ZNS) SSDs.\n\n\
        Devices are given as --device mem (in memory), file:PATH (an emulated device in\n\
        one image file) or zbd:/dev/DEV (a Linux zoned block device).\n\
        Sizes take binary units: 4096, 4K, 4KiB, 64MiB, 1.5G, 2TiB.",
    after_help = "Run 'zkv <COMMAND> --help' for the flags of a command.",
    propagate_version = true,
    subcommand_required = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create, inspect and drive the zones of a device (like blkzone)
    #[command(arg_required_else_help = true)]
    Zone(zone::ZoneArgs),
    /// Format a device with an empty zkv file system (creates a file: image if needed)
    Mkfs(mkfs::MkfsArgs),
    /// Show a zkv file system's zones, files and space without changing the device
    #[command(arg_required_else_help = true)]
    Inspect(inspect::InspectArgs),
    /// Run db_bench and YCSB workloads on an emulated zoned device and report the figures
    Bench(Box<bench::BenchArgs>),
    /// Run the same bench once per scheme and compare them: one table, one JSON, SVG charts
    #[command(arg_required_else_help = true)]
    Compare(Box<compare::CompareArgs>),
    /// Run a paper's experiment matrix and rebuild its figures and tables (caza22, samezone24)
    #[command(arg_required_else_help = true)]
    Repro(Box<repro::ReproArgs>),
    /// Set a key to a value (creates the database on first use); synced before it returns
    Put(kv::PutArgs),
    /// Print the value of a key (exit code 1 if it has none); never writes the device
    Get(kv::KeyArgs),
    /// Delete a key; synced before it returns
    Delete(kv::DeleteArgs),
    /// List keys and values in key order, within bounds; never writes the device
    Scan(kv::ScanArgs),
    /// Compact a key range (all keys by default) down to the last level, so the space of
    /// deleted and overwritten values comes back; works on a full device after deletes
    Compact(kv::CompactArgs),
    /// Verify a store without changing it: metadata, every extent, table block and WAL
    /// record; exit 1 if anything is damaged
    Check(check::CheckArgs),
    /// Copy every key that can still be read from a damaged store into a new image or a
    /// dump file, and say what was lost
    Salvage(salvage::SalvageArgs),
    /// Copy every file of a zkv file system to a directory, with a checksummed manifest;
    /// never writes the device
    #[command(arg_required_else_help = true)]
    Backup(backup::BackupArgs),
    /// Format a device and write a backup's files back onto it, checksums verified first
    #[command(arg_required_else_help = true)]
    Restore(restore::RestoreArgs),
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Zone(args) => zone::run(args),
        Command::Mkfs(args) => mkfs::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Bench(args) => bench::run(*args),
        Command::Compare(args) => compare::run(*args),
        Command::Repro(args) => repro::run(*args),
        Command::Put(args) => kv::put(args),
        Command::Get(args) => kv::get(args),
        Command::Delete(args) => kv::delete(args),
        Command::Scan(args) => kv::scan(args),
        Command::Compact(args) => kv::compact(args),
        Command::Check(args) => check::run(args),
        Command::Salvage(args) => salvage::run(args),
        Command::Backup(args) => backup::run(args),
        Command::Restore(args) => restore::run(args),
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            print_error(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

/// Prints `error: <message>` as one line on stderr.
fn print_error(message: &dyn Display) {
    let text = one_line(&message.to_string());
    // Nothing sensible is left to do if stderr itself is gone.
    let _ = writeln!(io::stderr().lock(), "error: {text}");
}

fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A bug must still end as one readable line, not a panic message and a backtrace.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "panic".to_string()
        };
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        print_error(&format!("internal error (a bug in zkv): {what}{at}"));
    }));
}

/// clap's own errors, reduced to one line: `error: <what>[: <items>] [(tip)] [(see ...)]`.
/// Help and version requests print as clap formats them.
fn usage_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        _ => {}
    }
    print_error(&summarize_clap_error(&e.render().to_string()));
    ExitCode::from(2)
}

fn summarize_clap_error(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let head = lines.next().unwrap_or("invalid usage");
    let mut message = head.strip_prefix("error: ").unwrap_or(head).to_string();
    let mut items = Vec::new();
    let mut tips = Vec::new();
    let mut command = None;
    for line in lines.map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(usage) = line.strip_prefix("Usage:") {
            // "Usage: zkv zone create --device <DEVICE> ..." -> "zkv zone create"
            let words: Vec<&str> = usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['-', '<', '[']))
                .collect();
            if !words.is_empty() {
                command = Some(words.join(" "));
            }
            break;
        }
        if line.starts_with("For more information") {
            break;
        }
        match line.strip_prefix("tip:") {
            Some(tip) => tips.push(tip.trim().to_string()),
            None => items.push(line.to_string()),
        }
    }
    if !items.is_empty() {
        message = format!("{} {}", message, items.join(", "));
    }
    for tip in tips {
        message = format!("{message} ({tip})");
    }
    if let Some(command) = command {
        message = format!("{message} (see '{command} --help')");
    }
    message
}

/// Buffered stdout whose failures are errors, not panics (`println!` panics on a closed pipe).
pub struct Out {
    inner: io::BufWriter<io::StdoutLock<'static>>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            inner: io::BufWriter::new(io::stdout().lock()),
        }
    }

    pub fn line(&mut self, text: impl Display) -> CliResult {
        writeln!(self.inner, "{text}").map_err(CliError::Output)
    }

    /// Prints `value` as one pretty-printed JSON document.
    pub fn json(&mut self, value: &impl serde::Serialize) -> CliResult {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| CliError::invalid(format!("encoding the output as JSON: {e}")))?;
        self.line(text)
    }

    pub fn flush(&mut self) -> CliResult {
        self.inner.flush().map_err(CliError::Output)
    }
}

/// One `warning: ...` line on stderr. A warning that cannot be printed (stderr gone) is no
/// reason to fail the command.
pub fn warn(text: impl Display) {
    let _ = writeln!(io::stderr().lock(), "warning: {text}");
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn clap_errors_become_one_line() {
        let rendered = "error: the following required arguments were not provided:\n  \
            --zones <N>\n  --zone-size <SIZE>\n\nUsage: zkv zone create --device <DEVICE> \
            --zones <N> --zone-size <SIZE>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            summarize_clap_error(rendered),
            "the following required arguments were not provided: --zones <N>, \
             --zone-size <SIZE> (see 'zkv zone create --help')"
        );
        let rendered = "error: invalid value '0' for '--zone-size <SIZE>': must be greater \
            than zero\n\nFor more information, try '--help'.\n";
        assert_eq!(
            summarize_clap_error(rendered),
            "invalid value '0' for '--zone-size <SIZE>': must be greater than zero"
        );
        let rendered = "error: unexpected argument '--foo' found\n\n  tip: to pass '--foo' as \
            a value, use '-- --foo'\n\nUsage: zkv zone report [OPTIONS] --device <DEVICE>\n";
        assert_eq!(
            summarize_clap_error(rendered),
            "unexpected argument '--foo' found (to pass '--foo' as a value, use '-- --foo') \
             (see 'zkv zone report --help')"
        );
    }

    #[test]
    fn messages_are_flattened() {
        assert_eq!(one_line("a\n  b\n\nc"), "a b c");
    }
}
