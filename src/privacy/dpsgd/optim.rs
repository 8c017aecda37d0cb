//! Adam and SGD over an explicit list of parameter tensors, fed with gradients we computed
//! ourselves (plain autograd or the DP path). Same update rule and defaults as PyTorch's
//! `torch.optim.Adam` (Kingma & Ba 2015, with per-parameter step counts).
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tch::Tensor;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerKind {
    #[default]
    Adam,
    Sgd,
}

/// One parameter's moments. When the optimizer runs flat, `m` and `v` are views into the flat
/// buffers, so either route updates the same numbers.
struct AdamState {
    step: i32,
    m: Tensor,
    v: Tensor,
}

/// The moments of every parameter of the first Adam step, as two flat vectors. Steps that update
/// exactly these parameters run once over the vectors instead of once per parameter: a dozen
/// element-wise ops per step instead of a dozen per parameter (ProGAP's last stage has 14
/// parameters and 600 steps of a few microseconds each). Element-wise float ops give the same
/// bits whatever the length, so the route does not change any result.
struct Flat {
    ids: Vec<usize>,
    sizes: Vec<i64>,
    m: Tensor,
    v: Tensor,
    /// The parameters themselves, moved into one buffer (each parameter's data a view of it), so
    /// that the update is one subtraction. None where they could not move (mixed kinds or
    /// devices, an id twice).
    params: Option<Tensor>,
}

impl Flat {
    /// The parameter buffer, while every parameter still lives in it: another optimizer over
    /// the same parameters moves them into its own buffer.
    fn homed_params(&self, params: &[Tensor]) -> Option<&Tensor> {
        let buf = self.params.as_ref()?;
        let elt = buf.kind().elt_size_in_bytes();
        let mut offset = 0;
        for (id, n) in self.ids.iter().zip(&self.sizes) {
            if params[*id].data_ptr() as usize != buf.data_ptr() as usize + offset * elt {
                return None;
            }
            offset += *n as usize;
        }
        Some(buf)
    }
}

/// A first-order optimizer over parameters addressed by id.
pub struct Optimizer {
    kind: OptimizerKind,
    hyper: Hyper,
    weight_decay: f64,
    state: HashMap<usize, AdamState>,
    /// Set on the first Adam step; dropped for good once a step updates another set of
    /// parameters (their step counts may then differ).
    flat: Option<Flat>,
}

impl Optimizer {
    pub fn new(kind: OptimizerKind, lr: f64, weight_decay: f64) -> Self {
        let hyper = Hyper { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8 };
        Optimizer { kind, hyper, weight_decay, state: HashMap::new(), flat: None }
    }

    /// Applies one update to `params[id]` for every `(id, grad)`.
    pub fn step(&mut self, params: &[Tensor], grads: &[(usize, Tensor)]) {
        self.step_with(params, grads, None);
    }

    /// [`Self::step`] where the gradients are views of `flat`, back to back in their order (the
    /// DP path adds its noise to one vector): the flat route reads it without gathering them.
    pub fn step_flat(&mut self, params: &[Tensor], grads: &[(usize, Tensor)], flat: &Tensor) {
        self.step_with(params, grads, Some(flat));
    }

    fn step_with(&mut self, params: &[Tensor], grads: &[(usize, Tensor)], flat: Option<&Tensor>) {
        if grads.is_empty() {
            return;
        }
        tch::no_grad(|| {
            if self.kind == OptimizerKind::Adam {
                if self.state.is_empty() {
                    self.start_flat(params, grads);
                }
                if self.flat.as_ref().is_some_and(|f| f.ids.iter().eq(grads.iter().map(|(id, _)| id))) {
                    return self.flat_step(params, grads, flat);
                }
                self.flat = None;
            }
            let hyper = self.hyper;
            for (id, g) in grads {
                let mut p = params[*id].shallow_clone();
                let g = self.decayed(g, &p);
                match self.kind {
                    OptimizerKind::Sgd => {
                        let _ = p.f_sub_(&(&g * hyper.lr)).expect("sgd update");
                    }
                    OptimizerKind::Adam => {
                        let st = self.state.entry(*id).or_insert_with(|| AdamState {
                            step: 0,
                            m: g.zeros_like(),
                            v: g.zeros_like(),
                        });
                        st.step += 1;
                        let update = adam_update(&mut st.m, &mut st.v, &g, st.step, hyper);
                        let _ = p.f_sub_(&update).expect("adam update");
                    }
                }
            }
        });
    }

