//! Graph reconstruction. White-box (GraphMI-style, Zhang et al. 2021): optimise a relaxed symmetric
//! adjacency A in [0,1] by projected gradient so that the model's posteriors on (X, A) reproduce
//! the released ones, with a feature-smoothness term sum_ij A_ij ||x_i - x_j||^2 and a sparsity
//! term ||A||_1. Black-box: score pairs by the similarity of released posteriors/embeddings.
//! AUC over all true edges against as many sampled non-edges.
use crate::classifier::to_vec;
use crate::error::{check, Result};
use crate::metrics::partition;
use crate::threat::{Access, AdversaryKnowledge, Attack, Game, GameUnit, Outcome, Target};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReconstructionParams {
    pub steps: usize,
    pub lr: f64,
    /// Weight of the feature-smoothness term.
    pub alpha: f64,
    /// Weight of the sparsity term.
    pub beta: f64,
    /// Larger graphs are attacked on a random induced subgraph of this many nodes (dense N x N).
    pub max_nodes: usize,
}

impl Default for ReconstructionParams {
    fn default() -> Self {
        ReconstructionParams { steps: 200, lr: 0.01, alpha: 1e-3, beta: 1e-4, max_nodes: 3000 }
    }
}

impl Attack for ReconstructionParams {
    fn game(&self) -> GameUnit {
        GameUnit::Practical
    }
    /// Black box always; the white box (a dense forward) is used where the target has one.
    fn requires(&self) -> Access {
        Access { black_box: true, ..Access::default() }
    }
    fn check(&self) -> Result<()> {
        check!(self.steps >= 1 && self.lr > 0.0, "steps", "graph reconstruction needs steps >= 1 and lr > 0");
        Ok(())
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        graph_reconstruction(target, self, seed)
    }
}

fn cosine_matrix_scores(z: &Tensor, pairs: &[(usize, usize)]) -> Vec<f64> {
    let z = z.to_kind(Kind::Float);
    let zn = &z / z.norm_scalaropt_dim(2, [1i64], true).clamp_min(1e-12);
    let u = Tensor::from_slice(&pairs.iter().map(|p| p.0 as i64).collect::<Vec<_>>());
    let v = Tensor::from_slice(&pairs.iter().map(|p| p.1 as i64).collect::<Vec<_>>());
    to_vec(&(zn.index_select(0, &u) * zn.index_select(0, &v)).sum_dim_intlist([1i64].as_slice(), false, Kind::Float))
}

