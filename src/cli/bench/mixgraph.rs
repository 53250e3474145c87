//! The flags of `zkv bench --workload mixgraph`: db_bench's mixgraph flags, spelt in
//! kebab case (`-keyrange_dist_a` is `--keyrange-dist-a`; db_bench's spelling is an alias),
//! with db_bench's defaults (docs/CLI.md, docs/WORKLOADS.md). Its operations are
//! `zkv bench --reads`. The generator is `zkv_bench::mixgraph`.

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use serde_json::{json, Value};
use zkv_bench::mixgraph::{Pareto, QueryRatios, SineRate, TwoTermExp};
use zkv_bench::MixGraphConfig;

use super::preset::GivenFlags;
use crate::cli::size::parse_positive_size;

/// `--mix-max-value-size` default: db_bench's `mix_max_value_size`.
const DEFAULT_MAX_VALUE_SIZE: u64 = 1024;

#[derive(Debug, Args)]
#[command(next_help_heading = "mixgraph (db_bench's flags and defaults)")]
pub struct MixGraphArgs {
    /// Key ranges the key space is cut into
    #[arg(long, alias = "keyrange_num", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub keyrange_num: u64,

    /// a of the key ranges' popularity f(x) = a·e^(b·x) + c·e^(d·x)
    #[arg(long, alias = "keyrange_dist_a", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub keyrange_dist_a: f64,

    /// b of the key ranges' popularity
    #[arg(long, alias = "keyrange_dist_b", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub keyrange_dist_b: f64,

    /// c of the key ranges' popularity
    #[arg(long, alias = "keyrange_dist_c", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub keyrange_dist_c: f64,

    /// d of the key ranges' popularity
    #[arg(long, alias = "keyrange_dist_d", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub keyrange_dist_d: f64,

    /// a of the keys' power law F(x) = a·x^b; with it or --key-dist-b at 0, keys are
    /// uniform over the key space and the key ranges unused (as in db_bench)
    #[arg(long, alias = "key_dist_a", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub key_dist_a: f64,

    /// b of the keys' power law
    #[arg(long, alias = "key_dist_b", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub key_dist_b: f64,

    /// theta (location) of the value sizes' generalized Pareto law
    #[arg(long, alias = "value_theta", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub value_theta: f64,

    /// k (shape) of the value sizes' generalized Pareto law
    #[arg(long, alias = "value_k", value_name = "X", default_value_t = 0.2615, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub value_k: f64,

    /// sigma (scale) of the value sizes' generalized Pareto law
    #[arg(long, alias = "value_sigma", value_name = "X", default_value_t = 25.45, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub value_sigma: f64,

    /// theta of the scan lengths' generalized Pareto law
    #[arg(long, alias = "iter_theta", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub iter_theta: f64,

    /// k of the scan lengths' generalized Pareto law
    #[arg(long, alias = "iter_k", value_name = "X", default_value_t = 2.517, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub iter_k: f64,

    /// sigma of the scan lengths' generalized Pareto law
    #[arg(long, alias = "iter_sigma", value_name = "X", default_value_t = 14.236, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub iter_sigma: f64,

    /// Weight of gets in the mix (the three weights are normalised)
    #[arg(long, alias = "mix_get_ratio", value_name = "X", default_value_t = 1.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub mix_get_ratio: f64,

    /// Weight of puts in the mix
    #[arg(long, alias = "mix_put_ratio", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub mix_put_ratio: f64,

    /// Weight of seeks (a seek, then up to the drawn scan length of nexts)
    #[arg(long, alias = "mix_seek_ratio", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub mix_seek_ratio: f64,

    /// Value sizes drawn above this wrap around it (at most 1 MiB is used)
    #[arg(long, alias = "mix_max_value_size", value_name = "SIZE", default_value_t = DEFAULT_MAX_VALUE_SIZE,
          value_parser = parse_positive_size, allow_hyphen_values = true)]
    pub mix_max_value_size: u64,

    /// Scan lengths are taken modulo this
    #[arg(long, alias = "mix_max_scan_len", value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub mix_max_scan_len: u64,

    /// Pace the operations to sine-a·sin(sine-b·t + sine-c) + sine-d per second, t in
    /// seconds since mixgraph started, on the database's clock (virtual in deterministic
    /// mode)
    #[arg(long, alias = "sine_mix_rate", value_name = "BOOL", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_value = "false",
          default_missing_value = "true", hide_default_value = true,
          value_parser = BoolishValueParser::new())]
    pub sine_mix_rate: bool,

    /// a of the sine rate
    #[arg(long, alias = "sine_a", value_name = "X", default_value_t = 1.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub sine_a: f64,

    /// b of the sine rate
    #[arg(long, alias = "sine_b", value_name = "X", default_value_t = 1.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub sine_b: f64,

    /// c of the sine rate
    #[arg(long, alias = "sine_c", value_name = "X", default_value_t = 0.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub sine_c: f64,

    /// d of the sine rate
    #[arg(long, alias = "sine_d", value_name = "X", default_value_t = 1.0, value_parser = parse_finite,
          allow_negative_numbers = true)]
    pub sine_d: f64,

    /// How often the sine rate is re-evaluated, in milliseconds
    #[arg(long, alias = "sine_mix_rate_interval_milliseconds", value_name = "MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub sine_mix_rate_interval_milliseconds: u64,
}

