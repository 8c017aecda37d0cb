//! RGNN (Bhaila, Huang, Wu & Wu, "Local Differential Privacy in Graph Neural Networks: a
//! Reconstruction Approach"; seed 001).
//!
//! User side: features grouped into d' binary features ([`crate::data::grouping`]), GRR-FS on
//! them (m of d' sampled features through GRR at eps_x, the rest uniform; seeded), GRR at eps_y
//! on the labels of the training and validation nodes. Server side: frequency estimation over
//! each node's self-inclusive neighbourhood after K_x / K_y mean-propagation steps (Thm 2, eq. 2;
//! Alg. 2/3), which reconstructs features (f_X: soft estimate of P[x = 1], unclipped as the
//! code) and labels (f_Y: argmax of the masked propagation); then a 2-layer GNN trained with
//! cross-entropy on the reconstructed labels plus alpha times the label-proportion (LLP) loss over
//! bags from a graph partition ([`crate::data::partition`]).
//!
//! Budget: GRR-FS is exactly m eps_x-LDP, not the paper's Theorem 1 value (see
//! `privacy::mechanisms::grr_fs`), so the claim is m eps_x + eps_y per node record; the paper's
//! ln(1 + (m/d')(e^{m eps_x} - 1)) + eps_y is recorded as `paper_epsilon` in the budget's noise
//! entries and flagged. Ablations: kx = 0 (no f_X), ky = 0 (no f_Y), alpha = 0 (no LLP); all three
//! give the paper's "GraphSAGE" baseline trained on X', Y'.
use crate::data::{grouping, partition, Dataset, Graph, Split};
use crate::error::{Error, Result};
use crate::methods::{TrainedModel, TrainedRun};
use crate::models::backbone::{GnnKind, GraphTensors, TwoLayerGnn};
use crate::privacy::accountant::{Budget, BudgetComponent, Event, PrivacyUnit};
use crate::privacy::mechanisms::grr_fs::GrrFs;
use crate::privacy::mechanisms::randomized_response::RandomizedResponse;
use crate::train::evaluate::{accuracy, Labels};
use crate::train::fit::{drive, Batching, Evaluation, Schedule, Selection, Ties, Trainee};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{nn, nn::OptimizerConfig, Kind, Tensor};

/// Direction of the LLP divergence. The paper writes KL(b_hat || b_tilde); the reference code
/// computes `F.kl_div(log b_hat, b_tilde)` = KL(b_tilde || b_hat), the default here.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum KlDirection {
    /// KL(estimated bag proportion || predicted proportion), as the code.
    #[default]
    TargetPredicted,
    /// KL(predicted || estimated), as eq. 5 is written.
    PredictedTarget,
}

/// RGNN's own knobs (the recipe's knob map; defaults from the reference code).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RgnnKnobs {
    /// Feature budget eps_x of GRR-FS, per sampled feature (`inf` = raw features).
    pub epsilon_x: f64,
    /// Label budget eps_y of GRR (`inf` = clean labels).
    pub epsilon_y: f64,
    /// Mean-propagation steps before the feature reconstruction (0 = no f_X).
    pub kx: i64,
    /// Mean-propagation steps before the label reconstruction (0 = no f_Y).
    pub ky: i64,
    /// The GNN: gcn, gat or sage.
    pub backbone: GnnKind,
    /// m, the features GRR-FS samples per record.
    pub sampled: usize,
    /// Bags (graph-partition parts) of the label-proportion loss.
    pub clusters: usize,
    /// Weight of the label-proportion loss (0 = off).
    pub alpha: f64,
    /// Feature group size g (default: the paper's, cora 25, facebook-pagepage 100).
    pub group_size: Option<usize>,
    /// Direction of the label-proportion KL divergence.
    pub kl_direction: KlDirection,
}

impl Default for RgnnKnobs {
    fn default() -> Self {
        RgnnKnobs {
            epsilon_x: 1.0,
            epsilon_y: 1.0,
            kx: 16,
            // The RGNN code's K_y (LPGNN's Cora default is 8).
            ky: 16,
            backbone: GnnKind::Sage,
            sampled: 10,
            clusters: 16,
            alpha: 1.0,
            group_size: None,
            kl_direction: KlDirection::TargetPredicted,
        }
    }
}

