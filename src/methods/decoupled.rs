//! One training function per model family; each calibrates its noise from (epsilon, delta)
//! through its privacy expression in [`crate::train::accounting`] and records the budget.
use super::checkpoint::{save_dir, Cache, Loader, Meta};
use super::recipe::{Method, Recipe};
use super::spec::{FloorPlan, MemoryShape, MethodSpec, Replay, ReplayFamily};
use super::{Accuracy, TrainedModel, TrainedRun};
use crate::data::{bound_degree, Dataset, DegreeBound, Graph};
use crate::error::Result;
use crate::models::aggregation::{aggregation_operator, nap, pma};
use crate::models::gap::{GapClassifier, GapEncoder};
use crate::models::mlp::MlpClassifier;
use crate::models::progap::ProgapNet;
use crate::models::{Fwd, MlpStyle, NodeClassifier, ParamStore, Rows};
use crate::privacy::accountant::{methods, Budget, PrivacyUnit};
use crate::privacy::dpsgd::{steps_per_epoch, DpSgd, PlantedFlaw};
use crate::train::accounting::{self, Accounting, Expression, SgdSchedule};
use crate::train::fit::{fit, Batching, FitConfig, Labels, Selection, Ties};
use tch::{Kind, Tensor};

/// What the privacy calibration decided for one run.
pub struct Privacy {
    /// Noise multiplier sigma (0 = no noise).
    pub sigma: f64,
    pub budget: Budget,
}

fn style(r: &Recipe) -> MlpStyle {
    MlpStyle { activation: r.activation, dropout: r.dropout, norm: r.norm() }
}

/// Delta for the run: the recipe's, or 10^-digits of the private-unit count.
pub fn delta_for(r: &Recipe, data: &Dataset) -> f64 {
    r.delta.unwrap_or_else(|| {
        let count = match r.method.privacy_unit() {
            PrivacyUnit::Node => data.num_nodes(),
            _ => data.graph.num_directed_edges(),
        };
        accounting::default_delta(count)
    })
}

/// Calibrates sigma for `expr` when the recipe has an epsilon; otherwise no noise.
fn calibrate(r: &Recipe, data: &Dataset, acct: &Accounting, expr: Expression) -> Result<Privacy> {
    match r.epsilon {
        Some(eps) => {
            let t = std::time::Instant::now();
            let delta = delta_for(r, data);
            let (sigma, budget) =
                acct.calibrate(&expr, r.accountant, eps, delta).map_err(|e| accountant_failure(r, delta, e))?;
            tracing::info!("calibrated sigma {sigma:.4} and budget in {:.2} s", t.elapsed().as_secs_f64());
            Ok(Privacy { sigma, budget })
        }
        None => {
            let mut b = Budget::non_private();
            b.noise = vec![("sigma".into(), 0.0)];
            Ok(Privacy { sigma: 0.0, budget: b })
        }
    }
}

/// The accountant's numerical failures (the analytic Gaussian's epsilon not converging at a very
/// large epsilon, a tiny sigma or many hops) come from the recipe: a bad-input error (exit 2)
/// naming the flags, not an internal one.
pub fn accountant_failure(r: &Recipe, delta: f64, e: crate::Error) -> crate::Error {
    let m = match e {
        crate::Error::Other(m) => m,
        crate::Error::InvalidParam { message, .. }
            if message.starts_with(crate::privacy::accountant::analytic::NON_CONVERGENCE) =>
        {
            message
        }
        e => return e,
    };
    crate::Error::invalid(
        "epsilon",
        format!(
            "the accountant cannot evaluate {} at --epsilon {} and --delta {} ({m}); use a smaller \
             --epsilon, a larger --delta or fewer --hops/--depth/--epochs",
            r.method.name(),
            r.epsilon.map_or("inf".to_string(), crate::error::num),
            crate::error::num(delta)
        ),
    )
}

