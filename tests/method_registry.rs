//! The method registry is the only list of methods: the README and the quick config's field
//! reference are generated from it, `account budget` equals what each method's training claims,
//! and a knob a method does not read is refused by name. `GNNAUDIT_BLESS=1` rewrites the docs.
#[path = "common/data.rs"]
mod test_data;
use gnnaudit::audit::config::DeltaPolicy;
use gnnaudit::audit::recipe::build_recipe;
use gnnaudit::audit::Epsilon;
use gnnaudit::data::{self, Dataset};
use gnnaudit::methods::registry::{knob_names, markdown_table, toml_comment, ALWAYS_READ};
use gnnaudit::methods::{self, Method, Recipe};

/// Replaces the text between the `begin` and `end` lines of `path` with `generated` under
/// GNNAUDIT_BLESS, otherwise asserts it is already there.
fn generated_block(path: &str, begin: &str, end: &str, generated: &str) {
    let file = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file).unwrap();
    let a = text.find(begin).unwrap_or_else(|| panic!("{path} has no `{begin}` line"));
    let a = a + text[a..].find('\n').unwrap() + 1;
    let b = a + text[a..].find(end).unwrap_or_else(|| panic!("{path} has no `{end}` line"));
    if std::env::var_os("GNNAUDIT_BLESS").is_some() {
        std::fs::write(&file, format!("{}{generated}{}", &text[..a], &text[b..])).unwrap();
        return;
    }
    assert_eq!(
        &text[a..b],
        generated,
        "{path} is out of date with the method registry: run GNNAUDIT_BLESS=1 cargo test --test method_registry"
    );
}

#[test]
fn readme_and_quick_config_list_every_method_from_the_registry() {
    generated_block("README.md", "<!-- methods:begin -->", "<!-- methods:end -->", &markdown_table());
    generated_block("configs/quick.toml", "# methods:begin", "# methods:end", &toml_comment());
    let table = markdown_table();
    for m in Method::ALL {
        assert!(table.contains(&format!("| `{}` |", m.name())), "{} missing from the table", m.name());
        assert_eq!(Method::from_name(m.name()), Some(*m), "names round-trip");
        let json = serde_json::to_string(m).unwrap();
        assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), *m);
    }
    assert_eq!(Method::ALL.len(), Method::names().len());
    let err = serde_json::from_str::<Method>("\"gap-nope\"").unwrap_err().to_string();
    assert!(err.contains("unknown method 'gap-nope'") && err.contains("gap-edp"), "{err}");
}

/// A value for every shared recipe field, different from every method's default (a new shared
/// field must be added here, which makes its author say which methods read it), and for the
/// methods' own knobs (one left out is probed at its default: a method that does not own a knob
/// refuses it at any value).
const PROBES: &[(&str, &str)] = &[
    ("hops", "4"),
    ("depth", "3"),
    ("max_degree", "7"),
    ("batch_size", "33"),
    ("hidden", "17"),
    ("weight_decay", "0.123"),
    ("dropout", "0.33"),
    ("activation", "\"tanh\""),
    ("optimizer", "\"sgd\""),
    ("mlp_layers", "3"),
    ("encoder_layers", "3"),
    ("base_layers", "3"),
    ("head_layers", "3"),
    ("batch_norm", "true"),
    ("norm_groups", "2"),
    ("max_grad_norm", "0.7"),
    ("layerwise", "true"),
    ("select_best_val", "false"),
    ("mp_layers", "3"),
    ("aggregation", "\"mean\""),
    ("epsilon_x", "3.0"),
    ("epsilon_y", "3.0"),
    ("kx", "3"),
    ("ky", "3"),
    ("training", "\"forward-correction\""),
    ("backbone", "\"gcn\""),
    ("features", "\"ones\""),
    ("multibit_m", "5"),
    ("inference_budget", "0.3"),
    ("sampled", "5"),
    ("clusters", "5"),
    ("alpha", "0.5"),
    ("group_size", "3"),
    ("kl_direction", "\"predicted-target\""),
    ("mechanism", "\"laplace\""),
    ("accountant", "\"pld\""),
    ("teachers", "3"),
    ("queries", "10"),
    ("vote_threshold", "0.6"),
    ("check_noise_ratio", "2.0"),
    ("student", "\"coteach\""),
    ("noise_rate", "0.1"),
    ("removal_ratio", "0.1"),
    ("count_decay", "0.5"),
    ("alpha_ppr", "0.3"),
    ("top_k", "3"),
    ("m_rows", "10"),
    ("c1", "0.02"),
    ("c2", "0.002"),
    ("tau", "2.0"),
    ("ref_cap", "3"),
    ("q_prime", "0.5"),
    ("epsilon_pr_fraction", "0.4"),
    ("calibration", "\"thesis\""),
    ("unit_rate", "0.5"),
    ("subclasses", "3"),
    ("relation", "\"bounded\""),
    ("allow_large_delta", "true"),
];

