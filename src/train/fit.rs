//! The one training loop. [`drive`] runs epochs of batches drawn by a [`Batching`] and keeps the
//! epoch a [`Selection`] picks; what a step does (plain or DP-SGD, which loss, which optimiser) is
//! the [`Trainee`]'s. [`fit`] is that loop for the networks built from our layers
//! ([`NodeClassifier`]: MLP, GAP, ProGAP); the baselines, LPGNN and DP-GNN bring their own step.
use crate::error::{Error, Result};
use crate::models::{Fwd, NodeClassifier, ParamStore};
use crate::privacy::dpsgd::canary_plan::StagePlan;
use crate::privacy::dpsgd::optim::concat_flat;
use crate::privacy::dpsgd::{DpSgd, Optimizer, OptimizerKind, PoissonSampler};
use tch::{nn, Kind, Reduction, Tensor};

pub use super::evaluate::Labels;
pub use crate::models::{restore, snapshot};

/// Which training nodes each step sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Batching {
    /// Every training node, one step per epoch.
    Full,
    /// Shuffled fixed-size batches covering the training nodes once per epoch (non-private
    /// mini-batch training).
    Shuffled(usize),
    /// DP-SGD: Poisson sampling at `rate`, `steps_per_epoch` steps (a batch may be empty).
    Poisson { rate: f64, steps_per_epoch: usize },
    /// DP-SGD on a fresh permutation each epoch, `steps_per_epoch` batches of `size` (the
    /// incomplete last batch dropped): only the planted `demo-dp-mlp-shuffled`, which is accounted
    /// as Poisson sampling.
    ShuffledDropLast { size: usize, steps_per_epoch: usize },
    /// `size` training nodes drawn uniformly without replacement for each of `steps_per_epoch`
    /// steps (DP-GNN's sampling, Daigavane et al. 2021).
    Uniform { size: usize, steps_per_epoch: usize },
    /// `steps_per_epoch` steps, each on a batch the trainee draws itself (class-DP samples
    /// privacy units, groups of nodes, not nodes); its `step` is handed all training nodes.
    TraineeDrawn { steps_per_epoch: usize },
}

/// Which of equally good epochs selection keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ties {
    Earliest,
    Latest,
}

/// Which epoch's weights the loop returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selection {
    /// The last epoch's.
    Last,
    /// The highest validation accuracy. Without validation nodes, the last epoch.
    BestValAcc { ties: Ties },
    /// The lowest validation loss among the epochs the trainee calls admissible (LPGNN's Drop:
    /// accuracy on the noisy labels <= Acc*, Algorithm 4 line 29), or among all epochs when none
    /// is. (Without validation nodes a trainee reports loss 0: all tie.)
    LowestValLoss { ties: Ties },
}

/// What selection compares after an epoch (NaN where there are no validation nodes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    pub val_accuracy: f64,
    pub val_loss: f64,
    pub admissible: bool,
}

impl Evaluation {
    pub fn accuracy(val_accuracy: f64) -> Self {
        Evaluation { val_accuracy, val_loss: f64::NAN, admissible: true }
    }
}

/// One model under training, as the loop sees it.
pub trait Trainee {
    /// One optimisation step on the training nodes `batch` (possibly empty under Poisson sampling).
    fn step(&mut self, batch: &Tensor) -> Result<()>;
    /// After every epoch: an error stops a diverged run. By default nothing stops: the
    /// baselines, LPGNN, PGC, RGNN, DP-GNN, DPAR and the PATE students never stopped on divergence
    /// in their references (a NaN loss is then never selected, a NaN model scores at chance).
    fn check(&self, _epoch: usize) -> Result<()> {
        Ok(())
    }
    /// The current weights on the validation nodes (only called when a [`Selection`] compares).
    fn evaluate(&self) -> Evaluation;
    /// Every variable (parameters and batch-norm statistics), copied and restored by selection.
    fn variables(&self) -> &nn::VarStore;
}

