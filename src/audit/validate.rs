//! Checking an audit config before any work (linfa's ParamGuard idea): every value, every
//! method's hyper-parameters at every epsilon of its grid, every attack's tables against the
//! attacks crate's own structs; then `preflight` checks what only loading and calibrating shows.
//! Errors name the field (`methods[2].method`, ...).
use super::config::{AuditConfig, DeltaPolicy, MethodSpec, Params, EXTERNAL_METHOD};
use super::{attack, preflight, recipe};
use crate::data::Csbm;
use crate::error::{Error, Result};
use crate::privacy::accountant::PrivacyUnit;
use crate::report::record::Epsilon;
use crate::report::tightness;
use std::collections::BTreeSet;
use std::path::Path;

/// The size of an audit's grid, counted without planning it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridSize {
    pub datasets: usize,
    /// (method, epsilon) pairs over all methods.
    pub method_epsilons: usize,
    pub seeds: usize,
}

impl GridSize {
    pub fn cells(&self) -> u128 {
        self.datasets as u128 * self.method_epsilons as u128 * self.seeds as u128
    }

    /// Refuses a grid of more than `max` cells, naming the product and the flag that raises it.
    pub fn check(&self, max: u64) -> Result<()> {
        crate::ensure!(
            self.cells() <= max as u128,
            Error::invalid(
                "--max-cells",
                format!(
                    "the config's grid is {} dataset(s) x {} (method, epsilon) pair(s) x {} seed(s) = {} cells, more \
                     than {max}; trim datasets, methods, epsilons or repeats, or raise --max-cells",
                    self.datasets,
                    self.method_epsilons,
                    self.seeds,
                    self.cells()
                )
            )
        );
        Ok(())
    }
}

