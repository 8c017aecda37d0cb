//! Each method's privacy expression and its calibration, in one place.
//!
//! The event algebra and the accountants live in `crate::privacy::accountant` (issue 3). Until that
//! lands on this branch, this file carries a minimal RDP accountant with the exact same events so
//! that training can calibrate and record budgets: Gaussian mechanisms (RDP alpha/(2 sigma^2) per
//! unit of sensitivity), Poisson-subsampled Gaussians at integer orders (Mironov, Talwar & Zhang
//! 2019, Theorem 9's binomial expansion), composition by adding RDP, and the improved conversion of
//! Balle et al. 2020 over Opacus's order grid. Method expressions:
//! - GAP-EDP: K Gaussian hops, sensitivity 1 (thesis Prop. 6).
//! - GAP-NDP: encoder DP-SGD + K hops at sensitivity sqrt(D) + classifier DP-SGD, one sigma (Prop. 7).
//! - ProGAP-EDP: K NAP queries (Theorem 4).  ProGAP-NDP: K NAP at sqrt(D) + (K+1) DP-SGD (Theorem 5).
//! - DP-MLP: DP-SGD alone.
use crate::error::{Error, Result};
use crate::privacy::accountant::{Budget, BudgetComponent, PrivacyUnit};

/// One mechanism of a method's composition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// `count` Gaussian mechanisms with noise multiplier `sigma` and L2 sensitivity `sensitivity`.
    Gaussian { sigma: f64, sensitivity: f64, count: usize },
    /// `steps` Poisson-subsampled Gaussians (rate q, noise multiplier sigma, sensitivity 1).
    PoissonGaussian { q: f64, sigma: f64, steps: usize },
}

fn orders() -> Vec<f64> {
    let mut o: Vec<f64> = (1..100).map(|x| 1.0 + x as f64 / 10.0).collect();
    o.extend((12..64).map(|x| x as f64));
    o
}

fn ln_binom(n: f64, k: f64) -> f64 {
    statrs::function::gamma::ln_gamma(n + 1.0)
        - statrs::function::gamma::ln_gamma(k + 1.0)
        - statrs::function::gamma::ln_gamma(n - k + 1.0)
}

impl Event {
    /// RDP at order alpha (infinite where this accountant has no bound, e.g. fractional orders
    /// of the subsampled Gaussian).
    pub fn rdp(&self, alpha: f64) -> f64 {
        match *self {
            Event::Gaussian { sigma, sensitivity, count } => {
                if count == 0 {
                    return 0.0;
                }
                count as f64 * alpha * sensitivity * sensitivity / (2.0 * sigma * sigma)
            }
            Event::PoissonGaussian { q, sigma, steps } => {
                if steps == 0 {
                    return 0.0;
                }
                if q >= 1.0 {
                    return steps as f64 * alpha / (2.0 * sigma * sigma);
                }
                if alpha.fract() != 0.0 {
                    return f64::INFINITY;
                }
                let a = alpha as i64;
                let terms: Vec<f64> = (0..=a)
                    .map(|k| {
                        let k = k as f64;
                        ln_binom(alpha, k)
                            + (alpha - k) * (1.0 - q).ln()
                            + k * q.ln()
                            + (k * k - k) / (2.0 * sigma * sigma)
                    })
                    .collect();
                let m = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = m + terms.iter().map(|t| (t - m).exp()).sum::<f64>().ln();
                steps as f64 * lse / (alpha - 1.0)
            }
        }
    }
    pub fn describe(&self) -> String {
        match self {
            Event::Gaussian { sigma, sensitivity, count } => {
                format!("Gaussian(sigma={sigma:.4}, sensitivity={sensitivity:.3}) x {count}")
            }
            Event::PoissonGaussian { q, sigma, steps } => {
                format!("PoissonSampledGaussian(q={q:.5}, sigma={sigma:.4}) x {steps} steps")
            }
        }
    }
}

/// (epsilon, best order) of a composition at `delta` (Balle et al. 2020 conversion).
pub fn epsilon(events: &[Event], delta: f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::NAN);
    for a in orders() {
        let rdp: f64 = events.iter().map(|e| e.rdp(a)).sum();
        if !rdp.is_finite() {
            continue;
        }
        let eps = rdp + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0);
        if eps < best.0 {
            best = (eps.max(0.0), a);
        }
    }
    best
}

/// Smallest sigma with epsilon(events(sigma)) <= target (bisection on log sigma).
pub fn calibrate(target: f64, delta: f64, events: impl Fn(f64) -> Vec<Event>) -> Result<f64> {
    let eps_of = |s: f64| epsilon(&events(s), delta).0;
    let (mut lo, mut hi) = (1e-3f64, 1e5f64);
    if eps_of(hi) > target {
        return Err(Error::Unreachable(format!("epsilon {target} at delta {delta:e} needs sigma > {hi:e}")));
    }
    if eps_of(lo) <= target {
        return Ok(lo);
    }
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if eps_of(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi / lo < 1.0 + 1e-9 {
            break;
        }
    }
    Ok(hi)
}

