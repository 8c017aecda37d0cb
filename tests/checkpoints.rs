//! Checkpoints of every method: a model saved with `train --save DIR` and read
//! back answers exactly as the one in memory, through its posteriors (the release the attacks
//! query) and its white box (weights and training graph), and `attack --target DIR` attacks it.
use gnnaudit::data::{self, SplitRatios};
use gnnaudit::methods::{self as train, Method, Recipe};
use gnnaudit::train::accounting;
use std::process::Command;
use tch::{Kind, Tensor};

#[path = "common/data.rs"]
mod test_data;
use test_data::data_dir;

fn cora() -> data::Dataset {
    let raw = data::load_dataset("cora", Some(&data_dir())).unwrap();
    data::transforms::prepare_like_gap(&raw, 1, SplitRatios::default(), 0).unwrap()
}

fn max_gap(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size());
    (a - b).abs().max().double_value(&[])
}

/// A checkpoint written by gnnaudit before the methods were restructured (GAP-EDP at eps 1, hidden
/// 2, 2 epochs, on the default synthetic graph; `train --save`) still loads: its flat recipe reads
/// as the recipe the current code builds for the same flags, its budget is the one it recorded,
/// and the model answers from its cached aggregations.
#[test]
fn a_checkpoint_written_before_the_restructure_still_loads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/checkpoint-gap-edp-v1");
    let loaded = train::load_model(&dir).unwrap();
    let mut want = Recipe::new(Method::GapEdp, Some(1.0));
    (want.train.epochs, want.train.hidden) = (Some(2), 2);
    assert_eq!(loaded.recipe, want);
    assert_eq!(loaded.budget.epsilon_rdp, 0.9999994500720365);
    let p = loaded.model.posteriors();
    assert_eq!(p.size(), [2000, 5]);
    let row_sums = p.sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
    assert!(max_gap(&row_sums, &Tensor::ones([2000], (Kind::Float, tch::Device::Cpu))) < 1e-5);
}

/// The methods that refused `--save` before: GraphSAGE, SAGE-EDP (whose perturbed graph must come
/// back), GCN, GAT, DP-GNN (its noisy release and sampled graph) and LPGNN (its randomized
/// features). Few epochs: the identity, not the accuracy, is under test.
#[test]
fn every_method_answers_the_same_after_loading() {
    let ds = cora();
    let dir = tempfile::tempdir().unwrap();
    let x = ds.features.to_tensor().to_kind(Kind::Float);
    for (method, eps) in [
        (Method::Gcn, None),
        (Method::Gat, None),
        (Method::Sage, None),
        (Method::SageEdp, Some(1.0)),
        (Method::Dpgnn, Some(8.0)),
        (Method::Lpgnn, None),
    ] {
        let mut r = Recipe::new(method, eps);
        r.train.epochs = Some(if method == Method::Dpgnn { 1 } else { 20 });
        let run = train::train_with(&r, &ds, 5, &accounting::Accounting::rdp_only()).unwrap();
        let path = dir.path().join(method.name());
        run.model.save(&path, &r, &run.budget).unwrap();
        let loaded = train::load_model(&path).unwrap();
        assert_eq!(loaded.recipe, r);
        let d = max_gap(&loaded.model.posteriors(), &run.model.posteriors());
        assert!(d < 1e-6, "{}: posteriors differ by {d}", method.name());
        // The white box runs the loaded weights on the saved training graph.
        let (a, b) = (run.model.white_box().unwrap(), loaded.model.white_box().unwrap());
        let d = max_gap(&a.forward_features(&x).unwrap(), &b.forward_features(&x).unwrap());
        assert!(d < 1e-5, "{}: white-box forward differs by {d}", method.name());
        assert_eq!(a.parameters().len(), b.parameters().len(), "{}", method.name());
        // Inductive inference works from the loaded model.
        let p = loaded.model.posteriors_on(&ds).unwrap();
        assert_eq!(p.size(), vec![ds.num_nodes() as i64, ds.num_classes as i64]);
    }
}

