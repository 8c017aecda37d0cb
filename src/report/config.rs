//! The audit config's schema (TOML), as `report.json` records it under `config`. Every struct
//! denies unknown fields, so a typo is an error that names the field. Reading a file, checking
//! values against the methods and attacks, and planning cells are the audit's (`audit::config`).
//!
//! `configs/quick.toml` is the commented reference of every field.
use super::record::Epsilon;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    /// Deployments gnnaudit did not train, in place of `methods` (see `external`): one
    /// `[target]` table, or several named `[[target]]` tables, each with its own rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Targets>,
    /// The deployments' declared claim (with `target`), recomputed by the accountant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<crate::external::DeclaredClaim>,
    /// The positive control of every external target: a deployment of the same kinds as
    /// `target` that leaks (e.g. the model trained without noise). Each attack is run on it at
    /// the same settings and judged against the target's claim; only a control it refutes lets a
    /// row say `not refuted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<crate::external::TargetSpec>,
    /// Attacks run against every trained target (empty: a utility-only audit).
    #[serde(default)]
    pub attacks: Vec<AttackSpec>,
    /// Torch device of every cell: cpu | cuda | cuda:N | auto [cpu]; `--device` overrides.
    /// Left out of the saved config when cpu, so CPU reports stay as they were.
    #[serde(default, skip_serializing_if = "crate::device::DeviceSpec::is_cpu")]
    pub device: crate::device::DeviceSpec,
    /// `--data-dir` of this invocation (not part of the config): where datasets given by name
    /// are found, so that cells are keyed on the file's content however it was found.
    #[serde(skip)]
    pub data_dir: Option<PathBuf>,
}

/// One external deployment: its row name and its table.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedTarget {
    /// The name its rows carry (the report's method column and `report diff`'s pairing key).
    pub name: Option<String>,
    pub spec: crate::external::TargetSpec,
}

impl NamedTarget {
    /// The row name: `name`, else the target's kind.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.spec.kind().to_string())
    }
}

/// `[target]` or `[[target]]`: the external deployments of a config, in config order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "toml::Value", into = "toml::Value")]
pub struct Targets(pub Vec<NamedTarget>);

impl Targets {
    pub fn iter(&self) -> std::slice::Iter<'_, NamedTarget> {
        self.0.iter()
    }
}

impl TryFrom<toml::Value> for Targets {
    type Error = String;
    fn try_from(v: toml::Value) -> Result<Self, String> {
        let one = |v: toml::Value, at: &str| -> Result<NamedTarget, String> {
            let toml::Value::Table(mut t) = v else {
                return Err(format!(
                    "{at} must be a table (kind = \"torchscript\" | \"command\" | \"posteriors\", ...)"
                ));
            };
            let name = match t.remove("name") {
                None => None,
                Some(toml::Value::String(s)) => Some(s),
                Some(other) => return Err(format!("{at}.name must be a string, got {other}")),
            };
            let spec = crate::external::TargetSpec::deserialize(toml::Value::Table(t))
                .map_err(|e| format!("{at}: {}", e.to_string().trim()))?;
            Ok(NamedTarget { name, spec })
        };
        match v {
            toml::Value::Array(items) => {
                if items.is_empty() {
                    return Err("[[target]] lists no deployment".into());
                }
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| one(t, &format!("target[{i}]")))
                    .collect::<Result<_, _>>()
                    .map(Targets)
            }
            v => Ok(Targets(vec![one(v, "target")?])),
        }
    }
}

impl From<Targets> for toml::Value {
    fn from(t: Targets) -> toml::Value {
        let table = |n: NamedTarget| {
            let mut v = toml::Value::try_from(&n.spec).unwrap_or_else(|_| toml::Value::Table(Default::default()));
            if let (toml::Value::Table(t), Some(name)) = (&mut v, n.name) {
                t.insert("name".into(), toml::Value::String(name));
            }
            v
        };
        let mut list = t.0;
        if list.len() == 1 {
            table(list.remove(0))
        } else {
            toml::Value::Array(list.into_iter().map(table).collect())
        }
    }
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
}

/// One attack, run against every target of the audit (or the listed methods only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttackSpec {
    /// Attack name as in `gnnaudit attack --attack` (see `audit::config::known_attacks`), or `mechanism`: a
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

impl AuditConfig {
    /// The seeds of every (dataset, method, epsilon) group.
    pub fn seed_list(&self) -> Vec<u64> {
        match &self.seeds {
            Some(s) => s.clone(),
            None => (0..self.repeats as u64).map(|i| self.seed + i).collect(),
        }
    }

    pub fn delta_for(&self, m: &MethodSpec) -> DeltaPolicy {
        m.delta.unwrap_or(self.privacy.delta)
    }
}
