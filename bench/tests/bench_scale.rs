//! `gnnaudit-bench scale` on tiny sizes, and the CSBM generator at a medium size: its edge count,
//! class balance and homophily, and a peak memory within its own up-front estimate (no second
//! copy of the edges). The tests share one lock: the memory test reads this process's peak RSS.
use gnnaudit::data::Csbm;
use std::process::Command;
use std::sync::Mutex;

static ALONE: Mutex<()> = Mutex::new(());

/// The benchmark binary; its whole-process runs start the `gnnaudit` built beside it, which
/// `cargo build --workspace` (and `cargo nextest run --workspace`) builds.
fn bench() -> std::path::PathBuf {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_gnnaudit-bench"));
    let gnnaudit = exe.with_file_name(format!("gnnaudit{}", std::env::consts::EXE_SUFFIX));
    assert!(
        gnnaudit.is_file() || std::env::var_os("GNNAUDIT_BIN").is_some(),
        "{} is missing: build the workspace (cargo build --workspace) or set GNNAUDIT_BIN",
        gnnaudit.display()
    );
    exe
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The numbers in `line` right before `unit` (e.g. "113.8 B/edge" -> 113.8).
fn number_before(line: &str, unit: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(unit) {
        let head = rest[..i].trim_end();
        let num = head.rsplit(' ').next().unwrap_or("");
        out.push(num.parse::<f64>().unwrap_or(f64::NAN));
        rest = &rest[i + unit.len()..];
    }
    out
}

#[test]
fn bench_scale_fits_exponents_with_finite_bytes_per_edge() {
    let _g = lock();
    let out = Command::new(bench())
        .args(["scale", "--sizes", "3000,6000", "--degree", "10", "--features", "16"])
        .args(["--epochs", "2", "--canaries", "20"])
        .output()
        .expect("run gnnaudit");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    // Two sizes x three workloads, each with finite, positive bytes per edge.
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(" | ")).skip(1).collect();
    assert_eq!(rows.len(), 6, "{text}");
    for r in &rows {
        let per_edge: f64 = r.split_whitespace().nth(8).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        assert!(per_edge.is_finite() && per_edge > 0.0, "{r}");
    }
    for w in ["gap-edp", "progap-edp", "canary-edge"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(w) && l.contains("time exponent"))
            .unwrap_or_else(|| panic!("no exponent line for {w}:\n{text}"));
        let exp: f64 = line.split("time exponent ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!(exp.is_finite(), "{line}");
        let bytes = number_before(line, " B");
        assert!(bytes.len() == 2 && bytes.iter().all(|b| b.is_finite()) && bytes[1] > 0.0, "{line}");
    }
    // A single size cannot be fitted: refused as bad input.
    let one = Command::new(bench()).args(["scale", "--sizes", "3000"]).output().expect("run gnnaudit");
    assert_eq!(one.status.code(), Some(2), "{}", String::from_utf8_lossy(&one.stderr));
}

#[test]
fn csbm_at_medium_size_hits_its_edge_count_balance_and_homophily() {
    let _g = lock();
    let c = Csbm { nodes: 20_000, mean_degree: 20.0, classes: 7, ..Csbm::default() };
    let ds = c.generate().unwrap();
    let g = &ds.graph;
    let target = c.nodes as f64 * c.mean_degree / 2.0;
    let undirected = g.num_directed_edges() as f64 / 2.0;
    // The edge count is a sum of binomials with sd ~ sqrt(2e5) = 450: 1% is over 4 sd.
    assert!((undirected / target - 1.0).abs() < 0.01, "{undirected} undirected edges for a target of {target}");
    assert!(g.is_symmetric() && g.num_self_loops() == 0);
    let counts = ds.class_counts();
    assert_eq!(counts.len(), 7);
    assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{counts:?}");
    let within = g.edges().filter(|&(u, v)| ds.labels[u] == ds.labels[v]).count() as f64;
    let h = within / g.num_directed_edges() as f64;
    assert!((h - c.homophily).abs() < 0.01, "edge homophily {h}, asked {}", c.homophily);
}

fn status_kib(key: &str) -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() * 1024.0
}

#[test]
fn csbm_peak_memory_stays_within_its_estimate_without_an_edge_list() {
    let _g = lock();
    // 20,000 nodes at mean degree 100: 10^6 undirected edges, a 16 MB CSR. An edge list beside
    // it (16 bytes per directed edge, as the generator once held, twice over while sorting) would
    // add 32-64 MB and break the bound.
    let c = Csbm { nodes: 20_000, mean_degree: 100.0, features: 32, ..Csbm::default() };
    let estimate = c.memory_estimate();
    let graph_bytes = c.nodes as f64 * c.mean_degree * 8.0;
    assert!(estimate < 2.0 * graph_bytes, "estimate {estimate} is more than twice the CSR's {graph_bytes}");
    // Reset this process's peak RSS to its current RSS (Linux >= 4.0), then generate.
    if std::fs::write("/proc/self/clear_refs", "5").is_err() {
        eprintln!("SKIPPED: /proc/self/clear_refs is not writable here; the peak cannot be measured");
        return;
    }
    let before = status_kib("VmRSS:");
    let ds = c.generate().unwrap();
    let peak = status_kib("VmHWM:") - before;
    assert!(
        peak <= 1.3 * estimate + 8.0 * 1048576.0,
        "generation peaked {:.1} MB above the start, estimate {:.1} MB",
        peak / 1048576.0,
        estimate / 1048576.0
    );
    assert!(ds.graph.num_directed_edges() > 1_900_000);
}
