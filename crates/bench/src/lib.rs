//! zkv workloads: key and request generators (db_bench's, mixgraph among them, and YCSB's), and the workload
//! definitions built on them. docs/WORKLOADS.md describes each generator and workload and
//! how they are checked against YCSB's own code.

// Library code returns errors instead of panicking on I/O and decoding paths (no unwrap,
// expect or unchecked indexing); unit tests may panic.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

mod dbbench;
mod error;
pub mod gen;
pub mod mixgraph;
mod op;
mod value;
pub mod workload;
pub mod ycsb;

pub use dbbench::{
    key_from_int, DbBenchConfig, DbBenchGenerator, DbBenchWorkload, FILLBATCH_ENTRIES, MAX_KEY_SIZE,
};
pub use error::{Error, Result};
pub use mixgraph::{MixGraphConfig, MixGraphGenerator};
pub use op::{Op, OpKind};
pub use value::ValueGenerator;
pub use workload::{parse_workload_list, WorkloadName};
pub use ycsb::{CoreWorkloadId, RequestDistribution, WorkloadSpec, YcsbWorkload};
