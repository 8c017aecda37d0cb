//! White-box access (threat model): every trained model as `gnnaudit_attacks::WhiteBox`,
//! i.e. its parameters and its posteriors as a differentiable function of the node features
//! (graph fixed to the training graph) and of a dense relaxed adjacency in [0, 1]. Model
//! inversion (Zhang ch.4 Algorithm 4) and GraphMI-style graph reconstruction take gradients
//! through these forwards.
//!
//! What "the model's forward" is, per method, for an adversary who holds the parameters and the
//! architecture (evaluation mode everywhere: no dropout, batch norm on its running statistics):
//! - MLP / DP-MLP: the MLP on the features. Its output does not depend on the graph, so the dense
//!   form ignores the adjacency (a constant function of A, which is exactly what the model is).
//! - GCN / GAT / GraphSAGE / SAGE-EDP: the network on the graph it was trained on (for SAGE-EDP the
//!   randomized-response graph, the only graph that model ever saw). Dense forms: GCN with
//!   D^-1/2 (A + I) D^-1/2; GraphSAGE with A (sum) or A / max(rowsum, 1) (mean), self loops
//!   dropped as in `sage::aggregation_matrix`; GAT with attention masked and weighted by A + I.
//! - GAP (inf / EDP / NDP): the deployed model answers from cached *noisy* aggregations, but the
//!   noise realisation is not a parameter, so the white-box forward recomputes encoder ->
//!   row-normalise -> K hops of A^T aggregation and row-normalisation (thesis Algorithm 5 with
//!   sigma = 0) -> classification module. NDP models aggregate over their degree-bounded graph.
//! - ProGAP (inf / EDP / NDP): likewise, stage by stage: base_s, row-normalise, A^T (NAP, Eq. 5.8,
//!   without noise), up to the last stage's jumping-knowledge head.
//! - DP-GNN: pre-MLP, row-normalise, sum over in-neighbours of the degree-bounded graph divided by
//!   D, SAGE layer, post-MLP, without the test-time Gaussian release.
//! - LPGNN: the features are what the server receives (multi-bit rectified estimates, or min-max
//!   scaled raw features at eps_x = inf); its forward is KProp (K_x steps of the GCN aggregator
//!   without self loops, thesis eq. 3.40) followed by the backbone. The dense form runs KProp on
//!   the relaxed adjacency too.
//!
//! All dense forms read `adj` with rows = targets (entry (v, u) weights u -> v), like the sparse
//! operators, and reproduce the model's own posteriors on the training graph's dense adjacency.
use super::backbone::{FullBatchModel, Network};
use crate::methods::decoupled::{GapModel, MlpModel, ProgapModel};
use crate::models::sage::Aggregation;
use crate::models::{row_normalize, Fwd};
use gnnaudit_attacks::{Result as AttackResult, WhiteBox};
use tch::{Kind, Tensor};

fn ok_softmax(logits: Tensor) -> AttackResult<Tensor> {
    Ok(logits.softmax(-1, Kind::Float))
}

fn float(x: &Tensor) -> Tensor {
    x.to_kind(Kind::Float)
}

/// `adj` with its diagonal zeroed (the layers that drop self loops: SAGE, GAT, GCN, KProp).
pub fn without_self_loops(adj: &Tensor) -> Tensor {
    let n = adj.size()[0];
    float(adj) * (1.0 - Tensor::eye(n, (Kind::Float, adj.device())))
}

/// Dense form of `sage::aggregation_matrix`: A (sum) or A / max(rowsum, 1) (mean), no self loops.
pub fn sage_aggregation_dense(adj: &Tensor, aggregation: Aggregation) -> Tensor {
    let a = without_self_loops(adj);
    match aggregation {
        Aggregation::Sum => a,
        Aggregation::Mean => {
            let deg = a.sum_dim_intlist([1i64].as_slice(), true, Kind::Float).clamp_min(1.0);
            a / deg
        }
    }
}

/// Dense form of `gcn_normalized(_, false)` (LPGNN's KProp aggregator, thesis eq. 3.40):
/// D_in^-1/2 A D_out^-1/2 without self loops; rows and columns of degree zero stay zero.
pub fn kprop_operator_dense(adj: &Tensor) -> Tensor {
    let a = without_self_loops(adj);
    let din = a.sum_dim_intlist([1i64].as_slice(), true, Kind::Float).clamp_min(1e-12).rsqrt();
    let dout = a.sum_dim_intlist([0i64].as_slice(), true, Kind::Float).clamp_min(1e-12).rsqrt();
    din * a * dout
}

