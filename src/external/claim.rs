//! A deployment's declared claim (`[claim]`): its mechanism and knobs plus the (epsilon, delta)
//! it states. gnnaudit recomputes epsilon from the knobs with its own accountant
//! (`privacy::accountant`: events, RDP with the improved conversion, PLD where supported) and
//! flags what does not add up, rather than trusting the stated number:
//!
//! - a stated epsilon below what the declared mechanism gives (not reproduced);
//! - a delta that is not below 1 / (number of private units) (e.g. 0.1 where 1e-5 was meant):
//!   at such a delta, publishing a random unit's data outright is "private";
//! - DP-SGD whose batches are not drawn the way the stated accounting assumes: fixed-size batches
//!   get the sampled-without-replacement analysis (Wang, Balle & Kasiviswanathan 2019, under the
//!   replace-one relation, sensitivity 2C); shuffled batches are not covered by any amplification
//!   result the accountant implements, so gnnaudit reports the bound without amplification (each
//!   record is in one batch per epoch) and flags a Poisson claim as unsupported.
use crate::error::{Error, Result};
use crate::privacy::accountant::{budget, default_delta, Budget, Event, PrivacyUnit};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// Noisy gradient descent: sample rate, noise multiplier (std / clip), steps, sampling.
    DpSgd,
    /// GAP-style aggregation perturbation: `hops` Gaussian sums of L2 sensitivity `sensitivity`
    /// with noise std `sigma`.
    Aggregation,
    /// Randomised response on labels or features: the true value is kept with
    /// `keep_probability`, otherwise one of the other `categories - 1` values is drawn.
    RandomizedResponse,
    /// EdgeRand (asymmetric randomised response on adjacency bits): bits kept with
    /// `keep_probability` (binary RR) plus a Laplace-released density costing `density_epsilon`.
    EdgeRand,
}

/// How batches are drawn (what was done, `sampling`, and what the stated epsilon assumed,
/// `accounting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sampling {
    Poisson,
    Shuffle,
    FixedSize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredClaim {
    pub mechanism: Mechanism,
    /// edge | node | local; default: edge for aggregation and edge-rand, local for
    /// randomized-response, node for dp-sgd.
    #[serde(default)]
    pub unit: Option<PrivacyUnit>,
    /// The epsilon the deployment states.
    #[serde(default)]
    pub epsilon: Option<f64>,
    /// The delta it states (required by dp-sgd and aggregation).
    #[serde(default)]
    pub delta: Option<f64>,
    #[serde(default)]
    pub sample_rate: Option<f64>,
    #[serde(default)]
    pub noise_multiplier: Option<f64>,
    #[serde(default)]
    pub steps: Option<u64>,
    /// Clip norm C (noise std = noise_multiplier * C); recorded, the ratio is what counts.
    #[serde(default)]
    pub clip: Option<f64>,
    #[serde(default)]
    pub sampling: Option<Sampling>,
    /// The sampling the stated epsilon was computed for (default: `sampling`).
    #[serde(default)]
    pub accounting: Option<Sampling>,
    #[serde(default)]
    pub sigma: Option<f64>,
    #[serde(default)]
    pub hops: Option<u64>,
    #[serde(default)]
    pub sensitivity: Option<f64>,
    #[serde(default)]
    pub keep_probability: Option<f64>,
    #[serde(default)]
    pub categories: Option<usize>,
    #[serde(default)]
    pub density_epsilon: Option<f64>,
}

/// The claim as stated and as recomputed, with every flag raised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimReport {
    pub mechanism: Mechanism,
    pub unit: PrivacyUnit,
    pub stated_epsilon: Option<f64>,
    pub stated_delta: Option<f64>,
    /// gnnaudit's epsilon for the declared knobs at the stated delta (tightest of RDP and PLD).
    pub recomputed_epsilon: f64,
    /// The accountant's event, in words.
    pub event: String,
    /// The number of private units the delta check used (edges or nodes of the dataset).
    pub units: usize,
    /// gnnaudit's default delta for that many units, and epsilon there.
    pub default_delta: f64,
    pub epsilon_at_default_delta: Option<f64>,
    /// What does not add up, in words (empty: the claim is consistent).
    pub flags: Vec<String>,
    pub budget: Option<Budget>,
}

impl ClaimReport {
    /// The epsilon an audit compares eps_lb against: the stated one, else the recomputed one.
    pub fn audited_epsilon(&self) -> f64 {
        self.stated_epsilon.unwrap_or(self.recomputed_epsilon)
    }
    pub fn audited_delta(&self) -> f64 {
        self.stated_delta.unwrap_or(self.default_delta)
    }
}

fn need<T: Copy>(v: Option<T>, field: &str, mechanism: &str) -> Result<T> {
    v.ok_or_else(|| Error::invalid(format!("claim.{field}"), format!("required by mechanism = \"{mechanism}\"")))
}

