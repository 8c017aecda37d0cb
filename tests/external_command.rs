//! The deployment's training pipeline as a `command` target (tests/python/train_gcn.py): a
//! canary-edge audit through the command finds the plain GCN's leakage, and the GAP-style GCN
//! with Gaussian noise on its aggregation holds its declared claim; failing, slow or malformed
//! runs are refused with their log tail (exit 2).
#[path = "common/external.rs"]
mod common;
use common::*;
use ndarray_npy::WriteNpyExt;

fn template(model_args: &str) -> String {
    format!(
        "'{}' '{}' {model_args} --graph {{graph}} --out {{out}} --seed {{seed}}",
        python().display(),
        script("train_gcn.py").display()
    )
}

fn canary_audit(model_args: &str, claim: Option<&std::path::Path>) -> serde_json::Value {
    let t = template(model_args);
    let mut args = vec!["attack", "--threads", "1", "--json", "--dataset", "cora", "--command", &t];
    args.extend(["--attack", "canary-edge", "--canaries", "300"]);
    if let Some(c) = claim {
        args.extend(["--claim", c.to_str().unwrap()]);
    }
    json_of(&gnnaudit(&args))
}

#[test]
fn canary_edges_find_the_noiseless_gcn() {
    let v = canary_audit("--model gcn", None);
    let lb = v["eps_lb"].as_f64().unwrap();
    eprintln!("plain GCN via command: canary-edge AUC {:.4}, eps_lb {lb:.4}", v["auc"]);
    assert!(lb > 0.0, "eps_lb {lb}");
    assert_eq!(v["command_runs"], 1);
    assert_eq!(v["verdict"], "no-claim");
}

#[test]
fn the_noisy_aggregation_gcn_holds_its_declared_claim() {
    let dir = tempfile::tempdir().unwrap();
    // sigma 4 on unit-norm rows, 2 hops, an undirected edge moves two rows: sensitivity sqrt(2).
    let claim = write_file(
        dir.path(),
        "claim.toml",
        "[claim]\nmechanism = \"aggregation\"\nepsilon = 1.7\ndelta = 1e-4\nsigma = 4.0\nhops = 2\n\
         sensitivity = 1.4142135623730951\n",
    );
    let v = canary_audit("--model pma --sigma 4 --hops 2", Some(&claim));
    let c = &v["claim"];
    let recomputed = c["recomputed_epsilon"].as_f64().unwrap();
    let lb = v["eps_lb"].as_f64().unwrap();
    eprintln!("PMA sigma 4 via command: recomputed eps {recomputed:.4}, canary AUC {:.4}, eps_lb {lb:.4}", v["auc"]);
    assert!(recomputed > 1.6 && recomputed <= 1.7, "{recomputed}");
    assert!(c["flags"].as_array().unwrap().is_empty(), "{}", c["flags"]);
    assert_eq!(
        v["verdict"], "inconclusive",
        "eps_lb {lb} vs 1.7, max certifiable {}",
        v["certificate"]["max_certifiable"]
    );
    assert!(lb <= 1.7);
}

#[test]
fn failing_slow_and_malformed_runs_are_refused_with_their_log() {
    let attack = |command: &str, extra: &[&str]| {
        let mut args = vec!["attack", "--dataset", "cora", "--command", command, "--attack", "link-stealing"];
        args.extend(extra);
        gnnaudit(&args)
    };
    let out = attack("sh -c 'echo loading \"$1\"; echo \"CUDA out of memory\" >&2; exit 1' sh {graph} {out}", &[]);
    assert_bad_input(&out, "command", "| CUDA out of memory");
    let out = attack("sh -c 'echo epoch 1; sleep 30' sh {graph} {out}", &["--timeout", "1"]);
    assert_bad_input(&out, "timed out", "| epoch 1");
    // An output of the wrong shape: 7 classes but 6 columns.
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.npy");
    ndarray::Array2::<f32>::from_elem((2708, 6), 1.0 / 6.0).write_npy(std::fs::File::create(&wrong).unwrap()).unwrap();
    let copy = format!("sh -c 'cp \"$0\" \"$GNNAUDIT_OUT/posteriors.npy\"' '{}' {{graph}} {{out}}", wrong.display());
    let out = attack(&copy, &[]);
    assert_bad_input(&out, "posteriors.npy", "the dataset has 2708 nodes and 7 classes");
    let out = attack("true {graph} {out}", &[]);
    assert_bad_input(&out, "out", "wrote no posteriors.npy");
    let out = attack("python train.py --graph {graph}", &[]);
    assert_bad_input(&out, "command", "no {out} placeholder");
}
