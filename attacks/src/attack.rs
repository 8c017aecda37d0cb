//! The attack registry: the one list of attacks. Each line names an attack and its parameter
//! struct (which implements `threat::Attack` in the attack's own module); `attacks!` derives from
//! it the kind enum with its names, the parsers (name, and TOML/JSON table with the struct's
//! `deny_unknown_fields`), and the dispatch of every `Attack` method. Adding an attack is its
//! module plus one line here. This is the only module that imports the attack modules.
use crate::error::{Error, Result};
use crate::stats::{BoundKind, ThresholdStrategy};
use crate::threat::{Access, AdversaryKnowledge, Attack, GameUnit, Outcome, Target};
use crate::{
    aggregation_canary, attribute, canary, degree_inference, feature_canary, gradient_canary, inversion, link_stealing,
    lira, membership, reconstruction, record_canary, subclass_canary,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A parse error naming the key it is about (relative to the table parsed) and what is wrong.
pub type KeyError = (String, String);

macro_rules! attacks {
    ($($name:literal => $variant:ident($ty:ty)),+ $(,)?) => {
        /// Which attack (serialised as its registry name).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum AttackKind {
            $($variant),+
        }

        /// One attack with its parameters.
        #[derive(Debug, Clone, PartialEq)]
        pub enum AttackConfig {
            $($variant($ty)),+
        }

        impl AttackKind {
            /// Every attack, in registry order.
            pub const ALL: &'static [AttackKind] = &[$(AttackKind::$variant),+];
            /// Every attack's name, in registry order (`gnnaudit attack --attack`, config `kind`).
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            pub fn name(self) -> &'static str {
                match self {
                    $(AttackKind::$variant => $name),+
                }
            }

            /// The attack with its default parameters.
            pub fn default_config(self) -> AttackConfig {
                match self {
                    $(AttackKind::$variant => AttackConfig::$variant(<$ty>::default())),+
                }
            }
        }

        impl AttackConfig {
            pub fn kind(&self) -> AttackKind {
                match self {
                    $(AttackConfig::$variant(_) => AttackKind::$variant),+
                }
            }

            /// The attack `kind` with its defaults overlaid by `table` (keys of its parameter
            /// struct); an unknown key or a bad value names the key.
            pub fn from_table(kind: AttackKind, table: &Map<String, Value>) -> std::result::Result<Self, KeyError> {
                Ok(match kind {
                    $(AttackKind::$variant => AttackConfig::$variant(overlay(&<$ty>::default(), table)?)),+
                })
            }

            /// The parameters as a table (every key with its value).
            pub fn to_table(&self) -> Map<String, Value> {
                let value = match self {
                    $(AttackConfig::$variant(p) => serde_json::to_value(p)),+
                };
                match value {
                    Ok(Value::Object(m)) => m,
                    _ => Map::new(),
                }
            }

            pub fn game(&self) -> GameUnit {
                match self {
                    $(AttackConfig::$variant(p) => p.game()),+
                }
            }

            pub fn requires(&self) -> Access {
                match self {
                    $(AttackConfig::$variant(p) => p.requires()),+
                }
            }

            pub fn apply_knowledge(&mut self, knowledge: &AdversaryKnowledge) -> Result<()> {
                match self {
                    $(AttackConfig::$variant(p) => p.apply_knowledge(knowledge)),+
                }
            }

            pub fn check(&self) -> Result<()> {
                match self {
                    $(AttackConfig::$variant(p) => p.check()),+
                }
            }

            pub fn run(&self, target: &Target, seed: u64) -> Result<Outcome> {
                match self {
                    $(AttackConfig::$variant(p) => p.run(target, seed)),+
                }
            }
        }
    };
}

