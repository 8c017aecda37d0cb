//! Audit reports: `report.json` is the canonical record; `report.md` and `report.html` (with SVG
//! plots) are rendered from it and nothing else, so a report can be re-rendered from its JSON.
//!
//! Everything in `report.json` is a function of the config, the data and the code, except the
//! `run` object (timestamps, wall times, folders): two runs of one config and seed give the same
//! bytes outside `run`.
pub mod check;
pub mod claim;
pub mod config;
pub mod diff;
pub mod html;
pub mod mae_plot;
pub mod markdown;
pub mod plots;
pub mod provenance;
pub mod record;
pub mod schema;
pub mod table;
pub mod tightness;

use crate::error::{Error, Result};
use crate::fsutil::write_atomic;
use crate::methods::{Accuracy, UtilityMetric};
use crate::privacy::accountant::PrivacyUnit;
use crate::train::baseline::{at_chance, Baseline, ChanceVerdict, CHANCE_TEST};
use claim::{check_claim, ClaimCheck};
use config::AuditConfig;
use provenance::ToolInfo;
use record::{AttackRecord, BudgetRecord, CellKey, CellRecord, CellSeconds, Epsilon};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Identifies the JSON layout; bumped on incompatible changes.
pub const FORMAT: &str = "gnnaudit-report/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub format: String,
    pub name: String,
    pub description: String,
    pub tool: ToolInfo,
    /// sha256 of the parsed config (comments and layout do not count).
    pub config_sha256: String,
    #[schemars(with = "schema::Record")]
    pub config: AuditConfig,
    pub datasets: Vec<DatasetInfo>,
    /// Per (dataset, method, epsilon): means over seeds. Derived from `cells`.
    pub summary: Vec<SummaryRow>,
    /// Every cell with its utility, budget and attack metrics (ROC points included).
    pub cells: Vec<ReportCell>,
    /// The only non-deterministic part: timestamps, wall times and folders.
    pub run: RunInfo,
}

/// A dataset as the audit used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatasetInfo {
    /// The config label.
    pub label: String,
    /// The config name (embedded name, data-dir name or path as written).
    pub name: String,
    /// "embedded" or the file name it was read from.
    pub source: String,
    /// sha256 of the file's bytes, or of the generated content for embedded datasets.
    pub sha256: String,
    /// Size after the config's transforms (class filter, isolated nodes).
    pub nodes: usize,
    pub undirected_edges: usize,
    pub features: usize,
    pub classes: usize,
}

/// One cell as reported (its wall time is in `run.cell_seconds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportCell {
    pub dataset: String,
    pub method: String,
    #[schemars(with = "schema::EpsilonSchema")]
    pub epsilon: Epsilon,
    pub seed: u64,
    pub fingerprint: String,
    /// The files and texts outside the config the cell's result depends on (TorchScript export,
    /// init module, posteriors, members, command template and the scripts it names, declared
    /// claim, dataset file), each with the sha256 it had when the cell was computed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub inputs: std::collections::BTreeMap<String, record::InputDigest>,
    #[schemars(with = "schema::PrivacyUnitSchema")]
    pub privacy_unit: PrivacyUnit,
    #[schemars(with = "schema::AccuracySchema")]
    pub utility: Accuracy,
    /// What `utility` measures: accuracy (node classification) or ROC-AUC (link prediction).
    #[serde(default)]
    pub utility_metric: UtilityMetric,
    #[schemars(with = "schema::Record")]
    pub budget: BudgetRecord,
    pub recipe: serde_json::Value,
    #[schemars(with = "Vec<schema::Record>")]
    pub attacks: Vec<AttackRecord>,
    /// The claim as stated and as recomputed from the recorded mechanism, with its delta and
    /// why, and any flag (see [`crate::report::claim`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<schema::Record>")]
    pub claim: Option<ClaimCheck>,
    /// Chance and majority-class utility on the cell's split (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// Whether the test accuracy clears the majority class, by the named test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chance_test: Option<ChanceVerdict>,
}

impl ReportCell {
    pub fn key(&self) -> CellKey {
        CellKey { dataset: self.dataset.clone(), method: self.method.clone(), epsilon: self.epsilon, seed: self.seed }
    }
    /// Whether `utility` was measured: an external target audited only by canaries is never
    /// queried, so its utility is unknown (stored as 0 with `utility_measured: false`).
    pub fn utility_measured(&self) -> bool {
        self.recipe.get("utility_measured").and_then(|v| v.as_bool()) != Some(false)
    }
}

