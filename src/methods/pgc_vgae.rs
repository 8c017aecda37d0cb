//! The `pgc-vgae` method: link prediction under PGC's per-feature local DP (thesis ch.2, section
//! 2.6.4 and the right half of Table 2.3). A variational graph auto-encoder (Kipf & Welling 2016)
//! whose first GCN layer reads Algorithm 1's estimate A^ Y* of the privatised features:
//!
//!   h = ReLU(BN(A^ Y* W0)),  mu = A^ h W_mu,  log sigma = A^ h W_sigma,  z = mu + sigma * noise,
//!   P[u ~ v] = sigmoid(z_u . z_v),
//!   loss = BCE(training edges, sampled non-edges) + KL(q(z) || N(0, I)) / N.
//!
//! Widths 32 and 16, batch norm after the first convolution (section 2.6.4). The edges are split
//! 85/5/10 ([`crate::data::link_split`]); A^ is built from the training edges only, so held-out
//! edges never reach the encoder; the edge split is drawn with the run's seed. Training: Adam, at
//! least 100 and at most 500 epochs, validation every 10 epochs, stop after 10 checks without a
//! lower validation loss, keep the best-validation weights. Utility: ROC-AUC (and average
//! precision) of the decoder's scores on the test edges against as many test non-edges.
//!
//! Privacy: as `pgc` (the same randomisers and the same record-level claim d eps, see
//! [`super::pgc::PgcConfig::budget`]); the graph is public, as in the chapter.
use super::pgc::{collect, first_layer_estimate, PgcConfig};
use crate::data::link_split::{sample_non_edges, split_edges, EdgeSplit, EdgeSplitRatios};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::methods::{Accuracy, Recipe, TrainedModel, TrainedRun};
use crate::models::gcn::gcn_normalized;
use crate::privacy::accountant::{Budget, PrivacyUnit};
use crate::train::fit::{drive, Batching, EarlyStop, Evaluation, Schedule, Selection, Ties, Trainee};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{nn, nn::OptimizerConfig, Kind, Tensor};

/// Width of the latent space (section 2.6.4: "hidden and output dimensions ... 32 and 16").
pub const LATENT: i64 = 16;
const MIN_EPOCHS: usize = 100;
const CHECK_EVERY: usize = 10;
const PATIENCE_CHECKS: usize = 10;

/// Link-prediction utility: ROC-AUC and average precision of held-out edges vs non-edges.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkMetrics {
    pub val_auc: f64,
    pub test_auc: f64,
    pub test_ap: f64,
}

/// ROC-AUC of positive vs negative scores (ties count 1/2).
pub fn roc_auc(pos: &[f64], neg: &[f64]) -> f64 {
    gnnaudit_attacks::metrics::Roc::new(pos, neg).auc()
}

/// Average precision (scikit-learn's definition): sum over thresholds of (R_k - R_{k-1}) P_k.
pub fn average_precision(pos: &[f64], neg: &[f64]) -> f64 {
    let roc = gnnaudit_attacks::metrics::Roc::new(pos, neg);
    if roc.n_pos == 0 {
        return f64::NAN;
    }
    roc.counts
        .windows(2)
        .map(|w| {
            let ((tp0, _, _), (tp1, fp1, _)) = (w[0], w[1]);
            (tp1 - tp0) as f64 / roc.n_pos as f64 * tp1 as f64 / (tp1 + fp1) as f64
        })
        .sum()
}

/// Glorot-uniform weights and zero biases, as PyG's `GCNConv` (the reference encoder) starts.
fn glorot(input: i64, output: i64, bias: bool) -> nn::LinearConfig {
    let bound = (6.0 / (input + output) as f64).sqrt();
    nn::LinearConfig {
        ws_init: nn::Init::Uniform { lo: -bound, up: bound },
        bs_init: bias.then_some(nn::Init::Const(0.0)),
        bias,
    }
}

/// A GCN layer A^ h W + b (bias after the propagation, as `GCNConv`), Glorot-initialised.
#[derive(Debug)]
struct Conv {
    lin: nn::Linear,
    bias: Tensor,
}

impl Conv {
    fn new(vs: &nn::Path, input: i64, output: i64) -> Self {
        Conv {
            lin: nn::linear(vs / "lin", input, output, glorot(input, output, false)),
            bias: vs.zeros("bias", &[output]),
        }
    }
    fn forward(&self, h: &Tensor, adj: &Tensor) -> Tensor {
        adj.mm(&h.apply(&self.lin)) + &self.bias
    }
}

/// The encoder: first layer on the precomputed estimate, then the mu and log sigma GCN layers.
#[derive(Debug)]
struct Encoder {
    first: nn::Linear,
    norm: nn::BatchNorm,
    mu: Conv,
    logstd: Conv,
    dropout: f64,
}

