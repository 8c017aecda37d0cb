//! LDP feature canaries: canary games for local-DP targets
//! whose claim covers the node *features* (PGC, thesis ch.2; RGNN, Bhaila et al.), in two units.
//!
//! - **Feature-record game** (`canary-ldp-features`, unit `LdpCanary`): each canary holds one
//!   of two feature vectors (a class-a node's or a class-b node's), the label the same in both
//!   worlds. It is compared with the record claim (PGC: d eps; RGNN: m eps_x + eps_y). Unlike
//!   `canary-ldp`, the label never changes, so it is valid where labels are public (PGC).
//! - **One-feature game** (`canary-ldp-feature`, unit `LdpFeatureCanary`): every canary is the
//!   all-zero record except feature j, which its coin sets to 1 or leaves at 0. The two worlds
//!   differ in one scalar feature, the unit of PGC's per-feature claim eps (the caller hands the
//!   per-feature claim; a record claim is also valid for it, only looser). j is the feature most
//!   over-represented in class b's training nodes (chosen from public data, before any coin).
//!
//! Canaries are appended as isolated nodes outside the train/val/test sets: the target's local
//! randomiser runs on their records like on every node's, the model is trained with the target's
//! recipe, and the auditor reads the canary's posterior. An isolated, untrained node influences no
//! other node and no parameter, so the posterior is post-processing of its own randomised report
//! (and of data that is the same in both worlds): the game is exactly one report of the
//! randomiser. This needs a model that keeps a node's own report (GCN with self loops: PGC;
//! mean aggregation with self loops: RGNN); LPGNN's KProp drops it (use `canary-ldp` there).
//! Scored by the logit-scaled confidence of class b (two-sided tests decide the direction).
use crate::canary_game::{canary_outcome, one_run_details, sources_by_class, two_classes, RecordCanaryParams};
use crate::error::{check, Error, Result};
use crate::metrics::partition;
use crate::posterior;
use crate::threat::{Game, GameUnit, Outcome, Target};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

/// Which private unit the canaries' two records differ in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The whole feature vector (label unchanged).
    Features,
    /// One scalar feature.
    OneFeature,
}

crate::canary_game::record_canary_attack!(
/// Feature-record canaries (features differ, label fixed) against a record-level LDP claim.
    LdpFeaturesCanaryParams,
    GameUnit::LdpCanary,
    ldp_features_canary_audit
);

crate::canary_game::record_canary_attack!(
/// One-feature canaries against a per-feature LDP claim (PGC, RGNN: eps per feature).
    LdpFeatureCanaryParams,
    GameUnit::LdpFeatureCanary,
    ldp_feature_canary_audit
);

/// The class with the most training nodes and the feature most over-represented in it (mean in
/// the class minus mean over all training nodes).
fn indicative_feature(target: &Target) -> Result<(usize, usize)> {
    let g = target.graph;
    let train = &target.split.train;
    check!(!train.is_empty(), "split", "the canary game needs training nodes");
    let mut count = vec![0usize; g.num_classes];
    for &v in train {
        count[g.labels[v]] += 1;
    }
    let b = (0..g.num_classes).max_by_key(|&c| count[c]).expect("classes");
    let idx = Tensor::from_slice(&train.iter().map(|&v| v as i64).collect::<Vec<_>>());
    let x = g.features.to_kind(Kind::Float).index_select(0, &idx);
    let in_b: Vec<i64> = train.iter().enumerate().filter(|(_, &v)| g.labels[v] == b).map(|(i, _)| i as i64).collect();
    let diff = x.index_select(0, &Tensor::from_slice(&in_b)).mean_dim(0, false, Kind::Float)
        - x.mean_dim(0, false, Kind::Float);
    Ok((b, diff.argmax(0, false).int64_value(&[]) as usize))
}

