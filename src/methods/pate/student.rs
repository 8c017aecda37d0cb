//! The student: a GNN on the public graph trained on the teachers' noisy labels.
//! The semi-supervised GAN of the image setting is left out (it is image-specific); the
//! unlabelled public nodes still take part as graph context of every forward pass.
//!
//! - `plain`: cross-entropy on the labelled nodes (the original PATE student without the GAN).
//! - `coteach`: two peers; each picks the R(e) fraction of the batch with its smallest losses and
//!   the *other* peer learns from that pick (Han et al. 2018; "PATE with co-teaching").
//! - `coteach-plus`: PATE+ (Alg. 1): the same, restricted to the nodes the peers disagree on
//!   (co-teaching+, Yu et al. 2019).
//! - `cleanse`: PATE++ (Alg. 3): PATE+ while counting, per epoch, the labelled nodes on which the
//!   peers disagree and both differ from the label; the table decays, T <- alpha T + c_e (our reading:
//!   the text's decay, not Alg. 3's line 16); the tau fraction with the highest counts
//!   becomes unlabelled and PATE+ is retrained from scratch.
//!
//! Keep ratio (Han et al. 2018, thesis l.560): R(e) = 1 - beta min(e/15, 1), beta the estimated
//! noise rate. Mini-batches of 100 labelled nodes (thesis l.547). Privacy: post-processing.
use crate::data::Graph;
use crate::error::Result;
use crate::methods::backbone::{full_graph_step, GnnKind, GraphTensors, Network, TwoLayerGnn};
use crate::models::sparse::FeatureMatrix;
use crate::privacy::dpsgd::{Optimizer, OptimizerKind};
use crate::train::fit::{drive, Batching, Evaluation, Schedule, Selection, Trainee};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{nn, Kind, Tensor};

/// How the student learns from the noisy labels.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum StudentKind {
    /// Cross-entropy on the labelled nodes (original PATE student, no GAN).
    #[default]
    Plain,
    /// Two peers, small-loss cross-update (PATE with co-teaching).
    Coteach,
    /// Co-teaching on the peers' disagreements (PATE+).
    CoteachPlus,
    /// PATE+ with count-table cleansing, then PATE+ again (PATE++).
    Cleanse,
}

/// Labelled nodes per mini-batch (thesis l.547).
pub const BATCH: usize = 100;
/// Epochs over which the keep ratio falls to 1 - beta (Han et al. 2018's T_k).
pub const RAMP_EPOCHS: f64 = 15.0;

/// The student's hyper-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct StudentConfig {
    pub kind: StudentKind,
    pub backbone: GnnKind,
    pub hidden: i64,
    pub dropout: f64,
    pub learning_rate: f64,
    pub weight_decay: f64,
    pub epochs: usize,
    /// beta, the estimated label-noise rate.
    pub noise_rate: f64,
    /// tau, the share of labelled nodes PATE++ moves to the unlabelled set.
    pub removal_ratio: f64,
    /// alpha, the count table's decay.
    pub count_decay: f64,
}

/// One network with its optimiser.
pub struct Peer {
    pub vs: nn::VarStore,
    pub net: Network,
    opt: Optimizer,
    params: Vec<Tensor>,
}

impl Peer {
    pub fn new(cfg: &StudentConfig, features: i64, classes: i64) -> Self {
        let vs = nn::VarStore::new(crate::device::current());
        let net =
            Network::TwoLayer(TwoLayerGnn::new(&vs.root(), cfg.backbone, features, cfg.hidden, classes, cfg.dropout));
        let params = vs.trainable_variables();
        let opt = Optimizer::new(OptimizerKind::Adam, cfg.learning_rate, cfg.weight_decay);
        Peer { vs, net, opt, params }
    }
    fn logits(&self, x: &Tensor, g: &GraphTensors) -> Tensor {
        tch::no_grad(|| self.net.forward_t(x, g, false))
    }
    /// One Adam step on the cross-entropy of `nodes` with `labels` (full-graph forward).
    fn step(&mut self, x: &Tensor, g: &GraphTensors, nodes: &[usize], labels: &Tensor) {
        if nodes.is_empty() {
            return;
        }
        let input = FeatureMatrix::Dense(x.shallow_clone());
        full_graph_step(&self.net, &input, g, &self.params, &mut self.opt, labels, &index(nodes));
    }
}

fn index(nodes: &[usize]) -> Tensor {
    Tensor::from_slice(&nodes.iter().map(|&v| v as i64).collect::<Vec<_>>()).to_device(crate::device::current())
}

