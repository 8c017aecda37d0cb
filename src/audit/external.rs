//! External targets in audit configs (was `external::audit`): a `[target]` table (and optional
//! `[claim]`) in place of `[[methods]]`. The config becomes one pseudo-method,
//! `config::EXTERNAL_METHOD`, whose parameters carry the two tables, so planning, the cell store
//! (resume), reports and `check` treat its cells like any other; the real runner hands such cells
//! to [`run_cell`] instead of training.
use super::attack::{attack_inputs, record};
use super::cell::CellSpec;
use super::progress::{Progress, Stage};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::external::run::Deployment;
use crate::external::{DeclaredClaim, TargetSpec};
use crate::privacy::accountant::Budget;
use crate::report::record::{BudgetRecord, CellMeasurement, CellSeconds};
use crate::train::Accuracy;
use std::time::Instant;

pub use super::source::from_method;

/// Checks `[target]` and `[claim]` before any work (errors name `target.*` / `claim.*`).
pub fn validate(target: &TargetSpec, claim: Option<&DeclaredClaim>) -> Result<()> {
    target.validate()?;
    if let Some(c) = claim {
        // Field checks only; the delta check needs the dataset's unit count and runs per cell.
        c.check(usize::MAX / 2)?;
    }
    Ok(())
}

/// The budget a report shows for a declared claim: the accountant's recomputation, with the
/// stated epsilon as the target. Also the budget of an in-process Python audit's report.
pub fn budget_of(claim: Option<&crate::external::ClaimReport>) -> Budget {
    match claim {
        None => Budget::non_private(),
        Some(r) => {
            let mut b = r.budget.clone().unwrap_or_else(|| Budget {
                privacy_unit: r.unit,
                target_epsilon: None,
                delta: r.audited_delta(),
                epsilon_rdp: r.recomputed_epsilon,
                rdp_order: None,
                epsilon_pld: None,
                noise: vec![],
                components: vec![],
                pld_fallback: None,
                event: None,
            });
            b.target_epsilon = r.stated_epsilon;
            b
        }
    }
}

/// One audit cell against an external target: every configured attack, no training.
pub fn run_cell(cell: &CellSpec, raw: &Dataset, progress: &Progress) -> Result<CellMeasurement> {
    let clock = Instant::now();
    let (target, claim) = from_method(cell.method)?;
    let d = Deployment::open(&target, claim.as_ref(), raw.clone())?;
    if let (Some(m), Some(path)) = (&d.members, target.members()) {
        progress.println(&format!(
            "{}: {} members read from {} ({} other nodes)",
            cell.key,
            m.len(),
            path.display(),
            d.graph.num_nodes - m.len()
        ));
    }
    if let Some(w) =
        cell.attacks.iter().filter_map(|a| gnnaudit_attacks::AttackKind::parse(&a.kind)).find_map(|k| d.edge_warning(k))
    {
        progress.println(&format!("warning: {w}"));
    }
    progress.done(Stage::Training);
    let load_seconds = clock.elapsed().as_secs_f64();
    let clock = Instant::now();
    let mut records = vec![];
    let mut utility = None;
    let mut baseline_split = None;
    for (i, a) in cell.attacks.iter().enumerate() {
        let (kind, knowledge, mut params) = attack_inputs(&a.kind, &a.knowledge, &a.params)
            .map_err(|(k, m)| Error::invalid(format!("attack {}.{k}", a.label()), m))?;
        // Bonferroni over the cell's seeds, as for trained targets (the summary takes the maximum).
        let confidence = params.confidence.unwrap_or(0.95);
        params.confidence = Some(1.0 - (1.0 - confidence) / cell.runs.max(1) as f64);
        progress.set_message(Stage::Attack, format!("{} on {}", a.label(), cell.key));
        let seed = cell.key.seed.wrapping_mul(1_000_003).wrapping_add(i as u64 + 1);
        let (result, split) = d.attack(kind, &knowledge, &params, seed)?;
        if utility.is_none() {
            utility = d.accuracy(&split)?;
            baseline_split = utility.is_some().then_some(split);
        }
        records.push(record(a, &result));
        progress.done(Stage::Attack);
    }
    // Canary audits never query the deployed model: its utility is then unknown (reported as 0,
    // with `utility_measured = false` in the recipe).
    let measured = utility.is_some();
    let baseline = baseline_split
        .map(|s| crate::train::baseline::Baseline::of_labels(&d.graph.labels, d.graph.num_classes, &s.train, &s.test));
    let (train, val, test) = utility.unwrap_or((0.0, 0.0, 0.0));
    Ok(CellMeasurement {
        privacy_unit: d.claim_report.as_ref().map_or(crate::privacy::accountant::PrivacyUnit::None, |r| r.unit),
        utility: Accuracy { train, val, test },
        budget: BudgetRecord::from(&budget_of(d.claim_report.as_ref())),
        recipe: serde_json::json!({
            "target": target,
            "claim": d.claim_report,
            "members": d.members.as_ref().map(Vec::len),
            "command_runs": d.command_runs(),
            "command_runs_reused": d.command_runs_reused(),
            "edge_probe": d.edge_probe(),
            "utility_measured": measured,
        }),
        attacks: records,
        baseline,
        seconds: CellSeconds { train: load_seconds, attacks: clock.elapsed().as_secs_f64() },
    })
}
