//! YCSB's core workloads (A to F) as data, and the request stream `CoreWorkload` makes of
//! them: a load phase inserting records `insert_start..insert_start + insert_count` in
//! order of record number, then a run phase of `operation_count` operations whose kind comes
//! from the proportions and whose key from the request distribution.
//!
//! zkv stores one value per key. YCSB's record of `field_count` fields of `field_length`
//! bytes (10 x 100 B by default) becomes one value of `field_count * field_length` bytes,
//! unless `value_size` gives the size outright. Every write (insert, update,
//! read-modify-write) puts a whole value: that is what YCSB's RocksDB binding does too, as
//! it stores a record as one serialized value and rewrites all of it on update.

use crate::error::{check_range, check_weight, Error, Result};
use crate::gen::{
    build_key_name, rng_from_seed, AcknowledgedCounterGenerator, BenchRng, CounterGenerator,
    DiscreteGenerator, HotspotIntegerGenerator, NumberGenerator, ScrambledZipfianGenerator,
    SkewedLatestGenerator, UniformLongGenerator, ZipfianGenerator,
};
use crate::op::{Op, OpKind};

/// The six workloads shipped with YCSB (`workloads/workloada` .. `workloadf`), and YCSB's
/// `CoreWorkload` with its own defaults, which a workload properties file shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CoreWorkloadId {
    /// Update heavy: 50 % reads, 50 % updates, zipfian keys.
    A,
    /// Read mostly: 95 % reads, 5 % updates, zipfian keys.
    B,
    /// Read only, zipfian keys.
    C,
    /// Read latest: 95 % reads, 5 % inserts, the newest records the most read.
    D,
    /// Short ranges: 95 % scans, 5 % inserts, zipfian start keys.
    E,
    /// Read-modify-write: 50 % reads, 50 % read-modify-writes, zipfian keys.
    F,
    /// `CoreWorkload`'s defaults (95 % reads, 5 % updates, uniform keys): what YCSB runs
    /// of a properties file that sets nothing else.
    Plain,
}

impl CoreWorkloadId {
    /// The six shipped workloads (not [`Self::Plain`]).
    pub const ALL: [CoreWorkloadId; 6] = [Self::A, Self::B, Self::C, Self::D, Self::E, Self::F];

    /// zkv's workload name: `ycsb-a` .. `ycsb-f`.
    pub fn name(self) -> &'static str {
        match self {
            Self::A => "ycsb-a",
            Self::B => "ycsb-b",
            Self::C => "ycsb-c",
            Self::D => "ycsb-d",
            Self::E => "ycsb-e",
            Self::F => "ycsb-f",
            Self::Plain => "ycsb",
        }
    }

    /// The workload of that [`CoreWorkloadId::name`], if any.
    pub fn from_name(name: &str) -> Option<Self> {
        let plain = (name == Self::Plain.name()).then_some(Self::Plain);
        plain.or_else(|| Self::ALL.into_iter().find(|id| id.name() == name))
    }
}

/// How run-phase operations pick their record (`requestdistribution`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum RequestDistribution {
    /// Every record equally likely.
    Uniform,
    /// Scrambled zipfian over the records plus the inserts expected during the run.
    Zipfian,
    /// Skewed toward the most recently acknowledged inserts.
    Latest,
    /// `opn_fraction` of requests go to the lowest `data_fraction` of records.
    Hotspot {
        /// `hotspotdatafraction`: the share of the records that is hot, in [0, 1].
        data_fraction: f64,
        /// `hotspotopnfraction`: the share of the requests that go to them, in [0, 1].
        opn_fraction: f64,
    },
}

/// YCSB's default `hotspotdatafraction`: the hot set is the lowest 20 % of the records.
pub const HOTSPOT_DATA_FRACTION: f64 = 0.2;
/// YCSB's default `hotspotopnfraction`: 80 % of the requests go to the hot set.
pub const HOTSPOT_OPN_FRACTION: f64 = 0.8;

