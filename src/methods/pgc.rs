//! The `pgc` method (thesis ch.2, Algorithm 1): every node
//! randomises each of its d features with a per-feature LDP mechanism (one-bit PGC, Laplace or
//! Piecewise, `--mechanism`), the server estimates the first GCN aggregation from the reports and
//! trains a 2-layer GCN (ReLU, hidden 32, output = classes) with the graph and labels in the clear.
//!
//! Estimator (Algorithm 1, "if l = 1"): GC^(v) = sum_{u in N(v)} y*_u / sqrt(|N(u)||N(v)|), N(v)
//! with v itself, i.e. A^ Y* with A^ = D~^-1/2 (A + I) D~^-1/2. Eq. 2.4 prints y*_v inside the
//! sum; Algorithm 1 and Lemma 2 need y*_u, which is what is computed here.
//!
//! Claim (our reading of the chapter): the chapter allots eps to each feature, so a node's record is
//! d eps-LDP (basic composition, tight for independent coordinates). The budget claims d eps at
//! the `Local` unit; eps per feature is a labelled component detail.
use crate::data::{Dataset, Graph};
use crate::error::{Error, Result};
use crate::methods::{TrainedModel, TrainedRun};
use crate::models::gcn::{gcn_normalized, GcnConv};
use crate::privacy::accountant::{Budget, BudgetComponent, Event, PrivacyUnit};
use crate::privacy::mechanisms::feature_ldp::{FeatureLdp, FeatureMechanismKind};
use crate::train::evaluate::{accuracy, Labels};
use crate::train::fit::{drive, Batching, EarlyStop, Evaluation, Schedule, Selection, Ties, Trainee};
use tch::{nn, nn::OptimizerConfig, Kind, Tensor};

/// Early stopping of section 2.6.4: stop when the validation loss has not decreased for this
/// many epochs, but train at least `MIN_EPOCHS`.
const PATIENCE: usize = 20;
const MIN_EPOCHS: usize = 10;

/// PGC's and PGC-VGAE's own knob (the recipe's knob map).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PgcKnobs {
    /// The per-feature randomiser: onebit (= pgc), laplace, piecewise (raw: omit --epsilon).
    pub mechanism: FeatureMechanismKind,
}

impl crate::methods::knobs::Knobs for PgcKnobs {}

/// PGC and PGC-VGAE hyper-parameters (the node-side randomiser, the claim and the training knobs
/// are the same); defaults are Table 2.2's Cora row for PGC (lr 0.01, wd 0.01, dropout 0.5), and
/// [`PgcConfig::vgae`] the VGAE row.
#[derive(Debug, Clone, PartialEq)]
pub struct PgcConfig {
    pub mechanism: FeatureMechanismKind,
    /// Budget per feature; None = raw features (the RAW row).
    pub epsilon: Option<f64>,
    pub hidden: i64,
    pub dropout: f64,
    pub learning_rate: f64,
    pub weight_decay: f64,
    pub max_epochs: usize,
}

impl Default for PgcConfig {
    fn default() -> Self {
        PgcConfig {
            mechanism: FeatureMechanismKind::Onebit,
            epsilon: Some(1.0),
            hidden: 32,
            dropout: 0.5,
            learning_rate: 0.01,
            weight_decay: 0.01,
            max_epochs: 500,
        }
    }
}

impl PgcConfig {
    /// Table 2.2's Cora row for the VGAE (dropout 0; encoder widths 32 -> 16).
    pub fn vgae() -> Self {
        PgcConfig { dropout: 0.0, ..PgcConfig::default() }
    }

    /// The randomiser the nodes run, None for raw features. Features live in the public range
    /// [0, 1] (bag-of-words / one-hot columns).
    pub fn randomiser(&self) -> Result<Option<FeatureLdp>> {
        match (self.mechanism, self.epsilon) {
            (FeatureMechanismKind::Raw, Some(e)) => Err(Error::invalid(
                "epsilon",
                format!("mechanism raw randomises nothing and takes no epsilon (got {e})"),
            )),
            (FeatureMechanismKind::Raw, None) | (_, None) => Ok(None),
            (kind, Some(e)) => Ok(Some(FeatureLdp::new(kind, e, 0.0, 1.0)?)),
        }
    }

