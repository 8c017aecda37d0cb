//! `class-dp-mlp` and `subclass-dp-mlp` (Zhang thesis ch.4 §4.4, Algorithm 5, Theorem 5, Cor. 2): DP-SGD whose privacy unit is a whole class, or a whole k-means
//! subclass, against model inversion, which reconstructs a class's "statistical property".
//!
//! Per step t (Algorithm 5): every unit enters independently with probability q; a sampled unit's
//! gradient is the mean over *all* its training records, clipped to S as one vector; the clipped
//! unit gradients are summed, N(0, sigma^2 S^2) added and the sum divided by q U (U units), then
//! the optimizer steps. The model is an MLP on node features (the `dp-mlp` recipe): per-unit
//! gradient isolation, which the analysis needs, does not hold through message passing, where one
//! class's features enter other classes' aggregations.
//!
//! Schedule: an epoch is floor(1/q) steps (as DP-SGD's floor(n/B)), T = epochs x floor(1/q).
//! Budget: [`class_dp_sgd`] from the accountant at the unit level (`--epsilon` is per class or per
//! subclass); the thesis's Theorem 5 closed form is recorded as `paper_epsilon`. Delta defaults to
//! DP-MLP's (10^-digits of the node count, far below 1/U); an explicit delta at or above 1/U is
//! refused ([`check_unit_delta`]).
use crate::data::subclass::kmeans;
use crate::data::Dataset;
use crate::ensure;
use crate::error::{Error, Result};
use crate::methods::decoupled::accountant_failure;
use crate::methods::mlp::MlpModel;
use crate::methods::{Method, Recipe, TrainedRun};
use crate::models::mlp::MlpClassifier;
use crate::models::NodeClassifier;
use crate::models::{Fwd, MlpStyle};
use crate::privacy::accountant::class_dp::{check_unit_delta, class_dp_sgd, theorem5_epsilon, GroupUnit, Relation};
use crate::privacy::accountant::{default_delta, Budget, PrivacyUnit};
use crate::privacy::dpsgd::tape::Grads;
use crate::privacy::dpsgd::{DpSgd, Optimizer};
use crate::train::accounting::{Accounting, Expression};
use crate::train::evaluate::model_accuracy;
use crate::train::fit::{drive, ensure_finite, Batching, Evaluation, Labels, Schedule, Selection, Ties, Trainee};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Reduction, Tensor};

/// The thesis's unit sampling rates: Faces94 class-DP q = 0.33, MNIST subclass-DP q = 0.2 (l.843, l.894).
const CLASS_RATE: f64 = 0.33;
const SUBCLASS_RATE: f64 = 0.2;
const DEFAULT_SUBCLASSES: usize = 10;

/// The unit a method protects, None for other methods.
pub fn group_unit(method: Method) -> Option<GroupUnit> {
    match method {
        Method::ClassDpMlp => Some(GroupUnit::Class),
        Method::SubclassDpMlp => Some(GroupUnit::Subclass),
        _ => None,
    }
}

/// The class/subclass-DP knobs (the recipe's knob map; class-dp-mlp reads all but `subclasses`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ClassDpKnobs {
    /// Poisson sampling rate q per unit (default: the thesis's, 0.33 for classes (Faces94), 0.2
    /// for subclasses (MNIST)).
    pub unit_rate: Option<f64>,
    /// Subclass-DP: k-means subclasses per class.
    pub subclasses: usize,
    /// Neighbouring relation: unbounded (add/remove a unit) or bounded (replace one).
    pub relation: Relation,
    /// Run although delta >= 1/(number of units), with a loud warning.
    pub allow_large_delta: bool,
    /// Layers of the MLP (default 2; class-dp-mlp 1, the thesis's softmax regression).
    pub mlp_layers: usize,
}

impl Default for ClassDpKnobs {
    fn default() -> Self {
        ClassDpKnobs {
            unit_rate: None,
            subclasses: DEFAULT_SUBCLASSES,
            relation: Relation::default(),
            allow_large_delta: false,
            mlp_layers: 2,
        }
    }
}