impl Encoder {
    fn new(root: &nn::Path, config: &PgcConfig, d: i64, latent: i64) -> Self {
        Encoder {
            first: nn::linear(root / "conv1", d, config.hidden, glorot(d, config.hidden, true)),
            norm: nn::batch_norm1d(root / "bn1", config.hidden, crate::models::torch_batch_norm_config()),
            mu: Conv::new(&(root / "conv_mu"), config.hidden, latent),
            logstd: Conv::new(&(root / "conv_logstd"), config.hidden, latent),
            dropout: config.dropout,
        }
    }
    /// (mu, log sigma); log sigma is capped at 10 as in PyG's VGAE.
    fn forward_t(&self, gc: &Tensor, adj: &Tensor, train: bool) -> (Tensor, Tensor) {
        let h = gc.apply(&self.first).apply_t(&self.norm, train).relu().dropout(self.dropout, train);
        (self.mu.forward(&h, adj), self.logstd.forward(&h, adj).clamp_max(10.0))
    }
}

fn pair_index(pairs: &[(usize, usize)]) -> (Tensor, Tensor) {
    let (u, v): (Vec<i64>, Vec<i64>) = pairs.iter().map(|&(u, v)| (u as i64, v as i64)).unzip();
    (crate::device::place(Tensor::from_slice(&u)), crate::device::place(Tensor::from_slice(&v)))
}

/// Inner-product decoder logits z_u . z_v.
fn logits(z: &Tensor, pairs: &(Tensor, Tensor)) -> Tensor {
    (z.index_select(0, &pairs.0) * z.index_select(0, &pairs.1)).sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
}

/// Reconstruction BCE: -log sigmoid(pos) averaged, plus -log(1 - sigmoid(neg)) averaged.
fn recon_loss(z: &Tensor, pos: &(Tensor, Tensor), neg: &(Tensor, Tensor)) -> Tensor {
    (-logits(z, pos)).softplus().mean(Kind::Float) + logits(z, neg).softplus().mean(Kind::Float)
}

fn scores(z: &Tensor, pairs: &(Tensor, Tensor)) -> Vec<f64> {
    Vec::<f64>::try_from(logits(z, pairs).to_kind(Kind::Double)).unwrap_or_default()
}

/// A trained VGAE: its node output is the latent mean mu (there are no class posteriors).
pub struct VgaeModel {
    vs: nn::VarStore,
    encoder: Encoder,
    config: PgcConfig,
    /// The server's first-layer estimate on the training graph (never the raw reports).
    estimate: Tensor,
    split: EdgeSplit,
    mu: Tensor,
    metrics: LinkMetrics,
}

impl VgaeModel {
    fn new(vs: nn::VarStore, encoder: Encoder, config: PgcConfig, estimate: Tensor, split: EdgeSplit) -> Self {
        let adj = gcn_normalized(&split.train_graph, true);
        let mu = tch::no_grad(|| encoder.forward_t(&estimate, &adj, false).0);
        let score = |p: &[(usize, usize)]| scores(&mu, &pair_index(p));
        let metrics = LinkMetrics {
            val_auc: roc_auc(&score(&split.val_pos), &score(&split.val_neg)),
            test_auc: roc_auc(&score(&split.test_pos), &score(&split.test_neg)),
            test_ap: average_precision(&score(&split.test_pos), &score(&split.test_neg)),
        };
        VgaeModel { vs, encoder, config, estimate, split, mu, metrics }
    }
    pub fn metrics(&self) -> LinkMetrics {
        self.metrics
    }
    /// Edge probabilities sigmoid(mu_u . mu_v) for node pairs.
    pub fn edge_probabilities(&self, pairs: &[(usize, usize)]) -> Tensor {
        tch::no_grad(|| logits(&self.mu, &pair_index(pairs)).sigmoid())
    }
}

/// The edge split as checkpoint tensors (the held-out pairs, [2, k] each) and back.
fn split_entries(split: &EdgeSplit) -> Vec<(String, Tensor)> {
    let t = |p: &[(usize, usize)]| {
        let (u, v) = pair_index(p);
        Tensor::stack(&[u, v], 0)
    };
    vec![
        ("split.val_pos".into(), t(&split.val_pos)),
        ("split.val_neg".into(), t(&split.val_neg)),
        ("split.test_pos".into(), t(&split.test_pos)),
        ("split.test_neg".into(), t(&split.test_neg)),
    ]
}

