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
use super::special::{log_ndtr, log_sub};
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
    /// Largest FFT size; a window needing more points gets a coarser grid instead.
    pub max_points: usize,
}

impl Default for PldOptions {
    /// h = 1e-4 (dp_accounting's default interval), tails 1e-15, at most 2^23 points.
    fn default() -> Self {
        PldOptions { interval: 1e-4, tail: 1e-15, max_points: 1 << 23 }
    }
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
    let mut worst: f64 = 0.0;
    for dir in [Direction::Remove, Direction::Add] {
        worst = worst.max(plan.compose(dir, &opts)?.delta(rest));
    }
    Ok(worst.min(1.0))
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
    let composed = [plan.compose(Direction::Remove, opts)?, plan.compose(Direction::Add, opts)?];
    Ok(deltas.iter().map(|&d| composed[0].epsilon(d).max(composed[1].epsilon(d)) + plan.pure).collect())
}

/// `Some(epsilon)` when the PLD accountant supports every part of the event (Gaussian, Poisson-
/// subsampled Gaussian, pure DP, and their compositions), `None` otherwise (fixed-size batches
/// without replacement, DP-GNN's hypergeometric bound).
pub fn pld_epsilon_if_supported(event: &Event, delta: f64) -> Result<Option<f64>> {
    event.validate()?;
    check_delta(delta)?;
    if !supported(&event.normalized()) {
        return Ok(None);
    }
    pld_epsilon(event, delta).map(Some)
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
    let mut worst: f64 = 0.0;
    for dir in [Direction::Remove, Direction::Add] {
        worst = worst.max(plan.compose(dir, opts)?.epsilon(delta));
    }
    Ok(worst + plan.pure)
}

fn supported(e: &Event) -> bool {
    match e {
        Event::Gaussian { .. } | Event::PoissonGaussian { .. } | Event::PureDp { .. } => true,
        Event::SelfComposed { event, .. } | Event::ScaledSensitivity { event, .. } | Event::Labelled { event, .. } => {
            supported(event)
        }
        Event::Composed(events) => events.iter().all(supported),
        Event::WithoutReplacementGaussian { .. } | Event::Dpgnn { .. } => false,
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
                "the PLD accountant supports Gaussian, Poisson-subsampled Gaussian and pure-DP events only"
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
            Event::WithoutReplacementGaussian { .. } | Event::Dpgnn { .. } => unreachable!("checked by supported()"),
        }
    }

    /// Composes all parts for one direction of the add/remove relation.
    fn compose(&self, dir: Direction, opts: &PldOptions) -> Result<Composed> {
        let total_count: f64 = self.poisson.iter().map(|p| p.2 as f64).sum::<f64>() + 1.0;
        let per_step_tail = opts.tail / total_count;
        let mut parts: Vec<(Discrete, u64)> = vec![];
        let mut h = opts.interval;
        // A first pass decides the grid; if the composed window is too wide for max_points, the
        // grid is coarsened and the PLDs rebuilt.
        for _attempt in 0..4 {
            parts.clear();
            if let Some(v) = self.gaussian_inv_s2 {
                let s = 1.0 / v.sqrt();
                parts.push((Discrete::gaussian(s, h, per_step_tail), 1));
            }
            for &(q, s, c) in &self.poisson {
                parts.push((Discrete::poisson_gaussian(q, s, dir, h, per_step_tail), c));
            }
            let (lo, hi) = window(&parts, h, opts.tail);
            let need = ((hi - lo) / h).ceil() as usize + 2;
            let longest = parts.iter().map(|p| p.0.masses.len()).max().unwrap_or(1);
            if need.max(longest) <= opts.max_points {
                return fft_compose(&parts, lo, hi, h, opts.tail);
            }
            h *= (need.max(longest) as f64 / opts.max_points as f64) * 1.05;
        }
        Err(Error::Other("PLD window does not fit the point budget".into()))
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
    /// (Doroshenko et al. 2022). `delta(eps)` must be the exact delta of the pair at eps.
    fn connect_dots(k0: i64, k1: i64, h: f64, delta: impl Fn(f64) -> f64) -> Discrete {
        let n = (k1 - k0 + 1) as usize;
        let eps: Vec<f64> = (0..n).map(|i| (k0 + i as i64) as f64 * h).collect();
        let d: Vec<f64> = eps.iter().map(|&e| delta(e).clamp(0.0, 1.0)).collect();
        // Chord slopes in e^eps: S_k for k = 0..n-2; S_{n-1} = 0.
        let mut s = vec![0.0; n];
        for k in 0..n - 1 {
            // e^{eps_{k+1}} - e^{eps_k} = e^{eps_k} (e^h - 1)
            s[k] = (d[k] - d[k + 1]).max(0.0) / (eps[k].exp() * h.exp_m1());
        }
        let mut masses = vec![0.0; n];
        let mut upper = 0.0;
        for i in 1..n {
            let w = (eps[i].exp() * (s[i - 1] - s[i])).max(0.0);
            masses[i] = w;
            upper += w;
        }
        let inf_mass = d[n - 1];
        masses[0] = (1.0 - upper - inf_mass).max(0.0);
        Discrete { offset: k0, masses, inf_mass }
    }

    /// The Gaussian mechanism with multiplier s (symmetric: one direction). Loss ~ N(mu, 2 mu),
    /// mu = 1/(2 s^2); the grid spans mu - 12 sd (mass below is collapsed upwards: pessimistic) to
    /// the point where delta falls below `tail` (the rest goes to +inf).
    fn gaussian(s: f64, h: f64, tail: f64) -> Discrete {
        let mu = 0.5 / (s * s);
        let sd = (2.0 * mu).sqrt();
        let lo = mu - 12.0 * sd;
        let mut hi = mu + 8.0 * sd;
        while gaussian_delta(s, hi) > tail {
            hi += 2.0 * sd;
        }
        Discrete::connect_dots((lo / h).floor() as i64, (hi / h).ceil() as i64, h, |e| gaussian_delta(s, e))
    }

    /// The Poisson-subsampled Gaussian (rate q < 1, multiplier s) in one direction.
    fn poisson_gaussian(q: f64, s: f64, dir: Direction, h: f64, tail: f64) -> Discrete {
        let l1q = (-q).ln_1p();
        match dir {
            Direction::Remove => {
                // Loss >= log(1-q); upper end where delta <= tail.
                let mut hi = 1.0_f64.max(-l1q);
                while delta_remove(q, s, hi) > tail {
                    hi *= 1.5;
                }
                Discrete::connect_dots((l1q / h).floor() as i64, (hi / h).ceil() as i64, h, |e| delta_remove(q, s, e))
            }
            Direction::Add => {
                // Loss <= -log(1-q); below, the loss at x = 1/2 + 13 s under P = N(0, s^2) (mass
                // beyond is < 1e-38 and is collapsed upwards).
                let x = 0.5 + 13.0 * s;
                let lo = -((1.0 - q) + q * ((2.0 * x - 1.0) / (2.0 * s * s)).exp()).ln();
                let lo = if lo.is_finite() { lo } else { -(q.ln() + (2.0 * x - 1.0) / (2.0 * s * s)) };
                Discrete::connect_dots((lo / h).floor() as i64, (-l1q / h).ceil() as i64, h, |e| delta_add(q, s, e))
            }
        }
    }

    /// log E[e^{l L}] over the finite atoms (a sub-probability measure), computed relative to
    /// the extreme atom in the direction of l so that nothing overflows; inflated by 1e-9
    /// relative to cover the rounding of the recursion (the window only needs an upper bound).
    fn log_mgf(&self, l: f64, h: f64) -> f64 {
        let n = self.masses.len();
        let r = (-l.abs() * h).exp();
        let mut acc = 0.0;
        let mut f = 1.0;
        if l > 0.0 {
            for w in self.masses.iter().rev() {
                acc += w * f;
                f *= r;
            }
            let top = (self.offset + n as i64 - 1) as f64 * h;
            l * top + acc.ln() + 1e-9
        } else {
            for w in self.masses.iter() {
                acc += w * f;
                f *= r;
            }
            let bottom = self.offset as f64 * h;
            l * bottom + acc.ln() + 1e-9
        }
    }
}

