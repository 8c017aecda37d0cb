//! The main crate's side of the attacks' threat model (was `audit::adapters`): a trained model as
//! a black box, a shadow oracle that trains the target's recipe on whatever graph and split an
//! attack hands it, and the conversions between `Dataset` and the attacks' `AttackGraph`. Used by
//! the audit, `gnnaudit attack`, external targets and the replay.
use crate::data::{Dataset, Features, Graph, Split};
use crate::error::{Error, Result};
use crate::methods::{self, Recipe, TrainedModel};
use crate::privacy::accountant::{Budget, PrivacyUnit};
use gnnaudit_attacks as attacks;
use gnnaudit_attacks::aggregation_canary::AggregationRelease;
use gnnaudit_attacks::{AttackGraph, BlackBox, Claim, ClaimUnit, NodeSplit, ShadowOracle, WhiteBox};
use tch::{Device, Kind, Tensor};

/// Maps an attack error into the crate's error (bad parameters stay exit code 2).
pub fn from_attack(e: attacks::Error) -> Error {
    match e {
        attacks::Error::Invalid { field, message } => Error::invalid(field, message),
        // The attack cannot run against this kind of target: a wrong choice of input (exit 2).
        attacks::Error::Unsupported(m) => Error::invalid("attack", format!("unsupported: {m}")),
        other => Error::Other(other.to_string()),
    }
}

/// The adversary's view of a dataset: nodes, undirected edges, dense features, labels. Its
/// features stay on the CPU, where the attacks compute (see [`CpuWhiteBox`]).
pub fn attack_graph(ds: &Dataset) -> Result<AttackGraph> {
    // Each undirected edge once as (smaller, larger), already in sorted order: the CSR yields
    // (source, row) with rows ascending and sources sorted, so the edges from a larger source
    // come out sorted, and the list's sort is one pass (an edge with no reverse is appended).
    let g = &ds.graph;
    let mut edges: Vec<(usize, usize)> = g.edges().filter(|(u, v)| u > v).map(|(u, v)| (v, u)).collect();
    edges.extend(g.edges().filter(|&(u, v)| u < v && !g.has_edge(v, u)));
    AttackGraph::new(ds.num_nodes(), edges, to_cpu(&ds.features.to_tensor()), ds.labels.clone(), ds.num_classes)
        .map_err(from_attack)
}

pub fn node_split(s: &Split) -> NodeSplit {
    NodeSplit { train: s.train.clone(), val: s.val.clone(), test: s.test.clone() }
}

/// A dataset for training on an attack's graph (shadow graph, canary graph), edges both ways.
pub fn dataset_from(g: &AttackGraph, split: &NodeSplit, name: &str) -> Result<Dataset> {
    let graph = symmetric_graph(g.num_nodes, &g.edges)?;
    let (rows, cols) = (g.num_nodes, g.num_features());
    let data = Vec::<f32>::try_from(&g.features.to_kind(Kind::Float).contiguous().view([-1]))?;
    let ds = Dataset {
        name: name.to_string(),
        graph,
        features: Features::Dense { rows, cols, data },
        labels: g.labels.clone(),
        num_classes: g.num_classes,
        split: Some(Split { train: split.train.clone(), val: split.val.clone(), test: split.test.clone() }),
        class_names: None,
        attr_names: None,
    };
    ds.validate(name)?;
    Ok(ds)
}

/// The symmetric CSR of undirected edges, written in place by counting (a list of both
/// directions, sorted, held 32 bytes per edge beside the graph: the canary audit's peak at scale).
/// Rows are sorted here; duplicates, which an `AttackGraph` never has, are collapsed by
/// `Graph::from_in_csr`.
fn symmetric_graph(n: usize, edges: &[(usize, usize)]) -> Result<Graph> {
    let mut indptr = vec![0usize; n + 1];
    for &(u, v) in edges {
        crate::ensure!(u < n && v < n, Error::invalid("edge", format!("({u}, {v}) is out of range for {n} nodes")));
        indptr[u + 1] += 1;
        indptr[v + 1] += 1;
    }
    for i in 0..n {
        indptr[i + 1] += indptr[i];
    }
    let mut indices = vec![0usize; indptr[n]];
    let mut next = indptr[..n].to_vec();
    for &(u, v) in edges {
        indices[next[v]] = u;
        next[v] += 1;
        indices[next[u]] = v;
        next[u] += 1;
    }
    for v in 0..n {
        indices[indptr[v]..indptr[v + 1]].sort_unstable();
    }
    Graph::from_in_csr(n, indptr, indices)
}

