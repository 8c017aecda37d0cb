//! Networks and their building blocks (layers, norms, sparse inputs, message passing), with no
//! training policy: `train` runs them, `methods` pairs them with a privacy mechanism. Layers record
//! their inputs/outputs on a [`Tape`] when one is given, which is how DP-SGD gets per-sample
//! gradients (see `privacy::dpsgd::tape`).
//!
//! | network | module | used by |
//! |---|---|---|
//! | MLP | [`mlp`] | mlp, dp-mlp, class-dp-mlp |
//! | GAP encoder + classifier, PMA operator | [`gap`], [`aggregation`] | gap-* |
//! | ProGAP stages, NAP | [`progap`], [`aggregation`] | progap-* |
//! | GCN / GAT / GraphSAGE layers | [`gcn`], [`gat`], [`sage`] | baselines, dpgnn, lpgnn, rgnn, pgc, graph-pate |
//! | two-layer backbones over them | [`backbone`] | baselines, lpgnn, rgnn, graph-pate |
//! | KProp | [`kprop`] | lpgnn, rgnn |
//! | dense (differentiable-in-A) operators | [`dense`] | the white boxes |
//! | APPR rows | [`ppr`], [`dpar`] | dpar-* |
pub mod aggregation;
pub mod backbone;
pub mod dense;
pub mod dpar;
pub mod gap;
pub mod gat;
pub mod gcn;
pub mod kprop;
pub mod mlp;
pub mod ppr;
pub mod progap;
pub mod sage;
pub mod sparse;
pub mod spmm;

use crate::privacy::dpsgd::{OpKind, Tape};
use serde::{Deserialize, Serialize};
use sparse::{Propagate, SparseMatrix};
use tch::nn::{self, VarStore};
use tch::{Kind, Tensor};

/// A model that maps node ids to class logits from inputs it holds (features or cached
/// aggregations), so that batches are just index tensors.
pub trait NodeClassifier {
    /// Logits [len(idx), C] for the int64 node ids `idx`.
    fn logits(&self, idx: &Tensor, f: &mut Fwd) -> Tensor;
    /// Parameter ids trained in the current phase.
    fn trainable(&self) -> Vec<usize>;
    /// Hint that `idx` will be asked for many times (full-batch training, validation).
    fn cache_rows(&self, _idx: &Tensor) {}
    /// Logits of every node in one pass, where the model reads whole input matrices (see
    /// [`Rows::all_for`]); None: ask [`NodeClassifier::logits`] for each set of nodes.
    fn all_logits(&self, _f: &mut Fwd) -> Option<Tensor> {
        None
    }
}

/// One forward pass's context: training mode, and the tape when per-sample gradients are needed.
pub struct Fwd {
    pub train: bool,
    pub tape: Option<Tape>,
    /// Sparse inputs handed out by [`Rows::get_for`] in this pass (CSR and transposed CSR).
    sparse_inputs: Vec<std::rc::Rc<SparseMatrix>>,
    /// When `Some`, a Linear layer on a sparse input records its product `x W^T` on the input's
    /// [`SparseMatrix`] (listed here), and the caller takes the products to
    /// [`sparse::backward`], which forms the weight gradient `x^T g` from the stored transpose:
    /// libtorch's autograd for sparse-times-dense transposes the sparse matrix on every backward,
    /// which costs more than the dense layer it replaces. The same path as the full-graph
    /// networks' adjacency and feature products ([`sparse::FeatureMatrix`]).
    pub recorded: Option<Vec<std::rc::Rc<SparseMatrix>>>,
}

impl Fwd {
    fn new(train: bool, tape: Option<Tape>, record: bool) -> Self {
        Fwd { train, tape, sparse_inputs: Vec::new(), recorded: record.then(Vec::new) }
    }
    pub fn eval() -> Self {
        Fwd::new(false, None, false)
    }
    pub fn train() -> Self {
        Fwd::new(true, None, false)
    }
    pub fn train_taped() -> Self {
        Fwd::new(true, Some(Tape::new()), false)
    }
    /// Training without a tape, sparse first layers' products recorded (see `recorded`).
    pub fn train_recorded() -> Self {
        Fwd::new(true, None, true)
    }
    /// The sparse products this pass recorded, for [`sparse::backward`].
    pub fn take_products(&mut self) -> Vec<sparse::Product> {
        self.recorded.take().unwrap_or_default().iter().flat_map(|m| m.take_products()).collect()
    }
}

