//! Per-feature local-DP randomisers of thesis ch.2 ("When Differential Privacy Meets GNNs"): every scalar feature x in a public range [a, b] is randomised on
//! its own with budget eps and the server keeps an unbiased estimate y* of x.
//!
//! * one-bit PGC (eq. 2.3, de-biased by eq. 2.5; [`super::pgc::Pgc`]),
//! * Laplace (eq. 2.16): y* = x + Lap(Delta/eps),
//! * Piecewise (Wang et al. 2019, eq. 2.28-2.33), the standard two-piece sampler.
//!
//! Duchi's mechanism is not offered: PGC is Duchi after an affine map (eq. 2.22-2.27), which the
//! tests check. The range is public (our choice): values outside it are clipped, and
//! [`FeatureLdp::perturb`] says how many were. A record of d features is d eps-LDP.
use super::audit::{require, require_range};
use super::pgc::Pgc;
use crate::error::{Error, Result};
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

/// Which per-feature randomiser the nodes run (`--mechanism`); `raw` sends the clean features.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
pub enum FeatureMechanismKind {
    /// One-bit PGC (eq. 2.3 + 2.5); also spelt `pgc`.
    #[default]
    #[value(alias = "pgc")]
    #[serde(alias = "pgc")]
    Onebit,
    /// Laplace noise of scale Delta/eps per feature (eq. 2.16).
    Laplace,
    /// Piecewise mechanism (eq. 2.28-2.33).
    Piecewise,
    /// No randomisation (the chapter's RAW baseline): takes no epsilon.
    Raw,
}

impl FeatureMechanismKind {
    pub fn name(self) -> &'static str {
        match self {
            FeatureMechanismKind::Onebit => "onebit",
            FeatureMechanismKind::Laplace => "laplace",
            FeatureMechanismKind::Piecewise => "piecewise",
            FeatureMechanismKind::Raw => "raw",
        }
    }
}

/// A per-feature randomiser with budget `epsilon` per scalar on the public range [low, high].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeatureLdp {
    kind: FeatureMechanismKind,
    epsilon: f64,
    low: f64,
    high: f64,
}

impl FeatureLdp {
    pub fn new(kind: FeatureMechanismKind, epsilon: f64, low: f64, high: f64) -> Result<Self> {
        require(kind != FeatureMechanismKind::Raw, "mechanism", "raw features are not randomised: no mechanism")?;
        require(epsilon > 0.0 && epsilon.is_finite(), "epsilon", format!("must be > 0 and finite, got {epsilon}"))?;
        require_range(low, high)?;
        Ok(FeatureLdp { kind, epsilon, low, high })
    }
    pub fn kind(&self) -> FeatureMechanismKind {
        self.kind
    }
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn span(&self) -> f64 {
        self.high - self.low
    }
    /// Piecewise's C = (e^{eps/2} + 1)/(e^{eps/2} - 1) (eq. 2.28).
    fn piecewise_c(&self) -> f64 {
        let h = (self.epsilon / 2.0).exp();
        (h + 1.0) / (h - 1.0)
    }

    /// One node's unbiased report y* for the value x (clipped into [a, b] first, l.694).
    pub fn sample<R: Rng>(&self, x: f64, rng: &mut R) -> f64 {
        let x = x.clamp(self.low, self.high);
        match self.kind {
            FeatureMechanismKind::Onebit => {
                let pgc = Pgc::new(self.epsilon, self.low, self.high).expect("checked in new");
                pgc.debias(pgc.encode(x, rng))
            }
            FeatureMechanismKind::Laplace => {
                // Inverse CDF of Lap(0, Delta/eps); u in (-1/2, 1/2).
                let u: f64 = rng.gen::<f64>() - 0.5;
                x - self.span() / self.epsilon * u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln()
            }
            FeatureMechanismKind::Piecewise => {
                let t = 2.0 * (x - self.low) / self.span() - 1.0;
                let c = self.piecewise_c();
                let l = (c + 1.0) / 2.0 * t - (c - 1.0) / 2.0;
                let r = l + c - 1.0;
                let h = (self.epsilon / 2.0).exp();
                let star = if rng.gen::<f64>() < h / (h + 1.0) {
                    l + (r - l) * rng.gen::<f64>()
                } else {
                    // Uniform on [-C, l) U (r, C], whose total length is C + 1.
                    let u = (c + 1.0) * rng.gen::<f64>();
                    if u < l + c {
                        -c + u
                    } else {
                        r + (u - (l + c))
                    }
                };
                self.span() / 2.0 * (star + 1.0) + self.low // eq. 2.33
            }
            FeatureMechanismKind::Raw => x,
        }
    }

