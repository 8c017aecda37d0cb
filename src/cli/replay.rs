//! `gnnaudit replay`: grey-box sensitivity replay of a private method (see `crate::replay`).
use super::train::RecipeArgs;
use crate::data::{self, SplitRatios};
use crate::error::Result;
use crate::replay::{replay, ReplayOptions};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Dataset name (in the data directory), path, or `synthetic`.
    #[arg(long)]
    pub dataset: String,
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Drop classes with fewer nodes (the Facebook100 anchors use 1000).
    #[arg(long, default_value_t = 1)]
    pub min_class_count: usize,
    /// Seed of the run, of the sampled graph and of the coupled batch coins.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// Removed units drawn at random besides the worst case (highest degree).
    #[arg(long, default_value_t = 3)]
    pub random_units: usize,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// The method (a private one; dpgnn-rowclip is the deliberately unsound variant) and its
    /// recipe. Without --epsilon the replay uses eps = 1: sensitivities do not depend on it, it
    /// only sets the noise in the recorded inputs of later releases.
    #[command(flatten)]
    pub recipe: RecipeArgs,
}

pub fn run(a: ReplayArgs) -> Result<()> {
    let mut recipe = a.recipe.to_recipe()?;
    crate::replay::check_method(recipe.method)?;
    if recipe.epsilon.is_none() {
        recipe.epsilon = Some(1.0);
    }
    recipe.validate()?;
    let raw = data::load_dataset(&a.dataset, a.data_dir.as_deref())?;
    let ds = data::transforms::prepare_like_gap(&raw, a.min_class_count, SplitRatios::default(), a.split_seed)?;
    let rep = replay(&recipe, &ds, &ReplayOptions { seed: a.seed, random_units: a.random_units })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
        return Ok(());
    }
    println!("sensitivity replay of {} on {} ({} units, seed {})", rep.method, a.dataset, rep.units, rep.seed);
    if let Some(note) = &rep.unsound {
        println!("{note}");
    }
    println!("neighbouring graphs: {}", rep.neighbouring);
    println!("{:<58} {:<18} {:>12} {:>12} {:>9}", "release", "removed unit", "observed", "declared", "ratio");
    for r in &rep.releases {
        let unit = if r.worst_case { format!("{} *", r.unit) } else { r.unit.clone() };
        println!(
            "{:<58} {:<18} {:>12.6} {:>12.6} {:>9.6}",
            r.name, unit, r.observed_change, r.declared_sensitivity, r.ratio
        );
    }
    println!("(* worst case: highest degree)");
    let random = rep.max_ratio_random.map_or("-".to_string(), |x| format!("{x:.6}"));
    println!(
        "max_ratio {:.6} (worst-case unit {:.6}, random units {random}): {}",
        rep.max_ratio, rep.max_ratio_worst_case, rep.verdict
    );
    Ok(())
}
