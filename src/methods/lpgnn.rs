//! LPGNN (Sajadmanesh & Gatica-Perez 2021; thesis ch.3, Algorithm 4): node features collected
//! with the multi-bit mechanism (eps_x), labels of the training and validation nodes with
//! randomized response (eps_y), KProp denoising on both (K_x, K_y; GCN aggregator, no self
//! loops), a GCN/GAT/SAGE backbone, and Drop training/validation. eps = inf switches a part off.
//! Budget: (eps_x + eps_y)-LDP per node (Corollary 2), PrivacyUnit::Local.
use crate::data::{Dataset, Split};
use crate::error::{Error, Result};
use crate::methods::{white_box_posteriors, TrainedModel, TrainedRun};
use crate::models::backbone::{GnnKind, GraphTensors, TwoLayerGnn};
use crate::models::dense::{kprop_operator_dense, propagate, to_float};
use crate::models::kprop::KProp;
use crate::privacy::accountant::{budget, Budget, BudgetComponent, Event, PrivacyUnit};
use crate::privacy::mechanisms::multibit::{min_max_scale, MultiBit};
use crate::privacy::mechanisms::randomized_response::RandomizedResponse;
use crate::privacy::mechanisms::record_noise::{RecordMechanism, RecordNoise, AG_DELTA};
use crate::train::evaluate::{accuracy, Labels};
use crate::train::fit::{drive, Batching, Evaluation, Schedule, Selection, Ties, Trainee};
use gnnaudit_attacks::Result as AttackResult;
use tch::{nn, nn::OptimizerConfig, Kind, Tensor};

/// How the model learns from noisy labels (thesis Section 3.4.3 and Table 3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Training {
    /// Loss between KProp-smoothed noisy labels and KProp-smoothed forward-corrected
    /// predictions (eqs. 3.41-3.42); validation by forward-correction loss under Acc*.
    Drop,
    /// Forward correction (Patrini et al. 2017): cross-entropy of p(y|x) T against y'.
    ForwardCorrection,
    /// Plain cross-entropy against the noisy labels.
    CrossEntropy,
}

crate::from_serde_word!(Training, "training", "drop, forward-correction or cross-entropy");

/// What the server uses as node features (Table 3.3: multi-bit vs. ad-hoc features).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FeatureMode {
    /// Multi-bit perturbed features at eps_x (raw features when eps_x = inf).
    Multibit,
    /// The all-ones vector (no feature information, no privacy cost).
    Ones,
    /// Uniform random features in [0, 1) (no feature information, no privacy cost).
    Rnd,
    /// The clean features (min-max scaled): no feature privacy.
    Raw,
    /// Table 3.2's 1B: the multi-bit encoder with m = d (every feature at eps_x / d).
    Onebit,
    /// Table 3.2's LP: Laplace noise of scale d/eps_x per coordinate (eps_x-LDP).
    Laplace,
    /// Table 3.2's AG: analytic Gaussian, (eps_x, delta)-LDP with delta = 1e-10 by default.
    Gaussian,
    /// Table 3.3's OHD: one-hot of min(degree, d - 1) in d columns (public, no privacy cost).
    Ohd,
}

impl FeatureMode {
    /// Modes that spend eps_x on the private features.
    pub fn is_private(self) -> bool {
        matches!(self, FeatureMode::Multibit | FeatureMode::Onebit | FeatureMode::Laplace | FeatureMode::Gaussian)
    }
}

crate::from_serde_word!(FeatureMode, "features", "multibit, onebit, laplace, gaussian, ones, ohd, rnd or raw");

/// LPGNN's own knobs (the recipe's knob map; defaults: thesis Section 3.5.2 with Cora's K_x = 16,
/// K_y = 8). RGNN and graph-pate read some of the same names through their own structs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LpgnnKnobs {
    /// Feature budget eps_x (`inf` = raw features).
    pub epsilon_x: f64,
    /// Label budget eps_y (`inf` = clean labels).
    pub epsilon_y: f64,
    /// KProp steps on the features.
    pub kx: i64,
    /// KProp steps on the labels.
    pub ky: i64,
    /// How the model learns from noisy labels: drop, forward-correction or cross-entropy.
    pub training: Training,
    /// The GNN: gcn, gat or sage.
    pub backbone: GnnKind,
    /// Node features: multibit, onebit, laplace, gaussian (delta 1e-10 unless --delta), ones, ohd,
    /// rnd or raw.
    pub features: FeatureMode,
    /// Multi-bit's m (default m* of Proposition 3); only with features = multibit.
    pub multibit_m: Option<usize>,
}

