//! How a config's tables become runnable things: a method's table becomes a `train::Recipe`
//! (every key is a recipe field, so a typo such as `hosp = 2` fails with the field's name), and
//! an attack's `knowledge`/`params` tables are checked against the attack's schema, all before
//! any work.
use crate::error::Error;
use crate::methods::{Method, Recipe};
use crate::privacy::accountant::PrivacyUnit;
use crate::report::config::{DeltaPolicy, Params};
use crate::report::record::Epsilon;
use serde::Deserialize;

/// Keys of a [[methods]] table that are not recipe fields, and why.
const RESERVED: &[(&str, &str)] = &[
    ("sweep", ""),
    ("epsilon", ": use `epsilons` (the grid) instead"),
    ("method", ": it is the entry's own `method`"),
    ("delta", ": it is the entry's own `delta`"),
];

/// Parses a method name as `gnnaudit train --method` spells it.
pub fn parse_method(name: &str) -> Option<Method> {
    Method::from_name(name)
}

/// Every method name `train` knows.
pub fn method_names() -> Vec<&'static str> {
    Method::names()
}

/// The privacy unit a method's epsilon grid applies to; None when it takes no epsilon (it then
/// runs once per seed at eps = inf). LPGNN's grid sets one of its two local budgets (`sweep`).
pub fn grid_unit(method: &str) -> Option<PrivacyUnit> {
    parse_method(method).filter(|m| m.takes_epsilon() || m.spec().sweeps_local_budgets).map(|m| m.privacy_unit())
}

/// The LPGNN budget the epsilon grid sets: "epsilon_x" (default) or "epsilon_y"; the other one is
/// a parameter (default inf). The claim is their sum (thesis Corollary 2).
pub fn lpgnn_swept(params: &Params) -> Result<&'static str, (String, String)> {
    match params.get("sweep") {
        None => Ok("epsilon_x"),
        Some(v) => match v.as_str() {
            Some("epsilon_x") => Ok("epsilon_x"),
            Some("epsilon_y") => Ok("epsilon_y"),
            _ => Err(("sweep".into(), format!("must be \"epsilon_x\" or \"epsilon_y\", got {v}"))),
        },
    }
}

/// The training recipe of one cell: the method's hyper-parameters, the cell's epsilon (left out
/// at inf: no noise) and the delta policy. Errors are (key, message).
pub fn build_recipe(
    method: &str,
    params: &Params,
    eps: Epsilon,
    delta: DeltaPolicy,
) -> Result<Recipe, (String, String)> {
    let m = parse_method(method).ok_or_else(|| {
        ("method".to_string(), format!("unknown method '{method}' (known: {})", method_names().join(", ")))
    })?;
    // Start from the method's own defaults (as `gnnaudit train` does), then apply the config.
    let mut table = toml::Table::try_from(Recipe::new(m, None))
        .map_err(|e| ("method".to_string(), format!("cannot build the defaults of {method}: {e}")))?;
    for (k, v) in params {
        if let Some((_, why)) = RESERVED.iter().find(|(r, _)| r == k) {
            if k == "sweep" && m.spec().sweeps_local_budgets {
                continue;
            }
            return Err((k.clone(), format!("'{k}' is not a hyper-parameter of {method}{why}")));
        }
        table.insert(k.clone(), v.clone());
    }
    if m.spec().sweeps_local_budgets {
        let swept = lpgnn_swept(params)?;
        if params.contains_key(swept) {
            return Err((
                swept.into(),
                format!("set by the epsilon grid (sweep = \"{swept}\"); remove it or sweep the other"),
            ));
        }
        table.insert(swept.into(), toml::Value::Float(eps.as_f64()));
    }
    table.insert("method".into(), toml::Value::String(m.name().into()));
    if let (true, Epsilon::Finite(e)) = (m.takes_epsilon(), eps) {
        table.insert("epsilon".into(), toml::Value::Float(e));
    }
    if let Some(d) = delta.fixed() {
        table.insert("delta".into(), toml::Value::Float(d));
    }
    let recipe = Recipe::deserialize(toml::Value::Table(table)).map_err(|e| {
        let msg = e.to_string().trim().replace('\n', " ");
        let key =
            if msg.contains("unknown field") { msg.split('`').nth(1).unwrap_or("").to_string() } else { String::new() };
        (key, msg)
    })?;
    recipe.validate().map_err(|e| match e {
        Error::InvalidParam { field, message } => (field, message),
        other => (String::new(), other.to_string()),
    })?;
    Ok(recipe)
}

/// Checks a method's hyper-parameters by building its recipe at every epsilon of its grid.
pub fn validate_params(
    method: &str,
    params: &Params,
    grid: &[Epsilon],
    delta: DeltaPolicy,
) -> Result<(), (String, String)> {
    for &eps in grid {
        build_recipe(method, params, eps, delta)?;
    }
    Ok(())
}

