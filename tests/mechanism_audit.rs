//! `gnnaudit mechanism audit` through the binary: every mechanism reaches its tightness target
//! and never exceeds its claim, the GRR-FS showcase refutes RGNN's Theorem 1, a mis-calibrated
//! mechanism is violated, bad input exits 2 naming the parameter, and an audit config's
//! `mechanism` attack lands in the report's "Is the accountant tight?" section.
use serde_json::Value;
#[path = "common/cli.rs"]
mod cli;
use cli::{audit, gnnaudit};

fn audit_json(args: &[&str]) -> Value {
    let mut all = vec!["mechanism", "audit", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = gnnaudit(&all);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("no number {k} in {v}"))
}

/// Every mechanism at its target with 10^6 trials per input: pure-LDP ones reach >= 0.9 of the
/// claim at eps 1, Gaussian ones >= 0.6 at (1, 1e-5) and at 4; none exceeds its claim. The JSON
/// carries eps_lb, the claim, tightness and the verdict, and the claim is the accountant's.
#[test]
fn every_mechanism_reaches_its_tightness_target_and_holds() {
    let cases: &[(&[&str], f64)] = &[
        (&["--mechanism", "rr", "--epsilon", "1"], 0.9),
        (&["--mechanism", "rr", "--epsilon", "1", "--classes", "7"], 0.9),
        (&["--mechanism", "edge-rand", "--epsilon", "1"], 0.9),
        (&["--mechanism", "multibit", "--epsilon", "1"], 0.9),
        (&["--mechanism", "pgc", "--epsilon", "1"], 0.9),
        (&["--mechanism", "gaussian", "--epsilon", "1"], 0.6),
        (&["--mechanism", "gaussian", "--epsilon", "4"], 0.6),
        (&["--mechanism", "gaussian", "--epsilon", "1", "--degree", "10", "--hops", "2"], 0.6),
        (&["--mechanism", "gaussian", "--epsilon", "4", "--degree", "10", "--hops", "2"], 0.6),
        (&["--mechanism", "dp-sgd-step", "--epsilon", "1"], 0.6),
        (&["--mechanism", "dp-sgd-step", "--epsilon", "4"], 0.6),
    ];
    for (args, target) in cases {
        let v = audit_json(args);
        for k in ["mechanism", "claimed_epsilon", "delta", "eps_lb", "bound", "trials", "tightness", "verdict"] {
            assert!(!v[k].is_null(), "{args:?}: no {k}");
        }
        assert_eq!(v["trials"], 1_000_000);
        let eps: f64 = args[3].parse().unwrap();
        assert!((num(&v, "claimed_epsilon") - eps).abs() < 0.01 * eps, "{args:?}: claim {}", v["claimed_epsilon"]);
        let (lb, claim) = (num(&v, "eps_lb"), num(&v, "claimed_epsilon"));
        assert!(lb <= claim, "{args:?}: eps_lb {lb} above the claim {claim}");
        assert!(num(&v, "tightness") >= *target, "{args:?}: tightness {} < {target}", v["tightness"]);
        assert_eq!(v["verdict"], "not-refuted", "{args:?}");
        assert_eq!(v["certificate"]["certified_positives"], 1_000_000);
    }
}

/// The showcase: 10^6 GRR-FS reports per record on cora's 58 grouped binary features,
/// m = 10, eps_x = 0.1, certify eps_lb above the paper's Theorem 1 claim (0.2595, computed from
/// its formula) and at most the sound m eps_x = 1. The negative controls hold their claims.
#[test]
fn grr_fs_showcase_refutes_the_paper_claim() {
    let v = audit_json(&["--mechanism", "grr-fs", "--epsilon", "0.1", "--features", "58", "--sampled", "10"]);
    let (lb, sound, paper) = (num(&v, "eps_lb"), num(&v, "claimed_epsilon"), num(&v, "paper_epsilon"));
    assert!((sound - 1.0).abs() < 1e-12, "sound claim {sound}");
    assert!((paper - 0.2595).abs() < 5e-4, "paper claim {paper}");
    assert!(lb > paper && lb <= sound, "eps_lb {lb}");
    assert_eq!(v["verdict"], "not-refuted");
    assert_eq!(v["paper_verdict"], "violated");
    assert_eq!(v["bound"], "clopper-pearson");
    // Negative controls: multi-bit with m = 10 at total eps 1 (= m eps_x), RR, and PGC on the same
    // 58 features at eps_x = 0.1 each (record claim 5.8).
    for args in [
        &["--mechanism", "multibit", "--epsilon", "1", "--features", "58", "--sampled", "10"][..],
        &["--mechanism", "rr", "--epsilon", "1", "--classes", "7"][..],
        &["--mechanism", "pgc", "--epsilon", "0.1", "--features", "58"][..],
    ] {
        let v = audit_json(args);
        assert!(num(&v, "eps_lb") <= num(&v, "claimed_epsilon"), "{args:?}");
        assert_eq!(v["verdict"], "not-refuted", "{args:?}");
        assert!(v.get("paper_epsilon").is_none());
    }
}

