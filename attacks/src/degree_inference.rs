//! Node-degree inference (Zhang thesis ch.5, l.1277-1287): regress each
//! training node's degree from the embedding the trained model gives it. A private model should
//! leave the regression no better than predicting the mean degree, so the figure reported is the
//! cross-validated RMSE beside the mean predictor's RMSE (the degrees' spread) and their ratio.
//! Game Practical: it measures leakage, it bounds no epsilon. Regressor: ridge regression with an
//! intercept, k-fold cross-validation over the nodes (the thesis does not name its regressor;
//! the spec's 2-layer MLP variant is not built here).
//!
//! As an attack (`degree-inference`): the target hands its training-node embeddings (DPAR: z_v =
//! sum_u Pi_vu f(X_u) over its private rows); the ground truth is each node's degree in the
//! training graph (the training split's induced subgraph, train-test edges deleted as DPAR does).
//! The ROC is that of the held-out predicted degree separating nodes above the median degree
//! from the rest, so the common summary has a meaning too.
use crate::error::{Error, Result};
use crate::threat::{Access, AdversaryKnowledge, Attack, Game, GameUnit, Outcome, Target};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

/// Regression settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DegreeInferenceParams {
    /// Cross-validation folds.
    pub folds: usize,
    /// Ridge penalty on the weights.
    pub lambda: f64,
}

impl Default for DegreeInferenceParams {
    fn default() -> Self {
        DegreeInferenceParams { folds: 5, lambda: 1e-3 }
    }
}

impl Attack for DegreeInferenceParams {
    fn game(&self) -> GameUnit {
        GameUnit::Practical
    }
    /// The training-node embeddings the deployment released (DPAR's private rows).
    fn requires(&self) -> Access {
        Access { black_box: true, ..Access::default() }
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        degree_attack(target, self, seed)
    }
}

/// The `degree-inference` attack (game Practical): RMSE of the regression against the mean
/// predictor's, in the details; scores = held-out predicted degrees.
pub fn degree_attack(target: &Target, params: &DegreeInferenceParams, seed: u64) -> Result<Outcome> {
    let (nodes, emb) = target.black_box.training_embeddings()?.ok_or_else(|| {
        Error::Unsupported("the target releases no training-node embeddings (the dpar-* methods do)".into())
    })?;
    let g = target.graph;
    let mut in_train = vec![false; g.num_nodes];
    for &v in &target.split.train {
        in_train[v] = true;
    }
    let mut deg = vec![0f64; g.num_nodes];
    for &(u, v) in &g.edges {
        if in_train[u] && in_train[v] {
            deg[u] += 1.0;
            deg[v] += 1.0;
        }
    }
    if emb.dim() != 2 || emb.size()[0] as usize != nodes.len() || nodes.iter().any(|&v| v >= g.num_nodes) {
        return Err(Error::invalid("embeddings", format!("{:?} for {} nodes", emb.size(), nodes.len())));
    }
    let dim = emb.size()[1] as usize;
    let flat = Vec::<f32>::try_from(&emb.to_kind(tch::Kind::Float).flatten(0, -1))
        .map_err(|e| Error::invalid("embeddings", e))?;
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    let x: Vec<f64> = order.iter().flat_map(|&i| flat[i * dim..(i + 1) * dim].iter().map(|&v| v as f64)).collect();
    let y: Vec<f64> = order.iter().map(|&i| deg[nodes[i]]).collect();
    let (pred, r) = cross_validated(&x, dim, &y, params.folds, params.lambda)?;
    let mut sorted = y.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let (mut pos, mut neg) = (vec![], vec![]);
    for (p, d) in pred.iter().zip(&y) {
        if *d > median {
            pos.push(*p)
        } else {
            neg.push(*p)
        }
    }
    if pos.is_empty() || neg.is_empty() {
        return Err(Error::invalid("degrees", format!("every embedded node has degree {median}: nothing to infer")));
    }
    let game = Game {
        unit: GameUnit::Practical,
        positive: format!("a training node of degree above the median {median}"),
        negative: format!("a training node of degree at most {median}"),
        statement: format!(
            "The adversary holds the embeddings the model computed for its {} training nodes and the true degree of \
             some of them ({}-fold cross-validation), and regresses the others' degree in the training graph \
             (ridge regression); RMSE against the mean predictor's.",
            nodes.len(),
            params.folds
        ),
    };
    let know = AdversaryKnowledge {
        white_box: false,
        black_box: true,
        notes: vec!["training-node embeddings released; degrees of the other folds' nodes known".into()],
        ..Default::default()
    };
    let mut out = Outcome::new(pos, neg, None, game, know);
    out.details.insert("rmse".into(), r.rmse.into());
    out.details.insert("mean_predictor_rmse".into(), r.mean_rmse.into());
    out.details.insert("rmse_ratio".into(), r.ratio().into());
    out.details.insert("nodes".into(), nodes.len().into());
    out.details.insert("mean_degree".into(), (y.iter().sum::<f64>() / y.len() as f64).into());
    Ok(out)
}

