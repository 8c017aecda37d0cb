//! In-pipeline gradient canaries: the grey-box audit of the DP-SGD step a method runs, what
//! `canary-aggregation` is to GAP's aggregations.
//!
//! Following Nasr et al. 2023 (Dirac canary gradients, every intermediate update observed) and
//! Steinke, Nasr & Jagielski 2023 (many independent canaries in one training run), the auditor
//! draws m fair coins and asks the target's training oracle to train once with the included
//! canaries planted in every DP-SGD step as one more per-example gradient: a Dirac gradient on a
//! coordinate of its own, Poisson-sampled at the step's rate, clipped by the trainer's rule, then
//! noised with the real examples. The auditor reads every step's released noisy sum; the
//! optimiser steps on it less the canaries, so the audited run is the target's training, bit for
//! bit. The auditor scores a canary by the log-likelihood ratio of those reads under the claimed
//! mechanism (each step a Poisson-subsampled Gaussian of its own rate and noise), the
//! Neyman-Pearson statistic of the composed releases. Canaries that outnumber a stage's
//! coordinates share them on orthogonal sign codes and still read every step (their per-stage
//! sums stay independent; `layout = "phases"` makes sharers take turns instead). The trainer's
//! side lives in the main crate (`privacy::dpsgd::canary`).
//!
//! The gdp bound is certified at the test planned before training, "log-likelihood ratio >= 0"
//! (the reads likelier under inclusion: the midpoint of the claimed trade-off), on every canary
//! at 0.9 alpha, beside a split at 0.1 alpha for a DP-SGD far from its claim
//! (`ThresholdStrategy::Planned`); the default split spent half the canaries choosing a
//! threshold, which cost most of the bound where the claim is small (GAP-NDP on Cornell5 at
//! eps 1). Other bounds and a strategy set explicitly keep their own test.
//!
//! Its positive control is the same audit of the same training with DP-SGD's noise left out
//! ([`GradientCanaryParams::on_positive_control`]): the methods' registered controls run no
//! DP-SGD, so they cannot serve it.
//!
//! The canaries face DP-SGD and nothing else (not GAP's aggregation noise, not a degree bound's
//! node sensitivity), so the bound is compared with the claim of the DP-SGD component alone,
//! which the oracle computes from the method's accountant events; the method's total claim is
//! kept in the details. The unit is the one DP-SGD's own analysis protects: one per-example
//! gradient (one unit's gradient for class/subclass-level DP-SGD), or, under a node-level claim
//! (DP-GNN, DPAR's rows: a node in up to K+1 terms, replace-one), a node: its K+1 terms drawn as
//! the claim draws them, at +C included and -C replaced.
use crate::error::{check, Result};
use crate::stats::BoundKind;
use crate::threat::{Access, AdversaryKnowledge, Attack, Game, GameUnit, Outcome, PlannedTest, Target};
pub use crate::threat::{GradientCanaryLayout, GradientCanaryPlan, GradientCanaryReadings, GradientCanarySites};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GradientCanaryParams {
    /// Canary gradients (each with its own fair coin). Unset, the audit chooses the count before
    /// training, at most `max_canaries`, as the one its planned gdp bound predicts best from the
    /// DP-SGD stages' sizes, rates, noise and steps and the claim (never from a score).
    pub canaries: Option<usize>,
    /// The most canaries a chosen count may take: each costs work in every DP-SGD step and in
    /// the certification.
    pub max_canaries: usize,
    /// Coordinates the canaries sit on: `all`, or `biases` (one-dimensional parameters only).
    pub sites: GradientCanarySites,
    /// A canary's raw gradient norm over the clipping bound C: a correct clip brings it to
    /// exactly C, a missing one lets it through.
    pub raw_norm: f64,
    /// Canaries that outnumber a stage's coordinates: `auto` (per stage, from its size and
    /// sampling rate: codes where a sharer expects enough draws per code cycle, else only as many
    /// canaries as the stage has coordinates), `coded` (sharers of a coordinate on orthogonal
    /// sign codes, each reading every step) or `phases` (sharers take turns).
    pub layout: GradientCanaryLayout,
    /// Runs the audit's positive control instead: the same training with DP-SGD's noise left
    /// out, scored by the same statistic. Set by the audit runner, never read from a config.
    #[serde(skip)]
    pub positive_control: bool,
}

