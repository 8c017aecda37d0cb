//! Training methods: one module per method family, each pairing a network from `crate::models`
//! with its privacy mechanism and the budget from the accountant's events; [`registry`] is the
//! only list of methods, and `train`, `account`, `audit`, checkpoints and the docs derive from it.
use crate::data::Dataset;
use crate::error::Result;
use crate::privacy::accountant::Budget;
use tch::Tensor;

// First: its list of methods (a macro) generates `Method` in `method`.
#[macro_use]
pub mod registry;

pub mod backbone;
pub mod checkpoint;
pub mod class_dp;
pub mod decoupled;
pub mod dpar;
pub mod dpgnn;
pub mod gap;
pub mod knobs;
pub mod lpgnn;
pub mod method;
pub mod mlp;
pub mod pate;
pub mod pgc;
pub mod pgc_vgae;
pub mod progap;
pub mod recipe;
pub mod rgnn;
pub mod shared;
pub mod size;
pub mod spec;

pub use crate::train::Accuracy;
pub use checkpoint::{load_model, LoadedModel};
pub use method::Method;
pub use recipe::{Recipe, UtilityMetric};
pub use spec::MethodSpec;

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
    /// White-box access for inversion and graph-reconstruction attacks: parameters and a
    /// differentiable forward (`gnnaudit_attacks::WhiteBox`), where the method can give one.
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        None
    }
    /// The embeddings the model computed for the nodes it trained on (dataset ids, [n, h]), where
    /// they differ from `embeddings` (DPAR: z_v = sum_u Pi_vu f(X_u) over its private rows).
    fn training_embeddings(&self) -> Option<(Vec<usize>, Tensor)> {
        None
    }
    /// Named figures a method reports beside its accuracy (e.g. LPGNN's label recovery).
    fn diagnostics(&self) -> Vec<(String, f64)> {
        vec![]
    }
    /// Gives a model loaded from a checkpoint its training graph (`data`, with the training
    /// `seed` for a node-level degree bound), which its white-box `forward_features` needs.
    fn attach_graph(&mut self, data: &Dataset, seed: u64) -> Result<()> {
        let _ = (data, seed);
        Ok(())
    }
    /// Link-prediction utility (ROC-AUC, average precision) where the method predicts edges.
    fn link_metrics(&self) -> Option<crate::methods::pgc_vgae::LinkMetrics> {
        None
    }
    /// Saves the model to a directory (checkpoint, cached private aggregations, and a JSON
    /// sidecar with the recipe and budget) so that it can be attacked later without retraining.
    fn save(&self, dir: &std::path::Path, recipe: &Recipe, budget: &Budget) -> Result<()> {
        let _ = (dir, recipe, budget);
        Err(crate::error::Error::invalid("save", "this method does not support saving yet"))
    }
}

/// A white box's posteriors from its logits: the adversary holding the parameters reads the
/// model's probabilities, in evaluation mode (no dropout, batch norm on its running statistics).
pub fn white_box_posteriors(logits: Tensor) -> gnnaudit_attacks::Result<Tensor> {
    Ok(logits.softmax(-1, tch::Kind::Float))
}

/// What a training run returns: the model, its utility and the budget it spent.
pub struct TrainedRun {
    pub model: Box<dyn TrainedModel>,
    pub accuracy: Accuracy,
    pub budget: Budget,
    pub seconds: f64,
}

/// Trains `recipe.method` on `data` (which must carry a split), deterministically given `seed`.
/// Validates the recipe first; private methods calibrate their noise to (epsilon, delta) and the
/// run records the budget spent.
pub fn train(recipe: &Recipe, data: &Dataset, seed: u64) -> Result<TrainedRun> {
    train_with(recipe, data, seed, &crate::train::accounting::Accounting::default())
}

/// [`train`] with the caller's accounting: whether budgets state the PLD epsilon, and the
/// calibrations shared by every run trained through the same value (repeats, an audit's cells).
pub fn train_with(
    recipe: &Recipe,
    data: &Dataset,
    seed: u64,
    acct: &crate::train::accounting::Accounting,
) -> Result<TrainedRun> {
    recipe.validate()?;
    data.split()?;
    let start = std::time::Instant::now();
    let mut run = (recipe.method.spec().train)(recipe, data, seed, acct)?;
    run.seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

/// The budget `train` would claim for `recipe` on `data` with `seed`, without training (the
/// method's registry `budget`, which its training also uses).
pub fn budget(recipe: &Recipe, data: &Dataset, seed: u64) -> Result<Budget> {
    budget_with(recipe, data, seed, &crate::train::accounting::Accounting::default())
}

/// [`budget`] with the caller's accounting (its calibrations are then reused by training).
pub fn budget_with(
    recipe: &Recipe,
    data: &Dataset,
    seed: u64,
    acct: &crate::train::accounting::Accounting,
) -> Result<Budget> {
    recipe.validate()?;
    data.split()?;
    (recipe.method.spec().budget)(recipe, data, seed, acct)
}
