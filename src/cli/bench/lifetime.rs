//! The report of lifetime prediction (Prophet's accuracy figures): the JSON `lifetime`
//! section and the lines `zkv bench` prints, from the engine's [`LifetimeSummary`].
//!
//! - `accuracy`: the share of dead SSTs whose deletion tick was predicted within ±20
//!   FC-ticks (the paper's 79 %);
//! - `cases`: the paper's Table II, predicted case (P1, P2A, P2B, P3) × real death (D1: by
//!   its own level's compaction, D2: by the level above), each cell's accuracy within the
//!   error bar 5 × (level + 1) of the file's level, and how many were moved down first;
//! - `per_level`: accuracy within each level's error bar, and the mean real lifetime;
//! - the histograms of real lifetime and of error (predicted − real), Fig. 5;
//! - `table1`: the files that lived over 3 × their prediction, by real lifetime in ticks
//!   and in seconds (the same prediction in seconds), and the clock's ticks and seconds
//!   since the open (Table I: the experiment picks the gap).

use serde_json::{json, Map, Value};
use zkv_engine::db::LifetimeSummary;
use zkv_engine::lifetime::{Case, Death, ERROR_BIN, LIFETIME_BIN, MISS_FACTOR};

/// The cells of the case table, in the paper's order.
fn cells() -> impl Iterator<Item = (Case, Death)> {
    Case::ALL
        .into_iter()
        .flat_map(|c| [Death::D1, Death::D2].map(move |d| (c, d)))
}

fn share(part: u64, whole: u64) -> f64 {
    match whole {
        0 => 0.0,
        n => part as f64 / n as f64,
    }
}

pub fn to_json(l: &LifetimeSummary) -> Value {
    let s = &l.stats;
    let cases: Map<String, Value> = cells()
        .map(|(c, d)| {
            let cell = s.cases.get(&(c, d)).copied().unwrap_or_default();
            let v = json!({
                "count": cell.count, "correct": cell.correct,
                "accuracy": share(cell.correct, cell.count), "moved": cell.moved,
            });
            (format!("{}_{}", c.name(), d.name()), v)
        })
        .collect();
    let per_level: Vec<Value> = s
        .per_level
        .iter()
        .enumerate()
        .filter(|(_, &(n, _, _))| n > 0)
        .map(|(level, &(n, correct, lifetime_sum))| {
            json!({
                "level": level, "deleted": n, "correct": correct,
                "error_bar": 5 * (level + 1), "accuracy": share(correct, n),
                "mean_lifetime": lifetime_sum as f64 / n as f64,
            })
        })
        .collect();
    let lifetimes: Vec<[u64; 2]> = s.lifetimes.iter().map(|(&k, &v)| [k, v]).collect();
    let errors: Vec<(i64, u64)> = s.errors.iter().map(|(&k, &v)| (k, v)).collect();
    let misses = |m: &std::collections::BTreeMap<u64, u64>| -> Vec<[u64; 2]> {
        m.iter().map(|(&k, &v)| [k, v]).collect()
    };
    let table1 = json!({
        "factor": MISS_FACTOR, "timed": s.timed, "ticks": l.ticks_since_open,
        "seconds": l.seconds_since_open, "tick_misses": misses(&s.tick_misses),
        "ms_misses": misses(&s.ms_misses),
    });
    json!({
        "accuracy": s.accuracy(), "deleted": s.deleted, "correct": s.correct,
        "tolerance_ticks": 20, "ticks": l.clock.tick, "cycle": l.cycle,
        "compacting_levels": l.clock.compacting_levels, "deaths_per_tick": l.deaths_per_tick,
        "cases": cases, "per_level": per_level,
        "lifetime_histogram": { "bin": LIFETIME_BIN, "counts": lifetimes },
        "error_histogram": { "bin": ERROR_BIN, "counts": errors },
        "table1": table1,
    })
}

/// The summary line and the case table.
pub fn lines(l: &LifetimeSummary) -> Vec<String> {
    let s = &l.stats;
    let mut out = vec![format!(
        "Lifetime prediction: {} SSTs died, {:.1}% within ±20 FC-ticks (clock {} ticks, \
         C = {}, {:.2} deaths per tick)",
        s.deleted,
        100.0 * s.accuracy(),
        l.clock.tick,
        l.cycle,
        l.deaths_per_tick
    )];
    if s.deleted == 0 {
        return out;
    }
    out.push(format!(
        "{:<8} {:>9} {:>9} {:>9} {:>7}",
        "case", "count", "in bar", "accuracy", "moved"
    ));
    for (c, d) in cells() {
        let cell = s.cases.get(&(c, d)).copied().unwrap_or_default();
        out.push(format!(
            "{:<8} {:>9} {:>9} {:>8.1}% {:>7}",
            format!("{}·{}", c.name(), d.name()),
            cell.count,
            cell.correct,
            100.0 * share(cell.correct, cell.count),
            cell.moved
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkv_engine::lifetime::{Clock, FileLifetime, LifetimeStats, Outcome};

    #[test]
    fn json_has_every_cell_and_the_histograms() {
        let mut stats = LifetimeStats::default();
        let file = FileLifetime {
            created: 1,
            lifetime: 10,
            case: Case::C1,
            level: 1,
            moved: false,
        };
        stats.add(&Outcome {
            number: 7,
            file,
            died: 12,
            death: Death::D1,
            level: 1,
        });
        let l = LifetimeSummary {
            clock: Clock {
                tick: 12,
                ..Clock::default()
            },
            cycle: 4,
            deaths_per_tick: 0.5,
            ticks_since_open: 12,
            seconds_since_open: 1.5,
            stats,
        };
        let v = to_json(&l);
        assert_eq!(v["accuracy"], json!(1.0));
        assert_eq!(v["cases"].as_object().map(|m| m.len()), Some(8));
        assert_eq!(v["cases"]["P1_D1"]["count"], json!(1));
        assert_eq!(v["per_level"][0]["level"], json!(1));
        assert_eq!(v["per_level"][0]["error_bar"], json!(10));
        assert_eq!(v["lifetime_histogram"]["counts"], json!([[10, 1]]));
        assert_eq!(v["error_histogram"]["counts"], json!([[-10, 1]]));
        let text = lines(&l).join("\n");
        assert!(text.contains("100.0% within ±20 FC-ticks"), "{text}");
        assert!(text.contains("P1·D1"), "{text}");
    }
}