impl Default for GradientCanaryParams {
    fn default() -> Self {
        GradientCanaryParams {
            canaries: None,
            max_canaries: MAX_CANARIES,
            sites: GradientCanarySites::All,
            raw_norm: 100.0,
            layout: GradientCanaryLayout::Auto,
            positive_control: false,
        }
    }
}

/// The default cap on a chosen canary count.
pub const MAX_CANARIES: usize = 40_000;

impl GradientCanaryParams {
    /// The canaries the auditor draws coins for: the count set, or the cap of a chosen one.
    pub fn drawn(&self) -> usize {
        self.canaries.unwrap_or(self.max_canaries)
    }

    /// These settings on the positive control (DP-SGD without its noise).
    pub fn on_positive_control(self) -> Self {
        GradientCanaryParams { positive_control: true, ..self }
    }
}

impl Attack for GradientCanaryParams {
    fn game(&self) -> GameUnit {
        GameUnit::GradientCanary
    }
    fn requires(&self) -> Access {
        Access { oracle: true, white_box: false, ..Access::default() }
    }
    fn check(&self) -> Result<()> {
        let (key, n) = match self.canaries {
            Some(n) => ("canaries", n),
            None => ("max_canaries", self.max_canaries),
        };
        check!(n >= 100, key, "{n} canaries are too few for a bound (need at least 100)");
        check!(n <= 1_000_000, key, "{n} canaries would slow every DP-SGD step (at most 10^6)");
        check!(
            self.raw_norm.is_finite() && self.raw_norm >= 1.0,
            "raw_norm",
            "{} is not a raw norm of at least the clipping bound (need a finite value >= 1)",
            self.raw_norm
        );
        Ok(())
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        gradient_canary_audit(target, self, seed)
    }
}

