//! The compute floor of a `bench methods` cell: the kernels the cell's training must run (the
//! dense layers' forward and backward, the sparse first layer, the aggregation SpMMs, DP-SGD's
//! clipping), at the cell's shapes and counts, timed alone as bare kernel calls (the sparse
//! products on the kernel training uses, `models::spmm`; the rest libtorch): no training loop,
//! caches, checks or bookkeeping. A cell's in-process time over this floor is what the framework
//! around the kernels costs.
//!
//! Dense stacks carry the SELUs the models apply (between layers, after ProGAP's bases, on GAP's
//! head input, after GraphSAGE's pre-MLP and convolutions) and, where a trained stack sits below
//! (GAP's and ProGAP's heads), the gradient for the input. A full-batch network also runs, as its
//! own part "norm, loss, Adam", the kernels every training step needs besides the products: batch
//! norm with its batch statistics after each activated layer (forward and backward; running
//! statistics in validation), dropout where the recipe has it, the loss (log-softmax and NLL,
//! forward and backward) over the rows it is taken on, and Adam's in-place update of the weights
//! and biases as one flat vector (as the optimiser runs a step over the same parameters as the
//! last). A DP-SGD step runs what `privacy::dpsgd` does with a batch: the Poisson draw and the
//! gather of the batch's rows, group norm where the recipe has it, the summed loss, the backward
//! to each layer's output, ghost norms (||a||^2 ||g||^2 per sample, no per-sample gradient), the
//! clipped sums, and once per step, over all the model's parameters, the noise and Adam. Row
//! normalisation (GAP's encoder output and concatenation, PMA's and NAP's hops, ProGAP's
//! concatenation, GraphSAGE's convolutions) runs on the fused kernels training uses, forward and
//! backward. Three timings ([`Timing`]): each kernel sequence sampled alone, in one pass, and in
//! the order of the run's epochs. Left out (so the floor stays a lower bound):
//! accuracy read-outs, dropout in DP-SGD stacks, and norms in validation forwards of DP-SGD
//! stacks.
use gnnaudit::data::Dataset;
use gnnaudit::methods::spec::FloorPlan;
use gnnaudit::methods::Recipe;
use gnnaudit::models::aggregation::aggregation_operator;
use gnnaudit::models::sparse;
use gnnaudit::privacy::dpsgd::{Optimizer, OptimizerKind};
use tch::{Kind, Tensor};

/// CPU seconds of this thread (the floor is timed on a loaded machine, where wall time lies).
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the struct we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// User + system CPU seconds of this process's finished children.
pub fn children_cpu_seconds() -> f64 {
    gnnaudit::cli::train::rusage_cpu_seconds(libc::RUSAGE_CHILDREN)
}

/// The shapes every plan draws on, with the real sparse operands (features restricted to the
/// train rows, the aggregation operator) so that SpMMs see the data's sparsity pattern.
pub struct Shapes {
    n: i64,
    n_train: i64,
    n_val: i64,
    features: i64,
    classes: i64,
    /// Features of the train rows, CSR [n_train, F], and its transpose.
    x_train: Tensor,
    x_train_t: Tensor,
    /// Features of all rows, CSR [n, F], and its transpose.
    x_all: Tensor,
    x_all_t: Tensor,
    /// Features of the validation rows, CSR [n_val, F].
    x_val: Tensor,
    /// A^T, CSR [n, n].
    adj: Tensor,
    /// The graph, for the node-level methods' degree bound.
    graph: gnnaudit::data::Graph,
}

impl Shapes {
    pub fn of(data: &Dataset) -> gnnaudit::Result<Self> {
        let split = data.split()?;
        let x = data.features.to_tensor().to_kind(Kind::Float);
        let train = gnnaudit::data::Split::index_tensor(&split.train);
        let xt = x.index_select(0, &train);
        let xv = x.index_select(0, &gnnaudit::data::Split::index_tensor(&split.val));
        Ok(Shapes {
            n: data.num_nodes() as i64,
            n_train: split.train.len() as i64,
            n_val: split.val.len() as i64,
            features: data.num_features() as i64,
            classes: data.num_classes as i64,
            x_train_t: xt.tr().contiguous().to_sparse_csr(None::<i64>),
            x_train: xt.to_sparse_csr(None::<i64>),
            x_all_t: x.tr().contiguous().to_sparse_csr(None::<i64>),
            x_all: x.to_sparse_csr(None::<i64>),
            x_val: xv.to_sparse_csr(None::<i64>),
            adj: aggregation_operator(&data.graph),
            graph: data.graph.clone(),
        })
    }
}

