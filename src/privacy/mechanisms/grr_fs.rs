//! GRR-FS, RGNN's user-side feature randomiser (Bhaila et al., seed 001, l.98-102 and eq. 6): a user samples m of its d categorical features uniformly
//! without replacement (as the reference `perturb.py` does), reports each sampled feature through
//! generalized randomized response with budget eps_x, and each other feature as a uniform value
//! of its domain. The server does not learn which features were sampled.
//!
//! Privacy. The paper's Theorem 1 claims eps_X = ln(1 + (m/d)(e^{m eps_x} - 1)) by amplification
//! by subsampling, but the subsampling is over coordinates of one user's own record, every one of
//! which is reported. For records that differ in every coordinate and the report equal to the
//! first, every sampled set S gives the ratio (p/q)^m = e^{m eps_x}, and no ratio is larger: the
//! mechanism is exactly m eps_x-LDP. The sound claim is m eps_x; the paper's
//! is kept as `paper_epsilon`, and the mechanism audit refutes it.
use super::audit::{binomial_pmf, convolve, discrete_candidates, require, AuditPair, Candidate, Claim};
use crate::error::Result;
use crate::privacy::accountant::Event;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// GRR-FS on records with `domains[i]` categories in feature i.
#[derive(Debug, Clone, PartialEq)]
pub struct GrrFs {
    epsilon_x: f64,
    sampled: usize,
    domains: Vec<usize>,
}

impl GrrFs {
    /// `epsilon_x` per sampled feature, `sampled` = m of d = `domains.len()` features.
    pub fn new(epsilon_x: f64, sampled: usize, domains: Vec<usize>) -> Result<Self> {
        require(
            epsilon_x > 0.0 && epsilon_x.is_finite(),
            "--epsilon",
            format!("eps_x must be > 0 and finite, got {epsilon_x}"),
        )?;
        let d = domains.len();
        require(d >= 1, "--features", "GRR-FS needs at least one feature")?;
        require(sampled >= 1 && sampled <= d, "--sampled", format!("m must be in 1..={d}, got {sampled}"))?;
        if let Some(i) = domains.iter().position(|&g| g < 2) {
            return Err(crate::error::Error::invalid(
                "features",
                format!("feature {i} has {} categories; GRR needs at least 2", domains[i]),
            ));
        }
        Ok(GrrFs { epsilon_x, sampled, domains })
    }

    /// Binary features (cora's 58 grouped features).
    pub fn binary(epsilon_x: f64, sampled: usize, features: usize) -> Result<Self> {
        require(features >= 1, "--features", format!("must be at least 1, got {features}"))?;
        GrrFs::new(epsilon_x, sampled, vec![2; features])
    }

    pub fn epsilon_x(&self) -> f64 {
        self.epsilon_x
    }
    pub fn sampled(&self) -> usize {
        self.sampled
    }
    pub fn features(&self) -> usize {
        self.domains.len()
    }

    /// GRR's keep probability for a feature with `gamma` categories: e^eps/(e^eps + gamma - 1).
    pub fn p_keep(&self, gamma: usize) -> f64 {
        1.0 / (1.0 + (gamma as f64 - 1.0) * (-self.epsilon_x).exp())
    }

    /// The sound budget: m GRR releases of eps_x each (exactly m eps_x, module docs).
    pub fn event(&self) -> Event {
        Event::PureDp { epsilon: self.epsilon_x }.labelled("GRR on one sampled feature").times(self.sampled as u64)
    }

    /// The paper's Theorem 1 claim ln(1 + (m/d)(e^{m eps_x} - 1)), which is wrong.
    pub fn paper_epsilon(&self) -> f64 {
        let (m, d) = (self.sampled as f64, self.features() as f64);
        (m / d * (m * self.epsilon_x).exp_m1()).ln_1p()
    }

