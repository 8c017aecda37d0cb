//! Reference-library conventions, reproduced so the golden test can check our understanding of
//! each published number. **Never used for a claim**: the accountant's own answers are in
//! [`super::rdp`] and [`super::pld`]. Each function states which library behaviour it mirrors and
//! why that behaviour differs from ours (golden/README.md, "Discrepancies").
use super::event::Event;
use super::rdp::{
    default_orders, dp_accounting_orders, golden_section, improved_eps_at, rdp_gaussian, rdp_poisson_gaussian,
};
use super::special::{ln_choose, log_add, log_erfc, log_sum_exp};
use crate::ensure;
use crate::error::{Error, Result};

/// Opacus `get_noise_multiplier(..., accountant='rdp', epsilon_tolerance)`: sigma_high = 10 doubled
/// until eps(sigma_high) <= target, then bisection on [0, sigma_high] until target - eps_high <=
/// tolerance; returns sigma_high. Coarse (up to ~1.2% above the exact root); replicated bit for
/// bit so the golden `sigma_opacus_get_noise_multiplier` can be checked.
pub fn opacus_get_noise_multiplier(target: f64, delta: f64, q: f64, steps: u64, tolerance: f64) -> Result<f64> {
    let orders = default_orders();
    let eps = |s: f64| -> f64 {
        let curve: Vec<f64> = orders.iter().map(|&a| steps as f64 * rdp_poisson_gaussian(q, s, a)).collect();
        let mut best = f64::INFINITY;
        for (&a, &r) in orders.iter().zip(&curve) {
            let e = improved_eps_at(a, r, delta);
            if e < best {
                best = e;
            }
        }
        best
    };
    let (mut lo, mut hi) = (0.0, 10.0);
    let mut eps_hi = f64::INFINITY;
    while eps_hi > target {
        hi *= 2.0;
        eps_hi = eps(hi);
        ensure!(hi <= 2000.0, Error::Unreachable("Opacus' search gives up above sigma = 2000".into()));
    }
    while target - eps_hi > tolerance {
        let s = (lo + hi) / 2.0;
        let e = eps(s);
        if e < target {
            hi = s;
            eps_hi = e;
        } else {
            lo = s;
        }
    }
    Ok(hi)
}

/// Opacus `compute_rdp` for one step of the Poisson-subsampled Gaussian: our series with Opacus'
/// less precise log-subtraction (see [`super::rdp::log_a_frac_with`]); the golden `rdp` vectors
/// are Opacus' output, which differs from the exact value by up to ~2e-6 relative near alpha = 1.
pub fn opacus_rdp_poisson_gaussian(q: f64, sigma: f64, alpha: f64) -> f64 {
    if q == 1.0 || q == 0.0 || alpha.fract() == 0.0 {
        return rdp_poisson_gaussian(q, sigma, alpha);
    }
    super::rdp::log_a_frac_with(q, sigma, alpha, true) / (alpha - 1.0)
}