/// Cross-validated RMSEs of the degree regression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DegreeInference {
    /// RMSE of the ridge regression on held-out folds.
    pub rmse: f64,
    /// RMSE of predicting each held-out fold by the training folds' mean degree.
    pub mean_rmse: f64,
}

impl DegreeInference {
    /// rmse / mean_rmse: below 1 means the embeddings reveal degrees.
    pub fn ratio(&self) -> f64 {
        self.rmse / self.mean_rmse
    }
}

/// Ridge regression of `degrees` on `embeddings` (row-major, `degrees.len()` rows of `dim`),
/// `folds`-fold cross-validation over nodes in their given order (shuffle beforehand), penalty
/// `lambda` on the weights (not the intercept).
pub fn degree_inference(
    embeddings: &[f64],
    dim: usize,
    degrees: &[f64],
    folds: usize,
    lambda: f64,
) -> Result<DegreeInference> {
    let n = degrees.len();
    if dim == 0 || embeddings.len() != n * dim {
        return Err(Error::invalid("embeddings", format!("expected {n} x {dim} values, got {}", embeddings.len())));
    }
    Ok(cross_validated(embeddings, dim, degrees, folds, lambda)?.1)
}

/// Held-out predictions of every node and the two RMSEs (see [`degree_inference`]), after
/// checking the folds, lambda and that every embedding and degree is finite.
fn cross_validated(
    embeddings: &[f64],
    dim: usize,
    degrees: &[f64],
    folds: usize,
    lambda: f64,
) -> Result<(Vec<f64>, DegreeInference)> {
    let n = degrees.len();
    if folds < 2 || folds > n {
        return Err(Error::invalid("folds", format!("need 2 <= folds <= {n} nodes, got {folds}")));
    }
    if !(lambda >= 0.0 && lambda.is_finite()) {
        return Err(Error::invalid("lambda", format!("must be >= 0 and finite, got {lambda}")));
    }
    if embeddings.iter().chain(degrees).any(|v| !v.is_finite()) {
        return Err(Error::invalid("embeddings", "non-finite embedding or degree"));
    }
    let mut preds = vec![0.0; n];
    let (mut sse, mut sse_mean) = (0.0, 0.0);
    for f in 0..folds {
        let held = |i: usize| i * folds / n == f;
        let train: Vec<usize> = (0..n).filter(|&i| !held(i)).collect();
        let w = ridge(embeddings, dim, degrees, &train, lambda);
        let mean = train.iter().map(|&i| degrees[i]).sum::<f64>() / train.len() as f64;
        for i in (0..n).filter(|&i| held(i)) {
            let x = &embeddings[i * dim..(i + 1) * dim];
            let pred = w[dim] + x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
            preds[i] = pred;
            sse += (pred - degrees[i]).powi(2);
            sse_mean += (mean - degrees[i]).powi(2);
        }
    }
    Ok((preds, DegreeInference { rmse: (sse / n as f64).sqrt(), mean_rmse: (sse_mean / n as f64).sqrt() }))
}

