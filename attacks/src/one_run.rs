//! The one-run audit of Steinke, Nasr & Jagielski (2023), "Privacy Auditing with One (1) Training
//! Run": m canaries, each included independently with probability 1/2, all in one training run.
//! The auditor guesses "included" for its k+ highest-scored canaries and "excluded" for its k-
//! lowest, abstaining on the rest. Their Theorem 3: if the mechanism is (eps, delta)-DP in each
//! canary, the number W of correct guesses out of r = k+ + k- satisfies, for every v,
//!   P[W >= v] <= P[Bin(r, q) >= v] + 2 m delta alpha(v),   q = e^eps / (1 + e^eps),
//!   alpha(v) = max_{1 <= i <= v} P[v - i <= Bin(r, q) < v] / i.
//! Observing v correct guesses therefore refutes every eps whose right-hand side is below beta
//! = 1 - confidence; the lower bound is the largest such eps (the right-hand side grows with eps).
use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, Discrete, DiscreteCDF};

/// The right-hand side of Theorem 3: the p-value of `correct` correct guesses out of `guesses`
/// (m = `canaries`) under the null hypothesis that the mechanism is (eps, delta)-DP.
pub fn one_run_p_value(canaries: usize, guesses: usize, correct: usize, eps: f64, delta: f64) -> f64 {
    assert!(correct <= guesses && guesses <= canaries, "need correct <= guesses <= canaries");
    if correct == 0 {
        return 1.0;
    }
    let q = 1.0 / (1.0 + (-eps).exp());
    let bin = Binomial::new(q, guesses as u64).expect("q is a probability");
    // P[Bin >= v] = P[Bin > v - 1].
    let tail = bin.sf(correct as u64 - 1);
    let mut alpha: f64 = 0.0;
    let mut window = 0.0; // P[v - i <= Bin < v]
    for i in 1..=correct {
        window += bin.pmf((correct - i) as u64);
        alpha = alpha.max(window / i as f64);
    }
    (tail + 2.0 * canaries as f64 * delta * alpha).min(1.0)
}

/// The largest eps that `correct` of `guesses` refutes at significance `beta` (0 if none):
/// bisection on the p-value, which increases with eps.
pub fn one_run_epsilon(canaries: usize, guesses: usize, correct: usize, delta: f64, beta: f64) -> f64 {
    if guesses == 0 || one_run_p_value(canaries, guesses, correct, 0.0, delta) >= beta {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while one_run_p_value(canaries, guesses, correct, hi, delta) < beta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e3 {
            return lo;
        }
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if one_run_p_value(canaries, guesses, correct, mid, delta) < beta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Fractions of the canaries the auditor guesses on (half "included" from the top scores, half
/// "excluded" from the bottom). Fixed in advance; the bound uses beta / (number of choices)
/// (Bonferroni), so taking the best choice afterwards keeps the confidence level.
pub const GUESS_FRACTIONS: [f64; 7] = [0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0];

/// What the one-run audit found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OneRunBound {
    /// Epsilon lower bound at the requested confidence (Bonferroni over GUESS_FRACTIONS).
    pub eps_lb: f64,
    pub canaries: usize,
    /// Guesses "included" (top scores) and "excluded" (bottom scores) of the best choice.
    pub k_pos: usize,
    pub k_neg: usize,
    pub correct: usize,
    pub confidence: f64,
}

/// Runs the guessing game on canary scores (higher = "included") and their coins.
pub fn one_run_audit(scores: &[f64], included: &[bool], delta: f64, confidence: f64) -> OneRunBound {
    assert_eq!(scores.len(), included.len(), "one coin per canary");
    let m = scores.len();
    let clean = |s: f64| if s.is_nan() { f64::NEG_INFINITY } else { s };
    // Descending by score; within ties excluded canaries first, which puts the wrong guesses at
    // both ends of a tied block: never more correct guesses than any coin-independent tie-break,
    // so the bound stays valid whatever order the caller pooled the canaries in.
    let mut order: Vec<usize> = (0..m).collect();
    order
        .sort_by(|&a, &b| clean(scores[b]).partial_cmp(&clean(scores[a])).unwrap().then(included[a].cmp(&included[b])));
    let beta = (1.0 - confidence) / GUESS_FRACTIONS.len() as f64;
    let mut best = OneRunBound { eps_lb: 0.0, canaries: m, k_pos: 0, k_neg: 0, correct: 0, confidence };
    for f in GUESS_FRACTIONS {
        let r = ((f * m as f64).round() as usize).clamp(2.min(m), m);
        let k_pos = r / 2 + r % 2;
        let k_neg = r - k_pos;
        let correct = order[..k_pos].iter().filter(|&&i| included[i]).count()
            + order[m - k_neg..].iter().filter(|&&i| !included[i]).count();
        let eps = one_run_epsilon(m, r, correct, delta, beta);
        if eps > best.eps_lb || best.k_pos + best.k_neg == 0 {
            best = OneRunBound { eps_lb: eps, canaries: m, k_pos, k_neg, correct, confidence };
        }
    }
    best
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

    #[test]
    fn audit_of_perfect_and_blind_scores() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let m = 1000;
        let included: Vec<bool> = (0..m).map(|_| rng.gen_bool(0.5)).collect();
        let perfect: Vec<f64> = included.iter().map(|&b| b as u8 as f64).collect();
        let b = one_run_audit(&perfect, &included, 0.0, 0.95);
        // Half the canaries guessed (250 + 250) are all right: at least the closed form of 500 of
        // 500 at the Bonferroni level, and exactly the bound of the reported guesses.
        let beta = 0.05 / GUESS_FRACTIONS.len() as f64;
        let all_right_500 = logit(beta.powf(1.0 / 500.0));
        assert!(b.eps_lb >= all_right_500 - 1e-9 && b.eps_lb > 4.0, "{b:?} vs {all_right_500}");
        let r = b.k_pos + b.k_neg;
        assert!((b.eps_lb - one_run_epsilon(m, r, b.correct, 0.0, beta)).abs() < 1e-12);
        // Scores independent of the coins: nothing to find (up to the 5% the confidence allows).
        let blind: Vec<f64> = (0..m).map(|_| rng.gen::<f64>()).collect();
        assert_eq!(one_run_audit(&blind, &included, 1e-5, 0.95).eps_lb, 0.0);
        // Ties between included and excluded canaries never count in the auditor's favour.
        let tied = vec![1.0; m];
        assert_eq!(one_run_audit(&tied, &included, 0.0, 0.95).eps_lb, 0.0);
    }
}
