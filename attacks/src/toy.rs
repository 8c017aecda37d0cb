//! Small self-contained targets behind the threat-model traits: CSBM graphs and tch MLP, dense
//! 2-layer GCN (white-box, with a dense relaxed-adjacency forward) and a GAP-like noisy-aggregation
//! model, trained full batch. The unit tests use them, and so can reproductions that need a
//! white-box GNN before the main crate's models expose one.
use crate::error::Result;
use crate::graph::{AttackGraph, NodeSplit};
use crate::threat::{BlackBox, ShadowOracle, WhiteBox};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Tensor};

/// Contextual stochastic block model: class means of norm `mu` in random directions plus unit
/// Gaussian noise; edges with probability p_in within a class and p_out across.
pub fn csbm(n: usize, classes: usize, d: usize, mu: f64, p_in: f64, p_out: f64, seed: u64) -> AttackGraph {
    // Tiny models: libtorch's thread pool only adds contention (20x slower on 2 shared cores).
    tch::set_num_threads(1);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, 1.0).unwrap();
    let labels: Vec<usize> = (0..n).map(|i| i % classes).collect();
    let means: Vec<Vec<f64>> = (0..classes)
        .map(|_| {
            let v: Vec<f64> = (0..d).map(|_| normal.sample(&mut rng)).collect();
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v.iter().map(|x| x / norm * mu).collect()
        })
        .collect();
    let mut feats = Vec::with_capacity(n * d);
    for &y in &labels {
        for &m in &means[y][..d] {
            feats.push((m + normal.sample(&mut rng)) as f32);
        }
    }
    let mut edges = Vec::new();
    for u in 0..n {
        for v in u + 1..n {
            let p = if labels[u] == labels[v] { p_in } else { p_out };
            if rng.gen_bool(p) {
                edges.push((u, v));
            }
        }
    }
    let x = Tensor::from_slice(&feats).reshape([n as i64, d as i64]);
    AttackGraph::new(n, edges, x, labels, classes).unwrap()
}

/// Per class: `train` train nodes, `val` val nodes, the rest test.
pub fn split_per_class(g: &AttackGraph, train: usize, val: usize) -> NodeSplit {
    let mut s = NodeSplit::default();
    let mut seen = vec![0usize; g.num_classes];
    for v in 0..g.num_nodes {
        let y = g.labels[v];
        let k = seen[y];
        seen[y] += 1;
        if k < train {
            s.train.push(v)
        } else if k < train + val {
            s.val.push(v)
        } else {
            s.test.push(v)
        }
    }
    s
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arch {
    Mlp,
    Gcn,
    /// GAP-like edge-level mechanism: release agg = (A + I) rownorm(X) + N(0, sigma^2) once,
    /// then an MLP on [rownorm(X), agg]. One edge moves two rows by a unit vector each.
    NoisyAgg {
        sigma: f64,
    },
    /// Outputs the same posterior for every node, whatever the input.
    Constant,
    /// A local-DP pipeline: each node's feature row is clipped to L1 norm 1 and released with
    /// Laplace noise of scale 2 / eps_x (eps_x-LDP: two clipped rows differ by at most 2 in L1),
    /// each label through k-ary randomized response at eps_y; an MLP is trained on and answers
    /// from the released records only, so its outputs are (eps_x + eps_y)-LDP in each record.
    Ldp {
        eps_x: f64,
        eps_y: f64,
    },
}

/// The released (randomised) features and labels of `Arch::Ldp`.
fn ldp_release(g: &AttackGraph, eps_x: f64, eps_y: f64, seed: u64) -> (Tensor, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1d9);
    let x = &g.features;
    let l1 = x.abs().sum_dim_intlist([1i64].as_slice(), true, Kind::Float).clamp_min(1.0);
    let clipped = x / l1;
    let (n, d) = (g.num_nodes, g.num_features());
    let scale = 2.0 / eps_x;
    // Laplace by inverse CDF: u ~ U(-1/2, 1/2), -b sgn(u) ln(1 - 2|u|).
    let noise: Vec<f32> = (0..n * d)
        .map(|_| {
            let u: f64 = rng.gen_range(-0.5..0.5);
            (-scale * u.signum() * (1.0 - 2.0 * u.abs()).max(1e-300).ln()) as f32
        })
        .collect();
    let released = clipped + Tensor::from_slice(&noise).reshape([n as i64, d as i64]);
    let k = g.num_classes;
    let keep = eps_y.exp() / (eps_y.exp() + k as f64 - 1.0);
    let labels = g
        .labels
        .iter()
        .map(|&y| {
            if k < 2 || rng.gen_bool(keep) {
                y
            } else {
                let other = rng.gen_range(0..k - 1);
                if other >= y {
                    other + 1
                } else {
                    other
                }
            }
        })
        .collect();
    (released, labels)
}

#[derive(Debug, Clone, Copy)]
pub struct ToyConfig {
    pub arch: Arch,
    pub hidden: i64,
    pub epochs: usize,
    pub lr: f64,
}

pub struct ToyModel {
    _vs: nn::VarStore,
    arch: Arch,
    l1: nn::Linear,
    l2: nn::Linear,
    adj: Tensor,
    agg: Option<Tensor>,
    post: Tensor,
    classes: usize,
}

fn normalized(adj: &Tensor) -> Tensor {
    let n = adj.size()[0];
    let a = adj + Tensor::eye(n, (Kind::Float, Device::Cpu));
    let d = a.sum_dim_intlist([1i64].as_slice(), false, Kind::Float).pow_tensor_scalar(-0.5);
    &d.unsqueeze(1) * a * d.unsqueeze(0)
}

fn rownorm(x: &Tensor) -> Tensor {
    x / x.norm_scalaropt_dim(2, [1i64], true).clamp_min(1e-12)
}

