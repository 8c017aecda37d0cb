//! Grey-box access to DP-GNN's pre-noise releases, for `crate::replay`: the clipped per-sample
//! gradient sum of one DP-SGD step (per node, or per subgraph row for `dpgnn-rowclip`) and the
//! test-time aggregation, each computed by the same code the training run uses, on any graph.
use super::{neighbour_table, rowclip, DpgnnConfig, Net};
use crate::data::{Dataset, Graph, Split};
use crate::models::{row_normalize, Fwd, ParamStore};
use tch::{Kind, Reduction, Tensor};

/// A DP-GNN network at its seeded initialisation with the run's features and labels, in float64
/// (float32 rounding over thousands of summed terms would blur a 1e-6 tolerance). A sensitivity
/// bound must hold at every parameter value, so the initial ones are as good a test point as
/// trained ones, and far cheaper.
pub struct DpgnnProbe {
    _ps: ParamStore,
    net: Net,
    x: Tensor,
    y: Tensor,
    cfg: DpgnnConfig,
}

impl DpgnnProbe {
    pub fn new(data: &Dataset, cfg: &DpgnnConfig, seed: u64) -> Self {
        tch::manual_seed(seed as i64);
        let x = data.features.to_tensor().to_kind(Kind::Double);
        let mut ps = ParamStore::new();
        let net = Net::new(&mut ps, x.size()[1], data.num_classes as i64, cfg);
        ps.vs.double();
        DpgnnProbe { _ps: ps, net, x, y: data.label_tensor(), cfg: cfg.clone() }
    }

    pub fn config(&self) -> &DpgnnConfig {
        &self.cfg
    }

    /// The clipped per-sample gradient sum of one step on `batch` over `graph` (the sampled
    /// graph), before noise, flattened over the parameters in id order.
    pub fn clipped_gradient_sum(&self, graph: &Graph, batch: &[usize]) -> Tensor {
        let d = self.cfg.max_degree;
        let (table, mask) = neighbour_table(graph, d);
        let b = Split::index_tensor(batch);
        let mut f = Fwd::train_taped();
        let loss_sum = if self.cfg.row_clipping {
            rowclip::subgraph_loss(&self.net, &self.x, &self.y, (&table, &mask), &b, 0.0, &mut f)
        } else {
            let m = b.size()[0];
            let rows = Tensor::cat(&[b.unsqueeze(1), table.index_select(0, &b)], 1);
            let ones = Tensor::ones([m, 1], (Kind::Double, crate::device::current()));
            let row_mask = Tensor::cat(&[ones, mask.index_select(0, &b)], 1);
            let logits = self.net.forward_batch(&self.x, &rows, &row_mask, 0.0, &mut f);
            crate::models::log_softmax_rows(&logits).g_nll_loss::<Tensor>(
                &self.y.index_select(0, &b),
                None,
                Reduction::Sum,
                -100,
            )
        };
        let tape = f.tape.take().expect("taped forward");
        let (mut grads, _) = tape.clipped_sum(&loss_sum, self.cfg.max_grad_norm);
        grads.sort_by_key(|(id, _)| *id);
        tch::no_grad(|| Tensor::cat(&grads.iter().map(|(_, g)| g.flatten(0, -1)).collect::<Vec<_>>(), 0))
    }

    /// The test-time aggregation over `graph` before its Gaussian noise: each node's sum of its
    /// in-neighbours' normalised pre-processed rows, [N, hidden].
    pub fn aggregation(&self, graph: &Graph) -> Tensor {
        tch::no_grad(|| {
            let h = row_normalize(&self.net.pre.forward(&self.x, &mut Fwd::eval()));
            graph.aggregation_tensor().to_kind(Kind::Double).mm(&h)
        })
    }
}