fn positive(v: f64, field: &str) -> Result<f64> {
    crate::ensure!(
        v.is_finite() && v > 0.0,
        Error::invalid(format!("claim.{field}"), format!("{v} is not a positive number"))
    );
    Ok(v)
}

fn probability(v: f64, field: &str, open_low: f64) -> Result<f64> {
    crate::ensure!(
        v.is_finite() && v > open_low && v < 1.0,
        Error::invalid(format!("claim.{field}"), format!("{v} is not in ({open_low}, 1)"))
    );
    Ok(v)
}

/// What epsilon to check deltas against: the tightest accountant figure.
fn eps_of(event: &Event, unit: PrivacyUnit, delta: f64) -> Result<(f64, Budget)> {
    let b = budget(event, unit, None, delta, vec![])?;
    Ok((b.claimed_epsilon(), b))
}

impl DeclaredClaim {
    /// Reads the `[claim]` table of a TOML file (an audit config or a file holding only it).
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::bad_file(path, e))?;
        #[derive(Deserialize)]
        struct Outer {
            claim: Option<toml::Value>,
        }
        let outer: Outer =
            toml::from_str(&text).map_err(|e| Error::bad_file(path, e.to_string().trim().to_string()))?;
        let table = outer.claim.ok_or_else(|| Error::bad_file(path, "no [claim] table"))?;
        table
            .try_into()
            .map_err(|e: toml::de::Error| Error::bad_file(path, format!("[claim]: {}", e.to_string().trim())))
    }

    /// The accountant refuses a noise too small to account naming its own parameter (`sigma`);
    /// the user wrote claim keys, so the error names the key that made the noise that small:
    /// the hops (or steps) when one of them alone is accountable, else the noise itself.
    fn name_non_convergence(&self, e: Error) -> Error {
        use crate::privacy::accountant::analytic::{gaussian_epsilon, NON_CONVERGENCE};
        let Error::InvalidParam { message, field } = e else { return e };
        if !message.starts_with(NON_CONVERGENCE) {
            return Error::InvalidParam { field, message };
        }
        let one_alone_converges = |noise: Option<f64>| {
            let delta = self.delta.filter(|d| *d > 0.0 && *d < 1.0).unwrap_or(1e-5);
            noise.is_some_and(|s| gaussian_epsilon(s, delta).is_ok())
        };
        let key = match self.mechanism {
            Mechanism::Aggregation => {
                let single = self.sigma.zip(self.sensitivity).map(|(s, c)| s / c);
                if self.hops.unwrap_or(1) > 1 && one_alone_converges(single) {
                    "claim.hops"
                } else {
                    "claim.sigma"
                }
            }
            Mechanism::DpSgd => {
                if self.steps.unwrap_or(1) > 1 && one_alone_converges(self.noise_multiplier) {
                    "claim.steps"
                } else {
                    "claim.noise_multiplier"
                }
            }
            _ => return Error::InvalidParam { field, message },
        };
        Error::invalid(key, message)
    }

    pub fn unit(&self) -> PrivacyUnit {
        self.unit.unwrap_or(match self.mechanism {
            Mechanism::Aggregation | Mechanism::EdgeRand => PrivacyUnit::Edge,
            Mechanism::RandomizedResponse => PrivacyUnit::Local,
            Mechanism::DpSgd => PrivacyUnit::Node,
        })
    }

    /// Recomputes the claim for a deployment with `units` private units (edges or nodes).
    pub fn check(&self, units: usize) -> Result<ClaimReport> {
        let unit = self.unit();
        crate::ensure!(unit != PrivacyUnit::None, Error::invalid("claim.unit", "a claim protects edge, node or local"));
        if let Some(e) = self.epsilon {
            crate::ensure!(
                e.is_finite() && e >= 0.0,
                Error::invalid("claim.epsilon", format!("{e} is not a finite epsilon >= 0"))
            );
        }
        if let Some(d) = self.delta {
            crate::ensure!(d > 0.0 && d < 1.0, Error::invalid("claim.delta", format!("{d} is not in (0, 1)")));
        }
        let mut flags = vec![];
        let name = serde_json::to_value(self.mechanism).unwrap().as_str().unwrap_or_default().to_string();
        let pure = |eps: f64, what: String| (Event::PureDp { epsilon: eps }.labelled(what), true);
        let (event, is_pure) = match self.mechanism {
            Mechanism::DpSgd => {
                let q = probability(need(self.sample_rate, "sample_rate", &name)?, "sample_rate", 0.0)?;
                let sigma = positive(need(self.noise_multiplier, "noise_multiplier", &name)?, "noise_multiplier")?;
                let steps = need(self.steps, "steps", &name)?;
                crate::ensure!(steps >= 1, Error::invalid("claim.steps", "must be at least 1"));
                if let Some(c) = self.clip {
                    positive(c, "clip")?;
                }
                let sampling = need(self.sampling, "sampling", &name)?;
                let accounting = self.accounting.unwrap_or(sampling);
                let event = match sampling {
                    Sampling::Poisson => {
                        Event::poisson_gaussian(q, sigma).times(steps).labelled("DP-SGD, Poisson sampling")
                    }
                    Sampling::FixedSize => {
                        Event::WithoutReplacementGaussian { sample_rate: q, noise_multiplier: sigma / 2.0 }
                            .times(steps)
                            .labelled("DP-SGD, fixed-size batches without replacement (replace-one, sensitivity 2C)")
                    }
                    Sampling::Shuffle => {
                        let epochs = ((steps as f64) * q).ceil().max(1.0) as u64;
                        Event::gaussian(sigma / 2.0).times(epochs).labelled(
                            "DP-SGD, shuffled batches: no amplification, one Gaussian per epoch (replace-one)",
                        )
                    }
                };
                if accounting != sampling {
                    flags.push(format!(
                        "batches are drawn by {} but the stated epsilon assumes {} sampling: {}",
                        sampling_name(sampling),
                        sampling_name(accounting),
                        match sampling {
                            Sampling::Shuffle => "the accountant has no amplification result for shuffling (Poisson \
                                                  accounting does not cover it); gnnaudit reports the bound without \
                                                  amplification"
                                .to_string(),
                            Sampling::FixedSize => "gnnaudit recomputes it with the sampled-without-replacement \
                                                    analysis (Wang, Balle & Kasiviswanathan 2019)"
                                .to_string(),
                            Sampling::Poisson => "gnnaudit recomputes it for Poisson sampling".to_string(),
                        }
                    ));
                } else if sampling == Sampling::Shuffle {
                    flags.push(
                        "shuffled batches are not covered by the accountant's amplification results; the recomputed \
                         epsilon is the bound without amplification"
                            .into(),
                    );
                }
                (event, false)
            }
            Mechanism::Aggregation => {
                let sigma = positive(need(self.sigma, "sigma", &name)?, "sigma")?;
                let hops = need(self.hops, "hops", &name)?;
                crate::ensure!(hops >= 1, Error::invalid("claim.hops", "must be at least 1"));
                let sens = positive(need(self.sensitivity, "sensitivity", &name)?, "sensitivity")?;
                (
                    Event::gaussian(sigma)
                        .scaled(sens)
                        .times(hops)
                        .labelled(format!("aggregation perturbation, {hops} hop(s), sensitivity {sens}")),
                    false,
                )
            }
            Mechanism::RandomizedResponse => {
                let p = probability(need(self.keep_probability, "keep_probability", &name)?, "keep_probability", 0.0)?;
                let k = need(self.categories, "categories", &name)?;
                crate::ensure!(k >= 2, Error::invalid("claim.categories", "must be at least 2"));
                let other = (1.0 - p) / (k - 1) as f64;
                crate::ensure!(
                    p >= other,
                    Error::invalid("claim.keep_probability", format!("{p} is below the chance of each other value"))
                );
                pure((p / other).ln(), format!("randomized response, k = {k}, keep {p}"))
            }
            Mechanism::EdgeRand => {
                let p = probability(need(self.keep_probability, "keep_probability", &name)?, "keep_probability", 0.5)?;
                let d = self.density_epsilon.unwrap_or(0.0);
                crate::ensure!(
                    d.is_finite() && d >= 0.0,
                    Error::invalid("claim.density_epsilon", format!("{d} is not a finite epsilon >= 0"))
                );
                pure((p / (1.0 - p)).ln() + d, format!("EdgeRand: bits kept with {p}, density eps {d}"))
            }
        };
        let (event, _) = (event, ());
        let named = |e: Error| self.name_non_convergence(e);
        let default = default_delta(units);
        let (recomputed, b, at_default) = if is_pure {
            let e = event.pure_epsilon();
            (e, None, Some(e))
        } else {
            let delta = need(self.delta, "delta", &name)?;
            let (e, b) = eps_of(&event, unit, delta).map_err(named)?;
            let at_default = eps_of(&event, unit, default).map_err(named)?.0;
            flags.extend(crate::privacy::claim_rules::delta_flag(delta, units as u64, unit, Some(at_default)));
            (e, Some(b), Some(at_default))
        };
        if let Some(stated) = self.epsilon {
            flags.extend(crate::privacy::claim_rules::not_reproduced_flag(
                stated,
                recomputed,
                self.delta.unwrap_or(0.0),
            ));
        }
        Ok(ClaimReport {
            mechanism: self.mechanism,
            unit,
            stated_epsilon: self.epsilon,
            stated_delta: self.delta,
            recomputed_epsilon: recomputed,
            event: event.normalized().to_string(),
            units,
            default_delta: default,
            epsilon_at_default_delta: at_default,
            flags,
            budget: b,
        })
    }
}

