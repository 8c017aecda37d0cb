//! One DP-SGD step (Abadi et al. 2016; `privacy::dpsgd`) as a mechanism with its worst-case
//! neighbouring pair, for the mechanism-level audit.
//!
//! The pair is a batch pool with and without one canary sample whose gradient is far longer than
//! the clipping bound C and points in a direction no other sample's gradient has (the gradient
//! canary of Nasr et al. 2023; the other samples' clipped sum is known to the auditor and
//! subtracted). The step clips the canary's gradient with the engine's own clip factor, includes
//! it with probability q (Poisson sampling), and adds N(0, (sigma C)^2) per coordinate. The
//! projection of the noisy sum on the canary's direction, divided by sigma C, is sufficient:
//! (1 - q) N(0, 1) + q N(c / (sigma C), 1) with the canary (c its clipped norm), N(0, 1) without.
//!
//! With q = 1 the trade-off curve is exactly Gaussian and the `gdp` bound is valid; with q < 1 it
//! is a mixture, for which only the Clopper-Pearson bound is valid.
use super::audit::{require, require_delta, require_noise_factor, std_normal, AuditPair, Candidate, Claim};
use crate::error::Result;
use crate::privacy::accountant::analytic::gaussian_sigma;
use crate::privacy::accountant::pld::pld_epsilon;
use crate::privacy::accountant::{budget, calibrate_with, Event, PrivacyUnit};
use crate::privacy::dpsgd::clip_factor;
use gnnaudit_attacks::stats::BoundKind;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use statrs::distribution::ContinuousCDF;

/// Length of the canary's raw gradient, in units of C: far beyond the bound, so clipping acts.
pub const CANARY_NORM: f64 = 10.0;

/// One DP-SGD step: Poisson rate q, clipping bound C, noise multiplier sigma.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpSgdStep {
    pub sample_rate: f64,
    pub max_grad_norm: f64,
    pub noise_multiplier: f64,
}

impl DpSgdStep {
    pub fn new(sample_rate: f64, max_grad_norm: f64, noise_multiplier: f64) -> Result<Self> {
        require(
            sample_rate > 0.0 && sample_rate <= 1.0,
            "--sample-rate",
            format!("must be in (0, 1], got {sample_rate}"),
        )?;
        require(
            max_grad_norm.is_finite() && max_grad_norm > 0.0,
            "--clip",
            format!("must be > 0 and finite, got {max_grad_norm}"),
        )?;
        require(
            noise_multiplier.is_finite() && noise_multiplier > 0.0,
            "--sigma",
            format!("must be > 0 and finite, got {noise_multiplier}"),
        )?;
        Ok(DpSgdStep { sample_rate, max_grad_norm, noise_multiplier })
    }

    /// The accountant's event of one step.
    pub fn event(&self) -> Event {
        if self.sample_rate >= 1.0 {
            Event::gaussian(self.noise_multiplier).labelled("DP-SGD step (full batch)")
        } else {
            Event::poisson_gaussian(self.sample_rate, self.noise_multiplier).labelled("DP-SGD step")
        }
    }

    /// The smallest noise multiplier meeting (eps, delta) for one step: the exact analytic
    /// Gaussian at q = 1, the PLD accountant otherwise.
    pub fn calibrated_sigma(sample_rate: f64, epsilon: f64, delta: f64) -> Result<f64> {
        require(epsilon > 0.0 && epsilon.is_finite(), "--epsilon", format!("must be > 0 and finite, got {epsilon}"))?;
        require_delta(delta)?;
        DpSgdStep::new(sample_rate, 1.0, 1.0)?;
        if sample_rate >= 1.0 {
            gaussian_sigma(epsilon, delta)
        } else {
            calibrate_with(epsilon, delta, |s| Event::poisson_gaussian(sample_rate, s), pld_epsilon)
        }
    }

    /// The canary's clipped norm, through the engine's clip factor.
    pub fn clipped_canary_norm(&self) -> f64 {
        let raw = CANARY_NORM * self.max_grad_norm;
        let f = clip_factor(&tch::Tensor::from_slice(&[raw]), self.max_grad_norm).double_value(&[0]);
        raw * f
    }
}

/// The step with a claim (`claimed`) and the step actually run (`run`; differs only under fault
/// injection).
pub struct DpSgdStepPair {
    pub claimed: DpSgdStep,
    pub run: DpSgdStep,
    pub delta: f64,
}

impl DpSgdStepPair {
    pub fn new(step: DpSgdStep, delta: f64) -> Result<Self> {
        require_delta(delta)?;
        Ok(DpSgdStepPair { claimed: step, run: step, delta })
    }
    pub fn with_noise_factor(mut self, factor: f64) -> Result<Self> {
        require_noise_factor(factor)?;
        self.run.noise_multiplier = self.claimed.noise_multiplier * factor;
        Ok(self)
    }
    fn mu(&self) -> f64 {
        self.claimed.clipped_canary_norm() / (self.claimed.noise_multiplier * self.claimed.max_grad_norm)
    }
}

