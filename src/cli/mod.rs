//! Command-line interface: one file per subcommand, each with its clap arguments and `run`.
pub mod datasets;
pub mod knob_args;

use crate::error::Result;
use clap::{Parser, Subcommand};

pub mod account;
pub mod attack;
pub mod audit;
pub mod certify;
pub mod check;
pub mod doctor;
pub mod mechanism;
pub mod methods;
pub mod replay;
pub mod report_diff;
pub mod train;

#[derive(Debug, Parser)]
#[command(name = "gnnaudit", version, about = "Train private GNNs, attack them, and audit the claimed epsilon")]
pub struct Cli {
    /// More log output (-v info, -vv debug).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: boxing the larger flag sets would only add indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// What libtorch can do here: version, threads, CUDA devices, checks on --device.
    Doctor(doctor::DoctorArgs),
    /// Train every target of an audit config, attack it, and write report.json/.md/.html.
    Audit(audit::AuditArgs),
    /// A lower bound on epsilon from any attack's scores (positives vs negatives), with its verdict.
    Certify(certify::CertifyArgs),
    /// Fail (exit 1) when a report exceeds the leakage thresholds; for CI.
    Check(check::CheckArgs),
    /// Redraw report.md and report.html from a report.json.
    Render(audit::RenderArgs),
    /// List the available datasets or describe one (nodes, edges, degrees, classes).
    Datasets(datasets::DatasetsArgs),
    /// Train a method on a dataset and report accuracy, time and the privacy budget.
    Train(train::TrainArgs),
    /// Privacy accounting: a method's budget on a dataset, an event family's epsilon at a noise
    /// level, or the noise for a target epsilon.
    Account(account::AccountArgs),
    /// The training methods (`methods NAME`: one method's knobs and their defaults).
    Methods(methods::MethodsArgs),
    /// Train a target and run one privacy attack; reports AUC, TPR at low FPR and eps_lb.
    Attack(attack::AttackArgs),
    /// Mechanism-level audits: a mechanism on its worst-case pair, eps_lb vs the accountant's claim.
    Mechanism(mechanism::MechanismArgs),
    /// Grey-box sensitivity replay: each pre-noise release on neighbouring graphs against the
    /// sensitivity the method's noise assumes (max_ratio > 1 = violated).
    Replay(replay::ReplayArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions(CompletionsArgs),
    /// Work with finished reports: `report diff OLD NEW` shows what changed and fails on more leakage.
    Report(report_diff::ReportArgs),
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

pub fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("GNNAUDIT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal: logs redirected to a file or a CI log stay plain.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Doctor(a) => doctor::run(a),
        Command::Audit(args) => audit::run(args),
        Command::Certify(args) => certify::run(args),
        Command::Check(args) => check::run(args),
        Command::Render(args) => audit::render(args),
        Command::Datasets(args) => datasets::run(args),
        Command::Train(a) => train::run(a),
        Command::Account(a) => account::run(a),
        Command::Methods(a) => methods::run(a),
        Command::Attack(a) => attack::run(a),
        Command::Mechanism(a) => mechanism::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Report(a) => report_diff::run(a),
        Command::Completions(a) => {
            use clap::CommandFactory;
            // Generated into memory, then printed: a failed write is then print!'s, which
            // crate::fatal turns into a clean exit (clap_complete's own writer panics).
            let mut script = Vec::new();
            clap_complete::generate(a.shell, &mut Cli::command(), "gnnaudit", &mut script);
            print!("{}", String::from_utf8_lossy(&script));
            Ok(())
        }
    }
}
