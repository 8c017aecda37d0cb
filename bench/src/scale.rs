//! `gnnaudit-bench scale`: wall time and peak RSS of GAP-EDP, ProGAP-EDP and the canary-edge
//! audit on CSBM graphs of growing size (the cost must grow linearly in the
//! edges). Every (size, workload) is its own child process (`gnnaudit train --json` or
//! `gnnaudit attack --json`), so that peaks do not accumulate: wall time is the parent's clock
//! around the child, peak RSS the child's `ru_maxrss` from `wait4`. Both include generating the
//! graph, as a user's run would.
//!
//! The mean degree is fixed and the node count grows with the edges, so a linear method is linear
//! in both. The fit is least squares on log(cost) against log(edges) (the exponent; fixed costs
//! such as start-up pull it below 1 at small sizes) and on RSS against edges (the marginal bytes
//! per edge, which the fixed libtorch footprint does not distort).
use gnnaudit::data::memory::{available_bytes, show_bytes};
use gnnaudit::data::Csbm;
use gnnaudit::error::{Error, Result};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The default ladder of undirected edge counts, cut at `--max-edges`.
const LADDER: [u64; 9] =
    [100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000, 50_000_000];

#[derive(Debug, clap::Args)]
pub struct BenchScaleArgs {
    /// Undirected edge counts to measure, e.g. 1e5,1e6,5e7 [the ladder 1e5, 2e5, 5e5, 1e6, 2e6,
    /// 5e6, 1e7, 2e7, 5e7 up to --max-edges].
    #[arg(long, value_delimiter = ',', value_parser = parse_count)]
    pub sizes: Vec<u64>,
    /// Largest size of the default ladder (5e7 is 10^6 nodes at mean degree 100).
    #[arg(long, default_value = "1e6", value_parser = parse_count)]
    pub max_edges: u64,
    /// Mean degree of the CSBM; nodes = 2 edges / degree.
    #[arg(long, default_value_t = 100.0)]
    pub degree: f64,
    #[arg(long, default_value_t = 32)]
    pub features: usize,
    #[arg(long, default_value_t = 5)]
    pub classes: usize,
    /// Training epochs (per stage for ProGAP) of every model.
    #[arg(long, default_value_t = 20)]
    pub epochs: usize,
    /// Target epsilon of GAP-EDP and ProGAP-EDP (and of the audited GAP-EDP).
    #[arg(long, default_value_t = 4.0)]
    pub epsilon: f64,
    /// Canary edges of the canary-edge audit.
    #[arg(long, default_value_t = 200)]
    pub canaries: usize,
    /// Torch threads per child.
    #[arg(long, default_value_t = 1)]
    pub threads: i32,
}

/// Accepts `1000000`, `1e6` or `2.5e7` (an integer count).
fn parse_count(s: &str) -> std::result::Result<u64, String> {
    let x: f64 = s.trim().parse().map_err(|e| format!("'{s}': {e}"))?;
    if !(x.is_finite() && x >= 1.0 && x.fract() == 0.0 && x <= 1e15) {
        return Err(format!("'{s}' is not a whole number of edges in 1..=1e15"));
    }
    Ok(x as u64)
}

/// What one child measured.
struct Measure {
    seconds: f64,
    rss_bytes: f64,
    json: serde_json::Value,
}

/// Runs `gnnaudit ARGS` as a child; its wall time and peak RSS (wait4's ru_maxrss, in KiB on Linux).
fn measure(args: &[String]) -> Result<Measure> {
    let exe = crate::gnnaudit_exe()?;
    let t = Instant::now();
    let mut child = Command::new(exe).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let mut err_pipe = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let mut out = String::new();
    child.stdout.take().expect("piped").read_to_string(&mut out)?;
    let mut status = 0i32;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child, which is
    // reaped here (std's Child is not waited on afterwards).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = t.elapsed().as_secs_f64();
    let err = err_reader.join().unwrap_or_default();
    gnnaudit::ensure!(
        r == pid,
        Error::Other(format!("wait4 on child {pid} failed: {}", std::io::Error::last_os_error()))
    );
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let tail: String =
            err.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        return Err(Error::Other(format!("`gnnaudit {}` failed (status {status}):\n{tail}", args.join(" "))));
    }
    let json = serde_json::from_str(&out)
        .map_err(|e| Error::Other(format!("`gnnaudit {}` printed no JSON object: {e}", args.join(" "))))?;
    Ok(Measure { seconds, rss_bytes: usage.ru_maxrss as f64 * 1024.0, json })
}

