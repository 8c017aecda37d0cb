//! The GNN backbones shared by LPGNN and the non-private baselines: the graph tensors each layer
//! type needs, the 2-layer GCN/GAT/SAGE network of thesis ch.3 (hidden 16, SeLU, dropout, GAT with
//! 4 heads), and their full-graph step on the one training loop (`train::fit`).
use crate::data::{Dataset, Graph};
use crate::error::{Error, Result};
use crate::methods::{white_box_posteriors, Accuracy, TrainedModel};
use crate::models::dense::{sage_aggregation_dense, to_float};
use crate::models::sage::{Aggregation, SageConfig, SageNet};
use crate::models::sparse::{self, FeatureMatrix, Product, SparseMatrix};
use crate::privacy::dpsgd::{Optimizer, OptimizerKind};
use crate::train::evaluate::{self, Labels};
use crate::train::fit::{drive, Batching, Evaluation, FitConfig, Selection, Ties, Trainee};
use gnnaudit_attacks::{Result as AttackResult, WhiteBox};
use tch::{nn, Kind, Tensor};

pub use crate::models::backbone::{GnnKind, GraphTensors, Network, TwoLayerGnn, GAT_HEADS};

/// A trained full-batch model: weights, the graph tensors and features of its training graph.
pub struct FullBatchModel {
    pub vs: nn::VarStore,
    pub net: Network,
    pub features: Tensor,
    pub tensors: GraphTensors,
    /// The graph it was trained on (SAGE-EDP's perturbed one), saved with a checkpoint.
    pub graph: Graph,
    /// Applied to another dataset's raw features before inference (e.g. LPGNN's KProp).
    pub posteriors_cache: Tensor,
}

impl TrainedModel for FullBatchModel {
    /// Saves the weights, the features and training graph it answers from (see `train::checkpoint`).
    fn save(
        &self,
        dir: &std::path::Path,
        recipe: &crate::methods::Recipe,
        budget: &crate::privacy::accountant::Budget,
    ) -> Result<()> {
        use crate::methods::checkpoint::{save_with_graph, Meta};
        let meta = Meta::new(recipe, budget, self.features.size()[1], self.posteriors_cache.size()[1]);
        let features =
            if self.features.is_sparse() { self.features.to_dense(None, false) } else { self.features.shallow_clone() };
        save_with_graph(dir, &self.vs, &meta, vec![("features".to_string(), features)], &self.graph)
    }
    fn posteriors(&self) -> Tensor {
        self.posteriors_cache.shallow_clone()
    }
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let x = data.features.to_tensor();
        let want = self.features.size()[1];
        if x.size()[1] != want {
            return Err(Error::invalid("features", format!("model expects {want} columns, got {}", x.size()[1])));
        }
        let g = self.net.tensors(&data.graph);
        Ok(tch::no_grad(|| self.net.forward_t(&x, &g, false).softmax(-1, Kind::Float)))
    }
    /// White-box access for every baseline (GCN, GAT, GraphSAGE, SAGE-EDP): see `models::white_box`.
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
}

/// One step of a full-graph network (the baselines, graph-PATE's students): every node's
/// logits, the mean cross-entropy of `batch` against `y`, gradients through the recorded sparse
/// products (`models::sparse::backward`), then `opt`.
pub fn full_graph_step(
    net: &Network,
    input: &FeatureMatrix,
    g: &GraphTensors,
    params: &[Tensor],
    opt: &mut Optimizer,
    y: &Tensor,
    batch: &Tensor,
) {
    let recorders: Vec<&SparseMatrix> = g.matrices().chain(input.sparse()).collect();
    recorders.iter().for_each(|m| m.record());
    let logits = net.forward_features(input, g, true);
    let products: Vec<Product> = recorders.iter().flat_map(|m| m.take_products()).collect();
    let loss = crate::models::cross_entropy(&logits.index_select(0, batch), &y.index_select(0, batch));
    let grads = sparse::backward(&loss, params, products);
    let grads: Vec<(usize, Tensor)> = grads.into_iter().enumerate().filter_map(|(i, g)| Some((i, g?))).collect();
    opt.step(params, &grads);
}

/// The full-graph step of a baseline: every node's logits, the mean cross-entropy of the batch,
/// gradients through the recorded sparse products (`models::sparse::backward`).
struct FullGraphTrainee<'a> {
    vs: &'a nn::VarStore,
    net: &'a Network,
    input: &'a FeatureMatrix,
    g: &'a GraphTensors,
    params: Vec<Tensor>,
    opt: Optimizer,
    labels: &'a Labels,
}

