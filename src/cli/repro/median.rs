//! The median of a threaded run's repetitions (`zkv repro --repeat`): one report whose
//! every number is the median of that number over the repetitions, so that each figure
//! made of threaded runs shows the middle of their spread without knowing there was one.

use serde_json::{Map, Number, Value};

/// Field by field: a number is the median of the numbers at its place (the mean of the
/// middle two for an even count); an object or an array of the same length everywhere
/// is taken apart the same way; anything else (a string, arrays of different lengths) is
/// the first report's.
pub fn median_report(reports: &[&Value]) -> Value {
    let Some(first) = reports.first() else {
        return Value::Null;
    };
    match first {
        Value::Number(_) => median_number(reports).unwrap_or_else(|| (*first).clone()),
        Value::Object(map) => {
            let mut out = Map::new();
            for key in map.keys() {
                let at: Vec<&Value> = reports.iter().filter_map(|r| r.get(key)).collect();
                out.insert(key.clone(), median_report(&at));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let same_len = reports
                .iter()
                .all(|r| r.as_array().is_some_and(|a| a.len() == items.len()));
            if !same_len {
                return (*first).clone();
            }
            let merged = (0..items.len())
                .map(|i| {
                    let at: Vec<&Value> = reports.iter().filter_map(|r| r.get(i)).collect();
                    median_report(&at)
                })
                .collect();
            Value::Array(merged)
        }
        _ => (*first).clone(),
    }
}

/// The median of the numbers among `values`; none if there are none. A whole median of
/// whole numbers stays an integer, as a count or a level is read as one.
fn median_number(values: &[&Value]) -> Option<Value> {
    let mut v: Vec<f64> = values.iter().filter_map(|v| v.as_f64()).collect();
    let mid = median(&mut v)?;
    let whole = values.iter().all(|v| v.is_u64()) && mid.fract() == 0.0;
    if whole && mid <= u64::MAX as f64 {
        // Exact: `mid` is a whole number within u64's range, the median of u64 values.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        return Some(Value::from(mid as u64));
    }
    Number::from_f64(mid).map(Value::Number)
}

/// The median of `v` (sorted in place); none when it is empty.
pub fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_medians_and_the_rest_is_the_first_reports() {
        let a = json!({"ops": 10, "name": "a", "lat": {"p99": 5.0}, "ts": [1, 2], "x": [1]});
        let b = json!({"ops": 30, "name": "b", "lat": {"p99": 1.0}, "ts": [3, 4], "x": [1, 2]});
        let c = json!({"ops": 20, "name": "c", "lat": {"p99": 3.0}, "ts": [5, 0], "x": [1]});
        let m = median_report(&[&a, &b, &c]);
        assert_eq!(m["ops"].as_u64(), Some(20));
        assert_eq!(m["name"], "a");
        assert_eq!(m["lat"]["p99"].as_f64(), Some(3.0));
        assert_eq!(m["ts"][0].as_f64(), Some(3.0));
        assert_eq!(m["ts"][1].as_f64(), Some(2.0));
        assert_eq!(m["x"], json!([1]));
        let even = median_report(&[&a, &b]);
        assert_eq!(even["ops"].as_u64(), Some(20));
        let halves = median_report(&[&json!(1), &json!(2)]);
        assert_eq!(halves.as_f64(), Some(1.5));
    }

    #[test]
    fn median_of_nothing_is_none() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [2.0, 1.0, 9.0, 4.0]), Some(3.0));
    }
}
