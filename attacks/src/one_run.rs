//! The one-run audit of Steinke, Nasr & Jagielski (2023), "Privacy Auditing with One (1) Training
//! Run": m canaries, each included independently with probability 1/2, all in one training run.
//! The auditor guesses "included" for its k+ highest-scored canaries and "excluded" for its k-
//! lowest, abstaining on the rest. Their Theorem 3: if the mechanism is (eps, delta)-DP in each
//! canary, the number W of correct guesses out of r = k+ + k- satisfies, for every v,
//!   P[W >= v] <= P[Bin(r, q) >= v] + 2 m delta alpha(v),   q = e^eps / (1 + e^eps),
//!   alpha(v) = max_{1 <= i <= v} P[v - i <= Bin(r, q) < v] / i.
//! Observing v correct guesses therefore refutes every eps whose right-hand side is below beta
//! = 1 - confidence; the lower bound is the largest such eps (the right-hand side grows with eps).

use crate::binomial::{ln_mass, ln_tail_at_least};
use crate::bisection::doubling_bisection;

/// The right-hand side of Theorem 3: the p-value of `correct` correct guesses out of `guesses`
/// (m = `canaries`) under the null hypothesis that the mechanism is (eps, delta)-DP.
pub fn one_run_p_value(canaries: usize, guesses: usize, correct: usize, eps: f64, delta: f64) -> f64 {
    assert!(correct <= guesses && guesses <= canaries, "need correct <= guesses <= canaries");
    if correct == 0 {
        return 1.0;
    }
    let q = 1.0 / (1.0 + (-eps).exp());
    let tail = ln_tail_at_least(correct, guesses, q).exp();
    let alpha = if delta > 0.0 { widest_window_mean(correct, guesses, q) } else { 0.0 };
    (tail + 2.0 * canaries as f64 * delta * alpha).min(1.0)
}

/// alpha(v) = max over 1 <= i <= v of P[v - i <= Bin(r, q) < v] / i: the best mean mass of a
/// window of i counts just below v. Walks down from v - 1 with the ratio of successive masses,
/// scaled to stay in range, and stops once the masses fall (past the mode, where by
/// log-concavity they keep falling) below the best mean so far, which then cannot rise again.
fn widest_window_mean(v: usize, r: usize, q: f64) -> f64 {
    const RESCALE: f64 = 1e280;
    if q >= 1.0 {
        return 0.0; // all the mass at r >= v
    }
    if q <= 0.0 {
        return 1.0 / v as f64; // all the mass at 0, first inside the window of v counts
    }
    let ln_first = ln_mass(v - 1, r, q);
    let inverse_odds = (1.0 - q) / q;
    // Masses relative to P[X = v - 1] times e^-offset.
    let (mut term, mut window, mut best, mut offset) = (1.0f64, 0.0f64, 0.0f64, 0.0f64);
    for i in 1..=v {
        window += term;
        best = best.max(window / i as f64);
        let j = v - i; // the count just added
        if j == 0 {
            break;
        }
        let ratio = j as f64 / (r - j + 1) as f64 * inverse_odds; // P[X = j-1] / P[X = j]
        term *= ratio;
        if ratio <= 1.0 && term <= window / i as f64 {
            break;
        }
        if window > RESCALE {
            term /= RESCALE;
            window /= RESCALE;
            best /= RESCALE;
            offset += RESCALE.ln();
        }
    }
    (ln_first + offset + best.ln()).exp()
}

/// The largest eps that `correct` of `guesses` refutes at significance `beta` (0 if none):
/// bisection on the p-value, which increases with eps.
pub fn one_run_epsilon(canaries: usize, guesses: usize, correct: usize, delta: f64, beta: f64) -> f64 {
    one_run_epsilon_above(0.0, canaries, guesses, correct, delta, beta)
}

/// The largest eps above `floor` that `correct` of `guesses` refutes, or `floor` when none is.
/// Fails fast: delta only raises the p-value, so the p-value without it (one binomial tail, no
/// window) at `floor` rules most candidates out before the one with delta, and the bisection
/// runs only when the candidate beats `floor`.
pub fn one_run_epsilon_above(
    floor: f64,
    canaries: usize,
    guesses: usize,
    correct: usize,
    delta: f64,
    beta: f64,
) -> f64 {
    let p = |eps: f64| one_run_p_value(canaries, guesses, correct, eps, delta);
    if guesses == 0 || one_run_p_value(canaries, guesses, correct, floor, 0.0) >= beta || p(floor) >= beta {
        return floor;
    }
    match doubling_bisection(|eps| p(eps) < beta, floor, (2.0 * floor).max(1.0), 1e3, 60) {
        Ok((lo, _)) | Err((lo, _)) => lo,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::clopper_pearson_lower;

    fn logit(p: f64) -> f64 {
        (p / (1.0 - p)).ln()
    }

    #[test]
    fn all_correct_guesses_give_the_closed_form() {
        // delta = 0, v = r: P[Bin(r, q) >= r] = q^r = beta, so eps = logit(beta^(1/r)).
        for r in [10usize, 50, 200, 1000] {
            let got = one_run_epsilon(2 * r, r, r, 0.0, 0.05);
            let want = logit(0.05f64.powf(1.0 / r as f64));
            assert!((got - want).abs() < 1e-6, "r={r}: {got} vs {want}");
        }
    }

    #[test]
    fn without_delta_the_bound_is_the_logit_of_clopper_pearson() {
        // P[Bin(r, p) >= v] = beta at p = the one-sided Clopper-Pearson lower bound of v of r.
        for (r, v) in [(100usize, 80usize), (400, 260), (50, 31), (1000, 990)] {
            let got = one_run_epsilon(r, r, v, 0.0, 0.05);
            // (Floored at 0: 31 of 50 is consistent with guessing.)
            let want = logit(clopper_pearson_lower(v, r, 0.05)).max(0.0);
            assert!((got - want).abs() < 1e-5, "{v} of {r}: {got} vs {want}");
        }
    }

    #[test]
    fn chance_guesses_bound_nothing_and_delta_only_lowers_the_bound() {
        assert_eq!(one_run_epsilon(1000, 1000, 500, 1e-5, 0.05), 0.0);
        assert_eq!(one_run_epsilon(1000, 1000, 520, 0.0, 0.05), 0.0); // within 2 sd of 500
        assert_eq!(one_run_epsilon(100, 0, 0, 0.0, 0.05), 0.0);
        let no_delta = one_run_epsilon(1000, 200, 190, 0.0, 0.05);
        let with_delta = one_run_epsilon(1000, 200, 190, 1e-4, 0.05);
        assert!(no_delta > 2.0 && with_delta < no_delta, "{no_delta} {with_delta}");
        // The p-value grows with eps and with delta.
        let p = |e: f64, d: f64| one_run_p_value(1000, 200, 150, e, d);
        assert!(p(0.5, 0.0) < p(1.0, 0.0) && p(1.0, 0.0) < p(1.0, 1e-4));
    }
}
