//! `gnnaudit train`: train one method on one dataset over several seeds and report test accuracy
//! (mean with a 95% bootstrap interval), wall time and the privacy budget breakdown.
use crate::data;
use crate::error::{Error, Result};
use crate::methods::{self, Method, Recipe};
use crate::train::baseline::{at_chance, Baseline, ChanceVerdict, DEFAULT_CHANCE_CONFIDENCE};
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::path::PathBuf;

/// The recipe's flags, flattened into every subcommand that trains (others add theirs here).
#[derive(Debug, Clone, Args)]
pub struct RecipeArgs {
    /// Training method (required, except by `attack --target`, which reads it from the checkpoint).
    #[arg(long, value_enum)]
    pub method: Option<Method>,
    /// Target epsilon (omit for eps = inf / no noise).
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon: Option<f64>,
    /// Target delta (default: 10^-digits of the number of edges at edge level, nodes at node level).
    #[arg(long, allow_negative_numbers = true)]
    pub delta: Option<f64>,
    /// The shared training and DP-SGD settings (`--epochs`, `--hidden`, `--max-grad-norm`, ...):
    /// one flag per field of `TrainConfig` and `DpSgdConfig`, generated from them.
    #[command(flatten)]
    pub shared: super::knob_args::SharedArgs,
    /// The methods' own knobs (`--teachers`, `--c1`, ...): one flag per field of their knob
    /// structs, generated from the registry.
    #[command(flatten)]
    pub own: super::knob_args::OwnKnobArgs,
}

impl RecipeArgs {
    pub fn to_recipe(&self) -> Result<Recipe> {
        use super::knob_args::flag;
        let method = self.method.ok_or_else(|| Error::invalid("method", "--method is required"))?;
        // A flag the method does not read is refused even at its default value.
        let spec = method.spec();
        if let Some((k, _)) = self.shared.given().iter().find(|(k, _)| !spec.reads.reads_key(k)) {
            return Err(Error::invalid(k, crate::methods::registry::unread_knob(method, k)));
        }
        let own = crate::methods::knobs::names_of(method);
        if let Some((k, _)) = self.own.given().iter().find(|(k, _)| !own.contains(k)) {
            return Err(Error::invalid(k, crate::methods::registry::unread_knob(method, k)));
        }
        // The method's recipe with the flags on top, as a config's table is applied.
        let mut r = Recipe::new(method, self.epsilon);
        r.delta = self.delta;
        let mut table =
            toml::Table::try_from(&r).map_err(|e| Error::Other(format!("cannot tabulate a recipe: {e}")))?;
        for (k, text) in self.shared.given() {
            let v = crate::methods::knobs::parse_cli_value(text);
            crate::methods::shared::check_type(k, &v).map_err(|e| renamed(e, flag))?;
            table.insert(k.clone(), v);
        }
        let mut given = crate::methods::knobs::KnobMap::default();
        for (k, text) in self.own.given() {
            let v = crate::methods::knobs::parse_cli_value(text);
            table.insert(k.clone(), v.clone());
            given.set(k, v);
        }
        // A value of the wrong type names its flag, as clap does for the flags it parses.
        if let Some(own) = spec.own_knobs {
            (own.types)(&given).map_err(|e| renamed(e, flag))?;
        }
        serde::Deserialize::deserialize(toml::Value::Table(table))
            .map_err(|e: toml::de::Error| Error::invalid("recipe", e.to_string().trim().replace('\n', " ")))
    }
}

/// An invalid-parameter error with its field renamed (a recipe key as its flag).
fn renamed(e: Error, rename: fn(&str) -> String) -> Error {
    match e {
        Error::InvalidParam { field, message } => Error::invalid(rename(&field), message),
        e => e,
    }
}

