//! Sensitivity replay of dpar-gm's DP-APPR rows (Zhang thesis Alg. 7) on cora: every
//! row moves by at most sqrt(2) C1 when a training node leaves (the calibration's sensitivity),
//! and a row release that forgets the L2 clip is flagged.
mod common_cora;

use gnnaudit::data::Graph;
use gnnaudit::methods::{Method, Recipe};
use gnnaudit::models::ppr::{appr_ista, ApprParams, SparseRow};
use gnnaudit::replay::{dpar_rows, replay, verdict, ReplayOptions, TOLERANCE};

/// The APPR row without its L2 clip (the planted bug).
fn unclipped(g: &Graph, v: usize, appr: &ApprParams, _c1: f64) -> gnnaudit::Result<SparseRow> {
    appr_ista(g, v, appr)
}

#[test]
fn dp_appr_rows_stay_within_sqrt2_c1_and_an_unclipped_row_is_flagged() {
    // Half of cora's nodes for training: every row is recomputed per removed node (ISTA each).
    let ds = common_cora::load("cora", 0.5, 0.1, 0);
    let opts = ReplayOptions { seed: 0, random_units: 2 };
    let r = Recipe::new(Method::DparGm, Some(4.0));
    let c1 = 0.01;
    assert!((dpar_rows::declared_sensitivity(c1) - std::f64::consts::SQRT_2 * c1).abs() < 1e-15);
    let rep = replay(&r, &ds, &opts).unwrap();
    assert_eq!(rep.verdict, "not refuted", "{:?}", rep.releases);
    assert_eq!(rep.releases.len(), 2 * 3, "two releases for each of three removed nodes");
    for rel in &rep.releases {
        // An isolated node changes no other row (ratio 0); the highest-degree one does.
        assert!(rel.ratio >= 0.0 && rel.ratio <= 1.0 + TOLERANCE, "{rel:?}");
        assert!(!rel.worst_case || rel.ratio > 0.0, "{rel:?}");
        if rel.name.starts_with("DP-APPR own row") {
            // The removed node's own row is gone: its clipped norm, C1 (APPR rows are far longer).
            assert!((rel.observed_change - c1).abs() < 1e-9, "{rel:?}");
        }
    }
    let one = ReplayOptions { seed: 0, random_units: 0 };
    let (_, planted) = dpar_rows::replay_with(&r, &ds, &one, unclipped, dpar_rows::declared_sensitivity(c1)).unwrap();
    let max = planted.iter().map(|x| x.ratio).fold(0.0, f64::max);
    eprintln!("shipped max ratio {}, planted max ratio {max}", rep.max_ratio);
    assert!(max > 2.0 && verdict(max) == "violated", "{planted:?}");
}
