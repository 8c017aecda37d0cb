//! ProGAP (thesis ch.5): the model, its training and checkpoint, its white box, its stage
//! releases re-run on an auditor's crafted graph, and its registry entries.
use super::checkpoint::{save_dir, Cache, Meta};
use super::decoupled::{
    crafted_operator, entry, features, fit_config, privacy, style, training_graph, training_graph_operator, Privacy,
    StoreLoader, EDGE_DP, NODE_DP, NON_PRIVATE,
};
use super::gap::aggregation_sensitivity;
use super::method::Method;
use super::recipe::Recipe;
use super::spec::{FloorPlan, MemoryShape, MethodSpec, Replay, ReplayFamily};

/// ProGAP's own knobs (the recipe's knob map; defaults: thesis section 5.5.3).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProgapKnobs {
    /// Depth K, i.e. stages 0..K, at most 10 (default 5; 4 at node level).
    pub depth: Option<usize>,
    /// Layers of each stage's base MLP (default 1; 2 for progap-ndp).
    pub base_layers: Option<usize>,
    /// Layers of each stage's head.
    pub head_layers: usize,
    /// Train each stage's new layer only (Remark 1) instead of progressively.
    pub layerwise: bool,
}

impl Default for ProgapKnobs {
    fn default() -> Self {
        ProgapKnobs { depth: None, base_layers: None, head_layers: 1, layerwise: false }
    }
}

impl crate::methods::knobs::Knobs for ProgapKnobs {
    fn check(&self) -> Result<()> {
        if self.depth.is_some_and(|d| d > 10) {
            return Err(crate::Error::invalid("depth", "at most 10"));
        }
        if self.base_layers == Some(0) {
            return Err(crate::Error::invalid("base_layers", "must be at least 1"));
        }
        if self.head_layers == 0 {
            return Err(crate::Error::invalid("head_layers", "must be at least 1"));
        }
        Ok(())
    }
}

impl ProgapKnobs {
    /// The stages `method` trains after stage 0.
    pub fn depth_of(&self, method: Method) -> usize {
        self.depth.unwrap_or(if method.is_node_level() { 4 } else { 5 })
    }
    /// The base MLP's layers of `method`.
    pub fn base_layers_of(&self, method: Method) -> usize {
        self.base_layers.unwrap_or(if method == Method::ProgapNdp { 2 } else { 1 })
    }
}

/// The depth of a ProGAP recipe.
pub fn depth(r: &Recipe) -> Result<usize> {
    Ok(r.own::<ProgapKnobs>()?.depth_of(r.method))
}
use super::{white_box_posteriors, Accuracy, TrainedModel, TrainedRun};
use crate::data::{bound_degree, Dataset, DegreeBound, Graph};
use crate::error::Result;
use crate::models::aggregation::{aggregation_operator, nap, nap_release};
use crate::models::dense::to_float;
use crate::models::progap::ProgapNet;
use crate::models::{row_normalize, Fwd, ParamStore, Rows};
use crate::privacy::accountant::{Budget, PrivacyUnit};
use crate::train::accounting::Accounting;
use crate::train::fit::{fit, Labels};
use gnnaudit_attacks::aggregation_canary::AggregationRelease;
use gnnaudit_attacks::{Result as AttackResult, WhiteBox};
use tch::{Kind, Tensor};

pub struct ProgapModel {
    pub ps: ParamStore,
    pub net: ProgapNet,
    pub noise_std: f64,
    pub max_degree: Option<usize>,
    /// The graph NAP aggregated over (degree-bounded for NDP), for the white-box forward; None
    /// in a checkpoint until `attach_graph`.
    pub graph: Option<Graph>,
}

