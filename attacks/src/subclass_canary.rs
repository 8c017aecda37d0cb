//! Subclass canaries: the canary audit for subclass-level DP
//! (Zhang thesis ch.4, Defs. 9-10), whose unit is a whole subclass, and for class-level DP, which
//! implies it (adding a subclass to class b replaces class b).
//!
//! Each run appends k canary subclasses, each a cluster of `size` isolated nodes: copies of the
//! features of distinct non-training class-a nodes, all labelled b (the hardest cluster to
//! generalise to, so the one a model must memorise). A coin (probability 1/2) per canary puts the
//! whole cluster into the training set, and the trainer is told that each cluster is one unit
//! (`ShadowOracle::train_with_units`), so that included and excluded differ in exactly one unit.
//! A canary is scored by the mean logit-scaled confidence of label b over its records.
use crate::canary_game::{canary_outcome, check_canaries, one_run_details, sources_by_class, two_classes, ORACLE_ONLY};
use crate::error::{check, Error, Result};
use crate::metrics::partition;
use crate::posterior;
use crate::threat::{Access, Attack, Game, GameUnit, Outcome, Target};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::Tensor;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubclassCanaryParams {
    /// Canary subclasses per run.
    pub canaries: usize,
    /// Records per canary subclass.
    pub size: usize,
    /// Training runs; canaries of all runs are pooled (each canary lives in one run only).
    pub runs: usize,
}

impl Default for SubclassCanaryParams {
    fn default() -> Self {
        SubclassCanaryParams { canaries: 40, size: 5, runs: 1 }
    }
}

impl Attack for SubclassCanaryParams {
    fn game(&self) -> GameUnit {
        GameUnit::SubclassCanary
    }
    fn requires(&self) -> Access {
        ORACLE_ONLY
    }
    fn check(&self) -> Result<()> {
        check_canaries(self.canaries, self.runs)?;
        check!(self.size >= 1, "size", "a canary subclass needs at least 1 record");
        Ok(())
    }
    fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
        subclass_canary_audit(target, self, seed)
    }
}

pub fn subclass_canary_audit(target: &Target, params: &SubclassCanaryParams, seed: u64) -> Result<Outcome> {
    let oracle =
        target.oracle.ok_or_else(|| Error::Unsupported("the subclass canary audit needs a training oracle".into()))?;
    check!(params.canaries >= 2 && params.runs >= 1, "canaries", "need at least 2 canaries and 1 run");
    check!(params.size >= 1, "size", "a canary subclass needs at least 1 record");
    let g = target.graph;
    let by_class = sources_by_class(g, target.split);
    check!(
        by_class.iter().filter(|c| c.len() >= params.size).count() >= 1
            && by_class.iter().filter(|c| !c.is_empty()).count() >= 2,
        "size",
        "need non-training nodes of two classes, one with at least {} of them",
        params.size
    );
    let n = g.num_nodes;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut scores, mut included, mut log) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..params.runs {
        let (mut rows, mut labels, mut units, mut coins, mut scored) = (vec![], vec![], vec![], vec![], vec![]);
        for i in 0..params.canaries {
            let (a, b) = loop {
                let (a, b) = two_classes(&by_class, &mut rng);
                if by_class[a].len() >= params.size {
                    break (a, b);
                }
            };
            let sources: Vec<usize> = by_class[a].choose_multiple(&mut rng, params.size).copied().collect();
            let ids: Vec<usize> = (0..params.size).map(|j| n + i * params.size + j).collect();
            rows.extend(sources.iter().map(|&s| s as i64));
            labels.extend(std::iter::repeat_n(b, params.size));
            let coin = rng.gen_bool(0.5);
            log.push(serde_json::json!([ids[0], sources, a, b, coin, run]));
            units.push(ids);
            coins.push(coin);
            scored.push(b);
        }
        let x = g.features.index_select(0, &Tensor::from_slice(&rows));
        let graph = g.with_extra_nodes(&x, &labels, &[])?;
        let mut split = target.split.clone();
        for (u, &c) in units.iter().zip(&coins) {
            if c {
                split.train.extend(u);
            }
        }
        let model = oracle.train_with_units(&graph, &split, &units, seed.wrapping_add(7919 * (run as u64 + 1)))?;
        for (u, &b) in units.iter().zip(&scored) {
            let post = posterior::rows(&model.posteriors(u)?);
            scores.push(post.iter().map(|p| posterior::scaled_logit(p, b)).sum::<f64>() / post.len() as f64);
        }
        included.extend(coins);
    }
    let one_run = one_run_details(&scores, &included, target, GameUnit::SubclassCanary);
    let (pos, neg) = partition(&scores, &included);
    let game = Game {
        unit: GameUnit::SubclassCanary,
        positive: format!(
            "a canary subclass ({} isolated copies of non-training class-a records, labelled b) trained on as one unit",
            params.size
        ),
        negative: "a canary subclass its coin left out (untrained, isolated: absent from the data)".into(),
        statement: format!(
            "The auditor appends {} canary subclasses of {} records per run, trains on each whole subclass with \
             probability 1/2 with the target's recipe (each canary one unit of the partition, {} run(s)) and guesses \
             each coin from the mean logit-scaled confidence of label b over the subclass's records; included and \
             excluded canaries differ in exactly one subclass.",
            params.canaries, params.size, params.runs
        ),
    };
    canary_outcome(
        (pos, neg, game),
        "auditor: crafts the canary subclasses, knows the rest of the data and trains with the recipe",
        log,
        params.canaries * params.runs,
        one_run,
        "eps_lb pools the canary subclasses as independent trials (Jagielski et al. 2020); eps_lb_one_run is the \
         bound of Steinke, Nasr & Jagielski (2023, Theorem 3) with one canary per subclass.",
    )
}
