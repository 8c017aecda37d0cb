//! The binomial bounds against 50-digit mpmath values (tests/golden/clopper_pearson.json, made by
//! scripts/golden_clopper_pearson.py): every Clopper-Pearson bound of the grid to 1e-10 relative,
//! and at n = 1e7 the Clopper-Pearson and GDP epsilons and the one-run p-value built on them.
use gnnaudit_attacks::binomial::{clopper_pearson_lower, clopper_pearson_upper, ln_tail_at_least, ln_tail_at_most};
use gnnaudit_attacks::one_run::one_run_p_value;
use gnnaudit_attacks::stats::gdp_epsilon;
use serde_json::Value;
use statrs::distribution::{ContinuousCDF, Normal};

fn golden() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/clopper_pearson.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("golden file")).expect("golden JSON")
}

fn number(v: &Value) -> f64 {
    match v {
        Value::String(s) => s.parse().expect("a decimal string"),
        other => other.as_f64().expect("a number"),
    }
}

fn relative_error(got: f64, want: f64) -> f64 {
    if want == 0.0 {
        got.abs()
    } else {
        (got / want - 1.0).abs()
    }
}

#[test]
fn every_golden_bound_is_exact_to_1e_10() {
    let doc = golden();
    let cases = doc["cases"].as_array().expect("cases");
    assert!(cases.len() >= 150, "the grid has {} cases", cases.len());
    let mut worst = (0.0f64, String::new());
    for c in cases {
        let (k, n, alpha) = (c["k"].as_u64().unwrap() as usize, c["n"].as_u64().unwrap() as usize, number(&c["alpha"]));
        for (side, got) in
            [("lower", clopper_pearson_lower(k, n, alpha)), ("upper", clopper_pearson_upper(k, n, alpha))]
        {
            let want = number(&c[side]);
            let err = relative_error(got, want);
            assert!(err < 1e-10, "{side} bound of {k} of {n} at alpha {alpha}: {got:e} vs {want:e} ({err:e})");
            if err > worst.0 {
                worst = (err, format!("{side} {k}/{n} alpha {alpha}"));
            }
        }
    }
    eprintln!("worst relative error {:e} at {}", worst.0, worst.1);
}

#[test]
fn the_bounds_invert_the_tails_they_are_defined_by() {
    // At the lower bound P[X >= k] = alpha, at the upper bound P[X <= k] = alpha.
    for (k, n) in [(3usize, 10usize), (1, 1_000_000_000), (500_000_000, 1_000_000_000), (70, 10_000_000)] {
        for alpha in [0.05, 1e-12] {
            let lo = ln_tail_at_least(k, n, clopper_pearson_lower(k, n, alpha));
            let hi = ln_tail_at_most(k, n, clopper_pearson_upper(k, n, alpha));
            assert!((lo - alpha.ln()).abs() < 1e-9, "{k} of {n}, alpha {alpha}: ln tail {lo}");
            assert!((hi - alpha.ln()).abs() < 1e-9, "{k} of {n}, alpha {alpha}: ln tail {hi}");
        }
    }
}

#[test]
fn bounds_grow_with_the_count_and_widen_as_alpha_shrinks() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(39);
    for _ in 0..300 {
        let n = 10f64.powf(rng.gen_range(0.5..9.0)) as usize;
        let k = rng.gen_range(0..n);
        let alpha = 10f64.powf(rng.gen_range(-15.0..-1.1));
        let larger_alpha = alpha * rng.gen_range(1.5..10.0);
        let (l0, l1) = (clopper_pearson_lower(k, n, alpha), clopper_pearson_lower(k + 1, n, alpha));
        let (u0, u1) = (clopper_pearson_upper(k, n, alpha), clopper_pearson_upper(k + 1, n, alpha));
        assert!(l0 < l1 || (k == 0 && l0 == 0.0 && l1 > 0.0), "lower: {k}/{n} {alpha}: {l0} {l1}");
        assert!(u0 < u1, "upper: {k}/{n} {alpha}: {u0} {u1}");
        assert!(l0 <= k as f64 / n as f64 && k as f64 / n as f64 <= u0, "{k}/{n} {alpha}: {l0} {u0}");
        if k > 0 {
            assert!(clopper_pearson_lower(k, n, larger_alpha) > l0, "lower in alpha: {k}/{n} {alpha}");
        }
        assert!(clopper_pearson_upper(k, n, larger_alpha) < u0, "upper in alpha: {k}/{n} {alpha}");
    }
}