/// A privacy unit in the attacks' terms.
pub fn claim_unit(u: PrivacyUnit) -> ClaimUnit {
    match u {
        PrivacyUnit::None => ClaimUnit::None,
        PrivacyUnit::Edge => ClaimUnit::Edge,
        PrivacyUnit::Node => ClaimUnit::Node,
        PrivacyUnit::Local => ClaimUnit::Local,
        PrivacyUnit::Class => ClaimUnit::Class,
        PrivacyUnit::Subclass => ClaimUnit::Subclass,
    }
}

/// What a trained model claims, in the attacks' terms, from its budget alone (an MLP claims edge
/// epsilon 0: it uses no edge).
pub fn claim_of(budget: &Budget) -> Claim {
    let unit = claim_unit(budget.privacy_unit);
    let eps = budget.claimed_epsilon();
    if unit == ClaimUnit::None || !eps.is_finite() {
        return Claim { unit: ClaimUnit::None, epsilon: None, delta: budget.delta };
    }
    Claim { unit, epsilon: Some(eps), delta: budget.delta }
}

/// Black-box access to a trained model: its posteriors (and embeddings, where the method
/// releases them) for nodes of its training graph, computed once.
pub struct ModelBlackBox {
    posteriors: Tensor,
    embeddings: Option<Tensor>,
    training_embeddings: Option<(Vec<usize>, Tensor)>,
    classes: usize,
}

impl ModelBlackBox {
    /// Copies the model's answers to the CPU once (a GPU model's posteriors are small).
    pub fn new(model: &dyn TrainedModel) -> Self {
        let posteriors = to_cpu(&tch::no_grad(|| model.posteriors()).to_kind(Kind::Float));
        let classes = posteriors.size()[1] as usize;
        let training_embeddings = model.training_embeddings().map(|(ids, e)| (ids, to_cpu(&e)));
        let embeddings = tch::no_grad(|| model.embeddings()).map(|e| to_cpu(&e));
        ModelBlackBox { posteriors, embeddings, training_embeddings, classes }
    }
}

pub fn rows_of(t: &Tensor, nodes: &[usize]) -> attacks::Result<Tensor> {
    let n = t.size()[0] as usize;
    if let Some(&bad) = nodes.iter().find(|&&v| v >= n) {
        return Err(attacks::Error::invalid("node", format!("{bad} is not a node of the target graph ({n} nodes)")));
    }
    Ok(t.index_select(0, &Tensor::from_slice(&nodes.iter().map(|&v| v as i64).collect::<Vec<_>>())))
}

impl BlackBox for ModelBlackBox {
    fn num_classes(&self) -> usize {
        self.classes
    }
    fn posteriors(&self, nodes: &[usize]) -> attacks::Result<Tensor> {
        rows_of(&self.posteriors, nodes)
    }
    fn embeddings(&self, nodes: &[usize]) -> attacks::Result<Option<Tensor>> {
        self.embeddings.as_ref().map(|e| rows_of(e, nodes)).transpose()
    }
    fn training_embeddings(&self) -> attacks::Result<Option<(Vec<usize>, Tensor)>> {
        Ok(self.training_embeddings.as_ref().map(|(ids, e)| (ids.clone(), e.shallow_clone())))
    }
}

/// `t` on the CPU: the same tensor when it is there already, a differentiable copy otherwise.
pub fn to_cpu(t: &Tensor) -> Tensor {
    t.to_device(Device::Cpu)
}

/// A model's white box as the attacks see it, on the CPU whatever the model's device.
///
/// The attacks crate (`attacks/src/*`) builds its index, score and crafted-graph tensors on the
/// CPU, and what crosses the threat-model boundary is small (posteriors of the queried nodes, one
/// crafted graph's aggregations), so the adversary computes there: inputs go to the model's device
/// (read off its parameters) and outputs come back. `to_device` is differentiable, so inversion
/// and graph reconstruction still take their gradients through a GPU model's forward. On the CPU
/// every move is the identity.
pub struct CpuWhiteBox<'a> {
    inner: &'a dyn WhiteBox,
    device: Device,
    aggregation: Option<CpuAggregation<'a>>,
}