/// Timestamps and timings, kept apart so that the rest of the report is reproducible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInfo {
    pub started_at: String,
    pub finished_at: String,
    pub wall_seconds: f64,
    pub config_path: String,
    pub output_dir: String,
    pub cells_computed: usize,
    pub cells_reused: usize,
    /// Training and attack wall time of every cell (as measured when it was computed).
    #[schemars(with = "Vec<(schema::Record, schema::Record)>")]
    pub cell_seconds: Vec<(CellKey, CellSeconds)>,
}

/// Mean, sample standard deviation and count of one metric over seeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stat {
    #[schemars(with = "schema::NumberOrNull")]
    pub mean: f64,
    #[schemars(with = "schema::NumberOrNull")]
    pub sd: f64,
    pub n: usize,
}

impl Stat {
    pub fn of(xs: &[f64]) -> Stat {
        let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        let n = xs.len();
        if n == 0 {
            return Stat { mean: f64::NAN, sd: 0.0, n: 0 };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 { (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
        Stat { mean, sd, n }
    }
}

/// One (dataset, method, epsilon) over its seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummaryRow {
    pub dataset: String,
    pub method: String,
    #[schemars(with = "schema::EpsilonSchema")]
    pub epsilon: Epsilon,
    #[schemars(with = "schema::PrivacyUnitSchema")]
    pub privacy_unit: PrivacyUnit,
    /// Test utility: accuracy, or ROC-AUC where `utility_metric` says so.
    pub test_accuracy: Stat,
    pub train_accuracy: Stat,
    #[serde(default)]
    pub utility_metric: UtilityMetric,
    /// Largest claimed epsilon over the seeds (they normally agree), RDP and PLD alike.
    #[schemars(with = "schema::EpsilonSchema")]
    pub epsilon_claimed: Epsilon,
    #[schemars(with = "schema::EpsilonSchema")]
    pub epsilon_rdp: Epsilon,
    #[schemars(with = "Option<schema::EpsilonSchema>")]
    pub epsilon_pld: Option<Epsilon>,
    pub delta: f64,
    pub attacks: Vec<AttackSummary>,
    /// The row's baselines over its seeds (absent in older reports and where no cell recorded one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<RowBaseline>,
    /// True when any seed's test accuracy does not clear the majority class (see `baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_chance: Option<bool>,
}

/// One (dataset, method, epsilon)'s baselines over its seeds and the `at chance` test's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowBaseline {
    /// Uniform guessing: 1 / classes, or a ROC-AUC of 0.5 for link prediction.
    pub chance: f64,
    /// Test accuracy of the train split's majority class (link prediction: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub majority_accuracy: Option<Stat>,
    /// Seeds tested, and those whose accuracy does not clear the majority class.
    pub tested_seeds: usize,
    pub at_chance_seeds: usize,
    /// Test nodes per seed (the test's number of trials) and the test's confidence.
    pub test_nodes: usize,
    pub confidence: f64,
    pub test: String,
}

impl RowBaseline {
    /// Gathers the cells' baselines and chance tests; None when no cell recorded a baseline.
    fn of(cells: &[&ReportCell]) -> Option<RowBaseline> {
        let bs: Vec<&Baseline> = cells.iter().filter_map(|c| c.baseline.as_ref()).collect();
        let first = bs.first()?;
        let majority: Vec<f64> = bs.iter().filter_map(|b| b.majority_accuracy).collect();
        let tests: Vec<&ChanceVerdict> = cells.iter().filter_map(|c| c.chance_test.as_ref()).collect();
        Some(RowBaseline {
            chance: first.chance,
            majority_accuracy: (!majority.is_empty()).then(|| Stat::of(&majority)),
            tested_seeds: tests.len(),
            at_chance_seeds: tests.iter().filter(|v| v.at_chance).count(),
            test_nodes: first.test_nodes,
            confidence: CHANCE_CONFIDENCE,
            test: CHANCE_TEST.into(),
        })
    }
}

/// The confidence of every cell's `at chance` test in a report.
pub const CHANCE_CONFIDENCE: f64 = crate::train::baseline::DEFAULT_CHANCE_CONFIDENCE;

/// One attack on one (dataset, method, epsilon) over its seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttackSummary {
    pub attack: String,
    pub kind: String,
    pub game: String,
    pub auc: Stat,
    pub tpr_at_0_1pct_fpr: Stat,
    pub tpr_at_1pct_fpr: Stat,
    pub balanced_accuracy: Stat,
    /// Largest eps_lb over seeds (None where the game does not match the claim).
    pub eps_lb_max: Option<f64>,
    /// Seeds whose eps_lb exceeds the claimed epsilon.
    pub violations: usize,
    /// Over the seeds: violated if any seed is; else inconclusive if any is; else not refuted if
    /// any is; else no claim or not comparable (from the cells' verdicts; empty in reports
    /// before it existed; "holds" in older reports, which showed no power and read as
    /// inconclusive).
    #[serde(default)]
    pub verdict: String,
    /// The attack on the positive control over the seeds: its smallest eps_lb, and caught only
    /// when every seed's control refuted the claim (None: no control ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<record::ControlRecord>,
}

