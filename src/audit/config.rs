//! Parsing an audit config: TOML into the schema (`report::config`, re-exported here), relative
//! paths resolved, an external `[target]` turned into its pseudo-method, and each method's epsilon
//! grid. Checking the values is `validate`'s; planning cells is `cell`'s.
use super::recipe;
use crate::error::{Error, Result};
use crate::external::{DeclaredClaim, TargetSpec};
use crate::privacy::accountant::PrivacyUnit;
pub use crate::report::config::*;
use crate::report::record::Epsilon;
use std::path::Path;

impl MethodSpec {
    /// The privacy unit its epsilon grid is about (None: takes no epsilon, runs at inf only).
    pub fn privacy_unit(&self) -> Option<PrivacyUnit> {
        recipe::grid_unit(&self.method)
    }
}

/// Every attack kind a config may name: the attacks crate's registry, the mechanism audit and
/// the sensitivity replay.
pub fn known_attacks() -> Vec<&'static str> {
    let mut names = gnnaudit_attacks::AttackKind::NAMES.to_vec();
    names.extend([crate::report::tightness::KIND, crate::replay::KIND]);
    names
}

impl AuditConfig {
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
        // Each external target is planned as one pseudo-method named after it, carrying its
        // table, `[claim]` and `[control]`.
        if let Some(targets) = &cfg.target {
            if cfg.methods.is_empty() {
                for t in targets.iter() {
                    cfg.methods.push(external_method_spec(t, cfg.claim.as_ref(), cfg.control.as_ref())?);
                }
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
}

/// The pseudo-method name of an external target's cells.
pub const EXTERNAL_METHOD: &str = "external";

/// The pseudo-method standing for one external target (label: the target's name, else its
/// kind): planning, the cell store, reports, `check` and `report diff` then treat its cells like
/// any other (see `audit::external`).
pub fn external_method_spec(
    target: &NamedTarget,
    claim: Option<&DeclaredClaim>,
    control: Option<&TargetSpec>,
) -> Result<MethodSpec> {
    let mut params = Params::new();
    let to_toml = |e: toml::ser::Error| Error::Other(e.to_string());
    params.insert("target".into(), toml::Value::try_from(&target.spec).map_err(to_toml)?);
    if let Some(c) = claim {
        params.insert("claim".into(), toml::Value::try_from(c).map_err(to_toml)?);
    }
    if let Some(c) = control {
        params.insert("control".into(), toml::Value::try_from(c).map_err(to_toml)?);
    }
    Ok(MethodSpec { method: EXTERNAL_METHOD.into(), label: Some(target.label()), epsilons: None, delta: None, params })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

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
