//! Sensitivity replay: every private method's pre-noise releases stay within
//! the sensitivity its noise assumes on neighbouring graphs, with the exact changes the lemmas
//! predict where they are identities; the deliberately unsound `dpgnn-rowclip` is flagged on
//! Cornell5; bad input exits 2 naming the culprit; audit configs run the `sensitivity` kind.
mod common_cora;
use common_cora as common;

use gnnaudit::data::{self, Dataset, SplitRatios};
use gnnaudit::methods::{Method, Recipe};
use gnnaudit::replay::{replay, units, ReplayOptions, ReplayReport, TOLERANCE};
// Both helpers include tests/common/data.rs for the tests that load only one of them.
#[allow(clippy::duplicate_mod)]
#[path = "common/cli.rs"]
mod cli;
use cli::{audit, gnnaudit};

fn prepared(name: &str, min_class_count: usize) -> Dataset {
    prepared_from(&common::data_dir(), name, min_class_count)
}

fn prepared_from(dir: &std::path::Path, name: &str, min_class_count: usize) -> Dataset {
    let raw = data::load_dataset(name, Some(dir)).unwrap();
    data::transforms::prepare_like_gap(&raw, min_class_count, SplitRatios::default(), 0).unwrap()
}

/// A short recipe: sensitivity does not depend on how long the model trained.
fn recipe(method: Method, epsilon: f64) -> Recipe {
    let mut r = Recipe::new(method, Some(epsilon));
    r.train.epochs = Some(3);
    r
}

fn run(r: &Recipe, ds: &Dataset, random_units: usize) -> ReplayReport {
    replay(r, ds, &ReplayOptions { seed: 0, random_units }).unwrap()
}

fn releases<'a>(rep: &'a ReplayReport, prefix: &'a str) -> impl Iterator<Item = &'a gnnaudit::replay::Release> {
    rep.releases.iter().filter(move |r| r.name.starts_with(prefix))
}

fn assert_holds(rep: &ReplayReport) {
    assert_eq!(rep.verdict, "not refuted", "{}: max_ratio {}", rep.method, rep.max_ratio);
    assert!(rep.max_ratio <= 1.0 + TOLERANCE, "{}: {}", rep.method, rep.max_ratio);
    assert!(rep.releases.iter().any(|r| r.worst_case) && rep.releases.iter().any(|r| !r.worst_case));
}

/// GAP at edge level: removing a directed edge u->v changes exactly row v of each hop's sum, by
/// the unit row x_u, so every ratio is 1 (Lemma 6 is tight). At node level the worst-case node's
/// change is sqrt(its out-degree in the degree-bounded graph) <= sqrt(D), and each DP-SGD sum
/// moves by at most C.
#[test]
fn gap_releases_hold_with_the_changes_the_lemmas_predict() {
    let ds = prepared("cora", 1);
    let rep = run(&recipe(Method::GapEdp, 1.0), &ds, 3);
    assert_holds(&rep);
    assert_eq!(releases(&rep, "PMA hop").count(), 2 * 4, "two hops, four edges");
    for r in releases(&rep, "PMA hop") {
        // Rows are unit vectors up to float32 rounding of their norms (1e-7).
        assert!((r.ratio - 1.0).abs() < TOLERANCE, "{} {}: {}", r.name, r.unit, r.ratio);
        assert_eq!(r.declared_sensitivity, 1.0);
    }

    let mut r = recipe(Method::GapNdp, 8.0);
    r.dp.max_degree = 20;
    let rep = run(&r, &ds, 2);
    assert_holds(&rep);
    for rel in releases(&rep, "PMA hop") {
        assert!((rel.declared_sensitivity - 20f64.sqrt()).abs() < 1e-12);
        let k = rel.observed_change * rel.observed_change;
        assert!((k - k.round()).abs() < 1e-4 && k.round() >= 1.0, "{}: change^2 {k} is an out-degree", rel.unit);
    }
    // Cora has nodes of degree >= 20 among the training nodes: the worst case meets the bound.
    let worst = releases(&rep, "PMA hop 1").find(|r| r.worst_case).unwrap();
    assert!((worst.ratio - 1.0).abs() < TOLERANCE, "worst-case node {} ratio {}", worst.unit, worst.ratio);
    let sgd: Vec<_> = releases(&rep, "encoder DP-SGD").chain(releases(&rep, "classifier DP-SGD")).collect();
    assert_eq!(sgd.len(), 2 * 3);
    assert!(sgd.iter().all(|r| r.declared_sensitivity == 1.0 && r.observed_change > 0.0 && r.ratio <= 1.0));
}

