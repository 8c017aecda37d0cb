//! How a config's tables become runnable things: a method's table becomes a `train::Recipe`
//! (every key is a recipe field, so a typo such as `hosp = 2` fails with the field's name), and
//! an attack's `knowledge`/`params` tables are checked against the attack's schema, all before
//! any work.
use super::config::{DeltaPolicy, Params};
use super::epsilon::Epsilon;
use crate::error::Error;
use crate::privacy::accountant::PrivacyUnit;
use crate::train::{Method, Recipe};
use serde::Deserialize;

/// Keys of a [[methods]] table that are not recipe fields, and why.
const RESERVED: &[(&str, &str)] = &[
    ("epsilon", "use `epsilons` (the grid) instead"),
    ("method", "it is the entry's own `method`"),
    ("delta", "it is the entry's own `delta`"),
];

/// Parses a method name as `gnnaudit train --method` spells it.
pub fn parse_method(name: &str) -> Option<Method> {
    <Method as clap::ValueEnum>::from_str(name, false).ok()
}

/// Every method name `train` knows.
pub fn method_names() -> Vec<&'static str> {
    <Method as clap::ValueEnum>::value_variants().iter().map(|m| m.name()).collect()
}

/// The privacy unit a method's epsilon grid applies to; None when it takes no epsilon (it then
/// runs once per seed at eps = inf).
pub fn grid_unit(method: &str) -> Option<PrivacyUnit> {
    parse_method(method).filter(|m| m.takes_epsilon()).map(|m| m.privacy_unit())
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
    let mut table = toml::Table::new();
    for (k, v) in params {
        if let Some((_, why)) = RESERVED.iter().find(|(r, _)| r == k) {
            return Err((k.clone(), format!("'{k}' is not a hyper-parameter: {why}")));
        }
        table.insert(k.clone(), v.clone());
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

/// What one parameter accepts.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Integer in [min, max].
    Int(i64, i64),
    /// Float in (min, max] (exclusive lower bound) .
    Float(f64, f64),
    /// Probability-like float in [0, 1).
    Fraction,
    Bool,
    Choice(&'static [&'static str]),
}

const ATTACK_KNOWLEDGE: &[(&str, Kind)] = &[
    // Shadow graph drawn from the target's distribution (thesis Section 4.8.2: 1000 per class).
    ("shadow_nodes_per_class", Kind::Int(1, 1 << 30)),
    // Fraction of the target's edges the adversary knows (supervised link stealing).
    ("known_edge_fraction", Kind::Fraction),
    ("public_features", Kind::Bool),
    // Nodes whose sensitive attribute the adversary knows (attribute inference).
    ("known_attribute_fraction", Kind::Fraction),
];

fn attack_schema(kind: &str) -> Vec<(&'static str, Kind)> {
    let own: &[(&str, Kind)] = match kind {
        "mia" => &[("attack_epochs", Kind::Int(1, 100_000)), ("attack_hidden", Kind::Int(1, 4096))],
        "mia-metric" => &[("metric", Kind::Choice(&["confidence", "entropy", "modified-entropy", "all"]))],
        "lira" => &[
            ("shadows", Kind::Int(1, 4096)),
            ("variant", Kind::Choice(&["online", "offline"])),
            ("global_variance", Kind::Bool),
        ],
        "link-stealing" => &[
            ("pairs", Kind::Int(2, 1 << 30)),
            ("mode", Kind::Choice(&["unsupervised", "supervised", "both"])),
            (
                "distance",
                Kind::Choice(&[
                    "cosine",
                    "euclidean",
                    "correlation",
                    "chebyshev",
                    "braycurtis",
                    "manhattan",
                    "canberra",
                    "sqeuclidean",
                    "best",
                ]),
            ),
        ],
        "canary-edge" => &[("canaries", Kind::Int(2, 1 << 30)), ("one_run", Kind::Bool)],
        "inversion" => &[("steps", Kind::Int(1, 1 << 30)), ("lambda", Kind::Float(-1e-12, 1e6))],
        "graph-reconstruction" => {
            &[("steps", Kind::Int(1, 1 << 30)), ("source", Kind::Choice(&["white-box", "posteriors", "embeddings"]))]
        }
        "attribute" => &[("attribute", Kind::Int(0, 1 << 30))],
        _ => &[],
    };
    own.to_vec()
}

/// Checks an attack's knowledge and parameter tables; the error is (key path, message).
pub fn validate_attack_params(kind: &str, knowledge: &Params, params: &Params) -> Result<(), (String, String)> {
    check_table(ATTACK_KNOWLEDGE, knowledge, "adversary knowledge").map_err(|(k, m)| (format!("knowledge.{k}"), m))?;
    check_table(&attack_schema(kind), params, &format!("parameter of {kind}"))
        .map_err(|(k, m)| (format!("params.{k}"), m))
}