/// One kernel sequence of a plan, run `count` times by the cell.
enum Work {
    /// A stack of dense layers (widths[0] -> widths[1] -> ...) over `rows` rows, SELU after each
    /// but the last (and where `act` says so, on the input and after the last); forward only or
    /// forward + backward. `sparse_input`: the first layer reads the sparse features (train rows
    /// when training, all rows otherwise).
    Mlp { rows: i64, widths: Vec<i64>, sparse_input: bool, backward: bool, act: Acts },
    /// DP-SGD step of a dense stack over a batch, as training runs it: the batch's rows gathered
    /// from a pool of `pool` rows, the forward (group norm with `groups` groups after each
    /// activated layer, where the recipe has it), the summed loss where the stack ends in
    /// `classes`, the backward to every layer's output, the per-sample gradient norms from
    /// ||a||^2 ||g||^2 (ghost norms: no per-sample gradient is formed) and the clipped sums.
    /// `sample`: draw the Poisson batch (once per model; the head's stack does it). `update`: the
    /// parameters whose noise this step draws and whose Adam update it runs, as one flat vector;
    /// the sampling stack does it for every stack of its model ([`one_update_per_step`]), as a
    /// DP step noises and updates the model's parameters at once.
    PerSample {
        batch: i64,
        pool: i64,
        widths: Vec<i64>,
        act_last: bool,
        groups: Option<usize>,
        classes: i64,
        sample: bool,
        update: i64,
    },
    /// `A^T X` with X of this width.
    Spmm { width: i64 },
    /// Node-level DP's out-degree bound (thesis Prop. 7): each node keeps at most this many of
    /// its out-edges, drawn at random (`data::bound_degree`, Rust, no libtorch).
    DegreeBound { max_degree: usize },
    /// The rest of a full-batch step over `rows` rows (see the module doc): norms and dropout on
    /// layer outputs of the `normed` widths, the loss over `loss` = (rows, classes) logits, Adam
    /// over `params` weights and biases; validation (`backward` false) runs the norms on their
    /// running statistics only.
    Step {
        rows: i64,
        normed: Vec<i64>,
        norm: bool,
        dropout: f64,
        loss: Option<(i64, i64)>,
        params: i64,
        backward: bool,
    },
    /// SELU forward (and backward) on [rows, width]: GraphSAGE's after each convolution.
    Selu { rows: i64, width: i64, backward: bool },
    /// Row normalisation of the concatenation of parts of these widths over `rows` rows, forward
    /// (and backward), on the fused kernels training runs (`models::normalized_concat`).
    RowNorm { rows: i64, parts: Vec<i64>, backward: bool },
}

/// The activations and gradients a stack has beyond "SELU between layers".
#[derive(Clone, Copy, Default)]
struct Acts {
    /// SELU on the (dense) input: GAP's head reads SELU(norm(concatenation)).
    input: bool,
    /// SELU after the last layer: ProGAP's bases are not plain-last.
    last: bool,
    /// The gradient reaches the input (a trained stack below: GAP's and ProGAP's heads).
    input_grad: bool,
}

const PLAIN: Acts = Acts { input: false, last: false, input_grad: false };

struct Item {
    what: &'static str,
    count: usize,
    work: Work,
}

