//! A method's own knobs: a typed struct in the method's module (its defaults, docs and range
//! checks beside the code that reads them), stored in the recipe's open [`KnobMap`]. The map is
//! what lets a new method bring knobs without touching [`Recipe`](super::Recipe), the CLI or the
//! docs: each lists the structs' fields through the registry ([`OwnKnobs`]).
use super::Method;
use crate::error::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The knobs a recipe sets beyond its common fields, by name. Serialised flat into the recipe
/// (configs and checkpoints spell `teachers = 10`, not `knobs.teachers`). A null (how a v1
/// checkpoint wrote an unset `Option`) is the same as leaving the knob out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnobMap(BTreeMap<String, toml::Value>);

/// JSON has no infinity: serde_json writes an infinite float as null, which would read back as an
/// unset knob (LPGNN's `epsilon_y = inf` as its default 1). Non-finite floats are spelled as the
/// words `inf`, `-inf` and `nan`, which the map reads back as floats.
const NON_FINITE: [(&str, f64); 3] = [("inf", f64::INFINITY), ("-inf", f64::NEG_INFINITY), ("nan", f64::NAN)];

impl Serialize for KnobMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| match v {
            toml::Value::Float(f) if !f.is_finite() => {
                let word = NON_FINITE.iter().find(|(_, x)| x == f).map_or("nan", |(w, _)| w);
                (k, toml::Value::String(word.to_string()))
            }
            v => (k, v.clone()),
        }))
    }
}

impl<'de> Deserialize<'de> for KnobMap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let raw = BTreeMap::<String, Option<toml::Value>>::deserialize(d)?;
        let number = |v: toml::Value| match &v {
            toml::Value::String(w) => {
                NON_FINITE.iter().find(|(x, _)| x == w).map_or(v, |(_, f)| toml::Value::Float(*f))
            }
            _ => v,
        };
        Ok(KnobMap(raw.into_iter().filter_map(|(k, v)| v.map(|v| (k, number(v)))).collect()))
    }
}

impl KnobMap {
    pub fn set(&mut self, name: &str, value: impl Into<toml::Value>) {
        self.0.insert(name.to_string(), value.into());
    }
    pub fn get(&self, name: &str) -> Option<&toml::Value> {
        self.0.get(name)
    }
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
    pub fn remove(&mut self, name: &str) -> Option<toml::Value> {
        self.0.remove(name)
    }
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// A v1 checkpoint's flat recipe wrote these knobs for every method at these values (unset
    /// `Option`s as nulls, already dropped), and later ones `mlp_layers` until it moved into the
    /// MLPs' knobs; for a method that does not own them they are noise, and one it owns at its
    /// own default is the same as left unset.
    pub fn forget_v1_defaults(&mut self, method: Method) {
        let docs = method.spec().own_knobs.map(|o| o.docs()).unwrap_or_default();
        let v1: [(&str, toml::Value); 22] = [
            ("epsilon_x", 1.0.into()),
            ("epsilon_y", 1.0.into()),
            ("kx", 16.into()),
            ("ky", 8.into()),
            ("training", "drop".into()),
            ("backbone", "sage".into()),
            ("features", "multibit".into()),
            ("mechanism", "onebit".into()),
            ("aggregation", "sum".into()),
            ("encoder_layers", 2.into()),
            ("head_layers", 1.into()),
            ("layerwise", false.into()),
            ("max_degree", 100.into()),
            ("mlp_layers", 2.into()),
            ("max_grad_norm", 1.0.into()),
            ("sampled", 10.into()),
            ("clusters", 16.into()),
            ("alpha", 1.0.into()),
            ("kl_direction", "target-predicted".into()),
            ("subclasses", 10.into()),
            ("relation", "unbounded".into()),
            ("allow_large_delta", false.into()),
        ];
        for (k, v1) in v1 {
            let unset = match docs.iter().find(|d| d.name == k) {
                Some(own) => own.default.as_ref(),
                None => Some(&v1),
            };
            if unset.is_some() && self.0.get(k) == unset {
                self.0.remove(k);
            }
        }
    }

