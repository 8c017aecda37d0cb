//! A TorchScript export as a target: `forward(x: Tensor[N, F], edge_index: Tensor[2, E]) ->
//! Tensor[N, C]`, loaded through tch's `CModule`. `x` is the dense float32 feature matrix and
//! `edge_index` lists every undirected edge in both directions (PyTorch Geometric's convention),
//! without self loops. The black box is its posteriors on the dataset's graph; the white box its
//! parameters and autograd through the module; the shadow oracle trains fresh copies through
//! `TrainableCModule` with the declared recipe.
//!
//! Export a PyTorch Geometric model with `torch.jit.trace(model.eval(), (x, edge_index))`:
//! `torch.jit.script` of GCNConv or GATConv saves a file that libtorch cannot load back. A trace
//! records the mode it ran in, so dropout traced in eval mode is gone for good: shadow copies
//! then train without dropout (declare a recipe that matches, or export an untrained `init`).
//! On load the module is probed with and without the graph's edges ([`EdgeProbe`]).
use super::posteriors::{check_posteriors, Released};
use super::spec::{Optimizer, OutputKind, ShadowRecipe};
use crate::error::{Error, Result};
use gnnaudit_attacks as attacks;
use gnnaudit_attacks::{AttackGraph, BlackBox, NodeSplit, ShadowOracle, WhiteBox};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tch::nn::{self, OptimizerConfig};
use tch::{CModule, Device, Kind, TchError, Tensor, TrainableCModule};

