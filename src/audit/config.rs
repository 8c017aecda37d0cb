//! The audit config (TOML): which datasets, methods, privacy budgets, seeds and attacks make up an
//! audit. Every struct denies unknown fields, so a typo is an error that names the field, and
//! `validate` checks every value before any training starts (linfa's ParamGuard idea).
//!
//! `configs/quick.toml` is the commented reference of every field.
use super::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::privacy::accountant::PrivacyUnit;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Free-form hyper-parameters or attack parameters, checked against the method's/attack's own
/// schema in `validate`. A BTreeMap keeps them in a stable order for the report.
pub type Params = BTreeMap<String, toml::Value>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Name of the audit; reports land in `<output>/<name>-<timestamp>/`.
    pub name: String,
    /// One line saying what the audit is for (shown at the top of the report).
    #[serde(default)]
    pub description: String,
    /// Folder that receives the report folders (default "reports"); `--out` overrides.
    #[serde(default = "default_output")]
    pub output: PathBuf,
    /// Number of repeats per (dataset, method, epsilon); the seeds are `seed .. seed + repeats`.
    #[serde(default = "one")]
    pub repeats: u32,
    /// First seed.
    #[serde(default)]
    pub seed: u64,
    /// Explicit seeds instead of `seed`/`repeats`.
    #[serde(default)]
    pub seeds: Option<Vec<u64>>,
    /// Required with `methods`; ignored with `target`.
    #[serde(default)]
    pub privacy: PrivacySpec,
    pub datasets: Vec<DatasetSpec>,
    /// Methods gnnaudit trains, or (with `target`) the one pseudo-method `external` standing for it.
    #[serde(default)]
    pub methods: Vec<MethodSpec>,
    /// A deployment gnnaudit did not train, in place of `methods` (see `external`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::external::TargetSpec>,
    /// The deployment's declared claim (with `target`), recomputed by the accountant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<crate::external::DeclaredClaim>,
    /// Attacks run against every trained target (empty: a utility-only audit).
    #[serde(default)]
    pub attacks: Vec<AttackSpec>,
    /// Torch device of every cell: cpu | cuda | cuda:N | auto [cpu]; `--device` overrides.
    /// Left out of the saved config when cpu, so CPU reports stay as they were.
    #[serde(default, skip_serializing_if = "crate::device::DeviceSpec::is_cpu")]
    pub device: crate::device::DeviceSpec,
}

fn default_output() -> PathBuf {
    PathBuf::from("reports")
}
fn one() -> u32 {
    1
}

/// Privacy budgets: one epsilon grid for every private method, optionally a different grid per
/// privacy level (the thesis sweeps 0.1..8 at edge level and 1..16 at node level), and the delta
/// policy.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacySpec {
    /// Epsilon grid for every private method ("inf" trains the method without noise); may be
    /// left out when every private method has a level grid or its own, and is refused when no
    /// method would use it (a grid that silently applies to nothing).
    #[serde(default)]
    pub epsilons: Vec<Epsilon>,
    /// Grid for edge-level methods instead of `epsilons`.
    #[serde(default)]
    pub edge_epsilons: Option<Vec<Epsilon>>,
    /// Grid for node-level methods instead of `epsilons`.
    #[serde(default)]
    pub node_epsilons: Option<Vec<Epsilon>>,
    /// Grid for locally private methods (LPGNN's eps_x + eps_y) instead of `epsilons`.
    #[serde(default)]
    pub local_epsilons: Option<Vec<Epsilon>>,
    /// "auto": below 1 / (number of private units: edges at edge level, nodes at node level), as
    /// the thesis sets it; or a fixed number in (0, 1).
    #[serde(default)]
    pub delta: DeltaPolicy,
}

/// How delta is chosen for a cell.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum DeltaPolicy {
    /// Below 1 / (number of private units), decided by the method from its dataset.
    #[default]
    Auto,
    Fixed(f64),
}

impl DeltaPolicy {
    pub fn fixed(self) -> Option<f64> {
        match self {
            DeltaPolicy::Auto => None,
            DeltaPolicy::Fixed(d) => Some(d),
        }
    }
}

impl Serialize for DeltaPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            DeltaPolicy::Auto => s.serialize_str("auto"),
            DeltaPolicy::Fixed(d) => s.serialize_f64(*d),
        }
    }
}

