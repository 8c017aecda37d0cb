//! `gnnaudit mechanism audit`: run one privacy mechanism on its worst-case neighbouring pair many
//! times and certify a lower bound on its epsilon. The claim comes from the
//! accountant's event of the calibrated mechanism; the bound from `attacks::stats`.
use crate::error::{Error, Result};
use crate::privacy::mechanisms::audit::{self, MechanismAudit, DEFAULT_CONFIDENCE, DEFAULT_TRIALS};
use crate::privacy::mechanisms::spec::MechanismSpec;
use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct MechanismArgs {
    #[command(subcommand)]
    pub command: MechanismCommand,
}

#[derive(Debug, Subcommand)]
pub enum MechanismCommand {
    /// Certify a lower bound on a mechanism's epsilon from its worst-case neighbouring pair.
    Audit(AuditArgs),
}

/// The auditable mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mechanism {
    /// GAP/ProGAP Gaussian aggregation (edge level; node level with --degree D).
    Gaussian,
    /// EdgeRand: asymmetric randomized response on the adjacency.
    EdgeRand,
    /// LPGNN's multi-bit feature encoder.
    Multibit,
    /// Generalized randomized response (labels).
    Rr,
    /// One DP-SGD step: per-sample clipping, Poisson sampling, Gaussian noise.
    DpSgdStep,
    /// RGNN's GRR-FS on binary features (reports the paper's Theorem 1 claim too).
    GrrFs,
    /// PGC's one-bit feature mechanism (thesis ch.2); the record of d features claims d eps.
    Pgc,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[arg(long, value_enum)]
    pub mechanism: Mechanism,
    /// Target epsilon the mechanism is calibrated to (grr-fs: eps_x per sampled feature).
    #[arg(long, allow_hyphen_values = true)]
    pub epsilon: Option<f64>,
    /// Delta of the Gaussian mechanisms (default 1e-5).
    #[arg(long, allow_hyphen_values = true)]
    pub delta: Option<f64>,
    /// Noise instead of --epsilon: the aggregation's std (gaussian) or DP-SGD's noise multiplier.
    #[arg(long, allow_hyphen_values = true)]
    pub sigma: Option<f64>,
    /// gaussian: number of hops K (default 1).
    #[arg(long)]
    pub hops: Option<u64>,
    /// gaussian: node level with degree bound D (default: edge level).
    #[arg(long, allow_hyphen_values = true)]
    pub degree: Option<i64>,
    /// multibit, grr-fs: number of features d (default 58, cora's grouped features); pgc:
    /// features per record (default 1; the record claims d eps).
    #[arg(long)]
    pub features: Option<usize>,
    /// multibit, grr-fs: sampled features m (grr-fs default 10; multibit default the optimal m*).
    #[arg(long)]
    pub sampled: Option<usize>,
    /// rr: number of classes (default 2).
    #[arg(long)]
    pub classes: Option<usize>,
    /// edge-rand: nodes of the pair graph (default 100).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// dp-sgd-step: Poisson sampling rate q (default 1; below 1 the bound is Clopper-Pearson).
    #[arg(long, allow_hyphen_values = true)]
    pub sample_rate: Option<f64>,
    /// dp-sgd-step: clipping bound C (default 1).
    #[arg(long, allow_hyphen_values = true)]
    pub clip: Option<f64>,
    /// Fault injection (gaussian, dp-sgd-step): run with this factor times the calibrated noise
    /// while claiming the calibrated epsilon; e.g. 0.1 must be reported as violated.
    #[arg(long, allow_hyphen_values = true)]
    pub noise_factor: Option<f64>,
    /// Runs of the mechanism on each input of the pair (at least 100).
    #[arg(long, default_value_t = DEFAULT_TRIALS)]
    pub trials: usize,
    /// Seed of the mechanism's randomness.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Confidence of the lower bound.
    #[arg(long, default_value_t = DEFAULT_CONFIDENCE)]
    pub confidence: f64,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

impl AuditArgs {
    pub fn spec(&self) -> Result<MechanismSpec> {
        let degree = match self.degree {
            Some(d) if d < 1 => {
                return Err(crate::error::Error::invalid(
                    "--degree",
                    format!("the degree bound must be at least 1, got {d}"),
                ))
            }
            d => d.map(|d| d as u64),
        };
        Ok(MechanismSpec {
            mechanism: self.mechanism.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default(),
            epsilon: self.epsilon,
            delta: self.delta,
            sigma: self.sigma,
            hops: self.hops,
            degree,
            features: self.features,
            sampled: self.sampled,
            classes: self.classes,
            nodes: self.nodes,
            sample_rate: self.sample_rate,
            clip: self.clip,
            noise_factor: self.noise_factor,
            trials: Some(self.trials),
            confidence: Some(self.confidence),
        })
    }
}

pub fn run(args: MechanismArgs) -> Result<()> {
    match args.command {
        MechanismCommand::Audit(a) => {
            let spec = a.spec()?;
            // The accountant names the noise it could not evaluate; the user gave a flag.
            let flag = if a.sigma.is_some() { "--sigma" } else { "--epsilon" };
            let named = |e: Error| match e {
                Error::InvalidParam { message, .. }
                    if message.starts_with(crate::privacy::accountant::analytic::NON_CONVERGENCE) =>
                {
                    Error::invalid(flag, message)
                }
                e => e,
            };
            let pair = spec.build().map_err(named)?;
            let result = audit::run(pair.as_ref(), spec.trials(), a.seed, spec.confidence(), false).map_err(named)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&result)?);
            } else {
                print!("{}", render(&result));
            }
            Ok(())
        }
    }
}

/// The human-readable result.
pub fn render(r: &MechanismAudit) -> String {
    let c = &r.certificate;
    let mut o = format!("mechanism     {} {}\n", r.mechanism, r.params);
    o += &format!("claimed eps   {:.4} at delta {} (accountant: {})\n", r.claimed_epsilon, r.delta, r.event);
    if let Some(p) = r.paper_epsilon {
        o += &format!("paper claim   {:.4} (published; unsound)\n", p);
    }
    o += &format!(
        "eps_lb        {:.4} ({} bound, {:.0}% confidence, {} trials per input, test: {} >= {})\n",
        r.eps_lb,
        r.bound.name(),
        c.confidence * 100.0,
        r.trials,
        r.statistic,
        c.threshold.map_or("-".to_string(), |t| format!("{t}")),
    );
    o +=
        &format!("tightness     {:.3} (eps_lb / claimed eps; max certifiable {:.3})\n", r.tightness, c.max_certifiable);
    if let Some(why) = &c.cannot_certify {
        o += &format!("cannot certify {why}\n");
    }
    o += &format!(
        "control       eps_lb {:.4} with the noise switched off (the same trials and test: the audit's power)\n",
        r.control_eps_lb
    );
    o += &format!("verdict       {}", r.verdict);
    if let Some(v) = r.paper_verdict {
        o += &format!("; against the paper claim: {v}");
    }
    o += &format!("\ntime          {:.2} s\n", r.seconds);
    o
}