/// libtorch's whole message without its C++ stack frames (the `Exception raised from` and
/// `frame #` lines): TorchScript's own traceback and the reason are all kept.
pub fn torch_message(e: &TchError) -> String {
    let text = match e {
        TchError::Torch(s) => s.clone(),
        other => other.to_string(),
    };
    text.lines()
        .map(str::trim_end)
        .filter(|l| {
            let t = l.trim_start();
            !t.is_empty() && !t.starts_with("Exception raised from") && !t.starts_with("frame #")
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// How to export a model gnnaudit can load, for error messages.
pub const HOW_TO_EXPORT: &str =
    "export it with torch.jit.trace(model.eval(), (data.x, data.edge_index)).save(\"model.pt\") \
     (torch.jit.script of PyTorch Geometric layers such as GCNConv or GATConv saves a file that libtorch cannot load \
     back)";

/// What a file that is not a TorchScript archive is, from its bytes: the other formats
/// `torch.save` and `torch.export` write. None when it looks like TorchScript (or is unknown:
/// libtorch then says why it cannot load it).
pub fn other_torch_format(bytes: &[u8]) -> Option<String> {
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    if bytes.starts_with(b"PK\x03\x04") {
        // TorchScript archives hold the module's code and constants beside data.pkl.
        if has(b"constants.pkl") || has(b"/code/") {
            return None;
        }
        if has(b"archive_format") || has(b"serialized_exported_program") || has(b"exported_program") {
            return Some(format!(
                "this is a torch.export archive (.pt2), which libtorch's TorchScript loader does not read; {HOW_TO_EXPORT}"
            ));
        }
        if has(b"data.pkl") {
            // A state_dict pickles an OrderedDict of tensors; a whole model pickles its class.
            let (what, load) = if has(b"OrderedDict") && !has(b"torch.nn.modules") && !has(b"torch_geometric.nn") {
                (
                    "a state_dict saved with torch.save (weights only, no code to run)",
                    "model.load_state_dict(torch.load(path))",
                )
            } else {
                (
                    "a torch.save(model) pickle (a Python object: only Python with the model's classes can load it)",
                    "model = torch.load(path, weights_only=False)",
                )
            };
            return Some(format!("this is {what}; in Python, {load}, then {HOW_TO_EXPORT}"));
        }
    }
    if bytes.len() > 2 && bytes[0] == 0x80 && (2..=5).contains(&bytes[1]) {
        return Some(format!(
            "this is a Python pickle (torch.save with the legacy format); load it into the model in Python, then \
             {HOW_TO_EXPORT}"
        ));
    }
    None
}

/// Loads a TorchScript file, or says what the file is instead and how to export it.
fn load_module<M>(path: &Path, load: impl FnOnce() -> std::result::Result<M, TchError>) -> Result<M> {
    if let Some(what) = std::fs::read(path).ok().and_then(|b| other_torch_format(&b)) {
        return Err(Error::bad_file(path, what));
    }
    load().map_err(|e| {
        Error::bad_file(
            path,
            format!("not a loadable TorchScript module; {HOW_TO_EXPORT}. libtorch says:\n  {}", torch_message(&e)),
        )
    })
}

/// Whether the module's output depends on `edge_index`: its posteriors on the graph against
/// those with no edge at all. A graph-free model (an MLP) or a layer that cached the training
/// adjacency (`GCNConv(cached=True)`, traced) answers the same: edge-level attacks on it measure
/// nothing about the edges the deployment trained on.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EdgeProbe {
    pub edges: usize,
    /// Largest absolute difference of a posterior between the two inputs.
    pub max_abs_difference: f64,
    pub depends_on_edges: bool,
    /// Why the probe could not run (the module refused an empty edge_index); it is then assumed
    /// to depend on the edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Posteriors closer than this are the same (float32 arithmetic of two forward passes).
const SAME_POSTERIOR: f64 = 1e-5;

impl EdgeProbe {
    fn run(
        module: &CModule,
        (path, timeout): (&Path, Duration),
        x: &Tensor,
        ei: &Tensor,
        with_edges: &Tensor,
        output: OutputKind,
    ) -> EdgeProbe {
        let edges = ei.size()[1] as usize;
        let empty = Tensor::zeros([2, 0], (Kind::Int64, Device::Cpu));
        match within(path, timeout, || tch::no_grad(|| module.forward_ts(&[x, &empty]))) {
            Ok(out) if out.size() == with_edges.size() => {
                let diff = (to_posteriors(&out, output) - with_edges).abs().max().double_value(&[]);
                let diff = if diff.is_nan() { f64::INFINITY } else { diff };
                EdgeProbe { edges, max_abs_difference: diff, depends_on_edges: diff > SAME_POSTERIOR, error: None }
            }
            Ok(out) => EdgeProbe {
                edges,
                max_abs_difference: f64::INFINITY,
                depends_on_edges: true,
                error: Some(format!("without edges the output has shape {:?}", out.size())),
            },
            Err(e) => EdgeProbe {
                edges,
                max_abs_difference: f64::INFINITY,
                depends_on_edges: true,
                error: Some(torch_message(&e)),
            },
        }
    }

    /// The warning edge-level rows carry when the output ignores the edges.
    pub fn warning(&self, path: &Path) -> Option<String> {
        (!self.depends_on_edges).then(|| {
            format!(
                "{}: the model's posteriors are the same with the graph's {} edges and with none (max difference \
                 {:.1e}): either it uses no graph (an MLP), or a layer cached the training adjacency \
                 (GCNConv(cached=True) traced: re-export without cached=True). Edge-level attacks on it say nothing \
                 about the training edges, so their rows are inconclusive.",
                path.display(),
                self.edges / 2,
                self.max_abs_difference
            )
        })
    }
}

/// `edge_index` [2, 2|E|] (int64) of an undirected graph: both directions of every edge.
pub fn edge_index(g: &AttackGraph) -> Tensor {
    let (mut src, mut dst) = (Vec::with_capacity(2 * g.edges.len()), Vec::with_capacity(2 * g.edges.len()));
    for &(u, v) in &g.edges {
        src.extend([u as i64, v as i64]);
        dst.extend([v as i64, u as i64]);
    }
    Tensor::stack(&[Tensor::from_slice(&src), Tensor::from_slice(&dst)], 0)
}

/// Posteriors from the module's output.
pub fn to_posteriors(out: &Tensor, kind: OutputKind) -> Tensor {
    match kind {
        OutputKind::Logits => out.softmax(-1, Kind::Float),
        OutputKind::LogProbs => out.to_kind(Kind::Float).exp(),
        OutputKind::Probs => out.to_kind(Kind::Float),
    }
}

/// The training loss of outputs `out` on labels `y` (mean over the rows).
fn loss_of(out: &Tensor, y: &Tensor, kind: OutputKind) -> Tensor {
    match kind {
        OutputKind::Logits => out.cross_entropy_for_logits(y),
        OutputKind::LogProbs => out.nll_loss(y),
        OutputKind::Probs => out.clamp_min(1e-12).log().nll_loss(y),
    }
}

/// Runs one forward of the module at `path` under `timeout`: libtorch cannot stop a forward
/// that loops, so when the deadline passes the process ends with an error naming the file and
/// the limit (see `interrupt::deadline`). Ctrl-C during it exits 130 as anywhere else.
fn within<T>(path: &Path, timeout: Duration, forward: impl FnOnce() -> T) -> T {
    let shown = path.display().to_string();
    let _deadline = crate::interrupt::deadline(timeout, move || {
        format!(
            "{shown}: forward(x, edge_index) did not return within {} s (timeout); raise --timeout (or \
             target.timeout) if the model is this slow, or check the module for a loop that never ends",
            crate::error::num(timeout.as_secs_f64())
        )
    });
    forward()
}

fn run_forward(
    forward: impl Fn() -> std::result::Result<Tensor, TchError>,
    path: &Path,
    x: &Tensor,
    ei: &Tensor,
    timeout: Duration,
) -> Result<Tensor> {
    within(path, timeout, forward).map_err(|e| {
        Error::bad_file(
            path,
            format!(
                "forward(x: Tensor[N, F], edge_index: Tensor[2, E]) failed on the dataset's x {:?} (float32) and \
                 edge_index {:?} (int64): {}",
                x.size(),
                ei.size(),
                torch_message(&e)
            ),
        )
    })
}

/// Checks a forward output: a float [N, C] tensor for the graph's nodes and classes, finite.
fn check_output(path: &Path, out: &Tensor, g: &AttackGraph, kind: OutputKind) -> Result<Tensor> {
    crate::ensure!(
        matches!(out.kind(), Kind::Float | Kind::Double | Kind::Half | Kind::BFloat16),
        Error::bad_file(path, format!("forward returned a {:?} tensor, expected float scores [N, C]", out.kind()))
    );
    let post = to_posteriors(out, kind);
    // Shape and NaN checks on the raw output; probabilities are checked only for `probs`.
    check_posteriors(path, &out.to_kind(Kind::Double).detach(), g.num_nodes, g.num_classes, false)?;
    check_posteriors(path, &post.detach(), g.num_nodes, g.num_classes, true).map_err(|e| match e {
        Error::BadFile { path, message } => Error::BadFile {
            path,
            message: format!(
                "{message} (the module's output is declared {}: --output on the command line, target.output in a \
                 config)",
                output_name(kind)
            ),
        },
        other => other,
    })?;
    Ok(post)
}

fn output_name(kind: OutputKind) -> &'static str {
    match kind {
        OutputKind::Logits => "logits",
        OutputKind::LogProbs => "log-probs",
        OutputKind::Probs => "probs",
    }
}

/// A loaded export and the graph it answers for.
pub struct ScriptTarget {
    pub path: PathBuf,
    module: CModule,
    output: OutputKind,
    /// Longest a forward may take.
    timeout: Duration,
    x: Tensor,
    edge_index: Tensor,
    classes: usize,
    /// Posteriors of every node, computed once (the black box answers from them).
    pub released: Released,
    /// Whether its output depends on `edge_index`.
    pub edge_probe: EdgeProbe,
}

impl ScriptTarget {
    /// Loads the module and runs it once on `g`: a module that cannot be loaded, has another
    /// signature, answers with another shape or with NaN is reported here, naming the file. Every
    /// forward of it must return within `timeout`.
    pub fn load(path: &Path, output: OutputKind, g: &AttackGraph, timeout: Duration) -> Result<Self> {
        let mut module = load_module(path, || CModule::load(path))?;
        module.f_set_eval().map_err(|e| Error::bad_file(path, torch_message(&e)))?;
        let x = g.features.to_kind(Kind::Float);
        let ei = edge_index(g);
        let out = tch::no_grad(|| run_forward(|| module.forward_ts(&[&x, &ei]), path, &x, &ei, timeout))?;
        let post = check_output(path, &out, g, output)?;
        let edge_probe = EdgeProbe::run(&module, (path, timeout), &x, &ei, &post, output);
        Ok(ScriptTarget {
            edge_probe,
            path: path.to_path_buf(),
            module,
            output,
            timeout,
            x,
            edge_index: ei,
            classes: g.num_classes,
            released: Released::new(post),
        })
    }
}

impl WhiteBox for ScriptTarget {
    fn num_classes(&self) -> usize {
        self.classes
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.module.named_parameters().map(|p| p.into_iter().map(|(_, t)| t).collect()).unwrap_or_default()
    }
    /// Only isolated records (an all-zero adjacency smaller than the graph, as class inversion
    /// queries them) pass through `forward(x, edge_index)`: a relaxed adjacency has no edge_index
    /// form, so graph reconstruction falls back to its black-box attack.
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<attacks::Result<Tensor>> {
        let isolated = adj.size()[0] < self.x.size()[0] && adj.abs().sum(Kind::Float).double_value(&[]) == 0.0;
        if !isolated {
            return None;
        }
        let empty = Tensor::zeros([2, 0], (Kind::Int64, Device::Cpu));
        Some(
            within(&self.path, self.timeout, || self.module.forward_ts(&[x, &empty]))
                .map(|out| to_posteriors(&out, self.output))
                .map_err(|e| attacks::Error::Target(format!("{}: {}", self.path.display(), torch_message(&e)))),
        )
    }
    fn forward_features(&self, x: &Tensor) -> attacks::Result<Tensor> {
        let out = within(&self.path, self.timeout, || self.module.forward_ts(&[x, &self.edge_index]))
            .map_err(|e| attacks::Error::Target(format!("{}: {}", self.path.display(), torch_message(&e))))?;
        Ok(to_posteriors(&out, self.output))
    }
}

/// The documented re-initialisation of a shadow copy when no untrained export is given: every
/// parameter of 2 or more dimensions is drawn Glorot-uniform (Kipf & Welling's GCN init; the
/// bound sqrt(6 / (fan_in + fan_out)) is the same for [in, out] and [out, in] layouts), 1-D
/// parameters named `*weight` (normalisation scales) are set to 1 and other 1-D parameters
/// (biases) to 0; scalars are kept.
pub fn reinitialise(vs: &nn::VarStore) {
    let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    tch::no_grad(|| {
        for (name, mut t) in vars {
            let size = t.size();
            match size.len() {
                0 => {}
                1 if name.ends_with("weight") => {
                    let _ = t.fill_(1.0);
                }
                1 => {
                    let _ = t.zero_();
                }
                _ => {
                    let receptive: i64 = size[2..].iter().product();
                    let (fan_out, fan_in) = (size[0] * receptive, size[1] * receptive);
                    let bound = (6.0 / (fan_in + fan_out) as f64).sqrt();
                    let _ = t.uniform_(-bound, bound);
                }
            }
        }
    });
}

/// Trains shadow copies of the export with the declared recipe.
pub struct ScriptOracle {
    pub model: PathBuf,
    pub init: Option<PathBuf>,
    pub output: OutputKind,
    pub recipe: ShadowRecipe,
    /// Longest a forward may take.
    pub timeout: Duration,
    /// The first error of a training run, kept whole (file and exit code) for the caller; the
    /// attacks crate only carries its text.
    pub failure: RefCell<Option<Error>>,
}

/// A trained shadow copy: its posteriors on its graph and its training loss per epoch.
pub struct ShadowRun {
    pub posteriors: Tensor,
    pub losses: Vec<f64>,
}

impl ScriptOracle {
    pub fn new(model: &Path, init: Option<&Path>, output: OutputKind, recipe: ShadowRecipe, timeout: Duration) -> Self {
        ScriptOracle {
            model: model.to_path_buf(),
            init: init.map(Path::to_path_buf),
            output,
            recipe,
            timeout,
            failure: RefCell::new(None),
        }
    }

    /// Loads a fresh copy (from `init`, else the export re-initialised), trains it full-batch on
    /// `split.train` of `g` for the recipe's epochs, and returns its posteriors on `g`.
    pub fn train_copy(&self, g: &AttackGraph, split: &NodeSplit, seed: u64) -> Result<ShadowRun> {
        tch::manual_seed(seed as i64);
        let vs = nn::VarStore::new(Device::Cpu);
        let source = self.init.as_deref().unwrap_or(&self.model);
        let mut module = load_module(source, || TrainableCModule::load(source, vs.root()))?;
        crate::ensure!(
            !vs.trainable_variables().is_empty(),
            Error::bad_file(source, "the module has no trainable parameter (exported with requires_grad=False?)")
        );
        if self.init.is_none() {
            reinitialise(&vs);
        }
        let r = self.recipe;
        let mut opt = match r.optimizer {
            Optimizer::Adam => nn::Adam { wd: r.weight_decay, ..Default::default() }.build(&vs, r.lr)?,
            Optimizer::Adamw => nn::AdamW { wd: r.weight_decay, ..Default::default() }.build(&vs, r.lr)?,
            Optimizer::Sgd => nn::Sgd { wd: r.weight_decay, ..Default::default() }.build(&vs, r.lr)?,
        };
        crate::ensure!(!split.train.is_empty(), Error::invalid("members", "the shadow graph has no training node"));
        let x = g.features.to_kind(Kind::Float);
        let ei = edge_index(g);
        let idx = Tensor::from_slice(&split.train.iter().map(|&v| v as i64).collect::<Vec<_>>());
        let y = Tensor::from_slice(&split.train.iter().map(|&v| g.labels[v] as i64).collect::<Vec<_>>());
        module.f_set_train().map_err(|e| Error::bad_file(source, torch_message(&e)))?;
        let mut losses = Vec::new();
        for _ in 0..r.epochs {
            let out = run_forward(|| module.forward_ts(&[&x, &ei]), source, &x, &ei, self.timeout)?;
            // Before the loss: libtorch aborts on a label past the output's columns.
            let shape = out.size();
            crate::ensure!(
                shape == [g.num_nodes as i64, g.num_classes as i64],
                Error::bad_file(
                    source,
                    format!(
                        "forward returned shape {shape:?}, expected [{}, {}] (the graph's nodes and classes)",
                        g.num_nodes, g.num_classes
                    )
                )
            );
            let loss = loss_of(&out.index_select(0, &idx), &y, self.output);
            let value = loss.double_value(&[]);
            crate::ensure!(
                value.is_finite(),
                Error::bad_file(source, format!("training loss became {value} at epoch {}", losses.len() + 1))
            );
            opt.backward_step(&loss);
            losses.push(value);
        }
        module.f_set_eval().map_err(|e| Error::bad_file(source, torch_message(&e)))?;
        let out = tch::no_grad(|| run_forward(|| module.forward_ts(&[&x, &ei]), source, &x, &ei, self.timeout))?;
        let posteriors = check_output(source, &out, g, self.output)?;
        Ok(ShadowRun { posteriors, losses })
    }
}

impl ShadowOracle for ScriptOracle {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> attacks::Result<Box<dyn BlackBox>> {
        match self.train_copy(graph, split, seed) {
            Ok(run) => Ok(Box::new(Released::new(run.posteriors))),
            Err(e) => {
                let text = e.to_string();
                self.failure.borrow_mut().get_or_insert(e);
                Err(attacks::Error::Target(text))
            }
        }
    }
}
