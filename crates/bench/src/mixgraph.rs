//! db_bench's `mixgraph` benchmark (RocksDB db_bench_tool.cc, MixGraph): the social-graph
//! mix of gets, puts and seeks of Cao et al., "Characterizing, Modeling, and Benchmarking
//! RocksDB Key-Value Workloads at Facebook" (FAST'20), written from db_bench 7.8.3's
//! definition.
//!
//! Each operation makes one draw `ini = rand % num` (db_bench's `GetRandomKey`) and
//! derives everything from it, as db_bench does:
//!
//! - u = ini / num;
//! - the key: `ini` itself when `key_dist_a` or `key_dist_b` is 0 (whatever the key-range
//!   parameters say); else, when a `keyrange_dist_*` is not 0, a key range by the
//!   two-term exponential and a key in it by the power law ([`KeyRanges`]); else the power
//!   law over the whole key space: the twister's first output for the seed
//!   ⌈(u/a)^(1/b)⌉, as a signed number, `% num` (negative for half the seeds: db_bench
//!   then formats the key of 2^64 minus its magnitude, past every other key);
//! - the kind: slot `ini % slots` of the ratios' table ([`QueryMix`]);
//! - a put's value size: the Pareto `value_*` draw of u, 10 if below 10, modulo
//!   min(`mix_max_value_size`, 1 MiB) if above that;
//! - a seek's scan length: the Pareto `iter_*` draw of u modulo `mix_max_scan_len` (a
//!   negative length scans nothing).
//!
//! Keys are formatted as in the other db_bench workloads ([`key_from_int`]). The random
//! stream is zkv's seeded [`BenchRng`]; db_bench's twister is used only where db_bench
//! uses it as a fixed function ([`crate::gen::mt64`]).

mod dist;
mod keyrange;
mod query;
mod rate;
#[cfg(test)]
mod tests;

pub use dist::{ceil_i64, power_inverse, trunc_i64, Pareto};
pub use keyrange::{KeyRange, KeyRanges, TwoTermExp};
pub use query::{QueryKind, QueryMix, QueryRatios};
pub use rate::{RateSchedule, SineRate, INITIAL_RATE};

use crate::dbbench::{key_from_int, MAX_KEY_SIZE};
use crate::error::{check_range, Error, Result};
use crate::gen::mt64::mt19937_64_first;
use crate::gen::{rng_from_seed, BenchRng, RngCore};
use crate::op::{Op, OpKind};

/// Values are at most this long whatever `mix_max_value_size` says (db_bench's buffer).
pub const VALUE_SIZE_CAP: u64 = 1 << 20;

/// Values drawn below this size are written with this size.
pub const MIN_VALUE_SIZE: i64 = 10;

/// db_bench's flags of mixgraph, with its defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct MixGraphConfig {
    /// `--num`: the key space `0..num`.
    pub num: u64,
    /// `--reads`: operations.
    pub reads: u64,
    /// `--key_size`: bytes per key.
    pub key_size: usize,
    /// `--keyrange_num`: key ranges the key space is cut into (1 to `num`).
    pub keyrange_num: u64,
    /// `keyrange_dist_a` .. `keyrange_dist_d`.
    pub keyrange_dist: TwoTermExp,
    /// `key_dist_a`: a of the power law a·x^b that draws keys (0: uniform keys).
    pub key_dist_a: f64,
    /// `key_dist_b`: b of the power law a·x^b that draws keys (0: uniform keys).
    pub key_dist_b: f64,
    /// `value_theta`, `value_k`, `value_sigma`.
    pub value: Pareto,
    /// `iter_theta`, `iter_k`, `iter_sigma`.
    pub iter: Pareto,
    /// `mix_get_ratio`, `mix_put_ratio`, `mix_seek_ratio`.
    pub ratios: QueryRatios,
    /// `mix_max_value_size`: bytes; a larger draw is taken modulo it (and values stay at
    /// most [`VALUE_SIZE_CAP`]).
    pub mix_max_value_size: u64,
    /// `mix_max_scan_len`: records; a seek's scan length is its draw modulo this.
    pub mix_max_scan_len: u64,
    /// `--sine_mix_rate` and its parameters; `None`: not paced.
    pub sine: Option<SineRate>,
}

