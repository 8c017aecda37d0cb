//! Aggregation perturbation: GAP's Private Multi-hop Aggregation (thesis Algorithm 5) and
//! ProGAP's Normalize-Aggregate-Perturb (Eq. 5.8). Both use SUM aggregation `A^T X` as one sparse
//! matmul, whose edge-level sensitivity is 1 on row-normalised inputs (Lemma 6) and node-level
//! sensitivity sqrt(D)... i.e. D compositions (Lemma 8) on graphs of out-degree <= D.
use crate::data::Graph;
use crate::models::row_normalize;
use tch::Tensor;

/// The sparse aggregation operator `A^T` (row v sums v's in-neighbours), in CSR for fast spmm.
pub fn aggregation_operator(g: &Graph) -> Tensor {
    g.aggregation_tensor().to_sparse_csr(None::<i64>)
}

/// `A^T x` plus N(0, std^2) on every entry (no noise when std = 0).
pub fn perturbed_sum(adj: &Tensor, x: &Tensor, std: f64) -> Tensor {
    let s = adj.mm(x);
    if std > 0.0 {
        &s + s.randn_like() * std
    } else {
        s
    }
}

/// PMA (Algorithm 5): from row-normalised `x0`, K times aggregate, perturb, row-normalise.
/// Returns [x0, x1, ..., xK], each row of unit norm.
pub fn pma(adj: &Tensor, x0: &Tensor, hops: usize, std: f64) -> Vec<Tensor> {
    tch::no_grad(|| {
        let mut out = vec![row_normalize(x0)];
        for k in 0..hops {
            let next = row_normalize(&perturbed_sum(adj, &out[k], std));
            out.push(next);
        }
        out
    })
}

/// NAP (ProGAP Eq. 5.8): row-normalise, aggregate, perturb (the output is not normalised).
pub fn nap(adj: &Tensor, x: &Tensor, std: f64) -> Tensor {
    tch::no_grad(|| perturbed_sum(adj, &row_normalize(x), std))
}
