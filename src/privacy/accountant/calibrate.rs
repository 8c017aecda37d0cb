//! Calibration: the smallest noise multiplier meeting a target (epsilon, delta) for any event
//! expression. Robust bracketing (expand by doubling/halving), then Brent's method to a relative
//! width of 1e-6 on sigma; the returned sigma always satisfies the target (it is the bracket end
//! on the feasible side), so a caller never gets a noise level that overspends.
use super::event::Event;
use super::pld::{pld_epsilon_outcome, PldOutcome};
use super::rdp::{check_delta, rdp_epsilon};
use crate::ensure;
use crate::error::{Error, Result};

/// The accountant the noise is calibrated to (recipe field `accountant`). Both give a valid
/// upper bound on epsilon; PLD is tight (Koskela et al. 2020; Doroshenko et al. 2022), so the same
/// claimed epsilon allows less noise than RDP's conversion, at the cost of seconds of calibration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Accountant {
    /// Renyi DP with the improved conversion (Balle et al. 2020); the reference code's choice.
    #[default]
    Rdp,
    /// Privacy loss distributions: the claimed epsilon is the PLD one.
    Pld,
}

impl Accountant {
    pub fn is_rdp(&self) -> bool {
        *self == Accountant::Rdp
    }
    pub fn name(self) -> &'static str {
        match self {
            Accountant::Rdp => "rdp",
            Accountant::Pld => "pld",
        }
    }
}

/// Smallest sigma meeting `target_epsilon` at `delta` by `accountant`. Under PLD an event the
/// accountant does not model, or whose PLD does not fit its memory budget, is refused (naming
/// `accountant`) rather than silently calibrated by RDP.
pub fn calibrate_by(
    accountant: Accountant,
    target_epsilon: f64,
    delta: f64,
    event_for: impl Fn(f64) -> Event,
) -> Result<f64> {
    match accountant {
        Accountant::Rdp => calibrate(target_epsilon, delta, event_for),
        Accountant::Pld => calibrate_with(target_epsilon, delta, event_for, |e, d| match pld_epsilon_outcome(e, d)? {
            PldOutcome::Epsilon(eps) => Ok(eps),
            PldOutcome::Unsupported => Err(Error::invalid(
                "accountant",
                format!("pld cannot account this mechanism ({}); use accountant = \"rdp\"", e.normalized()),
            )),
            PldOutcome::OverBudget(why) => Err(Error::invalid(
                "accountant",
                format!("pld cannot calibrate here ({why}); use accountant = \"rdp\""),
            )),
        }),
    }
}

/// Relative precision of the calibrated noise multiplier.
pub const SIGMA_RTOL: f64 = 1e-6;
const SIGMA_MAX: f64 = 1e7;
const SIGMA_MIN: f64 = 1e-8;

/// Smallest noise multiplier sigma with `rdp_epsilon(event_for(sigma), delta) <= target_epsilon`
/// (RDP accountant, improved conversion). `Error::Unreachable` when no sigma works (e.g. the
/// pure-DP parts alone spend the target), `Error::invalid` for eps <= 0 or delta outside (0, 1).
pub fn calibrate(target_epsilon: f64, delta: f64, event_for: impl Fn(f64) -> Event) -> Result<f64> {
    calibrate_with(target_epsilon, delta, event_for, |e, d| Ok(rdp_epsilon(e, d)?.epsilon))
}

/// As [`calibrate`] with any accountant `epsilon_of(event, delta)` that is non-increasing in sigma
/// (e.g. the PLD accountant, [`super::pld::pld_epsilon`]).
pub fn calibrate_with(
    target_epsilon: f64,
    delta: f64,
    event_for: impl Fn(f64) -> Event,
    epsilon_of: impl Fn(&Event, f64) -> Result<f64>,
) -> Result<f64> {
    ensure!(
        target_epsilon.is_finite() && target_epsilon > 0.0,
        Error::invalid("epsilon", format!("target epsilon must be > 0 and finite, got {target_epsilon}"))
    );
    check_delta(delta)?;
    let probe = event_for(1.0);
    probe.validate()?;
    let pure = probe.pure_epsilon();
    if pure >= target_epsilon {
        return Err(Error::Unreachable(format!(
            "the pure-DP parts alone spend epsilon = {pure}, at or above the target {target_epsilon}; no noise level on the Gaussian parts can meet it"
        )));
    }
    // f(sigma) = eps(sigma) - target: positive = overspends, <= 0 = meets the target.
    let f = |s: f64| -> Result<f64> {
        let e = epsilon_of(&event_for(s), delta)?;
        ensure!(!e.is_nan(), Error::Other(format!("accountant returned NaN at sigma = {s}")));
        Ok(e - target_epsilon)
    };
    // Bracket [lo, hi] with f(lo) > 0 >= f(hi).
    let mut hi = 1.0;
    let mut f_hi = f(hi)?;
    let (mut lo, mut f_lo);
    if f_hi > 0.0 {
        loop {
            lo = hi;
            f_lo = f_hi;
            hi *= 2.0;
            if hi > SIGMA_MAX {
                return Err(Error::Unreachable(format!(
                    "epsilon stays above {target_epsilon} up to noise multiplier {SIGMA_MAX:e} (delta = {delta})"
                )));
            }
            f_hi = f(hi)?;
            if f_hi <= 0.0 {
                break;
            }
        }
    } else {
        loop {
            lo = hi / 2.0;
            if lo < SIGMA_MIN {
                // Any noise meets the target (the event barely depends on sigma).
                return Ok(hi);
            }
            f_lo = f(lo)?;
            if f_lo > 0.0 {
                break;
            }
            hi = lo;
            f_hi = f_lo;
        }
    }
    brent_feasible(lo, f_lo, hi, f_hi, SIGMA_RTOL, f)
}

