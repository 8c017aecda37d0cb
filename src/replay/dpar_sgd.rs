//! Sensitivity replay of the DP-SGD step of DPAR's baselines whose rows carry no DP-APPR noise
//! (Zhang thesis ch.5): `dpar-dpsgd` (non-private APPR rows; a node may move every row of a
//! batch, declared 2BC), `dpar-features` (Pi = I; a node moves its own row only, declared C) and
//! `dpar-random` (K random columns per row; with the referenced-row cap a node moves at most
//! D_Pi + 1 rows, declared 2(D_Pi + 1)C). The declared sensitivity is read off the accountant's
//! event for the variant ([`sound_event`]) at sigma = 1.
//!
//! Coupling: both graphs build their rows with the same random columns (one stream per seed);
//! on the neighbour the removed node's row and every entry of its column are gone, then both
//! row sets are post-processed as training does (L1 column clip, referenced-row cap). The
//! network is the initialised f_theta. The batch is the removed node's row and the rows that
//! changed most, at most B of them: unchanged rows give equal clipped gradients on both sides,
//! so the batch's other rows add nothing to the change.
use super::units::{self, Unit};
use super::{Release, ReplayOptions};
use crate::data::{Dataset, Split};
use crate::ensure;
use crate::error::{Error, Result};
use crate::methods::dpar::{
    induced_undirected, network, noiseless_rows, post_process, row_logits, row_tensors, sound_event, DparConfig,
    SgdShape, Variant,
};
use crate::methods::Recipe;
use crate::models::ppr::SparseRow;
use crate::models::{log_softmax_rows, Fwd, Mlp, ParamStore};
use crate::privacy::accountant::dpar::ApprRelease;
use crate::privacy::accountant::Event;
use tch::{Kind, Reduction, Tensor};

/// The L2 sensitivity, in units of the clip C, that `event`'s noise multiplier assumes.
fn sensitivity_in_clips(e: &Event) -> Option<f64> {
    match e {
        Event::Gaussian { noise_multiplier }
        | Event::PoissonGaussian { noise_multiplier, .. }
        | Event::WithoutReplacementGaussian { noise_multiplier, .. }
        | Event::Dpgnn { noise_multiplier, .. } => Some(1.0 / noise_multiplier),
        Event::ScaledSensitivity { sensitivity, event } => sensitivity_in_clips(event).map(|s| s * sensitivity),
        Event::SelfComposed { event, .. } | Event::Labelled { event, .. } | Event::NodeSubsampled { event, .. } => {
            sensitivity_in_clips(event)
        }
        _ => None,
    }
}