impl Trainee for FullGraphTrainee<'_> {
    fn step(&mut self, batch: &Tensor) -> Result<()> {
        full_graph_step(self.net, self.input, self.g, &self.params, &mut self.opt, &self.labels.y, batch);
        Ok(())
    }
    fn evaluate(&self) -> Evaluation {
        let logits = tch::no_grad(|| self.net.forward_features(self.input, self.g, false));
        Evaluation::accuracy(evaluate::accuracy(&logits, &self.labels.y, &self.labels.val))
    }
    fn variables(&self) -> &nn::VarStore {
        self.vs
    }
}

/// The baselines' training (thesis ch.3 and PyG's examples): full-batch Adam on the mean
/// cross-entropy of the train nodes, keeping the best validation epoch (the latest of equals).
pub fn baseline_fit(epochs: usize, lr: f64, weight_decay: f64) -> FitConfig {
    FitConfig {
        epochs,
        batching: Batching::Full,
        dp: None,
        optimizer: OptimizerKind::Adam,
        lr,
        weight_decay,
        selection: Selection::BestValAcc { ties: Ties::Latest },
    }
}

/// Trains `net` on `data` with `fit` (non-private: no DP-SGD; see [`baseline_fit`]) through the
/// one loop, and returns the model and its accuracy at the kept epoch.
pub fn fit_full_batch(
    vs: nn::VarStore,
    net: Network,
    data: &Dataset,
    features: Tensor,
    fit: &FitConfig,
) -> Result<(FullBatchModel, Accuracy)> {
    fit.validate()?;
    if fit.dp.is_some() || !matches!(fit.batching, Batching::Full | Batching::Shuffled(_)) {
        return Err(Error::invalid("batch_size", "the GNN baselines train without DP-SGD"));
    }
    let labels = Labels::from_dataset(data)?;
    if labels.train.numel() == 0 {
        return Err(Error::invalid("split", "the training set is empty"));
    }
    let g = net.tensors(&data.graph);
    let input = net.feature_matrix(&features);
    let params = vs.trainable_variables();
    let opt = Optimizer::new(fit.optimizer, fit.lr, fit.weight_decay);
    let mut t = FullGraphTrainee { vs: &vs, net: &net, input: &input, g: &g, params, opt, labels: &labels };
    drive(&mut t, &labels.train, &fit.schedule())?;
    let logits = tch::no_grad(|| net.forward_features(&input, &g, false));
    let accuracy = labels.accuracy(&logits);
    let posteriors = logits.softmax(-1, Kind::Float);
    let graph = data.graph.clone();
    Ok((FullBatchModel { vs, net, features, tensors: g, graph, posteriors_cache: posteriors }, accuracy))
}

/// Rebuilds a saved baseline (see `train::checkpoint`): the network from the recipe, its weights,
/// and the posteriors recomputed on the saved features and training graph.
pub fn load_checkpoint(
    meta: &crate::methods::checkpoint::Meta,
    cache: &crate::methods::checkpoint::Cache,
    load: &dyn Fn(&mut nn::VarStore) -> Result<()>,
) -> Result<Box<dyn TrainedModel>> {
    let spec = spec_of(&meta.recipe)?;
    let mut vs = nn::VarStore::new(crate::device::current());
    let net = network(&vs, &spec, meta.num_features, meta.num_classes)?;
    load(&mut vs)?;
    let (features, graph) = (cache.get("features")?, cache.graph()?);
    let tensors = net.tensors(&graph);
    let input = net.feature_matrix(&features);
    let posteriors_cache = tch::no_grad(|| net.forward_features(&input, &tensors, false).softmax(-1, Kind::Float));
    Ok(Box::new(FullBatchModel { vs, net, features, tensors, graph, posteriors_cache }))
}

/// Which non-private (or graph-perturbed) network to train as a baseline.
#[derive(Debug, Clone)]
pub enum BaselineSpec {
    Sage(SageConfig),
    TwoLayer { kind: GnnKind, hidden: i64, dropout: f64 },
}

