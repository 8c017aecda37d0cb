//! The two-layer GNN backbones (GCN, GAT, GraphSAGE; thesis Section 3.5.2) that several methods
//! train (the baselines, LPGNN, RGNN, graph PATE's student), with the graph tensors they read and
//! their dense forms for white-box attacks.
use crate::data::Graph;
use crate::models::gat::{EdgeList, GatConv};
use crate::models::gcn::{gcn_normalized, gcn_normalized_dense, GcnConv};
use crate::models::sage::{aggregation_matrix, Aggregation, SageConv, SageNet};
use crate::models::sparse::{FeatureMatrix, SparseMatrix};
use tch::{nn, Tensor};

/// Which message-passing layer a backbone uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GnnKind {
    Gcn,
    Gat,
    Sage,
}

crate::from_serde_word!(GnnKind, "backbone", "gcn, gat or sage");

/// The propagation tensors of one graph, built once per graph for the layer types in use.
#[derive(Debug)]
pub struct GraphTensors {
    pub gcn: Option<SparseMatrix>,
    pub mean: Option<SparseMatrix>,
    pub sum: Option<SparseMatrix>,
    pub edges: Option<EdgeList>,
}

impl GraphTensors {
    pub fn for_kind(graph: &Graph, kind: GnnKind) -> Self {
        let mut t = GraphTensors { gcn: None, mean: None, sum: None, edges: None };
        match kind {
            GnnKind::Gcn => t.gcn = Some(SparseMatrix::new(gcn_normalized(graph, true))),
            GnnKind::Gat => t.edges = Some(EdgeList::with_self_loops(graph)),
            GnnKind::Sage => t.mean = Some(aggregation_matrix(graph, Aggregation::Mean)),
        }
        t
    }
    pub fn for_sage(graph: &Graph, aggregation: Aggregation) -> Self {
        let adj = aggregation_matrix(graph, aggregation);
        match aggregation {
            Aggregation::Sum => GraphTensors { gcn: None, mean: None, sum: Some(adj), edges: None },
            Aggregation::Mean => GraphTensors { gcn: None, mean: Some(adj), sum: None, edges: None },
        }
    }
    /// The sparse matrices present, whose products a training forward records.
    pub fn matrices(&self) -> impl Iterator<Item = &SparseMatrix> {
        [&self.gcn, &self.mean, &self.sum].into_iter().flatten()
    }
}

#[derive(Debug)]
enum Layer {
    Gcn(GcnConv),
    Gat(GatConv),
    Sage(SageConv),
}

impl Layer {
    fn forward_t(&self, x: &Tensor, g: &GraphTensors, train: bool) -> Tensor {
        match self {
            Layer::Gcn(c) => c.forward(x, g.gcn.as_ref().expect("GCN tensors")),
            Layer::Gat(c) => c.forward_t(x, g.edges.as_ref().expect("GAT edge list"), train),
            Layer::Sage(c) => c.forward(x, g.mean.as_ref().expect("SAGE tensors")),
        }
    }
    /// Eval-mode forward on a dense relaxed adjacency (rows = targets), see [`super::dense`].
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        use crate::models::dense::{sage_aggregation_dense, without_self_loops};
        match self {
            Layer::Gcn(c) => c.forward(x, &gcn_normalized_dense(&without_self_loops(adj))),
            Layer::Gat(c) => c.forward_dense(x, adj),
            Layer::Sage(c) => c.forward(x, &sage_aggregation_dense(adj, Aggregation::Mean)),
        }
    }
    /// The weights [d, m] through which the layer reads its input (it depends on x only via x W).
    fn input_weights(&self) -> Tensor {
        match self {
            Layer::Gcn(c) => c.input_weights(),
            Layer::Gat(c) => c.input_weights(),
            Layer::Sage(c) => c.input_weights(),
        }
    }
}

/// Number of attention heads of the GAT backbone (thesis Section 3.5.2).
pub const GAT_HEADS: i64 = 4;

