//! The Rényi-DP accountant: RDP curves of the events over a grid of orders, composed by addition
//! (Mironov 2017, Prop. 1), and converted to (epsilon, delta) with the improved bound of Balle et
//! al. 2020 (Thm. 21; = Canonne, Kamath & Steinke 2020, Prop. 12) or the classic bound of Mironov
//! 2017 (Prop. 3). All series are summed in log space.
use super::event::Event;
use super::special::{ln_choose, log_add, log_erfc, log_sub, log_sum_exp};
use crate::ensure;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Opacus `RDPAccountant.DEFAULT_ALPHAS`: 1.1, 1.2, ..., 10.9, then 12, 13, ..., 63 (151 orders;
/// 11 is not in it). Each fractional order is built as `1 + x/10` exactly as Opacus does, so that
/// optimal orders compare bit for bit.
pub fn default_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..100).map(|x| 1.0 + x as f64 / 10.0).collect();
    v.extend((12..64).map(|x| x as f64));
    v
}

/// `dp_accounting.rdp.DEFAULT_RDP_ORDERS`: 1.1..10.9, 11..63, 128, 256, 512, 1024 (156 orders).
pub fn dp_accounting_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..100).map(|x| 1.0 + x as f64 / 10.0).collect();
    v.extend((11..64).map(|x| x as f64));
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    v
}

/// The default grid extended with larger orders: for very small epsilon targets the optimal order
/// of a Gaussian composition exceeds 63 and the Opacus grid limits the bound (golden README,
/// discrepancy 4). Used by [`rdp_epsilon_with_orders`] callers who want the extra tightness.
pub fn extended_orders() -> Vec<f64> {
    let mut v = default_orders();
    v.extend([64.0, 80.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0]);
    v
}

/// RDP of one Gaussian mechanism at order alpha: alpha / (2 sigma^2) (Mironov 2017, Cor. 3).
pub fn rdp_gaussian(noise_multiplier: f64, alpha: f64) -> f64 {
    alpha / (2.0 * noise_multiplier * noise_multiplier)
}

/// RDP of one step of the Poisson-subsampled Gaussian at order alpha (Mironov, Talwar & Zhang
/// 2019, Sec. 3.3): RDP = log(A_alpha) / (alpha - 1) with
/// A_alpha = E_{z ~ N(0, sigma^2)}[(1 - q + q exp((2z - 1)/(2 sigma^2)))^alpha].
/// Integer alpha: the exact binomial expansion; fractional alpha: the two signed
/// generalized-binomial series split at z0, as in Opacus. Returns +inf for an order at which the
/// signed series cannot be evaluated stably (that order then gives no bound; never NaN).
pub fn rdp_poisson_gaussian(q: f64, sigma: f64, alpha: f64) -> f64 {
    if q == 0.0 {
        return 0.0;
    }
    if q == 1.0 {
        return rdp_gaussian(sigma, alpha);
    }
    if alpha.is_infinite() {
        return f64::INFINITY;
    }
    let log_a = if alpha.fract() == 0.0 { log_a_int(q, sigma, alpha as u64) } else { log_a_frac(q, sigma, alpha) };
    log_a / (alpha - 1.0)
}

/// log A_alpha for integer alpha: log sum_{i=0}^{alpha} C(alpha,i) (1-q)^{alpha-i} q^i
/// exp((i^2 - i)/(2 sigma^2)) (Mironov, Talwar & Zhang 2019, Sec. 3.3, eq. for integer alpha).
fn log_a_int(q: f64, sigma: f64, alpha: u64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let two_s2 = 2.0 * sigma * sigma;
    let terms: Vec<f64> = (0..=alpha)
        .map(|i| {
            let fi = i as f64;
            ln_choose(alpha, i) + fi * lq + (alpha - i) as f64 * l1q + (fi * fi - fi) / two_s2
        })
        .collect();
    log_sum_exp(&terms)
}

