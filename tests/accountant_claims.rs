//! Recomputed claims in the report: a recorded GAP-EDP run with the GAP/ProGAP
//! reference code's edge-level knobs (delta = 0.1, because it reads the edge count as 0) on a
//! Cora-sized graph is flagged in report.json, report.md and the HTML headline; the same run at
//! the delta of the true edge count is reproduced and its delta explained.
use gnnaudit::audit::config::AuditConfig;
use gnnaudit::privacy::accountant::{budget, calibrate, methods, PrivacyUnit};
use gnnaudit::report::record::Epsilon;
use gnnaudit::report::record::{BudgetRecord, CellKey, CellMeasurement, CellRecord, CellSeconds};
use gnnaudit::report::{html, markdown, DatasetInfo, Report, RunInfo};
use gnnaudit::train::Accuracy;

const CONFIG: &str = r#"
    name = "claims"
    [privacy]
    edge_epsilons = [1]
    epsilons = [1]
    [[datasets]]
    name = "synthetic"
    label = "cora"
    [[methods]]
    method = "gap-edp"
    hops = 2
"#;

/// GAP-EDP, K = 2 hops, noise calibrated to eps = 1 at `delta`, as the run would record it.
fn cell(delta: f64, seed: u64) -> CellRecord {
    let sigma = calibrate(1.0, delta, |s| methods::gap_edge(2, s)).unwrap();
    let b = budget(&methods::gap_edge(2, sigma), PrivacyUnit::Edge, Some(1.0), delta, vec![("sigma".into(), sigma)])
        .unwrap();
    CellRecord {
        key: CellKey { dataset: "cora".into(), method: "gap-edp".into(), epsilon: Epsilon::Finite(1.0), seed },
        fingerprint: format!("f{seed}"),
        inputs: Default::default(),
        result: CellMeasurement {
            privacy_unit: PrivacyUnit::Edge,
            utility: Accuracy { train: 0.8, val: 0.7, test: 0.7 },
            budget: BudgetRecord::from(&b),
            recipe: serde_json::json!({ "method": "gap-edp", "hops": 2, "delta": delta }),
            attacks: vec![],
            baseline: None,
            seconds: CellSeconds::default(),
        },
    }
}

fn report(delta: f64) -> Report {
    let config = AuditConfig::parse(CONFIG).unwrap();
    // Cora: 2,708 nodes and 5,278 undirected edges, the edge-level private units (delta 1e-4).
    let cora = DatasetInfo {
        label: "cora".into(),
        name: "synthetic".into(),
        source: "embedded".into(),
        sha256: "0".repeat(64),
        nodes: 2708,
        undirected_edges: 5278,
        features: 1433,
        classes: 7,
    };
    let run = RunInfo {
        started_at: String::new(),
        finished_at: String::new(),
        wall_seconds: 0.0,
        config_path: "claims.toml".into(),
        output_dir: String::new(),
        cells_computed: 2,
        cells_reused: 0,
        cell_seconds: vec![],
    };
    Report::build(&config, "0", vec![cora], &[cell(delta, 0), cell(delta, 1)], run)
}

#[test]
fn gap_reference_edge_delta_is_flagged_in_every_output() {
    let r = report(0.1);
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    for c in json["cells"].as_array().unwrap() {
        let claim = &c["claim"];
        assert_eq!(claim["stated"].as_f64(), Some(1.0), "{claim}");
        assert!(claim["recomputed"].as_f64().unwrap() <= 1.0 + 1e-6, "{claim}");
        assert_eq!(claim["delta"].as_f64(), Some(0.1));
        // Cora's 5,278 undirected edges: the edge-level unit is one undirected edge.
        assert_eq!(claim["private_units"].as_u64(), Some(5278));
        let flags = claim["flags"].as_array().unwrap();
        assert_eq!(flags.len(), 1, "{claim}");
        assert!(flags[0].as_str().unwrap().contains("not below 1/N"), "{claim}");
    }
    let md = markdown::render(&r);
    assert!(
        md.contains("## Recomputed claims") && md.contains("1 of 1 flagged") && md.contains("FLAGGED: delta = 0.1"),
        "{md}"
    );
    let page = html::render(&r);
    assert!(page.contains("1 claim(s) flagged"), "the HTML headline does not flag the claim");
    // Building twice gives the same bytes (report.json is a function of its inputs).
    assert_eq!(report(0.1).to_json(), r.to_json());
}

#[test]
fn a_claim_at_the_true_count_delta_is_reproduced_with_its_reason() {
    let r = report(1e-4);
    let claim = r.cells[0].claim.as_ref().unwrap();
    assert!(claim.flags.is_empty(), "{:?}", claim.flags);
    assert!(claim.delta_reason.contains("1/10^digits(N) for N = 5278 undirected edges"), "{}", claim.delta_reason);
    assert!(markdown::render(&r).contains("0 of 1 flagged"));
    assert!(html::render(&r).contains("Every claim is reproduced"));
}