/// Every flag of [`MixGraphArgs`], by clap id.
pub const IDS: [&str; 24] = [
    "keyrange_num",
    "keyrange_dist_a",
    "keyrange_dist_b",
    "keyrange_dist_c",
    "keyrange_dist_d",
    "key_dist_a",
    "key_dist_b",
    "value_theta",
    "value_k",
    "value_sigma",
    "iter_theta",
    "iter_k",
    "iter_sigma",
    "mix_get_ratio",
    "mix_put_ratio",
    "mix_seek_ratio",
    "mix_max_value_size",
    "mix_max_scan_len",
    "sine_mix_rate",
    "sine_a",
    "sine_b",
    "sine_c",
    "sine_d",
    "sine_mix_rate_interval_milliseconds",
];

/// The flags of the key ranges and of the sine, which db_bench reads only in some cases.
const KEYRANGE_IDS: [&str; 5] = [
    "keyrange_num",
    "keyrange_dist_a",
    "keyrange_dist_b",
    "keyrange_dist_c",
    "keyrange_dist_d",
];
const SINE_IDS: [&str; 5] = [
    "sine_a",
    "sine_b",
    "sine_c",
    "sine_d",
    "sine_mix_rate_interval_milliseconds",
];

/// The command line's spelling of clap id `id`.
pub fn flag(id: &str) -> String {
    format!("--{}", id.replace('_', "-"))
}

/// A real number that is finite: db_bench's parameters are, and NaN or infinity would only
/// give garbage sizes and keys.
fn parse_finite(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err("must be a finite number".to_string()),
        Err(_) => Err("not a number".to_string()),
    }
}

impl MixGraphArgs {
    /// The generator's configuration for `reads` operations on a key space of `num` keys
    /// of `key_size` bytes.
    pub fn config(&self, num: u64, reads: u64, key_size: usize) -> MixGraphConfig {
        MixGraphConfig {
            num,
            reads,
            key_size,
            keyrange_num: self.keyrange_num,
            keyrange_dist: TwoTermExp {
                a: self.keyrange_dist_a,
                b: self.keyrange_dist_b,
                c: self.keyrange_dist_c,
                d: self.keyrange_dist_d,
            },
            key_dist_a: self.key_dist_a,
            key_dist_b: self.key_dist_b,
            value: Pareto {
                theta: self.value_theta,
                k: self.value_k,
                sigma: self.value_sigma,
            },
            iter: Pareto {
                theta: self.iter_theta,
                k: self.iter_k,
                sigma: self.iter_sigma,
            },
            ratios: QueryRatios {
                get: self.mix_get_ratio,
                put: self.mix_put_ratio,
                seek: self.mix_seek_ratio,
            },
            mix_max_value_size: self.mix_max_value_size,
            mix_max_scan_len: self.mix_max_scan_len,
            sine: self.sine_mix_rate.then_some(self.sine()),
        }
    }

    fn sine(&self) -> SineRate {
        SineRate {
            a: self.sine_a,
            b: self.sine_b,
            c: self.sine_c,
            d: self.sine_d,
            interval_ms: self.sine_mix_rate_interval_milliseconds,
        }
    }

    /// Flags the command line gave that db_bench reads but that change nothing here, as
    /// warnings: db_bench's own example command gives both kinds, so they are not refused.
    pub fn inert_flags(&self, given: &GivenFlags) -> Vec<String> {
        let named = |ids: &[&str]| -> Vec<String> {
            ids.iter()
                .filter(|id| given.has(id))
                .map(|id| flag(id))
                .collect()
        };
        let mut lines = Vec::new();
        let keyranges = named(&KEYRANGE_IDS);
        if !keyranges.is_empty() && !self.config(1, 1, 1).uses_key_ranges() {
            lines.push(format!(
                "mixgraph: {} change nothing: key ranges shape the keys only when a \
                 --keyrange-dist-* and both --key-dist-a and --key-dist-b are not 0 (else \
                 keys are uniform, or follow the power law over the whole key space, as in \
                 db_bench)",
                keyranges.join(", ")
            ));
        }
        let sine = named(&SINE_IDS);
        if !sine.is_empty() && !self.sine_mix_rate {
            lines.push(format!(
                "mixgraph: {} change nothing without --sine-mix-rate, as in db_bench",
                sine.join(", ")
            ));
        }
        lines
    }

    /// The run's mixgraph parameters for the JSON report's `config`, with its `reads`.
    pub fn json(&self, reads: u64) -> Value {
        json!({
            "reads": reads, "keyrange_num": self.keyrange_num,
            "keyrange_dist_a": self.keyrange_dist_a, "keyrange_dist_b": self.keyrange_dist_b,
            "keyrange_dist_c": self.keyrange_dist_c, "keyrange_dist_d": self.keyrange_dist_d,
            "key_dist_a": self.key_dist_a, "key_dist_b": self.key_dist_b,
            "value_theta": self.value_theta, "value_k": self.value_k,
            "value_sigma": self.value_sigma, "iter_theta": self.iter_theta,
            "iter_k": self.iter_k, "iter_sigma": self.iter_sigma,
            "mix_get_ratio": self.mix_get_ratio, "mix_put_ratio": self.mix_put_ratio,
            "mix_seek_ratio": self.mix_seek_ratio,
            "mix_max_value_size": self.mix_max_value_size,
            "mix_max_scan_len": self.mix_max_scan_len, "sine_mix_rate": self.sine_mix_rate,
            "sine_a": self.sine_a, "sine_b": self.sine_b, "sine_c": self.sine_c,
            "sine_d": self.sine_d,
            "sine_mix_rate_interval_milliseconds": self.sine_mix_rate_interval_milliseconds,
        })
    }
}