fn pairs_of(t: &Tensor) -> Result<Vec<(usize, usize)>> {
    if t.dim() != 2 || t.size()[0] != 2 {
        return Err(Error::invalid("cache", format!("edge pairs must be [2, k], got {:?}", t.size())));
    }
    let u = Vec::<i64>::try_from(&t.get(0)).map_err(|e| Error::invalid("cache", e.to_string()))?;
    let v = Vec::<i64>::try_from(&t.get(1)).map_err(|e| Error::invalid("cache", e.to_string()))?;
    Ok(u.into_iter().zip(v).map(|(a, b)| (a as usize, b as usize)).collect())
}

/// Rebuilds a saved VGAE (see `train::checkpoint`) from its weights, estimate, graph and split.
pub fn load_checkpoint(
    meta: &crate::methods::checkpoint::Meta,
    cache: &crate::methods::checkpoint::Cache,
    load: &dyn Fn(&mut nn::VarStore) -> Result<()>,
) -> Result<Box<dyn TrainedModel>> {
    let config = super::pgc::config(&meta.recipe)?;
    let mut vs = nn::VarStore::new(crate::device::current());
    let encoder = Encoder::new(&vs.root(), &config, meta.num_features, meta.num_classes);
    load(&mut vs)?;
    let train_graph = cache.graph()?;
    let train = train_graph.undirected_edges();
    let split = EdgeSplit {
        train,
        val_pos: pairs_of(&cache.get("split.val_pos")?)?,
        val_neg: pairs_of(&cache.get("split.val_neg")?)?,
        test_pos: pairs_of(&cache.get("split.test_pos")?)?,
        test_neg: pairs_of(&cache.get("split.test_neg")?)?,
        train_graph,
    };
    Ok(Box::new(VgaeModel::new(vs, encoder, config, cache.get("estimate")?, split)))
}

impl TrainedModel for VgaeModel {
    /// The latent means mu [N, 16] (link prediction has no class posteriors).
    fn posteriors(&self) -> Tensor {
        self.mu.shallow_clone()
    }
    /// Latent means on another graph, whose nodes run the same mechanism (fresh randomness).
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let (gc, adj) = super::pgc::estimate_on(data, &self.config, self.encoder.first.ws.size()[1])?;
        Ok(tch::no_grad(|| self.encoder.forward_t(&gc, &adj, false).0))
    }
    fn embeddings(&self) -> Option<Tensor> {
        Some(self.mu.shallow_clone())
    }
    fn link_metrics(&self) -> Option<LinkMetrics> {
        Some(self.metrics)
    }
    fn save(&self, dir: &std::path::Path, recipe: &Recipe, budget: &Budget) -> Result<()> {
        use crate::methods::checkpoint::{graph_entries, save_store, Meta};
        let meta = Meta::new(recipe, budget, self.estimate.size()[1], self.mu.size()[1]);
        let mut cache = vec![("estimate".to_string(), self.estimate.shallow_clone())];
        cache.extend(graph_entries(&self.split.train_graph));
        cache.extend(split_entries(&self.split));
        save_store(dir, &self.vs, &meta, &cache)
    }
}

/// One VGAE under training: a step is one full-graph ELBO step against fresh training negatives;
/// validation is the reconstruction loss on the held-out edges and non-edges.
struct VgaeTrainee<'a> {
    vs: &'a nn::VarStore,
    encoder: &'a Encoder,
    gc: &'a Tensor,
    adj: &'a Tensor,
    opt: nn::Optimizer,
    split: &'a EdgeSplit,
    train_pos: &'a (Tensor, Tensor),
    /// Held-out edges and non-edges (each a pair of endpoint index tensors).
    val: ((Tensor, Tensor), (Tensor, Tensor)),
    nodes: f64,
    rng: ChaCha8Rng,
}

impl Trainee for VgaeTrainee<'_> {
    fn step(&mut self, _batch: &Tensor) -> Result<()> {
        let (mu, logstd) = self.encoder.forward_t(self.gc, self.adj, true);
        let z = &mu + Tensor::randn_like(&mu) * logstd.exp();
        let neg = pair_index(&sample_non_edges(&self.split.train_graph, self.split.train.len(), &mut self.rng));
        let kl: Tensor = (&logstd * 2.0 + 1.0 - mu.pow_tensor_scalar(2) - (&logstd * 2.0).exp())
            .sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
            .mean(Kind::Float)
            * -0.5;
        let loss: Tensor = recon_loss(&z, self.train_pos, &neg) + kl / self.nodes;
        self.opt.zero_grad();
        loss.backward();
        self.opt.step();
        Ok(())
    }
    fn evaluate(&self) -> Evaluation {
        let val_loss = tch::no_grad(|| {
            let (mu, _) = self.encoder.forward_t(self.gc, self.adj, false);
            recon_loss(&mu, &self.val.0, &self.val.1).double_value(&[])
        });
        Evaluation { val_accuracy: f64::NAN, val_loss, admissible: true }
    }
    fn variables(&self) -> &nn::VarStore {
        self.vs
    }
}

