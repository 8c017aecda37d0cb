//! `gnnaudit.train(dataset, method, epsilon=...)`: a built-in method trained as `gnnaudit train`
//! trains it (the same flags, parsed by the CLI's parser, and the same library calls), with its
//! accuracy and budget as `train --json` names them.
use gnnaudit::cli::train::{seeds, set_threads, TrainArgs};
use gnnaudit::data;
use gnnaudit::error::Result;
use gnnaudit::methods;
use gnnaudit::train::baseline::{at_chance, Baseline, DEFAULT_CHANCE_CONFIDENCE};
use serde_json::{json, Value};

pub fn run(a: &TrainArgs) -> Result<Value> {
    let recipe = a.recipe.to_recipe()?;
    recipe.validate()?;
    let seeds = seeds(a.seed, a.repeats)?;
    // Only an explicit `threads` changes libtorch's pool, which is shared with Python's torch.
    set_threads(a.threads)?;
    gnnaudit::device::select(a.device)?;
    let accounting = gnnaudit::train::accounting::Accounting::new(!a.no_pld);
    let raw = data::load_dataset(&a.dataset, a.data_dir.as_deref())?;
    let ratios = recipe.method.spec().split;
    let ds = data::transforms::prepare_like_gap(&raw, a.min_class_count, ratios, a.split_seed)?;
    methods::size::ensure_fits(&recipe, &ds)?;
    // The baselines `train` prints beside every accuracy, and the at-chance test of each run.
    let baseline = match recipe.method.utility_metric() {
        methods::UtilityMetric::RocAuc => Baseline::link_prediction(),
        methods::UtilityMetric::Accuracy => Baseline::of_classes(&ds)?,
    };
    let mut runs = vec![];
    let mut budget = None;
    for &seed in &seeds {
        let run = methods::train_with(&recipe, &ds, seed, &accounting)?;
        gnnaudit::target::ensure_converged(&run, &recipe)?;
        runs.push(json!({
            "seed": seed,
            "train_accuracy": run.accuracy.train,
            "val_accuracy": run.accuracy.val,
            "test_accuracy": run.accuracy.test,
            "chance_test": at_chance(run.accuracy.test, &baseline, DEFAULT_CHANCE_CONFIDENCE),
            "seconds": run.seconds,
        }));
        budget.get_or_insert(run.budget);
    }
    let budget = budget.expect("at least one seed");
    Ok(json!({
        "method": recipe.method.name(),
        "dataset": a.dataset,
        "nodes": ds.num_nodes(),
        "classes": ds.num_classes,
        "epsilon": recipe.epsilon,
        "delta": recipe.is_private().then_some(budget.delta),
        "utility_metric": recipe.method.utility_metric(),
        "baseline": baseline,
        "at_chance": runs.iter().any(|r| r["chance_test"]["at_chance"] == true),
        "runs": runs,
        "budget": budget,
        "claimed_epsilon": budget.claimed_epsilon(),
        "recipe": recipe,
        "threads": tch::get_num_threads(),
    }))
}
