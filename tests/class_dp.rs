//! Class- and subclass-level DP-SGD (Zhang thesis ch.4 Algorithm 5; `class-dp-mlp`,
//! `subclass-dp-mlp`): the thesis's closed forms and the accountant, train and account agreeing,
//! accuracy on cora, the delta policy, bad input, the subclass canary game and the sensitivity
//! replay of unit-level clipping.
use gnnaudit::data::{self, SplitRatios};
use gnnaudit::methods::{Method, Recipe};
use gnnaudit::models::mlp::MlpClassifier;
use gnnaudit::models::{log_softmax_rows, Fwd, NodeClassifier};
use gnnaudit::privacy::accountant::class_dp::{
    class_dp_sgd, theorem5_epsilon, theorem5_rate_bound, theorem5_sigma, GroupUnit, Relation,
};
use gnnaudit::privacy::accountant::{methods, rdp_epsilon};
use gnnaudit::privacy::dpsgd::tape::Grads;
use gnnaudit::replay::{replay, unit_dp, ReplayOptions, TOLERANCE};
use tch::{Reduction, Tensor};

// Both helpers include tests/common/data.rs for the tests that load only one of them.
#[allow(clippy::duplicate_mod)]
#[path = "common/cli.rs"]
mod cli;
mod common_cora;
use cli::{gnnaudit, json_of, refused};

/// `gnnaudit train --json` of `method` on cora on one thread, with `flags`.
fn train_on_cora(method: &str, flags: &[&str]) -> serde_json::Value {
    let train = ["train", "--json", "--threads", "1", "--dataset", "cora", "--method", method];
    json_of(&[&train[..], flags].concat())
}

fn noise(budget: &serde_json::Value, key: &str) -> f64 {
    budget["noise"].as_array().unwrap().iter().find(|p| p[0] == key).unwrap_or_else(|| panic!("no {key}"))[1]
        .as_f64()
        .unwrap()
}

/// Theorem 5 (bounded: sigma^2 = 16 q^2 T ln(1/delta) / eps^2) and Remark 1 (unbounded: 4 q^2 ...),
/// with their rate conditions, at hand-computed values; the accountant's event is DP-SGD's over
/// units (unbounded) and the same at sigma/2 (bounded).
#[test]
fn budget_follows_the_closed_forms_and_the_unit_level_event() {
    // q = 0.2, T = 500, delta = 1e-3, sigma = 1.6: sqrt(T ln 1000) = sqrt(3453.8776) = 58.76970.
    let s = (500.0f64 * 1000f64.ln()).sqrt();
    assert!((s - 58.769700).abs() < 1e-5, "{s}");
    let bounded = theorem5_epsilon(Relation::Bounded, 0.2, 500, 1.6, 1e-3);
    assert!((bounded - 4.0 * 0.2 * s / 1.6).abs() < 1e-9 && (bounded - 29.384850).abs() < 1e-5, "{bounded}");
    let unbounded = theorem5_epsilon(Relation::Unbounded, 0.2, 500, 1.6, 1e-3);
    assert!((unbounded - bounded / 2.0).abs() < 1e-12);
    assert!((theorem5_sigma(Relation::Bounded, 0.2, 500, bounded, 1e-3) - 1.6).abs() < 1e-12);
    // q < sqrt(eps / (64 sqrt(T ln(1/delta)))): at eps = 8, sqrt(8 / (64 x 58.7697)) = 0.0461188.
    assert!((theorem5_rate_bound(Relation::Bounded, 500, 8.0, 1e-3) - 0.04611883).abs() < 1e-8);
    assert!((theorem5_rate_bound(Relation::Unbounded, 500, 8.0, 1e-3) - 0.06522187).abs() < 1e-8);
    // The thesis's q = 0.2 is far outside that range: its closed form does not apply there, which is
    // why gnnaudit's claim comes from the numerical accountant.
    let unit = rdp_epsilon(&class_dp_sgd(GroupUnit::Subclass, Relation::Unbounded, 0.2, 500, 1.6), 1e-3).unwrap();
    let record = rdp_epsilon(&methods::dp_sgd(0.2, 500, 1.6), 1e-3).unwrap();
    assert!((unit.epsilon - record.epsilon).abs() < 1e-12, "{} vs {}", unit.epsilon, record.epsilon);
    let b = rdp_epsilon(&class_dp_sgd(GroupUnit::Class, Relation::Bounded, 0.2, 500, 3.2), 1e-3).unwrap();
    assert!((b.epsilon - unit.epsilon).abs() < 1e-9 * unit.epsilon);
}