/// log A_alpha for fractional alpha (Mironov, Talwar & Zhang 2019, Sec. 3.3): split the integral
/// at z0 = sigma^2 log(1/q - 1) + 1/2 and sum, with j = alpha - i,
///   C(alpha,i) [q^i (1-q)^j e^{(i^2-i)/(2s^2)} erfc((i - z0)/(sqrt2 s))/2
///             + q^j (1-q)^i e^{(j^2-j)/(2s^2)} erfc((z0 - j)/(sqrt2 s))/2],
/// adding the terms whose generalized binomial coefficient is positive and subtracting the others
/// (the coefficient's sign alternates once i > alpha). Stops at the first i where both new log
/// terms are below -30, as Opacus does.
fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> f64 {
    log_a_frac_with(q, sigma, alpha, false)
}

/// The fractional-order series; `opacus_subtraction` selects Opacus' form of log(e^x - e^y),
/// `y + log(expm1(x - y))`, which loses absolute precision when the partial sum's log is near 0
/// (it is ~1e-9 at alpha near 1 with small q): e.g. q = 0.001, sigma = 10, alpha = 1.2 gives
/// Opacus 6.0300621e-9 per step against a 40-digit quadrature of 6.0300516e-9 (1.7e-6 relative
/// off), while `x + log1p(-e^{y - x})` (ours) gives 6.0300517e-9 (7.5e-9 off). Only
/// [`super::compat`] uses the Opacus form, to reproduce the golden vectors.
pub(crate) fn log_a_frac_with(q: f64, sigma: f64, alpha: f64, opacus_subtraction: bool) -> f64 {
    const MAX_TERMS: usize = 100_000;
    let (lq, l1q) = (q.ln(), (1.0 - q).ln());
    let two_s2 = 2.0 * sigma * sigma;
    let z0 = sigma * sigma * (1.0 / q - 1.0).ln() + 0.5;
    let sq2s = std::f64::consts::SQRT_2 * sigma;
    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    // |C(alpha, i)| and its sign, updated by C(alpha, i+1) = C(alpha, i) (alpha - i)/(i + 1).
    let (mut log_coef, mut positive) = (0.0_f64, true);
    for i in 0..MAX_TERMS {
        let fi = i as f64;
        let j = alpha - fi;
        let log_t0 = log_coef + fi * lq + j * l1q;
        let log_t1 = log_coef + j * lq + fi * l1q;
        let log_e0 = 0.5_f64.ln() + log_erfc((fi - z0) / sq2s);
        let log_e1 = 0.5_f64.ln() + log_erfc((z0 - j) / sq2s);
        let log_s0 = log_t0 + (fi * fi - fi) / two_s2 + log_e0;
        let log_s1 = log_t1 + (j * j - j) / two_s2 + log_e1;
        if positive {
            log_a0 = log_add(log_a0, log_s0);
            log_a1 = log_add(log_a1, log_s1);
        } else {
            let sub = |x: f64, y: f64| {
                if !opacus_subtraction || y == f64::NEG_INFINITY || x <= y {
                    log_sub(x, y)
                } else {
                    Some((x - y).exp_m1().ln() + y)
                }
            };
            match (sub(log_a0, log_s0), sub(log_a1, log_s1)) {
                (Some(a0), Some(a1)) => {
                    log_a0 = a0;
                    log_a1 = a1;
                }
                // The partial sum would turn negative: floating-point trouble at an extreme order.
                _ => return f64::INFINITY,
            }
        }
        if log_s0.max(log_s1) < -30.0 {
            return log_add(log_a0, log_a1);
        }
        let d = alpha - fi;
        log_coef += d.abs().ln() - (fi + 1.0).ln();
        if d < 0.0 {
            positive = !positive;
        }
    }
    f64::INFINITY
}