/// Trains a baseline on `data` as is (for SAGE-EDP, pass the ARR-perturbed graph in `data`).
pub fn train_baseline(
    data: &Dataset,
    spec: &BaselineSpec,
    fit: &FitConfig,
    seed: u64,
) -> Result<(FullBatchModel, Accuracy)> {
    tch::manual_seed(seed as i64);
    let vs = nn::VarStore::new(crate::device::current());
    let net = network(&vs, spec, data.num_features() as i64, data.num_classes as i64)?;
    fit_full_batch(vs, net, data, data.features.to_tensor(), fit)
}

/// The untrained network of `spec` for `d` features and `c` classes.
fn network(vs: &nn::VarStore, spec: &BaselineSpec, d: i64, c: i64) -> Result<Network> {
    Ok(match spec {
        BaselineSpec::Sage(cfg) => Network::Sage(SageNet::new(&vs.root(), d, c, cfg)?),
        BaselineSpec::TwoLayer { kind, hidden, dropout } => {
            if !(0.0..1.0).contains(dropout) {
                return Err(Error::invalid("dropout", format!("must be in [0, 1), got {dropout}")));
            }
            Network::TwoLayer(TwoLayerGnn::new(&vs.root(), *kind, d, *hidden, c, *dropout))
        }
    })
}

/// GraphSAGE's and SAGE-EDP's own knobs (the recipe's knob map).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SageKnobs {
    /// GraphSAGE message-passing layers, 1-5.
    pub mp_layers: usize,
    /// GraphSAGE aggregation: sum or mean (default: sum; sage-edp mean, see [`SageKnobs::aggregation_of`]).
    pub aggregation: Option<Aggregation>,
    /// Layers of the MLP before the SAGE layers.
    pub base_layers: usize,
    /// Layers of the head after the jumping-knowledge projection.
    pub head_layers: usize,
}

impl Default for SageKnobs {
    fn default() -> Self {
        SageKnobs { mp_layers: 2, aggregation: None, base_layers: 1, head_layers: 1 }
    }
}

impl crate::methods::knobs::Knobs for SageKnobs {
    fn check(&self) -> Result<()> {
        crate::ensure!(self.base_layers >= 1, crate::Error::invalid("base_layers", "must be at least 1"));
        crate::ensure!(self.head_layers >= 1, crate::Error::invalid("head_layers", "must be at least 1"));
        SageConfig { mp_layers: self.mp_layers, ..Default::default() }.validate()
    }
}

impl SageKnobs {
    /// The aggregation `method` uses. The reference's `gnn edge` uses mean aggregation; on the
    /// randomized-response graph (many added edges, inflated degrees) sum aggregation loses ~10
    /// points on Cora.
    pub fn aggregation_of(&self, method: crate::methods::Method) -> Aggregation {
        let default = if method == crate::methods::Method::SageEdp { Aggregation::Mean } else { Aggregation::Sum };
        self.aggregation.unwrap_or(default)
    }
}

/// The network a baseline recipe trains (GraphSAGE and SAGE-EDP share one).
fn spec_of(recipe: &crate::methods::Recipe) -> Result<BaselineSpec> {
    use crate::methods::Method;
    let own: SageKnobs =
        if matches!(recipe.method, Method::Sage | Method::SageEdp) { recipe.own()? } else { SageKnobs::default() };
    let sage = SageConfig {
        hidden: recipe.train.hidden as i64,
        pre_layers: own.base_layers,
        mp_layers: own.mp_layers,
        // With jumping knowledge, the reference (PyG's GraphSAGE with `jk`) first projects the
        // concatenation back to the hidden width, then its head MLP follows.
        post_layers: own.head_layers + 1,
        aggregation: own.aggregation_of(recipe.method),
        jk: true,
        batch_norm: recipe.norm() == crate::models::NormKind::Batch,
        normalize: true,
        dropout: recipe.train.dropout,
    };
    let two_layer =
        |kind| BaselineSpec::TwoLayer { kind, hidden: recipe.train.hidden as i64, dropout: recipe.train.dropout };
    let spec = match recipe.method {
        Method::Sage | Method::SageEdp => BaselineSpec::Sage(sage),
        Method::Gcn => two_layer(GnnKind::Gcn),
        Method::Gat => two_layer(GnnKind::Gat),
        m => return Err(Error::invalid("method", format!("{} is not a GNN baseline", m.name()))),
    };
    if let BaselineSpec::Sage(cfg) = &spec {
        cfg.validate()?;
    }
    Ok(spec)
}