/// How long the loop runs, on which batches, and which epoch it keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub epochs: usize,
    pub batching: Batching,
    pub selection: Selection,
    /// Stop before `epochs` once selection has kept no newer epoch for a while.
    pub early_stop: Option<EarlyStop>,
}

/// Stop once `patience` epochs have passed since the kept one, after at least `min_epochs`
/// (PGC's training, Kipf & Welling's set-up). Validation runs every `check_every` epochs and
/// after the last (PyG's VGAE example checks every 10): selection and the stop see only those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlyStop {
    pub patience: usize,
    pub min_epochs: usize,
    pub check_every: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitReport {
    /// The kept epoch's evaluation (None under [`Selection::Last`]).
    pub kept: Option<Evaluation>,
    pub best_epoch: usize,
    pub steps: usize,
}

impl FitReport {
    /// Validation accuracy of the kept epoch (NaN where none was measured).
    pub fn best_val(&self) -> f64 {
        self.kept.map_or(f64::NAN, |e| e.val_accuracy)
    }
}

/// Whether `new` replaces the kept evaluation `old`.
fn replaces(sel: Selection, new: &Evaluation, old: Option<&Evaluation>) -> bool {
    let better = |a: f64, b: f64, ties: Ties| a > b || (ties == Ties::Latest && a == b);
    match (sel, old) {
        (Selection::Last, _) | (_, None) => true,
        (Selection::BestValAcc { ties }, Some(o)) => {
            new.val_accuracy.is_nan() || better(new.val_accuracy, o.val_accuracy, ties)
        }
        // A NaN loss (a diverged epoch) is never lower.
        (Selection::LowestValLoss { ties }, Some(o)) => better(-new.val_loss, -o.val_loss, ties),
    }
}

/// The loop: `schedule.epochs` epochs of steps on batches of `train` (int64 node ids), the
/// trainee's check after each, and at the end the weights of the epoch the selection keeps.
pub fn drive(t: &mut dyn Trainee, train: &Tensor, schedule: &Schedule) -> Result<FitReport> {
    let n = train.size()[0];
    if let Batching::Uniform { size, .. } = schedule.batching {
        if size as i64 > n || size == 0 {
            return Err(Error::invalid("batch_size", format!("must be in 1..={n} (the training nodes), got {size}")));
        }
    }
    let sampler = match schedule.batching {
        Batching::Poisson { rate, .. } => Some(PoissonSampler::new(train, rate)),
        _ => None,
    };
    // Drawn on the CPU generator whatever the device, so that runs agree across devices.
    let randperm = || Tensor::randperm(n, (Kind::Int64, tch::Device::Cpu)).to_device(train.device());
    // The kept evaluation, epoch and weights among admissible epochs, and among the others (the
    // fallback, which is then the best of all epochs when none is admissible).
    type Kept = Option<(Evaluation, usize, Vec<(String, Tensor)>)>;
    let (mut kept, mut fallback): (Kept, Kept) = (None, None);
    let mut steps = 0;
    for epoch in 0..schedule.epochs {
        // A host that cannot let Ctrl-C end the process (the Python package) stops training here.
        crate::interrupt::check()?;
        match schedule.batching {
            Batching::Full => {
                t.step(train)?;
                steps += 1;
            }
            Batching::Shuffled(b) => {
                let perm = train.index_select(0, &randperm());
                let mut start = 0;
                while start < n {
                    let len = (b as i64).min(n - start);
                    t.step(&perm.narrow(0, start, len))?;
                    start += len;
                    steps += 1;
                }
            }
            Batching::ShuffledDropLast { size, steps_per_epoch } => {
                let perm = train.index_select(0, &randperm());
                for k in 0..steps_per_epoch as i64 {
                    t.step(&perm.narrow(0, k * size as i64, size as i64))?;
                    steps += 1;
                }
            }
            Batching::Poisson { steps_per_epoch, .. } => {
                let sampler = sampler.as_ref().expect("Poisson sampler");
                for _ in 0..steps_per_epoch {
                    t.step(&sampler.sample())?;
                    steps += 1;
                }
            }
            Batching::TraineeDrawn { steps_per_epoch } => {
                for _ in 0..steps_per_epoch {
                    t.step(train)?;
                    steps += 1;
                }
            }
            Batching::Uniform { size, steps_per_epoch } => {
                for _ in 0..steps_per_epoch {
                    t.step(&train.index_select(0, &randperm().narrow(0, 0, size as i64)))?;
                    steps += 1;
                }
            }
        }
        t.check(epoch)?;
        let every = schedule.early_stop.map_or(1, |s| s.check_every.max(1));
        if schedule.selection == Selection::Last || ((epoch + 1) % every != 0 && epoch + 1 != schedule.epochs) {
            continue;
        }
        let e = t.evaluate();
        let slot = if e.admissible { &mut kept } else { &mut fallback };
        if replaces(schedule.selection, &e, slot.as_ref().map(|k| &k.0)) {
            *slot = Some((e, epoch, snapshot(t.variables())));
        }
        if let (Some(stop), Some((_, at, _))) = (schedule.early_stop, kept.as_ref().or(fallback.as_ref())) {
            if epoch - at >= stop.patience && epoch + 1 >= stop.min_epochs {
                break;
            }
        }
    }
    Ok(match kept.or(fallback) {
        Some((e, epoch, snap)) => {
            restore(t.variables(), &snap);
            FitReport { kept: Some(e), best_epoch: epoch, steps }
        }
        None => FitReport { kept: None, best_epoch: schedule.epochs.saturating_sub(1), steps },
    })
}

