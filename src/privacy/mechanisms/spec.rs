//! A mechanism audit as the user states it, on the command line (`gnnaudit mechanism audit`) or in
//! an audit config (attack kind `mechanism`): which mechanism, its parameters, and the target
//! epsilon it is calibrated to. `build` turns it into the mechanism's worst-case pair, checking
//! every parameter and naming its flag.
use super::audit::{AuditPair, DEFAULT_CONFIDENCE, DEFAULT_TRIALS};
use super::dp_sgd_step::{DpSgdStep, DpSgdStepPair};
use super::edge_rand::EdgeRandPair;
use super::gaussian::{GaussianAggregation, GaussianPair, Level};
use super::grr_fs::{GrrFs, GrrFsPair};
use super::multibit::MultiBitPair;
use super::pgc::PgcPair;
use super::randomized_response::RrPair;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Most random draws one mechanism audit makes (at tens of millions a second: minutes).
pub const MAX_DRAWS: f64 = 4e9;

/// Every auditable mechanism, by its CLI name.
pub const MECHANISMS: &[&str] = &["gaussian", "edge-rand", "multibit", "rr", "dp-sgd-step", "grr-fs", "pgc"];

/// Default delta of the Gaussian mechanisms.
pub const DEFAULT_DELTA: f64 = 1e-5;

/// The parameters of one mechanism audit (unset: the mechanism's default).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MechanismSpec {
    pub mechanism: String,
    /// Target epsilon the mechanism is calibrated to (GRR-FS: eps_x per sampled feature).
    pub epsilon: Option<f64>,
    /// Delta of the Gaussian mechanisms (default 1e-5); pure mechanisms take none.
    pub delta: Option<f64>,
    /// Noise instead of a target epsilon: std of the Gaussian aggregation, noise multiplier of DP-SGD.
    pub sigma: Option<f64>,
    /// gaussian: hops K.
    pub hops: Option<u64>,
    /// gaussian: degree bound D (node level); absent = edge level.
    pub degree: Option<u64>,
    /// multibit, grr-fs, pgc: number of features d.
    pub features: Option<usize>,
    /// multibit, grr-fs: sampled features m.
    pub sampled: Option<usize>,
    /// rr: number of classes.
    pub classes: Option<usize>,
    /// edge-rand: nodes of the pair graph.
    pub nodes: Option<usize>,
    /// dp-sgd-step: Poisson sampling rate q.
    pub sample_rate: Option<f64>,
    /// dp-sgd-step: clipping bound C.
    pub clip: Option<f64>,
    /// Fault injection for gaussian and dp-sgd-step: run with this factor times the calibrated
    /// noise while claiming the calibrated epsilon (shows that the audit catches it).
    pub noise_factor: Option<f64>,
    /// Runs of the mechanism on each input (default 10^6).
    pub trials: Option<usize>,
    /// Confidence of the bound (default 0.95).
    pub confidence: Option<f64>,
}

impl MechanismSpec {
    pub fn trials(&self) -> usize {
        self.trials.unwrap_or(DEFAULT_TRIALS)
    }
    pub fn confidence(&self) -> f64 {
        self.confidence.unwrap_or(DEFAULT_CONFIDENCE)
    }

