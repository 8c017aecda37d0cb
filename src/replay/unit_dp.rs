//! Sensitivity replay of Algorithm 5 (`class-dp-mlp`, `subclass-dp-mlp`; Zhang thesis ch.4 §4.4):
//! the release noise is added to is the sum over the sampled units (classes or subclasses) of each
//! unit's mean gradient, clipped to S as one vector. The replay trains the method, then, for the
//! unit with the largest unclipped gradient and a few random ones, recomputes that sum on a batch
//! of units (per-(seed, unit) coins, the unit forced in) and on the neighbour: the unit removed
//! (unbounded relation, declared S) or its records replaced (bounded, declared 2S; the records
//! keep their features and take the next class's label, which turns the unit's gradient around).
//! The k-means partition is held fixed, as the subclass-level claim assumes (a partition
//! recomputed on the neighbour would move other units too, which the guarantee does not cover).
use super::units::coin;
use super::{Release, ReplayOptions};
use crate::data::Dataset;
use crate::ensure;
use crate::error::{Error, Result};
use crate::methods::class_dp;
use crate::methods::Recipe;
use crate::models::mlp::MlpClassifier;
use crate::models::{NodeClassifier, Rows};
use crate::privacy::accountant::class_dp::Relation;
use crate::privacy::dpsgd::tape::Grads;
use crate::train::accounting::Accounting;
use crate::train::fit::Labels;
use rand::seq::index;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{Kind, Tensor};

/// The pre-noise release: the clipped unit gradients of `chosen` (node ids per unit), summed.
pub type UnitSum = fn(&MlpClassifier, &Tensor, &[&[i64]], f64) -> Result<Grads>;

/// The shipped release, [`class_dp::unit_clipped_sum`].
pub fn shipped(net: &MlpClassifier, y: &Tensor, chosen: &[&[i64]], clip: f64) -> Result<Grads> {
    class_dp::unit_clipped_sum(net, y, chosen, clip).map(|(g, _)| g)
}

/// Replays the shipped method.
pub fn replay(r: &Recipe, data: &Dataset, opts: &ReplayOptions) -> Result<(String, Vec<Release>)> {
    replay_with(r, data, opts, shipped)
}

/// The parameters' gradients flattened in id order (zeros where `g` has none).
fn flat(net_params: &[(usize, Tensor)], g: &Grads) -> Tensor {
    let parts: Vec<Tensor> = net_params
        .iter()
        .map(|(id, p)| {
            g.iter().find(|(i, _)| i == id).map_or_else(|| p.zeros_like(), |(_, t)| t.shallow_clone()).flatten(0, -1)
        })
        .collect();
    tch::no_grad(|| Tensor::cat(&parts, 0))
}

fn norm(t: &Tensor) -> f64 {
    t.square().sum(Kind::Double).sqrt().double_value(&[])
}

/// Replays `sum` as the release of `r` (a class- or subclass-DP recipe with an epsilon); tests
/// pass a deliberately wrong `sum` to show the replay catches it.
pub fn replay_with(r: &Recipe, data: &Dataset, opts: &ReplayOptions, sum: UnitSum) -> Result<(String, Vec<Release>)> {
    let unit =
        class_dp::group_unit(r.method).ok_or_else(|| Error::invalid("method", "not a class/subclass-DP method"))?;
    ensure!(r.epsilon.is_some(), Error::invalid("epsilon", "the replay needs --epsilon (a private run to replay)"));
    let (mut model, units, _) = class_dp::fit(r, data, &[], opts.seed, &Accounting::rdp_only())?;
    // Float64: a sum over a class's hundreds of records carries float32 rounding near 1e-6.
    model.ps.vs.double();
    model.net.x = Rows::new(model.net.x.x.to_kind(Kind::Double));
    let params: Vec<(usize, Tensor)> =
        model.net.trainable().iter().map(|&i| (i, model.ps.params[i].shallow_clone())).collect();
    let y = Labels::from_dataset(data)?.y;
    let (q, clip) = (class_dp::sample_rate(r)?, r.dp.max_grad_norm);
    let relation = r.own::<class_dp::ClassDpKnobs>()?.relation;
    let declared = relation.sensitivity() * clip;
    let live: Vec<usize> = (0..units.len()).filter(|&i| !units[i].is_empty()).collect();
    ensure!(!live.is_empty(), Error::invalid("dataset", "no unit has a training node"));
    // The worst case: the unit whose mean gradient is longest (it meets the clip if any does).
    let all: Vec<&[i64]> = live.iter().map(|&i| units[i].as_slice()).collect();
    let (_, norms) = class_dp::unit_clipped_sum(&model.net, &y, &all, clip)?;
    let norms: Vec<f64> = Vec::<f64>::try_from(norms.to_kind(Kind::Double)).map_err(|e| Error::Other(e.to_string()))?;
    let worst = (0..live.len()).max_by(|&a, &b| norms[a].total_cmp(&norms[b])).expect("a live unit");
    let mut picked = vec![(worst, true)];
    let others: Vec<usize> = (0..live.len()).filter(|&i| i != worst).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x756e_6974); // "unit"
    for i in index::sample(&mut rng, others.len(), opts.random_units.min(others.len())) {
        picked.push((others[i], false));
    }
    let classes = data.num_classes as i64;
    let mut out = vec![];
    for (k, worst_case) in picked {
        let u = live[k];
        // Coupled batch: every unit's own coin, u forced in.
        let batch: Vec<usize> = live.iter().copied().filter(|&i| i == u || coin(opts.seed, i as u64, 0) < q).collect();
        let refs = |skip: bool| -> Vec<&[i64]> {
            batch.iter().filter(|&&i| !(skip && i == u)).map(|&i| units[i].as_slice()).collect()
        };
        tch::manual_seed(opts.seed as i64);
        let a = flat(&params, &sum(&model.net, &y, &refs(false), clip)?);
        let (b, neighbour) = match relation {
            Relation::Unbounded => {
                let rest = refs(true);
                tch::manual_seed(opts.seed as i64);
                let b =
                    if rest.is_empty() { a.zeros_like() } else { flat(&params, &sum(&model.net, &y, &rest, clip)?) };
                (b, "removed")
            }
            Relation::Bounded => {
                let idx = crate::device::place(Tensor::from_slice(&units[u]));
                let relabelled = (y.index_select(0, &idx) + 1).remainder(classes);
                let y2 = y.copy().index_copy(0, &idx, &relabelled);
                tch::manual_seed(opts.seed as i64);
                (flat(&params, &sum(&model.net, &y2, &refs(false), clip)?), "replaced")
            }
        };
        let observed = norm(&(&a - &b));
        let first = units[u][0] as usize;
        out.push(Release {
            name: format!("Algorithm 5 clipped {}-gradient sum", unit.name()),
            unit: format!(
                "{} {u} ({} training nodes, class {}, unclipped norm {:.4}) {neighbour}",
                unit.name(),
                units[u].len(),
                data.labels[first],
                norms[k]
            ),
            worst_case,
            observed_change: observed,
            declared_sensitivity: declared,
            ratio: observed / declared,
        });
    }
    let relation = match relation {
        Relation::Unbounded => "removed (unbounded relation, declared S)",
        Relation::Bounded => "replaced by its records relabelled to the next class (bounded relation, declared 2S)",
    };
    Ok((
        format!(
            "one whole {} {relation}; units Poisson-sampled by per-(seed, unit) coins with it forced in; the \
             k-means partition held fixed",
            unit.name()
        ),
        out,
    ))
}
