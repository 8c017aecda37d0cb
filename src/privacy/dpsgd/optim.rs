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
                        // In place, in the same order of float operations as the allocating form
                        // m = m b1 + g (1 - b1), so the same bits with three temporaries fewer.
                        let _ = st.m.f_mul_scalar_(self.beta1).expect("adam m");
                        let _ = st.m.f_add_(&(&g * (1.0 - self.beta1))).expect("adam m");
                        let _ = st.v.f_mul_scalar_(self.beta2).expect("adam v");
                        let mut g2 = g.square();
                        let _ = g2.f_mul_scalar_(1.0 - self.beta2).expect("adam v");
                        let _ = st.v.f_add_(&g2).expect("adam v");
                        let bc1 = 1.0 - self.beta1.powi(st.step);
                        let bc2 = 1.0 - self.beta2.powi(st.step);
                        let mut denom = st.v.sqrt();
                        let _ = denom.f_div_scalar_(bc2.sqrt()).expect("adam denom");
                        let _ = denom.f_add_scalar_(self.eps).expect("adam denom");
                        let mut update = &st.m / &denom;
                        let _ = update.f_mul_scalar_(self.lr / bc1).expect("adam update");
                        let _ = p.f_sub_(&update).expect("adam update");
                    }
                }
            }
        });
    }
}