/// The calibration of every method of this module, from one expression per method (the theorem
/// each follows is in `crate::train::accounting`): training and `gnnaudit account budget` both call
/// it, so they cannot disagree. The result is cached (`accounting`), so training after an audit's
/// dry run does not pay twice.
pub fn privacy(r: &Recipe, data: &Dataset, acct: &Accounting) -> Result<Privacy> {
    let n_train = data.split()?.train.len();
    let sgd = || schedule(r, n_train);
    let expr = match r.method {
        Method::Mlp => return Ok(Privacy { sigma: 0.0, budget: edge_free_budget()? }),
        // The planted DP-SGD bugs claim DP-MLP's epsilon.
        Method::DpMlp | Method::DemoDpMlpNoiseOnMean | Method::DemoDpMlpBiasUnclipped => accounting::dp_sgd(sgd()),
        Method::GapNdp => accounting::gap_node(r.hops(), r.max_degree, sgd(), sgd()),
        // The planted bugs claim GAP-EDP's epsilon; their noise is for a wrong sensitivity.
        Method::GapEdp | Method::DemoGapEdpPlantedBug | Method::DemoGapEdpNoiseOff => accounting::gap_edge(r.hops()),
        Method::ProgapNdp => accounting::progap_node(r.depth(), r.max_degree, sgd()),
        Method::ProgapEdp => accounting::progap_edge(r.depth()),
        _ => return Ok(Privacy { sigma: 0.0, budget: Budget::non_private() }),
    };
    calibrate(r, data, acct, expr)
}

/// [`privacy`]'s budget (the registry's `budget`).
fn budget(r: &Recipe, data: &Dataset, _seed: u64, acct: &Accounting) -> Result<Budget> {
    privacy(r, data, acct).map(|p| p.budget)
}

/// DP-SGD schedule of one training run over the training nodes.
fn schedule(r: &Recipe, n_train: usize) -> SgdSchedule {
    let b = r.batch_size().unwrap_or(n_train).min(n_train).max(1);
    SgdSchedule::new(b as f64 / n_train as f64, (r.epochs() * steps_per_epoch(n_train, b)) as u64)
}

/// The bug a demo method plants in its DP-SGD step (none for every shipped method).
fn planted_flaw(m: Method) -> PlantedFlaw {
    match m {
        Method::DemoDpMlpNoiseOnMean => PlantedFlaw::NoiseOnMean,
        Method::DemoDpMlpBiasUnclipped => PlantedFlaw::BiasUnclipped,
        _ => PlantedFlaw::None,
    }
}

/// The fit configuration (and DP-SGD clipping bound C) a method's training uses.
pub fn fit_config(r: &Recipe, n_train: usize, sigma: f64) -> FitConfig {
    let private = r.method.is_node_level() && r.epsilon.is_some();
    let batching = match r.batch_size() {
        None => Batching::Full,
        Some(b) if private => {
            let b = b.min(n_train);
            Batching::Poisson { rate: b as f64 / n_train as f64, steps_per_epoch: steps_per_epoch(n_train, b) }
        }
        Some(b) => Batching::Shuffled(b),
    };
    let dp = private.then(|| {
        let b = r.batch_size().unwrap().min(n_train);
        DpSgd {
            noise_multiplier: sigma,
            max_grad_norm: r.max_grad_norm,
            expected_batch_size: b as f64,
            sample_rate: b as f64 / n_train as f64,
            flaw: planted_flaw(r.method),
        }
    });
    FitConfig {
        epochs: r.epochs(),
        batching,
        dp,
        optimizer: r.optimizer,
        lr: r.lr,
        weight_decay: r.weight_decay,
        selection: if r.select_best_val { Selection::BestValAcc { ties: Ties::Earliest } } else { Selection::Last },
    }
}

/// The graph a GAP/ProGAP model trained on `data` with `seed` aggregated over: the degree-bounded
/// one at node level (the same draw as in training), the graph itself otherwise.
fn training_graph(data: &Dataset, max_degree: Option<usize>, seed: u64) -> Result<Graph> {
    match max_degree {
        Some(d) => bound_degree(&data.graph, DegreeBound::Out, d, seed),
        None => Ok(data.graph.clone()),
    }
}

fn features(data: &Dataset) -> Tensor {
    data.features.to_tensor().to_kind(Kind::Float)
}