impl TrainedModel for ProgapModel {
    fn save(&self, dir: &std::path::Path, recipe: &Recipe, budget: &Budget) -> Result<()> {
        let mut meta = Meta::new(
            recipe,
            budget,
            self.net.bases[0].layers[0].ws.size()[1],
            self.net.heads[0].layers.last().unwrap().ws.size()[0],
        );
        meta.noise_std = self.noise_std;
        meta.max_degree = self.max_degree;
        let cache: Vec<(String, Tensor)> =
            self.net.input_tensors().into_iter().enumerate().map(|(k, t)| (format!("x{k}"), t)).collect();
        save_dir(dir, &self.ps, &meta, &cache)
    }
    fn posteriors(&self) -> Tensor {
        let d = self.net.depth();
        tch::no_grad(|| self.net.all_stage_logits(d, &mut Fwd::eval()).softmax(-1, Kind::Float))
    }
    /// Inductive inference: run the stages on the new graph, with fresh NAP noise per stage.
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let g = match self.max_degree {
            Some(d) => bound_degree(&data.graph, DegreeBound::Out, d, 0)?,
            None => data.graph.clone(),
        };
        let adj = aggregation_operator(&g);
        let mut inputs = vec![features(data)];
        for s in 0..self.net.depth() {
            let e = self.net.embedding(&inputs, s);
            inputs.push(nap(&adj, &e, self.noise_std));
        }
        let d = self.net.depth();
        Ok(tch::no_grad(|| self.net.forward(&inputs, d, &mut Fwd::eval()).0.softmax(-1, Kind::Float)))
    }
    fn embeddings(&self) -> Option<Tensor> {
        Some(self.net.embedding(&self.net.input_tensors(), self.net.depth()))
    }
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
    fn attach_graph(&mut self, data: &Dataset, seed: u64) -> Result<()> {
        self.graph = Some(training_graph(data, self.max_degree, seed)?);
        Ok(())
    }
}

