//! DPAR's privacy accounting (Zhang thesis ch.5): the thesis's closed forms, kept
//! as the `paper_epsilon` a run is compared with, and the sound budget gnnaudit claims.
//!
//! Thesis (reproduced, not trusted):
//! - Thm 6 / Alg. 7 calibrate each GM row by the "high privacy" corollary of Kairouz, Oh &
//!   Viswanath 2015 (stated for eps_g <= 0.9; the thesis uses up to 8) at sensitivity C1 (the
//!   sound L2 sensitivity of non-negative clipped rows is sqrt(2) C1);
//! - Cor. 3 (Durfee & Rogers 2019) for the Gumbel top-K rows, composed the same way;
//! - Thm 8 for DP-SGD, whose proof is not a DP argument and whose constants are unknown: its
//!   "paper" reading is a Poisson-subsampled Gaussian at rate B/M and multiplier sigma/tau;
//! - node subsampling "multiplies epsilon by q'".
//!
//! Sound (claimed): GM rows compose exactly as one Gaussian (multiplier sigma / (sqrt(2) C1) over
//! M rows); each Gumbel pick at scale C2/eps is a 2 eps-bounded-range exponential mechanism, so
//! eps^2/2-zCDP (Cesar & Rogers 2021), plus eps2^2/2 for v1's Laplace values; DP-SGD over rows in
//! which no node is referenced more than D_Pi times is DP-GNN's event (Daigavane et al. 2021);
//! all compose in RDP, then node subsampling amplifies the final (eps, delta) exactly:
//! (ln(1 + q'(e^eps - 1)), q' delta).
use super::event::Event;
use super::rdp::{default_orders, improved_eps_at, minimize_over_orders, rdp_curve};
use crate::ensure;
use crate::error::{Error, Result};

/// Kairouz et al.'s high-privacy composition read backwards (Thm 6): the per-row (eps, delta)
/// that the thesis says composes over `k` rows into (eps_g, delta_g).
pub fn kairouz_row_budget(eps_g: f64, delta_g: f64, k: u64) -> (f64, f64) {
    let k = k as f64;
    (eps_g / (2.0 * (k * (std::f64::consts::E + eps_g / delta_g).ln()).sqrt()), delta_g / (2.0 * k))
}

/// The classic Gaussian mechanism's noise for (eps, delta) at L2 sensitivity `sensitivity`.
pub fn classic_gaussian_sigma(eps: f64, delta: f64, sensitivity: f64) -> f64 {
    (2.0 * (1.25 / delta).ln()).sqrt() * sensitivity / eps
}

/// The thesis's GM noise standard deviation for a DP-APPR target (eps_pr, delta_pr) over `m`
/// rows with clip `c1` (Alg. 7 with Thm 6's calibration, sensitivity C1 as printed).
pub fn thesis_gm_sigma(eps_pr: f64, delta_pr: f64, m: u64, c1: f64) -> Result<f64> {
    check_target(eps_pr, delta_pr, m)?;
    let (eps_row, delta_row) = kairouz_row_budget(eps_pr, delta_pr, m);
    Ok(classic_gaussian_sigma(eps_row, delta_row, c1))
}

/// Cor. 3 (Durfee & Rogers 2019): the per-row epsilon of K Gumbel picks at per-pick eps,
/// 2 min{K eps, K eps tanh(eps) + eps sqrt(2 K ln(1/delta))} ((e^2e - 1)/(e^2e + 1) = tanh e).
pub fn gumbel_topk_epsilon(eps: f64, k: u64, delta: f64) -> f64 {
    let k = k as f64;
    2.0 * (k * eps).min(k * eps * eps.tanh() + eps * (2.0 * k * (1.0 / delta).ln()).sqrt())
}

