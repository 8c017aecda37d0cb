//! The Gaussian aggregation of GAP (PMA, thesis Algorithm 5) and ProGAP (NAP, Eq. 5.8) as a
//! mechanism with its worst-case neighbouring pair, for the mechanism-level audit.
//!
//! Each hop releases `A^T X + N(0, s^2 I)` on row-normalised X (see
//! `models::aggregation::perturbed_sum`). At edge level one edge u -> v changes row v by the unit
//! vector x_u: sensitivity 1. At node level with degree bound D a node changes at most D rows by
//! a unit vector each: sensitivity sqrt(D) (GAP Lemma 2). The worst case attains the sensitivity
//! at every hop, and the projection of each hop's release on the (known) difference is a
//! sufficient statistic: N(sqrt(D), s^2) with the unit, N(0, s^2) without. Sampling these
//! projections instead of whole matrices is exact and makes 10^6 runs cheap. Over K hops the
//! standardised sum is N(mu, 1) vs N(0, 1) with mu = sqrt(K D) / s: an exactly Gaussian
//! trade-off curve, for which the `gdp` bound is valid.
use super::audit::{
    gaussian_candidates, paired_draws, require, require_delta, require_noise_factor, AuditPair, Candidate, Claim,
};
use crate::error::Result;
use crate::privacy::accountant::analytic::gaussian_sigma;
use crate::privacy::accountant::{budget, Event, PrivacyUnit};
use gnnaudit_attacks::stats::BoundKind;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// The privacy level of the aggregation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    Edge,
    /// Node level with in-degree bound D.
    Node {
        degree: u64,
    },
}

/// K Gaussian aggregations with noise std `std` per entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianAggregation {
    pub level: Level,
    pub hops: u64,
    /// The noise std the mechanism adds (GAP's sigma at edge level, sigma * sqrt(D) at node level).
    pub std: f64,
}

impl GaussianAggregation {
    pub fn new(level: Level, hops: u64, std: f64) -> Result<Self> {
        require(std.is_finite() && std > 0.0, "--sigma", format!("must be > 0 and finite, got {std}"))?;
        require(hops >= 1, "--hops", format!("must be at least 1, got {hops}"))?;
        if let Level::Node { degree } = level {
            require(degree >= 1, "--degree", format!("the degree bound must be at least 1, got {degree}"))?;
        }
        Ok(GaussianAggregation { level, hops, std })
    }

    /// The L2 sensitivity of one hop's release.
    pub fn sensitivity(&self) -> f64 {
        match self.level {
            Level::Edge => 1.0,
            Level::Node { degree } => (degree as f64).sqrt(),
        }
    }

    /// The accountant's event, as `methods::gap_edge` / the PMA part of `methods::gap_node_general`
    /// write it.
    pub fn event(&self) -> Event {
        match self.level {
            Level::Edge => crate::privacy::accountant::methods::gap_edge(self.hops, self.std),
            Level::Node { .. } => Event::gaussian(self.std)
                .scaled(self.sensitivity())
                .times(self.hops)
                .labelled("PMA aggregation (node sensitivity sqrt(D))"),
        }
    }

    /// The noise std meeting (eps, delta): K Gaussians of sensitivity Delta compose into one with
    /// multiplier std / (Delta sqrt(K)), calibrated with the exact analytic Gaussian.
    pub fn calibrated_std(level: Level, hops: u64, epsilon: f64, delta: f64) -> Result<f64> {
        require(epsilon > 0.0 && epsilon.is_finite(), "--epsilon", format!("must be > 0 and finite, got {epsilon}"))?;
        require_delta(delta)?;
        let probe = GaussianAggregation::new(level, hops, 1.0)?;
        Ok(gaussian_sigma(epsilon, delta)? * probe.sensitivity() * (hops as f64).sqrt())
    }

    /// mu of the standardised statistic: sqrt(K) Delta / std.
    pub fn mu(&self) -> f64 {
        (self.hops as f64).sqrt() * self.sensitivity() / self.std
    }
}

/// The aggregation with a claim: the accountant prices `claimed` (the calibrated mechanism),
/// while the mechanism actually run is `run` (equal unless a fault is injected on purpose).
pub struct GaussianPair {
    pub claimed: GaussianAggregation,
    pub run: GaussianAggregation,
    pub delta: f64,
}

impl GaussianPair {
    pub fn new(mechanism: GaussianAggregation, delta: f64) -> Result<Self> {
        require_delta(delta)?;
        Ok(GaussianPair { claimed: mechanism, run: mechanism, delta })
    }
    /// Fault injection: run with `factor` times the claimed noise (a mis-calibrated accountant).
    pub fn with_noise_factor(mut self, factor: f64) -> Result<Self> {
        require_noise_factor(factor)?;
        self.run.std = self.claimed.std * factor;
        Ok(self)
    }
    /// One run on the positive (with the unit) or negative input: the standardised sum of the
    /// hops' projections on the difference.
    fn draw(&self, with_unit: bool, rng: &mut ChaCha8Rng) -> f64 {
        let (delta, s, k) = (self.run.sensitivity(), self.run.std, self.run.hops);
        let total: f64 = (0..k)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                if with_unit {
                    delta + s * z
                } else {
                    s * z
                }
            })
            .sum();
        // Standardise with the claimed mechanism's scale (what the auditor believes).
        total / (self.claimed.std * (k as f64).sqrt())
    }
}