attacks! {
    "mia" => Mia(membership::MiaParams),
    "mia-metric" => MiaMetric(membership::MetricMiaParams),
    "lira" => Lira(lira::LiraParams),
    "link-stealing" => LinkStealing(link_stealing::LinkStealingParams),
    "canary-edge" => CanaryEdge(canary::CanaryParams),
    "canary-node" => CanaryNode(record_canary::NodeCanaryParams),
    "canary-ldp" => CanaryLdp(record_canary::LdpCanaryParams),
    "canary-ldp-features" => CanaryLdpFeatures(feature_canary::LdpFeaturesCanaryParams),
    "canary-ldp-feature" => CanaryLdpFeature(feature_canary::LdpFeatureCanaryParams),
    "canary-aggregation" => CanaryAggregation(aggregation_canary::AggregationCanaryParams),
    "canary-subclass" => CanarySubclass(subclass_canary::SubclassCanaryParams),
    "canary-gradient" => CanaryGradient(gradient_canary::GradientCanaryParams),
    "inversion" => Inversion(inversion::InversionParams),
    "graph-reconstruction" => GraphReconstruction(reconstruction::ReconstructionParams),
    "attribute" => Attribute(attribute::AttributeParams),
    "degree-inference" => DegreeInference(degree_inference::DegreeInferenceParams),
}

impl AttackKind {
    pub fn parse(s: &str) -> Option<AttackKind> {
        AttackKind::ALL.iter().copied().find(|k| k.name() == s)
    }

    /// As `parse`, with an error that lists every name.
    pub fn from_name(s: &str) -> Result<AttackKind> {
        AttackKind::parse(s).ok_or_else(|| {
            Error::invalid("attack", format!("unknown attack '{s}' (known: {})", AttackKind::NAMES.join(", ")))
        })
    }

    /// The game unit of the attack's default parameters.
    pub fn game(self) -> GameUnit {
        self.default_config().game()
    }
}

impl std::fmt::Display for AttackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for AttackKind {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for AttackKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        AttackKind::from_name(&name).map_err(serde::de::Error::custom)
    }
}

/// One attack to run and how its eps lower bound is certified. The certification keys
/// (`confidence`, `bound`, `threshold_strategy`) are the same for every attack; the other keys
/// belong to the attack's own parameter struct.
#[derive(Debug, Clone, PartialEq)]
pub struct AttackParams {
    pub attack: AttackConfig,
    /// Confidence level of the bound behind eps_lb (None: 0.95).
    pub confidence: Option<f64>,
    /// The bound behind eps_lb (default clopper-pearson; see `stats`).
    pub bound: BoundKind,
    /// How its threshold is chosen (default split).
    pub strategy: ThresholdStrategy,
}

/// Keys of an attack table that configure the certification rather than the attack.
pub const CERTIFICATION_KEYS: [&str; 3] = ["confidence", "bound", "threshold_strategy"];

impl AttackParams {
    /// The attack with the default certification.
    pub fn new(attack: AttackConfig) -> Self {
        AttackParams { attack, confidence: None, bound: BoundKind::default(), strategy: ThresholdStrategy::default() }
    }

    pub fn kind(&self) -> AttackKind {
        self.attack.kind()
    }

    /// Parses one attack entry: `kind` by name, `table` (certification keys and the attack's
    /// own keys). Errors name the key (`kind` or a key of `table`).
    pub fn from_table(kind: &str, table: &Map<String, Value>) -> std::result::Result<Self, KeyError> {
        let k = AttackKind::parse(kind).ok_or_else(|| {
            ("kind".to_string(), format!("unknown attack '{kind}' (known: {})", AttackKind::NAMES.join(", ")))
        })?;
        let mut own = table.clone();
        let mut p = AttackParams::new(AttackKind::default_config(k));
        if let Some(c) = own.remove("confidence") {
            p.confidence = Some(c.as_f64().ok_or_else(|| ("confidence".to_string(), "must be a number".to_string()))?);
        }
        if let Some(b) = own.remove("bound") {
            p.bound = BoundKind::parse(b.as_str().unwrap_or_default()).ok_or_else(|| {
                let known: Vec<&str> = BoundKind::ALL.iter().map(|b| b.name()).collect();
                ("bound".to_string(), format!("unknown bound {b} (known: {})", known.join(", ")))
            })?;
        }
        if let Some(t) = own.remove("threshold_strategy") {
            p.strategy = ThresholdStrategy::parse(t.as_str().unwrap_or_default()).ok_or_else(|| {
                (
                    "threshold_strategy".to_string(),
                    format!("{t} is not split, split:F, bonferroni, explicit:T or planned:T"),
                )
            })?;
        }
        p.attack = AttackConfig::from_table(k, &own)?;
        Ok(p)
    }

