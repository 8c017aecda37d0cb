//! Node-degree inference (Zhang thesis ch.5, l.1277-1287; spec §3.9 and §6.5): regress each
//! training node's degree from the embedding the trained model gives it. A private model should
//! leave the regression no better than predicting the mean degree, so the figure reported is the
//! cross-validated RMSE beside the mean predictor's RMSE (the degrees' spread) and their ratio.
//! Game Practical: it measures leakage, it bounds no epsilon. Regressor: ridge regression with an
//! intercept, k-fold cross-validation over the nodes (the thesis does not name its regressor;
//! the spec's 2-layer MLP variant is not built here).
use crate::error::{Error, Result};

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
    if folds < 2 || folds > n {
        return Err(Error::invalid("folds", format!("need 2 <= folds <= {n} nodes, got {folds}")));
    }
    if !(lambda >= 0.0 && lambda.is_finite()) {
        return Err(Error::invalid("lambda", format!("must be >= 0 and finite, got {lambda}")));
    }
    if embeddings.iter().chain(degrees).any(|v| !v.is_finite()) {
        return Err(Error::invalid("embeddings", "non-finite embedding or degree"));
    }
    let (mut sse, mut sse_mean) = (0.0, 0.0);
    for f in 0..folds {
        let held = |i: usize| i * folds / n == f;
        let train: Vec<usize> = (0..n).filter(|&i| !held(i)).collect();
        let w = ridge(embeddings, dim, degrees, &train, lambda);
        let mean = train.iter().map(|&i| degrees[i]).sum::<f64>() / train.len() as f64;
        for i in (0..n).filter(|&i| held(i)) {
            let x = &embeddings[i * dim..(i + 1) * dim];
            let pred = w[dim] + x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
            sse += (pred - degrees[i]).powi(2);
            sse_mean += (mean - degrees[i]).powi(2);
        }
    }
    Ok(DegreeInference { rmse: (sse / n as f64).sqrt(), mean_rmse: (sse_mean / n as f64).sqrt() })
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