    /// The method's knob struct. Each knob is read on its own first, so a wrong type names its
    /// knob; unknown names are refused by [`Recipe::validate`](super::Recipe::validate) before
    /// anything reads the struct.
    pub fn parse<T: Knobs>(&self) -> Result<T> {
        self.check_types::<T>()?;
        let all: toml::Table = self.0.clone().into_iter().collect();
        let knobs = T::deserialize(toml::Value::Table(all))
            .map_err(|e| Error::invalid("knobs", e.to_string().trim().replace('\n', " ")))?;
        knobs.check()?;
        Ok(knobs)
    }
}

impl KnobMap {
    /// Reads each knob on its own into `T`, so that a value of the wrong type (or an unknown
    /// word) names its knob; ranges are [`Knobs::check`]'s.
    pub fn check_types<T: Knobs>(&self) -> Result<()> {
        for (k, v) in &self.0 {
            let one = toml::Table::from_iter([(k.clone(), v.clone())]);
            T::deserialize(toml::Value::Table(one))
                .map_err(|e| Error::invalid(k, e.to_string().trim().replace('\n', " ")))?;
        }
        Ok(())
    }
}

/// A method's knob struct: every field optional or defaulted (`#[serde(default)]`), unknown
/// names refused (`deny_unknown_fields`), each field's doc comment its help text.
pub trait Knobs: Serialize + DeserializeOwned + Default + schemars::JsonSchema {
    /// Range checks of the knobs together (the registry's `check` sees the whole recipe).
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// One knob as the CLI and the docs show it.
#[derive(Debug, Clone, PartialEq)]
pub struct KnobDoc {
    pub name: String,
    /// The field's doc comment.
    pub help: String,
    /// Its value when unset (None: the method derives it from the data or other knobs).
    pub default: Option<toml::Value>,
    /// A switch: `--name` alone means true.
    pub switch: bool,
}

/// What the registry keeps of a method's knob struct (type-erased, so that it fits a const).
#[derive(Clone, Copy)]
pub struct OwnKnobs {
    docs: fn() -> Vec<KnobDoc>,
    /// Parses and range-checks a map into the struct.
    pub check: fn(&KnobMap) -> Result<()>,
    /// Reads each knob of a map into its field's type ([`KnobMap::check_types`]).
    pub types: fn(&KnobMap) -> Result<()>,
    /// The fields this method reads, when variants share one struct (DPAR's GM reads c1, EM c2).
    only: Option<&'static [&'static str]>,
}

impl OwnKnobs {
    /// The knobs the method reads, with their docs.
    pub fn docs(&self) -> Vec<KnobDoc> {
        let mut all = (self.docs)();
        if let Some(only) = self.only {
            all.retain(|d| only.contains(&d.name.as_str()));
        }
        all
    }
}

/// The registry entry of knob struct `T`.
pub const fn own<T: Knobs>() -> OwnKnobs {
    OwnKnobs { docs: docs_of::<T>, check: check::<T>, types: KnobMap::check_types::<T>, only: None }
}

/// The registry entry of the fields `only` of knob struct `T`.
pub const fn own_some<T: Knobs>(only: &'static [&'static str]) -> OwnKnobs {
    OwnKnobs { docs: docs_of::<T>, check: check::<T>, types: KnobMap::check_types::<T>, only: Some(only) }
}

fn check<T: Knobs>(map: &KnobMap) -> Result<()> {
    map.parse::<T>().map(|_| ())
}

/// The fields of `T` from its JSON schema (names, doc comments, types) and its `Default` (values).
pub fn docs_of<T: Serialize + Default + schemars::JsonSchema>() -> Vec<KnobDoc> {
    let schema = schemars::schema_for!(T);
    let defaults = toml::Table::try_from(T::default()).unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(|p| p.as_object()) else { return vec![] };
    props
        .iter()
        .map(|(name, p)| {
            let help = p.get("description").and_then(|d| d.as_str()).unwrap_or("").split_whitespace();
            let mut help = help.collect::<Vec<_>>().join(" ");
            let words = words_of(&schema, p);
            if !words.is_empty() && !words.iter().all(|w| help.contains(w.as_str())) {
                help += &format!(" One of: {}.", words.join(", "));
            }
            let ty = p.get("type");
            let switch = ty.is_some_and(|t| t == "boolean");
            KnobDoc { name: name.clone(), help, default: defaults.get(name).cloned(), switch }
        })
        .collect()
}

