//! `gnnaudit-bench <what>`: speed, memory and accuracy measurements against the reference
//! libraries' anchors (benches/anchors/: each figure with its source, machine and protocol; the
//! figures compared against are in `bench/reference.toml`). Not tests and not part of the shipped
//! `gnnaudit` binary: the figures go into reports. Runs that time a whole process start the
//! `gnnaudit` binary built beside this one (or `GNNAUDIT_BIN`).
mod audit_cost;
mod floor;
mod jobs;
mod method_cells;
mod reference;
mod scale;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use gnnaudit::error::{Error, Result};
use gnnaudit::privacy::accountant::rdp::{default_orders, rdp_curve};
use gnnaudit::privacy::accountant::{calibrate, pld_epsilon, rdp_epsilon, Event};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Parser)]
#[command(name = "gnnaudit-bench", about = "Benchmarks of gnnaudit against the reference anchors")]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Accountant speed vs Opacus / dp_accounting (benches/anchors/accountant_timing.md).
    Accountant(AccountantBench),
    /// MLP, DP-MLP, GAP, ProGAP, GraphSAGE, SAGE-EDP and DP-GNN cells of benches/anchors/reference_progap.md: accuracy,
    /// whole-process wall time and peak RSS next to the reference's.
    Methods(crate::method_cells::BenchMethodsArgs),
    /// Audit throughput of a 20-cell audit at --jobs 1 against --jobs N (one machine).
    Jobs(crate::jobs::BenchJobsArgs),
    /// Wall time and peak RSS of GAP-EDP, ProGAP-EDP and the canary-edge audit against the edges of a CSBM.
    Scale(crate::scale::BenchScaleArgs),
    /// Audit throughput: LiRA with 64 shadows and the canary-edge audit with 40 repeats on cora, per-model cost.
    Audit(crate::audit_cost::BenchAuditArgs),
}

#[derive(Debug, Args)]
struct AccountantBench {
    /// Timed runs per measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

fn main() {
    gnnaudit::libtorch::passive_openmp_wait();
    gnnaudit::fatal::install_panic_hook();
    let matches = Cli::command().try_get_matches().unwrap_or_else(|e| gnnaudit::fatal::clap_exit(e));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| gnnaudit::fatal::clap_exit(e));
    gnnaudit::cli::init_logging(0);
    gnnaudit::libtorch::silence_warnings();
    let result = match cli.command {
        BenchCommand::Accountant(a) => accountant(a.runs.max(1)),
        BenchCommand::Methods(a) => crate::method_cells::run(a),
        BenchCommand::Jobs(a) => crate::jobs::run(a),
        BenchCommand::Scale(a) => crate::scale::run(a),
        BenchCommand::Audit(a) => crate::audit_cost::run(a),
    };
    gnnaudit::fatal::exit_with(result)
}

/// The `gnnaudit` binary the whole-process measurements run: `GNNAUDIT_BIN`, else the one built
/// beside this binary (`cargo build --workspace` puts both in the same folder).
pub fn gnnaudit_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("GNNAUDIT_BIN") {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe()?;
    let beside = me.with_file_name(format!("gnnaudit{}", std::env::consts::EXE_SUFFIX));
    gnnaudit::ensure!(
        beside.is_file(),
        Error::invalid(
            "GNNAUDIT_BIN",
            format!(
                "no gnnaudit binary beside {} (build it with `cargo build --workspace`, or set GNNAUDIT_BIN to its path)",
                me.display()
            )
        )
    );
    Ok(beside)
}

/// Median wall time (ms) of `runs` calls after one warm-up, and the last value.
fn time<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut v = f()?;
    let mut ms = vec![];
    for _ in 0..runs {
        let t = Instant::now();
        v = f()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(|a, b| a.total_cmp(b));
    Ok((ms[ms.len() / 2], v))
}

fn accountant(runs: usize) -> Result<()> {
    let anchor = crate::reference::load()?.accountant;
    let (q, t, delta) = (0.01, 10_000u64, 1e-5);
    let sgm = |s: f64| Event::poisson_gaussian(q, s).times(t);
    println!("accountant benchmark: median of {runs} runs after a warm-up (dev profile); anchors: {}", anchor.source);
    println!("{:<58} {:>10} {:>10} {:>8}  value", "measurement", "ours ms", "anchor ms", "speedup");
    let row = |what: &str, ours: f64, anchor: f64, value: String| {
        println!("{what:<58} {ours:>10.2} {anchor:>10.1} {:>7.1}x  {value}", anchor / ours);
    };
    let (ms, s) = time(runs, || calibrate(1.0, delta, sgm))?;
    row(
        "(a) calibrate DP-SGD q=0.01 T=1e4 eps=1 d=1e-5 vs Opacus",
        ms,
        anchor.calibrate_opacus_ms,
        format!("sigma = {s:.6} (exact RDP root; Opacus' coarse search: 4.140625)"),
    );
    let (ms, e) = time(runs, || pld_epsilon(&sgm(1.0), delta))?;
    row(
        "(b) PLD eps q=0.01 sigma=1 T=1e4 d=1e-5 vs dp_accounting",
        ms,
        anchor.pld_dp_accounting_ms,
        format!("eps = {e:.6} (dp_accounting h=1e-4: 6.187745; h=1e-5: 6.187713)"),
    );
    let (ms, r) = time(runs, || rdp_epsilon(&sgm(1.0), delta))?;
    row(
        "(c) RDP eps (branch and bound on orders) vs Opacus eps",
        ms,
        anchor.rdp_epsilon_opacus_ms,
        format!("eps = {:.6} at order {:?} (Opacus: 6.712738 at 4.1)", r.epsilon, r.order),
    );
    let orders = default_orders();
    let (ms, c) = time(runs, || Ok(rdp_curve(&sgm(1.0), &orders)))?;
    row(
        "(c') RDP curve, all 151 orders, vs Opacus compute_rdp",
        ms,
        anchor.rdp_curve_opacus_ms,
        format!("rdp[alpha=1.1] = {:.10} (Opacus: 0.9241470983)", c[0]),
    );
    Ok(())
}