    /// Var[y*] at x: Lemma 4 (eq. 2.11), eq. 2.17, eq. 2.34.
    pub fn variance(&self, x: f64) -> f64 {
        let x = x.clamp(self.low, self.high);
        let span = self.span();
        match self.kind {
            FeatureMechanismKind::Onebit => Pgc::new(self.epsilon, self.low, self.high).expect("valid").variance(x),
            FeatureMechanismKind::Laplace => 2.0 * (span / self.epsilon).powi(2),
            FeatureMechanismKind::Piecewise => {
                let h = (self.epsilon / 2.0).exp();
                let mid = (self.low + self.high) / 2.0;
                (x - mid).powi(2) / (h - 1.0) + (h + 3.0) / (3.0 * (h - 1.0).powi(2)) * span * span / 4.0
            }
            FeatureMechanismKind::Raw => 0.0,
        }
    }

    /// Randomises every entry of a feature matrix [N, d] with a seeded generator (one draw per
    /// entry, as each node answers once, l.451). Returns y* and the number of entries that fell
    /// outside [a, b] and were clipped.
    pub fn perturb(&self, x: &Tensor, seed: u64) -> Result<(Tensor, usize)> {
        let size = x.size();
        let values = Vec::<f32>::try_from(x.to_kind(Kind::Float).flatten(0, -1))
            .map_err(|e| Error::invalid("features", format!("cannot read the feature matrix: {e}")))?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut clipped = 0usize;
        let out: Vec<f32> = values
            .iter()
            .map(|&v| {
                let v = v as f64;
                clipped += usize::from(v < self.low || v > self.high);
                self.sample(v, &mut rng) as f32
            })
            .collect();
        Ok((crate::device::place(Tensor::from_slice(&out).view(size.as_slice())), clipped))
    }

