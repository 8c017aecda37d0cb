//! Properties of the accountants: monotonicity in steps, sampling rate and noise; the PLD (tight)
//! epsilon never exceeds the RDP one; calibration round trips for several method expressions.
use gnnaudit::privacy::accountant::methods::{self, SgdSchedule};
use gnnaudit::privacy::accountant::pld::{pld_epsilon_with, PldOptions};
use gnnaudit::privacy::accountant::{calibrate, rdp_epsilon, Event};

fn eps(e: &Event) -> f64 {
    rdp_epsilon(e, 1e-5).unwrap().epsilon
}

#[test]
fn epsilon_grows_with_steps_and_rate_and_falls_with_sigma() {
    let base = |q: f64, s: f64, t: u64| Event::poisson_gaussian(q, s).times(t);
    for &(q, s) in &[(0.01, 1.0), (0.05, 2.0), (0.2, 0.8)] {
        let mut last = 0.0;
        for t in [10u64, 100, 1000, 5000] {
            let e = eps(&base(q, s, t));
            assert!(e > last, "steps {t}: {e} <= {last}");
            last = e;
        }
    }
    let mut last = 0.0;
    for q in [0.001, 0.01, 0.05, 0.2, 1.0] {
        let e = eps(&base(q, 1.0, 500));
        assert!(e > last, "q {q}: {e} <= {last}");
        last = e;
    }
    let mut last = f64::INFINITY;
    for s in [0.6, 0.8, 1.0, 2.0, 5.0] {
        let e = eps(&base(0.01, s, 1000));
        assert!(e < last, "sigma {s}: {e} >= {last}");
        last = e;
    }
}

#[test]
fn pld_epsilon_is_at_most_rdp_epsilon() {
    let opts = PldOptions { interval: 5e-4, ..PldOptions::default() };
    let sched = SgdSchedule::new(0.02, 300);
    let events = [
        Event::poisson_gaussian(0.01, 1.0).times(1000),
        Event::poisson_gaussian(0.1, 2.0).times(200),
        methods::gap_edge(3, 4.0),
        methods::gap_node(2, 10, 3.0, Some(sched), sched),
    ];
    for e in &events {
        let (r, p) = (rdp_epsilon(e, 1e-5).unwrap().epsilon, pld_epsilon_with(e, 1e-5, &opts).unwrap());
        assert!(p > 0.0 && p <= r, "{e}: pld {p} > rdp {r}");
    }
}

#[test]
fn calibration_round_trips() {
    let sched = SgdSchedule::new(0.01, 500);
    type Expression = Box<dyn Fn(f64) -> Event>;
    let exprs: Vec<(&str, Expression)> = vec![
        ("dp-sgd", Box::new(|s| methods::dp_sgd(0.01, 2000, s))),
        ("gap-edge", Box::new(|s| methods::gap_edge(2, s))),
        ("gap-node", Box::new(move |s| methods::gap_node(2, 20, s, Some(sched), sched))),
        ("progap-node", Box::new(move |s| methods::progap_node(3, 20, s, sched))),
        ("dpgnn", Box::new(|s| methods::dpgnn(5000, 10, 256, s, 200))),
        ("gap-edge+ldp", Box::new(|s| Event::Composed(vec![methods::gap_edge(2, s), methods::edge_rand(0.2)]))),
    ];
    for (name, ev) in &exprs {
        for target in [0.5, 2.0, 8.0] {
            let s = calibrate(target, 1e-5, ev).unwrap();
            let e = eps(&ev(s));
            assert!(e <= target && e >= target * (1.0 - 1e-3), "{name} @ {target}: sigma {s} gives {e}");
            assert!(eps(&ev(0.99 * s)) > target, "{name} @ {target}: 0.99 sigma still meets the target");
        }
    }
}

/// PLD options for the low-noise properties: a 2^20-point budget keeps each case near a second.
fn low_sigma_opts() -> PldOptions {
    PldOptions { max_points: 1 << 20, ..PldOptions::default() }
}

fn pld(q: f64, s: f64, t: u64, delta: f64) -> f64 {
    pld_epsilon_with(&Event::poisson_gaussian(q, s).times(t), delta, &low_sigma_opts()).unwrap()
}

/// A regression: at low noise the PLD epsilon fell as the noise fell (q = 0.01, T = 1000,
/// delta = 1e-5: 15.1 at sigma 0.02 against 5090 at sigma 0.05). Less noise must never buy a
/// smaller epsilon; more steps or a larger sampling rate never a smaller one either.
#[test]
fn low_sigma_pld_is_monotone_in_sigma_steps_and_rate() {
    let mut last = f64::INFINITY;
    for s in [0.02, 0.03, 0.05, 0.1, 0.2, 0.3] {
        let e = pld(0.126, s, 7, 1e-4);
        assert!(e.is_finite() && e < last, "sigma {s}: {e} >= {last} (q 0.126, T 7)");
        last = e;
    }
    let (e02, e05) = (pld(0.01, 0.02, 1000, 1e-5), pld(0.01, 0.05, 1000, 1e-5));
    assert!(e02 > e05 && e05 > 1000.0, "q 0.01, T 1000: sigma 0.02 gives {e02}, sigma 0.05 {e05}");
    let mut last = 0.0;
    for t in [1u64, 2, 3, 5, 7] {
        let e = pld(0.126, 0.05, t, 1e-4);
        assert!(e > last, "steps {t}: {e} <= {last}");
        last = e;
    }
    let mut last = 0.0;
    for q in [0.02, 0.05, 0.126, 0.3, 0.6] {
        let e = pld(q, 0.1, 7, 1e-4);
        assert!(e > last, "q {q}: {e} <= {last}");
        last = e;
    }
}

/// The tight accountant never exceeds RDP at low noise either (RDP is an upper bound too; the
/// PLD's only slack is its pessimistic grid, far below 1e-3 relative here).
#[test]
fn low_sigma_pld_is_at_most_rdp() {
    for &(q, s, t, d) in
        &[(0.126, 0.02, 7, 1e-4), (0.5, 0.05, 3, 1e-5), (0.25, 0.2, 20, 1e-5), (0.01, 0.05, 1000, 1e-5)]
    {
        let e = Event::poisson_gaussian(q, s).times(t);
        let (r, p) = (rdp_epsilon(&e, d).unwrap().epsilon, pld(q, s, t, d));
        assert!(p > 0.0 && p <= r * (1.0 + 1e-3), "{e}: pld {p} > rdp {r}");
    }
}
