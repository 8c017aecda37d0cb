//! Power of the epsilon lower bounds on synthetic scores, for comparing versions of `stats`:
//! perfect separation (0/1 and continuous scores), Gaussian scores (pos ~ N(mu, 1), neg ~ N(0, 1))
//! over a grid of mu and n, the largest number of canaries at which a perfect one-run attack still
//! certifies a bound, and the time of one one-run-fdp audit at m = 20,000.
//!
//! `cargo run --release -p gnnaudit-attacks --example stats_power`
use gnnaudit_attacks::stats::{certify, AuditSpec, BoundKind, ThresholdStrategy};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use std::time::Instant;

const SEEDS: u64 = 100;

fn spec(bound: BoundKind, strategy: ThresholdStrategy, delta: f64, seed: u64) -> AuditSpec {
    AuditSpec { bound, strategy, confidence: 0.95, delta, seed }
}

fn mean_eps(bound: BoundKind, strategy: ThresholdStrategy, mu: f64, n: usize, delta: f64) -> f64 {
    let mut total = 0.0;
    let seeds = if n > 1000 { SEEDS / 10 } else { SEEDS };
    for seed in 0..seeds {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1000 + seed);
        let mut draw = |shift: f64| -> Vec<f64> {
            (0..n).map(|_| shift + <StandardNormal as Distribution<f64>>::sample(&StandardNormal, &mut rng)).collect()
        };
        let pos = draw(mu);
        let neg = draw(0.0);
        total += certify(&pos, &neg, &spec(bound, strategy, delta, seed), "synthetic").unwrap().eps_lb;
    }
    total / seeds as f64
}

fn main() {
    let strategies = [ThresholdStrategy::Bonferroni, ThresholdStrategy::default()];
    println!("## perfect separation, clopper-pearson, bonferroni, delta 0");
    for n in [500usize, 1000] {
        let binary = certify(&vec![1.0; n], &vec![0.0; n], &spec(BoundKind::ClopperPearson, strategies[0], 0.0, 0), "")
            .unwrap()
            .eps_lb;
        let pos: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / n as f64).collect();
        let neg: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
        let cont = certify(&pos, &neg, &spec(BoundKind::ClopperPearson, strategies[0], 0.0, 0), "").unwrap().eps_lb;
        println!("n {n} per side: 0/1 scores {binary:.3}, continuous {cont:.3}");
    }
    println!("## Gaussian scores, delta 1e-5, mean eps_lb over {SEEDS} seeds ({} at n = 10000)", SEEDS / 10);
    println!("bound strategy mu n eps_lb");
    for bound in [BoundKind::ClopperPearson, BoundKind::Gdp] {
        for strategy in strategies {
            for mu in [0.5, 1.0, 2.0, 4.0] {
                for n in [100usize, 1000, 10000] {
                    let e = mean_eps(bound, strategy, mu, n, 1e-5);
                    println!("{} {} {mu} {n} {e:.4}", bound.name(), strategy.name());
                }
            }
        }
    }
    println!("## one-run, perfect attack (m/2 included canaries all scored above the rest), delta 1e-5");
    for bound in [BoundKind::OneRun, BoundKind::OneRunFdp] {
        for strategy in strategies {
            let certifies = |m: usize| {
                let pos: Vec<f64> = (0..m / 2).map(|i| 1.0 + i as f64).collect();
                let neg: Vec<f64> = (0..m - m / 2).map(|i| -(i as f64)).collect();
                certify(&pos, &neg, &spec(bound, strategy, 1e-5, 0), "").unwrap().eps_lb > 0.0
            };
            let mut last = None;
            for m in [100usize, 200, 400, 700, 720, 750, 1000, 2000, 5000, 10000, 20000] {
                if certifies(m) {
                    last = Some(m);
                }
            }
            println!("{} {}: certifies > 0 up to m = {last:?} (grid 100..20000)", bound.name(), strategy.name());
        }
    }
    if std::env::args().any(|a| a == "--no-timing") {
        return;
    }
    println!("## one-run-fdp at m = 20,000, Gaussian canaries mu = 2, delta 1e-5");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut draw = |shift: f64| -> Vec<f64> {
        (0..10_000).map(|_| shift + <StandardNormal as Distribution<f64>>::sample(&StandardNormal, &mut rng)).collect()
    };
    let pos = draw(2.0);
    let neg = draw(0.0);
    for bound in [BoundKind::OneRun, BoundKind::OneRunFdp] {
        for strategy in strategies {
            let clock = Instant::now();
            let c = certify(&pos, &neg, &spec(bound, strategy, 1e-5, 0), "").unwrap();
            println!(
                "{} {}: eps_lb {:.4} in {:.2} s",
                bound.name(),
                strategy.name(),
                c.eps_lb,
                clock.elapsed().as_secs_f64()
            );
        }
    }
}
