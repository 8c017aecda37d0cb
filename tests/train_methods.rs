//! End-to-end checks of the training methods: privacy budgets against their expressions, GAP's
//! structure, accuracy floors on real data, and checkpoints.
use gnnaudit::data::{self, SplitRatios};
use gnnaudit::methods::{self as train, Method, Recipe};
use gnnaudit::privacy::accountant::PrivacyUnit;
use gnnaudit::train::accounting;

#[path = "common/data.rs"]
mod test_data;
use test_data::data_dir;

/// Trains with budgets by RDP only: the PLD epsilon costs seconds per budget and is the
/// accountant's own test subject.
fn train_rdp(r: &Recipe, ds: &data::Dataset, seed: u64) -> gnnaudit::Result<train::TrainedRun> {
    train::train_with(r, ds, seed, &accounting::Accounting::rdp_only())
}

fn synthetic() -> data::Dataset {
    let raw = data::load_dataset("synthetic", None).unwrap();
    data::transforms::prepare_like_gap(&raw, 1, SplitRatios::default(), 0).unwrap()
}

fn cora() -> data::Dataset {
    let raw = data::load_dataset("cora", Some(&data_dir())).unwrap();
    data::transforms::prepare_like_gap(&raw, 1, SplitRatios::default(), 0).unwrap()
}

fn recipe(method: Method, eps: Option<f64>) -> Recipe {
    let mut r = Recipe::new(method, eps);
    r.train.epochs = Some(if method.is_node_level() { 2 } else { 30 });
    if gnnaudit::methods::registry::knob_names(method).iter().any(|k| k == "depth") {
        r.knobs.set("depth", 2);
    }
    r
}

#[test]
fn gap_inf_beats_mlp_on_cora() {
    let ds = cora();
    let mlp = train_rdp(&Recipe::new(Method::Mlp, None), &ds, 1).unwrap();
    let gap = train_rdp(&Recipe::new(Method::GapInf, None), &ds, 1).unwrap();
    // Reference anchors: MLP 71.3 +- 1.7, GAP-inf 84.6 +- 1.0.
    assert!(mlp.accuracy.test > 0.65, "mlp {}", mlp.accuracy.test);
    assert!(gap.accuracy.test > 0.80, "gap-inf {}", gap.accuracy.test);
    assert!(gap.accuracy.test > mlp.accuracy.test + 0.08);
}

#[test]
fn gap_edp_without_noise_equals_gap_inf() {
    let ds = synthetic();
    let a = train_rdp(&recipe(Method::GapEdp, None), &ds, 7).unwrap();
    let b = train_rdp(&recipe(Method::GapInf, None), &ds, 7).unwrap();
    let d = (a.model.posteriors() - b.model.posteriors()).abs().max().double_value(&[]);
    assert_eq!(d, 0.0);
    // With noise the aggregations, hence the posteriors, differ.
    let c = train_rdp(&recipe(Method::GapEdp, Some(1.0)), &ds, 7).unwrap();
    assert!((c.model.posteriors() - b.model.posteriors()).abs().max().double_value(&[]) > 1e-3);
}

#[test]
fn edge_level_budgets_match_their_expressions() {
    let ds = synthetic();
    let delta = accounting::default_delta(ds.graph.num_directed_edges());
    for (m, k) in [(Method::GapEdp, 2usize), (Method::ProgapEdp, 2)] {
        let run = train_rdp(&recipe(m, Some(2.0)), &ds, 1).unwrap();
        let b = &run.budget;
        assert_eq!(b.privacy_unit, PrivacyUnit::Edge);
        assert_eq!(b.delta, delta);
        assert!(b.delta < 1.0 / ds.graph.num_directed_edges() as f64);
        assert!((b.epsilon_rdp - 2.0).abs() < 1e-3, "{m:?}: {}", b.epsilon_rdp);
        let sigma = b.noise[0].1;
        let expr = if m == Method::GapEdp { accounting::gap_edge(k) } else { accounting::progap_edge(k) };
        assert!(
            (accounting::Accounting::rdp_only().budget(&expr, sigma, None, delta).unwrap().epsilon_rdp - b.epsilon_rdp)
                .abs()
                < 1e-9
        );
        // Thesis Prop. 6 / Theorem 4 closed form (classic RDP conversion) is an upper bound, at the
        // noise multiplier of one undirected edge: std / sqrt(2).
        let s = sigma / std::f64::consts::SQRT_2;
        let closed = k as f64 / (2.0 * s * s) + (2.0 * k as f64 * (1.0 / delta).ln()).sqrt() / s;
        assert!(closed >= b.epsilon_rdp && closed < b.epsilon_rdp * 1.3, "closed form {closed}");
    }
}

