//! Dense forms of the sparse graph operators, differentiable in a relaxed adjacency in [0, 1]:
//! what a white-box adversary (model inversion, GraphMI-style graph reconstruction) takes
//! gradients through. Every dense form reads `adj` with rows = targets (entry (v, u) weights
//! u -> v), like the sparse operators, and equals them on the training graph's dense adjacency.
use crate::models::sage::Aggregation;
use tch::{Kind, Tensor};

/// `x` as floats (features and adjacencies may arrive as integers or doubles).
pub fn to_float(x: &Tensor) -> Tensor {
    x.to_kind(Kind::Float)
}

/// `adj` with its diagonal zeroed (the layers that drop self loops: SAGE, GAT, GCN, KProp).
pub fn without_self_loops(adj: &Tensor) -> Tensor {
    let n = adj.size()[0];
    to_float(adj) * (1.0 - Tensor::eye(n, (Kind::Float, adj.device())))
}

/// Dense form of `sage::aggregation_matrix`: A (sum) or A / max(rowsum, 1) (mean), no self loops.
pub fn sage_aggregation_dense(adj: &Tensor, aggregation: Aggregation) -> Tensor {
    let a = without_self_loops(adj);
    match aggregation {
        Aggregation::Sum => a,
        Aggregation::Mean => {
            let deg = a.sum_dim_intlist([1i64].as_slice(), true, Kind::Float).clamp_min(1.0);
            a / deg
        }
    }
}

/// Dense form of `gcn_normalized(_, false)` (LPGNN's KProp aggregator, thesis eq. 3.40):
/// D_in^-1/2 A D_out^-1/2 without self loops; rows and columns of degree zero stay zero.
pub fn kprop_operator_dense(adj: &Tensor) -> Tensor {
    let a = without_self_loops(adj);
    let din = a.sum_dim_intlist([1i64].as_slice(), true, Kind::Float).clamp_min(1e-12).rsqrt();
    let dout = a.sum_dim_intlist([0i64].as_slice(), true, Kind::Float).clamp_min(1e-12).rsqrt();
    din * a * dout
}

/// `steps` applications of `op` to `x`, computed on the narrowest side: when the consumer only
/// reads `x M` for a known `M` [d, m] with m < d (the first layer's input weights), propagate
/// `x M` and lift back with the pseudo-inverse, `h = op^K (x M) M^+`, so that `h M = op^K x M`
/// exactly (M has full column rank) at cost O(n^2 m) per step instead of O(n^2 d).
pub fn propagate(op: &Tensor, x: &Tensor, steps: usize, reads: Option<&Tensor>) -> Tensor {
    match reads {
        Some(m) if m.size()[1] < x.size()[1] && steps > 0 => {
            let mut y = x.matmul(m);
            for _ in 0..steps {
                y = op.matmul(&y);
            }
            y.matmul(&m.linalg_pinv(1e-7, false))
        }
        _ => {
            let mut h = x.shallow_clone();
            for _ in 0..steps {
                h = op.matmul(&h);
            }
            h
        }
    }
}

/// `row_normalize` with a gradient defined at zero rows: an isolated node (as model inversion
/// queries it) aggregates a zero row, where d||x||/dx is 0/0; 1e-24 under the root keeps it finite
/// and changes no value beyond float precision.
pub fn smooth_row_normalize(x: &Tensor) -> Tensor {
    let norm = (x.square().sum_dim_intlist([-1i64].as_slice(), true, Kind::Float) + 1e-24).sqrt().clamp_min(1e-12);
    x / norm
}
