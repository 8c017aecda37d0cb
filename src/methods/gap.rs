//! GAP (thesis ch.4): the model, its training and checkpoint, its white box, its aggregation
//! release re-run on an auditor's crafted graph, and its registry entries.
use super::checkpoint::{save_dir, Cache, Meta};
use super::decoupled::{
    crafted_operator, entry, features, fit_config, privacy, style, training_graph, training_graph_operator, Privacy,
    StoreLoader, EDGE_DP, NODE_DP, NON_PRIVATE,
};
use super::method::Method;
use super::recipe::Recipe;
use super::spec::{FloorPlan, MemoryShape, MethodSpec, Replay, ReplayFamily};
use super::{white_box_posteriors, Accuracy, TrainedModel, TrainedRun};
use crate::data::{bound_degree, Dataset, DegreeBound, Graph};
use crate::error::Result;
use crate::models::aggregation::{aggregation_operator, pma, pma_releases};
use crate::models::dense::{smooth_row_normalize, to_float};
use crate::models::gap::{GapClassifier, GapEncoder};
use crate::models::{Fwd, ParamStore, Rows};
use crate::privacy::accountant::{Budget, PrivacyUnit};
use crate::train::accounting::Accounting;
use crate::train::fit::{fit, Labels};
use gnnaudit_attacks::aggregation_canary::AggregationRelease;
use gnnaudit_attacks::{Result as AttackResult, WhiteBox};
use tch::{Kind, Tensor};

/// GAP's own knobs (the recipe's knob map; defaults: thesis section 4.7.3).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GapKnobs {
    /// Hops K of the aggregation module (default 2; 3 at node level).
    pub hops: Option<usize>,
    /// Layers of the encoder MLP.
    pub encoder_layers: usize,
    /// Layers of the base MLP each hop's aggregation goes through.
    pub base_layers: usize,
    /// Layers of the classification head.
    pub head_layers: usize,
}

impl Default for GapKnobs {
    fn default() -> Self {
        GapKnobs { hops: None, encoder_layers: 2, base_layers: 1, head_layers: 1 }
    }
}

impl crate::methods::knobs::Knobs for GapKnobs {
    fn check(&self) -> Result<()> {
        let fields = [
            ("hops", self.hops.unwrap_or(1)),
            ("encoder_layers", self.encoder_layers),
            ("base_layers", self.base_layers),
            ("head_layers", self.head_layers),
        ];
        match fields.iter().find(|(_, v)| *v == 0) {
            Some((name, _)) => Err(crate::Error::invalid(*name, "must be at least 1")),
            None => Ok(()),
        }
    }
}

impl GapKnobs {
    /// The hops `method` aggregates over.
    pub fn hops_of(&self, method: Method) -> usize {
        self.hops.unwrap_or(if method.is_node_level() { 3 } else { 2 })
    }
}

/// The hops a GAP recipe aggregates over.
pub fn hops(r: &Recipe) -> Result<usize> {
    Ok(r.own::<GapKnobs>()?.hops_of(r.method))
}

pub struct GapModel {
    pub ps: ParamStore,
    pub encoder: GapEncoder,
    pub classifier: GapClassifier,
    pub hops: usize,
    /// Standard deviation of the PMA noise per hop (sigma x sensitivity).
    pub noise_std: f64,
    /// Degree bound for node-level inference on a new graph.
    pub max_degree: Option<usize>,
    /// The graph PMA aggregated over (degree-bounded for NDP), for the white-box forward; None
    /// in a checkpoint until `attach_graph`.
    pub graph: Option<Graph>,
}