impl Default for LpgnnKnobs {
    fn default() -> Self {
        LpgnnKnobs {
            epsilon_x: 1.0,
            epsilon_y: 1.0,
            kx: 16,
            ky: 8,
            training: Training::Drop,
            backbone: GnnKind::Sage,
            features: FeatureMode::Multibit,
            multibit_m: None,
        }
    }
}

impl crate::methods::knobs::Knobs for LpgnnKnobs {
    fn check(&self) -> Result<()> {
        LpgnnConfig { own: self.clone(), ..Default::default() }.check_knobs()
    }
}

/// LPGNN hyper-parameters. Defaults: thesis Section 3.5.2 with Cora's K_x = 16, K_y = 8.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LpgnnConfig {
    /// LPGNN's own knobs (budgets, KProp steps, training, backbone, features), flat in the
    /// serialised form.
    #[serde(flatten)]
    pub own: LpgnnKnobs,
    /// Delta of the analytic Gaussian (`features = gaussian`; None = 1e-10 as in Table 3.2).
    pub delta: Option<f64>,
    pub hidden: i64,
    pub dropout: f64,
    pub learning_rate: f64,
    pub weight_decay: f64,
    pub epochs: usize,
}

impl Default for LpgnnConfig {
    fn default() -> Self {
        LpgnnConfig {
            own: LpgnnKnobs::default(),
            delta: None,
            hidden: 16,
            dropout: 0.5,
            learning_rate: 0.01,
            weight_decay: 1e-3,
            epochs: 500,
        }
    }
}

