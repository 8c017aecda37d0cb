//! `graph-pate`: PATE for node classification under node-level DP (Zhang thesis ch.3 adapted from images to graphs;
//! Papernot et al. 2018).
//!
//! Layout of one run on a dataset with a train/val/test split:
//! - private nodes = the train nodes. Each goes to one of n_t teachers by a keyed hash of its id
//!   (not by a graph partitioner: with a graph-grown partition such as `data::partition`,
//!   removing one node reshuffles the parts of others, and one unit would reach many teachers).
//!   Every edge between two teachers' parts, and every edge to a public node, is dropped; teacher
//!   t is a GNN trained on the subgraph induced by its part.
//! - public nodes = all the others, with only the edges among them (the public graph). The
//!   validation nodes are the query pool (the first `queries` of a seeded shuffle, default 200);
//!   the test nodes are what the student is scored on. Public labels are never read in training.
//! - teachers vote on the queries (inference on the public graph); Confident-GNMax labels them.
//! - the student (`student::StudentKind`) trains on the public graph and is the released model.
//!
//! The unit. Node-level DP removes a node with its features, label and edges. After the cross
//! edges are dropped, a private node's edges touch its own part only: it changes one teacher's
//! training graph and nothing else, so each teacher-vote histogram moves by one vote (L2
//! sqrt 2) and its top count by 1, which is the PATE sensitivity the accountant uses
//! (`privacy::accountant::pate`). Edges of private nodes to public ones are dropped too, so a
//! public node's features and neighbourhood never depend on a private node.
//!
//! Deployment: posteriors for every node come from the student with every node isolated (its
//! own features only). Keeping the public edges would isolate exactly the private nodes and so
//! publish who is private: an MIA on Cora (eps 8, a chance-level student) read membership off
//! that (AUC 80.8). Without edges a node's answer depends on its own features and the DP
//! student only, never on private edges or on the split.
pub mod aggregator;
pub mod student;

pub use student::StudentKind;

use crate::data::{Dataset, Graph, Split};
use crate::error::{Error, Result};
use crate::methods::backbone::{self, BaselineSpec, FullBatchModel, GnnKind, Network, TwoLayerGnn};
use crate::methods::{Accuracy, Recipe, TrainedModel, TrainedRun};
use crate::privacy::accountant::{pate as acc, Budget, PrivacyUnit};
use crate::train::fit::FitConfig;
use aggregator::{vote_counts, ConfidentGnmax};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use student::StudentConfig;
use tch::{nn, Kind, Tensor};

/// Graph PATE's defaults (the thesis's image settings where they carry over: beta 0.2, alpha 0.9, tau 0.4 (SVHN)).
/// Teachers, queries, T and sigma1 / sigma2 are the best sound setting of the sweep
/// (scripts/sweep-dpar-pate.sh, node-level eps 8, chosen on validation accuracy, on cora and
/// facebook100-Cornell5 alike): 100 teachers, 200 queries, T = 0.3, sigma1 = sigma2 reach 41.4%
/// on cora (majority class 32.8%) and 37.5% on Cornell5 (17.6%), where the former defaults (10
/// teachers, every validation node queried, T = 0.6, ratio 2) stayed at the majority class on
/// Cornell5 (18.1%): 10 teachers' margins cannot outvote the noise that ~1,500 answers need.
pub const DEFAULT_TEACHERS: usize = 100;
/// Queries when `queries` is unset: this many, or every validation node if there are fewer.
pub const DEFAULT_QUERIES: usize = 200;
/// T as a share of the teachers (Papernot et al.'s MNIST run: T = 200 of 250 teachers = 0.8).
pub const DEFAULT_VOTE_THRESHOLD: f64 = 0.3;
/// sigma1 / sigma2 (Papernot et al.'s MNIST run: 150 / 40).
pub const DEFAULT_CHECK_NOISE_RATIO: f64 = 1.0;
pub const DEFAULT_NOISE_RATE: f64 = 0.2;
pub const DEFAULT_REMOVAL_RATIO: f64 = 0.4;
pub const DEFAULT_COUNT_DECAY: f64 = 0.9;

