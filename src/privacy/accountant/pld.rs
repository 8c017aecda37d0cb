//! The tight accountant: privacy loss distributions (PLDs) composed by FFT.
//!
//! * **Discretisation** — "connect the dots" of Doroshenko, Ghazi, Kamath, Kumar & Manurangsi
//!   (PoPETs 2022): on the grid eps_i = i h we evaluate the mechanism's exact hockey-stick curve
//!   delta(eps_i) and take the discrete PLD whose delta-curve interpolates these points linearly in
//!   e^eps. Because delta is convex in e^eps, the interpolation lies above the true curve, so the
//!   discrete PLD *dominates* the mechanism (pessimistic), yet its error is second order in h
//!   (plain rounding up would bias each step by up to h, i.e. T h after T steps). The atoms follow
//!   from the chord slopes S_k = (delta_k - delta_{k+1}) / (e^{eps_{k+1}} - e^{eps_k}):
//!   w_i = e^{eps_i} (S_{i-1} - S_i), mass delta(eps_max) at +inf, the rest at the lowest point.
//! * **Composition** — Koskela, Jälkö & Honkela (AISTATS 2020): the PLD of a composition is the
//!   convolution of the PLDs; T-fold self-composition is the T-th power of the FFT, computed in
//!   polar form (no repeated squaring). The FFT is circular, so the window [a, b] of the composed
//!   loss is chosen by Chernoff bounds with the discrete PLDs' exact moment generating functions,
//!   P(L > b) <= e^{T K(l) - l b}: the mass outside the window is below `tail` on each side, and
//!   both bounds are *added to every delta* we report, which keeps the result an upper bound
//!   despite aliasing.
//! * **Neighbouring relation** — add/remove-one: for the Poisson-subsampled Gaussian the "remove"
//!   pair ((1-q)N(0,s^2) + qN(1,s^2) vs N(0,s^2)) and the "add" pair (swapped) have different
//!   PLDs; both are composed and the larger epsilon (delta) is reported, as dp_accounting does.
//! * Gaussian parts are merged exactly (composition of Gaussians with multipliers s_i is a
//!   Gaussian with 1/s^2 = sum 1/s_i^2) and, when nothing else is present, answered by the exact
//!   analytic formula ([`super::analytic`]). Pure-DP parts add their epsilon (basic composition).
use super::analytic::{gaussian_delta, gaussian_epsilon};
use super::event::Event;
use super::rdp::check_delta;
use super::special::{log_add, log_ndtr, log_sub};
use crate::ensure;
use crate::error::{Error, Result};
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// Discretisation and truncation settings of the PLD accountant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PldOptions {
    /// Grid step h of the privacy-loss values.
    pub interval: f64,
    /// Mass allowed outside the composed window on each side, and (total) mass of the single-step
    /// tails sent to +inf; all of it is added to the reported delta.
    pub tail: f64,
    /// Memory budget: the most grid points of one discretised step or of the composed window
    /// (one FFT buffer is 16 bytes a point). A range needing more points at `interval` gets a
    /// coarser grid instead (still pessimistic: connect-the-dots dominates at any step).
    pub max_points: usize,
    /// The coarsest grid step accepted; an event whose privacy-loss range would need a coarser
    /// one within `max_points` is not built (the caller falls back to RDP and says so).
    pub max_interval: f64,
}

impl Default for PldOptions {
    /// h = 1e-4 (dp_accounting's default interval), tails 1e-15, at most 2^23 points (128 MiB a
    /// buffer), steps up to 1 (losses of order 10^6 nats, far beyond any meaningful claim).
    fn default() -> Self {
        PldOptions { interval: 1e-4, tail: 1e-15, max_points: 1 << 23, max_interval: 1.0 }
    }
}

/// What the PLD accountant says about an event.
#[derive(Debug, Clone, PartialEq)]
pub enum PldOutcome {
    /// The event has a part the PLD accountant does not model (fixed-size batches, DP-GNN).
    Unsupported,
    /// The tight epsilon.
    Epsilon(f64),
    /// The PLD could not be built within the memory budget (or the numerics failed); the reason
    /// in words. The caller must use another valid bound (RDP) and say so.
    OverBudget(String),
}

/// The PLD epsilon of `event` at `delta`, with the default options.
pub fn pld_epsilon(event: &Event, delta: f64) -> Result<f64> {
    pld_epsilon_with(event, delta, &PldOptions::default())
}

/// The PLD delta of `event` at `epsilon`, with the default options.
pub fn pld_delta(event: &Event, epsilon: f64) -> Result<f64> {
    ensure!(epsilon >= 0.0 && epsilon.is_finite(), Error::invalid("epsilon", format!("must be >= 0, got {epsilon}")));
    let plan = Plan::new(event)?;
    let rest = epsilon - plan.pure;
    if rest < 0.0 {
        return Ok(1.0);
    }
    if plan.poisson.is_empty() {
        return Ok(plan.gaussian_inv_s2.map_or(0.0, |v| gaussian_delta(1.0 / v.sqrt(), rest)));
    }
    let opts = PldOptions::default();
    let [remove, add] = plan.compose_both(&opts)?.map_err(Error::Other)?;
    Ok(remove.delta(rest).max(add.delta(rest)).min(1.0))
}

