//! `gnnaudit check <report.json> --thresholds <file> [--accept-flagged-claims]`: the CI leakage
//! check. Exit 0 when every claim is reproduced and every
//! limit holds, 1 with a list of what broke, 2 for unreadable input.
use crate::error::{Error, Result};
use crate::report::check::{check, flagged_claims, validate_report, Thresholds};
use crate::report::Report;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A report.json written by `gnnaudit audit` (or its folder).
    pub report: PathBuf,
    /// Thresholds (TOML): global max_auc, max_tpr_at_1pct_fpr, min_test_accuracy, overrides.
    #[arg(long)]
    pub thresholds: PathBuf,
    /// Check the attacks even against claims the accountant cannot reproduce (flagged in the
    /// report's `claim`); without it a flagged claim fails the check.
    #[arg(long)]
    pub accept_flagged_claims: bool,
}

pub fn run(args: CheckArgs) -> Result<()> {
    let path = if args.report.is_dir() { args.report.join("report.json") } else { args.report.clone() };
    let report = Report::load(&path)?;
    validate_report(&report, &path)?;
    let thresholds = Thresholds::load(&args.thresholds)?;
    let outcome = check(&report, &thresholds);
    for i in &outcome.unused_overrides {
        eprintln!("warning: {}: overrides[{i}] matches nothing in this report", args.thresholds.display());
    }
    for n in &outcome.notes {
        println!("note: {n}");
    }
    let mut claims = flagged_claims(&report);
    if args.accept_flagged_claims {
        for f in &claims {
            eprintln!("warning (accepted with --accept-flagged-claims): {f}");
        }
        claims.clear();
    }
    if outcome.passed() && claims.is_empty() {
        println!(
            "check passed: {} (dataset, method, ε) rows and {} attack results within {}",
            outcome.rows_checked,
            outcome.attacks_checked,
            args.thresholds.display()
        );
        return Ok(());
    }
    println!(
        "check failed: {} problem(s), {} flagged claim(s) in {}",
        outcome.findings.len(),
        claims.len(),
        path.display()
    );
    for f in &outcome.findings {
        println!("  - {f}");
    }
    if !claims.is_empty() {
        println!(
            "flagged claims (the accountant cannot reproduce them; --accept-flagged-claims checks the attacks anyway):"
        );
        for f in &claims {
            println!("  - {f}");
        }
    }
    Err(Error::Other(format!(
        "leakage check failed with {} problem(s) and {} flagged claim(s)",
        outcome.findings.len(),
        claims.len()
    )))
}