/// Trains the VGAE for link prediction on `data` (its node split and labels are not used).
pub fn train(data: &Dataset, config: &PgcConfig, seed: u64) -> Result<TrainedRun> {
    if !(0.0..1.0).contains(&config.dropout) {
        return Err(Error::invalid("dropout", format!("must be in [0, 1), got {}", config.dropout)));
    }
    if config.max_epochs == 0 {
        return Err(Error::invalid("epochs", "must be >= 1"));
    }
    let budget = config.budget(data.num_features())?;
    let start = std::time::Instant::now();
    tch::manual_seed(seed as i64);
    let split = split_edges(&data.graph, EdgeSplitRatios::default(), seed)?;
    let (y_star, clipped) = collect(data, config, seed)?;
    if clipped > 0 {
        tracing::warn!("pgc-vgae: {clipped} feature values outside the public range [0, 1] were clipped");
    }
    let gc = first_layer_estimate(&split.train_graph, &y_star);
    let adj = gcn_normalized(&split.train_graph, true);

    let vs = nn::VarStore::new(crate::device::current());
    let encoder = Encoder::new(&vs.root(), config, data.num_features() as i64, LATENT);
    let opt = nn::Adam::default().wd(config.weight_decay).build(&vs, config.learning_rate)?;
    let train_pos = pair_index(&split.train);
    let mut t = VgaeTrainee {
        vs: &vs,
        encoder: &encoder,
        gc: &gc,
        adj: &adj,
        opt,
        split: &split,
        train_pos: &train_pos,
        val: (pair_index(&split.val_pos), pair_index(&split.val_neg)),
        nodes: data.num_nodes() as f64,
        rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_ed9e),
    };
    let schedule = Schedule {
        epochs: config.max_epochs,
        batching: Batching::Full,
        selection: Selection::LowestValLoss { ties: Ties::Earliest },
        // Patience in epochs: PATIENCE_CHECKS validation checks without a lower loss.
        early_stop: Some(EarlyStop {
            patience: PATIENCE_CHECKS * CHECK_EVERY,
            min_epochs: MIN_EPOCHS,
            check_every: CHECK_EVERY,
        }),
    };
    // Every step sees the whole graph: the loop's node batch is not used.
    drive(&mut t, &Tensor::zeros([1], (Kind::Int64, tch::Device::Cpu)), &schedule)?;
    // Training utility: the training edges against as many fresh non-edges (fixed seed).
    let mu = tch::no_grad(|| encoder.forward_t(&gc, &adj, false).0);
    let mut fixed = ChaCha8Rng::seed_from_u64(seed);
    let train_neg = sample_non_edges(&split.train_graph, split.train.len(), &mut fixed);
    let train_auc = roc_auc(&scores(&mu, &train_pos), &scores(&mu, &pair_index(&train_neg)));
    let model = VgaeModel::new(vs, encoder, config.clone(), gc, split);
    let m = model.metrics();
    let accuracy = Accuracy { train: train_auc, val: m.val_auc, test: m.test_auc };
    Ok(TrainedRun { model: Box::new(model), accuracy, budget, seconds: start.elapsed().as_secs_f64() })
}

// ---------------------------------------------------------------- registry entries

use crate::methods::spec::MethodSpec;

fn vgae_defaults(r: &mut Recipe) {
    // Table 2.2, Cora VGAE row; encoder widths 32 -> 16 (section 2.6.4).
    (r.train.hidden, r.train.weight_decay, r.train.dropout) = (32, 0.01, 0.0);
}

fn vgae_budget(
    recipe: &Recipe,
    data: &Dataset,
    _seed: u64,
    _acct: &crate::train::accounting::Accounting,
) -> Result<Budget> {
    super::pgc::config(recipe)?.budget(data.num_features())
}

pub const PGC_VGAE: MethodSpec = MethodSpec {
    utility: crate::methods::UtilityMetric::RocAuc,
    epochs: 500,
    reads: crate::methods::spec::Reads::NETWORK,
    own_knobs: Some(crate::methods::knobs::own::<super::pgc::PgcKnobs>()),
    defaults: vgae_defaults,
    check: super::pgc::check_mechanism,
    load: Some(load_checkpoint),
    ..MethodSpec::new(
        "pgc-vgae",
        "PGC link prediction (thesis ch.2): a VGAE whose first layer reads PGC's estimate of the privatised \
            features (--mechanism, --epsilon per feature); 85/5/10 edge split; ROC-AUC",
        PrivacyUnit::Local,
        |r, data, seed, _| train(data, &super::pgc::config(r)?, seed),
        vgae_budget,
    )
};
