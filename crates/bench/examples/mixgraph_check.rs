//! The zkv side of `scripts/mixgraph-check.sh`, and its comparison with db_bench's.
//!
//! ```text
//! mixgraph_check draw [--seed S] PARAM...   zkv's puts: "key value_size" lines
//! mixgraph_check wal < DUMP                  db_bench's puts, from `ldb dump_wal --print_value`
//! mixgraph_check compare PARAM... -- DB_PUTS ZKV_PUTS DB_OUT ZKV_OUT
//! ```
//!
//! PARAMs are db_bench's own flags (`-keyrange_num=30`), so the script hands the same list
//! to db_bench and to zkv. `compare` prints a table of both sides' figures (value sizes,
//! key-range shares, the hottest range's hottest keys, and the summary line each run
//! printed: `DB_OUT` is db_bench's output, `ZKV_OUT` that of `zkv bench`; the hot keys only
//! when every operation is a put), checks the
//! sampled frequencies against each other (two-sample binomial test, five standard
//! deviations) and the value-size means (five standard errors), and ends with
//! `mixgraph-check: N passed, M failed`; it exits 1 on any failure.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::process::ExitCode;

use zkv_bench::mixgraph::SineRate;
use zkv_bench::{MixGraphConfig, MixGraphGenerator, OpKind};

type Res<T> = Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mixgraph_check: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Res<ExitCode> {
    match args {
        [cmd, flag, seed, params @ ..] if cmd == "draw" && flag == "--seed" => {
            draw(&config(params)?, parse(seed)?)
        }
        [cmd, params @ ..] if cmd == "draw" => draw(&config(params)?, 1),
        [cmd] if cmd == "wal" => wal(),
        [cmd, rest @ ..] if cmd == "compare" => {
            let split = rest
                .iter()
                .position(|a| a == "--")
                .ok_or("compare: no --")?;
            let files = &rest[split + 1..];
            let [db, zkv, db_out, zkv_out] = files else {
                return Err("compare: DB_PUTS ZKV_PUTS DB_OUT ZKV_OUT".into());
            };
            compare(&config(&rest[..split])?, [db, zkv], [db_out, zkv_out])
        }
        _ => Err("usage: draw [--seed S] PARAM... | wal | compare PARAM... -- FILES".into()),
    }
}

fn parse<T: std::str::FromStr>(s: &str) -> Res<T> {
    s.parse().map_err(|_| format!("cannot parse {s:?}"))
}

// ------------------------------------------------------------------ parameters

/// db_bench's flags that do not shape the generated stream.
const IGNORED: [&str; 4] = ["perf_level", "seed", "db", "benchmarks"];

/// The generator's configuration from db_bench's `-name=value` flags.
fn config(params: &[String]) -> Res<MixGraphConfig> {
    let mut c = MixGraphConfig {
        reads: 0,
        ..MixGraphConfig::default()
    };
    let mut sine = SineRate::default();
    let mut sine_on = false;
    for p in params {
        let (name, value) = p
            .trim_start_matches('-')
            .split_once('=')
            .ok_or_else(|| format!("{p}: not -name=value"))?;
        if !set(&mut c, &mut sine, name, value)? {
            match name {
                "sine_mix_rate" => sine_on = value == "true" || value == "1",
                _ if IGNORED.contains(&name) => {}
                _ => return Err(format!("{p}: not a mixgraph flag")),
            }
        }
    }
    c.sine = sine_on.then_some(sine);
    if c.reads == 0 {
        c.reads = c.num; // db_bench's default
    }
    Ok(c)
}

