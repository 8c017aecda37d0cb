//! The replay as an audit-config attack kind, `sensitivity`: a cell's target recipe is replayed
//! on the cell's dataset and the result becomes an attack record whose verdict is the replay's.
use crate::data::Dataset;
use crate::error::Result;
use crate::methods::Recipe;
use crate::replay::{replay, ReplayOptions};
use crate::report::config::{AttackSpec, Params};
use crate::report::record::{AttackRecord, TprAtFpr};

/// The config's name for this kind.
pub use crate::replay::KIND;

/// The options a config entry sets: `params.random_units` (default 3) and nothing else; errors are
/// (key path, message) like the other kinds'.
pub fn options(knowledge: &Params, params: &Params) -> std::result::Result<usize, (String, String)> {
    if let Some(k) = knowledge.keys().next() {
        return Err((format!("knowledge.{k}"), "the sensitivity replay is grey-box and takes no knowledge".into()));
    }
    let mut random = ReplayOptions::default().random_units;
    for (k, v) in params {
        match (k.as_str(), v.as_integer()) {
            ("random_units", Some(n)) if (0..=1000).contains(&n) => random = n as usize,
            ("random_units", _) => {
                return Err(("params.random_units".into(), format!("must be an integer in [0, 1000], got {v}")))
            }
            _ => return Err((format!("params.{k}"), format!("unknown parameter '{k}' (known: random_units)"))),
        }
    }
    Ok(random)
}

/// Replays the cell's target. A target without a sensitivity claim (eps = inf, non-private or
/// local-DP methods) gets a record with verdict "no claim" and no replay.
pub fn record(spec: &AttackSpec, recipe: &Recipe, ds: &Dataset, seed: u64) -> Result<AttackRecord> {
    let random = options(&spec.knowledge, &spec.params)
        .map_err(|(k, m)| crate::Error::invalid(format!("attack {}.{k}", spec.label()), m))?;
    let (verdict, details) = if recipe.is_private() && crate::replay::check_method(recipe.method).is_ok() {
        let rep = replay(recipe, ds, &ReplayOptions { seed, random_units: random })?;
        let mut details = serde_json::to_value(&rep)?;
        // Wall time stays out of the reproducible part of report.json (the run keeps cell times).
        details.as_object_mut().map(|d| d.remove("seconds"));
        (rep.verdict.clone(), details)
    } else {
        let note = format!("{} makes no sensitivity-calibrated release at this setting", recipe.method.name());
        ("no claim".to_string(), serde_json::json!({ "note": note }))
    };
    Ok(AttackRecord {
        attack: spec.label(),
        kind: KIND.into(),
        game: "grey-box sensitivity replay: each pre-noise release recomputed on a neighbouring graph \
               (worst-case and random units, coupled randomness); violated when observed change / declared \
               sensitivity > 1 + 1e-6. Not a distinguishing game: AUC, TPR and balanced accuracy are \
               those of a constant score."
            .into(),
        auc: 0.5,
        tpr_at_fpr: TprAtFpr { fpr_0_1pct: 0.001, fpr_1pct: 0.01 },
        balanced_accuracy: 0.5,
        eps_lb: None,
        violation: verdict == "violated",
        verdict: Some(verdict),
        control: None,
        roc: vec![(0.0, 0.0), (1.0, 1.0)],
        details,
    })
}
