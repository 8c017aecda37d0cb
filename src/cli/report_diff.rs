//! `gnnaudit report diff OLD NEW`: what changed between two audits. Exit 0 when the new report
//! leaks no more than the old one beyond the tolerances, 1 when it does, 2 for unreadable input.
//! `gnnaudit report schema` prints report.json's JSON Schema.
use crate::error::{Error, Result};
use crate::report::check::validate_report;
use crate::report::diff::{diff, Tolerances};
use crate::report::Report;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ReportCommand {
    /// Print what changed between two report.json files (leakage, utility, claims, verdicts);
    /// exit 1 when the new one leaks more than the tolerances allow.
    Diff(DiffArgs),
    /// Print the JSON Schema of report.json (published as docs/report.schema.json).
    Schema,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The baseline report.json (or its folder).
    pub old: PathBuf,
    /// The report.json to judge against it (or its folder).
    pub new: PathBuf,
    /// Largest allowed rise of an attack's mean AUC (AUC in [0, 1]).
    #[arg(long, default_value_t = 0.02)]
    pub max_auc_increase: f64,
    /// Largest allowed rise of an attack's mean TPR at 1% FPR (in [0, 1]).
    #[arg(long, default_value_t = 0.02)]
    pub max_tpr_increase: f64,
    /// Largest allowed rise of an attack's largest ε_lb over seeds.
    #[arg(long, default_value_t = 0.1)]
    pub max_eps_lb_increase: f64,
    /// Rows and attacks of OLD missing from NEW are not regressions (by default they are: a
    /// trimmed grid must not pass a leakage gate).
    #[arg(long)]
    pub allow_dropped: bool,
}

pub fn run(args: ReportArgs) -> Result<()> {
    match args.command {
        ReportCommand::Diff(a) => run_diff(a),
        ReportCommand::Schema => {
            print!("{}", crate::report::schema::report_schema_json());
            Ok(())
        }
    }
}

fn load(path: &Path) -> Result<Report> {
    let path = if path.is_dir() { path.join("report.json") } else { path.to_path_buf() };
    let report = Report::load(&path)?;
    validate_report(&report, &path)?;
    Ok(report)
}

fn run_diff(a: DiffArgs) -> Result<()> {
    let tol = Tolerances {
        auc: a.max_auc_increase,
        tpr_at_1pct_fpr: a.max_tpr_increase,
        eps_lb: a.max_eps_lb_increase,
        allow_dropped: a.allow_dropped,
    };
    tol.validate()?;
    let (old, new) = (load(&a.old)?, load(&a.new)?);
    let d = diff(&old, &new, &tol);
    crate::ensure!(
        d.rows_compared > 0,
        Error::bad_file(
            &a.new,
            format!(
                "shares no (dataset, method, ε) row with {}: nothing to compare (are they audits of the same config?)",
                a.old.display()
            )
        )
    );
    print!("{d}");
    let regressions = d.regressions();
    println!(
        "{} change(s) over {} (dataset, method, ε) rows and {} attacks compared; {} regression(s)",
        d.changes.len(),
        d.rows_compared,
        d.attacks_compared,
        regressions
    );
    if regressions > 0 {
        return Err(Error::Other(format!(
            "{} leaks more than {} ({regressions} regression(s), marked '!')",
            a.new.display(),
            a.old.display()
        )));
    }
    Ok(())
}
