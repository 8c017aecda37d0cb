//! What the decoupled family (MLP, GAP and ProGAP, in [`super::mlp`], [`super::gap`] and
//! [`super::progap`]) shares: the calibration of every member's noise from (epsilon, delta)
//! through its privacy expression in [`crate::train::accounting`], the fit configuration, the
//! graph a run aggregated over and the registry entry's common fields.
use super::checkpoint::Loader;
use super::method::Method;
use super::recipe::Recipe;
use super::spec::{MethodSpec, Reads, Shared};
use super::TrainedRun;
use crate::data::{bound_degree, Dataset, DegreeBound, Graph};
use crate::error::Result;
use crate::models::aggregation::aggregation_operator;
use crate::models::MlpStyle;
use crate::privacy::accountant::{methods, Budget, PrivacyUnit};
use crate::privacy::dpsgd::{steps_per_epoch, DpSgd, PlantedFlaw};
use crate::train::accounting::{self, Accounting, Expression, SgdSchedule};
use crate::train::fit::{Batching, FitConfig, Selection, Ties};
use gnnaudit_attacks::Result as AttackResult;
use tch::{Kind, Tensor};

/// What the privacy calibration decided for one run.
pub struct Privacy {
    /// Noise multiplier sigma (0 = no noise).
    pub sigma: f64,
    pub budget: Budget,
}

pub fn style(r: &Recipe) -> MlpStyle {
    MlpStyle { activation: r.train.activation, dropout: r.train.dropout, norm: r.norm() }
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
/// dry run does not pay twice. `releases` is GAP's hops or ProGAP's depth (unread by the MLPs).
pub fn privacy(r: &Recipe, data: &Dataset, acct: &Accounting, releases: usize) -> Result<Privacy> {
    let n_train = data.split()?.train.len();
    let sgd = || schedule(r, n_train);
    let expr = match r.method {
        Method::Mlp => return Ok(Privacy { sigma: 0.0, budget: edge_free_budget()? }),
        // The planted DP-SGD bugs claim DP-MLP's epsilon.
        Method::DpMlp | Method::DemoDpMlpNoiseOnMean | Method::DemoDpMlpBiasUnclipped | Method::DemoDpMlpShuffled => {
            accounting::dp_sgd(sgd())
        }
        Method::GapNdp => accounting::gap_node(releases, r.dp.max_degree, sgd(), sgd()),
        // The planted bugs claim GAP-EDP's epsilon; their noise is for a wrong sensitivity.
        Method::GapEdp | Method::DemoGapEdpPlantedBug | Method::DemoGapEdpNoiseOff => accounting::gap_edge(releases),
        Method::ProgapNdp => accounting::progap_node(releases, r.dp.max_degree, sgd()),
        Method::ProgapEdp => accounting::progap_edge(releases),
        _ => return Ok(Privacy { sigma: 0.0, budget: Budget::non_private() }),
    };
    calibrate(r, data, acct, expr)
}

/// [`privacy`]'s budget for the MLPs (the registry's `budget`; GAP and ProGAP give theirs).
pub fn budget(r: &Recipe, data: &Dataset, _seed: u64, acct: &Accounting) -> Result<Budget> {
    privacy(r, data, acct, 0).map(|p| p.budget)
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
        Method::DemoDpMlpShuffled => PlantedFlaw::ShuffledAsPoisson,
        _ => PlantedFlaw::None,
    }
}

/// The fit configuration (and DP-SGD clipping bound C) a method's training uses.
pub fn fit_config(r: &Recipe, n_train: usize, sigma: f64) -> FitConfig {
    let private = r.method.is_node_level() && r.epsilon.is_some();
    let batching = match r.batch_size() {
        None => Batching::Full,
        Some(b) if private && planted_flaw(r.method) == PlantedFlaw::ShuffledAsPoisson => {
            let b = b.min(n_train);
            Batching::ShuffledDropLast { size: b, steps_per_epoch: steps_per_epoch(n_train, b) }
        }
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
            max_grad_norm: r.dp.max_grad_norm,
            expected_batch_size: b as f64,
            sample_rate: b as f64 / n_train as f64,
            flaw: planted_flaw(r.method),
        }
    });
    FitConfig {
        epochs: r.epochs(),
        batching,
        dp,
        optimizer: r.train.optimizer,
        lr: r.train.lr,
        weight_decay: r.train.weight_decay,
        selection: if r.train.select_best_val {
            Selection::BestValAcc { ties: Ties::Earliest }
        } else {
            Selection::Last
        },
    }
}

/// The graph a GAP/ProGAP model trained on `data` with `seed` aggregated over: the degree-bounded
/// one at node level (the same draw as in training), the graph itself otherwise.
pub fn training_graph(data: &Dataset, max_degree: Option<usize>, seed: u64) -> Result<Graph> {
    match max_degree {
        Some(d) => bound_degree(&data.graph, DegreeBound::Out, d, seed),
        None => Ok(data.graph.clone()),
    }
}

pub fn features(data: &Dataset) -> Tensor {
    data.features.to_tensor().to_kind(Kind::Float)
}

/// The MLP uses no edge: at edge level no mechanism runs, epsilon 0 at delta 0.
fn edge_free_budget() -> Result<Budget> {
    crate::privacy::accountant::pure_budget(&methods::no_mechanism(), PrivacyUnit::Edge, vec![])
}

/// The loader a checkpoint hands a family's `load`: fills a fresh store with the saved weights.
pub type StoreLoader<'a> = &'a dyn Fn(&mut tch::nn::VarStore) -> Result<()>;

/// The training graph's operator of a GAP/ProGAP white box, or why a checkpoint has none.
pub fn training_graph_operator(graph: Option<&crate::data::Graph>, what: &str) -> AttackResult<Tensor> {
    graph.map(|g| g.aggregation_tensor()).ok_or_else(|| {
        gnnaudit_attacks::Error::Unsupported(format!(
            "this {what} checkpoint does not hold its training graph; attach the dataset first"
        ))
    })
}

/// The aggregation operator of an auditor's crafted graph (the in-pipeline canary audit).
pub fn crafted_operator(n: usize, edges: &[(usize, usize)]) -> AttackResult<Tensor> {
    let g = Graph::from_edges(n, edges.iter().copied())
        .map_err(|e| gnnaudit_attacks::Error::Invalid { field: "canaries".into(), message: e.to_string() })?;
    Ok(aggregation_operator(&g))
}

/// What the family's members read: the training loop, then what their privacy adds.
pub const NON_PRIVATE: Reads = Reads::TRAINING_LOOP;
/// Edge level: noise calibrated by the chosen accountant.
pub const EDGE_DP: Reads = Reads::TRAINING_LOOP.with(&[Shared::Accountant]);
/// Node level: DP-SGD's degree bound, clip and group norm besides.
pub const NODE_DP: Reads = EDGE_DP.and(Reads::NODE_DP_SGD);

/// A method of the decoupled family; the fields that differ are given.
pub const fn entry(
    name: &'static str,
    about: &'static str,
    unit: PrivacyUnit,
    takes_epsilon: bool,
    reads: Reads,
    train: fn(&Recipe, &Dataset, u64, &Accounting) -> Result<TrainedRun>,
    load: Loader,
) -> MethodSpec {
    let node = matches!(unit, PrivacyUnit::Node);
    MethodSpec {
        takes_epsilon,
        epochs: if node { 10 } else { 100 },
        reads,
        load: Some(load),
        ..MethodSpec::new(name, about, unit, train, budget)
    }
}