/// PyTorch's `nn.Linear` (and PyG's `Linear`) initialisation: kaiming_uniform with a = sqrt(5),
/// i.e. U(+-1/sqrt(in)) for weight and bias. tch's default weight init is sqrt(6) x wider.
pub fn torch_linear_config(input: i64, bias: bool) -> nn::LinearConfig {
    let bound = 1.0 / (input.max(1) as f64).sqrt();
    let init = nn::Init::Uniform { lo: -bound, up: bound };
    nn::LinearConfig { ws_init: init, bs_init: bias.then_some(init), bias }
}

/// PyTorch's BatchNorm1d starts from scale 1 and shift 0 (tch's default draws the scale from
/// U(0, 1)).
pub fn torch_batch_norm_config() -> nn::BatchNormConfig {
    nn::BatchNormConfig { ws_init: nn::Init::Const(1.0), ..Default::default() }
}

/// All trainable tensors of a model, addressed by id, stored in one VarStore (for checkpoints).
pub struct ParamStore {
    pub vs: VarStore,
    pub params: Vec<Tensor>,
    pub names: Vec<String>,
}

impl Default for ParamStore {
    fn default() -> Self {
        Self::new()
    }
}

impl ParamStore {
    pub fn new() -> Self {
        ParamStore { vs: VarStore::new(crate::device::current()), params: Vec::new(), names: Vec::new() }
    }
    /// VarStore path for a dotted name ("cm.base0.lin0" -> cm / base0 / lin0).
    fn path(&self, name: &str) -> nn::Path<'_> {
        name.split('.').fold(self.vs.root(), |p, s| p / s)
    }
    fn register(&mut self, name: &str, t: &Tensor) -> usize {
        self.params.push(t.shallow_clone());
        self.names.push(name.to_string());
        self.params.len() - 1
    }
    /// A Linear layer initialised as PyTorch's `nn.Linear` (see [`torch_linear_config`]).
    pub fn linear(&mut self, name: &str, input: i64, output: i64) -> Linear {
        let l = nn::linear(self.path(name), input, output, torch_linear_config(input, true));
        let bs = l.bs.expect("linear layers have a bias");
        let weight = self.register(&format!("{name}.weight"), &l.ws);
        let bias = self.register(&format!("{name}.bias"), &bs);
        Linear { weight, bias, ws: l.ws, bs }
    }
    pub fn norm(&mut self, name: &str, kind: NormKind, dim: i64) -> Norm {
        match kind {
            NormKind::None => Norm::None,
            NormKind::Batch => {
                // As the reference's BatchNorm1d: trained scale (from 1) and shift (from 0),
                // momentum 0.1, eps 1e-5; the running statistics are VarStore variables, so the
                // best-epoch snapshot carries them. (Once kept frozen, because training
                // them seemed to weaken LiRA on Cora GAP-inf. Not the batch norm's doing: the
                // best-validation epoch varies between trainings (6 to 92) and the confidence
                // level with it; a target stopped early scores below all its shadows' fits (seed 3
                // trained: epoch 6, AUC 56.8; seed 5 frozen: epoch 9, 57.2). LiRA now
                // rank-calibrates every model's confidences: 77.5 and 88.7 on those two.)
                let bn = nn::batch_norm1d(self.path(name), dim, torch_batch_norm_config());
                let w = bn.ws.as_ref().map(|w| self.register(&format!("{name}.weight"), w));
                let b = bn.bs.as_ref().map(|b| self.register(&format!("{name}.bias"), b));
                Norm::Batch { bn, affine: w.into_iter().chain(b).collect() }
            }
            NormKind::Group(groups) => {
                let p = self.path(name);
                let ws = p.ones("weight", &[dim]);
                let bs = p.zeros("bias", &[dim]);
                let weight = self.register(&format!("{name}.weight"), &ws);
                let bias = self.register(&format!("{name}.bias"), &bs);
                let groups = group_count(groups, dim);
                Norm::Group { groups, weight, bias, ws, bs }
            }
        }
    }
    /// Copies of every variable (parameters and batch-norm statistics), to restore the best epoch.
    pub fn snapshot(&self) -> Vec<(String, Tensor)> {
        snapshot(&self.vs)
    }
    pub fn restore(&self, snap: &[(String, Tensor)]) {
        restore(&self.vs, snap)
    }
}

