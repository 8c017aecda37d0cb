//! Graph transforms. Each is a free function that returns a new [`Dataset`] and leaves its input
//! untouched; transforms that drop nodes re-index them and keep features, labels, class names and
//! the split aligned. Random ones take a seed.
use super::dataset::{Dataset, Split};
use super::graph::Graph;
use super::split::SplitRatios;
use crate::error::{Error, Result};

/// A copy of `ds` with another graph over the same nodes (clones everything but the edges).
fn with_graph(ds: &Dataset, graph: Graph) -> Dataset {
    Dataset {
        name: ds.name.clone(),
        graph,
        features: ds.features.clone(),
        labels: ds.labels.clone(),
        num_classes: ds.num_classes,
        split: ds.split.clone(),
        class_names: ds.class_names.clone(),
        attr_names: ds.attr_names.clone(),
    }
}

/// Adds the reverse of every edge, so that the graph is symmetric.
pub fn to_undirected(ds: &Dataset) -> Dataset {
    let g = &ds.graph;
    if g.is_symmetric() {
        return ds.clone();
    }
    let edges: Vec<(usize, usize)> = g.edges().flat_map(|(u, v)| [(u, v), (v, u)]).collect();
    with_graph(ds, Graph::from_edges(g.num_nodes(), edges).expect("edges of a valid graph are in range"))
}

/// Drops every edge u -> u.
pub fn remove_self_loops(ds: &Dataset) -> Dataset {
    let g = &ds.graph;
    let n = g.num_nodes();
    let mut indptr = Vec::with_capacity(n + 1);
    let mut indices = Vec::with_capacity(g.num_directed_edges());
    indptr.push(0);
    for v in 0..n {
        indices.extend(g.in_neighbors(v).iter().copied().filter(|&u| u != v));
        indptr.push(indices.len());
    }
    with_graph(ds, Graph::from_in_csr(n, indptr, indices).expect("subset of a valid CSR"))
}

/// Drops the feature columns that are zero on every node (twitch-ENGB: 3,170 -> 2,545 columns, the
/// count of thesis Table 2.1). A per-feature LDP claim scales with the number of columns sent, so
/// columns that carry nothing should not be collected.
pub fn drop_zero_columns(ds: &Dataset) -> Dataset {
    let (rows, cols) = (ds.features.rows(), ds.features.cols());
    let dense = ds.features.to_dense();
    let keep: Vec<usize> = (0..cols).filter(|&j| (0..rows).any(|r| dense[r * cols + j] != 0.0)).collect();
    let data = (0..rows).flat_map(|r| keep.iter().map(move |&j| (r, j))).map(|(r, j)| dense[r * cols + j]).collect();
    let mut out = ds.clone();
    out.features = crate::data::Features::Dense { rows, cols: keep.len(), data };
    out.attr_names = ds.attr_names.as_ref().map(|n| keep.iter().filter_map(|&j| n.get(j).cloned()).collect());
    out
}

/// Drops nodes with no edge to another node in either direction (a node with only a self loop
/// counts as isolated, as in PyG's RemoveIsolatedNodes), re-indexing the rest in their order.
pub fn remove_isolated_nodes(ds: &Dataset) -> Dataset {
    let g = &ds.graph;
    let mut connected = vec![false; g.num_nodes()];
    for (u, v) in g.edges() {
        if u != v {
            connected[u] = true;
            connected[v] = true;
        }
    }
    let keep: Vec<usize> = (0..g.num_nodes()).filter(|&v| connected[v]).collect();
    subgraph(ds, &keep)
}

/// Drops the nodes of every class with fewer than `min_count` members and relabels the remaining
/// classes 0..C'-1 in their original order (GAP's FilterClassByCount with remove_unlabeled).
pub fn filter_classes(ds: &Dataset, min_count: usize) -> Result<Dataset> {
    let counts = ds.class_counts();
    let mut new_label = vec![usize::MAX; ds.num_classes];
    let mut kept = 0;
    for (c, &cnt) in counts.iter().enumerate() {
        if cnt >= min_count && cnt > 0 {
            new_label[c] = kept;
            kept += 1;
        }
    }
    if kept == 0 {
        return Err(Error::invalid(
            "min_class_count",
            format!(
                "{min_count} removes every class of '{}' (the largest has {} nodes)",
                ds.name,
                counts.iter().max().unwrap_or(&0)
            ),
        ));
    }
    let keep: Vec<usize> = (0..ds.num_nodes()).filter(|&v| new_label[ds.labels[v]] != usize::MAX).collect();
    let mut out = subgraph(ds, &keep);
    out.labels.iter_mut().for_each(|y| *y = new_label[*y]);
    out.num_classes = kept;
    out.class_names = ds.class_names.as_ref().filter(|names| names.len() == ds.num_classes).map(|names| {
        names.iter().enumerate().filter(|(c, _)| new_label[*c] != usize::MAX).map(|(_, s)| s.clone()).collect()
    });
    Ok(out)
}

/// The subgraph induced by `nodes` (distinct, in range), which become nodes 0..len in the given
/// order; the split keeps the selected nodes. Used to carve shadow graphs out of a dataset.
pub fn induced_subgraph(ds: &Dataset, nodes: &[usize]) -> Result<Dataset> {
    let n = ds.num_nodes();
    let mut seen = vec![false; n];
    for &v in nodes {
        if v >= n || seen[v] {
            return Err(Error::invalid("nodes", format!("node {v} is out of range for {n} nodes or repeated")));
        }
        seen[v] = true;
    }
    Ok(subgraph(ds, nodes))
}