/// The `train` arms of the GraphSAGE, SAGE-EDP, GCN and GAT baselines: maps the recipe onto the
/// network, perturbs the graph with ARR for SAGE-EDP (pure eps edge-level DP, Imola et al. 2022),
/// and trains full batch with best-validation selection.
pub fn train_recipe(
    recipe: &crate::methods::Recipe,
    data: &Dataset,
    seed: u64,
    acct: &crate::train::accounting::Accounting,
) -> Result<crate::methods::TrainedRun> {
    use crate::methods::Method;
    use crate::privacy::accountant::Budget;
    use crate::privacy::mechanisms::edge_rand::AsymmetricRandomizedResponse;
    use rand::SeedableRng;
    let start = std::time::Instant::now();
    let fit = baseline_fit(recipe.epochs(), recipe.train.lr, recipe.train.weight_decay);
    let spec = spec_of(recipe)?;
    let mut budget = Budget::non_private();
    let mut noisy;
    let mut data = data;
    if let (Method::SageEdp, Some(eps)) = (recipe.method, recipe.epsilon) {
        let arr = AsymmetricRandomizedResponse::new(eps)?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        noisy = data.clone();
        let out = arr.perturb(&data.graph, &mut rng)?;
        noisy.graph = out.graph;
        data = &noisy;
        budget = baseline_budget(recipe, data, seed, acct)?;
        budget.noise = vec![("arr_keep_prob".into(), out.keep_prob), ("arr_add_prob".into(), out.add_prob)];
    }
    let (model, accuracy) = train_baseline(data, &spec, &fit, seed)?;
    Ok(crate::methods::TrainedRun { model: Box::new(model), accuracy, budget, seconds: start.elapsed().as_secs_f64() })
}

/// The baselines' budget: none, or SAGE-EDP's pure-epsilon edge-level randomized response.
fn baseline_budget(
    recipe: &crate::methods::Recipe,
    _data: &Dataset,
    _seed: u64,
    _acct: &crate::train::accounting::Accounting,
) -> Result<crate::privacy::accountant::Budget> {
    use crate::privacy::accountant::{Budget, BudgetComponent, PrivacyUnit};
    let (crate::methods::Method::SageEdp, Some(eps)) = (recipe.method, recipe.epsilon) else {
        return Ok(Budget::non_private());
    };
    let mut budget = crate::privacy::accountant::pure_budget(
        &crate::privacy::accountant::methods::edge_rand(eps),
        PrivacyUnit::Edge,
        vec![],
    )?;
    budget.components = vec![BudgetComponent {
        name: "graph".into(),
        mechanism: format!(
            "asymmetric randomized response on the adjacency ({RR}% of eps on the bits, the rest on the density)",
            RR = (crate::privacy::mechanisms::edge_rand::RR_SHARE * 100.0) as u32
        ),
        epsilon: eps,
    }];
    Ok(budget)
}

// ---------------------------------------------------------------- white box

/// The full-batch baselines (GCN, GAT, GraphSAGE, SAGE-EDP) on the graph they were trained on.
impl WhiteBox for FullBatchModel {
    fn num_classes(&self) -> usize {
        self.posteriors_cache.size()[1] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.vs.trainable_variables()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        white_box_posteriors(self.net.forward_t(&to_float(x), &self.tensors, false))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        let x = to_float(x);
        let logits = match &self.net {
            Network::Sage(n) => n.forward_t(&x, &sage_aggregation_dense(adj, n.config().aggregation), false),
            Network::TwoLayer(n) => n.forward_dense(&x, adj),
        };
        Some(white_box_posteriors(logits))
    }
}

// ---------------------------------------------------------------- registry entries

use crate::methods::spec::{MethodSpec, Reads, Shared};
use crate::privacy::accountant::PrivacyUnit as Unit;

const SAGE_READS: Reads = Reads::NETWORK.with(&[Shared::BatchNorm]);

const fn entry(name: &'static str, about: &'static str, unit: Unit, reads: Reads) -> MethodSpec {
    MethodSpec {
        reads,
        load: Some(load_checkpoint),
        ..MethodSpec::new(name, about, unit, train_recipe, baseline_budget)
    }
}

