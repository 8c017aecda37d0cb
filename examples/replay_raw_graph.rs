//! Node-level sensitivity of the degree-bounded sum aggregation (GAP/ProGAP-NDP, DP-GNN) when the
//! neighbouring relation is taken on the *raw* graph: the bound is re-applied after the node is
//! removed, with coupled coins (each edge (u, v) keeps a priority from its own (seed, v, u) coin,
//! every node keeps its D lowest-priority out-edges). `gnnaudit replay` checks the relation the
//! lemmas state (the node removed from the bounded graph); this example measures what the
//! re-sampling adds: an in-neighbour u of the removed node w that had kept w now keeps another
//! out-edge, a row the sqrt(D) bound does not count.
//!
//! `cargo run --example replay_raw_graph -- [dataset] [min_class_count] [D] [nodes]`
use gnnaudit::data::{self, Graph, SplitRatios};
use gnnaudit::replay::units::{coin, Unit};

/// Out-edges kept by priority: coupled, so removing w changes only the lists that held w.
fn bound(g: &Graph, d: usize, seed: u64) -> Graph {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); g.num_nodes()];
    for (u, v) in g.edges().filter(|(u, v)| u != v) {
        out[u].push(v);
    }
    let mut edges = vec![];
    for (u, vs) in out.iter_mut().enumerate() {
        vs.sort_by(|a, b| coin(seed, *a as u64, u as u64).total_cmp(&coin(seed, *b as u64, u as u64)));
        edges.extend(vs.iter().take(d).map(|&v| (u, v)));
    }
    Graph::from_edges(g.num_nodes(), edges).unwrap()
}

/// sqrt(number of unit-row changes) over the rows other than w's: the count Lemma 8 bounds by D.
fn changed(a: &Graph, b: &Graph, w: usize) -> f64 {
    let mut sq = 0.0;
    for v in (0..a.num_nodes()).filter(|&v| v != w) {
        let (x, y) = (a.in_neighbors(v), b.in_neighbors(v));
        sq += (x.iter().filter(|u| !y.contains(u)).count() + y.iter().filter(|u| !x.contains(u)).count()) as f64;
    }
    sq.sqrt() // = ||delta A^T X|| when the changed rows are orthogonal unit vectors
}

fn main() -> gnnaudit::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("cora", |s| s.as_str());
    let min_count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let d: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(100);
    let k: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(5);
    let dir = std::env::var("GNNAUDIT_DATA").ok().map(std::path::PathBuf::from);
    let raw = data::load_dataset(name, dir.as_deref())?;
    let ds = data::transforms::prepare_like_gap(&raw, min_count, SplitRatios::default(), 0)?;
    let g = &ds.graph;
    let bounded = bound(g, d, 0);
    let mut by_degree: Vec<usize> = (0..g.num_nodes()).collect();
    let deg = g.out_degrees();
    by_degree.sort_by_key(|&v| std::cmp::Reverse(deg[v]));
    println!("{name}: D = {d}, declared node sensitivity sqrt(D) = {:.3}", (d as f64).sqrt());
    for &w in by_degree.iter().take(k) {
        let unit = Unit::Node(w);
        let lemma = changed(&bounded, &unit.remove_from(&bounded)?, w);
        let raw = changed(&bounded, &bound(&unit.remove_from(g)?, d, 0), w);
        println!(
            "node {w} (degree {}): bounded-graph relation {:.3} ({:.3} of sqrt(D)), raw-graph relation {:.3} ({:.3})",
            deg[w],
            lemma,
            lemma / (d as f64).sqrt(),
            raw,
            raw / (d as f64).sqrt()
        );
    }
    Ok(())
}