/// Two graph convolutions with SeLU and dropout in between (thesis Section 3.5.2).
#[derive(Debug)]
pub struct TwoLayerGnn {
    kind: GnnKind,
    first: Layer,
    second: Layer,
    dropout: f64,
}

impl TwoLayerGnn {
    pub fn new(vs: &nn::Path, kind: GnnKind, in_dim: i64, hidden: i64, num_classes: i64, dropout: f64) -> Self {
        let (first, second) = match kind {
            GnnKind::Gcn => (
                Layer::Gcn(GcnConv::new(&(vs / "conv1"), in_dim, hidden)),
                Layer::Gcn(GcnConv::new(&(vs / "conv2"), hidden, num_classes)),
            ),
            GnnKind::Gat => {
                let c1 = GatConv::new(&(vs / "conv1"), in_dim, hidden, GAT_HEADS, true);
                let c2 = GatConv::new(&(vs / "conv2"), c1.output_dim(), num_classes, 1, false);
                (Layer::Gat(c1), Layer::Gat(c2))
            }
            GnnKind::Sage => (
                Layer::Sage(SageConv::new(&(vs / "conv1"), in_dim, hidden, false)),
                Layer::Sage(SageConv::new(&(vs / "conv2"), hidden, num_classes, false)),
            ),
        };
        TwoLayerGnn { kind, first, second, dropout }
    }
    pub fn kind(&self) -> GnnKind {
        self.kind
    }
    /// Logits [N, C].
    pub fn forward_t(&self, x: &Tensor, g: &GraphTensors, train: bool) -> Tensor {
        let h = self.first.forward_t(x, g, train).selu().dropout(self.dropout, train);
        self.second.forward_t(&h, g, train)
    }
    /// Logits [n, C] in eval mode on a dense relaxed adjacency [n, n] in [0, 1] (rows = targets):
    /// the differentiable form white-box attacks take gradients through.
    pub fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        let h = self.first.forward_dense(x, adj).selu();
        self.second.forward_dense(&h, adj)
    }
    /// The first layer's input weights [d, m]: the network reads its features x only through x W.
    pub fn input_weights(&self) -> Tensor {
        self.first.input_weights()
    }
}

/// A network the full-batch trainer can fit: the SAGE baseline or a 2-layer backbone.
#[derive(Debug)]
pub enum Network {
    Sage(SageNet),
    TwoLayer(TwoLayerGnn),
}

impl Network {
    pub fn forward_t(&self, x: &Tensor, g: &GraphTensors, train: bool) -> Tensor {
        self.forward_features(&FeatureMatrix::Dense(x.shallow_clone()), g, train)
    }
    pub fn forward_features(&self, x: &FeatureMatrix, g: &GraphTensors, train: bool) -> Tensor {
        match self {
            Network::Sage(n) => {
                let adj = g.sum.as_ref().or(g.mean.as_ref()).expect("SAGE aggregation matrix");
                n.forward_features(x, adj, train)
            }
            Network::TwoLayer(n) => n.forward_t(&x.dense(), g, train),
        }
    }
    /// The features as this network reads them: sparse only where the first layer takes them so
    /// (GraphSAGE's pre-MLP); the 2-layer backbones would densify them on every pass.
    pub fn feature_matrix(&self, x: &Tensor) -> FeatureMatrix {
        match self {
            Network::Sage(n) if n.config().pre_layers > 0 => FeatureMatrix::new(x),
            _ => FeatureMatrix::Dense(x.shallow_clone()),
        }
    }
    /// The graph tensors this network needs for `graph`.
    pub fn tensors(&self, graph: &Graph) -> GraphTensors {
        match self {
            Network::Sage(n) => GraphTensors::for_sage(graph, n.config().aggregation),
            Network::TwoLayer(n) => GraphTensors::for_kind(graph, n.kind()),
        }
    }
}