fn sampling_name(s: Sampling) -> &'static str {
    match s {
        Sampling::Poisson => "Poisson",
        Sampling::Shuffle => "shuffling",
        Sampling::FixedSize => "fixed-size (without replacement)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::accountant::rdp_epsilon;

    fn dp_sgd(delta: f64, sampling: &str, accounting: &str) -> DeclaredClaim {
        toml::from_str(&format!(
            "mechanism = \"dp-sgd\"\nepsilon = 1.0\ndelta = {delta}\nsample_rate = 0.01\nnoise_multiplier = 1.1\n\
             steps = 1000\nclip = 1.0\nsampling = \"{sampling}\"\naccounting = \"{accounting}\""
        ))
        .unwrap()
    }

    #[test]
    fn a_large_delta_is_flagged_with_the_intended_one() {
        let r = dp_sgd(0.1, "poisson", "poisson").check(10_556).unwrap();
        assert_eq!(r.default_delta, 1e-5);
        assert!(r.flags.iter().any(|f| f.contains("delta = 0.1") && f.contains("1e-5")), "{:?}", r.flags);
        // The recomputed epsilon at the intended delta is the accountant's, and larger.
        let at = r.epsilon_at_default_delta.unwrap();
        assert!(at > r.recomputed_epsilon);
        let ok = dp_sgd(1e-5, "poisson", "poisson").check(10_556).unwrap();
        assert!(ok.flags.iter().all(|f| !f.contains("not below")), "{:?}", ok.flags);
        assert!((ok.recomputed_epsilon - at).abs() < 1e-9);
    }

    #[test]
    fn fixed_size_batches_get_the_without_replacement_epsilon() {
        let poisson = dp_sgd(1e-5, "poisson", "poisson").check(10_000).unwrap();
        let fixed = dp_sgd(1e-5, "fixed-size", "poisson").check(10_000).unwrap();
        let wor = Event::WithoutReplacementGaussian { sample_rate: 0.01, noise_multiplier: 0.55 }.times(1000);
        let want = budget(&wor, PrivacyUnit::Node, None, 1e-5, vec![]).unwrap().claimed_epsilon();
        assert!((fixed.recomputed_epsilon - want).abs() < 1e-9);
        assert!(fixed.recomputed_epsilon > poisson.recomputed_epsilon);
        assert!(fixed.flags.iter().any(|f| f.contains("without-replacement")), "{:?}", fixed.flags);
    }

    #[test]
    fn shuffling_with_poisson_accounting_is_flagged() {
        let r = dp_sgd(1e-5, "shuffle", "poisson").check(10_000).unwrap();
        assert!(r.flags.iter().any(|f| f.contains("no amplification result for shuffling")), "{:?}", r.flags);
        // The bound without amplification: 10 epochs of Gaussian(1.1 / 2).
        let want = rdp_epsilon(&Event::gaussian(0.55).times(10), 1e-5).unwrap().epsilon;
        assert!(r.recomputed_epsilon <= want + 1e-9);
    }

    #[test]
    fn aggregation_and_pure_claims_recompute() {
        let c: DeclaredClaim = toml::from_str(
            "mechanism = \"aggregation\"\nepsilon = 2.0\ndelta = 1e-4\nsigma = 2.0\nhops = 2\nsensitivity = 1.0",
        )
        .unwrap();
        let r = c.check(5278).unwrap();
        let gap = budget(&crate::privacy::accountant::methods::gap_edge(2, 2.0), PrivacyUnit::Edge, None, 1e-4, vec![])
            .unwrap()
            .claimed_epsilon();
        assert!((r.recomputed_epsilon - gap).abs() < 1e-9);
        assert_eq!(r.unit, PrivacyUnit::Edge);
        let rr: DeclaredClaim = toml::from_str(
            "mechanism = \"randomized-response\"\nepsilon = 1.0\nkeep_probability = 0.5\ncategories = 4",
        )
        .unwrap();
        let r = rr.check(100).unwrap();
        assert!((r.recomputed_epsilon - 3f64.ln()).abs() < 1e-12);
        assert!(r.flags.iter().any(|f| f.contains("not reproduced")));
        let e = toml::from_str::<DeclaredClaim>("mechanism = \"aggregation\"\nsigmaa = 1").unwrap_err();
        assert!(e.to_string().contains("sigmaa"));
        let missing: DeclaredClaim = toml::from_str("mechanism = \"aggregation\"\ndelta = 1e-5\nhops = 1").unwrap();
        assert!(missing.check(10).unwrap_err().to_string().contains("claim.sigma"));
    }
}