/// The floor of one cell, split by phase.
pub struct Floor {
    pub seconds: f64,
    pub parts: Vec<(&'static str, f64)>,
}

fn selu_grad(g: &Tensor, y: &Tensor) -> Tensor {
    // SELU's derivative from its output, as autograd's elu_backward computes it.
    Tensor::elu_backward(g, 1.6732632423543772, 1.0507009873554805, 1.0, true, y)
}

impl Work {
    fn run(&self, s: &Shapes) {
        tch::no_grad(|| match self {
            Work::Mlp { rows, widths, sparse_input, backward, act } => {
                let ws: Vec<Tensor> = widths.windows(2).map(|w| pooled(&[w[1], w[0]])).collect();
                let bs: Vec<Tensor> = widths[1..].iter().map(|&o| pooled(&[o])).collect();
                let raw_in = (!*sparse_input).then(|| pooled(&[*rows, widths[0]]));
                let act_in = raw_in.as_ref().filter(|_| act.input).map(|x| x.selu());
                let dense_in = act_in.as_ref().or(raw_in.as_ref());
                // The sparse features of the rows the stack reads: the train rows or all rows.
                let (sparse_x, sparse_x_t) = match *rows {
                    r if r == s.n_train => (&s.x_train, &s.x_train_t),
                    r if r == s.n_val => (&s.x_val, &s.x_all_t),
                    _ => (&s.x_all, &s.x_all_t),
                };
                let mut acts = Vec::with_capacity(ws.len() + 1);
                let last = ws.len() - 1;
                let activated = |i: usize| i < last || act.last;
                for (i, (w, b)) in ws.iter().zip(&bs).enumerate() {
                    let z = match (i, &dense_in) {
                        (0, None) => sparse::mm(sparse_x, &w.tr()) + b,
                        (0, Some(x)) => x.linear(w, Some(b)),
                        _ => acts.last().map(|x: &Tensor| x.linear(w, Some(b))).unwrap(),
                    };
                    acts.push(if activated(i) { z.selu() } else { z });
                }
                if !*backward {
                    return;
                }
                let mut g = pooled(&[*rows, *widths.last().unwrap()]);
                for i in (0..ws.len()).rev() {
                    if activated(i) {
                        g = selu_grad(&g, &acts[i]);
                    }
                    let _gb = g.sum_dim_intlist([0i64].as_slice(), false, Kind::Float);
                    if i == 0 {
                        let _gw = match &dense_in {
                            None => sparse::mm(sparse_x_t, &g),
                            Some(x) => g.tr().mm(x),
                        };
                        if act.input_grad && dense_in.is_some() {
                            let g_in = g.mm(&ws[0]);
                            if let Some(a) = &act_in {
                                let _ = selu_grad(&g_in, a);
                            }
                        }
                    } else {
                        let _gw = g.tr().mm(&acts[i - 1]);
                        g = g.mm(&ws[i]);
                    }
                }
            }
            Work::PerSample { batch, pool, widths, act_last, groups, classes, sample, update } => {
                let b = *batch;
                if *sample {
                    let _ = Tensor::rand([*pool], FLOAT).lt(b as f64 / *pool as f64).nonzero();
                }
                let ws: Vec<Tensor> = widths.windows(2).map(|w| pooled(&[w[1], w[0]])).collect();
                let bs: Vec<Tensor> = widths[1..].iter().map(|&o| pooled(&[o])).collect();
                let mut acts = vec![pooled(&[*pool, widths[0]]).index_select(0, &pooled_index(b, *pool))];
                let last = ws.len() - 1;
                let activated = |i: usize| i < last || *act_last;
                // Per activated layer, SELU then the norm (as `Mlp::after_linear`): the SELU's
                // output, and the normalised rows with the graph back to that output.
                let mut selu_outs = Vec::new();
                let mut norms: Vec<Option<(Tensor, Tensor)>> = Vec::new();
                for (i, (w, bias)) in ws.iter().zip(&bs).enumerate() {
                    let z = acts[i].linear(w, Some(bias));
                    if !activated(i) {
                        selu_outs.push(None);
                        norms.push(None);
                        acts.push(z);
                        continue;
                    }
                    let y = z.selu();
                    selu_outs.push(Some(y.shallow_clone()));
                    let out = match groups {
                        Some(g) => {
                            let g = gnnaudit::models::group_count(*g, widths[i + 1]);
                            let leaf = y.detach().set_requires_grad(true);
                            let xhat =
                                tch::with_grad(|| leaf.group_norm(g, None::<Tensor>, None::<Tensor>, 1e-5, false));
                            let out = &xhat * pooled(&[widths[i + 1]]) + pooled(&[widths[i + 1]]);
                            norms.push(Some((leaf, xhat)));
                            out
                        }
                        None => {
                            norms.push(None);
                            y
                        }
                    };
                    acts.push(out);
                }
                if *widths.last().unwrap() == *classes {
                    // The summed loss, forward and backward (its gradient seeds the backward).
                    let y = Tensor::zeros([b], (Kind::Int64, tch::Device::Cpu));
                    tch::with_grad(|| {
                        let logits = pooled(&[b, *classes]).detach().set_requires_grad(true);
                        let logp = gnnaudit::models::log_softmax_rows(&logits);
                        logp.g_nll_loss::<Tensor>(&y, None, tch::Reduction::Sum, -100).backward();
                    });
                }
                // The backward to every layer's output and every norm's, with the squared
                // per-sample norms of their parameters' gradients.
                let rowsum2 = |t: &Tensor| t.square().sum_dim_intlist([1i64].as_slice(), false, Kind::Float);
                let mut g = pooled(&[b, *widths.last().unwrap()]);
                let mut norm2 = Tensor::zeros([b], FLOAT);
                let (mut linear_g, mut norm_g) = (Vec::new(), Vec::new());
                for i in (0..ws.len()).rev() {
                    if let Some((leaf, xhat)) = &norms[i] {
                        norm2 += rowsum2(&(xhat * &g)) + rowsum2(&g);
                        norm_g.push((xhat.shallow_clone(), g.shallow_clone()));
                        let g_hat = &g * pooled(&[widths[i + 1]]);
                        let root = tch::with_grad(|| (xhat * g_hat).sum(Kind::Float));
                        g = Tensor::run_backward(&[root], &[leaf], false, false).remove(0);
                    }
                    if let Some(y) = &selu_outs[i] {
                        g = selu_grad(&g, y);
                    }
                    norm2 += rowsum2(&acts[i]) * rowsum2(&g) + rowsum2(&g);
                    linear_g.push((i, g.shallow_clone()));
                    if i > 0 {
                        g = g.mm(&ws[i]);
                    }
                }
                // Clip factors and the clipped sums.
                let factor = gnnaudit::privacy::dpsgd::tape::clip_factor(&norm2.sqrt(), 1.0).unsqueeze(1);
                for (i, g) in &linear_g {
                    let cg = g * &factor;
                    let _ = (cg.tr().mm(&acts[*i]), cg.sum_dim_intlist([0i64].as_slice(), false, Kind::Float));
                }
                for (xhat, g) in &norm_g {
                    let cg = g * &factor;
                    let _ = (xhat * &cg).sum_dim_intlist([0i64].as_slice(), false, Kind::Float);
                    let _ = cg.sum_dim_intlist([0i64].as_slice(), false, Kind::Float);
                }
                // Noise on the clipped sums, and Adam, over the model's parameters as one vector.
                if *update > 0 {
                    let _noisy = pooled(&[*update]) + pooled(&[*update]).randn_like();
                    adam_step(&[*update]);
                }
            }
            Work::Spmm { width } => {
                let _ = sparse::mm(&s.adj, &pooled(&[s.n, *width]));
            }
            Work::DegreeBound { max_degree } => {
                let bounded = gnnaudit::data::bound_degree(&s.graph, gnnaudit::data::DegreeBound::Out, *max_degree, 0);
                bounded.expect("the recipe's max_degree was validated");
            }
            Work::Selu { rows, width, backward } => {
                let y = pooled(&[*rows, *width]).selu();
                if *backward {
                    let _ = selu_grad(&pooled(&[*rows, *width]), &y);
                }
            }
            Work::RowNorm { rows, parts, backward } => {
                let xs: Vec<Tensor> = parts.iter().map(|&w| pooled(&[*rows, w])).collect();
                let g = backward.then(|| pooled(&[*rows, parts.iter().sum()]));
                let refs: Vec<&Tensor> = xs.iter().collect();
                let ran = gnnaudit::libtorch::normalized_concat_kernels(&refs, g.as_ref());
                assert!(ran, "the floor's operands are float CPU matrices, which the fused kernels take");
            }
            Work::Step { rows, normed, norm, dropout, loss, params, backward } => {
                for &w in normed {
                    let (x, g) = (pooled(&[*rows, w]), pooled(&[*rows, w]));
                    let (scale, shift) = (pooled(&[w]), pooled(&[w]));
                    if *norm && !*backward {
                        // Running statistics: a mean and a (positive) variance.
                        let var = scale.square();
                        let _ =
                            x.batch_norm(Some(&scale), Some(&shift), Some(&shift), Some(&var), false, 0.1, 1e-5, false);
                    } else if *norm {
                        // Batch statistics forward and the fused backward; summing the output to a
                        // scalar (one light pass) is what lets autograd seed it.
                        tch::with_grad(|| {
                            let leaf = |t: &Tensor| t.detach().set_requires_grad(true);
                            let (x, scale, shift) = (leaf(&x), leaf(&scale), leaf(&shift));
                            let y = x.batch_norm(
                                Some(&scale),
                                Some(&shift),
                                None::<&Tensor>,
                                None::<&Tensor>,
                                true,
                                0.1,
                                1e-5,
                                false,
                            );
                            y.sum(Kind::Float).backward();
                        });
                    }
                    if *dropout > 0.0 && *backward {
                        let mask = x.bernoulli_p(1.0 - dropout) / (1.0 - dropout);
                        let _ = (&x * &mask, &g * &mask);
                    }
                }
                if !*backward {
                    return;
                }
                if let Some((rows, classes)) = *loss {
                    // Loss over the rows: log-softmax and NLL, forward and backward (autograd's
                    // own kernels, as `models::cross_entropy` runs them).
                    let y = Tensor::zeros([rows], (Kind::Int64, tch::Device::Cpu));
                    tch::with_grad(|| {
                        let logits = pooled(&[rows, classes]).detach().set_requires_grad(true);
                        gnnaudit::models::cross_entropy(&logits, &y).backward();
                    });
                }
                // Adam over the parameters as one flat vector: the optimiser's route when a step
                // updates the same parameters as the last.
                adam_step(&[*params]);
            }
        })
    }
}

const FLOAT: (Kind, tch::Device) = (Kind::Float, tch::Device::Cpu);

thread_local! {
    /// Operands by shape, drawn once (in the warm-up run) so that timed runs do not draw them.
    static POOL: std::cell::RefCell<Vec<(Vec<i64>, Tensor)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Parameters by shape and the optimiser over them.
type AdamState = (Vec<(Vec<i64>, Tensor)>, Optimizer);

thread_local! {
    /// Parameters by shape and the project's own Adam over them, whose moments persist between
    /// steps as in a training run.
    static ADAM: std::cell::RefCell<AdamState> =
        std::cell::RefCell::new((Vec::new(), Optimizer::new(OptimizerKind::Adam, 0.01, 0.0)));
}

/// One Adam update of the parameter of `shape` by a gradient of that shape.
fn adam_step(shape: &[i64]) {
    ADAM.with(|a| {
        let (params, opt) = &mut *a.borrow_mut();
        let id = match params.iter().position(|(s, _)| s == shape) {
            Some(id) => id,
            None => {
                params.push((shape.to_vec(), Tensor::randn(shape, FLOAT) * 0.1));
                params.len() - 1
            }
        };
        let tensors: Vec<Tensor> = params.iter().map(|(_, p)| p.shallow_clone()).collect();
        opt.step(&tensors, &[(id, pooled(shape))]);
    })
}

/// A random N(0, 0.01) tensor of `shape`, the same one on every call.
fn pooled(shape: &[i64]) -> Tensor {
    cached(shape, || Tensor::randn(shape, FLOAT) * 0.1)
}

/// `count` distinct row indices below `pool`, the same ones on every call (a batch's rows).
fn pooled_index(count: i64, pool: i64) -> Tensor {
    // Keyed apart from the float operands, whose keys have no negative extent.
    cached(&[count, pool, -1], || {
        Tensor::randperm(pool, (Kind::Int64, tch::Device::Cpu)).narrow(0, 0, count.min(pool)).sort(0, false).0
    })
}

/// The pool's tensor under `key`, made by `make` the first time.
fn cached(key: &[i64], make: impl FnOnce() -> Tensor) -> Tensor {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if let Some((_, t)) = p.iter().find(|(k, _)| k == key) {
            return t.shallow_clone();
        }
        let t = make();
        p.push((key.to_vec(), t.shallow_clone()));
        t
    })
}

