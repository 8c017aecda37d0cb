//! Sensitivity replay of DPAR's DP-APPR with the Gaussian mechanism (`dpar-gm`; Zhang thesis
//! Alg. 7): each released row is a training node's APPR vector (ISTA) clipped to C1 in
//! L2, and the Gaussian noise on it is calibrated (`privacy::accountant::dpar::gm_event`) to a row
//! sensitivity of sqrt(2) C1: removing a node changes its own row (gone: at most C1) and every
//! other row, two non-negative vectors of norm at most C1 apart by at most sqrt(2) C1 (the
//! thesis's Theorem 6 calibrates to C1, which the spec marks wrong). The replay removes the
//! highest-degree training node and a few random ones from the graph the rows are computed on
//! (the training nodes' induced subgraph, q' = 1: a subsample's rows obey the same bound on its
//! own subgraph) and recomputes every row on both graphs. One release per removed node: the
//! largest change over the other rows; and its own row's norm.
use super::units::{self, Unit};
use super::{Release, ReplayOptions};
use crate::data::{Dataset, Graph};
use crate::ensure;
use crate::error::{Error, Result};
use crate::methods::dpar::{induced_undirected, DparConfig, Variant};
use crate::methods::Recipe;
use crate::models::dpar::clip_l2;
use crate::models::ppr::{appr_ista, ApprParams, SparseRow};
use crate::privacy::accountant::dpar::gm_event;
use crate::privacy::accountant::Event;

/// The row's pre-noise release: APPR clipped to `c1` in L2 (what `private_row` adds noise to).
pub type RowRelease = fn(&Graph, usize, &ApprParams, f64) -> Result<SparseRow>;

/// The shipped release.
pub fn shipped(g: &Graph, v: usize, appr: &ApprParams, c1: f64) -> Result<SparseRow> {
    Ok(clip_l2(&appr_ista(g, v, appr)?, c1))
}

/// The L2 sensitivity the calibration assumes, read off the accountant's event: its noise
/// multiplier is sigma / sensitivity.
pub fn declared_sensitivity(c1: f64) -> f64 {
    fn multiplier(e: &Event) -> Option<f64> {
        match e {
            Event::Gaussian { noise_multiplier } => Some(*noise_multiplier),
            Event::SelfComposed { event, .. } | Event::Labelled { event, .. } => multiplier(event),
            _ => None,
        }
    }
    1.0 / multiplier(&gm_event(1.0, c1, 1)).expect("DP-APPR (GM) is a composed Gaussian")
}

/// L2 distance of two sparse rows.
fn distance(a: &SparseRow, b: &SparseRow) -> f64 {
    let mut m = std::collections::BTreeMap::new();
    for &(i, v) in a {
        *m.entry(i).or_insert(0.0) += v;
    }
    for &(i, v) in b {
        *m.entry(i).or_insert(0.0) -= v;
    }
    m.values().map(|d: &f64| d * d).sum::<f64>().sqrt()
}

/// Replays the shipped rows against the shipped calibration.
pub fn replay(r: &Recipe, data: &Dataset, opts: &ReplayOptions) -> Result<(String, Vec<Release>)> {
    let c1 = DparConfig::from_recipe(r)?.c1;
    replay_with(r, data, opts, shipped, declared_sensitivity(c1))
}

/// Replays `row` against `declared` (tests plant a wrong release or the thesis's C1).
pub fn replay_with(
    r: &Recipe,
    data: &Dataset,
    opts: &ReplayOptions,
    row: RowRelease,
    declared: f64,
) -> Result<(String, Vec<Release>)> {
    let cfg = DparConfig::from_recipe(r)?;
    ensure!(
        cfg.variant == Variant::Gm,
        Error::invalid("method", "the DP-APPR row replay covers dpar-gm (the Gaussian rows) only")
    );
    let train = &data.split()?.train;
    let g = induced_undirected(&data.graph, train)?;
    let local: Vec<usize> = (0..g.num_nodes()).collect();
    let rows: Vec<SparseRow> = local.iter().map(|&v| row(&g, v, &cfg.appr, cfg.c1)).collect::<Result<_>>()?;
    let mut out = vec![];
    for ch in units::nodes(&g, &local, opts.random_units, opts.seed)? {
        let Unit::Node(w) = ch.unit else { unreachable!("node units") };
        let g2 = ch.unit.remove_from(&g)?;
        let mut worst = (0.0f64, w);
        for &v in local.iter().filter(|&&v| v != w) {
            let d = distance(&rows[v], &row(&g2, v, &cfg.appr, cfg.c1)?);
            if d > worst.0 {
                worst = (d, v);
            }
        }
        let own = distance(&rows[w], &Vec::new());
        let label = format!("node {} (training node {w} of the induced graph, degree {})", train[w], g.in_degree(w));
        for (name, observed) in [
            (format!("DP-APPR row (largest change: row of node {})", train[worst.1]), worst.0),
            ("DP-APPR own row".into(), own),
        ] {
            out.push(Release {
                name,
                unit: label.clone(),
                worst_case: ch.worst_case,
                observed_change: observed,
                declared_sensitivity: declared,
                ratio: observed / declared,
            });
        }
    }
    Ok((
        "one training node and its edges removed from the training nodes' induced graph (q' = 1); every row's \
         clipped APPR recomputed on both graphs"
            .into(),
        out,
    ))
}