impl crate::methods::knobs::Knobs for RgnnKnobs {
    fn check(&self) -> Result<()> {
        RgnnConfig { own: self.clone(), ..Default::default() }.validate()
    }
}

impl crate::methods::lpgnn::LocalBudgets for RgnnKnobs {
    fn local_budgets(&self) -> (f64, f64) {
        (self.epsilon_x, self.epsilon_y)
    }
}

/// RGNN hyper-parameters; defaults from the reference code ( m = 10, 100 epochs).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RgnnConfig {
    /// RGNN's own knobs (the budgets, the propagation steps, GRR-FS's m, the label-proportion
    /// loss, the feature grouping, the backbone), flat in the serialised form.
    #[serde(flatten)]
    pub own: RgnnKnobs,
    pub hidden: i64,
    pub dropout: f64,
    pub learning_rate: f64,
    pub weight_decay: f64,
    pub epochs: usize,
}

impl Default for RgnnConfig {
    fn default() -> Self {
        RgnnConfig {
            own: RgnnKnobs::default(),
            hidden: 16,
            dropout: 0.0,
            learning_rate: 0.01,
            weight_decay: 0.0,
            epochs: 100,
        }
    }
}

/// Gradient-norm clip of the reference training loop (a stabiliser, not DP).
const GRAD_CLIP: f64 = 5.0;

impl RgnnConfig {
    /// Checks every parameter before any work (m against d' is checked once d' is known).
    pub fn validate(&self) -> Result<()> {
        if self.own.epsilon_x.is_nan() || self.own.epsilon_x <= 0.0 {
            return Err(Error::invalid("epsilon_x", format!("must be > 0 (or inf), got {}", self.own.epsilon_x)));
        }
        if self.own.epsilon_y.is_nan() || self.own.epsilon_y <= 0.0 {
            return Err(Error::invalid("epsilon_y", format!("must be > 0 (or inf), got {}", self.own.epsilon_y)));
        }
        if self.own.sampled == 0 {
            return Err(Error::invalid("sampled", "m must be at least 1"));
        }
        if self.own.kx < 0 || self.own.ky < 0 {
            return Err(Error::invalid(if self.own.kx < 0 { "kx" } else { "ky" }, "must be >= 0"));
        }
        if self.own.clusters == 0 {
            return Err(Error::invalid("clusters", "must be at least 1"));
        }
        if !(self.own.alpha >= 0.0 && self.own.alpha.is_finite()) {
            return Err(Error::invalid("alpha", format!("must be >= 0 and finite, got {}", self.own.alpha)));
        }
        if self.own.group_size == Some(0) {
            return Err(Error::invalid("group_size", "must be at least 1"));
        }
        if self.hidden < 1 {
            return Err(Error::invalid("hidden", "must be >= 1"));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::invalid("dropout", format!("must be in [0, 1), got {}", self.dropout)));
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return Err(Error::invalid("lr", format!("must be > 0, got {}", self.learning_rate)));
        }
        if self.epochs == 0 {
            return Err(Error::invalid("epochs", "must be >= 1"));
        }
        Ok(())
    }

    /// The group size for a dataset with `d` raw columns.
    pub fn group_size_for(&self, d: usize) -> Result<usize> {
        self.own.group_size.or_else(|| grouping::paper_group_size(d)).ok_or_else(|| {
            Error::invalid(
                "group_size",
                format!("the paper gives no group size for {d} features: set group_size (1 = already binary)"),
            )
        })
    }

    /// Sound budget: m eps_x (GRR-FS, exact) + eps_y (GRR), pure LDP per node record; the
    /// paper's Theorem 1 + eps_y is recorded as `paper_epsilon` and flagged when lower.
    pub fn budget(&self, grouped_features: usize) -> Result<Budget> {
        let mut parts = vec![];
        let mut components = vec![];
        let mut noise = vec![("grr_fs_m".to_string(), self.own.sampled as f64)];
        let mut paper = 0.0;
        if self.own.epsilon_x.is_finite() {
            let grr = GrrFs::binary(self.own.epsilon_x, self.own.sampled, grouped_features)
                .map_err(|e| Error::invalid("sampled", e.to_string()))?;
            let sound = self.own.sampled as f64 * self.own.epsilon_x;
            paper += grr.paper_epsilon();
            components.push(BudgetComponent {
                name: "features".into(),
                mechanism: format!(
                    "GRR-FS (m = {} of d' = {grouped_features} binary features, eps_x = {}): exactly m eps_x-LDP; paper Thm 1 claims {:.4}",
                    self.own.sampled,
                    self.own.epsilon_x,
                    grr.paper_epsilon()
                ),
                epsilon: sound,
            });
            parts.push(grr.event());
            // One grouped coordinate changes only its own GRR report (when sampled): eps_x-LDP.
            noise.push(("epsilon_per_feature".into(), self.own.epsilon_x));
        } else {
            paper = f64::INFINITY;
            components.push(BudgetComponent {
                name: "features".into(),
                mechanism: "raw grouped features (no feature privacy)".into(),
                epsilon: f64::INFINITY,
            });
        }
        components.push(BudgetComponent::grr_labels(self.own.epsilon_y, ""));
        if self.own.epsilon_y.is_finite() {
            parts.push(Event::PureDp { epsilon: self.own.epsilon_y }.labelled("GRR on labels (eps_y)"));
        }
        paper += self.own.epsilon_y;
        let total: f64 = components.iter().map(|c| c.epsilon).sum();
        if total.is_finite() {
            noise.push(("paper_epsilon".into(), paper));
            if paper < total {
                tracing::warn!(
                    "RGNN: the paper claims {paper:.4}-LDP (Theorem 1 + eps_y), below the sound m eps_x + eps_y = {total:.4}"
                );
            }
        }
        if !total.is_finite() {
            // A part in the clear: no guarantee, only the breakdown of what was released.
            return Ok(Budget { noise, components, ..Budget::non_private() });
        }
        // Pure parts only: m eps_x + eps_y at delta 0 by basic composition.
        let mut b = crate::privacy::accountant::pure_budget(&Event::Composed(parts), PrivacyUnit::Local, noise)?;
        b.components = components;
        Ok(b)
    }
}

