//! GAP (thesis ch.4): an encoder module pre-trained with a linear softmax head (Eq. 4.3-4.5), the
//! private multi-hop aggregation module (Algorithm 5, in [`super::aggregation`]), and a
//! classification module with one base MLP per hop, concatenation as COMBINE, and a head MLP
//! (Eq. 4.10-4.12). The aggregations are computed once and cached, so inference on the training
//! graph is free (Algorithm 7) and a new graph gets fresh PMA noise (Algorithm 8).
use super::{normalized_concat, row_normalize, Fwd, Linear, Mlp, MlpStyle, Norm, ParamStore, Rows};
use crate::models::NodeClassifier;
use tch::Tensor;

/// Encoder MLP + normalisation + linear softmax head, trained on features and labels.
pub struct GapEncoder {
    pub mlp: Mlp,
    pub norm: Norm,
    pub head: Linear,
    pub style: MlpStyle,
    pub x: Rows,
}

impl GapEncoder {
    /// `x`: the node features ([`Rows::features`] or [`Rows::of_features`]).
    pub fn new(ps: &mut ParamStore, x: Rows, hidden: i64, classes: i64, layers: usize, style: MlpStyle) -> Self {
        let f = x.x.size()[1];
        let mlp = Mlp::new(ps, "encoder", f, hidden, hidden, layers, true, style);
        let norm = ps.norm("encoder.norm", style.norm, hidden);
        let head = ps.linear("encoder.head", hidden, classes);
        GapEncoder { mlp, norm, head, style, x }
    }
    /// X^(0) = normalize(MLP_enc(x)) (Eq. 4.5-4.6), in evaluation mode.
    pub fn embed(&self, x: &Tensor) -> Tensor {
        tch::no_grad(|| row_normalize(&self.mlp.forward(x, &mut Fwd::eval())))
    }
}

impl NodeClassifier for GapEncoder {
    fn logits(&self, idx: &Tensor, f: &mut Fwd) -> Tensor {
        let h = row_normalize(&self.mlp.forward(&self.x.get_for(idx, f), f));
        let mut h = self.norm.forward(&h, f);
        if self.style.dropout > 0.0 {
            h = h.dropout(self.style.dropout, f.train);
        }
        self.head.forward(&self.style.activation.apply_fresh(h, f), f)
    }
    fn cache_rows(&self, idx: &Tensor) {
        self.x.register(idx)
    }
    fn trainable(&self) -> Vec<usize> {
        let mut v = self.mlp.ids();
        v.extend(self.norm.ids());
        v.extend(self.head.ids());
        v
    }
}

/// The classification module over cached aggregations [X^(0), ..., X^(K)].
pub struct GapClassifier {
    pub bases: Vec<Mlp>,
    pub norm: Norm,
    pub head: Mlp,
    pub style: MlpStyle,
    /// The cached aggregations [X^(0), ..., X^(K)], with their row gathers for the index sets
    /// training registers (full-batch epochs reuse them instead of gathering again).
    pub inputs: Vec<Rows>,
}

impl GapClassifier {
    // One argument per hyper-parameter of the paper's architecture, each named at its call site.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ps: &mut ParamStore,
        hops: usize,
        input_dim: i64,
        hidden: i64,
        classes: i64,
        base_layers: usize,
        head_layers: usize,
        style: MlpStyle,
    ) -> Self {
        let bases = (0..=hops)
            .map(|k| Mlp::new(ps, &format!("cm.base{k}"), input_dim, hidden, hidden, base_layers, true, style))
            .collect();
        let cat = hidden * (hops as i64 + 1);
        let norm = ps.norm("cm.norm", style.norm, cat);
        let head = Mlp::new(ps, "cm.head", cat, hidden, classes, head_layers, true, style);
        GapClassifier { bases, norm, head, style, inputs: Vec::new() }
    }
    /// The cached aggregations as plain tensors.
    pub fn input_tensors(&self) -> Vec<Tensor> {
        self.inputs.iter().map(|r| r.x.shallow_clone()).collect()
    }
    /// Logits from given per-hop inputs (rows aligned across hops).
    pub fn forward(&self, inputs: &[Tensor], f: &mut Fwd) -> Tensor {
        let hs: Vec<Tensor> = self.bases.iter().zip(inputs).map(|(m, x)| m.forward(x, f)).collect();
        let h = normalized_concat(&hs);
        let mut h = self.norm.forward(&h, f);
        if self.style.dropout > 0.0 {
            h = h.dropout(self.style.dropout, f.train);
        }
        self.head.forward(&self.style.activation.apply_fresh(h, f), f)
    }
}

impl NodeClassifier for GapClassifier {
    fn logits(&self, idx: &Tensor, f: &mut Fwd) -> Tensor {
        let xs: Vec<Tensor> = self.inputs.iter().map(|x| x.get(idx)).collect();
        self.forward(&xs, f)
    }
    fn cache_rows(&self, idx: &Tensor) {
        self.inputs.iter().for_each(|x| x.register(idx))
    }
    fn all_logits(&self, f: &mut Fwd) -> Option<Tensor> {
        let xs: Vec<Tensor> = self.inputs.iter().map(|x| x.all_for(f)).collect();
        Some(self.forward(&xs, f))
    }
    fn trainable(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.bases.iter().flat_map(|m| m.ids()).collect();
        v.extend(self.norm.ids());
        v.extend(self.head.ids());
        v
    }
}