impl<'de> Deserialize<'de> for DeltaPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(x) => Ok(DeltaPolicy::Fixed(x)),
            Raw::Text(s) if s == "auto" => Ok(DeltaPolicy::Auto),
            Raw::Text(s) => Err(serde::de::Error::custom(format!("delta must be \"auto\" or a number, got \"{s}\""))),
        }
    }
}

/// A dataset and its preprocessing, the GAP/ProGAP pipeline: symmetrise, split, drop classes
/// below `min_class_count`, remove self loops and isolated nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// `synthetic` (embedded CSBM), a name in the data directory (e.g. "cora",
    /// "facebook100-Cornell5"), or a path to a .npz/.csv/.parquet file.
    pub name: String,
    /// Name used in the report and in cell files (default: `name`, or the file stem of a path).
    #[serde(default)]
    pub label: Option<String>,
    /// Drop classes with fewer nodes than this and relabel, as the GAP loader does (the
    /// Facebook100 set-ups use 1000). 0 keeps every class.
    #[serde(default)]
    pub min_class_count: usize,
    /// Train/val/test split; default: each method's paper split (75/10/15, LPGNN 50/25/25).
    #[serde(default)]
    pub split: Option<SplitSpec>,
    /// Seed of the split. Default: the run's seed, so every repeat draws a fresh split.
    #[serde(default)]
    pub split_seed: Option<u64>,
    /// Parameters of the synthetic CSBM generator (only for `name = "synthetic"`): nodes,
    /// classes, mean_degree, homophily, features, signal, seed.
    #[serde(default)]
    pub synthetic: Option<Params>,
}

impl DatasetSpec {
    pub fn label(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        let p = Path::new(&self.name);
        if self.name.contains('/') || p.extension().is_some() {
            p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| self.name.clone())
        } else {
            self.name.clone()
        }
    }
}

/// Node split by ratios of the (filtered) node set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitSpec {
    pub train: f64,
    pub val: f64,
    pub test: f64,
}

/// One method with its hyper-parameters. The privacy level is part of the method name (`-edp`
/// edge, `-ndp` node, `lpgnn` local); non-private methods run once per seed at eps = inf.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodSpec {
    /// Method name as in `gnnaudit train --method`.
    pub method: String,
    /// Name in the report (default: `method`); needed when one method appears twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Epsilon grid for this method only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilons: Option<Vec<Epsilon>>,
    /// Delta for this method only ("auto" or a number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<DeltaPolicy>,
    /// Every other key is a field of the method's `train::Recipe` (hops, depth, epochs, hidden,
    /// lr, batch_size, max_degree, mlp_layers, ...), checked by `validate`.
    #[serde(flatten)]
    pub params: Params,
}

impl MethodSpec {
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.method.clone())
    }
    /// The privacy unit its epsilon grid is about (None: takes no epsilon, runs at inf only).
    pub fn privacy_unit(&self) -> Option<PrivacyUnit> {
        super::recipe::grid_unit(&self.method)
    }
}

/// One attack, run against every target of the audit (or the listed methods only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttackSpec {
    /// Attack name as in `gnnaudit attack --attack` (see `known_attacks`), or `mechanism`: a
    /// mechanism-level audit whose params are those of `gnnaudit mechanism audit`.
    pub kind: String,
    /// Name in the report (default: `kind`); needed when one attack appears twice.
    #[serde(default)]
    pub label: Option<String>,
    /// Method labels this attack runs against (default: all). E.g. canary-edge for edge-level
    /// methods only.
    #[serde(default)]
    pub methods: Option<Vec<String>>,
    /// Dataset labels this attack runs on (default: all), e.g. when the adversary's knowledge
    /// (shadow nodes per class) only fits some datasets.
    #[serde(default)]
    pub datasets: Option<Vec<String>>,
    /// What the adversary is assumed to know (shadow graph size, known edges, public features).
    #[serde(default)]
    pub knowledge: Params,
    /// Attack parameters (number of shadow models, pairs, canaries, attack model, ...).
    #[serde(default)]
    pub params: Params,
}

impl AttackSpec {
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.kind.clone())
    }
    pub fn applies_to(&self, dataset_label: &str, method_label: &str) -> bool {
        self.methods.as_ref().is_none_or(|m| m.iter().any(|x| x == method_label))
            && self.datasets.as_ref().is_none_or(|d| d.iter().any(|x| x == dataset_label))
    }
}

/// Every attack kind a config may name: the attacks crate's registry, the mechanism audit and
/// the sensitivity replay.
pub fn known_attacks() -> Vec<&'static str> {
    let mut names = gnnaudit_attacks::AttackKind::NAMES.to_vec();
    names.extend([crate::report::tightness::KIND, crate::replay::audit::KIND]);
    names
}