impl TrainedModel for GapModel {
    fn save(&self, dir: &std::path::Path, recipe: &Recipe, budget: &Budget) -> Result<()> {
        let mut meta =
            Meta::new(recipe, budget, self.encoder.mlp.layers[0].ws.size()[1], self.encoder.head.ws.size()[0]);
        meta.noise_std = self.noise_std;
        meta.max_degree = self.max_degree;
        let cache: Vec<(String, Tensor)> =
            self.classifier.inputs.iter().enumerate().map(|(k, r)| (format!("x{k}"), r.x.shallow_clone())).collect();
        save_dir(dir, &self.ps, &meta, &cache)
    }
    fn posteriors(&self) -> Tensor {
        tch::no_grad(|| {
            self.classifier.forward(&self.classifier.input_tensors(), &mut Fwd::eval()).softmax(-1, Kind::Float)
        })
    }
    /// Inductive inference (Algorithm 8): encoder, then PMA on the new graph with fresh noise.
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let g = match self.max_degree {
            Some(d) => bound_degree(&data.graph, DegreeBound::Out, d, 0)?,
            None => data.graph.clone(),
        };
        let x0 = self.encoder.embed(&features(data));
        let aggs = pma(&aggregation_operator(&g), &x0, self.hops, self.noise_std);
        Ok(tch::no_grad(|| self.classifier.forward(&aggs, &mut Fwd::eval()).softmax(-1, Kind::Float)))
    }
    fn embeddings(&self) -> Option<Tensor> {
        self.classifier.inputs.first().map(|r| r.x.shallow_clone())
    }
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
    fn attach_graph(&mut self, data: &Dataset, seed: u64) -> Result<()> {
        self.graph = Some(training_graph(data, self.max_degree, seed)?);
        Ok(())
    }
}

/// The sensitivity of one GAP/ProGAP aggregation that the noise is calibrated to: 1 at edge level
/// (Lemma 6), sqrt(D) at node level on the degree-bounded graph (Lemma 8). `crate::replay` checks
/// observed changes against this same value.
pub fn aggregation_sensitivity(r: &Recipe) -> f64 {
    if r.method.is_node_level() {
        (r.dp.max_degree as f64).sqrt()
    } else if r.method == Method::DemoGapEdpPlantedBug {
        // The planted bug: the claim is GAP-EDP's, the noise is for a sensitivity of 0.1.
        0.1
    } else if r.method == Method::DemoGapEdpNoiseOff {
        // The planted bug: the claim is GAP-EDP's, the noise is for a sensitivity of 0 (none).
        0.0
    } else {
        1.0
    }
}