/// RDP of one step of the Gaussian on a fixed-size batch sampled without replacement (rate
/// gamma = m/n), replace-one relation: Wang, Balle & Kasiviswanathan 2019, Theorem 9, with the
/// base Gaussian's eps(j) = j/(2 sigma^2) and eps(inf) = inf, so for integer alpha >= 2
///   (alpha-1) RDP <= log(1 + gamma^2 C(alpha,2) min{4(e^{eps(2)} - 1), 2 e^{eps(2)}}
///                      + sum_{j=3}^{alpha} 2 gamma^j C(alpha,j) e^{(j-1) eps(j)}),
/// and between integers the linear interpolation of this CGF bound (their Corollary 10; the CGF
/// is convex in alpha and vanishes at alpha = 1).
pub fn rdp_wor_gaussian(gamma: f64, sigma: f64, alpha: f64) -> f64 {
    if gamma == 1.0 {
        return rdp_gaussian(sigma, alpha);
    }
    if alpha.is_infinite() {
        return f64::INFINITY;
    }
    let cgf = |a: u64| -> f64 {
        if a <= 1 {
            return 0.0;
        }
        let two_s2 = 2.0 * sigma * sigma;
        let eps2 = 2.0 / two_s2;
        let lg = gamma.ln();
        // log min{4(e^{eps2}-1), 2e^{eps2}}
        let t2 = (4.0 * eps2.exp_m1()).ln().min(std::f64::consts::LN_2 + eps2);
        let mut terms = vec![0.0, 2.0 * lg + ln_choose(a, 2) + t2];
        for j in 3..=a {
            let fj = j as f64;
            terms.push(std::f64::consts::LN_2 + fj * lg + ln_choose(a, j) + (fj - 1.0) * fj / two_s2);
        }
        log_sum_exp(&terms)
    };
    if alpha.fract() == 0.0 {
        return cgf(alpha as u64) / (alpha - 1.0);
    }
    let (lo, hi) = (alpha.floor(), alpha.ceil());
    let t = alpha - lo;
    ((1.0 - t) * cgf(lo as u64) + t * cgf(hi as u64)) / (alpha - 1.0)
}

/// Per-step RDP of node-level DP-SGD on a degree-bounded graph (Daigavane et al. 2021, Thm. 1):
/// (1/(alpha-1)) log E_rho[exp(alpha(alpha-1) rho^2 / (2 s^2 (K+1)^2))], rho ~
/// Hypergeometric(population N, K+1 marked, m drawn), s = std / (2(K+1)C). Exact sum over rho.
pub fn rdp_dpgnn_step(num_nodes: u64, max_degree: u64, batch_size: u64, noise_multiplier: f64, alpha: f64) -> f64 {
    let marked = (max_degree + 1).min(num_nodes);
    let k1 = (max_degree + 1) as f64;
    let log_total = ln_choose(num_nodes, batch_size);
    let scale = alpha * (alpha - 1.0) / (2.0 * noise_multiplier * noise_multiplier * k1 * k1);
    let terms: Vec<f64> = (0..=marked.min(batch_size))
        .filter(|&r| batch_size - r <= num_nodes - marked)
        .map(|r| {
            let lp = ln_choose(marked, r) + ln_choose(num_nodes - marked, batch_size - r) - log_total;
            lp + scale * (r * r) as f64
        })
        .collect();
    log_sum_exp(&terms) / (alpha - 1.0)
}

/// The RDP curve of an event (pure-DP parts excluded: they compose additively after conversion).
pub fn rdp_curve(event: &Event, orders: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; orders.len()];
    accumulate(&event.normalized(), orders, 1.0, &mut out);
    out
}