/// GRR keep/other probabilities (p, q) for `gamma` categories; (1, 0) at eps = inf.
fn grr_pq(epsilon: f64, gamma: usize) -> (f64, f64) {
    if epsilon.is_infinite() {
        return (1.0, 0.0);
    }
    let q = 1.0 / (epsilon.exp() + gamma as f64 - 1.0);
    (1.0 - (gamma as f64 - 1.0) * q, q)
}

/// Frequency estimation under GRR-FS (Thm 2, eq. 2; the eq. 9 typo fixed): the unbiased
/// estimate of the true fraction with value j from the observed fraction `lambda` (any shape).
pub fn estimate_frequency(lambda: &Tensor, epsilon_x: f64, sampled: usize, features: usize, gamma: usize) -> Tensor {
    let (p, q) = grr_pq(epsilon_x, gamma);
    let (m, d, g) = (sampled as f64, features as f64, gamma as f64);
    lambda * (d / (m * (p - q))) + (m - d - m * g * q) / (m * g * (p - q))
}

/// The expected observed fraction of value j given the true fraction `pi` (eq. 8).
pub fn expected_frequency(pi: f64, epsilon_x: f64, sampled: usize, features: usize, gamma: usize) -> f64 {
    let (p, q) = grr_pq(epsilon_x, gamma);
    let (m, d, g) = (sampled as f64, features as f64, gamma as f64);
    (m * pi * g * (p - q) + m * g * q + d - m) / (d * g)
}

/// Variance estimate of the frequency estimate (eq. 13 with lambda~ = lambda').
pub fn frequency_variance(lambda: f64, n: usize, epsilon_x: f64, sampled: usize, features: usize) -> f64 {
    let (p, q) = grr_pq(epsilon_x, 2);
    let (m, d) = (sampled as f64, features as f64);
    d * d * lambda * (1.0 - lambda) / (m * m * (n as f64 - 1.0) * (p - q) * (p - q))
}

/// The inverse GRR transition P^{-1} = (I - q 11^T)/(p - q) applied to rows of `lambda` [*, c]
/// (eq. 4): unbiased label-frequency estimates.
pub fn invert_label_frequencies(lambda: &Tensor, epsilon_y: f64, classes: usize) -> Tensor {
    let (p, q) = grr_pq(epsilon_y, classes);
    let total = lambda.sum_dim_intlist([-1i64].as_slice(), true, Kind::Float);
    (lambda - total * q) / (p - q)
}