    /// The record-level budget: d eps (`Local`), with eps per feature as a labelled detail.
    pub fn budget(&self, num_features: usize) -> Result<Budget> {
        // Raw features claim nothing: no component with an infinite epsilon, which the checkpoint's
        // JSON cannot hold (it saved as null and the model failed to load).
        let Some(m) = self.randomiser()? else {
            return Ok(Budget::non_private());
        };
        let eps = m.epsilon();
        let event = Event::PureDp { epsilon: eps }
            .labelled(format!("{} mechanism, one feature", m.kind().name()))
            .times(num_features as u64);
        let noise = vec![("epsilon_per_feature".into(), eps), ("features".into(), num_features as f64)];
        let mut b = crate::privacy::accountant::pure_budget(&event, PrivacyUnit::Local, noise)?;
        let total = b.epsilon_rdp;
        b.components = vec![BudgetComponent {
            name: "features".into(),
            mechanism: format!(
                "{} per feature, eps {eps} per feature (the chapter's claim) x {num_features} features",
                m.kind().name()
            ),
            epsilon: total,
        }];
        Ok(b)
    }
}

/// Inference on another graph (`data`), whose nodes run the same mechanism with fresh randomness:
/// the first-layer estimate there and its normalised adjacency, for a model reading `want` columns.
pub fn estimate_on(data: &Dataset, config: &PgcConfig, want: i64) -> Result<(Tensor, Tensor)> {
    if data.num_features() as i64 != want {
        return Err(Error::invalid("features", format!("model expects {want} columns, got {}", data.num_features())));
    }
    let (y, _) = collect(data, config, 0x9e37)?;
    Ok((first_layer_estimate(&data.graph, &y), gcn_normalized(&data.graph, true)))
}

/// The first-layer estimate GC^ = A^ Y* (Algorithm 1 with the eq. 2.4 typo fixed), [N, d].
pub fn first_layer_estimate(graph: &Graph, y_star: &Tensor) -> Tensor {
    tch::no_grad(|| gcn_normalized(graph, true).mm(&y_star.to_kind(Kind::Float)))
}

/// Mean absolute error of eq. 2.15, averaged over nodes: mean_v (1/d) sum_i |GC(v)_i - GC^(v)_i|.
pub fn aggregation_mae(exact: &Tensor, estimate: &Tensor) -> f64 {
    (exact - estimate).abs().mean(Kind::Float).double_value(&[])
}

/// The features the server holds: y* (or the clean features), and how many entries were clipped.
pub fn collect(data: &Dataset, config: &PgcConfig, seed: u64) -> Result<(Tensor, usize)> {
    let x = data.features.to_tensor().to_kind(Kind::Float);
    match config.randomiser()? {
        None => Ok((x.clamp(0.0, 1.0), 0)),
        Some(m) => m.perturb(&x, seed),
    }
}

/// 2-layer GCN whose first layer reads the precomputed estimate (a GCN layer on Y* is A^ Y* W).
#[derive(Debug)]
struct PgcGcn {
    first: nn::Linear,
    second: GcnConv,
    dropout: f64,
}

impl PgcGcn {
    fn forward_t(&self, gc: &Tensor, adj: &Tensor, train: bool) -> Tensor {
        let h = gc.apply(&self.first).relu().dropout(self.dropout, train);
        self.second.forward(&h, adj)
    }
}

/// A trained PGC model: its posteriors on the training graph come from the stored reports.
pub struct PgcModel {
    vs: nn::VarStore,
    gcn: PgcGcn,
    config: PgcConfig,
    posteriors: Tensor,
    /// The server's first-layer estimate A^ Y* on the training graph: what a checkpoint keeps,
    /// since the reports themselves never reach the server in the clear.
    estimate: Tensor,
    graph: Graph,
}

impl PgcModel {
    fn new(vs: nn::VarStore, gcn: PgcGcn, config: PgcConfig, estimate: Tensor, graph: Graph) -> Self {
        let adj = gcn_normalized(&graph, true);
        let posteriors = tch::no_grad(|| gcn.forward_t(&estimate, &adj, false).softmax(-1, Kind::Float));
        PgcModel { vs, gcn, config, posteriors, estimate, graph }
    }
}

/// The untrained network for `d` features and `c` classes (training and loading share it).
fn network(root: &nn::Path, config: &PgcConfig, d: i64, c: i64) -> PgcGcn {
    PgcGcn {
        first: nn::linear(root / "conv1", d, config.hidden, crate::models::torch_linear_config(d, true)),
        second: GcnConv::new(&(root / "conv2"), config.hidden, c),
        dropout: config.dropout,
    }
}

/// Rebuilds a saved PGC model (see `train::checkpoint`) from its weights, estimate and graph.
pub fn load_checkpoint(
    meta: &crate::methods::checkpoint::Meta,
    cache: &crate::methods::checkpoint::Cache,
    load: &dyn Fn(&mut nn::VarStore) -> Result<()>,
) -> Result<Box<dyn TrainedModel>> {
    let config = config(&meta.recipe)?;
    let mut vs = nn::VarStore::new(crate::device::current());
    let gcn = network(&vs.root(), &config, meta.num_features, meta.num_classes);
    load(&mut vs)?;
    let (estimate, graph) = (cache.get("estimate")?, cache.graph()?);
    Ok(Box::new(PgcModel::new(vs, gcn, config, estimate, graph)))
}