fn accumulate(e: &Event, orders: &[f64], weight: f64, out: &mut [f64]) {
    let mut add = |f: &dyn Fn(f64) -> f64| {
        for (o, &a) in out.iter_mut().zip(orders) {
            *o += weight * f(a);
        }
    };
    match e {
        Event::Gaussian { noise_multiplier } => add(&|a| rdp_gaussian(*noise_multiplier, a)),
        Event::PoissonGaussian { sample_rate, noise_multiplier } => {
            add(&|a| rdp_poisson_gaussian(*sample_rate, *noise_multiplier, a))
        }
        Event::WithoutReplacementGaussian { sample_rate, noise_multiplier } => {
            add(&|a| rdp_wor_gaussian(*sample_rate, *noise_multiplier, a))
        }
        Event::Dpgnn { num_nodes, max_degree, batch_size, noise_multiplier, steps } => {
            let t = *steps as f64;
            add(&|a| t * rdp_dpgnn_step(*num_nodes, *max_degree, *batch_size, *noise_multiplier, a))
        }
        Event::SelfComposed { event, count } => accumulate(event, orders, weight * *count as f64, out),
        Event::Composed(events) => events.iter().for_each(|x| accumulate(x, orders, weight, out)),
        Event::ScaledSensitivity { event, .. }
        | Event::Labelled { event, .. }
        | Event::NodeSubsampled { event, .. } => accumulate(event, orders, weight, out),
        Event::Zcdp { rho } => add(&|a| rho * a),
        Event::PureDp { .. } => {}
    }
}

/// The event's RDP at one order: the same sum, in the same order, as [`rdp_curve`] builds for
/// that order (so both give bit-identical values).
fn rdp_at(e: &Event, a: f64, weight: f64, acc: f64) -> f64 {
    match e {
        Event::Gaussian { noise_multiplier } => acc + weight * rdp_gaussian(*noise_multiplier, a),
        Event::PoissonGaussian { sample_rate, noise_multiplier } => {
            acc + weight * rdp_poisson_gaussian(*sample_rate, *noise_multiplier, a)
        }
        Event::WithoutReplacementGaussian { sample_rate, noise_multiplier } => {
            acc + weight * rdp_wor_gaussian(*sample_rate, *noise_multiplier, a)
        }
        Event::Dpgnn { num_nodes, max_degree, batch_size, noise_multiplier, steps } => {
            let t = *steps as f64;
            acc + weight * (t * rdp_dpgnn_step(*num_nodes, *max_degree, *batch_size, *noise_multiplier, a))
        }
        Event::SelfComposed { event, count } => rdp_at(event, a, weight * *count as f64, acc),
        Event::Composed(events) => events.iter().fold(acc, |acc, x| rdp_at(x, a, weight, acc)),
        Event::ScaledSensitivity { event, .. }
        | Event::Labelled { event, .. }
        | Event::NodeSubsampled { event, .. } => rdp_at(event, a, weight, acc),
        Event::Zcdp { rho } => acc + weight * rho * a,
        Event::PureDp { .. } => acc,
    }
}

/// Whether every RDP part is an exact Rényi divergence whose cumulant (alpha - 1) D_alpha is
/// convex in alpha (van Erven & Harremoës 2014, Cor. 2) — the Gaussian, the Poisson-subsampled
/// Gaussian, DP-GNN's log-MGF of rho^2 at the convex increasing alpha(alpha - 1) — so that
/// [`minimize_pruned`] may skip orders. The without-replacement *bound* is not known convex.
fn has_convex_cgf(e: &Event) -> bool {
    match e {
        Event::Gaussian { .. }
        | Event::PoissonGaussian { .. }
        | Event::Dpgnn { .. }
        | Event::PureDp { .. }
        | Event::Zcdp { .. } => true,
        Event::WithoutReplacementGaussian { .. } => false,
        Event::SelfComposed { event, .. }
        | Event::ScaledSensitivity { event, .. }
        | Event::Labelled { event, .. }
        | Event::NodeSubsampled { event, .. } => has_convex_cgf(event),
        Event::Composed(events) => events.iter().all(has_convex_cgf),
    }
}

