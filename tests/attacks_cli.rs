//! `gnnaudit attack` end to end on small synthetic graphs: the JSON contract, the canary audits
//! (edge canaries: GAP without noise vs GAP-EDP; node canaries: non-private models vs GAP-NDP;
//! LDP canary records: LPGNN without and with its randomiser), saved targets, and bad input.
use std::process::Command;

#[path = "common/data.rs"]
mod test_data;
use test_data::data_dir;

fn attack(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .arg("attack")
        .args(["--threads", "1", "--json"])
        .args(args)
        .env("GNNAUDIT_DATA", data_dir())
        .output()
        .expect("gnnaudit runs")
}

/// Trains a model on SMALL with `recipe` and saves it to a fresh temporary directory.
fn saved_model(prefix: &str, recipe: &[&str]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(["train", "--threads", "1", "--dataset", SMALL])
        .args(recipe)
        .arg("--save")
        .arg(&dir)
        .env("GNNAUDIT_DATA", data_dir())
        .output()
        .expect("gnnaudit runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = attack(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

const SMALL: &str = "synthetic:nodes=600,degree=4,features=32,signal=1";

#[test]
fn membership_json_has_the_documented_fields() {
    // The default set-up is the reference's (GAP's attack code, test_on_target=False).
    let v = json(&["--dataset", SMALL, "--method", "gap-inf", "--attack", "mia"]);
    assert!(v["knowledge"]["notes"][0].as_str().unwrap().contains("test_on_target=False"), "{}", v["knowledge"]);
    for key in [
        "attack",
        "method",
        "dataset",
        "epsilon",
        "privacy_unit",
        "game",
        "auc",
        "tpr_at_fpr",
        "eps_lb",
        "violation",
        "utility",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["attack"], "mia");
    assert!(v["epsilon"].is_null(), "non-private target claims no epsilon");
    assert!(v["tpr_at_fpr"]["0.001"].is_number() && v["tpr_at_fpr"]["0.01"].is_number());
    assert!(v["auc"].as_f64().unwrap() > 0.5, "GAP-inf overfits its 40% train split: {}", v["auc"]);
    assert_eq!(v["violation"], false);
    assert!(v["game"].as_str().unwrap().contains("training set"));
}

/// GAP without noise is GAP-EDP with sigma = 0: the canary audit must see the canary edges. The
/// calibrated GAP-EDP must stay below its claim.
#[test]
fn canary_edge_audit_separates_broken_and_calibrated_edge_privacy() {
    let common = [
        "--dataset",
        "synthetic:nodes=1200,degree=2,features=32,signal=1",
        "--attack",
        "canary-edge",
        "--canaries",
        "300",
    ];
    let broken = json(&[&common[..], &["--method", "gap-inf"]].concat());
    let lb = broken["eps_lb"].as_f64().unwrap();
    // (A split Clopper-Pearson bound on 300 canaries: small but, unlike the old maximum over
    // thresholds, above 0 only with real leakage.)
    assert!(lb > 0.0, "no noise: eps_lb {lb}, AUC {}", broken["auc"]);
    assert_eq!(broken["verdict"], "no-claim");
    let private = json(&[&common[..], &["--method", "gap-edp", "--epsilon", "1", "--delta", "1e-5"]].concat());
    let eps = private["epsilon"].as_f64().unwrap();
    assert_eq!(private["privacy_unit"], "edge");
    // Below the claim; `attack` runs no positive control, so it does not say `not refuted`.
    assert_eq!(private["verdict"], "inconclusive", "{}", private["certificate"]);
    assert!(private["eps_lb"].as_f64().unwrap() <= eps && private["violation"] == false, "{private}");
    // The one-run bound (Steinke et al. 2023) is reported next to it, and also respects the claim.
    assert!(broken["eps_lb_one_run"].as_f64().unwrap() > 0.0, "{}", broken["runs"][0]["details"]["one_run"]);
    assert!(private["eps_lb_one_run"].as_f64().unwrap() <= eps, "{private}");
}

/// The false alarm of the old statistic (a maximum over thresholds and runs without correction):
/// an MLP never reads an edge, so its edge-level claim is 0 and no canary edge can change its
/// output. Forty pooled runs on cora must not accuse it; GAP without noise on the same graph is
/// still caught.
#[test]
fn canary_edge_audit_never_accuses_a_model_that_reads_no_edge() {
    let common = ["--dataset", "cora", "--attack", "canary-edge", "--seed", "100"];
    let mlp = json(&[&common[..], &["--method", "mlp", "--repeats", "40"]].concat());
    assert_eq!(mlp["privacy_unit"], "edge");
    assert_eq!(mlp["epsilon"].as_f64(), Some(0.0), "an MLP claims edge-level eps 0: {}", mlp["epsilon"]);
    assert_eq!(mlp["verdict"], "inconclusive", "{}", mlp["certificate"]);
    assert_eq!(mlp["eps_lb"].as_f64(), Some(0.0));
    let cert = &mlp["certificate"];
    assert_eq!(cert["bound"], "clopper-pearson");
    assert_eq!(cert["strategy"], "split");
    assert_eq!(cert["positives"].as_u64().unwrap() + cert["negatives"].as_u64().unwrap(), 40 * 200);
    let gap = json(&[&common[..], &["--method", "gap-inf"]].concat());
    assert_eq!(gap["verdict"], "no-claim");
    assert!(gap["eps_lb"].as_f64().unwrap() > 0.2, "GAP without noise leaks its edges: {}", gap["eps_lb"]);
}

/// Node canaries (three pooled runs): non-private GAP and GraphSAGE memorise mislabelled canary nodes (eps_lb well
/// above 0 as evidence of leakage); GAP-NDP at eps = 1 stays below its node-level claim.
#[test]
fn node_canaries_expose_memorisation_and_respect_node_dp() {
    let common = ["--dataset", "synthetic:nodes=600,degree=4,features=256,signal=1", "--attack", "canary-node"];
    let common = [&common[..], &["--canaries", "100", "--repeats", "3"]].concat();
    for method in ["gap-inf", "sage"] {
        let v = json(&[&common[..], &["--method", method]].concat());
        assert!(v["auc"].as_f64().unwrap() > 0.75, "{method}: AUC {}", v["auc"]);
        assert!(v["eps_lb"].as_f64().unwrap() > 0.5, "{method}: eps_lb {}", v["eps_lb"]);
        assert!(v["eps_lb_one_run"].as_f64().unwrap() > 0.5, "{method}: {}", v["eps_lb_one_run"]);
        assert_eq!(v["game_detail"]["unit"], "node_canary");
    }
    let private = json(&[&common[..], &["--method", "gap-ndp", "--epsilon", "1"]].concat());
    assert_eq!(private["privacy_unit"], "node");
    let eps = private["epsilon"].as_f64().unwrap();
    assert!(private["eps_lb"].as_f64().unwrap() <= eps && private["violation"] == false, "{private}");
    assert!(private["eps_lb_one_run"].as_f64().unwrap() <= eps);
}

/// LDP canary records against LPGNN: with raw features and labels (no local randomiser) the coin
/// of every canary record shows; with eps_x = eps_y = 1 the bound stays below the claim of 2.
#[test]
fn ldp_canaries_detect_raw_records_and_respect_the_local_randomiser() {
    let common = [
        "--dataset",
        "synthetic:nodes=600,degree=4,features=32,signal=1",
        "--method",
        "lpgnn",
        "--epochs",
        "100",
        "--attack",
        "canary-ldp",
        "--canaries",
        "100",
    ];
    let raw = json(&[&common[..], &["--epsilon-x", "inf", "--epsilon-y", "inf"]].concat());
    assert!(raw["auc"].as_f64().unwrap() > 0.85 && raw["eps_lb"].as_f64().unwrap() > 0.8, "{raw}");
    let private = json(&[&common[..], &["--epsilon-x", "1", "--epsilon-y", "1"]].concat());
    assert_eq!(private["privacy_unit"], "local");
    let eps = private["epsilon"].as_f64().unwrap();
    assert!((eps - 2.0).abs() < 1e-9, "LPGNN claims eps_x + eps_y: {eps}");
    assert!(private["eps_lb"].as_f64().unwrap() <= eps && private["violation"] == false, "{private}");
    assert!(private["eps_lb_one_run"].as_f64().unwrap() <= eps);
}

/// `--target DIR --repeats R` attacks the one saved model R times with different attack seeds;
/// the method comes from the checkpoint (no `--method`), and a contradicting `--method` is refused.
#[test]
fn saved_target_repeats_rerun_the_attack_on_the_same_model() {
    let dir = saved_model("gnnaudit-attack-target", &["--method", "gap-edp", "--epsilon", "1"]);
    let target = dir.to_str().unwrap();
    let v = json(&["--dataset", SMALL, "--target", target, "--attack", "mia", "--repeats", "3"]);
    let wrong = attack(&["--method", "mlp", "--target", target, "--attack", "mia"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("trained with gap-edp"));
    assert_eq!(v["method"], "gap-edp");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let seeds: Vec<u64> = runs.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, vec![0, 1, 2]);
    let aucs: Vec<f64> = runs.iter().map(|r| r["auc"].as_f64().unwrap()).collect();
    assert!(aucs[0] != aucs[1] || aucs[1] != aucs[2], "new attack seeds, new attack samples: {aucs:?}");
    assert_eq!(v["utility"]["test_std"].as_f64().unwrap(), 0.0, "one model: the same utility every run");
    assert!(v["repeat_mode"].as_str().unwrap().contains("one saved target"), "{}", v["repeat_mode"]);
}

#[test]
fn link_stealing_is_never_compared_with_an_epsilon() {
    let v = json(&["--dataset", SMALL, "--method", "gap-edp", "--epsilon", "1", "--attack", "link-stealing"]);
    assert!(v["eps_lb"].is_null() && v["violation"] == false);
    assert!(v["note"].as_str().unwrap().contains("homophily"));
    assert_eq!(v["runs"][0]["details"]["unsupervised_auc"].as_object().unwrap().len(), 8);
}

#[test]
fn bad_attack_parameters_exit_with_code_2() {
    for args in [
        &["--attack", "nonsense", "--method", "mlp"][..],
        &["--attack", "lira", "--shadows", "3", "--method", "mlp"][..],
        &["--attack", "mia", "--mia-setup", "other", "--method", "mlp"][..],
        &["--attack", "mia"][..],
    ] {
        let out = attack(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The GCN baseline gives white-box access: graph reconstruction optimises a relaxed adjacency
/// through its dense forward (GraphMI-style) and recovers edges well above chance, and class
/// inversion runs instead of answering "unsupported".
#[test]
fn gcn_white_box_reconstructs_the_graph_and_supports_inversion() {
    let v = json(&["--dataset", SMALL, "--method", "gcn", "--attack", "graph-reconstruction"]);
    let s = v.to_string();
    assert!(s.contains("\"white_box\":true"), "reconstruction did not use the white box: {v}");
    assert!(v["auc"].as_f64().unwrap() > 0.6, "edge recovery AUC {}", v["auc"]);
    let inv = json(&["--dataset", SMALL, "--method", "gcn", "--attack", "inversion"]);
    assert_eq!(inv["attack"], "inversion");
    assert!(inv["auc"].as_f64().is_some(), "{inv}");
}

/// Every trained model gives white-box access: graph reconstruction through the dense
/// forward of GAP-inf and GraphSAGE recovers edges well above chance, class inversion runs on the
/// MLP, and a GAP checkpoint attacked with `--target` keeps its white box.
#[test]
fn non_gcn_models_give_white_box_access() {
    for method in ["gap-inf", "sage"] {
        let v = json(&["--dataset", SMALL, "--method", method, "--attack", "graph-reconstruction"]);
        assert_eq!(v["knowledge"]["white_box"], true, "{method}: reconstruction did not use the white box: {v}");
        assert!(v["auc"].as_f64().unwrap() > 0.6, "{method}: edge recovery AUC {}", v["auc"]);
    }
    let inv = json(&["--dataset", SMALL, "--method", "mlp", "--attack", "inversion"]);
    assert_eq!(inv["knowledge"]["white_box"], true, "{inv}");
    let dir = saved_model("gnnaudit-wb", &["--method", "gap-inf"]);
    let target = dir.to_str().unwrap();
    let v = json(&["--dataset", SMALL, "--method", "gap-inf", "--target", target, "--attack", "graph-reconstruction"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(v["knowledge"]["white_box"], true, "saved GAP target: {v}");
    assert!(v["auc"].as_f64().unwrap() > 0.6, "saved GAP target: AUC {}", v["auc"]);
}