/// Per-node cross-entropy of `nodes` and the predicted classes of all nodes.
fn losses(logits: &Tensor, labels: &Tensor, nodes: &[usize]) -> Vec<f64> {
    let idx = index(nodes);
    let lp = logits.index_select(0, &idx).log_softmax(-1, Kind::Float);
    let nll = -lp.gather(1, &labels.index_select(0, &idx).unsqueeze(1), false).squeeze_dim(1);
    Vec::<f64>::try_from(nll.to_kind(Kind::Double).to_device(tch::Device::Cpu)).expect("losses")
}

fn predictions(logits: &Tensor) -> Vec<i64> {
    Vec::<i64>::try_from(logits.argmax(-1, false).to_device(tch::Device::Cpu)).expect("predictions")
}

/// The `keep` fraction of `nodes` with the smallest `loss` (indexed like `nodes`).
fn small_loss(nodes: &[usize], loss: &[f64], keep: f64) -> Vec<usize> {
    let k = (keep * nodes.len() as f64).round() as usize;
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| loss[a].total_cmp(&loss[b]));
    order.into_iter().take(k).map(|i| nodes[i]).collect()
}

/// What a student run returns: the released network (peer 1) and, for PATE++, the nodes removed.
pub struct Trained {
    pub student: Peer,
    pub removed: Vec<usize>,
}

/// Trains the student on the public graph `graph` with features `x` [n, d]; `labels[v]` is the
/// teachers' label of public node v (None = unlabelled).
pub fn train(
    cfg: &StudentConfig,
    graph: &Graph,
    x: &Tensor,
    labels: &[Option<usize>],
    classes: i64,
    seed: u64,
) -> Result<Trained> {
    let labelled: Vec<usize> = (0..labels.len()).filter(|&v| labels[v].is_some()).collect();
    let y = Tensor::from_slice(&labels.iter().map(|l| l.map_or(0, |c| c as i64)).collect::<Vec<_>>())
        .to_device(crate::device::current());
    let g = GraphTensors::for_kind(graph, cfg.backbone);
    let d = x.size()[1];
    match cfg.kind {
        StudentKind::Plain => {
            tch::manual_seed(seed as i64);
            let p = Peer::new(cfg, d, classes);
            let mut t = Students::new(cfg, x, &g, &y, &labelled, (p, None), seed);
            let schedule = t.schedule();
            drive(&mut t, &index(&labelled), &schedule)?;
            Ok(Trained { student: t.peers.0, removed: vec![] })
        }
        StudentKind::Coteach | StudentKind::CoteachPlus => {
            let plus = cfg.kind == StudentKind::CoteachPlus;
            let (p1, _, _) = coteach(cfg, x, &g, &y, &labelled, classes, plus, seed)?;
            Ok(Trained { student: p1, removed: vec![] })
        }
        StudentKind::Cleanse => {
            let (_, _, counts) = coteach(cfg, x, &g, &y, &labelled, classes, true, seed)?;
            let mut order: Vec<usize> = (0..labelled.len()).collect();
            order.sort_by(|&a, &b| counts[b].total_cmp(&counts[a]).then(a.cmp(&b)));
            let remove = (cfg.removal_ratio * labelled.len() as f64).round() as usize;
            let mut removed: Vec<usize> = order[..remove].iter().map(|&i| labelled[i]).collect();
            removed.sort_unstable();
            let kept: Vec<usize> = labelled.iter().copied().filter(|v| removed.binary_search(v).is_err()).collect();
            let (p1, _, _) = coteach(cfg, x, &g, &y, &kept, classes, true, seed ^ 0x5eed)?;
            Ok(Trained { student: p1, removed })
        }
    }
}

fn batches(nodes: &[usize], rng: &mut ChaCha8Rng) -> Vec<Vec<usize>> {
    let mut v = nodes.to_vec();
    v.shuffle(rng);
    v.chunks(BATCH).map(<[usize]>::to_vec).collect()
}

/// Co-teaching (or co-teaching+ with `plus`) of two peers for `cfg.epochs`; returns the peers
/// and the decayed count table over `labelled` (Alg. 3 step 1).
#[allow(clippy::too_many_arguments)]
fn coteach(
    cfg: &StudentConfig,
    x: &Tensor,
    g: &GraphTensors,
    y: &Tensor,
    labelled: &[usize],
    classes: i64,
    plus: bool,
    seed: u64,
) -> Result<(Peer, Peer, Vec<f64>)> {
    tch::manual_seed(seed as i64);
    let d = x.size()[1];
    let peers = (Peer::new(cfg, d, classes), Some(Peer::new(cfg, d, classes)));
    let mut t = Students::new(cfg, x, g, y, labelled, peers, seed);
    t.plus = plus;
    let schedule = t.schedule();
    drive(&mut t, &index(labelled), &schedule)?;
    t.close_epoch();
    Ok((t.peers.0, t.peers.1.expect("two peers"), t.table))
}