pub fn graph_reconstruction(target: &Target, params: &ReconstructionParams, seed: u64) -> Result<Outcome> {
    check!(params.steps >= 1 && params.lr > 0.0, "reconstruction", "steps >= 1 and lr > 0");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    tch::manual_seed(seed as i64);
    let full = target.graph;
    let mut nodes: Vec<usize> = (0..full.num_nodes).collect();
    if nodes.len() > params.max_nodes {
        nodes.shuffle(&mut rng);
        nodes.truncate(params.max_nodes);
        nodes.sort_unstable();
    }
    let g = full.induced(&nodes)?;
    check!(!g.edges.is_empty(), "graph", "the attacked (sub)graph has no edges");
    let non_edges = g.sample_non_edges(g.edges.len(), &mut rng)?;
    let pairs: Vec<(usize, usize)> = g.edges.iter().copied().chain(non_edges).collect();
    let is_edge: Vec<bool> = (0..pairs.len()).map(|i| i < g.edges.len()).collect();
    let released = target.black_box.posteriors(&nodes)?.to_kind(Kind::Float);
    let mut details = serde_json::Map::new();
    let sim = cosine_matrix_scores(&released, &pairs);
    let (p, q) = partition(&sim, &is_edge);
    details.insert("posterior_similarity_auc".into(), crate::metrics::Roc::new(&p, &q).auc().into());
    if let Some(emb) = target.black_box.embeddings(&nodes)? {
        let s = cosine_matrix_scores(&emb, &pairs);
        let (p, q) = partition(&s, &is_edge);
        details.insert("embedding_similarity_auc".into(), crate::metrics::Roc::new(&p, &q).auc().into());
    }
    details.insert("nodes".into(), g.num_nodes.into());
    let game = Game {
        unit: GameUnit::Practical,
        positive: "an edge of the training graph".into(),
        negative: "a random unlinked node pair".into(),
        statement: String::new(),
    };
    let white = target.white_box.and_then(|wb| {
        let x = g.features.to_kind(Kind::Float);
        let probe = Tensor::zeros([g.num_nodes as i64, g.num_nodes as i64], (Kind::Float, tch::Device::Cpu));
        wb.forward_dense(&x, &probe).map(|r| r.map(|_| wb))
    });
    let (scores, game, knowledge) = match white {
        Some(wb) => {
            let wb = wb?;
            let n = g.num_nodes as i64;
            let x = g.features.to_kind(Kind::Float);
            // Squared distances of row-normalised features, for the smoothness term.
            let xn = &x / x.norm_scalaropt_dim(2, [1i64], true).clamp_min(1e-12);
            let sq = xn.square().sum_dim_intlist([1i64].as_slice(), true, Kind::Float);
            let gram: Tensor = xn.matmul(&xn.transpose(0, 1)) * 2.0;
            let dist = (&sq + sq.transpose(0, 1) - gram).clamp_min(0.0);
            let off_diag =
                Tensor::ones([n, n], (Kind::Float, tch::Device::Cpu)) - Tensor::eye(n, (Kind::Float, tch::Device::Cpu));
            let density = 2.0 * g.edges.len() as f64 / (n * (n - 1)) as f64;
            let mut a = (Tensor::rand([n, n], (Kind::Float, tch::Device::Cpu)) * density * 2.0).triu(1);
            let log_target = released.clamp_min(1e-12).log();
            for _ in 0..params.steps {
                let av = a.detach().set_requires_grad(true);
                let sym = (&av + av.transpose(0, 1)) * &off_diag;
                let post = wb.forward_dense(&x, &sym).expect("checked above")?;
                // KL(released || model(X, A)) per node, averaged: reproduce the released posteriors.
                let fit = (&released * (&log_target - post.clamp_min(1e-12).log()))
                    .sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
                    .mean(Kind::Float);
                let smooth = (&sym * &dist).sum(Kind::Float) / n as f64;
                let sparse = sym.abs().sum(Kind::Float) / n as f64;
                let loss = fit + params.alpha * smooth + params.beta * sparse;
                let grad = Tensor::run_backward(&[loss], &[&av], false, false).pop().expect("one gradient");
                // Projected gradient step onto [0, 1], keeping the strict upper triangle.
                a = (&a - params.lr * grad * (n as f64)).clamp(0.0, 1.0).triu(1);
            }
            let au = Tensor::from_slice(&pairs.iter().map(|p| p.0 as i64).collect::<Vec<_>>());
            let av = Tensor::from_slice(&pairs.iter().map(|p| p.1 as i64).collect::<Vec<_>>());
            let scores = to_vec(&a.index_select(0, &au).gather(1, &av.unsqueeze(1), false).squeeze_dim(1));
            let mut game = game;
            game.statement = "With white-box access, the node features and the released posteriors, the adversary \
                              optimises a relaxed adjacency so that the model reproduces the released posteriors \
                              (GraphMI-style projected gradient) and ranks node pairs by it; edges also differ from \
                              non-edges by homophily, so this is practical leakage."
                .into();
            let k = AdversaryKnowledge {
                white_box: true,
                black_box: true,
                public_features: true,
                notes: vec!["all node features and released posteriors, no edge".into()],
                ..Default::default()
            };
            details.insert("method".into(), "white-box relaxed adjacency".into());
            (scores, game, k)
        }
        None => {
            let mut game = game;
            game.statement = "From released posteriors alone, the adversary ranks node pairs by posterior cosine \
                              similarity (no white-box forward available); practical leakage through homophily."
                .into();
            let k = AdversaryKnowledge { black_box: true, ..Default::default() };
            details.insert("method".into(), "black-box posterior similarity".into());
            (sim, game, k)
        }
    };
    let (pos, neg) = partition(&scores, &is_edge);
    let mut out = Outcome::new(pos, neg, None, game, knowledge);
    out.details = details;
    Ok(out)
}
