//! `gnnaudit check` against claims the accountant cannot reproduce: a report
//! whose GAP-EDP cells were calibrated at the reference code's edge-level delta of 0.1 fails (exit
//! 1, naming the cell and the flag) unless `--accept-flagged-claims` is passed; the same mechanism
//! at a delta below 1/N passes. A violated mechanism audit is reported with its own figures.
#[path = "common/cli.rs"]
mod cli;
mod common;
use cli::check;

use common::*;
use gnnaudit::audit::config::DatasetSpec;
use gnnaudit::audit::Progress;
use gnnaudit::audit::{BudgetRecord, CellMeasurement, CellRunner, CellSpec, Epsilon};
use gnnaudit::privacy::accountant::{budget, calibrate, methods, PrivacyUnit};
use gnnaudit::report::DatasetInfo;
use gnnaudit::Result;
use std::path::Path;

/// The fake runner's cells, with a real GAP-EDP budget (K = 2 hops, noise calibrated to the
/// cell's epsilon at `delta`) in place of its mechanism-less one.
struct RealClaims {
    inner: FakeRunner,
    delta: f64,
    /// Adds a violated mechanism-audit record (eps_lb only in its details) to every cell.
    mechanism_violation: bool,
}

impl CellRunner for RealClaims {
    fn dataset_info(&mut self, spec: &DatasetSpec) -> Result<DatasetInfo> {
        self.inner.dataset_info(spec)
    }
    fn run_cell(&mut self, cell: &CellSpec, progress: &Progress) -> Result<CellMeasurement> {
        let mut m = self.inner.run_cell(cell, progress)?;
        if let (u, Epsilon::Finite(e)) = (m.privacy_unit, cell.key.epsilon) {
            if u != PrivacyUnit::None {
                let sigma = calibrate(e, self.delta, |s| methods::gap_edge(2, s))?;
                let b = budget(&methods::gap_edge(2, sigma), u, Some(e), self.delta, vec![("sigma".into(), sigma)])?;
                m.budget = BudgetRecord::from(&b);
            }
        }
        if self.mechanism_violation {
            let mut r = m.attacks[0].clone();
            r.attack = "gauss-sigma-halved".into();
            r.kind = "mechanism".into();
            r.eps_lb = None;
            r.violation = true;
            r.verdict = Some("violated".into());
            r.details = serde_json::json!({
                "claimed_epsilon": 1.0, "eps_lb": 2.345, "bound": "clopper-pearson", "trials": 20000, "tightness": 2.345
            });
            m.attacks.push(r);
        }
        Ok(m)
    }
}

/// `gnnaudit check` of `report` against `thresholds`: exit code, stdout and stderr together.
fn check_text(report: &Path, thresholds: &str, extra: &[&str]) -> (i32, String) {
    let (code, out, err) = check(report, thresholds, extra);
    (code, out + &err)
}

#[test]
fn check_fails_on_a_claim_at_the_reference_delta_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let t = "max_auc = 0.99\n";
    // The fixture graph has 5,000 undirected edges, the edge-level private units: 1/N = 2e-4.
    let runner = |delta| RealClaims { inner: FakeRunner::default(), delta, mechanism_violation: false };
    let sound = fake_report(&dir.path().join("sound"), &mut runner(1e-5));
    let (code, text) = check_text(&sound, t, &[]);
    assert_eq!(code, 0, "a reproduced claim below 1/N passes: {text}");

    let flagged = fake_report(&dir.path().join("flagged"), &mut runner(0.1));
    let (code, text) = check_text(&flagged, t, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("flagged claim(s)"), "{text}");
    assert!(text.contains("synthetic / gap-edp / ε=1: seed 7: claim flagged: delta = 0.1 is not below 1/N"), "{text}");
    assert!(text.contains("N = 5000 undirected edges"), "{text}");
    // Node level: N = 1,000 nodes, delta 0.1 is flagged as well.
    assert!(text.contains("synthetic / gap-ndp / ε=8: seed 8: claim flagged: delta = 0.1"), "{text}");
    // The explicit opt-out checks the attacks anyway and says what it accepted.
    let (code, text) = check_text(&flagged, t, &["--accept-flagged-claims"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("warning (accepted with --accept-flagged-claims)") && text.contains("check passed"),
        "{text}"
    );
}

#[test]
fn check_prints_the_figures_of_a_violated_mechanism_audit() {
    let dir = tempfile::tempdir().unwrap();
    let t = "fail_on_violation = true\n";
    let mut runner = RealClaims { inner: FakeRunner::default(), delta: 1e-5, mechanism_violation: true };
    let rep = fake_report(&dir.path().join("mech"), &mut runner);
    let (code, text) = check_text(&rep, t, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(!text.contains("ε_lb ?"), "{text}");
    assert!(
        text.contains(
            "gauss-sigma-halved: seed 7: mechanism audit certifies ε_lb 2.345 (clopper-pearson bound, 20000 trials per \
             input) above the mechanism's claimed ε 1.000"
        ),
        "{text}"
    );
}
