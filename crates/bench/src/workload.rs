//! Workload names as the command line takes them: one name, or a comma list run in
//! sequence on the same store.

use std::fmt;
use std::str::FromStr;

use crate::dbbench::DbBenchWorkload;
use crate::error::{Error, Result};
use crate::ycsb::CoreWorkloadId;

/// The names zkv knows, for error messages.
pub const KNOWN_NAMES: &str = "fillseq, fillrandom, overwrite, readrandom, \
     readrandomwriterandom, fillbatch, readseq, readreverse, seekrandom, deleterandom, \
     readwhilewriting, mixgraph, \
     ycsb-a .. ycsb-f, ycsb, idle";

/// The pause between workloads (no request for a while; Prophet's VariableTest).
pub const IDLE: &str = "idle";

/// db_bench's name of its mixgraph benchmark.
pub const MIXGRAPH: &str = "mixgraph";

/// One workload of `--workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WorkloadName {
    /// One of db_bench's benchmarks.
    DbBench(DbBenchWorkload),
    /// db_bench's mixgraph ([`crate::mixgraph`]).
    MixGraph,
    /// A YCSB core workload.
    Ycsb(CoreWorkloadId),
    /// No requests for a while (`zkv bench --idle-seconds`): the background work goes on.
    Idle,
}

impl WorkloadName {
    /// The name `--workload` takes (`fillrandom`, `mixgraph`, `ycsb-a`, `idle`).
    pub fn name(self) -> &'static str {
        match self {
            WorkloadName::DbBench(w) => w.name(),
            WorkloadName::MixGraph => MIXGRAPH,
            WorkloadName::Ycsb(id) => id.name(),
            WorkloadName::Idle => IDLE,
        }
    }
}

impl FromStr for WorkloadName {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        if let Some(w) = DbBenchWorkload::from_name(s) {
            return Ok(WorkloadName::DbBench(w));
        }
        if s == MIXGRAPH {
            return Ok(WorkloadName::MixGraph);
        }
        if s == IDLE {
            return Ok(WorkloadName::Idle);
        }
        if let Some(id) = CoreWorkloadId::from_name(s) {
            return Ok(WorkloadName::Ycsb(id));
        }
        Err(Error::UnknownWorkload(s.to_string()))
    }
}

impl fmt::Display for WorkloadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses `fillseq,overwrite,ycsb-a`: names separated by commas, none empty.
pub fn parse_workload_list(list: &str) -> Result<Vec<WorkloadName>> {
    list.split(',')
        .map(|part| {
            let name = part.trim();
            if name.is_empty() {
                Err(Error::EmptyWorkloadList(list.to_string()))
            } else {
                name.parse()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_lists() {
        let all = parse_workload_list("fillseq,overwrite, ycsb-f,mixgraph,ycsb").unwrap();
        assert_eq!(
            all,
            vec![
                WorkloadName::DbBench(DbBenchWorkload::FillSeq),
                WorkloadName::DbBench(DbBenchWorkload::Overwrite),
                WorkloadName::Ycsb(CoreWorkloadId::F),
                WorkloadName::MixGraph,
                WorkloadName::Ycsb(CoreWorkloadId::Plain),
            ]
        );
        assert_eq!(all[4].to_string(), "ycsb");
        assert_eq!(all[2].to_string(), "ycsb-f");
        assert_eq!(all[3].to_string(), "mixgraph");
    }

    #[test]
    fn rejects_unknown_and_empty_names() {
        let err = parse_workload_list("fillseq,ycsb-g").unwrap_err();
        assert_eq!(err, Error::UnknownWorkload("ycsb-g".into()));
        assert!(err.to_string().contains("readrandomwriterandom"));
        assert!(parse_workload_list("fillseq,,overwrite").is_err());
        assert!(parse_workload_list("").is_err());
    }
}
