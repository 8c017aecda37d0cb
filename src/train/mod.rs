//! The training interface every method implements, so that the CLI, the attacks and the audit
//! treat GAP, ProGAP, DP-GNN, LPGNN and the baselines alike.
use crate::data::Dataset;
use crate::error::Result;
use crate::privacy::accountant::Budget;
use serde::{Deserialize, Serialize};
use tch::Tensor;

/// Utility of one trained model, in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    pub train: f64,
    pub val: f64,
    pub test: f64,
}

/// A trained target as a deployment exposes it. Attacks reach it only through the adapters in
/// `audit`, which hand each attack what its threat model allows.
pub trait TrainedModel {
    /// Class posteriors (softmax rows) for every node of the training graph, [N, C]. Private
    /// methods answer from their cached private aggregations, at no extra privacy cost.
    fn posteriors(&self) -> Tensor;
    /// Posteriors on another graph (inductive inference), [N', C].
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor>;
    /// Node embeddings, where the method has them (e.g. GAP's encoder output), [N, h].
    fn embeddings(&self) -> Option<Tensor> {
        None
    }
}

/// What a training run returns: the model, its utility and the budget it spent.
pub struct TrainedRun {
    pub model: Box<dyn TrainedModel>,
    pub accuracy: Accuracy,
    pub budget: Budget,
    pub seconds: f64,
}
