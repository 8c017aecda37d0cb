//! ProGAP (thesis ch.5): stages 0..K; stage s has a base MLP over its input (raw features for
//! s = 0, the cached NAP output of stage s-1's embeddings otherwise), a jumping-knowledge concat of
//! the base outputs of stages 0..s, row normalisation and a head MLP (Algorithm 9). Training is
//! progressive (Algorithm 10: stage s trains bases 0..s and head s) or layerwise (Remark 1: base s
//! and head s only). Each NAP output is computed once, at the start of its stage, and cached.
use super::{normalized_concat, Fwd, Mlp, MlpStyle, ParamStore, Rows};
use crate::models::NodeClassifier;
use tch::Tensor;

pub struct ProgapNet {
    pub bases: Vec<Mlp>,
    pub heads: Vec<Mlp>,
    /// Cached stage inputs: [X, NAP(X^(0)), ..., NAP(X^(s-1))].
    pub inputs: Vec<Rows>,
    pub stage: usize,
    pub layerwise: bool,
}

impl ProgapNet {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ps: &mut ParamStore,
        depth: usize,
        features: i64,
        hidden: i64,
        classes: i64,
        base_layers: usize,
        head_layers: usize,
        style: MlpStyle,
        layerwise: bool,
    ) -> Self {
        let bases = (0..=depth)
            .map(|s| {
                let input = if s == 0 { features } else { hidden };
                Mlp::new(ps, &format!("base{s}"), input, hidden, hidden, base_layers, false, style)
            })
            .collect();
        let heads = (0..=depth)
            .map(|s| {
                Mlp::new(ps, &format!("head{s}"), hidden * (s as i64 + 1), hidden, classes, head_layers, true, style)
            })
            .collect();
        ProgapNet { bases, heads, inputs: Vec::new(), stage: 0, layerwise }
    }
    pub fn depth(&self) -> usize {
        self.bases.len() - 1
    }
    /// Stage-`stage` logits and its embedding X^(stage), from per-stage inputs (rows aligned).
    pub fn forward(&self, inputs: &[Tensor], stage: usize, f: &mut Fwd) -> (Tensor, Tensor) {
        let xs: Vec<Tensor> = (0..=stage).map(|k| self.bases[k].forward(&inputs[k], f)).collect();
        (self.heads[stage].forward(&normalized_concat(&xs), f), xs[stage].shallow_clone())
    }
    /// Stage-`stage` logits of every node, each input read whole ([`Rows::all_for`]).
    pub fn all_stage_logits(&self, stage: usize, f: &mut Fwd) -> Tensor {
        let xs: Vec<Tensor> = self.inputs[..=stage].iter().map(|x| x.all_for(f)).collect();
        self.forward(&xs, stage, f).0
    }
    /// The cached stage inputs as plain tensors.
    pub fn input_tensors(&self) -> Vec<Tensor> {
        self.inputs.iter().map(|r| r.x.shallow_clone()).collect()
    }
    /// X^(s) for every node with the current parameters (evaluation mode), the input of NAP.
    pub fn embedding(&self, inputs: &[Tensor], stage: usize) -> Tensor {
        tch::no_grad(|| self.bases[stage].forward(&inputs[stage], &mut Fwd::eval()))
    }
}

impl NodeClassifier for ProgapNet {
    fn logits(&self, idx: &Tensor, f: &mut Fwd) -> Tensor {
        let xs: Vec<Tensor> = self.inputs[..=self.stage].iter().map(|x| x.get_for(idx, f)).collect();
        self.forward(&xs, self.stage, f).0
    }
    fn cache_rows(&self, idx: &Tensor) {
        self.inputs.iter().for_each(|x| x.register(idx))
    }
    fn all_logits(&self, f: &mut Fwd) -> Option<Tensor> {
        Some(self.all_stage_logits(self.stage, f))
    }
    fn trainable(&self) -> Vec<usize> {
        let first = if self.layerwise { self.stage } else { 0 };
        let mut v: Vec<usize> = self.bases[first..=self.stage].iter().flat_map(|m| m.ids()).collect();
        v.extend(self.heads[self.stage].ids());
        v
    }
}
