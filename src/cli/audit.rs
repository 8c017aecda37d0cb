//! `gnnaudit audit <config> [--out DIR]`: train every configured target, attack it, and write
//! report.json, report.md and report.html; `gnnaudit render <report.json>` redraws the last two.
use crate::audit::cell::plan;
use crate::audit::config::AuditConfig;
use crate::audit::runner::{run_audit, OutputOptions};
use crate::error::Result;
use crate::report::{self, Report};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// Audit config (TOML), e.g. configs/quick.toml.
    pub config: PathBuf,
    /// Report folder (default: `<output>/<name>-<timestamp>`). A folder that already holds
    /// cells of this config is resumed.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Start a new report folder even when an unfinished run of this config exists.
    #[arg(long)]
    pub fresh: bool,
    /// Folder of named datasets (default: GNNAUDIT_DATA, then ./datasets).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Validate the config, print the planned cells and stop.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: AuditArgs) -> Result<()> {
    let config = AuditConfig::load(&args.config, args.data_dir.as_deref())?;
    if args.dry_run {
        let cells = plan(&config);
        println!("config {} is valid: {} cells", args.config.display(), cells.len());
        for c in &cells {
            let attacks: Vec<String> = c.attacks.iter().map(|a| a.label()).collect();
            println!("  {}  attacks: [{}]", c.key, attacks.join(", "));
        }
        return Ok(());
    }
    let mut runner = crate::audit::execute::RealRunner::new(args.data_dir.clone());
    let opts = OutputOptions { out: args.out, fresh: args.fresh };
    let summary = run_audit(&config, &args.config, &mut runner, &opts)?;
    println!(
        "audit '{}' done in {:.0} s: {} cells computed, {} reused",
        config.name,
        summary.report.run.wall_seconds,
        summary.computed.len(),
        summary.reused
    );
    let violations: usize = summary.report.summary.iter().flat_map(|s| &s.attacks).map(|a| a.violations).sum();
    if violations > 0 {
        println!("WARNING: {violations} attack result(s) exceed the claimed epsilon; see the report");
    }
    println!("report: {}", summary.dir.join("report.html").display());
    println!("        {}", summary.dir.join("report.md").display());
    println!("        {}", summary.dir.join("report.json").display());
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// A report.json (or its folder); report.md and report.html are rewritten beside it.
    pub report: PathBuf,
}

pub fn render(args: RenderArgs) -> Result<()> {
    let path = if args.report.is_dir() { args.report.join("report.json") } else { args.report.clone() };
    let report = Report::load(&path)?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).map_or(PathBuf::from("."), |p| p.to_path_buf());
    report::write_all(&report, &dir)?;
    println!("wrote {} and {}", dir.join("report.md").display(), dir.join("report.html").display());
    Ok(())
}