/// D~^{-1}(A + I): the mean over {v} and its in-neighbours (the reconstruction's propagation).
pub fn mean_with_self_loops(graph: &Graph) -> Tensor {
    let n = graph.num_nodes();
    let mut entries = Vec::with_capacity(graph.num_directed_edges() + n);
    for v in 0..n {
        let nb: Vec<usize> = graph.in_neighbors(v).iter().copied().filter(|&u| u != v).collect();
        let w = 1.0 / (nb.len() + 1) as f32;
        entries.push((v, v, w));
        entries.extend(nb.into_iter().map(|u| (v, u, w)));
    }
    crate::models::gcn::sparse_adjacency(n, entries)
}

fn propagate(adj: &Tensor, x: &Tensor, steps: i64) -> Tensor {
    (0..steps).fold(x.shallow_clone(), |h, _| adj.mm(&h))
}

/// What the server holds after collection and reconstruction.
pub struct Collected {
    /// Grouped clean features [N, d'] (the truth, for the MAE diagnostic only).
    pub clean: Tensor,
    /// Reports X' [N, d'] in {0, 1}.
    pub noisy: Tensor,
    /// f_X(X') [N, d']: soft estimates of P[x = 1].
    pub features: Tensor,
    /// Noisy labels y' on train + val (test entries clean, never read).
    pub noisy_labels: Tensor,
    /// f_Y: reconstructed labels on train + val (test entries clean, never read).
    pub labels: Tensor,
}

/// Runs GRR-FS and GRR on every node (seeded) and the server-side reconstruction.
pub fn collect(data: &Dataset, config: &RgnnConfig, seed: u64) -> Result<Collected> {
    let split = data.split()?;
    let g = config.group_size_for(data.num_features())?;
    let clean = grouping::group_features(&data.features, g)?;
    let (n, d) = (clean.size()[0], clean.size()[1] as usize);
    if config.own.sampled > d {
        return Err(Error::invalid("sampled", format!("m = {} exceeds the {d} grouped features", config.own.sampled)));
    }
    let adj = mean_with_self_loops(&data.graph);
    let noisy = if config.own.epsilon_x.is_finite() {
        let grr = GrrFs::binary(config.own.epsilon_x, config.own.sampled, d)?;
        let bits: Vec<f32> = Vec::try_from(clean.reshape([-1]))?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5247_4e4e_0001);
        let (mut record, mut order, mut out) = (vec![0usize; d], Vec::with_capacity(d), vec![0usize; d]);
        let mut reports = Vec::with_capacity(bits.len());
        for row in bits.chunks(d) {
            for (r, &b) in record.iter_mut().zip(row) {
                *r = b as usize;
            }
            grr.perturb_into(&record, &mut order, &mut out, &mut rng);
            reports.extend(out.iter().map(|&o| o as f32));
        }
        crate::device::place(Tensor::from_slice(&reports).reshape([n, d as i64]))
    } else {
        clean.shallow_clone()
    };
    let features = if config.own.epsilon_x.is_finite() {
        let lambda = propagate(&adj, &noisy, config.own.kx);
        estimate_frequency(&lambda, config.own.epsilon_x, config.own.sampled, d, 2)
    } else {
        noisy.shallow_clone()
    };

    tch::manual_seed(seed as i64 ^ 0x5247);
    let y = data.label_tensor();
    let labelled = Split::index_tensor(&[split.train.as_slice(), split.val.as_slice()].concat());
    let rr = RandomizedResponse::new(config.own.epsilon_y, data.num_classes)?;
    let noisy_part = rr.perturb(&y.index_select(0, &labelled))?;
    let noisy_labels = y.index_copy(0, &labelled, &noisy_part);
    let c = data.num_classes as i64;
    let onehot = Tensor::zeros([n, c], (Kind::Float, y.device())).index_copy(
        0,
        &labelled,
        &noisy_part.one_hot(c).to_kind(Kind::Float),
    );
    // Masked propagation; P^{-1} shifts all classes of a row by the same amount and scales by
    // 1/(p - q) > 0, so the argmax of the estimate is the argmax of the propagated counts.
    let lambda = propagate(&adj, &onehot, config.own.ky);
    let estimate = invert_label_frequencies(&lambda.index_select(0, &labelled), config.own.epsilon_y, data.num_classes);
    let labels = y.index_copy(0, &labelled, &estimate.argmax(-1, false));
    Ok(Collected { clean, noisy, features, noisy_labels, labels })
}