/// The utility a cell's recipe measures (accuracy unless its method predicts links).
fn utility_metric_of(recipe: &serde_json::Value) -> UtilityMetric {
    recipe
        .get("method")
        .and_then(|m| m.as_str())
        .and_then(|m| <crate::methods::Method as clap::ValueEnum>::from_str(m, false).ok())
        .map_or(UtilityMetric::Accuracy, |m| m.utility_metric())
}

/// The verdict of an attack over its seeds, from each seed's verdict.
fn combined_verdict(verdicts: &[Option<&str>]) -> String {
    // "holds" is the word of older reports; kept as recorded so that they still validate, and
    // shown as inconclusive (it showed no power).
    for v in ["violated", "inconclusive", "holds", "not refuted", "no claim", "not comparable"] {
        if verdicts.contains(&Some(v)) {
            return v.to_string();
        }
    }
    String::new()
}

/// The positive control of an attack over its seeds: the smallest bound, caught only if every
/// seed's control was (a seed without a control leaves its power unshown).
fn combined_control(controls: &[Option<&record::ControlRecord>]) -> Option<record::ControlRecord> {
    let first = controls.iter().flatten().next()?;
    let eps_lb = controls.iter().flatten().filter_map(|c| c.eps_lb).min_by(f64::total_cmp);
    let caught = controls.iter().all(|c| c.is_some_and(|c| c.caught));
    Some(record::ControlRecord { method: first.method.clone(), eps_lb, caught })
}

impl Report {
    /// Assembles the report from finished cells (in plan order).
    pub fn build(
        config: &AuditConfig,
        config_sha256: &str,
        datasets: Vec<DatasetInfo>,
        records: &[CellRecord],
        run: RunInfo,
    ) -> Report {
        // Recomputing a claim can cost a PLD composition; seeds of one (dataset, method, eps)
        // share their mechanism, so each distinct (budget, N) is checked once.
        let mut checked: Vec<(String, ClaimCheck)> = vec![];
        let mut claim_of = |r: &CellRecord| -> ClaimCheck {
            let b = &r.result.budget;
            let units = datasets.iter().find(|d| d.label == r.key.dataset).map(|d| match b.privacy_unit {
                PrivacyUnit::Edge => claim::private_units(b.privacy_unit, d.nodes as u64, d.undirected_edges as u64),
                // Class/subclass-DP: U, the number of units the run sampled from.
                PrivacyUnit::Class | PrivacyUnit::Subclass => {
                    b.noise.iter().find(|(k, _)| k == "units").map_or(d.nodes as u64, |(_, v)| *v as u64)
                }
                _ => d.nodes as u64,
            });
            let key = format!("{}|{units:?}", serde_json::to_string(b).unwrap_or_default());
            if let Some((_, c)) = checked.iter().find(|(k, _)| *k == key) {
                return c.clone();
            }
            let mut c = check_claim(b, units);
            // A declared claim's own findings (e.g. batches drawn otherwise than its accounting
            // assumes) come from the same checker as `attack --claim`; the shared rules give the
            // same text, so each flag appears once.
            let declared = r.result.recipe.get("claim").and_then(|c| c.get("flags")).and_then(|f| f.as_array());
            for f in declared.into_iter().flatten().filter_map(|f| f.as_str()) {
                if !c.flags.iter().any(|x| x == f) {
                    c.flags.push(f.to_string());
                }
            }
            checked.push((key, c.clone()));
            c
        };
        let cells: Vec<ReportCell> = records
            .iter()
            .map(|r| ReportCell {
                claim: Some(claim_of(r)),
                dataset: r.key.dataset.clone(),
                method: r.key.method.clone(),
                epsilon: r.key.epsilon,
                seed: r.key.seed,
                fingerprint: r.fingerprint.clone(),
                inputs: r.inputs.clone(),
                privacy_unit: r.result.privacy_unit,
                utility: r.result.utility,
                utility_metric: utility_metric_of(&r.result.recipe),
                budget: r.result.budget.clone(),
                recipe: r.result.recipe.clone(),
                attacks: r.result.attacks.clone(),
                baseline: r.result.baseline,
                chance_test: r.result.baseline.as_ref().and_then(|b| {
                    let measured = r.result.recipe.get("utility_measured").and_then(|v| v.as_bool()) != Some(false);
                    measured.then(|| at_chance(r.result.utility.test, b, CHANCE_CONFIDENCE)).flatten()
                }),
            })
            .collect();
        Report {
            format: FORMAT.into(),
            name: config.name.clone(),
            description: config.description.clone(),
            tool: ToolInfo::current(),
            config_sha256: config_sha256.into(),
            config: config.clone(),
            datasets,
            summary: summarize(&cells),
            cells,
            run,
        }
    }

