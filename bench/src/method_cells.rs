//! `gnnaudit-bench methods`: runs the cells of the reference anchors table
//! (benches/anchors/reference_progap.md) for MLP, DP-MLP, GAP, ProGAP, GraphSAGE, SAGE-EDP and
//! DP-GNN, one child process per (cell, seed) so that wall time and peak RSS are whole-process figures like the anchors', and
//! prints accuracy, time and memory next to the reference with the ratios, and each cell's
//! in-process CPU time against its compute floor ([`crate::floor`]): sampled, in one pass and
//! in the run's order.
use crate::floor::{children_cpu_seconds, floor as compute_floor, thread_cpu_seconds, Floor, Shapes, Timing};
use crate::reference::Cell;
use clap::Args;
use gnnaudit::error::{Error, Result};
use gnnaudit::methods::{Method, Recipe};
use std::process::Command;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct BenchMethodsArgs {
    /// `cora` or `facebook100-Cornell5` (the latter with min class count 1000, as the anchors).
    #[arg(long, default_value = "cora")]
    pub dataset: String,
    /// Seeds per cell (1..=N).
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// Torch threads of the timed runs (the anchors' main table uses 1).
    #[arg(long, default_value_t = 1)]
    pub threads: i32,
    #[arg(long)]
    pub data_dir: Option<std::path::PathBuf>,
    /// Only cells whose label contains this text.
    #[arg(long)]
    pub only: Option<String>,
    /// Skip the extra all-cores timing run per cell.
    #[arg(long)]
    pub no_all_cores: bool,
}

/// The anchors' cells for these methods (`bench/reference.toml`).
fn cells() -> Result<Vec<Cell>> {
    Ok(crate::reference::load()?.methods)
}

struct Measured {
    acc: f64,
    wall: f64,
    cpu: f64,
    /// The run's CPU time before its training began (start-up, loading, preparation).
    cpu_before_runs: f64,
    rss_mb: f64,
}

impl Measured {
    /// CPU time of the cell's own work, from the start of training to the result.
    fn in_process(&self) -> f64 {
        self.cpu - self.cpu_before_runs
    }
}