struct CpuAggregation<'a> {
    inner: &'a dyn AggregationRelease,
    device: Device,
}

impl<'a> CpuWhiteBox<'a> {
    pub fn new(inner: &'a dyn WhiteBox) -> Self {
        let device = inner.parameters().first().map_or(Device::Cpu, |p| p.device());
        CpuWhiteBox { inner, device, aggregation: inner.aggregation().map(|inner| CpuAggregation { inner, device }) }
    }
    pub fn of(inner: Option<&'a dyn WhiteBox>) -> Option<Self> {
        inner.map(Self::new)
    }
    /// The device the model computes on.
    pub fn device(&self) -> Device {
        self.device
    }
    pub fn as_dyn(this: &'a Option<Self>) -> Option<&'a dyn WhiteBox> {
        this.as_ref().map(|w| w as &dyn WhiteBox)
    }
}

impl WhiteBox for CpuWhiteBox<'_> {
    fn num_classes(&self) -> usize {
        self.inner.num_classes()
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.inner.parameters().iter().map(to_cpu).collect()
    }
    fn forward_features(&self, x: &Tensor) -> attacks::Result<Tensor> {
        Ok(to_cpu(&self.inner.forward_features(&x.to_device(self.device))?))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<attacks::Result<Tensor>> {
        let out = self.inner.forward_dense(&x.to_device(self.device), &adj.to_device(self.device))?;
        Some(out.map(|p| to_cpu(&p)))
    }
    fn aggregation(&self) -> Option<&dyn AggregationRelease> {
        self.aggregation.as_ref().map(|a| a as &dyn AggregationRelease)
    }
}

impl AggregationRelease for CpuAggregation<'_> {
    fn hops(&self) -> usize {
        self.inner.hops()
    }
    fn release(
        &self,
        features: &Tensor,
        edges: &[(usize, usize)],
        seed: u64,
    ) -> attacks::Result<Vec<(Tensor, Tensor)>> {
        let out = self.inner.release(&features.to_device(self.device), edges, seed)?;
        Ok(out.iter().map(|(input, sum)| (to_cpu(input), to_cpu(sum))).collect())
    }
}

/// "Train a fresh model with the target's recipe on this graph and split": the recipe is the
/// target's, with delta pinned to the target's so that shadows carry the same noise calibration
/// rule rather than one derived from the (smaller) shadow graph.
///
/// Shadows that train on the same graph (LiRA's, which differ only in their split) share its
/// dataset: the CSR, the feature copy and the validation do not depend on a shadow's data, and
/// were rebuilt for each of them. The last graph's dataset is kept and reused while the next
/// graph has the same nodes, edges, labels and feature storage.
pub struct RecipeOracle {
    pub recipe: Recipe,
    pub name: String,
    share: bool,
    last: std::cell::RefCell<Option<SharedGraph>>,
    /// Shared by every shadow model: they calibrate the same budget once.
    accounting: crate::train::accounting::Accounting,
    /// The accuracy of the last training run the gradient-canary auditor observed: the target's
    /// own training (the canaries stay out of the optimiser's input), so a one-run audit reports
    /// it instead of training the target a second time.
    observed: std::cell::RefCell<Option<crate::train::Accuracy>>,
}

/// The dataset built for one attack graph, with what identifies that graph. Holding a shallow
/// clone of the features keeps their storage alive, so an equal data pointer is the same storage.
struct SharedGraph {
    edges: Vec<(usize, usize)>,
    labels: Vec<usize>,
    features: Tensor,
    data: Dataset,
}

impl SharedGraph {
    /// `data`, the dataset of `graph`, with what identifies that graph.
    fn of(graph: &AttackGraph, data: Dataset) -> Self {
        SharedGraph {
            edges: graph.edges.clone(),
            labels: graph.labels.clone(),
            features: graph.features.shallow_clone(),
            data,
        }
    }

    fn matches(&self, g: &AttackGraph) -> bool {
        self.data.num_nodes() == g.num_nodes
            && self.features.data_ptr() == g.features.data_ptr()
            && self.features.size() == g.features.size()
            && self.features.stride() == g.features.stride()
            && self.edges == g.edges
            && self.labels == g.labels
    }
}