impl AuditPair for GaussianPair {
    fn name(&self) -> &'static str {
        "gaussian"
    }
    fn params(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "level": match self.claimed.level { Level::Edge => "edge", Level::Node { .. } => "node" },
            "hops": self.claimed.hops,
            "std": self.claimed.std,
            "sensitivity": self.claimed.sensitivity(),
        });
        if let Level::Node { degree } = self.claimed.level {
            v["degree"] = degree.into();
        }
        if self.run.std != self.claimed.std {
            v["run_std"] = self.run.std.into();
        }
        v
    }
    fn claim(&self) -> Result<Claim> {
        let event = self.claimed.event();
        let unit = match self.claimed.level {
            Level::Edge => PrivacyUnit::Edge,
            Level::Node { .. } => PrivacyUnit::Node,
        };
        let b = budget(&event, unit, None, self.delta, vec![("std".into(), self.claimed.std)])?;
        Ok(Claim { epsilon: b.claimed_epsilon(), delta: self.delta, event, paper_epsilon: None })
    }
    fn bound(&self) -> BoundKind {
        BoundKind::Gdp
    }
    fn statistic(&self) -> String {
        "sum over hops of the release's projection on the neighbouring difference, standardised (N(mu, 1) vs N(0, 1))"
            .into()
    }
    fn candidates(&self) -> Vec<Candidate> {
        gaussian_candidates(self.claimed.mu())
    }
    fn sample(&self, trials: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
        paired_draws(trials, rng, |with_unit, rng| self.draw(with_unit, rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::mechanisms::audit::run;
    use gnnaudit_attacks::stats::Verdict;

    fn audit(level: Level, hops: u64, eps: f64, factor: f64) -> crate::privacy::mechanisms::audit::MechanismAudit {
        let std = GaussianAggregation::calibrated_std(level, hops, eps, 1e-5).unwrap();
        let pair = GaussianPair::new(GaussianAggregation::new(level, hops, std).unwrap(), 1e-5).unwrap();
        run(&pair.with_noise_factor(factor).unwrap(), 1_000_000, 5, 0.95, false).unwrap()
    }

    /// The accountant's claim of the calibrated aggregation is the target, and the audit reaches
    /// >= 0.6 of it at (1, 1e-5) and (4, 1e-5), edge and node level, never above it.
    #[test]
    fn mechanism_audit_is_tight_and_not_refuted() {
        for (level, hops) in [(Level::Edge, 1), (Level::Edge, 3), (Level::Node { degree: 10 }, 2)] {
            for eps in [1.0, 4.0] {
                let r = audit(level, hops, eps, 1.0);
                assert!((r.claimed_epsilon - eps).abs() < 0.02 * eps, "{level:?}: claim {}", r.claimed_epsilon);
                assert!(
                    r.tightness >= 0.6 && r.eps_lb <= r.claimed_epsilon,
                    "{level:?} K {hops} eps {eps}: {}",
                    r.eps_lb
                );
                assert_eq!(r.verdict, Verdict::NotRefuted);
            }
        }
    }

    /// Sigma 10x too small for the claim: the audit must refute it.
    #[test]
    fn miscalibrated_noise_is_violated() {
        let r = audit(Level::Edge, 1, 1.0, 0.1);
        assert_eq!(r.verdict, Verdict::Violated, "eps_lb {}", r.eps_lb);
        assert!(r.eps_lb > 5.0);
        let r = audit(Level::Node { degree: 20 }, 2, 4.0, 0.5);
        assert_eq!(r.verdict, Verdict::Violated, "eps_lb {}", r.eps_lb);
    }

    #[test]
    fn sensitivity_and_calibration_follow_gap() {
        let node = GaussianAggregation::new(Level::Node { degree: 16 }, 2, 1.0).unwrap();
        assert_eq!(node.sensitivity(), 4.0);
        assert!(GaussianAggregation::new(Level::Node { degree: 0 }, 1, 1.0).is_err());
        assert!(GaussianAggregation::new(Level::Edge, 1, 0.0).is_err());
        // K hops at std s compose like one hop at s / sqrt(K).
        let a = GaussianAggregation::calibrated_std(Level::Edge, 4, 1.0, 1e-5).unwrap();
        let b = GaussianAggregation::calibrated_std(Level::Edge, 1, 1.0, 1e-5).unwrap();
        assert!((a / b - 2.0).abs() < 1e-9);
    }
}
