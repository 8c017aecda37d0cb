//! The only list of methods. Each method's module declares a [`MethodSpec`] (its name, unit,
//! knobs, defaults, training, budget, checkpoint loader, replay, memory shape and benchmark floor)
//! and [`methods!`] turns one line per method into the `Method` enum that the CLI, the audit
//! configs, checkpoints, `account`, `replay` and the docs read. Adding a method is one module
//! plus one line below.
use super::recipe::Recipe;
pub use super::spec::*;
use crate::error::Result;
use crate::privacy::accountant::PrivacyUnit;

/// Every knob `method` reads besides [`ALWAYS_READ`]: the recipe fields it lists, then its own.
pub fn knob_names(method: Method) -> Vec<String> {
    let spec = method.spec();
    spec.knobs.iter().map(|k| k.to_string()).chain(super::knobs::names_of(method)).collect()
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

/// Generates `Method` (one variant per line, named by its spec), `Method::ALL` and
/// `Method::spec`, with serde and clap spelling each method by its spec's name.
macro_rules! methods {
    ($($variant:ident => $spec:path,)*) => {
        /// A training method; see [`Method::spec`] for what each one is.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $($variant,)*
        }

        impl Method {
            /// Every method, in registry order.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)*];

            pub fn spec(self) -> &'static MethodSpec {
                match self {
                    $(Method::$variant => &$spec,)*
                }
            }
        }
    };
}

methods! {
    Mlp => super::decoupled::MLP,
    DpMlp => super::decoupled::DP_MLP,
    DemoDpMlpNoiseOnMean => super::decoupled::DEMO_DP_MLP_NOISE_ON_MEAN,
    DemoDpMlpBiasUnclipped => super::decoupled::DEMO_DP_MLP_BIAS_UNCLIPPED,
    GapInf => super::decoupled::GAP_INF,
    GapEdp => super::decoupled::GAP_EDP,
    GapNdp => super::decoupled::GAP_NDP,
    DemoGapEdpPlantedBug => super::decoupled::DEMO_GAP_EDP_PLANTED_BUG,
    DemoGapEdpNoiseOff => super::decoupled::DEMO_GAP_EDP_NOISE_OFF,
    ProgapInf => super::decoupled::PROGAP_INF,
    ProgapEdp => super::decoupled::PROGAP_EDP,
    ProgapNdp => super::decoupled::PROGAP_NDP,
    Sage => super::backbone::SAGE,
    SageEdp => super::backbone::SAGE_EDP,
    Gcn => super::backbone::GCN,
    Gat => super::backbone::GAT,
    Dpgnn => super::dpgnn::DPGNN,
    DpgnnRowclip => super::dpgnn::DPGNN_ROWCLIP,
    Lpgnn => super::lpgnn::LPGNN,
    Rgnn => super::rgnn::RGNN,
    Pgc => super::pgc::PGC,
    GraphPate => super::pate::GRAPH_PATE,
    DparGm => super::dpar::DPAR_GM,
    DparEm0 => super::dpar::DPAR_EM0,
    DparEm1 => super::dpar::DPAR_EM1,
    DparDpsgd => super::dpar::DPAR_DPSGD,
    DparFeatures => super::dpar::DPAR_FEATURES,
    DparRandom => super::dpar::DPAR_RANDOM,
    DparInf => super::dpar::DPAR_INF,
    ClassDpMlp => super::class_dp::CLASS_DP_MLP,
    SubclassDpMlp => super::class_dp::SUBCLASS_DP_MLP,
    PgcVgae => super::pgc_vgae::PGC_VGAE,
}

// The enum is generated from the registry's list, where no variant can carry `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for Method {
    fn default() -> Self {
        Method::GapEdp
    }
}

impl Method {
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The method `--method`/`method =` names, or None.
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// Every method name, in registry order.
    pub fn names() -> Vec<&'static str> {
        Method::ALL.iter().map(|m| m.name()).collect()
    }
}

impl serde::Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Method::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown method '{name}' (known: {})", Method::names().join(", ")))
        })
    }
}

