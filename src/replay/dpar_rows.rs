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
//!
//! `dpar-em0`/`dpar-em1` (Alg. 8) release rows by the exponential mechanism: Gumbel top-K picks
//! over the APPR entries clipped to C2 (and, option 2, Laplace values of the picked entries).
//! Their scores' declared sensitivity is per entry ([`em_score_sensitivity`]: C2), so that replay
//! compares the entry-clipped rows in L-infinity.
use super::units::{self, Unit};
use super::{Release, ReplayOptions};
use crate::data::{Dataset, Graph};
use crate::ensure;
use crate::error::{Error, Result};
use crate::methods::dpar::{induced_undirected, DparConfig, Variant};
use crate::methods::Recipe;
use crate::models::dpar::{clip_entries, clip_l2, em_score_sensitivity};
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

/// The entry-wise differences of two sparse rows.
fn differences(a: &SparseRow, b: &SparseRow) -> Vec<f64> {
    let mut m = std::collections::BTreeMap::new();
    for &(i, v) in a {
        *m.entry(i).or_insert(0.0) += v;
    }
    for &(i, v) in b {
        *m.entry(i).or_insert(0.0) -= v;
    }
    m.into_values().collect()
}

/// L2 distance of two sparse rows.
pub fn l2_distance(a: &SparseRow, b: &SparseRow) -> f64 {
    differences(a, b).iter().map(|d| d * d).sum::<f64>().sqrt()
}

/// L-infinity distance of two sparse rows.
pub fn linf_distance(a: &SparseRow, b: &SparseRow) -> f64 {
    differences(a, b).iter().fold(0.0, |m, d| m.max(d.abs()))
}

/// The exponential mechanism's pre-noise scores of row `v`: APPR entries clipped to `c2`.
pub fn shipped_scores(g: &Graph, v: usize, appr: &ApprParams, c2: f64) -> Result<SparseRow> {
    Ok(clip_entries(&appr_ista(g, v, appr)?, c2))
}

/// Replays `dpar-em0`/`dpar-em1`'s shipped scores against the shipped Gumbel scale.
pub fn replay_exponential(r: &Recipe, data: &Dataset, opts: &ReplayOptions) -> Result<(String, Vec<Release>)> {
    let c2 = DparConfig::from_recipe(r)?.own.c2;
    replay_rows(r, data, opts, shipped_scores, em_score_sensitivity(c2), Rows::ExponentialScores)
}

/// Replays the shipped rows against the shipped calibration.
pub fn replay(r: &Recipe, data: &Dataset, opts: &ReplayOptions) -> Result<(String, Vec<Release>)> {
    let c1 = DparConfig::from_recipe(r)?.own.c1;
    replay_rows(r, data, opts, shipped, declared_sensitivity(c1), Rows::Gaussian)
}

/// The DP-APPR releases a replay recomputes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// dpar-gm's L2-clipped rows, compared in L2.
    Gaussian,
    /// dpar-em0/em1's entry-clipped scores, compared entry by entry (L-infinity).
    ExponentialScores,
}

/// Replays `row` (clipped to the variant's C1 or C2) on neighbouring graphs against `declared`
/// (tests plant a wrong release, an unclipped score or the thesis's C1).
pub fn replay_rows(
    r: &Recipe,
    data: &Dataset,
    opts: &ReplayOptions,
    row: RowRelease,
    declared: f64,
    rows: Rows,
) -> Result<(String, Vec<Release>)> {
    let cfg = DparConfig::from_recipe(r)?;
    type Distance = fn(&SparseRow, &SparseRow) -> f64;
    let (covered, refusal, clip, names, what) = match rows {
        Rows::Gaussian => (
            cfg.variant == Variant::Gm,
            "the DP-APPR row replay covers dpar-gm (the Gaussian rows) only",
            cfg.own.c1,
            ("DP-APPR row", "DP-APPR own row", l2_distance as Distance),
            "clipped APPR recomputed on both graphs",
        ),
        Rows::ExponentialScores => (
            matches!(cfg.variant, Variant::Em0 | Variant::Em1),
            "the DP-APPR score replay covers dpar-em0 and dpar-em1 only",
            cfg.own.c2,
            ("DP-APPR scores (L-infinity)", "DP-APPR own scores (L-infinity)", linf_distance as Distance),
            "entry-clipped APPR scores recomputed on both graphs, compared entry by entry",
        ),
    };
    ensure!(covered, Error::invalid("method", refusal));
    let release = |g: &Graph, v: usize| row(g, v, &cfg.appr, clip);
    let out = rows_on_neighbours(data, opts, &release, names, declared)?;
    Ok((
        format!(
            "one training node and its edges removed from the training nodes' induced graph (q' = 1); every row's {what}"
        ),
        out,
    ))
}

/// For each removed training node: the largest change of another row, and the removed node's
/// own row (gone on the neighbour), by `metric`, each against `declared`.
fn rows_on_neighbours(
    data: &Dataset,
    opts: &ReplayOptions,
    row: &dyn Fn(&Graph, usize) -> Result<SparseRow>,
    (what, own_name, metric): (&str, &str, fn(&SparseRow, &SparseRow) -> f64),
    declared: f64,
) -> Result<Vec<Release>> {
    let train = &data.split()?.train;
    let g = induced_undirected(&data.graph, train)?;
    let local: Vec<usize> = (0..g.num_nodes()).collect();
    let rows: Vec<SparseRow> = local.iter().map(|&v| row(&g, v)).collect::<Result<_>>()?;
    let mut out = vec![];
    for ch in units::nodes(&g, &local, opts.random_units, opts.seed)? {
        let Unit::Node(w) = ch.unit else { unreachable!("node units") };
        let g2 = ch.unit.remove_from(&g)?;
        let mut worst = (0.0f64, w);
        for &v in local.iter().filter(|&&v| v != w) {
            let d = metric(&rows[v], &row(&g2, v)?);
            if d > worst.0 {
                worst = (d, v);
            }
        }
        let own = metric(&rows[w], &Vec::new());
        let label = format!("node {} (training node {w} of the induced graph, degree {})", train[w], g.in_degree(w));
        for (name, observed) in
            [(format!("{what} (largest change: row of node {})", train[worst.1]), worst.0), (own_name.to_string(), own)]
        {
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
    Ok(out)
}
