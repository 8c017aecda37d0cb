//! DP-GNN: its accountant against an independent computation of Daigavane et al.'s bound and the
//! golden `dpgnn` cases, its input validation, and a utility floor on Cora.
mod common_cora;
use common_cora::load;
use gnnaudit::methods::dpgnn::{train, DpgnnConfig};
use gnnaudit::privacy::accountant::rdp::{rdp_curve, rdp_epsilon_classic};
use gnnaudit::privacy::accountant::{methods, PrivacyUnit};
use gnnaudit::train::accounting::Accounting;
use gnnaudit::Error;
use statrs::distribution::{Discrete, Hypergeometric};
use statrs::function::factorial::ln_binomial;

/// T/(alpha-1) log E[exp(alpha(alpha-1) 2 rho^2 C^2 / sigma^2)], rho ~ Hypergeometric(N, K+1, m),
/// sigma = s 2(K+1) C: statrs pmf and a hand-written log-sum-exp, independent of the crate.
fn independent_rdp(n: u64, k: u64, m: u64, c: f64, s: f64, steps: u64, alpha: f64) -> f64 {
    let hg = Hypergeometric::new(n, k + 1, m).unwrap();
    let sigma = s * 2.0 * (k + 1) as f64 * c;
    // statrs's pmf overflows its factorials for large N: fall back to log-binomials there.
    let ln_pmf = |r: u64| {
        let p = hg.pmf(r);
        if p.is_finite() && p > 0.0 {
            p.ln()
        } else if r > k + 1 || m - r > n - k - 1 {
            f64::NEG_INFINITY
        } else {
            ln_binomial(k + 1, r) + ln_binomial(n - k - 1, m - r) - ln_binomial(n, m)
        }
    };
    let terms: Vec<f64> = (0..=(k + 1).min(m))
        .filter_map(|r| {
            let lp = ln_pmf(r);
            lp.is_finite().then(|| lp + alpha * (alpha - 1.0) * 2.0 * (r * r) as f64 * c * c / (sigma * sigma))
        })
        .collect();
    let mx = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = mx + terms.iter().map(|t| (t - mx).exp()).sum::<f64>().ln();
    steps as f64 * lse / (alpha - 1.0)
}

