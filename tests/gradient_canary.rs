//! In-pipeline gradient canaries (`--attack canary-gradient`): the hook changes nothing when no
//! canary enters; on a correct DP-SGD the attack false-alarms within alpha and comes close to
//! the claim; the planted DP-SGD bugs are violated in one run at eps 4; the noise-off control
//! shows the audit's power in an audit; methods without DP-SGD are refused by name.
use gnnaudit::methods::{Method, Recipe};
use gnnaudit::privacy::accountant::{calibrate, methods, rdp_epsilon};
use gnnaudit::privacy::dpsgd::canary::{observe, CanaryPlan, CanarySites};
use gnnaudit::privacy::dpsgd::{DpSgd, PlantedFlaw};
use gnnaudit_attacks::stats::{certify, partition_by_coin, AuditSpec, BoundKind, COIN_ASSUMPTION};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

// Both helpers include tests/common/data.rs for the tests that load only one of them.
#[allow(clippy::duplicate_mod)]
#[path = "common/cli.rs"]
mod cli;
mod common_cora;
use cli::{audit, json_of, refused};

fn attack(method: &str, epsilon: &str, extra: &[&str]) -> serde_json::Value {
    let args = ["attack", "--threads", "2", "--json", "--dataset", "cora", "--method", method];
    json_of(&[&args[..], &["--attack", "canary-gradient", "--epsilon", epsilon], extra].concat())
}

/// (component claim, eps_lb, verdict, the method's total claim).
fn figures(v: &serde_json::Value) -> (f64, f64, String, f64) {
    let claim = v["claimed_epsilon"].as_f64().expect("the DP-SGD component's claim");
    let lb = v["eps_lb"].as_f64().expect("an eps_lb: the gradient game matches a node-level claim");
    let total = v["method_claimed_epsilon"].as_f64().expect("the method's total claim");
    (claim, lb, v["verdict"].as_str().unwrap().to_string(), total)
}

fn plan(m: usize, coin: impl Fn(usize) -> bool, seed: u64) -> CanaryPlan {
    CanaryPlan {
        included: (0..m).map(coin).collect(),
        sites: CanarySites::All,
        raw_norm: 100.0,
        seed,
        noise_off: false,
    }
}

#[test]
fn the_hook_leaves_training_bit_identical_when_no_canary_enters() {
    let data = common_cora::load("cora", 0.5, 0.2, 1);
    let mut r = Recipe::new(Method::DpMlp, Some(4.0));
    r.train.epochs = Some(3);
    let acct = Default::default();
    let train = || gnnaudit::methods::train_with(&r, &data, 7, &acct);
    let plain = train().unwrap().model.posteriors();
    let (silent, read) = observe(plan(200, |_| false, 3), train).unwrap();
    assert!(read.steps > 0 && read.sampled == 0, "{read:?}");
    assert!(silent.model.posteriors().equal(&plain), "an observer without included canaries changed the training");
    let (planted, read) = observe(plan(200, |_| true, 3), train).unwrap();
    assert!(read.sampled > 0);
    assert!(!planted.model.posteriors().equal(&plain), "included canaries must enter the gradient");
    // The hook is gone once the audit returns.
    assert!(train().unwrap().model.posteriors().equal(&plain));
}

/// The engine alone: `steps` Poisson-sampled DP-SGD steps with no real gradient, m canaries on
/// a vector of m coordinates; returns (scores, coins).
fn engine_run(seed: u64, flaw: PlantedFlaw, sigma: f64, q: f64, steps: usize) -> (Vec<f64>, Vec<bool>) {
    let m = 400;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let coins: Vec<bool> = (0..m).map(|_| rng.gen_bool(0.5)).collect();
    let dp = DpSgd { noise_multiplier: sigma, max_grad_norm: 1.0, expected_batch_size: 64.0, sample_rate: q, flaw };
    let params = vec![(0usize, Tensor::zeros([m as i64], (Kind::Float, tch::Device::Cpu)))];
    tch::manual_seed(seed as i64);
    let p = CanaryPlan {
        included: coins.clone(),
        sites: CanarySites::All,
        raw_norm: 100.0,
        seed: rng.gen(),
        noise_off: false,
    };
    let ((), read) = observe(p, || {
        for _ in 0..steps {
            let _ = dp.noisy_mean(Vec::new(), &params);
        }
        Ok(())
    })
    .unwrap();
    (read.scores, coins)
}

#[test]
fn on_a_correct_dp_sgd_false_alarms_stay_within_alpha_and_a_planted_bug_is_caught() {
    let (q, steps, delta, eps) = (0.25, 100, 1e-5, 2.0);
    let event = |s: f64| methods::dp_sgd(q, steps as u64, s);
    let sigma = calibrate(eps, delta, event).unwrap();
    let claim = rdp_epsilon(&event(sigma), delta).unwrap().epsilon;
    let seeds = 40;
    for bound in [BoundKind::Gdp, BoundKind::ClopperPearson] {
        let mut alarms = 0;
        let mut best: f64 = 0.0;
        for seed in 0..seeds {
            let (scores, coins) = engine_run(seed, PlantedFlaw::None, sigma, q, steps);
            let (pos, neg) = partition_by_coin(&scores, &coins);
            let spec = AuditSpec { seed, ..AuditSpec::new(bound, delta) };
            let lb = certify(&pos, &neg, &spec, COIN_ASSUMPTION).unwrap().eps_lb;
            best = best.max(lb);
            alarms += usize::from(lb > claim);
        }
        // P(Binomial(40, 0.05) >= 7) < 0.4%: more alarms would show an unsound bound or hook.
        assert!(alarms <= 6, "{bound:?}: {alarms} of {seeds} runs above the claim {claim}");
        assert!(best > 0.0, "{bound:?}: the attack never certified anything on the correct mechanism");
    }
    // The same audit on the noise-on-mean bug (std divided by the batch size once more).
    let (scores, coins) = engine_run(99, PlantedFlaw::NoiseOnMean, sigma, q, steps);
    let (pos, neg) = partition_by_coin(&scores, &coins);
    let lb = certify(&pos, &neg, &AuditSpec::new(BoundKind::Gdp, delta), COIN_ASSUMPTION).unwrap().eps_lb;
    assert!(lb > claim, "the noise-on-mean bug was not caught: eps_lb {lb} vs claim {claim}");
}

