//! The leakage check: a report passes when every attack stays within its allowed AUC and TPR at
//! low FPR, no empirical lower bound exceeds the claimed epsilon, and utility stays above its
//! floor. Used as a leakage regression test in CI (`gnnaudit check`).
//!
//! Limits come from a TOML file: global values, then `[[overrides]]` in file order, each applying
//! the limits it sets to the (dataset, method, epsilon, attack) it selects; a later match wins.
use super::record::{AttackRecord, Epsilon};
use super::{fmt_eps, Report, Stat};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Largest allowed attack AUC.
    #[serde(default)]
    pub max_auc: Option<f64>,
    /// Largest allowed TPR at 1% FPR.
    #[serde(default)]
    pub max_tpr_at_1pct_fpr: Option<f64>,
    /// Largest allowed TPR at 0.1% FPR.
    #[serde(default)]
    pub max_tpr_at_0_1pct_fpr: Option<f64>,
    /// Smallest allowed test accuracy (utility floor).
    #[serde(default)]
    pub min_test_accuracy: Option<f64>,
    /// Fail when an attack's eps_lb exceeds the claimed epsilon (default true).
    #[serde(default = "yes")]
    pub fail_on_violation: bool,
    /// Fail on every attack whose game matches the claim but whose power is not shown: its
    /// verdict is `inconclusive` (no positive control refuted the claim), not `not refuted`.
    #[serde(default)]
    pub require_power: bool,
    /// Fail on every row whose test accuracy does not clear the majority class (`at_chance` in
    /// report.json): a model that learned nothing makes any epsilon beside it meaningless.
    #[serde(default)]
    pub forbid_at_chance: bool,
    /// How seeds are combined: "mean" (default) or "worst" (every seed must pass).
    #[serde(default)]
    pub aggregate: Aggregate,
    #[serde(default)]
    pub overrides: Vec<Override>,
}

fn yes() -> bool {
    true
}

/// The limits in force somewhere; an absent one is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Limits {
    pub max_auc: Option<f64>,
    pub max_tpr_at_1pct_fpr: Option<f64>,
    pub max_tpr_at_0_1pct_fpr: Option<f64>,
    pub min_test_accuracy: Option<f64>,
}

impl Limits {
    fn apply(&mut self, o: &Limits) {
        self.max_auc = o.max_auc.or(self.max_auc);
        self.max_tpr_at_1pct_fpr = o.max_tpr_at_1pct_fpr.or(self.max_tpr_at_1pct_fpr);
        self.max_tpr_at_0_1pct_fpr = o.max_tpr_at_0_1pct_fpr.or(self.max_tpr_at_0_1pct_fpr);
        self.min_test_accuracy = o.min_test_accuracy.or(self.min_test_accuracy);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregate {
    #[default]
    Mean,
    Worst,
}

/// Limits for the cells an override selects; an absent selector matches everything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Override {
    #[serde(default)]
    pub dataset: Option<String>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub epsilon: Option<Epsilon>,
    /// Attack label; an override with an attack does not change the utility floor.
    #[serde(default)]
    pub attack: Option<String>,
    /// Largest allowed attack AUC.
    #[serde(default)]
    pub max_auc: Option<f64>,
    /// Largest allowed TPR at 1% FPR.
    #[serde(default)]
    pub max_tpr_at_1pct_fpr: Option<f64>,
    /// Largest allowed TPR at 0.1% FPR.
    #[serde(default)]
    pub max_tpr_at_0_1pct_fpr: Option<f64>,
    /// Smallest allowed test accuracy (utility floor).
    #[serde(default)]
    pub min_test_accuracy: Option<f64>,
}

impl Override {
    fn limits(&self) -> Limits {
        Limits {
            max_auc: self.max_auc,
            max_tpr_at_1pct_fpr: self.max_tpr_at_1pct_fpr,
            max_tpr_at_0_1pct_fpr: self.max_tpr_at_0_1pct_fpr,
            min_test_accuracy: self.min_test_accuracy,
        }
    }
    fn matches(&self, dataset: &str, method: &str, eps: Epsilon, attack: Option<&str>) -> bool {
        self.dataset.as_deref().is_none_or(|d| d == dataset)
            && self.method.as_deref().is_none_or(|m| m == method)
            && self.epsilon.is_none_or(|e| e == eps)
            && match (&self.attack, attack) {
                (None, _) => true,
                (Some(a), Some(b)) => a == b,
                (Some(_), None) => false,
            }
    }
}

impl Thresholds {
    /// The global limits.
    pub fn limits(&self) -> Limits {
        Limits {
            max_auc: self.max_auc,
            max_tpr_at_1pct_fpr: self.max_tpr_at_1pct_fpr,
            max_tpr_at_0_1pct_fpr: self.max_tpr_at_0_1pct_fpr,
            min_test_accuracy: self.min_test_accuracy,
        }
    }
    /// Reads and validates a thresholds file (errors name the file and field; exit code 2).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::bad_file(path, e))?;
        let t: Thresholds = toml::from_str(&text).map_err(|e| Error::bad_file(path, e.to_string().trim_end()))?;
        t.validate().map_err(|e| Error::bad_file(path, e))?;
        Ok(t)
    }