fn check_table(schema: &[(&str, Kind)], params: &Params, what: &str) -> Result<(), (String, String)> {
    for (key, value) in params {
        let Some((_, kind)) = schema.iter().find(|(k, _)| k == key) else {
            let mut known: Vec<_> = schema.iter().map(|(k, _)| *k).collect();
            known.sort_unstable();
            known.dedup();
            let list = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err((key.clone(), format!("unknown {what} '{key}' (known: {list})")));
        };
        check_value(*kind, value).map_err(|m| (key.clone(), m))?;
    }
    Ok(())
}

fn check_value(kind: Kind, v: &toml::Value) -> Result<(), String> {
    use toml::Value as V;
    match (kind, v) {
        (Kind::Int(lo, hi), V::Integer(x)) if (lo..=hi).contains(x) => Ok(()),
        (Kind::Int(lo, hi), V::Integer(x)) => Err(format!("{x} is outside [{lo}, {hi}]")),
        (Kind::Float(lo, hi), V::Float(_) | V::Integer(_)) => {
            let x = as_f64(v);
            if x > lo && x <= hi {
                Ok(())
            } else {
                Err(format!("{x} is outside ({lo}, {hi}]"))
            }
        }
        (Kind::Fraction, V::Float(_) | V::Integer(_)) => {
            let x = as_f64(v);
            if (0.0..1.0).contains(&x) {
                Ok(())
            } else {
                Err(format!("{x} is outside [0, 1)"))
            }
        }
        (Kind::Bool, V::Boolean(_)) => Ok(()),
        (Kind::Choice(opts), V::String(s)) if opts.contains(&s.as_str()) => Ok(()),
        (Kind::Choice(opts), _) => Err(format!("must be one of {}", opts.join(", "))),
        (Kind::Int(..), _) => Err(format!("must be an integer, got {v}")),
        (Kind::Float(..) | Kind::Fraction, _) => Err(format!("must be a number, got {v}")),
        (Kind::Bool, _) => Err(format!("must be true or false, got {v}")),
    }
}

fn as_f64(v: &toml::Value) -> f64 {
    match v {
        toml::Value::Float(x) => *x,
        toml::Value::Integer(i) => *i as f64,
        _ => f64::NAN,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> Params {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn recipes_come_from_method_tables_and_typos_name_the_key() {
        let auto = DeltaPolicy::Auto;
        let r = build_recipe("gap-edp", &table("hops = 3\nepochs = 7"), Epsilon::Finite(2.0), auto).unwrap();
        assert_eq!((r.hops, r.epochs, r.epsilon, r.delta), (Some(3), Some(7), Some(2.0), None));
        let r = build_recipe("gap-edp", &table(""), Epsilon::Infinite, DeltaPolicy::Fixed(1e-5)).unwrap();
        assert_eq!((r.epsilon, r.delta), (None, Some(1e-5)));
        let r = build_recipe("mlp", &table(""), Epsilon::Finite(1.0), auto).unwrap();
        assert_eq!(r.epsilon, None, "a non-private method takes no epsilon");
        let (k, m) = build_recipe("gap-edp", &table("hosp = 2"), Epsilon::Infinite, auto).unwrap_err();
        assert_eq!(k, "hosp", "{m}");
        assert_eq!(build_recipe("gap-edp", &table("epsilon = 2"), Epsilon::Infinite, auto).unwrap_err().0, "epsilon");
        assert_eq!(build_recipe("gap-nope", &table(""), Epsilon::Infinite, auto).unwrap_err().0, "method");
        assert!(build_recipe("gap-edp", &table("hops = \"two\""), Epsilon::Infinite, auto).is_err());
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
        let p = overlay(&base, &table("shadows = 4\nrate = 0.5")).unwrap();
        assert_eq!(p, P { shadows: 4, online: true, rate: Some(0.5) });
        assert_eq!(overlay(&base, &table("shadow = 4")).unwrap_err().0, "shadow");
        let (k, m) = overlay(&base, &table("online = \"yes\"")).unwrap_err();
        assert_eq!(k, "online");
        assert!(m.contains("default: true"), "{m}");
    }

    #[test]
    fn attack_tables_are_checked() {
        let err = validate_attack_params("lira", &table("shadow_nodes_per_class = 100"), &table("shadow = 4"));
        assert_eq!(err.unwrap_err().0, "params.shadow");
    }
}