/// The optimiser, DP-SGD and selection settings of [`fit`].
#[derive(Debug, Clone, Copy)]
pub struct FitConfig {
    pub epochs: usize,
    pub batching: Batching,
    pub dp: Option<DpSgd>,
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub weight_decay: f64,
    pub selection: Selection,
}

/// The paper defaults of the GNN baselines (thesis ch.3): full-batch Adam, lr 0.01, 100 epochs,
/// no weight decay, the best validation epoch (the latest of equals).
impl Default for FitConfig {
    fn default() -> Self {
        FitConfig {
            epochs: 100,
            batching: Batching::Full,
            dp: None,
            optimizer: OptimizerKind::Adam,
            lr: 0.01,
            weight_decay: 0.0,
            selection: Selection::BestValAcc { ties: Ties::Latest },
        }
    }
}

impl FitConfig {
    pub fn validate(&self) -> Result<()> {
        if self.epochs == 0 {
            return Err(Error::invalid("epochs", "must be >= 1"));
        }
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return Err(Error::invalid("learning_rate", format!("must be > 0, got {}", self.lr)));
        }
        if self.weight_decay.is_nan() || self.weight_decay < 0.0 {
            return Err(Error::invalid("weight_decay", format!("must be >= 0, got {}", self.weight_decay)));
        }
        Ok(())
    }
    pub fn schedule(&self) -> Schedule {
        Schedule { epochs: self.epochs, batching: self.batching, selection: self.selection, early_stop: None }
    }
}

/// Trains `model`'s trainable parameters: plain steps on the mean cross-entropy, or DP-Adam
/// under Poisson batching. Returns the kept epoch's report; its `kept` is the validation
/// accuracy at the end when nothing is selected.
pub fn fit(model: &dyn NodeClassifier, ps: &ParamStore, labels: &Labels, cfg: &FitConfig) -> Result<FitReport> {
    if cfg.batching == Batching::Full {
        model.cache_rows(&labels.train);
    }
    if cfg.selection != Selection::Last {
        model.cache_rows(&labels.val);
    }
    let dp = match cfg.batching {
        Batching::Poisson { .. } | Batching::ShuffledDropLast { .. } => {
            Some(cfg.dp.expect("Poisson batching is only used with DP-SGD"))
        }
        _ => None,
    };
    let params = model.trainable().iter().map(|&i| (i, ps.params[i].shallow_clone())).collect();
    let opt = Optimizer::new(cfg.optimizer, cfg.lr, cfg.weight_decay);
    let train_labels = labels.y.index_select(0, &labels.train);
    let mut t = ClassifierTrainee { model, ps, params, labels, train_labels, opt, dp, lr: cfg.lr };
    let mut report = drive(&mut t, &labels.train, &cfg.schedule())?;
    if report.kept.is_none() {
        report.kept = Some(t.evaluate());
    }
    Ok(report)
}

