//! Each attack succeeds on a deliberately leaky target and stays at chance on a target trained
//! without the relevant signal; small synthetic graphs so that every test takes a few seconds.
use crate::attack::{AttackConfig, AttackParams};
use crate::canary::CanaryParams;
use crate::canary_game::RecordCanaryParams;
use crate::graph::{AttackGraph, NodeSplit};
use crate::inversion::InversionParams;
use crate::lira::LiraParams;
use crate::membership::{MembershipMetric, MetricMiaParams, MiaParams, ShadowSource};
use crate::reconstruction::ReconstructionParams;
use crate::record_canary::{LdpCanaryParams, NodeCanaryParams};
use crate::result::{run_attack, AttackResult};
use crate::threat::{AdversaryKnowledge, BlackBox, Claim, ClaimUnit, GameUnit, Target};
use crate::toy::*;
use tch::{Kind, Tensor};

fn attack(
    config: &AttackConfig,
    g: &AttackGraph,
    split: &NodeSplit,
    model: &ToyModel,
    oracle: &ToyOracle,
    claim: Claim,
) -> AttackResult {
    let target = Target { graph: g, split, black_box: model, white_box: Some(model), oracle: Some(oracle), claim };
    let params = AttackParams::new(config.clone());
    run_attack(&target, &AdversaryKnowledge::default(), &params, 7).unwrap()
}

fn overfit_mlp() -> ToyConfig {
    ToyConfig { arch: Arch::Mlp, hidden: 128, epochs: 200, lr: 0.01 }
}

fn near_chance(auc: f64) -> bool {
    (0.38..=0.62).contains(&auc)
}

/// Membership: an overfit MLP leaks; the same recipe trained on other nodes (never on the
/// members) does not.
#[test]
fn membership_attacks_detect_overfitting_and_not_unseen_nodes() {
    let g = csbm(600, 3, 32, 1.0, 0.02, 0.005, 1);
    let split = split_per_class(&g, 40, 20);
    let oracle = ToyOracle(overfit_mlp());
    let leaky = ToyModel::train(&g, &split, overfit_mlp(), 3);
    let blind_split = NodeSplit { train: split.val.clone(), val: vec![], test: vec![] };
    let blind = ToyModel::train(&g, &blind_split, overfit_mlp(), 3);
    let (source, shadow_per_class) = (ShadowSource::Independent, Some(150));
    let shadow = MiaParams { source, shadow_per_class, ..Default::default() };
    let metric = MetricMiaParams { source, shadow_per_class, metric: MembershipMetric::ModifiedEntropy };
    let claim = Claim::non_private();
    for config in [AttackConfig::Mia(shadow), AttackConfig::MiaMetric(metric)] {
        let kind = config.kind();
        let hit = attack(&config, &g, &split, &leaky, &oracle, claim);
        let miss = attack(&config, &g, &split, &blind, &oracle, claim);
        assert!(hit.summary.auc > 0.7, "{kind:?} on an overfit model: AUC {}", hit.summary.auc);
        assert!(
            near_chance(miss.summary.auc),
            "{kind:?} on a model that never saw the members: AUC {}",
            miss.summary.auc
        );
        assert!(hit.eps_lb.unwrap() > 0.0, "a non-private leaky model gives evidence of leakage");
        assert!(!hit.violation, "no claim, no violation");
        assert_eq!(hit.summary.num_positives, hit.summary.num_negatives);
    }
    // The reference set-up (attack trained on the target's own members) and every metric work too.
    let source = ShadowSource::TargetSplit;
    let metric = MetricMiaParams { source, shadow_per_class, metric: MembershipMetric::Confidence };
    let hit = attack(&AttackConfig::MiaMetric(metric), &g, &split, &leaky, &oracle, claim);
    let reference = AttackConfig::Mia(MiaParams { source, shadow_per_class, ..Default::default() });
    assert!(hit.summary.auc > 0.7, "confidence threshold: {}", hit.summary.auc);
    // eps_lb is computed for node-level claims and not for edge-level ones.
    let edge_claim = Claim { unit: ClaimUnit::Edge, epsilon: Some(1.0), delta: 1e-5 };
    let r = attack(&reference, &g, &split, &leaky, &oracle, edge_claim);
    assert!(r.eps_lb.is_none() && !r.violation);
    let node_claim = Claim { unit: ClaimUnit::Node, epsilon: Some(0.01), delta: 1e-5 };
    let r = attack(&reference, &g, &split, &leaky, &oracle, node_claim);
    assert!(r.violation, "an overfit model cannot be 0.01-node-DP: eps_lb {:?}", r.eps_lb);
}

