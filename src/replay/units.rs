//! The units a neighbouring graph removes, how they are picked (worst case first, then random),
//! and the coupled coins of a replay: every coin is drawn from its own ChaCha stream named by
//! (seed, unit, step), so removing one unit never moves another unit's coins.
use crate::data::Graph;
use crate::error::{Error, Result};
use rand::seq::index;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One removed unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// One directed edge u -> v (GAP/ProGAP edge level: the unit the delta counts).
    Edge(usize, usize),
    /// One undirected pair {u, v}, both directions (EdgeRand works on pairs).
    Pair(usize, usize),
    /// One node and every edge at it.
    Node(usize),
}

impl Unit {
    pub fn label(&self) -> String {
        match self {
            Unit::Edge(u, v) => format!("edge {u}->{v}"),
            Unit::Pair(u, v) => format!("pair {{{u}, {v}}}"),
            Unit::Node(w) => format!("node {w}"),
        }
    }
    /// The node whose rows and batch terms leave with it (node level).
    pub fn node(&self) -> Option<usize> {
        match self {
            Unit::Node(w) => Some(*w),
            _ => None,
        }
    }
    /// The neighbouring graph: `g` without this unit (nodes keep their ids).
    pub fn remove_from(&self, g: &Graph) -> Result<Graph> {
        let keep = |(a, b): &(usize, usize)| match *self {
            Unit::Edge(u, v) => !(*a == u && *b == v),
            Unit::Pair(u, v) => !((*a == u && *b == v) || (*a == v && *b == u)),
            Unit::Node(w) => *a != w && *b != w,
        };
        Graph::from_edges(g.num_nodes(), g.edges().filter(keep))
    }
}

/// A unit and why it was picked.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub unit: Unit,
    pub worst_case: bool,
}

/// A uniform coin in [0, 1) for (seed, unit, step), from its own stream.
pub fn coin(seed: u64, unit: u64, step: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    rng.set_stream(unit);
    rng.gen::<f64>()
}

/// A Poisson batch of `pool` at `rate` for `step`, each node kept by its own coin.
pub fn poisson_batch(pool: &[usize], rate: f64, seed: u64, step: u64) -> Vec<usize> {
    pool.iter().copied().filter(|&v| coin(seed, v as u64, step) < rate).collect()
}

fn random_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x7265_706c_6179) // "replay"
}

/// Nodes: among `candidates`, the one with the highest out-degree in `g` (it feeds the most
/// aggregations and batch terms), then `random` others drawn uniformly.
pub fn nodes(g: &Graph, candidates: &[usize], random: usize, seed: u64) -> Result<Vec<Chosen>> {
    crate::ensure!(!candidates.is_empty(), Error::invalid("dataset", "no candidate node to remove"));
    let out = g.out_degrees();
    let worst = *candidates.iter().max_by_key(|&&v| (out[v], std::cmp::Reverse(v))).unwrap();
    let mut chosen = vec![Chosen { unit: Unit::Node(worst), worst_case: true }];
    let others: Vec<usize> = candidates.iter().copied().filter(|&v| v != worst).collect();
    let k = random.min(others.len());
    for i in index::sample(&mut random_rng(seed), others.len(), k) {
        chosen.push(Chosen { unit: Unit::Node(others[i]), worst_case: false });
    }
    Ok(chosen)
}

/// Directed edges: one out of the highest-degree node, then `random` others.
pub fn edges(g: &Graph, random: usize, seed: u64) -> Result<Vec<Chosen>> {
    let all: Vec<(usize, usize)> = g.edges().filter(|(u, v)| u != v).collect();
    crate::ensure!(!all.is_empty(), Error::invalid("dataset", "the graph has no edge to remove"));
    let out = g.out_degrees();
    let worst = *all.iter().max_by_key(|(u, v)| (out[*u], std::cmp::Reverse((*u, *v)))).unwrap();
    let mut chosen = vec![Chosen { unit: Unit::Edge(worst.0, worst.1), worst_case: true }];
    let others: Vec<(usize, usize)> = all.into_iter().filter(|&e| e != worst).collect();
    let k = random.min(others.len());
    for i in index::sample(&mut random_rng(seed), others.len(), k) {
        chosen.push(Chosen { unit: Unit::Edge(others[i].0, others[i].1), worst_case: false });
    }
    Ok(chosen)
}

/// Undirected pairs: one at the highest-degree node, then `random` others.
pub fn pairs(g: &Graph, random: usize, seed: u64) -> Result<Vec<Chosen>> {
    Ok(edges(g, random, seed)?
        .into_iter()
        .map(|c| match c.unit {
            Unit::Edge(u, v) => Chosen { unit: Unit::Pair(u.min(v), u.max(v)), worst_case: c.worst_case },
            _ => c,
        })
        .collect())
}