/// Hockey-stick delta(eps) of the "remove" pair P = (1-q)N(0,s^2) + qN(1,s^2), Q = N(0,s^2):
/// the loss log(1 - q + q e^{(2x-1)/(2s^2)}) exceeds eps iff x > x_eps = s^2 log((e^eps - 1 + q)/q)
/// + 1/2, so delta = q Phi_c((x_eps - 1)/s) - (e^eps - 1 + q) Phi_c(x_eps/s) (log space).
fn delta_remove(q: f64, s: f64, eps: f64) -> f64 {
    let c = eps.exp_m1() + q; // e^eps - 1 + q
    if c <= 0.0 {
        return -eps.exp_m1(); // every outcome has loss > eps: delta = 1 - e^eps
    }
    let x = s * s * (c / q).ln() + 0.5;
    let a = q.ln() + log_ndtr(-(x - 1.0) / s);
    let b = c.ln() + log_ndtr(-x / s);
    log_sub(a, b).map_or(0.0, f64::exp)
}

/// Hockey-stick delta(eps) of the "add" pair P = N(0,s^2), Q = (1-q)N(0,s^2) + qN(1,s^2): the loss
/// -log(1 - q + q e^{(2x-1)/(2s^2)}) exceeds eps iff x < x' = s^2 log((e^{-eps} - 1 + q)/q) + 1/2,
/// so delta = (1 - (1-q) e^eps) Phi(x'/s) - q e^eps Phi((x'-1)/s); zero for eps >= -log(1-q).
fn delta_add(q: f64, s: f64, eps: f64) -> f64 {
    let c = (-eps).exp_m1() + q; // e^{-eps} - 1 + q
    if c <= 0.0 {
        return 0.0;
    }
    let x = s * s * (c / q).ln() + 0.5;
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
/// log-MGF of the discrete PLD j, minimised over l in {2^-6, ..., 2^8}; clipped to the support.
fn window(parts: &[(Discrete, u64)], h: f64, tail: f64) -> (f64, f64) {
    let lt = tail.ln();
    let (mut lo, mut hi) = (0.0, 0.0);
    for (p, c) in parts {
        lo += *c as f64 * p.offset as f64 * h;
        hi += *c as f64 * (p.offset + p.masses.len() as i64 - 1) as f64 * h;
    }
    let (sup_lo, sup_hi) = (lo, hi);
    for k in -6..=8 {
        let l = 2f64.powi(k);
        let kp: f64 = parts.iter().map(|(p, c)| *c as f64 * p.log_mgf(l, h)).sum();
        let km: f64 = parts.iter().map(|(p, c)| *c as f64 * p.log_mgf(-l, h)).sum();
        hi = hi.min((kp - lt) / l);
        lo = lo.max((lt - km) / l);
    }
    if !(hi > lo) {
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

/// Convolves the parts (each `count` times) by one forward FFT per part, a pointwise power in
/// polar form, and one inverse FFT; reads the window [lo, hi] out of the circular result.
fn fft_compose(parts: &[(Discrete, u64)], lo: f64, hi: f64, h: f64, tail: f64) -> Result<Composed> {
    let a_idx = (lo / h).floor() as i64;
    let b_idx = (hi / h).ceil() as i64;
    let need = (b_idx - a_idx + 1) as usize;
    let longest = parts.iter().map(|p| p.0.masses.len()).max().unwrap_or(1);
    let n = fft_size(need.max(longest));
    let mut planner = FftPlanner::<f64>::new();
    let fwd = planner.plan_fft_forward(n);
    let inv = planner.plan_fft_inverse(n);
    let mut acc = vec![Complex::new(1.0, 0.0); n];
    let mut offset: i64 = 0;
    let mut log_finite = 0.0; // log of the composed finite mass fraction (1 - inf)^count
    for (p, c) in parts {
        let mut buf = vec![Complex::new(0.0, 0.0); n];
        for (b, &w) in buf.iter_mut().zip(&p.masses) {
            b.re = w;
        }
        fwd.process(&mut buf);
        let cf = *c as f64;
        for (a, z) in acc.iter_mut().zip(&buf) {
            let zc = if *c == 1 {
                *z
            } else {
                let r = z.norm();
                if r == 0.0 {
                    Complex::new(0.0, 0.0)
                } else {
                    Complex::from_polar((cf * r.ln()).exp(), cf * z.arg())
                }
            };
            *a *= zc;
        }
        offset += *c as i64 * p.offset;
        log_finite += cf * (-p.inf_mass).ln_1p();
    }
    inv.process(&mut acc);
    let nf = n as f64;
    let masses: Vec<f64> = (0..need as i64)
        .map(|c| {
            let idx = (a_idx + c - offset).rem_euclid(n as i64) as usize;
            (acc[idx].re / nf).max(0.0)
        })
        .collect();
    ensure!(masses.iter().all(|m| m.is_finite()), Error::Other("PLD composition produced a non-finite mass".into()));
    let inf_mass = -log_finite.exp_m1();
    Ok(Composed { lo_index: a_idx, h, masses, extra: inf_mass + 2.0 * tail })
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

    #[test]
    fn connect_dots_pld_of_a_gaussian_is_tight_and_pessimistic() {
        // The discretised Gaussian, composed once, against the exact curve.
        let s = 1.0;
        let d = Discrete::gaussian(s, 1e-3, 1e-15);
        let parts = vec![(d, 4u64)];
        let (lo, hi) = window(&parts, 1e-3, 1e-15);
        let c = fft_compose(&parts, lo, hi, 1e-3, 1e-15).unwrap();
        for eps in [0.5, 1.0, 2.0, 4.0] {
            let exact = gaussian_delta(s / 2.0, eps);
            let got = c.delta(eps);
            assert!(got >= exact * (1.0 - 1e-9), "eps {eps}: {got} < exact {exact}");
            assert!((got - exact) / exact < 2e-3, "eps {eps}: {got} vs {exact}");
        }
    }

    #[test]
    fn subsampled_gaussian_matches_dp_accounting() {
        // dpsgd_q0.01_s0.8_T1000_d1e-05: eps_pld_dp_accounting = 3.1410183192645444.
        let e = pld_epsilon(&Event::poisson_gaussian(0.01, 0.8).times(1000), 1e-5).unwrap();
        assert!((e - 3.1410183192645444).abs() / 3.14 < 1e-3, "{e}");
    }

    #[test]
    fn delta_curves_are_consistent_at_the_extremes() {
        // Below the smallest loss every outcome counts: delta = 1 - e^eps.
        assert!((delta_remove(0.1, 1.0, -0.2) - (1.0 - (-0.2f64).exp())).abs() < 1e-15);
        assert_eq!(delta_add(0.1, 1.0, 0.2), 0.0);
        assert!(delta_remove(0.1, 1.0, 1.0) > 0.0 && delta_add(0.1, 1.0, 0.05) > 0.0);
    }
}