/// The LiRA tests' setting: a small graph, its split, the MLP the shadows train, and the target
/// that MLP overfits on the split.
fn lira_setting() -> (AttackGraph, NodeSplit, ToyConfig, ToyOracle, ToyModel) {
    let g = csbm(240, 3, 16, 1.0, 0.02, 0.005, 2);
    let split = split_per_class(&g, 20, 10);
    let cfg = ToyConfig { arch: Arch::Mlp, hidden: 64, epochs: 150, lr: 0.01 };
    let leaky = ToyModel::train(&g, &split, cfg, 5);
    (g, split, cfg, ToyOracle(cfg), leaky)
}

#[test]
fn lira_detects_overfitting_and_not_unseen_nodes() {
    let (g, split, cfg, oracle, leaky) = lira_setting();
    let blind = ToyModel::train(&g, &NodeSplit { train: split.val.clone(), ..Default::default() }, cfg, 5);
    let lira = AttackConfig::Lira(LiraParams { shadows: 8, ..Default::default() });
    let claim = Claim::non_private();
    let hit = attack(&lira, &g, &split, &leaky, &oracle, claim);
    let miss = attack(&lira, &g, &split, &blind, &oracle, claim);
    assert!(hit.summary.auc > 0.75, "LiRA on an overfit model: {}", hit.summary.auc);
    assert!(near_chance(miss.summary.auc), "LiRA on a model that never saw the members: {}", miss.summary.auc);
    let offline = hit.details["offline"]["auc"].as_f64().unwrap();
    assert!(offline > 0.7, "offline LiRA: {offline}");
}

/// A target whose best-validation checkpoint came from an early epoch: the toy model's log
/// posteriors divided by a temperature (the second field), so it is less confident on every node
/// than the shadows trained to the end.
struct Flattened<'a>(&'a ToyModel, f64);

impl BlackBox for Flattened<'_> {
    fn num_classes(&self) -> usize {
        BlackBox::num_classes(self.0)
    }
    fn posteriors(&self, nodes: &[usize]) -> crate::Result<Tensor> {
        Ok((self.0.posteriors(nodes)?.clamp_min(1e-12).log() / self.1).softmax(-1, Kind::Float))
    }
}

/// LiRA against a target less confident overall than its shadows (an early
/// best-validation epoch). Rank calibration keeps the attack's power; the raw likelihood ratio
/// loses it, since the target scores below both the IN and the OUT fit of nearly every node.
#[test]
fn lira_is_not_fooled_by_a_target_less_confident_than_its_shadows() {
    let (g, split, _, oracle, leaky) = lira_setting();
    let mut params = LiraParams { shadows: 8, ..Default::default() };
    let run = |bb: &dyn BlackBox, params: &LiraParams| {
        let target = Target {
            graph: &g,
            split: &split,
            black_box: bb,
            white_box: None,
            oracle: Some(&oracle),
            claim: Claim::non_private(),
        };
        let params = AttackParams::new(AttackConfig::Lira(*params));
        run_attack(&target, &AdversaryKnowledge::default(), &params, 7).unwrap().summary.auc
    };
    let base = run(&leaky, &params);
    let flat = Flattened(&leaky, 8.0);
    let calibrated = run(&flat, &params);
    params.rank_calibration = false;
    let raw = run(&flat, &params);
    assert!(
        calibrated > 0.75 && calibrated > base - 0.03,
        "calibrated: {calibrated} (same target at full confidence: {base})"
    );
    assert!(raw < calibrated - 0.15, "the raw likelihood ratio was expected to lose power here: {raw} vs {calibrated}");
}