    /// The parameters that are set, by flag name.
    fn given(&self) -> Vec<&'static str> {
        let mut v = vec![];
        let mut add = |set: bool, name: &'static str| {
            if set {
                v.push(name)
            }
        };
        add(self.epsilon.is_some(), "epsilon");
        add(self.delta.is_some(), "delta");
        add(self.sigma.is_some(), "sigma");
        add(self.hops.is_some(), "hops");
        add(self.degree.is_some(), "degree");
        add(self.features.is_some(), "features");
        add(self.sampled.is_some(), "sampled");
        add(self.classes.is_some(), "classes");
        add(self.nodes.is_some(), "nodes");
        add(self.sample_rate.is_some(), "sample-rate");
        add(self.clip.is_some(), "clip");
        add(self.noise_factor.is_some(), "noise-factor");
        v
    }

    /// Refuses, before anything is allocated or drawn, trials that do not fit in memory and
    /// audits whose random draws (trials times the draws of one trial: hops or features) would
    /// run for hours; names the flag to lower.
    fn check_work(&self) -> Result<()> {
        let trials = self.trials();
        // Both inputs' statistics, plus the pilot's tenth, as f64.
        crate::data::memory::ensure_fits("--trials", &format!("{trials} trials"), trials as f64 * 2.2 * 8.0)?;
        let (flag, per_trial) = match self.mechanism.as_str() {
            "gaussian" => ("--hops", self.hops.unwrap_or(1) as f64),
            "multibit" | "grr-fs" => ("--features", self.features.unwrap_or(58) as f64),
            "pgc" => ("--features", self.features.unwrap_or(1) as f64),
            _ => ("--trials", 1.0),
        };
        let draws = trials as f64 * 2.0 * per_trial;
        if draws > MAX_DRAWS {
            return Err(Error::invalid(
                flag,
                format!(
                    "{trials} trials on each of 2 inputs x {per_trial} draws per trial = {draws:e} random draws, more \
                     than the {MAX_DRAWS:e} an audit makes (minutes); lower {flag} or --trials"
                ),
            ));
        }
        Ok(())
    }

    /// The worst-case pair of the named mechanism, calibrated to the target.
    pub fn build(&self) -> Result<Box<dyn AuditPair>> {
        let allowed: &[&str] = match self.mechanism.as_str() {
            "gaussian" => &["epsilon", "delta", "sigma", "hops", "degree", "noise-factor"],
            "dp-sgd-step" => &["epsilon", "delta", "sigma", "sample-rate", "clip", "noise-factor"],
            "edge-rand" => &["epsilon", "nodes"],
            "multibit" => &["epsilon", "features", "sampled"],
            "rr" => &["epsilon", "classes"],
            "grr-fs" => &["epsilon", "features", "sampled"],
            "pgc" => &["epsilon", "features"],
            other => {
                return Err(Error::invalid(
                    "--mechanism",
                    format!("unknown mechanism '{other}' (known: {})", MECHANISMS.join(", ")),
                ))
            }
        };
        if let Some(extra) = self.given().into_iter().find(|g| !allowed.contains(g)) {
            return Err(Error::invalid(
                format!("--{extra}"),
                format!("does not apply to the {} mechanism (it takes: {})", self.mechanism, allowed.join(", ")),
            ));
        }
        self.check_work()?;
        let epsilon = || self.epsilon.ok_or_else(|| Error::invalid("--epsilon", "is required for this mechanism"));
        let delta = self.delta.unwrap_or(DEFAULT_DELTA);
        let noise = |eps_to_noise: &dyn Fn(f64) -> Result<f64>| -> Result<f64> {
            match (self.epsilon, self.sigma) {
                (Some(_), Some(_)) => Err(Error::invalid("--sigma", "give either --epsilon or --sigma, not both")),
                (None, Some(s)) => {
                    crate::privacy::accountant::analytic::check_noise("--sigma", s)?;
                    Ok(s)
                }
                (Some(e), None) => eps_to_noise(e),
                (None, None) => Err(Error::invalid("--epsilon", "give a target --epsilon (or the noise, --sigma)")),
            }
        };
        Ok(match self.mechanism.as_str() {
            "gaussian" => {
                let level = self.degree.map_or(Level::Edge, |degree| Level::Node { degree });
                let hops = self.hops.unwrap_or(1);
                // Checks hops and degree before calibrating.
                GaussianAggregation::new(level, hops, 1.0)?;
                let std = noise(&|e| GaussianAggregation::calibrated_std(level, hops, e, delta))?;
                let pair = GaussianPair::new(GaussianAggregation::new(level, hops, std)?, delta)?;
                Box::new(pair.with_noise_factor(self.noise_factor.unwrap_or(1.0))?)
            }
            "dp-sgd-step" => {
                let (q, c) = (self.sample_rate.unwrap_or(1.0), self.clip.unwrap_or(1.0));
                DpSgdStep::new(q, c, 1.0)?;
                let sigma = noise(&|e| DpSgdStep::calibrated_sigma(q, e, delta))?;
                let pair = DpSgdStepPair::new(DpSgdStep::new(q, c, sigma)?, delta)?;
                Box::new(pair.with_noise_factor(self.noise_factor.unwrap_or(1.0))?)
            }
            "edge-rand" => Box::new(EdgeRandPair::new(epsilon()?, self.nodes.unwrap_or(100))?),
            "multibit" => Box::new(MultiBitPair::new(epsilon()?, self.features.unwrap_or(58), self.sampled)?),
            "rr" => Box::new(RrPair::new(epsilon()?, self.classes.unwrap_or(2))?),
            "grr-fs" => Box::new(GrrFsPair::new(GrrFs::binary(
                epsilon()?,
                self.sampled.unwrap_or(10),
                self.features.unwrap_or(58),
            )?)?),
            "pgc" => Box::new(PgcPair::new(epsilon()?, self.features.unwrap_or(1))?),
            _ => unreachable!("checked above"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(spec: MechanismSpec) -> String {
        match spec.build().err().expect("an error") {
            Error::InvalidParam { field, .. } => field,
            e => panic!("{e}"),
        }
    }

    fn spec(mechanism: &str) -> MechanismSpec {
        MechanismSpec { mechanism: mechanism.into(), epsilon: Some(1.0), ..Default::default() }
    }

    #[test]
    fn bad_parameters_name_their_flag() {
        assert_eq!(field(spec("laplace")), "--mechanism");
        assert_eq!(field(MechanismSpec { epsilon: Some(0.0), ..spec("rr") }), "--epsilon");
        assert_eq!(field(MechanismSpec { epsilon: Some(-1.0), ..spec("gaussian") }), "--epsilon");
        assert_eq!(field(MechanismSpec { epsilon: None, sigma: Some(0.0), ..spec("gaussian") }), "--sigma");
        assert_eq!(field(MechanismSpec { epsilon: None, sigma: Some(-2.0), ..spec("dp-sgd-step") }), "--sigma");
        assert_eq!(field(MechanismSpec { degree: Some(0), ..spec("gaussian") }), "--degree");
        assert_eq!(field(MechanismSpec { sigma: Some(1.0), ..spec("gaussian") }), "--sigma");
        assert_eq!(field(MechanismSpec { degree: Some(3), ..spec("rr") }), "--degree");
        assert_eq!(field(MechanismSpec { sampled: Some(59), ..spec("grr-fs") }), "--sampled");
        assert_eq!(field(MechanismSpec { classes: Some(1), ..spec("rr") }), "--classes");
        assert_eq!(field(MechanismSpec { sample_rate: Some(1.5), ..spec("dp-sgd-step") }), "--sample-rate");
        assert_eq!(field(MechanismSpec { delta: Some(1.0), ..spec("gaussian") }), "--delta");
        assert_eq!(field(MechanismSpec { epsilon: None, ..spec("edge-rand") }), "--epsilon");
        assert!(spec("gaussian").build().is_ok());
    }
}
