//! Privacy attacks on graph neural networks, written against a threat-model interface
//! (`threat`): black-box posteriors, white-box differentiable forward, and a shadow-training
//! oracle. The main crate implements these traits for its trained models; this crate never sees
//! training code. Each attack is one module implementing `threat::Attack` on its parameter struct,
//! listed once in the registry (`attack`), which alone imports the attack modules; `run_attack`
//! is the single entry point; every attack returns an `AttackResult`
//! with its game, the adversary's knowledge, AUC, ROC, TPR at 0.1%/1% FPR, balanced accuracy and,
//! where the game matches the claimed privacy unit, an empirical epsilon lower bound.
//!
//! | attack (registry name) | module | access | game unit |
//! | --- | --- | --- | --- |
//! | `mia` (shadow-model / reference membership inference) | `membership` | black box (+ shadow oracle for `source = "independent"`) | node membership |
//! | `mia-metric` (metric membership inference) | `membership` | as `mia` | node membership |
//! | `lira` | `lira` | black box + shadow oracle | node membership |
//! | `link-stealing` | `link_stealing` | black box | practical (homophily) |
//! | `canary-edge` | `canary` | training oracle | edge canary |
//! | `canary-node` | `record_canary` | training oracle | node canary |
//! | `canary-ldp` | `record_canary` | training oracle | LDP canary |
//! | `canary-ldp-features` / `canary-ldp-feature` | `feature_canary` | training oracle | LDP canary / LDP feature canary |
//! | `canary-aggregation` (in-pipeline canaries) | `aggregation_canary` | white box (released aggregations) | edge canary |
//! | `canary-gradient` (in-pipeline DP-SGD canaries) | `gradient_canary` | training oracle, white box on the DP-SGD steps | gradient canary |
//! | `canary-subclass` | `subclass_canary` | training oracle (units) | subclass canary |
//! | `inversion` (class inversion) | `inversion` | white box | practical |
//! | `graph-reconstruction` | `reconstruction` | black box (white box where available) | practical |
//! | `attribute` (attribute inference) | `attribute` | black box (attribute carved out) | practical |
//! | `degree-inference` | `degree_inference` | black box (training-node embeddings) | practical |
//!
//! Shared pieces below the attacks: `threat` (access traits, `Target`, `Outcome`, `Attack`),
//! `canary_game`, `metrics`, `binomial` (exact binomial tails and Clopper-Pearson bounds),
//! `bisection`, `stats`, `classifier`, `posterior`, `graph`. `toy` (small targets for tests and
//! examples) is built for the unit tests and with the `toy` feature.
pub mod aggregation_canary;
pub mod attack;
pub mod attribute;
pub mod binomial;
pub mod bisection;
pub mod canary;
pub mod canary_game;
pub mod classifier;
pub mod degree_inference;
pub mod error;
pub mod feature_canary;
pub mod gradient_canary;
pub mod graph;
pub mod inversion;
pub mod link_stealing;
pub mod lira;
pub mod membership;
pub mod metrics;
pub mod one_run;
pub mod posterior;
pub mod reconstruction;
pub mod record_canary;
pub mod result;
pub mod stats;
pub mod subclass_canary;
pub mod threat;
#[cfg(any(test, feature = "toy"))]
pub mod toy;

#[cfg(test)]
mod attack_tests;

pub use attack::{AttackConfig, AttackKind, AttackParams, StatedKnowledge, CERTIFICATION_KEYS};
pub use error::{Error, Result};
pub use graph::{class_balanced_split, membership_split, AttackGraph, NodeSplit};
pub use result::{certify_pooled, run_attack, AttackResult};
pub use threat::{
    Access, AdversaryKnowledge, AggregationRelease, Attack, BlackBox, Claim, ClaimUnit, Game, GameUnit,
    GradientCanaryLayout, GradientCanaryPlan, GradientCanaryReadings, GradientCanarySites, Outcome, PlannedTest,
    ShadowOracle, Target, WhiteBox,
};
