//! Class representative reconstruction (Zhang, PhD thesis ch.4 §4.3), two variants:
//! - `enhanced` (Algorithm 4, default): Adam on a tanh-boxed input x = (tanh(w) + 1)/2 minimising
//!   c(x) = 1 - f_label(x) + lambda ||x||_1 (eq. 4.2);
//! - `original` (Fredrikson et al. 2015, eq. 4.1): plain gradient descent on x itself minimising
//!   c(x) = 1 - f_label(x), x clamped to the feature range [0, 1] after each step, no regulariser
//!   (Fredrikson's denoise/sharpen post-processing is image-specific and omitted).
//!
//! Scored by the MIA distance (l.704-708: the minimum distance from the reconstruction to the
//! training records of the target class; Euclidean by default, or cosine distance) beside the
//! same distance for a random input, and by how well the reconstruction picks out its class's
//! training records (AUC of cosine similarity, class records vs other classes' records).
use crate::classifier::to_vec;
use crate::error::{check, Error, Result};
use crate::threat::{Access, AdversaryKnowledge, Attack, Game, GameUnit, Outcome, Target};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

/// Which inversion of §4.3 runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InversionVariant {
    /// Algorithm 4 (tanh box, Adam without bias correction, l1 regulariser).
    #[default]
    Enhanced,
    /// Fredrikson et al. 2015 (plain gradient descent on x, clamped to [0, 1]).
    Original,
}

/// The distance behind the MIA distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MiaDistance {
    /// Euclidean (the thesis's MNIST metric).
    #[default]
    Euclidean,
    /// 1 - cosine similarity (scale-free, for sparse bag-of-words rows).
    Cosine,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InversionParams {
    #[serde(default)]
    pub variant: InversionVariant,
    #[serde(default)]
    pub distance: MiaDistance,
    /// T, the number of Adam steps (Zhang: 5000).
    pub steps: usize,
    /// eta, the step size (Zhang: 0.1).
    pub lr: f64,
    /// lambda, the l1 coefficient (Zhang: 0.05).
    pub lambda: f64,
    pub beta1: f64,
    pub beta2: f64,
    /// tau, the stabiliser inside the square root of Algorithm 4 line 8.
    pub tau: f64,
}

impl Default for InversionParams {
    fn default() -> Self {
        InversionParams {
            variant: InversionVariant::Enhanced,
            distance: MiaDistance::Euclidean,
            steps: 1000,
            lr: 0.1,
            lambda: 0.05,
            beta1: 0.9,
            beta2: 0.999,
            tau: 1e-8,
        }
    }
}

impl Attack for InversionParams {
    fn game(&self) -> GameUnit {
        GameUnit::Practical
    }
    fn requires(&self) -> Access {
        Access { white_box: true, ..Access::default() }
    }
    fn check(&self) -> Result<()> {
        check!(
            self.steps >= 1 && self.lr > 0.0 && self.lambda >= 0.0,
            "steps",
            "model inversion needs steps >= 1, lr > 0 and lambda >= 0"
        );
        Ok(())
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        class_inversion(target, self, seed)
    }
}

/// Fredrikson et al.'s inversion (eq. 4.1) for one class: x_0 = 0, x_t = clamp(x_{t-1} - eta
/// grad c(x_{t-1}), 0, 1), c(x) = 1 - f_label(x); returns x_T as [d].
pub fn reconstruct_class_original(
    forward: &dyn Fn(&Tensor) -> Result<Tensor>,
    label: usize,
    d: i64,
    p: &InversionParams,
) -> Result<Tensor> {
    let mut x = Tensor::zeros([1, d], (Kind::Float, tch::Device::Cpu));
    for _ in 0..p.steps {
        let xv = x.detach().set_requires_grad(true);
        let cost = 1.0 - forward(&xv)?.select(1, label as i64).sum(Kind::Float);
        let g = Tensor::run_backward(&[cost], &[&xv], false, false).pop().expect("one gradient");
        x = (&x - p.lr * g).clamp(0.0, 1.0);
    }
    Ok(x.squeeze_dim(0))
}

/// Algorithm 4 for one class: returns x_T as [d].
pub fn reconstruct_class(
    forward: &dyn Fn(&Tensor) -> Result<Tensor>,
    label: usize,
    d: i64,
    p: &InversionParams,
) -> Result<Tensor> {
    let lambda = p.lambda;
    let mut w = Tensor::zeros([1, d], (Kind::Float, tch::Device::Cpu));
    let mut m = Tensor::zeros_like(&w);
    let mut v = Tensor::zeros_like(&w);
    for _ in 0..p.steps {
        let wv = w.detach().set_requires_grad(true);
        let x = (wv.tanh() + 1.0) / 2.0;
        let post = forward(&x)?;
        let cost = (1.0 - post.select(1, label as i64).sum(Kind::Float)) + lambda * x.abs().sum(Kind::Float);
        let g = Tensor::run_backward(&[cost], &[&wv], false, false).pop().expect("one gradient");
        m = &m * p.beta1 + &g * (1.0 - p.beta1);
        v = &v * p.beta2 + g.square() * (1.0 - p.beta2);
        w = &w - p.lr * &m / (&v + p.tau).sqrt();
    }
    Ok(((w.tanh() + 1.0) / 2.0).squeeze_dim(0))
}