impl LpgnnConfig {
    /// Checks every parameter before any work.
    pub fn validate(&self) -> Result<()> {
        self.check_knobs()?;
        if self.hidden < 1 {
            return Err(Error::invalid("hidden", format!("must be >= 1, got {}", self.hidden)));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::invalid("dropout", format!("must be in [0, 1), got {}", self.dropout)));
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return Err(Error::invalid("learning_rate", format!("must be > 0, got {}", self.learning_rate)));
        }
        if self.weight_decay.is_nan() || self.weight_decay < 0.0 {
            return Err(Error::invalid("weight_decay", format!("must be >= 0, got {}", self.weight_decay)));
        }
        if self.epochs == 0 {
            return Err(Error::invalid("epochs", "must be >= 1"));
        }
        Ok(())
    }

    /// Checks LPGNN's own knobs (budgets, KProp steps, multi-bit's m).
    fn check_knobs(&self) -> Result<()> {
        if self.own.epsilon_x.is_nan() || self.own.epsilon_x <= 0.0 {
            return Err(Error::invalid("epsilon_x", format!("must be > 0 (or inf), got {}", self.own.epsilon_x)));
        }
        if self.own.epsilon_y.is_nan() || self.own.epsilon_y <= 0.0 {
            return Err(Error::invalid("epsilon_y", format!("must be > 0 (or inf), got {}", self.own.epsilon_y)));
        }
        if self.own.kx < 0 {
            return Err(Error::invalid("kx", format!("must be >= 0, got {}", self.own.kx)));
        }
        if self.own.ky < 0 {
            return Err(Error::invalid("ky", format!("must be >= 0, got {}", self.own.ky)));
        }
        if let Some(m) = self.own.multibit_m {
            if self.own.features != FeatureMode::Multibit {
                return Err(Error::invalid(
                    "multibit_m",
                    format!("only features = multibit samples m coordinates (features = {:?})", self.own.features),
                ));
            }
            if m == 0 {
                return Err(Error::invalid("multibit_m", "must be >= 1"));
            }
        }
        Ok(())
    }

    /// Checks what depends on the data: m <= d.
    pub fn validate_for(&self, num_features: usize) -> Result<()> {
        self.validate()?;
        if let Some(m) = self.own.multibit_m.filter(|&m| m > num_features) {
            return Err(Error::invalid("multibit_m", format!("m = {m} exceeds the {num_features} features")));
        }
        Ok(())
    }

    /// The multi-bit m used for d features (m = d for `onebit`).
    pub fn sampled(&self, num_features: usize) -> usize {
        match self.own.features {
            FeatureMode::Onebit => num_features.max(1),
            _ => self.own.multibit_m.unwrap_or_else(|| MultiBit::optimal_m(self.own.epsilon_x, num_features.max(1))),
        }
    }

    /// The additive-noise mechanism of `laplace` / `gaussian` (None for the other modes or eps_x = inf).
    pub fn record_noise(&self, num_features: usize) -> Result<Option<RecordMechanism>> {
        let noise = match self.own.features {
            FeatureMode::Laplace => RecordNoise::Laplace,
            FeatureMode::Gaussian => RecordNoise::AnalyticGaussian { delta: self.delta.unwrap_or(AG_DELTA) },
            _ => return Ok(None),
        };
        if !self.own.epsilon_x.is_finite() {
            return Ok(None);
        }
        RecordMechanism::new(noise, self.own.epsilon_x, num_features, 0.0, 1.0).map(Some)
    }

    /// The feature budget actually spent: 0 when the features are not used, inf when raw.
    pub fn feature_epsilon(&self) -> f64 {
        match self.own.features {
            f if f.is_private() => self.own.epsilon_x,
            FeatureMode::Ones | FeatureMode::Rnd | FeatureMode::Ohd => 0.0,
            _ => f64::INFINITY,
        }
    }

    /// The LDP budget (Corollary 2): eps_x + eps_y per node, by basic composition; with the
    /// analytic Gaussian, (eps_x + eps_y, delta) from the accountant (exact Gaussian curve by PLD).
    pub fn budget(&self, num_features: usize) -> Result<Budget> {
        let ex = self.feature_epsilon();
        let total = ex + self.own.epsilon_y;
        let mut noise = vec![];
        let (feature_event, feature_part) = match self.own.features {
            FeatureMode::Multibit | FeatureMode::Onebit if ex.is_finite() => {
                let m = self.sampled(num_features);
                noise.push(("multibit_m".to_string(), m as f64));
                let what = if m == num_features { "1-bit (multi-bit with m = d)" } else { "multi-bit encoder" };
                let part = BudgetComponent {
                    name: "features".into(),
                    mechanism: format!("{what} (m = {m} of {num_features}), eps_x-LDP (Theorem 1)"),
                    epsilon: ex,
                };
                (Some(Event::PureDp { epsilon: ex }.labelled("multi-bit features (eps_x)")), part)
            }
            FeatureMode::Laplace | FeatureMode::Gaussian if ex.is_finite() => {
                let m = self.record_noise(num_features)?.expect("finite eps_x");
                if let Some(s) = m.noise_multiplier {
                    noise.push(("feature_noise_multiplier".to_string(), s));
                }
                noise.push(("feature_noise_scale".to_string(), m.scale));
                let part = BudgetComponent { name: "features".into(), mechanism: m.describe(), epsilon: ex };
                (Some(m.event().labelled(format!("{} features (eps_x)", self.own.features.name()))), part)
            }
            FeatureMode::Ones | FeatureMode::Rnd | FeatureMode::Ohd => (
                None,
                BudgetComponent {
                    name: "features".into(),
                    mechanism: "not collected (ad-hoc features)".into(),
                    epsilon: 0.0,
                },
            ),
            _ => (
                None,
                BudgetComponent {
                    name: "features".into(),
                    mechanism: "raw features (no feature privacy)".into(),
                    epsilon: f64::INFINITY,
                },
            ),
        };
        let components = vec![feature_part, BudgetComponent::grr_labels(self.own.epsilon_y, " (eq. 3.39)")];
        let unit = if total.is_finite() { PrivacyUnit::Local } else { PrivacyUnit::None };
        let label_event = self
            .own
            .epsilon_y
            .is_finite()
            .then(|| Event::PureDp { epsilon: self.own.epsilon_y }.labelled("label randomized response (eps_y)"));
        let event = total.is_finite().then(|| Event::Composed(feature_event.into_iter().chain(label_event).collect()));
        let delta = match self.own.features {
            FeatureMode::Gaussian if ex.is_finite() => self.delta.unwrap_or(AG_DELTA),
            _ => 0.0,
        };
        if let (Some(e), true) = (&event, delta > 0.0) {
            // A Gaussian part: the accountant's (RDP and PLD) epsilon at the mechanism's delta.
            let mut b = budget(e, unit, Some(total), delta, noise)?;
            b.components = components;
            return Ok(b);
        }
        let Some(e) = event else {
            // A part in the clear: no guarantee, only the breakdown of what was released.
            return Ok(Budget { noise, components, ..Budget::non_private() });
        };
        // Pure parts only: eps_x + eps_y at delta 0 by basic composition.
        let mut b = crate::privacy::accountant::pure_budget(&e, unit, noise)?;
        b.components = components;
        Ok(b)
    }
}