    /// One report of record `x` into `out`; `order` is scratch space of length d.
    pub fn perturb_into<R: Rng>(&self, x: &[usize], order: &mut Vec<usize>, out: &mut [usize], rng: &mut R) {
        let d = self.features();
        order.clear();
        order.extend(0..d);
        // The first m of a partial Fisher-Yates shuffle: m of d without replacement.
        for i in 0..self.sampled {
            let j = rng.gen_range(i..d);
            order.swap(i, j);
        }
        // Unsampled features: uniform values (binary ones from the bits of one 64-bit word).
        let mut bits = 0u64;
        for (i, o) in out.iter_mut().enumerate() {
            let gamma = self.domains[i];
            *o = if gamma == 2 {
                if i % 64 == 0 {
                    bits = rng.next_u64();
                }
                ((bits >> (i % 64)) & 1) as usize
            } else {
                rng.gen_range(0..gamma)
            };
        }
        for &i in &order[..self.sampled] {
            let gamma = self.domains[i];
            out[i] =
                if rng.gen::<f64>() < self.p_keep(gamma) { x[i] } else { (x[i] + rng.gen_range(1..gamma)) % gamma };
        }
    }

    /// One report of record `x`.
    pub fn perturb<R: Rng>(&self, x: &[usize], rng: &mut R) -> Vec<usize> {
        let mut out = vec![0; self.features()];
        self.perturb_into(x, &mut Vec::with_capacity(self.features()), &mut out, rng);
        out
    }
}

/// The worst-case pair of GRR-FS on binary features: the all-1 and the all-0 record. The
/// likelihood of a report depends only on its number k of ones and increases with it, so k is
/// the likelihood-ratio statistic; under the all-1 record k ~ Bin(m, p) + Bin(d - m, 1/2), under
/// the all-0 record Bin(m, 1 - p) + Bin(d - m, 1/2).
pub struct GrrFsPair {
    pub mechanism: GrrFs,
}

impl GrrFsPair {
    pub fn new(mechanism: GrrFs) -> Result<Self> {
        require(
            mechanism.domains.iter().all(|&g| g == 2),
            "features",
            "the GRR-FS audit pair is defined on binary features",
        )?;
        Ok(GrrFsPair { mechanism })
    }
    fn pmf(&self, p: f64) -> Vec<f64> {
        let m = self.mechanism.sampled;
        convolve(&binomial_pmf(m, p), &binomial_pmf(self.mechanism.features() - m, 0.5))
    }
    fn ones(&self, value: usize, trials: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let d = self.mechanism.features();
        let x = vec![value; d];
        let (mut order, mut out) = (Vec::with_capacity(d), vec![0; d]);
        (0..trials)
            .map(|_| {
                self.mechanism.perturb_into(&x, &mut order, &mut out, rng);
                out.iter().sum::<usize>() as f64
            })
            .collect()
    }
}

