//! `zkv repro --resume`: the run reports already in `DIR/runs/` that can stand in for a
//! run of the matrix, so that an interrupted repro goes on where it stopped and runs of
//! different `--modes` invocations end in one report directory.
//!
//! A stored report is reused when it is a JSON object without an `error` and its `config`
//! is exactly the one the run would write: every effective option, so a report of other
//! flags, another scale or another scheme is never mistaken for this run's.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::Path;

use serde_json::{Map, Value};
use zkv_engine::options::ExecMode;

use super::figure::run_file;
use super::matrix::{self, Spec, Step, Work, ALL_MODES};
use super::Experiment;
use crate::cli::compare::Run;
use crate::cli::error::{CliError, CliResult};

/// What `runs/ID.json` holds for one run.
#[derive(Debug)]
pub enum Stored {
    /// No file: nothing to reuse and nothing to say.
    Absent,
    /// A finished report of the same configuration.
    Reusable(Value),
    /// A file that cannot stand in for the run, and why (a few words).
    Stale(String),
}

/// The steps of a resumed matrix, over every mode: a run of a mode in `listed` is run
/// unless its stored report is reusable; a run of another mode is only reused, and left
/// out (one stderr line for all of them) if it cannot be.
pub fn steps(
    experiment: &dyn Experiment,
    listed: &[ExecMode],
    repeat: u32,
    common: &[OsString],
    dir: &Path,
) -> CliResult<Vec<Step>> {
    let prepared = prepare_all(experiment, listed, repeat, common)?;
    let seconds = previous_seconds(&dir.join("summary.json"));
    let mut steps = Vec::new();
    let mut skipped = Vec::new();
    for (spec, run) in prepared {
        let stored = match &run {
            Ok(run) => load(&dir.join(run_file(&spec.id())), &run.config()),
            Err(why) => Stored::Stale(why.clone()),
        };
        match (stored, run) {
            (Stored::Reusable(report), _) => {
                let seconds = seconds.get(&spec.id()).copied();
                let work = Work::Reuse { report, seconds };
                steps.push(Step { spec, work });
            }
            (stored, Ok(run)) if listed.contains(&spec.mode) => {
                steps.push(Step::run(spec, run, reason(stored)));
            }
            (stored, _) => skipped.push((spec, reason(stored))),
        }
    }
    say_skipped(&skipped, listed);
    Ok(steps)
}

/// Every run of every mode, checked. A listed run that does not check fails the command
/// before any file is read, as without --resume; a run of another mode that does not
/// check (a threaded-only flag for a deterministic run) is only not reusable, and why.
fn prepare_all(
    experiment: &dyn Experiment,
    listed: &[ExecMode],
    repeat: u32,
    common: &[OsString],
) -> CliResult<Vec<(Spec, Result<Run, String>)>> {
    let mut prepared = Vec::new();
    for spec in matrix::repeated(experiment.specs(&ALL_MODES), repeat) {
        let run = matrix::prepare_one(&spec, common);
        let run = if listed.contains(&spec.mode) {
            Ok(run?)
        } else {
            run.map_err(|e| refused(&spec, &e))
        };
        prepared.push((spec, run));
    }
    Ok(prepared)
}

/// Why a run of an unlisted mode cannot be checked, without the run's id it starts with.
fn refused(spec: &Spec, e: &CliError) -> String {
    let e = e.to_string();
    let prefix = format!("{}: ", spec.id());
    format!("flags refused: {}", e.strip_prefix(&prefix).unwrap_or(&e))
}

fn reason(stored: Stored) -> Option<String> {
    match stored {
        Stored::Stale(why) => Some(why),
        Stored::Absent | Stored::Reusable(_) => None,
    }
}

/// One stderr line for the runs of unlisted modes that are left out.
fn say_skipped(skipped: &[(Spec, Option<String>)], listed: &[ExecMode]) {
    let Some((first, why)) = skipped.first() else {
        return;
    };
    let others: Vec<&str> = ALL_MODES
        .iter()
        .filter(|m| !listed.contains(m))
        .map(|m| m.name())
        .collect();
    matrix::stderr_line(&format!(
        "repro: {} {} runs skipped: not in --modes and no reusable report in runs/ \
         (first: {}: {})",
        skipped.len(),
        others.join(" and "),
        first.id(),
        why.as_deref().unwrap_or("absent")
    ));
}