impl FeatureMode {
    pub fn name(self) -> &'static str {
        match self {
            FeatureMode::Multibit => "multibit",
            FeatureMode::Ones => "ones",
            FeatureMode::Rnd => "rnd",
            FeatureMode::Raw => "raw",
            FeatureMode::Onebit => "onebit",
            FeatureMode::Laplace => "laplace",
            FeatureMode::Gaussian => "gaussian",
            FeatureMode::Ohd => "ohd",
        }
    }
}

/// One-hot of min(degree, d - 1) in d columns (Table 3.3's OHD with the private features'
/// width; degrees >= d - 1 share the last column).
pub fn one_hot_degree(graph: &crate::data::Graph, d: i64) -> Tensor {
    let n = graph.num_nodes() as i64;
    let deg: Vec<i64> = (0..graph.num_nodes()).map(|v| (graph.in_degree(v) as i64).min(d - 1)).collect();
    Tensor::zeros([n, d], (Kind::Float, crate::device::current())).scatter_value(
        1,
        &Tensor::from_slice(&deg).view([n, 1]).to_device(crate::device::current()),
        1.0,
    )
}

/// The features the server receives from every node of `data` (user side of Algorithm 4 for
/// the private modes; the ad-hoc vectors otherwise), before feature KProp.
pub fn server_features(data: &Dataset, config: &LpgnnConfig) -> Result<Tensor> {
    let n = data.num_nodes() as i64;
    let d = data.num_features();
    let opts = (Kind::Float, crate::device::current());
    let raw = || min_max_scale(&data.features.to_tensor());
    Ok(match config.own.features {
        f if f.is_private() && !config.own.epsilon_x.is_finite() => raw(),
        FeatureMode::Multibit | FeatureMode::Onebit => {
            MultiBit::with_sampled(config.own.epsilon_x, d, config.sampled(d), 0.0, 1.0)?.perturb(&raw())?
        }
        FeatureMode::Laplace | FeatureMode::Gaussian => {
            let m = config.record_noise(d)?.expect("finite eps_x");
            let (y, clipped) = m.perturb(&raw())?;
            if clipped > 0 {
                tracing::warn!("lpgnn: {clipped} feature values outside the public range [0, 1] were clipped");
            }
            y
        }
        FeatureMode::Raw => raw(),
        FeatureMode::Ones => Tensor::ones([n, d as i64], opts),
        FeatureMode::Rnd => Tensor::rand([n, d as i64], opts),
        FeatureMode::Ohd => one_hot_degree(&data.graph, d as i64),
    })
}

/// What the server holds after collection (Algorithm 4, lines 4-15).
pub struct Collected {
    /// KProp-smoothed rectified features h = KProp(x', K_x), [N, d].
    pub features: Tensor,
    /// Noisy labels y' of the labelled (train + val) nodes, int64 [N] (test entries are clean
    /// and never read by training).
    pub noisy_labels: Tensor,
    /// One-hot y' with zero rows for nodes outside train + val, [N, C].
    pub noisy_onehot: Tensor,
}