/// Keeps `keep` (distinct, in range) in that order; everything node-indexed follows.
fn subgraph(ds: &Dataset, keep: &[usize]) -> Dataset {
    let g = &ds.graph;
    let mut map = vec![usize::MAX; g.num_nodes()];
    for (new, &old) in keep.iter().enumerate() {
        map[old] = new;
    }
    let mut indptr = Vec::with_capacity(keep.len() + 1);
    let mut indices = Vec::new();
    indptr.push(0);
    for &v in keep {
        indices.extend(g.in_neighbors(v).iter().map(|&u| map[u]).filter(|&u| u != usize::MAX));
        indptr.push(indices.len());
    }
    let graph = Graph::from_in_csr(keep.len(), indptr, indices).expect("re-indexed subgraph is valid");
    let remap = |idx: &[usize]| -> Vec<usize> {
        let mut out: Vec<usize> = idx.iter().map(|&i| map[i]).filter(|&i| i != usize::MAX).collect();
        out.sort_unstable();
        out
    };
    Dataset {
        name: ds.name.clone(),
        graph,
        features: ds.features.select_rows(keep),
        labels: keep.iter().map(|&v| ds.labels[v]).collect(),
        num_classes: ds.num_classes,
        split: ds.split.as_ref().map(|s| Split { train: remap(&s.train), val: remap(&s.val), test: remap(&s.test) }),
        class_names: ds.class_names.clone(),
        attr_names: ds.attr_names.clone(),
    }
}

/// The GAP/ProGAP reference preprocessing, in its order: symmetrise, RandomNodeSplit (ratios,
/// default 75/10/15), FilterClassByCount(min_class_count, remove_unlabeled), RemoveSelfLoops,
/// RemoveIsolatedNodes (benches/anchors/reference_progap.md). The split is drawn before the
/// filter, as the reference does, so its sizes are only near the ratios afterwards.
///
/// At most one copy of the input is made: a step that would change nothing is skipped (its
/// output would equal its input), and each stage replaces the previous one. Holding every stage
/// until the end kept five copies of graph and features (about 5 GB on a Reddit-sized graph).
pub fn prepare_like_gap(ds: &Dataset, min_class_count: usize, ratios: SplitRatios, seed: u64) -> Result<Dataset> {
    let mut ds = to_undirected(ds);
    ds.split = Some(super::split::random_split_of(ds.num_nodes(), ratios, seed)?);
    let keeps_every_class = ds.class_counts().iter().all(|&c| c >= min_class_count && c > 0)
        && ds.class_names.as_ref().is_none_or(|names| names.len() == ds.num_classes);
    if !keeps_every_class {
        ds = filter_classes(&ds, min_class_count)?;
    }
    if ds.graph.num_self_loops() > 0 {
        ds = remove_self_loops(&ds);
    }
    // Isolated: no edge to another node (the graph is symmetric since to_undirected).
    let g = &ds.graph;
    if (0..g.num_nodes()).any(|v| g.in_neighbors(v).iter().all(|&u| u == v)) {
        ds = remove_isolated_nodes(&ds);
    }
    ds.ensure_trainable(min_class_count)?;
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Features;

    fn toy() -> Dataset {
        // 0 -> 1, 1 -> 2, 2 -> 2 (loop), node 3 isolated, node 4 only a self loop.
        let graph = Graph::from_edges(5, [(0, 1), (1, 2), (2, 2), (4, 4)]).unwrap();
        Dataset {
            name: "toy".into(),
            graph,
            features: Features::Dense { rows: 5, cols: 1, data: vec![0., 1., 2., 3., 4.] },
            labels: vec![0, 1, 1, 2, 1],
            num_classes: 3,
            split: Some(Split { train: vec![0, 3], val: vec![1], test: vec![2, 4] }),
            class_names: Some(vec!["a".into(), "b".into(), "c".into()]),
            attr_names: None,
        }
    }

    #[test]
    fn isolated_nodes_and_self_loop_only_nodes_go_and_rows_stay_aligned() {
        let out = remove_isolated_nodes(&toy());
        assert_eq!(out.num_nodes(), 3);
        assert_eq!(out.features.to_dense(), vec![0., 1., 2.]);
        assert_eq!(out.labels, vec![0, 1, 1]);
        assert_eq!(out.split.as_ref().unwrap(), &Split { train: vec![0], val: vec![1], test: vec![2] });
        assert!(out.graph.has_edge(2, 2) && out.graph.has_edge(0, 1));
        out.validate("toy").unwrap();
    }

    #[test]
    fn filter_relabels_and_drops_names() {
        let out = filter_classes(&toy(), 2).unwrap();
        assert_eq!(out.num_classes, 1);
        assert_eq!(out.labels, vec![0, 0, 0]);
        assert_eq!(out.class_names, Some(vec!["b".to_string()]));
        assert!(filter_classes(&toy(), 10).is_err());
    }

    #[test]
    fn undirected_and_loops() {
        let u = to_undirected(&toy());
        assert!(u.graph.is_symmetric());
        assert_eq!(u.graph.num_directed_edges(), 6);
        assert_eq!(remove_self_loops(&u).graph.num_self_loops(), 0);
    }

    #[test]
    fn induced_subgraph_reorders() {
        let s = induced_subgraph(&toy(), &[2, 1]).unwrap();
        assert!(s.graph.has_edge(1, 0)); // old 1 -> 2
        assert!(s.graph.has_edge(0, 0));
        assert_eq!(s.labels, vec![1, 1]);
        assert!(induced_subgraph(&toy(), &[1, 1]).is_err());
        assert!(induced_subgraph(&toy(), &[9]).is_err());
    }
}