pub fn train_gap(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<TrainedRun> {
    let (model, accuracy, privacy) = fit_gap(r, data, seed, acct)?;
    Ok(TrainedRun { model: Box::new(model), accuracy, budget: privacy.budget, seconds: 0.0 })
}

/// [`train_gap`] with the concrete model and its calibration (for `crate::replay`).
pub fn fit_gap(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<(GapModel, Accuracy, Privacy)> {
    tch::manual_seed(seed as i64);
    let labels = Labels::from_dataset(data)?;
    let n_train = labels.train.size()[0] as usize;
    let hops = hops(r)?;
    let node = r.method == Method::GapNdp;
    let privacy = privacy(r, data, acct, hops)?;
    let graph =
        if node { bound_degree(&data.graph, DegreeBound::Out, r.dp.max_degree, seed)? } else { data.graph.clone() };
    let sensitivity = aggregation_sensitivity(r);
    let cfg = fit_config(r, n_train, privacy.sigma);
    let (ps, encoder, mut classifier) = build_gap(r, Rows::of_features(&data.features), data.num_classes)?;
    // The DP-SGD stages, declared before the first for a gradient-canary audit to plan on.
    crate::privacy::dpsgd::canary::declare(
        [&encoder as &dyn crate::models::NodeClassifier, &classifier]
            .iter()
            .filter_map(|m| crate::train::fit::dp_sgd_stage(*m, &ps, &cfg))
            .collect(),
    );
    // 1. pre-train the encoder; 2-4. encode, normalise, PMA once (cached); 5. train CM.
    let rep = fit(&encoder, &ps, &labels, &cfg)?;
    tracing::info!("GAP encoder: best val {:.4} at epoch {} ({} steps)", rep.best_val(), rep.best_epoch, rep.steps);
    let noise_std = privacy.sigma * sensitivity;
    let x0 = encoder.embed(&encoder.x.x);
    classifier.inputs = pma(&aggregation_operator(&graph), &x0, hops, noise_std).into_iter().map(Rows::new).collect();
    let rep = fit(&classifier, &ps, &labels, &cfg)?;
    tracing::info!("GAP classifier: best val {:.4} at epoch {} ({} steps)", rep.best_val(), rep.best_epoch, rep.steps);
    let accuracy = labels.model_accuracy(&classifier);
    let model = GapModel {
        ps,
        encoder,
        classifier,
        hops,
        noise_std,
        max_degree: node.then_some(r.dp.max_degree),
        graph: Some(graph),
    };
    Ok((model, accuracy, privacy))
}

/// GAP's encoder and classification module; `x` holds the training features.
pub fn build_gap(r: &Recipe, x: Rows, classes: usize) -> Result<(ParamStore, GapEncoder, GapClassifier)> {
    let k: GapKnobs = r.own()?;
    let mut ps = ParamStore::new();
    let st = style(r);
    let (h, c) = (r.train.hidden as i64, classes as i64);
    let encoder = GapEncoder::new(&mut ps, x, h, c, k.encoder_layers, st);
    let classifier = GapClassifier::new(&mut ps, k.hops_of(r.method), h, h, c, k.base_layers, k.head_layers, st);
    Ok((ps, encoder, classifier))
}

/// Rebuilds a saved GAP model from its cached private aggregations.
fn load_gap(meta: &Meta, cache: &Cache, load: StoreLoader) -> Result<Box<dyn TrainedModel>> {
    let r = &meta.recipe;
    let empty = Tensor::zeros([0, meta.num_features], (Kind::Float, crate::device::current()));
    let (mut ps, encoder, mut classifier) = build_gap(r, Rows::new(empty), meta.num_classes as usize)?;
    load(&mut ps.vs)?;
    let hops = hops(r)?;
    classifier.inputs = (0..=hops).map(|k| cache.get(&format!("x{k}")).map(Rows::new)).collect::<Result<_>>()?;
    Ok(Box::new(GapModel {
        ps,
        encoder,
        classifier,
        hops,
        noise_std: meta.noise_std,
        max_degree: meta.max_degree,
        graph: None,
    }))
}

// ---------------------------------------------------------------- white box and aggregation release

impl GapModel {
    /// Noise-free GAP forward with aggregation operator `adj` (sparse or dense, rows = targets):
    /// encoder, PMA with sigma = 0 (Algorithm 5), classification module (Eq. 4.10-4.12).
    pub fn logits_noise_free(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        let mut f = Fwd::eval();
        let mut hops = vec![smooth_row_normalize(&self.encoder.mlp.forward(&to_float(x), &mut f))];
        for k in 0..self.hops {
            let next = smooth_row_normalize(&adj.matmul(&hops[k]));
            hops.push(next);
        }
        self.classifier.forward(&hops, &mut f)
    }
}

impl WhiteBox for GapModel {
    fn num_classes(&self) -> usize {
        self.encoder.head.ws.size()[0] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.ps.params.iter().map(|p| p.shallow_clone()).collect()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        let adj = training_graph_operator(self.graph.as_ref(), "GAP")?;
        white_box_posteriors(self.logits_noise_free(x, &adj))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        Some(white_box_posteriors(self.logits_noise_free(x, &to_float(adj))))
    }
    fn aggregation(&self) -> Option<&dyn gnnaudit_attacks::aggregation_canary::AggregationRelease> {
        Some(self)
    }
}

impl AggregationRelease for GapModel {
    fn hops(&self) -> usize {
        self.hops
    }
    fn release(&self, features: &Tensor, edges: &[(usize, usize)], seed: u64) -> AttackResult<Vec<(Tensor, Tensor)>> {
        let adj = crafted_operator(features.size()[0] as usize, edges)?;
        let x0 = self.encoder.embed(&features.to_kind(Kind::Float));
        tch::manual_seed(seed as i64);
        Ok(pma_releases(&adj, &x0, self.hops, self.noise_std))
    }
}

// ---------------------------------------------------------------- registry entries

const GAP_OWN: Option<crate::methods::knobs::OwnKnobs> = Some(crate::methods::knobs::own::<GapKnobs>());

/// The budget of a GAP run (the registry's `budget`): the calibration training runs.
fn gap_budget(r: &Recipe, data: &Dataset, _seed: u64, acct: &Accounting) -> Result<Budget> {
    privacy(r, data, acct, hops(r)?).map(|p| p.budget)
}
pub const GAP_INF: MethodSpec = MethodSpec {
    own_knobs: GAP_OWN,
    budget: gap_budget,
    memory: MemoryShape::HopCache,
    floor: Some(FloorPlan::Gap),
    ..entry("gap-inf", "GAP without noise (eps = inf)", PrivacyUnit::None, false, NON_PRIVATE, train_gap, load_gap)
};
pub const GAP_EDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
    own_knobs: GAP_OWN,
    budget: gap_budget,
    memory: MemoryShape::HopCache,
    floor: Some(FloorPlan::Gap),
    // The same pipeline and claim with the aggregation noise switched off.
    control: Some(Method::DemoGapEdpNoiseOff),
    ..entry(
        "gap-edp",
        "GAP with edge-level DP (PMA noise; thesis Prop. 6)",
        PrivacyUnit::Edge,
        true,
        EDGE_DP,
        train_gap,
        load_gap,
    )
};
pub const GAP_NDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
    own_knobs: GAP_OWN,
    budget: gap_budget,
    memory: MemoryShape::HopCache,
    floor: Some(FloorPlan::Gap),
    batch_norm: false,
    control: Some(Method::GapInf),
    ..entry(
        "gap-ndp",
        "GAP with node-level DP (degree bound, PMA at sensitivity sqrt(D), DP-Adam; Prop. 7)",
        PrivacyUnit::Node,
        true,
        NODE_DP,
        train_gap,
        load_gap,
    )
};
pub const DEMO_GAP_EDP_PLANTED_BUG: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
    own_knobs: GAP_OWN,
    budget: gap_budget,
    memory: MemoryShape::HopCache,
    unsound: Some(
        "UNSOUND (demo-gap-edp-planted-bug): a planted bug for demonstrations; its PMA noise is calibrated to a \
         sensitivity of 0.1 instead of 1, 10x too little for the epsilon it claims",
    ),
    control: Some(Method::DemoGapEdpNoiseOff),
    ..entry(
        "demo-gap-edp-planted-bug",
        "PLANTED BUG, a demo only: GAP-EDP whose PMA noise is calibrated to a sensitivity of 0.1 instead \
         of 1, so it claims its epsilon with 10x too little noise; an audit must flag it",
        PrivacyUnit::Edge,
        true,
        NON_PRIVATE,
        train_gap,
        load_gap,
    )
};
pub const DEMO_GAP_EDP_NOISE_OFF: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
    own_knobs: GAP_OWN,
    budget: gap_budget,
    memory: MemoryShape::HopCache,
    unsound: Some(
        "UNSOUND (demo-gap-edp-noise-off): a planted bug for demonstrations; its aggregation noise is switched \
         off while it claims GAP-EDP's epsilon",
    ),
    ..entry(
        "demo-gap-edp-noise-off",
        "PLANTED BUG, a demo only: GAP-EDP with its aggregation noise switched off while it still claims \
         GAP-EDP's epsilon; the edge canary audit must report a violation",
        PrivacyUnit::Edge,
        true,
        NON_PRIVATE,
        train_gap,
        load_gap,
    )
};