/// Copies of every variable of `vs`, sorted by name (the best-epoch snapshot of every trainer).
pub fn snapshot(vs: &VarStore) -> Vec<(String, Tensor)> {
    let mut v: Vec<_> = vs.variables().into_iter().map(|(k, t)| (k, t.detach().copy())).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Writes a [`snapshot`] back into `vs`.
pub fn restore(vs: &VarStore, snap: &[(String, Tensor)]) {
    let vars = vs.variables();
    tch::no_grad(|| {
        for (k, t) in snap {
            if let Some(v) = vars.get(k) {
                v.shallow_clone().copy_(t);
            }
        }
    });
}

pub struct Linear {
    pub weight: usize,
    pub bias: usize,
    pub ws: Tensor,
    pub bs: Tensor,
}

impl Linear {
    /// `x W^T + b`; `x` may be a sparse COO matrix (see [`Rows::features`]): then one sparse
    /// matmul, whose backward `x^T g` is sparse too.
    pub fn forward(&self, x: &Tensor, f: &mut Fwd) -> Tensor {
        if x.is_sparse() && f.tape.is_none() {
            if let Some(sr) = f.sparse_inputs.iter().find(|s| s.is_coo(x)).cloned() {
                if let Some(recorded) = f.recorded.as_mut() {
                    if !recorded.iter().any(|m| std::rc::Rc::ptr_eq(m, &sr)) {
                        sr.record();
                        recorded.push(sr.clone());
                    }
                    return sr.propagate(&self.ws.tr()) + &self.bs;
                }
                return sr.csr().mm(&self.ws.tr()) + &self.bs;
            }
        }
        let y = if x.is_sparse() { x.mm(&self.ws.tr()) + &self.bs } else { x.linear(&self.ws, Some(&self.bs)) };
        if let Some(t) = f.tape.as_mut() {
            let kind = OpKind::Linear { weight: self.weight, bias: Some(self.bias) };
            if x.is_sparse() {
                t.push(kind, &x.to_dense(None, false), &y);
            } else {
                t.push(kind, x, &y);
            }
        }
        y
    }
    pub fn ids(&self) -> Vec<usize> {
        vec![self.weight, self.bias]
    }
}

/// Normalisation between layers. Batch norm mixes samples, so DP training uses group norm
/// (Wu & He 2018), which normalises each sample on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NormKind {
    None,
    Batch,
    /// Group norm with this many groups over the feature dim.
    Group(usize),
}

pub enum Norm {
    None,
    /// libtorch's batch norm and the ids of its scale and shift.
    Batch {
        bn: nn::BatchNorm,
        affine: Vec<usize>,
    },
    Group {
        groups: i64,
        weight: usize,
        bias: usize,
        ws: Tensor,
        bs: Tensor,
    },
}