impl crate::methods::knobs::Knobs for ClassDpKnobs {
    fn check(&self) -> Result<()> {
        if let Some(q) = self.unit_rate {
            ensure!(
                q > 0.0 && q <= 1.0,
                Error::invalid("unit_rate", format!("the per-unit sampling rate must be in (0, 1], got {q}"))
            );
        }
        ensure!(
            self.subclasses >= 1,
            Error::invalid("subclasses", "at least 1 subclass per class (1 = class-level DP)")
        );
        super::mlp::check_depth(self.mlp_layers)
    }
}

/// q, the per-unit Poisson sampling rate.
pub fn sample_rate(r: &Recipe) -> Result<f64> {
    let k: ClassDpKnobs = r.own()?;
    Ok(k.unit_rate.unwrap_or(if r.method == Method::SubclassDpMlp { SUBCLASS_RATE } else { CLASS_RATE }))
}

/// T = epochs x floor(1/q) steps.
pub fn steps(r: &Recipe) -> Result<u64> {
    Ok((r.epochs() * ((1.0 / sample_rate(r)?).floor() as usize).max(1)) as u64)
}

/// Checks what the class-DP methods refuse beyond their knobs' ranges.
pub fn validate(r: &Recipe) -> Result<()> {
    group_unit(r.method).ok_or_else(|| Error::invalid("method", "not a class/subclass-DP method"))?;
    ensure!(
        r.train.batch_norm != Some(true),
        Error::invalid("batch_norm", "batch statistics mix units, which breaks per-unit gradient isolation")
    );
    ensure!(
        r.train.batch_size.is_none(),
        Error::invalid("batch_size", "Algorithm 5 samples whole units (set unit_rate), not batches of records")
    );
    Ok(())
}

/// The units over the training nodes: node ids per unit. Class: one unit per class (all classes,
/// so U = C is public). Subclass: k-means with `r.subclasses` clusters within each class over the
/// training nodes outside `fixed`, then each `fixed` unit as one unit (its training nodes; it
/// still counts in U when none of them is trained on, so that U does not depend on the data).
pub fn units(r: &Recipe, data: &Dataset, fixed: &[Vec<usize>], seed: u64) -> Result<Vec<Vec<i64>>> {
    let unit = group_unit(r.method).ok_or_else(|| Error::invalid("method", "not a class/subclass-DP method"))?;
    let k_sub = r.own::<ClassDpKnobs>()?.subclasses;
    let train = &data.split()?.train;
    let mut in_train = vec![false; data.num_nodes()];
    for &v in train {
        in_train[v] = true;
    }
    if unit == GroupUnit::Class {
        let mut by_class = vec![Vec::new(); data.num_classes];
        for &v in train {
            by_class[data.labels[v]].push(v as i64);
        }
        return Ok(by_class);
    }
    let mut fixed_node = vec![false; data.num_nodes()];
    for &v in fixed.iter().flatten() {
        ensure!(v < data.num_nodes(), Error::invalid("units", format!("node {v} is not in the graph")));
        fixed_node[v] = true;
    }
    let x = data.features.to_tensor().to_kind(Kind::Float);
    let mut out = Vec::new();
    for c in 0..data.num_classes {
        let members: Vec<i64> =
            train.iter().filter(|&&v| data.labels[v] == c && !fixed_node[v]).map(|&v| v as i64).collect();
        if members.is_empty() {
            continue;
        }
        let rows = x.index_select(0, &crate::device::place(Tensor::from_slice(&members)));
        let assign = kmeans(&rows, k_sub, seed.wrapping_mul(31).wrapping_add(c as u64));
        let k = assign.iter().max().map_or(0, |m| m + 1);
        let mut parts = vec![Vec::new(); k];
        for (v, a) in members.iter().zip(assign) {
            parts[a].push(*v);
        }
        out.extend(parts);
    }
    for f in fixed {
        out.push(f.iter().filter(|&&v| in_train[v]).map(|&v| v as i64).collect());
    }
    Ok(out)
}

/// [`check_unit_delta`] for `account` (class or subclass units).
pub fn check_delta(class: bool, delta: f64, units: usize, allow: bool) -> Result<Option<String>> {
    check_unit_delta(delta, units, if class { GroupUnit::Class } else { GroupUnit::Subclass }, allow)
}