impl AuditPair for DpSgdStepPair {
    fn name(&self) -> &'static str {
        "dp-sgd-step"
    }
    fn params(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "sample_rate": self.claimed.sample_rate,
            "clip": self.claimed.max_grad_norm,
            "sigma": self.claimed.noise_multiplier,
            "canary_norm": CANARY_NORM * self.claimed.max_grad_norm,
        });
        if self.run.noise_multiplier != self.claimed.noise_multiplier {
            v["run_sigma"] = self.run.noise_multiplier.into();
        }
        v
    }
    fn claim(&self) -> Result<Claim> {
        let event = self.claimed.event();
        let b =
            budget(&event, PrivacyUnit::Node, None, self.delta, vec![("sigma".into(), self.claimed.noise_multiplier)])?;
        Ok(Claim { epsilon: b.claimed_epsilon(), delta: self.delta, event, paper_epsilon: None })
    }
    fn bound(&self) -> BoundKind {
        if self.claimed.sample_rate >= 1.0 {
            BoundKind::Gdp
        } else {
            BoundKind::ClopperPearson
        }
    }
    fn statistic(&self) -> String {
        "projection of the noisy clipped-gradient sum on the canary's direction, over sigma C".into()
    }
    fn candidates(&self) -> Vec<Candidate> {
        let (mu, q, z) = (self.mu(), self.claimed.sample_rate, std_normal());
        (0..=1200)
            .map(|i| {
                let t = (i as f64 - 200.0) / 100.0;
                Candidate { threshold: t, tpr: (1.0 - q) * z.sf(t) + q * z.sf(t - mu), fpr: z.sf(t) }
            })
            .collect()
    }
    fn sample(&self, trials: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
        let c = self.run.clipped_canary_norm();
        let std = self.run.noise_multiplier * self.run.max_grad_norm;
        let scale = self.claimed.noise_multiplier * self.claimed.max_grad_norm;
        let mut draw = |with_canary: bool| -> Vec<f64> {
            (0..trials)
                .map(|_| {
                    let included = with_canary && rng.gen::<f64>() < self.run.sample_rate;
                    let z: f64 = StandardNormal.sample(rng);
                    (if included { c } else { 0.0 } + std * z) / scale
                })
                .collect()
        };
        let pos = draw(true);
        let neg = draw(false);
        (pos, neg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::mechanisms::audit::run;
    use gnnaudit_attacks::stats::Verdict;

    fn pair(q: f64, eps: f64) -> DpSgdStepPair {
        let sigma = DpSgdStep::calibrated_sigma(q, eps, 1e-5).unwrap();
        DpSgdStepPair::new(DpSgdStep::new(q, 1.0, sigma).unwrap(), 1e-5).unwrap()
    }

    /// A full-batch step (exactly Gaussian): >= 0.6 of the claim at eps 1 and 4, never above.
    /// With Poisson rate 0.01 the Clopper-Pearson bound holds the claim.
    #[test]
    fn mechanism_audit_is_tight_and_not_refuted() {
        for eps in [1.0, 4.0] {
            let r = run(&pair(1.0, eps), 1_000_000, 6, 0.95, false).unwrap();
            assert!(r.tightness >= 0.6 && r.eps_lb <= r.claimed_epsilon, "eps {eps}: eps_lb {}", r.eps_lb);
            assert_eq!(r.verdict, Verdict::NotRefuted);
        }
        let p = pair(0.01, 1.0);
        assert_eq!(p.bound(), BoundKind::ClopperPearson);
        let r = run(&p, 1_000_000, 7, 0.95, false).unwrap();
        assert!((r.claimed_epsilon - 1.0).abs() < 0.01, "claim {}", r.claimed_epsilon);
        assert!(r.eps_lb > 0.3 && r.eps_lb <= r.claimed_epsilon, "q 0.01: eps_lb {}", r.eps_lb);
        assert_eq!(r.verdict, Verdict::NotRefuted);
    }

    /// The engine's clip factor bounds the canary's contribution by C.
    #[test]
    fn canary_is_clipped_to_the_bound() {
        let s = DpSgdStep::new(0.5, 2.0, 1.0).unwrap();
        let c = s.clipped_canary_norm();
        assert!(c <= 2.0 && c > 2.0 * (1.0 - 1e-6), "{c}");
    }

    /// Noise 10x too small for the claimed step: violated, with Poisson sampling too.
    #[test]
    fn miscalibrated_noise_is_violated() {
        for q in [1.0, 0.01] {
            let r = run(&pair(q, 1.0).with_noise_factor(0.1).unwrap(), 1_000_000, 8, 0.95, false).unwrap();
            assert_eq!(r.verdict, Verdict::Violated, "q {q}: eps_lb {}", r.eps_lb);
        }
    }
}
