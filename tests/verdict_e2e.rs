//! The sound verdict end to end: GAP-EDP with its aggregation noise switched
//! off while it still claims its epsilon (`demo-gap-edp-noise-off`) must be reported as violated
//! by the edge canary audit on cora, while correctly calibrated GAP-EDP at the same claim holds.
//! Its null counterpart, the MLP that never reads an edge (40 pooled runs, no violation), is
//! `canary_edge_audit_never_accuses_a_model_that_reads_no_edge` in tests/attacks_cli.rs.
use std::process::Command;

#[path = "common/data.rs"]
mod test_data;
use test_data::data_dir;

fn json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(["attack", "--threads", "1", "--json"])
        .args(args)
        .env("GNNAUDIT_DATA", data_dir())
        .output()
        .expect("gnnaudit runs");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn canary_edge_audit_reports_gap_without_noise_under_a_claim_as_violated() {
    // Claim 0.25 (calibrated to 0.226 at cora's delta 1e-5), one run of 200 canaries (eps_lb 0.49;
    // pooling three runs' scores under one threshold certifies only 0.20, see attacks/REPRODUCTION.md).
    let common = ["--dataset", "cora", "--attack", "canary-edge", "--seed", "100", "--epsilon", "0.25"];
    let broken = json(&[&common[..], &["--method", "demo-gap-edp-noise-off"]].concat());
    let claim = broken["epsilon"].as_f64().unwrap();
    assert_eq!(broken["privacy_unit"], "edge");
    assert!(claim > 0.0 && claim <= 0.25, "the noise-off variant still claims GAP-EDP's epsilon: {claim}");
    let cert = &broken["certificate"];
    assert_eq!(cert["bound"], "clopper-pearson");
    assert_eq!(cert["strategy"], "split");
    assert_eq!(cert["confidence"].as_f64(), Some(0.95));
    assert_eq!(cert["positives"].as_u64().unwrap() + cert["negatives"].as_u64().unwrap(), 200);
    let lb = broken["eps_lb"].as_f64().unwrap();
    assert!(lb > claim, "eps_lb {lb} must exceed the claim {claim}: {cert}");
    assert_eq!(broken["verdict"], "violated", "{cert}");
    assert_eq!(broken["violation"], true);
    // The same claim with its noise: the bound stays below it.
    let sound = json(&[&common[..], &["--method", "gap-edp"]].concat());
    assert_eq!(sound["epsilon"].as_f64(), Some(claim), "same calibration, same claim");
    assert!(sound["eps_lb"].as_f64().unwrap() <= claim, "{}", sound["certificate"]);
    assert_ne!(sound["verdict"], "violated");
    assert_eq!(sound["violation"], false);
}