/// Link stealing on a graph without homophily: a GCN's posteriors reveal its edges, an MLP's
/// (which never saw them) do not, since linked nodes are no more alike than unlinked ones.
#[test]
fn link_stealing_finds_gcn_edges_and_not_mlp_ones() {
    let g = csbm(400, 4, 32, 2.0, 0.005, 0.005, 3);
    let split = split_per_class(&g, 30, 10);
    let gcn = ToyConfig { arch: Arch::Gcn, hidden: 32, epochs: 100, lr: 0.01 };
    let mlp = ToyConfig { arch: Arch::Mlp, hidden: 32, epochs: 100, lr: 0.01 };
    let oracle = ToyOracle(gcn);
    let link = AttackConfig::LinkStealing(Default::default());
    let claim = Claim { unit: ClaimUnit::Edge, epsilon: Some(1.0), delta: 1e-5 };
    let hit = attack(&link, &g, &split, &ToyModel::train(&g, &split, gcn, 1), &oracle, claim);
    let miss = attack(&link, &g, &split, &ToyModel::train(&g, &split, mlp, 1), &oracle, claim);
    let cos = |r: &AttackResult| r.details["unsupervised_auc"]["cosine"].as_f64().unwrap();
    assert!(hit.summary.auc > 0.6 && cos(&hit) > 0.65, "GCN: MLP {} cosine {}", hit.summary.auc, cos(&hit));
    assert!(hit.details["logistic_auc"].as_f64().unwrap() > 0.6, "logistic: {}", hit.details["logistic_auc"]);
    assert!(near_chance(miss.summary.auc) && near_chance(cos(&miss)), "MLP: {} {}", miss.summary.auc, cos(&miss));
    // Natural pairs never yield an epsilon comparison.
    assert!(hit.eps_lb.is_none() && !hit.violation && hit.note.as_deref().unwrap().contains("homophily"));
}

/// The canary audit of an un-noised edge mechanism finds a large epsilon; calibrated noise keeps
/// the bound below the claim.
#[test]
fn canary_edge_audit_catches_missing_noise() {
    let g = csbm(800, 2, 64, 0.5, 0.002, 0.002, 4);
    let split = split_per_class(&g, 50, 20);
    let params = AttackConfig::CanaryEdge(CanaryParams {
        canaries: 300,
        use_embeddings: true,
        crafted: false,
        ..Default::default()
    });
    let delta = 1e-5;
    let broken = ToyConfig { arch: Arch::NoisyAgg { sigma: 0.0 }, hidden: 16, epochs: 20, lr: 0.01 };
    let model = ToyModel::train(&g, &split, broken, 1);
    let claim = Claim { unit: ClaimUnit::Edge, epsilon: Some(1.0), delta };
    let r = attack(&params, &g, &split, &model, &ToyOracle(broken), claim);
    assert!(r.eps_lb.unwrap() > 2.5, "no noise: eps_lb {:?}, AUC {}", r.eps_lb, r.summary.auc);
    assert!(r.violation);
    let one_run = r.details["eps_lb_one_run"].as_f64().unwrap();
    assert!(one_run > 1.0, "no noise: one-run eps_lb {one_run} ({})", r.details["one_run"]);
    // sigma for (1, 1e-5)-DP with L2 sensitivity sqrt(2) (one edge moves two rows by unit vectors).
    let mut sigma = 1.0;
    while gaussian_epsilon(2f64.sqrt(), sigma, delta) > 1.0 {
        sigma *= 1.05;
    }
    let eps = gaussian_epsilon(2f64.sqrt(), sigma, delta);
    let noised = ToyConfig { arch: Arch::NoisyAgg { sigma }, ..broken };
    let claim = Claim { unit: ClaimUnit::Edge, epsilon: Some(eps), delta };
    let r = attack(&params, &g, &split, &model, &ToyOracle(noised), claim);
    assert!(r.eps_lb.unwrap() <= eps && !r.violation, "sigma {sigma}: eps_lb {:?} > {eps}", r.eps_lb);
    assert!(r.details["eps_lb_one_run"].as_f64().unwrap() <= eps, "{}", r.details["one_run"]);
    assert_eq!(r.details["coins"].as_array().unwrap().len(), 300);
    // An edge canary says nothing about a node-level claim.
    let claim = Claim { unit: ClaimUnit::Node, epsilon: Some(1.0), delta };
    let r = attack(&params, &g, &split, &model, &ToyOracle(broken), claim);
    assert!(r.eps_lb.is_none() && r.details["eps_lb_one_run"].is_null() && !r.violation);
}

