//! What changed between two audits (`gnnaudit report diff OLD NEW`): utility, claims, attack
//! leakage and verdicts per (dataset, method, ε). The new report regresses when an attack leaks
//! more than the old one by more than the tolerances, a claim that held is now violated, or a row
//! or attack of the old report is missing from the new one (unless dropping is allowed: a gate
//! must not pass because the audited grid was trimmed): the leakage regression test in one command.
use super::{fmt_eps, fmt_num, AttackSummary, Report, SummaryRow};
use crate::error::{Error, Result};

/// How much more leakage the new report may show before the diff fails. Leakage metrics are
/// means over seeds (AUC and TPR in [0, 1]); ε_lb is the largest over seeds, as reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    pub auc: f64,
    pub tpr_at_1pct_fpr: f64,
    pub eps_lb: f64,
    /// Rows and attacks of the old report missing from the new one are not regressions.
    pub allow_dropped: bool,
}

impl Tolerances {
    /// Refuses negative or non-finite tolerances, naming the flag.
    pub fn validate(&self) -> Result<()> {
        for (flag, v) in [
            ("--max-auc-increase", self.auc),
            ("--max-tpr-increase", self.tpr_at_1pct_fpr),
            ("--max-eps-lb-increase", self.eps_lb),
        ] {
            crate::ensure!(v.is_finite() && v >= 0.0, Error::invalid(flag, format!("{v} is not a finite number >= 0")));
        }
        Ok(())
    }
}

/// One line of the diff; `regression` lines make the diff fail.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// "dataset / method / ε=…" and, for attack lines, " / attack".
    pub place: String,
    pub what: String,
    pub regression: bool,
}

/// Every change between two reports, in the new report's row order (rows only in the old one last).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diff {
    pub changes: Vec<Change>,
    pub rows_compared: usize,
    pub attacks_compared: usize,
}

impl Diff {
    pub fn regressions(&self) -> usize {
        self.changes.iter().filter(|c| c.regression).count()
    }
}

fn place(r: &SummaryRow) -> String {
    format!("{} / {} / ε={}", r.dataset, r.method, fmt_eps(r.epsilon))
}

fn same_row(a: &SummaryRow, b: &SummaryRow) -> bool {
    a.dataset == b.dataset && a.method == b.method && a.epsilon == b.epsilon
}

/// "0.512 -> 0.734 (+0.222)".
fn moved(old: f64, new: f64) -> String {
    format!("{} -> {} ({:+.3})", fmt_num(old, 3), fmt_num(new, 3), new - old)
}

/// Compares `new` against `old`.
pub fn diff(old: &Report, new: &Report, tol: &Tolerances) -> Diff {
    let mut d = Diff::default();
    for n in &new.summary {
        let Some(o) = old.summary.iter().find(|o| same_row(o, n)) else {
            d.changes.push(Change {
                place: place(n),
                what: "new row (not in the old report)".into(),
                regression: false,
            });
            continue;
        };
        d.rows_compared += 1;
        compare_row(o, n, tol, &mut d);
    }
    for o in old.summary.iter().filter(|o| !new.summary.iter().any(|n| same_row(o, n))) {
        d.changes.push(Change {
            place: place(o),
            what: "row dropped (not in the new report)".into(),
            regression: !tol.allow_dropped,
        });
    }
    d
}

fn compare_row(o: &SummaryRow, n: &SummaryRow, tol: &Tolerances, d: &mut Diff) {
    let at = place(n);
    let mut note = |what: String, regression: bool| d.changes.push(Change { place: at.clone(), what, regression });
    if o.test_accuracy.mean != n.test_accuracy.mean && !(o.test_accuracy.mean.is_nan() && n.test_accuracy.mean.is_nan())
    {
        note(format!("test accuracy {}", moved(o.test_accuracy.mean, n.test_accuracy.mean)), false);
    }
    if o.privacy_unit != n.privacy_unit {
        note(format!("privacy unit {:?} -> {:?}", o.privacy_unit, n.privacy_unit), false);
    }
    if o.epsilon_claimed != n.epsilon_claimed || o.delta != n.delta {
        let looser = n.epsilon_claimed.total_cmp(&o.epsilon_claimed).is_gt();
        note(
            format!(
                "claimed ε {} -> {} (δ {:e} -> {:e}){}",
                fmt_eps(o.epsilon_claimed),
                fmt_eps(n.epsilon_claimed),
                o.delta,
                n.delta,
                if looser { ": a weaker guarantee" } else { "" }
            ),
            false,
        );
    }
    for na in &n.attacks {
        let Some(oa) = o.attacks.iter().find(|a| a.attack == na.attack) else {
            d.changes.push(Change {
                place: format!("{at} / {}", na.attack),
                what: "new attack".into(),
                regression: false,
            });
            continue;
        };
        d.attacks_compared += 1;
        compare_attack(&format!("{at} / {}", na.attack), oa, na, tol, d);
    }
    for oa in o.attacks.iter().filter(|oa| !n.attacks.iter().any(|a| a.attack == oa.attack)) {
        d.changes.push(Change {
            place: format!("{at} / {}", oa.attack),
            what: "attack dropped".into(),
            regression: !tol.allow_dropped,
        });
    }
}

fn compare_attack(at: &str, o: &AttackSummary, n: &AttackSummary, tol: &Tolerances, d: &mut Diff) {
    let mut note = |what: String, regression: bool| d.changes.push(Change { place: at.into(), what, regression });
    for (name, old, new, allowed) in [
        ("AUC", o.auc.mean, n.auc.mean, tol.auc),
        ("TPR@1%FPR", o.tpr_at_1pct_fpr.mean, n.tpr_at_1pct_fpr.mean, tol.tpr_at_1pct_fpr),
    ] {
        if old != new && !(old.is_nan() && new.is_nan()) {
            let regression = new - old > allowed;
            let why = if regression { format!(": leaks more (tolerance {allowed})") } else { String::new() };
            note(format!("{name} {}{why}", moved(old, new)), regression);
        }
    }
    match (o.eps_lb_max, n.eps_lb_max) {
        (Some(old), Some(new)) if old != new => {
            let regression = new - old > tol.eps_lb;
            let why = if regression { format!(": leaks more (tolerance {})", tol.eps_lb) } else { String::new() };
            note(format!("ε_lb {}{why}", moved(old, new)), regression);
        }
        (None, Some(new)) => note(format!("ε_lb - -> {} (the game now matches the claim)", fmt_num(new, 3)), false),
        (Some(old), None) => {
            note(format!("ε_lb {} -> - (the game no longer matches the claim)", fmt_num(old, 3)), false)
        }
        _ => {}
    }
    if o.verdict != n.verdict {
        let regression = n.verdict == "violated";
        note(format!("verdict '{}' -> '{}'", o.verdict, n.verdict), regression);
    } else if n.violations > o.violations {
        note(format!("violating seeds {} -> {}", o.violations, n.violations), true);
    }
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.changes {
            writeln!(f, "{} {}: {}", if c.regression { "!" } else { " " }, c.place, c.what)?;
        }
        Ok(())
    }
}
