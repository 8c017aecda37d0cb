//! The attacks' own view of a graph: what an adversary may hold about the target's data (or a
//! shadow graph it drew from the same distribution). Kept separate from the main crate's `Graph`
//! so that this crate never depends on training code.
use crate::error::{check, Result};
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::HashSet;
use tch::{Kind, Tensor};

pub struct AttackGraph {
    pub num_nodes: usize,
    /// Undirected edges {u, v}, each once with u < v, no self loops.
    pub edges: Vec<(usize, usize)>,
    /// Node features [num_nodes, d], float32.
    pub features: Tensor,
    pub labels: Vec<usize>,
    pub num_classes: usize,
    /// A held-out sensitive attribute per node (e.g. gender), carved out of the features.
    pub sensitive: Option<Vec<usize>>,
}

impl Clone for AttackGraph {
    fn clone(&self) -> Self {
        AttackGraph {
            num_nodes: self.num_nodes,
            edges: self.edges.clone(),
            features: self.features.shallow_clone(),
            labels: self.labels.clone(),
            num_classes: self.num_classes,
            sensitive: self.sensitive.clone(),
        }
    }
}

impl std::fmt::Debug for AttackGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AttackGraph({} nodes, {} edges, {} classes)", self.num_nodes, self.edges.len(), self.num_classes)
    }
}

impl AttackGraph {
    /// Builds and validates; edges are canonicalised (u < v, deduplicated, self loops dropped).
    pub fn new(
        num_nodes: usize,
        edges: impl IntoIterator<Item = (usize, usize)>,
        features: Tensor,
        labels: Vec<usize>,
        num_classes: usize,
    ) -> Result<Self> {
        let mut e: Vec<(usize, usize)> = Vec::new();
        for (u, v) in edges {
            check!(u < num_nodes && v < num_nodes, "edges", "({u}, {v}) out of range for {num_nodes} nodes");
            if u != v {
                e.push((u.min(v), u.max(v)));
            }
        }
        e.sort_unstable();
        e.dedup();
        check!(features.dim() == 2, "features", "expected a 2-d tensor, got {:?}", features.size());
        check!(
            features.size()[0] as usize == num_nodes,
            "features",
            "{} rows for {num_nodes} nodes",
            features.size()[0]
        );
        check!(labels.len() == num_nodes, "labels", "{} labels for {num_nodes} nodes", labels.len());
        check!(labels.iter().all(|&y| y < num_classes), "labels", "a label is outside 0..{num_classes}");
        Ok(AttackGraph {
            num_nodes,
            edges: e,
            features: features.to_kind(Kind::Float),
            labels,
            num_classes,
            sensitive: None,
        })
    }

    pub fn with_sensitive(mut self, sensitive: Vec<usize>) -> Result<Self> {
        check!(
            sensitive.len() == self.num_nodes,
            "sensitive",
            "{} values for {} nodes",
            sensitive.len(),
            self.num_nodes
        );
        self.sensitive = Some(sensitive);
        Ok(self)
    }

    pub fn num_features(&self) -> usize {
        self.features.size()[1] as usize
    }

    /// Edge set for O(1) membership tests.
    pub fn edge_set(&self) -> HashSet<(usize, usize)> {
        self.edges.iter().copied().collect()
    }

    /// The subgraph induced by `nodes` (in that order): node i of the result is `nodes[i]`.
    pub fn induced(&self, nodes: &[usize]) -> Result<AttackGraph> {
        let mut pos = vec![usize::MAX; self.num_nodes];
        for (i, &v) in nodes.iter().enumerate() {
            check!(v < self.num_nodes, "nodes", "node {v} out of range");
            check!(pos[v] == usize::MAX, "nodes", "node {v} repeated");
            pos[v] = i;
        }
        let edges = self
            .edges
            .iter()
            .filter(|&&(u, v)| pos[u] != usize::MAX && pos[v] != usize::MAX)
            .map(|&(u, v)| (pos[u], pos[v]));
        let idx = Tensor::from_slice(&nodes.iter().map(|&v| v as i64).collect::<Vec<_>>());
        let mut g = AttackGraph::new(
            nodes.len(),
            edges.collect::<Vec<_>>(),
            self.features.index_select(0, &idx),
            nodes.iter().map(|&v| self.labels[v]).collect(),
            self.num_classes,
        )?;
        g.sensitive = self.sensitive.as_ref().map(|s| nodes.iter().map(|&v| s[v]).collect());
        Ok(g)
    }

    /// The same graph with extra undirected edges (canaries) added.
    pub fn with_extra_edges(&self, extra: &[(usize, usize)]) -> Result<AttackGraph> {
        let mut g = AttackGraph::new(
            self.num_nodes,
            self.edges.iter().chain(extra.iter()).copied().collect::<Vec<_>>(),
            self.features.shallow_clone(),
            self.labels.clone(),
            self.num_classes,
        )?;
        g.sensitive = self.sensitive.clone();
        Ok(g)
    }

