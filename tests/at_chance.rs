//! Baselines in every utility figure and the `at chance` mark, on cora through the binary: a GCN
//! clears the majority class; DPAR-GM at node-level eps 1 on 70 rows (its DP-APPR rows are noise,
//! so it trains on random neighbourhoods) does not, and `train`, the audit's report.json / report.md / report.html
//! and `check forbid_at_chance = true` say so. A report written before baselines existed still
//! renders and checks.

use gnnaudit::train::baseline::{at_chance, Baseline};
#[path = "common/cli.rs"]
mod cli;
use cli::{audit, check, data_dir, gnnaudit, json_of};

/// Cora's majority class under train's default split (75/10/15, split seed 0), counted here from
/// the labels: class 3 ("Neural Networks") is the most frequent class of every large sample.
fn cora_majority() -> (usize, f64, usize) {
    let raw = gnnaudit::data::load_dataset("cora", Some(&data_dir())).unwrap();
    let ds = gnnaudit::data::transforms::prepare_like_gap(&raw, 1, gnnaudit::data::SplitRatios::GAP, 0).unwrap();
    let split = ds.split().unwrap();
    let mut counts = vec![0usize; ds.num_classes];
    for &v in &split.train {
        counts[ds.labels[v]] += 1;
    }
    let top = (0..ds.num_classes).max_by_key(|&c| (counts[c], std::cmp::Reverse(c))).unwrap();
    let hits = split.test.iter().filter(|&&v| ds.labels[v] == top).count();
    (top, hits as f64 / split.test.len() as f64, split.test.len())
}

/// A private model that learns nothing: DPAR-GM at eps 1 on 70 rows, 5 epochs (a few seconds).
const AT_CHANCE: &[&str] = &["--method", "dpar-gm", "--epsilon", "1", "--m-rows", "70", "--epochs", "5"];

fn train_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["train", "--dataset", "cora", "--json", "--no-pld"];
    all.extend_from_slice(args);
    json_of(&all)
}

#[test]
fn train_reports_baselines_and_marks_a_model_at_chance() {
    let (class, majority, n) = cora_majority();
    let gcn = train_json(&["--method", "gcn"]);
    let b = &gcn["baseline"];
    assert_eq!(b["majority_class"], class);
    assert_eq!(b["majority_accuracy"].as_f64().unwrap(), majority);
    assert_eq!(b["test_nodes"], n);
    assert!((b["chance"].as_f64().unwrap() - 1.0 / 7.0).abs() < 1e-12, "{b}");
    assert_eq!(gcn["at_chance"], false, "a trained GCN ({}) is not at chance", gcn["test_accuracy"]);
    let v = &gcn["chance_test"][0];
    assert!(v["accuracy_lower"].as_f64().unwrap() > majority, "{v}");
    assert_eq!(v["test_nodes"], n);

    let noise = train_json(AT_CHANCE);
    assert_eq!(noise["at_chance"], true, "dpar-gm at eps 1: {}", noise["test_accuracy"]);
    let v = &noise["chance_test"][0];
    assert!(v["accuracy_lower"].as_f64().unwrap() <= majority && v["confidence"] == 0.95, "{v}");

    // The text output: baselines line, the marked seed and the sentence naming the test.
    let (code, out, _) = gnnaudit(&[&["train", "--dataset", "cora", "--no-pld"], AT_CHANCE].concat());
    assert_eq!(code, 0);
    assert!(out.contains(&format!("majority class (class {class}")), "{out}");
    assert!(out.contains("chance 14.29%"), "{out}");
    assert!(out.contains("AT CHANCE") && out.contains("Clopper-Pearson"), "{out}");
}

const CONFIG: &str = r#"
name = "at-chance"
description = "A GCN against DPAR-GM at eps 1 on 70 rows, utility only."
repeats = 1
seed = 0

[privacy]
epsilons = [1]

[[datasets]]
name = "cora"
split_seed = 0

[[methods]]
method = "gcn"

[[methods]]
method = "dpar-gm"
m_rows = 70
epochs = 5
"#;

fn row<'a>(report: &'a serde_json::Value, method: &str) -> &'a serde_json::Value {
    report["summary"].as_array().unwrap().iter().find(|r| r["method"] == method).unwrap()
}