impl ToyModel {
    fn logits(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        match self.arch {
            Arch::Mlp | Arch::Constant | Arch::Ldp { .. } => x.apply(&self.l1).relu().apply(&self.l2),
            Arch::Gcn => {
                let a = normalized(adj);
                let h = a.matmul(&x.apply(&self.l1)).relu();
                a.matmul(&h.apply(&self.l2))
            }
            Arch::NoisyAgg { .. } => {
                let agg = self.agg.as_ref().expect("noisy aggregation cached");
                Tensor::cat(&[rownorm(x), agg.shallow_clone()], 1).apply(&self.l1).relu().apply(&self.l2)
            }
        }
    }

    pub fn train(g: &AttackGraph, split: &NodeSplit, cfg: ToyConfig, seed: u64) -> ToyModel {
        tch::manual_seed(seed as i64);
        let vs = nn::VarStore::new(Device::Cpu);
        let d = g.num_features() as i64;
        let input = if matches!(cfg.arch, Arch::NoisyAgg { .. }) { 2 * d } else { d };
        let l1 = nn::linear(vs.root() / "l1", input, cfg.hidden, Default::default());
        let l2 = nn::linear(vs.root() / "l2", cfg.hidden, g.num_classes as i64, Default::default());
        let adj = g.dense_adjacency();
        let agg = match cfg.arch {
            Arch::NoisyAgg { sigma } => {
                let n = g.num_nodes as i64;
                let a = &adj + Tensor::eye(n, (Kind::Float, Device::Cpu));
                Some(a.matmul(&rownorm(&g.features)) + Tensor::randn([n, d], (Kind::Float, Device::Cpu)) * sigma)
            }
            _ => None,
        };
        let mut m = ToyModel {
            _vs: vs,
            arch: cfg.arch,
            l1,
            l2,
            adj,
            agg,
            post: Tensor::zeros([1], (Kind::Float, Device::Cpu)),
            classes: g.num_classes,
        };
        // The records the model sees: the raw ones, or their local randomisation.
        let (x, labels) = match cfg.arch {
            Arch::Ldp { eps_x, eps_y } => ldp_release(g, eps_x, eps_y, seed),
            _ => (g.features.shallow_clone(), g.labels.clone()),
        };
        if cfg.arch != Arch::Constant && !split.train.is_empty() {
            let mut opt = nn::Adam::default().build(&m._vs, cfg.lr).unwrap();
            let idx = Tensor::from_slice(&split.train.iter().map(|&v| v as i64).collect::<Vec<_>>());
            let y = Tensor::from_slice(&split.train.iter().map(|&v| labels[v] as i64).collect::<Vec<_>>());
            for _ in 0..cfg.epochs {
                let loss = m.logits(&x, &m.adj).index_select(0, &idx).cross_entropy_for_logits(&y);
                opt.backward_step(&loss);
            }
        }
        m.post = tch::no_grad(|| {
            if m.arch == Arch::Constant {
                Tensor::ones([g.num_nodes as i64, g.num_classes as i64], (Kind::Float, Device::Cpu))
                    / g.num_classes as f64
            } else {
                m.logits(&x, &m.adj).softmax(-1, Kind::Float)
            }
        });
        m
    }
}

fn select(t: &Tensor, nodes: &[usize]) -> Tensor {
    t.index_select(0, &Tensor::from_slice(&nodes.iter().map(|&v| v as i64).collect::<Vec<_>>()))
}

impl BlackBox for ToyModel {
    fn num_classes(&self) -> usize {
        self.classes
    }
    fn posteriors(&self, nodes: &[usize]) -> Result<Tensor> {
        Ok(select(&self.post, nodes))
    }
    fn embeddings(&self, nodes: &[usize]) -> Result<Option<Tensor>> {
        Ok(self.agg.as_ref().map(|a| select(a, nodes)))
    }
}

impl WhiteBox for ToyModel {
    fn num_classes(&self) -> usize {
        self.classes
    }
    fn parameters(&self) -> Vec<Tensor> {
        self._vs.trainable_variables()
    }
    fn forward_features(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.logits(x, &self.adj).softmax(-1, Kind::Float))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<Result<Tensor>> {
        match self.arch {
            Arch::Mlp | Arch::Gcn => Some(Ok(self.logits(x, adj).softmax(-1, Kind::Float))),
            Arch::Constant => Some(
                Ok(x.sum_dim_intlist([1i64].as_slice(), true, Kind::Float) * 0.0 + 1.0 / self.classes as f64)
                    .map(|t| t.expand([-1, self.classes as i64], false)),
            ),
            Arch::NoisyAgg { .. } | Arch::Ldp { .. } => None,
        }
    }
}

pub struct ToyOracle(pub ToyConfig);

impl ShadowOracle for ToyOracle {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> Result<Box<dyn BlackBox>> {
        Ok(Box::new(ToyModel::train(graph, split, self.0, seed)))
    }
}

/// Epsilon of the Gaussian mechanism with L2 sensitivity `sens` and noise `sigma` at `delta`, by
/// the exact analytic characterisation (Balle & Wang 2018, Thm. 8), solved by bisection.
pub fn gaussian_epsilon(sens: f64, sigma: f64, delta: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let phi = |x: f64| Normal::new(0.0, 1.0).unwrap().cdf(x);
    let delta_of = |eps: f64| {
        let a = sens / (2.0 * sigma);
        let b = eps * sigma / sens;
        phi(a - b) - eps.exp() * phi(-a - b)
    };
    let (mut lo, mut hi) = (0.0, 100.0);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if delta_of(mid) > delta {
            lo = mid
        } else {
            hi = mid
        }
    }
    hi
}
