//! `gnnaudit bench <what>`: speed measurements against the reference libraries' anchors
//! (benches/anchors/: each figure with its source, machine and protocol). Not tests: the figures go into reports.
use crate::error::Result;
use crate::privacy::accountant::rdp::{default_orders, rdp_curve};
use crate::privacy::accountant::{calibrate, pld_epsilon, rdp_epsilon, Event};
use clap::{Args, Subcommand};
use std::time::Instant;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Accountant speed vs Opacus / dp_accounting (benches/anchors/accountant_timing.md).
    Accountant(AccountantBench),
    /// MLP, DP-MLP, GAP, ProGAP, GraphSAGE, SAGE-EDP and DP-GNN cells of benches/anchors/reference_progap.md: accuracy,
    /// whole-process wall time and peak RSS next to the reference's.
    Methods(super::bench_methods::BenchMethodsArgs),
    /// Audit throughput of a 20-cell audit at --jobs 1 against --jobs N (one machine).
    Jobs(super::bench_jobs::BenchJobsArgs),
    /// Wall time and peak RSS of GAP-EDP, ProGAP-EDP and the canary-edge audit against the edges of a CSBM.
    Scale(super::bench_scale::BenchScaleArgs),
    /// Audit throughput: LiRA with 64 shadows and the canary-edge audit with 40 repeats on cora, per-model cost.
    Audit(super::bench_audit::BenchAuditArgs),
}

#[derive(Debug, Args)]
pub struct AccountantBench {
    /// Timed runs per measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
}

pub fn run(args: BenchArgs) -> Result<()> {
    match args.command {
        BenchCommand::Accountant(a) => accountant(a.runs.max(1)),
        BenchCommand::Methods(a) => super::bench_methods::run(a),
        BenchCommand::Jobs(a) => super::bench_jobs::run(a),
        BenchCommand::Scale(a) => super::bench_scale::run(a),
        BenchCommand::Audit(a) => super::bench_audit::run(a),
    }
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
    let (q, t, delta) = (0.01, 10_000u64, 1e-5);
    let sgm = |s: f64| Event::poisson_gaussian(q, s).times(t);
    println!("accountant benchmark: median of {runs} runs after a warm-up (dev profile)");
    println!("{:<58} {:>10} {:>10} {:>8}  value", "measurement", "ours ms", "anchor ms", "speedup");
    let row = |what: &str, ours: f64, anchor: f64, value: String| {
        println!("{what:<58} {ours:>10.2} {anchor:>10.1} {:>7.1}x  {value}", anchor / ours);
    };
    let (ms, s) = time(runs, || calibrate(1.0, delta, sgm))?;
    row(
        "(a) calibrate DP-SGD q=0.01 T=1e4 eps=1 d=1e-5 vs Opacus",
        ms,
        62.5,
        format!("sigma = {s:.6} (exact RDP root; Opacus' coarse search: 4.140625)"),
    );
    let (ms, e) = time(runs, || pld_epsilon(&sgm(1.0), delta))?;
    row(
        "(b) PLD eps q=0.01 sigma=1 T=1e4 d=1e-5 vs dp_accounting",
        ms,
        403.0,
        format!("eps = {e:.6} (dp_accounting h=1e-4: 6.187745; h=1e-5: 6.187713)"),
    );
    let (ms, r) = time(runs, || rdp_epsilon(&sgm(1.0), delta))?;
    row(
        "(c) RDP eps (branch and bound on orders) vs Opacus eps",
        ms,
        13.5,
        format!("eps = {:.6} at order {:?} (Opacus: 6.712738 at 4.1)", r.epsilon, r.order),
    );
    let orders = default_orders();
    let (ms, c) = time(runs, || Ok(rdp_curve(&sgm(1.0), &orders)))?;
    row(
        "(c') RDP curve, all 151 orders, vs Opacus compute_rdp",
        ms,
        13.3,
        format!("rdp[alpha=1.1] = {:.10} (Opacus: 0.9241470983)", c[0]),
    );
    Ok(())
}
