//! Canary-edge audit of edge-level DP (Jagielski et al. 2020, with the canaries of one training run
//! as in Steinke, Nasr & Jagielski 2023): insert k edges between random unlinked node pairs, each
//! included in the training graph with probability 1/2 (coins recorded), train with the target's
//! recipe, score each canary pair, and bound epsilon from included vs excluded canaries.
use crate::canary_game::{canary_outcome, check_canaries, one_run_details, ORACLE_ONLY};
use crate::classifier::to_vec;
use crate::error::{check, Error, Result};
use crate::metrics::partition;
use crate::threat::{Access, Attack, Game, GameUnit, Outcome, Target};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use tch::{Kind, Tensor};

/// Parameters of the canary-edge audit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CanaryParams {
    /// Canary edges per training run (endpoints pairwise distinct, so canaries do not interact).
    pub canaries: usize,
    /// Training runs; the canaries of all runs are pooled.
    pub runs: usize,
    /// Score canaries by released embeddings where the target exposes them (else posteriors).
    /// Off by default: some methods' embeddings (GAP's encoder) never see the edges.
    pub use_embeddings: bool,
    /// Craft canaries to be easy to detect (Jagielski et al.'s point: the auditor picks the worst
    /// case): endpoints of at most median degree, with different labels, so that only the canary
    /// edge can make their outputs alike. Any choice made before the coins keeps the audit valid.
    pub crafted: bool,
}

impl Default for CanaryParams {
    fn default() -> Self {
        CanaryParams { canaries: 200, runs: 1, use_embeddings: false, crafted: true }
    }
}

impl Attack for CanaryParams {
    fn game(&self) -> GameUnit {
        GameUnit::EdgeCanary
    }
    fn requires(&self) -> Access {
        ORACLE_ONLY
    }
    fn check(&self) -> Result<()> {
        check_canaries(self.canaries, self.runs)
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        canary_edge_audit(target, self, seed)
    }
}

/// Cosine similarity of rows a[i] and b[i].
fn row_cosine(a: &Tensor, b: &Tensor) -> Vec<f64> {
    let (a, b) = (a.to_kind(Kind::Double), b.to_kind(Kind::Double));
    let dim = Some([-1i64].as_slice());
    let num = (&a * &b).sum_dim_intlist(dim, false, Kind::Double);
    let den = a.norm_scalaropt_dim(2, [-1i64], false) * b.norm_scalaropt_dim(2, [-1i64], false);
    to_vec(&(num / den.clamp_min(1e-12)))
}

pub fn canary_edge_audit(target: &Target, params: &CanaryParams, seed: u64) -> Result<Outcome> {
    let oracle = target.oracle.ok_or_else(|| Error::Unsupported("the canary audit needs a training oracle".into()))?;
    let g = target.graph;
    check!(params.canaries >= 2 && params.runs >= 1, "canaries", "need at least 2 canaries and 1 run");
    check!(
        2 * params.canaries <= g.num_nodes,
        "canaries",
        "{} canaries need {} distinct nodes",
        params.canaries,
        2 * params.canaries
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let edges = g.edge_set();
    let mut degree = vec![0usize; g.num_nodes];
    for &(u, v) in &g.edges {
        degree[u] += 1;
        degree[v] += 1;
    }
    let mut sorted = degree.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    let eligible: Vec<usize> = (0..g.num_nodes).filter(|&v| !params.crafted || degree[v] <= median).collect();
    check!(
        2 * params.canaries <= eligible.len(),
        "canaries",
        "{} canaries need {} eligible nodes, have {}",
        params.canaries,
        2 * params.canaries,
        eligible.len()
    );
    let (mut scores, mut included, mut log) = (Vec::new(), Vec::new(), Vec::new());
    let mut used_embeddings = false;
    for run in 0..params.runs {
        let mut used = HashSet::new();
        let mut canaries = Vec::with_capacity(params.canaries);
        let mut attempts = 0;
        while canaries.len() < params.canaries {
            attempts += 1;
            check!(
                attempts < 1000 * params.canaries,
                "canaries",
                "could not find {} unlinked node pairs",
                params.canaries
            );
            let (a, b) = (eligible[rng.gen_range(0..eligible.len())], eligible[rng.gen_range(0..eligible.len())]);
            let p = (a.min(b), a.max(b));
            let alike = params.crafted && g.labels[a] == g.labels[b];
            if a == b || alike || edges.contains(&p) || used.contains(&a) || used.contains(&b) {
                continue;
            }
            used.insert(a);
            used.insert(b);
            canaries.push((p, rng.gen_bool(0.5)));
        }
        let inserted: Vec<(usize, usize)> = canaries.iter().filter(|c| c.1).map(|c| c.0).collect();
        let audited = g.with_extra_edges(&inserted)?;
        let model = oracle.train(&audited, target.split, seed.wrapping_add(7919 * (run as u64 + 1)))?;
        let us: Vec<usize> = canaries.iter().map(|c| c.0 .0).collect();
        let vs: Vec<usize> = canaries.iter().map(|c| c.0 .1).collect();
        let released = |nodes: &[usize]| -> Result<(Tensor, bool)> {
            if params.use_embeddings {
                if let Some(e) = model.embeddings(nodes)? {
                    return Ok((e, true));
                }
            }
            Ok((model.posteriors(nodes)?, false))
        };
        let (eu, emb) = released(&us)?;
        let (ev, _) = released(&vs)?;
        used_embeddings |= emb;
        let s = row_cosine(&eu, &ev);
        for (c, &sc) in canaries.iter().zip(&s) {
            log.push(serde_json::json!([c.0 .0, c.0 .1, c.1, sc, run]));
        }
        scores.extend(s);
        included.extend(canaries.iter().map(|c| c.1));
    }
    let one_run = one_run_details(&scores, &included, target, GameUnit::EdgeCanary);
    let (pos, neg) = partition(&scores, &included);
    let game = Game {
        unit: GameUnit::EdgeCanary,
        positive: "a canary edge (between two random unlinked nodes) that its coin put into the training graph".into(),
        negative: "a canary edge that its coin left out".into(),
        statement: format!(
            "The auditor inserts {} canary edges per run between random unlinked node pairs with disjoint endpoints{}, \
             each kept with probability 1/2, trains {} model(s) with the target's recipe and guesses each coin from \
             the cosine similarity of the endpoints' released {}; kept and left-out canaries differ in exactly one edge.",
            params.canaries,
            if params.crafted { " (low degree, different labels)" } else { "" },
            params.runs,
            if used_embeddings { "embeddings" } else { "posteriors" }
        ),
    };
    canary_outcome(
        (pos, neg, game),
        "auditor: chooses the canaries, knows the rest of the graph and trains with the recipe",
        log,
        params.canaries * params.runs,
        one_run,
        "eps_lb pools the canaries of a run as independent trials (their coins are independent, as in Steinke et al. \
         2023); the Clopper-Pearson form is the standard two-hypothesis bound of Jagielski et al. (2020).",
    )
}