pub fn train_progap(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<TrainedRun> {
    let (model, accuracy, privacy) = fit_progap(r, data, seed, acct)?;
    Ok(TrainedRun { model: Box::new(model), accuracy, budget: privacy.budget, seconds: 0.0 })
}

/// [`train_progap`] with the concrete model and its calibration (for `crate::replay`).
pub fn fit_progap(
    r: &Recipe,
    data: &Dataset,
    seed: u64,
    acct: &Accounting,
) -> Result<(ProgapModel, Accuracy, Privacy)> {
    tch::manual_seed(seed as i64);
    let labels = Labels::from_dataset(data)?;
    let n_train = labels.train.size()[0] as usize;
    let depth = depth(r)?;
    let node = r.method == Method::ProgapNdp;
    let privacy = privacy(r, data, acct, depth)?;
    let graph =
        if node { bound_degree(&data.graph, DegreeBound::Out, r.dp.max_degree, seed)? } else { data.graph.clone() };
    let sensitivity = aggregation_sensitivity(r);
    let cfg = fit_config(r, n_train, privacy.sigma);
    let (ps, mut net) = build_progap(r, data.features.cols() as i64, data.num_classes)?;
    let adj = aggregation_operator(&graph);
    let noise_std = privacy.sigma * sensitivity;
    net.inputs.push(Rows::of_features(&data.features));
    // Its DP-SGD stages (one a depth), declared before the first for a gradient-canary audit.
    let stages = (0..=depth)
        .filter_map(|s| {
            net.stage = s;
            crate::train::fit::dp_sgd_stage(&net, &ps, &cfg)
        })
        .collect();
    crate::privacy::dpsgd::canary::declare(stages);
    for s in 0..=depth {
        if s > 0 {
            // NAP on the embeddings learned in stage s-1, computed once and cached (Alg. 9 l.3-5).
            let e = net.embedding(&net.input_tensors(), s - 1);
            net.inputs.push(Rows::new(nap(&adj, &e, noise_std)));
        }
        net.stage = s;
        let rep = fit(&net, &ps, &labels, &cfg)?;
        tracing::info!(
            "ProGAP stage {s}: best val {:.4} at epoch {} ({} steps)",
            rep.best_val(),
            rep.best_epoch,
            rep.steps
        );
    }
    let accuracy = labels.model_accuracy(&net);
    let model = ProgapModel { ps, net, noise_std, max_degree: node.then_some(r.dp.max_degree), graph: Some(graph) };
    Ok((model, accuracy, privacy))
}

/// ProGAP's stages for `features` input columns.
pub fn build_progap(r: &Recipe, features: i64, classes: usize) -> Result<(ParamStore, ProgapNet)> {
    let k: ProgapKnobs = r.own()?;
    let mut ps = ParamStore::new();
    let net = ProgapNet::new(
        &mut ps,
        k.depth_of(r.method),
        features,
        r.train.hidden as i64,
        classes as i64,
        k.base_layers_of(r.method),
        k.head_layers,
        style(r),
        k.layerwise,
    );
    Ok((ps, net))
}

/// Rebuilds a saved ProGAP model from its cached stage inputs.
fn load_progap(meta: &Meta, cache: &Cache, load: StoreLoader) -> Result<Box<dyn TrainedModel>> {
    let r = &meta.recipe;
    let (mut ps, mut net) = build_progap(r, meta.num_features, meta.num_classes as usize)?;
    load(&mut ps.vs)?;
    let depth = depth(r)?;
    net.inputs = (0..=depth)
        .map(|k| {
            cache.get(&format!("x{k}")).map(|x| {
                if k == 0 {
                    crate::models::Rows::features(x)
                } else {
                    crate::models::Rows::new(x)
                }
            })
        })
        .collect::<Result<_>>()?;
    net.stage = depth;
    Ok(Box::new(ProgapModel { ps, net, noise_std: meta.noise_std, max_degree: meta.max_degree, graph: None }))
}

// ---------------------------------------------------------------- white box and stage releases

impl ProgapModel {
    /// Noise-free ProGAP forward (Algorithm 9 with NAP at sigma = 0): stage inputs
    /// X_{s+1} = A^T normalize(base_s(X_s)), then the last stage's head over all base outputs.
    pub fn logits_noise_free(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        let mut f = Fwd::eval();
        let depth = self.net.depth();
        let mut inputs = vec![to_float(x)];
        for s in 0..depth {
            let e = self.net.bases[s].forward(&inputs[s], &mut f);
            inputs.push(adj.matmul(&row_normalize(&e)));
        }
        self.net.forward(&inputs, depth, &mut f).0
    }
}

impl WhiteBox for ProgapModel {
    fn num_classes(&self) -> usize {
        self.net.heads[0].layers.last().expect("heads have layers").ws.size()[0] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.ps.params.iter().map(|p| p.shallow_clone()).collect()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        let adj = training_graph_operator(self.graph.as_ref(), "ProGAP")?;
        white_box_posteriors(self.logits_noise_free(x, &adj))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        Some(white_box_posteriors(self.logits_noise_free(x, &to_float(adj))))
    }
    fn aggregation(&self) -> Option<&dyn gnnaudit_attacks::aggregation_canary::AggregationRelease> {
        Some(self)
    }
}

impl AggregationRelease for ProgapModel {
    fn hops(&self) -> usize {
        self.net.depth()
    }
    fn release(&self, features: &Tensor, edges: &[(usize, usize)], seed: u64) -> AttackResult<Vec<(Tensor, Tensor)>> {
        let adj = crafted_operator(features.size()[0] as usize, edges)?;
        tch::manual_seed(seed as i64);
        let mut inputs = vec![features.to_kind(Kind::Float)];
        let mut out = Vec::with_capacity(self.net.depth());
        for s in 0..self.net.depth() {
            let (input, sum) = nap_release(&adj, &self.net.embedding(&inputs, s), self.noise_std);
            inputs.push(sum.shallow_clone());
            out.push((input, sum));
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------- registry entries

const PROGAP_OWN: Option<crate::methods::knobs::OwnKnobs> = Some(crate::methods::knobs::own::<ProgapKnobs>());

/// The budget of a ProGAP run (the registry's `budget`): the calibration training runs.
fn progap_budget(r: &Recipe, data: &Dataset, _seed: u64, acct: &Accounting) -> Result<Budget> {
    privacy(r, data, acct, depth(r)?).map(|p| p.budget)
}

pub const PROGAP_INF: MethodSpec = MethodSpec {
    own_knobs: PROGAP_OWN,
    budget: progap_budget,
    memory: MemoryShape::StageCache,
    floor: Some(FloorPlan::Progap),
    batch_norm: false,
    ..entry("progap-inf", "ProGAP without noise", PrivacyUnit::None, false, NON_PRIVATE, train_progap, load_progap)
};
pub const PROGAP_EDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Progap),
    own_knobs: PROGAP_OWN,
    budget: progap_budget,
    memory: MemoryShape::StageCache,
    floor: Some(FloorPlan::Progap),
    batch_norm: false,
    control: Some(Method::ProgapInf),
    ..entry(
        "progap-edp",
        "ProGAP with edge-level DP (Theorem 4)",
        PrivacyUnit::Edge,
        true,
        EDGE_DP,
        train_progap,
        load_progap,
    )
};
pub const PROGAP_NDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Progap),
    own_knobs: PROGAP_OWN,
    budget: progap_budget,
    memory: MemoryShape::StageCache,
    floor: Some(FloorPlan::Progap),
    epochs: 5,
    control: Some(Method::ProgapInf),
    ..entry(
        "progap-ndp",
        "ProGAP with node-level DP (Theorem 5)",
        PrivacyUnit::Node,
        true,
        NODE_DP,
        train_progap,
        load_progap,
    )
};