/// The sensitivity of one DP-SGD step's clipped gradient sum over `rows` rows that the variant's
/// noise calibration assumes: sigma = 1 in the accountant's event, times the clip C.
pub fn declared_sensitivity(cfg: &DparConfig, rows: u64) -> Result<f64> {
    let batch = (cfg.optimizer_batch as u64).min(rows).max(1);
    let shape = SgdShape { rows, cap: cfg.own.ref_cap as u64, batch, steps: 1 };
    let event = sound_event(cfg.variant, ApprRelease::None, shape, 1.0, 1.0);
    let clips = sensitivity_in_clips(&event).ok_or_else(|| {
        Error::Other(format!("the DP-SGD event of {:?} has no Gaussian noise multiplier", cfg.variant))
    })?;
    Ok(clips * cfg.max_grad_norm)
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

/// The sum of the per-row gradients of `rows` (labels `y`), each clipped to `clip` in L2, flattened
/// over the parameters in id order (what DP-SGD adds noise to); None for no row.
fn clipped_sum(net: &Mlp, x: &Tensor, rows: &[SparseRow], y: &[i64], clip: f64) -> Option<Tensor> {
    if rows.is_empty() {
        return None;
    }
    let (ids, w) = row_tensors(rows);
    let mut f = Fwd::train_taped();
    let z = row_logits(net, x, &ids, &w, &mut f);
    let y = crate::device::place(Tensor::from_slice(y));
    let loss_sum = log_softmax_rows(&z).g_nll_loss::<Tensor>(&y, None, Reduction::Sum, -100);
    let (mut grads, _) = f.tape.take().expect("taped forward").clipped_sum(&loss_sum, clip);
    grads.sort_by_key(|(id, _)| *id);
    Some(tch::no_grad(|| {
        Tensor::cat(&grads.iter().map(|(_, g)| g.flatten(0, -1).to_kind(Kind::Double)).collect::<Vec<_>>(), 0)
    }))
}

/// Replays the shipped step against the shipped calibration.
pub fn replay(r: &Recipe, data: &Dataset, opts: &ReplayOptions) -> Result<(String, Vec<Release>)> {
    let cfg = DparConfig::from_recipe(r)?;
    let rows = data.split()?.train.len() as u64;
    replay_with(r, data, opts, cfg.max_grad_norm, declared_sensitivity(&cfg, rows)?)
}

/// Replays the step with per-row gradients clipped to `clip` against `declared` (a test plants a
/// clip the calibration does not know).
pub fn replay_with(
    r: &Recipe,
    data: &Dataset,
    opts: &ReplayOptions,
    clip: f64,
    declared: f64,
) -> Result<(String, Vec<Release>)> {
    let cfg = DparConfig::from_recipe(r)?;
    ensure!(
        matches!(cfg.variant, Variant::Dpsgd | Variant::Features | Variant::Random),
        Error::invalid("method", "the DPAR DP-SGD replay covers dpar-dpsgd, dpar-features and dpar-random")
    );
    let train = &data.split()?.train;
    let g = induced_undirected(&data.graph, train)?;
    let n = g.num_nodes();
    let order: Vec<usize> = (0..n).collect();
    let batch = cfg.optimizer_batch.min(n).max(1);
    let mut base = noiseless_rows(&cfg, &g, &order, opts.seed)?;
    post_process(&cfg, &mut base, n);
    let x = data.features.to_tensor().to_kind(Kind::Float).index_select(0, &Split::index_tensor(train));
    let labels: Vec<i64> = train.iter().map(|&v| data.labels[v] as i64).collect();
    tch::manual_seed(opts.seed as i64);
    let mut ps = ParamStore::new();
    let net = network(&mut ps, &cfg, data.num_features() as i64, data.num_classes as i64);
    let mut out = vec![];
    for ch in units::nodes(&g, &order, opts.random_units, opts.seed)? {
        let Unit::Node(w) = ch.unit else {
            return Err(Error::Other("the DPAR DP-SGD replay removes nodes".into()));
        };
        let g2 = ch.unit.remove_from(&g)?;
        // The neighbour's rows: the same draws, without w's row and without w's column.
        let others: Vec<usize> = order.iter().copied().filter(|&v| v != w).collect();
        let built = noiseless_rows(&cfg, &g2, &order, opts.seed)?;
        let mut after: Vec<SparseRow> =
            others.iter().map(|&v| built[v].iter().copied().filter(|&(j, _)| j != w).collect()).collect();
        post_process(&cfg, &mut after, n);
        let change: Vec<f64> = others.iter().zip(&after).map(|(&v, row)| distance(&base[v], row)).collect();
        let mut moved: Vec<usize> = (0..others.len()).filter(|&i| change[i] > 0.0).collect();
        moved.sort_by(|&a, &b| change[b].total_cmp(&change[a]).then(a.cmp(&b)));
        moved.truncate(batch - 1);
        let moved_rows = moved.len();
        let before_rows: Vec<SparseRow> =
            std::iter::once(base[w].clone()).chain(moved.iter().map(|&i| base[others[i]].clone())).collect();
        let before_y: Vec<i64> = std::iter::once(labels[w]).chain(moved.iter().map(|&i| labels[others[i]])).collect();
        let after_rows: Vec<SparseRow> = moved.iter().map(|&i| after[i].clone()).collect();
        let after_y: Vec<i64> = moved.iter().map(|&i| labels[others[i]]).collect();
        // Both sums outside no_grad: the per-row gradients come from the tape.
        let s1 = clipped_sum(&net, &x, &before_rows, &before_y, clip)
            .ok_or_else(|| Error::Other("the removed node's row is missing from the step".into()))?;
        let s2 = clipped_sum(&net, &x, &after_rows, &after_y, clip);
        let observed = tch::no_grad(|| {
            let d = match s2 {
                Some(s2) => &s1 - s2,
                None => s1.shallow_clone(),
            };
            d.square().sum(Kind::Double).sqrt().double_value(&[])
        });
        out.push(Release {
            name: format!("DP-SGD clipped gradient sum (its own row and {moved_rows} changed row(s))"),
            unit: format!("node {} (training node {w} of the induced graph, degree {})", train[w], g.in_degree(w)),
            worst_case: ch.worst_case,
            observed_change: observed,
            declared_sensitivity: declared,
            ratio: observed / declared,
        });
    }
    Ok((
        "one training node removed from the training nodes' induced graph (q' = 1, every training node a row): its \
         row and its column's entries gone, the same random columns on both graphs, rows post-processed as in \
         training; one DP-SGD step on the initialised network over its row and the rows that changed most"
            .into(),
        out,
    ))
}