/// PGC keeps the server's first-layer estimate, never the raw features: the loaded model answers
/// exactly as the trained one (no white box: its first layer reads released reports).
/// RGNN likewise keeps its reconstructed features, never the users' reports.
#[test]
fn local_dp_methods_answer_the_same_after_loading() {
    let ds = cora();
    let dir = tempfile::tempdir().unwrap();
    for (method, eps) in [(Method::Pgc, Some(1.0)), (Method::Rgnn, None)] {
        let mut r = Recipe::new(method, eps);
        r.train.epochs = Some(20);
        let run = train::train_with(&r, &ds, 5, &accounting::Accounting::rdp_only()).unwrap();
        let path = dir.path().join(method.name());
        run.model.save(&path, &r, &run.budget).unwrap();
        let loaded = train::load_model(&path).unwrap();
        assert_eq!(loaded.recipe, r);
        let d = max_gap(&loaded.model.posteriors(), &run.model.posteriors());
        assert!(d < 1e-6, "{}: posteriors differ by {d}", method.name());
        let p = loaded.model.posteriors_on(&ds).unwrap();
        assert_eq!(p.size(), vec![ds.num_nodes() as i64, ds.num_classes as i64]);
    }
}

/// A checkpoint whose cached graph is damaged is refused with the file named, not half-loaded.
#[test]
fn a_damaged_cache_is_refused() {
    let ds = cora();
    let dir = tempfile::tempdir().unwrap();
    let mut r = Recipe::new(Method::Gcn, None);
    r.train.epochs = Some(2);
    let run = train::train_with(&r, &ds, 1, &accounting::Accounting::rdp_only()).unwrap();
    run.model.save(dir.path(), &r, &run.budget).unwrap();
    let cache = dir.path().join("cache.safetensors");
    let features = ds.features.to_tensor().to_kind(Kind::Float);
    Tensor::write_safetensors(&[("features", &features)], &cache).unwrap();
    let err = train::load_model(dir.path()).err().expect("a cache without its graph must be refused");
    assert_eq!(err.exit_code(), 2);
    let msg = err.to_string();
    assert!(msg.contains("cache.safetensors") && msg.contains("graph"), "{msg}");
}

/// `train --save` then `attack --target` on the CLI, for a method that refused to save before.
/// The attacked model is the saved one: its accuracies as the attack reports them equal those the
/// training run reported. Membership leakage of a GCN on cora with best-validation selection is
/// too small to show on the attack's ~240 evaluation nodes (AUC 0.543 measured, standard error
/// ~0.037), so the attack is held to what its sample supports: its AUC is not below chance by more
/// than 3.29 standard errors (Hanley & McNeil; 99.9% two-sided), and its certificate counts
/// every evaluation node.
#[test]
fn saved_gcn_is_attacked_from_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("gcn");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
            .args(args)
            .env("GNNAUDIT_DATA", data_dir())
            .output()
            .expect("gnnaudit runs")
    };
    let out = run(&[
        "train",
        "--threads",
        "1",
        "--json",
        "--dataset",
        "cora",
        "--method",
        "gcn",
        "--save",
        target.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trained: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let out = run(&[
        "attack",
        "--threads",
        "1",
        "--json",
        "--dataset",
        "cora",
        "--target",
        target.to_str().unwrap(),
        "--attack",
        "mia",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["method"], "gcn");
    let test_acc = trained["test_accuracy"]["mean"].as_f64().unwrap();
    assert!(test_acc > 0.5, "a trained GCN (7 classes, majority 30%): {test_acc}");
    assert!(
        (v["utility"]["test"].as_f64().unwrap() - test_acc).abs() < 1e-6,
        "the saved model: {} vs {test_acc}",
        v["utility"]
    );
    let auc = v["auc"].as_f64().unwrap();
    let (pos, neg) = (v["certificate"]["positives"].as_f64().unwrap(), v["certificate"]["negatives"].as_f64().unwrap());
    assert!(pos + neg >= 200.0, "{}", v["certificate"]);
    let se = hanley_mcneil_se(auc, pos, neg);
    assert!(auc > 0.5 - 3.29 * se, "membership AUC against the saved GCN: {auc} (se {se:.3})");
}

/// Standard error of an AUC estimated on `pos` positives and `neg` negatives (Hanley & McNeil 1982).
fn hanley_mcneil_se(auc: f64, pos: f64, neg: f64) -> f64 {
    let q1 = auc / (2.0 - auc);
    let q2 = 2.0 * auc * auc / (1.0 + auc);
    ((auc * (1.0 - auc) + (pos - 1.0) * (q1 - auc * auc) + (neg - 1.0) * (q2 - auc * auc)) / (pos * neg)).sqrt()
}
