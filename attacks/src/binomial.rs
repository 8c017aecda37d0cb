//! Exact binomial tails and one-sided Clopper-Pearson bounds, for any count up to n = 10^9 and any
//! significance down to 1e-15, in bounded time.
//!
//! Why not a regularised incomplete beta from a crate: statrs's `Beta::inverse_cdf` never returns
//! for shapes like Beta(1, 7.5e6) and loses accuracy (on the unsound side) above shapes of ~1e4;
//! the small special-function crates implement the same series and continued fractions (AS 63,
//! Numerical Recipes' `betai`), whose iteration counts grow with the shapes and whose log-gamma
//! differences cancel catastrophically at n = 10^9. A TOMS 708 port would fit but none is kept
//! on crates.io. So this module solves on the binomial tail itself:
//!
//! - the probability mass is Loader's saddle-point form (the one R's `dbinom` uses): Stirling
//!   remainders and the deviance `bd0` instead of log-gamma differences, so ln P[X = k] is exact
//!   to a few ulp of its (small) value even at n = 10^9;
//! - a tail is summed from its first term outwards on the side away from the mean, where the terms
//!   fall at least geometrically; the far side is 1 minus the near side, which is then below 1/2.
//!   The sum stops once a term no longer changes it, after at most ~10 standard deviations of the
//!   binomial (about 1.6e5 terms at n = 10^9, p = 1/2) and never more than n terms;
//! - the bound is the root in u = ln p of ln P(u) = ln alpha: Newton steps (the derivative is one
//!   mass term in closed form) inside a bracket that every evaluation shrinks, falling back to
//!   bisection whenever a step leaves it, capped at `MAX_STEPS` steps. Solving in ln p keeps both
//!   p near 0 and q = 1 - p near 1 to full relative precision.
//!
//! k = 0 and k = n have closed forms (1 - alpha^(1/n) and alpha^(1/n)), computed with `exp_m1`.

use statrs::distribution::{ContinuousCDF, Normal};

/// The most Newton/bisection steps one bound takes; bisection alone on u in [-750, 0] reaches
/// one ulp well within it, so the cap is never what ends a solve.
const MAX_STEPS: usize = 200;

/// One-sided Clopper-Pearson lower bound: with probability at least 1 - alpha the success rate
/// is at least this, after `k` successes in `n` trials (the p with P[Bin(n, p) >= k] = alpha).
/// 0 when k = 0 (or n = 0, or alpha <= 0).
pub fn clopper_pearson_lower(k: usize, n: usize, alpha: f64) -> f64 {
    check_alpha(alpha);
    assert!(k <= n, "clopper_pearson_lower: {k} successes of {n} trials");
    if k == 0 || alpha <= 0.0 {
        return 0.0;
    }
    let ln_alpha = alpha.ln();
    if k == n {
        // P[X >= n] = p^n.
        return (ln_alpha / n as f64).exp();
    }
    let (k_f, n_f) = (k as f64, n as f64);
    // P[X >= k] <= C(n, k) p^k <= (e n p / k)^k, so at this p the tail is at most alpha.
    let lo = ln_alpha / k_f - (n_f / k_f).ln() - 1.0 - 1e-9;
    // The median of Bin(n, k/n) is k, so the tail there is at least 1/2.
    let hi = if alpha < 0.5 { (k_f / n_f).ln() } else { 0.0 };
    let guess = wilson_guess(k_f - 0.5, n_f, alpha, -1.0);
    solve(|u| tail_at_least(k, n, u), true, ln_alpha, lo.max(LN_MIN_P), hi, guess).exp()
}

/// One-sided Clopper-Pearson upper bound: the p with P[Bin(n, p) <= k] = alpha; 1 when k = n
/// (or n = 0), 1 - alpha^(1/n) when k = 0.
pub fn clopper_pearson_upper(k: usize, n: usize, alpha: f64) -> f64 {
    check_alpha(alpha);
    assert!(k <= n, "clopper_pearson_upper: {k} successes of {n} trials");
    if k == n || alpha <= 0.0 {
        return 1.0;
    }
    let ln_alpha = alpha.ln();
    if k == 0 {
        // P[X <= 0] = (1 - p)^n.
        return -(ln_alpha / n as f64).exp_m1();
    }
    let (k_f, n_f) = (k as f64, n as f64);
    // The median of Bin(n, k/n) is k, so P[X <= k] >= 1/2 there.
    let lo = if alpha < 0.5 { (k_f / n_f).ln() } else { LN_MIN_P };
    // P[X <= k] <= q^(n-k) sum_{j<=k} C(n, j) <= q^(n-k) (e n / k)^k: at this q it is <= alpha.
    let ln_q_hi = (ln_alpha - k_f * ((n_f / k_f).ln() + 1.0)) / (n_f - k_f) - 1e-9;
    let hi = ln_1m_exp(ln_q_hi);
    let guess = wilson_guess(k_f + 0.5, n_f, alpha, 1.0);
    solve(|u| tail_at_most(k, n, u), false, ln_alpha, lo, hi, guess).exp()
}

