//! One replay per method family: which releases it makes, what inputs they read, and the
//! sensitivity its noise calibration declares for each.
use super::units::{self, Chosen};
use super::Release;
use crate::data::{Dataset, Graph};
use crate::error::{Error, Result};
use crate::methods::decoupled::fit_config;
use crate::methods::dpgnn::{self, DpgnnProbe};
use crate::methods::gap::{aggregation_sensitivity, fit_gap};
use crate::methods::mlp::fit_mlp;
use crate::methods::progap::fit_progap;
use crate::methods::Recipe;
use crate::models::aggregation::{nap, perturbed_sum};
use crate::models::NodeClassifier;
use crate::models::{log_softmax_rows, Fwd, ParamStore, Rows};
use crate::train::accounting::Accounting;
use crate::train::fit::{Batching, Labels};
use std::collections::HashSet;
use tch::{Kind, Reduction, Tensor};

type Replayed = (String, Vec<Release>);

const EDGE_RELATION: &str = "one directed edge removed (the unit the edge-level delta counts); each aggregation \
     is recomputed on both graphs from the same recorded input (the previous noisy release of the run)";
const NODE_RELATION: &str = "one training node and all its edges removed from the degree-bounded graph the \
     method aggregates over (the graph its node-level lemma is stated for), its own output rows left out; \
     aggregations recomputed from the run's recorded inputs; DP-SGD batches from per-(seed, node, step) \
     coins with the removed node and every node whose term it enters forced in";

fn push(out: &mut Vec<Release>, name: &str, ch: &Chosen, observed: f64, declared: f64) {
    out.push(Release {
        name: name.to_string(),
        unit: ch.unit.label(),
        worst_case: ch.worst_case,
        observed_change: observed,
        declared_sensitivity: declared,
        ratio: observed / declared,
    });
}

/// The replay computes in float64: in float32 a sum over thousands of terms carries rounding
/// errors of ~1e-5 relative to one term, enough to pass for a change above the 1e-6 tolerance.
fn double(x: &Tensor) -> Tensor {
    x.to_kind(Kind::Double)
}

/// A model's parameters in float64 (in place: every layer shares the variables' storage).
fn double_params(ps: &mut ParamStore) {
    ps.vs.double();
}

/// The aggregation operator of `g` in float64, built as `models::aggregation::aggregation_operator` builds it.
fn operator(g: &Graph) -> Tensor {
    g.aggregation_tensor().to_kind(Kind::Double).to_sparse_csr(None::<i64>)
}

/// L2 norm of `a - b`, leaving out row `skip` (the removed node's own output).
fn change(a: &Tensor, b: &Tensor, skip: Option<usize>) -> f64 {
    tch::no_grad(|| {
        let mut d = a - b;
        if let Some(w) = skip {
            let _ = d.index_fill_(0, &Tensor::from_slice(&[w as i64]), 0.0);
        }
        d.square().sum(tch::Kind::Double).sqrt().double_value(&[])
    })
}

/// One sum aggregation A^T x (pre-noise: std 0) on both graphs.
fn aggregation_change(adj: &Tensor, adj2: &Tensor, x: &Tensor, skip: Option<usize>) -> f64 {
    change(&perturbed_sum(adj, x, 0.0), &perturbed_sum(adj2, x, 0.0), skip)
}

/// The clipped per-sample gradient sum of one DP-SGD step on `idx` (what `fit` adds noise to),
/// through the project's DP-SGD tape, flattened over the parameters in id order.
fn clipped_sum(model: &dyn NodeClassifier, y: &Tensor, idx: &[usize], max_norm: f64) -> Tensor {
    let idx = crate::data::Split::index_tensor(idx);
    let mut f = Fwd::train_taped();
    let logits = model.logits(&idx, &mut f);
    let loss_sum = log_softmax_rows(&logits).g_nll_loss::<Tensor>(&y.index_select(0, &idx), None, Reduction::Sum, -100);
    let (mut grads, _) = f.tape.take().expect("taped forward").clipped_sum(&loss_sum, max_norm);
    grads.sort_by_key(|(id, _)| *id);
    tch::no_grad(|| Tensor::cat(&grads.iter().map(|(_, g)| g.flatten(0, -1)).collect::<Vec<_>>(), 0))
}

/// One DP-SGD step of a node-level recipe as the replay runs it: labels, the training pool, the
/// Poisson rate and the clipping bound C (the sum's declared sensitivity), the coins' seed.
struct DpStep<'a> {
    labels: &'a Labels,
    pool: &'a [usize],
    rate: f64,
    clip: f64,
    seed: u64,
}

impl<'a> DpStep<'a> {
    /// The step `fit` runs for recipe `r`.
    fn of(r: &Recipe, labels: &'a Labels, pool: &'a [usize], seed: u64) -> Result<Self> {
        let cfg = fit_config(r, pool.len(), 1.0);
        let dp = cfg.dp.ok_or_else(|| Error::invalid("epsilon", "node-level replay needs --epsilon"))?;
        let rate = match cfg.batching {
            Batching::Poisson { rate, .. } => rate,
            // The planted shuffled demo is replayed as its accountant models it.
            Batching::ShuffledDropLast { size, .. } => size as f64 / pool.len() as f64,
            _ => 1.0,
        };
        Ok(DpStep { labels, pool, rate, clip: dp.max_grad_norm, seed })
    }