/// Utilities of the reconstruction: label accuracy of f_Y (and of the raw y') against the true
/// labels on train + val, and feature MAE of f_X (and of X') against the grouped truth.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Reconstruction {
    pub label_accuracy: f64,
    pub noisy_label_accuracy: f64,
    pub feature_mae: f64,
    pub noisy_feature_mae: f64,
}

impl Reconstruction {
    pub fn of(data: &Dataset, c: &Collected) -> Result<Self> {
        let split = data.split()?;
        let labelled = Split::index_tensor(&[split.train.as_slice(), split.val.as_slice()].concat());
        let y = data.label_tensor().index_select(0, &labelled);
        let acc = |t: &Tensor| t.index_select(0, &labelled).eq_tensor(&y).to_kind(Kind::Float).mean(Kind::Float);
        let mae = |t: &Tensor| (t - &c.clean).abs().mean(Kind::Float).double_value(&[]);
        Ok(Reconstruction {
            label_accuracy: acc(&c.labels).double_value(&[]),
            noisy_label_accuracy: acc(&c.noisy_labels).double_value(&[]),
            feature_mae: mae(&c.features),
            noisy_feature_mae: mae(&c.noisy),
        })
    }
}

/// The LLP regulariser's fixed parts: bag membership over training nodes (rows average) and
/// the estimated bag proportions b~ = P^{-1} b' from the noisy labels (the paper's choice; the
/// code uses the reconstructed labels).
pub struct Bags {
    /// [R, n_train], each row 1/|C_r^L| on its members.
    pub membership: Tensor,
    /// [R, c] estimated proportions, clipped at 1e-5 and renormalised.
    pub proportions: Tensor,
}

impl Bags {
    pub fn new(part: &[usize], train: &[usize], noisy_train_labels: &Tensor, epsilon_y: f64, classes: usize) -> Self {
        let parts = part.iter().max().map_or(0, |&p| p + 1);
        let mut members: Vec<Vec<usize>> = vec![vec![]; parts];
        for (i, &v) in train.iter().enumerate() {
            members[part[v]].push(i);
        }
        members.retain(|m| !m.is_empty());
        let r = members.len() as i64;
        let mut w = vec![0f32; members.len() * train.len()];
        for (b, m) in members.iter().enumerate() {
            for &i in m {
                w[b * train.len() + i] = 1.0 / m.len() as f32;
            }
        }
        let membership = crate::device::place(Tensor::from_slice(&w).reshape([r, train.len() as i64]));
        let onehot = noisy_train_labels.one_hot(classes as i64).to_kind(Kind::Float);
        let raw = invert_label_frequencies(&membership.mm(&onehot), epsilon_y, classes).clamp_min(1e-5);
        let proportions = &raw / raw.sum_dim_intlist([-1i64].as_slice(), true, Kind::Float);
        Bags { membership, proportions }
    }

    /// Mean over bags of the KL divergence between estimated and predicted proportions.
    pub fn loss(&self, train_probs: &Tensor, direction: KlDirection) -> Tensor {
        let predicted = self.membership.mm(train_probs) + 1e-20;
        let target = &self.proportions + 1e-20;
        let (a, b) = match direction {
            KlDirection::TargetPredicted => (&target, &predicted),
            KlDirection::PredictedTarget => (&predicted, &target),
        };
        (a * (a.log() - b.log())).sum_dim_intlist([-1i64].as_slice(), false, Kind::Float).mean(Kind::Float)
    }
}

/// A trained RGNN: the backbone on the reconstructed features.
pub struct RgnnModel {
    pub vs: nn::VarStore,
    pub gnn: TwoLayerGnn,
    pub config: RgnnConfig,
    posteriors: Tensor,
    pub reconstruction: Reconstruction,
    /// The server's reconstructed features on the training graph (what a checkpoint keeps).
    features: Tensor,
    graph: Graph,
}