/// Applies a config table on top of a parameter struct's defaults: every key must be a field of
/// `T` and have its type. This checks attack parameters against the attacks crate's own structs,
/// so the config and the crate cannot drift apart. Errors are (key, message).
pub fn overlay<T>(base: &T, table: &Params) -> Result<T, (String, String)>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let mut value = serde_json::to_value(base).map_err(|e| (String::new(), e.to_string()))?;
    let known: Vec<String> = value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    for (k, v) in table {
        if !known.contains(k) {
            return Err((k.clone(), format!("unknown parameter '{k}' (known: {})", known.join(", "))));
        }
        let v = serde_json::to_value(v).map_err(|e| (k.clone(), e.to_string()))?;
        let previous = value[k.as_str()].clone();
        value[k.as_str()] = v;
        if let Err(e) = serde_json::from_value::<T>(value.clone()) {
            return Err((k.clone(), format!("{e} (default: {previous})")));
        }
    }
    serde_json::from_value(value).map_err(|e| (String::new(), e.to_string()))
}

/// A `Params` table from TOML text, for the tests of the audit's tables.
#[cfg(test)]
pub(super) fn toml_params(s: &str) -> Params {
    toml::from_str(s).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipes_come_from_method_tables_and_typos_name_the_key() {
        let auto = DeltaPolicy::Auto;
        let r = build_recipe("gap-edp", &toml_params("hops = 3\nepochs = 7"), Epsilon::Finite(2.0), auto).unwrap();
        assert_eq!(
            (r.knobs.get("hops"), r.train.epochs, r.epsilon, r.delta),
            (Some(&3.into()), Some(7), Some(2.0), None)
        );
        let r = build_recipe("gap-edp", &toml_params(""), Epsilon::Infinite, DeltaPolicy::Fixed(1e-5)).unwrap();
        assert_eq!((r.epsilon, r.delta), (None, Some(1e-5)));
        let r = build_recipe("mlp", &toml_params(""), Epsilon::Finite(1.0), auto).unwrap();
        assert_eq!(r.epsilon, None, "a non-private method takes no epsilon");
        let (k, m) = build_recipe("gap-edp", &toml_params("hosp = 2"), Epsilon::Infinite, auto).unwrap_err();
        assert_eq!(k, "hosp", "{m}");
        assert_eq!(
            build_recipe("gap-edp", &toml_params("epsilon = 2"), Epsilon::Infinite, auto).unwrap_err().0,
            "epsilon"
        );
        assert_eq!(build_recipe("gap-nope", &toml_params(""), Epsilon::Infinite, auto).unwrap_err().0, "method");
        assert!(build_recipe("gap-edp", &toml_params("hops = \"two\""), Epsilon::Infinite, auto).is_err());
        assert_eq!(grid_unit("gap-ndp"), Some(PrivacyUnit::Node));
        assert_eq!(grid_unit("mlp"), None);
    }

    #[test]
    fn overlay_sets_known_fields_and_names_bad_ones() {
        #[derive(serde::Serialize, serde::Deserialize, Default, Debug, PartialEq)]
        struct P {
            shadows: usize,
            online: bool,
            rate: Option<f64>,
        }
        let base = P { shadows: 16, online: true, rate: None };
        let p = overlay(&base, &toml_params("shadows = 4\nrate = 0.5")).unwrap();
        assert_eq!(p, P { shadows: 4, online: true, rate: Some(0.5) });
        assert_eq!(overlay(&base, &toml_params("shadow = 4")).unwrap_err().0, "shadow");
        let (k, m) = overlay(&base, &toml_params("online = \"yes\"")).unwrap_err();
        assert_eq!(k, "online");
        assert!(m.contains("default: true"), "{m}");
    }

    #[test]
    fn lpgnn_grid_sets_the_swept_budget() {
        let auto = DeltaPolicy::Auto;
        let r = build_recipe("lpgnn", &toml_params("epsilon_y = 1"), Epsilon::Finite(0.5), auto).unwrap();
        let k: crate::methods::lpgnn::LpgnnKnobs = r.own().unwrap();
        assert_eq!((k.epsilon_x, k.epsilon_y), (0.5, 1.0));
        let p = toml_params("sweep = \"epsilon_y\"\nepsilon_x = 1");
        let r = build_recipe("lpgnn", &p, Epsilon::Finite(2.0), auto).unwrap();
        let k: crate::methods::lpgnn::LpgnnKnobs = r.own().unwrap();
        assert_eq!((k.epsilon_x, k.epsilon_y), (1.0, 2.0));
        assert_eq!(
            build_recipe("lpgnn", &toml_params("epsilon_x = 1"), Epsilon::Finite(2.0), auto).unwrap_err().0,
            "epsilon_x"
        );
        assert_eq!(grid_unit("lpgnn"), Some(PrivacyUnit::Local));
    }
}
