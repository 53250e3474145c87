//! Draws from zkv's ports of YCSB's generators and prints the same lines as
//! `scripts/ycsb-check/Draw.java` prints from YCSB's own; `compare` then checks the two
//! outputs against each other. `scripts/ycsb-check.sh` runs both.
//!
//! ```text
//! draw [--seed S] N CASE...        print (cases as in Draw.java)
//! draw compare JAVA_FILE RUST_FILE  compare; exits 1 on any disagreement
//! ```
//!
//! Deterministic values must agree exactly. Sampled frequencies must agree within five
//! standard deviations of the difference of two independent samples (the two programs
//! draw from different random sources): for zipfian-like cases at YCSB's 50 most frequent
//! labels and along the 50 top ranks of the sorted frequencies, for the others at every
//! label.

use std::collections::BTreeMap;
use std::process::ExitCode;

use zkv_bench::gen::acknowledged_counter::WINDOW_SIZE;
use zkv_bench::gen::scrambled_zipfian::{ITEM_COUNT, ZETAN};
use zkv_bench::gen::zipfian::{zeta_static, ZIPFIAN_CONSTANT};
use zkv_bench::gen::{
    build_key_name, fnvhash64, rng_from_seed, AcknowledgedCounterGenerator, BenchRng,
    HotspotIntegerGenerator, NumberGenerator, ScrambledZipfianGenerator, SkewedLatestGenerator,
    UniformLongGenerator, ZipfianGenerator,
};
use zkv_bench::ycsb::{Proportions, WorkloadSpec, YcsbWorkload};
use zkv_bench::OpKind;

type Res<T> = Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("draw: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Res<ExitCode> {
    match args {
        [cmd, java, rust] if cmd == "compare" => compare(java, rust),
        [flag, seed, rest @ ..] if flag == "--seed" => draw_all(parse(seed)?, rest),
        rest => draw_all(1, rest),
    }
}