/// PLD epsilons of one event at several deltas, composing the PLD only once.
pub fn pld_epsilons(event: &Event, deltas: &[f64]) -> Result<Vec<f64>> {
    pld_epsilons_with(event, deltas, &PldOptions::default())
}

/// [`pld_epsilons`] with explicit options.
pub fn pld_epsilons_with(event: &Event, deltas: &[f64], opts: &PldOptions) -> Result<Vec<f64>> {
    deltas.iter().try_for_each(|&d| check_delta(d))?;
    let plan = Plan::new(event)?;
    if plan.poisson.is_empty() {
        return deltas
            .iter()
            .map(|&d| {
                Ok(match plan.gaussian_inv_s2 {
                    Some(v) => gaussian_epsilon(1.0 / v.sqrt(), d)?,
                    None => 0.0,
                } + plan.pure)
            })
            .collect();
    }
    let composed = plan.compose_both(opts)?.map_err(Error::Other)?;
    Ok(deltas.iter().map(|&d| composed[0].epsilon(d).max(composed[1].epsilon(d)) + plan.pure).collect())
}

/// The PLD epsilon where the accountant supports every part of the event (Gaussian, Poisson-
/// subsampled Gaussian, pure DP, and their compositions) and the PLD fits the memory budget of
/// the default options; otherwise why not. Errors only on invalid input.
pub fn pld_epsilon_outcome(event: &Event, delta: f64) -> Result<PldOutcome> {
    pld_epsilon_outcome_with(event, delta, &PldOptions::default())
}

/// [`pld_epsilon_outcome`] with explicit options.
pub fn pld_epsilon_outcome_with(event: &Event, delta: f64, opts: &PldOptions) -> Result<PldOutcome> {
    event.validate()?;
    check_delta(delta)?;
    if !supported(&event.normalized()) {
        return Ok(PldOutcome::Unsupported);
    }
    let plan = Plan::new(event)?;
    if plan.poisson.is_empty() {
        return pld_epsilon_with(event, delta, opts).map(PldOutcome::Epsilon);
    }
    Ok(match plan.compose_both(opts)? {
        Ok([remove, add]) => PldOutcome::Epsilon(remove.epsilon(delta).max(add.epsilon(delta)) + plan.pure),
        Err(why) => PldOutcome::OverBudget(why),
    })
}

/// The PLD epsilon with explicit options.
pub fn pld_epsilon_with(event: &Event, delta: f64, opts: &PldOptions) -> Result<f64> {
    check_delta(delta)?;
    let plan = Plan::new(event)?;
    if plan.poisson.is_empty() {
        let g = match plan.gaussian_inv_s2 {
            Some(v) => gaussian_epsilon(1.0 / v.sqrt(), delta)?,
            None => 0.0,
        };
        return Ok(g + plan.pure);
    }
    let [remove, add] = plan.compose_both(opts)?.map_err(Error::Other)?;
    Ok(remove.epsilon(delta).max(add.epsilon(delta)) + plan.pure)
}

