//! GraphSAGE (Hamilton et al. 2017): h_v' = W_self h_v + W_neigh agg({h_u : u -> v}) with sum or
//! mean aggregation. `SageNet` is the non-private baseline of thesis ch.4-5: a pre-MLP,
//! 1-5 message-passing layers, jumping-knowledge concatenation, and a post-MLP head.
use super::gcn::sparse_adjacency;
use super::sparse::{FeatureMatrix, Propagate, SparseMatrix};
use crate::data::Graph;
use crate::error::{Error, Result};
use tch::{nn, nn::ModuleT, Kind, Tensor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    Sum,
    Mean,
}

crate::from_serde_word!(Aggregation, "aggregation", "sum or mean");

/// A^T (sum) or D^-1 A^T (mean) as a sparse [N, N] matrix, rows = targets, self loops dropped.
pub fn aggregation_matrix(graph: &Graph, aggregation: Aggregation) -> SparseMatrix {
    let deg = graph.in_degrees();
    let entries = graph
        .edges()
        .filter(|(u, v)| u != v)
        .map(|(u, v)| {
            let w = match aggregation {
                Aggregation::Sum => 1.0,
                Aggregation::Mean => 1.0 / deg[v].max(1) as f32,
            };
            (v, u, w)
        })
        .collect();
    SparseMatrix::new(sparse_adjacency(graph.num_nodes(), entries))
}

#[derive(Debug)]
pub struct SageConv {
    neigh: nn::Linear,
    root: nn::Linear,
    normalize: bool,
}

impl SageConv {
    /// `normalize` L2-normalises each output row (as PyG's SAGEConv(normalize=True) does).
    pub fn new(vs: &nn::Path, in_dim: i64, out_dim: i64, normalize: bool) -> Self {
        let neigh = torch_linear(&(vs / "neigh"), in_dim, out_dim, true);
        let root = torch_linear(&(vs / "root"), in_dim, out_dim, false);
        SageConv { neigh, root, normalize }
    }
    /// `adj` from `aggregation_matrix` (or its dense form).
    pub fn forward(&self, x: &Tensor, adj: &dyn Propagate) -> Tensor {
        // The aggregation is linear, so project first when that shrinks the rows it moves.
        let (in_dim, out_dim) = (self.neigh.ws.size()[1], self.neigh.ws.size()[0]);
        let neigh = if out_dim < in_dim {
            let h = adj.propagate(&x.matmul(&self.neigh.ws.tr()));
            // Not `h += b`: under a recording `SparseMatrix` the product is a leaf that requires
            // grad, and an in-place add on it is refused by autograd.
            match &self.neigh.bs {
                Some(b) => h + b,
                None => h,
            }
        } else {
            adj.propagate(x).apply(&self.neigh)
        };
        let out = neigh + x.apply(&self.root);
        if self.normalize {
            super::row_normalize(&out)
        } else {
            out
        }
    }
}

impl SageConv {
    /// [W_neigh; W_root]^T [in, 2 out]: the layer reads x only through these projections.
    pub fn input_weights(&self) -> Tensor {
        Tensor::cat(&[&self.neigh.ws, &self.root.ws], 0).tr()
    }
}

/// Hyper-parameters of the GraphSAGE baseline (defaults: the thesis ch.4 setting, hidden 16).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SageConfig {
    pub hidden: i64,
    /// Pre-processing MLP layers (0 feeds the features straight to the first SAGE layer).
    pub pre_layers: usize,
    /// Message-passing layers, 1..=5.
    pub mp_layers: usize,
    /// Post-processing MLP layers (>= 1; the last maps to the classes). With `jk` the first is the
    /// projection of the concatenated layer outputs back to the hidden width.
    pub post_layers: usize,
    pub aggregation: Aggregation,
    /// Jumping knowledge: concatenate every SAGE layer's output before the head.
    pub jk: bool,
    pub batch_norm: bool,
    pub normalize: bool,
    pub dropout: f64,
}

impl Default for SageConfig {
    fn default() -> Self {
        SageConfig {
            hidden: 16,
            pre_layers: 1,
            mp_layers: 2,
            post_layers: 2,
            aggregation: Aggregation::Sum,
            jk: true,
            batch_norm: true,
            normalize: true,
            dropout: 0.0,
        }
    }
}

impl SageConfig {
    pub fn validate(&self) -> Result<()> {
        if !(1..=5).contains(&self.mp_layers) {
            return Err(Error::invalid("mp_layers", format!("must be in 1..=5, got {}", self.mp_layers)));
        }
        if self.post_layers == 0 {
            return Err(Error::invalid("post_layers", "the head needs at least one layer"));
        }
        if self.hidden < 1 {
            return Err(Error::invalid("hidden", format!("must be >= 1, got {}", self.hidden)));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::invalid("dropout", format!("must be in [0, 1), got {}", self.dropout)));
        }
        Ok(())
    }
}

/// A dense layer followed by SeLU, optional batch norm and dropout.
#[derive(Debug)]
struct Block {
    lin: nn::Linear,
    bn: Option<nn::BatchNorm>,
}

impl Block {
    fn new(vs: &nn::Path, i: i64, o: i64, bn: bool) -> Self {
        Block { lin: torch_linear(&(vs / "lin"), i, o, true), bn: bn.then(|| torch_batch_norm(&(vs / "bn"), o)) }
    }
}

fn torch_linear(vs: &nn::Path, input: i64, output: i64, bias: bool) -> nn::Linear {
    nn::linear(vs, input, output, super::torch_linear_config(input, bias))
}

fn torch_batch_norm(vs: &nn::Path, dim: i64) -> nn::BatchNorm {
    nn::batch_norm1d(vs, dim, super::torch_batch_norm_config())
}