/// dp_accounting 0.6.0's `_compute_log_a_frac`: it log-*adds* every term of the series whatever
/// the sign of the generalized binomial coefficient (a valid but loose upper bound near alpha = 1),
/// stops when both terms decrease and are 30 nats below the total, and gives up (+inf, the order
/// is dropped) after 1000 terms. Integer orders are exact, as in [`rdp_poisson_gaussian`].
pub fn dp_accounting_rdp_poisson_gaussian(q: f64, sigma: f64, alpha: f64) -> f64 {
    if q == 1.0 || alpha.fract() == 0.0 {
        return rdp_poisson_gaussian(q, sigma, alpha);
    }
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let two_s2 = 2.0 * sigma * sigma;
    let z0 = sigma * sigma * (1.0 / q - 1.0).ln() + 0.5;
    let sq2s = std::f64::consts::SQRT_2 * sigma;
    let (mut a0, mut a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let (mut last0, mut last1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut log_coef = 0.0_f64;
    for i in 0..1000 {
        let fi = i as f64;
        let j = alpha - fi;
        let s0 = log_coef + fi * lq + j * l1q + (fi * fi - fi) / two_s2 + 0.5_f64.ln() + log_erfc((fi - z0) / sq2s);
        let s1 = log_coef + j * lq + fi * l1q + (j * j - j) / two_s2 + 0.5_f64.ln() + log_erfc((z0 - j) / sq2s);
        a0 = log_add(a0, s0);
        a1 = log_add(a1, s1);
        let total = log_add(a0, a1);
        if s0 < last0 && s1 < last1 && s0.max(s1) < total - 30.0 {
            return total / (alpha - 1.0);
        }
        last0 = s0;
        last1 = s1;
        log_coef += (alpha - fi).abs().ln() - (fi + 1.0).ln();
    }
    f64::INFINITY
}

/// dp_accounting `compute_epsilon`: the improved conversion, but orders <= 1.01 give +inf, the
/// "KL shortcut" gives 0 when delta^2 + expm1(-rdp) > 0, and the result is clipped at >= 0.
pub fn dp_accounting_compute_epsilon(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, orders[0]);
    for (&a, &r) in orders.iter().zip(rdp) {
        let e = if r < 0.0 || delta * delta + (-r).exp_m1() > 0.0 {
            0.0
        } else if a > 1.01 {
            r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
        } else {
            f64::INFINITY
        };
        if e < best.0 {
            best = (e, a);
        }
    }
    (best.0.max(0.0), best.1)
}

/// dp_accounting `RdpAccountant` (default orders) on a composition of Gaussian and
/// Poisson-subsampled Gaussian events: (epsilon, optimal order).
pub fn dp_accounting_rdp_epsilon(event: &Event, delta: f64) -> Result<(f64, f64)> {
    event.validate()?;
    let orders = dp_accounting_orders();
    let mut curve = vec![0.0; orders.len()];
    let mut leaves = vec![];
    flatten(&event.normalized(), 1, &mut leaves)?;
    for (leaf, count) in leaves {
        for (c, &a) in curve.iter_mut().zip(&orders) {
            *c += count as f64
                * match leaf {
                    Leaf::Gaussian(s) => rdp_gaussian(s, a),
                    Leaf::Poisson(q, s) => dp_accounting_rdp_poisson_gaussian(q, s, a),
                };
        }
    }
    Ok(dp_accounting_compute_epsilon(&orders, &curve, delta))
}

#[derive(Clone, Copy)]
enum Leaf {
    Gaussian(f64),
    Poisson(f64, f64),
}

fn flatten(e: &Event, count: u64, out: &mut Vec<(Leaf, u64)>) -> Result<()> {
    match e {
        Event::Gaussian { noise_multiplier } => out.push((Leaf::Gaussian(*noise_multiplier), count)),
        Event::PoissonGaussian { sample_rate, noise_multiplier } => {
            out.push((Leaf::Poisson(*sample_rate, *noise_multiplier), count))
        }
        Event::SelfComposed { event, count: c } => flatten(event, count * c, out)?,
        Event::Composed(events) => events.iter().try_for_each(|x| flatten(x, count, out))?,
        Event::Labelled { event, .. } | Event::ScaledSensitivity { event, .. } => flatten(event, count, out)?,
        _ => return Err(Error::invalid("event", "reference-library reproductions cover Gaussian events only")),
    }
    Ok(())
}

/// The GAP reference code's autodp accounting (golden `eps_autodp_gap_style`): RDP composed as
/// functions of a real order — the Gaussian parts exactly (alpha/(2 s^2)), each Poisson-subsampled
/// Gaussian at integer orders exactly and, between integers, by linear interpolation of its CGF
/// (alpha-1) RDP(alpha) (autodp's `anaRDPacct`; CGF(1) = 0) — then the improved (Balle et al. 2020)
/// conversion minimised over real alpha in (1, 256]. The interpolation makes autodp up to ~2% looser
/// than the exact fractional-order RDP.
pub fn autodp_gap_style_epsilon(event: &Event, delta: f64) -> Result<f64> {
    let mut leaves = vec![];
    flatten(&event.normalized(), 1, &mut leaves)?;
    let log_a_int = |q: f64, s: f64, n: u64| -> f64 {
        if n <= 1 {
            return 0.0;
        }
        let terms: Vec<f64> = (0..=n)
            .map(|i| {
                let fi = i as f64;
                ln_choose(n, i) + fi * q.ln() + (n - i) as f64 * (-q).ln_1p() + (fi * fi - fi) / (2.0 * s * s)
            })
            .collect();
        log_sum_exp(&terms)
    };
    // Integer CGFs cached per leaf, orders 1..=257.
    let cgfs: Vec<Option<Vec<f64>>> = leaves
        .iter()
        .map(|(l, _)| match l {
            Leaf::Poisson(q, s) if *q < 1.0 => Some((0..=257).map(|n| log_a_int(*q, *s, n)).collect()),
            _ => None,
        })
        .collect();
    let eps = |a: f64| -> f64 {
        let mut r = 0.0;
        for ((leaf, count), cgf) in leaves.iter().zip(&cgfs) {
            let c = *count as f64;
            r += c * match (leaf, cgf) {
                (Leaf::Poisson(_, _), Some(cg)) => {
                    let (lo, t) = (a.floor(), a - a.floor());
                    ((1.0 - t) * cg[lo as usize] + t * cg[(lo as usize + 1).min(257)]) / (a - 1.0)
                }
                (Leaf::Gaussian(s), _) | (Leaf::Poisson(_, s), None) => rdp_gaussian(*s, a),
            };
        }
        improved_eps_at(a, r, delta)
    };
    // Piecewise smooth between integers: golden-section search on each [n, n+1].
    let mut best = f64::INFINITY;
    for n in 1..256 {
        let lo = n as f64 + if n == 1 { 1e-6 } else { 0.0 };
        let search = golden_section(eps, lo, n as f64 + 1.0, 80, 0.0);
        best = best.min(search.min).min(eps(n as f64 + 1.0));
        if n > 1 {
            best = best.min(eps(n as f64));
        }
    }
    Ok(best)
}

/// prv_accountant's reported bounds for `PRVAccountant(eps_error, delta_error)`:
/// lower = eps(delta + delta_error) - eps_error, upper = eps(delta - delta_error) + eps_error,
/// where eps(.) is a tight numerical epsilon (here: our PLD accountant).
pub fn prv_style_bounds(
    eps_at: impl Fn(f64) -> Result<f64>,
    delta: f64,
    eps_error: f64,
    delta_error: f64,
) -> Result<(f64, f64)> {
    Ok((eps_at(delta + delta_error)? - eps_error, eps_at(delta - delta_error)? + eps_error))
}