    /// The release of one module: the removed node's term leaves the batch.
    fn release(&self, out: &mut Vec<Release>, name: &str, model: &dyn NodeClassifier, ch: &Chosen) {
        let w = ch.unit.node().expect("node unit");
        let (b, b2) = batches(self.pool, self.rate, self.seed, w, &[w]);
        tch::manual_seed(self.seed as i64);
        let a = clipped_sum(model, &self.labels.y, &b, self.clip);
        tch::manual_seed(self.seed as i64);
        let a2 = clipped_sum(model, &self.labels.y, &b2, self.clip);
        push(out, name, ch, change(&a, &a2, None), self.clip);
    }
}

/// A coupled batch with `forced` in it, and the same batch without `w`.
fn batches(pool: &[usize], rate: f64, seed: u64, w: usize, forced: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut b: Vec<usize> = units::poisson_batch(pool, rate, seed, 0);
    let pool_set: HashSet<usize> = pool.iter().copied().collect();
    b.extend(forced.iter().copied().filter(|v| pool_set.contains(v)));
    b.sort_unstable();
    b.dedup();
    let without = b.iter().copied().filter(|&v| v != w).collect();
    (b, without)
}

fn chosen_units(r: &Recipe, graph: &Graph, train: &[usize], random: usize, seed: u64) -> Result<Vec<Chosen>> {
    if r.method.is_node_level() {
        units::nodes(graph, train, random, seed)
    } else {
        units::edges(graph, random, seed)
    }
}

/// GAP (Algorithm 5): K PMA aggregations; at node level also the encoder's and the
/// classification module's DP-SGD steps.
pub fn gap(r: &Recipe, data: &Dataset, opts: &super::ReplayOptions) -> Result<Replayed> {
    let (mut model, _, _) = fit_gap(r, data, opts.seed, &Accounting::rdp_only())?;
    double_params(&mut model.ps);
    model.encoder.x = Rows::new(double(&model.encoder.x.x));
    model.classifier.inputs = model.classifier.inputs.iter().map(|r| Rows::new(double(&r.x))).collect();
    let graph = model.graph.clone().expect("a trained GAP model keeps its graph");
    let labels = Labels::from_dataset(data)?;
    let train = &data.split()?.train;
    let node = r.method.is_node_level();
    let sens = aggregation_sensitivity(r);
    let step = if node { Some(DpStep::of(r, &labels, train, opts.seed)?) } else { None };
    let adj = operator(&graph);
    let mut out = vec![];
    for ch in chosen_units(r, &graph, train, opts.random_units, opts.seed)? {
        let adj2 = operator(&ch.unit.remove_from(&graph)?);
        for k in 1..=model.hops {
            let x = &model.classifier.inputs[k - 1].x;
            push(
                &mut out,
                &format!("PMA hop {k} aggregation"),
                &ch,
                aggregation_change(&adj, &adj2, x, ch.unit.node()),
                sens,
            );
        }
        if let Some(step) = &step {
            step.release(&mut out, "encoder DP-SGD clipped gradient sum", &model.encoder, &ch);
            step.release(&mut out, "classifier DP-SGD clipped gradient sum", &model.classifier, &ch);
        }
    }
    Ok((if node { NODE_RELATION } else { EDGE_RELATION }.to_string(), out))
}

/// ProGAP (Algorithm 9): one NAP aggregation per stage 1..K; at node level also each stage's
/// DP-SGD step (stages 0..K).
pub fn progap(r: &Recipe, data: &Dataset, opts: &super::ReplayOptions) -> Result<Replayed> {
    let (mut model, _, _) = fit_progap(r, data, opts.seed, &Accounting::rdp_only())?;
    double_params(&mut model.ps);
    model.net.inputs = model.net.inputs.iter().map(|x| Rows::new(double(&x.x))).collect();
    let graph = model.graph.clone().expect("a trained ProGAP model keeps its graph");
    let labels = Labels::from_dataset(data)?;
    let train = &data.split()?.train;
    let node = r.method.is_node_level();
    let sens = aggregation_sensitivity(r);
    let step = if node { Some(DpStep::of(r, &labels, train, opts.seed)?) } else { None };
    let adj = operator(&graph);
    let inputs = model.net.input_tensors();
    let depth = model.net.depth();
    // NAP's input at stage s: the stage-(s-1) embeddings of the trained stages.
    let embeddings: Vec<Tensor> = (1..=depth).map(|s| model.net.embedding(&inputs, s - 1)).collect();
    let mut out = vec![];
    for ch in chosen_units(r, &graph, train, opts.random_units, opts.seed)? {
        let adj2 = operator(&ch.unit.remove_from(&graph)?);
        for (s, e) in (1..=depth).zip(&embeddings) {
            let observed = change(&nap(&adj, e, 0.0), &nap(&adj2, e, 0.0), ch.unit.node());
            push(&mut out, &format!("NAP stage {s} aggregation"), &ch, observed, sens);
        }
        if let Some(step) = &step {
            for s in 0..=depth {
                model.net.stage = s;
                let name = format!("stage {s} DP-SGD clipped gradient sum");
                step.release(&mut out, &name, &model.net, &ch);
            }
            model.net.stage = depth;
        }
    }
    Ok((if node { NODE_RELATION } else { EDGE_RELATION }.to_string(), out))
}