/// Weights (dim) and intercept (last) of ridge regression on the rows `idx`, by the normal
/// equations on centred data, solved by Gaussian elimination with partial pivoting.
fn ridge(x: &[f64], dim: usize, y: &[f64], idx: &[usize], lambda: f64) -> Vec<f64> {
    let m = idx.len() as f64;
    let mut mx = vec![0.0; dim];
    let mut my = 0.0;
    for &i in idx {
        for (a, b) in mx.iter_mut().zip(&x[i * dim..(i + 1) * dim]) {
            *a += b / m;
        }
        my += y[i] / m;
    }
    // A = Xc^T Xc + (lambda + tiny) I, b = Xc^T yc; the tiny ridge keeps A invertible.
    let mut a = vec![0.0; dim * (dim + 1)];
    for &i in idx {
        let row = &x[i * dim..(i + 1) * dim];
        let yc = y[i] - my;
        for r in 0..dim {
            let xr = row[r] - mx[r];
            for c in 0..dim {
                a[r * (dim + 1) + c] += xr * (row[c] - mx[c]);
            }
            a[r * (dim + 1) + dim] += xr * yc;
        }
    }
    for r in 0..dim {
        a[r * (dim + 1) + r] += lambda + 1e-9;
    }
    let w = solve(&mut a, dim);
    let intercept = my - w.iter().zip(&mx).map(|(a, b)| a * b).sum::<f64>();
    let mut out = w;
    out.push(intercept);
    out
}

/// Solves the augmented dim x (dim + 1) system in place.
fn solve(a: &mut [f64], dim: usize) -> Vec<f64> {
    let w = dim + 1;
    for col in 0..dim {
        let piv = (col..dim).max_by(|&p, &q| a[p * w + col].abs().total_cmp(&a[q * w + col].abs())).unwrap();
        for c in 0..w {
            a.swap(col * w + c, piv * w + c);
        }
        let d = a[col * w + col];
        for r in 0..dim {
            if r != col {
                let f = a[r * w + col] / d;
                for c in col..w {
                    a[r * w + c] -= f * a[col * w + c];
                }
            }
        }
    }
    (0..dim).map(|r| a[r * w + dim] / a[r * w + r]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Degrees from a heavy-tailed law; embeddings either carry log-degree (leaky) or not.
    fn data(leaky: bool) -> (Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (n, dim) = (600, 8);
        let mut x = Vec::with_capacity(n * dim);
        let mut deg = Vec::with_capacity(n);
        for _ in 0..n {
            let d = (1.0 / rng.gen_range(0.02f64..1.0)).floor();
            deg.push(d);
            for j in 0..dim {
                let noise: f64 = rng.gen_range(-1.0..1.0);
                x.push(if leaky && j < 2 { d * (j + 1) as f64 * 0.1 + 0.05 * noise } else { noise });
            }
        }
        (x, deg)
    }

    #[test]
    fn regression_finds_degree_in_a_leaky_embedding_and_not_in_noise() {
        let (x, deg) = data(true);
        let leaky = degree_inference(&x, 8, &deg, 5, 1e-3).unwrap();
        assert!(leaky.ratio() < 0.2, "{leaky:?}");
        let (x, deg) = data(false);
        let private = degree_inference(&x, 8, &deg, 5, 1e-3).unwrap();
        // Embeddings independent of degree: no better than the mean (up to estimation noise).
        assert!(private.ratio() > 0.95, "{private:?}");
        assert!(degree_inference(&x, 7, &deg, 5, 1e-3).is_err());
        assert!(degree_inference(&x, 8, &deg, 1, 1e-3).is_err());
    }
}
