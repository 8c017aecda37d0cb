//! GCN (Kipf & Welling 2017): symmetric normalisation D^-1/2 (A + I) D^-1/2 followed by a linear
//! map. The same normaliser without self loops is LPGNN's KProp aggregator (thesis eq. 3.40).
use crate::data::Graph;
use tch::{nn, Kind, Tensor};

/// A sparse [N, N] float tensor from (target, source, value) triples, rows = targets, so that
/// `adj.mm(x)` aggregates what each node receives. Repeated pairs are summed.
pub fn sparse_adjacency(n: usize, mut entries: Vec<(usize, usize, f32)>) -> Tensor {
    // Sorted here (a stable sort, linear on the edge lists' usual row-major order) so that a list
    // without repeats is already coalesced: libtorch's coalesce sorts every entry again.
    entries.sort_by_key(|&(v, u, _)| (v, u));
    let repeats = entries.windows(2).any(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1));
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for (v, u, w) in entries {
        rows.push(v as i64);
        cols.push(u as i64);
        vals.push(w);
    }
    let idx = Tensor::stack(&[Tensor::from_slice(&rows), Tensor::from_slice(&cols)], 0);
    let n = n as i64;
    let coo = Tensor::sparse_coo_tensor_indices_size(
        &idx,
        &Tensor::from_slice(&vals),
        [n, n],
        (Kind::Float, tch::Device::Cpu),
        !repeats,
    );
    let coo = if repeats { coo.coalesce() } else { coo };
    coo.to_device(crate::device::current())
}

/// Symmetric normalisation: entry (v, u) = 1/sqrt(deg(u) deg(v)) for every edge u -> v, with
/// deg counting the self loop when `self_loops`. Nodes of degree zero contribute nothing.
pub fn gcn_normalized(graph: &Graph, self_loops: bool) -> Tensor {
    let n = graph.num_nodes();
    let extra = usize::from(self_loops);
    let din: Vec<f32> = graph.in_degrees().iter().map(|&d| (d + extra) as f32).collect();
    let dout: Vec<f32> = graph.out_degrees().iter().map(|&d| (d + extra) as f32).collect();
    let mut entries = Vec::with_capacity(graph.num_directed_edges() + n);
    for (u, v) in graph.edges() {
        if u != v {
            entries.push((v, u, 1.0 / (din[v] * dout[u]).sqrt()));
        }
    }
    if self_loops {
        entries.extend((0..n).map(|v| (v, v, 1.0 / (din[v] * dout[v]).sqrt())));
    }
    sparse_adjacency(n, entries)
}

/// The dense, differentiable form of `gcn_normalized(_, true)` for a relaxed adjacency `adj`
/// [n, n] (rows = targets, entries in [0, 1]): D_in^-1/2 (A + I) D_out^-1/2 with degrees the row
/// and column sums of A + I, so that white-box attacks (GraphMI-style graph reconstruction, model
/// inversion on an isolated node) can take gradients with respect to the edges.
pub fn gcn_normalized_dense(adj: &Tensor) -> Tensor {
    let n = adj.size()[0];
    let a = adj.to_kind(Kind::Float) + Tensor::eye(n, (Kind::Float, adj.device()));
    let din = a.sum_dim_intlist([1i64].as_slice(), true, Kind::Float).rsqrt();
    let dout = a.sum_dim_intlist([0i64].as_slice(), true, Kind::Float).rsqrt();
    din * a * dout
}

/// One GCN layer: Â X W + b, with Â from `gcn_normalized(graph, true)`.
#[derive(Debug)]
pub struct GcnConv {
    lin: nn::Linear,
    bias: Tensor,
}

impl GcnConv {
    pub fn new(vs: &nn::Path, in_dim: i64, out_dim: i64) -> Self {
        let lin = nn::linear(vs / "lin", in_dim, out_dim, nn::LinearConfig { bias: false, ..Default::default() });
        let bias = vs.zeros("bias", &[out_dim]);
        GcnConv { lin, bias }
    }
    pub fn forward(&self, x: &Tensor, adj_gcn: &dyn super::sparse::Propagate) -> Tensor {
        adj_gcn.propagate(&x.apply(&self.lin)) + &self.bias
    }
    /// W^T [in, out]: the layer reads x only through x W^T (white-box propagation shortcut).
    pub fn input_weights(&self) -> Tensor {
        self.lin.ws.tr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unsorted triples with a repeated pair give libtorch's coalesced matrix (repeats summed).
    #[test]
    fn sparse_adjacency_sorts_and_sums_repeats() {
        let entries = vec![(2, 0, 1.0f32), (0, 1, 2.0), (2, 0, 0.5), (1, 2, 3.0), (0, 0, 4.0)];
        let ours = sparse_adjacency(3, entries.clone());
        assert!(ours.is_coalesced());
        let want = tch::Tensor::from_slice(&[4.0f32, 2.0, 0.0, 0.0, 0.0, 3.0, 1.5, 0.0, 0.0]).view([3, 3]);
        assert!(ours.to_dense(None, false).equal(&want));
        let unique = sparse_adjacency(3, entries[..2].to_vec());
        assert!(unique.is_coalesced());
        assert_eq!(unique.indices().size(), vec![2, 2]);
    }

    #[test]
    fn normalisation_matches_the_formula() {
        // Path 0 - 1 - 2.
        let g = Graph::from_edges(3, [(0, 1), (1, 0), (1, 2), (2, 1)]).unwrap();
        let a = gcn_normalized(&g, true).to_dense(None, false);
        let d = [2f32, 3.0, 2.0];
        let expect = |v: usize, u: usize| 1.0 / (d[u] * d[v]).sqrt();
        let want = Tensor::from_slice(&[
            expect(0, 0),
            expect(0, 1),
            0.0,
            expect(1, 0),
            expect(1, 1),
            expect(1, 2),
            0.0,
            expect(2, 1),
            expect(2, 2),
        ])
        .view([3, 3]);
        assert!(a.allclose(&want, 1e-6, 1e-6, false));
        let dense = gcn_normalized_dense(&g.aggregation_tensor().to_dense(None, false));
        assert!(a.allclose(&dense, 1e-6, 1e-6, false));
        let b = gcn_normalized(&g, false).to_dense(None, false);
        assert!((b.double_value(&[0, 1]) - 1.0 / 2f64.sqrt()).abs() < 1e-6);
        assert_eq!(b.double_value(&[1, 1]), 0.0);
    }
}
