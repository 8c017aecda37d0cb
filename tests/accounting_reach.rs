//! DP-GNN and DPAR calibrate through the caller's `Accounting` like every other method: an
//! RDP-only accounting (`--no-pld`) reaches their budgets, and the calibrations a run pays for
//! are kept in the value it was given, so training after `account budget` or a dry run pays nothing.
mod common_cora;

use gnnaudit::methods::{Method, Recipe};
use gnnaudit::train::accounting::Accounting;

#[test]
fn dpgnn_and_dpar_calibrate_through_the_accounting_they_are_given() {
    let ds = common_cora::load("cora", 0.3, 0.1, 0);
    for (m, stages) in [
        (Method::Dpgnn, 2),
        (Method::DparGm, 2),
        (Method::DparEm1, 2),
        (Method::DparRandom, 1),
        (Method::DparFeatures, 1),
        (Method::DparDpsgd, 1),
    ] {
        let mut r = Recipe::new(m, Some(2.0));
        r.train.epochs = Some(2);
        let budget = m.spec().budget;
        let rdp = Accounting::rdp_only();
        let b_rdp = budget(&r, &ds, 0, &rdp).unwrap();
        // Each stage (a release, then DP-SGD on top of it) calibrated once, in this value.
        assert_eq!(rdp.calibrations(), stages, "{m}");
        let again = budget(&r, &ds, 0, &rdp).unwrap();
        assert_eq!(rdp.calibrations(), stages, "{m}: the second budget reuses the calibrations");
        assert_eq!(again.noise, b_rdp.noise, "{m}");
        assert!(b_rdp.epsilon_pld.is_none() && b_rdp.pld_fallback.is_none(), "{m}: RDP only: {b_rdp:?}");
        assert!(b_rdp.epsilon_rdp <= 2.0 + 1e-9, "{m}: {}", b_rdp.epsilon_rdp);
        // The noise is calibrated by RDP either way; only the PLD statement differs, where the
        // PLD accountant covers the mechanism (a plain or Poisson-subsampled Gaussian DP-SGD;
        // not DP-GNN's hypergeometric event).
        let b_pld = budget(&r, &ds, 0, &Accounting::new(true)).unwrap();
        assert_eq!(b_pld.epsilon_rdp, b_rdp.epsilon_rdp, "{m}");
        assert_eq!(b_pld.noise, b_rdp.noise, "{m}");
        if matches!(m, Method::DparFeatures | Method::DparDpsgd) {
            assert!(b_pld.epsilon_pld.is_some(), "{m}: the default accounting states the PLD epsilon: {b_pld:?}");
        }
    }
}
