//! YCSB workload properties files (`workloads/workloada` and the like): Java properties
//! text, one `name=value` per line, `#` and `!` starting comments. zkv reads the
//! properties of [`PROPERTIES`] (the operation mix, the counts, the request and scan length
//! distributions, the record shape) and YCSB's `workload` class name; every other line is
//! kept apart, for the caller to warn about.
//!
//! Only the common subset of the properties syntax is taken: `name=value`, `name: value`
//! and `name value`, with spaces around the separator. Escapes and continuation lines,
//! which no YCSB workload file uses, are read as plain characters.

use crate::error::{Error, Result};
use crate::ycsb::{WorkloadSpec, PROPERTIES};

/// The property naming the workload class: YCSB's `CoreWorkload` is the one zkv runs.
pub const WORKLOAD_CLASS: &str = "workload";

/// One `name=value` line of a properties file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// 1-based line number, for messages.
    pub line: usize,
    /// The property's name (before `=`, `:` or a blank).
    pub name: String,
    /// Its value, trimmed.
    pub value: String,
}

/// A workload file, read: the properties zkv sets, in file order (a later line of the same
/// name wins, as in YCSB), and those it does not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadFile {
    /// The properties zkv sets (see [`crate::ycsb::PROPERTIES`]), in file order.
    pub settings: Vec<Property>,
    /// Properties zkv does not read (database and measurement settings, among others).
    pub ignored: Vec<Property>,
}

impl WorkloadFile {
    /// Reads `text`. A value zkv cannot take (not a number, a negative proportion, an
    /// unknown distribution, a workload class other than `CoreWorkload`) is an error naming
    /// its line; the file as a whole (proportions that sum to zero, say) is checked when
    /// the workload is built.
    pub fn parse(text: &str) -> Result<WorkloadFile> {
        let mut file = WorkloadFile::default();
        // Each value is tried on a spec of its own: only the value's form is checked here.
        let mut scratch = WorkloadSpec::default();
        for p in lines(text) {
            let at_line = |e: Error| Error::AtLine {
                line: p.line,
                source: Box::new(e),
            };
            if p.name == WORKLOAD_CLASS {
                check_class(&p.value).map_err(at_line)?;
            } else if PROPERTIES.contains(&p.name.as_str()) {
                scratch.set_property(&p.name, &p.value).map_err(at_line)?;
                file.settings.push(p);
            } else {
                file.ignored.push(p);
            }
        }
        Ok(file)
    }

    /// Whether the file sets `name`.
    pub fn sets(&self, name: &str) -> bool {
        self.settings.iter().any(|p| p.name == name)
    }
}

/// The properties of `text`, in order, without comments and blank lines.
fn lines(text: &str) -> impl Iterator<Item = Property> + '_ {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            return None;
        }
        let end = line
            .find(|c: char| c == '=' || c == ':' || c.is_whitespace())
            .unwrap_or(line.len());
        let (name, rest) = line.split_at(end);
        let rest = rest.trim_start();
        let value = rest
            .strip_prefix(['=', ':'])
            .map_or(rest, str::trim_start)
            .trim_end();
        Some(Property {
            line: i + 1,
            name: name.to_string(),
            value: value.to_string(),
        })
    })
}

/// `workload=...`: YCSB's `CoreWorkload`, under any of its package names
/// (`site.ycsb.workloads.CoreWorkload`, `com.yahoo.ycsb.workloads.CoreWorkload`).
fn check_class(class: &str) -> Result<()> {
    if class.rsplit('.').next() == Some("CoreWorkload") {
        return Ok(());
    }
    Err(Error::InvalidProperty {
        name: WORKLOAD_CLASS.to_string(),
        value: class.to_string(),
        why: "zkv runs YCSB's CoreWorkload only".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ycsb::{RequestDistribution, ScanLengthDistribution};

    const WORKLOAD_E: &str = "\
# Workload E: short ranges
workload=site.ycsb.workloads.CoreWorkload

recordcount=1000
operationcount = 2000
readallfields=true
  ! a comment after spaces
scanproportion: 0.95
insertproportion 0.05
readproportion=0
updateproportion=0
requestdistribution=zipfian
maxscanlength=100
scanlengthdistribution=uniform
fieldcount=4
fieldlength=250
";

    fn names(props: &[Property]) -> Vec<(usize, &str, &str)> {
        props
            .iter()
            .map(|p| (p.line, p.name.as_str(), p.value.as_str()))
            .collect()
    }

    #[test]
    fn a_good_file_sets_its_properties_in_order() {
        let file = WorkloadFile::parse(WORKLOAD_E).unwrap();
        assert_eq!(
            names(&file.settings)[..4],
            [
                (4, "recordcount", "1000"),
                (5, "operationcount", "2000"),
                (8, "scanproportion", "0.95"),
                (9, "insertproportion", "0.05"),
            ]
        );
        assert_eq!(file.settings.len(), 11);
        assert!(file.sets("fieldlength") && !file.sets("minscanlength"));
        let mut spec = WorkloadSpec::default();
        for p in &file.settings {
            spec.set_property(&p.name, &p.value).unwrap();
        }
        assert_eq!((spec.record_count, spec.operation_count), (1000, 2000));
        assert_eq!((spec.proportions.read, spec.proportions.scan), (0.0, 0.95));
        assert_eq!(spec.request_distribution, RequestDistribution::Zipfian);
        assert_eq!(spec.max_scan_length, 100);
        assert_eq!(
            spec.scan_length_distribution,
            ScanLengthDistribution::Uniform
        );
        assert_eq!(spec.value_len(), Ok(1000));
        spec.validate().unwrap();
    }

    #[test]
    fn unknown_keys_are_kept_apart() {
        let file = WorkloadFile::parse(WORKLOAD_E).unwrap();
        assert_eq!(names(&file.ignored), [(6, "readallfields", "true")]);
        let file = WorkloadFile::parse("threadcount=8\nnovalue\n").unwrap();
        assert_eq!(
            names(&file.ignored),
            [(1, "threadcount", "8"), (2, "novalue", "")]
        );
        assert!(file.settings.is_empty());
    }

    #[test]
    fn a_bad_value_names_its_line() {
        for (text, line, want) in [
            (
                "recordcount=1000\nreadproportion=half\n",
                2,
                "readproportion=half",
            ),
            ("updateproportion=-0.5", 1, "must be finite and >= 0"),
            ("\n\nrecordcount=1e6", 3, "recordcount=1e6"),
            ("requestdistribution=exponential", 1, "known: zipfian"),
            ("insertorder=random", 1, "known: hashed, ordered"),
            (
                "workload=site.ycsb.workloads.RestWorkload",
                1,
                "CoreWorkload only",
            ),
            ("fieldlength=", 1, "fieldlength="),
        ] {
            let e = WorkloadFile::parse(text).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("line {line}: ")),
                "{text:?}: {msg}"
            );
            assert!(msg.contains(want), "{text:?}: {msg}");
        }
    }

    #[test]
    fn the_workload_class_may_have_any_package() {
        for class in [
            "site.ycsb.workloads.CoreWorkload",
            "com.yahoo.ycsb.workloads.CoreWorkload",
            "CoreWorkload",
        ] {
            let file = WorkloadFile::parse(&format!("workload={class}")).unwrap();
            assert_eq!(file, WorkloadFile::default());
        }
    }
}