/// The same minimum as [`minimize_over_orders`] (same epsilon, same order, ties to the first
/// order), evaluating the RDP only at the orders that can be optimal: branch and bound on
/// rigorous lower bounds of the RDP at the orders not yet evaluated. With K(alpha) =
/// (alpha - 1) RDP(alpha) convex, K(1) = 0, and RDP >= 0 non-decreasing (Mironov 2017, Prop. 9),
/// at an order between evaluated neighbours l < alpha < r:
///   K(alpha) >= (alpha - 1) RDP(l)  and  K lies above the secants of the neighbouring intervals
///   extended into (l, r) (convexity),
/// and both conversions increase with RDP, so the conversion of that bound bounds the order's
/// epsilon from below. Orders are evaluated lowest bound first until every remaining bound
/// exceeds the best epsilon by a margin (1e-6 relative) far above the rounding of the bounds.
pub fn minimize_pruned(
    orders: &[f64],
    rdp_at: impl Fn(f64) -> f64,
    delta: f64,
    at: fn(f64, f64, f64) -> f64,
) -> (f64, f64) {
    let n = orders.len();
    // Evaluated (alpha, K) with finite K, sorted by alpha; (1, 0) is always known.
    let mut pts: Vec<(f64, f64)> = vec![(1.0, 0.0)];
    let mut done = vec![false; n];
    let mut best = (f64::INFINITY, f64::NAN, usize::MAX);
    let evaluate = |i: usize, pts: &mut Vec<(f64, f64)>, best: &mut (f64, f64, usize), done: &mut [bool]| {
        done[i] = true;
        let a = orders[i];
        let r = rdp_at(a);
        let e = at(a, r, delta);
        if r.is_finite() {
            let p = pts.partition_point(|x| x.0 < a);
            if pts.get(p).is_none_or(|x| x.0 != a) {
                pts.insert(p, (a, (a - 1.0) * r));
            }
        }
        if e < best.0 || (e == best.0 && i < best.2) {
            *best = (e, a, i);
        }
    };
    // Seeds spread over the usual range of optimal orders.
    for t in [1.5, 2.5, 4.0, 6.0, 10.0, 16.0, 25.0, 40.0, 63.0, 128.0, 512.0] {
        let near = (0..n).min_by(|&i, &j| (orders[i] - t).abs().total_cmp(&(orders[j] - t).abs()));
        if let Some(i) = near {
            if !done[i] {
                evaluate(i, &mut pts, &mut best, &mut done);
            }
        }
    }
    let lower_rdp = |a: f64, pts: &[(f64, f64)]| -> f64 {
        let p = pts.partition_point(|x| x.0 < a);
        if p < pts.len() && pts[p].0 == a {
            return pts[p].1 / (a - 1.0);
        }
        let mut k: f64 = 0.0;
        if p >= 1 {
            let (a1, k1) = pts[p - 1];
            if a1 > 1.0 {
                k = k.max((a - 1.0) * k1 / (a1 - 1.0));
            }
            if p >= 2 {
                let (a0, k0) = pts[p - 2];
                k = k.max(k1 + (a - a1) * (k1 - k0) / (a1 - a0));
            }
        }
        if p + 1 < pts.len() {
            let (a2, k2) = pts[p];
            let (a3, k3) = pts[p + 1];
            k = k.max(k2 - (a2 - a) * (k3 - k2) / (a3 - a2));
        }
        k / (a - 1.0)
    };
    loop {
        let bound = best.0 + 1e-6 * best.0.abs() + 1e-12;
        let mut next: Option<(usize, f64)> = None;
        for i in 0..n {
            if done[i] {
                continue;
            }
            let lb = at(orders[i], lower_rdp(orders[i], &pts), delta);
            if (lb.is_nan() || lb <= bound || !best.0.is_finite()) && next.is_none_or(|(_, v)| lb < v || v.is_nan()) {
                next = Some((i, lb));
            }
        }
        match next {
            Some((i, _)) => evaluate(i, &mut pts, &mut best, &mut done),
            None => break,
        }
    }
    (best.0, best.1)
}

