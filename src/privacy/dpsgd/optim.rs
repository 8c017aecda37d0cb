//! Adam and SGD over an explicit list of parameter tensors, fed with gradients we computed
//! ourselves (plain autograd or the DP path). Same update rule and defaults as PyTorch's
//! `torch.optim.Adam` (Kingma & Ba 2015, with per-parameter step counts).
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tch::Tensor;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerKind {
    #[default]
    Adam,
    Sgd,
}

struct AdamState {
    step: i32,
    m: Tensor,
    v: Tensor,
}

/// A first-order optimizer over parameters addressed by id.
pub struct Optimizer {
    kind: OptimizerKind,
    lr: f64,
    weight_decay: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    state: HashMap<usize, AdamState>,
}

impl Optimizer {
    pub fn new(kind: OptimizerKind, lr: f64, weight_decay: f64) -> Self {
        Optimizer { kind, lr, weight_decay, beta1: 0.9, beta2: 0.999, eps: 1e-8, state: HashMap::new() }
    }

    /// Applies one update to `params[id]` for every `(id, grad)`.
    pub fn step(&mut self, params: &[Tensor], grads: &[(usize, Tensor)]) {
        tch::no_grad(|| {
            for (id, g) in grads {
                let mut p = params[*id].shallow_clone();
                let g = if self.weight_decay != 0.0 { g + &p * self.weight_decay } else { g.shallow_clone() };
                match self.kind {
                    OptimizerKind::Sgd => {
                        let _ = p.f_sub_(&(&g * self.lr)).expect("sgd update");
                    }
                    OptimizerKind::Adam => {
                        let st = self.state.entry(*id).or_insert_with(|| AdamState {
                            step: 0,
                            m: g.zeros_like(),
                            v: g.zeros_like(),
                        });
                        st.step += 1;
                        st.m = &st.m * self.beta1 + &g * (1.0 - self.beta1);
                        st.v = &st.v * self.beta2 + g.square() * (1.0 - self.beta2);
                        let bc1 = 1.0 - self.beta1.powi(st.step);
                        let bc2 = 1.0 - self.beta2.powi(st.step);
                        let denom = st.v.sqrt() / bc2.sqrt() + self.eps;
                        let _ = p.f_sub_(&(&st.m / denom * (self.lr / bc1))).expect("adam update");
                    }
                }
            }
        });
    }
}