/// graph-pate's own knobs (the recipe's knob map; defaults here).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PateKnobs {
    /// The teachers' and the student's GNN: gcn or sage.
    pub backbone: GnnKind,
    /// Teachers, each on a disjoint hashed part of the private nodes.
    pub teachers: usize,
    /// Public nodes queried (default: 200, or every validation node if fewer).
    pub queries: Option<usize>,
    /// Consensus threshold T as a share of the teachers, in (0, 1].
    pub vote_threshold: f64,
    /// sigma1 / sigma2 of Confident-GNMax (sigma2 comes from --epsilon).
    pub check_noise_ratio: f64,
    /// The student: plain, coteach, coteach-plus (PATE+) or cleanse (PATE++).
    pub student: StudentKind,
    /// Co-teaching: estimated label-noise rate beta.
    pub noise_rate: f64,
    /// Cleanse: share tau of labelled nodes removed.
    pub removal_ratio: f64,
    /// Cleanse: count-table decay alpha.
    pub count_decay: f64,
}

impl Default for PateKnobs {
    fn default() -> Self {
        PateKnobs {
            backbone: GnnKind::Sage,
            teachers: DEFAULT_TEACHERS,
            queries: None,
            vote_threshold: DEFAULT_VOTE_THRESHOLD,
            check_noise_ratio: DEFAULT_CHECK_NOISE_RATIO,
            student: StudentKind::default(),
            noise_rate: DEFAULT_NOISE_RATE,
            removal_ratio: DEFAULT_REMOVAL_RATIO,
            count_decay: DEFAULT_COUNT_DECAY,
        }
    }
}

impl crate::methods::knobs::Knobs for PateKnobs {}

/// One run's settings, read from a recipe.
#[derive(Debug, Clone)]
pub struct PateConfig {
    pub epsilon: Option<f64>,
    pub delta: Option<f64>,
    pub teachers: usize,
    pub queries: Option<usize>,
    pub vote_threshold: f64,
    pub check_noise_ratio: f64,
    pub teacher_fit: FitConfig,
    pub student: StudentConfig,
}

/// The recipe fields graph-pate reads.
pub fn config(r: &Recipe) -> Result<PateConfig> {
    let k: PateKnobs = r.own()?;
    Ok(PateConfig {
        epsilon: r.epsilon,
        delta: r.delta,
        teachers: k.teachers,
        queries: k.queries,
        vote_threshold: k.vote_threshold,
        check_noise_ratio: k.check_noise_ratio,
        teacher_fit: backbone::baseline_fit(r.epochs(), r.train.lr, r.train.weight_decay),
        student: StudentConfig {
            kind: k.student,
            backbone: k.backbone,
            hidden: r.train.hidden as i64,
            dropout: r.train.dropout,
            learning_rate: r.train.lr,
            weight_decay: r.train.weight_decay,
            epochs: r.epochs(),
            noise_rate: k.noise_rate,
            removal_ratio: k.removal_ratio,
            count_decay: k.count_decay,
        },
    })
}

