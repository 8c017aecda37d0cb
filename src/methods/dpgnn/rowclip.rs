//! `dpgnn-rowclip`: DP-GNN as the reference implementation runs it, kept UNSOUND on purpose so that
//! `gnnaudit replay` has a known bug to catch. Two differences from [`super::train`]:
//! - the sampler bounds only in-degrees (`DegreeBound::In`: each node keeps <= K in-neighbours), so a node can still
//!   feed any number of aggregations;
//! - Opacus, handed the batch's 1-hop subgraph, clips one gradient per subgraph *row* (every batch
//!   node and every sampled neighbour), not one per batch node. A node then moves its own row and
//!   the rows of every batch node that aggregates it and of their neighbours
//!   (examples/reference_subgraph_rows.rs: up to 652 rows on Cornell5 at K = 100),
//!
//! while the noise stays at DP-GNN's 2(K+1)C, which assumes K+1 terms of norm C per node.
use super::Net;
use crate::models::{row_normalize, Fwd};
use crate::privacy::accountant::Budget;
use std::collections::HashMap;
use tch::{Reduction, Tensor};

/// What the report says about this variant.
pub const UNSOUND_NOTE: &str = "UNSOUND (dpgnn-rowclip): in-degree bound only and one clipped gradient per 1-hop \
     subgraph row, under noise that assumes K+1 clipped terms per node; this epsilon is not a guarantee";

/// Marks every budget component of a `dpgnn-rowclip` run as unsound, so that reports say so.
pub fn label_unsound(b: &mut Budget) {
    for c in &mut b.components {
        c.mechanism = format!("UNSOUND per-row clipping: {}", c.mechanism);
    }
}

/// The batch's 1-hop subgraph rows: the batch nodes first, then their sampled in-neighbours not
/// in the batch. Returns (row node ids, neighbour positions [m, K], mask [m, K]).
fn subgraph_rows(batch: &Tensor, table: &Tensor, mask: &Tensor) -> (Tensor, Tensor, Tensor) {
    let m = batch.size()[0];
    let k = table.size()[1];
    let nb = table.index_select(0, batch);
    let nb_mask = mask.index_select(0, batch);
    let batch_ids = Vec::<i64>::try_from(batch).expect("int64 batch");
    let nb_ids = Vec::<i64>::try_from(&nb.flatten(0, -1)).expect("int64 table");
    let nb_on = Vec::<f32>::try_from(&nb_mask.flatten(0, -1)).expect("float mask");
    let mut pos: HashMap<i64, i64> = HashMap::with_capacity(batch_ids.len() * 2);
    let mut rows = Vec::with_capacity(batch_ids.len() * 2);
    for &v in &batch_ids {
        pos.entry(v).or_insert_with(|| {
            rows.push(v);
            rows.len() as i64 - 1
        });
    }
    let mut nb_pos = vec![0i64; nb_ids.len()];
    for (i, (&u, &on)) in nb_ids.iter().zip(&nb_on).enumerate() {
        if on > 0.0 {
            nb_pos[i] = *pos.entry(u).or_insert_with(|| {
                rows.push(u);
                rows.len() as i64 - 1
            });
        }
    }
    (
        crate::device::place(Tensor::from_slice(&rows)),
        crate::device::place(Tensor::from_slice(&nb_pos).view([m, k])),
        nb_mask,
    )
}

/// Summed loss of the batch nodes, computed over every row of their 1-hop subgraph so that the
/// tape in `f` sees one sample per row (what Opacus's per-sample hooks see on the reference's
/// subgraph): each layer runs on all rows, and only batch rows carry a loss. `table`: the padded
/// in-neighbour table and its mask.
pub(super) fn subgraph_loss(
    net: &Net,
    x: &Tensor,
    y: &Tensor,
    table: (&Tensor, &Tensor),
    batch: &Tensor,
    agg_noise: f64,
    f: &mut Fwd,
) -> Tensor {
    let (rows, nb_pos, nb_mask) = subgraph_rows(batch, table.0, table.1);
    let (m, k) = (nb_pos.size()[0], nb_pos.size()[1]);
    let r = rows.size()[0];
    let h = row_normalize(&net.pre.forward(&x.index_select(0, &rows), f));
    let width = h.size()[1];
    let gathered = h.index_select(0, &nb_pos.flatten(0, -1)).view([m, k, width]) * nb_mask.unsqueeze(-1);
    let mut agg = gathered.sum_dim_intlist([1i64].as_slice(), false, h.kind());
    if agg_noise > 0.0 {
        agg = &agg + agg.randn_like() * agg_noise;
    }
    let agg = Tensor::cat(&[agg, Tensor::zeros([r - m, width], (h.kind(), h.device()))], 0) / net.degree_bound;
    let logits = net.head(&h, &agg, f).narrow(0, 0, m);
    crate::models::log_softmax_rows(&logits).g_nll_loss::<Tensor>(&y.index_select(0, batch), None, Reduction::Sum, -100)
}
