//! `gnnaudit check` through the binary: a passing report (exit 0), failing ones (exit 1, with
//! the readable list), and bad input (exit 2).
mod common;

use common::*;
#[path = "common/cli.rs"]
mod cli;
use cli::{check, gnnaudit};

/// Limits the fake (non-leaky) report meets: at eps = 8 its MIA reaches AUC ~0.72 and link
/// stealing ~0.81 (TPR at 1% FPR ~0.07 and ~0.14); at inf both are higher.
const THRESHOLDS: &str = r#"
max_auc = 0.85
max_tpr_at_1pct_fpr = 0.20
min_test_accuracy = 0.45
[[overrides]]
epsilon = "inf"
max_auc = 0.95
max_tpr_at_1pct_fpr = 0.60
[[overrides]]
method = "mlp"
attack = "link-stealing"
max_auc = 0.99
"#;

#[test]
fn passing_report_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let rep = fake_report(&dir.path().join("ok"), &mut FakeRunner::default());
    // The fake runner records no mechanism, so its private claims are flagged (unreproducible);
    // tests/verdict_check.rs covers that refusal, here the limits are under test.
    let (code, out, err) = check(&rep, THRESHOLDS, &["--accept-flagged-claims"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("check passed: 7 (dataset, method, ε) rows and 14 attack results"), "{out}");
    // The report folder works as well as the file.
    let (code, _, _) = check(&dir.path().join("ok"), THRESHOLDS, &["--accept-flagged-claims"]);
    assert_eq!(code, 0);
}

#[test]
fn leaky_report_exits_1_with_a_readable_list() {
    let dir = tempfile::tempdir().unwrap();
    let rep = fake_report(&dir.path().join("leaky"), &mut FakeRunner { leak: 0.5, ..Default::default() });
    let (code, out, err) = check(&rep, THRESHOLDS, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("check failed: "), "{out}");
    assert!(out.contains("  - synthetic / gap-edp / ε=1 / mia: AUC "), "{out}");
    assert!(out.contains("> max_auc 0.850 (mean of 2 seeds)"), "{out}");
    assert!(out.contains("TPR at 1% FPR"), "{out}");
    assert!(err.contains("leakage check failed"), "{err}");
    // A tighter utility floor fails on accuracy alone.
    let ok = fake_report(&dir.path().join("ok"), &mut FakeRunner::default());
    let (code, out, _) = check(&ok, "min_test_accuracy = 0.75\n", &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("synthetic / gap-ndp / ε=1: test accuracy 0.") && out.contains("< min_test_accuracy 0.750"),
        "{out}"
    );
    assert!(!out.contains("/ mlp /"), "mlp (accuracy 0.8+) passes the floor: {out}");
}

#[test]
fn eps_lb_above_the_claim_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let rep = fake_report(&dir.path().join("v"), &mut FakeRunner { violate: true, ..Default::default() });
    let (code, out, _) = check(&rep, "max_auc = 1.0\n", &[]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.matches("privacy claim violated").count(), 4, "gap-ndp, eps 1 and 8, 2 seeds each: {out}");
    assert!(
        out.contains("synthetic / gap-ndp / ε=1 / mia: seed 7: empirical ε_lb 2.000 exceeds the claimed ε 1"),
        "{out}"
    );
    // ... unless the thresholds say not to fail on violations.
    // (The fake runner records no mechanism: its flagged claims are accepted explicitly.)
    let (code, _, _) = check(&rep, "max_auc = 1.0\nfail_on_violation = false\n", &["--accept-flagged-claims"]);
    assert_eq!(code, 0);
}

#[test]
fn bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let rep = fake_report(&dir.path().join("ok"), &mut FakeRunner::default());
    let t = dir.path().join("t.toml");
    std::fs::write(&t, THRESHOLDS).unwrap();
    let (r, th) = (rep.to_str().unwrap(), t.to_str().unwrap());
    // Missing report, missing thresholds.
    let (code, _, err) = gnnaudit(&["check", "/no/such/report.json", "--thresholds", th]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = gnnaudit(&["check", r, "--thresholds", "/no/such/t.toml"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/no/such/t.toml"), "{err}");
    // A truncated report.
    let trunc = dir.path().join("trunc.json");
    let text = std::fs::read_to_string(&rep).unwrap();
    std::fs::write(&trunc, &text[..text.len() / 2]).unwrap();
    let (code, _, err) = gnnaudit(&["check", trunc.to_str().unwrap(), "--thresholds", th]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("trunc.json") && err.contains("not a gnnaudit report"), "{err}");
    // A typo in the thresholds names the field; an out-of-range limit too.
    let (code, _, err) = check(&rep, "max_acu = 0.6\n", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("max_acu"), "{err}");
    let (code, _, err) = check(&rep, "[[overrides]]\nmethod = \"mlp\"\nmax_auc = 1.5\n", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("overrides[0].max_auc"), "{err}");
}

/// An edit of report.json.
type Tamper<'a> = &'a dyn Fn(&mut serde_json::Value);

/// A report whose cells were emptied, whose summary was edited, or that holds a value outside its
/// domain cannot be checked honestly: exit 2 naming the problem, never a pass.
#[test]
fn tampered_reports_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rep = fake_report(&dir.path().join("ok"), &mut FakeRunner::default());
    let original: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    let cases: [(&str, Tamper<'_>, &str); 4] = [
        ("empty.json", &|v| v["cells"] = serde_json::json!([]), "no cells"),
        ("summary.json", &|v| v["summary"][0]["test_accuracy"]["mean"] = 0.99.into(), "summary does not match"),
        ("auc.json", &|v| v["cells"][0]["attacks"][0]["auc"] = 1.7.into(), "auc 1.7 is outside [0, 1]"),
        ("lb.json", &|v| v["cells"][0]["attacks"][0]["eps_lb"] = (-1.0).into(), "eps_lb -1"),
    ];
    for (name, edit, problem) in cases {
        let mut v = original.clone();
        edit(&mut v);
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        let (code, _, err) = check(&p, THRESHOLDS, &[]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(problem), "{name}: {err}");
    }
}

#[test]
fn overrides_that_match_nothing_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let rep = fake_report(&dir.path().join("ok"), &mut FakeRunner::default());
    let thresholds = format!("{THRESHOLDS}\n[[overrides]]\nmethod = \"gap-edpp\"\nmax_auc = 0.1\n");
    let (code, _, err) = check(&rep, &thresholds, &["--accept-flagged-claims"]);
    assert_eq!(code, 0);
    assert!(err.contains("overrides[2] matches nothing"), "{err}");
}
