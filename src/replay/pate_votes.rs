//! Sensitivity replay of graph-pate's teacher votes (`methods::pate`): the accountant
//! charges each Confident-GNMax query a vote histogram of L2 sensitivity sqrt(2) and a top count
//! of sensitivity 1 (`privacy::accountant::pate`), which holds only if removing one private node
//! changes one teacher. The replay assigns the private (training) nodes to teachers by the
//! shipped [`teacher_of`], trains every teacher on its part's induced subgraph as `pate::train`
//! does, and for the highest-degree private node and a few random ones recomputes the parts
//! without it, retrains each teacher whose part changed (same seed; the others keep their votes)
//! and compares the vote histograms on every public validation node (a superset of the queries
//! any run asks).
use super::units;
use super::{Release, ReplayOptions};
use crate::data::transforms::induced_subgraph;
use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::methods::backbone::{self, BaselineSpec};
use crate::methods::pate::{self, aggregator::vote_counts, teacher_of};
use crate::methods::{Recipe, TrainedModel};
use crate::privacy::accountant::pate::GNMAX_SENSITIVITY;

/// Which teacher each private node (in `train` order) goes to.
pub type Partition = fn(&[usize], usize, u64) -> Vec<usize>;

/// The shipped partition: a keyed hash of each node's id.
pub fn shipped(train: &[usize], teachers: usize, seed: u64) -> Vec<usize> {
    train.iter().map(|&v| teacher_of(v, teachers, seed)).collect()
}

/// Replays the shipped partition.
pub fn replay(r: &Recipe, data: &Dataset, opts: &ReplayOptions) -> Result<(String, Vec<Release>)> {
    replay_with(r, data, opts, shipped)
}

/// The teachers' parts (node ids) under `partition`.
fn parts(train: &[usize], teachers: usize, seed: u64, partition: Partition) -> Vec<Vec<usize>> {
    let mut parts = vec![vec![]; teachers];
    for (&v, t) in train.iter().zip(partition(train, teachers, seed)) {
        parts[t].push(v);
    }
    parts
}

/// Replays `partition` in place of the shipped one (tests plant a bad one).
pub fn replay_with(
    r: &Recipe,
    data: &Dataset,
    opts: &ReplayOptions,
    partition: Partition,
) -> Result<(String, Vec<Release>)> {
    let c = pate::config(r)?;
    let split = data.split()?;
    let train = &split.train;
    let n = data.num_nodes();
    let mut private = vec![false; n];
    train.iter().for_each(|&v| private[v] = true);
    let public_nodes: Vec<usize> = (0..n).filter(|&v| !private[v]).collect();
    let public = induced_subgraph(data, &public_nodes)?;
    let queries = public.split()?.val.clone();
    let spec =
        BaselineSpec::TwoLayer { kind: c.student.backbone, hidden: c.student.hidden, dropout: c.student.dropout };
    let teach = |t: usize, part: &[usize]| -> Result<Vec<usize>> {
        if part.is_empty() {
            return Ok(vec![usize::MAX; queries.len()]); // no vote
        }
        let mut sub = induced_subgraph(data, part)?;
        sub.split = Some(Split { train: (0..part.len()).collect(), val: vec![], test: vec![] });
        let (teacher, _) = backbone::train_baseline(&sub, &spec, &c.teacher_fit, opts.seed.wrapping_add(1 + t as u64))?;
        let pred = Vec::<i64>::try_from(teacher.posteriors_on(&public)?.argmax(-1, false).to_device(tch::Device::Cpu))?;
        Ok(queries.iter().map(|&q| pred[q] as usize).collect())
    };
    let before = parts(train, c.teachers, opts.seed, partition);
    let votes: Vec<Vec<usize>> = before.iter().enumerate().map(|(t, p)| teach(t, p)).collect::<Result<_>>()?;
    let histogram = |votes: &[Vec<usize>]| {
        let cast: Vec<Vec<usize>> = votes.iter().filter(|v| v.first() != Some(&usize::MAX)).cloned().collect();
        vote_counts(&cast, data.num_classes)
    };
    let counts = histogram(&votes);
    let mut out = vec![];
    for ch in units::nodes(&data.graph, train, opts.random_units, opts.seed)? {
        let w = ch.unit.node().expect("node unit");
        let rest: Vec<usize> = train.iter().copied().filter(|&v| v != w).collect();
        let after = parts(&rest, c.teachers, opts.seed, partition);
        let mut votes2 = votes.clone();
        let mut moved = 0;
        for (t, (a, b)) in before.iter().zip(&after).enumerate() {
            if a != b {
                votes2[t] = teach(t, b)?;
                moved += 1;
            }
        }
        let counts2 = histogram(&votes2);
        let (mut l2, mut top) = (0.0f64, 0.0f64);
        for (h, h2) in counts.iter().zip(&counts2) {
            let d: f64 = h.iter().zip(h2).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
            let max = |h: &[f64]| h.iter().copied().fold(0.0, f64::max);
            l2 = l2.max(d);
            top = top.max((max(h) - max(h2)).abs());
        }
        let unit = format!("node {w} (degree {}; {moved} teacher(s) retrained)", data.graph.in_degree(w));
        for (name, observed, declared) in [
            ("teacher vote histogram (largest change over the queries)", l2, GNMAX_SENSITIVITY),
            ("largest vote count (consensus check)", top, 1.0),
        ] {
            out.push(Release {
                name: name.into(),
                unit: unit.clone(),
                worst_case: ch.worst_case,
                observed_change: observed,
                declared_sensitivity: declared,
                ratio: observed / declared,
            });
        }
    }
    Ok((
        "one private node removed: teachers re-partitioned, those whose part changed retrained with their seed; \
         vote histograms on every public validation node"
            .into(),
        out,
    ))
}