/// Sets parameter `name` from `v`; false if `name` is none of the generator's numbers.
fn set(c: &mut MixGraphConfig, s: &mut SineRate, name: &str, v: &str) -> Res<bool> {
    let f = || parse::<f64>(v);
    let n = || parse::<u64>(v);
    match name {
        "num" => c.num = n()?,
        "reads" => c.reads = n()?,
        "key_size" => c.key_size = parse(v)?,
        "keyrange_num" => c.keyrange_num = n()?,
        "keyrange_dist_a" => c.keyrange_dist.a = f()?,
        "keyrange_dist_b" => c.keyrange_dist.b = f()?,
        "keyrange_dist_c" => c.keyrange_dist.c = f()?,
        "keyrange_dist_d" => c.keyrange_dist.d = f()?,
        "key_dist_a" => c.key_dist_a = f()?,
        "key_dist_b" => c.key_dist_b = f()?,
        "value_theta" => c.value.theta = f()?,
        "value_k" => c.value.k = f()?,
        "value_sigma" => c.value.sigma = f()?,
        "iter_theta" => c.iter.theta = f()?,
        "iter_k" => c.iter.k = f()?,
        "iter_sigma" => c.iter.sigma = f()?,
        "mix_get_ratio" => c.ratios.get = f()?,
        "mix_put_ratio" => c.ratios.put = f()?,
        "mix_seek_ratio" => c.ratios.seek = f()?,
        "mix_max_value_size" => c.mix_max_value_size = n()?,
        "mix_max_scan_len" => c.mix_max_scan_len = n()?,
        "sine_a" => s.a = f()?,
        "sine_b" => s.b = f()?,
        "sine_c" => s.c = f()?,
        "sine_d" => s.d = f()?,
        "sine_mix_rate_interval_milliseconds" => s.interval_ms = n()?,
        _ => return Ok(false),
    }
    Ok(true)
}

// ------------------------------------------------------------------ the two sides