impl RecipeOracle {
    pub fn new(recipe: &Recipe, target_budget: &Budget, name: &str) -> Self {
        let mut recipe = recipe.clone();
        if recipe.delta.is_none() && target_budget.delta > 0.0 {
            recipe.delta = Some(target_budget.delta);
        }
        RecipeOracle {
            recipe,
            name: name.to_string(),
            share: true,
            last: Default::default(),
            accounting: Default::default(),
            observed: Default::default(),
        }
    }

    /// An oracle for `recipe` on `data` and the target's budget, calibrated through the oracle's
    /// own accounting so that its trainings reuse that calibration.
    ///
    /// `graph` is `data` as the attacks see it: a training on that graph trains on `data` itself,
    /// not on a dataset rebuilt from the graph.
    pub fn with_budget(recipe: &Recipe, data: Dataset, graph: &AttackGraph, seed: u64) -> Result<(Self, Budget)> {
        let accounting = crate::train::accounting::Accounting::default();
        let budget = methods::budget_with(recipe, &data, seed, &accounting)?;
        let oracle = RecipeOracle { accounting, ..RecipeOracle::new(recipe, &budget, &data.name) };
        *oracle.last.borrow_mut() = Some(SharedGraph::of(graph, data));
        Ok((oracle, budget))
    }

    /// Train, validation and test accuracy of the last training the auditor observed with
    /// gradient canaries in it.
    pub fn observed_accuracy(&self) -> Option<crate::train::Accuracy> {
        *self.observed.borrow()
    }

    /// Runs `f` on the dataset of `graph` with `split`: the one built for the last graph when it
    /// is the same graph (shared; only the split is replaced), else one built from `graph`.
    fn on_dataset<T>(
        &self,
        graph: &AttackGraph,
        split: &NodeSplit,
        f: impl FnOnce(&Dataset) -> Result<T>,
    ) -> attacks::Result<T> {
        let mut last = self.last.borrow_mut();
        if self.share && last.as_ref().is_some_and(|l| l.matches(graph)) {
            let shared = last.as_mut().expect("matched");
            check_split(graph.num_nodes, split).map_err(to_attack)?;
            shared.data.split =
                Some(Split { train: split.train.clone(), val: split.val.clone(), test: split.test.clone() });
        } else {
            *last = None;
            let data = dataset_from(graph, split, &self.name).map_err(to_attack)?;
            *last = Some(SharedGraph::of(graph, data));
        }
        let out = f(&last.as_ref().expect("set above").data).map_err(to_attack);
        if !self.share {
            *last = None;
        }
        out
    }

    /// The same oracle rebuilding every shadow's dataset (what it did before sharing; `bench audit
    /// --before` measures the difference).
    pub fn unshared(mut self) -> Self {
        self.share = false;
        self
    }
}

impl ShadowOracle for RecipeOracle {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> attacks::Result<Box<dyn BlackBox>> {
        self.on_dataset(graph, split, |data| {
            let run = methods::train_with(&self.recipe, data, seed, &self.accounting)?;
            Ok(Box::new(ModelBlackBox::new(run.model.as_ref())) as Box<dyn BlackBox>)
        })
    }
    fn train_with_units(
        &self,
        graph: &AttackGraph,
        split: &NodeSplit,
        units: &[Vec<usize>],
        seed: u64,
    ) -> attacks::Result<Box<dyn BlackBox>> {
        if crate::methods::class_dp::group_unit(self.recipe.method).is_none() {
            return self.train(graph, split, seed);
        }
        let ds = dataset_from(graph, split, &self.name).map_err(|e| attacks::Error::Target(e.to_string()))?;
        let run = crate::methods::class_dp::train_with_units(&self.recipe, &ds, units, seed)
            .map_err(|e| attacks::Error::Target(e.to_string()))?;
        Ok(Box::new(ModelBlackBox::new(run.model.as_ref())))
    }
    fn train_with_gradient_canaries(
        &self,
        graph: &AttackGraph,
        split: &NodeSplit,
        plan: &attacks::GradientCanaryPlan,
        seed: u64,
    ) -> attacks::Result<attacks::GradientCanaryReadings> {
        let (read, accuracy) = self
            .on_dataset(graph, split, |data| gradient_canary_run(&self.recipe, data, plan, seed, &self.accounting))?;
        *self.observed.borrow_mut() = Some(accuracy);
        Ok(read)
    }
}

