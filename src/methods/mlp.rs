//! MLP and DP-MLP (the decoupled family's feature-only baseline): the model, its training and
//! checkpoint, its white box and its registry entries.
use super::checkpoint::{save_dir, Cache, Meta};
use super::decoupled::{entry, features, fit_config, privacy, style, Privacy, StoreLoader, EDGE_DP, NON_PRIVATE};
use super::method::Method;
use super::recipe::Recipe;
use super::spec::{FloorPlan, MemoryShape, MethodSpec, Reads, Replay, ReplayFamily, Shared};
use super::{white_box_posteriors, Accuracy, TrainedModel, TrainedRun};
use crate::data::Dataset;
use crate::error::Result;
use crate::models::dense::to_float;
use crate::models::mlp::MlpClassifier;
use crate::models::{Fwd, NodeClassifier, ParamStore, Rows};
use crate::privacy::accountant::{Budget, PrivacyUnit};
use crate::train::accounting::Accounting;
use crate::train::fit::{fit, Labels};
use gnnaudit_attacks::{Result as AttackResult, WhiteBox};
use tch::{Kind, Tensor};

/// The MLP's own knob.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MlpKnobs {
    /// Layers of the MLP (input -> hidden, mlp_layers - 2 hidden -> hidden, hidden -> classes;
    /// 1 is softmax regression).
    pub mlp_layers: usize,
}

impl Default for MlpKnobs {
    fn default() -> Self {
        MlpKnobs { mlp_layers: 2 }
    }
}

impl crate::methods::knobs::Knobs for MlpKnobs {
    fn check(&self) -> Result<()> {
        check_depth(self.mlp_layers)
    }
}

/// An MLP has at least its input -> classes layer.
pub fn check_depth(layers: usize) -> Result<()> {
    crate::ensure!(layers >= 1, crate::error::Error::invalid("mlp_layers", "must be at least 1"));
    Ok(())
}

/// The recipe's MLP depth.
pub fn depth(r: &Recipe) -> Result<usize> {
    Ok(r.own::<MlpKnobs>()?.mlp_layers)
}

pub struct MlpModel {
    pub ps: ParamStore,
    pub net: MlpClassifier,
}

impl TrainedModel for MlpModel {
    fn save(&self, dir: &std::path::Path, recipe: &Recipe, budget: &Budget) -> Result<()> {
        let meta = Meta::new(recipe, budget, self.net.x.x.size()[1], self.net.mlp.layers.last().unwrap().ws.size()[0]);
        save_dir(dir, &self.ps, &meta, &[("x".into(), self.net.x.x.shallow_clone())])
    }
    fn posteriors(&self) -> Tensor {
        let logits = tch::no_grad(|| self.net.all_logits(&mut Fwd::eval()));
        logits.expect("an MLP scores every node").softmax(-1, Kind::Float)
    }
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        Ok(tch::no_grad(|| self.net.logits_of(&features(data)).softmax(-1, Kind::Float)))
    }
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
}