impl RequestDistribution {
    /// The names of YCSB's `requestdistribution` values zkv runs, in [`Self::from_name`]'s
    /// order (`sequential` and `exponential` are not implemented).
    pub const NAMES: [&'static str; 4] = ["zipfian", "latest", "uniform", "hotspot"];

    /// YCSB's value of `requestdistribution`; `hotspot` with YCSB's default fractions (20 %
    /// of the records take 80 % of the requests), `zipfian` with YCSB's constant 0.99.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "zipfian" => Self::Zipfian,
            "latest" => Self::Latest,
            "uniform" => Self::Uniform,
            "hotspot" => Self::Hotspot {
                data_fraction: HOTSPOT_DATA_FRACTION,
                opn_fraction: HOTSPOT_OPN_FRACTION,
            },
            _ => return None,
        })
    }

    /// The `requestdistribution` name of this distribution.
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Zipfian => "zipfian",
            Self::Latest => "latest",
            Self::Hotspot { .. } => "hotspot",
        }
    }
}

/// How scan lengths are drawn (`scanlengthdistribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScanLengthDistribution {
    /// Every length of `minscanlength..=maxscanlength` equally likely.
    Uniform,
    /// Zipfian over the lengths, the shortest the most likely.
    Zipfian,
}

/// Key order of inserts (`insertorder`): hashed record numbers (YCSB's default) or plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InsertOrder {
    /// Record numbers hashed (FNV-64) before they become keys: inserts land all over the
    /// key space.
    Hashed,
    /// Record numbers as they are: inserts go in key order.
    Ordered,
}

/// Operation weights; they need not sum to 1 (YCSB normalises them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proportions {
    /// `readproportion`.
    pub read: f64,
    /// `updateproportion`.
    pub update: f64,
    /// `insertproportion`.
    pub insert: f64,
    /// `scanproportion`.
    pub scan: f64,
    /// `readmodifywriteproportion`.
    pub read_modify_write: f64,
}

/// Everything that defines a YCSB core workload, with YCSB's property names in the docs.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// `recordcount`: records present once the load phase is done.
    pub record_count: u64,
    /// `operationcount`: operations of the run phase.
    pub operation_count: u64,
    /// `insertstart`: first record number this load inserts.
    pub insert_start: u64,
    /// `insertcount`: records this load inserts (default: `record_count - insert_start`).
    pub insert_count: Option<u64>,
    /// The `*proportion` properties: how often each operation runs.
    pub proportions: Proportions,
    /// `requestdistribution`: how run-phase operations pick their record.
    pub request_distribution: RequestDistribution,
    /// `minscanlength`: the shortest scan, in records.
    pub min_scan_length: u64,
    /// `maxscanlength`: the longest scan, in records.
    pub max_scan_length: u64,
    /// `scanlengthdistribution`: how scan lengths are drawn.
    pub scan_length_distribution: ScanLengthDistribution,
    /// `fieldcount`: fields per record (constant field length, YCSB's default).
    pub field_count: u64,
    /// `fieldlength`: bytes per field.
    pub field_length: u64,
    /// Value size in bytes, overriding `field_count * field_length`.
    pub value_size: Option<u64>,
    /// `insertorder`: how record numbers become keys.
    pub insert_order: InsertOrder,
    /// `zeropadding`: digits a key's record number is padded to with zeros.
    pub zero_padding: usize,
}

/// The YCSB properties [`WorkloadSpec::set_property`] sets.
pub const PROPERTIES: [&str; 14] = [
    "recordcount",
    "operationcount",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "minscanlength",
    "maxscanlength",
    "scanlengthdistribution",
    "fieldcount",
    "fieldlength",
    "insertorder",
];

/// YCSB keeps record and operation numbers in Java `int`s.
const MAX_COUNT: u64 = i32::MAX as u64;

/// Largest value accepted (1 GiB): far above any workload's records, small enough that a
/// typo cannot ask for more memory than the machine has.
pub const MAX_VALUE_SIZE: u64 = 1 << 30;