/// graph-pate's knobs are in range and used by the chosen student (the registry refuses knobs
/// graph-pate never reads).
pub fn check_recipe(r: &Recipe) -> Result<()> {
    let c = config(r)?;
    crate::ensure!(
        c.teachers >= 2,
        Error::invalid("teachers", format!("PATE needs at least 2 teachers to vote, got {}", c.teachers))
    );
    crate::ensure!(c.queries != Some(0), Error::invalid("queries", "the public query set is empty (0 queries)"));
    crate::ensure!(
        c.vote_threshold > 0.0 && c.vote_threshold <= 1.0,
        Error::invalid("vote_threshold", format!("a share of the teachers in (0, 1], got {}", c.vote_threshold))
    );
    crate::ensure!(
        c.check_noise_ratio > 0.0 && c.check_noise_ratio.is_finite(),
        Error::invalid("check_noise_ratio", format!("sigma1 / sigma2 must be > 0, got {}", c.check_noise_ratio))
    );
    let s = &c.student;
    crate::ensure!(
        (0.0..1.0).contains(&s.noise_rate),
        Error::invalid("noise_rate", format!("beta must be in [0, 1), got {}", s.noise_rate))
    );
    crate::ensure!(
        (0.0..1.0).contains(&s.removal_ratio),
        Error::invalid("removal_ratio", format!("tau must be in [0, 1), got {}", s.removal_ratio))
    );
    crate::ensure!(
        s.count_decay > 0.0 && s.count_decay <= 1.0,
        Error::invalid("count_decay", format!("alpha must be in (0, 1], got {}", s.count_decay))
    );
    let kind = s.kind;
    let co = kind != StudentKind::Plain;
    let set = |k: &str| r.knobs.contains(k);
    let used_by = [
        ("noise_rate", set("noise_rate") && !co, "the co-teaching students"),
        ("removal_ratio", set("removal_ratio") && kind != StudentKind::Cleanse, "student cleanse"),
        ("count_decay", set("count_decay") && kind != StudentKind::Cleanse, "student cleanse"),
        ("check_noise_ratio", set("check_noise_ratio") && r.epsilon.is_none(), "a private run (--epsilon)"),
    ];
    if let Some((name, _, who)) = used_by.iter().find(|(_, bad, _)| *bad) {
        return Err(Error::invalid(*name, format!("only {who} use(s) it")));
    }
    crate::ensure!(
        s.backbone != GnnKind::Gat,
        Error::invalid("backbone", "graph-pate's teachers and student are gcn or sage")
    );
    Ok(())
}

/// The teacher of private node `v`: a keyed hash of its id (splitmix64), so that one node's
/// presence never moves another node between teachers.
pub fn teacher_of(v: usize, teachers: usize, seed: u64) -> usize {
    let mut z = seed ^ (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % teachers as u64) as usize
}

/// What the labelling did, for the budget breakdown and the report.
#[derive(Debug, Clone, PartialEq)]
pub struct LabellingReport {
    pub queries: usize,
    pub answered: usize,
    /// Share of answered queries whose label is the true one (measured, never used in training).
    pub label_accuracy: f64,
    pub sigma1: f64,
    pub sigma2: f64,
    pub threshold: f64,
}

/// Sigma1, sigma2, the budget and delta of `m` Confident-GNMax queries on a graph of `n` nodes:
/// sigma2 calibrated to (epsilon, delta) on the sound event (every query charged), sigma1 = ratio
/// sigma2. Training and `account budget` share it.
fn calibrate(
    c: &PateConfig,
    n: usize,
    m: usize,
    acct: &crate::train::accounting::Accounting,
) -> Result<(f64, f64, Budget, f64)> {
    let delta = c.delta.unwrap_or_else(|| crate::privacy::accountant::default_delta(n));
    let (sigma1, sigma2, budget) = match c.epsilon {
        Some(eps) => {
            let (ratio, mq) = (c.check_noise_ratio, m as u64);
            let expr = crate::train::accounting::Expression {
                unit: PrivacyUnit::Node,
                event: Box::new(move |s| acc::confident_gnmax_event(mq, ratio * s, s)),
            };
            let (s2, b) = acct.calibrate(&expr, crate::privacy::accountant::Accountant::Rdp, eps, delta)?;
            (ratio * s2, s2, b)
        }
        None => (0.0, 0.0, Budget::non_private()),
    };
    Ok((sigma1, sigma2, budget, delta))
}