pub fn train_mlp(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<TrainedRun> {
    let (model, accuracy, privacy) = fit_mlp(r, data, seed, acct)?;
    Ok(TrainedRun { model: Box::new(model), accuracy, budget: privacy.budget, seconds: 0.0 })
}

/// [`train_mlp`] with the concrete model and its calibration (for `crate::replay`).
pub fn fit_mlp(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<(MlpModel, Accuracy, Privacy)> {
    tch::manual_seed(seed as i64);
    let labels = Labels::from_dataset(data)?;
    let n_train = labels.train.size()[0] as usize;
    let privacy = privacy(r, data, acct, 0)?;
    let mut ps = ParamStore::new();
    let x = Rows::of_features(&data.features);
    let net = MlpClassifier::new(&mut ps, x, r.train.hidden as i64, data.num_classes as i64, depth(r)?, style(r));
    let cfg = fit_config(r, n_train, privacy.sigma);
    crate::privacy::dpsgd::canary::declare(crate::train::fit::dp_sgd_stage(&net, &ps, &cfg).into_iter().collect());
    fit(&net, &ps, &labels, &cfg)?;
    let accuracy = labels.model_accuracy(&net);
    Ok((MlpModel { ps, net }, accuracy, privacy))
}

/// The MLP of a recipe, `layers` deep; `x` holds the features it will be asked about.
pub fn build_mlp(r: &Recipe, x: Rows, classes: usize, layers: usize) -> (ParamStore, MlpClassifier) {
    let mut ps = ParamStore::new();
    let net = MlpClassifier::new(&mut ps, x, r.train.hidden as i64, classes as i64, layers, style(r));
    (ps, net)
}

/// Rebuilds a saved MLP from its cached features.
pub fn load_mlp(meta: &Meta, cache: &Cache, load: StoreLoader) -> Result<Box<dyn TrainedModel>> {
    load_mlp_of_depth(meta, cache, load, depth(&meta.recipe)?)
}

/// Rebuilds a saved MLP of `layers` layers (the class/subclass-DP MLPs read their depth from
/// their own knobs).
pub fn load_mlp_of_depth(
    meta: &Meta,
    cache: &Cache,
    load: StoreLoader,
    layers: usize,
) -> Result<Box<dyn TrainedModel>> {
    let (mut ps, net) = build_mlp(&meta.recipe, Rows::features(cache.get("x")?), meta.num_classes as usize, layers);
    load(&mut ps.vs)?;
    Ok(Box::new(MlpModel { ps, net }))
}

/// The hidden -> hidden layers of a recipe's MLP, for the memory bound.
fn hidden_layers(r: &Recipe) -> Result<usize> {
    Ok(depth(r)?.saturating_sub(2))
}

// ---------------------------------------------------------------- white box

/// The MLP: features only; `forward_dense` ignores the adjacency (the model's function of
/// (X, A) is constant in A), so inversion runs and graph reconstruction finds no gradient in A.
impl WhiteBox for MlpModel {
    fn num_classes(&self) -> usize {
        self.net.mlp.layers.last().expect("the MLP has layers").ws.size()[0] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.ps.params.iter().map(|p| p.shallow_clone()).collect()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        white_box_posteriors(self.net.logits_of(&to_float(x)))
    }
    fn forward_dense(&self, x: &Tensor, _adj: &Tensor) -> Option<AttackResult<Tensor>> {
        Some(self.forward_features(x))
    }
}

// ---------------------------------------------------------------- registry entries

const DP_MLP_READS: Reads = EDGE_DP.with(&[Shared::MaxGradNorm, Shared::NormGroups]);
const OWN: Option<crate::methods::knobs::OwnKnobs> = Some(crate::methods::knobs::own::<MlpKnobs>());
pub const MLP: MethodSpec = MethodSpec {
    // It reads no edge: its edge-level epsilon is 0 by construction.
    replay: Replay::Refused(
        "it reads no edge (edge-level epsilon 0 by construction): no noise, no sensitivity to replay",
    ),
    memory: MemoryShape::Mlp(hidden_layers),
    own_knobs: OWN,
    floor: Some(FloorPlan::Mlp),
    ..entry(
        "mlp",
        "MLP on features only: perfect edge-level privacy (edge eps = 0)",
        PrivacyUnit::Edge,
        false,
        NON_PRIVATE,
        train_mlp,
        load_mlp,
    )
};
pub const DP_MLP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::DpMlp),
    memory: MemoryShape::Mlp(hidden_layers),
    own_knobs: OWN,
    floor: Some(FloorPlan::Mlp),
    batch_norm: false,
    control: Some(Method::Mlp),
    ..entry(
        "dp-mlp",
        "MLP trained with DP-Adam: node-level DP",
        PrivacyUnit::Node,
        true,
        DP_MLP_READS,
        train_mlp,
        load_mlp,
    )
};
pub const DEMO_DP_MLP_NOISE_ON_MEAN: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::DpMlp),
    memory: MemoryShape::Mlp(hidden_layers),
    own_knobs: OWN,
    batch_norm: false,
    unsound: Some(
        "UNSOUND (demo-dp-mlp-noise-on-mean): a planted bug for demonstrations; its DP-SGD noise is added after \
         averaging, so its std is divided by the batch size twice, while it states DP-MLP's epsilon",
    ),
    control: Some(Method::Mlp),
    ..entry(
        "demo-dp-mlp-noise-on-mean",
        "PLANTED BUG, a demo only: DP-MLP whose DP-SGD noise is added after averaging (std divided by the \
         batch size twice) while it claims DP-MLP's epsilon; the gradient canary audit must flag it",
        PrivacyUnit::Node,
        true,
        DP_MLP_READS,
        train_mlp,
        load_mlp,
    )
};
pub const DEMO_DP_MLP_SHUFFLED: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::DpMlp),
    memory: MemoryShape::Mlp(hidden_layers),
    own_knobs: OWN,
    batch_norm: false,
    unsound: Some(
        "UNSOUND (demo-dp-mlp-shuffled): a planted bug for demonstrations; it trains on shuffled fixed-size \
         batches (each epoch a permutation, the incomplete last batch dropped) while it states DP-MLP's epsilon, \
         accounted for Poisson sampling",
    ),
    control: Some(Method::Mlp),
    ..entry(
        "demo-dp-mlp-shuffled",
        "PLANTED BUG, a demo only: DP-MLP on shuffled fixed-size batches (drop-last) accounted as Poisson \
         sampling, the gap Chua et al. 2024 measured; what the gradient canary audit can show of it is in the \
         README",
        PrivacyUnit::Node,
        true,
        DP_MLP_READS,
        train_mlp,
        load_mlp,
    )
};
pub const DEMO_DP_MLP_BIAS_UNCLIPPED: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::DpMlp),
    memory: MemoryShape::Mlp(hidden_layers),
    own_knobs: OWN,
    batch_norm: false,
    unsound: Some(
        "UNSOUND (demo-dp-mlp-bias-unclipped): a planted bug for demonstrations; its biases' per-example \
         gradients are summed unclipped, while it states DP-MLP's epsilon",
    ),
    control: Some(Method::Mlp),
    ..entry(
        "demo-dp-mlp-bias-unclipped",
        "PLANTED BUG, a demo only: DP-MLP that clips only its weights' per-example gradients and sums the \
         biases' unclipped while it claims DP-MLP's epsilon; the gradient canary audit must flag it",
        PrivacyUnit::Node,
        true,
        DP_MLP_READS,
        train_mlp,
        load_mlp,
    )
};
