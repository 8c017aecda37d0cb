//! The one-bit PGC mechanism of "When Differential Privacy Meets GNNs" (Sajadmanesh thesis ch.2,
//! eq. 2.3 and the de-biasing of eq. 2.5): every scalar feature
//! x in [a, b] of a node is sent as one bit y with
//!   P[y = 1 | x] = 1/(e^eps + 1) + ((x - a)/(b - a)) (e^eps - 1)/(e^eps + 1),
//! and the server de-biases y* = ((e^eps + 1) y - 1)/(e^eps - 1) (b - a) + a, so E[y*] = x.
//!
//! Privacy unit. Each feature spends eps (Lemma 1), and the d features of a record are randomised
//! independently, so a node's record is d eps-LDP (basic composition, tight here): the record-level
//! claim is d eps, with eps per feature a detail.
use super::audit::{
    binomial_pmf, discrete_candidates, paired_draws, require, require_range, AuditPair, Candidate, Claim,
};
use crate::error::Result;
use crate::privacy::accountant::Event;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// One-bit PGC with budget `epsilon` per feature on [low, high].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pgc {
    epsilon: f64,
    low: f64,
    high: f64,
}

impl Pgc {
    pub fn new(epsilon: f64, low: f64, high: f64) -> Result<Self> {
        require(epsilon > 0.0 && epsilon.is_finite(), "--epsilon", format!("must be > 0 and finite, got {epsilon}"))?;
        require_range(low, high)?;
        Ok(Pgc { epsilon, low, high })
    }

    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// P[y = 1 | x] (eq. 2.3); x is clipped into [a, b] first, as the node does (l.694).
    pub fn p_one(&self, x: f64) -> f64 {
        let t = ((x - self.low) / (self.high - self.low)).clamp(0.0, 1.0);
        1.0 / (self.epsilon.exp() + 1.0) + t * (self.epsilon / 2.0).tanh()
    }

    /// One bit for the value x.
    pub fn encode<R: Rng>(&self, x: f64, rng: &mut R) -> u8 {
        (rng.gen::<f64>() < self.p_one(x)) as u8
    }

    /// The unbiased estimate y* of eq. 2.5.
    pub fn debias(&self, y: u8) -> f64 {
        let e = self.epsilon.exp();
        ((e + 1.0) * y as f64 - 1.0) / (e - 1.0) * (self.high - self.low) + self.low
    }

    /// Var[y*] = Delta^2 e^eps/(e^eps - 1)^2 + (x - a)(b - x) (Lemma 4, eq. 2.11).
    pub fn variance(&self, x: f64) -> f64 {
        let (e, span) = (self.epsilon.exp(), self.high - self.low);
        span * span * e / ((e - 1.0) * (e - 1.0)) + (x - self.low) * (self.high - x)
    }

    /// The record-level event of d features: eps per feature, composed d times.
    pub fn record_event(&self, features: usize) -> Event {
        Event::PureDp { epsilon: self.epsilon }.labelled("PGC, one feature").times(features as u64)
    }
}

/// The worst-case pair of PGC at record level: the all-b and the all-a record of d features. The
/// likelihood ratio of a report with k ones is e^{eps (2k - d)}, so k is the likelihood-ratio
/// statistic, ~ Bin(d, e^eps/(e^eps + 1)) vs Bin(d, 1/(e^eps + 1)); the claim is d eps.
pub struct PgcPair {
    pub pgc: Pgc,
    pub features: usize,
}

impl PgcPair {
    pub fn new(epsilon: f64, features: usize) -> Result<Self> {
        require(features >= 1, "--features", format!("must be at least 1, got {features}"))?;
        Ok(PgcPair { pgc: Pgc::new(epsilon, 0.0, 1.0)?, features })
    }
    fn ones(&self, x: f64, rng: &mut ChaCha8Rng) -> f64 {
        (0..self.features).map(|_| self.pgc.encode(x, rng) as u32).sum::<u32>() as f64
    }
}

impl AuditPair for PgcPair {
    fn name(&self) -> &'static str {
        "pgc"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "epsilon_per_feature": self.pgc.epsilon, "features": self.features })
    }
    fn claim(&self) -> Result<Claim> {
        let event = self.pgc.record_event(self.features);
        Ok(Claim::pure(event))
    }
    fn statistic(&self) -> String {
        "number of bits equal to 1 (records all-1 vs all-0 in [0, 1]^d)".into()
    }
    fn candidates(&self) -> Vec<Candidate> {
        let d = self.features;
        discrete_candidates(&binomial_pmf(d, self.pgc.p_one(1.0)), &binomial_pmf(d, self.pgc.p_one(0.0)))
    }
    fn sample(&self, trials: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
        paired_draws(trials, rng, |all_ones, rng| self.ones(if all_ones { 1.0 } else { 0.0 }, rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::mechanisms::audit::run;
    use gnnaudit_attacks::stats::Verdict;
    use rand::SeedableRng;

    /// Lemma 2 (E[y*] = x) and Lemma 4 (eq. 2.11) by Monte Carlo, fixed seed.
    #[test]
    fn debiased_bits_are_unbiased_with_the_stated_variance() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let n = 400_000;
        for (eps, x) in [(1.0, 0.0), (1.0, 0.5), (3.0, 0.8)] {
            let pgc = Pgc::new(eps, 0.0, 1.0).unwrap();
            let ys: Vec<f64> = (0..n).map(|_| pgc.debias(pgc.encode(x, &mut rng))).collect();
            let mean = ys.iter().sum::<f64>() / n as f64;
            let var = ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let v = pgc.variance(x);
            assert!((mean - x).abs() < 5.0 * (v / n as f64).sqrt(), "eps {eps} x {x}: mean {mean}");
            assert!((var / v - 1.0).abs() < 0.02, "eps {eps} x {x}: var {var} vs {v}");
        }
        // The range is public: values outside are clipped.
        let pgc = Pgc::new(1.0, 0.0, 1.0).unwrap();
        assert_eq!(pgc.p_one(2.0), pgc.p_one(1.0));
        assert!(((pgc.p_one(1.0) / pgc.p_one(0.0)).ln() - 1.0).abs() < 1e-12);
    }

    /// Negative control of the GRR-FS showcase: the record-level claim d eps holds; with d = 1
    /// the audit is tight (>= 0.9 at eps 1).
    #[test]
    fn mechanism_audit_does_not_refute_the_record_level_claim() {
        let r = run(&PgcPair::new(1.0, 1).unwrap(), 1_000_000, 11, 0.95, false).unwrap();
        assert!(r.tightness >= 0.9 && r.eps_lb <= 1.0, "d 1: {}", r.eps_lb);
        assert_eq!(r.verdict, Verdict::NotRefuted);
        let r = run(&PgcPair::new(0.1, 58).unwrap(), 1_000_000, 12, 0.95, false).unwrap();
        assert!((r.claimed_epsilon - 5.8).abs() < 1e-9);
        assert!(r.eps_lb > 0.5 && r.eps_lb <= r.claimed_epsilon, "d 58: {}", r.eps_lb);
        assert_eq!(r.verdict, Verdict::NotRefuted);
        assert!(PgcPair::new(0.0, 3).is_err() && PgcPair::new(1.0, 0).is_err());
    }
}
