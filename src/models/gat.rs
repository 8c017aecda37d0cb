//! GAT (Velickovic et al. 2018): multi-head attention over in-neighbours (self loop included),
//! written on the edge list: per-edge scores are gathered with index_select, normalised by a
//! softmax per target node (sums by index_add), and messages are scattered back with index_add.
use tch::{nn, Kind, Tensor};

/// The edge list as (sources, targets) int64 tensors, self loops appended, for attention layers.
#[derive(Debug)]
pub struct EdgeList {
    pub src: Tensor,
    pub dst: Tensor,
    pub num_nodes: i64,
}

impl EdgeList {
    pub fn with_self_loops(graph: &crate::data::Graph) -> Self {
        let n = graph.num_nodes();
        let (mut src, mut dst): (Vec<i64>, Vec<i64>) =
            graph.edges().filter(|(u, v)| u != v).map(|(u, v)| (u as i64, v as i64)).unzip();
        src.extend(0..n as i64);
        dst.extend(0..n as i64);
        EdgeList {
            src: crate::device::place(Tensor::from_slice(&src)),
            dst: crate::device::place(Tensor::from_slice(&dst)),
            num_nodes: n as i64,
        }
    }
}

#[derive(Debug)]
pub struct GatConv {
    lin: nn::Linear,
    att_src: Tensor,
    att_dst: Tensor,
    bias: Tensor,
    heads: i64,
    out_dim: i64,
    concat: bool,
    negative_slope: f64,
    attention_dropout: f64,
}

impl GatConv {
    /// `heads` attention heads of width `out_dim`; concatenated ([N, heads*out]) or averaged.
    pub fn new(vs: &nn::Path, in_dim: i64, out_dim: i64, heads: i64, concat: bool) -> Self {
        let lin =
            nn::linear(vs / "lin", in_dim, heads * out_dim, nn::LinearConfig { bias: false, ..Default::default() });
        let bound = (6.0 / (heads + out_dim) as f64).sqrt();
        let init = nn::Init::Uniform { lo: -bound, up: bound };
        let att_src = vs.var("att_src", &[1, heads, out_dim], init);
        let att_dst = vs.var("att_dst", &[1, heads, out_dim], init);
        let bias = vs.zeros("bias", &[if concat { heads * out_dim } else { out_dim }]);
        GatConv { lin, att_src, att_dst, bias, heads, out_dim, concat, negative_slope: 0.2, attention_dropout: 0.0 }
    }

    pub fn output_dim(&self) -> i64 {
        if self.concat {
            self.heads * self.out_dim
        } else {
            self.out_dim
        }
    }

    pub fn forward_t(&self, x: &Tensor, edges: &EdgeList, train: bool) -> Tensor {
        let n = edges.num_nodes;
        let (h, f) = (self.heads, self.out_dim);
        let z = x.apply(&self.lin).view([n, h, f]);
        let score_src = (&z * &self.att_src).sum_dim_intlist(-1, false, Kind::Float);
        let score_dst = (&z * &self.att_dst).sum_dim_intlist(-1, false, Kind::Float);
        let e = score_src.index_select(0, &edges.src) + score_dst.index_select(0, &edges.dst);
        let e = e.maximum(&(&e * self.negative_slope)); // LeakyReLU
                                                        // Softmax over each target's incoming edges, shifted by that target's largest score so
                                                        // that exp() neither overflows nor underflows a whole neighbourhood (noisy LDP features
                                                        // give scores in the hundreds).
        let max = Tensor::full([n, h], f64::NEG_INFINITY, (Kind::Float, x.device())).index_reduce(
            0,
            &edges.dst,
            &e.detach(),
            "amax",
            true,
        );
        let ex = (e - max.index_select(0, &edges.dst)).exp();
        let denom = Tensor::zeros([n, h], (Kind::Float, x.device())).index_add(0, &edges.dst, &ex);
        let alpha = (ex / denom.index_select(0, &edges.dst)).dropout(self.attention_dropout, train);
        let msg = z.index_select(0, &edges.src) * alpha.unsqueeze(-1);
        let out = Tensor::zeros([n, h, f], (Kind::Float, x.device())).index_add(0, &edges.dst, &msg);
        let out = if self.concat { out.view([n, h * f]) } else { out.mean_dim(1, false, Kind::Float) };
        out + &self.bias
    }
}

