//! Summary statistics of a dataset, as `datasets describe` prints them and the datasets README
//! tabulates them.
use super::dataset::{Dataset, Features};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetStats {
    pub name: String,
    pub nodes: usize,
    /// Undirected edges {u, v}, u != v, present in at least one direction.
    pub edges: usize,
    /// Stored directed edges (a symmetric graph stores each undirected edge twice).
    pub directed_edges: usize,
    pub self_loops: usize,
    pub symmetric: bool,
    pub features: usize,
    /// "sparse" or "dense", and whether every stored value is 0 or 1.
    pub feature_storage: String,
    pub binary_features: bool,
    pub classes: usize,
    /// Nodes without an edge to another node.
    pub isolated: usize,
    /// Over all nodes, isolated included, in the undirected view (loops not counted).
    pub mean_degree: f64,
    pub median_degree: f64,
    pub max_degree: usize,
    pub class_counts: Vec<usize>,
    pub class_names: Option<Vec<String>>,
    /// Size of the largest class over N: accuracy of always predicting the most frequent class.
    pub majority_accuracy: f64,
    pub split: Option<[usize; 3]>,
}

impl DatasetStats {
    pub fn of(ds: &Dataset) -> Self {
        let g = &ds.graph;
        let n = g.num_nodes();
        let symmetric = g.is_symmetric();
        let degrees = degrees_in_undirected_view(ds, symmetric);
        let edges = degrees.iter().sum::<usize>() / 2;
        let mut sorted = degrees.clone();
        sorted.sort_unstable();
        let median = match n {
            0 => 0.0,
            _ if n % 2 == 1 => sorted[n / 2] as f64,
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
        };
        let class_counts = ds.class_counts();
        let majority = class_counts.iter().copied().max().unwrap_or(0);
        DatasetStats {
            name: ds.name.clone(),
            nodes: n,
            edges,
            directed_edges: g.num_directed_edges(),
            self_loops: g.num_self_loops(),
            symmetric,
            features: ds.num_features(),
            feature_storage: match ds.features {
                Features::Dense { .. } => "dense".into(),
                Features::Sparse { .. } => "sparse".into(),
            },
            binary_features: ds.features.values().iter().all(|&x| x == 0.0 || x == 1.0),
            classes: ds.num_classes,
            isolated: degrees.iter().filter(|&&d| d == 0).count(),
            mean_degree: if n > 0 { 2.0 * edges as f64 / n as f64 } else { 0.0 },
            median_degree: median,
            max_degree: sorted.last().copied().unwrap_or(0),
            class_counts,
            class_names: ds.class_names.clone(),
            majority_accuracy: if n > 0 { majority as f64 / n as f64 } else { 0.0 },
            split: ds.split.as_ref().map(|s| [s.train.len(), s.val.len(), s.test.len()]),
        }
    }

    /// Human-readable multi-line summary.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let kind = if self.binary_features { "binary" } else { "real" };
        s += &format!("dataset            {}\n", self.name);
        s += &format!("nodes              {}\n", self.nodes);
        s += &format!(
            "edges (undirected) {}  ({} directed stored, {}, {} self loops)\n",
            self.edges,
            self.directed_edges,
            if self.symmetric { "symmetric" } else { "directed" },
            self.self_loops
        );
        s += &format!("features           {} ({kind}, {})\n", self.features, self.feature_storage);
        s += &format!("classes            {}\n", self.classes);
        s += &format!("isolated nodes     {}\n", self.isolated);
        s += &format!(
            "degree             mean {:.2} / median {} / max {}\n",
            self.mean_degree, self.median_degree, self.max_degree
        );
        s += &format!("majority accuracy  {:.2}%\n", 100.0 * self.majority_accuracy);
        if let Some([a, b, c]) = self.split {
            s += &format!("split              {a} train / {b} val / {c} test\n");
        }
        s += "class counts       ";
        let items: Vec<String> = self
            .class_counts
            .iter()
            .enumerate()
            .map(|(k, cnt)| match self.class_names.as_ref().and_then(|n| n.get(k)) {
                Some(name) => format!("{k}={name}:{cnt}"),
                None => format!("{k}:{cnt}"),
            })
            .collect();
        s += &items.join(", ");
        s.push('\n');
        s
    }
}

/// Degree of every node in the undirected view: distinct other nodes it links to or from.
pub fn undirected_degrees(ds: &Dataset) -> Vec<usize> {
    degrees_in_undirected_view(ds, ds.graph.is_symmetric())
}

fn degrees_in_undirected_view(ds: &Dataset, symmetric: bool) -> Vec<usize> {
    let g = &ds.graph;
    if symmetric {
        return (0..g.num_nodes()).map(|v| g.in_neighbors(v).iter().filter(|&&u| u != v).count()).collect();
    }
    let mut d = vec![0usize; g.num_nodes()];
    for (u, v) in g.undirected_edges() {
        if u != v {
            d[u] += 1;
            d[v] += 1;
        }
    }
    d
}