/// Bad input stays bad input (exit 2) through the attacks crate; anything else is the target's.
fn to_attack(e: Error) -> attacks::Error {
    match e {
        Error::InvalidParam { field, message } => attacks::Error::Invalid { field, message },
        e => attacks::Error::Target(e.to_string()),
    }
}

/// Trains `recipe` on `data` with the gradient canaries of `plan` in every DP-SGD step, and the
/// claim they are judged against: the DP-SGD part of the method's accountant event at its delta.
/// A recipe whose event has no DP-SGD part is refused before any training, naming the method.
/// Also returns the accuracy of that training, which the canaries leave as it would be untouched.
pub fn gradient_canary_run(
    recipe: &Recipe,
    data: &Dataset,
    plan: &attacks::GradientCanaryPlan,
    seed: u64,
    acct: &crate::train::accounting::Accounting,
) -> Result<(attacks::GradientCanaryReadings, crate::train::Accuracy)> {
    use crate::privacy::dpsgd::canary::{observe, CanaryLayout, CanaryPlan, CanarySites, NodeGroup};
    use crate::privacy::dpsgd::canary_plan::CountPlanning;
    let method = recipe.method.name();
    let total = (recipe.method.spec().budget)(recipe, data, seed, acct)?;
    let part = total.event.as_ref().and_then(|e| e.dp_sgd_part()).ok_or_else(|| {
        Error::invalid(
            "method",
            format!(
                "{method} runs no DP-SGD at this privacy level (its accountant has no DP-SGD step), so the \
                 canary-gradient attack has nothing to plant canaries in; audit a method trained with DP-SGD \
                 (dp-mlp, gap-ndp, progap-ndp, dpgnn, class-dp-mlp, subclass-dp-mlp)"
            ),
        )
    })?;
    // A method that is all DP-SGD (DP-MLP) claims the component already: not accounted twice.
    let component = if total.event.as_ref() == Some(&part) {
        total.clone()
    } else {
        crate::privacy::accountant::budget(&part, total.privacy_unit, None, total.delta, vec![])?
    };
    let sites = match plan.sites {
        attacks::GradientCanarySites::All => CanarySites::All,
        attacks::GradientCanarySites::Biases => CanarySites::Biases,
    };
    // A node-level claim (DP-GNN's event) is audited with canaries that enter as nodes do.
    let node_group = part.node_level_step().map(|(population, terms, batch)| NodeGroup { population, terms, batch });
    let canaries =
        CanaryPlan {
            included: plan.included.clone(),
            sites,
            raw_norm: plan.raw_norm,
            seed: plan.seed,
            noise_off: plan.noise_off,
            layout: match plan.layout {
                attacks::GradientCanaryLayout::Auto => CanaryLayout::Auto,
                attacks::GradientCanaryLayout::Coded => CanaryLayout::Coded,
                attacks::GradientCanaryLayout::Phases => CanaryLayout::Phases,
            },
            // Planned against the component's claim at the method's delta, for the gdp bound at 95%.
            planning: {
                let epsilon = component.claimed_epsilon();
                (plan.choose_count && epsilon.is_finite() && epsilon > 0.0 && total.delta > 0.0)
                    .then_some(CountPlanning { epsilon, delta: total.delta, confidence: 0.95 })
            },
            node_group,
        };
    let (run, read) = observe(canaries, || methods::train_with(recipe, data, seed, acct))?;
    let mut claim = claim_of(&component);
    claim.unit = claim_of(&total).unit;
    let readings = attacks::GradientCanaryReadings {
        scores: read.scores,
        stages: read.stages,
        steps: read.steps,
        period: read.period,
        sharing: read.sharing,
        unscored_steps: read.unscored_steps,
        fewest_coordinates: read.fewest_coordinates,
        canaries: read.canaries,
        layout: read.layout.to_string(),
        count_reason: read.count_reason,
        count_predictions: read.predictions.iter().map(|p| (p.canaries, p.mu, p.eps_lb)).collect(),
        sampled: read.sampled,
        component: claim,
        component_event: part.normalized().to_string(),
        training_seconds: run.seconds,
        node_terms: node_group.map(|g| g.terms),
    };
    Ok((readings, run.accuracy))
}