/// Rebuilds a saved RGNN model (see `train::checkpoint`) from its weights, reconstructed
/// features and graph; the reconstruction figures travel in the cache.
pub fn load_checkpoint(
    meta: &crate::methods::checkpoint::Meta,
    cache: &crate::methods::checkpoint::Cache,
    load: &dyn Fn(&mut nn::VarStore) -> Result<()>,
) -> Result<Box<dyn TrainedModel>> {
    let config = config(&meta.recipe)?;
    let mut vs = nn::VarStore::new(crate::device::current());
    let gnn = TwoLayerGnn::new(
        &vs.root(),
        config.own.backbone,
        meta.num_features,
        config.hidden,
        meta.num_classes,
        config.dropout,
    );
    load(&mut vs)?;
    let (features, graph, r) = (cache.get("features")?, cache.graph()?, cache.get("reconstruction")?);
    let figures: Vec<f64> =
        Vec::<f64>::try_from(r.to_kind(Kind::Double).view(-1)).map_err(|e| Error::Other(e.to_string()))?;
    let [label_accuracy, noisy_label_accuracy, feature_mae, noisy_feature_mae] = figures[..] else {
        return Err(Error::invalid("reconstruction", format!("expected 4 figures, got {}", figures.len())));
    };
    let reconstruction = Reconstruction { label_accuracy, noisy_label_accuracy, feature_mae, noisy_feature_mae };
    Ok(Box::new(RgnnModel::new(vs, gnn, config, reconstruction, features, graph)))
}

impl RgnnModel {
    /// Training and loading share this: the posteriors come from the weights, features and graph.
    fn new(
        vs: nn::VarStore,
        gnn: TwoLayerGnn,
        config: RgnnConfig,
        reconstruction: Reconstruction,
        features: Tensor,
        graph: Graph,
    ) -> Self {
        let tensors = GraphTensors::for_kind(&graph, config.own.backbone);
        let posteriors = tch::no_grad(|| gnn.forward_t(&features, &tensors, false).softmax(-1, Kind::Float));
        RgnnModel { vs, gnn, config, posteriors, reconstruction, features, graph }
    }
}

impl TrainedModel for RgnnModel {
    fn save(&self, dir: &std::path::Path, recipe: &crate::methods::Recipe, budget: &Budget) -> Result<()> {
        use crate::methods::checkpoint::{save_with_graph, Meta};
        let meta = Meta::new(recipe, budget, self.features.size()[1], self.posteriors.size()[1]);
        let r = &self.reconstruction;
        let figures = [r.label_accuracy, r.noisy_label_accuracy, r.feature_mae, r.noisy_feature_mae];
        let cache = vec![
            ("features".to_string(), self.features.shallow_clone()),
            ("reconstruction".to_string(), Tensor::from_slice(&figures)),
        ];
        save_with_graph(dir, &self.vs, &meta, cache, &self.graph)
    }
    fn posteriors(&self) -> Tensor {
        self.posteriors.shallow_clone()
    }
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
    /// Inference on another graph: its users run GRR-FS afresh and the server reconstructs on it.
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let c = collect(data, &self.config, 0x0a11)?;
        let g = GraphTensors::for_kind(&data.graph, self.gnn.kind());
        Ok(tch::no_grad(|| self.gnn.forward_t(&c.features, &g, false).softmax(-1, Kind::Float)))
    }
}