#[test]
fn the_audit_report_carries_baselines_and_check_forbids_rows_at_chance() {
    let audited = audit(CONFIG);
    let (dir, report) = (&audited.dir, &audited.report);
    let (_, majority, n) = cora_majority();
    for m in ["gcn", "dpar-gm"] {
        let b = &row(report, m)["baseline"];
        assert_eq!(b["majority_accuracy"]["mean"].as_f64().unwrap(), majority, "{m}: {b}");
        assert_eq!((b["test_nodes"].as_u64().unwrap() as usize, b["tested_seeds"].as_u64().unwrap()), (n, 1));
    }
    assert_eq!(row(report, "gcn")["at_chance"], false);
    assert_eq!(row(report, "dpar-gm")["at_chance"], true);
    let cell = report["cells"].as_array().unwrap().iter().find(|c| c["method"] == "dpar-gm").unwrap();
    assert_eq!(cell["chance_test"]["at_chance"], true, "{}", cell["chance_test"]);

    let md = audited.read("report.md");
    assert!(md.contains("majority / chance"), "{md}");
    assert!(md.contains("(at chance)") && md.contains("cora / dpar-gm / ε=1 (1 of 1 seeds)"), "{md}");
    assert_eq!(md.matches("(at chance)").count(), 2, "one marker in the table, one sentence: {md}");
    let html = audited.read("report.html");
    assert!(html.contains("class=\"at-chance\"") && html.contains("majority / chance %"));

    // forbid_at_chance fails (exit 1) on the DPAR-GM row only; without it the report passes.
    let forbid = "forbid_at_chance = true\n";
    let (code, stdout, _) = audited.check(forbid, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("cora / dpar-gm / ε=1: at chance"), "{stdout}");
    assert!(!stdout.contains("/ gcn /"), "{stdout}");
    let (code, stdout, _) = audited.check("forbid_at_chance = false\n", &[]);
    assert_eq!(code, 0, "{stdout}");

    // A report from before baselines: no baseline fields. It still loads, renders (no marker,
    // "-" for the baselines) and checks (a note, not a failure).
    let mut old: serde_json::Value = report.clone();
    for c in old["cells"].as_array_mut().unwrap() {
        let c = c.as_object_mut().unwrap();
        c.remove("baseline");
        c.remove("chance_test");
    }
    for r in old["summary"].as_array_mut().unwrap() {
        let r = r.as_object_mut().unwrap();
        r.remove("baseline");
        r.remove("at_chance");
    }
    let old_dir = dir.path().join("old");
    std::fs::create_dir_all(&old_dir).unwrap();
    let old_json = old_dir.join("report.json");
    std::fs::write(&old_json, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let loaded = gnnaudit::report::Report::load(&old_json).unwrap();
    let md = gnnaudit::report::markdown::render(&loaded);
    assert!(!md.contains("(at chance)") && md.contains("majority / chance"), "{md}");
    gnnaudit::report::html::render(&loaded);
    let (code, stdout, _) = check(&old_json, forbid, &[]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("forbid_at_chance not checked"), "{stdout}");
}

// The baseline and the test on small exact figures (no training).

fn baseline(majority: f64, n: usize) -> Baseline {
    Baseline { chance: 1.0 / 7.0, majority_class: Some(3), majority_accuracy: Some(majority), test_nodes: n }
}

#[test]
fn the_majority_class_comes_from_train_and_is_scored_on_test() {
    // Train: class 2 most frequent (3 of 5); test: class 2 is 1 of 4 nodes.
    let labels = [2, 2, 2, 0, 1, 0, 0, 0, 2];
    let b = Baseline::of_labels(&labels, 3, &[0, 1, 2, 3, 4], &[5, 6, 7, 8]);
    assert_eq!(b.majority_class, Some(2));
    assert_eq!(b.majority_accuracy, Some(0.25));
    assert_eq!((b.chance, b.test_nodes), (1.0 / 3.0, 4));
    // A tie goes to the smaller class.
    let t = Baseline::of_labels(&labels, 3, &[0, 3], &[5]);
    assert_eq!((t.majority_class, t.majority_accuracy), (Some(0), Some(1.0)));
}

#[test]
fn an_accuracy_at_the_majority_rate_is_at_chance_and_a_clear_one_is_not() {
    let b = baseline(0.30, 400);
    assert!(at_chance(0.30, &b, 0.95).unwrap().at_chance);
    // 136 of 400 (34%): the lower bound 30.08% only just clears 30%; 28% does not.
    assert!(!at_chance(0.34, &b, 0.95).unwrap().at_chance);
    assert!(at_chance(0.28, &b, 0.95).unwrap().at_chance);
    let v = at_chance(0.80, &b, 0.95).unwrap();
    assert!(!v.at_chance && v.accuracy_lower > 0.75 && v.correct == 320, "{v:?}");
}

#[test]
fn the_bound_is_the_exact_clopper_pearson_one() {
    // 36 of 100 correct: the 95% one-sided lower bound is 0.28004 (Beta(36, 65)'s 5% quantile).
    let b = baseline(0.27, 100);
    let v = at_chance(0.36, &b, 0.95).unwrap();
    assert!((v.accuracy_lower - 0.28004).abs() < 1e-4, "{}", v.accuracy_lower);
    assert!(!v.at_chance);
    assert!(at_chance(0.36, &baseline(0.29, 100), 0.95).unwrap().at_chance);
}

#[test]
fn nothing_to_test_gives_no_verdict() {
    assert!(at_chance(0.9, &Baseline::link_prediction(), 0.95).is_none());
    assert!(at_chance(f64::NAN, &baseline(0.3, 100), 0.95).is_none());
    assert!(at_chance(0.5, &baseline(0.3, 0), 0.95).is_none());
}