/// A deliberately mis-calibrated mechanism: noise 10x too small for the claim is violated, with
/// and without Poisson sampling; the human-readable output says so too.
#[test]
fn miscalibrated_mechanisms_are_violated() {
    for args in [
        &["--mechanism", "gaussian", "--epsilon", "1", "--noise-factor", "0.1"][..],
        &["--mechanism", "gaussian", "--epsilon", "4", "--degree", "20", "--noise-factor", "0.1"][..],
        &["--mechanism", "dp-sgd-step", "--epsilon", "1", "--sample-rate", "0.01", "--noise-factor", "0.1"][..],
    ] {
        let v = audit_json(args);
        assert_eq!(v["verdict"], "violated", "{args:?}: eps_lb {}", v["eps_lb"]);
        assert!(num(&v, "eps_lb") > num(&v, "claimed_epsilon"));
        assert!(num(&v, "tightness") > 1.0);
    }
    let (code, out, _) =
        gnnaudit(&["mechanism", "audit", "--mechanism", "gaussian", "--epsilon", "1", "--noise-factor", "0.1"]);
    assert_eq!(code, 0);
    assert!(out.contains("verdict       violated"), "{out}");
}

/// Unknown names, parameters outside their domain and too few trials: exit 2, the parameter
/// named, no panic.
#[test]
fn bad_input_exits_2_naming_the_parameter() {
    let cases: &[(&[&str], &str)] = &[
        (&["--mechanism", "laplace", "--epsilon", "1"], "--mechanism"),
        (&["--mechanism", "gaussian", "--sigma", "0"], "--sigma"),
        (&["--mechanism", "gaussian", "--sigma", "-1"], "--sigma"),
        (&["--mechanism", "dp-sgd-step", "--sigma", "0"], "--sigma"),
        (&["--mechanism", "gaussian", "--epsilon", "1", "--degree", "0"], "--degree"),
        (&["--mechanism", "gaussian", "--epsilon", "1", "--degree", "-3"], "--degree"),
        (&["--mechanism", "rr", "--epsilon", "0"], "--epsilon"),
        (&["--mechanism", "gaussian", "--epsilon", "-1"], "--epsilon"),
        (&["--mechanism", "grr-fs", "--epsilon", "0"], "--epsilon"),
        (&["--mechanism", "rr"], "--epsilon"),
        (&["--mechanism", "rr", "--epsilon", "1", "--trials", "99"], "--trials"),
        (&["--mechanism", "grr-fs", "--epsilon", "0.1", "--sampled", "59"], "--sampled"),
        (&["--mechanism", "rr", "--epsilon", "1", "--classes", "1"], "--classes"),
        (&["--mechanism", "rr", "--epsilon", "1", "--degree", "3"], "--degree"),
        (&["--mechanism", "gaussian", "--epsilon", "1", "--delta", "0"], "--delta"),
        (&["--mechanism", "dp-sgd-step", "--epsilon", "1", "--sample-rate", "0"], "--sample-rate"),
        (&["--mechanism", "gaussian", "--epsilon", "1", "--confidence", "1"], "--confidence"),
    ];
    for (args, flag) in cases {
        let mut all = vec!["mechanism", "audit"];
        all.extend_from_slice(args);
        let (code, out, err) = gnnaudit(&all);
        assert_eq!(code, 2, "{args:?}: exit {code}\n{err}");
        assert!(err.contains(flag), "{args:?}: '{flag}' not named in: {err}");
        assert!(!err.contains("panicked") && out.is_empty(), "{args:?}: {err}");
    }
}

