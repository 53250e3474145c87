//! Test helpers: exact probabilities of the generators' methods and sample-size tolerances.

/// Largest accepted deviation, in standard deviations of the sample frequency. With a few
/// hundred comparisons per test run, 5 sigma keeps a false failure below one in 10^4.
pub const SIGMAS: f64 = 5.0;

/// Asserts that `count` hits out of `n` draws agree with probability `p` within
/// `SIGMAS` binomial standard deviations (plus one count, for tiny `p`).
pub fn assert_close(count: u64, n: usize, p: f64, label: &str) {
    let f = count as f64 / n as f64;
    let sigma = (p * (1.0 - p) / n as f64).sqrt();
    let tol = SIGMAS * sigma + 1.0 / n as f64;
    assert!(
        (f - p).abs() <= tol,
        "{label}: frequency {f:.6} vs expected {p:.6} (tolerance {tol:.6})"
    );
}

/// Probabilities of the Zipf law over `n` items: (1 / (i+1)^theta) / zeta(n).
pub fn zipf_law(n: i64, theta: f64) -> Vec<f64> {
    let zeta = super::zipfian::zeta_static(n, theta);
    (0..n)
        .map(|i| 1.0 / ((i + 1) as f64).powf(theta) / zeta)
        .collect()
}

/// Exact probabilities of items `0..upto` under Gray's method as YCSB computes it: drawing
/// out of `item_count` items, with eta derived from `eta_items` and the given `zetan`.
/// Items 0 and 1 come from the two threshold tests; item k >= 2 from the interval of u
/// where floor(item_count * (eta*u - eta + 1)^alpha) = k, which inverts in closed form.
pub fn gray_probabilities(
    item_count: i64,
    eta_items: i64,
    theta: f64,
    zetan: f64,
    upto: usize,
) -> Vec<f64> {
    let zeta2 = super::zipfian::zeta_static(2, theta);
    let eta = (1.0 - (2.0 / eta_items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
    let lo = (1.0 + 0.5f64.powf(theta)) / zetan;
    // u from which the formula yields at least k.
    let u_at = |k: usize| -> f64 {
        let r = (k as f64 / item_count as f64).powf(1.0 - theta);
        (1.0 - (1.0 - r) / eta).clamp(lo, 1.0)
    };
    let mut p: Vec<f64> = (0..upto).map(|k| u_at(k + 1) - u_at(k)).collect();
    if upto > 0 {
        p[0] += 1.0 / zetan;
    }
    if upto > 1 {
        p[1] += 0.5f64.powf(theta) / zetan;
    }
    p
}

/// Pearson's chi-square of `counts` against equal expected counts.
pub fn chi_square_uniform(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    let e = n as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

/// Upper bound for a chi-square with `df` degrees of freedom: mean + 5 standard deviations
/// (the normal approximation is good at the hundreds of degrees used here).
pub fn chi_square_bound(df: usize) -> f64 {
    df as f64 + SIGMAS * (2.0 * df as f64).sqrt()
}