    pub fn validate(&self) -> Result<()> {
        let check = |field: String, l: &Limits| -> Result<()> {
            for (k, v) in [
                ("max_auc", l.max_auc),
                ("max_tpr_at_1pct_fpr", l.max_tpr_at_1pct_fpr),
                ("max_tpr_at_0_1pct_fpr", l.max_tpr_at_0_1pct_fpr),
                ("min_test_accuracy", l.min_test_accuracy),
            ] {
                if let Some(v) = v {
                    if !(0.0..=1.0).contains(&v) {
                        return Err(Error::invalid(format!("{field}{k}"), format!("{v} is outside [0, 1]")));
                    }
                }
            }
            Ok(())
        };
        check(String::new(), &self.limits())?;
        for (i, o) in self.overrides.iter().enumerate() {
            check(format!("overrides[{i}]."), &o.limits())?;
            if let Some(Epsilon::Finite(e)) = o.epsilon {
                if e.is_nan() || e <= 0.0 {
                    return Err(Error::invalid(
                        format!("overrides[{i}].epsilon"),
                        format!("{e} must be > 0 or \"inf\""),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The limits in force for a (dataset, method, epsilon[, attack]).
    pub fn limits_for(&self, dataset: &str, method: &str, eps: Epsilon, attack: Option<&str>) -> Limits {
        let mut l = self.limits();
        for o in &self.overrides {
            if o.matches(dataset, method, eps, attack) {
                if attack.is_none() && o.attack.is_some() {
                    continue;
                }
                l.apply(&o.limits());
            }
        }
        l
    }
}

/// One broken limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub dataset: String,
    pub method: String,
    pub epsilon: Epsilon,
    pub attack: Option<String>,
    pub problem: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} / {} / ε={}", self.dataset, self.method, fmt_eps(self.epsilon))?;
        if let Some(a) = &self.attack {
            write!(f, " / {a}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

/// What a check looked at.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    pub findings: Vec<Finding>,
    pub rows_checked: usize,
    pub attacks_checked: usize,
    /// Overrides (by index) that matched nothing in this report: likely typos.
    pub unused_overrides: Vec<usize>,
    /// Limits that could not be checked, and why (e.g. a utility floor on a row whose utility
    /// was never measured).
    pub notes: Vec<String>,
}

impl CheckOutcome {
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Refuses a report that cannot be checked honestly: no cells (nothing was measured), a summary
/// that its cells do not recompute to (edited or truncated), or a value outside its domain.
/// `check` reads the summary, so without this a tampered report would pass.
pub fn validate_report(report: &Report, path: &Path) -> Result<()> {
    let bad = |msg: String| Err(Error::bad_file(path, msg));
    if report.cells.is_empty() {
        return bad("the report has no cells: nothing was measured, so there is nothing to check".into());
    }
    let unit = |x: f64| (0.0..=1.0).contains(&x);
    for c in &report.cells {
        let at = format!("cell {}", c.key());
        for (name, v) in [("train", c.utility.train), ("val", c.utility.val), ("test", c.utility.test)] {
            if !(unit(v) || v.is_nan()) {
                return bad(format!("{at}: {name} accuracy {v} is outside [0, 1]"));
            }
        }
        for a in &c.attacks {
            let at = format!("{at} / {}", a.attack);
            let values = [
                ("auc", a.auc),
                ("tpr_at_fpr.0.001", a.tpr_at_fpr.fpr_0_1pct),
                ("tpr_at_fpr.0.01", a.tpr_at_fpr.fpr_1pct),
                ("balanced_accuracy", a.balanced_accuracy),
            ];
            for (name, v) in values {
                if !unit(v) {
                    return bad(format!("{at}: {name} {v} is outside [0, 1]"));
                }
            }
            if let Some(lb) = a.eps_lb {
                if lb.is_nan() || lb < 0.0 {
                    return bad(format!("{at}: eps_lb {lb} is negative or not a number"));
                }
            }
            if a.roc.iter().any(|&(f, t)| !unit(f) || !unit(t)) {
                return bad(format!("{at}: a ROC point is outside [0, 1]"));
            }
        }
    }
    let recomputed = super::summarize(&report.cells);
    if serde_json::to_value(&recomputed)? != serde_json::to_value(&report.summary)? {
        return bad("the summary does not match what its cells recompute to (edited or truncated report)".into());
    }
    Ok(())
}

/// What a violated record measured, in its own figures: an attack's eps_lb against the cell's
/// claim; a mechanism audit's eps_lb against the mechanism's own claim (its `eps_lb` field stays
/// empty, see `report::tightness`); a sensitivity replay's observed change over the declared
/// sensitivity (not an epsilon at all).
pub fn violation_figures(r: &AttackRecord, cell_claim: Epsilon) -> String {
    let num = |k: &str| r.details.get(k).and_then(|v| v.as_f64());
    let text = |k: &str| r.details.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let f3 = |x: Option<f64>| x.map_or("?".into(), |x| format!("{x:.3}"));
    match (r.eps_lb, r.kind.as_str()) {
        (Some(lb), _) => {
            format!("empirical ε_lb {lb:.3} exceeds the claimed ε {} (privacy claim violated)", fmt_eps(cell_claim))
        }
        (None, super::tightness::KIND) => format!(
            "mechanism audit certifies ε_lb {} ({} bound, {} trials per input) above the mechanism's claimed ε {} \
             (tightness {}; privacy claim violated)",
            f3(num("eps_lb")),
            text("bound"),
            r.details.get("trials").and_then(|v| v.as_u64()).map_or("?".into(), |t| t.to_string()),
            f3(num("claimed_epsilon")),
            f3(num("tightness")),
        ),
        (None, crate::replay::KIND) => format!(
            "sensitivity replay: observed change / declared sensitivity = {} (worst-case units {}, random units {}) \
             exceeds 1 (declared sensitivity violated)",
            f3(num("max_ratio")),
            f3(num("max_ratio_worst_case")),
            f3(num("max_ratio_random")),
        ),
        (None, kind) => format!(
            "{kind} record reports a violation without an ε_lb (verdict {}) against the claimed ε {}",
            r.verdict.as_deref().unwrap_or("?"),
            fmt_eps(cell_claim)
        ),
    }
}

/// Cells whose claim the accountant cannot reproduce (`crate::report::claim`), one finding per
/// (cell, flag): a violated or holding verdict means little against a claim that is itself
/// wrong, so `gnnaudit check` fails on them unless the user accepts flagged claims explicitly.
pub fn flagged_claims(report: &Report) -> Vec<Finding> {
    let mut out = vec![];
    for c in &report.cells {
        for flag in c.claim.iter().flat_map(|claim| &claim.flags) {
            out.push(Finding {
                dataset: c.dataset.clone(),
                method: c.method.clone(),
                epsilon: c.epsilon,
                attack: None,
                problem: format!("seed {}: claim flagged: {flag}", c.seed),
            });
        }
    }
    out
}

/// Checks every (dataset, method, epsilon) row and every attack of a report.
pub fn check(report: &Report, t: &Thresholds) -> CheckOutcome {
    let mut findings = vec![];
    let mut notes = vec![];
    let (mut rows, mut attacks) = (0, 0);
    let mut used = vec![false; t.overrides.len()];
    let agg_desc = |s: &Stat| match t.aggregate {
        Aggregate::Mean if s.n > 1 => format!(" (mean of {} seeds)", s.n),
        Aggregate::Worst if s.n > 1 => format!(" (worst of {} seeds)", s.n),
        _ => String::new(),
    };
    for row in &report.summary {
        rows += 1;
        let (d, m, e) = (row.dataset.as_str(), row.method.as_str(), row.epsilon);
        for (i, o) in t.overrides.iter().enumerate() {
            let attack_match = o.attack.as_ref().is_none_or(|a| row.attacks.iter().any(|x| &x.attack == a));
            if o.matches(d, m, e, None) || (attack_match && o.matches(d, m, e, o.attack.as_deref())) {
                used[i] = true;
            }
        }
        let cells: Vec<_> = report.cells_of(row).collect();
        let finding = |attack: Option<&str>, problem: String| Finding {
            dataset: d.into(),
            method: m.into(),
            epsilon: e,
            attack: attack.map(String::from),
            problem,
        };
        let limits = t.limits_for(d, m, e, None);
        let measured: Vec<_> = cells.iter().filter(|c| c.utility_measured()).collect();
        if t.forbid_at_chance {
            match (&row.baseline, row.at_chance) {
                (Some(b), Some(true)) => findings.push(finding(
                    None,
                    format!(
                        "at chance: test accuracy {} does not clear the majority class {} in {} of {} seeds \
                         ({:.0}% {}, {} test nodes) (forbid_at_chance = true)",
                        super::table::pct(row.test_accuracy),
                        b.majority_accuracy.map_or("-".into(), super::table::pct),
                        b.at_chance_seeds,
                        b.tested_seeds,
                        100.0 * b.confidence,
                        b.test,
                        b.test_nodes
                    ),
                )),
                (Some(_), Some(false)) => {}
                _ if measured.is_empty() => notes.push(format!(
                    "{d} / {m} / eps={e}: forbid_at_chance not checked: the target's utility was not measured"
                )),
                (None, _) => notes.push(format!(
                    "{d} / {m} / eps={e}: forbid_at_chance not checked: the report records no baseline for this row \
                     (written before baselines were recorded; rerun the audit)"
                )),
                (Some(_), None) => {}
            }
        }
        if let (Some(floor), true) = (limits.min_test_accuracy, measured.is_empty()) {
            notes.push(format!(
                "{d} / {m} / eps={e}: min_test_accuracy {floor:.3} not checked: the target's utility was not measured \
                 (its attacks never queried it; add an attack that does, e.g. mia-metric)"
            ));
        } else if let Some(floor) = limits.min_test_accuracy {
            let acc = match t.aggregate {
                Aggregate::Mean => measured.iter().map(|c| c.utility.test).sum::<f64>() / measured.len() as f64,
                Aggregate::Worst => measured.iter().map(|c| c.utility.test).fold(f64::INFINITY, f64::min),
            };
            if acc.is_nan() || floor.is_nan() || acc < floor {
                findings.push(finding(
                    None,
                    format!("test accuracy {:.3} < min_test_accuracy {floor:.3}{}", acc, agg_desc(&row.test_accuracy)),
                ));
            }
        }
        for a in &row.attacks {
            attacks += 1;
            let l = t.limits_for(d, m, e, Some(&a.attack));
            let runs: Vec<_> = cells.iter().flat_map(|c| c.attacks.iter().filter(|x| x.attack == a.attack)).collect();
            let value = |mean: f64, per_run: &dyn Fn(&AttackRecord) -> f64| match t.aggregate {
                Aggregate::Mean => mean,
                Aggregate::Worst => runs.iter().map(|r| per_run(r)).fold(f64::NEG_INFINITY, f64::max),
            };
            let mut over = |name: &str, limit: Option<f64>, v: f64, what: &str| {
                if let Some(limit) = limit {
                    if v.is_nan() || limit.is_nan() || v > limit {
                        findings.push(finding(
                            Some(&a.attack),
                            format!("{what} {v:.3} > {name} {limit:.3}{}", agg_desc(&a.auc)),
                        ));
                    }
                }
            };
            over("max_auc", l.max_auc, value(a.auc.mean, &|r| r.auc), "AUC");
            over(
                "max_tpr_at_1pct_fpr",
                l.max_tpr_at_1pct_fpr,
                value(a.tpr_at_1pct_fpr.mean, &|r| r.tpr_at_fpr.fpr_1pct),
                "TPR at 1% FPR",
            );
            over(
                "max_tpr_at_0_1pct_fpr",
                l.max_tpr_at_0_1pct_fpr,
                value(a.tpr_at_0_1pct_fpr.mean, &|r| r.tpr_at_fpr.fpr_0_1pct),
                "TPR at 0.1% FPR",
            );
            if t.require_power && a.verdict == "inconclusive" {
                findings.push(finding(
                    Some(&a.attack),
                    format!(
                        "inconclusive: {} (require_power = true wants a positive control above the claim)",
                        match &a.control {
                            Some(c) => format!(
                                "the same audit does not refute the claim on the control {} (ε_lb {})",
                                c.method,
                                c.eps_lb.map_or("-".into(), |x| format!("{x:.3}"))
                            ),
                            None => "no positive control ran".into(),
                        }
                    ),
                ));
            }
            if t.fail_on_violation {
                for c in &cells {
                    for r in c.attacks.iter().filter(|x| x.attack == a.attack) {
                        let claimed = c.budget.epsilon_claimed.as_f64();
                        let exceeds = r.eps_lb.is_some_and(|lb| lb > claimed);
                        if r.violation || exceeds {
                            findings.push(finding(
                                Some(&a.attack),
                                format!("seed {}: {}", c.seed, violation_figures(r, c.budget.epsilon_claimed)),
                            ));
                        }
                    }
                }
            }
        }
    }
    let unused_overrides = used.iter().enumerate().filter(|(_, u)| !**u).map(|(i, _)| i).collect();
    CheckOutcome { findings, rows_checked: rows, attacks_checked: attacks, unused_overrides, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_overrides_win_and_attack_overrides_leave_the_floor_alone() {
        let t: Thresholds = toml::from_str(
            r#"
            max_auc = 0.6
            min_test_accuracy = 0.5
            [[overrides]]
            epsilon = "inf"
            max_auc = 0.9
            [[overrides]]
            method = "mlp"
            epsilon = inf
            attack = "mia"
            max_auc = 0.95
            min_test_accuracy = 0.1
            "#,
        )
        .unwrap();
        t.validate().unwrap();
        let l = t.limits_for("cora", "gap-edp", Epsilon::Finite(1.0), Some("mia"));
        assert_eq!(l.max_auc, Some(0.6));
        let l = t.limits_for("cora", "gap-edp", Epsilon::Infinite, Some("mia"));
        assert_eq!(l.max_auc, Some(0.9));
        let l = t.limits_for("cora", "mlp", Epsilon::Infinite, Some("mia"));
        assert_eq!(l.max_auc, Some(0.95));
        assert_eq!(t.limits_for("cora", "mlp", Epsilon::Infinite, None).min_test_accuracy, Some(0.5));
        assert!(toml::from_str::<Thresholds>("max_aux = 0.5").is_err());
        let bad: Thresholds = toml::from_str("max_auc = 1.5").unwrap();
        assert!(bad.validate().is_err());
    }
}