/// What the report at `path` is worth to a run whose report would have `config`. Any
/// read or decoding failure makes it stale, never an error: the run can still be run.
pub fn load(path: &Path, config: &Value) -> Stored {
    match std::fs::read(path) {
        Ok(bytes) => reusable(&bytes, config).map_or_else(Stored::Stale, Stored::Reusable),
        Err(e) if e.kind() == ErrorKind::NotFound => Stored::Absent,
        Err(e) => Stored::Stale(format!("unreadable: {e}")),
    }
}

/// The report in `bytes` if it can stand in for a run whose report would have `config`,
/// else why not.
pub fn reusable(bytes: &[u8], config: &Value) -> Result<Value, String> {
    let report: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(fields) = &report else {
        return Err("not a JSON object".into());
    };
    if fields.get("error").is_some_and(|e| !e.is_null()) {
        return Err("report has an error".into());
    }
    let Some(Value::Object(stored)) = fields.get("config") else {
        return Err("no config object".into());
    };
    let Value::Object(wanted) = as_stored(config) else {
        return Err("no config to compare".into());
    };
    match first_difference(stored, &wanted) {
        Some(d) => Err(format!("config differs ({d})")),
        None => Ok(report),
    }
}

/// `config` as it reads back from a report file. The stored config went through text;
/// serde_json's default float parsing may differ from the value printed by one unit in
/// the last place, so both sides are compared after the same trip.
fn as_stored(config: &Value) -> Value {
    serde_json::to_vec(config)
        .ok()
        .and_then(|text| serde_json::from_slice(&text).ok())
        .unwrap_or_else(|| config.clone())
}

/// Config keys that reports gained after reports had been committed, with the value every
/// earlier run had: a report without the key ran with that value, so it is still the run's.
const ADDED_KEYS: &[(&str, &str)] = &[
    ("short_threshold", "2"),
    ("enable_blob_files", "false"),
    ("min_blob_size", "0"),
    ("blob_file_size", "268435456"),
    ("enable_blob_garbage_collection", "false"),
    ("blob_garbage_collection_age_cutoff", "0.25"),
    ("blob_garbage_collection_force_threshold", "1.0"),
    ("blob_file_starting_level", "0"),
    ("max_subcompactions", "1"),
    ("blob_placement", "\"liza\""),
    ("blob_gc_cutoff", "\"fixed\""),
    ("cache_size", "0"),
    ("open_files", "-1"),
    ("compression_type", "\"none\""),
];

/// The value a report without `key` ran with, if the key is one added later.
fn value_before(key: &str) -> Option<Value> {
    let (_, text) = ADDED_KEYS.iter().find(|(k, _)| *k == key)?;
    serde_json::from_str(text).ok()
}

/// The first key (in name order) whose values differ, as `key: stored vs wanted`.
fn first_difference(stored: &Map<String, Value>, wanted: &Map<String, Value>) -> Option<String> {
    let mut keys: Vec<&String> = stored.keys().chain(wanted.keys()).collect();
    keys.sort();
    keys.dedup();
    let show = |v: Option<&Value>| v.map_or_else(|| "absent".to_string(), Value::to_string);
    keys.into_iter().find_map(|k| {
        let s = stored.get(k).cloned().or_else(|| value_before(k));
        let w = wanted.get(k);
        (s.as_ref() != w).then(|| format!("{k}: {} vs {}", show(s.as_ref()), show(w)))
    })
}