/// Whether the event has any non-pure part (something an RDP curve describes).
pub fn has_rdp_part(e: &Event) -> bool {
    match e {
        Event::PureDp { .. } => false,
        Event::SelfComposed { event, .. } | Event::ScaledSensitivity { event, .. } | Event::Labelled { event, .. } => {
            has_rdp_part(event)
        }
        Event::Composed(events) => events.iter().any(has_rdp_part),
        _ => true,
    }
}

/// Improved conversion (Balle et al. 2020, Thm. 21; Opacus `get_privacy_spent`) at one order:
/// eps(alpha) = rdp + log((alpha-1)/alpha) - (log(delta) + log(alpha))/(alpha-1).
pub fn improved_eps_at(alpha: f64, rdp: f64, delta: f64) -> f64 {
    rdp - (delta.ln() + alpha.ln()) / (alpha - 1.0) + ((alpha - 1.0) / alpha).ln()
}

/// Classic conversion (Mironov 2017, Prop. 3) at one order: eps = rdp + log(1/delta)/(alpha-1).
pub fn classic_eps_at(alpha: f64, rdp: f64, delta: f64) -> f64 {
    rdp - delta.ln() / (alpha - 1.0)
}

/// Minimum of a per-order conversion over the grid: (epsilon, optimal order). Orders whose value
/// is not a number are skipped (as numpy's nanargmin does); ties go to the first order.
pub fn minimize_over_orders(orders: &[f64], rdp: &[f64], delta: f64, at: fn(f64, f64, f64) -> f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::NAN);
    for (&a, &r) in orders.iter().zip(rdp) {
        let e = at(a, r, delta);
        if e < best.0 {
            best = (e, a);
        }
    }
    best
}

/// Epsilon of an event by the RDP accountant, with the order it was attained at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RdpEpsilon {
    /// Epsilon at the requested delta (RDP part converted, plus the pure-DP parts).
    pub epsilon: f64,
    /// The optimal RDP order (None when the event has only pure-DP parts).
    pub order: Option<f64>,
}

/// Which RDP -> (eps, delta) conversion to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Conversion {
    /// Balle et al. 2020, Thm. 21 (what Opacus reports).
    Improved,
    /// Mironov 2017, Prop. 3 (what the GAP paper states).
    Classic,
}

pub(crate) fn check_delta(delta: f64) -> Result<()> {
    ensure!(delta > 0.0 && delta < 1.0, Error::invalid("delta", format!("must be in (0, 1), got {delta}")));
    Ok(())
}

/// Epsilon of `event` at `delta` by RDP over the Opacus default orders with the improved
/// conversion (Balle et al. 2020). Pure-DP parts are added after conversion.
pub fn rdp_epsilon(event: &Event, delta: f64) -> Result<RdpEpsilon> {
    rdp_epsilon_with_orders(event, delta, &default_orders(), Conversion::Improved)
}

/// As [`rdp_epsilon`] with Mironov's classic conversion.
pub fn rdp_epsilon_classic(event: &Event, delta: f64) -> Result<RdpEpsilon> {
    rdp_epsilon_with_orders(event, delta, &default_orders(), Conversion::Classic)
}