/// The per-pick eps with [`gumbel_topk_epsilon`] = `target` (bisection; the map is increasing).
pub fn gumbel_topk_inverse(target: f64, k: u64, delta: f64) -> Result<f64> {
    ensure!(target.is_finite() && target > 0.0, Error::invalid("epsilon", format!("must be > 0, got {target}")));
    let (mut lo, mut hi) = (0.0, target);
    while hi - lo > 1e-14 * hi {
        let mid = 0.5 * (lo + hi);
        if gumbel_topk_epsilon(mid, k, delta) > target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(lo)
}

/// The thesis's per-pick Gumbel epsilon (and, for v1, the Laplace epsilon2) for a DP-APPR target
/// over `m` rows of `k` picks: per-row target from [`kairouz_row_budget`], then Cor. 3 inverted;
/// v1 spends half of the row target on its Laplace values (the split is not given).
pub fn thesis_em_epsilons(eps_pr: f64, delta_pr: f64, m: u64, k: u64, v1: bool) -> Result<(f64, Option<f64>)> {
    check_target(eps_pr, delta_pr, m)?;
    let (eps_row, delta_row) = kairouz_row_budget(eps_pr, delta_pr, m);
    if v1 {
        let eps2 = eps_row / 2.0;
        Ok((gumbel_topk_inverse(eps_row - eps2, k, delta_row)?, Some(eps2)))
    } else {
        Ok((gumbel_topk_inverse(eps_row, k, delta_row)?, None))
    }
}

fn check_target(eps: f64, delta: f64, m: u64) -> Result<()> {
    ensure!(eps.is_finite() && eps > 0.0, Error::invalid("epsilon", format!("must be > 0, got {eps}")));
    ensure!(delta > 0.0 && delta < 1.0, Error::invalid("delta", format!("must be in (0, 1), got {delta}")));
    ensure!(m >= 1, Error::invalid("m_rows", "at least one row"));
    Ok(())
}

/// The sound event of GM's M rows: Gaussian of std `sigma` on rows of L2 sensitivity sqrt(2) C1.
pub fn gm_event(sigma: f64, c1: f64, m: u64) -> Event {
    Event::gaussian(sigma / (std::f64::consts::SQRT_2 * c1)).times(m).labelled("DP-APPR (GM)")
}

/// zCDP rho of EM's M rows: K picks of a 2 eps-bounded-range mechanism each, eps^2/2 apiece,
/// plus v1's K Laplace values (pure eps2 in total per row, hence eps2^2/2-zCDP).
pub fn em_rho(eps: f64, k: u64, m: u64, eps2: Option<f64>) -> f64 {
    m as f64 * (k as f64 * eps * eps / 2.0 + eps2.map_or(0.0, |e| e * e / 2.0))
}

/// The sound DP-SGD event over the M private rows with the referenced-row cap D_Pi: a node
/// changes at most D_Pi + 1 per-row gradients, each by up to 2C; noise std sigma C on the batch
/// sum (Alg. 9), batches of `batch` rows uniformly without replacement.
pub fn dpsgd_sound_event(m: u64, cap: u64, batch: u64, sigma: f64, steps: u64) -> Event {
    Event::Dpgnn {
        num_nodes: m,
        max_degree: cap,
        batch_size: batch,
        noise_multiplier: sigma / (2.0 * (cap as f64 + 1.0)),
        steps,
    }
    .labelled("DP-SGD")
}

/// `dpar-dpsgd`'s DP-SGD over non-private APPR rows: a node may move every clipped per-row
/// gradient of a batch, so each step is a Gaussian of sensitivity 2BC, unamplified by the batch
/// draw. Written as DP-GNN's event with every node in all B terms of a batch of B out of B, which
/// is that Gaussian exactly (rho = B in every step), so that a gradient canary enters as such a
/// node does ([`crate::privacy::dpsgd::canary`]).
pub fn dpsgd_unsampled_event(batch: u64, sigma: f64, steps: u64) -> Event {
    if batch < 2 {
        // DP-GNN's event needs K >= 1; one row a batch is the same Gaussian of sensitivity 2C.
        return Event::gaussian(sigma).scaled(2.0).times(steps).labelled("DP-SGD");
    }
    Event::Dpgnn {
        num_nodes: batch,
        max_degree: batch - 1,
        batch_size: batch,
        noise_multiplier: sigma / (2.0 * batch as f64),
        steps,
    }
    .labelled("DP-SGD")
}

/// The thesis's DP-SGD claim read as its proof's mixture (the "paper" reading): a Poisson-subsampled
/// Gaussian at rate B/M with multiplier sigma/tau, T steps.
pub fn dpsgd_paper_event(m: u64, batch: u64, sigma: f64, tau: f64, steps: u64) -> Event {
    Event::poisson_gaussian(batch as f64 / m as f64, sigma / tau).times(steps)
}

/// Exact amplification of an (eps, delta) mechanism by Poisson sampling at rate q.
pub fn poisson_amplified(eps: f64, delta: f64, q: f64) -> (f64, f64) {
    ((q * eps.exp_m1()).ln_1p(), q * delta)
}

/// How the DP-APPR rows were released, for the sound account.
#[derive(Debug, Clone, Copy)]
pub enum ApprRelease {
    /// GM with noise std `sigma`, clip `c1`.
    Gaussian { sigma: f64, c1: f64 },
    /// EM with per-pick eps and (v1) Laplace eps2.
    Exponential { eps: f64, k: u64, eps2: Option<f64> },
    /// No private release (baselines Features, Random, DPSGD): Pi is data-independent or its
    /// edges are covered elsewhere.
    None,
}

/// gnnaudit's DPAR budget at total `delta`: DP-APPR and DP-SGD composed in RDP (improved
/// conversion), then node subsampling at rate `q_prime` (1 = none) amplifying the result, with
/// the unsampled mechanism evaluated at delta / q_prime.
pub fn dpar_epsilon(appr: ApprRelease, m: u64, sgd: &Event, delta: f64, q_prime: f64) -> Result<f64> {
    ensure!(q_prime > 0.0 && q_prime <= 1.0, Error::invalid("q_prime", format!("must be in (0, 1], got {q_prime}")));
    ensure!(
        delta > 0.0 && delta < q_prime,
        Error::invalid("delta", format!("must be in (0, q' = {q_prime}), got {delta}"))
    );
    sgd.validate()?;
    let orders = default_orders();
    let mut curve = rdp_curve(sgd, &orders);
    match appr {
        ApprRelease::Gaussian { sigma, c1 } => {
            let e = gm_event(sigma, c1, m);
            e.validate()?;
            for (c, x) in curve.iter_mut().zip(rdp_curve(&e, &orders)) {
                *c += x;
            }
        }
        ApprRelease::Exponential { eps, k, eps2 } => {
            let rho = em_rho(eps, k, m, eps2);
            ensure!(rho.is_finite() && rho > 0.0, Error::invalid("epsilon", "DP-APPR's zCDP rho must be > 0"));
            for (c, &a) in curve.iter_mut().zip(&orders) {
                *c += rho * a;
            }
        }
        ApprRelease::None => {}
    }
    let (eps, _) = minimize_over_orders(&orders, &curve, delta / q_prime, improved_eps_at);
    Ok(poisson_amplified(eps.max(0.0), delta / q_prime, q_prime).0)
}

/// The thesis's own total (Thm 8 + "multiply by q'"): (eps_pr + eps_sgd) q', with eps_pr the
/// DP-APPR target it calibrated for and eps_sgd the paper reading of DP-SGD at delta_sgd.
pub fn thesis_dpar_epsilon(eps_pr: f64, paper_sgd: &Event, delta_sgd: f64, q_prime: f64) -> Result<f64> {
    let eps_sgd = super::rdp::rdp_epsilon(paper_sgd, delta_sgd)?.epsilon;
    Ok(q_prime * (eps_pr + eps_sgd))
}

/// The sound event of EM's M rows (see [`em_rho`]): zCDP, labelled for the budget breakdown.
pub fn em_event(eps: f64, k: u64, m: u64, eps2: Option<f64>) -> Event {
    Event::Zcdp { rho: em_rho(eps, k, m, eps2) }.labelled("DP-APPR (EM)")
}

/// The sound event of a DP-APPR release (None when the rows cost nothing).
pub fn appr_event(appr: ApprRelease, m: u64) -> Option<Event> {
    match appr {
        ApprRelease::Gaussian { sigma, c1 } => Some(gm_event(sigma, c1, m)),
        ApprRelease::Exponential { eps, k, eps2 } => Some(em_event(eps, k, m, eps2)),
        ApprRelease::None => None,
    }
}

/// DPAR's whole mechanism as one event: DP-APPR then DP-SGD (adaptive composition), the pair run
/// on a Poisson(q') sample of the nodes (no wrapper at q' = 1). [`dpar_epsilon`] computes the
/// same number by hand; this form is what a budget records so that an audit can recompute it.
pub fn dpar_event(appr: Option<Event>, sgd: Event, q_prime: f64) -> Event {
    let inner = match appr {
        Some(a) => Event::Composed(vec![a, sgd]),
        None => sgd,
    };
    if q_prime < 1.0 {
        Event::NodeSubsampled { rate: q_prime, event: Box::new(inner) }
    } else {
        inner
    }
}
