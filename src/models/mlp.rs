//! The MLP baseline: uses node features only, so it has perfect edge-level privacy (eps = 0);
//! trained with DP-Adam it is the node-level DP-MLP baseline.
use super::{Fwd, Mlp, MlpStyle, ParamStore, Rows};
use crate::models::NodeClassifier;
use tch::Tensor;

pub struct MlpClassifier {
    pub x: Rows,
    pub mlp: Mlp,
}

impl MlpClassifier {
    /// `x`: the node features ([`Rows::features`] or [`Rows::of_features`]).
    pub fn new(ps: &mut ParamStore, x: Rows, hidden: i64, classes: i64, layers: usize, style: MlpStyle) -> Self {
        let f = x.x.size()[1];
        let mlp = Mlp::new(ps, "mlp", f, hidden, classes, layers, true, style);
        MlpClassifier { x, mlp }
    }
    /// Logits for every row of `x` (any graph: the MLP ignores edges).
    pub fn logits_of(&self, x: &Tensor) -> Tensor {
        self.mlp.forward(x, &mut Fwd::eval())
    }
}

impl NodeClassifier for MlpClassifier {
    fn logits(&self, idx: &Tensor, f: &mut Fwd) -> Tensor {
        self.mlp.forward(&self.x.get_for(idx, f), f)
    }
    fn cache_rows(&self, idx: &Tensor) {
        self.x.register(idx)
    }
    fn all_logits(&self, f: &mut Fwd) -> Option<Tensor> {
        Some(self.mlp.forward(&self.x.all_for(f), f))
    }
    fn trainable(&self) -> Vec<usize> {
        self.mlp.ids()
    }
}