/// The method's privacy expression at the unit level (shared by training and `account`).
pub fn expression(unit: GroupUnit, relation: Relation, sample_rate: f64, steps: u64) -> Expression {
    Expression {
        unit: match unit {
            GroupUnit::Class => PrivacyUnit::Class,
            GroupUnit::Subclass => PrivacyUnit::Subclass,
        },
        event: Box::new(move |s| class_dp_sgd(unit, relation, sample_rate, steps, s)),
    }
}

/// Algorithm 5 lines 4-9 before the noise: each chosen unit's mean gradient over all its records
/// (each record weighted 1/|unit|), clipped to `clip` as one vector, summed over the units; also
/// the units' norms before clipping. Training and the sensitivity replay (`replay::unit_dp`) share it.
pub fn unit_clipped_sum(net: &MlpClassifier, y: &Tensor, chosen: &[&[i64]], clip: f64) -> Result<(Grads, Tensor)> {
    let idx = crate::device::place(Tensor::from_slice(&chosen.concat()));
    let rows: Vec<i64> = chosen.iter().map(|v| v.len() as i64).collect();
    let w: Vec<f64> = chosen.iter().flat_map(|v| std::iter::repeat_n(1.0 / v.len() as f64, v.len())).collect();
    let mut f = Fwd::train_taped();
    let logits = net.logits(&idx, &mut f);
    let nll = crate::models::log_softmax_rows(&logits).g_nll_loss::<Tensor>(
        &y.index_select(0, &idx),
        None,
        Reduction::None,
        -100,
    );
    let loss = (&nll * Tensor::from_slice(&w).to_kind(nll.kind())).sum(nll.kind());
    let tape = f.tape.take().expect("taped forward");
    tape.unit_clipped_sum(&loss, &rows, clip)
}

/// Algorithm 5's step: privacy units (classes or subclasses) Poisson-sampled at rate q from the
/// run's own stream, per-unit clipped gradient sums (each node weighted 1/|unit|), Gaussian noise.
struct UnitTrainee<'a> {
    net: &'a MlpClassifier,
    ps: &'a crate::models::ParamStore,
    params: Vec<(usize, Tensor)>,
    labels: &'a Labels,
    units: &'a [Vec<i64>],
    q: f64,
    dp: DpSgd,
    opt: Optimizer,
    rng: ChaCha8Rng,
    recipe: &'a Recipe,
}

impl Trainee for UnitTrainee<'_> {
    /// Draws its own batch of units (see [`Batching::TraineeDrawn`]).
    fn step(&mut self, _train: &Tensor) -> Result<()> {
        let q = self.q;
        let chosen: Vec<&Vec<i64>> =
            self.units.iter().filter(|_| self.rng.gen_bool(q)).filter(|v| !v.is_empty()).collect();
        let grads = if chosen.is_empty() {
            self.dp.noisy_mean(Vec::new(), &self.params)
        } else {
            let chosen: Vec<&[i64]> = chosen.iter().map(|v| v.as_slice()).collect();
            let (summed, _) = unit_clipped_sum(self.net, &self.labels.y, &chosen, self.recipe.dp.max_grad_norm)?;
            self.dp.noisy_mean(summed, &self.params)
        };
        self.opt.step(&self.ps.params, &grads);
        Ok(())
    }
    fn check(&self, epoch: usize) -> Result<()> {
        ensure_finite(self.ps, &self.params, epoch, self.recipe.train.lr, &self.opt)
    }
    fn evaluate(&self) -> Evaluation {
        Evaluation::accuracy(model_accuracy(self.net, &self.labels.y, &self.labels.val))
    }
    fn variables(&self) -> &tch::nn::VarStore {
        &self.ps.vs
    }
}

