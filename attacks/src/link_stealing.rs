//! Link stealing (He et al. 2021) from black-box posteriors: the unsupervised attack scoring node
//! pairs by each of 8 posterior distances, and the supervised attack (distance features plus
//! pairwise operations on posteriors and their entropies) with an MLP and a logistic regression.
//! Natural edges and non-edges differ by homophily too, so this measures practical leakage and is
//! never compared with an edge-level epsilon (canary edges do that, see `canary`).
use crate::classifier::{binary_scores, logistic_scores, split_indices, to_vec, Activation, AttackModel, MlpConfig};
use crate::error::{check, Result};
use crate::metrics::partition;
use crate::posterior::entropy;
use crate::threat::{Access, AdversaryKnowledge, Attack, Game, GameUnit, Outcome, Target};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

/// The 8 distances of the link-stealing attack, in GAP's `distance()` column order.
pub const DISTANCES: [&str; 8] =
    ["cosine", "euclidean", "correlation", "chebyshev", "braycurtis", "manhattan", "canberra", "sqeuclidean"];
/// Cosine and correlation are similarities; the others are distances (smaller means "edge").
const IS_SIMILARITY: [bool; 8] = [true, false, true, false, false, false, false, false];

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkStealingParams {
    /// Total sampled pairs: half edges (at most all edges), half non-edges (GAP: 10,000).
    pub num_samples: usize,
    /// Fraction of sampled pairs with known edge status the supervised attack trains on (GAP 0.5;
    /// a further 0.1 validates), the rest (0.4 in GAP) is the test set.
    pub train_fraction: f64,
    /// Train the supervised attack (otherwise the primary score is the cosine similarity).
    pub supervised: bool,
    /// Score embeddings instead of posteriors, where the deployment releases them.
    pub use_embeddings: bool,
    /// Reproduce GAP's "correlation": centre each endpoint by the batch mean over all pairs (the
    /// anchors' caveat 2) instead of by its own mean (scipy's correlation distance).
    pub batch_mean_correlation: bool,
    /// The supervised attack's classifier (default GAP's MLP with ReLU).
    #[serde(default)]
    pub model: AttackModel,
}

impl Default for LinkStealingParams {
    fn default() -> Self {
        LinkStealingParams {
            num_samples: 10_000,
            train_fraction: 0.5,
            supervised: true,
            use_embeddings: false,
            batch_mean_correlation: true,
            model: AttackModel::Mlp,
        }
    }
}

impl Attack for LinkStealingParams {
    fn game(&self) -> GameUnit {
        GameUnit::Practical
    }
    fn requires(&self) -> Access {
        Access { black_box: true, ..Access::default() }
    }
    fn apply_knowledge(&mut self, knowledge: &AdversaryKnowledge) -> Result<()> {
        if let Some(f) = knowledge.known_edge_fraction {
            self.train_fraction = f;
        }
        Ok(())
    }
    fn check(&self) -> Result<()> {
        check!(self.num_samples >= 20, "num_samples", "{} pairs are too few (at least 20)", self.num_samples);
        let f = self.train_fraction;
        check!(f > 0.0 && f + 0.1 < 1.0, "train_fraction", "{f} must lie in (0, 0.9)");
        Ok(())
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        link_stealing(target, self, seed)
    }
}

