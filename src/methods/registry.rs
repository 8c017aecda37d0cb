//! The only list of methods. Each method's module declares a [`MethodSpec`] (its name, unit,
//! knobs, defaults, training, budget, checkpoint loader, replay, memory shape and benchmark floor)
//! and [`methods!`] turns one line per method into the `Method` enum that the CLI, the audit
//! configs, checkpoints, `account`, `replay` and the docs read. Adding a method is one module
//! plus one line below.
pub use super::knobs::{knob_names, unread_knob};
pub use super::method::Method;
use super::recipe::Recipe;
pub use super::spec::*;
use crate::error::Result;

/// The only list of methods: one line per method, its `Method` variant and its entry. Both the
/// `Method` enum (in [`super::method`], which reads only the variant names, so that the type every
/// module names imports no method) and [`Method::spec`] below are generated from it: the macro
/// hands the list to the macro it is given.
macro_rules! registered_methods {
    ($then:ident) => {
        $then! {
        Mlp => super::mlp::MLP,
        DpMlp => super::mlp::DP_MLP,
        DemoDpMlpNoiseOnMean => super::mlp::DEMO_DP_MLP_NOISE_ON_MEAN,
        DemoDpMlpBiasUnclipped => super::mlp::DEMO_DP_MLP_BIAS_UNCLIPPED,
        DemoDpMlpShuffled => super::mlp::DEMO_DP_MLP_SHUFFLED,
        GapInf => super::gap::GAP_INF,
        GapEdp => super::gap::GAP_EDP,
        GapNdp => super::gap::GAP_NDP,
        DemoGapEdpPlantedBug => super::gap::DEMO_GAP_EDP_PLANTED_BUG,
        DemoGapEdpNoiseOff => super::gap::DEMO_GAP_EDP_NOISE_OFF,
        ProgapInf => super::progap::PROGAP_INF,
        ProgapEdp => super::progap::PROGAP_EDP,
        ProgapNdp => super::progap::PROGAP_NDP,
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
    };
}

/// Generates [`Method::spec`] from the list.
macro_rules! spec_lookup {
    ($($variant:ident => $spec:path,)*) => {
        impl Method {
            /// What the method is: its registry entry.
            pub fn spec(self) -> &'static MethodSpec {
                match self {
                    $(Method::$variant => &$spec,)*
                }
            }
        }
    };
}

registered_methods!(spec_lookup);

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
    let resolved: [(&str, Resolve); 3] = [
        ("hops", |r| Ok(toml::Value::Integer(super::gap::hops(r)? as i64))),
        ("depth", |r| Ok(toml::Value::Integer(super::progap::depth(r)? as i64))),
        ("aggregation", |r| {
            let own: super::backbone::SageKnobs = r.own()?;
            toml::Value::try_from(own.aggregation_of(r.method))
                .map_err(|e| crate::Error::Other(format!("cannot tabulate an aggregation: {e}")))
        }),
    ];
    for (k, of) in resolved {
        if read.iter().any(|x| x == k) {
            table.insert(k.into(), of(r)?);
        }
    }
    let mut out: Recipe = serde::Deserialize::deserialize(toml::Value::Table(table))
        .map_err(|e| crate::Error::Other(format!("the control of {}: {e}", r.method.name())))?;
    out.method = control;
    out.validate()?;
    Ok(Some(out))
}

/// A knob's value in a recipe, resolved where its default depends on the method.
type Resolve = fn(&Recipe) -> Result<toml::Value>;

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
            s.unit.name(),
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
        out += &format!("# {} ({}): {}\n", s.name, s.unit.name(), knob_names(*m).join(", "));
    }
    out
}

