//! The exact (epsilon, delta) curve of the Gaussian mechanism (Balle & Wang 2018, "Improving the
//! Gaussian mechanism for differential privacy", Thm. 8): with s = std / L2 sensitivity,
//!   delta(eps) = Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s).
//! A composition of Gaussians with multipliers s_i is exactly a Gaussian with
//! 1/s^2 = sum_i 1/s_i^2, so this is the tight answer for GAP/ProGAP edge-level budgets and the
//! reference the PLD accountant is checked against.
use super::special::log_ndtr;
use crate::ensure;
use crate::error::{Error, Result};

/// delta(eps) of the Gaussian mechanism with noise multiplier `s` (Balle & Wang 2018, Thm. 8),
/// evaluated in log space: Phi(a) (1 - exp(eps + log Phi(b) - log Phi(a))).
pub fn gaussian_delta(s: f64, eps: f64) -> f64 {
    let la = log_ndtr(0.5 / s - eps * s);
    let lb = log_ndtr(-0.5 / s - eps * s);
    let r = eps + lb - la;
    if r >= 0.0 {
        return 0.0;
    }
    (la.exp() * -(r.exp_m1())).max(0.0)
}

/// Refuses a noise scale the accountant cannot evaluate, quoting it as the user gave it: not
/// positive and finite, or so far from 1 that its square (the accountants work with variances)
/// underflows to 0 or overflows to infinity.
pub fn check_noise(flag: &str, sigma: f64) -> Result<()> {
    ensure!(
        sigma.is_finite() && sigma > 0.0,
        Error::invalid(flag, format!("must be a positive number, got {}", crate::error::num(sigma)))
    );
    ensure!(
        (1e-100..=1e100).contains(&sigma),
        Error::invalid(
            flag,
            format!(
                "{} is outside [1e-100, 1e100], the range the accountants evaluate (its square would {})",
                crate::error::num(sigma),
                if sigma < 1.0 { "underflow to 0" } else { "overflow to infinity" }
            )
        )
    );
    Ok(())
}

/// How [`gaussian_epsilon`]'s refusal of a noise too small to account starts (callers rename
/// its field after the flag or key the user gave).
pub const NON_CONVERGENCE: &str = "analytic Gaussian epsilon does not converge";

/// The smallest eps with delta(eps) <= delta for the Gaussian with multiplier `s` (bisection on
/// the monotone delta(eps) to 1e-13 relative).
pub fn gaussian_epsilon(s: f64, delta: f64) -> Result<f64> {
    ensure!(s.is_finite() && s > 0.0, Error::invalid("sigma", format!("must be > 0, got {s}")));
    ensure!(delta > 0.0 && delta < 1.0, Error::invalid("delta", format!("must be in (0, 1), got {delta}")));
    if gaussian_delta(s, 0.0) <= delta {
        return Ok(0.0);
    }
    let mut hi = 1.0;
    while gaussian_delta(s, hi) > delta {
        hi *= 2.0;
        ensure!(
            hi < 1e8,
            Error::invalid(
                "sigma",
                format!(
                    "{NON_CONVERGENCE}: a noise multiplier of {} at delta {} gives an \
                     epsilon above 1e8 (far too little noise: lower epsilon, hops or steps, or add noise)",
                    crate::error::num(s),
                    crate::error::num(delta)
                )
            )
        );
    }
    Ok(bisect_to_relative_precision(|eps| gaussian_delta(s, eps) > delta, 0.0, hi))
}

/// The smallest noise multiplier s with gaussian_epsilon(s, delta) <= eps (bisection in log s).
pub fn gaussian_sigma(eps: f64, delta: f64) -> Result<f64> {
    ensure!(eps.is_finite() && eps > 0.0, Error::invalid("epsilon", format!("must be > 0, got {eps}")));
    ensure!(delta > 0.0 && delta < 1.0, Error::invalid("delta", format!("must be in (0, 1), got {delta}")));
    let (mut lo, mut hi) = (1e-6_f64, 1.0_f64);
    while gaussian_delta(hi, eps) > delta {
        lo = hi;
        hi *= 2.0;
    }
    Ok(bisect_to_relative_precision(|s| gaussian_delta(s, eps) > delta, lo, hi))
}

/// Halves [lo, hi] until it is 1e-13 of `hi` wide, keeping `above(lo)` true and `above(hi)`
/// false; returns `hi`, the end on the side where the condition has stopped holding.
fn bisect_to_relative_precision(above: impl Fn(f64) -> bool, mut lo: f64, mut hi: f64) -> f64 {
    while hi - lo > 1e-13 * hi {
        let mid = 0.5 * (lo + hi);
        if above(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composed_gaussian_matches_golden_value() {
        // dpsgd_q1_s10_T100: exact eps of sigma 10 composed 100 times at delta 1e-5.
        let e = gaussian_epsilon(10.0 / 10.0, 1e-5).unwrap();
        assert!((e - 4.3771780956812245).abs() / 4.3771780956812245 < 1e-9, "{e}");
    }

    #[test]
    fn sigma_inverts_epsilon() {
        let s = gaussian_sigma(1.0, 1e-6).unwrap();
        assert!((gaussian_epsilon(s, 1e-6).unwrap() - 1.0).abs() < 1e-9);
    }
}
