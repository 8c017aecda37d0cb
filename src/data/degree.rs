//! Degree bounds for node-level DP: the one place that samples a graph down to degree D, with the
//! bound each privacy theorem needs named in its type.
//!
//! A node's node-level sensitivity is the number of released terms it enters, so which degree is
//! bounded depends on the release:
//! - GAP (thesis ch.4 Lemma 8, Prop. 7) and ProGAP (ch.5 Theorem 5) aggregate A^T X: a node
//!   enters the aggregation of every node it sends an edge to, so they need the **out**-degree
//!   bounded ("each node has no more than D outgoing edges").
//! - DP-GNN (Daigavane et al. 2021, Theorem 1) clips one gradient per batch node over its
//!   in-neighbours and counts a node in at most K+1 terms: it needs **both** its in-degree (the
//!   terms of one gradient) and its out-degree (the gradients it enters) bounded.
//! - The reference DP-GNN sampler bounds the **in**-degree only; `dpgnn-rowclip` keeps it to show
//!   that it is unsound.
//!
//! Every variant keeps a uniformly random subset of the edges (neighbour sampling), never adds
//! one, and is deterministic given the seed.
use super::graph::Graph;
use crate::error::{Error, Result};
use rand::seq::index;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Which degree a node-level privacy argument bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DegreeBound {
    /// At most D in-neighbours per node (the DP-GNN reference sampler; out-degrees unbounded).
    In,
    /// At most D out-neighbours per node (GAP Prop. 7, ProGAP Theorem 5).
    Out,
    /// At most D in- and D out-neighbours per node (DP-GNN's Theorem 1).
    Both,
}

/// `g` with degrees bounded by `max_degree` as `bound` says, by uniform neighbour sampling with
/// `seed`:
/// - `Out`: one seeded stream; every node with more than D out-edges keeps a uniform D of them.
/// - `Both`: one seeded stream, two passes: (1) every node keeps a uniform D of its in-neighbours
///   (what the GAP/ProGAP reference does per node); (2) every node that still sends more than D
///   edges keeps a uniform D of them. Pass 2 only removes edges, so both bounds hold. Like the
///   reference the result is directed (an edge may survive in one direction only); unlike it,
///   every node is processed (the reference's seed list `arange(0, N-1)` leaves the last node out).
/// - `In`: each node keeps a uniform D of its in-neighbours other than itself, drawn from its own
///   ChaCha stream (seed, node), so that removing one node never moves another node's coins.
pub fn bound_degree(g: &Graph, bound: DegreeBound, max_degree: usize, seed: u64) -> Result<Graph> {
    crate::ensure!(max_degree >= 1, Error::invalid("max_degree", "must be at least 1"));
    match bound {
        DegreeBound::In => bound_in(g, max_degree, seed),
        DegreeBound::Out => bound_out(g, max_degree, seed),
        DegreeBound::Both => bound_both(g, max_degree, seed),
    }
}

fn bound_out(g: &Graph, d: usize, seed: u64) -> Result<Graph> {
    // Row u of the reversed graph lists u's out-neighbours in ascending order.
    let out = g.reversed();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut edges = Vec::with_capacity(g.num_directed_edges());
    for u in 0..out.num_nodes() {
        let vs = out.in_neighbors(u);
        if vs.len() <= d {
            edges.extend(vs.iter().map(|&v| (u, v)));
        } else {
            edges.extend(index::sample(&mut rng, vs.len(), d).into_iter().map(|i| (u, vs[i])));
        }
    }
    Graph::from_edges(g.num_nodes(), edges)
}

fn bound_in(g: &Graph, d: usize, seed: u64) -> Result<Graph> {
    let mut edges = Vec::with_capacity(g.num_directed_edges());
    for v in 0..g.num_nodes() {
        let nb: Vec<usize> = g.in_neighbors(v).iter().copied().filter(|&u| u != v).collect();
        if nb.len() <= d {
            edges.extend(nb.iter().map(|&u| (u, v)));
        } else {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(v as u64);
            edges.extend(index::sample(&mut rng, nb.len(), d).into_iter().map(|k| (nb[k], v)));
        }
    }
    Graph::from_edges(g.num_nodes(), edges)
}