impl AuditPair for GrrFsPair {
    fn name(&self) -> &'static str {
        "grr-fs"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "epsilon_x": self.mechanism.epsilon_x,
            "features": self.mechanism.features(),
            "sampled": self.mechanism.sampled,
        })
    }
    fn claim(&self) -> Result<Claim> {
        let event = self.mechanism.event();
        Ok(Claim {
            epsilon: event.pure_epsilon(),
            delta: 0.0,
            event,
            paper_epsilon: Some(self.mechanism.paper_epsilon()),
        })
    }
    fn statistic(&self) -> String {
        "number of features reported as 1 (records all-1 vs all-0)".into()
    }
    fn candidates(&self) -> Vec<Candidate> {
        let p = self.mechanism.p_keep(2);
        discrete_candidates(&self.pmf(p), &self.pmf(1.0 - p))
    }
    fn sample(&self, trials: usize, rng: &mut ChaCha8Rng) -> (Vec<f64>, Vec<f64>) {
        let pos = self.ones(1, trials, rng);
        let neg = self.ones(0, trials, rng);
        (pos, neg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The spec's table (section 2.1): Theorem 1 on Cora's 58 features with m = 10.
    #[test]
    fn paper_epsilon_matches_the_spec_table() {
        let cases = [(58, 1.0, 8.24), (58, 0.1, 0.2595), (58, 0.01, 0.0180), (53, 0.1, 0.281), (33, 0.1, 0.419)];
        for (d, eps, want) in cases {
            let g = GrrFs::binary(eps, 10, d).unwrap();
            let tol = if want > 1.0 { 0.005 } else { 0.0005 };
            assert!((g.paper_epsilon() - want).abs() < tol, "d {d} eps {eps}: {}", g.paper_epsilon());
            assert!((g.event().pure_epsilon() - 10.0 * eps).abs() < 1e-12);
        }
    }

    /// The exact level is m eps_x: the likelihood ratio of the all-1 report under the all-1 and
    /// the all-0 records, averaged over every sampled set, is e^{m eps_x}. Computed from the pmfs
    /// the audit plans with (P[k = d] ratio).
    #[test]
    fn exact_ratio_of_the_extreme_report_is_m_eps() {
        let pair = GrrFsPair::new(GrrFs::binary(0.1, 10, 58).unwrap()).unwrap();
        let p = pair.mechanism.p_keep(2);
        let (a, b) = (pair.pmf(p), pair.pmf(1.0 - p));
        assert!(((a[58] / b[58]).ln() - 1.0).abs() < 1e-9);
        // and the ratio grows with k (a likelihood-ratio statistic).
        for k in 1..=58 {
            assert!(a[k] / b[k] > a[k - 1] / b[k - 1]);
        }
    }

    /// Frequencies: a sampled feature keeps its value with p = e^eps/(e^eps + 1), an unsampled one
    /// is uniform; each feature is sampled with probability m/d.
    #[test]
    fn reports_follow_grr_on_m_sampled_features() {
        let g = GrrFs::new(1.0, 3, vec![2, 2, 3, 4, 2, 2]).unwrap();
        let x = [1, 0, 2, 3, 1, 0];
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 200_000;
        let mut same = [0usize; 6];
        for _ in 0..n {
            let y = g.perturb(&x, &mut rng);
            for i in 0..6 {
                assert!(y[i] < g.domains[i]);
                same[i] += (y[i] == x[i]) as usize;
            }
        }
        for (i, &s) in same.iter().enumerate() {
            let gamma = g.domains[i] as f64;
            let want = 0.5 * g.p_keep(g.domains[i]) + 0.5 / gamma;
            let f = s as f64 / n as f64;
            assert!((f - want).abs() < 5.0 * (want * (1.0 - want) / n as f64).sqrt(), "feature {i}: {f} vs {want}");
        }
    }

    #[test]
    fn bad_parameters_name_the_flag() {
        let field = |r: Result<GrrFs>| match r.unwrap_err() {
            crate::error::Error::InvalidParam { field, .. } => field,
            e => panic!("{e}"),
        };
        assert_eq!(field(GrrFs::binary(0.0, 10, 58)), "--epsilon");
        assert_eq!(field(GrrFs::binary(0.1, 59, 58)), "--sampled");
        assert_eq!(field(GrrFs::binary(0.1, 0, 58)), "--sampled");
        assert_eq!(field(GrrFs::binary(0.1, 1, 0)), "--features");
        assert_eq!(field(GrrFs::new(0.1, 1, vec![2, 1])), "features");
    }

    /// The showcase: on cora's 58 grouped binary features with m = 10 and eps_x =
    /// 0.1, 10^6 reports per record certify eps_lb above the paper's claim 0.2595 (refuted) and
    /// at most the sound m eps_x = 1.
    #[test]
    fn mechanism_audit_refutes_theorem_1() {
        use gnnaudit_attacks::stats::Verdict;
        let pair = GrrFsPair::new(GrrFs::binary(0.1, 10, 58).unwrap()).unwrap();
        let r = crate::privacy::mechanisms::audit::run(&pair, 1_000_000, 0, 0.95, false).unwrap();
        assert_eq!(r.claimed_epsilon, 1.0);
        let paper = r.paper_epsilon.unwrap();
        assert!((paper - 0.2595).abs() < 5e-4);
        assert!(r.eps_lb > paper && r.eps_lb <= 1.0, "eps_lb {}", r.eps_lb);
        assert_eq!(r.verdict, Verdict::NotRefuted);
        assert_eq!(r.paper_verdict, Some(Verdict::Violated));
    }
}