/// Runs the user-side mechanisms on every node and the server-side rectifier and feature KProp.
pub fn collect(data: &Dataset, config: &LpgnnConfig, kprop_x: &KProp) -> Result<Collected> {
    let split = data.split()?;
    let n = data.num_nodes() as i64;
    let opts = (Kind::Float, crate::device::current());
    let x = server_features(data, config)?;
    let features = tch::no_grad(|| kprop_x.forward(&x));
    let y = data.label_tensor();
    let labelled = Split::index_tensor(&[split.train.as_slice(), split.val.as_slice()].concat());
    let rr = RandomizedResponse::new(config.own.epsilon_y, data.num_classes)?;
    let noisy_part = rr.perturb(&y.index_select(0, &labelled))?;
    let noisy_labels = y.index_copy(0, &labelled, &noisy_part);
    let noisy_onehot = Tensor::zeros([n, data.num_classes as i64], opts).index_copy(
        0,
        &labelled,
        &noisy_part.one_hot(data.num_classes as i64).to_kind(Kind::Float),
    );
    Ok(Collected { features, noisy_labels, noisy_onehot })
}

/// The slides' diagnostic (003 l.244-276, "effect of KProp on label accuracy"): how well the
/// server recovers the private labels of the train + val nodes, by the argmax of label KProp with
/// K_y steps over the noisy one-hot labels (a node whose K_y-hop neighbourhood holds no label
/// keeps its own y'), beside the accuracy of the raw y'. What the server learns about the labels.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LabelRecovery {
    pub kprop_accuracy: f64,
    pub noisy_accuracy: f64,
}

impl LabelRecovery {
    pub fn of(data: &Dataset, collected: &Collected, ky: i64) -> Result<Self> {
        let split = data.split()?;
        let labelled = Split::index_tensor(&[split.train.as_slice(), split.val.as_slice()].concat());
        let kprop = KProp::new(&data.graph, ky)?;
        let smoothed = tch::no_grad(|| kprop.forward(&collected.noisy_onehot)).index_select(0, &labelled);
        let own = collected.noisy_labels.index_select(0, &labelled);
        let has_mass = smoothed.sum_dim_intlist(1, false, Kind::Float).gt(0.0);
        let recovered = smoothed.argmax(-1, false).where_self(&has_mass, &own);
        let y = data.label_tensor().index_select(0, &labelled);
        let acc = |t: &Tensor| t.eq_tensor(&y).to_kind(Kind::Float).mean(Kind::Float).double_value(&[]);
        Ok(LabelRecovery { kprop_accuracy: acc(&recovered), noisy_accuracy: acc(&own) })
    }
}

/// A trained LPGNN: the backbone on the collected (KProp-smoothed) features.
pub struct LpgnnModel {
    pub vs: nn::VarStore,
    pub gnn: TwoLayerGnn,
    pub tensors: GraphTensors,
    pub features: Tensor,
    pub config: LpgnnConfig,
    posteriors: Tensor,
    /// Feature KProp on the training graph, for the white-box forward.
    pub kprop: KProp,
    /// The training graph (saved with a checkpoint).
    pub graph: crate::data::Graph,
    /// The label-recovery diagnostic of the training run (None after loading a checkpoint).
    pub label_recovery: Option<LabelRecovery>,
}

impl TrainedModel for LpgnnModel {
    /// Saves the weights, the collected features (the users' one-time randomized reports: a new
    /// draw would be a new release) and the training graph (see `train::checkpoint`).
    fn save(&self, dir: &std::path::Path, recipe: &crate::methods::Recipe, budget: &Budget) -> Result<()> {
        use crate::methods::checkpoint::{save_with_graph, Meta};
        let meta = Meta::new(recipe, budget, self.features.size()[1], self.posteriors.size()[1]);
        save_with_graph(
            dir,
            &self.vs,
            &meta,
            vec![("features".to_string(), self.features.shallow_clone())],
            &self.graph,
        )
    }
    fn posteriors(&self) -> Tensor {
        self.posteriors.shallow_clone()
    }
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
    fn diagnostics(&self) -> Vec<(String, f64)> {
        self.label_recovery.map_or(vec![], |r| {
            vec![
                ("label_recovery_kprop".to_string(), r.kprop_accuracy),
                ("label_recovery_noisy".to_string(), r.noisy_accuracy),
            ]
        })
    }
    /// Inference on another graph: its nodes run the same multi-bit encoder (fresh randomness)
    /// and the server applies feature KProp on that graph.
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let want = self.features.size()[1];
        if data.num_features() as i64 != want {
            return Err(Error::invalid(
                "features",
                format!("model expects {want} columns, got {}", data.num_features()),
            ));
        }
        let kprop = KProp::new(&data.graph, self.config.own.kx)?;
        let x = server_features(data, &self.config)?;
        let g = GraphTensors::for_kind(&data.graph, self.gnn.kind());
        Ok(tch::no_grad(|| self.gnn.forward_t(&kprop.forward(&x), &g, false).softmax(-1, Kind::Float)))
    }
}

