//! Record canaries: the canary audit (Jagielski et al. 2020; one run as in Steinke, Nasr &
//! Jagielski 2023) for the units node-level DP and local DP protect.
//!
//! - **Node canaries** (node-level DP): k synthetic nodes appended to the graph, each a mislabelled
//!   copy of a real non-training node's features (the features of one class, the label of another:
//!   the hardest record to generalise to, so the one a model must memorise). Each canary's coin
//!   (probability 1/2) puts it into the training set. Canaries have no edges: an isolated node that
//!   is not trained on influences neither the parameters nor any other node's aggregation, so an
//!   excluded canary is exactly a node removed from the dataset and then queried inductively (its
//!   own noisy aggregation rows carry no data), and included vs excluded differ in one node.
//! - **LDP canaries** (local DP, LPGNN): k synthetic training nodes, each the centre of its own
//!   star of LDP_CANARY_LEAVES untrained leaf nodes (copies of real non-training nodes). Edges and
//!   leaves are public under LPGNN's threat model and identical in both worlds. The star matters:
//!   KProp aggregates over N(v) - {v}, so a node linked into the real graph loses its own record
//!   after one step, while a star centre gets it back after every even number of steps (the GCN
//!   weights 1/sqrt(L) each way cancel), LPGNN's default Kx = 16, Ky = 8. The coin
//!   picks which of two records the canary holds: (features of a class-b node, label b) or
//!   (features of a class-a node, label a). The local randomiser is eps_x-LDP on features and
//!   eps_y-LDP on labels, so everything the model does with the record is (eps_x + eps_y)-LDP in it.
//!
//! Both score a canary by the logit-scaled confidence of its "included" label (LiRA's statistic).
use crate::canary_game::{canary_outcome, one_run_details, sources_by_class, two_classes, RecordCanaryParams};
use crate::error::{check, Error, Result};
use crate::graph::{AttackGraph, NodeSplit};
use crate::metrics::partition;
use crate::posterior;
use crate::threat::{Game, GameUnit, Outcome, Target};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::Tensor;

/// Leaves of each LDP canary's star (public, untrained nodes linked only to their canary).
pub const LDP_CANARY_LEAVES: usize = 2;

crate::canary_game::record_canary_attack!(
/// The node-canary audit (node-level DP).
    NodeCanaryParams,
    GameUnit::NodeCanary,
    node_canary_audit
);

crate::canary_game::record_canary_attack!(
/// The LDP-canary audit (local DP on the whole record).
    LdpCanaryParams,
    GameUnit::LdpCanary,
    ldp_canary_audit
);

/// One run's canaries: appended nodes, their coins and the label whose confidence is scored.
struct Draw {
    graph: AttackGraph,
    split: NodeSplit,
    included: Vec<bool>,
    scored_label: Vec<usize>,
    log: Vec<serde_json::Value>,
}

fn draw(target: &Target, k: usize, ldp: bool, rng: &mut ChaCha8Rng) -> Result<Draw> {
    let g = target.graph;
    let by_class = sources_by_class(g, target.split);
    check!(
        by_class.iter().filter(|c| !c.is_empty()).count() >= 2,
        "canaries",
        "need non-training nodes of at least two classes to build canaries"
    );
    let n = g.num_nodes;
    let (mut rows, mut labels, mut edges) = (Vec::new(), Vec::new(), Vec::new());
    let (mut included, mut scored_label, mut log) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..k {
        let (a, b) = two_classes(&by_class, rng);
        let src_a = *by_class[a].choose(rng).unwrap();
        let src_b = *by_class[b].choose(rng).unwrap();
        let coin = rng.gen_bool(0.5);
        // Node canary: features of class a, label b, trained on iff coin. LDP canary: the record
        // (x_b, b) if coin else (x_a, a), always a training node.
        let (src, label) = if ldp && coin {
            (src_b, b)
        } else if ldp {
            (src_a, a)
        } else {
            (src_a, b)
        };
        rows.push(src as i64);
        labels.push(label);
        included.push(coin);
        scored_label.push(b);
        log.push(serde_json::json!([n + i, src, label, coin]));
    }
    if ldp {
        // Leaves n + k + L i + j, after all canaries.
        for i in 0..k {
            for j in 0..LDP_CANARY_LEAVES {
                let (c, _) = two_classes(&by_class, rng);
                let src = *by_class[c].choose(rng).unwrap();
                rows.push(src as i64);
                labels.push(c);
                edges.push((n + i, n + k + LDP_CANARY_LEAVES * i + j));
            }
        }
    }
    let x = g.features.index_select(0, &Tensor::from_slice(&rows));
    let graph = g.with_extra_nodes(&x, &labels, &edges)?;
    let mut split = target.split.clone();
    // LDP canaries are always training nodes (only their record changes); node canaries iff coin.
    split.train.extend((0..k).filter(|&i| ldp || included[i]).map(|i| n + i));
    Ok(Draw { graph, split, included, scored_label, log })
}

