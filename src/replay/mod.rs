//! Grey-box sensitivity replay (record/replay on neighbouring inputs as in
//! dp-recorder, arXiv 2602.17454). Every noisy release of a private method is a function of the
//! graph whose change between neighbouring graphs the noise is calibrated to bound. The replay
//! trains (or initialises) the method once, records the inputs of each release, recomputes each
//! pre-noise release on the graph and on a neighbour (one edge, pair or node removed) from the
//! same recorded inputs, and reports `max_ratio` = observed change / declared sensitivity, where
//! the declared sensitivity is read from the function the method's noise calibration uses.
//!
//! Coupling: a release's inputs are the previous releases of the original run (adaptive
//! composition conditions on them), sampled graphs are sampled once and the unit is removed from
//! the sample, and batch coins come from per-(seed, node, step) streams ([`units::coin`]), so the
//! two runs differ only by the removed unit. Noise is left out: it would cancel in the difference.
//! A ratio above 1 + 1e-6 is a sensitivity bug that no black-box attack has the power to see.
pub mod dpar_rows;
pub mod dpar_sgd;
mod families;
pub mod pate_votes;
pub mod unit_dp;
pub mod units;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::methods::spec::{Replay, ReplayFamily};
use crate::methods::{Method, Recipe};
use serde::Serialize;

/// Slack for float32 rounding: a ratio above 1 + TOLERANCE is a violation.
pub const TOLERANCE: f64 = 1e-6;

/// The attack kind that runs the replay in an audit config (see `audit::replay`); `check` names it.
pub const KIND: &str = "sensitivity";

/// One pre-noise release compared on the two neighbouring graphs.
#[derive(Debug, Clone, Serialize)]
pub struct Release {
    pub name: String,
    /// The removed unit (edge u->v, pair {u, v} or node w).
    pub unit: String,
    /// Picked as the worst case (highest degree) rather than at random.
    pub worst_case: bool,
    /// L2 norm of the difference of the release on the two graphs.
    pub observed_change: f64,
    /// The sensitivity the method's noise calibration assumes for this release.
    pub declared_sensitivity: f64,
    pub ratio: f64,
}

/// What `gnnaudit replay` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub method: String,
    pub dataset: String,
    /// The neighbouring relation and how randomness was coupled, in words.
    pub neighbouring: String,
    pub max_ratio: f64,
    pub max_ratio_worst_case: f64,
    /// Over the random units (NaN, written as null, when there were none).
    pub max_ratio_random: Option<f64>,
    /// `violated` when max_ratio > 1 + 1e-6, else `not refuted`: every release recomputed stayed
    /// within its declared sensitivity. The replay never sees the noise, so an audit calls its
    /// row `not refuted` only when the same replay catches the noise-off control.
    pub verdict: String,
    /// Set for deliberately unsound variants.
    pub unsound: Option<String>,
    pub seed: u64,
    pub units: usize,
    pub releases: Vec<Release>,
    pub seconds: f64,
}

/// How many units and which seed.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    pub seed: u64,
    /// Units drawn at random besides the worst case.
    pub random_units: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { seed: 0, random_units: 3 }
    }
}

pub fn verdict(max_ratio: f64) -> &'static str {
    if max_ratio > 1.0 + TOLERANCE || max_ratio.is_nan() {
        "violated"
    } else {
        "not refuted"
    }
}

/// The release family `method`'s registry entry names, or its refusal (exit 2) with the reason
/// the entry gives.
pub fn check_method(method: Method) -> Result<ReplayFamily> {
    match method.spec().replay {
        Replay::Releases(family) => Ok(family),
        Replay::Refused(why) => {
            Err(Error::invalid("method", format!("{} has no sensitivity replay: {why}", method.name())))
        }
    }
}

/// Replays every pre-noise release of `recipe.method` on `data` (which must carry a split).
pub fn replay(recipe: &Recipe, data: &Dataset, opts: &ReplayOptions) -> Result<ReplayReport> {
    let family = check_method(recipe.method)?;
    recipe.validate()?;
    data.split()?;
    let start = std::time::Instant::now();
    let (neighbouring, releases) = match family {
        ReplayFamily::Gap => families::gap(recipe, data, opts)?,
        ReplayFamily::Progap => families::progap(recipe, data, opts)?,
        ReplayFamily::DpMlp => families::dp_mlp(recipe, data, opts)?,
        ReplayFamily::EdgeRand => families::edge_rand(data, opts)?,
        ReplayFamily::Dpgnn => families::dpgnn(recipe, data, opts)?,
        ReplayFamily::UnitDp => unit_dp::replay(recipe, data, opts)?,
        ReplayFamily::DparGaussianRows => dpar_rows::replay(recipe, data, opts)?,
        ReplayFamily::DparExponentialRows => dpar_rows::replay_exponential(recipe, data, opts)?,
        ReplayFamily::DparSgd => dpar_sgd::replay(recipe, data, opts)?,
        ReplayFamily::PateVotes => pate_votes::replay(recipe, data, opts)?,
    };
    let max_of = |worst: Option<bool>| {
        releases.iter().filter(|r| worst.is_none_or(|w| r.worst_case == w)).map(|r| r.ratio).fold(None, |a, x| {
            Some(match a {
                None => x,
                Some(a) if x.is_nan() || x > a => x,
                Some(a) => a,
            })
        })
    };
    let max_ratio = max_of(None).ok_or_else(|| Error::Other("the replay recorded no release".into()))?;
    let units: std::collections::BTreeSet<&str> = releases.iter().map(|r| r.unit.as_str()).collect();
    Ok(ReplayReport {
        method: recipe.method.name().to_string(),
        dataset: data.name.clone(),
        neighbouring,
        max_ratio,
        max_ratio_worst_case: max_of(Some(true)).unwrap_or(f64::NAN),
        max_ratio_random: max_of(Some(false)),
        verdict: verdict(max_ratio).to_string(),
        unsound: recipe.method.spec().unsound.map(str::to_string),
        seed: opts.seed,
        units: units.len(),
        releases,
        seconds: start.elapsed().as_secs_f64(),
    })
}