impl AuditConfig {
    /// Reads and validates a config file; every error names the file and the field.
    /// Relative dataset paths are relative to the config's folder (as a manifest's are), so that
    /// an audit does not depend on the directory it is started from. Then everything a real run
    /// would refuse before training is checked ([`super::preflight`]), datasets loaded included.
    pub fn load(path: &Path, data_dir: Option<&Path>) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::bad_file(path, e))?;
        let mut cfg = Self::parse(&text).map_err(|e| match e {
            Error::InvalidParam { .. } => e,
            other => Error::bad_file(path, other),
        })?;
        cfg.resolve_paths(path.parent().unwrap_or(Path::new("")));
        cfg.validate(data_dir)?;
        super::preflight::check(&cfg, data_dir)?;
        Ok(cfg)
    }

    /// Rewrites relative dataset paths (names that look like a path) against `base`.
    pub fn resolve_paths(&mut self, base: &Path) {
        for d in &mut self.datasets {
            let p = Path::new(&d.name);
            let path_like = d.name.contains('/')
                || matches!(p.extension().and_then(|e| e.to_str()), Some("npz" | "toml" | "csv" | "parquet" | "pq"));
            if path_like && p.is_relative() && !base.as_os_str().is_empty() {
                if d.label.is_none() {
                    d.label = Some(d.label());
                }
                d.name = base.join(p).to_string_lossy().into_owned();
            }
        }
    }

    /// Parses TOML (no validation beyond the schema). Keys that contradict each other are
    /// refused here, since the schema's defaults cannot tell a given `repeats = 1` from none.
    pub fn parse(text: &str) -> Result<Self> {
        let mut cfg: Self = toml::from_str(text).map_err(|e| Error::Other(e.to_string().trim_end().to_string()))?;
        if let Ok(toml::Value::Table(t)) = text.parse::<toml::Value>() {
            if t.contains_key("seeds") {
                if let Some(k) = ["seed", "repeats"].into_iter().find(|k| t.contains_key(*k)) {
                    return Err(Error::invalid(
                        "seeds",
                        format!("`seeds` lists every seed, so `{k}` contradicts it; give either `seeds` or `seed`/`repeats`"),
                    ));
                }
            }
        }
        // An external target is planned as one pseudo-method carrying `[target]` and `[claim]`.
        if let Some(t) = &cfg.target {
            if cfg.methods.is_empty() {
                cfg.methods.push(crate::external::audit::method_spec(t, cfg.claim.as_ref())?);
            }
        }
        Ok(cfg)
    }

    /// The seeds of every (dataset, method, epsilon) group.
    pub fn seed_list(&self) -> Vec<u64> {
        match &self.seeds {
            Some(s) => s.clone(),
            None => (0..self.repeats as u64).map(|i| self.seed + i).collect(),
        }
    }

    /// The epsilon grid of one method: its own, else its level's, else the global one.
    /// Non-private methods have the single point inf.
    pub fn epsilon_grid(&self, m: &MethodSpec) -> Vec<Epsilon> {
        if let Some(g) = &m.epsilons {
            return g.clone();
        }
        let p = &self.privacy;
        match m.privacy_unit() {
            None => vec![Epsilon::Infinite],
            Some(PrivacyUnit::Edge) => p.edge_epsilons.clone().unwrap_or_else(|| p.epsilons.clone()),
            Some(PrivacyUnit::Node) => p.node_epsilons.clone().unwrap_or_else(|| p.epsilons.clone()),
            Some(PrivacyUnit::Local) => p.local_epsilons.clone().unwrap_or_else(|| p.epsilons.clone()),
            Some(PrivacyUnit::Class | PrivacyUnit::Subclass) => p.epsilons.clone(),
            Some(PrivacyUnit::None) => vec![Epsilon::Infinite],
        }
    }

    pub fn delta_for(&self, m: &MethodSpec) -> DeltaPolicy {
        m.delta.unwrap_or(self.privacy.delta)
    }

    /// Checks every value before any work; errors name the field (`methods[2].method`, ...).
    pub fn validate(&self, data_dir: Option<&Path>) -> Result<()> {
        let bad = |field: String, msg: String| Err(Error::invalid(field, msg));
        if !is_file_safe(&self.name) {
            return bad("name".into(), format!("'{}' must be non-empty letters, digits, '-', '_' or '.'", self.name));
        }
        let seeds = self.seed_list();
        if self.seeds.is_some() && (self.repeats != 1 || self.seed != 0) {
            return bad("seeds".into(), "give either `seeds` or `seed`/`repeats`, not both".into());
        }
        if seeds.is_empty() {
            return bad(
                if self.seeds.is_some() { "seeds" } else { "repeats" }.into(),
                "must give at least one seed".into(),
            );
        }
        if seeds.iter().collect::<BTreeSet<_>>().len() != seeds.len() {
            return bad("seeds".into(), "seeds must be distinct".into());
        }
        if let Some(t) = &self.target {
            crate::external::audit::validate(t, self.claim.as_ref())?;
            if self.methods.len() != 1 || self.methods[0].method != crate::external::audit::EXTERNAL_METHOD {
                return bad("methods".into(), "give either [[methods]] or [target], not both".into());
            }
        } else if self.claim.is_some() {
            return bad(
                "claim".into(),
                "[claim] declares an external deployment's mechanism; it needs [target]".into(),
            );
        } else {
            self.validate_global_grid()?;
        }
        for (name, g) in [
            ("privacy.edge_epsilons", &self.privacy.edge_epsilons),
            ("privacy.node_epsilons", &self.privacy.node_epsilons),
            ("privacy.local_epsilons", &self.privacy.local_epsilons),
        ] {
            if let Some(g) = g {
                validate_grid(name, g)?;
            }
        }
        validate_delta("privacy.delta", self.privacy.delta)?;

        if self.datasets.is_empty() {
            return bad("datasets".into(), "at least one [[datasets]] entry is required".into());
        }
        let mut labels = BTreeSet::new();
        for (i, d) in self.datasets.iter().enumerate() {
            let f = |k: &str| format!("datasets[{i}].{k}");
            if !is_file_safe(&d.label()) {
                return bad(f("label"), format!("'{}' must be letters, digits, '-', '_' or '.'", d.label()));
            }
            if !labels.insert(d.label()) {
                return bad(f("label"), format!("dataset '{}' appears twice; give one a different label", d.label()));
            }
            if let Some(s) = &d.split {
                for (k, v) in [("train", s.train), ("val", s.val), ("test", s.test)] {
                    if !(v > 0.0 && v < 1.0) {
                        return bad(f(&format!("split.{k}")), format!("{v} is outside (0, 1)"));
                    }
                }
                if s.train + s.val + s.test > 1.0 + 1e-9 {
                    return bad(f("split"), format!("ratios sum to {} > 1", s.train + s.val + s.test));
                }
            }
            if d.synthetic.is_some() && d.name != "synthetic" {
                return bad(f("synthetic"), "only valid with name = \"synthetic\"".into());
            }
            if d.name == "synthetic" {
                super::execute::csbm_of(d).map_err(|e| Error::invalid(f("synthetic"), e))?;
            }
            resolve_dataset(&d.name, data_dir).map_err(|e| Error::invalid(f("name"), e))?;
        }

        if self.methods.is_empty() {
            return bad("methods".into(), "at least one [[methods]] entry is required".into());
        }
        let mut labels = BTreeSet::new();
        for (i, m) in self.methods.iter().enumerate().filter(|_| self.target.is_none()) {
            let f = |k: &str| format!("methods[{i}].{k}");
            if super::recipe::parse_method(&m.method).is_none() {
                let names = super::recipe::method_names().join(", ");
                return bad(f("method"), format!("unknown method '{}' (known: {names})", m.method));
            }
            if !is_file_safe(&m.label()) {
                return bad(f("label"), format!("'{}' must be letters, digits, '-', '_' or '.'", m.label()));
            }
            if !labels.insert(m.label()) {
                return bad(f("label"), format!("method '{}' appears twice; give one a different label", m.label()));
            }
            if let Some(g) = &m.epsilons {
                validate_grid(&f("epsilons"), g)?;
                if m.privacy_unit().is_none() && g.iter().any(|e| !e.is_infinite()) {
                    return bad(f("epsilons"), format!("'{}' is not private; only inf is meaningful", m.method));
                }
            }
            if let Some(d) = m.delta {
                validate_delta(&f("delta"), d)?;
            }
            super::recipe::validate_params(&m.method, &m.params, &self.epsilon_grid(m), self.delta_for(m))
                .map_err(|(k, msg)| Error::invalid(if k.is_empty() { format!("methods[{i}]") } else { f(&k) }, msg))?;
        }

        let mut labels = BTreeSet::new();
        for (i, a) in self.attacks.iter().enumerate() {
            let f = |k: &str| format!("attacks[{i}].{k}");
            let known = known_attacks();
            if !known.contains(&a.kind.as_str()) {
                return bad(f("kind"), format!("unknown attack '{}' (known: {})", a.kind, known.join(", ")));
            }
            if !is_file_safe(&a.label()) {
                return bad(f("label"), format!("'{}' must be letters, digits, '-', '_' or '.'", a.label()));
            }
            if !labels.insert(a.label()) {
                return bad(f("label"), format!("attack '{}' appears twice; give one a different label", a.label()));
            }
            if let Some(ms) = &a.methods {
                for (j, name) in ms.iter().enumerate() {
                    if !self.methods.iter().any(|m| &m.label() == name) {
                        return bad(f(&format!("methods[{j}]")), format!("no method labelled '{name}' in this config"));
                    }
                }
            }
            if let Some(ds) = &a.datasets {
                for (j, name) in ds.iter().enumerate() {
                    if !self.datasets.iter().any(|d| &d.label() == name) {
                        return bad(
                            f(&format!("datasets[{j}]")),
                            format!("no dataset labelled '{name}' in this config"),
                        );
                    }
                }
            }
            if a.kind == crate::report::tightness::KIND {
                super::attack::mechanism_inputs(&a.knowledge, &a.params)
                    .map_err(|(k, msg)| Error::invalid(f(&k), msg))?;
                continue;
            }
            if a.kind == crate::replay::audit::KIND {
                crate::replay::audit::options(&a.knowledge, &a.params)
                    .map_err(|(k, msg)| Error::invalid(f(&k), msg))?;
                continue;
            }
            super::recipe::validate_attack_params(&a.kind, &a.knowledge, &a.params)
                .map_err(|(k, msg)| Error::invalid(f(&k), msg))?;
        }
        Ok(())
    }
}

