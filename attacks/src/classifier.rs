//! The attack classifiers: GAP's attack MLP (3 layers, 64 hidden units, batch norm, Adam 0.01,
//! 100 full-batch epochs, best-validation-accuracy checkpoint) and linfa's logistic regression.
use crate::error::{check, Error, Result};
use linfa::traits::Fit;
use ndarray::{Array1, Array2};
use std::collections::HashMap;
use tch::nn::{self, ModuleT, OptimizerConfig};
use tch::{Device, Kind, Tensor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    Selu,
    Relu,
}

/// Hyper-parameters of the attack MLP. Defaults: GAP's node membership attack (SeLU); link
/// stealing uses ReLU (GAP's `test/attack/lsa/attack.conf`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MlpConfig {
    pub layers: usize,
    pub hidden: i64,
    pub activation: Activation,
    pub lr: f64,
    pub epochs: usize,
    pub batch_norm: bool,
}

impl Default for MlpConfig {
    fn default() -> Self {
        MlpConfig { layers: 3, hidden: 64, activation: Activation::Selu, lr: 0.01, epochs: 100, batch_norm: true }
    }
}

/// A small classifier: Linear -> BatchNorm -> activation, repeated, then a Linear head
/// (GAP's layer order).
pub struct AttackMlp {
    vs: nn::VarStore,
    linears: Vec<nn::Linear>,
    norms: Vec<nn::BatchNorm>,
    activation: Activation,
}

impl AttackMlp {
    fn forward(&self, x: &Tensor, train: bool) -> Tensor {
        let mut h = x.shallow_clone();
        let last = self.linears.len() - 1;
        for (i, lin) in self.linears.iter().enumerate() {
            h = h.apply(lin);
            if i < last {
                if let Some(bn) = self.norms.get(i) {
                    h = bn.forward_t(&h, train);
                }
                h = match self.activation {
                    Activation::Selu => h.selu(),
                    Activation::Relu => h.relu(),
                };
            }
        }
        h
    }

    /// Trains on (x, y) with y in 0..num_classes; keeps the parameters of the epoch with the best
    /// accuracy on `val` (strictly better, checked every epoch), or the last epoch without `val`.
    pub fn fit(
        x: &Tensor,
        y: &[i64],
        val: Option<(&Tensor, &[i64])>,
        num_classes: i64,
        cfg: MlpConfig,
        seed: u64,
    ) -> Result<AttackMlp> {
        check!(cfg.layers >= 1 && cfg.hidden >= 1, "mlp", "need at least one layer and one hidden unit");
        check!(x.size()[0] as usize == y.len() && !y.is_empty(), "mlp", "{} samples, {} labels", x.size()[0], y.len());
        tch::manual_seed(seed as i64);
        let vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let d = x.size()[1];
        let mut linears = Vec::new();
        let mut norms = Vec::new();
        for i in 0..cfg.layers {
            let input = if i == 0 { d } else { cfg.hidden };
            let output = if i + 1 == cfg.layers { num_classes } else { cfg.hidden };
            linears.push(nn::linear(&root / format!("lin{i}"), input, output, Default::default()));
            if cfg.batch_norm && i + 1 < cfg.layers {
                norms.push(nn::batch_norm1d(&root / format!("bn{i}"), output, Default::default()));
            }
        }
        let model = AttackMlp { vs, linears, norms, activation: cfg.activation };
        let mut opt = nn::Adam::default().build(&model.vs, cfg.lr)?;
        let x = x.to_kind(Kind::Float);
        let yt = Tensor::from_slice(y);
        let val = val.map(|(vx, vy)| (vx.to_kind(Kind::Float), Tensor::from_slice(vy)));
        let mut best: Option<(f64, HashMap<String, Tensor>)> = None;
        for _ in 0..cfg.epochs {
            let loss = model.forward(&x, true).cross_entropy_for_logits(&yt);
            opt.backward_step(&loss);
            if let Some((vx, vy)) = &val {
                let acc = tch::no_grad(|| model.forward(vx, false).accuracy_for_logits(vy).double_value(&[]));
                if best.as_ref().is_none_or(|(b, _)| acc > *b) {
                    let snap = model.vs.variables().into_iter().map(|(k, v)| (k, v.detach().copy())).collect();
                    best = Some((acc, snap));
                }
            }
        }
        if let Some((_, snap)) = best {
            tch::no_grad(|| {
                for (k, mut v) in model.vs.variables() {
                    v.copy_(&snap[&k]);
                }
            });
        }
        Ok(model)
    }