pub fn gradient_canary_audit(target: &Target, params: &GradientCanaryParams, seed: u64) -> Result<Outcome> {
    params.check()?;
    let oracle = target.oracle.ok_or_else(|| {
        crate::error::Error::Unsupported("gradient canaries need the target's training oracle".into())
    })?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let included: Vec<bool> = (0..params.drawn()).map(|_| rng.gen_bool(0.5)).collect();
    let plan = GradientCanaryPlan {
        included: included.clone(),
        sites: params.sites,
        raw_norm: params.raw_norm,
        seed: rng.gen(),
        noise_off: params.positive_control,
        layout: params.layout,
        choose_count: params.canaries.is_none(),
    };
    // The training's seed is the run's, as the target's is: the canaries leave the optimiser's
    // input alone, so the audited run is the target's training itself.
    let read = oracle.train_with_gradient_canaries(target.graph, target.split, &plan, seed)?;
    check!(
        read.scores.len() == read.canaries && read.canaries <= params.drawn() && read.canaries > 0,
        "canaries",
        "the trainer read {} canaries, not {} of at most {}",
        read.scores.len(),
        read.canaries,
        params.drawn()
    );
    // The audited canaries are the plan's first ones (chosen by the recipe, never by a score).
    let included = &included[..read.canaries];
    check!(read.scores.iter().all(|s| s.is_finite()), "release", "the trainer released non-finite gradient sums");
    let one_run = crate::canary_game::one_run_details(&read.scores, included, target, GameUnit::GradientCanary);
    let (pos, neg) = crate::stats::partition_by_coin(&read.scores, included);
    let sites = match params.sites {
        GradientCanarySites::All => "any",
        GradientCanarySites::Biases => "bias",
    };
    let game = Game {
        unit: GameUnit::GradientCanary,
        positive: match read.node_terms {
            None => format!(
                "a Dirac canary gradient (raw norm {} C, on {sites} coordinates) planted in every DP-SGD step it is \
                 sampled into (fair coin)",
                params.raw_norm
            ),
            Some(terms) => format!(
                "a node canary (fair coin): in every DP-SGD step, one Dirac gradient (raw norm {} C, on {sites} \
                 coordinates) for each of its up to {terms} terms the batch draws, clipped to +C",
                params.raw_norm
            ),
        },
        negative: match read.node_terms {
            None => "a canary gradient its coin left out".into(),
            Some(_) => "the node a left-out canary replaced: the same draws of its terms, at -C".into(),
        },
        statement: format!(
            "The auditor reads the released noisy gradient sum of each of the {} DP-SGD steps ({} stage(s)) before \
             the optimiser and scores each of {} canaries by the log-likelihood ratio of its reads under the \
             claimed {}{}.",
            read.steps,
            read.stages,
            read.canaries,
            match read.node_terms {
                None => "subsampled Gaussian steps",
                Some(_) => "node-level steps (a node's terms drawn hypergeometrically, Daigavane et al. 2021)",
            },
            if params.positive_control { " (positive control: the steps released without noise)" } else { "" }
        ),
    };
    let knowledge = AdversaryKnowledge {
        white_box: true,
        notes: vec![
            "plants canary gradients in the trainer's own DP-SGD step (sampled, clipped and noised with the real \
             examples) and reads every step's released noisy sum: all intermediate updates observed"
                .into(),
            format!("the bound is compared with the DP-SGD component's claim alone: {}", read.component_event),
        ],
        ..Default::default()
    };
    let mut out = Outcome::new(pos, neg, None, game, knowledge);
    out.details.insert("canaries".into(), read.canaries.into());
    out.details.insert("canaries_requested".into(), params.canaries.map_or(serde_json::Value::Null, Into::into));
    out.details.insert("canaries_drawn".into(), params.drawn().into());
    if !read.count_predictions.is_empty() {
        let table: Vec<serde_json::Value> = read
            .count_predictions
            .iter()
            .map(|&(m, mu, eps)| serde_json::json!({"canaries": m, "mu": mu, "predicted_eps_lb": eps}))
            .collect();
        out.details.insert("canary_count_predictions".into(), table.into());
    }
    out.details.insert("layout".into(), read.layout.clone().into());
    out.details.insert("canaries_why".into(), read.count_reason.clone().into());
    out.details.insert("stages".into(), read.stages.into());
    out.details.insert("steps".into(), read.steps.into());
    out.details.insert("period".into(), read.period.into());
    out.details.insert("sharing".into(), read.sharing.into());
    out.details.insert("unscored_steps".into(), read.unscored_steps.into());
    out.details.insert("fewest_stage_coordinates".into(), read.fewest_coordinates.into());
    if read.period > 1 {
        // Each canary then faces a part of the claimed composition: its privacy loss, and the
        // test's power, shrink about as the square root of the share of steps it reads.
        out.note = Some(format!(
            "{} canaries outnumber the {} coordinates of the smallest DP-SGD stage, so each read 1/{} of some \
             stage's steps and faced less than the claimed composition; layout = \"coded\" lets each read every \
             step",
            read.canaries, read.fewest_coordinates, read.period
        ));
    }
    if read.sharing > 1 {
        // A chosen count already weighed the codes' cost against more trials; a set one did not.
        let hint = if params.canaries.is_some() {
            format!(
                ". At low sampling rates a canary's single draws are what its per-step ratio sees best: canaries = {} \
                 gives each a coordinate of its own (fewer trials), layout = \"phases\" makes sharers take turns",
                read.fewest_coordinates
            )
        } else {
            String::new()
        };
        out.note = Some(format!(
            "{} canaries outnumber the {} coordinates of the smallest DP-SGD stage: up to {} share a coordinate on \
             orthogonal sign codes, each reading every step; {} step(s) after the last complete code cycle were left \
             out of the scores{hint}",
            read.canaries, read.fewest_coordinates, read.sharing, read.unscored_steps
        ));
    }
    if params.canaries.is_none() || read.canaries < params.drawn() {
        out.note = Some(match &out.note {
            Some(layout) => format!("{}. {layout}", read.count_reason),
            None => read.count_reason.clone(),
        });
    }
    out.details.insert("canary_draws".into(), read.sampled.into());
    out.details.insert("claimed_epsilon".into(), read.component.epsilon.map_or(serde_json::Value::Null, Into::into));
    out.details.insert("component".into(), read.component_event.clone().into());
    out.details.insert("canary_training_seconds".into(), read.training_seconds.into());
    out.details.extend(one_run);
    out.component_claim = Some(read.component);
    // "The reads are likelier under inclusion": the midpoint of the claimed trade-off, fixed
    // before training, so that every canary certifies the gdp bound (a split spends half).
    out.planned_test = Some(PlannedTest { threshold: 0.0, bound: BoundKind::Gdp });
    Ok(out)
}