impl AuditConfig {
    /// The grid's size (datasets x (method, epsilon) pairs x seeds).
    pub fn grid_size(&self) -> GridSize {
        GridSize {
            datasets: self.datasets.len(),
            method_epsilons: self.methods.iter().map(|m| self.epsilon_grid(m).len()).sum(),
            seeds: self.seeds.as_ref().map_or(self.repeats as usize, Vec::len),
        }
    }

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
        cfg.data_dir = data_dir.map(Path::to_path_buf);
        cfg.validate(data_dir)?;
        preflight::check(&cfg, data_dir)?;
        Ok(cfg)
    }

    /// Checks every value before any work; errors name the field (`methods[2].method`, ...).
    pub fn validate(&self, data_dir: Option<&Path>) -> Result<()> {
        let bad = |field: String, msg: String| Err(Error::invalid(field, msg));
        if let Some(why) = file_name_problem(&self.name) {
            return bad("name".into(), why);
        }
        if self.seeds.is_none() && self.repeats as usize > crate::methods::recipe::MAX_REPEATS {
            return bad(
                "repeats".into(),
                format!(
                    "{} seeds per cell is more than the {} an audit runs (each seed trains a model)",
                    self.repeats,
                    crate::methods::recipe::MAX_REPEATS
                ),
            );
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
            // A target's name is its rows' method label, and so part of its cell files' names.
            for (i, name) in t.iter().enumerate().filter_map(|(i, t)| Some((i, t.name.as_deref()?))) {
                if let Some(why) = file_name_problem(name) {
                    let at = if t.0.len() > 1 { format!("target[{i}]") } else { "target".to_string() };
                    return bad(format!("{at}.name"), why);
                }
            }
            super::external::validate(t, self.claim.as_ref(), self.control.as_ref())?;
            if self.methods.len() != t.0.len() || self.methods.iter().any(|m| m.method != EXTERNAL_METHOD) {
                return bad("methods".into(), "give either [[methods]] or [target], not both".into());
            }
        } else if let Some(what) = [(self.claim.is_some(), "claim"), (self.control.is_some(), "control")]
            .into_iter()
            .find_map(|(given, what)| given.then_some(what))
        {
            return bad(
                what.into(),
                format!("[{what}] belongs to an external deployment (its declared mechanism, its positive control); it needs [target]"),
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
            if let Some(why) = file_name_problem(&d.label()) {
                return bad(f("label"), why);
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
                Csbm::from_table(d.synthetic.clone().unwrap_or_default())
                    .map_err(|e| Error::invalid(f("synthetic"), e))?;
            }
            super::execute::resolve_dataset(&d.name, data_dir).map_err(|e| Error::invalid(f("name"), e))?;
        }

        if self.methods.is_empty() {
            return bad("methods".into(), "at least one [[methods]] entry is required".into());
        }
        let mut labels = BTreeSet::new();
        for (i, m) in self.methods.iter().enumerate().filter(|_| self.target.is_none()) {
            let f = |k: &str| format!("methods[{i}].{k}");
            if recipe::parse_method(&m.method).is_none() {
                let names = recipe::method_names().join(", ");
                return bad(f("method"), format!("unknown method '{}' (known: {names})", m.method));
            }
            if let Some(why) = file_name_problem(&m.label()) {
                return bad(f("label"), why);
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
            recipe::validate_params(&m.method, &m.params, &self.epsilon_grid(m), self.delta_for(m))
                .map_err(|(k, msg)| Error::invalid(if k.is_empty() { format!("methods[{i}]") } else { f(&k) }, msg))?;
        }

        let mut labels = BTreeSet::new();
        for (i, a) in self.attacks.iter().enumerate() {
            let f = |k: &str| format!("attacks[{i}].{k}");
            let known = super::config::known_attacks();
            if !known.contains(&a.kind.as_str()) {
                return bad(f("kind"), format!("unknown attack '{}' (known: {})", a.kind, known.join(", ")));
            }
            if let Some(why) = file_name_problem(&a.label()) {
                return bad(f("label"), why);
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
            if a.kind == tightness::KIND {
                attack::mechanism_inputs(&a.knowledge, &a.params).map_err(|(k, msg)| Error::invalid(f(&k), msg))?;
                continue;
            }
            if a.kind == super::replay::KIND {
                super::replay::options(&a.knowledge, &a.params).map_err(|(k, msg)| Error::invalid(f(&k), msg))?;
                continue;
            }
            validate_attack_params(&a.kind, &a.knowledge, &a.params).map_err(|(k, msg)| Error::invalid(f(&k), msg))?;
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
            if x.is_nan() || *x <= 0.0 {
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

/// Why `s` cannot name a report's file or folder (names and labels do), or None. Letters and
/// digits of any script are fine; separators, spaces, quotes and the folder names `.` and `..`
/// are not.
pub(super) fn file_name_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("is empty; give a name of letters, digits, '-', '_' or '.'".into());
    }
    if s == "." || s == ".." {
        return Some(format!("'{s}' names a folder (the current or the parent one), not a file; give another name"));
    }
    s.chars().find(|&c| !(c.is_alphanumeric() || "-_.".contains(c))).map(|c| {
        format!("'{s}' holds {c:?}, which a file name must not; use letters (any script), digits, '-', '_' or '.'")
    })
}

/// Checks an attack's knowledge and parameter tables against the attacks crate's own structs;
/// the error is (key path, message).
pub fn validate_attack_params(
    kind: &str,
    knowledge: &Params,
    params: &Params,
) -> std::result::Result<(), (String, String)> {
    attack::attack_inputs(kind, knowledge, params).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::recipe::toml_params;
    use super::*;

    #[test]
    fn attack_tables_are_checked_against_the_attacks_crate() {
        assert!(validate_attack_params(
            "lira",
            &toml_params("shadow_nodes_per_class = 100"),
            &toml_params("shadows = 4")
        )
        .is_ok());
        let err = validate_attack_params("lira", &toml_params(""), &toml_params("shadow = 4"));
        assert_eq!(err.unwrap_err().0, "params.shadow");
        let err = validate_attack_params("mia", &toml_params("shadow_nodes = 4"), &toml_params(""));
        assert_eq!(err.unwrap_err().0, "knowledge.shadow_nodes");
        assert!(validate_attack_params("mia-metric", &toml_params(""), &toml_params("metric = \"entropy\"")).is_ok());
        assert_eq!(validate_attack_params("attribute", &toml_params(""), &toml_params("")).unwrap_err().0, "kind");
    }
}