/// `steps` applications of `op` to `x`, computed on the narrowest side: when the consumer only
/// reads `x M` for a known `M` [d, m] with m < d (the first layer's input weights), propagate
/// `x M` and lift back with the pseudo-inverse, `h = op^K (x M) M^+`, so that `h M = op^K x M`
/// exactly (M has full column rank) at cost O(n^2 m) per step instead of O(n^2 d).
fn propagate(op: &Tensor, x: &Tensor, steps: usize, reads: Option<&Tensor>) -> Tensor {
    match reads {
        Some(m) if m.size()[1] < x.size()[1] && steps > 0 => {
            let mut y = x.matmul(m);
            for _ in 0..steps {
                y = op.matmul(&y);
            }
            y.matmul(&m.linalg_pinv(1e-7, false))
        }
        _ => {
            let mut h = x.shallow_clone();
            for _ in 0..steps {
                h = op.matmul(&h);
            }
            h
        }
    }
}

/// `row_normalize` with a gradient defined at zero rows: an isolated node (as model inversion
/// queries it) aggregates a zero row, where d||x||/dx is 0/0; 1e-24 under the root keeps it finite
/// and changes no value beyond float precision.
fn smooth_row_normalize(x: &Tensor) -> Tensor {
    let norm = (x.square().sum_dim_intlist([-1i64].as_slice(), true, Kind::Float) + 1e-24).sqrt().clamp_min(1e-12);
    x / norm
}

// ---------------------------------------------------------------- MLP / DP-MLP

/// The MLP: features only; `forward_dense` ignores the adjacency (the model's function of
/// (X, A) is constant in A), so inversion runs and graph reconstruction finds no gradient in A.
impl WhiteBox for MlpModel {
    fn num_classes(&self) -> usize {
        self.net.mlp.layers.last().expect("the MLP has layers").ws.size()[0] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.ps.params.iter().map(|p| p.shallow_clone()).collect()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        ok_softmax(self.net.logits_of(&float(x)))
    }
    fn forward_dense(&self, x: &Tensor, _adj: &Tensor) -> Option<AttackResult<Tensor>> {
        Some(self.forward_features(x))
    }
}

// ---------------------------------------------------------------- GAP

impl GapModel {
    /// Noise-free GAP forward with aggregation operator `adj` (sparse or dense, rows = targets):
    /// encoder, PMA with sigma = 0 (Algorithm 5), classification module (Eq. 4.10-4.12).
    pub fn logits_noise_free(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        let mut f = Fwd::eval();
        let mut hops = vec![smooth_row_normalize(&self.encoder.mlp.forward(&float(x), &mut f))];
        for k in 0..self.hops {
            let next = smooth_row_normalize(&adj.matmul(&hops[k]));
            hops.push(next);
        }
        self.classifier.forward(&hops, &mut f)
    }
}

fn training_graph_operator(graph: Option<&crate::data::Graph>, what: &str) -> AttackResult<Tensor> {
    graph.map(|g| g.aggregation_tensor()).ok_or_else(|| {
        gnnaudit_attacks::Error::Unsupported(format!(
            "this {what} checkpoint does not hold its training graph; attach the dataset first"
        ))
    })
}

impl WhiteBox for GapModel {
    fn num_classes(&self) -> usize {
        self.encoder.head.ws.size()[0] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.ps.params.iter().map(|p| p.shallow_clone()).collect()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        let adj = training_graph_operator(self.graph.as_ref(), "GAP")?;
        ok_softmax(self.logits_noise_free(x, &adj))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        Some(ok_softmax(self.logits_noise_free(x, &float(adj))))
    }
    fn aggregation(&self) -> Option<&dyn gnnaudit_attacks::aggregation_canary::AggregationRelease> {
        Some(self)
    }
}

// ---------------------------------------------------------------- ProGAP

impl ProgapModel {
    /// Noise-free ProGAP forward (Algorithm 9 with NAP at sigma = 0): stage inputs
    /// X_{s+1} = A^T normalize(base_s(X_s)), then the last stage's head over all base outputs.
    pub fn logits_noise_free(&self, x: &Tensor, adj: &Tensor) -> Tensor {
        let mut f = Fwd::eval();
        let depth = self.net.depth();
        let mut inputs = vec![float(x)];
        for s in 0..depth {
            let e = self.net.bases[s].forward(&inputs[s], &mut f);
            inputs.push(adj.matmul(&row_normalize(&e)));
        }
        self.net.forward(&inputs, depth, &mut f).0
    }
}

