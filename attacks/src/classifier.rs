//! The attack classifiers: GAP's attack MLP (3 layers, 64 hidden units, batch norm, Adam 0.01,
//! 100 full-batch epochs, best-validation-accuracy checkpoint), linfa's logistic regression, and
//! smartcore's decision trees (as a random forest) and k-nearest neighbours. Membership inference
//! and link stealing take any of them (`AttackModel`), so an auditor can check that a weak result
//! is not an artefact of one classifier.
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

/// The classifier an attack trains on its features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttackModel {
    /// GAP's attack MLP (tch).
    #[default]
    Mlp,
    /// L2-penalised logistic regression (linfa-logistic).
    Logistic,
    /// 100 smartcore decision trees, each on a bootstrap sample and a random sqrt(d) feature
    /// subset; the score is the fraction of trees voting "1".
    RandomForest,
    /// smartcore's k-nearest neighbours (k = 15, Euclidean, uniform weights); the score is the
    /// fraction of neighbours labelled 1.
    Knn,
}

impl AttackModel {
    pub const ALL: [AttackModel; 4] =
        [AttackModel::Mlp, AttackModel::Logistic, AttackModel::RandomForest, AttackModel::Knn];
    pub fn name(self) -> &'static str {
        match self {
            AttackModel::Mlp => "mlp",
            AttackModel::Logistic => "logistic",
            AttackModel::RandomForest => "random-forest",
            AttackModel::Knn => "knn",
        }
    }
    pub fn parse(s: &str) -> Option<AttackModel> {
        AttackModel::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Trains `model` on (train, y) with y in {0, 1} and returns P(label 1) for `test`. `val` selects
/// the MLP's checkpoint; the other models do not use it.
pub fn binary_scores(
    model: AttackModel,
    mlp: MlpConfig,
    train: &Tensor,
    y: &[i64],
    val: Option<(&Tensor, &[i64])>,
    test: &Tensor,
    seed: u64,
) -> Result<Vec<f64>> {
    check!(
        train.size()[0] as usize == y.len() && !y.is_empty(),
        "classifier",
        "{} samples, {} labels",
        train.size()[0],
        y.len()
    );
    match model {
        AttackModel::Mlp => Ok(AttackMlp::fit(train, y, val, 2, mlp, seed)?.positive_scores(test)),
        AttackModel::Logistic => logistic_scores(train, y, test),
        AttackModel::RandomForest => forest_scores(train, y, test, seed),
        AttackModel::Knn => knn_scores(train, y, test),
    }
}

fn dense(t: &Tensor) -> Result<smartcore::linalg::basic::matrix::DenseMatrix<f64>> {
    let (n, d) = (t.size()[0] as usize, t.size()[1] as usize);
    smartcore::linalg::basic::matrix::DenseMatrix::new(n, d, to_vec(t), false)
        .map_err(|e| Error::Classifier(e.to_string()))
}

/// smartcore 0.7's `RandomForestClassifier` returns votes only, not the vote fraction a ROC needs,
/// so the forest is assembled from its decision trees: bootstrap rows, a random feature subset.
fn forest_scores(train: &Tensor, y: &[i64], test: &Tensor, seed: u64) -> Result<Vec<f64>> {
    use rand::seq::index::sample;
    use rand::{Rng, SeedableRng};
    use smartcore::tree::decision_tree_classifier::{DecisionTreeClassifier, DecisionTreeClassifierParameters};
    const TREES: usize = 100;
    let (n, d) = (train.size()[0], train.size()[1] as usize);
    let m = ((d as f64).sqrt().floor() as usize).max(1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut votes = vec![0.0; test.size()[0] as usize];
    for t in 0..TREES {
        let rows: Vec<i64> = (0..n).map(|_| rng.gen_range(0..n)).collect();
        let yb: Vec<i64> = rows.iter().map(|&r| y[r as usize]).collect();
        if yb.iter().all(|&v| v == yb[0]) {
            // A one-class bootstrap sample: the tree votes that class everywhere.
            votes.iter_mut().for_each(|v| *v += yb[0] as f64);
            continue;
        }
        let cols: Vec<i64> = sample(&mut rng, d, m).into_iter().map(|c| c as i64).collect();
        let cols = Tensor::from_slice(&cols);
        let xb = dense(&train.index_select(0, &Tensor::from_slice(&rows)).index_select(1, &cols))?;
        let params = DecisionTreeClassifierParameters { seed: Some(seed.wrapping_add(t as u64)), ..Default::default() };
        let tree = DecisionTreeClassifier::fit(&xb, &yb, params).map_err(|e| Error::Classifier(e.to_string()))?;
        let pred: Vec<i64> =
            tree.predict(&dense(&test.index_select(1, &cols))?).map_err(|e| Error::Classifier(e.to_string()))?;
        for (v, p) in votes.iter_mut().zip(pred) {
            *v += p as f64;
        }
    }
    Ok(votes.into_iter().map(|v| v / TREES as f64).collect())
}

fn knn_scores(train: &Tensor, y: &[i64], test: &Tensor) -> Result<Vec<f64>> {
    use smartcore::neighbors::knn_classifier::{KNNClassifier, KNNClassifierParameters};
    let k = 15.min(y.len());
    let params = KNNClassifierParameters::default().with_k(k);
    let model =
        KNNClassifier::fit(&dense(train)?, &y.to_vec(), params).map_err(|e| Error::Classifier(e.to_string()))?;
    let proba = model.predict_proba(&dense(test)?).map_err(|e| Error::Classifier(e.to_string()))?;
    // Columns follow the sorted distinct training labels: label 1 is the last when both occur.
    let has_one = y.contains(&1);
    let has_zero = y.contains(&0);
    Ok(proba
        .iter()
        .map(|p| {
            if has_one {
                if has_zero {
                    p[1]
                } else {
                    p[0]
                }
            } else {
                0.0
            }
        })
        .collect())
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

    /// Every attack model separates a noisy but learnable problem (label = sign of feature 0),
    /// scoring held-out samples well above chance.
    #[test]
    fn every_attack_model_beats_chance_on_a_learnable_problem() {
        tch::manual_seed(3);
        let x = Tensor::randn([600, 5], (Kind::Float, Device::Cpu));
        let noisy = &x.select(1, 0) + Tensor::randn([600], (Kind::Float, Device::Cpu)) * 0.5;
        let y: Vec<i64> = to_vec(&noisy).iter().map(|&v| (v > 0.0) as i64).collect();
        let (xtr, xte) = (x.narrow(0, 0, 400), x.narrow(0, 400, 200));
        for model in AttackModel::ALL {
            let s = binary_scores(model, MlpConfig::default(), &xtr, &y[..400], None, &xte, 7).unwrap();
            assert_eq!(s.len(), 200);
            assert!(s.iter().all(|p| (0.0..=1.0).contains(p)), "{model:?} scores are probabilities");
            let (pos, neg): (Vec<_>, Vec<_>) = s.iter().zip(&y[400..]).partition(|(_, &t)| t == 1);
            let pos: Vec<f64> = pos.into_iter().map(|(&p, _)| p).collect();
            let neg: Vec<f64> = neg.into_iter().map(|(&p, _)| p).collect();
            let auc = crate::metrics::Roc::new(&pos, &neg).auc();
            assert!(auc > 0.8, "{model:?}: AUC {auc}");
        }
        assert_eq!(AttackModel::parse("random-forest"), Some(AttackModel::RandomForest));
        assert_eq!(AttackModel::parse("svm"), None);
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