/// The MIA distance (l.704-708): min over `records` of dist(x, record).
pub fn min_distance(x: &Tensor, records: &Tensor, distance: MiaDistance) -> f64 {
    match distance {
        MiaDistance::Euclidean => (records - x.unsqueeze(0))
            .square()
            .sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
            .sqrt()
            .min()
            .double_value(&[]),
        MiaDistance::Cosine => {
            let norms = records.norm_scalaropt_dim(2, [1i64], false).clamp_min(1e-12);
            let cos = records.matmul(x) / (norms * x.norm().clamp_min(1e-12));
            1.0 - cos.max().double_value(&[])
        }
    }
}

pub fn class_inversion(target: &Target, params: &InversionParams, seed: u64) -> Result<Outcome> {
    check!(
        params.steps >= 1 && params.lr > 0.0 && params.lambda >= 0.0,
        "inversion",
        "steps >= 1, lr > 0, lambda >= 0"
    );
    let wb = target.white_box.ok_or_else(|| Error::Unsupported("model inversion needs white-box access".into()))?;
    let g = target.graph;
    let d = g.num_features() as i64;
    // The reconstructed record is queried as an isolated node (no neighbours to aggregate).
    let zero_adj = Tensor::zeros([1, 1], (Kind::Float, tch::Device::Cpu));
    let forward = |x: &Tensor| -> Result<Tensor> {
        wb.forward_dense(x, &zero_adj).ok_or_else(|| Error::Unsupported("the model has no dense forward".into()))?
    };
    tch::manual_seed(seed as i64);
    let _rng = ChaCha8Rng::seed_from_u64(seed);
    let train = &target.split.train;
    let idx = Tensor::from_slice(&train.iter().map(|&v| v as i64).collect::<Vec<_>>());
    let records = g.features.index_select(0, &idx).to_kind(Kind::Float);
    let rec_norm = records.norm_scalaropt_dim(2, [1i64], false).clamp_min(1e-12);
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    let mut per_class = Vec::new();
    for c in 0..g.num_classes {
        let of_c: Vec<i64> =
            train.iter().enumerate().filter(|(_, &v)| g.labels[v] == c).map(|(i, _)| i as i64).collect();
        if of_c.is_empty() {
            continue;
        }
        let x = match params.variant {
            InversionVariant::Enhanced => reconstruct_class(&forward, c, d, params)?,
            InversionVariant::Original => reconstruct_class_original(&forward, c, d, params)?,
        };
        let random = Tensor::rand([d], (Kind::Float, tch::Device::Cpu));
        let class_records = records.index_select(0, &Tensor::from_slice(&of_c));
        let dist = min_distance(&x, &class_records, params.distance);
        let dist_random = min_distance(&random, &class_records, params.distance);
        let conf = tch::no_grad(|| forward(&x.unsqueeze(0)))?.double_value(&[0, c as i64]);
        per_class.push(serde_json::json!({"class": c, "mia_distance": dist, "random_input_distance": dist_random,
                                          "confidence": conf, "l1": x.abs().sum(Kind::Float).double_value(&[])}));
        let sims = to_vec(&(records.matmul(&x) / (&rec_norm * x.norm().clamp_min(1e-12))));
        for (i, &s) in sims.iter().enumerate() {
            if g.labels[train[i]] == c {
                pos.push(s)
            } else {
                neg.push(s)
            }
        }
    }
    let game = Game {
        unit: GameUnit::Practical,
        positive: "a training record of the class the representative was reconstructed for".into(),
        negative: "a training record of another class".into(),
        statement: "With white-box access the adversary reconstructs one representative input per class by Zhang's \
                    Algorithm 4 (or Fredrikson et al.'s original inversion) and is scored by how close it lies to that class's training records (MIA distance) \
                    and how well its cosine similarity singles out the class's records."
            .into(),
    };
    let knowledge = AdversaryKnowledge {
        white_box: true,
        notes: vec!["the reconstruction is queried as an isolated node; no data beyond the model".into()],
        ..Default::default()
    };
    let mut out = Outcome::new(pos, neg, None, game, knowledge);
    let mean = |k: &str| {
        per_class.iter().map(|c| c[k].as_f64().unwrap_or(f64::NAN)).sum::<f64>() / per_class.len().max(1) as f64
    };
    out.details.insert("mean_mia_distance".into(), mean("mia_distance").into());
    out.details.insert("mean_random_input_distance".into(), mean("random_input_distance").into());
    out.details.insert("per_class".into(), serde_json::Value::Array(per_class));
    out.details.insert("variant".into(), serde_json::to_value(params.variant).unwrap_or_default());
    out.details.insert("distance".into(), serde_json::to_value(params.distance).unwrap_or_default());
    Ok(out)
}