/// The DP-SGD stage that [`fit`] of `model` under `cfg` runs (None without DP-SGD): what a
/// gradient-canary audit plans its canaries on before training
/// ([`crate::privacy::dpsgd::canary::declare`]).
pub fn dp_sgd_stage(model: &dyn NodeClassifier, ps: &ParamStore, cfg: &FitConfig) -> Option<StagePlan> {
    let (Batching::Poisson { steps_per_epoch, .. } | Batching::ShuffledDropLast { steps_per_epoch, .. }, Some(dp)) =
        (cfg.batching, cfg.dp)
    else {
        return None;
    };
    let params: Vec<Tensor> = model.trainable().iter().map(|&i| ps.params[i].shallow_clone()).collect();
    Some(StagePlan::new(&params, &dp, cfg.epochs * steps_per_epoch))
}

/// A [`NodeClassifier`] with its parameters and optimiser.
struct ClassifierTrainee<'a> {
    model: &'a dyn NodeClassifier,
    ps: &'a ParamStore,
    params: Vec<(usize, Tensor)>,
    labels: &'a Labels,
    /// The labels of the train nodes, gathered once for full-batch steps.
    train_labels: Tensor,
    opt: Optimizer,
    /// DP-SGD's clipping and noise, for Poisson-sampled steps.
    dp: Option<DpSgd>,
    lr: f64,
}

impl Trainee for ClassifierTrainee<'_> {
    fn step(&mut self, batch: &Tensor) -> Result<()> {
        match self.dp {
            Some(dp) => self.private_step(&dp, batch),
            None => self.plain_step(batch),
        }
        Ok(())
    }
    fn check(&self, epoch: usize) -> Result<()> {
        ensure_finite(self.ps, &self.params, epoch, self.lr, &self.opt)
    }
    fn evaluate(&self) -> Evaluation {
        Evaluation::accuracy(super::evaluate::model_accuracy(self.model, &self.labels.y, &self.labels.val))
    }
    fn variables(&self) -> &nn::VarStore {
        &self.ps.vs
    }
}

impl ClassifierTrainee<'_> {
    /// One DP-Adam step: per-sample gradients from the taped forward, clipped and noised.
    fn private_step(&mut self, dp: &DpSgd, idx: &Tensor) {
        let (grads, flat) = if idx.size()[0] == 0 {
            dp.private_flat(None, &self.params)
        } else {
            let mut f = Fwd::train_taped();
            let logits = self.model.logits(idx, &mut f);
            let loss_sum = crate::models::log_softmax_rows(&logits).g_nll_loss::<Tensor>(
                &self.labels.y.index_select(0, idx),
                None,
                Reduction::Sum,
                -100,
            );
            let tape = f.tape.take().unwrap();
            dp.private_flat(Some((&tape, &loss_sum)), &self.params)
        };
        self.opt.step_flat(&self.ps.params, &grads, &flat);
    }

    /// One non-private step on the mean cross-entropy of `idx`.
    fn plain_step(&mut self, idx: &Tensor) {
        let mut f = Fwd::train_recorded();
        let logits = self.model.logits(idx, &mut f);
        let all_train = idx.data_ptr() == self.labels.train.data_ptr() && idx.size() == self.labels.train.size();
        let y = if all_train { self.train_labels.shallow_clone() } else { self.labels.y.index_select(0, idx) };
        let loss = crate::models::cross_entropy(&logits, &y);
        // Sparse first layers' products were recorded: their weight gradients come from the
        // stored transposes (`models::sparse::backward`).
        let products = f.take_products();
        let tensors: Vec<Tensor> = self.params.iter().map(|(_, p)| p.shallow_clone()).collect();
        let grads = crate::models::sparse::backward(&loss, &tensors, products);
        let grads: Vec<(usize, Tensor)> =
            self.params.iter().zip(grads).filter_map(|((i, _), g)| Some((*i, g?))).collect();
        self.opt.step(&self.ps.params, &grads);
    }
}

