//! `zkv compare`: one `zkv bench` run per scheme, with otherwise identical flags and seed,
//! one after the other; then one table, one JSON and, with `--out`, SVG charts.
//!
//! Each scheme's run is parsed again from the command line, with the scheme's flags before
//! it and the entry's overrides after it (the last occurrence of a flag wins), so that every
//! bench flag, and every check of `zkv bench`, applies to every scheme unchanged. Every
//! run is checked before the first one starts.

pub(crate) mod charts;
pub(crate) mod rocksdb;
pub(crate) mod schemes;
pub(crate) mod style;
pub(crate) mod table;

use std::ffi::OsString;
use std::fs::File;
use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use serde_json::{json, Value};
use zkv_zns::DeviceSpec;

use super::bench::{self, BenchArgs};
use super::error::{CliError, CliResult};
use super::Out;
use charts::Charts;
pub(crate) use schemes::Entry;
use schemes::{parse_schemes, Engine, SchemeList};

/// `zkv compare --help`'s text after the flags: the schemes come from the scheme table.
fn compare_help() -> String {
    format!(
        "Scheme entries: NAME[:KEY=VALUE...], e.g. baseline or baseline:gc-start=10:gc-stop=15.\n\
         Schemes (placement + picker, cleaning): the papers' and zkv's own:\n{}\n\
         Override keys: {}.\n{COMPARE_HELP}",
        schemes::schemes_help(),
        schemes::OVERRIDE_KEYS.join(", ")
    )
}

const COMPARE_HELP: &str = "\
A flag given on the command line applies to every scheme unless an entry overrides it. The entry as written labels its column, its JSON run and its
chart lines.

Example:
  zkv compare --schemes baseline:gc-start=5:gc-stop=10,baseline:gc-start=20:gc-stop=25 \\
              --workload fillrandom,overwrite --num 20000 --value-size 256 --zones 32 \\
              --zone-size 4MiB --write-buffer-size 256KiB --target-file-size-base 256KiB \\
              --max-bytes-for-level-base 1MiB --mode deterministic --verify --out charts