impl AuditConfig {
    /// `privacy.epsilons` is needed when some private method has neither its own grid nor its
    /// level's, and refused when given but used by none (`epsilons` next to `edge_epsilons` and
    /// `node_epsilons` that cover every method: it would silently apply to nothing).
    fn validate_global_grid(&self) -> Result<()> {
        let p = &self.privacy;
        let users: Vec<&MethodSpec> = self
            .methods
            .iter()
            .filter(|m| m.epsilons.is_none())
            .filter(|m| match m.privacy_unit() {
                Some(PrivacyUnit::Edge) => p.edge_epsilons.is_none(),
                Some(PrivacyUnit::Node) => p.node_epsilons.is_none(),
                Some(PrivacyUnit::Local) => p.local_epsilons.is_none(),
                Some(PrivacyUnit::Class | PrivacyUnit::Subclass) => true,
                _ => false,
            })
            .collect();
        match (p.epsilons.is_empty(), users.first()) {
            (true, Some(m)) => Err(Error::invalid(
                "privacy.epsilons",
                format!("method '{}' needs an epsilon grid: give privacy.epsilons (or its level's grid)", m.label()),
            )),
            (false, None) if p.edge_epsilons.is_some() || p.node_epsilons.is_some() || p.local_epsilons.is_some() => {
                Err(Error::invalid(
                    "privacy.epsilons",
                    "no method uses it: every private method takes its grid from privacy.edge_epsilons, \
                 node_epsilons, local_epsilons or its own `epsilons`; remove it (or the level grids)",
                ))
            }
            (false, _) => validate_grid("privacy.epsilons", &p.epsilons),
            (true, None) => Ok(()),
        }
    }
}