/// `train` and `account` state the same epsilon for the same unit-level mechanism, and training
/// meets its target; the budget names the unit and records the thesis's closed form beside it.
#[test]
fn train_and_account_state_the_same_epsilon() {
    let t = train_on_cora("subclass-dp-mlp", &["--epsilon", "4", "--epochs", "10", "--subclasses", "5"]);
    let b = &t["budget"];
    assert_eq!(b["privacy_unit"], "subclass");
    let claimed = b["epsilon_pld"].as_f64().unwrap_or(f64::INFINITY).min(b["epsilon_rdp"].as_f64().unwrap());
    assert!(claimed <= 4.0 + 1e-6, "{b}");
    let (sigma, q, steps, units) = (noise(b, "sigma"), noise(b, "unit_rate"), noise(b, "steps"), noise(b, "units"));
    assert_eq!((q, steps), (0.2, 50.0));
    assert!((30.0..=35.0).contains(&units), "7 classes x 5 subclasses, empty ones dropped: {units}");
    assert!(noise(b, "paper_epsilon") > 0.0);
    let delta = b["delta"].as_f64().unwrap();
    assert_eq!(delta, 1e-4);
    let a = json_of(&[
        "account",
        "epsilon",
        "--json",
        "--method",
        "subclass-dp-mlp",
        "--sigma",
        &sigma.to_string(),
        "--sample-rate",
        &q.to_string(),
        "--steps",
        &steps.to_string(),
        "--units",
        &units.to_string(),
        "--delta",
        &delta.to_string(),
    ]);
    let ab = &a["budget"];
    assert_eq!(ab["privacy_unit"], "subclass");
    assert!((ab["epsilon_rdp"].as_f64().unwrap() - b["epsilon_rdp"].as_f64().unwrap()).abs() < 1e-9, "{ab} vs {b}");
}

/// Accuracy above a floor on cora (largest class 30%, 1/7 = 14%). Class level: 7 units leave
/// Algorithm 5 a whole-run signal-to-noise of about mu 7 / sqrt(weights), so a class-level epsilon
/// must be large (the thesis's class-DP claims are 40-62): the default linear model (the thesis's
/// softmax regression) with q = 1 at eps 300, 50 epochs, scores 40-48% on seeds 0-6 (the 2-layer
/// MLP it replaced stayed near chance up to eps ~300 at q 0.33). Subclass level at eps 8.
#[test]
fn class_and_subclass_dp_mlp_learn_cora() {
    let class = train_on_cora("class-dp-mlp", &["--epsilon", "300", "--unit-rate", "1", "--epochs", "50"]);
    let acc = class["test_accuracy"]["mean"].as_f64().unwrap();
    assert!(acc > 0.36, "class-dp-mlp eps 300: {acc}");
    assert_eq!(class["budget"]["privacy_unit"], "class");
    let sub = train_on_cora("subclass-dp-mlp", &["--epsilon", "8", "--subclasses", "50", "--unit-rate", "0.5"]);
    let acc = sub["test_accuracy"]["mean"].as_f64().unwrap();
    assert!(acc > 0.45, "subclass-dp-mlp eps 8: {acc}");
}

/// Records clipped one by one and summed over their unit: the bug of running record-level
/// DP-SGD's clipping under a unit-level claim (a unit then moves the sum by up to |unit| S).
fn per_record_clipping(net: &MlpClassifier, y: &Tensor, chosen: &[&[i64]], clip: f64) -> gnnaudit::Result<Grads> {
    let idx = Tensor::from_slice(&chosen.concat());
    let mut f = Fwd::train_taped();
    let logits = net.logits(&idx, &mut f);
    let loss = log_softmax_rows(&logits).g_nll_loss::<Tensor>(&y.index_select(0, &idx), None, Reduction::Sum, -100);
    Ok(f.tape.take().expect("taped forward").clipped_sum(&loss, clip).0)
}

/// The sensitivity replay of Algorithm 5 on cora: removing a whole class moves the clipped sum by
/// exactly that class's clipped norm (ratio ~1 for the longest class gradient, which exceeds S),
/// replacing it (bounded relation) by at most 2S, a subclass by at most S; per-record clipping
/// planted in place of unit clipping is flagged.
#[test]
fn unit_clipping_replay_holds_and_flags_per_record_clipping() {
    let raw = data::load_dataset("cora", Some(&common_cora::data_dir())).unwrap();
    let ds = data::transforms::prepare_like_gap(&raw, 1, SplitRatios::default(), 0).unwrap();
    let opts = ReplayOptions { seed: 0, random_units: 3 };
    let mut r = Recipe::new(Method::ClassDpMlp, Some(8.0));
    r.train.epochs = Some(3);
    let rep = replay(&r, &ds, &opts).unwrap();
    assert_eq!((rep.verdict.as_str(), rep.releases.len()), ("not refuted", 4), "{:?}", rep.releases);
    let worst = rep.releases.iter().find(|x| x.worst_case).unwrap();
    // Clipping scales by S / (norm + 1e-6) (Opacus' guard): the clipped norm is S (1 - 1e-6 / norm).
    assert!((worst.ratio - 1.0).abs() < 1e-5 && worst.declared_sensitivity == 1.0, "{worst:?}");
    assert!(rep.releases.iter().all(|x| x.ratio > 0.0 && x.ratio <= 1.0 + TOLERANCE), "{:?}", rep.releases);

    r.knobs.set("relation", "bounded");
    let rep = replay(&r, &ds, &opts).unwrap();
    assert_eq!(rep.verdict, "not refuted", "{:?}", rep.releases);
    let worst = rep.releases.iter().find(|x| x.worst_case).unwrap();
    assert!(worst.declared_sensitivity == 2.0 && worst.ratio > 0.5, "a replaced class moves by more than S: {worst:?}");

    let mut s = Recipe::new(Method::SubclassDpMlp, Some(8.0));
    s.train.epochs = Some(3);
    s.knobs.set("subclasses", 5);
    let rep = replay(&s, &ds, &opts).unwrap();
    assert_eq!(rep.verdict, "not refuted", "{:?}", rep.releases);
    assert!(rep.releases.iter().all(|x| x.name.contains("subclass")));

    r.knobs.remove("relation"); // back to the default, unbounded
    let (_, planted) = unit_dp::replay_with(&r, &ds, &opts, per_record_clipping).unwrap();
    let max = planted.iter().map(|x| x.ratio).fold(0.0, f64::max);
    eprintln!("subclass replay max ratio {}, planted per-record clipping (class level) max ratio {max}", rep.max_ratio);
    assert!(max > 2.0 && gnnaudit::replay::verdict(max) == "violated", "{planted:?}");
}