/// The student's training as the one loop sees it. Each epoch's batches are the labelled nodes
/// shuffled by the student's own stream and cut into batches of [`BATCH`]; with a second peer,
/// each batch is a co-teaching step and the epoch adds its flags to the count table.
struct Students<'a> {
    cfg: &'a StudentConfig,
    x: &'a Tensor,
    g: &'a GraphTensors,
    y: &'a Tensor,
    yv: Vec<i64>,
    labelled: &'a [usize],
    position: std::collections::HashMap<usize, usize>,
    peers: (Peer, Option<Peer>),
    /// Co-teaching+: learn only from the nodes the peers disagree on.
    plus: bool,
    rng: ChaCha8Rng,
    /// The current epoch's batches still to run, last first.
    queue: Vec<Vec<usize>>,
    epochs_started: usize,
    keep: f64,
    flagged: Vec<f64>,
    table: Vec<f64>,
}

impl<'a> Students<'a> {
    fn new(
        cfg: &'a StudentConfig,
        x: &'a Tensor,
        g: &'a GraphTensors,
        y: &'a Tensor,
        labelled: &'a [usize],
        peers: (Peer, Option<Peer>),
        seed: u64,
    ) -> Self {
        Students {
            cfg,
            x,
            g,
            y,
            yv: Vec::<i64>::try_from(y.to_device(tch::Device::Cpu)).expect("labels"),
            labelled,
            position: labelled.iter().enumerate().map(|(i, &v)| (v, i)).collect(),
            peers,
            plus: false,
            rng: ChaCha8Rng::seed_from_u64(seed),
            queue: vec![],
            epochs_started: 0,
            keep: 1.0,
            flagged: vec![0.0; labelled.len()],
            table: vec![0.0; labelled.len()],
        }
    }

    fn schedule(&self) -> Schedule {
        Schedule {
            epochs: self.cfg.epochs,
            batching: Batching::TraineeDrawn { steps_per_epoch: self.labelled.len().div_ceil(BATCH) },
            selection: Selection::Last,
            early_stop: None,
        }
    }

    /// The finished epoch's flags into the decayed count table.
    fn close_epoch(&mut self) {
        for (t, f) in self.table.iter_mut().zip(&mut self.flagged) {
            *t = self.cfg.count_decay * *t + *f;
            *f = 0.0;
        }
    }
}

impl Trainee for Students<'_> {
    fn step(&mut self, _all: &Tensor) -> Result<()> {
        if self.queue.is_empty() {
            if self.epochs_started > 0 {
                self.close_epoch();
            }
            let e = self.epochs_started as f64;
            self.keep = 1.0 - self.cfg.noise_rate * (e / RAMP_EPOCHS).min(1.0);
            self.queue = batches(self.labelled, &mut self.rng);
            self.queue.reverse();
            self.epochs_started += 1;
        }
        let Some(batch) = self.queue.pop() else { return Ok(()) };
        let (x, g, y) = (self.x, self.g, self.y);
        let (p1, p2) = match &mut self.peers {
            (p, None) => {
                p.step(x, g, &batch, y);
                return Ok(());
            }
            (p1, Some(p2)) => (p1, p2),
        };
        let (l1, l2) = (p1.logits(x, g), p2.logits(x, g));
        let (c1, c2) = (predictions(&l1), predictions(&l2));
        let disagree: Vec<usize> = batch.iter().copied().filter(|&v| c1[v] != c2[v]).collect();
        for &v in &disagree {
            if c1[v] != self.yv[v] && c2[v] != self.yv[v] {
                self.flagged[self.position[&v]] = 1.0;
            }
        }
        let pool = if self.plus { disagree } else { batch };
        if pool.is_empty() {
            return Ok(());
        }
        let pick1 = small_loss(&pool, &losses(&l1, y, &pool), self.keep);
        let pick2 = small_loss(&pool, &losses(&l2, y, &pool), self.keep);
        p1.step(x, g, &pick2, y);
        p2.step(x, g, &pick1, y);
        Ok(())
    }
    fn evaluate(&self) -> Evaluation {
        Evaluation::accuracy(f64::NAN)
    }
    fn variables(&self) -> &nn::VarStore {
        &self.peers.0.vs
    }
}