#[test]
fn a_knob_the_method_does_not_read_is_refused_by_name() {
    // Every shared recipe field is probed (or always read), and every method's own knob.
    let fields = serde_json::to_value(Recipe::default()).unwrap();
    for k in fields.as_object().unwrap().keys().map(String::as_str).chain(["accountant"]) {
        assert!(
            ALWAYS_READ.contains(&k) || PROBES.iter().any(|(f, _)| *f == k),
            "recipe field {k} has no probe: add it to PROBES"
        );
    }
    let own = gnnaudit::methods::knobs::all_docs();
    assert!(own.len() >= 22, "graph-pate, DPAR and class-DP knobs: {own:?}");
    let mut probes: Vec<(String, String)> = PROBES.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect();
    for (d, _) in own {
        if !probes.iter().any(|(f, _)| *f == d.name) {
            probes.push((d.name, d.default.map_or("3".into(), |v| v.to_string())));
        }
    }
    let mut refused = 0;
    for &m in Method::ALL {
        let spec = m.spec();
        let eps = if m.takes_epsilon() || spec.sweeps_local_budgets { Epsilon::Finite(2.0) } else { Epsilon::Infinite };
        for (field, value) in &probes {
            let table: gnnaudit::audit::config::Params = toml::from_str(&format!("{field} = {value}")).unwrap();
            let result = build_recipe(m.name(), &table, eps, DeltaPolicy::Auto);
            if knob_names(m).iter().any(|k| k == field) {
                // Read: accepted, or refused for its value (never for being unused).
                if let Err((_, msg)) = result {
                    assert!(!msg.contains("does not use"), "{} reads {field} but refused it: {msg}", m.name());
                }
                continue;
            }
            if spec.sweeps_local_budgets && matches!(field.as_str(), "epsilon_x" | "epsilon_y") {
                continue; // set by the epsilon grid (refused there with its own message)
            }
            let (key, msg) =
                result.err().unwrap_or_else(|| panic!("{} accepted {field}, which it does not read", m.name()));
            assert_eq!(&key, field, "{}: {msg}", m.name());
            refused += 1;
        }
    }
    assert!(refused > 500, "{refused} refusals");
}

/// The training settings live in `Recipe::train`, but configs, JSON reports and checkpoints
/// keep spelling them at the top level, and they never leak into the method's own knob map.
#[test]
fn the_training_settings_keep_their_flat_keys() {
    let text = "method = \"dp-mlp\"\nepochs = 7\nhidden = 32\nlr = 0.5\nbatch_norm = true\nmax_grad_norm = 2.0";
    let r: Recipe = toml::from_str(text).unwrap();
    assert_eq!((r.train.epochs, r.train.hidden, r.train.lr, r.train.batch_norm), (Some(7), 32, 0.5, Some(true)));
    assert_eq!(r.dp.max_grad_norm, 2.0);
    assert_eq!(r.knobs.names().collect::<Vec<_>>(), Vec::<&str>::new(), "taken by the training settings");
    r.validate().unwrap();
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!((json["epochs"].as_u64(), json["hidden"].as_u64()), (Some(7), Some(32)));
    assert!(json.get("train").is_none(), "no nested key: {json}");
    let back: Recipe = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);
}