fn bound_both(g: &Graph, max_degree: usize, seed: u64) -> Result<Graph> {
    let n = g.num_nodes();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);

    // Pass 1: in-neighbour sampling, kept as sorted in-lists.
    let mut in_lists: Vec<Vec<usize>> = Vec::with_capacity(n);
    for v in 0..n {
        let nb = g.in_neighbors(v);
        if nb.len() <= max_degree {
            in_lists.push(nb.to_vec());
        } else {
            let mut pick: Vec<usize> =
                index::sample(&mut rng, nb.len(), max_degree).into_iter().map(|k| nb[k]).collect();
            pick.sort_unstable();
            in_lists.push(pick);
        }
    }

    // Pass 2: out-edge sampling for nodes still above the bound.
    let mut out_lists: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (v, list) in in_lists.iter().enumerate() {
        for &u in list {
            out_lists[u].push(v);
        }
    }
    let mut removed: Vec<(usize, usize)> = Vec::new(); // (target, source)
    for (u, outs) in out_lists.iter().enumerate() {
        if outs.len() > max_degree {
            let keep = index::sample(&mut rng, outs.len(), max_degree).into_vec();
            let mut keep_mask = vec![false; outs.len()];
            keep.into_iter().for_each(|k| keep_mask[k] = true);
            removed.extend(outs.iter().zip(&keep_mask).filter(|(_, &k)| !k).map(|(&v, _)| (v, u)));
        }
    }
    removed.sort_unstable();
    let mut indptr = Vec::with_capacity(n + 1);
    let mut indices = Vec::new();
    indptr.push(0);
    let mut r = 0;
    for (v, list) in in_lists.iter().enumerate() {
        for &u in list {
            while r < removed.len() && removed[r] < (v, u) {
                r += 1;
            }
            if r < removed.len() && removed[r] == (v, u) {
                continue;
            }
            indices.push(u);
        }
        indptr.push(indices.len());
    }
    Graph::from_in_csr(n, indptr, indices)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A star with every leaf pointing at the hub and back, plus a chain: the hub has high in- and
    /// out-degree, so each variant's bound shows.
    fn star(leaves: usize) -> Graph {
        let edges = (1..=leaves).flat_map(|l| [(l, 0), (0, l)]).chain((1..leaves).map(|l| (l, l + 1)));
        Graph::from_edges(leaves + 1, edges).unwrap()
    }

    #[test]
    fn each_bound_holds_and_keeps_a_subset() {
        let g = star(30);
        for (bound, ins, outs) in
            [(DegreeBound::In, true, false), (DegreeBound::Out, false, true), (DegreeBound::Both, true, true)]
        {
            let b = bound_degree(&g, bound, 4, 7).unwrap();
            assert!(b.edges().all(|(u, v)| g.has_edge(u, v)), "{bound:?} adds no edge");
            assert_eq!(b.in_degrees().iter().all(|&x| x <= 4), ins, "{bound:?} in-degrees");
            assert_eq!(b.out_degrees().iter().all(|&x| x <= 4), outs, "{bound:?} out-degrees");
            assert_eq!(b, bound_degree(&g, bound, 4, 7).unwrap(), "{bound:?} deterministic");
        }
        assert!(bound_degree(&g, DegreeBound::Out, 0, 1).is_err());
    }

    /// The out-degree bound draws as it always did: one stream over the nodes in order, each
    /// sampling positions in its ascending out-list, so seeded results do not move.
    #[test]
    fn out_bound_draws_as_the_per_node_out_lists() {
        let g = star(30);
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); g.num_nodes()];
        for (u, v) in g.edges() {
            out[u].push(v);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut kept = Vec::new();
        for (u, vs) in out.iter().enumerate() {
            let picks: Vec<usize> =
                if vs.len() <= 3 { (0..vs.len()).collect() } else { index::sample(&mut rng, vs.len(), 3).into_vec() };
            kept.extend(picks.into_iter().map(|i| (u, vs[i])));
        }
        assert_eq!(bound_degree(&g, DegreeBound::Out, 3, 11).unwrap(), Graph::from_edges(g.num_nodes(), kept).unwrap());
    }
}
