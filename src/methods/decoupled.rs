//! One training function per model family; each calibrates its noise from (epsilon, delta)
//! through its privacy expression in [`crate::train::accounting`] and records the budget.
use super::checkpoint::{save_dir, Meta};
use super::recipe::{Method, Recipe};
use super::{Accuracy, TrainedModel, TrainedRun};
use crate::data::{Dataset, Graph};
use crate::error::Result;
use crate::models::aggregation::{aggregation_operator, nap, pma};
use crate::models::gap::{GapClassifier, GapEncoder};
use crate::models::mlp::MlpClassifier;
use crate::models::progap::ProgapNet;
use crate::models::{Fwd, MlpStyle, ParamStore};
use crate::privacy::accountant::{Budget, PrivacyUnit};
use crate::privacy::dpsgd::{steps_per_epoch, DpSgd};
use crate::train::accounting::{self, Expression, SgdSchedule};
use crate::train::fit::{fit, Batching, FitConfig, Labels, Selection, Ties};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
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
fn calibrate(r: &Recipe, data: &Dataset, expr: Expression) -> Result<Privacy> {
    match r.epsilon {
        Some(eps) => {
            let t = std::time::Instant::now();
            let delta = delta_for(r, data);
            let (sigma, budget) =
                expr.calibrate_by(r.accountant, eps, delta).map_err(|e| accountant_failure(r, delta, e))?;
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
    match e {
        crate::Error::Other(m) => crate::Error::invalid(
            "epsilon",
            format!(
                "the accountant cannot evaluate {} at --epsilon {} and --delta {} ({m}); use a smaller \
                 --epsilon, a larger --delta or fewer --hops/--depth/--epochs",
                r.method.name(),
                r.epsilon.map_or("inf".to_string(), crate::error::num),
                crate::error::num(delta)
            ),
        ),
        e => e,
    }
}

/// Calibrates a private recipe's noise on `data` without training, so that an audit's dry run
/// catches a budget the accountant cannot meet or evaluate (the analytic Gaussian at eps = 10^8)
/// before any cell runs. The result is cached (`accounting`), so training in the same process
/// does not pay twice. SAGE-EDP, DP-GNN and LPGNN account in their own modules and are skipped.
pub fn check_privacy(r: &Recipe, data: &Dataset) -> Result<()> {
    if r.epsilon.is_none() {
        return Ok(());
    }
    let n_train = data.split()?.train.len();
    let expr = match r.method {
        Method::DpMlp => accounting::dp_sgd(schedule(r, n_train)),
        Method::GapNdp => {
            let s = schedule(r, n_train);
            accounting::gap_node(r.hops(), r.max_degree, s, s)
        }
        Method::GapEdp => accounting::gap_edge(r.hops()),
        Method::ProgapNdp => accounting::progap_node(r.depth(), r.max_degree, schedule(r, n_train)),
        Method::ProgapEdp => accounting::progap_edge(r.depth()),
        _ => return Ok(()),
    };
    calibrate(r, data, expr).map(|_| ())
}

/// DP-SGD schedule of one training run over the training nodes.
fn schedule(r: &Recipe, n_train: usize) -> SgdSchedule {
    let b = r.batch_size().unwrap_or(n_train).min(n_train).max(1);
    SgdSchedule::new(b as f64 / n_train as f64, (r.epochs() * steps_per_epoch(n_train, b)) as u64)
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
        DpSgd { noise_multiplier: sigma, max_grad_norm: r.max_grad_norm, expected_batch_size: b as f64 }
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

/// Keeps at most `d` out-edges per node, chosen uniformly without replacement (Daigavane et al.
/// 2021 neighbour sampling): afterwards every node feeds at most `d` aggregations, which is the
/// node-level sensitivity bound of Lemma 8 / Theorem 3.
pub fn bound_out_degree(g: &Graph, d: usize, seed: u64) -> Result<Graph> {
    let n = g.num_nodes();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (u, v) in g.edges() {
        out[u].push(v);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut edges = Vec::with_capacity(g.num_directed_edges());
    for (u, vs) in out.iter().enumerate() {
        if vs.len() <= d {
            edges.extend(vs.iter().map(|&v| (u, v)));
        } else {
            edges.extend(sample(&mut rng, vs.len(), d).into_iter().map(|i| (u, vs[i])));
        }
    }
    Graph::from_edges(n, edges)
}

/// The graph a GAP/ProGAP model trained on `data` with `seed` aggregated over: the degree-bounded
/// one at node level (the same draw as in training), the graph itself otherwise.
fn training_graph(data: &Dataset, max_degree: Option<usize>, seed: u64) -> Result<Graph> {
    match max_degree {
        Some(d) => bound_out_degree(&data.graph, d, seed),
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
        tch::no_grad(|| self.net.logits_of(&self.net.x.x).softmax(-1, Kind::Float))
    }
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        Ok(tch::no_grad(|| self.net.logits_of(&features(data)).softmax(-1, Kind::Float)))
    }
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
}

pub fn train_mlp(r: &Recipe, data: &Dataset, seed: u64) -> Result<TrainedRun> {
    let (model, accuracy, privacy) = fit_mlp(r, data, seed)?;
    Ok(TrainedRun { model: Box::new(model), accuracy, budget: privacy.budget, seconds: 0.0 })
}

/// [`train_mlp`] with the concrete model and its calibration (for `crate::replay`).
pub fn fit_mlp(r: &Recipe, data: &Dataset, seed: u64) -> Result<(MlpModel, Accuracy, Privacy)> {
    tch::manual_seed(seed as i64);
    let labels = Labels::from_dataset(data)?;
    let n_train = labels.train.size()[0] as usize;
    let privacy = match r.method {
        Method::DpMlp => calibrate(r, data, accounting::dp_sgd(schedule(r, n_train)))?,
        _ => Privacy { sigma: 0.0, budget: edge_free_budget() },
    };
    let mut ps = ParamStore::new();
    let net =
        MlpClassifier::new(&mut ps, features(data), r.hidden as i64, data.num_classes as i64, r.mlp_layers, style(r));
    fit(&net, &ps, &labels, &fit_config(r, n_train, privacy.sigma))?;
    let accuracy = labels.model_accuracy(&net);
    Ok((MlpModel { ps, net }, accuracy, privacy))
}

/// The MLP uses no edge: edge-level epsilon 0 (delta 0).
fn edge_free_budget() -> Budget {
    Budget {
        privacy_unit: PrivacyUnit::Edge,
        target_epsilon: Some(0.0),
        delta: 0.0,
        epsilon_rdp: 0.0,
        rdp_order: None,
        epsilon_pld: Some(0.0),
        pld_fallback: None,
        event: None,
        noise: vec![],
        components: vec![],
    }
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
            self.classifier.inputs.iter().enumerate().map(|(k, t)| (format!("x{k}"), t.shallow_clone())).collect();
        save_dir(dir, &self.ps, &meta, &cache)
    }
    fn posteriors(&self) -> Tensor {
        tch::no_grad(|| self.classifier.forward(&self.classifier.inputs, &mut Fwd::eval()).softmax(-1, Kind::Float))
    }
    /// Inductive inference (Algorithm 8): encoder, then PMA on the new graph with fresh noise.
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let g = match self.max_degree {
            Some(d) => bound_out_degree(&data.graph, d, 0)?,
            None => data.graph.clone(),
        };
        let x0 = self.encoder.embed(&features(data));
        let aggs = pma(&aggregation_operator(&g), &x0, self.hops, self.noise_std);
        Ok(tch::no_grad(|| self.classifier.forward(&aggs, &mut Fwd::eval()).softmax(-1, Kind::Float)))
    }
    fn embeddings(&self) -> Option<Tensor> {
        self.classifier.inputs.first().map(|t| t.shallow_clone())
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

pub fn train_gap(r: &Recipe, data: &Dataset, seed: u64) -> Result<TrainedRun> {
    let (model, accuracy, privacy) = fit_gap(r, data, seed)?;
    Ok(TrainedRun { model: Box::new(model), accuracy, budget: privacy.budget, seconds: 0.0 })
}

/// [`train_gap`] with the concrete model and its calibration (for `crate::replay`).
pub fn fit_gap(r: &Recipe, data: &Dataset, seed: u64) -> Result<(GapModel, Accuracy, Privacy)> {
    tch::manual_seed(seed as i64);
    let labels = Labels::from_dataset(data)?;
    let n_train = labels.train.size()[0] as usize;
    let hops = r.hops();
    let node = r.method == Method::GapNdp;
    let (graph, privacy, sensitivity) = if node {
        let g = bound_out_degree(&data.graph, r.max_degree, seed)?;
        let s = schedule(r, n_train);
        (g, calibrate(r, data, accounting::gap_node(hops, r.max_degree, s, s))?, aggregation_sensitivity(r))
    } else if r.method == Method::GapEdp {
        (data.graph.clone(), calibrate(r, data, accounting::gap_edge(hops))?, aggregation_sensitivity(r))
    } else if matches!(r.method, Method::DemoGapEdpPlantedBug | Method::DemoGapEdpNoiseOff) {
        // The planted bugs: the claim is GAP-EDP's, the noise is for a sensitivity of 0.1 or 0.
        (data.graph.clone(), calibrate(r, data, accounting::gap_edge(hops))?, aggregation_sensitivity(r))
    } else {
        (data.graph.clone(), Privacy { sigma: 0.0, budget: Budget::non_private() }, 1.0)
    };
    let cfg = fit_config(r, n_train, privacy.sigma);
    let (ps, encoder, mut classifier) = build_gap(r, features(data), data.num_classes);
    // 1. pre-train the encoder; 2-4. encode, normalise, PMA once (cached); 5. train CM.
    let rep = fit(&encoder, &ps, &labels, &cfg)?;
    tracing::info!("GAP encoder: best val {:.4} at epoch {} ({} steps)", rep.best_val(), rep.best_epoch, rep.steps);
    let noise_std = privacy.sigma * sensitivity;
    let x0 = encoder.embed(&encoder.x.x);
    classifier.inputs = pma(&aggregation_operator(&graph), &x0, hops, noise_std);
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
        tch::no_grad(|| self.net.forward(&self.net.input_tensors(), d, &mut Fwd::eval()).0.softmax(-1, Kind::Float))
    }
    /// Inductive inference: run the stages on the new graph, with fresh NAP noise per stage.
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let g = match self.max_degree {
            Some(d) => bound_out_degree(&data.graph, d, 0)?,
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

pub fn train_progap(r: &Recipe, data: &Dataset, seed: u64) -> Result<TrainedRun> {
    let (model, accuracy, privacy) = fit_progap(r, data, seed)?;
    Ok(TrainedRun { model: Box::new(model), accuracy, budget: privacy.budget, seconds: 0.0 })
}

/// [`train_progap`] with the concrete model and its calibration (for `crate::replay`).
pub fn fit_progap(r: &Recipe, data: &Dataset, seed: u64) -> Result<(ProgapModel, Accuracy, Privacy)> {
    tch::manual_seed(seed as i64);
    let labels = Labels::from_dataset(data)?;
    let n_train = labels.train.size()[0] as usize;
    let depth = r.depth();
    let node = r.method == Method::ProgapNdp;
    let (graph, privacy, sensitivity) = if node {
        let g = bound_out_degree(&data.graph, r.max_degree, seed)?;
        let s = schedule(r, n_train);
        (g, calibrate(r, data, accounting::progap_node(depth, r.max_degree, s))?, aggregation_sensitivity(r))
    } else if r.method == Method::ProgapEdp {
        (data.graph.clone(), calibrate(r, data, accounting::progap_edge(depth))?, aggregation_sensitivity(r))
    } else {
        (data.graph.clone(), Privacy { sigma: 0.0, budget: Budget::non_private() }, 1.0)
    };
    let cfg = fit_config(r, n_train, privacy.sigma);
    let x = features(data);
    let (ps, mut net) = build_progap(r, x.size()[1], data.num_classes);
    let adj = aggregation_operator(&graph);
    let noise_std = privacy.sigma * sensitivity;
    net.inputs.push(crate::models::Rows::features(x));
    for s in 0..=depth {
        if s > 0 {
            // NAP on the embeddings learned in stage s-1, computed once and cached (Alg. 9 l.3-5).
            let e = net.embedding(&net.input_tensors(), s - 1);
            net.inputs.push(crate::models::Rows::new(nap(&adj, &e, noise_std)));
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
pub fn build_mlp(r: &Recipe, x: Tensor, classes: usize) -> (ParamStore, MlpClassifier) {
    let mut ps = ParamStore::new();
    let net = MlpClassifier::new(&mut ps, x, r.hidden as i64, classes as i64, r.mlp_layers, style(r));
    (ps, net)
}

/// GAP's encoder and classification module; `x` holds the training features.
pub fn build_gap(r: &Recipe, x: Tensor, classes: usize) -> (ParamStore, GapEncoder, GapClassifier) {
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