fn run_child(
    dataset: &str,
    extra: &[&str],
    cell: &Cell,
    seed: u64,
    threads: i32,
    data_dir: &Option<std::path::PathBuf>,
) -> Result<Measured> {
    let exe = crate::gnnaudit_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "train",
        "--dataset",
        dataset,
        "--json",
        "--no-pld",
        "--seed",
        &seed.to_string(),
        "--threads",
        &threads.to_string(),
    ]);
    cmd.args(extra).args(&cell.args);
    if let Some(d) = data_dir {
        cmd.arg("--data-dir").arg(d);
    }
    let start = Instant::now();
    let out = cmd.output()?;
    let wall = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(Error::Other(format!(
            "{} seed {seed} failed: {}",
            cell.label,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(Measured {
        acc: 100.0 * v["test_accuracy"]["mean"].as_f64().unwrap_or(f64::NAN),
        wall,
        rss_mb: v["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
        cpu: v["cpu_seconds"].as_f64().unwrap_or(f64::NAN),
        cpu_before_runs: v["cpu_seconds_before_runs"].as_f64().unwrap_or(f64::NAN),
    })
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    (m, (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt())
}

/// The recipe a cell's arguments describe (for its compute floor).
fn cell_recipe(cell: &Cell) -> Option<Recipe> {
    let value = |flag: &str| cell.args.iter().position(|a| a == flag).and_then(|i| cell.args.get(i + 1));
    let method = <Method as clap::ValueEnum>::from_str(value("--method")?, true).ok()?;
    let mut r = Recipe::new(method, value("--epsilon").and_then(|e| e.parse().ok()));
    r.train.epochs = value("--epochs").and_then(|e| e.parse().ok());
    Some(r)
}

/// CPU seconds of one child process that only starts up (`gnnaudit --version`: the executable,
/// libtorch's shared libraries and static initialisers, loaded once as in a `--threads 1` run,
/// which skips the OpenMP re-execution); the least of three.
fn start_up_cpu() -> Result<f64> {
    let exe = crate::gnnaudit_exe()?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let before = children_cpu_seconds();
        Command::new(&exe).arg("--version").env("OMP_NUM_THREADS", "1").output()?;
        best = best.min(children_cpu_seconds() - before);
    }
    Ok(best)
}

pub fn run(a: BenchMethodsArgs) -> Result<()> {
    let cornell = a.dataset.to_lowercase().contains("cornell5");
    if !cornell && a.dataset != "cora" {
        return Err(Error::invalid("dataset", "the anchors cover cora and facebook100-Cornell5"));
    }
    let extra: &[&str] = if cornell { &["--min-class-count", "1000"] } else { &[] };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as i32;
    println!(
        "gnnaudit-bench methods: {} ({} seeds, {} torch thread(s); one process per run, wall time includes start-up; budgets by RDP only, --no-pld, as the reference)",
        a.dataset, a.seeds, a.threads
    );
    let cells = cells()?;
    let sources: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.source.as_str()).collect();
    println!("reference figures: bench/reference.toml, from {}", sources.into_iter().collect::<Vec<_>>().join(", "));
    // The fixed costs of every run, and the shapes of the compute floors.
    let start_up = start_up_cpu()?;
    let t = thread_cpu_seconds();
    let raw = gnnaudit::data::load_dataset(&a.dataset, a.data_dir.as_deref())?;
    let load = thread_cpu_seconds() - t;
    let t = thread_cpu_seconds();
    let min_class = if cornell { 1000 } else { 1 };
    let ds = gnnaudit::data::transforms::prepare_like_gap(&raw, min_class, Default::default(), 0)?;
    let prepare = thread_cpu_seconds() - t;
    tch::set_num_threads(a.threads);
    let shapes = Shapes::of(&ds)?;
    println!("start-up (one `gnnaudit --version` process): {start_up:.2} CPU s");
    println!("npz loading: {load:.2} CPU s; preparation (undirected, split, class filter): {prepare:.2} CPU s");
    println!(
        "floor = the cell's kernels (dense layers fwd+bwd, sparse first layers, SpMMs, DP-SGD steps; and, as the part 'norm, loss, Adam', batch norm, dropout, the loss and Adam of full-batch steps) at its shapes and counts, timed alone in CPU s; \
         in-process = a run's CPU from the start of training to its result, measured in the run (the least over the seeds, as the floor takes the least of its samples); \
         the one-pass floor runs the same kernels as often as the cell, in one pass as long as a run's kernels (the least over the seeds); \
         the run-order floor runs them so too, but each training loop's kernels in turn, in the order of its epochs; \
         'before training' = the run's CPU until then (start-up + loading + preparation; here {:.2} s apart)",
        start_up + load + prepare
    );
    println!(
        "| cell | ours acc % (mean ± sd) | ref acc % | ok (>= ref - 2 sd) | ours wall s | ours CPU s | ref wall s | ratio (wall) | ratio (CPU) | before training CPU s | floor CPU s | in-process / floor | floor, one pass, CPU s | in-process / one-pass floor | floor, run order, CPU s | in-process / run-order floor | ours RSS MB | ref RSS MB | ratio | ours wall s, {cores} threads |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    const TIMINGS: [Timing; 3] = [Timing::Sampled, Timing::Pass, Timing::Interleaved];
    let mut breakdowns = Vec::new();
    let mut means = std::collections::HashMap::new();
    for cell in cells {
        if a.only.as_ref().is_some_and(|o| !cell.label.contains(o.as_str())) {
            continue;
        }
        let reference = if cornell { &cell.cornell5 } else { &cell.cora };
        let mut ms = Vec::new();
        // Every floor is measured after each seed's run, and the least of each is kept: spread
        // over the cell's runs, a slow spell of the shared machine cannot weigh on one side alone.
        let recipe = cell_recipe(&cell);
        let mut floors: [Option<Floor>; 3] = Default::default();
        for seed in 1..=a.seeds {
            ms.push(run_child(&a.dataset, extra, &cell, seed, a.threads, &a.data_dir)?);
            for (timing, kept) in TIMINGS.into_iter().zip(floors.iter_mut()) {
                let Some(f) = recipe.as_ref().and_then(|r| compute_floor(r, &shapes, timing)) else { continue };
                if kept.as_ref().is_none_or(|best| f.seconds < best.seconds) {
                    *kept = Some(f);
                }
            }
        }
        let (acc, sd) = mean_sd(&ms.iter().map(|m| m.acc).collect::<Vec<_>>());
        let (wall, _) = mean_sd(&ms.iter().map(|m| m.wall).collect::<Vec<_>>());
        let (cpu, _) = mean_sd(&ms.iter().map(|m| m.cpu).collect::<Vec<_>>());
        // Against the floor (the least of its samples), the least in-process time over the seeds:
        // on a shared machine either side can only be slowed, by up to a third between runs here.
        let least_work = ms.iter().map(Measured::in_process).fold(f64::INFINITY, f64::min);
        let (before, _) = mean_sd(&ms.iter().map(|m| m.cpu_before_runs).collect::<Vec<_>>());
        let rss = ms.iter().map(|m| m.rss_mb).fold(0.0, f64::max);
        let all = if a.no_all_cores {
            "-".to_string()
        } else {
            format!("{:.2}", run_child(&a.dataset, extra, &cell, 1, cores, &a.data_dir)?.wall)
        };
        let ok = acc >= reference.acc - 2.0 * reference.sd;
        means.insert(cell.label.clone(), acc);
        // Per floor: its seconds and the in-process time over it.
        let against = floors
            .iter()
            .map(|f| match f {
                Some(f) => format!("{:.2} | {:.2}x", f.seconds, least_work / f.seconds),
                None => "- | -".to_string(),
            })
            .collect::<Vec<_>>()
            .join(" | ");
        if let [Some(f), ..] = &floors {
            let parts: Vec<String> = f.parts.iter().map(|(w, t)| format!("{w} {t:.2} s")).collect();
            breakdowns.push(format!("floor of {}: {}", cell.label, parts.join(", ")));
        }
        println!(
            "| {} | {acc:.2} ± {sd:.2} | {:.2} ± {:.2} | {} | {wall:.2} | {cpu:.2} | {:.1} | {:.2}x | {:.2}x | {before:.2} | {against} | {rss:.0} | {:.0} | {:.2}x | {all} |",
            cell.label,
            reference.acc,
            reference.sd,
            if ok { "yes" } else { "NO" },
            reference.wall,
            wall / reference.wall,
            cpu / reference.wall,
            reference.rss,
            rss / reference.rss,
        );
    }
    for b in &breakdowns {
        println!("{b}");
    }
    println!(
        "note: DP-SGD floors time the step as training runs it (Poisson draw, batch gather, group norm, loss, \
         ghost norms, clipped sums, noise, Adam); the floor and its parts are CPU s of bare kernels, measured \
         after each seed's run and the least kept (on a shared machine a single measurement moved by up to a third). 'stage embeddings + NAP' is ProGAP's once-per-stage \
         recomputation of the previous stage's embedding for all nodes and its aggregation."
    );
    let order = |a_: &str, b: &str| {
        if let (Some(x), Some(y)) = (means.get(a_), means.get(b)) {
            println!("ordering {a_} ({x:.2}) > {b} ({y:.2}): {}", if x > y { "holds" } else { "FAILS" })
        }
    };
    for eps in ["1", "4"] {
        order(&format!("ProGAP-EDP eps={eps}"), &format!("GAP-EDP eps={eps}"));
        order(&format!("GAP-EDP eps={eps}"), "MLP");
    }
    order("GAP-NDP eps=8", "DP-MLP eps=8");
    order("ProGAP-NDP eps=8", "DP-MLP eps=8");
    order("DP-GNN eps=8", "DP-MLP eps=8");
    if let (false, Some(acc)) = (cornell, means.get("DP-GNN eps=8")) {
        let majority = 31.53;
        println!(
            "DP-GNN eps=8 ({acc:.2}) above the majority class ({majority}): {}",
            if *acc > majority { "holds" } else { "FAILS" }
        );
    }
    Ok(())
}