/// The split part of `Dataset::validate`: indices in range, none in two parts or twice.
fn check_split(n: usize, s: &NodeSplit) -> Result<()> {
    let mut seen = vec![false; n];
    for &i in s.train.iter().chain(&s.val).chain(&s.test) {
        crate::ensure!(
            i < n && !std::mem::replace(&mut seen[i], true),
            Error::invalid("split", format!("index {i} is out of range for {n} nodes or repeated"))
        );
    }
    Ok(())
}

/// Carves a sensitive attribute out of one-hot feature blocks named `{prefix}=...` in
/// `attr_names` (Facebook100: `gender=1`, `gender=2`, ...): returns the dataset without those
/// columns and each node's value (index of the block's set column; the block's width if none).
pub fn carve_attribute(ds: &Dataset, prefix: &str) -> Result<(Dataset, Vec<usize>, Vec<String>)> {
    let names = ds
        .attr_names
        .as_ref()
        .ok_or_else(|| Error::invalid("sensitive", format!("dataset '{}' has no attr_names", ds.name)))?;
    let key = format!("{prefix}=");
    let block: Vec<usize> = names.iter().enumerate().filter(|(_, n)| n.starts_with(&key)).map(|(i, _)| i).collect();
    crate::ensure!(
        !block.is_empty(),
        Error::invalid("sensitive", format!("no feature column of '{}' is named '{key}...'", ds.name))
    );
    let (rows, cols) = (ds.features.rows(), ds.features.cols());
    let dense = ds.features.to_dense();
    let keep: Vec<usize> = (0..cols).filter(|c| !block.contains(c)).collect();
    let mut data = Vec::with_capacity(rows * keep.len());
    let mut values = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &dense[r * cols..(r + 1) * cols];
        values.push(block.iter().position(|&c| row[c] > 0.0).unwrap_or(block.len()));
        data.extend(keep.iter().map(|&c| row[c]));
    }
    let mut out = ds.clone();
    out.features = Features::Dense { rows, cols: keep.len(), data };
    out.attr_names = Some(keep.iter().map(|&c| names[c].clone()).collect());
    let value_names = block.iter().map(|&c| names[c].clone()).chain([format!("{prefix}=(none)")]).collect();
    Ok((out, values, value_names))
}