/// Brent's root finder (Brent 1973, "Algorithms for Minimization without Derivatives", ch. 4)
/// on a bracket with f(lo) > 0 >= f(hi) for a non-increasing f; stops when the bracket is
/// narrower than `rtol * hi` and returns the end of the final bracket on the feasible side
/// (f <= 0).
pub fn brent_feasible(
    lo: f64,
    f_lo: f64,
    hi: f64,
    f_hi: f64,
    rtol: f64,
    f: impl Fn(f64) -> Result<f64>,
) -> Result<f64> {
    let (mut a, mut fa, mut b, mut fb) = (lo, f_lo, hi, f_hi);
    let (mut c, mut fc) = (a, fa);
    let (mut d, mut e) = (b - a, b - a);
    for _ in 0..200 {
        if fb == 0.0 {
            return Ok(b);
        }
        if (fb > 0.0) == (fc > 0.0) {
            c = a;
            fc = fa;
            d = b - a;
            e = d;
        }
        if fc.abs() < fb.abs() {
            a = b;
            b = c;
            c = a;
            fa = fb;
            fb = fc;
            fc = fa;
        }
        let tol1 = 2.0 * f64::EPSILON * b.abs() + 0.5 * rtol * b.abs().min(c.abs());
        let xm = 0.5 * (c - b);
        if xm.abs() <= tol1 {
            break;
        }
        if e.abs() >= tol1 && fa.abs() > fb.abs() {
            let s = fb / fa;
            let (mut p, mut q);
            if a == c {
                p = 2.0 * xm * s;
                q = 1.0 - s;
            } else {
                let qq = fa / fc;
                let r = fb / fc;
                p = s * (2.0 * xm * qq * (qq - r) - (b - a) * (r - 1.0));
                q = (qq - 1.0) * (r - 1.0) * (s - 1.0);
            }
            if p > 0.0 {
                q = -q;
            }
            p = p.abs();
            let min1 = 3.0 * xm * q - (tol1 * q).abs();
            let min2 = (e * q).abs();
            if 2.0 * p < min1.min(min2) {
                e = d;
                d = p / q;
            } else {
                d = xm;
                e = d;
            }
        } else {
            d = xm;
            e = d;
        }
        a = b;
        fa = fb;
        b += if d.abs() > tol1 { d } else { tol1.copysign(xm) };
        fb = f(b)?;
    }
    // b and c bracket the root; return the feasible one.
    Ok(if fb <= 0.0 { b } else { c })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::accountant::rdp::rdp_epsilon;

    #[test]
    fn calibration_round_trip_for_dp_sgd() {
        let ev = |s: f64| Event::poisson_gaussian(0.01, s).times(1000);
        let s = calibrate(2.0, 1e-5, ev).unwrap();
        let e = rdp_epsilon(&ev(s), 1e-5).unwrap().epsilon;
        assert!(e <= 2.0 && e > 2.0 * (1.0 - 1e-3), "{s} {e}");
        assert!(rdp_epsilon(&ev(0.99 * s), 1e-5).unwrap().epsilon > 2.0);
    }

    #[test]
    fn pure_parts_above_target_are_unreachable() {
        let ev = |s: f64| Event::Composed(vec![Event::gaussian(s), Event::PureDp { epsilon: 2.0 }]);
        assert!(matches!(calibrate(1.5, 1e-5, ev), Err(Error::Unreachable(_))));
        assert!(matches!(calibrate(0.0, 1e-5, ev), Err(Error::InvalidParam { .. })));
        assert!(matches!(calibrate(1.0, 1.0, ev), Err(Error::InvalidParam { .. })));
    }
}
