//! What every canary game shares (edge, node, LDP, subclass canaries): the canary parameters,
//! the canaries' feature sources, and the outcome with its coin log and one-run bound. The canary
//! attacks import this module, never each other.
use crate::error::{check, Result};
use crate::graph::{AttackGraph, NodeSplit};
use crate::threat::{Access, AdversaryKnowledge, Game, GameUnit, Outcome, Target};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Parameters of the record canary games (node, LDP, LDP-feature canaries): how many canaries
/// per training run, and how many runs to pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecordCanaryParams {
    /// Canary records per training run.
    pub canaries: usize,
    /// Training runs; the canaries of all runs are pooled.
    pub runs: usize,
}

impl Default for RecordCanaryParams {
    fn default() -> Self {
        RecordCanaryParams { canaries: 200, runs: 1 }
    }
}

/// The bounds every canary game checks before training: at least 2 canaries and 1 run.
pub fn check_canaries(canaries: usize, runs: usize) -> Result<()> {
    check!(canaries >= 2, "canaries", "need at least 2 canaries, got {canaries}");
    check!(runs >= 1, "runs", "need at least 1 run");
    Ok(())
}

/// Record canaries need only the training oracle: they never query the deployed model.
pub const ORACLE_ONLY: Access = Access { black_box: false, white_box: false, oracle: true, carved_attribute: false };

/// Real nodes outside the training set, grouped by class: the canaries' feature sources (so no
/// training twin with the true label competes with a mislabelled copy).
pub fn sources_by_class(g: &AttackGraph, split: &NodeSplit) -> Vec<Vec<usize>> {
    let mut in_train = vec![false; g.num_nodes];
    for &v in &split.train {
        in_train[v] = true;
    }
    let mut by_class = vec![Vec::new(); g.num_classes];
    for v in 0..g.num_nodes {
        if !in_train[v] {
            by_class[g.labels[v]].push(v);
        }
    }
    by_class
}

/// Two different classes with sources, the first drawn uniformly among source nodes.
pub fn two_classes(by_class: &[Vec<usize>], rng: &mut ChaCha8Rng) -> (usize, usize) {
    let weights: Vec<usize> = by_class.iter().map(|c| c.len()).collect();
    let total: usize = weights.iter().sum();
    let mut pick = rng.gen_range(0..total);
    let mut a = 0;
    while pick >= weights[a] {
        pick -= weights[a];
        a += 1;
    }
    let others: Vec<usize> = (0..by_class.len()).filter(|&c| c != a && !by_class[c].is_empty()).collect();
    (a, others[rng.gen_range(0..others.len())])
}

/// The result of a canary game (edge, node or LDP canaries): the auditor's knowledge, the coin
/// log, the canary count and the one-run bound, in the same shape for every kind.
pub fn canary_outcome(
    (pos, neg, game): (Vec<f64>, Vec<f64>, Game),
    auditor: &str,
    log: Vec<serde_json::Value>,
    canaries: usize,
    one_run: serde_json::Map<String, serde_json::Value>,
    note: &str,
) -> Result<Outcome> {
    let knowledge = AdversaryKnowledge {
        black_box: true,
        shadow_training: true,
        public_features: true,
        notes: vec![auditor.into()],
        ..Default::default()
    };
    let mut out = Outcome::new(pos, neg, None, game, knowledge);
    out.details.insert("coins".into(), serde_json::Value::Array(log));
    out.details.insert("canaries".into(), canaries.into());
    out.details.extend(one_run);
    out.note = Some(note.into());
    Ok(out)
}

/// The one-run bound of Steinke, Nasr & Jagielski (2023) on a canary game's scores and coins,
/// certified by `stats` (split threshold, 95%): `eps_lb_one_run` (null where the game does not
/// match the claim, like `eps_lb`) and its certificate. Canaries of several runs pool validly:
/// each canary is in one run only, so the runs together are still (eps, delta)-DP in each canary.
pub fn one_run_details(
    scores: &[f64],
    included: &[bool],
    target: &Target,
    unit: GameUnit,
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let (pos, neg) = crate::stats::partition_by_coin(scores, included);
    let spec = crate::stats::AuditSpec::new(crate::stats::BoundKind::OneRun, target.claim.delta);
    let cert = crate::stats::certify(&pos, &neg, &spec, crate::stats::COIN_ASSUMPTION).ok();
    let matches = target.claim.matches(unit);
    let lb = cert.as_ref().filter(|_| matches).map(|c| c.eps_lb);
    m.insert("eps_lb_one_run".into(), lb.map_or(serde_json::Value::Null, Into::into));
    m.insert("one_run".into(), serde_json::to_value(cert).unwrap_or_default());
    m
}

/// A record-canary attack: its params wrap the caller's `RecordCanaryParams`; it needs
/// only the training oracle, checks its canary counts and plays `$game` through `$audit`.
macro_rules! record_canary_attack {
    ($(#[$doc:meta])* $name:ident, $game:expr, $audit:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub RecordCanaryParams);

        impl crate::threat::Attack for $name {
            fn game(&self) -> crate::threat::GameUnit {
                $game
            }
            fn requires(&self) -> crate::threat::Access {
                crate::canary_game::ORACLE_ONLY
            }
            fn check(&self) -> crate::error::Result<()> {
                crate::canary_game::check_canaries(self.0.canaries, self.0.runs)
            }
            fn run(&self, target: &crate::threat::Target, seed: u64) -> crate::error::Result<crate::threat::Outcome> {
                $audit(target, &self.0, seed)
            }
        }
    };
}
pub(crate) use record_canary_attack;
