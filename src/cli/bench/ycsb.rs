//! `zkv bench`'s YCSB front end: the workload file of `-P`, YCSB's properties of `-p`,
//! `--recordcount` and `--operationcount`, and `--ycsb-phase`. Every YCSB workload of the
//! list is built from the same settings, applied in YCSB's order: the core workload's,
//! `--num` as both counts and `--value-size`, the file's lines, `-p`'s, then the flags.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use zkv_bench::ycsb::properties::WorkloadFile;
use zkv_bench::{CoreWorkloadId, WorkloadName, WorkloadSpec};

use super::{BenchArgs, WorkloadList, YcsbPhase};
use crate::cli::error::{CliError, CliResult};

/// The properties that shape a record: given in a file or by `-p`, they set the value size
/// (fieldcount × fieldlength) unless `--value-size` is given.
const RECORD_SHAPE: [&str; 2] = ["fieldcount", "fieldlength"];

/// `-P FILE`, read and parsed.
#[derive(Debug)]
pub(crate) struct PropertiesFile {
    path: PathBuf,
    file: WorkloadFile,
}

impl PropertiesFile {
    /// Reads `path`; a value zkv cannot take fails here, naming the file and the line.
    pub(crate) fn read(path: &Path) -> CliResult<PropertiesFile> {
        let context = || format!("-P {}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| CliError::io(context(), e))?;
        let file = WorkloadFile::parse(&text)
            .map_err(|e| CliError::invalid(format!("{}: {e}", context())))?;
        Ok(PropertiesFile {
            path: path.to_path_buf(),
            file,
        })
    }

    /// One warning per line whose property zkv does not read.
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.file
            .ignored
            .iter()
            .map(|p| {
                let note = match p.name.as_str() {
                    "threadcount" => " (zkv bench runs one client thread)",
                    "target" => " (--target OPS_PER_SEC paces the operations)",
                    "readallfields" | "writeallfields" => {
                        " (zkv reads and writes whole records, one value each)"
                    }
                    _ => "",
                };
                format!(
                    "-P {}: line {}: {} is not a YCSB property zkv bench reads; ignored{note}",
                    self.path.display(),
                    p.line,
                    p.name
                )
            })
            .collect()
    }
}

impl BenchArgs {
    /// `-P`'s file, if given.
    pub(super) fn properties_file(&self) -> CliResult<Option<PropertiesFile>> {
        self.ycsb_properties
            .as_deref()
            .map(PropertiesFile::read)
            .transpose()
    }

    /// `-P` alone runs the file's workload, as YCSB does: `--workload ycsb` unless
    /// `--workload` or a preset names the workloads.
    pub(super) fn default_to_the_files_workload(&mut self) {
        let named = self.given.has("workload") || self.preset.is_some();
        if self.ycsb_properties.is_some() && !named {
            self.workload = WorkloadList(vec![WorkloadName::Ycsb(CoreWorkloadId::Plain)]);
        }
    }

    /// YCSB's workload `id` as this run's settings make it.
    pub(super) fn ycsb_spec(
        &self,
        id: CoreWorkloadId,
        file: Option<&PropertiesFile>,
    ) -> CliResult<WorkloadSpec> {
        let mut spec = WorkloadSpec::core(id).with_counts(self.num, self.num);
        spec.value_size = Some(self.value_size);
        for p in file.iter().flat_map(|f| &f.file.settings) {
            spec.set_property(&p.name, &p.value).map_err(|e| {
                let path = file.map_or_else(Default::default, |f| f.path.display().to_string());
                CliError::invalid(format!("-P {path}: line {}: {e}", p.line))
            })?;
        }
        for (name, value) in &self.ycsb_property {
            spec.set_property(name, value)
                .map_err(|e| CliError::invalid(format!("--ycsb-property: {e}")))?;
        }
        if let Some(d) = self.request_distribution {
            spec.request_distribution = d;
        }
        spec.record_count = self.recordcount.unwrap_or(spec.record_count);
        spec.operation_count = self.operationcount.unwrap_or(spec.operation_count);
        let shaped = RECORD_SHAPE.iter().any(|n| self.sets_property(n, file));
        if shaped && !self.given.has("value_size") {
            spec.value_size = None;
        }
        Ok(spec)
    }

    /// Whether `-P`'s file or `-p` sets the property `name`.
    fn sets_property(&self, name: &str, file: Option<&PropertiesFile>) -> bool {
        file.is_some_and(|f| f.file.sets(name)) || self.ycsb_property.iter().any(|(n, _)| n == name)
    }