/// Trains graph-pate on `data` (with a split), deterministically given `seed`.
pub fn train(
    data: &Dataset,
    c: &PateConfig,
    seed: u64,
    acct: &crate::train::accounting::Accounting,
) -> Result<(FullBatchModel, Accuracy, Budget, LabellingReport)> {
    let split = data.split()?;
    let n = data.num_nodes();
    let mut private = vec![false; n];
    split.train.iter().for_each(|&v| private[v] = true);
    // Teachers: hashed parts of the private nodes, each on its induced subgraph.
    let mut parts: Vec<Vec<usize>> = vec![vec![]; c.teachers];
    for &v in &split.train {
        parts[teacher_of(v, c.teachers, seed)].push(v);
    }
    if let Some(t) = parts.iter().position(Vec::is_empty) {
        return Err(Error::invalid(
            "teachers",
            format!(
                "teacher {t} of {} got no private node ({} train nodes): use fewer teachers",
                c.teachers,
                split.train.len()
            ),
        ));
    }
    let public_nodes: Vec<usize> = (0..n).filter(|&v| !private[v]).collect();
    let public = crate::data::transforms::induced_subgraph(data, &public_nodes)?;
    let pub_split = public.split()?.clone();
    let mut pool = pub_split.val.clone();
    crate::ensure!(!pool.is_empty(), Error::invalid("queries", "the public query set (validation nodes) is empty"));
    pool.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x9a7e));
    let m = match c.queries {
        Some(k) if k > pool.len() => {
            return Err(Error::invalid("queries", format!("{k} queries asked, the public pool has {}", pool.len())))
        }
        Some(k) => k,
        None => DEFAULT_QUERIES.min(pool.len()),
    };
    let mut queries = pool[..m].to_vec();
    queries.sort_unstable();

    let spec =
        BaselineSpec::TwoLayer { kind: c.student.backbone, hidden: c.student.hidden, dropout: c.student.dropout };
    let mut predictions = Vec::with_capacity(c.teachers);
    for (t, part) in parts.iter().enumerate() {
        let mut sub = crate::data::transforms::induced_subgraph(data, part)?;
        sub.split = Some(Split { train: (0..part.len()).collect(), val: vec![], test: vec![] });
        let (teacher, _) = backbone::train_baseline(&sub, &spec, &c.teacher_fit, seed.wrapping_add(1 + t as u64))?;
        let post = teacher.posteriors_on(&public)?;
        let pred = Vec::<i64>::try_from(post.argmax(-1, false).to_device(tch::Device::Cpu))?;
        predictions.push(queries.iter().map(|&q| pred[q] as usize).collect::<Vec<_>>());
    }
    let counts = vote_counts(&predictions, data.num_classes);

    // Noise and budget: sigma2 calibrated to (epsilon, delta) on the sound event, sigma1 = ratio sigma2.
    let threshold = c.vote_threshold * c.teachers as f64;
    let (sigma1, sigma2, mut budget, delta) = calibrate(c, n, m, acct)?;
    let agg = ConfidentGnmax { threshold, sigma1, sigma2 };
    let answers = agg.label(&counts, seed ^ 0x6e6d);
    let answered = answers.iter().filter(|a| a.is_some()).count();
    let correct = queries.iter().zip(&answers).filter(|(&q, a)| **a == Some(public.labels[q])).count();
    let report = LabellingReport {
        queries: m,
        answered,
        label_accuracy: if answered == 0 { 0.0 } else { correct as f64 / answered as f64 },
        sigma1,
        sigma2,
        threshold,
    };
    tracing::info!("graph-pate: {answered} of {m} queries answered, {:.1}% correct", 100.0 * report.label_accuracy);
    if c.epsilon.is_some() {
        let (paper, _) = acc::thesis_epsilon(m as u64, answered as u64, sigma1, sigma2, delta)?;
        let flags: Vec<bool> = answers.iter().map(Option::is_some).collect();
        let (dd, _) = acc::data_dependent_epsilon(&counts, &flags, threshold, sigma1, sigma2, delta)?;
        budget.noise = vec![
            ("sigma1".into(), sigma1),
            ("sigma2".into(), sigma2),
            ("threshold".into(), threshold),
            ("teachers".into(), c.teachers as f64),
            ("queries".into(), m as f64),
            ("answered".into(), answered as f64),
            ("label_accuracy_measured".into(), report.label_accuracy),
            ("paper_epsilon".into(), paper),
            ("data_dependent_epsilon_not_dp".into(), dd),
        ];
    }
    crate::ensure!(
        answered > 0,
        Error::invalid(
            "vote_threshold",
            format!(
                "no query passed the consensus check (T = {threshold} votes of {}, sigma1 = {sigma1:.2})",
                c.teachers
            )
        )
    );

    // Student on the public graph, then released answering every node from its own features.
    let mut labels = vec![None; public.num_nodes()];
    for (&q, a) in queries.iter().zip(&answers) {
        labels[q] = *a;
    }
    let x_pub = public.features.to_tensor().to_kind(Kind::Float).to_device(crate::device::current());
    let trained =
        student::train(&c.student, &public.graph, &x_pub, &labels, data.num_classes as i64, seed.wrapping_add(7919))?;
    let inference = Graph::from_edges(n, std::iter::empty())?;
    let features = data.features.to_tensor().to_kind(Kind::Float).to_device(crate::device::current());
    let model = released(trained.student.vs, trained.student.net, features, inference);
    let accuracy = crate::train::evaluate::Labels::from_dataset(data)?.accuracy(&model.posteriors_cache);
    Ok((model, accuracy, budget, report))
}