#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Dataset name (in the data directory), path, or `synthetic`.
    #[arg(long, default_value = "synthetic")]
    pub dataset: String,
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Drop classes with fewer nodes (the Facebook100 anchors use 1000).
    #[arg(long, default_value_t = 1)]
    pub min_class_count: usize,
    /// Training runs with seeds seed, seed+1, ...
    #[arg(long, default_value_t = 1)]
    pub repeats: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Seed of the train/val/test split (drawn once; all training seeds share it, as in the
    /// reference).
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// Torch threads (default: libtorch's choice).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Torch device: cpu | cuda | cuda:N | auto (CUDA device 0 if any, else cpu).
    #[arg(long, default_value = "cpu", value_parser = crate::device::parse_device)]
    pub device: crate::device::DeviceSpec,
    /// Save the first run's model (checkpoint, cached aggregations, recipe and budget) here.
    #[arg(long)]
    pub save: Option<PathBuf>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Skip the PLD epsilon in the budget (RDP only): the PLD accountant costs seconds.
    #[arg(long)]
    pub no_pld: bool,
    #[command(flatten)]
    pub recipe: RecipeArgs,
}

/// Mean and 95% percentile-bootstrap interval of the mean (1000 resamples, fixed seed).
pub fn bootstrap_ci(xs: &[f64]) -> (f64, [f64; 2]) {
    let n = xs.len();
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, [mean, mean]);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut means: Vec<f64> =
        (0..1000).map(|_| (0..n).map(|_| xs[rng.gen_range(0..n)]).sum::<f64>() / n as f64).collect();
    means.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (mean, [means[25], means[974]])
}

pub use crate::methods::recipe::MAX_REPEATS;

/// The seeds `seed, seed + 1, ..` of `repeats` runs; refused when they would pass 2^64 - 1.
pub fn seeds(seed: u64, repeats: usize) -> Result<Vec<u64>> {
    crate::ensure!(repeats >= 1, Error::invalid("--repeats", "must be at least 1"));
    crate::ensure!(
        repeats <= MAX_REPEATS,
        Error::invalid(
            "--repeats",
            format!("{repeats} runs is more than the {MAX_REPEATS} one command makes; use fewer --repeats")
        )
    );
    seed.checked_add(repeats as u64 - 1).ok_or_else(|| {
        Error::invalid(
            "--seed",
            format!("--seed {seed} with --repeats {repeats} runs past the largest seed {}", u64::MAX),
        )
    })?;
    Ok((0..repeats as u64).map(|i| seed + i).collect())
}

/// The largest `--threads` accepted: far above any useful value (libtorch gains nothing beyond
/// the cores), far below what makes its thread pool overflow the stack (100,000 did).
pub const MAX_THREADS: i32 = 1024;

/// Applies `--threads` after checking it.
pub fn set_threads(threads: Option<i32>) -> Result<()> {
    if let Some(t) = threads {
        crate::ensure!(
            (1..=MAX_THREADS).contains(&t),
            Error::invalid("threads", format!("{t} is outside 1..={MAX_THREADS}"))
        );
        tch::set_num_threads(t);
    }
    Ok(())
}