#[test]
fn progap_dp_mlp_and_sage_edp_hold() {
    let ds = prepared("cora", 1);
    let mut r = recipe(Method::ProgapEdp, 1.0);
    r.knobs.set("depth", 2);
    let rep = run(&r, &ds, 2);
    assert_holds(&rep);
    assert!(releases(&rep, "NAP stage").all(|r| (r.ratio - 1.0).abs() < TOLERANCE));

    let mut r = recipe(Method::ProgapNdp, 8.0);
    r.knobs.set("depth", 2);
    r.train.epochs = Some(1);
    let rep = run(&r, &ds, 1);
    assert_holds(&rep);
    assert_eq!(releases(&rep, "stage").filter(|r| r.name.contains("DP-SGD")).count(), 3 * 2);

    let rep = run(&recipe(Method::DpMlp, 8.0), &ds, 3);
    assert_holds(&rep);
    assert!(rep.releases.iter().all(|r| r.ratio > 0.0));

    // EdgeRand reads one bit per pair and the density: removing a pair flips one bit and moves
    // the density by 1 / pairs, exactly its declared sensitivities.
    let rep = run(&recipe(Method::SageEdp, 1.0), &ds, 3);
    assert_holds(&rep);
    assert!(rep.releases.iter().all(|r| (r.ratio - 1.0).abs() < 1e-9), "{:?}", rep.releases);
}

/// DP-GNN holds; dpgnn-rowclip, which samples only in-degrees and clips per subgraph row (as
/// the reference does) under the same noise, is flagged on Cornell5 (the bench's setting).
#[test]
fn dpgnn_holds_and_dpgnn_rowclip_is_flagged_on_cornell5() {
    let test = "dpgnn_holds_and_dpgnn_rowclip_is_flagged_on_cornell5";
    let Some(dir) = common::need(test, "facebook100-Cornell5") else { return };
    let ds = prepared_from(&dir, "facebook100-Cornell5", 1000);
    let rep = run(&recipe(Method::Dpgnn, 8.0), &ds, 3);
    assert_holds(&rep);
    assert!(rep.unsound.is_none());

    let rep = run(&recipe(Method::DpgnnRowclip, 8.0), &ds, 3);
    assert_eq!(rep.verdict, "violated", "max_ratio {}", rep.max_ratio);
    assert!(rep.max_ratio > 1.5, "{}", rep.max_ratio);
    assert!(rep.max_ratio_worst_case >= rep.max_ratio_random.unwrap());
    assert!(rep.unsound.as_deref().unwrap().starts_with("UNSOUND"));
    // The in-degree-only sample lets the worst node feed more than D = 4 aggregations.
    let agg = releases(&rep, "test-time aggregation").find(|r| r.worst_case).unwrap();
    assert!(agg.ratio > 1.0 + TOLERANCE && agg.declared_sensitivity == 2.0, "{agg:?}");
}

/// quick.toml's planted bug (GAP-EDP whose noise assumes sensitivity 0.1) is replayed like
/// GAP-EDP and flagged: every PMA hop's change is 1, ten times the declared 0.1.
#[test]
fn planted_bug_is_replayed_and_flagged() {
    let ds = prepared("cora", 1);
    let rep = run(&recipe(Method::DemoGapEdpPlantedBug, 1.0), &ds, 1);
    assert_eq!(rep.verdict, "violated", "max_ratio {}", rep.max_ratio);
    for r in releases(&rep, "PMA hop") {
        assert_eq!(r.declared_sensitivity, 0.1);
        assert!((r.ratio - 10.0).abs() < 10.0 * TOLERANCE, "{} {}: {}", r.name, r.unit, r.ratio);
    }
}

