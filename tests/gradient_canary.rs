//! In-pipeline gradient canaries (`--attack canary-gradient`): the audited training is the
//! untouched one, bit for bit; on a correct DP-SGD the attack false-alarms within alpha and comes close to
//! the claim; the planted DP-SGD bugs are violated in one run at eps 4; the noise-off control
//! shows the audit's power in an audit; methods without DP-SGD are refused by name.
use gnnaudit::methods::{Method, Recipe};
use gnnaudit::privacy::accountant::{calibrate, methods, rdp_epsilon};
use gnnaudit::privacy::dpsgd::canary::{
    self, observe, CanaryLayout, CanaryPlan, CanaryReadings, CanarySites, NodeGroup,
};
use gnnaudit::privacy::dpsgd::canary_plan::StagePlan;
use gnnaudit::privacy::dpsgd::{DpSgd, PlantedFlaw};
use gnnaudit_attacks::stats::{certify, partition_by_coin, AuditSpec, BoundKind, ThresholdStrategy, COIN_ASSUMPTION};
use gnnaudit_attacks::PlannedTest;
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
        layout: CanaryLayout::Coded,
        planning: None,
        node_group: None,
    }
}

/// The optimiser steps on the release less the canaries, with the noise drawn as untouched
/// training draws it: the audited model is bit-identical to the untouched one, with or without
/// canaries drawn into its batches.
#[test]
fn the_audited_training_is_bit_identical_to_an_untouched_one() {
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
    assert!(planted.model.posteriors().equal(&plain), "included canaries changed the optimiser's input");
    // The hook is gone once the audit returns.
    assert!(train().unwrap().model.posteriors().equal(&plain));
}