impl Default for WorkloadSpec {
    /// YCSB's `CoreWorkload` defaults, with the record and operation counts of its shipped
    /// workload files (1000 each).
    fn default() -> Self {
        WorkloadSpec {
            record_count: 1000,
            operation_count: 1000,
            insert_start: 0,
            insert_count: None,
            proportions: Proportions {
                read: 0.95,
                update: 0.05,
                insert: 0.0,
                scan: 0.0,
                read_modify_write: 0.0,
            },
            request_distribution: RequestDistribution::Uniform,
            min_scan_length: 1,
            max_scan_length: 1000,
            scan_length_distribution: ScanLengthDistribution::Uniform,
            field_count: 10,
            field_length: 100,
            value_size: None,
            insert_order: InsertOrder::Hashed,
            zero_padding: 1,
        }
    }
}

impl WorkloadSpec {
    /// The settings of YCSB's `workloads/workload{a..f}`, or `CoreWorkload`'s defaults.
    pub fn core(id: CoreWorkloadId) -> Self {
        let (read, update, insert, scan, rmw, dist) = match id {
            CoreWorkloadId::Plain => return WorkloadSpec::default(),
            CoreWorkloadId::A => (0.5, 0.5, 0.0, 0.0, 0.0, RequestDistribution::Zipfian),
            CoreWorkloadId::B => (0.95, 0.05, 0.0, 0.0, 0.0, RequestDistribution::Zipfian),
            CoreWorkloadId::C => (1.0, 0.0, 0.0, 0.0, 0.0, RequestDistribution::Zipfian),
            CoreWorkloadId::D => (0.95, 0.0, 0.05, 0.0, 0.0, RequestDistribution::Latest),
            CoreWorkloadId::E => (0.0, 0.0, 0.05, 0.95, 0.0, RequestDistribution::Zipfian),
            CoreWorkloadId::F => (0.5, 0.0, 0.0, 0.0, 0.5, RequestDistribution::Zipfian),
        };
        let max_scan_length = if id == CoreWorkloadId::E { 100 } else { 1000 };
        WorkloadSpec {
            proportions: Proportions {
                read,
                update,
                insert,
                scan,
                read_modify_write: rmw,
            },
            request_distribution: dist,
            max_scan_length,
            ..WorkloadSpec::default()
        }
    }

    /// Sets one of YCSB's workload properties by its YCSB name (as `-p NAME=VALUE` does
    /// on YCSB's command line, or a line of a workload file): one of [`PROPERTIES`]. The
    /// value is checked as far as it can be alone (a number, a proportion not negative, a
    /// known name); [`Self::validate`] checks the whole.
    pub fn set_property(&mut self, name: &str, value: &str) -> Result<()> {
        let bad = |why: String| Error::InvalidProperty {
            name: name.to_string(),
            value: value.to_string(),
            why,
        };
        let value = value.trim();
        let proportion = || match value.parse::<f64>() {
            Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
            Ok(_) => Err(bad("a proportion must be finite and >= 0".into())),
            Err(e) => Err(bad(e.to_string())),
        };
        let count = || value.parse::<u64>().map_err(|e| bad(e.to_string()));
        let p = &mut self.proportions;
        match name {
            "recordcount" => self.record_count = count()?,
            "operationcount" => self.operation_count = count()?,
            "readproportion" => p.read = proportion()?,
            "updateproportion" => p.update = proportion()?,
            "insertproportion" => p.insert = proportion()?,
            "scanproportion" => p.scan = proportion()?,
            "readmodifywriteproportion" => p.read_modify_write = proportion()?,
            "requestdistribution" => {
                self.request_distribution =
                    RequestDistribution::from_name(value).ok_or_else(|| {
                        bad(format!("known: {}", RequestDistribution::NAMES.join(", ")))
                    })?
            }
            "minscanlength" => self.min_scan_length = count()?,
            "maxscanlength" => self.max_scan_length = count()?,
            "scanlengthdistribution" => {
                self.scan_length_distribution = match value {
                    "uniform" => ScanLengthDistribution::Uniform,
                    "zipfian" => ScanLengthDistribution::Zipfian,
                    _ => return Err(bad("known: uniform, zipfian".into())),
                }
            }
            "fieldcount" => self.field_count = count()?,
            "fieldlength" => self.field_length = count()?,
            "insertorder" => {
                self.insert_order = match value {
                    "hashed" => InsertOrder::Hashed,
                    "ordered" => InsertOrder::Ordered,
                    _ => return Err(bad("known: hashed, ordered".into())),
                }
            }
            _ => {
                return Err(bad(format!(
                    "not settable (known: {})",
                    PROPERTIES.join(", ")
                )))
            }
        }
        Ok(())
    }