    /// Class probabilities [n, num_classes] in evaluation mode.
    pub fn predict_proba(&self, x: &Tensor) -> Tensor {
        tch::no_grad(|| self.forward(&x.to_kind(Kind::Float), false).softmax(-1, Kind::Float))
    }

    /// P(class 1) per sample.
    pub fn positive_scores(&self, x: &Tensor) -> Vec<f64> {
        to_vec(&self.predict_proba(x).select(1, 1))
    }
}

/// Binary logistic regression (linfa, L2 penalty 1.0, L-BFGS); returns P(label 1) for `test`.
pub fn logistic_scores(train: &Tensor, y: &[i64], test: &Tensor) -> Result<Vec<f64>> {
    let xtr = to_array2(train);
    let labels: Array1<usize> = y.iter().map(|&v| v as usize).collect();
    let ds = linfa::Dataset::new(xtr, labels);
    let model = linfa_logistic::LogisticRegression::default()
        .max_iterations(200)
        .fit(&ds)
        .map_err(|e| Error::Classifier(e.to_string()))?;
    // linfa's probabilities are those of its "positive" class, the more frequent training label.
    let p = model.predict_probabilities(&to_array2(test));
    let positive_is_one = model.labels().pos.class == 1;
    Ok(p.iter().map(|&q| if positive_is_one { q } else { 1.0 - q }).collect())
}

/// Flattens any tensor into f64 values.
pub fn to_vec(t: &Tensor) -> Vec<f64> {
    Vec::<f64>::try_from(&t.to_kind(Kind::Double).flatten(0, -1)).unwrap_or_default()
}

/// [n, d] tensor into an ndarray matrix.
pub fn to_array2(t: &Tensor) -> Array2<f64> {
    let (n, d) = (t.size()[0] as usize, t.size()[1] as usize);
    Array2::from_shape_vec((n, d), to_vec(t)).expect("shape matches the tensor")
}

/// Splits `n` shuffled sample indices in order into fractions (e.g. GAP's 60/10/30).
pub fn split_indices(n: usize, train: f64, val: f64) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let n_train = (train * n as f64).round() as usize;
    let n_val = (val * n as f64).round() as usize;
    let idx: Vec<i64> = (0..n as i64).collect();
    (idx[..n_train].to_vec(), idx[n_train..n_train + n_val].to_vec(), idx[n_train + n_val..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// linfa orients probabilities by class frequency; ours are always P(label 1), whichever
    /// label is the majority.
    #[test]
    fn logistic_scores_are_probabilities_of_label_one() {
        for ones in [5usize, 15] {
            let xs: Vec<f32> =
                (0..20).map(|i| if i < ones { 2.0 + i as f32 * 0.1 } else { -2.0 - i as f32 * 0.1 }).collect();
            let y: Vec<i64> = (0..20).map(|i| (i < ones) as i64).collect();
            let x = Tensor::from_slice(&xs).reshape([20, 1]);
            let test = Tensor::from_slice(&[3.0f32, -3.0]).reshape([2, 1]);
            let p = logistic_scores(&x, &y, &test).unwrap();
            assert!(p[0] > 0.8 && p[1] < 0.2, "{ones} ones: {p:?}");
        }
    }

    #[test]
    fn attack_mlp_learns_a_separable_problem() {
        let x = Tensor::randn([200, 4], (Kind::Float, Device::Cpu));
        let y: Vec<i64> = to_vec(&x.select(1, 0)).iter().map(|&v| (v > 0.0) as i64).collect();
        let mlp = AttackMlp::fit(&x, &y, Some((&x, &y)), 2, MlpConfig::default(), 1).unwrap();
        let s = mlp.positive_scores(&x);
        let acc = s.iter().zip(&y).filter(|(&p, &t)| (p >= 0.5) == (t == 1)).count();
        assert!(acc > 180, "{acc}/200");
    }
}