    /// Reads a report.json; errors name the file (exit code 2).
    pub fn load(path: &Path) -> Result<Report> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::bad_file(path, e))?;
        let report: Report =
            serde_json::from_str(&text).map_err(|e| Error::bad_file(path, format!("not a gnnaudit report: {e}")))?;
        if report.format != FORMAT {
            return Err(Error::bad_file(path, format!("report format '{}' is not '{FORMAT}'", report.format)));
        }
        Ok(report)
    }

    /// Pretty JSON with numeric arrays (ROC points, noise lists) kept on one line each.
    pub fn to_json(&self) -> String {
        let mut s = compact_numeric_arrays(&serde_json::to_string_pretty(self).expect("report serialises"));
        s.push('\n');
        s
    }

    /// The cells of one summary row.
    pub fn cells_of<'a>(&'a self, row: &'a SummaryRow) -> impl Iterator<Item = &'a ReportCell> + 'a {
        self.cells
            .iter()
            .filter(move |c| c.dataset == row.dataset && c.method == row.method && c.epsilon == row.epsilon)
    }
}

/// Groups cells by (dataset, method, epsilon) in first-seen order and averages over seeds.
pub fn summarize(cells: &[ReportCell]) -> Vec<SummaryRow> {
    let mut groups: Vec<(String, String, Epsilon, Vec<&ReportCell>)> = vec![];
    for c in cells {
        match groups.iter_mut().find(|g| g.0 == c.dataset && g.1 == c.method && g.2 == c.epsilon) {
            Some(g) => g.3.push(c),
            None => groups.push((c.dataset.clone(), c.method.clone(), c.epsilon, vec![c])),
        }
    }
    groups
        .into_iter()
        .map(|(dataset, method, epsilon, cs)| {
            let max_eps = |f: &dyn Fn(&ReportCell) -> Epsilon| {
                cs.iter().map(|c| f(c)).max_by(|a, b| a.total_cmp(b)).unwrap_or(Epsilon::Infinite)
            };
            let pld: Vec<Epsilon> = cs.iter().filter_map(|c| c.budget.epsilon_pld).collect();
            let mut attacks: Vec<AttackSummary> = vec![];
            let labels: Vec<String> = {
                let mut l: Vec<String> = vec![];
                for a in cs.iter().flat_map(|c| &c.attacks) {
                    if !l.contains(&a.attack) {
                        l.push(a.attack.clone());
                    }
                }
                l
            };
            for label in labels {
                let runs: Vec<(&ReportCell, &AttackRecord)> = cs
                    .iter()
                    .flat_map(|c| c.attacks.iter().filter(|a| a.attack == label).map(move |a| (*c, a)))
                    .collect();
                let stat =
                    |f: &dyn Fn(&AttackRecord) -> f64| Stat::of(&runs.iter().map(|(_, a)| f(a)).collect::<Vec<_>>());
                let first = runs[0].1;
                attacks.push(AttackSummary {
                    attack: label.clone(),
                    kind: first.kind.clone(),
                    game: first.game.clone(),
                    auc: stat(&|a| a.auc),
                    tpr_at_0_1pct_fpr: stat(&|a| a.tpr_at_fpr.fpr_0_1pct),
                    tpr_at_1pct_fpr: stat(&|a| a.tpr_at_fpr.fpr_1pct),
                    balanced_accuracy: stat(&|a| a.balanced_accuracy),
                    eps_lb_max: runs.iter().filter_map(|(_, a)| a.eps_lb).max_by(f64::total_cmp),
                    violations: runs.iter().filter(|(_, a)| a.violation).count(),
                    verdict: combined_verdict(&runs.iter().map(|(_, a)| a.verdict.as_deref()).collect::<Vec<_>>()),
                    control: combined_control(&runs.iter().map(|(_, a)| a.control.as_ref()).collect::<Vec<_>>()),
                });
            }
            let baseline = RowBaseline::of(&cs);
            SummaryRow {
                at_chance: baseline.as_ref().filter(|b| b.tested_seeds > 0).map(|b| b.at_chance_seeds > 0),
                baseline,
                privacy_unit: cs[0].privacy_unit,
                test_accuracy: Stat::of(&cs.iter().map(|c| c.utility.test).collect::<Vec<_>>()),
                train_accuracy: Stat::of(&cs.iter().map(|c| c.utility.train).collect::<Vec<_>>()),
                utility_metric: cs[0].utility_metric,
                epsilon_claimed: max_eps(&|c| c.budget.epsilon_claimed),
                epsilon_rdp: max_eps(&|c| c.budget.epsilon_rdp),
                epsilon_pld: pld.into_iter().max_by(|a, b| a.total_cmp(b)),
                delta: cs.iter().map(|c| c.budget.delta).fold(0.0, f64::max),
                dataset,
                method,
                epsilon,
                attacks,
            }
        })
        .collect()
}