/// Delta below 1/count: 10^-(number of digits of count), the papers' choice.
pub fn default_delta(count: usize) -> f64 {
    let digits = count.max(1).to_string().len() as i32;
    10f64.powi(-digits)
}

/// A method's composition as named components (name, event builder from sigma).
pub struct Expression {
    pub unit: PrivacyUnit,
    pub components: Vec<(String, Box<dyn Fn(f64) -> Event>)>,
}

impl Expression {
    pub fn events(&self, sigma: f64) -> Vec<Event> {
        self.components.iter().map(|(_, f)| f(sigma)).collect()
    }
    /// Calibrates sigma to (target, delta) and returns sigma with the budget it spends.
    pub fn calibrate(&self, target: f64, delta: f64) -> Result<(f64, Budget)> {
        let sigma = calibrate(target, delta, |s| self.events(s))?;
        Ok((sigma, self.budget(sigma, Some(target), delta)))
    }
    /// The budget spent at a given sigma.
    pub fn budget(&self, sigma: f64, target: Option<f64>, delta: f64) -> Budget {
        let events = self.events(sigma);
        let (eps, order) = epsilon(&events, delta);
        let components = self
            .components
            .iter()
            .zip(&events)
            .map(|((name, _), ev)| BudgetComponent {
                name: name.clone(),
                mechanism: ev.describe(),
                epsilon: epsilon(std::slice::from_ref(ev), delta).0,
            })
            .collect();
        Budget {
            privacy_unit: self.unit,
            target_epsilon: target,
            delta,
            epsilon_rdp: eps,
            rdp_order: Some(order),
            epsilon_pld: None,
            noise: vec![("sigma".into(), sigma)],
            components,
        }
    }
}

/// DP-SGD's schedule: sampling rate and number of steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdSchedule {
    pub q: f64,
    pub steps: usize,
}

/// GAP-EDP (thesis Prop. 6): K Gaussian aggregations at edge-level sensitivity 1.
pub fn gap_edge(hops: usize) -> Expression {
    Expression {
        unit: PrivacyUnit::Edge,
        components: vec![(
            format!("PMA ({hops} hops)"),
            Box::new(move |s| Event::Gaussian { sigma: s, sensitivity: 1.0, count: hops }),
        )],
    }
}

/// GAP-NDP (thesis Prop. 7): encoder DP-SGD, K aggregations at node-level sensitivity sqrt(D)
/// (Theorem 3: RDP D K alpha / 2 sigma^2), classifier DP-SGD; one noise multiplier for all.
pub fn gap_node(hops: usize, max_degree: usize, encoder: SgdSchedule, classifier: SgdSchedule) -> Expression {
    let d = (max_degree as f64).sqrt();
    Expression {
        unit: PrivacyUnit::Node,
        components: vec![
            (
                "encoder DP-Adam".into(),
                Box::new(move |s| Event::PoissonGaussian { q: encoder.q, sigma: s, steps: encoder.steps }),
            ),
            (
                format!("PMA ({hops} hops, D={max_degree})"),
                Box::new(move |s| Event::Gaussian { sigma: s, sensitivity: d, count: hops }),
            ),
            (
                "classifier DP-Adam".into(),
                Box::new(move |s| Event::PoissonGaussian { q: classifier.q, sigma: s, steps: classifier.steps }),
            ),
        ],
    }
}

/// ProGAP-EDP (thesis Theorem 4): K NAP queries at sensitivity 1.
pub fn progap_edge(depth: usize) -> Expression {
    Expression {
        unit: PrivacyUnit::Edge,
        components: vec![(
            format!("NAP ({depth} stages)"),
            Box::new(move |s| Event::Gaussian { sigma: s, sensitivity: 1.0, count: depth }),
        )],
    }
}

/// ProGAP-NDP (thesis Theorem 5): K NAP queries at sensitivity sqrt(D) and K+1 DP-SGD runs.
pub fn progap_node(depth: usize, max_degree: usize, per_stage: SgdSchedule) -> Expression {
    let d = (max_degree as f64).sqrt();
    Expression {
        unit: PrivacyUnit::Node,
        components: vec![
            (
                format!("NAP ({depth} stages, D={max_degree})"),
                Box::new(move |s| Event::Gaussian { sigma: s, sensitivity: d, count: depth }),
            ),
            (
                format!("DP-Adam ({} stages)", depth + 1),
                Box::new(move |s| Event::PoissonGaussian {
                    q: per_stage.q,
                    sigma: s,
                    steps: per_stage.steps * (depth + 1),
                }),
            ),
        ],
    }
}

/// DP-MLP: DP-SGD alone.
pub fn dp_sgd(schedule: SgdSchedule) -> Expression {
    Expression {
        unit: PrivacyUnit::Node,
        components: vec![(
            "DP-Adam".into(),
            Box::new(move |s| Event::PoissonGaussian { q: schedule.q, sigma: s, steps: schedule.steps }),
        )],
    }
}
