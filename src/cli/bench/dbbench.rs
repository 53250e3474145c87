//! What lets a db_bench command line drive `zkv bench`: the values of db_bench's flags
//! that zkv's own flags would not take (RocksDB's `compaction_pri` numbers, `-1` for "as
//! many as --num", gflags' `--flag=true`). Their underscore spellings are clap aliases of
//! zkv's flags (docs/CLI.md, "db_bench's spellings").

use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use zkv_engine::compaction::PICKER_TABLE;

/// RocksDB's `CompactionPri`: its value (what db_bench's `--compaction_pri` takes), its
/// name, and the picker that orders a level's files the same way.
const COMPACTION_PRI: [(&str, &str, &str); 5] = [
    ("0", "kByCompensatedSize", "sica"),
    ("1", "kOldestLargestSeqFirst", "oldest-largest-seq"),
    ("2", "kOldestSmallestSeqFirst", "oldest-smallest-seq"),
    ("3", "kMinOverlappingRatio", "min-overlap"),
    ("4", "kRoundRobin", "round-robin"),
];

/// `--picker` (alias `--compaction_pri`): a picker name, or a RocksDB `CompactionPri`
/// value or name, taken as the picker's name. `--help` lists the names, each with what it
/// orders first.
pub fn picker_parser() -> impl TypedValueParser<Value = String> {
    let values = PICKER_TABLE.iter().map(|entry| {
        COMPACTION_PRI
            .iter()
            .filter(|(_, _, picker)| *picker == entry.name)
            .fold(
                PossibleValue::new(entry.name).help(entry.about),
                |v, (number, rocksdb, _)| v.alias(*number).alias(*rocksdb),
            )
    });
    PossibleValuesParser::new(values).map(|given| picker_name(&given).to_string())
}

/// The picker `given` names: itself, or the one of RocksDB's value or name.
fn picker_name(given: &str) -> &str {
    COMPACTION_PRI
        .iter()
        .find(|(number, rocksdb, _)| *number == given || *rocksdb == given)
        .map_or(given, |(_, _, picker)| picker)
}

/// RocksDB's `CompactionPri` value of `picker`, if RocksDB has the same order.
pub fn compaction_pri(picker: &str) -> Option<&'static str> {
    COMPACTION_PRI
        .iter()
        .find(|(_, _, name)| *name == picker)
        .map(|(number, _, _)| *number)
}

/// The pickers RocksDB has, in its `CompactionPri` order.
pub fn rocksdb_pickers() -> Vec<&'static str> {
    COMPACTION_PRI.iter().map(|(_, _, name)| *name).collect()
}

/// `--reads`, `--deletes`: a count, or `None` for "as many as --num" (db_bench's -1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrNum(pub Option<u64>);

/// A positive count, or -1.
pub fn parse_count(s: &str) -> Result<OrNum, String> {
    match s.trim().parse::<i64>() {
        Ok(-1) => Ok(OrNum(None)),
        Ok(n) if n > 0 => Ok(OrNum(Some(n as u64))),
        _ => Err("give a positive count, or -1 for --num".into()),
    }
}

/// `--duration`: seconds, fractions too; 0 = no limit.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let seconds: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("{seconds} is not a number of seconds from 0 on"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};

    fn picker(value: &str) -> Result<String, clap::Error> {
        let cmd = Command::new("t").arg(
            Arg::new("picker")
                .long("picker")
                .value_parser(picker_parser()),
        );
        let m = cmd.try_get_matches_from(["t", "--picker", value])?;
        Ok(m.get_one::<String>("picker").cloned().unwrap_or_default())
    }

    #[test]
    fn compaction_pri_values_and_names_are_the_pickers_names() {
        for (number, rocksdb, name) in COMPACTION_PRI {
            assert!(
                zkv_engine::compaction::picker_names().contains(&name),
                "{name}"
            );
            assert_eq!(picker(number).unwrap(), name);
            assert_eq!(picker(rocksdb).unwrap(), name);
            assert_eq!(picker(name).unwrap(), name);
        }
        assert_eq!(picker("acc").unwrap(), "acc");
        assert_eq!(compaction_pri("min-overlap"), Some("3"));
        assert_eq!(compaction_pri("sica"), Some("0"));
        assert_eq!(compaction_pri("acc"), None);
        assert!(picker("5").is_err());
        assert!(picker("kFifo").is_err());
    }

    #[test]
    fn counts_take_minus_one_for_num() {
        assert_eq!(parse_count("-1"), Ok(OrNum(None)));
        assert_eq!(parse_count("250"), Ok(OrNum(Some(250))));
        for bad in ["0", "-2", "x", "1.5"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_are_seconds_from_zero_on() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("600"), Ok(Duration::from_secs(600)));
        for bad in ["-1", "nan", "inf", "1e30", "soon"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