/// DP-MLP: DP-SGD alone (the graph is never read).
pub fn dp_mlp(r: &Recipe, data: &Dataset, opts: &super::ReplayOptions) -> Result<Replayed> {
    let (mut model, _, _) = fit_mlp(r, data, opts.seed, &Accounting::rdp_only())?;
    double_params(&mut model.ps);
    model.net.x = Rows::new(double(&model.net.x.x));
    let labels = Labels::from_dataset(data)?;
    let train = &data.split()?.train;
    let step = DpStep::of(r, &labels, train, opts.seed)?;
    let mut out = vec![];
    for ch in units::nodes(&data.graph, train, opts.random_units, opts.seed)? {
        step.release(&mut out, "DP-SGD clipped gradient sum", &model.net, &ch);
    }
    Ok(("one training node removed; DP-SGD batch from per-(seed, node, step) coins with it forced in".into(), out))
}

/// The undirected pairs EdgeRand reads (self loops are not pairs).
fn pair_set(g: &Graph) -> HashSet<(usize, usize)> {
    g.undirected_edges().into_iter().filter(|(u, v)| u != v).collect()
}

/// SAGE-EDP: asymmetric randomized response reads the adjacency bits of every pair (one pair =
/// one bit, the unit of its pure-eps guarantee) and the edge density (its Laplace noise has
/// scale 1 / (pairs (1 - RR_SHARE) eps), i.e. sensitivity 1 / pairs). GraphSAGE then trains on
/// the perturbed graph: post-processing, nothing to replay.
pub fn edge_rand(data: &Dataset, opts: &super::ReplayOptions) -> Result<Replayed> {
    let g = &data.graph;
    let n = g.num_nodes() as f64;
    let pairs = n * (n - 1.0) / 2.0;
    let bits = pair_set(g);
    let mut out = vec![];
    for ch in units::pairs(g, opts.random_units, opts.seed)? {
        let bits2 = pair_set(&ch.unit.remove_from(g)?);
        let flipped = bits.symmetric_difference(&bits2).count() as f64;
        push(&mut out, "EdgeRand input: adjacency bits", &ch, flipped, 1.0);
        let density = (bits.len() as f64 - bits2.len() as f64).abs() / pairs;
        push(&mut out, "EdgeRand input: edge density", &ch, density, 1.0 / pairs);
    }
    Ok(("one undirected pair removed (both directions); the bits and density EdgeRand perturbs".into(), out))
}

/// DP-GNN and `dpgnn-rowclip`: the clipped gradient sum of a DP-SGD step (declared 2(K+1)C) and
/// the test-time aggregation (declared sqrt(D)), on the graph the method samples.
pub fn dpgnn(r: &Recipe, data: &Dataset, opts: &super::ReplayOptions) -> Result<Replayed> {
    let cfg = dpgnn::config(r, data)?;
    let kept_ds = dpgnn::training_graph(data, &cfg, opts.seed)?;
    let kept = &kept_ds.graph;
    let probe = DpgnnProbe::new(&kept_ds, &cfg, opts.seed);
    let train = &data.split()?.train;
    let rate = (cfg.batch_size as f64 / train.len() as f64).min(1.0);
    let declared_grad = cfg.terms_per_node() * cfg.max_grad_norm;
    let agg = probe.aggregation(kept);
    let mut out = vec![];
    for ch in units::nodes(kept, train, opts.random_units, opts.seed)? {
        let w = ch.unit.node().expect("node unit");
        let kept2 = ch.unit.remove_from(kept)?;
        // Every batch node whose sampled neighbourhood holds w enters the batch with w.
        let mut forced: Vec<usize> = (0..kept.num_nodes()).filter(|&v| kept.in_neighbors(v).contains(&w)).collect();
        forced.push(w);
        let (b, b2) = batches(train, rate, opts.seed, w, &forced);
        let observed = change(&probe.clipped_gradient_sum(kept, &b), &probe.clipped_gradient_sum(&kept2, &b2), None);
        let name = if cfg.row_clipping {
            "DP-SGD clipped gradient sum (one clip per subgraph row)"
        } else {
            "DP-SGD clipped gradient sum (one clip per node)"
        };
        push(&mut out, name, &ch, observed, declared_grad);
        let observed = change(&agg, &probe.aggregation(&kept2), Some(w));
        push(&mut out, "test-time aggregation", &ch, observed, cfg.inference_sensitivity());
    }
    let relation = if cfg.row_clipping {
        NODE_RELATION.replace("degree-bounded graph", "in-degree-bounded graph (the reference's sampler)")
    } else {
        NODE_RELATION.to_string()
    };
    Ok((relation, out))
}