    /// The one buffer that holds exactly the parameters `ids`, in that order, when this
    /// optimizer moved them there and still holds them (see [`Flat`]).
    pub fn parameter_buffer(&self, params: &[Tensor], ids: &[usize]) -> Option<Tensor> {
        let flat = self.flat.as_ref().filter(|f| f.ids == ids)?;
        flat.homed_params(params).map(Tensor::shallow_clone)
    }

    fn decayed(&self, g: &Tensor, p: &Tensor) -> Tensor {
        if self.weight_decay != 0.0 {
            g + p * self.weight_decay
        } else {
            g.shallow_clone()
        }
    }

    /// Zero moments for the parameters of `grads`, laid out flat, with per-parameter views; and
    /// the parameters moved into one buffer of the same layout.
    fn start_flat(&mut self, params: &[Tensor], grads: &[(usize, Tensor)]) {
        let sizes: Vec<i64> = grads.iter().map(|(_, g)| g.numel() as i64).collect();
        let total: i64 = sizes.iter().sum();
        let opts = (grads[0].1.kind(), grads[0].1.device());
        let (m, v) = (Tensor::zeros([total], opts), Tensor::zeros([total], opts));
        let mut offset = 0;
        for ((id, g), n) in grads.iter().zip(&sizes) {
            let view = |t: &Tensor| t.narrow(0, offset, *n).view(g.size().as_slice());
            self.state.insert(*id, AdamState { step: 0, m: view(&m), v: view(&v) });
            offset += n;
        }
        let ids: Vec<usize> = grads.iter().map(|(id, _)| *id).collect();
        let params = home_params(params, &ids, opts);
        self.flat = Some(Flat { ids, sizes, m, v, params });
    }

    /// One Adam step over the flat moments; every parameter of the flat set has a gradient, so
    /// all their step counts agree.
    fn flat_step(&mut self, params: &[Tensor], grads: &[(usize, Tensor)], flat_grad: Option<&Tensor>) {
        let g = match flat_grad {
            Some(g) => g.shallow_clone(),
            None => concat_flat(grads.iter().map(|(_, g)| g)),
        };
        let mut flat = self.flat.take().expect("flat moments");
        let homed = flat.homed_params(params).map(Tensor::shallow_clone);
        let g = if self.weight_decay != 0.0 {
            let p = homed
                .as_ref()
                .map_or_else(|| concat_flat(grads.iter().map(|(id, _)| &params[*id])), Tensor::shallow_clone);
            self.decayed(&g, &p)
        } else {
            g
        };
        let mut step = 0;
        for (id, _) in grads {
            let st = self.state.get_mut(id).expect("flat state");
            st.step += 1;
            step = st.step;
        }
        let update = adam_update(&mut flat.m, &mut flat.v, &g, step, self.hyper);
        match homed {
            Some(mut buf) => {
                let _ = buf.f_sub_(&update).expect("adam update");
            }
            None => {
                for ((id, _), part) in grads.iter().zip(update.split_with_sizes(flat.sizes.as_slice(), 0)) {
                    let mut p = params[*id].shallow_clone();
                    let _ = p.f_sub_(&part.view(p.size().as_slice())).expect("adam update");
                }
            }
        }
        self.flat = Some(flat);
    }
}

/// Moves the parameters `ids` into one new buffer, in that order, each keeping its identity
/// (autograd, the VarStore) with its data now a view of the buffer; None, and nothing moved,
/// unless they are distinct tensors of the moments' kind and device.
fn home_params(params: &[Tensor], ids: &[usize], (kind, device): (tch::Kind, tch::Device)) -> Option<Tensor> {
    let mut seen = std::collections::HashSet::new();
    let movable = ids.iter().all(|id| {
        let p = &params[*id];
        seen.insert(*id) && p.kind() == kind && p.device() == device
    });
    if !movable {
        return None;
    }
    let buf = concat_flat(ids.iter().map(|id| &params[*id]));
    let mut offset = 0;
    for id in ids {
        let mut p = params[*id].shallow_clone();
        let n = p.numel() as i64;
        p.set_data(&buf.narrow(0, offset, n).view(p.size().as_slice()));
        offset += n;
    }
    Some(buf)
}

/// The tensors laid end to end as one vector (a copy).
pub fn concat_flat<'a>(ts: impl IntoIterator<Item = &'a Tensor>) -> Tensor {
    Tensor::cat(&ts.into_iter().map(|t| t.reshape([-1])).collect::<Vec<_>>(), 0)
}

/// Adam's learning rate and constants.
#[derive(Clone, Copy)]
struct Hyper {
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
}

