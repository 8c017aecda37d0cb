//! Personalised PageRank for DPAR (Zhang thesis ch.5): the approximate PPR
//! row of one source by ISTA (Fountoulakis et al. 2019, Alg. 3; thesis Alg. 6), a dense power
//! iteration as the reference it is checked against, top-K sparsification, and the
//! power-iteration propagation DPAR runs at inference on the disjoint test graph (eq. 5.19).
//!
//! PPR uses teleport `alpha` and the lazy walk W = (I + A D^-1)/2: p = alpha e_s + (1 - alpha) W p.
//! ISTA works in q = D^-1/2 p on the l1-regularised problem
//!   min_q 1/2 q^T Q q - alpha e_s^T D^-1/2 q + rho alpha |D^1/2 q|_1,
//!   Q = alpha I + (1 - alpha)/2 (I - D^-1/2 A D^-1/2),
//! whose solution is sparse and meets max_i |p_i - p*_i| / d_i <= rho. The thesis's Alg. 6 writes
//! the updates in a variable it calls p that is really D^-1/2 q; we implement the standard q form.
//! The graph must be symmetric (undirected); degrees are in-degrees of that graph.
use crate::data::graph::Graph;
use crate::ensure;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// ISTA settings (thesis l.1241 defaults: alpha 0.25, rho = gamma = 1e-4).
#[derive(Debug, Clone, Copy)]
pub struct ApprParams {
    /// Teleport probability.
    pub alpha: f64,
    /// l1 regularisation: the tolerance max_i |p_i - p*_i| / d_i the solution meets.
    pub rho: f64,
    /// Relative slack of the stopping rule |D^-1/2 grad|_inf <= (1 + gamma) rho alpha.
    pub gamma: f64,
    /// Iteration cap; ISTA converges linearly at rate 1 - alpha, so hitting it means bad input.
    pub max_iter: usize,
}

impl Default for ApprParams {
    fn default() -> Self {
        ApprParams { alpha: 0.25, rho: 1e-4, gamma: 1e-4, max_iter: 10_000 }
    }
}

impl ApprParams {
    pub fn validate(&self) -> Result<()> {
        ensure!(
            self.alpha > 0.0 && self.alpha < 1.0,
            Error::invalid("alpha_ppr", format!("teleport probability must be in (0, 1), got {}", self.alpha))
        );
        ensure!(
            self.rho > 0.0 && self.rho.is_finite(),
            Error::invalid("rho", format!("must be > 0 and finite, got {}", self.rho))
        );
        ensure!(
            self.gamma >= 0.0 && self.gamma.is_finite(),
            Error::invalid("gamma", format!("must be >= 0 and finite, got {}", self.gamma))
        );
        Ok(())
    }
}

/// A sparse row: (column, value) pairs, sorted by column.
pub type SparseRow = Vec<(usize, f64)>;