/// Rewrites pretty-printed JSON so that every array holding only numbers (or arrays of
/// numbers) sits on one line: `[[0.0,0.0],[0.01,0.3]]` instead of one number per line. Strings
/// are left untouched.
pub fn compact_numeric_arrays(pretty: &str) -> String {
    let b = pretty.as_bytes();
    let mut out = String::with_capacity(pretty.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i);
                out.push_str(&pretty[i..end]);
                i = end;
            }
            b'[' => {
                let close = matching_bracket(b, i);
                let inner = &pretty[i..close];
                if inner.bytes().all(|c| !matches!(c, b'"' | b'{')) {
                    out.extend(inner.chars().filter(|c| !c.is_whitespace()));
                    i = close;
                } else {
                    out.push('[');
                    i += 1;
                }
            }
            _ => {
                let next = pretty[i..].find(['"', '[']).map_or(b.len(), |p| i + p);
                out.push_str(&pretty[i..next]);
                i = next;
            }
        }
    }
    out
}

/// Index just past the string literal that starts at `start` (a quote).
fn string_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Index just past the ']' matching the '[' at `start`, skipping strings.
fn matching_bracket(b: &[u8], start: usize) -> usize {
    let (mut depth, mut i) = (0usize, start);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_end(b, i);
                continue;
            }
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// Writes report.json, report.md and report.html into `dir`, each atomically.
pub fn write_all(report: &Report, dir: &Path) -> Result<()> {
    write_atomic(&dir.join("report.json"), report.to_json().as_bytes())?;
    write_atomic(&dir.join("report.md"), markdown::render(report).as_bytes())?;
    write_atomic(&dir.join("report.html"), html::render(report).as_bytes())?;
    Ok(())
}

/// Formats a number for tables: fixed decimals, "-" for NaN.
pub(crate) fn fmt_num(x: f64, decimals: usize) -> String {
    if x.is_nan() {
        "-".into()
    } else if x.is_infinite() {
        if x > 0.0 { "∞" } else { "-∞" }.into()
    } else {
        format!("{x:.decimals$}")
    }
}

/// Epsilon for humans: "∞" or a short number.
pub(crate) fn fmt_eps(e: Epsilon) -> String {
    match e {
        Epsilon::Infinite => "∞".into(),
        Epsilon::Finite(x) if x == x.round() && x.abs() < 1e6 => format!("{x:.0}"),
        Epsilon::Finite(x) if x >= 0.01 => format!("{}", (x * 1000.0).round() / 1000.0),
        Epsilon::Finite(x) => format!("{x:.2e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_arrays_are_compacted_and_strings_kept() {
        let v =
            serde_json::json!({"roc": [[0.0, 0.0], [0.5, 1.0]], "names": ["a [1, 2]", "b"], "cells": [{"x": [1, 2]}]});
        let s = compact_numeric_arrays(&serde_json::to_string_pretty(&v).unwrap());
        assert!(s.contains(r#""roc": [[0.0,0.0],[0.5,1.0]]"#), "{s}");
        assert!(s.contains(r#""a [1, 2]""#), "{s}");
        assert!(s.contains(r#""x": [1,2]"#), "{s}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }
}
