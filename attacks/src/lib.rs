//! Privacy attacks on graph neural networks, written against a threat-model interface
//! (`threat`): black-box posteriors, white-box differentiable forward, and a shadow-training
//! oracle. The main crate implements these traits for its trained models; this crate never sees
//! training code. `run_attack` is the single entry point; every attack returns an `AttackResult`
//! with its game, the adversary's knowledge, AUC, ROC, TPR at 0.1%/1% FPR, balanced accuracy and,
//! where the game matches the claimed privacy unit, an empirical epsilon lower bound.
//!
//! | attack | module | access | game unit |
//! | --- | --- | --- | --- |
//! | shadow-model membership inference | `membership` | black box + shadow oracle | node membership |
//! | metric membership inference | `membership` | black box + shadow oracle | node membership |
//! | LiRA | `lira` | black box + shadow oracle | node membership |
//! | link stealing | `link_stealing` | black box | practical (homophily) |
//! | canary-edge audit | `canary` | training oracle | edge canary |
//! | node-canary audit | `record_canary` | training oracle | node canary |
//! | LDP-canary audit | `record_canary` | training oracle | LDP canary |
//! | LDP feature-record / one-feature canaries | `feature_canary` | training oracle | LDP canary / LDP feature canary |
//! | in-pipeline canary audit | `aggregation_canary` | white box (released aggregations) | edge canary |
//! | subclass-canary audit | `subclass_canary` | training oracle (units) | subclass canary |
//! | class inversion | `inversion` | white box | practical |
//! | graph reconstruction | `reconstruction` | white box or black box | practical |
//! | attribute inference | `attribute` | black box | practical |
pub mod aggregation_canary;
pub mod attribute;
pub mod canary;
pub mod classifier;
pub mod degree_inference;
pub mod error;
pub mod feature_canary;
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
pub mod toy;

#[cfg(test)]
mod attack_tests;

pub use error::{Error, Result};
pub use graph::{class_balanced_split, AttackGraph, NodeSplit};
pub use result::{run_attack, AttackKind, AttackParams, AttackResult, Target};
pub use threat::{AdversaryKnowledge, BlackBox, Claim, ClaimUnit, Game, GameUnit, ShadowOracle, WhiteBox};