/// Sigma and the budget of a run over `u` units (training and `account budget` share it).
fn spend(r: &Recipe, data: &Dataset, u: usize, acct: &Accounting) -> Result<(f64, Budget)> {
    let unit = group_unit(r.method).ok_or_else(|| Error::invalid("method", "not a class/subclass-DP method"))?;
    let (q, t) = (sample_rate(r)?, steps(r)?);
    let delta = r.delta.unwrap_or_else(|| default_delta(data.num_nodes()));
    let k: ClassDpKnobs = r.own()?;
    let warning = check_unit_delta(delta, u, unit, k.allow_large_delta)?;
    let (sigma, mut budget) = match r.epsilon {
        Some(eps) => {
            let expr = expression(unit, k.relation, q, t);
            acct.calibrate(&expr, crate::privacy::accountant::Accountant::Rdp, eps, delta)
                .map_err(|e| accountant_failure(r, delta, e))?
        }
        None => (0.0, Budget::non_private()),
    };
    budget.noise.extend([("units".to_string(), u as f64), ("unit_rate".into(), q), ("steps".into(), t as f64)]);
    if sigma > 0.0 {
        budget.noise.push(("paper_epsilon".into(), theorem5_epsilon(k.relation, q, t, sigma, delta)));
    }
    if warning.is_some() {
        budget.noise.push(("delta_times_units".into(), delta * u as f64));
    }
    Ok((sigma, budget))
}