/// The general form: any order grid (all > 1), either conversion. A negative converted value
/// (possible with the improved bound when delta is large) is reported as 0, which is always valid.
pub fn rdp_epsilon_with_orders(
    event: &Event,
    delta: f64,
    orders: &[f64],
    conversion: Conversion,
) -> Result<RdpEpsilon> {
    event.validate()?;
    check_delta(delta)?;
    if let Some((rate, inner)) = event.outer_node_subsampling() {
        // The inner mechanism at delta / rate, then amplification of its (eps, delta) by Poisson
        // sampling of the units (Balle, Barthe & Gaboardi 2018, Thm 8).
        ensure!(
            delta < rate,
            Error::invalid("delta", format!("must be below the node sampling rate q' = {rate}, got {delta}"))
        );
        let e = rdp_epsilon_with_orders(inner, delta / rate, orders, conversion)?;
        return Ok(RdpEpsilon { epsilon: (rate * e.epsilon.exp_m1()).ln_1p(), order: e.order });
    }
    ensure!(!orders.is_empty(), Error::invalid("orders", "the order grid is empty"));
    ensure!(orders.iter().all(|&a| a > 1.0 && !a.is_nan()), Error::invalid("orders", "every RDP order must be > 1"));
    let pure = event.pure_epsilon();
    if !has_rdp_part(event) {
        return Ok(RdpEpsilon { epsilon: pure, order: None });
    }
    let at = match conversion {
        Conversion::Improved => improved_eps_at,
        Conversion::Classic => classic_eps_at,
    };
    let normalized = event.normalized();
    let (eps, alpha) = if has_convex_cgf(&normalized) {
        minimize_pruned(orders, |a| rdp_at(&normalized, a, 1.0, 0.0), delta, at)
    } else {
        minimize_over_orders(orders, &rdp_curve(event, orders), delta, at)
    };
    if !eps.is_finite() {
        return Ok(RdpEpsilon { epsilon: f64::INFINITY, order: None });
    }
    Ok(RdpEpsilon { epsilon: eps.max(0.0) + pure, order: Some(alpha) })
}

/// The improved conversion minimised over *real* alpha > 1 for an RDP function given in closed
/// form (e.g. a Gaussian composition, rdp(alpha) = c alpha): golden-section search on
/// log(alpha - 1), then a fine polish. Returns (epsilon, alpha). The objective is unimodal for the
/// curves we use it on (convex CGF); a coarse scan first guards against a bad bracket.
pub fn improved_continuous(rdp: impl Fn(f64) -> f64, delta: f64) -> (f64, f64) {
    let f = |u: f64| {
        let a = 1.0 + u.exp();
        improved_eps_at(a, rdp(a), delta)
    };
    // Coarse scan of u = log(alpha - 1) over alpha in (1 + e^-8, 1 + e^12).
    let (lo, hi, n) = (-8.0_f64, 12.0_f64, 400);
    let step = (hi - lo) / n as f64;
    let mut best = (f64::INFINITY, lo);
    for k in 0..=n {
        let u = lo + k as f64 * step;
        let v = f(u);
        if v < best.0 {
            best = (v, u);
        }
    }
    let search = golden_section(f, best.1 - step, best.1 + step, 200, 1e-13);
    let u = 0.5 * (search.a + search.b);
    (f(u), 1.0 + u.exp())
}

/// Where a golden-section search for the minimum of a unimodal function left its bracket.
pub(super) struct GoldenSection {
    /// The final bracket [a, b].
    pub a: f64,
    pub b: f64,
    /// The least value seen at the two interior points of the last step.
    pub min: f64,
}