/// Mean over rows of -log p[row, target]; `p` holds probabilities.
fn nll_of_probs(p: &Tensor, target: &Tensor) -> Tensor {
    -(p.gather(1, &target.unsqueeze(1), false).squeeze_dim(1) + 1e-20).log().mean(Kind::Float)
}

/// LPGNN's step (Algorithm 4): a full-graph forward, the loss of its training mode on the
/// noisy labels, libtorch's Adam; and its validation loss and Acc* admissibility for selection.
struct LpgnnTrainee<'a> {
    vs: &'a nn::VarStore,
    gnn: &'a TwoLayerGnn,
    x: &'a Tensor,
    tensors: &'a GraphTensors,
    opt: nn::Optimizer,
    training: Training,
    transition: &'a Tensor,
    /// Label KProp under Drop with K_y > 0.
    kprop_y: Option<&'a KProp>,
    /// Drop's training nodes and targets.
    drop: (&'a Tensor, &'a Tensor),
    y_noisy: &'a Tensor,
    labels: &'a Labels,
    acc_star: f64,
}

impl Trainee for LpgnnTrainee<'_> {
    fn step(&mut self, tr: &Tensor) -> Result<()> {
        let logits = self.gnn.forward_t(self.x, self.tensors, true);
        let p_y = logits.softmax(-1, Kind::Float);
        let y_tr = self.y_noisy.index_select(0, tr);
        let loss = match self.training {
            Training::CrossEntropy => crate::models::cross_entropy(&logits.index_select(0, tr), &y_tr),
            Training::ForwardCorrection => nll_of_probs(&p_y.mm(self.transition).index_select(0, tr), &y_tr),
            Training::Drop => {
                let p_noisy = p_y.mm(self.transition); // eq. 3.41
                let p_smooth = match self.kprop_y {
                    None => p_noisy,
                    Some(k) => k.forward(&p_noisy).softmax(-1, Kind::Float), // eq. 3.42
                };
                nll_of_probs(&p_smooth.index_select(0, self.drop.0), self.drop.1)
            }
        };
        self.opt.zero_grad();
        loss.backward();
        self.opt.step();
        Ok(())
    }
    fn evaluate(&self) -> Evaluation {
        let (tr, va) = (&self.labels.train, &self.labels.val);
        tch::no_grad(|| {
            let logits = self.gnn.forward_t(self.x, self.tensors, false);
            let no_val = va.numel() == 0;
            // Without validation nodes every epoch ties at 0 and the latest wins.
            let val_loss = if no_val {
                0.0
            } else {
                let y_va = self.y_noisy.index_select(0, va);
                match self.training {
                    Training::CrossEntropy => crate::models::cross_entropy(&logits.index_select(0, va), &y_va),
                    _ => nll_of_probs(&logits.softmax(-1, Kind::Float).mm(self.transition).index_select(0, va), &y_va),
                }
                .double_value(&[])
            };
            let admissible = self.training != Training::Drop
                || (accuracy(&logits, self.y_noisy, tr) <= self.acc_star
                    && (no_val || accuracy(&logits, self.y_noisy, va) <= self.acc_star));
            Evaluation { val_accuracy: accuracy(&logits, &self.labels.y, va), val_loss, admissible }
        })
    }
    fn variables(&self) -> &nn::VarStore {
        self.vs
    }
}