#[test]
fn dp_mlp_gradient_canaries_come_close_to_the_dp_sgd_claim_and_never_above() {
    let v = attack("dp-mlp", "4", &["--bound", "gdp"]);
    let (claim, lb, verdict, total) = figures(&v);
    assert_eq!(v["certificate"]["bound"], "gdp", "{v}");
    assert!((claim - total).abs() < 1e-9, "DP-MLP is all DP-SGD: component {claim} vs total {total}");
    assert!(lb >= 0.5 * claim, "DP-MLP eps 4: eps_lb {lb} < half the claim {claim}");
    assert!(lb <= claim, "DP-MLP eps 4: eps_lb {lb} above a correct claim {claim}");
    assert_ne!(verdict, "violated");
}

/// Clopper-Pearson: valid whatever the (buggy) mechanism's shape. 4000 canaries, so that a
/// perfect separation can certify well above 4.
const CP: [&str; 4] = ["--bound", "clopper-pearson", "--set", "canaries=4000"];

#[test]
fn noise_added_to_the_mean_is_violated_in_one_run_at_eps_4() {
    let v = attack("demo-dp-mlp-noise-on-mean", "4", &CP);
    let (claim, lb, verdict, _) = figures(&v);
    assert_eq!(verdict, "violated", "noise on the mean not caught: eps_lb {lb} vs claim {claim}");
}

/// Canaries on bias coordinates only: a wider, deeper MLP has more of them (519), and 20 epochs
/// give each canary enough steps to be drawn into. The buggy trainer's weights are clipped by
/// their ghost norms (no per-example tensor), so the run takes seconds; the correct DP-MLP at the
/// same settings stays below its claim.
#[test]
fn unclipped_biases_are_violated_in_one_run_at_eps_4() {
    let biases = ["--set", "sites=\"biases\"", "--hidden", "256", "--mlp-layers", "3", "--epochs", "20"];
    let settings = [&CP[..], &biases[..]].concat();
    let v = attack("demo-dp-mlp-bias-unclipped", "4", &settings);
    let (claim, lb, verdict, _) = figures(&v);
    assert_eq!(verdict, "violated", "unclipped biases not caught: eps_lb {lb} vs claim {claim}");
    let (claim, lb, verdict, _) = figures(&attack("dp-mlp", "4", &settings));
    assert!(lb <= claim && verdict != "violated", "correct DP-MLP: eps_lb {lb} vs claim {claim}");
}

#[test]
fn a_method_without_dp_sgd_is_refused_by_name() {
    let args = ["attack", "--threads", "1", "--dataset", "synthetic:nodes=300", "--method", "gap-edp"];
    refused(
        &[&args[..], &["--attack", "canary-gradient", "--epsilon", "4", "--epochs", "2"]].concat(),
        &["gap-edp", "DP-SGD"],
    );
}

const CONTROL_AUDIT: &str = r#"
name = "gradient-control"
seed = 1
[privacy]
epsilons = [1]
[[datasets]]
name = "synthetic"
synthetic = { nodes = 600, features = 64, signal = 1.5 }
[[methods]]
method = "dp-mlp"
epochs = 10
[[attacks]]
kind = "canary-gradient"
params = { canaries = 2000, bound = "gdp" }
"#;

/// The positive control of canary-gradient is the same training with DP-SGD's noise left out,
/// run by the same audit: the row says `not refuted` exactly when that control's bound is above
/// the claim, and its hint names this attack's own levers.
#[test]
fn the_noise_off_control_shows_the_gradient_audit_s_power() {
    let run = audit(CONTROL_AUDIT);
    let cell =
        run.report["cells"].as_array().unwrap().iter().find(|c| c["method"] == "dp-mlp").expect("the dp-mlp cell");
    let row = cell["attacks"].as_array().unwrap().iter().find(|a| a["kind"] == "canary-gradient").unwrap();
    let claim = row["details"]["claimed_epsilon"].as_f64().expect("the DP-SGD component's claim");
    let control = &row["control"];
    assert_eq!(control["method"], "dp-mlp without DP-SGD noise", "{row}");
    let control_lb = control["eps_lb"].as_f64().expect("the control's bound");
    assert!(row["eps_lb"].as_f64().unwrap() <= claim, "{row}");
    // Without noise every included canary drawn once is told apart: far above the claim.
    assert!(control_lb > claim, "control eps_lb {control_lb} vs claim {claim}");
    assert_eq!(row["verdict"], "not refuted", "{row}");
    assert_eq!(control["caught"], true);
    let md = run.read("report.md");
    let line = md.lines().find(|l| l.contains("dp-mlp without DP-SGD noise")).unwrap_or_else(|| panic!("{md}"));
    assert!(line.contains("not refuted"), "{line}");
    assert!(!md.lines().any(|l| l.contains("canary-gradient") && l.contains("canary-aggregation")), "{md}");
}