/// Golden-section search for the minimum of `f` on [a, b]: `iterations` steps, fewer once the
/// bracket is narrower than `tolerance` (0: always all of them). The bracket shrinks by 0.618
/// a step and every step evaluates `f` once.
pub(super) fn golden_section(
    f: impl Fn(f64) -> f64,
    mut a: f64,
    mut b: f64,
    iterations: usize,
    tolerance: f64,
) -> GoldenSection {
    let g = (5.0_f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..iterations {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = f(d);
        }
        if (b - a).abs() < tolerance {
            break;
        }
    }
    GoldenSection { a, b, min: fc.min(fd) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruned_minimum_equals_the_full_grid_minimum() {
        let orders = extended_orders();
        for (q, s, t, d) in
            [(0.01, 1.0, 10_000, 1e-5), (0.01, 4.1, 10_000, 1e-5), (0.256, 0.6, 50, 1e-6), (1e-3, 30.0, 100, 1e-8)]
        {
            let e = Event::poisson_gaussian(q, s).times(t);
            for at in [improved_eps_at as fn(f64, f64, f64) -> f64, classic_eps_at] {
                for grid in [&orders[..], &default_orders()[..]] {
                    let full = minimize_over_orders(grid, &rdp_curve(&e, grid), d, at);
                    let pruned = minimize_pruned(grid, |a| rdp_at(&e.normalized(), a, 1.0, 0.0), d, at);
                    assert_eq!(full.0.to_bits(), pruned.0.to_bits(), "{q} {s} {t}");
                    assert_eq!(full.1, pruned.1);
                }
            }
        }
    }

    #[test]
    fn grids_have_the_documented_sizes() {
        let o = default_orders();
        assert_eq!(o.len(), 151);
        assert!(!o.contains(&11.0));
        assert_eq!(*o.last().unwrap(), 63.0);
        assert_eq!(dp_accounting_orders().len(), 156);
    }

    #[test]
    fn subsampled_gaussian_reduces_to_gaussian_at_q1_and_is_below_it() {
        for &a in &[1.5, 2.0, 7.3, 32.0] {
            assert_eq!(rdp_poisson_gaussian(1.0, 2.0, a), a / 8.0);
            assert!(rdp_poisson_gaussian(0.1, 2.0, a) < a / 8.0);
        }
    }

    #[test]
    fn fractional_order_is_between_its_integer_neighbours() {
        // RDP is non-decreasing in alpha (Mironov 2017, Prop. 9).
        let (q, s) = (0.01, 1.0);
        let (r3, r35, r4) =
            (rdp_poisson_gaussian(q, s, 3.0), rdp_poisson_gaussian(q, s, 3.5), rdp_poisson_gaussian(q, s, 4.0));
        assert!(r3 <= r35 && r35 <= r4, "{r3} {r35} {r4}");
    }

    #[test]
    fn fractional_series_is_more_accurate_than_opacus_near_alpha_one() {
        // 40-digit mpmath quadrature of A_alpha (q = 0.001, sigma = 10, alpha = 1.2), as
        // 10000 * log(A) / (alpha - 1); Opacus (golden) gives 6.030062066596187e-05.
        let exact = 6.030051619424819e-05;
        let ours = 10000.0 * log_a_frac(0.001, 10.0, 1.2) / 0.2;
        let opacus = 10000.0 * log_a_frac_with(0.001, 10.0, 1.2, true) / 0.2;
        assert!(((ours - exact) / exact).abs() < 2e-8, "{ours}");
        assert!(((opacus - 6.030062066596187e-05) / 6.030062066596187e-05).abs() < 1e-9, "{opacus}");
    }

    #[test]
    fn opacus_anchor_value() {
        // accountant_timing.md (c): compute_rdp(q=0.01, sigma=1, steps=10000)[alpha=1.1].
        // log A_alpha is ~1e-5 here, so double-precision rounding of A ~ 1 alone moves it by ~1e-9
        // relative; the golden tolerance for numeric RDP is 1e-6.
        let r = 10000.0 * rdp_poisson_gaussian(0.01, 1.0, 1.1);
        assert!((r - 0.9241470982855838).abs() / 0.9241470982855838 < 1e-7, "{r}");
    }

    #[test]
    fn dpgnn_with_degree_zero_like_batch_is_subsampled_gaussian_bound() {
        // With m = N every node is always sampled: rho = K+1 and RDP = alpha/(2 s^2) per step.
        let r = rdp_dpgnn_step(50, 4, 50, 2.0, 3.0);
        assert!((r - 3.0 / 8.0).abs() < 1e-12, "{r}");
    }

    #[test]
    fn wor_gaussian_is_below_full_batch_gaussian() {
        for &a in &[2.0, 3.0, 5.5, 20.0] {
            let r = rdp_wor_gaussian(0.01, 2.0, a);
            assert!(r > 0.0 && r < a / 8.0, "{a}: {r}");
        }
    }
}