/// The approximate PPR vector of `source` by ISTA, touching only the active set and its
/// neighbours each iteration (cost independent of the graph size). An isolated source gets e_s
/// (what PPR gives when the node carries a self-loop; our choice). A source of degree
/// >= 1/((1 + gamma) rho) has the empty row: zero already meets the tolerance.
pub fn appr_ista(graph: &Graph, source: usize, params: &ApprParams) -> Result<SparseRow> {
    params.validate()?;
    ensure!(
        source < graph.num_nodes(),
        Error::invalid("source", format!("node {source} is out of range for {} nodes", graph.num_nodes()))
    );
    if graph.in_degree(source) == 0 {
        return Ok(vec![(source, 1.0)]);
    }
    let alpha = params.alpha;
    let sqrt_d = |i: usize| (graph.in_degree(i) as f64).sqrt();
    let diag = alpha + 0.5 * (1.0 - alpha);
    let off = 0.5 * (1.0 - alpha);
    let threshold = params.rho * alpha;
    let mut q: HashMap<usize, f64> = HashMap::new();
    for _ in 0..params.max_iter {
        // Candidates with a possibly non-zero gradient: the support, its neighbours and the source.
        let mut candidates: Vec<usize> = q.keys().copied().collect();
        for &i in q.keys() {
            candidates.extend_from_slice(graph.in_neighbors(i));
        }
        candidates.push(source);
        candidates.sort_unstable();
        candidates.dedup();
        let grad = |i: usize| -> f64 {
            let qi = q.get(&i).copied().unwrap_or(0.0);
            let di = sqrt_d(i);
            let mut neigh = 0.0;
            for &j in graph.in_neighbors(i) {
                if let Some(&qj) = q.get(&j) {
                    neigh += qj / sqrt_d(j);
                }
            }
            let mut g = diag * qi - off * neigh / di;
            if i == source {
                g -= alpha / di;
            }
            g
        };
        let grads: Vec<(usize, f64)> = candidates.iter().map(|&i| (i, grad(i))).collect();
        let worst = grads.iter().map(|&(i, g)| g.abs() / sqrt_d(i)).fold(0.0, f64::max);
        if worst <= (1.0 + params.gamma) * threshold {
            let mut row: SparseRow = q.iter().map(|(&i, &qi)| (i, qi * sqrt_d(i))).collect();
            row.sort_unstable_by_key(|&(i, _)| i);
            return Ok(row);
        }
        let mut next = HashMap::with_capacity(grads.len());
        for (i, g) in grads {
            let qi = q.get(&i).copied().unwrap_or(0.0);
            let v = qi - g - threshold * sqrt_d(i);
            if v > 0.0 {
                next.insert(i, v);
            }
        }
        q = next;
    }
    Err(Error::invalid(
        "rho",
        format!("ISTA did not reach tolerance rho = {} within {} iterations", params.rho, params.max_iter),
    ))
}

/// Exact lazy-walk PPR of `source` by power iteration (dense; a reference for tests):
/// p <- alpha e_s + (1 - alpha) (p + A D^-1 p) / 2, `iters` times from p = 0. Isolated nodes keep
/// their mass (self-loop convention, as [`appr_ista`]).
pub fn ppr_power_iteration(graph: &Graph, source: usize, alpha: f64, iters: usize) -> Vec<f64> {
    let n = graph.num_nodes();
    let mut p = vec![0.0; n];
    for _ in 0..iters {
        let mut walk = vec![0.0; n];
        for (j, &pj) in p.iter().enumerate() {
            if pj == 0.0 {
                continue;
            }
            let d = graph.in_degree(j);
            if d == 0 {
                walk[j] += pj;
            } else {
                for &i in graph.in_neighbors(j) {
                    walk[i] += pj / d as f64;
                }
            }
        }
        for i in 0..n {
            p[i] = (1.0 - alpha) * 0.5 * (p[i] + walk[i]);
        }
        p[source] += alpha;
    }
    p
}

/// The `k` largest entries of `row` (ties broken by the smaller column), returned sorted by column.
pub fn top_k(row: &[(usize, f64)], k: usize) -> SparseRow {
    let mut sorted = row.to_vec();
    sorted.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    sorted.truncate(k);
    sorted.sort_unstable_by_key(|&(i, _)| i);
    sorted
}

/// DPAR's inference on the (disjoint) test graph (eq. 5.19): Q0 = H,
/// Q_p = (1 - alpha) D^-1 A Q_{p-1} + alpha H, `steps` times. `h` is row-major n x c; an isolated
/// test node's D^-1 A row is zero (our choice), so its output is alpha H.
pub fn propagate(graph: &Graph, h: &[f32], cols: usize, alpha: f64, steps: usize) -> Result<Vec<f32>> {
    let n = graph.num_nodes();
    ensure!(h.len() == n * cols, Error::invalid("features", format!("expected {n} x {cols} values, got {}", h.len())));
    let mut q = h.to_vec();
    for _ in 0..steps {
        let mut next = vec![0f32; n * cols];
        for i in 0..n {
            let neigh = graph.in_neighbors(i);
            let out = &mut next[i * cols..(i + 1) * cols];
            if !neigh.is_empty() {
                let w = ((1.0 - alpha) / neigh.len() as f64) as f32;
                for &j in neigh {
                    for (o, &x) in out.iter_mut().zip(&q[j * cols..(j + 1) * cols]) {
                        *o += w * x;
                    }
                }
            }
            for (o, &x) in out.iter_mut().zip(&h[i * cols..(i + 1) * cols]) {
                *o += alpha as f32 * x;
            }
        }
        q = next;
    }
    Ok(q)
}