pub const SAGE: MethodSpec = MethodSpec {
    own_knobs: Some(crate::methods::knobs::own::<SageKnobs>()),
    floor: Some(crate::methods::spec::FloorPlan::Sage),
    ..entry(
        "sage",
        "GraphSAGE, non-private (pre-MLP, 1-5 SAGE layers, jumping knowledge, post-MLP)",
        Unit::None,
        SAGE_READS,
    )
};
pub const SAGE_EDP: MethodSpec = MethodSpec {
    replay: crate::methods::spec::Replay::Releases(crate::methods::spec::ReplayFamily::EdgeRand),
    floor: Some(crate::methods::spec::FloorPlan::Sage),
    own_knobs: Some(crate::methods::knobs::own::<SageKnobs>()),
    // Without randomized response the perturbed graph is the real one.
    control: Some(crate::methods::Method::Sage),
    ..entry(
        "sage-edp",
        "GraphSAGE on a graph perturbed by asymmetric randomized response (EdgeRand): edge-level DP",
        Unit::Edge,
        SAGE_READS,
    )
};
pub const GCN: MethodSpec = entry("gcn", "GCN (2 layers), non-private", Unit::None, Reads::NETWORK);
pub const GAT: MethodSpec = entry("gat", "GAT (2 layers, 4 heads), non-private", Unit::None, Reads::NETWORK);

#[cfg(test)]
mod tests {
    use super::*;

    /// Batch norm trains its scale and shift, as the reference's BatchNorm1d does: after training, the MLP's batch-norm affine has left its start (1, 0).
    #[test]
    fn batch_norm_scale_and_shift_are_trained() {
        use crate::methods::{Method, Recipe};
        use crate::models::{Norm, NormKind};
        let data = crate::data::Csbm { nodes: 200, ..Default::default() }.generate().unwrap();
        let ratios = crate::data::split::SplitRatios::new(0.5, 0.25, 0.25).unwrap();
        let data = crate::data::split::random_split(&data, ratios, 0).unwrap();
        let mut r = Recipe::new(Method::Mlp, None);
        r.train.batch_norm = Some(true);
        r.train.epochs = Some(20);
        assert_eq!(r.norm(), NormKind::Batch);
        let (model, _, _) = crate::methods::mlp::fit_mlp(&r, &data, 1, &Default::default()).unwrap();
        let norms: Vec<&Norm> = model.net.mlp.norms.iter().filter(|n| matches!(n, Norm::Batch { .. })).collect();
        assert!(!norms.is_empty(), "the recipe asked for batch norm");
        for n in norms {
            let ids = n.ids();
            assert_eq!(ids.len(), 2, "scale and shift are trainable");
            let (w, b) = (&model.ps.params[ids[0]], &model.ps.params[ids[1]]);
            let moved = (w - 1.0).abs().max().double_value(&[]) + b.abs().max().double_value(&[]);
            assert!(moved > 1e-3, "batch-norm affine stayed at (1, 0): {moved}");
        }
    }

    /// The dense white-box forward on the training graph's own adjacency reproduces the model's
    /// sparse posteriors, and its gradient reaches the adjacency.
    #[test]
    fn gcn_dense_forward_matches_sparse_posteriors() {
        let data = crate::data::Csbm { nodes: 200, ..Default::default() }.generate().unwrap();
        let ratios = crate::data::split::SplitRatios::new(0.5, 0.25, 0.25).unwrap();
        let data = crate::data::split::random_split(&data, ratios, 0).unwrap();
        let spec = BaselineSpec::TwoLayer { kind: GnnKind::Gcn, hidden: 16, dropout: 0.5 };
        let fit = FitConfig { epochs: 20, ..Default::default() };
        let (model, _) = train_baseline(&data, &spec, &fit, 3).unwrap();
        let wb = model.white_box().expect("GCN has a white box");
        let x = data.features.to_tensor();
        let adj = data.graph.aggregation_tensor().to_dense(None, false).set_requires_grad(true);
        let dense = wb.forward_dense(&x, &adj).unwrap().unwrap();
        let sparse = model.posteriors();
        let gap = (&dense - &sparse).abs().max().double_value(&[]);
        assert!(gap < 1e-5, "dense vs sparse posteriors differ by {gap}");
        let feat = wb.forward_features(&x).unwrap();
        assert!((feat - &sparse).abs().max().double_value(&[]) < 1e-5);
        dense.select(1, 0).sum(Kind::Float).backward();
        assert!(adj.grad().abs().sum(Kind::Float).double_value(&[]) > 0.0);
    }
}
