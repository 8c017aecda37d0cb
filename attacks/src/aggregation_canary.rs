//! In-pipeline canary edges for aggregation perturbation (GAP's PMA, ProGAP's NAP stages).
//!
//! The edge-level guarantee of GAP and ProGAP covers exactly the noisy sums `A^T x_k + N(0, s^2)`
//! released at each hop; everything else (encoder, classifier) never reads an edge. So the auditor
//! may read those sums (white box) and re-draw them cheaply on a graph of its own: `n` disjoint
//! canaries, each a pair of crafted nodes joined by an undirected edge (both directions) with an
//! independent fair coin. Crafted nodes form their own components, so their rows depend on nothing
//! but their canary, and each canary's score is an independent draw from the mechanism on one of
//! the two neighbouring graphs. The score is the projection of each end's released sum at every
//! hop on the vector the other end fed into that hop: `sum_k <S_k[v], x_k[u]> + <S_k[u], x_k[v]>`,
//! which is `2K b + N(0, 2K s^2)` for unit-norm inputs, the Neyman-Pearson statistic of the K-fold
//! composed Gaussian mechanism at sensitivity sqrt(2). That is why this audit can come close to
//! the claim, where black-box canaries (which see only the classifier's posteriors) certify little.
//!
//! The unit is gnnaudit's edge-level unit, one undirected edge: two entries of A, twice the unit
//! of GAP's Lemma 6 and ProGAP's Lemma 1 (one entry).
use crate::classifier::to_vec;
use crate::error::{check, Error, Result};
/// (Moved to the threat model; re-exported for the main crate's implementations.)
pub use crate::threat::AggregationRelease;
use crate::threat::{Access, AdversaryKnowledge, Attack, Game, GameUnit, Outcome, Target};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AggregationCanaryParams {
    /// Canary edges (each with its own crafted sender and receiver).
    pub canaries: usize,
}

impl Default for AggregationCanaryParams {
    fn default() -> Self {
        AggregationCanaryParams { canaries: 100_000 }
    }
}

impl Attack for AggregationCanaryParams {
    fn game(&self) -> GameUnit {
        GameUnit::EdgeCanary
    }
    fn requires(&self) -> Access {
        Access { white_box: true, ..Access::default() }
    }
    fn check(&self) -> Result<()> {
        check!(
            self.canaries >= 100,
            "canaries",
            "{} canaries are too few for a bound (need at least 100)",
            self.canaries
        );
        check!(
            self.canaries <= 10_000_000,
            "canaries",
            "{} canaries would not fit in memory (at most 10^7)",
            self.canaries
        );
        Ok(())
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        aggregation_canary_audit(target, self, seed)
    }
}

/// Row-wise dot products <a[i], b[i]>.
fn row_dot(a: &Tensor, b: &Tensor) -> Tensor {
    (a.to_kind(Kind::Double) * b.to_kind(Kind::Double)).sum_dim_intlist([-1i64].as_slice(), false, Kind::Double)
}

pub fn aggregation_canary_audit(target: &Target, params: &AggregationCanaryParams, seed: u64) -> Result<Outcome> {
    let pipeline = target.white_box.and_then(|w| w.aggregation()).ok_or_else(|| Error::Invalid {
        field: "method".into(),
        message: "the in-pipeline canary audit needs a target that releases noisy aggregations (gap-*, progap-*)"
            .into(),
    })?;
    let n = params.canaries;
    check!(n >= 100, "canaries", "{n} canaries are too few for a bound (need at least 100)");
    check!(n <= 10_000_000, "canaries", "{n} canaries would not fit in memory (at most 10^7)");
    let g = target.graph;
    check!(g.num_nodes > 0, "graph", "the target graph has no nodes to draw canary features from");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Senders and receivers carry features of real nodes drawn at random (the encoder then gives
    // them in-distribution embeddings); node i is sender i, node n + i receiver i.
    let rows: Vec<i64> = (0..2 * n).map(|_| rng.gen_range(0..g.num_nodes) as i64).collect();
    let features = g.features.index_select(0, &Tensor::from_slice(&rows));
    let coins: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
    let edges: Vec<(usize, usize)> = (0..n).filter(|&i| coins[i]).flat_map(|i| [(i, n + i), (n + i, i)]).collect();
    let releases = pipeline.release(&features, &edges, rng.gen())?;
    check!(
        releases.len() == pipeline.hops(),
        "release",
        "the pipeline released {} hops, not {}",
        releases.len(),
        pipeline.hops()
    );
    let senders = Tensor::arange(n as i64, (Kind::Int64, tch::Device::Cpu));
    let receivers = &senders + n as i64;
    let mut score = Tensor::zeros([n as i64], (Kind::Double, tch::Device::Cpu));
    for (inputs, sums) in &releases {
        score += row_dot(&sums.index_select(0, &receivers), &inputs.index_select(0, &senders));
        score += row_dot(&sums.index_select(0, &senders), &inputs.index_select(0, &receivers));
    }
    let score = to_vec(&score);
    check!(score.iter().all(|s| s.is_finite()), "release", "the pipeline released non-finite aggregations");
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    for (s, &b) in score.into_iter().zip(&coins) {
        if b {
            pos.push(s)
        } else {
            neg.push(s)
        }
    }
    let game = Game {
        unit: GameUnit::EdgeCanary,
        positive: "crafted undirected canary edges (both directions) included (fair coin)".into(),
        negative: "crafted canary edges left out".into(),
        statement: format!(
            "The auditor reads the noisy aggregations released at each of the {} hops for {n} disjoint crafted \
             node pairs and scores each canary by the projection of each end's sums on the other end's \
             inputs.",
            pipeline.hops()
        ),
    };
    let knowledge = AdversaryKnowledge {
        white_box: true,
        notes: vec![
            "reads the released noisy aggregation sums (before row normalisation) of crafted nodes".into(),
            "re-draws them on a crafted graph disjoint from the training graph: the edge-level guarantee covers \
             only these releases, and the encoder reads no edge"
                .into(),
        ],
        ..Default::default()
    };
    let mut out = Outcome::new(pos, neg, None, game, knowledge);
    out.details.insert("canaries".into(), n.into());
    out.details.insert("hops".into(), pipeline.hops().into());
    Ok(out)
}