fn draw_all(seed: u64, args: &[String]) -> Res<ExitCode> {
    let (n, cases) = args
        .split_first()
        .ok_or("usage: draw [--seed S] N CASE...")?;
    let n: u64 = parse(n)?;
    let mut rng = rng_from_seed(seed);
    let mut out = String::new();
    for case in cases {
        draw(case, n, &mut rng, &mut out)?;
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn parse<T: std::str::FromStr>(s: &str) -> Res<T> {
    s.parse().map_err(|_| format!("cannot parse {s:?}"))
}

fn draw(case: &str, n: u64, rng: &mut BenchRng, out: &mut String) -> Res<()> {
    let p: Vec<&str> = case.split(':').collect();
    let err = |e: zkv_bench::Error| format!("{case}: {e}");
    match p.as_slice() {
        ["zipfian", items, theta] => {
            let g = ZipfianGenerator::with_constant(0, parse::<i64>(items)? - 1, parse(theta)?);
            sample(case, n, g.map_err(err)?, rng, out);
        }
        ["scrambled", items] => {
            let g = ScrambledZipfianGenerator::new(parse(items)?).map_err(err)?;
            sample(case, n, g, rng, out);
        }
        ["latest", records, every] => latest(case, n, parse(records)?, parse(every)?, rng, out)?,
        ["uniform", lb, ub] => {
            let (lb, ub) = (parse(lb)?, parse(ub)?);
            let g = UniformLongGenerator::new(lb, ub).map_err(err)?;
            tenths(case, n, g, lb, ub, rng, out);
        }
        ["hotspot", lb, ub, hot, opn] => {
            let (lb, ub) = (parse(lb)?, parse(ub)?);
            let g = HotspotIntegerGenerator::new(lb, ub, parse(hot)?, parse(opn)?);
            tenths(case, n, g.map_err(err)?, lb, ub, rng, out);
        }
        ["ops", r, u, i, s, m] => {
            let props = Proportions {
                read: parse(r)?,
                update: parse(u)?,
                insert: parse(i)?,
                scan: parse(s)?,
                read_modify_write: parse(m)?,
            };
            ops(case, n, props, out)?;
        }
        ["fnv", x] => line_d(out, case, fnvhash64(parse(x)?)),
        ["zeta", items, theta] => {
            line_d(out, case, bits(zeta_static(parse(items)?, parse(theta)?)))
        }
        ["grow", items, count] => grow(case, parse(items)?, parse(count)?, rng, out)?,
        ["key", num, pad, order] => {
            let key = build_key_name(parse(num)?, parse(pad)?, *order == "ordered");
            line_d(out, case, key);
        }
        ["const"] => {
            line_d(out, "const:zetan", bits(ZETAN));
            line_d(out, "const:itemcount", ITEM_COUNT);
            line_d(out, "const:zipfian", bits(ZIPFIAN_CONSTANT));
            line_d(out, "const:window", WINDOW_SIZE);
        }
        _ => return Err(format!("unknown case {case}")),
    }
    Ok(())
}

fn bits(x: f64) -> String {
    format!("{:016x}", x.to_bits())
}

fn line_d(out: &mut String, name: &str, value: impl std::fmt::Display) {
    out.push_str(&format!("D {name} {value}\n"));
}

fn print_counts<K: std::fmt::Display>(
    out: &mut String,
    case: &str,
    n: u64,
    counts: &BTreeMap<K, u64>,
) {
    out.push_str(&format!("N {case} {n}\n"));
    for (label, count) in counts {
        out.push_str(&format!("H {case} {label} {count}\n"));
    }
}

fn sample(case: &str, n: u64, mut g: impl NumberGenerator, rng: &mut BenchRng, out: &mut String) {
    let mut counts = BTreeMap::new();
    for _ in 0..n {
        *counts.entry(g.next_value(rng)).or_insert(0) += 1;
    }
    print_counts(out, case, n, &counts);
}

/// Recency ranks of "latest", with one acknowledged insert before every `every`-th draw.
fn latest(
    case: &str,
    n: u64,
    records: i64,
    every: u64,
    rng: &mut BenchRng,
    out: &mut String,
) -> Res<()> {
    let basis = AcknowledgedCounterGenerator::new(records);
    let mut g = SkewedLatestGenerator::new(basis.clone()).map_err(|e| e.to_string())?;
    let mut counts = BTreeMap::new();
    for i in 0..n {
        if every > 0 && i % every == 0 {
            basis.acknowledge(basis.next()).map_err(|e| e.to_string())?;
        }
        let v = g.next_value(rng);
        *counts.entry(basis.limit() - v).or_insert(0) += 1;
    }
    print_counts(out, case, n, &counts);
    Ok(())
}

fn tenths(
    case: &str,
    n: u64,
    mut g: impl NumberGenerator,
    lb: i64,
    ub: i64,
    rng: &mut BenchRng,
    out: &mut String,
) {
    let span = ub - lb + 1;
    let mut counts = BTreeMap::new();
    for _ in 0..n {
        let v = g.next_value(rng);
        *counts.entry((v - lb) * 10 / span).or_insert(0) += 1;
    }
    print_counts(out, case, n, &counts);
}

/// The operation mix of a YCSB workload with these proportions, labelled as YCSB names the
/// operations in its chooser.
fn ops(case: &str, n: u64, proportions: Proportions, out: &mut String) -> Res<()> {
    let spec = WorkloadSpec {
        proportions,
        operation_count: n,
        ..WorkloadSpec::default()
    };
    let mut w = YcsbWorkload::new(spec, 7).map_err(|e| e.to_string())?;
    let mut counts = BTreeMap::new();
    while let Some(op) = w.next_op().map_err(|e| e.to_string())? {
        let label = match op.kind {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan { .. } => "SCAN",
            OpKind::ReadModifyWrite => "READMODIFYWRITE",
            OpKind::Delete => "DELETE",
            OpKind::Next => "NEXT",
            OpKind::Prev => "PREV",
            other => return Err(format!("no YCSB label for {other:?}")),
        };
        *counts.entry(label).or_insert(0) += 1;
    }
    print_counts(out, case, n, &counts);
    Ok(())
}

fn grow(case: &str, items: i64, count: i64, rng: &mut BenchRng, out: &mut String) -> Res<()> {
    let mut g = ZipfianGenerator::new(items).map_err(|e| e.to_string())?;
    g.next_long(rng, count);
    line_d(out, &format!("{case}:zetan"), bits(g.zetan()));
    line_d(out, &format!("{case}:eta"), bits(g.eta()));
    line_d(out, &format!("{case}:count"), g.count_for_zeta());
    Ok(())
}

// ---- comparison ----

/// One program's output: deterministic values, and per sampled case its draw count and
/// label counts.
#[derive(Default)]
struct Output {
    det: BTreeMap<String, String>,
    sampled: BTreeMap<String, (u64, BTreeMap<String, u64>)>,
}

fn read_output(path: &str) -> Res<Output> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Output::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["D", name, value] => {
                out.det.insert(name.to_string(), value.to_string());
            }
            ["N", case, n] => out.sampled.entry(case.to_string()).or_default().0 = parse(n)?,
            ["H", case, label, count] => {
                let entry = out.sampled.entry(case.to_string()).or_default();
                entry.1.insert(label.to_string(), parse(count)?);
            }
            _ => return Err(format!("{path}: bad line {line:?}")),
        }
    }
    Ok(out)
}