/// SeLU, then batch norm, then dropout (the pre-MLP's order, as the reference's MLP).
/// The SeLUs run in place: each acts on a fresh layer output that nothing else keeps (see
/// `Activation::apply_in_place`).
fn activate(mut x: Tensor, bn: &Option<nn::BatchNorm>, dropout: f64, train: bool) -> Tensor {
    let x = x.selu_();
    let x = match bn {
        Some(bn) => bn.forward_t(&x, train),
        None => x,
    };
    x.dropout(dropout, train)
}

/// Batch norm, then SeLU, then dropout: the order PyG's GraphSAGE (the reference's message
/// passing and the head of its GNN wrapper) uses after a convolution and after the JK projection.
fn norm_activate(x: Tensor, bn: &Option<nn::BatchNorm>, dropout: f64, train: bool) -> Tensor {
    let mut x = match bn {
        Some(bn) => bn.forward_t(&x, train),
        None => x,
    };
    x.selu_().dropout(dropout, train)
}

/// The GraphSAGE baseline network.
#[derive(Debug)]
pub struct SageNet {
    pre: Vec<Block>,
    convs: Vec<(SageConv, Option<nn::BatchNorm>)>,
    post: Vec<nn::Linear>,
    post_bn: Vec<Option<nn::BatchNorm>>,
    config: SageConfig,
}

impl SageNet {
    pub fn new(vs: &nn::Path, in_dim: i64, num_classes: i64, config: &SageConfig) -> Result<Self> {
        config.validate()?;
        let h = config.hidden;
        let mut dim = in_dim;
        let pre = (0..config.pre_layers)
            .map(|i| {
                let b = Block::new(&(vs / format!("pre{i}")), dim, h, config.batch_norm);
                dim = h;
                b
            })
            .collect();
        let convs = (0..config.mp_layers)
            .map(|i| {
                let p = vs / format!("conv{i}");
                let c = SageConv::new(&p, dim, h, config.normalize);
                dim = h;
                (c, config.batch_norm.then(|| torch_batch_norm(&(&p / "bn"), h)))
            })
            .collect();
        let mut dim = if config.jk { h * config.mp_layers as i64 } else { h };
        let (mut post, mut post_bn) = (Vec::new(), Vec::new());
        for i in 0..config.post_layers {
            let last = i + 1 == config.post_layers;
            let o = if last { num_classes } else { h };
            let p = vs / format!("post{i}");
            post.push(torch_linear(&(&p / "lin"), dim, o, true));
            post_bn.push((!last && config.batch_norm).then(|| torch_batch_norm(&(&p / "bn"), o)));
            dim = o;
        }
        Ok(SageNet { pre, convs, post, post_bn, config: config.clone() })
    }

    /// Logits [N, C]; `adj` from `aggregation_matrix(graph, config.aggregation)`.
    pub fn forward_t(&self, x: &Tensor, adj: &dyn Propagate, train: bool) -> Tensor {
        self.forward_features(&FeatureMatrix::Dense(x.to_kind(Kind::Float)), adj, train)
    }
    /// [`SageNet::forward_t`] on features that may be sparse (read by the first pre-MLP layer).
    pub fn forward_features(&self, x: &FeatureMatrix, adj: &dyn Propagate, train: bool) -> Tensor {
        let d = self.config.dropout;
        let mut h = match self.pre.first() {
            Some(b) => activate(x.linear(&b.lin), &b.bn, d, train),
            None => x.dense(),
        };
        for b in self.pre.iter().skip(1) {
            h = activate(h.apply(&b.lin), &b.bn, d, train);
        }
        let mut outs = Vec::with_capacity(self.convs.len());
        for (conv, bn) in &self.convs {
            h = norm_activate(conv.forward(&h, adj), bn, d, train);
            outs.push(h.shallow_clone());
        }
        let mut h = if self.config.jk { Tensor::cat(&outs, 1) } else { h };
        let last = self.post.len() - 1;
        for (i, (lin, bn)) in self.post.iter().zip(&self.post_bn).enumerate() {
            h = h.apply(lin);
            if i < last {
                h = norm_activate(h, bn, d, train);
            }
        }
        h
    }

    pub fn config(&self) -> &SageConfig {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregation_matrices() {
        let g = Graph::from_edges(3, [(0, 2), (1, 2), (2, 0)]).unwrap();
        let x = Tensor::from_slice(&[1.0f32, 2.0, 4.0]).view([3, 1]);
        let sum = aggregation_matrix(&g, Aggregation::Sum).propagate(&x);
        let mean = aggregation_matrix(&g, Aggregation::Mean).propagate(&x);
        assert_eq!(Vec::<f32>::try_from(sum.flatten(0, -1)).unwrap(), vec![4.0, 0.0, 3.0]);
        assert_eq!(Vec::<f32>::try_from(mean.flatten(0, -1)).unwrap(), vec![4.0, 0.0, 1.5]);
    }

    #[test]
    fn config_is_validated_and_shapes_hold() {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let bad = SageConfig { mp_layers: 6, ..Default::default() };
        assert!(SageNet::new(&vs.root(), 4, 3, &bad).is_err());
        let g = Graph::from_edges(5, [(0, 1), (1, 0), (2, 3), (3, 2), (4, 0), (0, 4)]).unwrap();
        for jk in [true, false] {
            let cfg = SageConfig { mp_layers: 3, post_layers: 2, jk, ..Default::default() };
            let net = SageNet::new(&(vs.root() / format!("jk{jk}")), 4, 3, &cfg).unwrap();
            let x = Tensor::rand([5, 4], (Kind::Float, tch::Device::Cpu));
            let out = net.forward_t(&x, &aggregation_matrix(&g, cfg.aggregation), true);
            assert_eq!(out.size(), vec![5, 3]);
        }
    }
}