    /// The same workload with other record and operation counts.
    pub fn with_counts(mut self, record_count: u64, operation_count: u64) -> Self {
        self.record_count = record_count;
        self.operation_count = operation_count;
        self
    }

    /// Records the load phase inserts.
    pub fn load_count(&self) -> u64 {
        self.insert_count
            .unwrap_or(self.record_count.saturating_sub(self.insert_start))
    }

    /// Bytes of every value written: `value_size`, else `field_count * field_length`.
    pub fn value_len(&self) -> Result<u64> {
        let len = match self.value_size {
            Some(v) => v,
            None => self.field_count.saturating_mul(self.field_length),
        };
        check_range("value size", len, 1, MAX_VALUE_SIZE)?;
        Ok(len)
    }

    /// Checks every parameter; `YcsbWorkload::new` calls it.
    pub fn validate(&self) -> Result<()> {
        self.validate_counts()?;
        self.validate_proportions()?;
        check_range("min scan length", self.min_scan_length, 1, MAX_COUNT)?;
        check_range(
            "max scan length",
            self.max_scan_length,
            self.min_scan_length,
            MAX_COUNT,
        )?;
        check_range("field count", self.field_count, 1, MAX_COUNT)?;
        check_range("field length", self.field_length, 1, MAX_COUNT)?;
        self.value_len()?;
        Ok(())
    }

    /// Counts must fit YCSB's `int`s, including every record number inserted during the
    /// run, and the load must stay inside the record count (YCSB exits otherwise).
    fn validate_counts(&self) -> Result<()> {
        check_range("record count", self.record_count, 1, MAX_COUNT)?;
        let room = MAX_COUNT - self.record_count;
        check_range("operation count", self.operation_count, 0, room)?;
        check_range("insert start", self.insert_start, 0, self.record_count - 1)?;
        let left = self.record_count - self.insert_start;
        check_range("insert count", self.load_count(), 1, left)?;
        Ok(())
    }

    fn validate_proportions(&self) -> Result<()> {
        let p = &self.proportions;
        let all = [
            ("read proportion", p.read),
            ("update proportion", p.update),
            ("insert proportion", p.insert),
            ("scan proportion", p.scan),
            ("read-modify-write proportion", p.read_modify_write),
        ];
        for (what, value) in all {
            check_weight(what, value)?;
        }
        let sum: f64 = all.iter().map(|&(_, v)| v).sum();
        if sum == 0.0 {
            return Err(Error::NoOperations);
        }
        if !sum.is_finite() {
            return Err(Error::InvalidFraction {
                what: "sum of proportions",
                allowed: "finite",
                value: sum,
            });
        }
        Ok(())
    }
}

/// The operation chooser's values, in YCSB's order of `addValue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

/// YCSB's `createOperationGenerator`: only positive proportions are added.
fn operation_chooser(p: &Proportions) -> Result<DiscreteGenerator<Choice>> {
    let all = [
        (p.read, Choice::Read),
        (p.update, Choice::Update),
        (p.insert, Choice::Insert),
        (p.scan, Choice::Scan),
        (p.read_modify_write, Choice::ReadModifyWrite),
    ];
    DiscreteGenerator::new(all.into_iter().filter(|(w, _)| *w > 0.0).collect())
}

