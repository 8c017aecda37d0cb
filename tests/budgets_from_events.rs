//! Budgets that used to be written by hand as `Budget { .. }` literals (the MLP at edge level,
//! SAGE-EDP, LPGNN) now come from their events through `pure_budget`; these tests pin them to
//! the old literals, field by field, so that no claim changed on the way.
use gnnaudit::data::{self, SplitRatios};
use gnnaudit::methods::lpgnn::{LpgnnConfig, LpgnnKnobs};
use gnnaudit::methods::{self, Method, Recipe};
use gnnaudit::privacy::accountant::{methods as events, Budget, BudgetComponent, Event, PrivacyUnit};
use gnnaudit::report::claim::check_claim;
use gnnaudit::report::record::BudgetRecord;

fn synthetic() -> data::Dataset {
    let raw = data::load_dataset("synthetic", None).unwrap();
    data::transforms::prepare_like_gap(&raw, 1, SplitRatios::default(), 0).unwrap()
}

/// The MLP reads no edge. Old literal: Edge, target 0, delta 0, epsilon 0, no order, PLD 0, no
/// event, no noise, no component. Now its event is the empty composition (recorded, so an audit
/// can recompute the 0), and like every pure budget it states no PLD epsilon; the claim is 0.
#[test]
fn mlp_edge_budget_is_the_empty_composition() {
    let mut r = Recipe::new(Method::Mlp, None);
    r.train.epochs = Some(2);
    let b = methods::train(&r, &synthetic(), 0).unwrap().budget;
    let old = Budget {
        privacy_unit: PrivacyUnit::Edge,
        target_epsilon: Some(0.0),
        delta: 0.0,
        epsilon_rdp: 0.0,
        rdp_order: None,
        epsilon_pld: Some(0.0),
        pld_fallback: None,
        event: None,
        noise: vec![],
        components: vec![],
    };
    assert_eq!(b, Budget { epsilon_pld: None, event: Some(events::no_mechanism()), ..old.clone() });
    assert_eq!(b.claimed_epsilon(), old.claimed_epsilon());
    assert_eq!(b.epsilon_rdp.to_bits(), 0.0f64.to_bits(), "+0, not -0");
    // The audit recomputes the 0 from the recorded event and explains it as before.
    let c = check_claim(&BudgetRecord::from(&b), Some(10_556));
    assert!(!c.is_flagged() && c.delta_reason.contains("no mechanism reads the edges"), "{c:?}");
}

/// SAGE-EDP: asymmetric randomized response, pure eps edge-level DP.
#[test]
fn sage_edp_budget_equals_the_old_literal() {
    let mut r = Recipe::new(Method::SageEdp, Some(2.0));
    r.train.epochs = Some(2);
    let b = methods::train(&r, &synthetic(), 0).unwrap().budget;
    let (keep, add) = (b.noise[0].1, b.noise[1].1);
    let old = Budget {
        privacy_unit: PrivacyUnit::Edge,
        target_epsilon: Some(2.0),
        delta: 0.0,
        epsilon_rdp: 2.0,
        rdp_order: None,
        epsilon_pld: None,
        pld_fallback: None,
        event: Some(events::edge_rand(2.0)),
        noise: vec![("arr_keep_prob".into(), keep), ("arr_add_prob".into(), add)],
        components: vec![BudgetComponent {
            name: "graph".into(),
            mechanism:
                "asymmetric randomized response on the adjacency (90% of eps on the bits, the rest on the density)"
                    .into(),
            epsilon: 2.0,
        }],
    };
    assert_eq!(b, old);
}

/// LPGNN: eps_x + eps_y by basic composition at delta 0 (Corollary 2), with and without features.
#[test]
fn lpgnn_budget_equals_the_old_literal() {
    let cfg =
        LpgnnConfig { own: LpgnnKnobs { epsilon_x: 1.0, epsilon_y: 2.0, ..Default::default() }, ..Default::default() };
    let b = cfg.budget(1433).unwrap();
    let event = Event::Composed(vec![
        Event::PureDp { epsilon: 1.0 }.labelled("multi-bit features (eps_x)"),
        Event::PureDp { epsilon: 2.0 }.labelled("label randomized response (eps_y)"),
    ]);
    let old = Budget {
        privacy_unit: PrivacyUnit::Local,
        target_epsilon: Some(3.0),
        delta: 0.0,
        epsilon_rdp: 3.0,
        rdp_order: None,
        epsilon_pld: None,
        pld_fallback: None,
        event: Some(event.clone()),
        noise: b.noise.clone(),
        components: b.components.clone(),
    };
    assert_eq!(b, old);
    assert_eq!(event, events::lpgnn(1.0, 2.0));
    // Clean labels: no guarantee, as before (unit None, infinite epsilon, no event).
    let open = LpgnnConfig { own: LpgnnKnobs { epsilon_y: f64::INFINITY, ..Default::default() }, ..Default::default() }
        .budget(10)
        .unwrap();
    let old_open = Budget { noise: open.noise.clone(), components: open.components.clone(), ..Budget::non_private() };
    assert_eq!(open, old_open);
}