impl GatConv {
    /// W^T [in, heads * out]: the layer reads x only through x W^T.
    pub fn input_weights(&self) -> Tensor {
        self.lin.ws.tr()
    }

    /// Eval-mode attention on a dense relaxed adjacency `adj` [n, n] (rows = targets, entries in
    /// [0, 1]), for white-box attacks: with W = A (diagonal dropped) + I, the attention of target i
    /// on source j is W_ij exp(e_ij) / sum_k W_ik exp(e_ik), which on a 0/1 adjacency is exactly
    /// the edge-list softmax of `forward_t`, and is differentiable in every entry of A. One head
    /// at a time keeps memory at a few [n, n] matrices.
    pub fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        let n = x.size()[0];
        let (h, f) = (self.heads, self.out_dim);
        let eye = Tensor::eye(n, (Kind::Float, x.device()));
        let w: Tensor = adj.to_kind(Kind::Float) * (1.0 - &eye) + &eye;
        let z = x.apply(&self.lin).view([n, h, f]);
        let score_src = (&z * &self.att_src).sum_dim_intlist(-1, false, Kind::Float);
        let score_dst = (&z * &self.att_dst).sum_dim_intlist(-1, false, Kind::Float);
        let heads: Vec<Tensor> = (0..h)
            .map(|k| {
                let e = score_dst.select(1, k).unsqueeze(1) + score_src.select(1, k).unsqueeze(0);
                let e = e.maximum(&(&e * self.negative_slope)); // LeakyReLU
                                                                // Shift by each row's largest score over its (self-loop included) neighbourhood.
                let masked = e.detach().masked_fill(&w.le(0.0), f64::NEG_INFINITY);
                let max = masked.amax([1i64].as_slice(), true);
                let p = &w * (e - max).clamp_max(60.0).exp();
                let alpha = &p / p.sum_dim_intlist([1i64].as_slice(), true, Kind::Float).clamp_min(1e-30);
                alpha.mm(&z.select(1, k))
            })
            .collect();
        let out = Tensor::stack(&heads, 1);
        let out = if self.concat { out.view([n, h * f]) } else { out.mean_dim(1, false, Kind::Float) };
        out + &self.bias
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Graph;

    /// Attention weights into each node sum to one: with identical inputs every node's output is
    /// the same vector (a convex combination of equal messages).
    #[test]
    fn attention_is_a_convex_combination() {
        let g = Graph::from_edges(4, [(0, 1), (1, 0), (2, 1), (1, 2), (3, 1)]).unwrap();
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let conv = GatConv::new(&vs.root(), 3, 5, 4, true);
        let edges = EdgeList::with_self_loops(&g);
        let x = Tensor::ones([4, 3], (Kind::Float, tch::Device::Cpu));
        let out = conv.forward_t(&x, &edges, false);
        assert_eq!(out.size(), vec![4, 20]);
        let first = out.get(0).unsqueeze(0).expand([4, 20], false);
        assert!(out.allclose(&first, 1e-5, 1e-5, false));
        // Inputs of very different magnitudes (as after the multi-bit rectifier) stay finite.
        let big = Tensor::from_slice(&[1e4f32, -1e4, 3.0, 0.0, 5e3, 1.0, -2e3, 7.0, 0.5, 9e3, 1.0, 2.0]).view([4, 3]);
        assert!(bool::try_from(conv.forward_t(&big, &edges, false).isfinite().all()).unwrap());
        // Distinct inputs: gradients reach the attention parameters.
        let x = Tensor::rand([4, 3], (Kind::Float, tch::Device::Cpu));
        conv.forward_t(&x, &edges, true).sum(Kind::Float).backward();
        assert!(conv.att_src.grad().abs().sum(Kind::Float).double_value(&[]) > 0.0);
    }
}