/// The words a field of enum type takes (its `$ref`, directly or as an option), else none.
fn words_of(schema: &schemars::Schema, field: &serde_json::Value) -> Vec<String> {
    let refs = std::iter::once(field).chain(field.get("anyOf").and_then(|a| a.as_array()).into_iter().flatten());
    let Some(name) = refs.filter_map(|r| r.get("$ref")?.as_str()?.strip_prefix("#/$defs/")).next() else {
        return vec![];
    };
    let Some(def) = schema.get("$defs").and_then(|d| d.get(name)) else { return vec![] };
    let plain = def.get("enum").and_then(|e| e.as_array()).into_iter().flatten();
    let documented = def
        .get("oneOf")
        .and_then(|o| o.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("const").or_else(|| v.get("enum").and_then(|e| e.get(0))));
    plain.chain(documented).filter_map(|w| w.as_str().map(str::to_string)).collect()
}

/// The names of `method`'s own knobs.
pub fn names_of(method: Method) -> Vec<String> {
    method.spec().own_knobs.map(|o| o.docs().into_iter().map(|d| d.name).collect()).unwrap_or_default()
}

/// Every knob `method` reads besides [`ALWAYS_READ`]: the shared settings it reads, then its own.
pub fn knob_names(method: Method) -> Vec<String> {
    method.spec().reads.keys().map(str::to_string).chain(names_of(method)).collect()
}

/// Why `method` refuses `knob`: the methods that read it, and what `method` reads instead.
pub fn unread_knob(method: Method, knob: &str) -> String {
    let readers: Vec<&str> =
        Method::ALL.iter().filter(|m| knob_names(**m).iter().any(|k| k == knob)).map(|m| m.name()).collect();
    let spec = method.spec();
    let who = match readers.len() {
        0 => "no method reads it".to_string(),
        1..=4 => format!("{} read(s) it", readers.join(", ")),
        n => format!("{n} other methods read it"),
    };
    format!("{} does not use {knob} ({who}; {} reads {})", spec.name, spec.name, knob_names(method).join(", "))
}