    /// Every bound checked before any training: the confidence and the attack's own parameters.
    pub fn check(&self) -> Result<()> {
        if let Some(c) = self.confidence {
            crate::error::check!(c > 0.5 && c < 1.0, "confidence", "{c} is outside (0.5, 1)");
        }
        self.attack.check()
    }
}

/// The adversary knowledge a config may state (`knowledge = { .. }`); the rest of
/// `AdversaryKnowledge` (access, shadow training, notes) follows from the attack itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StatedKnowledge {
    /// Shadow graph: this many nodes per class (membership attacks with a shadow model).
    pub shadow_nodes_per_class: Option<usize>,
    /// Fraction of the target's edges the adversary knows (link stealing's training pairs).
    pub known_edge_fraction: Option<f64>,
    /// Node features and labels of the target graph are public.
    pub public_features: bool,
    /// Fraction of nodes whose sensitive attribute the adversary knows (attribute inference).
    pub known_attribute_fraction: Option<f64>,
}

impl StatedKnowledge {
    /// Parses a `knowledge` table; errors name the key.
    pub fn from_table(table: &Map<String, Value>) -> std::result::Result<AdversaryKnowledge, KeyError> {
        let s: StatedKnowledge = overlay(&StatedKnowledge::default(), table).map_err(|(k, m)| {
            if m.starts_with("unknown parameter") {
                (k, m.replacen("parameter", "adversary knowledge", 1))
            } else {
                (k, m)
            }
        })?;
        Ok(AdversaryKnowledge {
            shadow_nodes_per_class: s.shadow_nodes_per_class,
            known_edge_fraction: s.known_edge_fraction,
            public_features: s.public_features,
            known_attribute_fraction: s.known_attribute_fraction,
            ..Default::default()
        })
    }
}

