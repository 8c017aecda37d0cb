//! One cell of the audit grid, (dataset, method, epsilon, seed): what computing it needs, and the
//! plan of every cell of a config. The record a cell leaves is `report::record::CellRecord`.
use super::config::{AttackSpec, AuditConfig, DatasetSpec, DeltaPolicy, MethodSpec};
use crate::fsutil::hex;
use crate::report::record::CellKey;
use sha2::{Digest, Sha256};

/// Everything needed to compute one cell, resolved from the config.
#[derive(Debug, Clone)]
pub struct CellSpec<'a> {
    pub key: CellKey,
    pub dataset: &'a DatasetSpec,
    pub method: &'a MethodSpec,
    pub delta: DeltaPolicy,
    /// The attacks that apply to this cell's method, in config order.
    pub attacks: Vec<&'a AttackSpec>,
    /// Hash of every input of the cell; a stored record with another fingerprint is stale.
    pub fingerprint: String,
    /// Seeds of the same (dataset, method, epsilon): the report's maximum of eps_lb over them is
    /// a valid bound only if each seed's bound is certified at alpha / runs (Bonferroni).
    pub runs: usize,
}

/// The cells of a config in report order: datasets, methods, epsilons, seeds as listed.
pub fn plan(config: &AuditConfig) -> Vec<CellSpec<'_>> {
    let seeds = config.seed_list();
    let mut cells = vec![];
    for d in &config.datasets {
        for m in &config.methods {
            let attacks: Vec<&AttackSpec> =
                config.attacks.iter().filter(|a| a.applies_to(&d.label(), &m.label())).collect();
            let delta = config.delta_for(m);
            for eps in config.epsilon_grid(m) {
                for &seed in &seeds {
                    let key = CellKey { dataset: d.label(), method: m.label(), epsilon: eps, seed };
                    let fingerprint = fingerprint(&key, d, m, delta, &attacks);
                    cells.push(CellSpec {
                        key,
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

fn fingerprint(key: &CellKey, d: &DatasetSpec, m: &MethodSpec, delta: DeltaPolicy, attacks: &[&AttackSpec]) -> String {
    let inputs = serde_json::json!({
        "key": key, "dataset": d, "method": m, "delta": delta, "attacks": attacks,
        "version": env!("CARGO_PKG_VERSION"),
    });
    hex(&Sha256::digest(inputs.to_string().as_bytes()))
}