    /// Which phases of a YCSB workload run: (load, run).
    pub(super) fn ycsb_phases(&self) -> (bool, bool) {
        match self.ycsb_phase {
            None => (true, true),
            Some(YcsbPhase::Load) => (true, false),
            Some(YcsbPhase::Run) => (false, true),
        }
    }

    pub(super) fn has_ycsb(&self) -> bool {
        self.workload
            .0
            .iter()
            .any(|w| matches!(w, WorkloadName::Ycsb(_)))
    }

    /// The YCSB flags are refused with a list without a YCSB workload (through `unread`),
    /// and a count given both as a flag and as `-p`.
    pub(super) fn check_ycsb_flags(&self, unread: impl Fn(String, &str) -> CliResult) -> CliResult {
        for count in ["recordcount", "operationcount"] {
            let by_p = self.ycsb_property.iter().any(|(n, _)| n == count);
            if by_p && self.given.has(count) {
                return Err(CliError::invalid(format!(
                    "--{count} and --ycsb-property {count}=...: give one of them"
                )));
            }
        }
        if self.has_ycsb() {
            return Ok(());
        }
        let given = [
            self.ycsb_properties
                .as_ref()
                .map(|p| format!("-P {}", p.display())),
            self.recordcount.map(|n| format!("--recordcount {n}")),
            self.operationcount.map(|n| format!("--operationcount {n}")),
            self.ycsb_phase
                .map(|p| format!("--ycsb-phase {}", p.name())),
        ];
        match given.into_iter().flatten().next() {
            Some(flag) => unread(flag, "YCSB workloads (ycsb-a .. ycsb-f, ycsb)"),
            None => Ok(()),
        }
    }

    /// Whether the workload writes or deletes anything (as far as its settings tell before
    /// it runs): `--verify` on an existing database has only those keys to check.
    pub(super) fn writes(&self, w: &WorkloadName, file: Option<&PropertiesFile>) -> bool {
        use zkv_bench::DbBenchWorkload as D;
        match w {
            WorkloadName::DbBench(D::ReadRandom | D::ReadSeq | D::SeekRandom) => false,
            WorkloadName::DbBench(D::ReadRandomWriteRandom) => self.readwritepercent < 100,
            WorkloadName::DbBench(_) | WorkloadName::MixGraph => true,
            WorkloadName::Idle => false,
            WorkloadName::Ycsb(id) => {
                let (load, run) = self.ycsb_phases();
                let writes_in_run = self.ycsb_spec(*id, file).is_ok_and(|s| {
                    let p = s.proportions;
                    p.update + p.insert + p.read_modify_write > 0.0
                });
                load || (run && writes_in_run)
            }
            // A workload this runner does not know: assume it writes (the run refuses
            // what it cannot run, with its own error).
            _ => true,
        }
    }

    /// The report's `config` entries of the YCSB flags, where they differ from what a run
    /// without them does.
    pub(super) fn ycsb_config(&self, file: Option<&PropertiesFile>) -> Map<String, Value> {
        let mut m = Map::new();
        let first = self.workload.0.iter().find_map(|w| match w {
            WorkloadName::Ycsb(id) => Some(*id),
            _ => None,
        });
        let Some(spec) = first.and_then(|id| self.ycsb_spec(id, file).ok()) else {
            return m;
        };
        if spec.record_count != self.num {
            m.insert("recordcount".into(), json!(spec.record_count));
        }
        if spec.operation_count != self.num {
            m.insert("operationcount".into(), json!(spec.operation_count));
        }
        if let (None, Ok(len)) = (spec.value_size, spec.value_len()) {
            m.insert("ycsb_value_size".into(), json!(len));
        }
        if let Some(phase) = self.ycsb_phase {
            m.insert("ycsb_phase".into(), json!(phase.name()));
        }
        if let Some(f) = file {
            m.insert(
                "ycsb_properties_file".into(),
                json!(f.path.display().to_string()),
            );
        }
        let props: Map<String, Value> = file
            .iter()
            .flat_map(|f| &f.file.settings)
            .map(|p| (p.name.as_str(), p.value.as_str()))
            .chain(
                self.ycsb_property
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str())),
            )
            .map(|(n, v)| (n.to_string(), json!(v)))
            .collect();
        if !props.is_empty() {
            m.insert("ycsb_properties".into(), Value::Object(props));
        }
        m
    }
}