    /// Lemma 3's radius (PGC only): w.p. >= 1 - delta, |GC^(v) - GC(v)| <= Delta (e^eps + 1)/(e^eps - 1)
    /// sqrt(ln(2/delta)/2) per node and coordinate (Hoeffding with sum of squared weights <= 1).
    pub fn lemma3_radius(&self, delta: f64) -> Option<f64> {
        (self.kind == FeatureMechanismKind::Onebit).then(|| {
            let e = self.epsilon.exp();
            self.span() * (e + 1.0) / (e - 1.0) * (0.5 * (2.0 / delta).ln()).sqrt()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Duchi's mechanism (eq. 2.18-2.19), the derivation basis of PGC, kept here as an oracle:
    /// t* = +-(e^eps + 1)/(e^eps - 1) with P[+] = 1/2 + (e^eps - 1)/(2 e^eps + 2) t.
    fn duchi_p_plus(eps: f64, t: f64) -> f64 {
        0.5 + (eps.exp() - 1.0) / (2.0 * eps.exp() + 2.0) * t
    }

    /// Mean and unbiased variance of n draws at x.
    fn moments(m: &FeatureLdp, x: f64, n: usize, seed: u64) -> (f64, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let ys: Vec<f64> = (0..n).map(|_| m.sample(x, &mut rng)).collect();
        let mean = ys.iter().sum::<f64>() / n as f64;
        (mean, ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1) as f64)
    }

    /// Lemma 2 (unbiasedness) and the variances of Lemma 4 (eq. 2.11), eq. 2.17 and eq. 2.34, by
    /// Monte Carlo. Tolerances come from the sample size: the mean within 5 standard errors
    /// sqrt(V/n); the sample variance within 5 of its standard errors, sqrt((m4 - V^2)/n), with
    /// the fourth central moment m4 bounded by the range of y*: m4 <= V * (max |y* - x|)^2.
    #[test]
    fn mechanisms_are_unbiased_with_the_chapter_variances() {
        let n = 200_000;
        for (kind, seed) in [
            (FeatureMechanismKind::Onebit, 1),
            (FeatureMechanismKind::Laplace, 2),
            (FeatureMechanismKind::Piecewise, 3),
        ] {
            for (eps, x) in [(1.0, 0.0), (1.0, 0.5), (5.0, 0.9)] {
                let m = FeatureLdp::new(kind, eps, 0.0, 1.0).unwrap();
                let (mean, var) = moments(&m, x, n, seed);
                let v = m.variance(x);
                assert!((mean - x).abs() < 5.0 * (v / n as f64).sqrt(), "{kind:?} eps {eps} x {x}: mean {mean}");
                // Laplace has m4 = 6 b^4 = 1.5 V^2 exactly; the bounded mechanisms use their range.
                let m4 = match kind {
                    FeatureMechanismKind::Laplace => 6.0 * (v / 2.0).powi(2),
                    FeatureMechanismKind::Piecewise => v * ((m.piecewise_c() + 1.0) / 2.0).powi(2),
                    _ => v * ((eps.exp() + 1.0) / (eps.exp() - 1.0)).powi(2),
                };
                let se = ((m4 - v * v).max(0.0) / n as f64).sqrt();
                assert!((var - v).abs() < 5.0 * se, "{kind:?} eps {eps} x {x}: var {var} vs {v} (se {se})");
            }
        }
        // Eq. 2.34's worst case is the centre of the range for PGC and the ends for Piecewise:
        // PGC wins on skewed (sparse) features, Piecewise in the middle (l.601, l.851).
        let pgc = FeatureLdp::new(FeatureMechanismKind::Onebit, 1.0, 0.0, 1.0).unwrap();
        let pm = FeatureLdp::new(FeatureMechanismKind::Piecewise, 1.0, 0.0, 1.0).unwrap();
        assert!(pgc.variance(0.0) < pm.variance(0.0) && pgc.variance(0.5) > pgc.variance(0.0));
    }

    /// PGC is Duchi's mechanism after t = 2(x - a)/Delta - 1 and y = 1{t* > 0} (eq. 2.22-2.27),
    /// and its de-biased value is the affine image of Duchi's t*.
    #[test]
    fn pgc_is_duchi_after_the_affine_map() {
        for eps in [0.5, 1.0, 5.0] {
            let pgc = Pgc::new(eps, 2.0, 6.0).unwrap();
            let big = (eps.exp() + 1.0) / (eps.exp() - 1.0);
            for x in [2.0, 3.0, 4.5, 6.0] {
                let t = 2.0 * (x - 2.0) / 4.0 - 1.0;
                assert!((pgc.p_one(x) - duchi_p_plus(eps, t)).abs() < 1e-12);
                assert!((pgc.debias(1) - (4.0 / 2.0 * (big + 1.0) + 2.0)).abs() < 1e-9);
                assert!((pgc.debias(0) - (4.0 / 2.0 * (-big + 1.0) + 2.0)).abs() < 1e-9);
                // Duchi's variance big^2 - t^2, scaled by (Delta/2)^2, is Lemma 4's.
                assert!(((big * big - t * t) * 4.0 - pgc.variance(x)).abs() < 1e-9);
            }
        }
    }

    /// Piecewise keeps its output in [-C, C] (mapped: [a - Delta(C-1)/2, b + Delta(C-1)/2]) and is
    /// eps-LDP: the density ratio of the two pieces is e^eps (p vs p/e^eps, eq. 2.29).
    #[test]
    fn piecewise_stays_in_range_and_perturb_counts_clipped_values() {
        let m = FeatureLdp::new(FeatureMechanismKind::Piecewise, 2.0, 0.0, 1.0).unwrap();
        let c = m.piecewise_c();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for x in [0.0, 0.3, 1.0] {
            for _ in 0..10_000 {
                let y = m.sample(x, &mut rng);
                assert!(y >= (1.0 - c) / 2.0 - 1e-12 && y <= (1.0 + c) / 2.0 + 1e-12);
            }
        }
        let x = Tensor::from_slice(&[0.0f32, 1.0, 2.0, -1.0, 0.5, 0.2]).view([2, 3]);
        let (y, clipped) =
            FeatureLdp::new(FeatureMechanismKind::Onebit, 1.0, 0.0, 1.0).unwrap().perturb(&x, 5).unwrap();
        assert_eq!((y.size(), clipped), (vec![2, 3], 2));
        assert!(FeatureLdp::new(FeatureMechanismKind::Laplace, 0.0, 0.0, 1.0).is_err());
        assert!(FeatureLdp::new(FeatureMechanismKind::Raw, 1.0, 0.0, 1.0).is_err());
    }
}