// ---------------------------------------------------------------- MLP / DP-MLP

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
    let privacy = privacy(r, data, acct)?;
    let mut ps = ParamStore::new();
    let x = Rows::of_features(&data.features);
    let net = MlpClassifier::new(&mut ps, x, r.hidden as i64, data.num_classes as i64, r.mlp_layers, style(r));
    fit(&net, &ps, &labels, &fit_config(r, n_train, privacy.sigma))?;
    let accuracy = labels.model_accuracy(&net);
    Ok((MlpModel { ps, net }, accuracy, privacy))
}

/// The MLP uses no edge: at edge level no mechanism runs, epsilon 0 at delta 0.
fn edge_free_budget() -> Result<Budget> {
    crate::privacy::accountant::pure_budget(&methods::no_mechanism(), PrivacyUnit::Edge, vec![])
}

// ---------------------------------------------------------------- GAP

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
        (r.max_degree as f64).sqrt()
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
    let hops = r.hops();
    let node = r.method == Method::GapNdp;
    let privacy = privacy(r, data, acct)?;
    let graph =
        if node { bound_degree(&data.graph, DegreeBound::Out, r.max_degree, seed)? } else { data.graph.clone() };
    let sensitivity = aggregation_sensitivity(r);
    let cfg = fit_config(r, n_train, privacy.sigma);
    let (ps, encoder, mut classifier) = build_gap(r, Rows::of_features(&data.features), data.num_classes);
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
        max_degree: node.then_some(r.max_degree),
        graph: Some(graph),
    };
    Ok((model, accuracy, privacy))
}

// ---------------------------------------------------------------- ProGAP

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
    let depth = r.depth();
    let node = r.method == Method::ProgapNdp;
    let privacy = privacy(r, data, acct)?;
    let graph =
        if node { bound_degree(&data.graph, DegreeBound::Out, r.max_degree, seed)? } else { data.graph.clone() };
    let sensitivity = aggregation_sensitivity(r);
    let cfg = fit_config(r, n_train, privacy.sigma);
    let (ps, mut net) = build_progap(r, data.features.cols() as i64, data.num_classes);
    let adj = aggregation_operator(&graph);
    let noise_std = privacy.sigma * sensitivity;
    net.inputs.push(Rows::of_features(&data.features));
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
    let model = ProgapModel { ps, net, noise_std, max_degree: node.then_some(r.max_degree), graph: Some(graph) };
    Ok((model, accuracy, privacy))
}

// ---------------------------------------------------------------- builders (train and load)

/// The MLP of a recipe; `x` holds the features it will be asked about.
pub fn build_mlp(r: &Recipe, x: Rows, classes: usize) -> (ParamStore, MlpClassifier) {
    let mut ps = ParamStore::new();
    let net = MlpClassifier::new(&mut ps, x, r.hidden as i64, classes as i64, r.mlp_layers, style(r));
    (ps, net)
}

/// GAP's encoder and classification module; `x` holds the training features.
pub fn build_gap(r: &Recipe, x: Rows, classes: usize) -> (ParamStore, GapEncoder, GapClassifier) {
    let mut ps = ParamStore::new();
    let st = style(r);
    let (h, c) = (r.hidden as i64, classes as i64);
    let encoder = GapEncoder::new(&mut ps, x, h, c, r.encoder_layers, st);
    let classifier = GapClassifier::new(&mut ps, r.hops(), h, h, c, r.base_layers(), r.head_layers, st);
    (ps, encoder, classifier)
}

/// ProGAP's stages for `features` input columns.
pub fn build_progap(r: &Recipe, features: i64, classes: usize) -> (ParamStore, ProgapNet) {
    let mut ps = ParamStore::new();
    let net = ProgapNet::new(
        &mut ps,
        r.depth(),
        features,
        r.hidden as i64,
        classes as i64,
        r.base_layers(),
        r.head_layers,
        style(r),
        r.layerwise,
    );
    (ps, net)
}

// ---------------------------------------------------------------- checkpoints

type StoreLoader<'a> = &'a dyn Fn(&mut tch::nn::VarStore) -> Result<()>;

/// Rebuilds a saved MLP (also the class/subclass-DP MLPs) from its cached features.
pub fn load_mlp(meta: &Meta, cache: &Cache, load: StoreLoader) -> Result<Box<dyn TrainedModel>> {
    let (mut ps, net) = build_mlp(&meta.recipe, Rows::features(cache.get("x")?), meta.num_classes as usize);
    load(&mut ps.vs)?;
    Ok(Box::new(MlpModel { ps, net }))
}