impl WhiteBox for ProgapModel {
    fn num_classes(&self) -> usize {
        self.net.heads[0].layers.last().expect("heads have layers").ws.size()[0] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.ps.params.iter().map(|p| p.shallow_clone()).collect()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        let adj = training_graph_operator(self.graph.as_ref(), "ProGAP")?;
        ok_softmax(self.logits_noise_free(x, &adj))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        Some(ok_softmax(self.logits_noise_free(x, &float(adj))))
    }
    fn aggregation(&self) -> Option<&dyn gnnaudit_attacks::aggregation_canary::AggregationRelease> {
        Some(self)
    }
}

// ---------------------------------------------------------------- GCN / GAT / GraphSAGE baselines

/// The full-batch baselines (GCN, GAT, GraphSAGE, SAGE-EDP) on the graph they were trained on.
impl WhiteBox for FullBatchModel {
    fn num_classes(&self) -> usize {
        self.posteriors_cache.size()[1] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.vs.trainable_variables()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        ok_softmax(self.net.forward_t(&float(x), &self.tensors, false))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        let x = float(x);
        let logits = match &self.net {
            Network::Sage(n) => n.forward_t(&x, &sage_aggregation_dense(adj, n.config().aggregation), false),
            Network::TwoLayer(n) => n.forward_dense(&x, adj),
        };
        Some(ok_softmax(logits))
    }
}

// ---------------------------------------------------------------- DP-GNN

impl WhiteBox for super::dpgnn::DpgnnModel {
    fn num_classes(&self) -> usize {
        crate::methods::TrainedModel::posteriors(self).size()[1] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.parameter_tensors()
    }
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        ok_softmax(self.logits_noise_free(&float(x), self.aggregation()))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        Some(ok_softmax(self.logits_noise_free(&float(x), &float(adj))))
    }
}

// ---------------------------------------------------------------- LPGNN