    /// The same graph with nodes appended (ids num_nodes..): their features [k, d], labels, and
    /// extra undirected edges (which may touch old and new nodes). Sensitive values, if any, are
    /// extended with 0 for the new nodes.
    pub fn with_extra_nodes(
        &self,
        features: &Tensor,
        labels: &[usize],
        extra_edges: &[(usize, usize)],
    ) -> Result<AttackGraph> {
        check!(
            features.dim() == 2 && features.size()[0] as usize == labels.len(),
            "features",
            "{:?} rows for {} new nodes",
            features.size(),
            labels.len()
        );
        let x = Tensor::cat(&[self.features.shallow_clone(), features.to_kind(Kind::Float)], 0);
        let mut g = AttackGraph::new(
            self.num_nodes + labels.len(),
            self.edges.iter().chain(extra_edges.iter()).copied().collect::<Vec<_>>(),
            x,
            self.labels.iter().chain(labels).copied().collect(),
            self.num_classes,
        )?;
        g.sensitive =
            self.sensitive.as_ref().map(|s| s.iter().copied().chain(std::iter::repeat_n(0, labels.len())).collect());
        Ok(g)
    }

    /// Dense symmetric 0/1 adjacency [N, N] (for white-box models and reconstruction scoring).
    pub fn dense_adjacency(&self) -> Tensor {
        let n = self.num_nodes as i64;
        let mut a = vec![0f32; self.num_nodes * self.num_nodes];
        for &(u, v) in &self.edges {
            a[u * self.num_nodes + v] = 1.0;
            a[v * self.num_nodes + u] = 1.0;
        }
        Tensor::from_slice(&a).reshape([n, n])
    }

    /// `count` distinct node pairs {u, v}, u < v, that are not edges, drawn uniformly.
    pub fn sample_non_edges(&self, count: usize, rng: &mut impl Rng) -> Result<Vec<(usize, usize)>> {
        let n = self.num_nodes;
        let possible = n * n.saturating_sub(1) / 2 - self.edges.len();
        check!(count <= possible / 2, "non-edges", "asked for {count} non-edges, the graph has {possible}");
        let edges = self.edge_set();
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let (a, b) = (rng.gen_range(0..n), rng.gen_range(0..n));
            if a == b {
                continue;
            }
            let p = (a.min(b), a.max(b));
            if !edges.contains(&p) && seen.insert(p) {
                out.push(p);
            }
        }
        Ok(out)
    }
}

/// Which nodes a model trained, validated and was tested on (the membership ground truth).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeSplit {
    pub train: Vec<usize>,
    pub val: Vec<usize>,
    pub test: Vec<usize>,
}

/// The membership game's split (GAP's attack set-up, thesis ch.4 Sec. 4.8.2): `per_class` nodes of
/// every class (default min(1000, smallest class)), 40% train (the members), 20% val, 40% test
/// (the non-members). `gnnaudit attack` trains its target on it, and the shadow model its shadow.
/// Returns the nodes per class used and the split.
pub fn membership_split(
    labels: &[usize],
    num_classes: usize,
    per_class: Option<usize>,
    rng: &mut impl Rng,
) -> Result<(usize, NodeSplit)> {
    let mut counts = vec![0usize; num_classes];
    for &y in labels {
        counts[y] += 1;
    }
    let smallest = counts.iter().copied().filter(|&c| c > 0).min().unwrap_or(0);
    let k = per_class.unwrap_or(smallest.min(1000));
    Ok((k, class_balanced_split(labels, num_classes, k, 0.4, 0.2, rng)?))
}

/// GAP's RandomDataSplit (and thesis ch.4 Sec. 4.8.2's shadow graph): for every class with at least
/// `per_class` nodes, `per_class` nodes drawn uniformly, `train_frac` of them train, `val_frac` val,
/// the rest test. Classes with fewer nodes contribute none.
pub fn class_balanced_split(
    labels: &[usize],
    num_classes: usize,
    per_class: usize,
    train_frac: f64,
    val_frac: f64,
    rng: &mut impl Rng,
) -> Result<NodeSplit> {
    check!(per_class >= 3, "per_class", "need at least 3 nodes per class, got {per_class}");
    check!(
        train_frac > 0.0 && val_frac >= 0.0 && train_frac + val_frac < 1.0,
        "split fractions",
        "train {train_frac} + val {val_frac} must lie in (0, 1)"
    );
    let mut by_class = vec![Vec::new(); num_classes];
    for (v, &y) in labels.iter().enumerate() {
        by_class[y].push(v);
    }
    let mut split = NodeSplit::default();
    for mut nodes in by_class {
        if nodes.len() < per_class {
            continue;
        }
        nodes.shuffle(rng);
        let n_train = (train_frac * per_class as f64).round() as usize;
        let n_val = (val_frac * per_class as f64).round() as usize;
        split.train.extend_from_slice(&nodes[..n_train]);
        split.val.extend_from_slice(&nodes[n_train..n_train + n_val]);
        split.test.extend_from_slice(&nodes[n_train + n_val..per_class]);
    }
    check!(!split.train.is_empty(), "per_class", "no class has {per_class} nodes");
    Ok(split)
}