/// Rebuilds a saved GAP model from its cached private aggregations.
fn load_gap(meta: &Meta, cache: &Cache, load: StoreLoader) -> Result<Box<dyn TrainedModel>> {
    let r = &meta.recipe;
    let empty = Tensor::zeros([0, meta.num_features], (Kind::Float, crate::device::current()));
    let (mut ps, encoder, mut classifier) = build_gap(r, Rows::new(empty), meta.num_classes as usize);
    load(&mut ps.vs)?;
    classifier.inputs = (0..=r.hops()).map(|k| cache.get(&format!("x{k}")).map(Rows::new)).collect::<Result<_>>()?;
    Ok(Box::new(GapModel {
        ps,
        encoder,
        classifier,
        hops: r.hops(),
        noise_std: meta.noise_std,
        max_degree: meta.max_degree,
        graph: None,
    }))
}

/// Rebuilds a saved ProGAP model from its cached stage inputs.
fn load_progap(meta: &Meta, cache: &Cache, load: StoreLoader) -> Result<Box<dyn TrainedModel>> {
    let r = &meta.recipe;
    let (mut ps, mut net) = build_progap(r, meta.num_features, meta.num_classes as usize);
    load(&mut ps.vs)?;
    net.inputs = (0..=r.depth())
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
    net.stage = r.depth();
    Ok(Box::new(ProgapModel { ps, net, noise_std: meta.noise_std, max_degree: meta.max_degree, graph: None }))
}

// ---------------------------------------------------------------- registry entries

const MLP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "mlp_layers",
    "batch_norm",
    "batch_size",
    "select_best_val",
];
const DP_MLP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "mlp_layers",
    "batch_norm",
    "batch_size",
    "select_best_val",
    "max_grad_norm",
    "norm_groups",
    "accountant",
];
const GAP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "hops",
    "encoder_layers",
    "base_layers",
    "head_layers",
    "batch_norm",
    "batch_size",
    "select_best_val",
];
const GAP_EDP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "hops",
    "encoder_layers",
    "base_layers",
    "head_layers",
    "batch_norm",
    "batch_size",
    "select_best_val",
    "accountant",
];
const GAP_NDP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "hops",
    "encoder_layers",
    "base_layers",
    "head_layers",
    "batch_norm",
    "batch_size",
    "select_best_val",
    "accountant",
    "max_degree",
    "max_grad_norm",
    "norm_groups",
];
const PROGAP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "depth",
    "base_layers",
    "head_layers",
    "layerwise",
    "batch_norm",
    "batch_size",
    "select_best_val",
];
const PROGAP_EDP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "depth",
    "base_layers",
    "head_layers",
    "layerwise",
    "batch_norm",
    "batch_size",
    "select_best_val",
    "accountant",
];
const PROGAP_NDP_KNOBS: &[&str] = &[
    "hidden",
    "weight_decay",
    "dropout",
    "activation",
    "optimizer",
    "depth",
    "base_layers",
    "head_layers",
    "layerwise",
    "batch_norm",
    "batch_size",
    "select_best_val",
    "accountant",
    "max_degree",
    "max_grad_norm",
    "norm_groups",
];

/// A method of this module; the fields that differ are given.
const fn entry(
    name: &'static str,
    about: &'static str,
    unit: PrivacyUnit,
    takes_epsilon: bool,
    knobs: &'static [&'static str],
    train: fn(&Recipe, &Dataset, u64, &Accounting) -> Result<TrainedRun>,
    load: Loader,
) -> MethodSpec {
    let node = matches!(unit, PrivacyUnit::Node);
    MethodSpec {
        takes_epsilon,
        epochs: if node { 10 } else { 100 },
        knobs,
        load: Some(load),
        ..MethodSpec::new(name, about, unit, train, budget)
    }
}

