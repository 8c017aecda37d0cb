//! The training loop shared by every method built from our layers: full-batch or mini-batch Adam,
//! or DP-Adam with Poisson sampling; validation every epoch; the best-validation epoch kept.
use crate::error::{Error, Result};
use crate::models::{Fwd, NodeClassifier, ParamStore};
use crate::privacy::dpsgd::{DpSgd, Optimizer, OptimizerKind, PoissonSampler};
use tch::{Kind, Reduction, Tensor};

/// Labels and the split as tensors.
pub struct Labels {
    pub y: Tensor,
    pub train: Tensor,
    pub val: Tensor,
    pub test: Tensor,
}

impl Labels {
    pub fn from_dataset(d: &crate::data::Dataset) -> crate::Result<Self> {
        let s = d.split()?;
        let idx = crate::data::Split::index_tensor;
        Ok(Labels { y: d.label_tensor(), train: idx(&s.train), val: idx(&s.val), test: idx(&s.test) })
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Batching {
    Full,
    /// Shuffled fixed-size batches (non-private mini-batch training).
    Shuffled(usize),
    /// DP-SGD: Poisson sampling at `rate`, `steps_per_epoch` steps.
    Poisson {
        rate: f64,
        steps_per_epoch: usize,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct FitConfig {
    pub epochs: usize,
    pub batching: Batching,
    pub dp: Option<DpSgd>,
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub weight_decay: f64,
    pub select_best_val: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitReport {
    pub best_val: f64,
    pub best_epoch: usize,
    pub steps: usize,
}

/// Fraction of `idx` whose argmax logit equals the label (evaluation mode, no grad).
pub fn accuracy(model: &dyn NodeClassifier, labels: &Tensor, idx: &Tensor) -> f64 {
    if idx.size()[0] == 0 {
        return f64::NAN;
    }
    tch::no_grad(|| {
        let logits = model.logits(idx, &mut Fwd::eval());
        logits
            .argmax(-1, false)
            .eq_tensor(&labels.index_select(0, idx))
            .to_kind(Kind::Float)
            .mean(Kind::Float)
            .double_value(&[])
    })
}

/// Trains `model`'s trainable parameters and returns the validation report. With
/// `select_best_val`, the parameters of the best validation epoch are restored at the end.
pub fn fit(model: &dyn NodeClassifier, ps: &ParamStore, labels: &Labels, cfg: &FitConfig) -> Result<FitReport> {
    let ids = model.trainable();
    let params: Vec<(usize, Tensor)> = ids.iter().map(|&i| (i, ps.params[i].shallow_clone())).collect();
    let mut opt = Optimizer::new(cfg.optimizer, cfg.lr, cfg.weight_decay);
    let mut best: Option<(f64, usize, Vec<(String, Tensor)>)> = None;
    let mut steps = 0;
    if cfg.batching == Batching::Full {
        model.cache_rows(&labels.train);
    }
    if cfg.select_best_val {
        model.cache_rows(&labels.val);
    }
    let sampler = match cfg.batching {
        Batching::Poisson { rate, .. } => Some(PoissonSampler::new(&labels.train, rate)),
        _ => None,
    };
    for epoch in 0..cfg.epochs {
        match cfg.batching {
            Batching::Full => {
                plain_step(model, ps, &params, labels, &labels.train, &mut opt);
                steps += 1;
            }
            Batching::Shuffled(b) => {
                let n = labels.train.size()[0];
                let perm = labels
                    .train
                    .index_select(0, &crate::device::place(Tensor::randperm(n, (Kind::Int64, tch::Device::Cpu))));
                let mut start = 0;
                while start < n {
                    let len = (b as i64).min(n - start);
                    plain_step(model, ps, &params, labels, &perm.narrow(0, start, len), &mut opt);
                    start += len;
                    steps += 1;
                }
            }
            Batching::Poisson { steps_per_epoch, .. } => {
                let dp = cfg.dp.expect("Poisson batching is only used with DP-SGD");
                let sampler = sampler.as_ref().unwrap();
                for _ in 0..steps_per_epoch {
                    let idx = sampler.sample();
                    let grads = if idx.size()[0] == 0 {
                        dp.private_grads(None, &params)
                    } else {
                        let mut f = Fwd::train_taped();
                        let logits = model.logits(&idx, &mut f);
                        let loss_sum = crate::models::log_softmax_rows(&logits).g_nll_loss::<Tensor>(
                            &labels.y.index_select(0, &idx),
                            None,
                            Reduction::Sum,
                            -100,
                        );
                        let tape = f.tape.take().unwrap();
                        dp.private_grads(Some((&tape, &loss_sum)), &params)
                    };
                    opt.step(&ps.params, &grads);
                    steps += 1;
                }
            }
        }
        ensure_finite(ps, &params, epoch, cfg.lr)?;
        if cfg.select_best_val {
            let val = accuracy(model, &labels.y, &labels.val);
            if best.as_ref().is_none_or(|(b, _, _)| val > *b) {
                best = Some((val, epoch, ps.snapshot()));
            }
        }
    }
    Ok(match best {
        Some((val, epoch, snap)) => {
            ps.restore(&snap);
            FitReport { best_val: val, best_epoch: epoch, steps }
        }
        None => FitReport { best_val: accuracy(model, &labels.y, &labels.val), best_epoch: cfg.epochs, steps },
    })
}

/// Stops a diverged run: once a weight is NaN or infinite every later epoch is noise, and the
/// best-validation pick would quietly report a chance-level epoch as the result.
fn ensure_finite(ps: &ParamStore, params: &[(usize, Tensor)], epoch: usize, lr: f64) -> Result<()> {
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

/// One non-private step on the mean cross-entropy of `idx`.
fn plain_step(
    model: &dyn NodeClassifier,
    ps: &ParamStore,
    params: &[(usize, Tensor)],
    labels: &Labels,
    idx: &Tensor,
    opt: &mut Optimizer,
) {
    let mut f = Fwd::train_sparse_leaves();
    let logits = model.logits(idx, &mut f);
    let loss = crate::models::cross_entropy(&logits, &labels.y.index_select(0, idx));
    // Sparse first layers are leaves: autograd stops at their outputs and their weight gradients
    // are formed from the output gradients (`SparseLeaf::grads`).
    let leaves: Vec<_> = f
        .sparse_leaves
        .take()
        .unwrap_or_default()
        .into_iter()
        .filter(|l| params.iter().any(|(i, _)| *i == l.weight))
        .collect();
    let dense: Vec<&(usize, Tensor)> =
        params.iter().filter(|(i, _)| !leaves.iter().any(|l| l.weight == *i || l.bias == *i)).collect();
    let inputs: Vec<&Tensor> = dense.iter().map(|(_, p)| p).chain(leaves.iter().map(|l| &l.out)).collect();
    let mut out = Tensor::run_backward(&[&loss], &inputs, false, false).into_iter();
    let mut grads: Vec<(usize, Tensor)> = dense.iter().map(|(i, _)| *i).zip(out.by_ref()).collect();
    for (leaf, g) in leaves.iter().zip(out) {
        for (id, t) in leaf.grads(&g) {
            match grads.iter_mut().find(|(i, _)| *i == id) {
                Some((_, acc)) => *acc = &*acc + t,
                None => grads.push((id, t)),
            }
        }
    }
    opt.step(&ps.params, &grads);
}