fn supported(e: &Event) -> bool {
    match e {
        Event::Gaussian { .. } | Event::PoissonGaussian { .. } | Event::PureDp { .. } => true,
        Event::SelfComposed { event, .. } | Event::ScaledSensitivity { event, .. } | Event::Labelled { event, .. } => {
            supported(event)
        }
        Event::Composed(events) => events.iter().all(supported),
        // Every node in every batch: the count of its terms is fixed, the step a plain Gaussian.
        Event::Dpgnn { num_nodes, batch_size, .. } => num_nodes == batch_size,
        Event::WithoutReplacementGaussian { .. } | Event::Zcdp { .. } | Event::NodeSubsampled { .. } => false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Remove,
    Add,
}

/// The event flattened into: one merged Gaussian (sum of 1/s^2), Poisson-subsampled Gaussians
/// with counts, and the pure-DP epsilon.
struct Plan {
    gaussian_inv_s2: Option<f64>,
    poisson: Vec<(f64, f64, u64)>,
    pure: f64,
}

impl Plan {
    fn new(event: &Event) -> Result<Plan> {
        event.validate()?;
        let e = event.normalized();
        ensure!(
            supported(&e),
            Error::invalid(
                "event",
                "the PLD accountant supports Gaussian, Poisson-subsampled Gaussian and pure-DP events only (and \
                 DP-GNN's event where every batch holds every node)"
            )
        );
        let mut plan = Plan { gaussian_inv_s2: None, poisson: vec![], pure: 0.0 };
        plan.walk(&e, 1);
        Ok(plan)
    }

    fn walk(&mut self, e: &Event, count: u64) {
        match e {
            Event::Gaussian { noise_multiplier } => {
                let v = count as f64 / (noise_multiplier * noise_multiplier);
                self.gaussian_inv_s2 = Some(self.gaussian_inv_s2.unwrap_or(0.0) + v);
            }
            Event::PoissonGaussian { sample_rate, noise_multiplier } => {
                if *sample_rate >= 1.0 {
                    self.walk(&Event::gaussian(*noise_multiplier), count);
                } else if let Some(p) =
                    self.poisson.iter_mut().find(|p| p.0 == *sample_rate && p.1 == *noise_multiplier)
                {
                    p.2 += count;
                } else {
                    self.poisson.push((*sample_rate, *noise_multiplier, count));
                }
            }
            Event::PureDp { epsilon } => self.pure += epsilon * count as f64,
            Event::SelfComposed { event, count: c } => self.walk(event, count * c),
            Event::Composed(events) => events.iter().for_each(|x| self.walk(x, count)),
            Event::ScaledSensitivity { event, .. } | Event::Labelled { event, .. } => self.walk(event, count),
            // Batches of all N nodes (checked by supported()): a node's min(K+1, N) terms are in
            // every step, a Gaussian of noise multiplier s (K+1) / min(K+1, N).
            Event::Dpgnn { num_nodes, max_degree, noise_multiplier, steps, .. } => {
                let terms = (max_degree + 1) as f64;
                let multiplier = noise_multiplier * terms / terms.min(*num_nodes as f64);
                self.walk(&Event::gaussian(multiplier), count * steps)
            }
            Event::WithoutReplacementGaussian { .. } | Event::Zcdp { .. } | Event::NodeSubsampled { .. } => {
                unreachable!("checked by supported()")
            }
        }
    }

    /// Composes all parts for both directions of the add/remove relation ([remove, add]) on one
    /// grid, so that one packed FFT serves both (see [`fft_compose_pair`]). The grid step is
    /// chosen from the privacy loss's range before anything is allocated: at least
    /// `opts.interval`, and coarse enough that every discretised step and then the composed
    /// (Chernoff) window fit `opts.max_points`. At low noise one step's loss spans thousands of
    /// nats (about 1/(2 sigma^2)), which at h = 1e-4 would need 10^7-10^10 points per step.
    /// `Ok(Err(why))` when the budget would need a step above `opts.max_interval`, or when the
    /// composition is numerically unusable: the caller then reports another bound.
    fn compose_both(&self, opts: &PldOptions) -> Result<std::result::Result<[Composed; 2], String>> {
        let total_count: f64 = self.poisson.iter().map(|p| p.2 as f64).sum::<f64>() + 1.0;
        let per_step_tail = opts.tail / total_count;
        let mut ranges = vec![];
        if let Some(v) = self.gaussian_inv_s2 {
            ranges.push(gaussian_range(1.0 / v.sqrt(), per_step_tail));
        }
        for &(q, s, _) in &self.poisson {
            for dir in [Direction::Remove, Direction::Add] {
                ranges.push(poisson_gaussian_range(q, s, dir, per_step_tail));
            }
        }
        let widest = ranges.iter().map(|(lo, hi)| hi - lo).fold(0.0, f64::max);
        let budget = opts.max_points as f64;
        let mut h = opts.interval.max(widest * 1.05 / budget);
        let mut worst = 0usize;
        for _attempt in 0..6 {
            if h.is_nan() || opts.max_interval.is_nan() || h > opts.max_interval {
                break;
            }
            let parts = |dir: Direction| -> Vec<(Discrete, u64)> {
                let mut parts = vec![];
                if let Some(v) = self.gaussian_inv_s2 {
                    let s = 1.0 / v.sqrt();
                    parts.push((Discrete::gaussian(s, h, per_step_tail), 1));
                }
                for &(q, s, c) in &self.poisson {
                    parts.push((Discrete::poisson_gaussian(q, s, dir, h, per_step_tail), c));
                }
                parts
            };
            let (remove, add) = (parts(Direction::Remove), parts(Direction::Add));
            let (w_remove, w_add) = (window(&remove, h, opts.tail), window(&add, h, opts.tail));
            let size = |p: &[(Discrete, u64)], (lo, hi): (f64, f64)| {
                let need = ((hi - lo) / h).ceil() as usize + 2;
                need.max(p.iter().map(|p| p.0.masses.len()).max().unwrap_or(1))
            };
            worst = size(&remove, w_remove).max(size(&add, w_add));
            if worst <= opts.max_points {
                return Ok(match fft_compose_pair([&remove, &add], [w_remove, w_add], h, opts.tail) {
                    Ok(c) => Ok(c),
                    Err(Error::Other(why)) => Err(why),
                    Err(e) => return Err(e),
                });
            }
            h *= (worst as f64 / budget) * 1.05;
        }
        let composed = if worst > 0 {
            format!("; the composed window needs {worst} points at step {h:.3e}")
        } else {
            String::new()
        };
        Ok(Err(format!(
            "the privacy loss distribution does not fit the memory budget of {} grid points at a step of at most {} \
             (one step's loss spans {widest:.4e} nats{composed})",
            opts.max_points, opts.max_interval
        )))
    }
}

/// The loss range [lo, hi] of the Gaussian mechanism with multiplier s (symmetric: one
/// direction). Loss ~ N(mu, 2 mu), mu = 1/(2 s^2); from mu - 12 sd (mass below is collapsed
/// upwards: pessimistic) to the point where delta falls below `tail` (the rest goes to +inf).
fn gaussian_range(s: f64, tail: f64) -> (f64, f64) {
    let mu = 0.5 / (s * s);
    let sd = (2.0 * mu).sqrt();
    let mut hi = mu + 8.0 * sd;
    while gaussian_delta(s, hi) > tail && hi < 1e15 {
        hi += 2.0 * sd;
    }
    (mu - 12.0 * sd, hi)
}

/// The loss range [lo, hi] of the Poisson-subsampled Gaussian (rate q < 1, multiplier s) in one
/// direction. Remove: the loss is at least log(1-q); the top is where delta(eps) <= `tail` (the
/// rest goes to +inf). Add: the loss is at most -log(1-q); the bottom is the loss at x = 14 s
/// under P = N(0, s^2) (mass beyond < 1e-44, collapsed upwards: pessimistic).
fn poisson_gaussian_range(q: f64, s: f64, dir: Direction, tail: f64) -> (f64, f64) {
    let l1q = (-q).ln_1p();
    match dir {
        Direction::Remove => {
            let mut hi = 1.0_f64.max(-l1q);
            while delta_remove(q, s, hi) > tail && hi < 1e15 {
                hi *= 1.5;
            }
            (l1q, hi)
        }
        Direction::Add => {
            let x = 14.0 * s;
            let lo = -log_add(l1q, q.ln() + (2.0 * x - 1.0) / (2.0 * s * s));
            (lo.min(-l1q), -l1q)
        }
    }
}

/// A discrete PLD on the grid (offset + i) h, with mass at +inf.
struct Discrete {
    offset: i64,
    masses: Vec<f64>,
    inf_mass: f64,
}

impl Discrete {
    /// Connect-the-dots PLD from the exact hockey-stick curve `delta` on grid indices k0..=k1
    /// (Doroshenko et al. 2022, Algorithm 1, in the form without exponentials of the losses, so
    /// that losses of thousands of nats do not overflow): with g_k = delta_k - delta_{k+1} >= 0,
    /// w_0 = 1 - delta_0 - g_0/(e^h - 1), w_k = (e^h g_{k-1} - g_k)/(e^h - 1),
    /// w_n = e^h g_{n-1}/(e^h - 1), and delta_n at +inf. `delta(eps)` must be the exact delta of
    /// the pair at eps.
    fn connect_dots(k0: i64, k1: i64, h: f64, delta: impl Fn(f64) -> f64) -> Discrete {
        let n = (k1 - k0 + 1) as usize;
        let d = |i: usize| delta((k0 + i as i64) as f64 * h).clamp(0.0, 1.0);
        let (eh, emh) = (h.exp(), h.exp_m1());
        let mut masses = vec![0.0; n];
        // One pass: keeps delta_k and the previous gap g_{k-1}.
        let mut d_k = d(0);
        let d_0 = d_k;
        let mut g_prev = 0.0;
        for (k, w) in masses.iter_mut().enumerate() {
            let (g_k, d_next) = if k + 1 < n {
                let d_next = d(k + 1);
                ((d_k - d_next).max(0.0), d_next)
            } else {
                (0.0, d_k)
            };
            *w = if k == 0 { 1.0 - d_0 - g_k / emh } else { (eh * g_prev - g_k) / emh }.max(0.0);
            g_prev = g_k;
            d_k = d_next;
        }
        Discrete { offset: k0, masses, inf_mass: d_k }
    }

    /// The Gaussian mechanism with multiplier s on the grid of step h (see [`gaussian_range`]).
    fn gaussian(s: f64, h: f64, tail: f64) -> Discrete {
        let (lo, hi) = gaussian_range(s, tail);
        Discrete::connect_dots((lo / h).floor() as i64, (hi / h).ceil() as i64, h, |e| gaussian_delta(s, e))
    }

    /// The Poisson-subsampled Gaussian (rate q < 1, multiplier s) in one direction, on the grid
    /// of step h (see [`poisson_gaussian_range`]).
    fn poisson_gaussian(q: f64, s: f64, dir: Direction, h: f64, tail: f64) -> Discrete {
        let (lo, hi) = poisson_gaussian_range(q, s, dir, tail);
        let (k0, k1) = ((lo / h).floor() as i64, (hi / h).ceil() as i64);
        match dir {
            Direction::Remove => Discrete::connect_dots(k0, k1, h, |e| delta_remove(q, s, e)),
            Direction::Add => Discrete::connect_dots(k0, k1.max(k0 + 1), h, |e| delta_add(q, s, e)),
        }
    }

    /// log E[e^{l L}] over the finite atoms (a sub-probability measure) at l = +ls[j]
    /// (`upper`) or -ls[j], for all j in one pass (independent multiply-add chains, one per l),
    /// computed relative to the extreme atom in the direction of l so that nothing overflows;
    /// inflated by 1e-9 relative to cover the rounding of the recursion (the window only needs
    /// an upper bound).
    fn log_mgfs(&self, ls: &[f64; LAMBDAS], h: f64, upper: bool) -> [f64; LAMBDAS] {
        let n = self.masses.len();
        let r: [f64; LAMBDAS] = std::array::from_fn(|j| (-ls[j] * h).exp());
        let mut f = [1.0f64; LAMBDAS];
        let mut acc = [0.0f64; LAMBDAS];
        let mut step = |w: f64| {
            for j in 0..LAMBDAS {
                acc[j] += w * f[j];
                f[j] *= r[j];
            }
        };
        if upper {
            self.masses.iter().rev().for_each(|&w| step(w));
        } else {
            self.masses.iter().for_each(|&w| step(w));
        }
        let (end, sign) =
            if upper { ((self.offset + n as i64 - 1) as f64 * h, 1.0) } else { (self.offset as f64 * h, -1.0) };
        std::array::from_fn(|j| sign * ls[j] * end + acc[j].ln() + 1e-9)
    }
}

/// Number of Chernoff parameters tried by [`window`]: 2^-24, ..., 2^8 (at low noise one step's
/// loss is of order 1/(2 sigma^2), so the best parameter is of order 2 sigma^2 / (steps q)).
const LAMBDAS: usize = 33;

/// Hockey-stick delta(eps) of the "remove" pair P = (1-q)N(0,s^2) + qN(1,s^2), Q = N(0,s^2):
/// the loss log(1 - q + q e^{(2x-1)/(2s^2)}) exceeds eps iff x > x_eps = s^2 log((e^eps - 1 + q)/q)
/// + 1/2, so delta = q Phi_c((x_eps - 1)/s) - (e^eps - 1 + q) Phi_c(x_eps/s) (log space).
fn delta_remove(q: f64, s: f64, eps: f64) -> f64 {
    // log c without overflow: for eps > 0, c = e^eps (1 - (1-q) e^-eps).
    let log_c = if eps > 0.0 {
        eps + (-(1.0 - q) * (-eps).exp()).ln_1p()
    } else {
        let c = eps.exp_m1() + q; // e^eps - 1 + q
        if c <= 0.0 {
            return -eps.exp_m1(); // every outcome has loss > eps: delta = 1 - e^eps
        }
        c.ln()
    };
    let x = s * s * (log_c - q.ln()) + 0.5;
    let a = q.ln() + log_ndtr(-(x - 1.0) / s);
    let b = log_c + log_ndtr(-x / s);
    log_sub(a, b).map_or(0.0, f64::exp)
}

/// Hockey-stick delta(eps) of the "add" pair P = N(0,s^2), Q = (1-q)N(0,s^2) + qN(1,s^2): the loss
/// -log(1 - q + q e^{(2x-1)/(2s^2)}) exceeds eps iff x < x' = s^2 log((e^{-eps} - 1 + q)/q) + 1/2,
/// so delta = (1 - (1-q) e^eps) Phi(x'/s) - q e^eps Phi((x'-1)/s); zero for eps >= -log(1-q).
fn delta_add(q: f64, s: f64, eps: f64) -> f64 {
    // log c without overflow: for eps < 0, c = e^-eps (1 - (1-q) e^eps).
    let log_c = if eps < 0.0 {
        -eps + (-(1.0 - q) * eps.exp()).ln_1p()
    } else {
        let c = (-eps).exp_m1() + q; // e^{-eps} - 1 + q
        if c <= 0.0 {
            return 0.0;
        }
        c.ln()
    };
    let x = s * s * (log_c - q.ln()) + 0.5;
    let one_minus = -(eps + (-q).ln_1p()).exp_m1(); // 1 - (1-q) e^eps
    if one_minus <= 0.0 {
        return 0.0;
    }
    let a = one_minus.ln() + log_ndtr(x / s);
    let b = q.ln() + eps + log_ndtr((x - 1.0) / s);
    log_sub(a, b).map_or(0.0, f64::exp)
}

/// Chernoff window [lo, hi] of the composed loss: P(L > hi) <= tail and P(L < lo) <= tail, by
/// P(L > b) <= exp(sum_j c_j K_j(l) - l b) for l > 0 (and the mirror bound), with K_j the exact
/// log-MGF of the discrete PLD j, minimised over l in {2^-24, ..., 2^8}; clipped to the support.
fn window(parts: &[(Discrete, u64)], h: f64, tail: f64) -> (f64, f64) {
    let lt = tail.ln();
    let (mut lo, mut hi) = (0.0, 0.0);
    for (p, c) in parts {
        lo += *c as f64 * p.offset as f64 * h;
        hi += *c as f64 * (p.offset + p.masses.len() as i64 - 1) as f64 * h;
    }
    let (sup_lo, sup_hi) = (lo, hi);
    let ls: [f64; LAMBDAS] = std::array::from_fn(|j| 2f64.powi(j as i32 - 24));
    let (mut kp, mut km) = ([0.0f64; LAMBDAS], [0.0f64; LAMBDAS]);
    for (p, c) in parts {
        let (up, down) = (p.log_mgfs(&ls, h, true), p.log_mgfs(&ls, h, false));
        for j in 0..LAMBDAS {
            kp[j] += *c as f64 * up[j];
            km[j] += *c as f64 * down[j];
        }
    }
    // On a coarse grid a large parameter can underflow a part's whole MGF sum to 0 (log -inf):
    // that parameter gives no bound and is skipped (it used to void the window, leaving the
    // whole support: at sigma = 0.001 a composed window 20x too wide).
    for j in 0..LAMBDAS {
        if kp[j].is_finite() {
            hi = hi.min((kp[j] - lt) / ls[j]);
        }
        if km[j].is_finite() {
            lo = lo.max((lt - km[j]) / ls[j]);
        }
    }
    if hi.is_nan() || lo.is_nan() || hi <= lo {
        return (sup_lo, sup_hi);
    }
    (lo, hi)
}

/// The composed PLD on a window, with the delta contributions that are not in the window.
struct Composed {
    lo_index: i64,
    h: f64,
    masses: Vec<f64>,
    /// Mass at +inf plus the Chernoff bounds of the mass outside the window (added to delta).
    extra: f64,
}

/// Smallest FFT-friendly size (2^a times 1, 3, 5, 9 or 15) >= m.
fn fft_size(m: usize) -> usize {
    let mut best = usize::MAX;
    for f in [1usize, 3, 5, 9, 15] {
        let mut n = f;
        while n < m {
            n *= 2;
        }
        best = best.min(n);
    }
    best
}

/// z^c for a characteristic-function value (|z| <= 1) in polar form, c >= 1. Values whose power
/// is below the smallest double (|z|^c < e^-1490) are exactly 0 in f64 anyway, so the angle and
/// the exponential are skipped for them: for a many-fold composition this is most of the spectrum.
#[inline]
fn cpow(z: Complex<f64>, c: f64, min_norm_sqr: f64) -> Complex<f64> {
    let r2 = z.norm_sqr();
    if r2 <= min_norm_sqr {
        return Complex::new(0.0, 0.0);
    }
    Complex::from_polar((0.5 * c * r2.ln()).exp(), c * z.arg())
}

/// Convolves the parts (each `count` times) of two PLDs at once, by the FFT of real sequences:
/// both are packed into one complex sequence x + i y, whose transform F splits into
/// X_k = (F_k + conj F_{n-k})/2 and Y_k = (F_k - conj F_{n-k})/(2i); the pointwise powers are
/// taken on the half spectrum k <= n/2 only (the rest is the conjugate mirror, the inputs being
/// real), and the two composed spectra are packed again as X' + i Y' into one inverse FFT whose
/// real and imaginary parts are the two composed PLDs. One forward FFT per pair of parts and one
/// inverse FFT in all, instead of two and two. Reads each window [lo, hi] out of the circular
/// result.
fn fft_compose_pair(
    parts: [&[(Discrete, u64)]; 2],
    windows: [(f64, f64); 2],
    h: f64,
    tail: f64,
) -> Result<[Composed; 2]> {
    ensure!(parts[0].len() == parts[1].len(), Error::Other("PLD directions have different parts".into()));
    let idx = windows.map(|(lo, hi)| ((lo / h).floor() as i64, (hi / h).ceil() as i64));
    let need = idx.map(|(a, b)| (b - a + 1) as usize);
    let longest = parts.iter().flat_map(|p| p.iter().map(|x| x.0.masses.len())).max().unwrap_or(1);
    let n = fft_size(need[0].max(need[1]).max(longest));
    let half = n / 2;
    let mut planner = FftPlanner::<f64>::new();
    let fwd = planner.plan_fft_forward(n);
    let inv = planner.plan_fft_inverse(n);
    let mut scratch = vec![Complex::new(0.0, 0.0); fwd.get_inplace_scratch_len().max(inv.get_inplace_scratch_len())];
    // With one part the composed spectra are written straight back into the buffer (pairwise,
    // k with n - k); with several they are accumulated here first.
    let single = parts[0].len() == 1;
    let acc_len = if single { 0 } else { half + 1 };
    let mut acc = [vec![Complex::new(1.0, 0.0); acc_len], vec![Complex::new(1.0, 0.0); acc_len]];
    let i = Complex::new(0.0, 1.0);
    let mut offset = [0i64; 2];
    let mut log_finite = [0.0f64; 2]; // log of the composed finite mass fraction (1 - inf)^count
    let mut buf = vec![Complex::new(0.0, 0.0); n];
    ensure!(parts[0].len() == parts[1].len(), Error::Other("PLD directions have different parts".into()));
    for ((px, c), (py, cy)) in parts[0].iter().zip(parts[1]) {
        ensure!(c == cy, Error::Other("PLD directions have different counts".into()));
        buf.iter_mut().for_each(|b| *b = Complex::new(0.0, 0.0));
        for (b, &w) in buf.iter_mut().zip(&px.masses) {
            b.re = w;
        }
        for (b, &w) in buf.iter_mut().zip(&py.masses) {
            b.im = w;
        }
        fwd.process_with_scratch(&mut buf, &mut scratch);
        let cf = *c as f64;
        let min_norm_sqr = (-2980.0 / cf).exp();
        let (ax, ay) = acc.split_at_mut(1);
        for k in 0..=half {
            let m = (n - k) % n;
            let f = buf[k];
            let g = buf[m].conj();
            let x = (f + g) * 0.5;
            let d = (f - g) * 0.5; // = i Y
            let y = Complex::new(d.im, -d.re);
            let (xc, yc) = if *c == 1 { (x, y) } else { (cpow(x, cf, min_norm_sqr), cpow(y, cf, min_norm_sqr)) };
            if single {
                // Pack X' + i Y' (X'_{n-k} = conj X'_k, likewise Y'); buf[m] is not read again.
                buf[k] = xc + i * yc;
                if k > 0 && k < m {
                    buf[m] = xc.conj() + i * yc.conj();
                }
            } else {
                ax[0][k] *= xc;
                ay[0][k] *= yc;
            }
        }
        offset[0] += *c as i64 * px.offset;
        offset[1] += *c as i64 * py.offset;
        log_finite[0] += cf * (-px.inf_mass).ln_1p();
        log_finite[1] += cf * (-py.inf_mass).ln_1p();
    }
    // Pack X' + i Y' over the whole spectrum (X'_{n-k} = conj X'_k, likewise Y').
    for k in (0..=half).filter(|_| !single) {
        buf[k] = acc[0][k] + i * acc[1][k];
        if k > 0 && k < n - k {
            buf[n - k] = acc[0][k].conj() + i * acc[1][k].conj();
        }
    }
    inv.process_with_scratch(&mut buf, &mut scratch);
    let nf = n as f64;
    let mut out = Vec::with_capacity(2);
    for d in 0..2 {
        let (a_idx, _) = idx[d];
        let start = (a_idx - offset[d]).rem_euclid(n as i64) as usize;
        let masses: Vec<f64> = (0..need[d])
            .map(|c| {
                let i = start + c;
                let z = buf[if i >= n { i - n } else { i }];
                ((if d == 0 { z.re } else { z.im }) / nf).max(0.0)
            })
            .collect();
        ensure!(
            masses.iter().all(|m| m.is_finite()),
            Error::Other("PLD composition produced a non-finite mass".into())
        );
        let inf_mass = -log_finite[d].exp_m1();
        out.push(Composed { lo_index: a_idx, h, masses, extra: inf_mass + 2.0 * tail });
    }
    let add = out.pop().expect("two directions");
    let remove = out.pop().expect("two directions");
    Ok([remove, add])
}

impl Composed {
    /// delta(eps) = extra + sum_{eps_i > eps} w_i (1 - e^{eps - eps_i}).
    fn delta(&self, eps: f64) -> f64 {
        let mut d = self.extra;
        for (i, &w) in self.masses.iter().enumerate() {
            let e = (self.lo_index + i as i64) as f64 * self.h;
            if e > eps {
                d += w * -(eps - e).exp_m1();
            }
        }
        d.min(1.0)
    }

    /// The smallest eps >= 0 with delta(eps) <= target (exact for the discrete PLD: on each grid
    /// interval delta(eps) = M - e^eps S with constant M, S). Infinite when the mass at +inf
    /// already exceeds the target.
    fn epsilon(&self, target: f64) -> f64 {
        if self.extra >= target {
            return f64::INFINITY;
        }
        let eh = (-self.h).exp();
        let n = self.masses.len();
        // Walking down from the top: m = mass strictly above index k, g = sum_{i>k} w_i e^{eps_k - eps_i}.
        let (mut m, mut g) = (0.0_f64, 0.0_f64);
        for k in (0..n).rev() {
            if k + 1 < n {
                g = eh * (self.masses[k + 1] + g);
                m += self.masses[k + 1];
            }
            let d = self.extra + m - g;
            if d > target {
                // The answer lies in [eps_k, eps_{k+1}]: extra + m - e^{eps - eps_k} g = target.
                let ek = (self.lo_index + k as i64) as f64 * self.h;
                return (ek + ((self.extra + m - target) / g).ln()).max(0.0);
            }
        }
        // delta <= target already at the bottom of the window: solve below it.
        let m_all = m + self.masses[0];
        let g_all = eh * (self.masses[0] + g); // at eps_{-1}
        let e_m1 = (self.lo_index - 1) as f64 * self.h;
        if g_all <= 0.0 {
            return 0.0;
        }
        (e_m1 + ((self.extra + m_all - target) / g_all).ln()).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DP-GNN's event with every node in every batch is the Gaussian of multiplier s (K+1 of a
    /// node's terms each step), or s (K+1)/N when a node has fewer than K+1 others to be in; a
    /// sampled one stays refused.
    #[test]
    fn full_batch_dpgnn_is_its_gaussian_and_sampled_dpgnn_is_refused() {
        let dpgnn =
            |n, k, m| Event::Dpgnn { num_nodes: n, max_degree: k, batch_size: m, noise_multiplier: 2.5, steps: 7 };
        let gaussian = |s: f64| Event::gaussian(s).times(7);
        let eps = |e: &Event| pld_epsilon(e, 1e-5).unwrap();
        assert_eq!(eps(&dpgnn(100, 4, 100)), eps(&gaussian(2.5)));
        assert_eq!(eps(&dpgnn(3, 4, 3)), eps(&gaussian(2.5 * 5.0 / 3.0)));
        assert!(pld_epsilon(&dpgnn(100, 4, 50), 1e-5).is_err());
    }

    #[test]
    fn connect_dots_pld_of_a_gaussian_is_tight_and_pessimistic() {
        // The discretised Gaussian, composed once, against the exact curve.
        let s = 1.0;
        let d = Discrete::gaussian(s, 1e-3, 1e-15);
        let parts = vec![(d, 4u64)];
        let w = window(&parts, 1e-3, 1e-15);
        let [c, c2] = fft_compose_pair([&parts, &parts], [w, w], 1e-3, 1e-15).unwrap();
        for eps in [0.5, 1.0, 2.0, 4.0] {
            let exact = gaussian_delta(s / 2.0, eps);
            let got = c.delta(eps);
            assert!((c2.delta(eps) - got).abs() <= 1e-12, "eps {eps}: the packed halves differ");
            assert!(got >= exact * (1.0 - 1e-9), "eps {eps}: {got} < exact {exact}");
            assert!((got - exact) / exact < 2e-3, "eps {eps}: {got} vs {exact}");
        }
    }

    #[test]
    fn subsampled_gaussian_matches_dp_accounting() {
        // dpsgd_q0.01_s0.8_T1000_d1e-05: eps_pld_dp_accounting = 3.1410183192645444.
        let e = pld_epsilon(&Event::poisson_gaussian(0.01, 0.8).times(1000), 1e-5).unwrap();
        let reference = 3.1410183192645444;
        assert!((e - reference).abs() / reference < 1e-3, "{e}");
    }

    #[test]
    fn low_noise_single_step_matches_the_exact_curve() {
        // q = 0.126, sigma = 0.02, one step, delta = 1e-4: the root of the closed-form remove
        // curve q Phi_c((x-1)/s) - (e^eps - 1 + q) Phi_c(x/s) = 1e-4, solved in log space with
        // scipy (log_ndtr, brentq to 1e-10): 1404.8704625697853; dp_accounting 0.6.0's delta
        // curve gives 1.0000317e-4 at 1404.87. One step's loss spans ~1735 nats here, beyond
        // exp's range: the old construction lost the mass above 709 nats and answered 0.94 for
        // seven steps.
        let e = pld_epsilon(&Event::poisson_gaussian(0.126, 0.02), 1e-4).unwrap();
        assert!((e - 1404.8704625697853).abs() / 1404.87 < 1e-6, "{e}");
        assert!((delta_remove(0.126, 0.02, 1404.8704625697853) - 1e-4).abs() < 1e-10);
        assert!(delta_remove(0.126, 0.02, 1000.0) > 1e-4 && delta_remove(0.126, 0.02, 1735.0) < 1e-20);
    }

    #[test]
    fn chernoff_window_survives_coarse_grids() {
        // sigma = 0.001: one step's loss reaches ~6.5e5 nats. On a grid of 0.08 nats the largest
        // Chernoff parameters underflow the MGF sums to 0; the window must still come from the
        // others: ~45 sampled steps of 1000 (P(Bin(1000, 0.01) > 45) < 1e-15), not all 1000.
        let (q, s, h) = (0.01, 0.001, 0.08);
        let p = Discrete::poisson_gaussian(q, s, Direction::Remove, h, 1e-18);
        let support_hi = 1000.0 * (p.offset + p.masses.len() as i64 - 1) as f64 * h;
        let (lo, hi) = window(&[(p, 1000u64)], h, 1e-15);
        assert!(hi < 0.1 * support_hi && hi > 0.0 && lo > -20.0, "window [{lo}, {hi}], support up to {support_hi}");
    }

    #[test]
    fn over_budget_is_an_outcome_not_an_abort() {
        let e = Event::poisson_gaussian(0.01, 0.02).times(1000);
        let tiny = PldOptions { max_points: 1 << 10, max_interval: 1e-3, ..PldOptions::default() };
        match pld_epsilon_outcome_with(&e, 1e-5, &tiny).unwrap() {
            PldOutcome::OverBudget(why) => assert!(why.contains("1024 grid points"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(pld_epsilon_with(&e, 1e-5, &tiny).is_err());
        assert_eq!(
            pld_epsilon_outcome(&Event::WithoutReplacementGaussian { sample_rate: 0.1, noise_multiplier: 1.0 }, 1e-5)
                .unwrap(),
            PldOutcome::Unsupported
        );
    }

    #[test]
    fn delta_curves_are_consistent_at_the_extremes() {
        // Below the smallest loss every outcome counts: delta = 1 - e^eps.
        assert!((delta_remove(0.1, 1.0, -0.2) - (1.0 - (-0.2f64).exp())).abs() < 1e-15);
        assert_eq!(delta_add(0.1, 1.0, 0.2), 0.0);
        assert!(delta_remove(0.1, 1.0, 1.0) > 0.0 && delta_add(0.1, 1.0, 0.05) > 0.0);
    }
}