#[test]
fn zero_means_zero_for_lpgnn_dropout_and_weight_decay() {
    let mut r = Recipe::new(Method::Lpgnn, None);
    assert_eq!((r.train.dropout, r.train.weight_decay), (0.5, 1e-3), "LPGNN's defaults");
    (r.train.dropout, r.train.weight_decay) = (0.0, 0.0);
    let c = gnnaudit::methods::lpgnn::config(&r).unwrap();
    assert_eq!((c.dropout, c.weight_decay), (0.0, 0.0));
}

fn cora_for(m: Method) -> Dataset {
    let raw = data::load_dataset("cora", Some(&test_data::data_dir())).unwrap();
    data::transforms::prepare_like_gap(&raw, 1, m.spec().split, 0).unwrap()
}

/// A quick recipe of `m` with a finite budget where it takes one (few epochs, one hop or stage,
/// 200 DPAR rows: the budget still composes every part of the method).
fn quick(m: Method) -> Recipe {
    let mut r = Recipe::new(m, m.takes_epsilon().then_some(4.0));
    r.train.epochs = Some(2);
    let reads = |k: &str| knob_names(m).iter().any(|n| n == k);
    if reads("hops") {
        r.knobs.set("hops", 1);
    }
    if reads("depth") {
        r.knobs.set("depth", 1);
    }
    if reads("m_rows") {
        r.knobs.set("m_rows", 200);
    }
    if m.spec().sweeps_local_budgets {
        r.knobs.set("epsilon_x", 1.0);
        r.knobs.set("epsilon_y", 2.0);
    }
    r
}

#[test]
fn account_budget_equals_the_budget_training_claims_for_every_method() {
    let (mut gap, mut lpgnn) = (None, None);
    for &m in Method::ALL {
        let ds = if m.spec().sweeps_local_budgets { &mut lpgnn } else { &mut gap };
        let ds = ds.get_or_insert_with(|| cora_for(m));
        let r = quick(m);
        let seed = 3;
        let account = methods::budget(&r, ds, seed).unwrap_or_else(|e| panic!("{}: {e}", m.name()));
        let trained = methods::train(&r, ds, seed).unwrap_or_else(|e| panic!("{}: {e}", m.name())).budget;
        let name = m.name();
        assert_eq!(account.privacy_unit, trained.privacy_unit, "{name}");
        assert_eq!(account.target_epsilon, trained.target_epsilon, "{name}");
        assert_eq!(account.delta, trained.delta, "{name}");
        assert_eq!(account.epsilon_rdp, trained.epsilon_rdp, "{name}");
        assert_eq!(account.epsilon_pld, trained.epsilon_pld, "{name}");
        assert_eq!(account.claimed_epsilon(), trained.claimed_epsilon(), "{name}");
        assert_eq!(account.privacy_unit, m.privacy_unit(), "{name}: the unit the registry declares");
        if m.takes_epsilon() {
            assert!(account.claimed_epsilon() > 0.0 && account.claimed_epsilon().is_finite(), "{name}");
        }
    }
}

#[test]
fn the_account_command_prints_the_registry_budget() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(["account", "budget", "--dataset", "cora", "--method", "gap-ndp", "--epsilon", "4", "--epochs", "2"])
        .args(["--hops", "1"])
        .args(["--json"])
        .env("GNNAUDIT_DATA", test_data::data_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = quick(Method::GapNdp);
    let b = methods::budget(&r, &cora_for(Method::GapNdp), 0).unwrap();
    assert_eq!(v["budget"]["epsilon_rdp"].as_f64(), Some(b.epsilon_rdp));
    assert_eq!(v["budget"]["epsilon_pld"].as_f64(), b.epsilon_pld);
    // A knob gap-ndp does not read is refused, naming it, with exit 2.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(["account", "budget", "--dataset", "cora", "--method", "gap-ndp", "--epsilon", "4", "--kx", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kx") && err.contains("gap-ndp does not use"), "{err}");
}
