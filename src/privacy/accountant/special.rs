//! Log-space helpers shared by the accountants: stable log-add/sub, the log of the normal CDF and
//! of erfc, log binomial coefficients. Every RDP/PLD formula is evaluated through these so that
//! nothing overflows or silently turns into NaN.
use statrs::function::factorial::ln_binomial;

/// The complementary error function of the platform's C math library (C99 `erfc`; glibc and musl
/// both use fdlibm's rational approximations, < 1 ulp, the algorithm the `libm` crate ports).
/// The `libm` crate builds unoptimised in our dev profile (dependencies at opt-level 0), where
/// its erfc was the largest single cost of the PLD discretisation (two calls per grid point).
pub fn erfc(x: f64) -> f64 {
    extern "C" {
        #[link_name = "erfc"]
        fn c_erfc(x: f64) -> f64;
    }
    // SAFETY: erfc is a pure C99 function of one double, defined for every input (NaN included).
    unsafe { c_erfc(x) }
}

/// log(e^a + e^b) without overflow.
pub fn log_add(a: f64, b: f64) -> f64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// log(e^a - e^b) for a >= b; `None` when the difference would be negative (a < b).
pub fn log_sub(a: f64, b: f64) -> Option<f64> {
    if a < b {
        return None;
    }
    if b == f64::NEG_INFINITY {
        return Some(a);
    }
    if a == b {
        return Some(f64::NEG_INFINITY);
    }
    Some(a + (-(b - a).exp()).ln_1p())
}

/// log(sum_i e^{x_i}) of a slice (-inf for an empty slice).
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// log Phi(x), the log of the standard normal CDF, accurate in both tails (same regimes as
/// scipy.special.log_ndtr: log1p of the upper tail for x > 6, the asymptotic series of Mills'
/// ratio for x < -20, erfc in between).
pub fn log_ndtr(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x > 6.0 {
        return (-0.5 * erfc(x / std::f64::consts::SQRT_2)).ln_1p();
    }
    if x > -20.0 {
        return (0.5 * erfc(-x / std::f64::consts::SQRT_2)).ln();
    }
    // Phi(x) = phi(x)/(-x) * (1 - 1/x^2 + 3/x^4 - 15/x^6 + ...), x -> -inf (Abramowitz-Stegun 26.2.12).
    let x2 = x * x;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..10 {
        term *= -((2 * k - 1) as f64) / x2;
        sum += term;
    }
    -0.5 * x2 - 0.5 * (2.0 * std::f64::consts::PI).ln() - (-x).ln() + sum.ln()
}

/// log erfc(x) = log 2 + log Phi(-sqrt(2) x).
pub fn log_erfc(x: f64) -> f64 {
    std::f64::consts::LN_2 + log_ndtr(-x * std::f64::consts::SQRT_2)
}

/// Phi(x), the standard normal CDF.
pub fn ndtr(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// log C(n, k) for integers.
pub fn ln_choose(n: u64, k: u64) -> f64 {
    if k > n {
        f64::NEG_INFINITY
    } else {
        ln_binomial(n, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ndtr_matches_direct_and_asymptotic_regimes() {
        // Reference values: Python math.erfc in double precision (no underflow in this range).
        let cases = [
            (0.0, -std::f64::consts::LN_2),
            (-1.0, -1.8410216450092634),
            (2.0, -0.02301290932896349),
            (-25.0, -316.63940800802015),
            (-19.9, -201.9171677073326),
            (7.0, -1.2798125438866539e-12),
        ];
        for (x, want) in cases {
            let got = log_ndtr(x);
            assert!(((got - want) / want).abs() < 1e-12, "log_ndtr({x}) = {got}, want {want}");
        }
        // Continuity across the -20 switch.
        let (a, b) = (log_ndtr(-20.0 + 1e-9), log_ndtr(-20.0 - 1e-9));
        assert!((a - b).abs() < 1e-6);
    }

    #[test]
    fn erfc_agrees_with_the_libm_crate() {
        for i in -400..=400 {
            let x = i as f64 * 0.07 + 0.003;
            let (a, b) = (erfc(x), libm::erfc(x));
            assert!((a - b).abs() <= 2.0 * f64::EPSILON * b.abs() || a == b, "erfc({x}): {a} vs {b}");
        }
    }

    #[test]
    fn log_add_sub_are_inverse() {
        let (a, b) = (3.0_f64, 1.5_f64);
        let s = log_add(a, b);
        assert!((s - (a.exp() + b.exp()).ln()).abs() < 1e-14);
        assert!((log_sub(s, b).unwrap() - a).abs() < 1e-12);
        assert!(log_sub(b, a).is_none());
        assert_eq!(log_add(f64::NEG_INFINITY, 2.0), 2.0);
    }
}
