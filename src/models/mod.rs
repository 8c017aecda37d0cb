//! tch models and their building blocks. Layers record their inputs/outputs on a [`Tape`] when
//! one is given, which is how DP-SGD gets per-sample gradients (see `privacy::dpsgd::tape`).
//!
//! | model | module | privacy variants |
//! |---|---|---|
//! | MLP / DP-MLP | [`mlp`] | none (edge eps = 0), node (DP-Adam) |
//! | GAP | [`gap`] | inf, edge (PMA), node (PMA at sensitivity sqrt(D) + DP-Adam) |
//! | ProGAP | [`progap`] | inf, edge (NAP per stage), node (NAP + DP-Adam per stage) |
//! | GCN / GAT / GraphSAGE baselines | [`gcn`], [`gat`], [`sage`], [`backbone`] | none; edge (SAGE-EDP: ARR graph) |
//! | DP-GNN (SAGE-NDP) | [`dpgnn`] | node (DP-Adam, hypergeometric bound, noisy inference) |
//! | LPGNN | [`lpgnn`], [`kprop`] | local (multi-bit features, RR labels) |
pub mod aggregation;
pub mod backbone;
pub mod dpgnn;
pub mod gap;
pub mod gat;
pub mod gcn;
pub mod kprop;
pub mod lpgnn;
pub mod mlp;
pub mod progap;
pub mod sage;
pub mod white_box;

use crate::privacy::dpsgd::{OpKind, Tape};
use serde::{Deserialize, Serialize};
use tch::nn::{self, VarStore};
use tch::{Kind, Tensor};

/// One forward pass's context: training mode, and the tape when per-sample gradients are needed.
pub struct Fwd {
    pub train: bool,
    pub tape: Option<Tape>,
}