impl WhiteBox for super::lpgnn::LpgnnModel {
    fn num_classes(&self) -> usize {
        crate::methods::TrainedModel::posteriors(self).size()[1] as usize
    }
    fn parameters(&self) -> Vec<Tensor> {
        self.vs.trainable_variables()
    }
    /// `x`: the features as the server receives them (before KProp).
    fn forward_features(&self, x: &Tensor) -> AttackResult<Tensor> {
        ok_softmax(self.gnn.forward_t(&self.kprop.forward(&float(x)), &self.tensors, false))
    }
    fn forward_dense(&self, x: &Tensor, adj: &Tensor) -> Option<AttackResult<Tensor>> {
        let op = kprop_operator_dense(adj);
        let reads = self.gnn.input_weights();
        let h = propagate(&op, &float(x), self.kprop.steps(), Some(&reads));
        Some(ok_softmax(self.gnn.forward_dense(&h, adj)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::split::{random_split, SplitRatios};
    use crate::data::{Csbm, Dataset};
    use crate::methods::{train, Method, Recipe};

    fn small_graph() -> Dataset {
        let data = Csbm { nodes: 240, features: 64, ..Default::default() }.generate().unwrap();
        random_split(&data, SplitRatios::new(0.5, 0.25, 0.25).unwrap(), 0).unwrap()
    }

    fn max_gap(a: &Tensor, b: &Tensor) -> f64 {
        (a - b).abs().max().double_value(&[])
    }

    /// Every method's white box reproduces its own posteriors in eval mode: the sparse
    /// `forward_features` and the dense `forward_dense` on the training graph's adjacency. Noisy
    /// methods are compared with their noise-free path (GAP/ProGAP inf; LPGNN at eps_x = inf; the
    /// rest at a huge epsilon, where the cached noise is negligible), and gradients reach A.
    #[test]
    fn white_box_forwards_reproduce_each_models_posteriors() {
        let data = small_graph();
        let x = data.features.to_tensor().to_kind(Kind::Float);
        let dense = data.graph.aggregation_tensor().to_dense(None, false);
        let mut lp = Recipe::new(Method::Lpgnn, None);
        lp.epsilon_x = f64::INFINITY;
        lp.epsilon_y = f64::INFINITY;
        lp.features = crate::methods::lpgnn::FeatureMode::Raw;
        lp.kx = 2; // 64 features > 32 projections: exercises the pseudo-inverse shortcut of `propagate`
        let x_lp = crate::privacy::mechanisms::multibit::min_max_scale(&data.features.to_tensor());
        let mut dpgnn = Recipe::new(Method::Dpgnn, Some(1e6));
        dpgnn.batch_size = Some(64);
        // A degree bound above every degree of the test graph, so that the dense adjacency fed
        // below is the graph DP-GNN trained on (its default K = 4 would sample neighbours).
        dpgnn.max_degree = 100;
        let mut layerwise = Recipe::new(Method::ProgapInf, None);
        layerwise.layerwise = true;
        // (recipe, tolerance, compare with posteriors_on instead of the cached posteriors). The
        // private variants without an epsilon are the same models built with sigma = 0.
        let exact = 1e-5;
        let cases: Vec<(Recipe, f64, bool)> = vec![
            (Recipe::new(Method::Mlp, None), exact, false),
            (Recipe::new(Method::DpMlp, None), exact, false),
            (Recipe::new(Method::Sage, None), exact, false),
            (Recipe::new(Method::SageEdp, None), exact, false),
            (Recipe::new(Method::Gcn, None), exact, false),
            (Recipe::new(Method::Gat, None), exact, false),
            (Recipe::new(Method::GapInf, None), exact, false),
            (Recipe::new(Method::GapEdp, None), exact, false),
            (Recipe::new(Method::GapNdp, None), exact, false),
            (layerwise, exact, false),
            // Progressive training caches stage s's input with base s-1 as it was when stage s
            // began; the white box (like inductive inference) uses the final parameters.
            (Recipe::new(Method::ProgapInf, None), exact, true),
            (Recipe::new(Method::ProgapEdp, None), exact, true),
            (Recipe::new(Method::ProgapNdp, None), exact, true),
            (lp, exact, false),
            // DP-GNN needs an epsilon: its cached posteriors carry the test-time Gaussian release of
            // std noise_scale sqrt(D); the noise-free forward must lie within a fraction of it.
            (dpgnn, f64::NAN, false),
        ];
        for (mut recipe, tol, inductive) in cases {
            recipe.epochs = Some(5);
            let run = train(&recipe, &data, 1).unwrap();
            let name = recipe.method.name();
            let tol = if tol.is_nan() {
                let scale = run.budget.noise.iter().find(|(k, _)| k == "inference_noise_scale").expect("noise scale").1;
                0.5 * scale * (recipe.max_degree as f64).sqrt()
            } else {
                tol
            };
            let wb = run.model.white_box().unwrap_or_else(|| panic!("{name} has no white box"));
            let feed = if recipe.method == Method::Lpgnn { &x_lp } else { &x };
            let want = if inductive { run.model.posteriors_on(&data).unwrap() } else { run.model.posteriors() };
            assert_eq!(wb.num_classes(), want.size()[1] as usize, "{name}");
            assert!(!wb.parameters().is_empty(), "{name}");
            let sparse = wb.forward_features(feed).unwrap();
            assert!(max_gap(&sparse, &want) < tol, "{name}: forward_features off by {}", max_gap(&sparse, &want));
            let adj = dense.copy().set_requires_grad(true);
            let d = wb.forward_dense(feed, &adj).expect("dense form").unwrap();
            assert!(max_gap(&d, &want) < tol, "{name}: forward_dense off by {}", max_gap(&d, &want));
            d.select(1, 0).sum(Kind::Float).backward();
            let grad = adj.grad();
            let reaches = grad.defined() && grad.abs().sum(Kind::Float).double_value(&[]) > 0.0;
            assert_eq!(reaches, !matches!(recipe.method, Method::Mlp | Method::DpMlp), "{name}: gradient in A");
            // Model inversion queries one isolated node: its input gradient must be finite.
            let one = feed.narrow(0, 0, 1).copy().set_requires_grad(true);
            let zero = Tensor::zeros([1, 1], (Kind::Float, tch::Device::Cpu));
            wb.forward_dense(&one, &zero).unwrap().unwrap().select(1, 0).sum(Kind::Float).backward();
            let g = one.grad();
            assert!(!g.defined() || bool::try_from(g.isfinite().all()).unwrap(), "{name}: NaN input gradient");
        }
    }
}