#[derive(Debug)]
enum KeyChooser {
    Uniform(UniformLongGenerator),
    Zipfian(ScrambledZipfianGenerator),
    Latest(SkewedLatestGenerator),
    Hotspot(HotspotIntegerGenerator),
}

impl KeyChooser {
    /// YCSB's choice of key generator in `CoreWorkload.init`.
    fn new(spec: &WorkloadSpec, inserts: &AcknowledgedCounterGenerator) -> Result<Self> {
        let start = spec.insert_start as i64;
        let count = spec.load_count() as i64;
        Ok(match spec.request_distribution {
            RequestDistribution::Uniform => {
                KeyChooser::Uniform(UniformLongGenerator::new(start, start + count - 1)?)
            }
            RequestDistribution::Zipfian => {
                // Sized for the inserts the run is expected to make (twice as many, YCSB's
                // fudge factor), so the hot keys stay put as the key space grows.
                let ops = spec.operation_count as f64;
                let expected_new_keys = (ops * spec.proportions.insert * 2.0) as i32 as i64;
                KeyChooser::Zipfian(ScrambledZipfianGenerator::with_range(
                    start,
                    start + count + expected_new_keys,
                )?)
            }
            RequestDistribution::Latest => {
                KeyChooser::Latest(SkewedLatestGenerator::new(inserts.clone())?)
            }
            RequestDistribution::Hotspot {
                data_fraction,
                opn_fraction,
            } => KeyChooser::Hotspot(HotspotIntegerGenerator::new(
                start,
                start + count - 1,
                data_fraction,
                opn_fraction,
            )?),
        })
    }

    fn next(&mut self, rng: &mut BenchRng) -> i64 {
        match self {
            KeyChooser::Uniform(g) => g.next_value(rng),
            KeyChooser::Zipfian(g) => g.next_value(rng),
            KeyChooser::Latest(g) => g.next_value(rng),
            KeyChooser::Hotspot(g) => g.next_value(rng),
        }
    }
}

#[derive(Debug, Clone)]
enum ScanLength {
    Uniform(UniformLongGenerator),
    Zipfian(ZipfianGenerator),
}

impl ScanLength {
    fn new(spec: &WorkloadSpec) -> Result<Self> {
        let (min, max) = (spec.min_scan_length as i64, spec.max_scan_length as i64);
        Ok(match spec.scan_length_distribution {
            ScanLengthDistribution::Uniform => {
                ScanLength::Uniform(UniformLongGenerator::new(min, max)?)
            }
            ScanLengthDistribution::Zipfian => {
                ScanLength::Zipfian(ZipfianGenerator::with_range(min, max)?)
            }
        })
    }

    fn next(&mut self, rng: &mut BenchRng) -> u64 {
        let len = match self {
            ScanLength::Uniform(g) => g.next_value(rng),
            ScanLength::Zipfian(g) => g.next_value(rng),
        };
        // Both generators stay inside min..=max, which `validate` keeps >= 1.
        len.max(1) as u64
    }
}

/// The request stream of one YCSB workload: load phase, then run phase. Not `Clone`: its
/// insert counter is shared with the "latest" key chooser, as in YCSB.
#[derive(Debug)]
pub struct YcsbWorkload {
    spec: WorkloadSpec,
    rng: BenchRng,
    load_keys: CounterGenerator,
    load_left: u64,
    run_left: u64,
    chooser: DiscreteGenerator<Choice>,
    keys: KeyChooser,
    inserts: AcknowledgedCounterGenerator,
    scan_len: ScanLength,
    /// Bytes of every value written ([`WorkloadSpec::value_len`]).
    value_len: usize,
}