impl Fwd {
    pub fn eval() -> Self {
        Fwd { train: false, tape: None }
    }
    pub fn train() -> Self {
        Fwd { train: true, tape: None }
    }
    pub fn train_taped() -> Self {
        Fwd { train: true, tape: Some(Tape::new()) }
    }
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
        ParamStore { vs: VarStore::new(tch::Device::Cpu), params: Vec::new(), names: Vec::new() }
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
    /// A Linear layer initialised as PyTorch's `nn.Linear` (kaiming_uniform with a = sqrt(5),
    /// i.e. U(+-1/sqrt(in)) for weight and bias; tch's default weight init is sqrt(6) x wider).
    pub fn linear(&mut self, name: &str, input: i64, output: i64) -> Linear {
        let bound = 1.0 / (input.max(1) as f64).sqrt();
        let cfg = nn::LinearConfig {
            ws_init: nn::Init::Uniform { lo: -bound, up: bound },
            bs_init: Some(nn::Init::Uniform { lo: -bound, up: bound }),
            bias: true,
        };
        let l = nn::linear(self.path(name), input, output, cfg);
        let bs = l.bs.expect("linear layers have a bias");
        let weight = self.register(&format!("{name}.weight"), &l.ws);
        let bias = self.register(&format!("{name}.bias"), &bs);
        Linear { weight, bias, ws: l.ws, bs }
    }
    pub fn norm(&mut self, name: &str, kind: NormKind, dim: i64) -> Norm {
        match kind {
            NormKind::None => Norm::None,
            NormKind::Batch => {
                // PyTorch's BatchNorm1d starts from weight 1 (tch's default draws U(0, 1)).
                let cfg = nn::BatchNormConfig { ws_init: nn::Init::Const(1.0), ..Default::default() };
                let bn = nn::batch_norm1d(self.path(name), dim, cfg);
                if let Some(w) = &bn.ws {
                    self.register(&format!("{name}.weight"), w);
                }
                if let Some(b) = &bn.bs {
                    self.register(&format!("{name}.bias"), b);
                }
                Norm::Batch(bn)
            }
            NormKind::Group(groups) => {
                let p = self.path(name);
                let ws = p.ones("weight", &[dim]);
                let bs = p.zeros("bias", &[dim]);
                let weight = self.register(&format!("{name}.weight"), &ws);
                let bias = self.register(&format!("{name}.bias"), &bs);
                let groups = groups.clamp(1, dim as usize) as i64;
                let groups = if dim % groups == 0 { groups } else { 1 };
                Norm::Group { groups, weight, bias, ws, bs }
            }
        }
    }
    /// Copies of every variable (parameters and batch-norm statistics), to restore the best epoch.
    pub fn snapshot(&self) -> Vec<(String, Tensor)> {
        let mut v: Vec<_> = self.vs.variables().into_iter().map(|(k, t)| (k, t.detach().copy())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
    pub fn restore(&self, snap: &[(String, Tensor)]) {
        let vars = self.vs.variables();
        tch::no_grad(|| {
            for (k, t) in snap {
                if let Some(v) = vars.get(k) {
                    v.shallow_clone().copy_(t);
                }
            }
        });
    }
}

pub struct Linear {
    pub weight: usize,
    pub bias: usize,
    pub ws: Tensor,
    pub bs: Tensor,
}

impl Linear {
    pub fn forward(&self, x: &Tensor, f: &mut Fwd) -> Tensor {
        let y = x.linear(&self.ws, Some(&self.bs));
        if let Some(t) = f.tape.as_mut() {
            t.push(OpKind::Linear { weight: self.weight, bias: Some(self.bias) }, x, &y);
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
    Batch(nn::BatchNorm),
    Group { groups: i64, weight: usize, bias: usize, ws: Tensor, bs: Tensor },
}

impl Norm {
    pub fn forward(&self, x: &Tensor, f: &mut Fwd) -> Tensor {
        match self {
            Norm::None => x.shallow_clone(),
            Norm::Batch(bn) => {
                assert!(f.tape.is_none(), "batch norm mixes samples: not allowed under DP-SGD");
                nn::ModuleT::forward_t(bn, x, f.train)
            }
            Norm::Group { groups, weight, bias, ws, bs } => {
                let shape = x.size();
                let c = *shape.last().unwrap();
                let xg = x.reshape([-1, *groups, c / groups]);
                let mean = xg.mean_dim([-1i64].as_slice(), true, Kind::Float);
                let var = xg.var_dim([-1i64].as_slice(), false, true);
                let xhat = ((xg - mean) / (var + 1e-5).sqrt()).reshape(shape.as_slice());
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
            _ => vec![],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
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
        let mut x = x.shallow_clone();
        let n = self.layers.len();
        for (i, l) in self.layers.iter().enumerate() {
            x = l.forward(&x, f);
            if i + 1 < n || !self.plain_last {
                x = self.style.activation.apply(&x);
                x = self.norms[i].forward(&x, f);
                if self.style.dropout > 0.0 {
                    x = x.dropout(self.style.dropout, f.train);
                }
            }
        }
        x
    }
    pub fn ids(&self) -> Vec<usize> {
        self.layers.iter().flat_map(|l| l.ids()).chain(self.norms.iter().flat_map(|n| n.ids())).collect()
    }
}

/// Row-wise L2 normalisation, x_v / max(||x_v||, 1e-12) (as torch's F.normalize).
pub fn row_normalize(x: &Tensor) -> Tensor {
    let n = x.square().sum_dim_intlist([-1i64].as_slice(), true, Kind::Float).sqrt().clamp_min(1e-12);
    x / n
}

/// A node-input matrix with its row gathers for fixed index sets (train, val, ...) cached, so that
/// full-batch epochs and per-epoch validation do not copy the same rows again and again.
pub struct Rows {
    pub x: Tensor,
    cache: std::cell::RefCell<Vec<(Tensor, Tensor)>>,
}

impl Rows {
    pub fn new(x: Tensor) -> Self {
        Rows { x, cache: Default::default() }
    }
    /// Gathers and keeps `x[idx]`. The cache holds `idx` itself, so its storage (the cache key)
    /// cannot be freed and reused by another tensor while cached.
    pub fn register(&self, idx: &Tensor) {
        if self.lookup(idx).is_none() {
            self.cache.borrow_mut().push((idx.shallow_clone(), self.x.index_select(0, idx)));
        }
    }
    fn lookup(&self, idx: &Tensor) -> Option<Tensor> {
        let p = idx.data_ptr();
        let n = idx.size();
        self.cache.borrow().iter().find(|(i, _)| i.data_ptr() == p && i.size() == n).map(|(_, r)| r.shallow_clone())
    }
    /// `x[idx]`, from the cache when `idx` was registered.
    pub fn get(&self, idx: &Tensor) -> Tensor {
        self.lookup(idx).unwrap_or_else(|| self.x.index_select(0, idx))
    }
}