/// Weights [out, in] and biases [out] of a dense stack of these widths.
fn stack_params(widths: &[i64]) -> i64 {
    widths.windows(2).map(|w| w[1] * w[0] + w[1]).sum()
}

/// Times `count` runs of `work` from samples of at least 10 runs, and at least 20 ms, where the
/// cell runs it that often (after one warm-up): the least of three samples, since on a shared
/// machine a sample can only be slowed, and a floor should be the least the kernels take.
/// (Single samples of 10 sub-millisecond DP-SGD steps varied by up to 50% between runs.)
fn timed(work: &Work, count: usize, s: &Shapes) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let t = thread_cpu_seconds();
    work.run(s);
    let once = (thread_cpu_seconds() - t).max(1e-6);
    let k = count.min(((0.02 / once).ceil() as usize).max(10));
    let sample = || {
        let t = thread_cpu_seconds();
        for _ in 0..k {
            work.run(s);
        }
        (thread_cpu_seconds() - t) / k as f64
    };
    (0..3).map(|_| sample()).fold(f64::INFINITY, f64::min) * count as f64
}

/// CPU seconds of `count` runs of `work` in a row, after one warm-up run.
fn passed(work: &Work, count: usize, s: &Shapes) -> f64 {
    if count == 0 {
        return 0.0;
    }
    work.run(s);
    let t = thread_cpu_seconds();
    (0..count).for_each(|_| work.run(s));
    thread_cpu_seconds() - t
}