/// Updates the moments `m` and `v` in place with gradient `g` at step `step` (from 1) and
/// returns the step to subtract from the parameters.
fn adam_update(m: &mut Tensor, v: &mut Tensor, g: &Tensor, step: i32, o: Hyper) -> Tensor {
    // In place, in the same order of float operations as the allocating form
    // m = m b1 + g (1 - b1), so the same bits with three temporaries fewer.
    let _ = m.f_mul_scalar_(o.beta1).expect("adam m");
    let _ = m.f_add_(&(g * (1.0 - o.beta1))).expect("adam m");
    let _ = v.f_mul_scalar_(o.beta2).expect("adam v");
    let mut g2 = g.square();
    let _ = g2.f_mul_scalar_(1.0 - o.beta2).expect("adam v");
    let _ = v.f_add_(&g2).expect("adam v");
    let bc1 = 1.0 - o.beta1.powi(step);
    let bc2 = 1.0 - o.beta2.powi(step);
    let mut denom = v.sqrt();
    let _ = denom.f_div_scalar_(bc2.sqrt()).expect("adam denom");
    let _ = denom.f_add_scalar_(o.eps).expect("adam denom");
    let mut update = &*m / &denom;
    let _ = update.f_mul_scalar_(o.lr / bc1).expect("adam update");
    update
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    /// Per-parameter Adam written out from the update rule, the reference for both routes.
    fn plain_adam(p: &mut [Tensor], grads: &[Vec<Tensor>], wd: f64) {
        let (b1, b2, lr, eps) = (0.9f64, 0.999f64, 0.01, 1e-8);
        let mut m: Vec<Tensor> = p.iter().map(|t| t.zeros_like()).collect();
        let mut v: Vec<Tensor> = p.iter().map(|t| t.zeros_like()).collect();
        for (t, gs) in grads.iter().enumerate() {
            let step = t as i32 + 1;
            for i in 0..p.len() {
                let g = &gs[i] + &p[i] * wd;
                m[i] = &m[i] * b1 + &g * (1.0 - b1);
                v[i] = &v[i] * b2 + g.square() * (1.0 - b2);
                let denom = v[i].sqrt() / (1.0 - b2.powi(step)).sqrt() + eps;
                p[i] = &p[i] - &m[i] / denom * (lr / (1.0 - b1.powi(step)));
            }
        }
    }

    #[test]
    fn flat_route_gives_the_bits_of_the_per_parameter_rule() {
        for wd in [0.0, 0.05] {
            tch::manual_seed(3);
            let shapes: [&[i64]; 3] = [&[4, 3], &[3], &[2, 2]];
            let start: Vec<Tensor> = shapes.iter().map(|s| Tensor::randn(*s, (Kind::Float, Device::Cpu))).collect();
            let grads: Vec<Vec<Tensor>> = (0..4)
                .map(|_| shapes.iter().map(|s| Tensor::randn(*s, (Kind::Float, Device::Cpu))).collect())
                .collect();
            let params: Vec<Tensor> = start.iter().map(|t| t.copy()).collect();
            let mut opt = Optimizer::new(OptimizerKind::Adam, 0.01, wd);
            for gs in &grads {
                let pairs: Vec<(usize, Tensor)> = gs.iter().map(|g| g.shallow_clone()).enumerate().collect();
                opt.step(&params, &pairs);
                assert!(opt.flat.is_some(), "every step updates the same parameters: flat route");
            }
            let mut expected: Vec<Tensor> = start.iter().map(|t| t.copy()).collect();
            plain_adam(&mut expected, &grads, wd);
            for (a, b) in params.iter().zip(&expected) {
                assert!(a.equal(b), "wd {wd}: flat {a:?} vs rule {b:?}");
            }
        }
    }

    #[test]
    fn a_step_on_fewer_parameters_leaves_the_flat_route_and_keeps_the_moments() {
        tch::manual_seed(5);
        let params: Vec<Tensor> = (0..2).map(|_| Tensor::randn([3], (Kind::Float, Device::Cpu))).collect();
        let start: Vec<Tensor> = params.iter().map(|t| t.copy()).collect();
        let g = |s: i64| Tensor::randn([3], (Kind::Float, Device::Cpu)) * s as f64;
        let (g0, g1, g2) = (g(1), g(2), g(3));
        let mut opt = Optimizer::new(OptimizerKind::Adam, 0.01, 0.0);
        opt.step(&params, &[(0, g0.shallow_clone()), (1, g1.shallow_clone())]);
        opt.step(&params, &[(0, g2.shallow_clone())]);
        assert!(opt.flat.is_none());
        // Parameter 0 saw two steps, parameter 1 one: as two separate optimizers would.
        let mut p0 = vec![start[0].copy()];
        plain_adam(&mut p0, &[vec![g0], vec![g2]], 0.0);
        let mut p1 = vec![start[1].copy()];
        plain_adam(&mut p1, &[vec![g1]], 0.0);
        assert!(params[0].equal(&p0[0]) && params[1].equal(&p1[0]));
    }

    /// One optimizer's Adam from the update rule, stepped by hand.
    struct RuleAdam {
        m: Tensor,
        v: Tensor,
        t: i32,
    }

    impl RuleAdam {
        fn new(like: &Tensor) -> Self {
            RuleAdam { m: like.zeros_like(), v: like.zeros_like(), t: 0 }
        }
        fn step(&mut self, p: &Tensor, g: &Tensor) -> Tensor {
            let (b1, b2, lr, eps) = (0.9f64, 0.999f64, 0.01, 1e-8);
            self.t += 1;
            self.m = &self.m * b1 + g * (1.0 - b1);
            self.v = &self.v * b2 + g.square() * (1.0 - b2);
            let denom = self.v.sqrt() / (1.0 - b2.powi(self.t)).sqrt() + eps;
            p - &self.m / denom * (lr / (1.0 - b1.powi(self.t)))
        }
    }

    #[test]
    fn a_second_optimizer_takes_the_parameters_and_the_first_still_updates_them() {
        tch::manual_seed(7);
        let params: Vec<Tensor> = (0..2).map(|i| Tensor::randn([3 + i], (Kind::Float, Device::Cpu))).collect();
        let grads: Vec<Vec<Tensor>> = (0..3)
            .map(|_| params.iter().map(|p| Tensor::randn(p.size().as_slice(), (Kind::Float, Device::Cpu))).collect())
            .collect();
        let pairs = |gs: &[Tensor]| gs.iter().map(|g| g.shallow_clone()).enumerate().collect::<Vec<_>>();
        let mut expected: Vec<Tensor> = params.iter().map(|t| t.copy()).collect();
        let (mut a_rule, mut b_rule): (Vec<RuleAdam>, Vec<RuleAdam>) =
            (params.iter().map(RuleAdam::new).collect(), params.iter().map(RuleAdam::new).collect());
        let (mut a, mut b) =
            (Optimizer::new(OptimizerKind::Adam, 0.01, 0.0), Optimizer::new(OptimizerKind::Adam, 0.01, 0.0));
        // A, then B (which moves the parameters into its own buffer), then A again.
        for (opt, rule, gs) in [(&mut a, &mut a_rule, &grads[0]), (&mut b, &mut b_rule, &grads[1])] {
            opt.step(&params, &pairs(gs));
            for i in 0..2 {
                expected[i] = rule[i].step(&expected[i], &gs[i]);
            }
        }
        assert!(a.flat.as_ref().unwrap().homed_params(&params).is_none(), "B holds the parameters now");
        assert!(b.flat.as_ref().unwrap().homed_params(&params).is_some());
        a.step(&params, &pairs(&grads[2]));
        for i in 0..2 {
            expected[i] = a_rule[i].step(&expected[i], &grads[2][i]);
            assert!(params[i].allclose(&expected[i], 1e-6, 1e-7, false), "{:?} vs {:?}", params[i], expected[i]);
        }
    }

    #[test]
    fn a_flat_gradient_gives_the_bits_of_its_views() {
        tch::manual_seed(9);
        let shapes: [&[i64]; 2] = [&[2, 3], &[3]];
        let start: Vec<Tensor> = shapes.iter().map(|s| Tensor::randn(*s, (Kind::Float, Device::Cpu))).collect();
        let (by_views, by_flat): (Vec<Tensor>, Vec<Tensor>) =
            (start.iter().map(|t| t.copy()).collect(), start.iter().map(|t| t.copy()).collect());
        let (mut o1, mut o2) =
            (Optimizer::new(OptimizerKind::Adam, 0.01, 0.05), Optimizer::new(OptimizerKind::Adam, 0.01, 0.05));
        for _ in 0..3 {
            let flat = Tensor::randn([9], (Kind::Float, Device::Cpu));
            let views: Vec<(usize, Tensor)> = vec![(0, flat.narrow(0, 0, 6).view([2, 3])), (1, flat.narrow(0, 6, 3))];
            o1.step(&by_views, &views);
            o2.step_flat(&by_flat, &views, &flat);
        }
        for (x, y) in by_views.iter().zip(&by_flat) {
            assert!(x.equal(y));
        }
    }
}