/// Trains LPGNN on `data` (which must carry a split; LPGNN's default is 50/25/25).
pub fn train(data: &Dataset, config: &LpgnnConfig, seed: u64) -> Result<TrainedRun> {
    config.validate_for(data.num_features())?;
    let split = data.split()?;
    if split.train.is_empty() {
        return Err(Error::invalid("split", "the training set is empty"));
    }
    if data.num_classes < 2 {
        return Err(Error::invalid("num_classes", "LPGNN needs at least two classes"));
    }
    let start = std::time::Instant::now();
    tch::manual_seed(seed as i64);
    let kprop_x = KProp::new(&data.graph, config.own.kx)?;
    // Plain cross-entropy and forward correction use no label KProp (Table 3.4's baselines).
    let ky = if config.own.training == Training::Drop { config.own.ky } else { 0 };
    let kprop_y = KProp::new(&data.graph, ky)?;
    let collected = collect(data, config, &kprop_x)?;
    let rr = RandomizedResponse::new(config.own.epsilon_y, data.num_classes)?;
    let transition = rr.transition_matrix();
    let acc_star = rr.max_noisy_accuracy();

    let tr = Split::index_tensor(&split.train);
    let y_noisy = &collected.noisy_labels;
    // Drop's targets: argmax of KProp(y'), restricted to train nodes that received any label mass.
    let smoothed = tch::no_grad(|| kprop_y.forward(&collected.noisy_onehot));
    let has_mass = smoothed.index_select(0, &tr).sum_dim_intlist(1, false, Kind::Float).gt(0.0);
    let drop_nodes = tr.masked_select(&has_mass);
    let drop_targets = smoothed.index_select(0, &drop_nodes).argmax(-1, false);
    let label_recovery = LabelRecovery::of(data, &collected, config.own.ky)?;
    tracing::info!(
        "LPGNN label recovery on train + val: KProp(K_y = {}) {:.3}, raw y' {:.3}",
        config.own.ky,
        label_recovery.kprop_accuracy,
        label_recovery.noisy_accuracy
    );

    let vs = nn::VarStore::new(crate::device::current());
    let gnn = TwoLayerGnn::new(
        &vs.root(),
        config.own.backbone,
        data.num_features() as i64,
        config.hidden,
        data.num_classes as i64,
        config.dropout,
    );
    let tensors = GraphTensors::for_kind(&data.graph, config.own.backbone);
    let opt = nn::Adam::default().wd(config.weight_decay).build(&vs, config.learning_rate)?;
    let labels = Labels::from_dataset(data)?;
    let mut t = LpgnnTrainee {
        vs: &vs,
        gnn: &gnn,
        x: &collected.features,
        tensors: &tensors,
        opt,
        training: config.own.training,
        transition: &transition,
        kprop_y: (ky != 0).then_some(&kprop_y),
        drop: (&drop_nodes, &drop_targets),
        y_noisy,
        labels: &labels,
        acc_star,
    };
    // Best epoch: lowest validation loss; under Drop only among epochs whose accuracy on the
    // noisy labels stays <= Acc* on both train and validation (Algorithm 4, line 29).
    let schedule = Schedule {
        epochs: config.epochs,
        batching: Batching::Full,
        selection: Selection::LowestValLoss { ties: Ties::Latest },
        early_stop: None,
    };
    let report = drive(&mut t, &tr, &schedule)?;
    if report.kept.is_some_and(|e| !e.admissible) {
        tracing::warn!("LPGNN: no epoch met the Acc* <= {acc_star:.3} rule; using the lowest validation loss");
    }
    let x = &collected.features;
    let logits = tch::no_grad(|| gnn.forward_t(x, &tensors, false));
    let accuracy = labels.accuracy(&logits);
    let posteriors = logits.softmax(-1, Kind::Float);
    let budget = config.budget(data.num_features())?;
    let model = LpgnnModel {
        vs,
        gnn,
        tensors,
        features: collected.features,
        config: config.clone(),
        posteriors,
        kprop: kprop_x,
        graph: data.graph.clone(),
        label_recovery: Some(label_recovery),
    };
    Ok(TrainedRun { model: Box::new(model), accuracy, budget, seconds: start.elapsed().as_secs_f64() })
}

/// Rebuilds a saved LPGNN (see `train::checkpoint`): the backbone from the recipe, its weights,
/// and the posteriors recomputed on the saved collected features and training graph.
pub fn load_checkpoint(
    meta: &crate::methods::checkpoint::Meta,
    cache: &crate::methods::checkpoint::Cache,
    load: &dyn Fn(&mut nn::VarStore) -> Result<()>,
) -> Result<Box<dyn TrainedModel>> {
    let config = config(&meta.recipe)?;
    config.validate()?;
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
    let (features, graph) = (cache.get("features")?, cache.graph()?);
    let tensors = GraphTensors::for_kind(&graph, config.own.backbone);
    let kprop = KProp::new(&graph, config.own.kx)?;
    let posteriors = tch::no_grad(|| gnn.forward_t(&features, &tensors, false).softmax(-1, Kind::Float));
    Ok(Box::new(LpgnnModel { vs, gnn, tensors, features, config, posteriors, kprop, graph, label_recovery: None }))
}

