//! The inverse CDFs mixgraph draws value sizes, scan lengths and power-law keys with
//! (RocksDB db_bench_tool.cc, MixGraph: `ParetoCdfInversion`, `PowerCdfInversion`), and
//! db_bench's conversion of their results to integers.
//!
//! Both inverses take db_bench's `u` in [0, 1) and round the quantile up. The
//! arithmetic is done in the same order with the same libm calls (`pow`, `log`), so a
//! given `u` gives db_bench's integer exactly.

/// A generalized Pareto distribution: location `theta`, shape `k`, scale `sigma` (the
/// density (1/σ)(1 + k(x − θ)/σ)^−(1/k + 1); the exponential distribution when k = 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pareto {
    /// Location θ.
    pub theta: f64,
    /// Shape k.
    pub k: f64,
    /// Scale σ.
    pub sigma: f64,
}

impl Pareto {
    /// The x whose survival P(X > x) is `u`. db_bench feeds the uniform `u` where the
    /// textbook quantile takes 1 − u; both are uniform, so the law drawn is the same.
    pub fn quantile(&self, u: f64) -> f64 {
        if self.k == 0.0 {
            self.theta - self.sigma * u.ln()
        } else {
            self.theta + self.sigma * (u.powf(-self.k) - 1.0) / self.k
        }
    }

    /// db_bench's integer draw: the quantile rounded up.
    pub fn inverse(&self, u: f64) -> i64 {
        ceil_i64(self.quantile(u))
    }
}

/// The power law F(x) = a·x^b inverted and rounded up: db_bench's key seed.
pub fn power_inverse(u: f64, a: f64, b: f64) -> i64 {
    ceil_i64((u / a).powf(1.0 / b))
}

/// db_bench's `static_cast<int64_t>(ceil(x))`.
pub fn ceil_i64(x: f64) -> i64 {
    trunc_i64(x.ceil())
}

/// C++'s `static_cast<int64_t>` of a double as x86-64 executes it: truncation toward zero,
/// and i64::MIN (the "integer indefinite" of `cvttsd2si`) for NaN and for values outside
/// the range. C++ leaves those cases undefined; db_bench meets them at u = 0, where the
/// Pareto quantile is infinite, and its clamps then act on i64::MIN.
pub fn trunc_i64(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generalized Pareto CDF in closed form.
    fn pareto_cdf(p: &Pareto, x: f64) -> f64 {
        let z = (x - p.theta) / p.sigma;
        if p.k == 0.0 {
            1.0 - (-z).exp()
        } else {
            1.0 - (1.0 + p.k * z).powf(-1.0 / p.k)
        }
    }

    #[test]
    fn pareto_quantile_inverts_the_closed_form_cdf() {
        let laws = [
            Pareto {
                theta: 0.0,
                k: 0.2615,
                sigma: 25.45,
            },
            Pareto {
                theta: 0.0,
                k: 2.517,
                sigma: 14.236,
            },
            Pareto {
                theta: 5.0,
                k: 0.0,
                sigma: 3.0,
            },
            Pareto {
                theta: 0.0,
                k: -0.25,
                sigma: 10.0,
            },
        ];
        for p in laws {
            for u in [0.001, 0.1, 0.25, 0.5, 0.9, 0.999] {
                let x = p.quantile(u);
                let f = pareto_cdf(&p, x);
                assert!((f - (1.0 - u)).abs() < 1e-9, "{p:?} u {u}: F(x) = {f}");
                assert_eq!(p.inverse(u), x.ceil() as i64);
            }
        }
    }

    #[test]
    fn pareto_known_points() {
        // θ = 0, k = 1, σ = 1: x = 1/u − 1.
        let p = Pareto {
            theta: 0.0,
            k: 1.0,
            sigma: 1.0,
        };
        assert_eq!((p.inverse(0.5), p.inverse(0.25), p.inverse(0.2)), (1, 3, 4));
        // Exponential with mean 10: the median is 10·ln 2 = 6.93.
        let e = Pareto {
            theta: 0.0,
            k: 0.0,
            sigma: 10.0,
        };
        assert_eq!(e.inverse(0.5), 7);
        // u = 0: an infinite quantile, which db_bench's cast turns into i64::MIN.
        assert_eq!(p.inverse(0.0), i64::MIN);
        assert_eq!(e.inverse(0.0), i64::MIN);
    }

    #[test]
    fn power_inverse_inverts_a_x_to_the_b() {
        for (a, b) in [(0.002312f64, 0.3467f64), (0.5, 2.0), (1.0, 1.0)] {
            for u in [0.001, 0.2, 0.5, 0.99] {
                let x = (u / a).powf(1.0 / b);
                assert!((a * x.powf(b) - u).abs() < 1e-12, "a {a} b {b} u {u}");
                assert_eq!(power_inverse(u, a, b), x.ceil() as i64);
            }
        }
        // a = 0.5, b = 2: x = sqrt(2u).
        assert_eq!(power_inverse(0.125, 0.5, 2.0), 1);
        assert_eq!(power_inverse(0.5, 0.5, 2.0), 1);
        assert_eq!(power_inverse(0.98, 0.5, 2.0), 2);
        assert_eq!(power_inverse(0.0, 0.5, 2.0), 0);
    }

    #[test]
    fn casts_behave_as_on_x86_64() {
        assert_eq!(trunc_i64(-2.7), -2);
        assert_eq!(trunc_i64(2.7), 2);
        assert_eq!(trunc_i64(f64::NAN), i64::MIN);
        assert_eq!(trunc_i64(f64::INFINITY), i64::MIN);
        assert_eq!(trunc_i64(f64::NEG_INFINITY), i64::MIN);
        assert_eq!(trunc_i64(9.3e18), i64::MIN);
        assert_eq!(trunc_i64(-9_223_372_036_854_775_808.0), i64::MIN);
        assert_eq!(ceil_i64(1.0000001), 2);
    }
}