/// Coupling: a node's batch coin does not depend on who else is in the pool.
#[test]
fn batch_coins_are_per_unit() {
    let pool: Vec<usize> = (0..5000).collect();
    let full = units::poisson_batch(&pool, 0.1, 7, 3);
    let without: Vec<usize> = pool.iter().copied().filter(|&v| v != full[0]).collect();
    let mut expected = full.clone();
    expected.remove(0);
    assert_eq!(units::poisson_batch(&without, 0.1, 7, 3), expected);
    assert!((full.len() as f64 - 500.0).abs() < 5.0 * 500f64.sqrt(), "{}", full.len());
    assert_ne!(units::poisson_batch(&pool, 0.1, 7, 4), full, "another step draws other coins");
}

#[test]
fn cli_reports_json_and_refuses_bad_input_with_exit_2() {
    let args = ["replay", "--dataset", "synthetic", "--method", "gap-edp", "--epochs", "2", "--json"];
    let (code, out, err) = gnnaudit(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["method"], "gap-edp");
    assert_eq!(v["verdict"], "not refuted");
    let first = &v["releases"][0];
    for key in ["name", "observed_change", "declared_sensitivity", "ratio"] {
        assert!(!first[key].is_null(), "release lacks {key}: {first}");
    }
    assert!(v["max_ratio"].as_f64().unwrap() <= 1.0 + TOLERANCE);

    for (args, culprit) in [
        (vec!["replay", "--dataset", "synthetic", "--method", "lpgnn"], "method"),
        (vec!["replay", "--dataset", "synthetic", "--method", "gap-inf"], "method"),
        (vec!["replay", "--dataset", "synthetic", "--method", "gap-edp", "--epsilon=-1"], "epsilon"),
        (vec!["replay", "--dataset", "no-such-graph", "--method", "gap-edp"], "no-such-graph"),
    ] {
        let (code, _, err) = gnnaudit(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(culprit), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let (code, out, _) = gnnaudit(&["replay", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("dpgnn-rowclip") && out.contains("UNSOUND"), "{out}");
}

const AUDIT: &str = r#"
name = "replay"
output = "reports"
seed = 0
[privacy]
epsilons = [2, inf]
[[datasets]]
name = "synthetic"
synthetic = { nodes = 400 }
[[methods]]
method = "gap-edp"
epochs = 2
[[methods]]
method = "dpgnn-rowclip"
epsilons = [8]
epochs = 2
[[attacks]]
kind = "sensitivity"
params = { random_units = 1 }
"#;

#[test]
fn audit_configs_run_the_sensitivity_kind() {
    let run = audit(AUDIT);
    let v = &run.report;
    let records: Vec<&serde_json::Value> =
        v["cells"].as_array().unwrap().iter().flat_map(|c| c["attacks"].as_array().unwrap()).collect();
    let verdicts: Vec<&str> = records.iter().map(|a| a["verdict"].as_str().unwrap()).collect();
    // gap-edp at eps 2 and inf, dpgnn-rowclip at eps 8 (its in-degree-only sample lets hubs feed
    // more than D aggregations on the synthetic graph too).
    assert_eq!(verdicts, ["not refuted", "no claim", "violated"], "{verdicts:?}");
    let replayed = records.iter().find(|a| a["verdict"] == "not refuted").unwrap();
    assert!(replayed["details"]["max_ratio"].as_f64().unwrap() <= 1.0 + TOLERANCE);
    assert!(replayed["details"].get("seconds").is_none(), "wall time stays out of the reproducible part");
    // `check` reads the report (the records' constant-score AUC passes every domain check) and
    // fails (exit 1) on the violated replay alone.
    let (code, out_text, err) = run.check("max_auc = 0.9\n", &[]);
    let text = format!("{out_text}{err}");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("1 problem") && text.contains("dpgnn-rowclip"), "{text}");

    let bad = AUDIT.replace("random_units = 1", "random_units = -1");
    std::fs::write(&run.config, bad).unwrap();
    let (code, _, err) = gnnaudit(&["audit", run.config.to_str().unwrap(), "--out", run.out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("attacks[0].params.random_units"), "{err}");
}