The rocksdb scheme runs RocksDB's db_bench (ZKV_DB_BENCH, else db_bench on PATH; Debian's
rocksdb-tools, scripts/install-db-bench.sh) in a temporary directory, with the flags mapped to
db_bench's; zkv-only flags on the command line (zone flags, --mode, --verify, ...) are left
to the zkv schemes, flags db_bench has no equivalent of are refused (docs/CLI.md, 'The rocksdb
scheme').

Every other flag is a flag of zkv bench (see 'zkv bench --help'); runs use --device mem.";

#[derive(Debug, Args)]
// Every scheme runs on the in-memory device: --device (a bench flag) is refused, so not
// offered.
#[command(after_help = compare_help(), mut_arg("device", |a| a.hide(true)))]
pub struct CompareArgs {
    /// Schemes to run, comma separated: NAME[:KEY=VALUE...] (see below)
    #[arg(long, value_name = "LIST", required = true, value_parser = parse_schemes)]
    schemes: SchemeList,

    /// Write SVG charts to this directory (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    #[command(flatten)]
    bench: BenchArgs,
}

/// The command line of one scheme's run, parsed on its own.
#[derive(Debug, Parser)]
#[command(name = "zkv compare", no_binary_name = true)]
struct SchemeCommand {
    #[command(flatten)]
    args: CompareArgs,
}

/// The command line of one run of `zkv repro`: bench flags only.
#[derive(Debug, Parser)]
#[command(name = "zkv repro", no_binary_name = true)]
struct RunCommand {
    #[command(flatten)]
    bench: BenchArgs,
}

/// One scheme's run, checked: its flags and the plan `zkv bench` made of them; for the
/// rocksdb scheme, the db_bench run that stands for it.
pub(crate) struct Run {
    pub entry: Entry,
    args: BenchArgs,
    plan: bench::Plan,
    db_bench: Option<rocksdb::DbBench>,
}

impl Run {
    /// The `config` its report will have, without running it.
    pub(crate) fn config(&self) -> Value {
        bench::config(&self.args, &self.plan)
    }
}

/// Everything checked and created before the first run.
struct Plan {
    runs: Vec<Run>,
    /// What `--preset` sets, printed once before the runs.
    note: Vec<String>,
    json: Option<(PathBuf, File)>,
    charts: Option<Charts>,
}

pub fn run(a: CompareArgs) -> CliResult {
    // The typed flags cannot be changed per scheme from here; the words they came from can.
    let words: Vec<OsString> = std::env::args_os().skip(2).collect();
    let plan = plan(&a, &words)?;
    let mut out = Out::new();
    for line in &plan.note {
        out.line(line)?;
    }
    let labels: Vec<String> = plan.runs.iter().map(|r| r.entry.label.clone()).collect();
    let count = plan.runs.len();
    let mut reports = Vec::new();
    let mut failed = None;
    for (i, run) in plan.runs.into_iter().enumerate() {
        let at = format!("{}/{count}", i + 1);
        out.line(format!("== {} ({at})", run.entry.label))?;
        let context = format!("compare: run {at} {}", run.entry.label);
        let (report, error) = execute(run, &mut out, &context)?;
        reports.push(report);
        // A failed run still has a report; the others still run, and the first failure
        // ends the command once everything is written.
        failed = failed.or(error);
    }
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    out.line("")?;
    for line in table::lines(&labels, &reports) {
        out.line(line)?;
    }
    out.flush()?;
    if let Some((path, file)) = plan.json {
        bench::write_json(&path, file, &json!({ "schemes": labels, "runs": reports }))?;
    }
    if let Some(charts) = plan.charts {
        charts.write(&labels, &reports)?;
    }
    failed.map_or(Ok(()), Err)
}

/// Runs one checked run, printing its db_bench result lines; `context` starts its progress
/// lines. Returns its report (labelled with the entry) and, apart, the run's failure: a
/// failed run still has a report. An error before the run started (the store could not be
/// opened) is returned as such.
pub(crate) fn execute(
    run: Run,
    out: &mut Out,
    context: &str,
) -> CliResult<(Value, Option<CliError>)> {
    let Run {
        entry,
        args,
        plan,
        db_bench,
    } = run;
    if let Some(db_bench) = db_bench {
        let (report, failed) =
            rocksdb::execute(db_bench, out, context).map_err(|e| labelled(&entry, e))?;
        let failed = failed.map(|e| labelled(&entry, e));
        return Ok((label_report(report, &entry.label), failed));
    }
    let mut done = bench::run_quiet(&args, plan, out, context).map_err(|e| labelled(&entry, e))?;
    let report = label_report(std::mem::take(&mut done.report), &entry.label);
    let failed = done.result().err().map(|e| labelled(&entry, e));
    Ok((report, failed))
}

/// Parses and checks one run of `zkv repro`: the entry's scheme flags, then `words` (bench
/// flags), then the entry's overrides, as for `zkv compare`. Returns the run and the lines
/// of its preset's note.
pub(crate) fn prepare(entry: &Entry, words: &[OsString]) -> CliResult<(Run, Vec<String>)> {
    let (args, json, device) = parse_run(RunCommand::command(), &entry.label, entry, words)?;
    if json.is_some() {
        return Err(labelled(
            entry,
            CliError::invalid("--json: not for a single run here"),
        ));
    }
    checked(entry, args, device)
}

/// Parses and checks every scheme's run, then creates the JSON file and the chart files,
/// so that any bad input fails before the first run.
fn plan(a: &CompareArgs, words: &[OsString]) -> CliResult<Plan> {
    let mut runs = Vec::new();
    let mut json = None;
    let mut note = Vec::new();
    for entry in &a.schemes.0 {
        let context = format!("--schemes {}", entry.label);
        let (args, path, device) = parse_run(SchemeCommand::command(), &context, entry, words)?;
        let (run, lines) = checked(entry, args, device)?;
        if runs.is_empty() {
            note = lines;
        }
        json = path;
        runs.push(run);
    }
    check_acc_flags(&runs)?;
    check_some_scheme_reads(&a.bench, &runs)?;
    // Every scheme reads the same -P file: its warnings once.
    for line in runs.first().map(|r| r.plan.warnings()).unwrap_or_default() {
        crate::cli::warn(line);
    }
    let json = bench::open_json(json.as_deref())?;
    let charts = a.out.as_deref().map(Charts::create).transpose()?;
    Ok(Plan {
        runs,
        note,
        json,
        charts,
    })
}

/// `--acc-turning-point`, `--acc-min-level` and `--short-threshold` given on the command line
/// apply to every scheme, so a scheme whose policies do not read them is fine as long as
/// another one does; an entry's own override must be read by that entry's policies.
fn check_acc_flags(runs: &[Run]) -> CliResult {
    for r in runs {
        for flag in r.args.unread_acc_flags() {
            let key = flag.trim_start_matches('-');
            let overridden = r.entry.overrides.iter().any(|(k, _)| k == key);
            let any_reads = runs.iter().any(|r| r.args.reads_flag(flag));
            if overridden || !any_reads {
                return Err(labelled(&r.entry, r.args.unread_acc_flag(flag)));
            }
        }
    }
    Ok(())
}

/// A flag of the command line that no scheme of the comparison reads would be ignored:
/// zone flags without a scheme on zones, zkv's own engine flags with only the rocksdb
/// scheme. Refused, all of them in one message.
fn check_some_scheme_reads(line: &BenchArgs, runs: &[Run]) -> CliResult {
    let mut unread = Vec::new();
    if !runs.iter().any(|r| r.entry.scheme.fs == "zoned") {
        unread.extend(line.zone_only_flags());
    }
    if runs.iter().all(|r| r.db_bench.is_some()) {
        unread.extend(line.zkv_engine_only_flags());
    }
    if unread.is_empty() {
        return Ok(());
    }
    Err(CliError::invalid(format!(
        "{}: no scheme of --schemes reads {}; add a scheme that does, or leave {} out",
        unread.join(", "),
        if unread.len() == 1 { "it" } else { "them" },
        if unread.len() == 1 { "it" } else { "them" },
    )))
}

/// The checks of one run: an in-memory device, the preset filled in, every check of
/// `zkv bench`. Returns the run and the lines of the preset's note.
fn checked(
    entry: &Entry,
    mut args: BenchArgs,
    device: DeviceSpec,
) -> CliResult<(Run, Vec<String>)> {
    if device != DeviceSpec::Mem {
        return Err(CliError::invalid(format!(
            "--device {device}: zkv compare and zkv repro run every scheme on --device mem"
        )));
    }
    if entry.scheme.fs != "zoned" {
        let own: Vec<String> = (entry.overrides.iter())
            .map(|(k, _)| k.replace('-', "_"))
            .collect();
        args.leave_zone_flags_to_zoned_schemes(&own);
    }
    // The scheme's parts and the overrides count as given: a preset fills in the rest.
    let lines = bench::apply_preset(&mut args).map_err(|e| labelled(entry, e))?;
    let plan = bench::check(&args).map_err(|e| labelled(entry, e))?;
    let db_bench = (entry.scheme.engine == Engine::DbBench)
        .then(|| rocksdb::prepare(&args, &plan))
        .transpose()
        .map_err(|e| labelled(entry, e))?;
    let run = Run {
        entry: entry.clone(),
        args,
        plan,
        db_bench,
    };
    Ok((run, lines))
}

/// One entry's bench flags: the scheme's, the command line's, the entry's overrides,
/// parsed by `command` (compare's or repro's); errors start with `context`. The JSON path
/// is taken out (compare writes one JSON for all runs), and returned with the device.
fn parse_run(
    command: clap::Command,
    context: &str,
    entry: &Entry,
    words: &[OsString],
) -> CliResult<(BenchArgs, Option<PathBuf>, DeviceSpec)> {
    let mut argv = entry.scheme_args();
    argv.extend(words.iter().cloned());
    argv.extend(entry.override_args());
    let bad = |e: String| CliError::invalid(format!("{context}: {e}"));
    let mut m = command
        .args_override_self(true)
        .try_get_matches_from(argv)
        .map_err(|e| bad(clap_line(&e)))?;
    let json = m
        .try_remove_one::<PathBuf>("json")
        .map_err(|e| bad(e.to_string()))?;
    let device = m
        .try_get_one::<DeviceSpec>("device")
        .map_err(|e| bad(e.to_string()))?
        .cloned()
        .unwrap_or(DeviceSpec::Mem);
    let args = BenchArgs::from_arg_matches_mut(&mut m).map_err(|e| bad(clap_line(&e)))?;
    Ok((args, json, device))
}

/// A clap error as one line: its message and any detail lines, without usage and tips.
fn clap_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let lines: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    let text = lines.join(" ");
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

fn labelled(entry: &Entry, e: CliError) -> CliError {
    CliError::invalid(format!("{}: {e}", entry.label))
}

/// The bench report keeps its `scheme` (what its options amount to, as the papers name
/// it); `label` is the entry that asked for it.
fn label_report(mut report: Value, label: &str) -> Value {
    if let Value::Object(m) = &mut report {
        m.insert("label".into(), json!(label));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheme_run_parses_like_the_command() {
        SchemeCommand::command().debug_assert();
        RunCommand::command().debug_assert();
    }

    #[test]
    fn clap_errors_become_one_line() {
        let e = SchemeCommand::command()
            .try_get_matches_from(["--schemes", "baseline", "--gc-mode", "x"])
            .unwrap_err();
        let line = clap_line(&e);
        assert!(
            line.starts_with("invalid value 'x' for '--gc-mode <MODE>'"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
}