/// Trains `class-dp-mlp` / `subclass-dp-mlp` (the train dispatch arm).
pub fn train_recipe(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<TrainedRun> {
    train_units_by(r, data, &[], seed, acct)
}

/// Trains with `fixed` node groups as extra subclass units (the subclass canary game: each canary
/// subclass is one unit whatever k-means would make of it).
pub fn train_with_units(r: &Recipe, data: &Dataset, fixed: &[Vec<usize>], seed: u64) -> Result<TrainedRun> {
    train_units_by(r, data, fixed, seed, &Accounting::default())
}

/// [`train_with_units`] with the caller's accounting.
pub fn train_units_by(
    r: &Recipe,
    data: &Dataset,
    fixed: &[Vec<usize>],
    seed: u64,
    acct: &Accounting,
) -> Result<TrainedRun> {
    let (model, _, budget) = fit(r, data, fixed, seed, acct)?;
    let acc = Labels::from_dataset(data)?.model_accuracy(&model.net);
    Ok(TrainedRun { model: Box::new(model), accuracy: acc, budget, seconds: 0.0 })
}

/// Runs Algorithm 5 and returns the model, the units it sampled (node ids per unit, in the order
/// their Poisson coins were drawn) and the budget.
pub fn fit(
    r: &Recipe,
    data: &Dataset,
    fixed: &[Vec<usize>],
    seed: u64,
    acct: &Accounting,
) -> Result<(MlpModel, Vec<Vec<i64>>, Budget)> {
    group_unit(r.method).ok_or_else(|| Error::invalid("method", "not a class/subclass-DP method"))?;
    tch::manual_seed(seed as i64);
    let labels = Labels::from_dataset(data)?;
    let units = units(r, data, fixed, seed)?;
    let u = units.len();
    let (q, t) = (sample_rate(r)?, steps(r)?);
    let (sigma, budget) = spend(r, data, u, acct)?;
    let mut ps = crate::models::ParamStore::new();
    let x = crate::models::Rows::of_features(&data.features);
    let style = MlpStyle { activation: r.train.activation, dropout: r.train.dropout, norm: r.norm() };
    let layers = r.own::<ClassDpKnobs>()?.mlp_layers;
    let net = MlpClassifier::new(&mut ps, x, r.train.hidden as i64, data.num_classes as i64, layers, style);
    let ids = net.trainable();
    let params: Vec<(usize, Tensor)> = ids.iter().map(|&i| (i, ps.params[i].shallow_clone())).collect();
    let dp = DpSgd {
        noise_multiplier: sigma,
        max_grad_norm: r.dp.max_grad_norm,
        expected_batch_size: q * u as f64,
        sample_rate: q,
        flaw: Default::default(),
    };
    let opt = Optimizer::new(r.train.optimizer, r.train.lr, r.train.weight_decay);
    let rng = ChaCha8Rng::seed_from_u64(seed ^ 0xC1A55);
    let per_epoch = (t as usize / r.epochs()).max(1);
    net.cache_rows(&labels.val);
    let mut trainee =
        UnitTrainee { net: &net, ps: &ps, params, labels: &labels, units: &units, q, dp, opt, rng, recipe: r };
    let schedule = Schedule {
        epochs: r.epochs(),
        batching: Batching::TraineeDrawn { steps_per_epoch: per_epoch },
        selection: if r.train.select_best_val {
            Selection::BestValAcc { ties: Ties::Earliest }
        } else {
            Selection::Last
        },
        early_stop: None,
    };
    drive(&mut trainee, &labels.train, &schedule)?;
    Ok((MlpModel { ps, net }, units, budget))
}

// ---------------------------------------------------------------- registry entries

use crate::methods::checkpoint::{Cache, Meta};
use crate::methods::decoupled::StoreLoader;
use crate::methods::spec::{MethodSpec, Reads, Shared};
use crate::methods::TrainedModel;

/// The budget over the units k-means forms (their number only enters the delta check).
fn class_dp_budget(r: &Recipe, data: &Dataset, seed: u64, acct: &Accounting) -> Result<Budget> {
    let u = units(r, data, &[], seed)?.len();
    spend(r, data, u, acct).map(|s| s.1)
}

/// Full-batch epochs of Poisson-sampled units: no batch size, and no degree bound or group norm.
const READS: Reads = Reads::TRAINING_LOOP.without(&[Shared::BatchSize]).with(&[Shared::MaxGradNorm]);

/// A saved class/subclass-DP MLP, as deep as its knobs say.
fn load(meta: &Meta, cache: &Cache, load: StoreLoader) -> Result<Box<dyn TrainedModel>> {
    super::mlp::load_mlp_of_depth(meta, cache, load, meta.recipe.own::<ClassDpKnobs>()?.mlp_layers)
}

/// The thesis's class-DP model (Faces94, l.894): softmax regression, one linear layer. Algorithm 5
/// over K units has a whole-run signal-to-noise ratio of about mu K / sqrt(parameters), where
/// mu = q sqrt(T) / sigma is what the budget allows (1.7 at eps 8, delta 1e-4, q 0.33, T 300): with
/// K = 7 classes on cora's 1433 features no model leaves chance at eps 8 (seeds 1-6: 11-23% test
/// accuracy, mean 16% vs 1/7); measured at q 0.33, 100 epochs, seeds 1-3, the 2-layer MLP (23k
/// weights) gives 17-25% / 25-29% / 31-37% at eps 100 / 300 / 1000, the linear model (10k)
/// 23-32% / 33-39% / 46-50% (non-private 73-76%).
fn class_defaults(r: &mut Recipe) {
    r.knobs.set("mlp_layers", 1);
}

pub const CLASS_DP_MLP: MethodSpec = MethodSpec {
    replay: crate::methods::spec::Replay::Releases(crate::methods::spec::ReplayFamily::UnitDp),
    batch_norm: false,
    // The same MLP trained without clipping or noise.
    control: Some(Method::Mlp),
    defaults: class_defaults,
    reads: READS,
    own_knobs: Some(crate::methods::knobs::own_some::<ClassDpKnobs>(&[
        "unit_rate",
        "relation",
        "allow_large_delta",
        "mlp_layers",
    ])),
    check: validate,
    load: Some(load),
    ..MethodSpec::new(
        "class-dp-mlp",
        "Class-level DP-SGD (Zhang thesis ch.4 Algorithm 5) on an MLP: classes Poisson-sampled at \
            --unit-rate, each class's mean gradient clipped, Gaussian noise; --epsilon is per class",
        PrivacyUnit::Class,
        train_recipe,
        class_dp_budget,
    )
};
pub const SUBCLASS_DP_MLP: MethodSpec = MethodSpec {
    name: "subclass-dp-mlp",
    about: "Subclass-level DP-SGD: Algorithm 5 over --subclasses k-means clusters per class; --epsilon is per \
            subclass",
    unit: PrivacyUnit::Subclass,
    own_knobs: Some(crate::methods::knobs::own::<ClassDpKnobs>()),
    // The MNIST subclass-DP model is a CNN (l.843): the 2-layer MLP of dp-mlp stands in.
    defaults: crate::methods::spec::no_defaults,
    ..CLASS_DP_MLP
};