/// A knob value typed on the command line: a TOML value (`10`, `0.5`, `true`, `inf`), else a
/// bare word (`coteach`).
pub fn parse_cli_value(text: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

/// Every own knob of every method, once, with the methods that read it: the CLI's flags.
pub fn all_docs() -> Vec<(KnobDoc, Vec<&'static str>)> {
    let mut out: Vec<(KnobDoc, Vec<&'static str>)> = vec![];
    for m in Method::ALL {
        for d in m.spec().own_knobs.map(|o| o.docs()).unwrap_or_default() {
            match out.iter_mut().find(|(o, _)| o.name == d.name) {
                Some((_, readers)) => readers.push(m.name()),
                None => out.push((d, vec![m.name()])),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A knob struct as a method declares one.
    #[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(default, deny_unknown_fields)]
    struct Toy {
        /// Teachers voting.
        teachers: Option<usize>,
        /// Run anyway.
        force: bool,
        /// A rate.
        rate: f64,
    }
    impl Knobs for Toy {}

    #[test]
    fn a_wrong_type_names_its_knob_and_nulls_are_unset() {
        let map: KnobMap = serde_json::from_str(r#"{"teachers": null, "rate": 0.5}"#).unwrap();
        assert!(!map.contains("teachers"));
        assert_eq!(map.parse::<Toy>().unwrap().rate, 0.5);
        let mut bad = map.clone();
        bad.set("teachers", "ten");
        match bad.parse::<Toy>() {
            Err(Error::InvalidParam { field, .. }) => assert_eq!(field, "teachers"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn docs_list_every_field_with_help_and_switches() {
        let d = docs_of::<Toy>();
        let names: Vec<&str> = d.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["force", "rate", "teachers"]);
        assert!(d[0].switch && !d[1].switch);
        assert_eq!(d[2].help, "Teachers voting.");
        assert_eq!(d[1].default, Some(toml::Value::Float(0.0)));
        assert_eq!(d[2].default, None);
    }

    /// The recipe of a gap-edp checkpoint written before the knob structs (format v1): every
    /// field of the flat recipe, unset ones as nulls.
    const V1_RECIPE: &str = r#"{"method": "gap-edp", "epsilon": 1.0, "delta": null, "hops": null, "depth": null,
        "max_degree": 100, "epochs": 2, "batch_size": null, "hidden": 16, "lr": 0.01, "weight_decay": 0.0,
        "dropout": 0.0, "activation": "selu", "optimizer": "adam", "mlp_layers": 2, "encoder_layers": 2,
        "base_layers": null, "head_layers": 1, "batch_norm": null, "norm_groups": null, "max_grad_norm": 1.0,
        "layerwise": false, "select_best_val": true, "mp_layers": null, "aggregation": "sum", "epsilon_x": 1.0,
        "epsilon_y": 1.0, "kx": 16, "ky": 8, "training": "drop", "backbone": "sage", "features": "multibit",
        "multibit_m": null, "inference_budget": null, "sampled": 10, "clusters": 16, "alpha": 1.0,
        "group_size": null, "kl_direction": "target-predicted", "mechanism": "onebit", "teachers": null,
        "queries": null, "vote_threshold": null, "check_noise_ratio": null, "student": null, "noise_rate": null,
        "removal_ratio": null, "count_decay": null, "unit_rate": null, "subclasses": 10, "relation": "unbounded",
        "allow_large_delta": false}"#;

    #[test]
    fn a_v1_checkpoint_recipe_reads_as_the_same_recipe() {
        let mut r: crate::methods::Recipe = serde_json::from_str(V1_RECIPE).unwrap();
        assert!(r.validate().is_err(), "unowned knobs are refused until the v1 defaults are forgotten");
        r.knobs.forget_v1_defaults(r.method);
        r.validate().unwrap();
        let mut now = crate::methods::Recipe::new(Method::GapEdp, Some(1.0));
        now.train.epochs = Some(2);
        assert_eq!(r, now);
        // A v1 value away from its default is kept (and then refused by name), never dropped.
        let text = V1_RECIPE.replace("\"clusters\": 16", "\"clusters\": 3");
        let mut odd: crate::methods::Recipe = serde_json::from_str(&text).unwrap();
        odd.knobs.forget_v1_defaults(odd.method);
        assert!(matches!(odd.validate(), Err(Error::InvalidParam { field, .. }) if field == "clusters"));
    }

    /// A method that reads part of a shared struct names fields of that struct (a typo would
    /// silently drop the knob from its docs, its flags and its refusals).
    #[test]
    fn every_partial_knob_list_names_fields_of_its_struct() {
        let mut partial = 0;
        for m in Method::ALL {
            let Some(own) = m.spec().own_knobs else { continue };
            let fields: Vec<String> = (own.docs)().into_iter().map(|d| d.name).collect();
            for name in own.only.unwrap_or_default() {
                assert!(fields.iter().any(|f| f == name), "{}: {name} is not a field of its knob struct", m.name());
                partial += 1;
            }
        }
        assert!(partial >= 30, "dpar's variants and class-dp-mlp read parts of their structs: {partial}");
    }

    #[test]
    fn cli_values_read_as_toml_else_words() {
        assert_eq!(parse_cli_value("10"), toml::Value::Integer(10));
        assert_eq!(parse_cli_value("0.5"), toml::Value::Float(0.5));
        assert_eq!(parse_cli_value("coteach"), toml::Value::String("coteach".into()));
        assert_eq!(parse_cli_value("true"), toml::Value::Boolean(true));
    }
}
