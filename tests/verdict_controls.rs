//! An audit never upholds a claim: a bound below the claim is `not refuted` only when the same
//! audit, at the same settings, refutes that claim on the target's positive control (its method
//! with the noise switched off, or its non-private variant); otherwise it is `inconclusive`. A
//! model without noise is therefore never `not refuted`, and `check` can require shown power.
use gnnaudit::methods::registry::control_recipe;
use gnnaudit::methods::{Method, Recipe};
use gnnaudit::privacy::accountant::PrivacyUnit;
#[path = "common/cli.rs"]
mod cli;
use cli::audit;

/// Private methods whose noise cannot be switched off by a registry variant yet: their rows stay
/// `inconclusive` unless the config gives power another way. Listed so that a new private
/// method without a control is a decision, not an accident.
const WITHOUT_CONTROL: &[&str] =
    &["dpgnn", "dpgnn-rowclip", "lpgnn", "rgnn", "pgc", "graph-pate", "pgc-vgae", "demo-gap-edp-noise-off"];

#[test]
fn every_private_method_names_a_control_without_noise() {
    for &m in Method::ALL {
        let spec = m.spec();
        let private = spec.unit != PrivacyUnit::None && (spec.takes_epsilon || spec.sweeps_local_budgets);
        let Some(control) = spec.control else {
            assert!(!private || WITHOUT_CONTROL.contains(&spec.name), "{} is private but has no control", spec.name);
            continue;
        };
        assert!(private, "{} claims nothing, yet has a control", spec.name);
        assert!(!WITHOUT_CONTROL.contains(&spec.name), "{} is listed as having no control", spec.name);
        // The control adds no noise: a non-private method, or the noise-off demo (sensitivity 0).
        assert!(
            control.privacy_unit() == PrivacyUnit::None
                || !control.takes_epsilon()
                || control == Method::DemoGapEdpNoiseOff,
            "{}: control {} may add noise",
            spec.name,
            control.name()
        );
        let mut target = Recipe::new(m, Some(1.0));
        target.train.hidden = 24;
        let r = control_recipe(&target).unwrap().expect("a control recipe");
        assert_eq!(r.method, control);
        // The architecture knobs the control reads are the target's.
        assert_eq!(r.train.hidden, 24, "{}: the control keeps the target's width", spec.name);
        // The noise-off demo keeps the target's claim; a non-private control takes no epsilon.
        assert_eq!(r.epsilon, control.takes_epsilon().then_some(1.0), "{}", spec.name);
    }
}

const AUDIT: &str = r#"
name = "controls"
seed = 1
[privacy]
epsilons = [1]
[[datasets]]
name = "synthetic"
synthetic = { nodes = 600, features = 256, signal = 1.5 }
[[methods]]
method = "gap-edp"
epochs = 20
[[methods]]
method = "demo-gap-edp-noise-off"
epochs = 20
[[methods]]
method = "progap-edp"
epochs = 10
depth = 2
[[attacks]]
kind = "canary-aggregation"
params = { canaries = 20000, bound = "gdp" }
[[attacks]]
kind = "sensitivity"
params = { random_units = 1 }
"#;

fn records(report: &serde_json::Value, method: &str) -> Vec<serde_json::Value> {
    report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["method"] == method)
        .flat_map(|c| c["attacks"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn noise_off_is_never_not_refuted_and_a_private_model_with_a_caught_control_is() {
    let run = audit(AUDIT);
    let report = &run.report;
    let claim = |method: &str| {
        report["summary"].as_array().unwrap().iter().find(|s| s["method"] == method).unwrap()["epsilon_claimed"]
            .as_f64()
            .unwrap()
    };

    // GAP-EDP: its bound stays below the claim, and the same canaries on the noise-off pipeline
    // refute the claim, so the power is shown.
    let gap = records(report, "gap-edp");
    let canary = gap.iter().find(|a| a["kind"] == "canary-aggregation").unwrap();
    let control = &canary["control"];
    assert_eq!(canary["verdict"], "not refuted", "{canary}");
    assert!(canary["eps_lb"].as_f64().unwrap() <= claim("gap-edp"));
    assert_eq!(control["method"], "demo-gap-edp-noise-off");
    assert!(control["eps_lb"].as_f64().unwrap() > claim("gap-edp"), "{control}");
    assert_eq!(control["caught"], true);
    // The replay catches the noise-off control (declared sensitivity 0), so it shows power too.
    let replay = gap.iter().find(|a| a["kind"] == "sensitivity").unwrap();
    assert_eq!((replay["verdict"].as_str(), replay["control"]["caught"].as_bool()), (Some("not refuted"), Some(true)));

    // The noise-off model itself: violated or inconclusive, never `not refuted`.
    for a in records(report, "demo-gap-edp-noise-off") {
        assert!(a["verdict"] == "violated" || a["verdict"] == "inconclusive", "{a}");
        if a["kind"] == "canary-aggregation" {
            assert_eq!(a["verdict"], "violated", "{a}");
        }
    }

    // ProGAP-EDP: `not refuted` exactly when its non-private control is caught. The replay cannot
    // see ProGAP's noise (its control declares no sensitivity), so that row is inconclusive.
    for a in records(report, "progap-edp") {
        let caught = a["control"]["caught"].as_bool();
        assert_eq!(a["verdict"] == "not refuted", caught == Some(true), "{a}");
        if a["kind"] == "sensitivity" {
            assert_eq!(
                (a["verdict"].as_str(), a["control"]["method"].as_str()),
                (Some("inconclusive"), Some("progap-inf"))
            );
        }
    }

    // The report shows each control's bound beside the row, and why a row is inconclusive.
    let md = run.read("report.md");
    assert!(md.contains("control ε_lb"), "{md}");
    assert!(md.contains("power shown") && md.contains("inconclusive ("), "{md}");

    // `check` with require_power fails on the inconclusive rows only (exit 1), naming them.
    let (code, stdout, stderr) = run.check("fail_on_violation = false\nrequire_power = true\n", &[]);
    let text = format!("{stdout}{stderr}");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("progap-edp") && text.contains("require_power"), "{text}");
    let gap_lines = text.lines().filter(|l| l.contains("gap-edp") && !l.contains("progap") && !l.contains("noise-off"));
    assert_eq!(gap_lines.count(), 0, "GAP-EDP showed its power: {text}");
    let (code, _, _) = run.check("fail_on_violation = false\n", &[]);
    let flagged =
        report["cells"].as_array().unwrap().iter().any(|c| !c["claim"]["flags"].as_array().unwrap().is_empty());
    assert_eq!(code, if flagged { 1 } else { 0 }, "without require_power only flags can fail");
}