fn validate_grid(field: &str, grid: &[Epsilon]) -> Result<()> {
    if grid.is_empty() {
        return Err(Error::invalid(field, "the epsilon grid is empty"));
    }
    for (i, e) in grid.iter().enumerate() {
        if let Epsilon::Finite(x) = e {
            if !(*x > 0.0) {
                return Err(Error::invalid(format!("{field}[{i}]"), format!("epsilon must be > 0, got {x}")));
            }
        }
    }
    for (i, e) in grid.iter().enumerate() {
        if grid[..i].contains(e) {
            return Err(Error::invalid(format!("{field}[{i}]"), format!("epsilon {e} appears twice")));
        }
    }
    Ok(())
}

fn validate_delta(field: &str, d: DeltaPolicy) -> Result<()> {
    match d {
        DeltaPolicy::Fixed(x) if !(x > 0.0 && x < 1.0) => {
            Err(Error::invalid(field, format!("delta {x} is outside (0, 1)")))
        }
        _ => Ok(()),
    }
}

/// Names that become file names: no separators, no surprises.
fn is_file_safe(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// Where a dataset comes from, resolved without loading it (for validation and provenance).
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetSource {
    /// Generated in memory (the synthetic CSBM).
    Embedded,
    File(PathBuf),
}

/// Resolves a dataset name the way the loaders do: `synthetic`; an existing path; then
/// `<dir>/<name>.npz` in `--data-dir`, `GNNAUDIT_DATA` and `./datasets`.
pub fn resolve_dataset(name: &str, data_dir: Option<&Path>) -> Result<DatasetSource> {
    if name == "synthetic" {
        return Ok(DatasetSource::Embedded);
    }
    let p = Path::new(name);
    if p.is_file() {
        return Ok(DatasetSource::File(p.to_path_buf()));
    }
    let mut searched = vec![];
    let env_dir = std::env::var_os("GNNAUDIT_DATA").map(PathBuf::from);
    for dir in data_dir.map(Path::to_path_buf).into_iter().chain(env_dir).chain([PathBuf::from("datasets")]) {
        for cand in [dir.join(format!("{name}.npz")), dir.join(name)] {
            if cand.is_file() {
                return Ok(DatasetSource::File(cand));
            }
        }
        searched.push(dir);
    }
    Err(Error::DatasetNotFound { name: name.to_string(), searched })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        name = "t"
        [privacy]
        epsilons = [1, 8, inf]
        [[datasets]]
        name = "synthetic"
        [[methods]]
        method = "gap-edp"
        hops = 2
        [[methods]]
        method = "mlp"
        [[attacks]]
        kind = "mia"
    "#;

    fn field_of(e: Error) -> String {
        match e {
            Error::InvalidParam { field, .. } => field,
            other => panic!("expected InvalidParam, got {other}"),
        }
    }

    #[test]
    fn minimal_config_parses_with_defaults_and_grids() {
        let c = AuditConfig::parse(MINIMAL).unwrap();
        c.validate(None).unwrap();
        assert_eq!(c.seed_list(), vec![0]);
        assert_eq!(c.output, PathBuf::from("reports"));
        assert_eq!(c.privacy.delta, DeltaPolicy::Auto);
        assert_eq!(c.methods[0].params.get("hops"), Some(&toml::Value::Integer(2)));
        assert_eq!(c.epsilon_grid(&c.methods[0]).len(), 3);
        assert_eq!(c.epsilon_grid(&c.methods[1]), vec![Epsilon::Infinite]);
    }

    #[test]
    fn unknown_fields_are_errors_naming_the_field() {
        let text = MINIMAL.replace("epsilons = [1, 8, inf]", "epsilons = [1]\nepsilon = 2");
        let msg = AuditConfig::parse(&text).unwrap_err().to_string();
        assert!(msg.contains("unknown field `epsilon`"), "{msg}");
        let text = MINIMAL.replace("kind = \"mia\"", "kind = \"mia\"\nshadow = 3");
        let msg = AuditConfig::parse(&text).unwrap_err().to_string();
        assert!(msg.contains("unknown field `shadow`"), "{msg}");
    }

    #[test]
    fn bad_values_are_rejected_before_any_work() {
        let check = |from: &str, to: &str| {
            let c = AuditConfig::parse(&MINIMAL.replace(from, to)).unwrap();
            field_of(c.validate(None).unwrap_err())
        };
        assert_eq!(check("method = \"gap-edp\"", "method = \"gap-xyz\""), "methods[0].method");
        assert_eq!(check("[1, 8, inf]", "[1, 0, inf]"), "privacy.epsilons[1]");
        assert_eq!(check("[1, 8, inf]", "[-1]"), "privacy.epsilons[0]");
        assert_eq!(check("name = \"synthetic\"", "name = \"no-such-dataset-xyz\""), "datasets[0].name");
        assert_eq!(check("kind = \"mia\"", "kind = \"mind-reading\""), "attacks[0].kind");
        assert_eq!(check("[privacy]", "[privacy]\ndelta = 1.5"), "privacy.delta");
        assert_eq!(check("name = \"t\"", "name = \"t\"\nrepeats = 0"), "repeats");
        assert_eq!(check("method = \"mlp\"", "method = \"gap-edp\""), "methods[1].label");
    }
}