/// Least-squares slope and intercept of y on x.
fn fit_line(x: &[f64], y: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    let slope = sxy / sxx;
    (slope, my - slope * mx)
}

/// The three workloads, by name, and the child arguments for a dataset spec.
fn workloads(a: &BenchScaleArgs, spec: &str) -> Vec<(&'static str, Vec<String>)> {
    let common = |v: &[&str]| -> Vec<String> {
        let mut out: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        out.extend(
            [
                "--dataset",
                spec,
                "--epsilon",
                &a.epsilon.to_string(),
                "--epochs",
                &a.epochs.to_string(),
                "--threads",
                &a.threads.to_string(),
                "--json",
            ]
            .map(String::from),
        );
        out
    };
    vec![
        ("gap-edp", common(&["train", "--method", "gap-edp", "--no-pld"])),
        ("progap-edp", common(&["train", "--method", "progap-edp", "--no-pld"])),
        (
            "canary-edge",
            common(&[
                "attack",
                "--attack",
                "canary-edge",
                "--method",
                "gap-edp",
                "--canaries",
                &a.canaries.to_string(),
            ]),
        ),
    ]
}

pub fn run(a: BenchScaleArgs) -> Result<()> {
    let sizes: Vec<u64> = if a.sizes.is_empty() {
        LADDER.iter().copied().filter(|&e| e <= a.max_edges).collect()
    } else {
        a.sizes.clone()
    };
    gnnaudit::ensure!(
        sizes.len() >= 2,
        Error::invalid("sizes", format!("{} size(s): fitting an exponent needs at least two", sizes.len()))
    );
    gnnaudit::ensure!(
        a.degree.is_finite() && a.degree > 0.0,
        Error::invalid("degree", format!("{} must be > 0", a.degree))
    );
    gnnaudit::ensure!(a.epochs >= 1, Error::invalid("epochs", "must be at least 1"));
    gnnaudit::ensure!(
        (1..=gnnaudit::cli::train::MAX_THREADS).contains(&a.threads),
        Error::invalid("threads", format!("{} is outside 1..={}", a.threads, gnnaudit::cli::train::MAX_THREADS))
    );
    // Every generator is checked before the first child runs (bad sizes fail here, exit 2).
    let mut graphs = Vec::new();
    for &e in &sizes {
        let nodes = (2.0 * e as f64 / a.degree).round() as usize;
        let csbm = Csbm { nodes, classes: a.classes, mean_degree: a.degree, features: a.features, ..Csbm::default() };
        csbm.validate().map_err(|err| Error::invalid("sizes", format!("{e} edges ({nodes} nodes): {err}")))?;
        gnnaudit::ensure!(
            4 * a.canaries <= nodes,
            Error::invalid(
                "canaries",
                format!("{} canaries need at least {} nodes; {e} edges give {nodes}", a.canaries, 4 * a.canaries)
            )
        );
        graphs.push((e, csbm));
    }
    println!(
        "bench scale: CSBM, mean degree {}, {} features, {} classes, homophily {}; {} epochs (per stage), eps {}, \
         {} torch thread(s) per child, canary audit of GAP-EDP with {} canaries; one child process per cell",
        a.degree,
        a.features,
        a.classes,
        Csbm::default().homophily,
        a.epochs,
        a.epsilon,
        a.threads,
        a.canaries
    );
    println!(
        "{:>10} {:>9} {:>10} | {:<11} {:>8} {:>9} {:>8} {:>7}",
        "edges", "nodes", "gen. est.", "workload", "wall s", "peak MB", "B/edge", "result"
    );
    let names: Vec<&str> = workloads(&a, "").iter().map(|w| w.0).collect();
    // Per workload: (edges, seconds, rss bytes) of the sizes measured.
    let mut points: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); names.len()];
    for (e, csbm) in &graphs {
        let spec = format!(
            "synthetic:nodes={},mean_degree={},features={},classes={},seed=0",
            csbm.nodes, csbm.mean_degree, csbm.features, csbm.classes
        );
        // A size whose RSS, extrapolated linearly from the last one measured, would not fit is skipped.
        let projected =
            points.iter().filter_map(|p| p.last()).map(|&(pe, _, rss)| rss * *e as f64 / pe).fold(0.0, f64::max);
        if let Some(avail) = available_bytes() {
            if projected > avail {
                println!(
                    "{e:>10} skipped: projected peak {} (linear in the edges) exceeds the {} available",
                    show_bytes(projected),
                    show_bytes(avail)
                );
                continue;
            }
        }
        let mut edges = *e as f64;
        for (k, (name, args)) in workloads(&a, &spec).into_iter().enumerate() {
            let m = measure(&args)?;
            let result = match name {
                "canary-edge" => format!("eps_lb {:.2}", m.json["eps_lb"].as_f64().unwrap_or(f64::NAN)),
                _ => {
                    if let Some(d) = m.json["directed_edges"].as_f64() {
                        edges = d / 2.0;
                    }
                    format!("acc {:.3}", m.json["test_accuracy"]["mean"].as_f64().unwrap_or(f64::NAN))
                }
            };
            println!(
                "{:>10} {:>9} {:>10} | {:<11} {:>8.2} {:>9.0} {:>8.1} {:>7}",
                edges as u64,
                csbm.nodes,
                show_bytes(csbm.memory_estimate()),
                name,
                m.seconds,
                m.rss_bytes / 1048576.0,
                m.rss_bytes / edges,
                result
            );
            points[k].push((edges, m.seconds, m.rss_bytes));
        }
    }
    println!("fit over the sizes measured (least squares; edges = undirected edges of the trained graph):");
    for (name, p) in names.iter().zip(&points) {
        if p.len() < 2 {
            println!("{name:<11} too few sizes measured to fit");
            continue;
        }
        let le: Vec<f64> = p.iter().map(|q| q.0.ln()).collect();
        let (time_exp, _) = fit_line(&le, &p.iter().map(|q| q.1.ln()).collect::<Vec<_>>());
        let (rss_exp, _) = fit_line(&le, &p.iter().map(|q| q.2.ln()).collect::<Vec<_>>());
        let x: Vec<f64> = p.iter().map(|q| q.0).collect();
        let (per_edge, fixed) = fit_line(&x, &p.iter().map(|q| q.2).collect::<Vec<_>>());
        let (sec_per_edge, sec_fixed) = fit_line(&x, &p.iter().map(|q| q.1).collect::<Vec<_>>());
        let last = p.last().unwrap();
        println!(
            "{name:<11} time exponent {time_exp:.2} (wall = {sec_fixed:.2} s + {:.3} us/edge), peak RSS exponent \
             {rss_exp:.2} (RSS = {:.0} MB + {per_edge:.1} B/edge), RSS/edge at {} edges {:.1} B",
            sec_per_edge * 1e6,
            fixed / 1048576.0,
            last.0 as u64,
            last.2 / last.0
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_fit_recovers_an_exact_power_law() {
        let x: Vec<f64> = [1e5f64, 1e6, 1e7].iter().map(|v| v.ln()).collect();
        let y: Vec<f64> = [1e5f64, 1e6, 1e7].iter().map(|v| (3.0 * v.powf(0.8)).ln()).collect();
        let (slope, icpt) = fit_line(&x, &y);
        assert!((slope - 0.8).abs() < 1e-12 && (icpt - 3f64.ln()).abs() < 1e-9);
        assert_eq!(parse_count("5e7"), Ok(50_000_000));
        assert!(parse_count("2.5").is_err() && parse_count("0").is_err());
    }
}
