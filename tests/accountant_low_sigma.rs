//! The PLD accountant in the low-noise regime against dp_accounting:
//! tests/golden/pld_low_sigma.json, made by scripts/golden_low_sigma.py with dp_accounting 0.6.0.
//! Every case is DP-SGD's event (Poisson-subsampled Gaussian, add/remove-one, composed `steps`
//! times) at sigma 0.02-0.3 and large q, where one step's privacy loss spans up to ~1700 nats.
//!
//! Tolerance: each case's `tolerance_rel` (1e-3), against `eps_pld_dp_accounting_inverted`, the
//! exact inversion of dp_accounting's composed PLD (its own `get_epsilon` rounds up by up to one
//! nat above ~745 nats, see the script). Both are pessimistic connect-the-dots PLDs, so ours must
//! also stay at or below the library's own (rounded-up) answer.
use gnnaudit::privacy::accountant::pld::{pld_epsilon_with, PldOptions};
use gnnaudit::privacy::accountant::Event;
use serde_json::Value;

fn golden() -> Value {
    let path = format!(
        "{}/tests/golden/pld_low_sigma.json",
        std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("read the golden file")).expect("golden JSON")
}

/// A memory budget of 2^20 points (16 MiB a buffer) instead of the default 2^23, to keep the test
/// quick: the grid step grows to at most ~0.012 nats (q = 0.126, sigma = 0.02, 7 steps), whose
/// second-order connect-the-dots error is far below the tolerance at these epsilons.
fn opts() -> PldOptions {
    PldOptions { max_points: 1 << 20, ..PldOptions::default() }
}

#[test]
fn low_sigma_pld_matches_dp_accounting() {
    let g = golden();
    let cases = g["cases"].as_array().expect("cases");
    assert!(cases.len() >= 8, "the golden file has {} cases", cases.len());
    let mut worst = 0.0f64;
    for c in cases {
        let (id, p) = (c["id"].as_str().unwrap(), &c["params"]);
        let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{id}: param {k}"));
        let (q, sigma, steps, delta) = (f("q"), f("sigma"), f("steps") as u64, f("delta"));
        assert!((0.02..=0.3).contains(&sigma), "{id}: not a low-sigma case");
        let expected = c["expected"]["eps_pld_dp_accounting_inverted"].as_f64().unwrap();
        let library = c["library"]["eps_pld_dp_accounting"].as_f64().unwrap();
        let tol = c["tolerance_rel"].as_f64().unwrap();
        let got = pld_epsilon_with(&Event::poisson_gaussian(q, sigma).times(steps), delta, &opts())
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        let rel = (got - expected).abs() / expected;
        assert!(rel <= tol, "{id}: ours {got} vs dp_accounting {expected} (rel {rel:.2e} > {tol})");
        assert!(got <= library * (1.0 + tol), "{id}: ours {got} above dp_accounting's rounded-up {library}");
        worst = worst.max(rel);
    }
    eprintln!("largest relative difference to dp_accounting: {worst:.2e}");
}