impl TrainedModel for PgcModel {
    fn save(&self, dir: &std::path::Path, recipe: &crate::methods::Recipe, budget: &Budget) -> Result<()> {
        use crate::methods::checkpoint::{save_with_graph, Meta};
        let meta = Meta::new(recipe, budget, self.estimate.size()[1], self.posteriors.size()[1]);
        save_with_graph(
            dir,
            &self.vs,
            &meta,
            vec![("estimate".to_string(), self.estimate.shallow_clone())],
            &self.graph,
        )
    }
    fn posteriors(&self) -> Tensor {
        self.posteriors.shallow_clone()
    }
    fn white_box(&self) -> Option<&dyn gnnaudit_attacks::WhiteBox> {
        Some(self)
    }
    /// Inference on another graph: its nodes run the same mechanism (fresh randomness).
    fn posteriors_on(&self, data: &Dataset) -> Result<Tensor> {
        let (gc, adj) = estimate_on(data, &self.config, self.gcn.first.ws.size()[1])?;
        Ok(tch::no_grad(|| self.gcn.forward_t(&gc, &adj, false).softmax(-1, Kind::Float)))
    }
}

/// White box (see `models::white_box`): the features are what the server receives, the
/// de-biased reports y* (the clean features at eps = inf); the forward is Algorithm 1's estimate
/// A^ y* followed by the 2-layer GCN, with A^ = D~^-1/2 (A + I) D~^-1/2 (dense: of the relaxed
/// adjacency). The first layer is applied as A^ (x W^T) + b, equal to (A^ x) W^T + b and cheaper.
impl gnnaudit_attacks::WhiteBox for PgcModel {
    fn num_classes(&self) -> usize {
        self.posteriors.size()[1] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.vs.trainable_variables()
    }
    fn forward_features(&self, x: &Tensor) -> gnnaudit_attacks::Result<Tensor> {
        let adj = gcn_normalized(&self.graph, true);
        Ok(self.white_box_logits(&x.to_kind(Kind::Float), &adj).softmax(-1, Kind::Float))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<gnnaudit_attacks::Result<Tensor>> {
        let a = crate::models::gcn::gcn_normalized_dense(adj);
        Some(Ok(self.white_box_logits(&x.to_kind(Kind::Float), &a).softmax(-1, Kind::Float)))
    }
}

impl PgcModel {
    fn white_box_logits(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        let first = &self.gcn.first;
        let mut h = adj.mm(&x.mm(&first.ws.tr()));
        if let Some(b) = &first.bs {
            h += b;
        }
        self.gcn.second.forward(&h.relu(), adj)
    }
}

/// PGC's step: the GCN on Algorithm 1's first-layer estimate, full batch, libtorch's Adam; the
/// validation loss for selection (the step's training loss where there are no validation nodes).
struct PgcTrainee<'a> {
    vs: &'a nn::VarStore,
    gcn: &'a PgcGcn,
    gc: &'a Tensor,
    adj: &'a Tensor,
    opt: nn::Optimizer,
    labels: &'a Labels,
    last_loss: f64,
}

impl Trainee for PgcTrainee<'_> {
    fn step(&mut self, tr: &Tensor) -> Result<()> {
        let logits = self.gcn.forward_t(self.gc, self.adj, true);
        let loss = crate::models::cross_entropy(&logits.index_select(0, tr), &self.labels.y.index_select(0, tr));
        self.opt.zero_grad();
        loss.backward();
        self.opt.step();
        self.last_loss = loss.double_value(&[]);
        Ok(())
    }
    fn evaluate(&self) -> Evaluation {
        let va = &self.labels.val;
        tch::no_grad(|| {
            let logits = self.gcn.forward_t(self.gc, self.adj, false);
            let val_loss = if va.numel() == 0 {
                self.last_loss
            } else {
                crate::models::cross_entropy(&logits.index_select(0, va), &self.labels.y.index_select(0, va))
                    .double_value(&[])
            };
            Evaluation { val_accuracy: accuracy(&logits, &self.labels.y, va), val_loss, admissible: true }
        })
    }
    fn variables(&self) -> &nn::VarStore {
        self.vs
    }
}