/// White box (see `models::white_box`): the input is a raw feature matrix [N, d] (the dataset's
/// columns, so attacks that craft raw records can use it); the forward groups it into d' blocks
/// (sum, then min(., 1): the binarisation for non-negative counts, differentiable a.e.), treats
/// the grouped record as the report (the GRR-FS draw is not a parameter, as GAP's noise), runs
/// f_X (K_x mean steps with self loops, then eq. 2's affine estimate; none at eps_x = inf) and the
/// backbone. Dense form: the mean operator and the backbone on the relaxed adjacency.
impl gnnaudit_attacks::WhiteBox for RgnnModel {
    fn num_classes(&self) -> usize {
        self.posteriors.size()[1] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.vs.trainable_variables()
    }
    fn forward_features(&self, x: &Tensor) -> gnnaudit_attacks::Result<Tensor> {
        let h = self.white_box_input(x, &mean_with_self_loops(&self.graph))?;
        let g = GraphTensors::for_kind(&self.graph, self.config.own.backbone);
        Ok(self.gnn.forward_t(&h, &g, false).softmax(-1, Kind::Float))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<gnnaudit_attacks::Result<Tensor>> {
        let a = crate::models::dense::without_self_loops(adj);
        let n = a.size()[0];
        let a = a + Tensor::eye(n, (Kind::Float, adj.device()));
        let mean = &a / a.sum_dim_intlist([1i64].as_slice(), true, Kind::Float);
        Some(self.white_box_input(x, &mean).map(|h| self.gnn.forward_dense(&h, adj).softmax(-1, Kind::Float)))
    }
}

impl RgnnModel {
    /// Grouping and f_X of the white-box forward, on the mean operator `mean`.
    fn white_box_input(&self, x: &Tensor, mean: &Tensor) -> gnnaudit_attacks::Result<Tensor> {
        let x = x.to_kind(Kind::Float);
        let (n, d) = (x.size()[0], x.size()[1]);
        let g =
            self.config.group_size_for(d as usize).map_err(|e| gnnaudit_attacks::Error::Target(e.to_string()))? as i64;
        let groups = (d + g - 1) / g;
        let want = self.features.size()[1];
        if groups != want {
            return Err(gnnaudit_attacks::Error::invalid(
                "features",
                format!("{d} columns group into {groups} features, the model reads {want}"),
            ));
        }
        let pad = groups * g - d;
        let device = x.device();
        let x = if pad > 0 { Tensor::cat(&[x, Tensor::zeros([n, pad], (Kind::Float, device))], 1) } else { x };
        let grouped = x.reshape([n, groups, g]).sum_dim_intlist([2i64].as_slice(), false, Kind::Float).clamp_max(1.0);
        Ok(if self.config.own.epsilon_x.is_finite() {
            let lambda = propagate(mean, &grouped, self.config.own.kx);
            estimate_frequency(&lambda, self.config.own.epsilon_x, self.config.own.sampled, groups as usize, 2)
        } else {
            grouped
        })
    }
}

/// RGNN's step: the backbone on the reconstructed features, cross-entropy on the reconstructed
/// train labels plus the bag-level label-proportion loss, libtorch's Adam with gradient-norm
/// clipping; selection on the reconstructed validation labels (the server has no clean ones).
struct RgnnTrainee<'a> {
    vs: &'a nn::VarStore,
    gnn: &'a TwoLayerGnn,
    x: &'a Tensor,
    tensors: &'a GraphTensors,
    opt: nn::Optimizer,
    reconstructed: &'a Tensor,
    /// The label-proportion bags, the KL direction and the weight alpha.
    bags: Option<(&'a Bags, KlDirection, f64)>,
    val: &'a Tensor,
}

impl Trainee for RgnnTrainee<'_> {
    fn step(&mut self, tr: &Tensor) -> Result<()> {
        let logits = self.gnn.forward_t(self.x, self.tensors, true);
        let mut loss =
            crate::models::cross_entropy(&logits.index_select(0, tr), &self.reconstructed.index_select(0, tr));
        if let Some((b, direction, alpha)) = self.bags {
            let probs = logits.index_select(0, tr).softmax(-1, Kind::Float);
            loss += b.loss(&probs, direction) * alpha;
        }
        self.opt.backward_step_clip_norm(&loss, GRAD_CLIP);
        Ok(())
    }
    fn evaluate(&self) -> Evaluation {
        let logits = tch::no_grad(|| self.gnn.forward_t(self.x, self.tensors, false));
        Evaluation::accuracy(accuracy(&logits, self.reconstructed, self.val))
    }
    fn variables(&self) -> &nn::VarStore {
        self.vs
    }
}

