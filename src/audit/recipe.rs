//! The schema of method hyper-parameters and attack parameters as a config spells them, checked
//! before any work so that a typo ("hosp = 2") or an out-of-range value fails with the field's
//! name instead of being ignored.
use super::config::Params;

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
    /// Positive epsilon or "inf".
    Eps,
    Choice(&'static [&'static str]),
}

const COMMON: &[(&str, Kind)] = &[
    ("hidden", Kind::Int(1, 4096)),
    ("epochs", Kind::Int(1, 100_000)),
    ("lr", Kind::Float(0.0, 10.0)),
    ("dropout", Kind::Fraction),
    ("batch_norm", Kind::Bool),
    ("batch_size", Kind::Int(1, 1 << 30)),
    ("weight_decay", Kind::Float(-1e-12, 1.0)),
];
const DP_SGD: &[(&str, Kind)] = &[("max_grad_norm", Kind::Float(0.0, 1e6))];
const DEGREE: &[(&str, Kind)] = &[("max_degree", Kind::Int(1, 1 << 30))];
const GAP: &[(&str, Kind)] = &[
    ("hops", Kind::Int(1, 10)),
    ("encoder_layers", Kind::Int(0, 10)),
    ("base_layers", Kind::Int(0, 10)),
    ("head_layers", Kind::Int(1, 10)),
    ("encoder_epochs", Kind::Int(0, 100_000)),
];
const PROGAP: &[(&str, Kind)] = &[
    ("depth", Kind::Int(1, 10)),
    ("base_layers", Kind::Int(0, 10)),
    ("head_layers", Kind::Int(1, 10)),
    ("layerwise", Kind::Bool),
];
const LAYERS: &[(&str, Kind)] = &[("layers", Kind::Int(1, 10))];
const GAT: &[(&str, Kind)] = &[("heads", Kind::Int(1, 64))];
const LPGNN: &[(&str, Kind)] = &[
    // Which of LPGNN's two budgets the epsilon grid sets (default epsilon_x); the other one is
    // a parameter (default inf). The claim is their sum (thesis Corollary 2).
    ("sweep", Kind::Choice(&["epsilon_x", "epsilon_y"])),
    ("epsilon_x", Kind::Eps),
    ("epsilon_y", Kind::Eps),
    ("kx", Kind::Int(0, 64)),
    ("ky", Kind::Int(0, 64)),
    ("training", Kind::Choice(&["drop", "forward-correction", "cross-entropy"])),
    ("backbone", Kind::Choice(&["gcn", "gat", "sage"])),
    ("features", Kind::Choice(&["multibit", "ones", "rnd", "raw"])),
];

fn method_schema(method: &str) -> Vec<(&'static str, Kind)> {
    let groups: &[&[(&str, Kind)]] = match method {
        "mlp" => &[LAYERS],
        "dp-mlp" => &[LAYERS, DP_SGD],
        "sage" | "gcn" | "sage-edp" => &[LAYERS],
        "gat" => &[LAYERS, GAT],
        "gap-inf" | "gap-edp" => &[GAP],
        "gap-ndp" => &[GAP, DP_SGD, DEGREE],
        "progap-inf" | "progap-edp" => &[PROGAP],
        "progap-ndp" => &[PROGAP, DP_SGD, DEGREE],
        "dpgnn" => &[LAYERS, DP_SGD, DEGREE],
        "lpgnn" => &[LAYERS, GAT, LPGNN],
        _ => &[],
    };
    COMMON.iter().chain(groups.iter().flat_map(|g| g.iter())).copied().collect()
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

/// Checks a method's hyper-parameters; the error is (key, message).
pub fn validate_params(method: &str, params: &Params) -> Result<(), (String, String)> {
    check_table(&method_schema(method), params, &format!("hyper-parameter of {method}"))?;
    if method == "lpgnn" {
        let swept = lpgnn_swept(params);
        if params.contains_key(swept) {
            return Err((
                swept.into(),
                format!("set by the epsilon grid (sweep = \"{swept}\"); remove it or sweep the other"),
            ));
        }
    }
    Ok(())
}

/// The LPGNN budget the epsilon grid sets: "epsilon_x" (default) or "epsilon_y".
pub fn lpgnn_swept(params: &Params) -> &'static str {
    match params.get("sweep").and_then(|v| v.as_str()) {
        Some("epsilon_y") => "epsilon_y",
        _ => "epsilon_x",
    }
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
        (Kind::Eps, V::String(s)) if s == "inf" => Ok(()),
        (Kind::Eps, V::Float(_) | V::Integer(_)) if as_f64(v) > 0.0 => Ok(()),
        (Kind::Eps, _) => Err("must be a positive number or \"inf\"".into()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> Params {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn typos_and_ranges_name_the_key() {
        assert!(validate_params("gap-edp", &table("hops = 2\nepochs = 10")).is_ok());
        let (k, m) = validate_params("gap-edp", &table("hosp = 2")).unwrap_err();
        assert_eq!(k, "hosp");
        assert!(m.contains("known:") && m.contains("hops"), "{m}");
        assert_eq!(validate_params("gap-edp", &table("hops = 0")).unwrap_err().0, "hops");
        assert_eq!(validate_params("mlp", &table("hops = 2")).unwrap_err().0, "hops");
        assert_eq!(validate_params("lpgnn", &table("training = \"magic\"")).unwrap_err().0, "training");
        assert!(validate_params("lpgnn", &table("epsilon_y = \"inf\"\nkx = 16")).is_ok());
        assert_eq!(validate_params("lpgnn", &table("epsilon_x = 1")).unwrap_err().0, "epsilon_x");
        assert!(validate_params("lpgnn", &table("epsilon_x = 1\nsweep = \"epsilon_y\"")).is_ok());
        let err = validate_attack_params("lira", &table("shadow_nodes_per_class = 100"), &table("shadow = 4"));
        assert_eq!(err.unwrap_err().0, "params.shadow");
    }
}
