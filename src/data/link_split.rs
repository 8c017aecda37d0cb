//! The edge split of link prediction (thesis ch.2 section 2.6.4, VGAE; Kipf & Welling 2016): the
//! undirected edges are shuffled and cut 85/5/10 into train/validation/test; the validation and
//! test sets get as many sampled non-edges as they have edges, and message passing (hence PGC's
//! first-layer estimate) runs on the training edges only, so a held-out edge never reaches the
//! encoder.
//!
//! Every undirected edge {u, v} is handled once (as u < v) and enters the training graph in both
//! directions; self loops are not edges to predict and are dropped. Held-out non-edges are pairs
//! u < v with no edge in the *full* graph, distinct, and shared by neither set.
use super::Graph;
use crate::error::{Error, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

/// Shares of the undirected edges held out for validation and test (the rest trains).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgeSplitRatios {
    pub val: f64,
    pub test: f64,
}

impl Default for EdgeSplitRatios {
    /// 85/5/10, as section 2.6.4 and the VGAE paper.
    fn default() -> Self {
        EdgeSplitRatios { val: 0.05, test: 0.10 }
    }
}

/// One seeded split of a graph's edges for link prediction.
#[derive(Debug, Clone)]
pub struct EdgeSplit {
    /// Training edges (u < v), each once.
    pub train: Vec<(usize, usize)>,
    pub val_pos: Vec<(usize, usize)>,
    pub val_neg: Vec<(usize, usize)>,
    pub test_pos: Vec<(usize, usize)>,
    pub test_neg: Vec<(usize, usize)>,
    /// The message-passing graph: the training edges in both directions.
    pub train_graph: Graph,
}

/// Splits the undirected edges of `graph` (which must be symmetric) with `seed`.
pub fn split_edges(graph: &Graph, ratios: EdgeSplitRatios, seed: u64) -> Result<EdgeSplit> {
    let EdgeSplitRatios { val, test } = ratios;
    if !(val >= 0.0 && test > 0.0 && val + test < 1.0) {
        return Err(Error::invalid(
            "edge_split",
            format!("validation {val} and test {test} shares must be >= 0, > 0 and sum below 1"),
        ));
    }
    if !graph.is_symmetric() {
        return Err(Error::invalid("graph", "link prediction needs an undirected (symmetric) graph"));
    }
    let n = graph.num_nodes();
    let mut edges: Vec<(usize, usize)> = graph.undirected_edges().into_iter().filter(|(u, v)| u != v).collect();
    let (n_val, n_test) = ((val * edges.len() as f64) as usize, (test * edges.len() as f64) as usize);
    if n_test == 0 || n_val + n_test >= edges.len() {
        return Err(Error::invalid(
            "graph",
            format!("{} undirected edges are too few for a {val}/{test} validation/test split", edges.len()),
        ));
    }
    let possible = n * (n - 1) / 2;
    if possible < edges.len() + n_val + n_test {
        return Err(Error::invalid("graph", "too dense: not enough non-edges to sample validation/test negatives"));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    edges.shuffle(&mut rng);
    let test_pos = edges.split_off(edges.len() - n_test);
    let val_pos = edges.split_off(edges.len() - n_val);
    let mut taken = HashSet::new();
    let mut negatives = |count: usize, rng: &mut ChaCha8Rng| {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
            let (u, v) = (a.min(b), a.max(b));
            if u != v && !graph.has_edge(u, v) && taken.insert((u, v)) {
                out.push((u, v));
            }
        }
        out
    };
    let val_neg = negatives(n_val, &mut rng);
    let test_neg = negatives(n_test, &mut rng);
    let train_graph = Graph::from_edges(n, edges.iter().flat_map(|&(u, v)| [(u, v), (v, u)]))?;
    Ok(EdgeSplit { train: edges, val_pos, val_neg, test_pos, test_neg, train_graph })
}

/// `count` node pairs u != v that are not edges of `graph` (PyG's `negative_sampling`): the
/// training negatives, drawn afresh every epoch. Pairs may repeat; they are ordered u < v.
pub fn sample_non_edges(graph: &Graph, count: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    let n = graph.num_nodes();
    let mut out = Vec::with_capacity(count);
    if n < 2 || graph.num_directed_edges() >= n * (n - 1) {
        return out; // no non-edge to draw
    }
    while out.len() < count {
        let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
        if a != b && !graph.has_edge(a, b) {
            out.push((a.min(b), a.max(b)));
        }
    }
    out
}