/// Trains RGNN on `data` (which must carry a split; the paper's is 50/25/25).
pub fn train(data: &Dataset, config: &RgnnConfig, seed: u64) -> Result<TrainedRun> {
    config.validate()?;
    let split = data.split()?;
    if split.train.is_empty() {
        return Err(Error::invalid("split", "the training set is empty"));
    }
    if data.num_classes < 2 {
        return Err(Error::invalid("num_classes", "RGNN needs at least two classes"));
    }
    let start = std::time::Instant::now();
    let collected = collect(data, config, seed)?;
    let reconstruction = Reconstruction::of(data, &collected)?;
    let d = collected.features.size()[1];
    let budget = config.budget(d as usize)?;
    tracing::info!(
        "RGNN reconstruction: label accuracy {:.3} (raw y' {:.3}), feature MAE {:.3} (raw X' {:.3})",
        reconstruction.label_accuracy,
        reconstruction.noisy_label_accuracy,
        reconstruction.feature_mae,
        reconstruction.noisy_feature_mae
    );
    let tr_idx = &split.train;
    let tr = Split::index_tensor(tr_idx);
    let bags = (config.own.alpha > 0.0).then(|| {
        let part = partition::greedy_growing(&data.graph, config.own.clusters.min(data.num_nodes()), seed);
        part.map(|p| {
            Bags::new(&p, tr_idx, &collected.noisy_labels.index_select(0, &tr), config.own.epsilon_y, data.num_classes)
        })
    });
    let bags = bags.transpose()?;

    tch::manual_seed(seed as i64);
    let vs = nn::VarStore::new(crate::device::current());
    let gnn =
        TwoLayerGnn::new(&vs.root(), config.own.backbone, d, config.hidden, data.num_classes as i64, config.dropout);
    let tensors = GraphTensors::for_kind(&data.graph, config.own.backbone);
    let opt = nn::Adam::default().wd(config.weight_decay).build(&vs, config.learning_rate)?;
    let x = &collected.features;
    let labels = Labels::from_dataset(data)?;
    let mut t = RgnnTrainee {
        vs: &vs,
        gnn: &gnn,
        x,
        tensors: &tensors,
        opt,
        reconstructed: &collected.labels,
        bags: bags.as_ref().map(|b| (b, config.own.kl_direction, config.own.alpha)),
        val: &labels.val,
    };
    let schedule = Schedule {
        epochs: config.epochs,
        batching: Batching::Full,
        selection: Selection::BestValAcc { ties: Ties::Earliest },
        early_stop: None,
    };
    drive(&mut t, &tr, &schedule)?;
    let accuracy = labels.accuracy(&tch::no_grad(|| gnn.forward_t(x, &tensors, false)));
    let model = RgnnModel::new(vs, gnn, config.clone(), reconstruction, x.shallow_clone(), data.graph.clone());
    Ok(TrainedRun { model: Box::new(model), accuracy, budget, seconds: start.elapsed().as_secs_f64() })
}

/// The [`RgnnConfig`] of a recipe (the `train` arm of `--method rgnn`).
pub fn config(recipe: &crate::methods::Recipe) -> Result<RgnnConfig> {
    Ok(RgnnConfig {
        own: recipe.own()?,
        hidden: recipe.train.hidden as i64,
        dropout: recipe.train.dropout,
        learning_rate: recipe.train.lr,
        weight_decay: recipe.train.weight_decay,
        epochs: recipe.epochs(),
    })
}
// ---------------------------------------------------------------- registry entries

use crate::methods::spec::MethodSpec;

/// The budget over the grouped binary features GRR-FS randomises (grouping is deterministic).
fn rgnn_budget(
    recipe: &crate::methods::Recipe,
    data: &Dataset,
    _seed: u64,
    _acct: &crate::train::accounting::Accounting,
) -> Result<Budget> {
    let cfg = config(recipe)?;
    cfg.validate()?;
    let grouped = grouping::group_features(&data.features, cfg.group_size_for(data.num_features())?)?;
    cfg.budget(grouped.size()[1] as usize)
}

pub const RGNN: MethodSpec = MethodSpec {
    takes_epsilon: false,
    split: crate::data::SplitRatios::LPGNN,
    sweeps_local_budgets: true,
    own_knobs: Some(crate::methods::knobs::own::<RgnnKnobs>()),
    is_private: crate::methods::lpgnn::local_budgets_finite::<RgnnKnobs>,
    reads: crate::methods::spec::Reads::NETWORK,
    load: Some(load_checkpoint),
    ..MethodSpec::new(
        "rgnn",
        "RGNN (Bhaila et al.): GRR-FS features (--epsilon-x per sampled feature, --sampled m), GRR labels \
            (--epsilon-y), frequency-estimation reconstruction and the label-proportion loss",
        PrivacyUnit::Local,
        |r, data, seed, _| train(data, &config(r)?, seed),
        rgnn_budget,
    )
};