impl Default for MixGraphConfig {
    /// db_bench's defaults (`num` and `reads` 1,000,000, 16-byte keys).
    fn default() -> Self {
        MixGraphConfig {
            num: 1_000_000,
            reads: 1_000_000,
            key_size: 16,
            keyrange_num: 1,
            keyrange_dist: TwoTermExp::default(),
            key_dist_a: 0.0,
            key_dist_b: 0.0,
            value: Pareto {
                theta: 0.0,
                k: 0.2615,
                sigma: 25.45,
            },
            iter: Pareto {
                theta: 0.0,
                k: 2.517,
                sigma: 14.236,
            },
            ratios: QueryRatios::default(),
            mix_max_value_size: 1024,
            mix_max_scan_len: 10_000,
            sine: None,
        }
    }
}

/// How keys are drawn, decided once from the configuration.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum KeyModel {
    /// `ini` is the key.
    Uniform,
    /// The power law a·x^b over the whole key space.
    Power {
        /// `key_dist_a`.
        a: f64,
        /// `key_dist_b`.
        b: f64,
    },
    /// Key ranges by their two-term exponential share, then the power law inside.
    Ranges {
        /// The ranges' layout.
        ranges: Box<KeyRanges>,
        /// `key_dist_a`.
        a: f64,
        /// `key_dist_b`.
        b: f64,
    },
}

impl MixGraphConfig {
    /// Checks every field: at least one key, operation and key range (at most `num` of
    /// them), keys of 1 byte to 1 MiB, finite real parameters, positive caps and ratios
    /// with a positive sum.
    pub fn validate(&self) -> Result<()> {
        let max = i64::MAX as u64;
        check_range("num", self.num, 1, max)?;
        check_range("reads", self.reads, 1, max)?;
        check_range("key size", self.key_size as u64, 1, MAX_KEY_SIZE as u64)?;
        check_range("keyrange_num", self.keyrange_num, 1, self.num)?;
        check_range("mix_max_value_size", self.mix_max_value_size, 1, max)?;
        check_range("mix_max_scan_len", self.mix_max_scan_len, 1, max)?;
        for (what, value) in self.numbers() {
            if !value.is_finite() {
                return Err(Error::InvalidFraction {
                    what,
                    allowed: "a finite number",
                    value,
                });
            }
        }
        if let Some(s) = &self.sine {
            check_range("sine_mix_rate_interval_milliseconds", s.interval_ms, 1, max)?;
        }
        QueryMix::new(self.ratios).map(drop)
    }

    /// The real-valued parameters, by db_bench's names.
    fn numbers(&self) -> Vec<(&'static str, f64)> {
        let (r, v, i) = (&self.keyrange_dist, &self.value, &self.iter);
        let mut all = vec![
            ("keyrange_dist_a", r.a),
            ("keyrange_dist_b", r.b),
            ("keyrange_dist_c", r.c),
            ("keyrange_dist_d", r.d),
            ("key_dist_a", self.key_dist_a),
            ("key_dist_b", self.key_dist_b),
            ("value_theta", v.theta),
            ("value_k", v.k),
            ("value_sigma", v.sigma),
            ("iter_theta", i.theta),
            ("iter_k", i.k),
            ("iter_sigma", i.sigma),
        ];
        if let Some(s) = &self.sine {
            all.extend([
                ("sine_a", s.a),
                ("sine_b", s.b),
                ("sine_c", s.c),
                ("sine_d", s.d),
            ]);
        }
        all
    }

    /// Whether the key ranges shape the keys: a `keyrange_dist_*` is set and so are both
    /// `key_dist_*` (with either of those at 0, db_bench draws uniform keys).
    pub fn uses_key_ranges(&self) -> bool {
        !self.keyrange_dist.is_zero() && self.key_dist_a != 0.0 && self.key_dist_b != 0.0
    }

    /// The key model the parameters select (validated first).
    pub fn key_model(&self) -> Result<KeyModel> {
        let (a, b) = (self.key_dist_a, self.key_dist_b);
        if a == 0.0 || b == 0.0 {
            return Ok(KeyModel::Uniform);
        }
        if self.keyrange_dist.is_zero() {
            return Ok(KeyModel::Power { a, b });
        }
        let ranges = KeyRanges::new(self.num, self.keyrange_num, self.keyrange_dist)?;
        Ok(KeyModel::Ranges {
            ranges: Box::new(ranges),
            a,
            b,
        })
    }