/// Stops a diverged run: once a weight is NaN or infinite every later epoch is noise, and the
/// best-validation pick would quietly report a chance-level epoch as the result.
pub fn ensure_finite(
    ps: &ParamStore,
    params: &[(usize, Tensor)],
    epoch: usize,
    lr: f64,
    opt: &Optimizer,
) -> Result<()> {
    // One check over all weights at once (a few ops instead of three per weight, every epoch),
    // on the optimizer's parameter buffer where it holds them; only a failed check looks for the
    // culprit.
    if params.is_empty() {
        return Ok(());
    }
    let ids: Vec<usize> = params.iter().map(|(i, _)| *i).collect();
    let all = opt.parameter_buffer(&ps.params, &ids).unwrap_or_else(|| concat_flat(params.iter().map(|(_, p)| p)));
    if tch::no_grad(|| all.isfinite().all().int64_value(&[])) == 1 {
        return Ok(());
    }
    for (i, p) in params {
        if p.f_isfinite()?.f_all()?.f_int64_value(&[])? != 1 {
            return Err(Error::invalid(
                "lr",
                format!(
                    "training diverged in epoch {}: weight '{}' became NaN or infinite; lower --lr (was {})",
                    epoch + 1,
                    ps.names[*i],
                    crate::error::num(lr)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose one variable records the epoch of its last step, and whose validation
    /// figures follow a script: after `drive`, the variable names the epoch selection kept.
    struct Scripted {
        vs: nn::VarStore,
        epoch: Tensor,
        script: Vec<Evaluation>,
        steps: Vec<i64>,
    }

    impl Scripted {
        fn new(script: Vec<Evaluation>) -> Self {
            let vs = nn::VarStore::new(tch::Device::Cpu);
            let epoch = vs.root().zeros_no_train("epoch", &[1]);
            Scripted { vs, epoch, script, steps: vec![] }
        }
        fn kept(script: Vec<Evaluation>, selection: Selection) -> i64 {
            let mut t = Scripted::new(script);
            let epochs = t.script.len();
            let schedule = Schedule { epochs, batching: Batching::Full, selection, early_stop: None };
            let report = drive(&mut t, &Tensor::from_slice(&[0i64, 1, 2]), &schedule).unwrap();
            assert_eq!(report.steps, epochs);
            let kept = t.epoch.int64_value(&[0]);
            assert_eq!(kept as usize, report.best_epoch);
            kept
        }
    }

    impl Trainee for Scripted {
        fn step(&mut self, batch: &Tensor) -> Result<()> {
            self.steps.push(batch.size()[0]);
            let _ = tch::no_grad(|| self.epoch.fill_(self.steps.len() as i64 - 1));
            Ok(())
        }
        fn check(&self, _epoch: usize) -> Result<()> {
            Ok(())
        }
        fn evaluate(&self) -> Evaluation {
            self.script[self.steps.len() - 1]
        }
        fn variables(&self) -> &nn::VarStore {
            &self.vs
        }
    }

    fn acc(v: &[f64]) -> Vec<Evaluation> {
        v.iter().map(|&a| Evaluation::accuracy(a)).collect()
    }
    fn loss(v: &[(f64, bool)]) -> Vec<Evaluation> {
        v.iter().map(|&(l, admissible)| Evaluation { val_accuracy: f64::NAN, val_loss: l, admissible }).collect()
    }

    #[test]
    fn selection_keeps_the_epoch_it_names() {
        let best = |ties| Selection::BestValAcc { ties };
        let lowest = |ties| Selection::LowestValLoss { ties };
        let a = acc(&[0.5, 0.7, 0.6, 0.7, 0.4]);
        assert_eq!(Scripted::kept(a.clone(), Selection::Last), 4);
        assert_eq!(Scripted::kept(a.clone(), best(Ties::Earliest)), 1);
        assert_eq!(Scripted::kept(a, best(Ties::Latest)), 3);
        // No validation nodes (NaN accuracy): nothing to compare, the last epoch.
        assert_eq!(Scripted::kept(acc(&[f64::NAN; 4]), best(Ties::Earliest)), 3);
        // Lowest loss among admissible epochs; a diverged (NaN) loss never wins.
        let l = loss(&[(0.9, true), (0.2, false), (0.5, true), (f64::NAN, true), (0.5, true)]);
        assert_eq!(Scripted::kept(l.clone(), lowest(Ties::Earliest)), 2);
        assert_eq!(Scripted::kept(l, lowest(Ties::Latest)), 4);
        // Early stop: 2 epochs without a better one, after at least 4.
        let mut t = Scripted::new(acc(&[0.5, 0.7, 0.6, 0.6, 0.6, 0.9, 0.9]));
        let stop = EarlyStop { patience: 2, min_epochs: 4, check_every: 1 };
        let schedule =
            Schedule { epochs: 7, batching: Batching::Full, selection: best(Ties::Earliest), early_stop: Some(stop) };
        let r = drive(&mut t, &Tensor::from_slice(&[0i64]), &schedule).unwrap();
        assert_eq!((r.steps, r.best_epoch), (4, 1));
        // Checked every 2 epochs (and after the last): epochs 1, 3, 5, 6 are seen; 5 is best.
        let mut t = Scripted::new(acc(&[0.9, 0.5, 0.6, 0.6, 0.6, 0.8, 0.7]));
        let every = EarlyStop { patience: 10, min_epochs: 0, check_every: 2 };
        let schedule = Schedule { early_stop: Some(every), ..schedule };
        let r = drive(&mut t, &Tensor::from_slice(&[0i64]), &schedule).unwrap();
        assert_eq!((r.steps, r.best_epoch), (7, 5));
        // None admissible: the lowest loss of all.
        assert_eq!(Scripted::kept(loss(&[(0.9, false), (0.2, false), (0.5, false)]), lowest(Ties::Latest)), 1);
    }

    #[test]
    fn batching_draws_the_batches_it_names() {
        tch::manual_seed(0);
        let train = Tensor::arange(10, (Kind::Int64, tch::Device::Cpu));
        let run = |batching| {
            let mut t = Scripted::new(acc(&[0.5; 40]));
            let schedule = Schedule { epochs: 2, batching, selection: Selection::Last, early_stop: None };
            let r = drive(&mut t, &train, &schedule).unwrap();
            assert_eq!(r.steps, t.steps.len());
            t.steps
        };
        assert_eq!(run(Batching::Full), vec![10, 10]);
        assert_eq!(run(Batching::Shuffled(4)), vec![4, 4, 2, 4, 4, 2]);
        assert_eq!(run(Batching::Uniform { size: 3, steps_per_epoch: 5 }), vec![3; 10]);
        assert_eq!(run(Batching::Poisson { rate: 0.5, steps_per_epoch: 7 }).len(), 14);
        assert_eq!(run(Batching::ShuffledDropLast { size: 4, steps_per_epoch: 2 }), vec![4; 4]);
        let mut t = Scripted::new(acc(&[0.5]));
        let too_big = Schedule {
            epochs: 1,
            batching: Batching::Uniform { size: 11, steps_per_epoch: 1 },
            selection: Selection::Last,
            early_stop: None,
        };
        assert!(drive(&mut t, &train, &too_big).is_err());
    }
}