/// Trains PGC for node classification on `data` (which must carry a split).
pub fn train(data: &Dataset, config: &PgcConfig, seed: u64) -> Result<TrainedRun> {
    let split = data.split()?;
    if split.train.is_empty() {
        return Err(Error::invalid("split", "the training set is empty"));
    }
    if !(0.0..1.0).contains(&config.dropout) {
        return Err(Error::invalid("dropout", format!("must be in [0, 1), got {}", config.dropout)));
    }
    let budget = config.budget(data.num_features())?;
    let start = std::time::Instant::now();
    tch::manual_seed(seed as i64);
    let (y_star, clipped) = collect(data, config, seed)?;
    if clipped > 0 {
        tracing::warn!("pgc: {clipped} feature values outside the public range [0, 1] were clipped");
    }
    let gc = first_layer_estimate(&data.graph, &y_star);
    let adj = gcn_normalized(&data.graph, true);

    let vs = nn::VarStore::new(crate::device::current());
    let root = vs.root();
    let gcn = network(&root, config, data.num_features() as i64, data.num_classes as i64);
    if config.max_epochs == 0 {
        return Err(Error::invalid("epochs", "must be >= 1"));
    }
    let opt = nn::Adam::default().wd(config.weight_decay).build(&vs, config.learning_rate)?;
    let labels = Labels::from_dataset(data)?;
    let mut t = PgcTrainee { vs: &vs, gcn: &gcn, gc: &gc, adj: &adj, opt, labels: &labels, last_loss: f64::NAN };
    let schedule = Schedule {
        epochs: config.max_epochs,
        batching: Batching::Full,
        selection: Selection::LowestValLoss { ties: Ties::Earliest },
        early_stop: Some(EarlyStop { patience: PATIENCE, min_epochs: MIN_EPOCHS, check_every: 1 }),
    };
    drive(&mut t, &labels.train, &schedule)?;
    let accuracy = labels.accuracy(&tch::no_grad(|| gcn.forward_t(&gc, &adj, false)));
    let model = PgcModel::new(vs, gcn, config.clone(), gc, data.graph.clone());
    Ok(TrainedRun { model: Box::new(model), accuracy, budget, seconds: start.elapsed().as_secs_f64() })
}

/// The [`PgcConfig`] of a recipe (the `train` arm of `--method pgc` and `pgc-vgae`): `--epsilon` is
/// the budget per feature, `--mechanism` the randomiser; hidden, lr, weight decay, dropout and
/// epochs (the maximum) from the recipe.
pub fn config(recipe: &crate::methods::Recipe) -> Result<PgcConfig> {
    Ok(PgcConfig {
        mechanism: recipe.own::<PgcKnobs>()?.mechanism,
        epsilon: recipe.epsilon,
        hidden: recipe.train.hidden as i64,
        dropout: recipe.train.dropout,
        learning_rate: recipe.train.lr,
        weight_decay: recipe.train.weight_decay,
        max_epochs: recipe.epochs(),
    })
}
// ---------------------------------------------------------------- registry entries

use crate::methods::spec::MethodSpec;

fn pgc_defaults(r: &mut crate::methods::Recipe) {
    // Table 2.2, Cora row; hidden 32 (section 2.6.4).
    (r.train.hidden, r.train.weight_decay, r.train.dropout) = (32, 0.01, 0.5);
}

/// PGC and PGC-VGAE: RAW randomises nothing, so an epsilon for it would be a false claim.
pub fn check_mechanism(r: &crate::methods::Recipe) -> Result<()> {
    if r.epsilon.is_some() && r.own::<PgcKnobs>()?.mechanism == FeatureMechanismKind::Raw {
        return Err(Error::invalid("mechanism", "raw randomises nothing: omit --epsilon for the RAW row"));
    }
    Ok(())
}

fn pgc_budget(
    recipe: &crate::methods::Recipe,
    data: &Dataset,
    _seed: u64,
    _acct: &crate::train::accounting::Accounting,
) -> Result<Budget> {
    config(recipe)?.budget(data.num_features())
}

/// The shared training settings PGC and PGC-VGAE read (their own knob is [`PgcKnobs`]).
pub const PGC: MethodSpec = MethodSpec {
    epochs: 500,
    reads: crate::methods::spec::Reads::NETWORK,
    own_knobs: Some(crate::methods::knobs::own::<PgcKnobs>()),
    defaults: pgc_defaults,
    check: check_mechanism,
    load: Some(load_checkpoint),
    ..MethodSpec::new(
        "pgc",
        "PGC (thesis ch.2): per-feature LDP (--mechanism onebit|laplace|piecewise, --epsilon per feature; \
            the record claim is d eps), 2-layer GCN; omit --epsilon for the RAW row",
        PrivacyUnit::Local,
        |r, data, seed, _| train(data, &config(r)?, seed),
        pgc_budget,
    )
};