/// The 8 distance columns [pairs, 8] between rows of `u` and `v` (both [pairs, C]).
pub fn distance_features(u: &Tensor, v: &Tensor, batch_mean_correlation: bool) -> Tensor {
    let (u, v) = (u.to_kind(Kind::Double), v.to_kind(Kind::Double));
    let eps = 1e-12;
    let dim = Some([-1i64].as_slice());
    let norm = |t: &Tensor| t.norm_scalaropt_dim(2, [-1i64], false);
    let cos =
        |a: &Tensor, b: &Tensor| (a * b).sum_dim_intlist(dim, false, Kind::Double) / (norm(a) * norm(b)).clamp_min(eps);
    let diff = &u - &v;
    let adiff = diff.abs();
    let cosine = cos(&u, &v);
    let sq = diff.square().sum_dim_intlist(dim, false, Kind::Double);
    let euclid = sq.sqrt();
    let (uc, vc) = if batch_mean_correlation {
        (&u - u.mean_dim([0i64].as_slice(), true, Kind::Double), &v - v.mean_dim([0i64].as_slice(), true, Kind::Double))
    } else {
        (&u - u.mean_dim(dim, true, Kind::Double), &v - v.mean_dim(dim, true, Kind::Double))
    };
    let correlation = cos(&uc, &vc);
    let cheb = adiff.amax([-1i64].as_slice(), false);
    let manhattan = adiff.sum_dim_intlist(dim, false, Kind::Double);
    let bray = &manhattan / (&u + &v).abs().sum_dim_intlist(dim, false, Kind::Double).clamp_min(eps);
    let denom = u.abs() + v.abs();
    let canberra = (&adiff / denom.clamp_min(eps)).sum_dim_intlist(dim, false, Kind::Double);
    Tensor::stack(&[cosine, euclid, correlation, cheb, bray, manhattan, canberra, sq], 1).to_kind(Kind::Float)
}

/// [(a+b)/2, a*b, |a-b|, (a-b)^2] column blocks.
fn pairwise(a: &Tensor, b: &Tensor) -> Tensor {
    let d = a - b;
    Tensor::cat(&[(a + b) / 2.0, a * b, d.abs(), d.square()], 1)
}

/// The supervised attack's features: 8 distances, pairwise operations on the posteriors and on
/// their entropies, then GAP's per-row min-max scaling.
pub fn pair_features(pu: &Tensor, pv: &Tensor, batch_mean_correlation: bool) -> Tensor {
    let dist = distance_features(pu, pv, batch_mean_correlation);
    let (pu, pv) = (pu.to_kind(Kind::Float), pv.to_kind(Kind::Float));
    let eu = entropy(&pu).unsqueeze(1);
    let ev = entropy(&pv).unsqueeze(1);
    let x = Tensor::cat(&[dist, pairwise(&pu, &pv), pairwise(&eu, &ev)], 1);
    let lo = x.amin([1i64].as_slice(), true);
    let hi = x.amax([1i64].as_slice(), true);
    (&x - &lo) / (hi - &lo).clamp_min(1e-12)
}