/// The thesis's delta = 1e-2 with 153 classes is above 1/153; here: delta 0.2 >= 1/7 classes and
/// delta 0.05 >= 1/(7 x 3) subclasses are refused (exit 2, naming delta and the unit count), and
/// run with a loud warning under --allow-large-delta. `account` applies the same rule.
#[test]
fn delta_above_one_over_units_is_refused() {
    let base = ["train", "--threads", "1", "--dataset", "cora", "--epsilon", "2", "--epochs", "1"];
    refused(&[&base[..], &["--method", "class-dp-mlp", "--delta", "0.2"]].concat(), &["delta", "1/7"]);
    refused(&[&base[..], &["--method", "subclass-dp-mlp", "--subclasses", "3", "--delta", "0.05"]].concat(), &["1/21"]);
    let (code, _, err) =
        gnnaudit(&[&base[..], &["--method", "class-dp-mlp", "--delta", "0.2", "--allow-large-delta"]].concat());
    assert!(code == 0 && err.contains("WARNING") && err.contains("1/7"), "{err}");
    let account = ["account", "epsilon", "--method", "class-dp-mlp", "--sigma", "1", "--units", "153"];
    refused(&[&account[..], &["--delta", "0.01"]].concat(), &["1/153"]);
}

/// Bad input names the field and exits 2; class-DP knobs are refused on other methods.
#[test]
fn bad_input_names_the_field() {
    let base = ["train", "--threads", "1", "--dataset", "cora", "--epsilon", "2", "--epochs", "1"];
    for (extra, field) in [
        (&["--method", "class-dp-mlp", "--unit-rate", "1.5"][..], "unit_rate"),
        (&["--method", "subclass-dp-mlp", "--subclasses", "0"][..], "subclasses"),
        (&["--method", "class-dp-mlp", "--subclasses", "4"][..], "subclasses"),
        (&["--method", "class-dp-mlp", "--batch-norm", "true"][..], "batch_norm"),
        (&["--method", "dp-mlp", "--unit-rate", "0.5"][..], "unit_rate"),
        (&["--method", "dp-mlp", "--relation", "bounded"][..], "relation"),
    ] {
        refused(&[&base[..], extra].concat(), &[field]);
    }
}

/// The subclass canary game: Algorithm 5 without noise (clipping only, no claim) memorises whole
/// mislabelled subclasses (the coin of each shows; eps_lb > 0 as evidence of leakage), subclass-DP
/// at eps 1 keeps eps_lb below its subclass-level claim; the game matches subclass claims and not
/// record-level ones.
#[test]
fn subclass_canaries_expose_a_leaky_mlp_and_respect_subclass_dp() {
    let common = ["attack", "--threads", "1", "--json", "--dataset", "cora", "--attack", "canary-subclass"];
    let open = json_of(&[&common[..], &["--method", "subclass-dp-mlp", "--epochs", "20", "--canaries", "40"]].concat());
    assert_eq!(open["game_detail"]["unit"], "subclass_canary");
    assert!(open["auc"].as_f64().unwrap() > 0.8, "noise-free: AUC {}", open["auc"]);
    assert!(open["eps_lb"].as_f64().unwrap() > 0.5, "noise-free: {}", open["eps_lb"]);
    let private = json_of(
        &[&common[..], &["--method", "subclass-dp-mlp", "--epsilon", "1", "--epochs", "20", "--canaries", "40"]]
            .concat(),
    );
    assert_eq!(private["privacy_unit"], "subclass");
    let eps = private["epsilon"].as_f64().unwrap();
    assert!(private["eps_lb"].as_f64().unwrap() <= eps && private["violation"] == false, "{private}");
    // Record-level DP-MLP: the game's unit (a subclass of 5 records) is not the claim's.
    let record = json_of(&[&common[..], &["--method", "dp-mlp", "--epsilon", "1", "--canaries", "40"]].concat());
    assert!(record["eps_lb"].is_null(), "{}", record["eps_lb"]);
}