/// `base` with the keys of `table` set, one key at a time so that an error names its key: an
/// unknown key (the known ones listed) or a value the struct refuses (its default shown).
pub fn overlay<T: Serialize + serde::de::DeserializeOwned>(
    base: &T,
    table: &Map<String, Value>,
) -> std::result::Result<T, KeyError> {
    let mut value = serde_json::to_value(base).map_err(|e| (String::new(), e.to_string()))?;
    let known: Vec<String> = value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    for (k, v) in table {
        if !known.contains(k) {
            return Err((k.clone(), format!("unknown parameter '{k}' (known: {})", known.join(", "))));
        }
        let previous = value[k.as_str()].clone();
        value[k.as_str()] = v.clone();
        if let Err(e) = serde_json::from_value::<T>(value.clone()) {
            return Err((k.clone(), format!("{e} (default: {previous})")));
        }
    }
    serde_json::from_value(value).map_err(|e| (String::new(), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    /// Names round-trip through parse and serde; an unknown name lists every name.
    #[test]
    fn names_parse_and_serialise_as_the_registry_says() {
        assert_eq!(AttackKind::ALL.len(), AttackKind::NAMES.len());
        for (&k, &name) in AttackKind::ALL.iter().zip(AttackKind::NAMES) {
            assert_eq!(k.name(), name);
            assert_eq!(AttackKind::parse(name), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), Value::String(name.into()));
            assert_eq!(serde_json::from_value::<AttackKind>(name.into()).unwrap(), k);
            assert_eq!(k.default_config().kind(), k);
        }
        let e = AttackKind::from_name("mind-reading").unwrap_err().to_string();
        assert!(AttackKind::NAMES.iter().all(|n| e.contains(n)), "{e}");
    }

    /// Every attack's default table parses back to its defaults, an unknown key is refused naming
    /// the key, and the defaults pass the attack's own check.
    #[test]
    fn every_attack_table_round_trips_and_refuses_unknown_keys() {
        for &k in AttackKind::ALL {
            let default = k.default_config();
            let back = AttackConfig::from_table(k, &default.to_table()).unwrap();
            assert_eq!(back, default, "{k}");
            let (key, msg) = AttackConfig::from_table(k, &table(serde_json::json!({"no_such_knob": 1}))).unwrap_err();
            assert_eq!(key, "no_such_knob", "{k}: {msg}");
            default.check().unwrap_or_else(|e| panic!("{k}: default parameters fail their check: {e}"));
            // The game a kind reports is the one its run records (asserted in the run tests).
            assert_eq!(k.game(), default.game());
        }
    }

    #[test]
    fn certification_keys_apply_to_every_attack_and_values_name_their_key() {
        let p = AttackParams::from_table(
            "lira",
            &table(serde_json::json!({"shadows": 4, "confidence": 0.9, "bound": "gdp", "threshold_strategy": "bonferroni"})),
        )
        .unwrap();
        assert_eq!(p.attack, AttackConfig::Lira(lira::LiraParams { shadows: 4, ..Default::default() }));
        assert_eq!((p.confidence, p.bound), (Some(0.9), BoundKind::Gdp));
        let bad = |kind: &str, v: Value| AttackParams::from_table(kind, &table(v)).unwrap_err().0;
        assert_eq!(bad("lira", serde_json::json!({"shadows": "many"})), "shadows");
        assert_eq!(bad("mia", serde_json::json!({"bound": "tight"})), "bound");
        assert_eq!(bad("telepathy", serde_json::json!({})), "kind");
        // mia-metric has no attack classifier: its `model` would be ignored, so it is refused.
        assert_eq!(bad("mia-metric", serde_json::json!({"model": "knn"})), "model");
        let p = AttackParams::from_table("lira", &table(serde_json::json!({"shadows": 3}))).unwrap();
        assert!(matches!(p.check(), Err(Error::Invalid { field, .. }) if field == "shadows"));
        let p = AttackParams::from_table("mia", &table(serde_json::json!({"confidence": 1.5}))).unwrap();
        assert!(matches!(p.check(), Err(Error::Invalid { field, .. }) if field == "confidence"));
    }

    /// Knowledge overrides the parameter it is about, and only where the attack uses it.
    #[test]
    fn knowledge_sets_its_parameter_or_is_refused() {
        let k = StatedKnowledge::from_table(&table(serde_json::json!({"shadow_nodes_per_class": 50}))).unwrap();
        let mut reference = AttackKind::Mia.default_config();
        let e = reference.apply_knowledge(&k).unwrap_err();
        assert!(matches!(e, Error::Invalid { ref field, .. } if field == "shadow_nodes_per_class"), "{e}");
        let mut shadow = AttackConfig::Mia(membership::MiaParams {
            source: membership::ShadowSource::Independent,
            ..Default::default()
        });
        shadow.apply_knowledge(&k).unwrap();
        assert!(matches!(shadow, AttackConfig::Mia(p) if p.shadow_per_class == Some(50)));
        assert!(shadow.requires().oracle && !reference.requires().oracle);
        let k = StatedKnowledge::from_table(&table(serde_json::json!({"known_edge_fraction": 0.3}))).unwrap();
        let mut link = AttackKind::LinkStealing.default_config();
        link.apply_knowledge(&k).unwrap();
        assert!(matches!(link, AttackConfig::LinkStealing(p) if p.train_fraction == 0.3));
        let (key, msg) = StatedKnowledge::from_table(&table(serde_json::json!({"shadow_nodes": 4}))).unwrap_err();
        assert_eq!(key, "shadow_nodes");
        assert!(msg.contains("adversary knowledge"), "{msg}");
    }
}