const SIGMAS: f64 = 5.0;
const TOP: usize = 50;

/// Whether counts `a` of `na` draws and `b` of `nb` agree, two-sample binomial test.
fn agree(a: u64, na: u64, b: u64, nb: u64) -> bool {
    let (fa, fb) = (a as f64 / na as f64, b as f64 / nb as f64);
    let p = (a + b) as f64 / (na + nb) as f64;
    let sigma = (p * (1.0 - p) * (1.0 / na as f64 + 1.0 / nb as f64)).sqrt();
    (fa - fb).abs() <= SIGMAS * sigma + 2.0 / na.min(nb) as f64
}

fn compare(java_path: &str, rust_path: &str) -> Res<ExitCode> {
    let java = read_output(java_path)?;
    let rust = read_output(rust_path)?;
    let mut results: Vec<(String, Option<String>)> = Vec::new();
    for (name, jv) in &java.det {
        let failure = match rust.det.get(name) {
            Some(rv) if rv == jv => None,
            Some(rv) => Some(format!("YCSB {jv}, zkv {rv}")),
            None => Some("missing in zkv's output".to_string()),
        };
        results.push((name.clone(), failure));
    }
    for (case, (jn, jc)) in &java.sampled {
        let failure = match rust.sampled.get(case) {
            Some((rn, rc)) => compare_sampled(case, (*jn, jc), (*rn, rc)),
            None => Some("missing in zkv's output".to_string()),
        };
        results.push((case.clone(), failure));
    }
    for name in rust.det.keys().chain(rust.sampled.keys()) {
        if !java.det.contains_key(name) && !java.sampled.contains_key(name) {
            results.push((name.clone(), Some("missing in YCSB's output".to_string())));
        }
    }
    if results.is_empty() {
        // Two empty outputs agree on nothing: never report that as a pass.
        return Err(format!("{java_path} and {rust_path} hold no checks"));
    }
    Ok(report(&results))
}

fn report(results: &[(String, Option<String>)]) -> ExitCode {
    let mut failed = 0;
    for (name, failure) in results {
        match failure {
            None => println!("ok   {name}"),
            Some(why) => {
                failed += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
    println!(
        "ycsb-check: {} passed, {failed} failed",
        results.len() - failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

type Counts<'a> = (u64, &'a BTreeMap<String, u64>);

fn compare_sampled(case: &str, java: Counts, rust: Counts) -> Option<String> {
    let ranked = ["zipfian:", "scrambled:", "latest:"]
        .iter()
        .any(|p| case.starts_with(p));
    let labels: Vec<&String> = if ranked {
        top_labels(java.1)
    } else {
        java.1.keys().chain(rust.1.keys()).collect()
    };
    for label in labels {
        let (a, b) = (count(java.1, label), count(rust.1, label));
        if !agree(a, java.0, b, rust.0) {
            return Some(format!(
                "label {label}: YCSB {a}/{}, zkv {b}/{}",
                java.0, rust.0
            ));
        }
    }
    if ranked {
        return compare_rank_curve(java, rust);
    }
    None
}

fn count(counts: &BTreeMap<String, u64>, label: &str) -> u64 {
    counts.get(label).copied().unwrap_or(0)
}

/// YCSB's `TOP` most frequent labels.
fn top_labels(counts: &BTreeMap<String, u64>) -> Vec<&String> {
    let mut all: Vec<(&String, u64)> = counts.iter().map(|(l, c)| (l, *c)).collect();
    all.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    all.into_iter().take(TOP).map(|(l, _)| l).collect()
}

/// The r-th largest frequency of each side, for the top ranks.
fn compare_rank_curve(java: Counts, rust: Counts) -> Option<String> {
    let sorted = |c: &BTreeMap<String, u64>| {
        let mut v: Vec<u64> = c.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    };
    let (j, r) = (sorted(java.1), sorted(rust.1));
    for (rank, &a) in j.iter().enumerate().take(TOP) {
        let b = r.get(rank).copied().unwrap_or(0);
        if !agree(a, java.0, b, rust.0) {
            return Some(format!(
                "rank {rank}: YCSB {a}/{}, zkv {b}/{}",
                java.0, rust.0
            ));
        }
    }
    None
}