#[test]
fn node_level_budgets_compose_dp_sgd_and_aggregations_with_one_sigma() {
    let ds = synthetic();
    let n_train = ds.split().unwrap().train.len();
    let delta = accounting::default_delta(ds.num_nodes());
    let r = recipe(Method::GapNdp, Some(8.0));
    let run = train_rdp(&r, &ds, 1).unwrap();
    let b = &run.budget;
    assert_eq!(b.privacy_unit, PrivacyUnit::Node);
    assert!((b.epsilon_rdp - 8.0).abs() < 1e-3);
    let sigma = b.noise[0].1;
    let s = accounting::SgdSchedule::new(256.0 / n_train as f64, (2 * (n_train / 256)) as u64);
    let expr = accounting::gap_node(3, 100, s, s);
    assert!(
        (accounting::Accounting::rdp_only().budget(&expr, sigma, None, delta).unwrap().epsilon_rdp - b.epsilon_rdp)
            .abs()
            < 1e-9
    );
    assert_eq!(b.components.len(), 3);

    let r = recipe(Method::ProgapNdp, Some(8.0));
    let run = train_rdp(&r, &ds, 1).unwrap();
    let sigma = run.budget.noise[0].1;
    let expr = accounting::progap_node(2, 100, s);
    assert!(
        (accounting::Accounting::rdp_only().budget(&expr, sigma, None, delta).unwrap().epsilon_rdp
            - run.budget.epsilon_rdp)
            .abs()
            < 1e-9
    );

    let r = recipe(Method::DpMlp, Some(8.0));
    let run = train_rdp(&r, &ds, 1).unwrap();
    let expr = accounting::dp_sgd(s);
    assert!(
        (accounting::Accounting::rdp_only().budget(&expr, run.budget.noise[0].1, None, delta).unwrap().epsilon_rdp
            - 8.0)
            .abs()
            < 1e-3
    );
    // One DP-SGD run costs less than GAP-NDP's three mechanisms: DP-MLP gets less noise.
    assert!(run.budget.noise[0].1 < sigma);
}

#[test]
fn bad_recipes_are_rejected_before_training() {
    let ds = synthetic();
    for (m, eps, delta) in [
        (Method::GapEdp, Some(0.0), None),
        (Method::GapEdp, Some(-1.0), None),
        (Method::GapEdp, Some(1.0), Some(1.0)),
        (Method::GapEdp, Some(1.0), Some(0.0)),
        (Method::Mlp, Some(1.0), None),
    ] {
        let mut r = Recipe::new(m, eps);
        r.delta = delta;
        let e = train_rdp(&r, &ds, 0).err().expect("must fail");
        assert_eq!(e.exit_code(), 2, "{e}");
    }
    let mut r = Recipe::new(Method::GapInf, None);
    r.knobs.set("hops", 0);
    assert!(r.validate().is_err());
}

#[test]
fn saved_models_answer_the_same_after_loading() {
    let ds = synthetic();
    let dir = tempfile::tempdir().unwrap();
    for m in [Method::GapEdp, Method::ProgapEdp, Method::DpMlp] {
        let r = recipe(m, Some(4.0));
        let run = train_rdp(&r, &ds, 3).unwrap();
        let path = dir.path().join(m.name());
        run.model.save(&path, &r, &run.budget).unwrap();
        let loaded = train::load_model(&path).unwrap();
        assert_eq!(loaded.recipe, r);
        assert_eq!(loaded.budget.privacy_unit, run.budget.privacy_unit);
        assert!((loaded.budget.epsilon_rdp - run.budget.epsilon_rdp).abs() < 1e-12);
        assert!((loaded.budget.noise[0].1 - run.budget.noise[0].1).abs() < 1e-12);
        let d = (loaded.model.posteriors() - run.model.posteriors()).abs().max().double_value(&[]);
        assert!(d < 1e-6, "{m:?}: {d}");
        // Inductive inference on another graph works from the loaded model.
        let p = loaded.model.posteriors_on(&ds).unwrap();
        assert_eq!(p.size(), vec![ds.num_nodes() as i64, ds.num_classes as i64]);
    }
    assert!(train::load_model(&dir.path().join("missing")).is_err());
}

#[test]
fn progap_and_gap_beat_mlp_on_a_homophilous_synthetic_graph() {
    let ds = synthetic();
    let mlp = train_rdp(&recipe(Method::Mlp, None), &ds, 2).unwrap().accuracy.test;
    for m in [Method::GapInf, Method::ProgapInf, Method::ProgapEdp] {
        let eps = (m == Method::ProgapEdp).then_some(4.0);
        let acc = train_rdp(&recipe(m, eps), &ds, 2).unwrap().accuracy.test;
        assert!(acc > mlp + 0.1, "{m:?} {acc} vs mlp {mlp}");
    }
}
