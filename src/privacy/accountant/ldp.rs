//! Closed forms of the local-DP mechanisms whose epsilons enter budgets as [`super::Event::PureDp`]:
//! generalized randomized response (Kairouz, Bonawitz & Ramage 2016) and the multi-bit mechanism
//! of LPGNN (Sajadmanesh & Gatica-Perez 2021; thesis ch.3, Algorithm 2, Propositions 2-3). The
//! mechanisms themselves live in `privacy::mechanisms`; these are the parameters they must use.

/// Probabilities of k-ary randomized response with `c` classes at epsilon: keep the true class
/// with e^eps/(e^eps + c - 1), report each other class with 1/(e^eps + c - 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RrProbabilities {
    pub p_keep: f64,
    pub p_each_other: f64,
    pub p_flip_total: f64,
}

pub fn randomized_response(epsilon: f64, num_classes: usize) -> RrProbabilities {
    let c = num_classes as f64;
    let ee = epsilon.exp();
    let p_each_other = 1.0 / (ee + c - 1.0);
    RrProbabilities { p_keep: ee / (ee + c - 1.0), p_each_other, p_flip_total: (c - 1.0) * p_each_other }
}

/// Parameters of the multi-bit encoder/rectifier for d features in [a, b] at epsilon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultiBit {
    /// Number of sampled dimensions m* = max(1, min(d, floor(eps/2.18))) (Proposition 3; 2.18 is
    /// the rounded root of z = sinh(z)/2).
    pub m: usize,
    /// Rectifier x' = scale * x* + offset (eq. 3.10): scale = d(b-a)/(2m) (e^{eps/m}+1)/(e^{eps/m}-1).
    pub rectifier_scale: f64,
    pub rectifier_offset: f64,
}

/// (e^z + 1)/(e^z - 1) evaluated as (expm1(z) + 2)/expm1(z).
fn coth_half(z: f64) -> f64 {
    let e = z.exp_m1();
    (e + 2.0) / e
}

impl MultiBit {
    pub fn new(epsilon: f64, d: usize, a: f64, b: f64) -> MultiBit {
        let m = ((epsilon / 2.18).floor() as usize).min(d).max(1);
        let z = epsilon / m as f64;
        MultiBit {
            m,
            rectifier_scale: d as f64 * (b - a) / (2.0 * m as f64) * coth_half(z),
            rectifier_offset: (a + b) / 2.0,
        }
    }

    /// Probability that the encoder emits +1 for a sampled coordinate with value x (Algorithm 2):
    /// 1/(e^{eps/m}+1) + (x-a)/(b-a) (e^{eps/m}-1)/(e^{eps/m}+1).
    pub fn p_plus(&self, epsilon: f64, x: f64, a: f64, b: f64) -> f64 {
        let z = epsilon / self.m as f64;
        let ez = z.exp();
        1.0 / (ez + 1.0) + (x - a) / (b - a) * (ez - 1.0) / (ez + 1.0)
    }

    /// Variance of the rectified value (Proposition 2):
    /// d/m ((b-a)/2 (e^{eps/m}+1)/(e^{eps/m}-1))^2 - (x - (a+b)/2)^2.
    pub fn variance(&self, epsilon: f64, d: usize, x: f64, a: f64, b: f64) -> f64 {
        let z = epsilon / self.m as f64;
        let t = (b - a) / 2.0 * coth_half(z);
        d as f64 / self.m as f64 * t * t - (x - (a + b) / 2.0).powi(2)
    }
}