/// Node canaries: a model that memorises its training nodes reveals which canaries it trained on
/// (far beyond a node-level eps of 1); a model that learns nothing from its records does not.
#[test]
fn node_canary_audit_catches_memorisation() {
    let g = csbm(600, 3, 32, 1.0, 0.02, 0.005, 8);
    let split = split_per_class(&g, 40, 20);
    let params = AttackConfig::CanaryNode(NodeCanaryParams(RecordCanaryParams { canaries: 200, ..Default::default() }));
    let claim = Claim { unit: ClaimUnit::Node, epsilon: Some(1.0), delta: 1e-5 };
    let model = ToyModel::train(&g, &split, overfit_mlp(), 1);
    let r = attack(&params, &g, &split, &model, &ToyOracle(overfit_mlp()), claim);
    assert!(r.summary.auc > 0.9, "memorising MLP: AUC {}", r.summary.auc);
    assert!(r.eps_lb.unwrap() > 1.0 && r.violation, "eps_lb {:?}", r.eps_lb);
    assert!(r.details["eps_lb_one_run"].as_f64().unwrap() > 1.0, "{}", r.details["one_run"]);
    assert_eq!(r.game.unit, GameUnit::NodeCanary);
    let constant = ToyConfig { arch: Arch::Constant, ..overfit_mlp() };
    let r = attack(&params, &g, &split, &model, &ToyOracle(constant), claim);
    assert!(near_chance(r.summary.auc) && r.eps_lb.unwrap() <= 1.0 && !r.violation, "{:?}", r.eps_lb);
    assert_eq!(r.details["eps_lb_one_run"].as_f64().unwrap(), 0.0);
    // Node canaries do not bound an edge-level claim.
    let edge = Claim { unit: ClaimUnit::Edge, epsilon: Some(1.0), delta: 1e-5 };
    let r = attack(&params, &g, &split, &model, &ToyOracle(constant), edge);
    assert!(r.eps_lb.is_none() && !r.violation);
}

/// LDP canaries: training on raw records (a broken local randomiser) gives eps_lb far above the
/// claim; with the records randomised at eps_x = eps_y = 0.5 the bound stays below eps = 1.
#[test]
fn ldp_canary_audit_respects_the_local_randomiser() {
    let g = csbm(600, 3, 16, 3.0, 0.01, 0.01, 9);
    let split = split_per_class(&g, 60, 20);
    let params = AttackConfig::CanaryLdp(LdpCanaryParams(RecordCanaryParams { canaries: 200, ..Default::default() }));
    let claim = Claim { unit: ClaimUnit::Local, epsilon: Some(1.0), delta: 0.0 };
    let cfg = ToyConfig { arch: Arch::Mlp, hidden: 32, epochs: 100, lr: 0.01 };
    let model = ToyModel::train(&g, &split, cfg, 1);
    let r = attack(&params, &g, &split, &model, &ToyOracle(cfg), claim);
    assert!(r.eps_lb.unwrap() > 1.5 && r.violation, "raw records: eps_lb {:?} AUC {}", r.eps_lb, r.summary.auc);
    assert!(r.details["eps_lb_one_run"].as_f64().unwrap() > 1.0, "{}", r.details["one_run"]);
    let ldp = ToyConfig { arch: Arch::Ldp { eps_x: 0.5, eps_y: 0.5 }, ..cfg };
    let r = attack(&params, &g, &split, &model, &ToyOracle(ldp), claim);
    assert!(r.eps_lb.unwrap() <= 1.0 && !r.violation, "LDP: eps_lb {:?} AUC {}", r.eps_lb, r.summary.auc);
    assert!(r.details["eps_lb_one_run"].as_f64().unwrap() <= 1.0);
    assert_eq!(r.game.unit, GameUnit::LdpCanary);
}