impl YcsbWorkload {
    /// The workload of `spec` (validated first); the same seed gives the same operations.
    pub fn new(spec: WorkloadSpec, seed: u64) -> Result<Self> {
        spec.validate()?;
        let inserts = AcknowledgedCounterGenerator::new(spec.record_count as i64);
        let value_len = spec.value_len()? as usize;
        Ok(YcsbWorkload {
            value_len,
            rng: rng_from_seed(seed),
            load_keys: CounterGenerator::new(spec.insert_start as i64),
            load_left: spec.load_count(),
            run_left: spec.operation_count,
            chooser: operation_chooser(&spec.proportions)?,
            keys: KeyChooser::new(&spec, &inserts)?,
            scan_len: ScanLength::new(&spec)?,
            inserts,
            spec,
        })
    }

    /// The definition it was built from.
    pub fn spec(&self) -> &WorkloadSpec {
        &self.spec
    }

    /// Operations left in the load phase and in the run phase.
    pub fn remaining(&self) -> (u64, u64) {
        (self.load_left, self.run_left)
    }

    /// The key of record `keynum`, as this workload forms it.
    pub fn key_name(&self, keynum: i64) -> String {
        let ordered = self.spec.insert_order == InsertOrder::Ordered;
        build_key_name(keynum, self.spec.zero_padding, ordered)
    }

    /// The next insert of the load phase (YCSB's `doInsert`), or `None` once loaded.
    pub fn next_load(&mut self) -> Option<Op> {
        if self.load_left == 0 {
            return None;
        }
        self.load_left -= 1;
        // YCSB takes the record number as a Java int.
        let keynum = i64::from(self.load_keys.next() as i32);
        Some(self.op(OpKind::Insert, keynum))
    }

    /// The next run-phase operation (YCSB's `doTransaction`), or `None` after
    /// `operation_count`. An insert is acknowledged before it is returned: a driver that
    /// completes each operation before asking for the next sees YCSB's order exactly.
    pub fn next_op(&mut self) -> Result<Option<Op>> {
        let Some(op) = self.next_op_unacknowledged() else {
            return Ok(None);
        };
        if op.kind == OpKind::Insert {
            self.acknowledge(op.keynum)?;
        }
        Ok(Some(op))
    }

    /// As `next_op`, but an insert's record only becomes readable once the caller passes
    /// its `keynum` to `acknowledge` (for drivers that run operations concurrently).
    pub fn next_op_unacknowledged(&mut self) -> Option<Op> {
        if self.run_left == 0 {
            return None;
        }
        self.run_left -= 1;
        let (kind, keynum) = match self.chooser.next_value(&mut self.rng) {
            Choice::Read => (OpKind::Read, self.next_keynum()),
            Choice::Update => (OpKind::Update, self.next_keynum()),
            Choice::Insert => (OpKind::Insert, self.inserts.next()),
            Choice::Scan => {
                // YCSB draws the start key before the length.
                let keynum = self.next_keynum();
                let len = self.scan_len.next(&mut self.rng);
                (OpKind::Scan { len }, keynum)
            }
            Choice::ReadModifyWrite => (OpKind::ReadModifyWrite, self.next_keynum()),
        };
        Some(self.op(kind, keynum))
    }

    /// Makes an insert handed out by `next_op_unacknowledged` visible to later requests.
    pub fn acknowledge(&self, keynum: i64) -> Result<()> {
        self.inserts.acknowledge(keynum)
    }

    /// The highest record number every request may use (YCSB's acknowledged limit).
    pub fn acknowledged_limit(&self) -> i64 {
        self.inserts.limit()
    }

    /// YCSB's `nextKeynum`: draw (as a Java int) until the record is known to exist.
    fn next_keynum(&mut self) -> i64 {
        loop {
            let keynum = i64::from(self.keys.next(&mut self.rng) as i32);
            if keynum <= self.inserts.limit() {
                return keynum;
            }
        }
    }

    fn op(&self, kind: OpKind, keynum: i64) -> Op {
        Op {
            kind,
            keynum,
            key: self.key_name(keynum).into_bytes(),
            value_size: kind.writes().then_some(self.value_len),
        }
    }
}

pub mod properties;

#[cfg(test)]
mod tests;