fn feature_canary_audit(target: &Target, params: &RecordCanaryParams, seed: u64, scope: Scope) -> Result<Outcome> {
    let oracle = target.oracle.ok_or_else(|| Error::Unsupported("the canary audit needs a training oracle".into()))?;
    check!(params.canaries >= 2 && params.runs >= 1, "canaries", "need at least 2 canaries and 1 run");
    let g = target.graph;
    let by_class = sources_by_class(g, target.split);
    check!(
        by_class.iter().filter(|c| !c.is_empty()).count() >= 2,
        "canaries",
        "need non-training nodes of at least two classes to build canaries"
    );
    let (n, d, k) = (g.num_nodes, g.num_features(), params.canaries);
    let one = match scope {
        Scope::OneFeature => Some(indicative_feature(target)?),
        Scope::Features => None,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut scores, mut included, mut log) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..params.runs {
        let (mut rows, mut labels, mut scored, mut coins) = (vec![], vec![], vec![], vec![]);
        for i in 0..k {
            let coin = rng.gen_bool(0.5);
            match one {
                Some((b, j)) => {
                    let mut x = vec![0f32; d];
                    x[j] = if coin { 1.0 } else { 0.0 };
                    rows.push(Tensor::from_slice(&x));
                    labels.push(b);
                    scored.push(b);
                    log.push(serde_json::json!([n + i, j, coin, run]));
                }
                None => {
                    let (a, b) = two_classes(&by_class, &mut rng);
                    let src_a = *by_class[a].choose(&mut rng).unwrap();
                    let src_b = *by_class[b].choose(&mut rng).unwrap();
                    let src = if coin { src_b } else { src_a };
                    rows.push(g.features.get(src as i64).to_kind(Kind::Float));
                    // The label is the same in both worlds (and unused: the canary is untrained).
                    labels.push(a);
                    scored.push(b);
                    log.push(serde_json::json!([n + i, src, coin, run]));
                }
            }
            coins.push(coin);
        }
        let graph = g.with_extra_nodes(&Tensor::stack(&rows, 0), &labels, &[])?;
        let model = oracle.train(&graph, target.split, seed.wrapping_add(7919 * (run as u64 + 1)))?;
        let nodes: Vec<usize> = (n..n + k).collect();
        let post = posterior::rows(&model.posteriors(&nodes)?);
        scores.extend(post.iter().zip(&scored).map(|(p, &y)| posterior::scaled_logit(p, y)));
        included.extend(coins);
    }
    let unit = match scope {
        Scope::Features => GameUnit::LdpCanary,
        Scope::OneFeature => GameUnit::LdpFeatureCanary,
    };
    let one_run = one_run_details(&scores, &included, target, unit);
    let (pos, neg) = partition(&scores, &included);
    let game = match one {
        Some((b, j)) => Game {
            unit,
            positive: format!("an isolated, untrained canary node whose record is all zeros but feature {j} = 1"),
            negative: "the same canary with feature {j} = 0 (the all-zero record)".replace("{j}", &j.to_string()),
            statement: format!(
                "The auditor appends {k} isolated canary nodes per run outside the train/val/test sets, each the \
                 all-zero record with feature {j} (the feature most over-represented in class {b}) set by a coin; \
                 every node randomises its record locally, the model is trained with the target's recipe ({} \
                 run(s)) and the auditor guesses each coin from the logit-scaled confidence of class {b} at the \
                 canary; the worlds differ in one scalar feature, the unit of a per-feature LDP claim.",
                params.runs
            ),
        },
        None => Game {
            unit,
            positive: "an isolated, untrained canary node holding the features of a class-b node".into(),
            negative: "the same canary holding the features of a class-a node (same label in both worlds)".into(),
            statement: format!(
                "The auditor appends {k} isolated canary nodes per run outside the train/val/test sets, each holding \
                 a copy of a class-a or (by a coin) a class-b node's features, its label the same in both worlds; \
                 every node randomises its record locally, the model is trained with the target's recipe ({} \
                 run(s)) and the auditor guesses each coin from the logit-scaled confidence of class b at the \
                 canary; the worlds differ in one node's features, which a record-level LDP claim covers.",
                params.runs
            ),
        },
    };
    canary_outcome(
        (pos, neg, game),
        "auditor: crafts the canary records, knows the rest of the data and trains with the recipe",
        log,
        k * params.runs,
        one_run,
        "eps_lb pools the canaries as independent trials (each an isolated, untrained node: one local report, \
         post-processed); eps_lb_one_run is the bound of Steinke, Nasr & Jagielski (2023, Theorem 3).",
    )
}

/// Feature-record canaries (features differ, label fixed) against a record-level LDP claim.
pub fn ldp_features_canary_audit(target: &Target, params: &RecordCanaryParams, seed: u64) -> Result<Outcome> {
    feature_canary_audit(target, params, seed, Scope::Features)
}

/// One-feature canaries against a per-feature LDP claim.
pub fn ldp_feature_canary_audit(target: &Target, params: &RecordCanaryParams, seed: u64) -> Result<Outcome> {
    feature_canary_audit(target, params, seed, Scope::OneFeature)
}