/// ln P[Bin(n, p) >= k].
pub fn ln_tail_at_least(k: usize, n: usize, p: f64) -> f64 {
    assert!((0.0..=1.0).contains(&p), "ln_tail_at_least: p = {p} is not a probability");
    if k == 0 {
        return 0.0;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    tail_at_least(k, n, p.ln()).0
}

/// ln P[Bin(n, p) <= k].
pub fn ln_tail_at_most(k: usize, n: usize, p: f64) -> f64 {
    assert!((0.0..=1.0).contains(&p), "ln_tail_at_most: p = {p} is not a probability");
    if k >= n {
        return 0.0;
    }
    if p == 0.0 {
        return 0.0;
    }
    tail_at_most(k, n, p.ln()).0
}

/// ln P[Bin(n, p) = k], from Loader's saddle-point form.
pub fn ln_mass(k: usize, n: usize, p: f64) -> f64 {
    assert!((0.0..=1.0).contains(&p), "ln_mass: p = {p} is not a probability");
    if k > n {
        return f64::NEG_INFINITY;
    }
    if p == 0.0 {
        return if k == 0 { 0.0 } else { f64::NEG_INFINITY };
    }
    ln_pmf(k, n, p.ln())
}

/// Below this ln p the tails are all 0 or 1 in f64 (e^-745 is the smallest subnormal).
const LN_MIN_P: f64 = -745.0;

fn check_alpha(alpha: f64) {
    assert!(alpha < 1.0 && !alpha.is_nan(), "a Clopper-Pearson bound needs a significance level below 1, got {alpha}");
}

/// Wilson's score bound with a continuity-corrected count: a start for Newton, in ln p.
fn wilson_guess(k: f64, n: f64, alpha: f64, sign: f64) -> f64 {
    let z = -Normal::new(0.0, 1.0).expect("standard normal").inverse_cdf(alpha.min(0.5));
    let k = k.clamp(0.0, n);
    let centre = k + z * z / 2.0;
    let spread = z * (k * (n - k) / n + z * z / 4.0).sqrt();
    ((centre + sign * spread) / (n + z * z)).ln()
}

/// The root in u of ln P(u) = ln_alpha, P monotone in u (increasing when `increasing`) with the
/// root inside [lo, hi]; `eval` gives ln P and its derivative in u.
fn solve(
    eval: impl Fn(f64) -> (f64, f64),
    increasing: bool,
    ln_alpha: f64,
    mut lo: f64,
    mut hi: f64,
    guess: f64,
) -> f64 {
    let inside = |u: f64, lo: f64, hi: f64| u.is_finite() && u >= lo && u <= hi;
    let mut u = if inside(guess, lo, hi) { guess } else { 0.5 * (lo + hi) };
    for _ in 0..MAX_STEPS {
        let (ln_p, slope) = eval(u);
        let h = ln_p - ln_alpha;
        if h == 0.0 {
            return u;
        }
        // Below the root when P is too small and P increases with u, or too large and decreases.
        if (h < 0.0) == increasing {
            lo = u;
        } else {
            hi = u;
        }
        let newton = u - h / slope;
        if inside(newton, lo, hi) {
            // Newton converges quadratically: once its step is within a few ulp, so is u.
            if (newton - u).abs() <= 4.0 * f64::EPSILON * u.abs() {
                return newton;
            }
            u = newton;
        } else {
            u = 0.5 * (lo + hi);
            if hi - lo <= 4.0 * f64::EPSILON * lo.abs().max(hi.abs()) {
                return u;
            }
        }
    }
    u
}

/// (ln P[X >= k], d ln P / du) for X ~ Bin(n, e^u), 1 <= k <= n.
fn tail_at_least(k: usize, n: usize, u: f64) -> (f64, f64) {
    let p = u.exp();
    let ln_mass = ln_pmf(k, n, u);
    let ln_tail = if k as f64 > n as f64 * p {
        ln_mass + sum_upwards(k, n, u).ln()
    } else {
        // The near side P[X <= k-1] < 1/2 (median of Bin(n, p) >= floor(np) >= k).
        ln_1m_exp(ln_mass_at_most(k - 1, n, u))
    };
    (ln_tail, k as f64 * (ln_mass - ln_tail).exp())
}

/// (ln P[X <= k], d ln P / du) for X ~ Bin(n, e^u), 0 <= k < n.
fn tail_at_most(k: usize, n: usize, u: f64) -> (f64, f64) {
    let ln_q = ln_1m_exp(u);
    let ln_mass = ln_pmf(k, n, u);
    let ln_tail = ln_mass_at_most(k, n, u);
    (ln_tail, -((n - k) as f64) * (u - ln_q + ln_mass - ln_tail).exp())
}

/// ln P[X <= k], summing downwards when k is below the mean, else 1 - P[X >= k+1].
fn ln_mass_at_most(k: usize, n: usize, u: f64) -> f64 {
    if k >= n {
        return 0.0;
    }
    if (k as f64) < n as f64 * u.exp() {
        ln_pmf(k, n, u) + sum_downwards(k, n, u).ln()
    } else {
        let ln_mass = ln_pmf(k + 1, n, u);
        ln_1m_exp(ln_mass + sum_upwards(k + 1, n, u).ln())
    }
}

/// P[X >= k] / P[X = k] for k > np, where each term is below the one before.
fn sum_upwards(k: usize, n: usize, u: f64) -> f64 {
    let odds = (u - ln_1m_exp(u)).exp();
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for j in k..n {
        let ratio = (n - j) as f64 / (j + 1) as f64 * odds;
        term *= ratio;
        sum += term;
        if settled(term, ratio, sum) {
            break;
        }
    }
    sum
}

/// P[X <= k] / P[X = k] for k < np, where each term is below the one after.
fn sum_downwards(k: usize, n: usize, u: f64) -> f64 {
    let inverse_odds = (ln_1m_exp(u) - u).exp();
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for j in (1..=k).rev() {
        let ratio = j as f64 / (n - j + 1) as f64 * inverse_odds;
        term *= ratio;
        sum += term;
        if settled(term, ratio, sum) {
            break;
        }
    }
    sum
}

/// Whether the terms still to come cannot move `sum`: the binomial is log-concave, so each later
/// ratio is below `ratio` and the rest is at most term * ratio / (1 - ratio).
fn settled(term: f64, ratio: f64, sum: f64) -> bool {
    ratio < 1.0 && term * ratio < 0.25 * f64::EPSILON * sum * (1.0 - ratio)
}

/// ln(1 - e^x) for x <= 0, accurate at both ends (Maechler's log1mexp).
fn ln_1m_exp(x: f64) -> f64 {
    if x > -std::f64::consts::LN_2 {
        (-x.exp_m1()).ln()
    } else {
        (-x.exp()).ln_1p()
    }
}

/// ln P[Bin(n, e^u) = k] in Loader's form: ln of
/// sqrt(n / (2 pi k (n-k))) exp(-(stirlerr terms) - bd0(k, np) - bd0(n-k, nq)).
fn ln_pmf(k: usize, n: usize, u: f64) -> f64 {
    let ln_q = ln_1m_exp(u);
    if k == 0 {
        return n as f64 * ln_q;
    }
    if k == n {
        return n as f64 * u;
    }
    let (k_f, n_f) = (k as f64, n as f64);
    let np = n_f * u.exp();
    let nq = n_f * ln_q.exp();
    let lc = stirling_remainder(n)
        - stirling_remainder(k)
        - stirling_remainder(n - k)
        - deviance(k_f, np)
        - deviance(n_f - k_f, nq);
    let lf = (2.0 * std::f64::consts::PI).ln() + k_f.ln() + (-k_f / n_f).ln_1p();
    lc - 0.5 * lf
}

/// ln(n!) - (n + 1/2) ln n + n - ln sqrt(2 pi): tabulated to 15, Stirling's series beyond
/// (five terms reach 1e-16 at n = 16).
fn stirling_remainder(n: usize) -> f64 {
    // loggamma(n+1) - (n+1/2) log(n) + n - log(sqrt(2 pi)) by mpmath at 40 digits, rounded to f64;
    // 0 at n = 0 by convention.
    const TABLE: [f64; 16] = [
        0.0,
        0.08106146679532726,
        0.0413406959554093,
        0.02767792568499834,
        0.020790672103765093,
        0.016644691189821193,
        0.013876128823070748,
        0.01189670994589177,
        0.010411265261972096,
        0.009255462182712733,
        0.00833056343336287,
        0.007573675487951841,
        0.00694284010720953,
        0.006408994188004207,
        0.0059513701127588475,
        0.005554733551962801,
    ];
    if n < TABLE.len() {
        return TABLE[n];
    }
    const S0: f64 = 1.0 / 12.0;
    const S1: f64 = 1.0 / 360.0;
    const S2: f64 = 1.0 / 1260.0;
    const S3: f64 = 1.0 / 1680.0;
    const S4: f64 = 1.0 / 1188.0;
    let n = n as f64;
    let nn = n * n;
    if n > 500.0 {
        (S0 - S1 / nn) / n
    } else if n > 80.0 {
        (S0 - (S1 - S2 / nn) / nn) / n
    } else if n > 35.0 {
        (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / n
    } else {
        (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n
    }
}

/// The deviance x ln(x/m) + m - x >= 0, by its series in v = (x-m)/(x+m) when x is near m
/// (where the closed form cancels).
fn deviance(x: f64, m: f64) -> f64 {
    if (x - m).abs() < 0.1 * (x + m) {
        let mut v = (x - m) / (x + m);
        let mut s = (x - m) * v;
        if s.abs() < f64::MIN_POSITIVE {
            return s;
        }
        let mut ej = 2.0 * x * v;
        v *= v;
        // |v| < 0.1, so each term is 100x smaller: 20 terms pass 1e-32.
        for j in 1..40 {
            ej *= v;
            let s1 = s + ej / (2 * j + 1) as f64;
            if s1 == s {
                return s1;
            }
            s = s1;
        }
        return s;
    }
    x * (x / m).ln() + m - x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64) -> bool {
        (got / want - 1.0).abs() < 1e-12
    }

    #[test]
    fn lower_bounds_match_mpmath_across_the_regimes() {
        // mpmath at 60 digits (scripts/golden_clopper_pearson.py's cp_lower).
        for (k, n, alpha, want) in [
            (50_000usize, 100_000usize, 0.05, 0.4973942822602835),
            (3, 10, 1e-12, 2.0274726005331705e-05),
            (5_000_000, 10_000_000, 1e-12, 0.49888770185135595),
            (1, 1_000_000_000, 1e-12, 1.0000000000005e-21),
        ] {
            let got = clopper_pearson_lower(k, n, alpha);
            assert!(close(got, want), "{k} of {n} at {alpha}: {got:e} vs {want:e}");
        }
    }

    #[test]
    fn closed_forms_at_the_ends() {
        for n in [1usize, 10, 1000, 1_000_000_000] {
            let alpha: f64 = 0.05;
            assert!(close(clopper_pearson_lower(n, n, alpha), alpha.powf(1.0 / n as f64)));
            assert!(close(clopper_pearson_upper(0, n, alpha), -(alpha.ln() / n as f64).exp_m1()));
            assert_eq!(clopper_pearson_lower(0, n, alpha), 0.0);
            assert_eq!(clopper_pearson_upper(n, n, alpha), 1.0);
        }
    }

    #[test]
    fn the_mass_sums_to_one_and_matches_the_product_form() {
        let (n, p) = (40usize, 0.3);
        let total: f64 = (0..=n).map(|k| ln_mass(k, n, p).exp()).sum();
        assert!((total - 1.0).abs() < 1e-14, "{total}");
        // C(40, 12) = 5586853480.
        let direct = 5_586_853_480.0 * p.powi(12) * (1.0 - p).powi(28);
        assert!(close(ln_mass(12, n, p).exp(), direct));
        let tail: f64 = (12..=n).map(|k| ln_mass(k, n, p).exp()).sum();
        assert!(close(ln_tail_at_least(12, n, p).exp(), tail));
        assert!(close(ln_tail_at_most(11, n, p).exp(), 1.0 - tail));
    }
}