/// Does an item run `count` times over `rounds` rounds run in round `r`? In the rounds where
/// floor(r count / rounds) steps up: `count` of them, evenly spread.
fn runs_in_round(count: usize, rounds: usize, r: usize) -> bool {
    (r + 1) * count / rounds > r * count / rounds
}

/// Within each training loop (`loops`: where each begins), gives the sampling DP-SGD stack the
/// noise and Adam update of every DP-SGD stack's parameters, and the others none: a step of the
/// model draws one noise vector and runs one Adam update over all its parameters, not one per
/// stack (which cost ProGAP-NDP's floor more dispatches than its run made).
fn one_update_per_step(items: &mut [Item], loops: &[usize]) {
    for w in loops.windows(2) {
        let stacks = &mut items[w[0]..w[1]];
        let total: i64 =
            stacks.iter().map(|it| if let Work::PerSample { update, .. } = &it.work { *update } else { 0 }).sum();
        if !stacks.iter().any(|it| matches!(it.work, Work::PerSample { sample: true, .. })) {
            continue;
        }
        for it in stacks.iter_mut() {
            if let Work::PerSample { sample, update, .. } = &mut it.work {
                *update = if *sample { total } else { 0 };
            }
        }
    }
}

/// CPU seconds of the items of one training loop run in turn, as its epochs run them: each item's
/// runs spread evenly over the loop's rounds (a DP-SGD step every round, the validation forward
/// once an epoch), after one warm-up run of each. The loop is timed whole (a clock read per call
/// would add its own cost) and its time shared out over `times` as the warm-up runs weigh.
fn interleaved(items: &[Item], times: &mut [f64], s: &Shapes) {
    let weights: Vec<f64> = items
        .iter()
        .map(|it| {
            let start = thread_cpu_seconds();
            it.work.run(s);
            (thread_cpu_seconds() - start) * it.count as f64
        })
        .collect();
    let rounds = items.iter().map(|it| it.count).max().unwrap_or(0);
    let start = thread_cpu_seconds();
    for r in 0..rounds {
        for it in items.iter().filter(|it| runs_in_round(it.count, rounds, r)) {
            it.work.run(s);
        }
    }
    let total = thread_cpu_seconds() - start;
    let weight: f64 = weights.iter().sum();
    for (t, w) in times.iter_mut().zip(weights) {
        *t = if weight > 0.0 { total * w / weight } else { 0.0 };
    }
}

/// The part that holds every stack's `Work::Step`.
const STEP: &str = "norm, loss, Adam";

/// What a step runs besides the products: the recipe's norm and dropout.
struct StepStyle {
    batch_norm: bool,
    /// Group norm's groups as the recipe asks for them, under node-level DP.
    groups: Option<usize>,
    dropout: f64,
}

