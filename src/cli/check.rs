//! `gnnaudit check <report.json> --thresholds <file>`: the CI leakage check. Exit 0 when every
//! limit holds, 1 with a list of what broke, 2 for unreadable input.
use crate::audit::check::{check, validate_report, Thresholds};
use crate::error::{Error, Result};
use crate::report::Report;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A report.json written by `gnnaudit audit` (or its folder).
    pub report: PathBuf,
    /// Thresholds (TOML): global max_auc, max_tpr_at_1pct_fpr, min_test_accuracy, overrides.
    #[arg(long)]
    pub thresholds: PathBuf,
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
    if outcome.passed() {
        println!(
            "check passed: {} (dataset, method, ε) rows and {} attack results within {}",
            outcome.rows_checked,
            outcome.attacks_checked,
            args.thresholds.display()
        );
        return Ok(());
    }
    println!("check failed: {} problem(s) in {}", outcome.findings.len(), path.display());
    for f in &outcome.findings {
        println!("  - {f}");
    }
    Err(Error::Other(format!("leakage check failed with {} problem(s)", outcome.findings.len())))
}