impl Norm {
    pub fn forward(&self, x: &Tensor, f: &mut Fwd) -> Tensor {
        match self {
            Norm::None => x.shallow_clone(),
            Norm::Batch { bn, .. } => {
                assert!(f.tape.is_none(), "batch norm mixes samples: not allowed under DP-SGD");
                nn::ModuleT::forward_t(bn, x, f.train)
            }
            Norm::Group { groups, weight, bias, ws, bs } => {
                // libtorch's fused kernel (forward and backward) on [rows, C]; the affine stays
                // outside it, because per-sample gradients need x-hat.
                let xhat = if x.dim() == 2 {
                    x.group_norm(*groups, None::<Tensor>, None::<Tensor>, 1e-5, false)
                } else {
                    let shape = x.size();
                    let c = *shape.last().unwrap();
                    let xg = x.reshape([-1, *groups, c / groups]);
                    let mean = xg.mean_dim([-1i64].as_slice(), true, Kind::Float);
                    let var = xg.var_dim([-1i64].as_slice(), false, true);
                    ((xg - mean) / (var + 1e-5).sqrt()).reshape(shape.as_slice())
                };
                let y = &xhat * ws + bs;
                if let Some(t) = f.tape.as_mut() {
                    t.push(OpKind::ScaleShift { weight: *weight, bias: *bias }, &xhat, &y);
                }
                y
            }
        }
    }
    pub fn ids(&self) -> Vec<usize> {
        match self {
            Norm::Group { weight, bias, .. } => vec![*weight, *bias],
            Norm::Batch { affine, .. } => affine.clone(),
            Norm::None => vec![],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    #[default]
    Selu,
    Relu,
    Tanh,
}

impl Activation {
    pub fn apply(self, x: &Tensor) -> Tensor {
        match self {
            Activation::Selu => x.selu(),
            Activation::Relu => x.relu(),
            Activation::Tanh => x.tanh(),
        }
    }
    /// `apply` over `x` itself, for a layer output nothing else holds. Autograd then takes the
    /// derivative from the result (SELU: `g * (y + scale * alpha)` below 0) instead of
    /// recomputing `exp(x)`, the costliest part of SELU's backward; the value is the same.
    pub fn apply_in_place(self, mut x: Tensor) -> Tensor {
        match self {
            Activation::Selu => x.selu_(),
            Activation::Relu => x.relu_(),
            Activation::Tanh => x.tanh_(),
        }
    }
    /// [`Activation::apply_in_place`] unless `f` tapes: a taped pass keeps layer outputs (the
    /// Linear's, group norm's) for per-sample gradients, so they must not be written over.
    pub fn apply_fresh(self, x: Tensor, f: &Fwd) -> Tensor {
        if f.tape.is_none() {
            self.apply_in_place(x)
        } else {
            self.apply(&x)
        }
    }
}

/// Hyper-parameters shared by every MLP block of a model.
#[derive(Debug, Clone, Copy)]
pub struct MlpStyle {
    pub activation: Activation,
    pub dropout: f64,
    pub norm: NormKind,
}

/// Linear layers with activation, normalisation and dropout after each hidden layer (and after
/// the last one unless `plain_last`), in the order Linear -> activation -> norm -> dropout.
pub struct Mlp {
    pub layers: Vec<Linear>,
    pub norms: Vec<Norm>,
    pub plain_last: bool,
    pub style: MlpStyle,
}

impl Mlp {
    /// `layers` Linear layers from `input` to `output`, hidden width `hidden`. Zero layers is the
    /// identity.
    // One argument per hyper-parameter of the paper's architecture, each named at its call site.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ps: &mut ParamStore,
        name: &str,
        input: i64,
        hidden: i64,
        output: i64,
        layers: usize,
        plain_last: bool,
        style: MlpStyle,
    ) -> Mlp {
        let mut lin = Vec::new();
        let mut norms = Vec::new();
        let mut d = input;
        for i in 0..layers {
            let out = if i + 1 == layers { output } else { hidden };
            lin.push(ps.linear(&format!("{name}.lin{i}"), d, out));
            if i + 1 < layers || !plain_last {
                norms.push(ps.norm(&format!("{name}.norm{i}"), style.norm, out));
            }
            d = out;
        }
        Mlp { layers: lin, norms, plain_last, style }
    }
    pub fn forward(&self, x: &Tensor, f: &mut Fwd) -> Tensor {
        self.forward_from(0, x.shallow_clone(), f)
    }
    /// Layers `start..` on `x` (the input of layer `start`).
    fn forward_from(&self, start: usize, x: Tensor, f: &mut Fwd) -> Tensor {
        (start..self.layers.len()).fold(x, |x, i| self.after_linear(i, self.layers[i].forward(&x, f), f))
    }
    /// Activation, norm and dropout that follow Linear layer `i` (none after a plain last layer).
    fn after_linear(&self, i: usize, x: Tensor, f: &mut Fwd) -> Tensor {
        if i + 1 == self.layers.len() && self.plain_last {
            return x;
        }
        let x = self.norms[i].forward(&self.style.activation.apply_fresh(x, f), f);
        if self.style.dropout > 0.0 {
            x.dropout(self.style.dropout, f.train)
        } else {
            x
        }
    }
    pub fn ids(&self) -> Vec<usize> {
        self.layers.iter().flat_map(|l| l.ids()).chain(self.norms.iter().flat_map(|n| n.ids())).collect()
    }
}

/// The groups group norm uses on `dim` channels when asked for `groups`: at most one per channel,
/// and one when they would not divide the channels evenly.
pub fn group_count(groups: usize, dim: i64) -> i64 {
    let groups = groups.clamp(1, dim.max(1) as usize) as i64;
    if dim % groups == 0 {
        groups
    } else {
        1
    }
}

/// `x.log_softmax(-1)` for a [N, C] matrix of class scores, computed over the class-major copy:
/// libtorch's last-dim kernel vectorises along C, and with a handful of classes (Cornell5 has 6)
/// it ran at less than half the speed of the same softmax taken along N.
pub fn log_softmax_rows(x: &Tensor) -> Tensor {
    x.tr().contiguous().log_softmax(0, Kind::Float).tr()
}

/// Mean cross-entropy of logits [N, C] against int64 labels [N] (see [`log_softmax_rows`]).
pub fn cross_entropy(logits: &Tensor, y: &Tensor) -> Tensor {
    log_softmax_rows(logits).g_nll_loss::<Tensor>(y, None, tch::Reduction::Mean, -100)
}

/// Row-wise L2 normalisation, x_v / max(||x_v||, 1e-12) (as torch's F.normalize); see
/// [`normalized_concat`].
pub fn row_normalize(x: &Tensor) -> Tensor {
    normalized_concat(&[x.shallow_clone()])
}

/// `row_normalize(&Tensor::cat(xs, -1))`. On float CPU matrices it is one autograd node with fused
/// kernels (`libtorch::fused_normalized_concat`): as composite ops it was about ten passes over
/// the matrix forward and backward (a quarter of a Cornell5 GAP run's training), and the
/// concatenation's backward handed each input a strided gradient. Elsewhere (CUDA, doubles) it
/// is the composite [`row_normalize_ops`].
pub fn normalized_concat(xs: &[Tensor]) -> Tensor {
    let refs: Vec<&Tensor> = xs.iter().collect();
    crate::libtorch::fused_normalized_concat(&refs).unwrap_or_else(|| row_normalize_ops(&Tensor::cat(xs, -1)))
}

/// [`row_normalize`] as libtorch ops, `x * rsqrt(max(||x_v||^2, 1e-24))` (a broadcast division
/// costs more than twice as much under autograd); the route off the fused kernels.
pub fn row_normalize_ops(x: &Tensor) -> Tensor {
    x * (x * x).sum_dim_intlist([-1i64].as_slice(), true, Kind::Float).clamp_min(1e-24).rsqrt()
}

/// A node-input matrix with its row gathers for fixed index sets (train, val, ...) cached, so that
/// full-batch epochs and per-epoch validation do not copy the same rows again and again.
pub struct Rows {
    pub x: Tensor,
    /// Sparse COO copy of `x` when it is mostly zeros (bag-of-words / one-hot features), used by
    /// untaped forward passes: the first layer is then a sparse matmul.
    sparse: Option<Tensor>,
    cache: std::cell::RefCell<Vec<(Tensor, Tensor)>>,
    sparse_cache: std::cell::RefCell<Vec<(Tensor, std::rc::Rc<SparseMatrix>)>>,
    /// The sparse copy with its CSR forms, built on the first [`Rows::all_for`].
    all_sparse: std::cell::OnceCell<std::rc::Rc<SparseMatrix>>,
}

impl Rows {
    pub fn new(x: Tensor) -> Self {
        Rows {
            x,
            sparse: None,
            cache: Default::default(),
            sparse_cache: Default::default(),
            all_sparse: Default::default(),
        }
    }
    /// Node features: like [`Rows::new`], plus a sparse copy when at most 5% of entries are
    /// non-zero. A sparse first layer costs nnz x hidden instead of rows x cols x hidden.
    pub fn features(x: Tensor) -> Self {
        let sparse = sparse::mostly_zeros(&x).then(|| x.to_sparse_sparse_dim(2).coalesce());
        Rows { sparse, ..Rows::new(x) }
    }
    /// [`Rows::features`] of a dataset's features, the sparse copy read from the storage rather
    /// than found again in the dense matrix (counting, converting and coalescing that was about
    /// 0.02 s of every Cornell5 run, whose features arrive as CSR).
    pub fn of_features(f: &crate::data::dataset::Features) -> Self {
        let (x, entries) = (f.to_tensor(), f.rows() * f.cols());
        let sparse = sparse::few_enough(f.nonzeros(), entries).then(|| f.to_sparse_tensor());
        Rows { sparse, ..Rows::new(x) }
    }
    /// Gathers and keeps `x[idx]`. The cache holds `idx` itself, so its storage (the cache key)
    /// cannot be freed and reused by another tensor while cached.
    pub fn register(&self, idx: &Tensor) {
        if lookup(&self.cache, idx, |_| ()).is_none() {
            self.cache.borrow_mut().push((idx.shallow_clone(), self.x.index_select(0, idx)));
        }
        if let Some(sp) = &self.sparse {
            if lookup(&self.sparse_cache, idx, |_| ()).is_none() {
                let rows = std::rc::Rc::new(SparseMatrix::new(sp.index_select(0, idx)));
                self.sparse_cache.borrow_mut().push((idx.shallow_clone(), rows));
            }
        }
    }
    /// `x[idx]`, from the cache when `idx` was registered.
    pub fn get(&self, idx: &Tensor) -> Tensor {
        lookup(&self.cache, idx, Tensor::shallow_clone).unwrap_or_else(|| self.x.index_select(0, idx))
    }
    /// `x[idx]` for a forward pass: sparse (COO, with its CSR forms handed to `f`) when `idx` was
    /// registered, there is a sparse copy and no tape (per-sample gradients need the dense
    /// input); dense otherwise.
    pub fn get_for(&self, idx: &Tensor, f: &mut Fwd) -> Tensor {
        if f.tape.is_none() {
            if let Some(rows) = lookup(&self.sparse_cache, idx, std::rc::Rc::clone) {
                let x = rows.coo.shallow_clone();
                f.sparse_inputs.push(rows);
                return x;
            }
        }
        self.get(idx)
    }
    /// Every row for a forward pass, as [`Rows::get_for`] hands out rows: the sparse copy when
    /// there is one and no tape, dense otherwise. Scoring all nodes at the end of training costs
    /// a sparse product this way, where gathering each split's dense rows cost copies and dense
    /// products of the full feature width (about a tenth of a Cornell5 DP-MLP run).
    pub fn all_for(&self, f: &mut Fwd) -> Tensor {
        match &self.sparse {
            Some(sp) if f.tape.is_none() => {
                let rows = self.all_sparse.get_or_init(|| std::rc::Rc::new(SparseMatrix::new(sp.shallow_clone())));
                f.sparse_inputs.push(rows.clone());
                rows.coo.shallow_clone()
            }
            _ => self.x.shallow_clone(),
        }
    }
}

/// The cached value for the index tensor `idx` (same storage and length).
fn lookup<T, U>(cache: &std::cell::RefCell<Vec<(Tensor, T)>>, idx: &Tensor, copy: impl Fn(&T) -> U) -> Option<U> {
    let p = idx.data_ptr();
    let n = idx.size();
    cache.borrow().iter().find(|(i, _)| i.data_ptr() == p && i.size() == n).map(|(_, r)| copy(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    /// The sparse first layer (CSR forward, leaf output, `x^T g` weight gradient) gives the same
    /// outputs and parameter gradients as the dense layer under autograd.
    #[test]
    fn sparse_first_layer_matches_dense_autograd() {
        tch::manual_seed(3);
        let x = Tensor::rand([40, 30], (Kind::Float, Device::Cpu)).lt(0.04).to_kind(Kind::Float);
        let rows = Rows::features(x.shallow_clone());
        assert!(rows.sparse.is_some(), "a 4%-dense matrix gets a sparse copy");
        let mut ps = ParamStore::new();
        let lin = ps.linear("l", 30, 5);
        let idx = Tensor::from_slice(&[0i64, 3, 7, 8, 20, 39]);
        rows.register(&idx);
        let c = Tensor::randn([6, 5], (Kind::Float, Device::Cpu));

        let mut f = Fwd::train_recorded();
        let xs = rows.get_for(&idx, &mut f);
        assert!(xs.is_sparse());
        let y = lin.forward(&xs, &mut f);
        let products = f.take_products();
        assert_eq!(products.len(), 1);
        let sparse =
            sparse::backward(&(&y * &c).sum(Kind::Float), &[lin.ws.shallow_clone(), lin.bs.shallow_clone()], products);

        let yd = lin.forward(&rows.get(&idx), &mut Fwd::train());
        assert!((&y - &yd).abs().max().double_value(&[]) < 1e-5);
        let dense = Tensor::run_backward(&[(&yd * &c).sum(Kind::Float)], &[&lin.ws, &lin.bs], false, false);
        assert!((sparse[0].as_ref().unwrap() - &dense[0]).abs().max().double_value(&[]) < 1e-5);
        assert!((sparse[1].as_ref().unwrap() - &dense[1]).abs().max().double_value(&[]) < 1e-5);
        // Unregistered rows and taped passes stay dense.
        assert!(!rows.get_for(&Tensor::from_slice(&[1i64, 2]), &mut Fwd::train_recorded()).is_sparse());
        assert!(!rows.get_for(&idx, &mut Fwd::train_taped()).is_sparse());
    }

    /// Features read from their storage give the rows [`Rows::features`] finds in the dense
    /// matrix: the same dense tensor, and the same sparse copy (indices, values, coalesced),
    /// explicit zeros in the CSR left out; no copy above 5% non-zero.
    #[test]
    fn features_from_storage_match_those_found_in_the_dense_matrix() {
        use crate::data::dataset::Features;
        // 3 x 40 = 120 entries, 5 stored of which one an explicit zero: 4 non-zeros (3.3%).
        let csr = Features::Sparse {
            rows: 3,
            cols: 40,
            indptr: vec![0, 2, 2, 5],
            indices: vec![1, 39, 0, 7, 30],
            data: vec![0.5, -2.0, 0.0, 1.0, 3.0],
        };
        let dense = Features::Dense { rows: 3, cols: 40, data: csr.to_dense() };
        let found = Rows::features(csr.to_tensor());
        let expected = found.sparse.as_ref().expect("3.3% non-zero gets a sparse copy");
        for f in [&csr, &dense] {
            let read = Rows::of_features(f);
            assert!(read.x.equal(&found.x));
            let sparse = read.sparse.as_ref().expect("a copy, as in the dense matrix");
            assert!(sparse.is_coalesced());
            assert!(
                sparse.indices().equal(&expected.indices()),
                "{:?}",
                Vec::<i64>::try_from(sparse.indices().view(-1))
            );
            assert!(sparse.values().equal(&expected.values()));
        }
        // 7 non-zeros of 120 (5.8%): dense only, both ways.
        let mut data = csr.to_dense();
        data[3] = 1.0;
        data[4] = 1.0;
        data[5] = 1.0;
        let denser = Features::Dense { rows: 3, cols: 40, data };
        assert!(Rows::of_features(&denser).sparse.is_none());
        assert!(Rows::features(denser.to_tensor()).sparse.is_none());
    }

    /// Scoring every node in one pass (sparse features read whole) gives each node the logits that
    /// scoring it within a set of nodes gives, on the dense and on the registered sparse route;
    /// for the MLP and for ProGAP, whose later stage reads a dense input.
    #[test]
    fn all_logits_match_the_logits_of_node_sets() {
        tch::manual_seed(4);
        let opts = (Kind::Float, Device::Cpu);
        let x = || Rows::features(Tensor::rand([50, 60], opts).lt(0.03).to_kind(Kind::Float));
        let style = MlpStyle { activation: Activation::Selu, dropout: 0.0, norm: NormKind::None };
        let mut ps = ParamStore::new();
        let mlp = crate::models::mlp::MlpClassifier::new(&mut ps, x(), 8, 3, 2, style);
        let mut progap = crate::models::progap::ProgapNet::new(&mut ps, 1, 60, 8, 3, 1, 1, style, false);
        progap.inputs = vec![x(), Rows::new(Tensor::randn([50, 8], opts))];
        progap.stage = 1;
        let idx = Tensor::from_slice(&[3i64, 0, 49, 17]);
        for net in [&mlp as &dyn NodeClassifier, &progap] {
            let all = tch::no_grad(|| net.all_logits(&mut Fwd::eval())).expect("both score every node");
            assert_eq!(all.size(), [50, 3]);
            let close = |rows: &Tensor| (all.index_select(0, &idx) - rows).abs().max().double_value(&[]) < 1e-6;
            assert!(close(&tch::no_grad(|| net.logits(&idx, &mut Fwd::eval()))), "dense rows");
            net.cache_rows(&idx);
            assert!(close(&tch::no_grad(|| net.logits(&idx, &mut Fwd::eval()))), "registered sparse rows");
        }
        assert!(mlp.x.sparse.is_some() && mlp.x.all_sparse.get().is_some(), "the MLP read the sparse copy whole");
    }

    /// The best-epoch snapshot carries batch norm's running statistics with its
    /// scale and shift, so a restore gives back the checkpoint's evaluation-mode outputs exactly;
    /// evaluation-mode queries never move them, so repeated queries answer the same.
    #[test]
    fn batch_norm_running_statistics_round_trip_through_snapshot() {
        tch::manual_seed(5);
        let style = MlpStyle { activation: Activation::Selu, dropout: 0.0, norm: NormKind::Batch };
        let mut ps = ParamStore::new();
        let mlp = Mlp::new(&mut ps, "m", 6, 8, 3, 2, true, style);
        let Norm::Batch { bn, affine } = &mlp.norms[0] else { panic!("the style asked for batch norm") };
        assert_eq!(affine.len(), 2, "scale and shift are trained");
        let opts = (Kind::Float, Device::Cpu);
        let x = Tensor::randn([32, 6], opts);
        let eval = || tch::no_grad(|| mlp.forward(&x, &mut Fwd::eval()));
        let train_passes = |shift: f64| {
            for _ in 0..3 {
                let _ = tch::no_grad(|| mlp.forward(&(&x * 3.0 + shift), &mut Fwd::train()));
            }
        };
        train_passes(1.0);
        let snap = ps.snapshot();
        for stat in ["m.norm0.running_mean", "m.norm0.running_var"] {
            assert!(snap.iter().any(|(k, _)| k == stat), "{stat} not in the snapshot");
        }
        let (mean, var) = (bn.running_mean.copy(), bn.running_var.copy());
        let at_best = eval();
        assert!(at_best.equal(&eval()), "evaluation-mode queries answer the same");
        assert!(bn.running_mean.equal(&mean) && bn.running_var.equal(&var), "evaluation mode left the statistics");
        train_passes(-2.0);
        assert!(!bn.running_mean.equal(&mean), "training-mode passes move the running mean");
        assert!(!at_best.allclose(&eval(), 1e-4, 1e-4, false), "and with it the evaluation-mode outputs");
        ps.restore(&snap);
        assert!(bn.running_mean.equal(&mean) && bn.running_var.equal(&var), "restore brings the statistics back");
        assert!(at_best.equal(&eval()), "restore gives the checkpoint's outputs back exactly");
    }

    /// The fused normalised concatenation equals the composite ops in values and in the
    /// gradients of every input: several parts, widths off the vector path (12, 4) and on it
    /// (8, 16, with more rows than a block of four and a leftover row), a zero row (the clamp:
    /// its gradient is r g) and rows too small to normalise without it.
    #[test]
    fn fused_normalized_concat_matches_the_composite_ops() {
        tch::manual_seed(5);
        let opts = (Kind::Float, Device::Cpu);
        for widths in [vec![12, 4], vec![8, 16, 8], vec![16]] {
            let rows = 11;
            let inputs: Vec<Tensor> =
                widths.iter().map(|&w| Tensor::randn([rows, w], opts).set_requires_grad(true)).collect();
            let mut scale = vec![1f32; rows as usize];
            scale[3] = 0.0;
            scale[7] = 1e-20;
            let scale = Tensor::from_slice(&scale).unsqueeze(1);
            let xs: Vec<Tensor> = inputs.iter().map(|x| x * &scale).collect();
            let fused = normalized_concat(&xs);
            let composite = row_normalize_ops(&Tensor::cat(&xs, -1));
            let width: i64 = widths.iter().sum();
            assert_eq!(fused.size(), [rows, width]);
            let d = (&fused - &composite).abs().max().double_value(&[]);
            assert!(d < 1e-6, "{widths:?}: values differ by {d}");
            let c = Tensor::randn([rows, width], opts);
            let leaves: Vec<&Tensor> = inputs.iter().collect();
            let g_fused = Tensor::run_backward(&[(&fused * &c).sum(Kind::Float)], &leaves, true, false);
            let g_composite = Tensor::run_backward(&[(&composite * &c).sum(Kind::Float)], &leaves, false, false);
            for (i, (a, b)) in g_fused.iter().zip(&g_composite).enumerate() {
                let tol = 1e-5 * b.abs().max().double_value(&[]).max(1.0);
                let d = (a - b).abs().max().double_value(&[]);
                assert!(d < tol, "{widths:?}, input {i}: gradients differ by {d}");
            }
        }
    }

    /// The fused node saves its inputs, not its output, so an in-place SELU on its output (as
    /// `Activation::apply_fresh` runs where no norm follows) leaves its backward intact.
    #[test]
    fn fused_normalized_concat_output_may_be_modified_in_place() {
        tch::manual_seed(7);
        let x = Tensor::randn([9, 16], (Kind::Float, Device::Cpu)).set_requires_grad(true);
        let fused = normalized_concat(&[x.shallow_clone()]).selu_();
        let composite = row_normalize_ops(&x).selu();
        let g_fused = Tensor::run_backward(&[fused.sum(Kind::Float)], &[&x], false, false);
        let g_composite = Tensor::run_backward(&[composite.sum(Kind::Float)], &[&x], false, false);
        assert!((&g_fused[0] - &g_composite[0]).abs().max().double_value(&[]) < 1e-5);
    }

    /// A row's result does not depend on how many threads split the rows (the kernel takes rows
    /// in blocks of four from wherever a task's range starts).
    #[test]
    fn fused_normalized_concat_is_the_same_on_any_number_of_threads() {
        tch::manual_seed(6);
        let opts = (Kind::Float, Device::Cpu);
        let xs: Vec<Tensor> = [16, 8].iter().map(|&w| Tensor::randn([20001, w], opts)).collect();
        let before = tch::get_num_threads();
        let run = |threads| {
            tch::set_num_threads(threads);
            normalized_concat(&xs)
        };
        let (one, two) = (run(1), run(2));
        tch::set_num_threads(before);
        assert!(one.equal(&two), "the bits moved with the thread count");
    }
}