impl StepStyle {
    fn of(recipe: &Recipe) -> Self {
        let norm = recipe.norm();
        let groups = match norm {
            gnnaudit::models::NormKind::Group(g) => Some(g),
            _ => None,
        };
        StepStyle { batch_norm: norm == gnnaudit::models::NormKind::Batch, groups, dropout: recipe.train.dropout }
    }
    /// The step of a dense stack: norms after its activated layers, the loss where it ends in
    /// the classes, Adam over its weights [out, in] and biases [out].
    fn work(&self, rows: i64, widths: &[i64], act_last: bool, classes: i64, backward: bool) -> Work {
        let layers = widths.len() - 1;
        let normed = (1..=layers).filter(|&i| i < layers || act_last).map(|i| widths[i]).collect();
        let loss = (widths[layers] == classes).then_some((rows, classes));
        let params = stack_params(widths);
        let (norm, dropout) = (self.batch_norm, self.dropout);
        Work::Step { rows, normed, norm, dropout, loss, params, backward }
    }
}

/// The items of one training phase: `epochs` epochs of a dense stack (full batch, or DP-SGD
/// batches of `batch` with `steps` steps per epoch) plus a validation forward per epoch.
// One argument per property of the phase, each named at its call sites.
#[allow(clippy::too_many_arguments)]
fn phase(
    items: &mut Vec<Item>,
    s: &Shapes,
    what: &'static str,
    epochs: usize,
    dp: Option<(i64, usize)>,
    widths: Vec<i64>,
    sparse_input: bool,
    act: Acts,
    step: &StepStyle,
) {
    match dp {
        None => {
            items.push(Item {
                what,
                count: epochs,
                work: Work::Mlp { rows: s.n_train, widths: widths.clone(), sparse_input, backward: true, act },
            });
            for (rows, backward) in [(s.n_train, true), (s.n_val, false)] {
                let work = step.work(rows, &widths, act.last, s.classes, backward);
                items.push(Item { what: STEP, count: epochs, work });
            }
        }
        Some((batch, steps)) => {
            let (act_last, groups, classes) = (act.last, step.groups, s.classes);
            // The stack that ends in the classes is the model's last: its step draws the batch.
            let sample = *widths.last().unwrap() == classes;
            let pool = s.n_train;
            // The stack's own weights, biases and group-norm affines ([`one_update_per_step`]
            // moves them to the sampling stack).
            let layers = widths.len() - 1;
            let normed: i64 =
                (1..=layers).filter(|&i| groups.is_some() && (i < layers || act_last)).map(|i| 2 * widths[i]).sum();
            let update = stack_params(&widths) + normed;
            let work =
                Work::PerSample { batch, pool, widths: widths.clone(), act_last, groups, classes, sample, update };
            items.push(Item { what, count: epochs * steps, work })
        }
    }
    // Validation reads the sparse features where training does (DP-SGD trains on dense rows, its
    // validation does not need to).
    let sparse_val = sparse_input || (dp.is_some() && widths[0] == s.features);
    items.push(Item {
        what,
        count: epochs,
        work: Work::Mlp { rows: s.n_val, widths, sparse_input: sparse_val, backward: false, act },
    });
}

/// The row normalisation of a phase (over `parts` concatenated) where training runs it: per
/// epoch, forward and backward over the train rows (or each DP-SGD batch) and forward over the
/// validation rows.
fn row_norm(
    items: &mut Vec<Item>,
    s: &Shapes,
    what: &'static str,
    epochs: usize,
    dp: Option<(i64, usize)>,
    parts: Vec<i64>,
) {
    let (rows, count) = match dp {
        None => (s.n_train, epochs),
        Some((batch, steps)) => (batch, epochs * steps),
    };
    items.push(Item { what, count, work: Work::RowNorm { rows, parts: parts.clone(), backward: true } });
    items.push(Item { what, count: epochs, work: Work::RowNorm { rows: s.n_val, parts, backward: false } });
}

/// How a floor is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Each item by the least of three short samples, scaled to its count ([`timed`]): the least
    /// the kernels take, from the quickest moments of a shared machine.
    Sampled,
    /// Each item as often as the cell runs it, one after another after a warm-up: as long as the
    /// kernels of a run, and as exposed to a slow spell of the machine as a run is.
    Pass,
    /// As [`Timing::Pass`], but each training loop's items in turn, in the order its epochs run
    /// them, so that caches hold what they would hold in a run (see [`interleaved`]).
    Interleaved,
}