fn record_canary_audit(target: &Target, params: &RecordCanaryParams, seed: u64, ldp: bool) -> Result<Outcome> {
    let oracle = target.oracle.ok_or_else(|| Error::Unsupported("the canary audit needs a training oracle".into()))?;
    check!(params.canaries >= 2 && params.runs >= 1, "canaries", "need at least 2 canaries and 1 run");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut scores, mut included, mut log) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..params.runs {
        let d = draw(target, params.canaries, ldp, &mut rng)?;
        let model = oracle.train(&d.graph, &d.split, seed.wrapping_add(7919 * (run as u64 + 1)))?;
        let n = target.graph.num_nodes;
        let nodes: Vec<usize> = (n..n + params.canaries).collect();
        let rows = posterior::rows(&model.posteriors(&nodes)?);
        scores.extend(rows.iter().zip(&d.scored_label).map(|(p, &y)| posterior::scaled_logit(p, y)));
        included.extend(d.included);
        log.extend(d.log.into_iter().map(|mut e| {
            e.as_array_mut().unwrap().push(run.into());
            e
        }));
    }
    let unit = if ldp { GameUnit::LdpCanary } else { GameUnit::NodeCanary };
    let one_run = one_run_details(&scores, &included, target, unit);
    let (pos, neg) = partition(&scores, &included);
    let game = if ldp {
        Game {
            unit,
            positive: "an LDP canary training node holding the record (features of a class-b node, label b)".into(),
            negative: "the same canary holding (features of a class-a node, label a)".into(),
            statement: format!(
                "The auditor appends {} canary training nodes per run, each the centre of a star of \
                 {LDP_CANARY_LEAVES} untrained leaves (public, the same in both worlds); a coin gives each canary one of two records, the \
                 data holder randomises it locally, the model is trained with the target's recipe ({} run(s)) and \
                 the auditor guesses the coin from the logit-scaled confidence of label b at the canary; the two \
                 worlds differ in one record, which the local randomiser protects with eps_x + eps_y.",
                params.canaries, params.runs
            ),
        }
    } else {
        Game {
            unit,
            positive: "a node canary (a mislabelled copy of a non-training node, no edges) that its coin put into \
                       the training set"
                .into(),
            negative: "a node canary its coin left out (untrained and isolated, i.e. absent from the data)".into(),
            statement: format!(
                "The auditor appends {} isolated canary nodes per run, each with the features of a class-a node and \
                 label b, trains on each with probability 1/2 with the target's recipe ({} run(s)), and guesses each \
                 coin from the logit-scaled confidence of label b at the canary; an untrained isolated node \
                 influences nothing else, so included and excluded canaries differ in exactly one node.",
                params.canaries, params.runs
            ),
        }
    };
    canary_outcome(
        (pos, neg, game),
        "auditor: crafts the canary records, knows the rest of the data and trains with the recipe",
        log,
        params.canaries * params.runs,
        one_run,
        "eps_lb pools the canaries as independent trials (Jagielski et al. 2020); eps_lb_one_run is the bound of \
         Steinke, Nasr & Jagielski (2023, Theorem 3) from the auditor's most confident guesses.",
    )
}

/// Node canaries against a node-level claim.
pub fn node_canary_audit(target: &Target, params: &RecordCanaryParams, seed: u64) -> Result<Outcome> {
    record_canary_audit(target, params, seed, false)
}

/// LDP canary records against a local (LDP) claim.
pub fn ldp_canary_audit(target: &Target, params: &RecordCanaryParams, seed: u64) -> Result<Outcome> {
    record_canary_audit(target, params, seed, true)
}
