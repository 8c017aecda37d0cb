//! The report of an in-process audit, in the CLI's format: one cell per seed, whose attack records
//! are made by the audit's own `record`, assembled by `Report::build` and written by
//! `report::write_all`, so `gnnaudit check`, `report diff` and `render` read it like any other.
use gnnaudit::audit::attack::record;
use gnnaudit::error::{Error, Result};
use gnnaudit::external::ClaimReport;
use gnnaudit::report::config::{AttackSpec, AuditConfig, Params};
use gnnaudit::report::record::{
    BudgetRecord, CellKey, CellMeasurement, CellRecord, CellSeconds, ControlRecord, Epsilon,
};
use gnnaudit::report::{provenance, DatasetInfo, Report, RunInfo};
use gnnaudit::train::baseline::Baseline;
use gnnaudit::train::Accuracy;
use gnnaudit_attacks::AttackResult;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::SystemTime;

/// The pseudo-method and dataset names of an in-process audit's cells.
pub const METHOD: &str = "python-model";
pub const DATASET: &str = "python-graph";

/// One attack as the config records it, with its results per seed (in seed order).
pub struct AttackRuns<'a> {
    pub spec: AttackSpec,
    pub runs: &'a [AttackResult],
    /// The pooled eps_lb the same attack reached on the positive control, if one ran.
    pub control: Option<f64>,
}

pub fn attack_spec(kind: &str, params: Params) -> AttackSpec {
    AttackSpec { kind: kind.to_string(), label: None, methods: None, datasets: None, knowledge: Params::new(), params }
}

/// What the report states about the graph, the members and the run.
pub struct AuditFacts<'a> {
    pub dataset: DatasetInfo,
    pub members_sha256: String,
    pub members: usize,
    pub seeds: &'a [u64],
    pub claim: Option<&'a ClaimReport>,
    pub claim_table: Option<&'a serde_json::Value>,
    /// Accuracy of the target's posteriors on the members and on the other nodes.
    pub accuracy: (f64, f64),
    /// The trivial predictors on the same split (members train, the other nodes test).
    pub baseline: Baseline,
    pub started: SystemTime,
    pub seconds: f64,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Assembles the report (nothing is written: `save` does that).
pub fn build(facts: &AuditFacts<'_>, attacks: &[AttackRuns<'_>]) -> Result<Report> {
    let config: AuditConfig = serde_json::from_value(json!({
        "name": "python-audit",
        "description": "in-process audit of a Python model (gnnaudit.audit)",
        "seeds": facts.seeds,
        "datasets": [{ "name": DATASET }],
        "methods": [{ "method": METHOD }],
        "attacks": attacks.iter().map(|a| &a.spec).collect::<Vec<_>>(),
    }))
    .map_err(|e| Error::Other(format!("the in-process audit's config: {e}")))?;
    let budget = gnnaudit::audit::external::budget_of(facts.claim);
    let epsilon = facts.claim.and_then(|c| c.stated_epsilon).map_or(Epsilon::Infinite, Epsilon::from_f64);
    let claimed = facts.claim.map(|c| c.audited_epsilon());
    let mut records = vec![];
    for (i, &seed) in facts.seeds.iter().enumerate() {
        let mut cell_attacks = vec![];
        for a in attacks {
            let r = &a.runs[i];
            let mut rec = record(&a.spec, r);
            if let (Some(control), Some(claimed)) = (a.control, claimed) {
                rec.control = Some(ControlRecord {
                    method: "control (Python)".into(),
                    eps_lb: Some(control),
                    caught: control > claimed,
                });
                if let Some(c) = &r.certificate {
                    rec.verdict = Some(c.verdict_with_control(Some(claimed), Some(control)).name().to_string());
                }
            }
            cell_attacks.push(rec);
        }
        let recipe = json!({
            "target": "python",
            "claim": facts.claim,
            "claim_table": facts.claim_table,
            "members": facts.members,
            "utility_measured": true,
        });
        let key = CellKey { dataset: DATASET.into(), method: METHOD.into(), epsilon, seed };
        // Keyed on content: the graph, the members, the claim, the attacks and the seed.
        let fingerprint = sha256_hex(
            json!([facts.dataset.sha256, facts.members_sha256, facts.claim_table, config.attacks, seed])
                .to_string()
                .as_bytes(),
        );
        records.push(CellRecord {
            key,
            fingerprint,
            inputs: Default::default(),
            result: CellMeasurement {
                privacy_unit: budget.privacy_unit,
                utility: Accuracy { train: facts.accuracy.0, val: f64::NAN, test: facts.accuracy.1 },
                budget: BudgetRecord::from(&budget),
                recipe,
                attacks: cell_attacks,
                baseline: Some(facts.baseline),
                seconds: CellSeconds { train: 0.0, attacks: facts.seconds / facts.seeds.len() as f64 },
            },
        });
    }
    let run = RunInfo {
        started_at: provenance::utc_iso(facts.started),
        finished_at: provenance::utc_iso(SystemTime::now()),
        wall_seconds: facts.seconds,
        config_path: "(gnnaudit.audit in Python)".into(),
        output_dir: String::new(),
        cells_computed: records.len(),
        cells_reused: 0,
        cell_seconds: records.iter().map(|r| (r.key.clone(), r.result.seconds)).collect(),
    };
    let sha = gnnaudit::audit::runner::config_sha256(&config);
    Ok(Report::build(&config, &sha, vec![facts.dataset.clone()], &records, run))
}

/// Writes report.json, report.md and report.html of `report` (JSON as `build` made it) into `dir`.
pub fn save(report_json: &str, dir: &Path) -> Result<()> {
    let mut report: Report = serde_json::from_str(report_json)
        .map_err(|e| Error::invalid("report", format!("not a gnnaudit report: {e}")))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::bad_file(dir, e))?;
    report.run.output_dir = dir.display().to_string();
    gnnaudit::report::write_all(&report, dir)
}