/// The floor of `recipe` on `s`; None for methods without a plan here (SAGE-EDP at a finite
/// epsilon trains on a randomised graph of unknown size; DP-GNN; the others not in the table).
pub fn floor(recipe: &Recipe, s: &Shapes, timing: Timing) -> Option<Floor> {
    let (h, f, c) = (recipe.train.hidden as i64, s.features, s.classes);
    let epochs = recipe.epochs();
    let dp = (recipe.method.is_node_level() && recipe.epsilon.is_some()).then(|| {
        let b = recipe.batch_size().unwrap_or(256).min(s.n_train as usize).max(1);
        (b as i64, gnnaudit::privacy::dpsgd::steps_per_epoch(s.n_train as usize, b))
    });
    let mut items = Vec::new();
    // Where each training loop's items begin (GAP's encoder, its classifier; ProGAP's stages):
    // the interleaved timing runs each loop's items in turn, as its epochs do.
    let mut loops = vec![0];
    let plan = recipe.method.spec().floor?;
    if matches!(plan, FloorPlan::Gap | FloorPlan::Progap) && recipe.method.is_node_level() {
        let work = Work::DegreeBound { max_degree: recipe.dp.max_degree };
        items.push(Item { what: "degree bound", count: 1, work });
    }
    let step = StepStyle::of(recipe);
    let mlp_widths = |first: i64, layers: usize, out: i64| {
        let mut w = vec![first];
        w.extend(std::iter::repeat_n(h, layers.saturating_sub(1)));
        w.push(out);
        w
    };
    match plan {
        FloorPlan::Mlp => {
            phase(
                &mut items,
                s,
                "MLP",
                epochs,
                dp,
                mlp_widths(f, gnnaudit::methods::mlp::depth(recipe).ok()?, c),
                dp.is_none(),
                PLAIN,
                &step,
            );
        }
        FloorPlan::Gap => {
            let k: gnnaudit::methods::gap::GapKnobs = recipe.own().ok()?;
            let hops = k.hops_of(recipe.method);
            // Encoder layers then its head (the norm between them is left out).
            let mut enc = mlp_widths(f, k.encoder_layers, h);
            enc.push(c);
            phase(&mut items, s, "encoder", epochs, dp, enc, dp.is_none(), PLAIN, &step);
            row_norm(&mut items, s, "encoder", epochs, dp, vec![h]);
            loops.push(items.len());
            // PMA normalises X^(0) and each hop's noisy sum.
            let pma_norm = Work::RowNorm { rows: s.n, parts: vec![h], backward: false };
            items.push(Item { what: "embed + PMA", count: hops + 1, work: pma_norm });
            items.push(Item {
                what: "embed + PMA",
                count: 1,
                work: Work::Mlp {
                    rows: s.n,
                    widths: mlp_widths(f, k.encoder_layers, h),
                    sparse_input: true,
                    backward: false,
                    act: PLAIN,
                },
            });
            items.push(Item { what: "embed + PMA", count: hops, work: Work::Spmm { width: h } });
            // Per-hop base MLPs, then the head on the concatenation: (hops + 1) bases of width h
            // are one stack of (hops + 1) h -> (hops + 1) h in cost; the head reads (hops + 1) h.
            loops.push(items.len());
            for _ in 0..=hops {
                phase(&mut items, s, "classifier", epochs, dp, mlp_widths(h, k.base_layers, h), false, PLAIN, &step);
            }
            row_norm(&mut items, s, "classifier", epochs, dp, vec![h; hops + 1]);
            let head = Acts { input: true, input_grad: true, ..PLAIN };
            phase(
                &mut items,
                s,
                "classifier",
                epochs,
                dp,
                mlp_widths(h * (hops as i64 + 1), k.head_layers, c),
                false,
                head,
                &step,
            );
        }
        FloorPlan::Progap => {
            let own: gnnaudit::methods::progap::ProgapKnobs = recipe.own().ok()?;
            let depth = own.depth_of(recipe.method);
            for stage in 0..=depth {
                loops.push(items.len());
                if stage > 0 {
                    let first = if stage == 1 { f } else { h };
                    items.push(Item {
                        what: "stage embeddings + NAP",
                        count: 1,
                        work: Work::Mlp {
                            rows: s.n,
                            widths: mlp_widths(first, own.base_layers_of(recipe.method), h),
                            sparse_input: stage == 1,
                            backward: false,
                            act: Acts { last: true, ..PLAIN },
                        },
                    });
                    let nap_norm = Work::RowNorm { rows: s.n, parts: vec![h], backward: false };
                    items.push(Item { what: "stage embeddings + NAP", count: 1, work: nap_norm });
                    items.push(Item { what: "stage embeddings + NAP", count: 1, work: Work::Spmm { width: h } });
                }
                let trained = if own.layerwise { stage..=stage } else { 0..=stage };
                for k in trained {
                    let first = if k == 0 { f } else { h };
                    let sparse = k == 0 && dp.is_none();
                    phase(
                        &mut items,
                        s,
                        "stage training",
                        epochs,
                        dp,
                        mlp_widths(first, own.base_layers_of(recipe.method), h),
                        sparse,
                        Acts { last: true, ..PLAIN },
                        &step,
                    );
                }
                row_norm(&mut items, s, "stage training", epochs, dp, vec![h; stage + 1]);
                phase(
                    &mut items,
                    s,
                    "stage training",
                    epochs,
                    dp,
                    mlp_widths(h * (stage as i64 + 1), own.head_layers, c),
                    false,
                    Acts { input_grad: true, ..PLAIN },
                    &step,
                );
            }
        }
        FloorPlan::Sage if recipe.epsilon.is_none() => {
            let k: gnnaudit::methods::backbone::SageKnobs = recipe.own().ok()?;
            let layers = k.mp_layers;
            let pre = mlp_widths(f, k.base_layers, h);
            // The head reads the jumping-knowledge concatenation; its first layer projects it back
            // to the hidden width (`backbone::spec_of`).
            let head = mlp_widths(h * layers as i64, k.head_layers + 1, c);
            // Full-graph epochs: forward + backward over all rows, and a validation forward.
            let mut per_epoch = |backward: bool| {
                let sage = |work| Item { what: "SAGE epochs", count: epochs, work };
                let pre_act = Acts { last: true, ..PLAIN };
                items.push(sage(Work::Mlp {
                    rows: s.n,
                    widths: pre.clone(),
                    sparse_input: true,
                    backward,
                    act: pre_act,
                }));
                for _ in 0..layers {
                    // neighbour and root projections, the aggregation (its transpose backward),
                    // and the row normalisation and SELU after them.
                    let widths = vec![h, 2 * h];
                    items.push(sage(Work::Mlp { rows: s.n, widths, sparse_input: false, backward, act: PLAIN }));
                    items.push(Item {
                        what: "SAGE epochs",
                        count: epochs * if backward { 2 } else { 1 },
                        work: Work::Spmm { width: h },
                    });
                    items.push(sage(Work::RowNorm { rows: s.n, parts: vec![h], backward }));
                    items.push(sage(Work::Selu { rows: s.n, width: h, backward }));
                }
                items.push(sage(Work::Mlp {
                    rows: s.n,
                    widths: head.clone(),
                    sparse_input: false,
                    backward,
                    act: PLAIN,
                }));
                // Norms after every activated layer (pre-MLP, convolutions, head but its last), all
                // over every row; the loss over the train rows; Adam over every weight and bias.
                let normed: Vec<i64> = std::iter::repeat_n(h, pre.len() - 1 + layers + head.len() - 2).collect();
                let params = stack_params(&pre) + stack_params(&head) + layers as i64 * (2 * h * h + h);
                let loss = Some((s.n_train, c));
                let (norm, dropout) = (step.batch_norm, step.dropout);
                let work = Work::Step { rows: s.n, normed, norm, dropout, loss, params, backward };
                items.push(Item { what: STEP, count: epochs, work });
            };
            per_epoch(true);
            per_epoch(false);
        }
        _ => return None,
    }
    loops.push(items.len());
    loops.dedup();
    one_update_per_step(&mut items, &loops);
    let times: Vec<f64> = match timing {
        Timing::Sampled => items.iter().map(|it| timed(&it.work, it.count, s)).collect(),
        Timing::Pass => items.iter().map(|it| passed(&it.work, it.count, s)).collect(),
        Timing::Interleaved => {
            let mut times = vec![0.0; items.len()];
            for w in loops.windows(2) {
                interleaved(&items[w[0]..w[1]], &mut times[w[0]..w[1]], s);
            }
            times
        }
    };
    let mut parts: Vec<(&'static str, f64)> = Vec::new();
    for (it, t) in items.iter().zip(times) {
        match parts.iter_mut().find(|(w, _)| *w == it.what) {
            Some((_, acc)) => *acc += t,
            None => parts.push((it.what, t)),
        }
    }
    Some(Floor { seconds: parts.iter().map(|(_, t)| t).sum(), parts })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run-order floor runs every item exactly as often as the cell, spread over the rounds:
    /// a validation forward once per epoch of DP-SGD steps, between them.
    #[test]
    fn interleaved_rounds_run_each_item_its_count_evenly() {
        for (count, rounds) in [(10, 440), (440, 440), (1, 100), (100, 100), (7, 9), (0, 5)] {
            let at: Vec<usize> = (0..rounds).filter(|&r| runs_in_round(count, rounds, r)).collect();
            assert_eq!(at.len(), count, "{count} of {rounds}");
            if count > 1 {
                let gaps: Vec<usize> = at.windows(2).map(|w| w[1] - w[0]).collect();
                let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
                assert!(hi - lo <= 1, "{count} of {rounds}: gaps {lo}..{hi}");
            }
        }
    }

    /// One noise draw and one Adam update per step and training loop, over every DP-SGD stack's
    /// parameters, on the stack that draws the batch; loops keep their own.
    #[test]
    fn a_dp_step_noises_and_updates_its_loops_parameters_once() {
        let stack = |sample: bool, update: i64| Item {
            what: "t",
            count: 1,
            work: Work::PerSample {
                batch: 1,
                pool: 1,
                widths: vec![1, 1],
                act_last: false,
                groups: None,
                classes: 1,
                sample,
                update,
            },
        };
        let spmm = Item { what: "t", count: 1, work: Work::Spmm { width: 1 } };
        let mut items = vec![stack(false, 10), stack(false, 20), stack(true, 5), spmm, stack(false, 3), stack(true, 4)];
        one_update_per_step(&mut items, &[0, 3, 6]);
        let updates: Vec<i64> = items
            .iter()
            .filter_map(|it| if let Work::PerSample { update, .. } = it.work { Some(update) } else { None })
            .collect();
        assert_eq!(updates, [0, 0, 35, 0, 7]);
    }
}