/// One method's knobs with their defaults, as a `[[methods]]` table would set them.
pub fn describe(m: Method) -> Result<String> {
    let spec = m.spec();
    let defaults = toml::Table::try_from(Recipe::new(m, None))
        .map_err(|e| crate::Error::Other(format!("cannot render the defaults of {}: {e}", spec.name)))?;
    let mut out =
        format!("# {}: {}\n# unit: {}, target: {}\n", spec.name, spec.about, spec.unit.name(), target_of(spec));
    out += &format!("method = \"{}\"\n", spec.name);
    for k in
        ALWAYS_READ.iter().copied().chain(spec.reads.keys()).filter(|k| !matches!(*k, "method" | "epsilon" | "delta"))
    {
        match defaults.get(k) {
            Some(v) => out += &format!("{k} = {v}\n"),
            None if k == "epochs" => out += &format!("epochs = {}\n", spec.epochs),
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

/// A control keeps the target's architecture where the two methods' defaults differ (the
/// values the recipes held as fields before the knob structs).
#[cfg(test)]
mod control_tests {
    use super::*;

    #[test]
    fn controls_resolve_the_targets_method_dependent_defaults() {
        let control = |m| control_recipe(&Recipe::new(m, Some(1.0))).unwrap().unwrap();
        let sage = control(Method::SageEdp);
        assert_eq!((sage.method, sage.knobs.get("aggregation")), (Method::Sage, Some(&"mean".into())));
        let gap = control(Method::GapNdp);
        assert_eq!((gap.method, gap.knobs.get("hops")), (Method::GapInf, Some(&3.into())));
        let progap = control(Method::ProgapNdp);
        assert_eq!((progap.method, progap.knobs.get("depth")), (Method::ProgapInf, Some(&4.into())));
        assert_eq!(progap.knobs.get("base_layers"), None, "left at the control's own default, as before");
    }
}

/// Every method's white box, against its own posteriors.
#[cfg(test)]
mod white_box_tests {
    use crate::data::split::{random_split, SplitRatios};
    use crate::data::{Csbm, Dataset};
    use crate::methods::{train, Method, Recipe};
    use tch::{Kind, Tensor};

    fn small_graph() -> Dataset {
        let data = Csbm { nodes: 240, features: 64, ..Default::default() }.generate().unwrap();
        random_split(&data, SplitRatios::new(0.5, 0.25, 0.25).unwrap(), 0).unwrap()
    }

    fn max_gap(a: &Tensor, b: &Tensor) -> f64 {
        (a - b).abs().max().double_value(&[])
    }

    /// Every method's white box reproduces its own posteriors in eval mode: the sparse
    /// `forward_features` and the dense `forward_dense` on the training graph's adjacency. Noisy
    /// methods are compared with their noise-free path (GAP/ProGAP inf; LPGNN at eps_x = inf; the
    /// rest at a huge epsilon, where the cached noise is negligible), and gradients reach A.
    #[test]
    fn white_box_forwards_reproduce_each_models_posteriors() {
        let data = small_graph();
        let x = data.features.to_tensor().to_kind(Kind::Float);
        let dense = data.graph.aggregation_tensor().to_dense(None, false);
        let mut lp = Recipe::new(Method::Lpgnn, None);
        lp.knobs.set("epsilon_x", f64::INFINITY);
        lp.knobs.set("epsilon_y", f64::INFINITY);
        lp.knobs.set("features", "raw");
        lp.knobs.set("kx", 2); // 64 features > 32 projections: exercises the pseudo-inverse shortcut of `propagate`
        let x_lp = crate::privacy::mechanisms::multibit::min_max_scale(&data.features.to_tensor());
        let mut dpgnn = Recipe::new(Method::Dpgnn, Some(1e6));
        dpgnn.train.batch_size = Some(64);
        // A degree bound above every degree of the test graph, so that the dense adjacency fed
        // below is the graph DP-GNN trained on (its default K = 4 would sample neighbours).
        dpgnn.dp.max_degree = 100;
        let mut layerwise = Recipe::new(Method::ProgapInf, None);
        layerwise.knobs.set("layerwise", true);
        // (recipe, tolerance, compare with posteriors_on instead of the cached posteriors). The
        // private variants without an epsilon are the same models built with sigma = 0.
        let exact = 1e-5;
        let cases: Vec<(Recipe, f64, bool)> = vec![
            (Recipe::new(Method::Mlp, None), exact, false),
            (Recipe::new(Method::DpMlp, None), exact, false),
            (Recipe::new(Method::Sage, None), exact, false),
            (Recipe::new(Method::SageEdp, None), exact, false),
            (Recipe::new(Method::Gcn, None), exact, false),
            (Recipe::new(Method::Gat, None), exact, false),
            (Recipe::new(Method::GapInf, None), exact, false),
            (Recipe::new(Method::GapEdp, None), exact, false),
            (Recipe::new(Method::GapNdp, None), exact, false),
            (layerwise, exact, false),
            // Progressive training caches stage s's input with base s-1 as it was when stage s
            // began; the white box (like inductive inference) uses the final parameters.
            (Recipe::new(Method::ProgapInf, None), exact, true),
            (Recipe::new(Method::ProgapEdp, None), exact, true),
            (Recipe::new(Method::ProgapNdp, None), exact, true),
            (lp, exact, false),
            // DP-GNN needs an epsilon: its cached posteriors carry the test-time Gaussian release of
            // std noise_scale sqrt(D); the noise-free forward must lie within a fraction of it.
            (dpgnn, f64::NAN, false),
        ];
        for (mut recipe, tol, inductive) in cases {
            recipe.train.epochs = Some(5);
            let run = train(&recipe, &data, 1).unwrap();
            let name = recipe.method.name();
            let tol = if tol.is_nan() {
                let scale = run.budget.noise.iter().find(|(k, _)| k == "inference_noise_scale").expect("noise scale").1;
                0.5 * scale * (recipe.dp.max_degree as f64).sqrt()
            } else {
                tol
            };
            let wb = run.model.white_box().unwrap_or_else(|| panic!("{name} has no white box"));
            let feed = if recipe.method == Method::Lpgnn { &x_lp } else { &x };
            let want = if inductive { run.model.posteriors_on(&data).unwrap() } else { run.model.posteriors() };
            assert_eq!(wb.num_classes(), want.size()[1] as usize, "{name}");
            assert!(!wb.parameters().is_empty(), "{name}");
            let sparse = wb.forward_features(feed).unwrap();
            assert!(max_gap(&sparse, &want) < tol, "{name}: forward_features off by {}", max_gap(&sparse, &want));
            let adj = dense.copy().set_requires_grad(true);
            let d = wb.forward_dense(feed, &adj).expect("dense form").unwrap();
            assert!(max_gap(&d, &want) < tol, "{name}: forward_dense off by {}", max_gap(&d, &want));
            d.select(1, 0).sum(Kind::Float).backward();
            let grad = adj.grad();
            let reaches = grad.defined() && grad.abs().sum(Kind::Float).double_value(&[]) > 0.0;
            assert_eq!(reaches, !matches!(recipe.method, Method::Mlp | Method::DpMlp), "{name}: gradient in A");
            // Model inversion queries one isolated node: its input gradient must be finite.
            let one = feed.narrow(0, 0, 1).copy().set_requires_grad(true);
            let zero = Tensor::zeros([1, 1], (Kind::Float, tch::Device::Cpu));
            wb.forward_dense(&one, &zero).unwrap().unwrap().select(1, 0).sum(Kind::Float).backward();
            let g = one.grad();
            assert!(!g.defined() || bool::try_from(g.isfinite().all()).unwrap(), "{name}: NaN input gradient");
        }
    }
}