fn draw(c: &MixGraphConfig, seed: u64) -> Res<ExitCode> {
    let mut g = MixGraphGenerator::new(c.clone(), seed).map_err(|e| e.to_string())?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    while let Some(op) = g.next_op() {
        if let (OpKind::Update, Some(size)) = (op.kind, op.value_size) {
            writeln!(out, "{} {size}", op.keynum as u64).map_err(|e| e.to_string())?;
        }
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn wal() -> Res<ExitCode> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let line = line.map_err(|e| e.to_string())?;
        if let Some((key, size)) = wal_put(&line) {
            writeln!(out, "{key} {size}").map_err(|e| e.to_string())?;
        }
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// `seq,count,size,offset,PUT(0) : 0xKEY : 0xVALUE`: the key's integer (its first eight
/// bytes, most significant first) and the value's length.
fn wal_put(line: &str) -> Option<(u64, usize)> {
    let (_, rest) = line.split_once("PUT(0) : 0x")?;
    let (key, value) = rest.split_once(" : 0x")?;
    let value = value.split_whitespace().next().unwrap_or("");
    let int = u64::from_str_radix(key.get(..16)?, 16).ok()?;
    Some((int, value.len() / 2))
}

// ------------------------------------------------------------------ comparison

const SIGMAS: f64 = 5.0;

/// One side's puts: how often each key was written, and every value size.
struct Puts {
    keys: HashMap<u64, u64>,
    sizes: Vec<u64>,
}

impl Puts {
    fn n(&self) -> u64 {
        self.sizes.len() as u64
    }
}

fn read_puts(path: &str) -> Res<Puts> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut puts = Puts {
        keys: HashMap::new(),
        sizes: Vec::new(),
    };
    for line in text.lines() {
        let (key, size) = line
            .split_once(' ')
            .ok_or_else(|| format!("{path}: {line:?}"))?;
        *puts.keys.entry(parse(key)?).or_default() += 1;
        puts.sizes.push(parse(size)?);
    }
    puts.sizes.sort_unstable();
    Ok(puts)
}

/// A row of the table: a figure of both sides and, for the checked ones, whether they
/// agree.
struct Row {
    name: String,
    db: String,
    zkv: String,
    ok: Option<bool>,
}

fn row(name: impl Into<String>, db: impl ToString, zkv: impl ToString, ok: Option<bool>) -> Row {
    Row {
        name: name.into(),
        db: db.to_string(),
        zkv: zkv.to_string(),
        ok,
    }
}

/// Whether `a` of `na` and `b` of `nb` are the same frequency: a two-sample binomial test.
fn agree(a: u64, na: u64, b: u64, nb: u64) -> bool {
    let (fa, fb) = (a as f64 / na as f64, b as f64 / nb as f64);
    let p = (a + b) as f64 / (na + nb) as f64;
    let sigma = (p * (1.0 - p) * (1.0 / na as f64 + 1.0 / nb as f64)).sqrt();
    (fa - fb).abs() <= SIGMAS * sigma + 2.0 / na.min(nb) as f64
}

/// A frequency row: counts of both sides, shown as fractions, checked.
fn share(name: impl Into<String>, (a, na): (u64, u64), (b, nb): (u64, u64)) -> Row {
    let f = |c: u64, n: u64| format!("{:.5}", c as f64 / n.max(1) as f64);
    row(name, f(a, na), f(b, nb), Some(agree(a, na, b, nb)))
}

fn compare(c: &MixGraphConfig, puts: [&String; 2], outs: [&String; 2]) -> Res<ExitCode> {
    let (db, zkv) = (read_puts(puts[0])?, read_puts(puts[1])?);
    if db.n() == 0 || zkv.n() == 0 {
        return Err("a side made no puts".into());
    }
    let mut rows = summary_rows(outs)?;
    rows.extend(value_rows(&db, &zkv));
    rows.extend(range_rows(c, &db, &zkv)?);
    // With other kinds in the mix, the keys a put can get are those whose draw also picks
    // a put, which leaves out the hottest keys of a range: look at the skew only when
    // every operation is a put.
    if c.ratios.get == 0.0 && c.ratios.seek == 0.0 {
        rows.extend(hot_key_rows(c, &db, &zkv)?);
    }
    Ok(print_table(&rows))
}

fn print_table(rows: &[Row]) -> ExitCode {
    println!("| figure | db_bench | zkv | check |");
    println!("|---|---|---|---|");
    let mut failed = 0;
    for r in rows {
        let check = match r.ok {
            None => "",
            Some(true) => "ok",
            Some(false) => {
                failed += 1;
                "FAIL"
            }
        };
        println!("| {} | {} | {} | {check} |", r.name, r.db, r.zkv);
    }
    let checked = rows.iter().filter(|r| r.ok.is_some()).count();
    println!(
        "mixgraph-check: {} passed, {failed} failed",
        checked - failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// db_bench's MixGraph summary, `( Gets:G Puts:P Seek:S, reads F in R found, avg size: V
/// value, L scan)`, as numbers: G, P, S, F, R, V, L.
fn summary_numbers(out: &str) -> Res<[f64; 7]> {
    let line = out
        .lines()
        .find(|l| l.starts_with("mixgraph") && l.contains("( Gets:"))
        .ok_or("no mixgraph summary line")?;
    let tail = &line[line.find("( Gets:").unwrap_or(0)..];
    // db_bench prints a mean over no operation as "-nan", which parses as NaN.
    let nums: Vec<f64> = tail
        .split([' ', ',', ':', '(', ')'])
        .filter_map(|t| t.parse().ok())
        .collect();
    nums.try_into()
        .map_err(|v: Vec<f64>| format!("summary line {line:?}: {} numbers", v.len()))
}

/// The two runs' summary lines: the shares of each kind (checked), and the reads found,
/// the mean value size and scan length (shown: they depend on what the store holds, and
/// scan lengths have no finite variance).
fn summary_rows(outs: [&String; 2]) -> Res<Vec<Row>> {
    let read = |p: &String| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
    let (d, z) = (
        summary_numbers(&read(outs[0])?)?,
        summary_numbers(&read(outs[1])?)?,
    );
    let total = |n: &[f64; 7]| (n[0] + n[1] + n[2]) as u64;
    let mut rows = Vec::new();
    for (i, kind) in ["gets", "puts", "seeks"].iter().enumerate() {
        let name = format!("share of {kind} (summary line)");
        rows.push(share(
            name,
            (d[i] as u64, total(&d)),
            (z[i] as u64, total(&z)),
        ));
    }
    let found = |n: &[f64; 7]| format!("{:.4}", n[3] / n[4].max(1.0));
    rows.push(row(
        "reads found (summary line)",
        found(&d),
        found(&z),
        None,
    ));
    rows.push(row("mean value size (summary line)", d[5], z[5], None));
    rows.push(row("mean scan length (summary line)", d[6], z[6], None));
    Ok(rows)
}

/// Value sizes: the mean (five standard errors), quantiles (shown) and the fraction at or
/// below a few sizes (checked).
fn value_rows(db: &Puts, zkv: &Puts) -> Vec<Row> {
    let (md, mz) = (mean(&db.sizes), mean(&zkv.sizes));
    let se = (var(&db.sizes, md) / db.n() as f64 + var(&zkv.sizes, mz) / zkv.n() as f64).sqrt();
    let mut rows = vec![
        row("puts", db.n(), zkv.n(), None),
        row(
            "value size: mean",
            format!("{md:.2}"),
            format!("{mz:.2}"),
            Some((md - mz).abs() <= SIGMAS * se),
        ),
    ];
    for q in [0.1, 0.25, 0.5, 0.75, 0.9, 0.99] {
        let name = format!("value size: p{}", q * 100.0);
        rows.push(row(
            name,
            quantile(&db.sizes, q),
            quantile(&zkv.sizes, q),
            None,
        ));
    }
    for s in [10, 16, 24, 32, 48, 64, 128, 256, 512] {
        let at_most = |p: &Puts| (p.sizes.partition_point(|&v| v <= s) as u64, p.n());
        rows.push(share(
            format!("value size <= {s}"),
            at_most(db),
            at_most(zkv),
        ));
    }
    rows
}

fn mean(v: &[u64]) -> f64 {
    v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
}

fn var(v: &[u64], m: f64) -> f64 {
    v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / v.len() as f64
}

fn quantile(sorted: &[u64], q: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Keys per range, and the range a key lies in (`keyrange_num` for keys past the last).
fn range_of(c: &MixGraphConfig, key: u64) -> usize {
    let size = c.num / c.keyrange_num;
    (key / size).min(c.keyrange_num) as usize
}

/// The share of the puts in each key range, in key-space order (checked), labelled with
/// the x of f(x) each range was given when the key ranges are used.
fn range_rows(c: &MixGraphConfig, db: &Puts, zkv: &Puts) -> Res<Vec<Row>> {
    let count = |p: &Puts| {
        let mut counts = vec![0u64; c.keyrange_num as usize + 1];
        for (&k, &n) in &p.keys {
            counts[range_of(c, k)] += n;
        }
        counts
    };
    let xs = range_xs(c)?;
    let (cd, cz) = (count(db), count(zkv));
    let mut rows = Vec::new();
    for (i, (&a, &b)) in cd.iter().zip(&cz).enumerate() {
        if a + b == 0 && i == c.keyrange_num as usize {
            continue; // no key past the ranges, on either side
        }
        let label = match xs.get(i) {
            Some(x) => format!("key range {i} (x = {x})"),
            None if i == c.keyrange_num as usize => "keys past the last range".to_string(),
            None => format!("key range {i}"),
        };
        rows.push(share(label, (a, db.n()), (b, zkv.n())));
    }
    Ok(rows)
}

/// The x of each range in key-space order, if the key ranges are used.
fn range_xs(c: &MixGraphConfig) -> Res<Vec<i64>> {
    Ok(match c.key_model().map_err(|e| e.to_string())? {
        zkv_bench::mixgraph::KeyModel::Ranges { ranges, .. } => {
            ranges.ranges().iter().map(|r| r.x).collect()
        }
        _ => Vec::new(),
    })
}

/// The skew inside the hottest range: the share of its puts that went to the keys of the
/// power law's seeds 1 to 5, and to those of its first 10, 100 and 1000 seeds (keys known
/// in advance, so neither side's sample picks them; checked), and the share of its most
/// written 1% of keys (shown).
fn hot_key_rows(c: &MixGraphConfig, db: &Puts, zkv: &Puts) -> Res<Vec<Row>> {
    let g = MixGraphGenerator::new(
        MixGraphConfig {
            reads: 1,
            ..c.clone()
        },
        0,
    )
    .map_err(|e| e.to_string())?;
    // The keys looked at: those from `base` on, `span` of them (all, over the whole key
    // space, whose power-law keys may lie past it as db_bench's signed remainder puts
    // them), among `size` possible keys.
    let (base, span, size, label) = match g.key_model() {
        zkv_bench::mixgraph::KeyModel::Ranges { ranges, .. } => {
            let hot = (0..ranges.ranges().len())
                .max_by_key(|&i| ranges.ranges()[i].slots)
                .unwrap_or(0);
            let size = ranges.size() as u64;
            (hot as u64 * size, size, size, format!("range {hot}"))
        }
        zkv_bench::mixgraph::KeyModel::Power { .. } => (0, u64::MAX, c.num, "key space".into()),
        zkv_bench::mixgraph::KeyModel::Uniform => return Ok(Vec::new()),
        other => return Err(format!("no hot-key check for the key model {other:?}")),
    };
    let in_hot = |p: &Puts| -> HashMap<u64, u64> {
        p.keys
            .iter()
            .filter(|(&k, _)| k.wrapping_sub(base) < span)
            .map(|(&k, &n)| (k - base, n))
            .collect()
    };
    let (hd, hz) = (in_hot(db), in_hot(zkv));
    let (nd, nz) = (hd.values().sum::<u64>(), hz.values().sum::<u64>());
    let mut rows = Vec::new();
    for seed in 1..=5u64 {
        let key = seed_offset(g.key_model(), c.num, size, seed);
        let name = format!("{label}: share of the key of power-law seed {seed}");
        let at = |h: &HashMap<u64, u64>| h.get(&key).copied().unwrap_or(0);
        rows.push(share(name, (at(&hd), nd), (at(&hz), nz)));
    }
    // The law's shape further out: the keys of the first 10, 100, 1000 seeds together.
    for last in [10u64, 100, 1000] {
        let keys: HashSet<u64> = (1..=last)
            .map(|s| seed_offset(g.key_model(), c.num, size, s))
            .collect();
        let name = format!("{label}: share of the keys of seeds 1 to {last}");
        let sum = |h: &HashMap<u64, u64>| keys.iter().filter_map(|k| h.get(k)).sum::<u64>();
        rows.push(share(name, (sum(&hd), nd), (sum(&hz), nz)));
    }
    let top = |h: &HashMap<u64, u64>, n: u64| {
        let mut v: Vec<u64> = h.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let k = (size as usize).div_ceil(100);
        format!(
            "{:.4}",
            v.iter().take(k).sum::<u64>() as f64 / n.max(1) as f64
        )
    };
    let name = format!("{label}: share of its most written 1% of keys");
    rows.push(row(name, top(&hd, nd), top(&hz, nz), None));
    Ok(rows)
}

/// Where the key of power-law seed `seed` lies inside its range (or the key space): the
/// twister's first output for the seed, reduced as db_bench reduces it.
fn seed_offset(model: &zkv_bench::mixgraph::KeyModel, num: u64, size: u64, seed: u64) -> u64 {
    let out = zkv_bench::gen::mt64::mt19937_64_first(seed);
    match model {
        zkv_bench::mixgraph::KeyModel::Power { .. } => (out as i64 % num as i64) as u64,
        _ => out % size,
    }
}