/// `gnnaudit attack --attack canary-gradient --seed S` reports the utility of `gnnaudit train`
/// of the same recipe with seed and split seed S, to the last bit: the audited run is the target.
#[test]
fn the_audited_run_is_gnnaudit_train_of_the_same_recipe_and_seed() {
    for (method, seed) in [("dp-mlp", "1"), ("gap-ndp", "2")] {
        let common = ["--threads", "2", "--json", "--dataset", "cora", "--method", method, "--epsilon", "4"];
        let run = |args: &[&str]| {
            let out = cli::command(args)
                .args(common)
                .env("GNNAUDIT_DATA", common_cora::data_dir())
                .output()
                .expect("gnnaudit runs");
            assert!(out.status.success(), "{method} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("one JSON object")
        };
        let trained = run(&["train", "--seed", seed, "--split-seed", seed]);
        let audited = run(&["attack", "--seed", seed, "--attack", "canary-gradient"]);
        let want = trained["test_accuracy"]["runs"][0].as_f64().unwrap();
        assert_eq!(audited["utility"]["test"].as_f64(), Some(want), "{method}: {}", audited["utility"]);
        assert_eq!(audited["utility"]["val"].as_f64(), trained["val_accuracy"][0].as_f64(), "{method}");
        // One run is certified once: the printed bounds are the run's own certificates.
        let run = &audited["runs"][0];
        assert_eq!(audited["eps_lb"], run["eps_lb"], "{method}");
        assert_eq!(audited["eps_lb_one_run"], run["details"]["eps_lb_one_run"], "{method}");
    }
}

/// How the engine runs are laid out: m canaries on a stage of `coordinates` coordinates.
#[derive(Clone, Copy)]
struct Layout {
    canaries: usize,
    coordinates: usize,
    layout: CanaryLayout,
    /// Some: node canaries under this node-level claim.
    node_group: Option<NodeGroup>,
}

/// Each canary on a coordinate of its own.
const OWN: Layout = Layout { canaries: 400, coordinates: 400, layout: CanaryLayout::Coded, node_group: None };
/// Eight canaries a coordinate on orthogonal sign codes.
const CODED: Layout = Layout { canaries: 400, coordinates: 50, layout: CanaryLayout::Coded, node_group: None };
/// Eight canaries a coordinate taking turns.
const PHASES: Layout = Layout { canaries: 400, coordinates: 50, layout: CanaryLayout::Phases, node_group: None };

/// The DP-SGD step of the engine tests: clip 1, an expected batch of 64.
fn step(sigma: f64, q: f64, flaw: PlantedFlaw) -> DpSgd {
    DpSgd { noise_multiplier: sigma, max_grad_norm: 1.0, expected_batch_size: 64.0, sample_rate: q, flaw }
}

/// The engine alone: `steps` Poisson-sampled DP-SGD steps with no real gradient; returns
/// (scores, coins).
fn engine_run(seed: u64, flaw: PlantedFlaw, sigma: f64, q: f64, steps: usize, l: Layout) -> (Vec<f64>, Vec<bool>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let coins: Vec<bool> = (0..l.canaries).map(|_| rng.gen_bool(0.5)).collect();
    let dp = step(sigma, q, flaw);
    let params = vec![(0usize, Tensor::zeros([l.coordinates as i64], (Kind::Float, tch::Device::Cpu)))];
    tch::manual_seed(seed as i64);
    let p = CanaryPlan {
        included: coins.clone(),
        sites: CanarySites::All,
        raw_norm: 100.0,
        seed: rng.gen(),
        noise_off: false,
        layout: l.layout,
        planning: None,
        node_group: l.node_group,
    };
    let ((), read) = observe(p, || {
        for _ in 0..steps {
            let _ = dp.noisy_mean(Vec::new(), &params);
        }
        Ok(())
    })
    .unwrap();
    // The audited canaries are the plan's first ones (`auto` may keep fewer).
    (read.scores, coins[..read.canaries].to_vec())
}

/// Under shuffled batches (the planted `demo-dp-mlp-shuffled`) a canary is drawn as an example
/// of the permutation is: exactly once an epoch when the batches cover the epoch (512 examples in
/// 8 batches of 64), where Poisson sampling at the same rate draws a varying number.
#[test]
fn shuffled_batches_draw_each_canary_once_an_epoch() {
    let params = vec![(0usize, Tensor::zeros([400], (Kind::Float, tch::Device::Cpu)))];
    let draws = |flaw| {
        let dp = step(1.0, 0.125, flaw);
        let ((), read) = observe(plan(400, |i| i % 3 != 0, 3), || {
            for _ in 0..5 * 8 {
                let _ = dp.noisy_mean(Vec::new(), &params);
            }
            Ok(())
        })
        .unwrap();
        read.sampled
    };
    let included = (0..400).filter(|i| i % 3 != 0).count();
    assert_eq!(draws(PlantedFlaw::ShuffledAsPoisson), 5 * included);
    assert_ne!(draws(PlantedFlaw::None), 5 * included);
}

/// The engine's bound for one run, certified as the attack certifies it: gdp at its planned
/// test (log-likelihood ratio >= 0 on every canary, a split beside it), other bounds on a split.
fn engine_bound(seed: u64, flaw: PlantedFlaw, setting: (f64, f64, usize), bound: BoundKind, l: Layout) -> f64 {
    let (sigma, q, steps) = setting;
    let (scores, coins) = engine_run(seed, flaw, sigma, q, steps, l);
    let (pos, neg) = partition_by_coin(&scores, &coins);
    let planned = Some(PlannedTest { threshold: 0.0, bound: BoundKind::Gdp });
    let strategy = PlannedTest::strategy_for(planned, ThresholdStrategy::default(), bound);
    let spec = AuditSpec { seed, strategy, ..AuditSpec::new(bound, 1e-5) };
    certify(&pos, &neg, &spec, COIN_ASSUMPTION).unwrap().eps_lb
}

#[test]
fn on_a_correct_dp_sgd_false_alarms_stay_within_alpha_and_a_planted_bug_is_caught() {
    let (q, steps, delta, eps) = (0.25, 100, 1e-5, 2.0);
    let event = |s: f64| methods::dp_sgd(q, steps as u64, s);
    let sigma = calibrate(eps, delta, event).unwrap();
    let claim = rdp_epsilon(&event(sigma), delta).unwrap().epsilon;
    let seeds = 40;
    // Canaries on coordinates of their own, and eight to a coordinate on sign codes: the codes
    // keep the sharers' scores independent, so the false-alarm rate stays within alpha too.
    for layout in [OWN, CODED] {
        for bound in [BoundKind::Gdp, BoundKind::ClopperPearson] {
            let mut alarms = 0;
            let mut best: f64 = 0.0;
            for seed in 0..seeds {
                let lb = engine_bound(seed, PlantedFlaw::None, (sigma, q, steps), bound, layout);
                best = best.max(lb);
                alarms += usize::from(lb > claim);
            }
            // P(Binomial(40, 0.05) >= 7) < 0.4%: more alarms would show an unsound bound or hook.
            let shared = layout.coordinates < layout.canaries;
            assert!(alarms <= 6, "{bound:?}, shared {shared}: {alarms} of {seeds} runs above the claim {claim}");
            assert!(best > 0.0, "{bound:?}, shared {shared}: never certified anything on the correct mechanism");
        }
    }
    // The same audit on the noise-on-mean bug (std divided by the batch size once more).
    for layout in [OWN, CODED] {
        let lb = engine_bound(99, PlantedFlaw::NoiseOnMean, (sigma, q, steps), BoundKind::Gdp, layout);
        assert!(lb > claim, "the noise-on-mean bug was not caught: eps_lb {lb} vs claim {claim}");
    }
}

/// Node canaries under a node-level claim (DP-GNN's event: a node in up to 6 terms, batches of
/// 40 out of 200 without replacement): false alarms stay within alpha, on coordinates of their
/// own and four to a coordinate on sign codes, and they certify more than per-example canaries in
/// the same steps, which exercise 1/(2(K+1)) of the sensitivity the claim covers.
#[test]
fn node_canaries_stay_within_alpha_and_certify_more_than_per_example_ones() {
    let (n, k, b, steps, delta, eps) = (200u64, 5u64, 40u64, 100usize, 1e-5, 2.0);
    let event = |s: f64| methods::dpgnn(n, k, b, s, steps as u64);
    let scale = calibrate(eps, delta, event).unwrap();
    let claim = rdp_epsilon(&event(scale), delta).unwrap().epsilon;
    let setting = (2.0 * (k + 1) as f64 * scale, b as f64 / n as f64, steps);
    let group = NodeGroup { population: n, terms: k + 1, batch: b };
    let many = Layout { canaries: 4000, coordinates: 4000, ..OWN };
    let node = Layout { layout: CanaryLayout::Auto, node_group: Some(group), ..many };
    // Four node canaries a coordinate on sign codes, each scoring its cycle sums.
    let coded = Layout { coordinates: 1000, layout: CanaryLayout::Coded, ..node };
    let seeds = 40;
    let mut node_gdp = vec![];
    for (layout, bound) in [(node, BoundKind::Gdp), (node, BoundKind::ClopperPearson), (coded, BoundKind::Gdp)] {
        let lbs: Vec<f64> =
            (0..seeds).map(|seed| engine_bound(seed, PlantedFlaw::None, setting, bound, layout)).collect();
        let alarms = lbs.iter().filter(|&&lb| lb > claim).count();
        let shared = layout.coordinates < layout.canaries;
        // P(Binomial(40, 0.05) >= 7) < 0.4%.
        assert!(alarms <= 6, "{bound:?}, shared {shared}: {alarms} of {seeds} runs above the claim {claim}: {lbs:?}");
        assert!(lbs.iter().any(|&lb| lb > 0.0), "{bound:?}, shared {shared}: never certified anything");
        if bound == BoundKind::Gdp && !shared {
            node_gdp = lbs;
        }
    }
    let per_example: Vec<f64> =
        (0..seeds).map(|seed| engine_bound(seed, PlantedFlaw::None, setting, BoundKind::Gdp, many)).collect();
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    eprintln!("claim {claim}: node canaries {}, per-example {}", median(&node_gdp), median(&per_example));
    assert!(
        median(&node_gdp) > 2.0 * median(&per_example).max(0.05),
        "node canaries certify no more than per-example ones: {node_gdp:?} vs {per_example:?}"
    );
}

/// `auto` gives up codes only where a sharer expects few draws per code cycle and capping keeps
/// at least half the canaries: 400 canaries on 250 coordinates at q = 0.02 (0.04 draws a cycle)
/// keep the first 250, one a coordinate, scored exactly as `coded` scores 250 canaries on 250
/// coordinates (the same streams); on 50 coordinates they stay coded at q = 0.25 (two draws a
/// cycle) and at q = 0.02 too (capping would keep an eighth).
#[test]
fn auto_layout_codes_sharers_only_where_they_are_drawn_often_enough() {
    let run = |q: f64, l: Layout| {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let coins: Vec<bool> = (0..l.canaries).map(|_| rng.gen_bool(0.5)).collect();
        let dp = step(1.0, q, PlantedFlaw::None);
        let params = vec![(0usize, Tensor::zeros([l.coordinates as i64], (Kind::Float, tch::Device::Cpu)))];
        tch::manual_seed(5);
        let p = CanaryPlan { included: coins, layout: l.layout, ..plan(0, |_| true, 11) };
        let ((), read) = observe(p, || {
            for _ in 0..40 {
                let _ = dp.noisy_mean(Vec::new(), &params);
            }
            Ok(())
        })
        .unwrap();
        read
    };
    let auto = |coordinates| Layout { canaries: 400, coordinates, layout: CanaryLayout::Auto, node_group: None };
    let rare = run(0.02, auto(250));
    assert_eq!((rare.canaries, rare.sharing, rare.layout), (250, 1, "own coordinates"), "{rare:?}");
    assert_eq!(rare.scores.len(), 250);
    let own = run(0.02, Layout { canaries: 250, coordinates: 250, layout: CanaryLayout::Coded, node_group: None });
    assert_eq!(own.scores, rare.scores, "auto's 250 canaries must be read as 250 canaries of their own are");
    for q in [0.25, 0.02] {
        let read = run(q, auto(50));
        assert_eq!((read.canaries, read.sharing, read.layout), (400, 8, "coded"), "q {q}: {read:?}");
        assert_eq!(read.scores.len(), 400);
    }
    // The explicit layouts keep all canaries whatever the rate.
    assert_eq!(run(0.02, Layout { layout: CanaryLayout::Coded, ..auto(250) }).canaries, 400);
    assert_eq!(run(0.02, Layout { layout: CanaryLayout::Phases, ..auto(250) }).canaries, 400);
}

/// A run of DP-SGD stages of `coordinates` each (rate q, 40 steps a stage) with `m` canaries,
/// the stages declared to the audit before the first (`declare`) or not.
fn staged_run(m: usize, stages: &[usize], q: f64, declare: bool) -> Result<CanaryReadings, gnnaudit::Error> {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let coins: Vec<bool> = (0..m).map(|_| rng.gen_bool(0.5)).collect();
    let dp = step(1.0, q, PlantedFlaw::None);
    let params: Vec<Vec<(usize, Tensor)>> = stages
        .iter()
        .enumerate()
        .map(|(i, &d)| vec![(i, Tensor::zeros([d as i64], (Kind::Float, tch::Device::Cpu)))])
        .collect();
    tch::manual_seed(8);
    let p = CanaryPlan { included: coins, layout: CanaryLayout::Auto, ..plan(0, |_| true, 13) };
    observe(p, || {
        if declare {
            canary::declare(params.iter().map(|p| StagePlan::new(&[p[0].1.shallow_clone()], &dp, 40)).collect());
        }
        for p in &params {
            for _ in 0..40 {
                let _ = dp.noisy_mean(Vec::new(), p);
            }
        }
        Ok(())
    })
    .map(|((), read)| read)
}

/// `auto` decides on the whole run a method declares: two sparse stages (q = 0.02) of 600 and 150
/// coordinates for 1,000 canaries, the shape of GAP-NDP on Cornell5. Stage by stage, the first
/// would cap the audit at 600 canaries and the second would code them anyway; on the declared
/// plan a cap at 150 keeps too few, so all 1,000 are coded. A stage that runs otherwise than
/// declared is an error.
#[test]
fn auto_layout_decides_on_the_declared_stages_of_the_whole_run() {
    let undeclared = staged_run(1_000, &[600, 150], 0.02, false).unwrap();
    assert_eq!((undeclared.canaries, undeclared.layout), (600, "coded"), "{undeclared:?}");
    let declared = staged_run(1_000, &[600, 150], 0.02, true).unwrap();
    assert_eq!((declared.canaries, declared.sharing, declared.layout), (1_000, 7, "coded"), "{declared:?}");
    assert!(declared.count_reason.contains("fewer than half"), "{}", declared.count_reason);
    // Both sparse stages fit at least half: capped at the smaller, every canary on its own.
    let capped = staged_run(1_000, &[600, 550], 0.02, true).unwrap();
    assert_eq!((capped.canaries, capped.sharing, capped.layout), (550, 1, "own coordinates"), "{capped:?}");
    // The capped run is scored as the same first 550 canaries on their own coordinates are.
    let own = staged_run(550, &[600, 550], 0.02, true).unwrap();
    assert_eq!(own.scores, capped.scores);
    // Declaring stages the run does not take is caught.
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let p = CanaryPlan { included: (0..300).map(|_| rng.gen_bool(0.5)).collect(), ..plan(0, |_| true, 13) };
    let dp = step(1.0, 0.1, PlantedFlaw::None);
    let params = vec![(0usize, Tensor::zeros([80], (Kind::Float, tch::Device::Cpu)))];
    let wrong = observe(p, || {
        canary::declare(vec![StagePlan::new(&[Tensor::zeros([81], (Kind::Float, tch::Device::Cpu))], &dp, 3)]);
        let _ = dp.noisy_mean(Vec::new(), &params);
        Ok(())
    });
    let e = wrong.unwrap_err().to_string();
    assert!(e.contains("declared"), "{e}");
}

/// With eight canaries a coordinate, sign codes let each read 96 of the 100 steps (12 code cycles)
/// where turns give each 12 or 13: over seven seeds the coded median bound is far above the turns'
/// (measured: 0.68 against 0 at a claim of 4).
#[test]
fn coded_sharers_certify_more_than_sharers_taking_turns() {
    let (q, steps, delta, eps) = (0.25, 100, 1e-5, 4.0);
    let event = |s: f64| methods::dp_sgd(q, steps as u64, s);
    let sigma = calibrate(eps, delta, event).unwrap();
    let median = |l: Layout| {
        let mut v: Vec<f64> =
            (0..7).map(|seed| engine_bound(seed, PlantedFlaw::None, (sigma, q, steps), BoundKind::Gdp, l)).collect();
        v.sort_by(f64::total_cmp);
        v[3]
    };
    let (coded, phases) = (median(CODED), median(PHASES));
    assert!(coded > 1.5 * phases && coded > 0.5, "coded median {coded} vs phases {phases} (claim about {eps})");
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
    // The utility reported is the audited run's (no second training of the target), and the
    // canaries leave it learning: well above cora's majority class (about 30%).
    assert_eq!(v["utility"]["of"], "the audited training, which is the target's", "{v}");
    let test = v["utility"]["test"].as_f64().unwrap();
    assert!(test > 0.5, "the audited DP-MLP run's test accuracy {test}");
}

/// The gdp bound is certified at the test the audit planned before training (ratio >= 0, on
/// every canary, a split beside it), and the certificate says so; the default bound
/// (clopper-pearson) keeps its split, and a strategy set otherwise is kept.
#[test]
fn gdp_is_certified_at_the_planned_test_and_other_strategies_are_kept() {
    let certificate =
        |extra: &[&str]| attack("dp-mlp", "4", &[extra, &["--seed", "0"]].concat())["certificate"].clone();
    let planned = certificate(&["--bound", "gdp"]);
    assert_eq!(
        (planned["strategy"].as_str(), planned["threshold"].as_f64()),
        (Some("planned"), Some(0.0)),
        "{planned}"
    );
    assert_eq!(planned["certified_positives"], planned["positives"], "the planned test certifies on every canary");
    let why = planned["assumption"].as_str().unwrap();
    assert!(why.contains("planned threshold 0 on all") && why.contains("a split at 0.1 alpha"), "{why}");
    let kept = certificate(&["--bound", "gdp", "--threshold-strategy", "bonferroni"]);
    assert_eq!(kept["strategy"], "bonferroni", "{kept}");
    let cp = certificate(&[]);
    assert_eq!((cp["bound"].as_str(), cp["strategy"].as_str()), (Some("clopper-pearson"), Some("split")), "{cp}");
}

/// DP-GNN's claim is node-level: a node enters up to K+1 terms and the noise is scaled to the
/// replace-one sensitivity 2(K+1)C, so its canaries enter as nodes. On cora's default (every
/// training node in each step) they reach half that claim at eps 4, never above it, where
/// per-example canaries certified 0; with batches of 256 out of 2,031 drawn without replacement,
/// the node's terms drawn hypergeometrically, they still certify something and stay below it.
#[test]
fn dpgnn_node_canaries_reach_half_the_node_level_claim_at_eps_4() {
    for (extra, floor) in [(&[][..], 0.5), (&["--batch-size", "256"][..], 0.0)] {
        let v = attack("dpgnn", "4", &[extra, &["--bound", "gdp", "--seed", "0"]].concat());
        let (claim, lb, verdict, total) = figures(&v);
        assert!(claim < total, "the DP-SGD component {claim} is part of DP-GNN's total {total}");
        assert!(lb > floor * claim && lb <= claim, "{extra:?}: eps_lb {lb} vs the claim {claim}");
        assert_ne!(verdict, "violated");
        let game = &v["game_detail"];
        assert!(
            game["positive"].as_str().unwrap().contains("node canary (fair coin)")
                && game["positive"].as_str().unwrap().contains("up to 5 terms"),
            "{game}"
        );
        assert!(game["negative"].as_str().unwrap().contains("-C"), "{game}");
    }
}

/// GAP-NDP's classifier on cora has about 1,500 coordinates, so the audit's chosen count (over
/// 20,000) shares them on sign codes, each canary reading every step of both stages: at least
/// half the DP-SGD claim at eps 4 (with 10,000 canaries taking turns, each read a seventh of the
/// classifier's steps and the median was 0.47 of it).
#[test]
fn gap_ndp_canaries_sharing_coordinates_reach_half_the_claim_at_eps_4() {
    let v = attack("gap-ndp", "4", &["--bound", "gdp"]);
    let (claim, lb, verdict, total) = figures(&v);
    let sharing = v["runs"][0]["details"]["sharing"].as_u64().unwrap();
    assert!(sharing > 1, "the classifier's coordinates were expected to be shared: {sharing}");
    // `auto` codes them (sharers at q = 0.13 are drawn often enough), and the audit chose how
    // many before training: the count it predicted best, printed with the predictions.
    let details = &v["runs"][0]["details"];
    assert_eq!(details["layout"], "coded", "{v}");
    assert_eq!(details["canaries_requested"], serde_json::Value::Null, "{v}");
    let m = details["canaries"].as_u64().unwrap();
    assert!(m > 1_543, "{v}");
    let why = details["canaries_why"].as_str().unwrap();
    assert!(why.starts_with(&format!("{m} canaries, chosen before training")), "{why}");
    let predictions = details["canary_count_predictions"].as_array().unwrap();
    assert!(predictions.iter().any(|p| p["canaries"] == m), "{v}");
    assert!(claim < total, "GAP-NDP's DP-SGD is part of its claim: component {claim} vs total {total}");
    assert!(lb >= 0.5 * claim && lb <= claim, "GAP-NDP eps 4: eps_lb {lb} vs the claim {claim}");
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
