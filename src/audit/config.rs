//! Reading an audit config: parse the TOML into the schema (`report::config`), resolve paths,
//! and `validate` every value before any training starts (linfa's ParamGuard idea); errors name
//! the field.
use super::recipe;
use crate::error::{Error, Result};
use crate::privacy::accountant::PrivacyUnit;
pub use crate::report::config::*;
use crate::report::record::Epsilon;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

impl MethodSpec {
    /// The privacy unit its epsilon grid is about (None: takes no epsilon, runs at inf only).
    pub fn privacy_unit(&self) -> Option<PrivacyUnit> {
        recipe::grid_unit(&self.method)
    }
}

/// Every attack `gnnaudit attack` knows.
pub const KNOWN_ATTACKS: &[&str] = &[
    "mia",
    "mia-metric",
    "lira",
    "link-stealing",
    "canary-edge",
    "canary-node",
    "canary-ldp",
    "canary-ldp-features",
    "canary-ldp-feature",
    "canary-aggregation",
    "canary-subclass",
    "inversion",
    "graph-reconstruction",
    "attribute",
    "degree-inference",
    "mechanism",
    // Not an attack of the attacks crate: the grey-box replay of `crate::replay::audit`.
    "sensitivity",
];

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
            if !KNOWN_ATTACKS.contains(&a.kind.as_str()) {
                return bad(f("kind"), format!("unknown attack '{}' (known: {})", a.kind, KNOWN_ATTACKS.join(", ")));
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
