//! The LDP feature canary games against PGC and RGNN on Cora:
//! each game is compared with the claim of its own unit (PGC: eps per feature for the one-feature
//! game; RGNN: the record claim m eps_x + eps_y for the feature-record game). At small budgets
//! the claims hold; a planted leak (PGC run at eps 30 per feature while claiming 0.1) is caught.
mod common_cora;
use common_cora::load;
use gnnaudit::audit::feature_claim::claim_for;
use gnnaudit::methods::{train, Method, Recipe};
use gnnaudit::target::{attack_graph, node_split, ModelBlackBox, RecipeOracle};
use gnnaudit_attacks::stats::Verdict;
use gnnaudit_attacks::{
    run_attack, AdversaryKnowledge, AttackKind, AttackParams, AttackResult, Claim, ClaimUnit, GameUnit, Target,
};

/// Trains `recipe` on Cora (50/25/25), then runs `kind` with 200 canaries in one run against
/// `claim` (None: the claim `gnnaudit` derives from the budget for this game).
fn audit(recipe: &Recipe, kind: AttackKind, claim: Option<Claim>) -> AttackResult {
    tch::set_num_threads(1);
    let ds = load("cora", 0.5, 0.25, 0);
    let run = train(recipe, &ds, 1).unwrap();
    let graph = attack_graph(&ds).unwrap();
    let split = node_split(ds.split().unwrap());
    let bb = ModelBlackBox::new(run.model.as_ref());
    let oracle = RecipeOracle::new(recipe, &run.budget, &ds.name);
    let claim = claim.unwrap_or_else(|| claim_for(kind, &run.budget).unwrap());
    let target = Target { graph: &graph, split: &split, black_box: &bb, white_box: None, oracle: Some(&oracle), claim };
    let canaries = serde_json::json!({ "canaries": 200 });
    let params = AttackParams::from_table(kind.name(), canaries.as_object().unwrap()).unwrap();
    run_attack(&target, &AdversaryKnowledge::default(), &params, 7).unwrap()
}

fn pgc(eps: f64) -> Recipe {
    let mut r = Recipe::new(Method::Pgc, Some(eps));
    r.train.epochs = Some(100);
    r
}

#[test]
fn pgc_one_feature_game_holds_at_its_per_feature_claim_and_catches_a_planted_leak() {
    let mut r = audit(&pgc(0.1), AttackKind::CanaryLdpFeature, None);
    assert_eq!(r.game.unit, GameUnit::LdpFeatureCanary);
    // Compared with eps per feature, not with the record claim d eps = 143.3.
    assert_eq!(r.epsilon, Some(0.1));
    assert_eq!(r.verdict, Verdict::Inconclusive, "no control yet: eps_lb {:?}", r.eps_lb);
    // Planted: the mechanism runs at eps 30 per feature (a flip every 1e13 bits) under a 0.1 claim.
    let planted = Claim { unit: ClaimUnit::Local, epsilon: Some(0.1), delta: 0.0 };
    let leak = audit(&pgc(30.0), AttackKind::CanaryLdpFeature, Some(planted));
    assert_eq!(leak.verdict, Verdict::Violated, "eps_lb {:?}", leak.eps_lb);
    assert!(leak.eps_lb.unwrap() > 1.0, "eps_lb {:?}", leak.eps_lb);
    // The planted leak is this audit's positive control: it shows the power, so the honest run
    // is `not refuted`.
    r.judge_with_control(leak.eps_lb);
    assert_eq!(r.verdict, Verdict::NotRefuted, "eps_lb {:?}", r.eps_lb);
}

#[test]
fn rgnn_feature_record_game_holds_at_m_eps_x_plus_eps_y() {
    let mut r = Recipe::new(Method::Rgnn, None);
    r.knobs.set("epsilon_x", 0.1);
    r.knobs.set("epsilon_y", 0.5);
    r.knobs.set("group_size", 25);
    let res = audit(&r, AttackKind::CanaryLdpFeatures, None);
    assert_eq!(res.game.unit, GameUnit::LdpCanary);
    assert!((res.epsilon.unwrap() - 1.5).abs() < 1e-12, "claim {:?}", res.epsilon);
    // Below the claim, and without a positive control nothing shows the attack could exceed it.
    assert_eq!(res.verdict, Verdict::Inconclusive, "eps_lb {:?}", res.eps_lb);
}