impl clap::ValueEnum for Method {
    fn value_variants<'a>() -> &'a [Self] {
        Method::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.spec().about))
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The recipe of `r`'s positive control ([`MethodSpec::control`]; None without one): the
/// control method with every knob of `r` the control reads (the architecture is the target's,
/// resolved where the target's default differs), its epsilon and delta kept when the control
/// calibrates to one (its claim is then the target's, with no noise behind it).
pub fn control_recipe(r: &Recipe) -> Result<Option<Recipe>> {
    let Some(control) = r.method.spec().control else { return Ok(None) };
    let to_table = |r: &Recipe| {
        toml::Table::try_from(r).map_err(|e| crate::Error::Other(format!("cannot tabulate a recipe: {e}")))
    };
    let target = to_table(r)?;
    let mut table = to_table(&Recipe::new(control, None))?;
    let read = knob_names(control);
    for (k, v) in &target {
        let keep = match k.as_str() {
            "method" => false,
            "epsilon" | "delta" => control.takes_epsilon(),
            k => ALWAYS_READ.contains(&k) || read.iter().any(|x| x == k),
        };
        if keep {
            table.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in [("hops", r.hops()), ("depth", r.depth())] {
        if read.iter().any(|x| x == k) {
            table.insert(k.into(), toml::Value::Integer(v as i64));
        }
    }
    let mut out: Recipe = serde::Deserialize::deserialize(toml::Value::Table(table))
        .map_err(|e| crate::Error::Other(format!("the control of {}: {e}", r.method.name())))?;
    out.method = control;
    out.validate()?;
    Ok(Some(out))
}

/// The privacy unit as the docs name it.
fn unit_name(u: PrivacyUnit) -> &'static str {
    match u {
        PrivacyUnit::None => "none",
        PrivacyUnit::Edge => "edge",
        PrivacyUnit::Node => "node",
        PrivacyUnit::Local => "local",
        PrivacyUnit::Class => "class",
        PrivacyUnit::Subclass => "subclass",
    }
}

/// How a method takes its privacy target.
fn target_of(s: &MethodSpec) -> &'static str {
    if s.takes_epsilon {
        "`--epsilon`"
    } else if s.sweeps_local_budgets {
        "`--epsilon-x`, `--epsilon-y`"
    } else {
        "none"
    }
}

/// The README's Methods table (a test keeps the README equal to it).
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| method | unit | target | knobs besides epochs, lr | what it is |\n| --- | --- | --- | --- | --- |\n",
    );
    for m in Method::ALL {
        let s = m.spec();
        out += &format!(
            "| `{}` | {} | {} | {} | {} |\n",
            s.name,
            unit_name(s.unit),
            target_of(s),
            knob_names(*m).join(", "),
            s.about.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
        );
    }
    out
}

/// The field reference in `configs/quick.toml` (a test keeps the config equal to it).
pub fn toml_comment() -> String {
    let mut out = String::new();
    for m in Method::ALL {
        let s = m.spec();
        out += &format!("# {} ({}): {}\n", s.name, unit_name(s.unit), knob_names(*m).join(", "));
    }
    out
}

/// One method's knobs with their defaults, as a `[[methods]]` table would set them.
pub fn describe(m: Method) -> Result<String> {
    let spec = m.spec();
    let defaults = toml::Table::try_from(Recipe::new(m, None))
        .map_err(|e| crate::Error::Other(format!("cannot render the defaults of {}: {e}", spec.name)))?;
    let mut out =
        format!("# {}: {}\n# unit: {}, target: {}\n", spec.name, spec.about, unit_name(spec.unit), target_of(spec));
    out += &format!("method = \"{}\"\n", spec.name);
    for k in ALWAYS_READ.iter().chain(spec.knobs).filter(|k| !matches!(**k, "method" | "epsilon" | "delta")) {
        match defaults.get(*k) {
            Some(v) => out += &format!("{k} = {v}\n"),
            None if *k == "epochs" => out += &format!("epochs = {}\n", spec.epochs),
            None => out += &format!("# {k} = (the method's default; unset)\n"),
        }
    }
    for d in spec.own_knobs.map(|o| o.docs()).unwrap_or_default() {
        out += &format!("# {}\n", d.help);
        match d.default {
            Some(v) => out += &format!("{} = {v}\n", d.name),
            None => out += &format!("# {} = (derived from the data or other knobs; unset)\n", d.name),
        }
    }
    Ok(out)
}
