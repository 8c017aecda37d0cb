//! Audit configs with a `[target]` table in place of `[[methods]]`: configs/external-*.toml are
//! valid on a fresh clone, an audit of the shipped TorchScript example writes a report whose
//! cells attack it, and malformed `[target]` / `[claim]` tables are refused naming the field.
#[path = "common/external.rs"]
mod common;
use common::*;
use std::path::Path;

fn repo(p: &str) -> String {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .join(p)
        .display()
        .to_string()
}

fn audit_in_repo(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .arg("audit")
        .args(args)
        .current_dir(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .env("GNNAUDIT_DATA", data_dir())
        .output()
        .expect("gnnaudit runs")
}

#[test]
fn shipped_external_configs_are_valid() {
    for c in ["configs/external-torchscript.toml", "configs/external-command.toml"] {
        let out = audit_in_repo(&[c, "--dry-run"]);
        assert!(out.status.success(), "{c}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 cells"));
    }
}

#[test]
fn an_audit_of_the_torchscript_example_reports_its_attacks() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_file(
        dir.path(),
        "ts.toml",
        &format!(
            "name = \"ts\"\n[[datasets]]\nname = \"cora\"\n[target]\nkind = \"torchscript\"\nmodel = \"{}\"\n\
             members = \"{}\"\n[[attacks]]\nkind = \"mia-metric\"\nparams = {{ source = \"target-split\" }}\n",
            repo("examples/external/model.pt"),
            repo("examples/external/members.txt")
        ),
    );
    let out_dir = dir.path().join("report");
    let out = audit_in_repo(&[cfg.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap()).unwrap();
    let text = report.to_string();
    assert!(text.contains("\"torchscript\""), "the cell is labelled by the target's kind");
    let auc = text.split("\"auc\":").nth(1).and_then(|s| s.split([',', '}']).next()).unwrap();
    let auc: f64 = auc.trim().parse().unwrap();
    eprintln!("audit of examples/external/model.pt: mia-metric AUC {auc:.4}");
    assert!(auc > 0.6, "AUC {auc}");
}

#[test]
fn malformed_target_and_claim_tables_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let check = |body: &str, culprit: &str| {
        let cfg = write_file(dir.path(), "bad.toml", &format!("name = \"bad\"\n[[datasets]]\nname = \"cora\"\n{body}"));
        let out = audit_in_repo(&[cfg.to_str().unwrap(), "--dry-run"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{body}: {err}");
        assert!(err.contains(culprit), "expected '{culprit}' in: {err}");
    };
    let model = repo("examples/external/model.pt");
    check(&format!("[target]\nkind = \"torchscript\"\nmodel = \"{model}\"\nouput = \"logits\""), "ouput");
    check("[target]\nkind = \"torchscript\"\nmodel = \"nope.pt\"", "target.model");
    check("[target]\nkind = \"command\"\ncommand = \"python train.py\"", "{graph}");
    check(&format!("[target]\nkind = \"torchscript\"\nmodel = \"{model}\"\n[[methods]]\nmethod = \"mlp\""), "methods");
    check(
        &format!(
            "[target]\nkind = \"torchscript\"\nmodel = \"{model}\"\n[claim]\nmechanism = \"dp-sgd\"\ndelta = 1e-5"
        ),
        "claim.sample_rate",
    );
    check("[privacy]\nepsilons = [1]\n[[methods]]\nmethod = \"mlp\"\n[claim]\nmechanism = \"edge-rand\"", "claim");
}