/// Refuses a run whose model outputs are not all finite: a diverged optimiser (e.g. --lr 1e300)
/// otherwise reports a chance-level accuracy as if it were a result.
pub fn ensure_converged(run: &methods::TrainedRun, recipe: &Recipe) -> Result<()> {
    let post = run.model.posteriors();
    let finite = post.f_isfinite()?.f_all()?.f_int64_value(&[])? == 1;
    crate::ensure!(
        finite,
        Error::invalid(
            "lr",
            format!(
                "training {} diverged (its outputs are NaN or infinite); lower --lr (was {})",
                recipe.method.name(),
                crate::error::num(recipe.train.lr)
            )
        )
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Dataset {
        // 3 nodes, features [a, gender=1, gender=2, b]; node 2 has no gender.
        let data = vec![1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0];
        Dataset {
            name: "tiny".into(),
            graph: Graph::from_edges(3, [(0, 1), (1, 0), (1, 2), (2, 1)]).unwrap(),
            features: Features::Dense { rows: 3, cols: 4, data },
            labels: vec![0, 1, 0],
            num_classes: 2,
            split: Some(Split { train: vec![0], val: vec![1], test: vec![2] }),
            class_names: None,
            attr_names: Some(vec!["a".into(), "gender=1".into(), "gender=2".into(), "b".into()]),
        }
    }

    /// A linear white box with an aggregation, to check what the CPU view hands the attacks.
    struct Linear {
        w: Tensor,
    }
    impl WhiteBox for Linear {
        fn num_classes(&self) -> usize {
            self.w.size()[1] as usize
        }
        fn parameters(&self) -> Vec<Tensor> {
            vec![self.w.shallow_clone()]
        }
        fn forward_features(&self, x: &Tensor) -> attacks::Result<Tensor> {
            Ok(x.mm(&self.w).softmax(-1, Kind::Float))
        }
        fn aggregation(&self) -> Option<&dyn AggregationRelease> {
            Some(self)
        }
    }
    impl AggregationRelease for Linear {
        fn hops(&self) -> usize {
            3
        }
        fn release(&self, x: &Tensor, _: &[(usize, usize)], _: u64) -> attacks::Result<Vec<(Tensor, Tensor)>> {
            Ok(vec![(x.shallow_clone(), x.mm(&self.w))])
        }
    }

    /// The CPU view answers as the model does and keeps the forward differentiable (inversion and
    /// reconstruction take gradients through it); it passes the aggregation release through and
    /// says where there is none.
    #[test]
    fn cpu_white_box_answers_as_the_model_and_keeps_gradients() {
        tch::manual_seed(3);
        let inner = Linear { w: Tensor::randn([4, 3], (Kind::Float, Device::Cpu)) };
        let view = CpuWhiteBox::new(&inner);
        assert_eq!(view.device(), Device::Cpu);
        assert_eq!(view.num_classes(), 3);
        let x = Tensor::randn([5, 4], (Kind::Float, Device::Cpu)).set_requires_grad(true);
        let got = view.forward_features(&x).unwrap();
        let want = inner.forward_features(&x).unwrap();
        assert_eq!(got.device(), Device::Cpu);
        assert!(got.allclose(&want, 0.0, 0.0, false));
        got.select(1, 0).sum(Kind::Float).backward();
        let grad = x.grad();
        assert!(grad.defined() && grad.abs().sum(Kind::Float).double_value(&[]) > 0.0, "no gradient reached x");
        assert!(view.forward_dense(&x, &Tensor::eye(5, (Kind::Float, Device::Cpu))).is_none());
        let agg = view.aggregation().expect("passed through");
        assert_eq!(agg.hops(), 3);
        let out = agg.release(&x.detach(), &[], 0).unwrap();
        assert!(out[0].1.allclose(&x.detach().mm(&inner.w), 0.0, 0.0, false));
        let none = CpuWhiteBox::of(None);
        assert!(CpuWhiteBox::as_dyn(&none).is_none());
    }

    #[test]
    fn carving_removes_the_block_and_returns_its_values() {
        let (ds, values, names) = carve_attribute(&tiny(), "gender").unwrap();
        assert_eq!(values, vec![0, 1, 2]);
        assert_eq!(names, vec!["gender=1", "gender=2", "gender=(none)"]);
        assert_eq!(ds.features.cols(), 2);
        assert_eq!(ds.features.to_dense(), vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0]);
        assert!(matches!(carve_attribute(&tiny(), "age"), Err(Error::InvalidParam { .. })));
    }

    #[test]
    fn symmetric_graph_equals_the_graph_of_both_directions() {
        let edges = vec![(0, 3), (1, 2), (0, 1), (2, 4), (3, 4), (1, 4), (0, 3)];
        let both = Graph::from_edges(6, edges.iter().flat_map(|&(u, v)| [(u, v), (v, u)])).unwrap();
        assert_eq!(symmetric_graph(6, &edges).unwrap(), both);
        assert!(symmetric_graph(3, &[(0, 5)]).is_err());
    }

    #[test]
    fn attack_graph_round_trips_to_a_dataset() {
        let ds = tiny();
        let g = attack_graph(&ds).unwrap();
        assert_eq!(g.edges, vec![(0, 1), (1, 2)]);
        let back = dataset_from(&g, &node_split(ds.split().unwrap()), "tiny").unwrap();
        assert_eq!(back.graph, ds.graph);
        assert_eq!(back.features.to_dense(), ds.features.to_dense());
        assert_eq!(back.labels, ds.labels);
    }

    /// Every undirected edge once, sorted, whichever way it is stored: both ways, one way in
    /// either direction, or as a self-loop (dropped).
    #[test]
    fn attack_graph_lists_each_undirected_edge_once_in_order() {
        let stored = [(0, 3), (3, 0), (2, 1), (1, 4), (4, 4), (3, 2), (2, 3), (0, 1)];
        let ds = Dataset { graph: Graph::from_edges(5, stored).unwrap(), ..tiny_of(5) };
        let g = attack_graph(&ds).unwrap();
        assert_eq!(g.edges, vec![(0, 1), (0, 3), (1, 2), (1, 4), (2, 3)]);
    }

    fn tiny_of(n: usize) -> Dataset {
        Dataset {
            name: "tiny".into(),
            graph: Graph::from_edges(n, []).unwrap(),
            features: Features::Dense { rows: n, cols: 1, data: vec![1.0; n] },
            labels: vec![0; n],
            num_classes: 1,
            split: None,
            class_names: None,
            attr_names: None,
        }
    }
}