/// The [`LpgnnConfig`] of a recipe (the `train` arm of `--method lpgnn`): LPGNN's own knobs and
/// the shared training settings. Dropout and weight decay are the recipe's, zero included; a
/// recipe that leaves them unset starts from LPGNN's defaults (0.5 and 1e-3), which the registry's
/// `lpgnn_defaults` writes into it.
pub fn config(recipe: &crate::methods::Recipe) -> Result<LpgnnConfig> {
    Ok(LpgnnConfig {
        own: recipe.own()?,
        delta: recipe.delta,
        hidden: recipe.train.hidden as i64,
        dropout: recipe.train.dropout,
        learning_rate: recipe.train.lr,
        weight_decay: recipe.train.weight_decay,
        epochs: recipe.epochs(),
    })
}
// ---------------------------------------------------------------- white box

/// The features are what the server receives (multi-bit rectified estimates, or min-max scaled
/// raw features at eps_x = inf); the forward is KProp (K_x steps of the GCN aggregator without
/// self loops, thesis eq. 3.40) followed by the backbone. The dense form runs KProp on the
/// relaxed adjacency too.
impl gnnaudit_attacks::WhiteBox for LpgnnModel {
    fn num_classes(&self) -> usize {
        crate::methods::TrainedModel::posteriors(self).size()[1] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.vs.trainable_variables()
    }
    /// `x`: the features as the server receives them (before KProp).
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        white_box_posteriors(self.gnn.forward_t(&self.kprop.forward(&to_float(x)), &self.tensors, false))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        let op = kprop_operator_dense(adj);
        let reads = self.gnn.input_weights();
        let h = propagate(&op, &to_float(x), self.kprop.steps(), Some(&reads));
        Some(white_box_posteriors(self.gnn.forward_dense(&h, adj)))
    }
}

// ---------------------------------------------------------------- registry entries

use crate::methods::spec::MethodSpec;

/// The local budgets of an LPGNN-style recipe, eps_x and eps_y.
pub trait LocalBudgets {
    fn local_budgets(&self) -> (f64, f64);
}

impl LocalBudgets for LpgnnKnobs {
    fn local_budgets(&self) -> (f64, f64) {
        (self.epsilon_x, self.epsilon_y)
    }
}

/// A local method adds noise when either of its budgets is finite. (A recipe whose knobs do not
/// parse is refused by validation before anything asks.)
pub fn local_budgets_finite<K: crate::methods::knobs::Knobs + LocalBudgets>(r: &crate::methods::Recipe) -> bool {
    r.own::<K>().map(|k| k.local_budgets()).is_ok_and(|(x, y)| x.is_finite() || y.is_finite())
}

fn lpgnn_defaults(r: &mut crate::methods::Recipe) {
    let d = LpgnnConfig::default();
    (r.train.dropout, r.train.weight_decay) = (d.dropout, d.weight_decay);
}

fn lpgnn_budget(
    recipe: &crate::methods::Recipe,
    data: &Dataset,
    _seed: u64,
    _acct: &crate::train::accounting::Accounting,
) -> Result<Budget> {
    config(recipe)?.budget(data.num_features())
}

pub const LPGNN: MethodSpec = MethodSpec {
    takes_epsilon: false,
    split: crate::data::SplitRatios::LPGNN,
    sweeps_local_budgets: true,
    epochs: 500,
    is_private: local_budgets_finite::<LpgnnKnobs>,
    reads: crate::methods::spec::Reads::NETWORK,
    own_knobs: Some(crate::methods::knobs::own::<LpgnnKnobs>()),
    defaults: lpgnn_defaults,
    load: Some(load_checkpoint),
    ..MethodSpec::new(
        "lpgnn",
        "LPGNN (thesis ch.3): local DP on features (--epsilon-x) and labels (--epsilon-y)",
        PrivacyUnit::Local,
        |r, data, seed, _| train(data, &config(r)?, seed),
        lpgnn_budget,
    )
};