    /// The largest value a put writes: `mix_max_value_size`, at most 1 MiB.
    pub fn value_max(&self) -> i64 {
        self.mix_max_value_size.min(VALUE_SIZE_CAP) as i64
    }

    /// A put's value size for u, with db_bench's clamps.
    pub fn value_size(&self, u: f64) -> usize {
        let size = self.value.inverse(u);
        let max = self.value_max();
        let size = if size < MIN_VALUE_SIZE {
            MIN_VALUE_SIZE
        } else if size > max {
            size % max
        } else {
            size
        };
        size as usize
    }

    /// A seek's scan length for u.
    pub fn scan_length(&self, u: f64) -> u64 {
        let len = self.iter.inverse(u) % self.mix_max_scan_len as i64;
        len.max(0) as u64
    }

    /// The mean value size of the puts, over `samples` evenly spaced values of u (for
    /// sizing a run, not for measuring one).
    pub fn mean_value_size(&self, samples: u64) -> f64 {
        let n = samples.min(self.num).max(1);
        let sum: f64 = (0..n)
            .map(|i| self.value_size(i as f64 / n as f64) as f64)
            .sum();
        sum / n as f64
    }
}

/// The request stream of mixgraph: `reads` operations.
#[derive(Debug, Clone)]
pub struct MixGraphGenerator {
    config: MixGraphConfig,
    keys: KeyModel,
    mix: QueryMix,
    rng: BenchRng,
    done: u64,
}

impl MixGraphGenerator {
    /// The stream of `config` (validated first); the same seed gives the same stream.
    pub fn new(config: MixGraphConfig, seed: u64) -> Result<Self> {
        config.validate()?;
        Ok(MixGraphGenerator {
            keys: config.key_model()?,
            mix: QueryMix::new(config.ratios)?,
            config,
            rng: rng_from_seed(seed),
            done: 0,
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &MixGraphConfig {
        &self.config
    }

    /// How it draws keys.
    pub fn key_model(&self) -> &KeyModel {
        &self.keys
    }

    /// How it chooses between gets, puts and seeks.
    pub fn query_mix(&self) -> &QueryMix {
        &self.mix
    }

    /// Operations left.
    pub fn remaining(&self) -> u64 {
        self.config.reads - self.done
    }

    /// The sine rate schedule, with `--sine_mix_rate`.
    pub fn rate_schedule(&self) -> Option<RateSchedule> {
        self.config.sine.map(RateSchedule::new)
    }

    /// The next operation; `None` once `reads` were generated.
    pub fn next_op(&mut self) -> Option<Op> {
        if self.done == self.config.reads {
            return None;
        }
        self.done += 1;
        let ini = (self.rng.next_u64() % self.config.num) as i64;
        Some(self.op_of(ini))
    }

    /// The operation db_bench makes of draw `ini` (0 ≤ ini < num).
    pub fn op_of(&self, ini: i64) -> Op {
        let u = ini as f64 / self.config.num as f64;
        let keynum = self.key_of(ini, u);
        let (kind, value_size) = match self.mix.kind(ini) {
            QueryKind::Get => (OpKind::Read, None),
            QueryKind::Put => (OpKind::Update, Some(self.config.value_size(u))),
            QueryKind::Seek => {
                let len = self.config.scan_length(u);
                (OpKind::Scan { len }, None)
            }
        };
        Op {
            kind,
            keynum,
            key: key_from_int(keynum as u64, self.config.key_size),
            value_size,
        }
    }

    fn key_of(&self, ini: i64, u: f64) -> i64 {
        match &self.keys {
            KeyModel::Uniform => ini,
            KeyModel::Power { a, b } => {
                let seed = power_inverse(u, *a, *b) as u64;
                mt19937_64_first(seed) as i64 % self.config.num as i64
            }
            KeyModel::Ranges { ranges, a, b } => ranges.key(ini, *a, *b),
        }
    }
}
