//! Everything a real audit would refuse before its first training, checked without training: a
//! `--dry-run` that says "valid" must mean the run will not fail on its input, and a real run
//! fails here, before it creates its report folder.
//!
//! Beyond the schema checks of [`AuditConfig::validate`]: every dataset is loaded (a corrupt or
//! truncated file fails now, not after other cells finished) and prepared as each method's cells
//! will prepare it (a `min_class_count` above the largest class, a single class left, an empty
//! split), every cell's recipe is built and checked against the memory available and its noise
//! calibrated (a budget the accountant cannot meet or evaluate), and the attack
//! parameters the attacks check only once they run (`confidence = 1.5`, `num_samples = 0`) are
//! checked against the same bounds.
use super::config::AuditConfig;
use super::recipe::{build_recipe, parse_method};
use crate::error::{Error, Result};
use crate::methods::Method;
use crate::report::record::Epsilon;
use gnnaudit_attacks::AttackParams;
use std::path::Path;

/// Runs every check; errors name the config field (`datasets[0].min_class_count`, ...).
pub fn check(cfg: &AuditConfig, data_dir: Option<&Path>) -> Result<()> {
    for (i, a) in cfg.attacks.iter().enumerate() {
        // Mechanism audits and replays are not attacks of the attacks crate; validate() checks them.
        if a.kind == crate::report::tightness::KIND || a.kind == crate::replay::KIND {
            continue;
        }
        let (_, _, params) = super::attack::attack_inputs(&a.kind, &a.knowledge, &a.params)
            .map_err(|(k, m)| Error::invalid(format!("attacks[{i}].{k}"), m))?;
        attack_params(&params).map_err(|(k, m)| Error::invalid(format!("attacks[{i}].params.{k}"), m))?;
    }
    // An external target's deployment is validated by `audit::external`; the built-in
    // methods' calibration below does not apply to it.
    if cfg.target.is_some() {
        return Ok(());
    }
    let first_seed = cfg.seed_list().first().copied().unwrap_or(0);
    for (i, d) in cfg.datasets.iter().enumerate() {
        let raw = super::execute::load_raw(d, data_dir).map_err(|e| within(&format!("datasets[{i}]"), "name", e))?;
        // LPGNN draws its own split ratios; every other method shares the default one.
        let mut prepared: Vec<(Option<crate::data::SplitRatios>, crate::data::Dataset)> = Vec::new();
        for (j, m) in cfg.methods.iter().enumerate() {
            let method = parse_method(&m.method);
            crate::ensure!(
                method.map(Method::utility_metric) != Some(crate::methods::UtilityMetric::RocAuc)
                    || cfg.attacks.is_empty(),
                Error::invalid(
                    format!("methods[{j}].method"),
                    "pgc-vgae predicts links and has no class posteriors: no attack applies to it yet (audit it without [[attacks]])"
                )
            );
            let lpgnn = method.map(|m| m.spec().split);
            if !prepared.iter().any(|(l, _)| *l == lpgnn) {
                let ds = super::execute::prepare(&raw, d, d.split_seed.unwrap_or(first_seed), method)
                    .map_err(|e| within(&format!("datasets[{i}]"), "name", e))?;
                prepared.push((lpgnn, ds));
            }
            let ds = &prepared.iter().find(|(l, _)| *l == lpgnn).expect("prepared above").1;
            for eps in cfg.epsilon_grid(m) {
                let recipe = build_recipe(&m.method, &m.params, eps, cfg.delta_for(m))
                    .map_err(|(k, msg)| Error::invalid(format!("methods[{j}].{k}"), msg))?;
                crate::methods::size::ensure_fits(&recipe, ds)
                    .map_err(|e| within(&format!("methods[{j}]"), "hidden", e))?;
                if let Epsilon::Finite(_) = eps {
                    recipe.validate().map_err(|e| within(&format!("methods[{j}]"), "epsilons", e))?;
                    crate::methods::budget(&recipe, ds, first_seed)
                        .map_err(|e| within(&format!("methods[{j}]"), "epsilons", e))?;
                }
            }
        }
    }
    Ok(())
}

/// Puts a lower-level error under a config prefix: `invalid min_class_count` becomes
/// `invalid datasets[0].min_class_count`; a file error keeps naming its file.
fn within(prefix: &str, default_field: &str, e: Error) -> Error {
    match e {
        Error::InvalidParam { field, message } => Error::invalid(format!("{prefix}.{field}"), message),
        e @ (Error::BadFile { .. } | Error::DatasetNotFound { .. }) => e,
        e => Error::invalid(format!("{prefix}.{default_field}"), e),
    }
}

/// The parameter bounds the attacks check when they start (each attack's `Attack::check`, through
/// the registry), checked here before any training. Errors are (key, message).
pub fn attack_params(p: &AttackParams) -> std::result::Result<(), (String, String)> {
    p.check().map_err(|e| match e {
        gnnaudit_attacks::Error::Invalid { field, message } => (field, message),
        e => (String::new(), e.to_string()),
    })
}