#[test]
fn accountant_matches_an_independent_computation_and_the_golden_cases() {
    let path = common_cora::golden("accountant.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases: Vec<_> = v["cases"].as_array().unwrap().iter().filter(|c| c["kind"] == "dpgnn").collect();
    assert!(!cases.is_empty());
    for c in cases {
        let p = &c["params"];
        let get = |k: &str| p[k].as_f64().unwrap();
        let (n, k, m) = (get("num_nodes") as u64, get("max_degree") as u64, get("batch_size") as u64);
        let (clip, s, steps, delta) = (get("max_grad_norm"), get("noise_scale"), get("steps") as u64, get("delta"));
        let orders: Vec<f64> = p["orders"].as_array().unwrap().iter().map(|o| o.as_f64().unwrap()).collect();
        // The accountant's noise multiplier is std / (2(K+1)C), i.e. the noise scale itself.
        let event = methods::dpgnn(n, k, m, s, steps);
        let ours = rdp_curve(&event, &orders);
        let golden: Vec<f64> = c["expected"]["rdp"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        for (i, &a) in orders.iter().enumerate() {
            let indep = independent_rdp(n, k, m, clip, s, steps, a);
            assert!((ours[i] - indep).abs() <= 1e-6 * indep.abs(), "{} alpha {a}: {} vs {indep}", c["id"], ours[i]);
            assert!(
                (ours[i] - golden[i]).abs() <= 1e-6 * golden[i].abs(),
                "{} alpha {a}: golden {}",
                c["id"],
                golden[i]
            );
        }
        let eps = rdp_epsilon_classic(&event, delta).unwrap();
        let want = c["expected"]["eps_classic"].as_f64().unwrap();
        assert!((eps.epsilon - want).abs() <= 1e-6 * want, "{}: eps {} vs {want}", c["id"], eps.epsilon);
        assert_eq!(eps.order, c["expected"]["alpha_classic"].as_f64());
        let std = s * 2.0 * (k + 1) as f64 * clip;
        assert!((std - c["expected"]["noise_std"].as_f64().unwrap()).abs() < 1e-9);
    }
}

#[test]
fn bad_input_is_rejected_before_training() {
    let data = load("cora", 0.75, 0.10, 0);
    let bad = [
        DpgnnConfig { max_degree: 0, ..Default::default() },
        DpgnnConfig { batch_size: 5000, ..Default::default() },
        DpgnnConfig { batch_size: 0, ..Default::default() },
        DpgnnConfig { epsilon: 0.0, ..Default::default() },
        DpgnnConfig { epsilon: -1.0, ..Default::default() },
        DpgnnConfig { delta: Some(1.0), ..Default::default() },
        DpgnnConfig { inference_budget: 0.0, ..Default::default() },
        DpgnnConfig { max_grad_norm: 0.0, ..Default::default() },
    ];
    for cfg in bad {
        match train(&data, &cfg, 0, &Accounting::rdp_only()) {
            Err(e @ Error::InvalidParam { .. }) => assert_eq!(e.exit_code(), 2, "{e}"),
            Err(e) => panic!("wrong error kind: {e}"),
            Ok(_) => panic!("accepted {cfg:?}"),
        }
    }
}

/// The whole pipeline (degree bound, gathered neighbourhoods, per-sample clipping, DP-Adam, noisy
/// test-time aggregation) learns Cora when the calibrated noise is small, and the spent budget
/// (training plus inference release) equals the target. At eps = 8 the correctly accounted noise
/// (std 2(D+1) C noise_scale) keeps DP-GNN near the majority class on Cora (see the report).
#[test]
fn dpgnn_learns_cora_at_low_noise_and_spends_its_target() {
    tch::set_num_threads(1);
    let data = load("cora", 0.75, 0.10, 0);
    let cfg = DpgnnConfig { epsilon: 1e4, max_degree: 10, batch_size: 1024, ..Default::default() };
    let run = train(&data, &cfg, 1, &Accounting::default()).unwrap();
    let test = &data.split.as_ref().unwrap().test;
    let mut counts = vec![0usize; data.num_classes];
    test.iter().for_each(|&i| counts[data.labels[i]] += 1);
    let majority = *counts.iter().max().unwrap() as f64 / test.len() as f64;
    assert!(run.accuracy.test > majority + 0.15, "test {} vs majority {majority}", run.accuracy.test);
    assert_eq!(run.budget.privacy_unit, PrivacyUnit::Node);
    assert!((run.budget.epsilon_rdp - 1e4).abs() < 10.0, "spent {}", run.budget.epsilon_rdp);
    assert_eq!(run.budget.delta, 1e-4);
    assert_eq!(run.budget.components.len(), 2);
}

/// Budget split (module doc of models::dpgnn): the test-time release alone spends exactly its
/// share of epsilon, the composition of DP-SGD and the release meets the whole target, the
/// composed RDP curve is the sum of the two parts computed independently (hypergeometric bound
/// plus the Gaussian's alpha / (2 s^2)), and DP-SGD gets at least the rest of the budget.
#[test]
fn budget_split_composes_to_the_target() {
    use gnnaudit::privacy::accountant::rdp_epsilon;
    let (n, delta) = (11_506usize, 1e-5);
    for (eps, share, k, m, epochs) in
        [(8.0, 0.25, 10usize, 1024usize, 20usize), (8.0, 0.5, 4, 2048, 10), (2.0, 0.1, 100, 256, 10)]
    {
        let cfg = DpgnnConfig {
            epsilon: eps,
            inference_budget: share,
            max_degree: k,
            batch_size: m,
            epochs,
            ..Default::default()
        };
        let (s, s_inf) = cfg.calibrate(n, delta, &Accounting::rdp_only()).unwrap();
        let release = rdp_epsilon(&cfg.inference_event(s_inf), delta).unwrap().epsilon;
        assert!(release <= share * eps + 1e-9 && release >= share * eps * 0.999, "release {release}");
        let total = rdp_epsilon(&cfg.event(n, s, s_inf), delta).unwrap().epsilon;
        assert!(total <= eps + 1e-9 && total >= eps * 0.999, "total {total} vs {eps}");
        let sgd = rdp_epsilon(&methods::dpgnn(n as u64, k as u64, m as u64, s, cfg.steps(n)), delta).unwrap().epsilon;
        assert!(sgd >= (1.0 - share) * eps, "DP-SGD alone {sgd} < {}", (1.0 - share) * eps);
        let orders = [1.5, 2.0, 4.0, 8.0, 16.0];
        let curve = rdp_curve(&cfg.event(n, s, s_inf), &orders);
        for (i, &a) in orders.iter().enumerate() {
            let indep =
                independent_rdp(n as u64, k as u64, m as u64, 1.0, s, cfg.steps(n), a) + a / (2.0 * s_inf * s_inf);
            assert!((curve[i] - indep).abs() <= 1e-6 * indep, "alpha {a}: {} vs {indep}", curve[i]);
        }
    }
    let bad = DpgnnConfig { inference_budget: 1.0, ..Default::default() };
    assert!(matches!(bad.validate(100), Err(Error::InvalidParam { .. })));
}