pub fn run(a: TrainArgs) -> Result<()> {
    let recipe = a.recipe.to_recipe()?;
    recipe.validate()?;
    let seeds = seeds(a.seed, a.repeats)?;
    set_threads(a.threads)?;
    crate::device::select(a.device)?;
    let accounting = crate::train::accounting::Accounting::new(!a.no_pld);
    let start = std::time::Instant::now();
    let raw = data::load_dataset(&a.dataset, a.data_dir.as_deref())?;
    // LPGNN's experiments use a 50/25/25 split (thesis Section 3.5.2); the others GAP's 75/10/15.
    let ratios = recipe.method.spec().split;
    let ds = data::transforms::prepare_like_gap(&raw, a.min_class_count, ratios, a.split_seed)?;
    crate::methods::size::ensure_fits(&recipe, &ds)?;
    // Where start-up, loading and preparation end: what `gnnaudit-bench methods` sets against its floor is
    // the CPU time after this point, measured in the same process.
    let cpu_before_runs = cpu_seconds();
    let mut runs = Vec::new();
    let mut links = Vec::new();
    let mut budget = None;
    let mut diagnostics: Vec<Vec<(String, f64)>> = vec![];
    let metric = recipe.method.utility_metric();
    let baseline = match metric {
        methods::UtilityMetric::RocAuc => Baseline::link_prediction(),
        methods::UtilityMetric::Accuracy => Baseline::of_classes(&ds)?,
    };
    for (i, &seed) in seeds.iter().enumerate() {
        let run = methods::train_with(&recipe, &ds, seed, &accounting)?;
        diagnostics.push(run.model.diagnostics());
        crate::target::ensure_converged(&run, &recipe)?;
        if i == 0 {
            if let Some(dir) = &a.save {
                run.model.save(dir, &recipe, &run.budget)?;
                let data = methods::checkpoint::DataProvenance::of(
                    &a.dataset,
                    &raw,
                    a.min_class_count,
                    a.split_seed,
                    ratios,
                    seed,
                );
                methods::checkpoint::record_data(dir, &data)?;
            }
        }
        links.extend(run.model.link_metrics());
        runs.push((run.accuracy, run.seconds));
        budget.get_or_insert(run.budget);
    }
    let budget = budget.unwrap();
    let tests: Vec<f64> = runs.iter().map(|(acc, _)| acc.test).collect();
    let (mean, ci) = bootstrap_ci(&tests);
    let seconds = start.elapsed().as_secs_f64();
    let delta = if recipe.is_private() { Some(budget.delta) } else { None };
    let verdicts: Vec<Option<ChanceVerdict>> =
        tests.iter().map(|&t| at_chance(t, &baseline, DEFAULT_CHANCE_CONFIDENCE)).collect();
    let at_chance_seeds: Vec<u64> =
        seeds.iter().zip(&verdicts).filter(|(_, v)| v.as_ref().is_some_and(|v| v.at_chance)).map(|(s, _)| *s).collect();
    if a.json {
        let out = json!({
            "method": recipe.method.name(),
            "dataset": a.dataset,
            "nodes": ds.num_nodes(),
            "directed_edges": ds.graph.num_directed_edges(),
            "classes": ds.num_classes,
            "epsilon": recipe.epsilon,
            "delta": delta,
            "utility_metric": metric,
            "test_accuracy": {"mean": mean, "ci95": ci, "runs": tests},
            "baseline": baseline,
            "chance_test": verdicts,
            "at_chance": !at_chance_seeds.is_empty(),
            "link_prediction": (!links.is_empty()).then(|| json!({
                "test_roc_auc": links.iter().map(|l| l.test_auc).collect::<Vec<_>>(),
                "test_average_precision": links.iter().map(|l| l.test_ap).collect::<Vec<_>>(),
                "val_roc_auc": links.iter().map(|l| l.val_auc).collect::<Vec<_>>(),
            })),
            "val_accuracy": runs.iter().map(|(a, _)| a.val).collect::<Vec<_>>(),
            "train_seconds": runs.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
            "seconds": seconds,
            "threads": tch::get_num_threads(),
            "peak_rss_mb": peak_rss_mb(),
            "cpu_seconds": cpu_seconds(),
            "cpu_seconds_before_runs": cpu_before_runs,
            "budget": budget,
            "recipe": recipe,
            "diagnostics": diagnostics
                .iter()
                .map(|d| d.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>())
                .collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "{} on {} ({} nodes, {} directed edges, {} classes)",
        recipe.method.name(),
        a.dataset,
        ds.num_nodes(),
        ds.graph.num_directed_edges(),
        ds.num_classes
    );
    println!(
        "test {}: {:.2}% (95% bootstrap CI {:.2}-{:.2}%, {} run{})",
        metric.label(),
        100.0 * mean,
        100.0 * ci[0],
        100.0 * ci[1],
        tests.len(),
        if tests.len() == 1 { "" } else { "s" }
    );
    println!("{}", baseline_line(&baseline));
    for (i, (acc, s)) in runs.iter().enumerate() {
        println!(
            "  seed {}: test {:.2}%  val {:.2}%  train {:.2}%  ({:.2} s){}",
            seeds[i],
            100.0 * acc.test,
            100.0 * acc.val,
            100.0 * acc.train,
            s,
            if at_chance_seeds.contains(&seeds[i]) { "  AT CHANCE" } else { "" }
        );
    }
    if let Some(v) = verdicts.iter().flatten().find(|v| v.at_chance) {
        println!(
            "at chance: {} of {} run(s) do not clear the majority class ({:.2}%): e.g. {} of {} test nodes \
             correct, {:.0}% lower bound {:.2}% ({}): indistinguishable from always answering the majority class",
            at_chance_seeds.len(),
            seeds.len(),
            100.0 * v.majority_accuracy,
            v.correct,
            v.test_nodes,
            100.0 * v.confidence,
            100.0 * v.accuracy_lower,
            v.test
        );
    }
    for (i, d) in diagnostics.iter().enumerate().filter(|(_, d)| !d.is_empty()) {
        let text: Vec<String> = d.iter().map(|(k, v)| format!("{k} {v:.4}")).collect();
        println!("  seed {} diagnostics: {}", seeds[i], text.join(", "));
    }
    if !links.is_empty() {
        let ap = links.iter().map(|l| l.test_ap).sum::<f64>() / links.len() as f64;
        println!(
            "test average precision: {:.2}% (mean of {} run(s); train/val/test above are ROC-AUC)",
            100.0 * ap,
            links.len()
        );
    }
    println!("wall time: {seconds:.2} s ({} torch threads)", tch::get_num_threads());
    print_budget(&budget, recipe.is_private());
    Ok(())
}

/// The baselines a utility is read against, in one line.
pub fn baseline_line(b: &Baseline) -> String {
    match (b.majority_class, b.majority_accuracy) {
        (Some(c), Some(m)) => format!(
            "baselines: chance {:.2}%, majority class (class {c}, the train split's most frequent) {:.2}% of {} test nodes",
            100.0 * b.chance,
            100.0 * m,
            b.test_nodes
        ),
        _ => format!("baseline: chance (random scores) {:.2}%", 100.0 * b.chance),
    }
}

pub fn print_budget(b: &crate::privacy::accountant::Budget, private: bool) {
    use crate::privacy::accountant::PrivacyUnit;
    match (b.privacy_unit, private) {
        (PrivacyUnit::None, _) => println!("privacy: none (non-private, eps = inf)"),
        (PrivacyUnit::Edge, false) if b.epsilon_rdp == 0.0 => {
            println!("privacy: edge level, eps = 0 (the model uses no edges)")
        }
        (_, false) => println!("privacy: no noise (eps = inf)"),
        (unit, true) => {
            let pld = b.epsilon_pld.map_or("n/a".to_string(), |e| format!("{e:.4}"));
            println!(
                "privacy: {unit:?}-level, target eps {}, delta {:e}: eps (RDP) {:.4} at order {}, eps (PLD) {pld}",
                b.target_epsilon.map_or("-".into(), |e| e.to_string()),
                b.delta,
                b.epsilon_rdp,
                b.rdp_order.map_or("-".into(), |o| format!("{o}"))
            );
            for (k, v) in &b.noise {
                println!("  noise {k} = {v:.4}");
            }
            for c in &b.components {
                println!("  {}: {} -> eps {:.4} (alone, at delta {:e})", c.name, c.mechanism, c.epsilon, b.delta);
            }
        }
    }
}

/// Peak resident set size of this process (VmHWM), in MB (0 where /proc is unavailable).
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok()))
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// User + system CPU time of this process so far, in seconds (NaN if getrusage fails). Unlike
/// wall time it hardly moves when other processes compete for the cores.
pub fn cpu_seconds() -> f64 {
    // getrusage rather than /proc/self/stat: microseconds, not 10 ms ticks, which matter against
    // a DP-MLP run of a quarter second.
    rusage_cpu_seconds(libc::RUSAGE_SELF)
}

/// User + system CPU seconds that getrusage reports for `who` (NaN if it fails).
pub fn rusage_cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage fills the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return f64::NAN;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}
