//! Per-node quantities derived from posteriors, shared by the membership and link attacks.
use tch::{Kind, Tensor};

const TINY: f64 = 1e-30;

/// Shannon entropy (nats) of each row of a posterior matrix, [n].
pub fn entropy(p: &Tensor) -> Tensor {
    -(p * p.clamp_min(TINY).log()).sum_dim_intlist(-1, false, Kind::Float)
}

/// [posteriors, one-hot(label)]: the membership attack's input (thesis ch.4 Sec. 4.8.2).
pub fn with_one_hot(p: &Tensor, labels: &[usize], num_classes: usize) -> Tensor {
    let y = Tensor::from_slice(&labels.iter().map(|&l| l as i64).collect::<Vec<_>>());
    Tensor::cat(&[p.to_kind(Kind::Float), y.one_hot(num_classes as i64).to_kind(Kind::Float)], 1)
}

/// Rows of a posterior matrix as f64 vectors.
pub fn rows(p: &Tensor) -> Vec<Vec<f64>> {
    let p = p.to_kind(Kind::Double).contiguous();
    Vec::<Vec<f64>>::try_from(&p).unwrap_or_default()
}

/// Confidence of the true label, p_y.
pub fn confidence(p: &[f64], y: usize) -> f64 {
    p[y]
}

/// Shannon entropy of one posterior vector.
pub fn entropy_of(p: &[f64]) -> f64 {
    -p.iter().map(|&q| if q > 0.0 { q * q.ln() } else { 0.0 }).sum::<f64>()
}

/// Modified entropy of Song & Mittal (2021), Eq. (4):
/// -(1 - p_y) log p_y - sum_{i != y} p_i log(1 - p_i). Low for confident correct predictions.
pub fn modified_entropy(p: &[f64], y: usize) -> f64 {
    let mut m = -(1.0 - p[y]) * p[y].max(TINY).ln();
    for (i, &q) in p.iter().enumerate() {
        if i != y {
            m -= q * (1.0 - q).max(TINY).ln();
        }
    }
    m
}

/// LiRA's logit-scaled confidence log(p_y / (1 - p_y)) (Carlini et al. 2022, Sec. 4), computed
/// stably as log p_y - log(sum_{i != y} p_i).
pub fn scaled_logit(p: &[f64], y: usize) -> f64 {
    let rest: f64 = p.iter().enumerate().filter(|&(i, _)| i != y).map(|(_, &q)| q).sum();
    p[y].max(TINY).ln() - rest.max(TINY).ln()
}