/// The released student: answers every node of `graph` (edgeless at release; see the module doc).
fn released(vs: nn::VarStore, net: Network, features: Tensor, graph: Graph) -> FullBatchModel {
    let tensors = net.tensors(&graph);
    let posteriors_cache = tch::no_grad(|| net.forward_t(&features, &tensors, false).softmax(-1, Kind::Float));
    FullBatchModel { vs, net, features, tensors, graph, posteriors_cache }
}

/// The `train` arm of `--method graph-pate`.
pub fn train_recipe(
    recipe: &Recipe,
    data: &Dataset,
    seed: u64,
    acct: &crate::train::accounting::Accounting,
) -> Result<TrainedRun> {
    let start = std::time::Instant::now();
    let (model, accuracy, budget, _) = train(data, &config(recipe)?, seed, acct)?;
    Ok(TrainedRun { model: Box::new(model), accuracy, budget, seconds: start.elapsed().as_secs_f64() })
}

/// Rebuilds a saved student (weights, features, its edgeless graph; see `train::checkpoint`).
pub fn load_checkpoint(
    meta: &crate::methods::checkpoint::Meta,
    cache: &crate::methods::checkpoint::Cache,
    load: &dyn Fn(&mut nn::VarStore) -> Result<()>,
) -> Result<Box<dyn TrainedModel>> {
    let s = config(&meta.recipe)?.student;
    let mut vs = nn::VarStore::new(crate::device::current());
    let net = Network::TwoLayer(TwoLayerGnn::new(
        &vs.root(),
        s.backbone,
        meta.num_features,
        s.hidden,
        meta.num_classes,
        s.dropout,
    ));
    load(&mut vs)?;
    let (features, graph) = (cache.get("features")?, cache.graph()?);
    Ok(Box::new(released(vs, net, features, graph)))
}
// ---------------------------------------------------------------- registry entries

use crate::methods::spec::MethodSpec;

/// The budget of answering the query set: `queries`, or [`DEFAULT_QUERIES`] public validation
/// nodes (all of them if fewer).
fn pate_budget(
    recipe: &Recipe,
    data: &Dataset,
    _seed: u64,
    acct: &crate::train::accounting::Accounting,
) -> Result<Budget> {
    let c = config(recipe)?;
    let m = c.queries.unwrap_or(DEFAULT_QUERIES.min(data.split()?.val.len()));
    calibrate(&c, data.num_nodes(), m, acct).map(|r| r.2)
}

pub const GRAPH_PATE: MethodSpec = MethodSpec {
    replay: crate::methods::spec::Replay::Releases(crate::methods::spec::ReplayFamily::PateVotes),
    own_knobs: Some(crate::methods::knobs::own::<PateKnobs>()),
    reads: crate::methods::spec::Reads::NETWORK,
    check: check_recipe,
    load: Some(load_checkpoint),
    ..MethodSpec::new(
        "graph-pate",
        "Graph PATE (thesis ch.3 adapted): GNN teachers on disjoint node partitions, \
            Confident-GNMax labelling of public nodes, a GNN student (--student plain|coteach|coteach-plus|\
            cleanse = PATE, co-teaching, PATE+, PATE++); node-level DP",
        PrivacyUnit::Node,
        train_recipe,
        pate_budget,
    )
};