const CONFIG: &str = r#"
name = "mech"
seed = 3
[privacy]
epsilons = [inf]
[[datasets]]
name = "synthetic"
synthetic = { nodes = 300, classes = 3, features = 8 }
[[methods]]
method = "mlp"
epochs = 2
[[attacks]]
kind = "mechanism"
label = "gap-edge-eps1"
params = { mechanism = "gaussian", epsilon = 1, delta = 1e-5 }
[[attacks]]
kind = "mechanism"
label = "grr-fs-showcase"
params = { mechanism = "grr-fs", epsilon = 0.1, features = 58, sampled = 10 }
[[attacks]]
kind = "mechanism"
label = "gap-sigma-too-small"
params = { mechanism = "gaussian", epsilon = 1, noise_factor = 0.1, trials = 100000 }
"#;

/// The `mechanism` attack kind: run with its params, recorded with the cell (the certificate,
/// claim and tightness in its details), and shown in the report's "Is the accountant tight?"
/// section with its bar chart; `check` fails on the mis-calibrated mechanism.
#[test]
fn audit_config_runs_mechanism_attacks_into_the_report() {
    let run = audit(CONFIG);
    let attacks = run.report["cells"][0]["attacks"].as_array().unwrap();
    assert_eq!(attacks.len(), 3);
    let by = |label: &str| attacks.iter().find(|a| a["attack"] == label).unwrap();
    let gap = by("gap-edge-eps1");
    assert_eq!(gap["kind"], "mechanism");
    assert_eq!(gap["verdict"], "not refuted");
    assert!(gap["eps_lb"].is_null(), "the bound is about the mechanism's claim, not the cell's");
    let d = &gap["details"];
    assert!(num(d, "tightness") >= 0.6 && num(d, "eps_lb") <= num(d, "claimed_epsilon"));
    assert_eq!(d["certificate"]["bound"], "gdp");
    assert!(d.get("seconds").is_none(), "wall time stays out of the reproducible part");
    let grr = &by("grr-fs-showcase")["details"];
    assert!(num(grr, "eps_lb") > num(grr, "paper_epsilon") && num(grr, "eps_lb") <= 1.0);
    let bad = by("gap-sigma-too-small");
    assert_eq!(bad["verdict"], "violated");
    assert_eq!(bad["violation"], true);

    let md = run.read("report.md");
    let section = &md[md.find("## Is the accountant tight?").expect("section in report.md")..];
    for label in ["gap-edge-eps1", "grr-fs-showcase", "gap-sigma-too-small"] {
        assert!(section.contains(label), "{label} missing from:\n{section}");
    }
    assert!(section.contains("**VIOLATED**"));
    assert!(section.contains("paper claim: violated"));
    let html = run.read("report.html");
    let h = &html[html.find("id=\"tightness\"").expect("section in report.html")..];
    let svg = &h[h.find("<svg").expect("bar chart")..h.find("</svg>").unwrap()];
    // The background plus one bar per claim and bound: 2 + 3 (with the paper claim) + 2.
    assert_eq!(svg.matches("<rect").count(), 1 + 7, "bars");
    assert!(svg.contains("#E15759"), "the violated bound is drawn red");

    // `check` refuses the report because of the mis-calibrated mechanism, exit 1.
    let (code, out_text, err) = run.check("fail_on_violation = true\n", &[]);
    assert_eq!(code, 1, "{out_text}{err}");
    assert!(format!("{out_text}{err}").contains("gap-sigma-too-small"), "{out_text}{err}");
}

/// A bad mechanism parameter in a config fails before any work, naming the config field.
#[test]
fn bad_mechanism_params_in_a_config_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, field) in [
        ("epsilon = 1, delta = 1e-5", "epsilon = 1, delta = 1e-5, degree = 0", "attacks[0].params.degree"),
        (
            "mechanism = \"gaussian\", epsilon = 1, delta",
            "mechanism = \"gauss\", epsilon = 1, delta",
            "attacks[0].params.mechanism",
        ),
        ("noise_factor = 0.1, trials = 100000", "noise_factor = 0.1, trials = 10", "attacks[2].params.trials"),
        ("sampled = 10 }", "sampled = 10, sigma = 2 }", "attacks[1].params.sigma"),
        ("sampled = 10 }", "sampled = 10, shadow = 2 }", "attacks[1].params"),
    ] {
        assert!(CONFIG.contains(from), "{from}");
        let cfg = dir.path().join("bad.toml");
        std::fs::write(&cfg, CONFIG.replace(from, to)).unwrap();
        let out = dir.path().join("never");
        let (code, _, err) = gnnaudit(&["audit", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(code, 2, "{to}: {err}");
        assert!(err.contains(field), "{to}: '{field}' not in {err}");
        assert!(!out.exists(), "nothing written for {to}");
    }
}