#[test]
fn inversion_recovers_class_features_only_from_a_trained_model() {
    // Binary bag-of-words-like features: a word is present where the CSBM feature exceeds 1.
    let mut g = csbm(300, 3, 32, 4.0, 0.01, 0.01, 5);
    g.features = g.features.gt(1.0).to_kind(tch::Kind::Float);
    let split = split_per_class(&g, 40, 10);
    let cfg = ToyConfig { arch: Arch::Mlp, hidden: 32, epochs: 100, lr: 0.01 };
    let oracle = ToyOracle(cfg);
    let params = AttackConfig::Inversion(InversionParams { steps: 200, ..Default::default() });
    let claim = Claim::non_private();
    let hit = attack(&params, &g, &split, &ToyModel::train(&g, &split, cfg, 1), &oracle, claim);
    let constant = ToyConfig { arch: Arch::Constant, ..cfg };
    let miss = attack(&params, &g, &split, &ToyModel::train(&g, &split, constant, 1), &oracle, claim);
    assert!(hit.summary.auc > 0.8, "trained MLP: {}", hit.summary.auc);
    assert!(near_chance(miss.summary.auc), "constant model: {}", miss.summary.auc);
    assert!(hit.eps_lb.is_none());
}

#[test]
fn graph_reconstruction_uses_the_white_box_gcn() {
    let g = csbm(200, 2, 16, 1.0, 0.05, 0.01, 6);
    let split = split_per_class(&g, 30, 10);
    let gcn = ToyConfig { arch: Arch::Gcn, hidden: 16, epochs: 100, lr: 0.01 };
    let oracle = ToyOracle(gcn);
    let mut rec = ReconstructionParams { steps: 100, ..Default::default() };
    let claim = Claim::non_private();
    let hit = attack(
        &AttackConfig::GraphReconstruction(rec),
        &g,
        &split,
        &ToyModel::train(&g, &split, gcn, 1),
        &oracle,
        claim,
    );
    assert!(hit.summary.auc > 0.6, "white-box GCN: {} ({:?})", hit.summary.auc, hit.details);
    // An MLP's output ignores the adjacency; without the feature-smoothness prior nothing is left.
    rec.alpha = 0.0;
    let mlp = ToyConfig { arch: Arch::Mlp, ..gcn };
    let miss = attack(
        &AttackConfig::GraphReconstruction(rec),
        &g,
        &split,
        &ToyModel::train(&g, &split, mlp, 1),
        &oracle,
        claim,
    );
    assert!(near_chance(miss.summary.auc), "MLP: {}", miss.summary.auc);
}

#[test]
fn attribute_inference_beats_majority_only_when_the_attribute_leaks() {
    let base = csbm(600, 3, 16, 3.0, 0.01, 0.01, 7);
    let split = split_per_class(&base, 40, 10);
    let cfg = ToyConfig { arch: Arch::Mlp, hidden: 32, epochs: 100, lr: 0.01 };
    let model = ToyModel::train(&base, &split, cfg, 1);
    let oracle = ToyOracle(cfg);
    let params = AttackConfig::Attribute(Default::default());
    let claim = Claim::non_private();
    // Correlated with the class (the model predicts it) vs independent of everything.
    let correlated: Vec<usize> =
        base.labels.iter().enumerate().map(|(i, &y)| ((y == 0) ^ (i % 10 == 0)) as usize).collect();
    let g = base.clone().with_sensitive(correlated).unwrap();
    let hit = attack(&params, &g, &split, &model, &oracle, claim);
    assert!(hit.summary.auc > 0.8, "correlated attribute: {}", hit.summary.auc);
    assert!(hit.details["accuracy"].as_f64().unwrap() > hit.details["majority_baseline"].as_f64().unwrap());
    let random: Vec<usize> = (0..base.num_nodes).map(|i| (i * 7919 + 13) % 97 % 2).collect();
    let g = base.clone().with_sensitive(random).unwrap();
    let miss = attack(&params, &g, &split, &model, &oracle, claim);
    assert!(near_chance(miss.summary.auc), "independent attribute: {}", miss.summary.auc);
}
