//! `train --method pgc --mechanism raw --save DIR` then
//! `attack --target DIR --attack mia-metric` stopped with "a score is not finite". The model was
//! sound (finite weights, estimate and posteriors); the metric attack's per-class threshold was
//! +inf wherever "all non-member" fitted its training samples best, which made that class's scores
//! -inf. A barely-fitted raw PGC (30 epochs, dropout 0.5, wd 0.01) hits it at attack seed 0.
use gnnaudit::data;
use gnnaudit_attacks::membership::{metric_mia, MembershipMetric, MiaParams};
use std::process::Command;

#[path = "common/data.rs"]
mod test_data;
use test_data::data_dir;

fn gnnaudit(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(args)
        .env("GNNAUDIT_DATA", data_dir())
        .output()
        .expect("gnnaudit runs")
}

/// Save a raw PGC on cora, load it, attack it with the metric MIA: every score is finite (in the
/// library, for the attack seeds that failed and two more) and the CLI reports an AUC.
#[test]
fn saved_raw_pgc_is_attacked_by_the_metric_mia() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("pgc-raw");
    let t = target.to_str().unwrap();
    let out = gnnaudit(&[
        "train",
        "--threads",
        "1",
        "--dataset",
        "cora",
        "--method",
        "pgc",
        "--mechanism",
        "raw",
        "--epochs",
        "30",
        "--save",
        t,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let loaded = gnnaudit::methods::load_model(&target).unwrap();
    let p = loaded.model.posteriors();
    assert_eq!(p.isfinite().all().int64_value(&[]), 1, "the loaded model's posteriors are finite");
    let raw = data::load_dataset("cora", Some(&data_dir())).unwrap();
    let prov = loaded.check_data(&raw, 1).unwrap().clone();
    let ds = data::transforms::prepare_like_gap(&raw, 1, prov.split, prov.split_seed).unwrap();
    let bb = gnnaudit::target::ModelBlackBox::new(loaded.model.as_ref());
    let g = gnnaudit::target::attack_graph(&ds).unwrap();
    let split = gnnaudit::target::node_split(ds.split().unwrap());
    let claim =
        gnnaudit::audit::feature_claim::claim_for(gnnaudit_attacks::AttackKind::MiaMetric, &loaded.budget).unwrap();
    let target_view = gnnaudit_attacks::threat::Target {
        graph: &g,
        split: &split,
        black_box: &bb,
        white_box: None,
        oracle: None,
        claim,
    };
    for seed in 0..3 {
        for metric in MembershipMetric::ALL {
            let o = metric_mia(&target_view, &MiaParams::default(), metric, seed).unwrap();
            let bad = o.pos.iter().chain(&o.neg).filter(|s| !s.is_finite()).count();
            assert_eq!(bad, 0, "seed {seed}, {metric:?}: {bad} of {} scores are not finite", o.pos.len() + o.neg.len());
        }
    }

    let out =
        gnnaudit(&["attack", "--threads", "1", "--json", "--dataset", "cora", "--target", t, "--attack", "mia-metric"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["method"], "pgc");
    let auc = v["auc"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&auc), "membership AUC {auc}");
}
