//! One cell of the audit grid, (dataset, method, epsilon, seed): what computing it needs, and the
//! plan of every cell of a config. The record a cell leaves is `report::record::CellRecord`.
use super::config::{AttackSpec, AuditConfig, DatasetSpec, DeltaPolicy, MethodSpec};
use crate::fsutil::hex;
use crate::report::record::{CellKey, InputDigest};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// Everything needed to compute one cell, resolved from the config.
#[derive(Debug, Clone)]
pub struct CellSpec<'a> {
    pub key: CellKey,
    pub dataset: &'a DatasetSpec,
    pub method: &'a MethodSpec,
    pub delta: DeltaPolicy,
    /// The attacks that apply to this cell's method, in config order.
    pub attacks: Vec<&'a AttackSpec>,
    /// The files and texts outside the config that the result depends on, by content.
    pub inputs: BTreeMap<String, InputDigest>,
    /// Hash of every input of the cell (the config's tables and `inputs`); a stored record with
    /// another fingerprint is stale.
    pub fingerprint: String,
    /// Seeds of the same (dataset, method, epsilon): the report's maximum of eps_lb over them is
    /// a valid bound only if each seed's bound is certified at alpha / runs (Bonferroni).
    pub runs: usize,
}

/// The cells of a config in report order: datasets, methods, epsilons, seeds as listed.
pub fn plan(config: &AuditConfig) -> Vec<CellSpec<'_>> {
    let seeds = config.seed_list();
    let mut cells = vec![];
    // Each file is read once per plan, however many cells depend on it.
    let mut digests: HashMap<std::path::PathBuf, InputDigest> = HashMap::new();
    for d in &config.datasets {
        for m in &config.methods {
            let inputs = inputs_of(d, m, config.data_dir.as_deref(), &mut digests);
            let attacks: Vec<&AttackSpec> =
                config.attacks.iter().filter(|a| a.applies_to(&d.label(), &m.label())).collect();
            let delta = config.delta_for(m);
            for eps in config.epsilon_grid(m) {
                for &seed in &seeds {
                    let key = CellKey { dataset: d.label(), method: m.label(), epsilon: eps, seed };
                    let fingerprint = fingerprint(&key, d, m, delta, &attacks, &inputs);
                    cells.push(CellSpec {
                        key,
                        inputs: inputs.clone(),
                        dataset: d,
                        method: m,
                        delta,
                        attacks: attacks.clone(),
                        fingerprint,
                        runs: seeds.len(),
                    });
                }
            }
        }
    }
    cells
}

/// What a cell reads besides the config: the dataset's file, and for an external target its
/// files (export, init module, posteriors, members, the scripts a command names), its command
/// template, its declared claim, and the same of its positive control (roles `control ...`).
/// The dataset is found as the loaders find it (a path, `--data-dir`, `GNNAUDIT_DATA`,
/// `./datasets`), so a file replaced under the same name changes the key wherever it was found.
fn inputs_of(
    d: &DatasetSpec,
    m: &MethodSpec,
    data_dir: Option<&std::path::Path>,
    digests: &mut HashMap<std::path::PathBuf, InputDigest>,
) -> BTreeMap<String, InputDigest> {
    let mut file =
        |p: &std::path::Path| digests.entry(p.to_path_buf()).or_insert_with(|| InputDigest::of_file(p)).clone();
    let mut inputs = BTreeMap::new();
    if let Ok(super::source::DatasetSource::File(p)) = super::source::resolve_dataset(&d.name, data_dir) {
        inputs.insert("dataset".to_string(), file(&p));
    }
    if m.method == super::config::EXTERNAL_METHOD {
        // An unparsable table is refused by validation before any work; it has no files.
        if let Ok((target, claim)) = super::source::from_method(m) {
            let control = super::source::control_of(m).ok().flatten();
            let targets = std::iter::once(("", target)).chain(control.map(|c| ("control ", c)));
            for (prefix, t) in targets {
                for (role, p) in t.input_files() {
                    inputs.insert(format!("{prefix}{role}"), file(&p));
                }
                if let crate::external::TargetSpec::Command { command, .. } = &t {
                    inputs.insert(format!("{prefix}command"), InputDigest::of_text(command));
                }
            }
            if let Some(c) = claim {
                inputs
                    .insert("claim".to_string(), InputDigest::of_text(&serde_json::to_string(&c).unwrap_or_default()));
            }
        }
    }
    inputs
}

fn fingerprint(
    key: &CellKey,
    d: &DatasetSpec,
    m: &MethodSpec,
    delta: DeltaPolicy,
    attacks: &[&AttackSpec],
    files: &BTreeMap<String, InputDigest>,
) -> String {
    let inputs = serde_json::json!({
        "key": key, "dataset": d, "method": m, "delta": delta, "attacks": attacks, "inputs": files,
        "version": env!("CARGO_PKG_VERSION"),
    });
    hex(&Sha256::digest(inputs.to_string().as_bytes()))
}