#[test]
fn cases_that_hung_the_incomplete_beta_return() {
    // Beta(1, 7.5e6) at 0.025 and Beta(2, 7499999) at 0.975 never returned from statrs 0.18.
    let l = clopper_pearson_lower(1, 7_500_000, 0.025);
    let u = clopper_pearson_upper(1, 7_500_000, 0.025);
    // k = 1: P[X >= 1] = 1 - (1-p)^n = alpha, so p = -expm1(ln(1 - alpha) / n).
    let want_l = -((-0.025f64).ln_1p() / 7.5e6).exp_m1();
    assert!(relative_error(l, want_l) < 1e-12, "{l:e} vs {want_l:e}");
    assert!(u > 7.4e-7 && u < 7.5e-7, "{u:e}");
    assert!(clopper_pearson_lower(1, 100_000_000, 0.025) > 0.0);
}

#[test]
fn epsilons_at_ten_million_trials_match_the_reference() {
    let doc = golden();
    let refs = &doc["references"];
    let n = refs["n"].as_u64().unwrap() as usize;
    let delta = number(&refs["delta"]);
    let z = Normal::new(0.0, 1.0).unwrap();
    for c in refs["clopper_pearson"].as_array().unwrap() {
        let (tp, fp) = (c["tp"].as_u64().unwrap() as usize, c["fp"].as_u64().unwrap() as usize);
        let half = number(&c["level"]) / 2.0;
        let tpr_lo = clopper_pearson_lower(tp, n, half);
        let fpr_hi = clopper_pearson_upper(fp, n, half);
        assert!(relative_error(tpr_lo, number(&c["tpr_lo"])) < 1e-10, "tpr_lo {tp}: {tpr_lo:e}");
        assert!(relative_error(fpr_hi, number(&c["fpr_hi"])) < 1e-10, "fpr_hi {fp}: {fpr_hi:e}");
        let eps = ((tpr_lo - delta) / fpr_hi).ln().max(0.0);
        let want = number(&c["eps"]);
        assert!((eps - want).abs() < 1e-10 * want.max(1.0), "CP eps {tp}/{fp}: {eps} vs {want}");
    }
    for c in refs["gdp"].as_array().unwrap() {
        let (tp, fp) = (c["tp"].as_u64().unwrap() as usize, c["fp"].as_u64().unwrap() as usize);
        let half = number(&c["level"]) / 2.0;
        let fpr_hi = clopper_pearson_upper(fp, n, half);
        let fnr_hi = clopper_pearson_upper(n - tp, n, half);
        assert!(relative_error(fnr_hi, number(&c["fnr_hi"])) < 1e-10, "fnr_hi {tp}: {fnr_hi:e}");
        // The conversion's own normal quantiles (statrs) and bisection are good to ~1e-9.
        let mu = z.inverse_cdf(1.0 - fpr_hi) - z.inverse_cdf(fnr_hi);
        let want_mu = number(&c["mu"]);
        assert!((mu - want_mu).abs() < 1e-8 * want_mu.abs().max(1.0), "mu {tp}/{fp}: {mu} vs {want_mu}");
        let eps = if mu > 0.0 { gdp_epsilon(mu, delta) } else { 0.0 };
        let want = number(&c["eps"]);
        assert!((eps - want).abs() < 1e-7 * want.max(1.0), "GDP eps {tp}/{fp}: {eps} vs {want}");
    }
    for c in refs["one_run"].as_array().unwrap() {
        let get = |key: &str| c[key].as_u64().unwrap() as usize;
        let (m, r, v) = (get("canaries"), get("guesses"), get("correct"));
        let (eps, d) = (number(&c["eps"]), number(&c["delta"]));
        let got = one_run_p_value(m, r, v, eps, d);
        let want = number(&c["p_value"]);
        assert!(relative_error(got, want) < 1e-9, "one-run p-value {v} of {r} at eps {eps}: {got:e} vs {want:e}");
    }
}