/// The seconds of each run (by id) the previous `summary.json` lists. Missing or
/// unreadable, it lists none: the seconds are only informative, and a repro that was
/// interrupted left an empty one.
pub fn previous_seconds(path: &Path) -> HashMap<String, f64> {
    let summary: Option<Value> = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let runs = summary
        .as_ref()
        .and_then(|s| s.get("runs"))
        .and_then(Value::as_array);
    runs.into_iter()
        .flatten()
        .filter_map(|r| {
            let id = r.get("id")?.as_str()?;
            Some((id.to_string(), r.get("seconds")?.as_f64()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> Value {
        json!({ "num": 5000, "mode": "deterministic", "max_bytes_for_level_multiplier": 10.0 })
    }

    fn report(config: Value) -> Vec<u8> {
        let r = json!({ "label": "x", "config": config, "user": { "ops": 1 } });
        serde_json::to_vec_pretty(&r).unwrap()
    }

    #[test]
    fn a_report_from_before_a_key_was_added_ran_with_its_old_value() {
        let mut now = config();
        now["short_threshold"] = json!(2);
        assert!(reusable(&report(config()), &now).is_ok());
        now["short_threshold"] = json!(3);
        let why = reusable(&report(config()), &now).unwrap_err();
        assert_eq!(why, "config differs (short_threshold: 2 vs 3)");
    }

    #[test]
    fn the_same_config_is_reused() {
        let r = reusable(&report(config()), &config()).unwrap();
        assert_eq!(r["user"]["ops"], 1);
        let mut with_null_error = serde_json::from_slice::<Value>(&report(config())).unwrap();
        with_null_error["error"] = Value::Null;
        let bytes = serde_json::to_vec(&with_null_error).unwrap();
        assert!(reusable(&bytes, &config()).is_ok());
    }

    #[test]
    fn a_differing_key_is_named() {
        let mut now = config();
        now["num"] = json!(6000);
        let why = reusable(&report(config()), &now).unwrap_err();
        assert_eq!(why, "config differs (num: 5000 vs 6000)");
        now["num"] = json!(5000);
        now["request_distribution"] = json!("zipfian");
        let why = reusable(&report(config()), &now).unwrap_err();
        assert_eq!(
            why,
            "config differs (request_distribution: absent vs \"zipfian\")"
        );
    }

    #[test]
    fn floats_read_back_from_a_file_still_match() {
        // serde_json's default parsing misses some floats by one unit in the last place.
        for i in 0..200 {
            let now = json!({ "ratio": 0.1 + f64::from(i) * 0.012_345_678_901_234_5 });
            assert!(reusable(&report(now.clone()), &now).is_ok(), "{now}");
        }
    }

    #[test]
    fn a_failed_run_is_run_again() {
        let mut r: Value = serde_json::from_slice(&report(config())).unwrap();
        r["error"] = json!("out of space");
        let why = reusable(&serde_json::to_vec(&r).unwrap(), &config()).unwrap_err();
        assert_eq!(why, "report has an error");
    }

    #[test]
    fn garbage_and_truncated_files_are_run_again() {
        let full = report(config());
        for cut in [0, 1, full.len() / 2, full.len() - 2] {
            let why = reusable(&full[..cut], &config()).unwrap_err();
            assert!(why.starts_with("not valid JSON: "), "{cut}: {why}");
        }
        let why = reusable(b"\xff\xfe garbage", &config()).unwrap_err();
        assert!(why.starts_with("not valid JSON: "), "{why}");
        assert_eq!(
            reusable(b"[1, 2]", &config()).unwrap_err(),
            "not a JSON object"
        );
        assert_eq!(
            reusable(b"{\"config\": 3}", &config()).unwrap_err(),
            "no config object"
        );
    }

    #[test]
    fn files_are_absent_stale_or_reusable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        assert!(matches!(load(&path, &config()), Stored::Absent));
        std::fs::write(&path, &report(config())[..10]).unwrap();
        assert!(matches!(load(&path, &config()), Stored::Stale(_)));
        std::fs::write(&path, report(config())).unwrap();
        assert!(matches!(load(&path, &config()), Stored::Reusable(_)));
        // A directory where the file should be cannot be read: stale, not an error.
        assert!(matches!(load(dir.path(), &config()), Stored::Stale(_)));
    }

    #[test]
    fn previous_seconds_come_from_the_summary_if_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        assert!(previous_seconds(&path).is_empty());
        std::fs::write(&path, "").unwrap();
        assert!(previous_seconds(&path).is_empty());
        let summary = json!({ "runs": [
            { "id": "a", "seconds": 1.5 }, { "id": "b", "seconds": null }, { "seconds": 2 }
        ] });
        std::fs::write(&path, summary.to_string()).unwrap();
        let seconds = previous_seconds(&path);
        assert_eq!(seconds.len(), 1);
        assert_eq!(seconds.get("a"), Some(&1.5));
    }
}
