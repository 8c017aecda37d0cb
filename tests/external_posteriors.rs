//! Released posteriors as the only target: metric membership inference and link stealing with no
//! model; malformed files are refused naming the file (exit 2); a declared claim is recomputed.
#[path = "common/external.rs"]
mod common;
use common::*;
use ndarray_npy::WriteNpyExt;
use std::path::Path;

fn attack(posteriors: &Path, members: Option<&Path>, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["attack", "--threads", "1", "--dataset", "cora", "--posteriors", posteriors.to_str().unwrap()];
    if let Some(m) = members {
        args.extend(["--members", m.to_str().unwrap()]);
    }
    args.extend(extra);
    gnnaudit(&args)
}

#[test]
fn metric_membership_and_link_stealing_from_released_posteriors() {
    let (post, members) = (exported().join("posteriors.npy"), exported().join("members.txt"));
    let v = json_of(&attack(&post, Some(&members), &["--json", "--attack", "mia-metric"]));
    let auc = v["auc"].as_f64().unwrap();
    eprintln!("cora GCN posteriors, mia-metric AUC {auc:.4}");
    assert!(auc > 0.6, "AUC {auc}");
    assert_eq!(v["target"], "posteriors");
    let v = json_of(&attack(&post, Some(&members), &["--json", "--attack", "link-stealing"]));
    let auc = v["auc"].as_f64().unwrap();
    eprintln!("cora GCN posteriors, link-stealing AUC {auc:.4}");
    assert!(auc > 0.75, "AUC {auc}");
    assert_eq!(v["verdict"], "not-comparable");
}

#[test]
fn a_declared_claim_is_recomputed_and_its_delta_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let claim = write_file(
        dir.path(),
        "claim.toml",
        "[claim]\nmechanism = \"dp-sgd\"\nunit = \"node\"\nepsilon = 0.5\ndelta = 0.1\nsample_rate = 0.05\n\
         noise_multiplier = 1.0\nsteps = 200\nclip = 1.0\nsampling = \"fixed-size\"\naccounting = \"poisson\"\n",
    );
    let (post, members) = (exported().join("posteriors.npy"), exported().join("members.txt"));
    let v = json_of(&attack(
        &post,
        Some(&members),
        &["--json", "--attack", "mia-metric", "--claim", claim.to_str().unwrap()],
    ));
    let c = &v["claim"];
    let flags: Vec<&str> = c["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    eprintln!(
        "recomputed eps {} at delta 0.1, {} at 1e-4; flags {flags:?}",
        c["recomputed_epsilon"], c["epsilon_at_default_delta"]
    );
    assert!(flags.iter().any(|f| f.contains("delta = 0.1") && f.contains("1e-4")), "{flags:?}");
    assert!(flags.iter().any(|f| f.contains("without-replacement")), "{flags:?}");
    assert!(flags.iter().any(|f| f.contains("not reproduced")), "{flags:?}");
    assert_eq!(c["units"], 2708);
    // The audit compares eps_lb with the stated claim, and says how it fares against the recomputed one.
    assert_eq!(v["epsilon"], 0.5);
    assert!(v["verdict_vs_recomputed"].is_string());
}

#[test]
fn malformed_posteriors_and_members_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let members = exported().join("members.txt");
    let npy = |name: &str, rows: usize, cols: usize, f: &dyn Fn(usize, usize) -> f32| {
        let p = dir.path().join(name);
        let a = ndarray::Array2::from_shape_fn((rows, cols), |(r, c)| f(r, c));
        a.write_npy(std::fs::File::create(&p).unwrap()).unwrap();
        p
    };
    let uniform = |_: usize, _: usize| 1.0 / 7.0;
    let p = npy("sums.npy", 2708, 7, &|r, c| if r == 9 && c == 0 { 0.9 } else { 1.0 / 7.0 });
    assert_bad_input(&attack(&p, Some(&members), &["--attack", "mia-metric"]), "sums.npy", "row 9 (node 9) sums to");
    let p = npy("nan.npy", 2708, 7, &|r, c| if r == 4 && c == 2 { f32::NAN } else { 1.0 / 7.0 });
    assert_bad_input(&attack(&p, Some(&members), &["--attack", "mia-metric"]), "nan.npy", "NaN");
    let p = npy("short.npy", 2700, 7, &uniform);
    assert_bad_input(&attack(&p, Some(&members), &["--attack", "mia-metric"]), "short.npy", "2708 nodes");
    let p = npy("classes.npy", 2708, 6, &uniform);
    assert_bad_input(&attack(&p, Some(&members), &["--attack", "mia-metric"]), "classes.npy", "7 classes");
    let csv = dir.path().join("missing.csv");
    let rows: String =
        (0..2708).filter(|&v| v != 17 && v != 2000).map(|v| format!("{v},{}\n", ["0.142857"; 7].join(","))).collect();
    std::fs::write(&csv, format!("node,c0,c1,c2,c3,c4,c5,c6\n{rows}")).unwrap();
    assert_bad_input(
        &attack(&csv, Some(&members), &["--attack", "mia-metric"]),
        "missing.csv",
        "2 node id(s) missing (e.g. 17, 2000)",
    );
    let ok = npy("ok.npy", 2708, 7, &uniform);
    let bad_members = write_file(dir.path(), "members.txt", "1\n5\n99999\n");
    assert_bad_input(&attack(&ok, Some(&bad_members), &["--attack", "mia-metric"]), "members.txt", "99999");
    assert_bad_input(&attack(&ok, None, &["--attack", "mia-metric"]), "members", "needs the ids");
    let shadow = attack(&ok, Some(&members), &["--attack", "mia", "--mia-setup", "shadow"]);
    assert_bad_input(&shadow, "mia-setup", "released posteriors have none");
    assert_bad_input(&attack(&ok, Some(&members), &["--attack", "canary-edge"]), "attack", "use command");
}