pub fn link_stealing(target: &Target, params: &LinkStealingParams, seed: u64) -> Result<Outcome> {
    check!(params.num_samples >= 20, "num_samples", "{} is too few pairs", params.num_samples);
    check!(
        params.train_fraction > 0.0 && params.train_fraction + 0.1 < 1.0,
        "known edge fraction",
        "{} must lie in (0, 0.9)",
        params.train_fraction
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let g = target.graph;
    let n_half = (params.num_samples / 2).min(g.edges.len());
    check!(n_half >= 10, "graph", "only {} edges", g.edges.len());
    let mut edges = g.edges.clone();
    edges.shuffle(&mut rng);
    let non_edges = g.sample_non_edges(n_half, &mut rng)?;
    let mut pairs: Vec<((usize, usize), bool)> =
        edges[..n_half].iter().map(|&e| (e, true)).chain(non_edges.into_iter().map(|e| (e, false))).collect();
    pairs.shuffle(&mut rng);
    let all: Vec<usize> = (0..g.num_nodes).collect();
    let released = if params.use_embeddings {
        target
            .black_box
            .embeddings(&all)?
            .ok_or_else(|| crate::error::Error::Unsupported("the target releases no embeddings".into()))?
    } else {
        target.black_box.posteriors(&all)?
    };
    let idx = |f: fn(&(usize, usize)) -> usize| {
        Tensor::from_slice(&pairs.iter().map(|(p, _)| f(p) as i64).collect::<Vec<_>>())
    };
    let pu = released.index_select(0, &idx(|p| p.0));
    let pv = released.index_select(0, &idx(|p| p.1));
    let is_edge: Vec<bool> = pairs.iter().map(|p| p.1).collect();

    // Unsupervised: each distance alone over all sampled pairs.
    let dist = distance_features(&pu, &pv, params.batch_mean_correlation);
    let mut per_distance = serde_json::Map::new();
    let mut cosine_scores = Vec::new();
    for (j, name) in DISTANCES.iter().enumerate() {
        let col = to_vec(&dist.select(1, j as i64));
        let scores: Vec<f64> = col.iter().map(|&d| if IS_SIMILARITY[j] { d } else { -d }).collect();
        let (p, q) = partition(&scores, &is_edge);
        per_distance.insert(name.to_string(), crate::metrics::Roc::new(&p, &q).auc().into());
        if j == 0 {
            cosine_scores = scores;
        }
    }
    let mut details = serde_json::Map::new();
    details.insert("unsupervised_auc".into(), per_distance.into());
    details.insert("pairs".into(), (2 * n_half).into());
    let mut knowledge = AdversaryKnowledge {
        black_box: true,
        notes: vec![if params.use_embeddings { "released embeddings" } else { "posteriors only" }.into()],
        ..Default::default()
    };
    let game = Game {
        unit: GameUnit::Practical,
        positive: "a random edge of the target's training graph".into(),
        negative: "a random pair of nodes that are not linked".into(),
        statement:
            "The adversary queries the posteriors of both endpoints of a node pair and decides whether the pair \
                    is an edge of the training graph; edges and non-edges also differ by homophily (labels, features), \
                    so success measures practical leakage, not an edge-level DP violation."
                .into(),
    };
    let note = Some(
        "Link stealing on natural node pairs measures homophily leakage (linked nodes have similar labels and \
         features even for a model that never saw the edges); it is never compared with an edge-level epsilon. \
         Use the canary-edge audit for that."
            .to_string(),
    );
    if !params.supervised {
        let (pos, neg) = partition(&cosine_scores, &is_edge);
        let mut out = Outcome::new(pos, neg, None, game, knowledge);
        out.details = details;
        out.note = note;
        return Ok(out);
    }
    // Supervised: GAP's 50/10/40 split of the shuffled pairs.
    let x = pair_features(&pu, &pv, params.batch_mean_correlation);
    let y: Vec<i64> = is_edge.iter().map(|&e| e as i64).collect();
    let (tr, va, te) = split_indices(pairs.len(), params.train_fraction, 0.1);
    let sel = |ids: &[i64]| x.index_select(0, &Tensor::from_slice(ids));
    let lab = |ids: &[i64]| ids.iter().map(|&i| y[i as usize]).collect::<Vec<i64>>();
    let mlp_cfg = MlpConfig { activation: Activation::Relu, ..Default::default() };
    let (xtr, xva, xte) = (sel(&tr), sel(&va), sel(&te));
    let (ytr, yva) = (lab(&tr), lab(&va));
    let mlp_scores = binary_scores(params.model, mlp_cfg, &xtr, &ytr, Some((&xva, &yva)), &xte, seed)?;
    let test_edge: Vec<bool> = te.iter().map(|&i| is_edge[i as usize]).collect();
    let logit_scores = logistic_scores(&xtr, &ytr, &xte)?;
    let (lp, lq) = partition(&logit_scores, &test_edge);
    details.insert("attack_model".into(), params.model.name().into());
    details.insert("logistic_auc".into(), crate::metrics::Roc::new(&lp, &lq).auc().into());
    details.insert("split".into(), serde_json::json!({"train": tr.len(), "val": va.len(), "test": te.len()}));
    knowledge.known_edge_fraction = Some(params.train_fraction + 0.1);
    knowledge.notes.push(format!(
        "the edge status of {:.0}% of the sampled pairs is known (train + validation)",
        100.0 * (params.train_fraction + 0.1)
    ));
    let (pos, neg) = partition(&mlp_scores, &test_edge);
    let mut out = Outcome::new(pos, neg, Some(0.5), game, knowledge);
    out.details = details;
    out.note = note;
    Ok(out)
}