pub const MLP: MethodSpec = MethodSpec {
    // It reads no edge: its edge-level epsilon is 0 by construction.
    replay: Replay::Refused(
        "it reads no edge (edge-level epsilon 0 by construction): no noise, no sensitivity to replay",
    ),
    memory: MemoryShape::Mlp,
    floor: Some(FloorPlan::Mlp),
    ..entry(
        "mlp",
        "MLP on features only: perfect edge-level privacy (edge eps = 0)",
        PrivacyUnit::Edge,
        false,
        MLP_KNOBS,
        train_mlp,
        load_mlp,
    )
};
pub const DP_MLP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::DpMlp),
    memory: MemoryShape::Mlp,
    floor: Some(FloorPlan::Mlp),
    batch_norm: false,
    control: Some(Method::Mlp),
    ..entry(
        "dp-mlp",
        "MLP trained with DP-Adam: node-level DP",
        PrivacyUnit::Node,
        true,
        DP_MLP_KNOBS,
        train_mlp,
        load_mlp,
    )
};
pub const DEMO_DP_MLP_NOISE_ON_MEAN: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::DpMlp),
    memory: MemoryShape::Mlp,
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
        DP_MLP_KNOBS,
        train_mlp,
        load_mlp,
    )
};
pub const DEMO_DP_MLP_BIAS_UNCLIPPED: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::DpMlp),
    memory: MemoryShape::Mlp,
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
        DP_MLP_KNOBS,
        train_mlp,
        load_mlp,
    )
};
pub const GAP_INF: MethodSpec = MethodSpec {
    memory: MemoryShape::HopCache,
    floor: Some(FloorPlan::Gap),
    ..entry("gap-inf", "GAP without noise (eps = inf)", PrivacyUnit::None, false, GAP_KNOBS, train_gap, load_gap)
};
pub const GAP_EDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
    memory: MemoryShape::HopCache,
    floor: Some(FloorPlan::Gap),
    // The same pipeline and claim with the aggregation noise switched off.
    control: Some(Method::DemoGapEdpNoiseOff),
    ..entry(
        "gap-edp",
        "GAP with edge-level DP (PMA noise; thesis Prop. 6)",
        PrivacyUnit::Edge,
        true,
        GAP_EDP_KNOBS,
        train_gap,
        load_gap,
    )
};
pub const GAP_NDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
    memory: MemoryShape::HopCache,
    floor: Some(FloorPlan::Gap),
    batch_norm: false,
    control: Some(Method::GapInf),
    ..entry(
        "gap-ndp",
        "GAP with node-level DP (degree bound, PMA at sensitivity sqrt(D), DP-Adam; Prop. 7)",
        PrivacyUnit::Node,
        true,
        GAP_NDP_KNOBS,
        train_gap,
        load_gap,
    )
};
pub const DEMO_GAP_EDP_PLANTED_BUG: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
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
        GAP_KNOBS,
        train_gap,
        load_gap,
    )
};
pub const DEMO_GAP_EDP_NOISE_OFF: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Gap),
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
        GAP_KNOBS,
        train_gap,
        load_gap,
    )
};
pub const PROGAP_INF: MethodSpec = MethodSpec {
    memory: MemoryShape::StageCache,
    floor: Some(FloorPlan::Progap),
    batch_norm: false,
    ..entry("progap-inf", "ProGAP without noise", PrivacyUnit::None, false, PROGAP_KNOBS, train_progap, load_progap)
};
pub const PROGAP_EDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Progap),
    memory: MemoryShape::StageCache,
    floor: Some(FloorPlan::Progap),
    batch_norm: false,
    control: Some(Method::ProgapInf),
    ..entry(
        "progap-edp",
        "ProGAP with edge-level DP (Theorem 4)",
        PrivacyUnit::Edge,
        true,
        PROGAP_EDP_KNOBS,
        train_progap,
        load_progap,
    )
};
pub const PROGAP_NDP: MethodSpec = MethodSpec {
    replay: Replay::Releases(ReplayFamily::Progap),
    memory: MemoryShape::StageCache,
    floor: Some(FloorPlan::Progap),
    epochs: 5,
    control: Some(Method::ProgapInf),
    ..entry(
        "progap-ndp",
        "ProGAP with node-level DP (Theorem 5)",
        PrivacyUnit::Node,
        true,
        PROGAP_NDP_KNOBS,
        train_progap,
        load_progap,
    )
};
