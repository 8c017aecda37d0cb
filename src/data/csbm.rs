//! Contextual stochastic block model (CSBM): a synthetic graph whose homophily and feature signal
//! are set by hand, so methods can be compared where the answer is known.
//!
//! Labels are balanced (class sizes differ by at most one, assigned at random). Class means are
//! `signal` times orthonormal directions in feature space, and each node's features are its class
//! mean plus standard Gaussian noise: any two class means are `signal * sqrt(2)` noise standard
//! deviations apart, so features alone classify only partly while neighbours (with homophily
//! above 1/C) add evidence. Edges follow a stochastic block model with one probability `p_in`
//! within classes and one `p_out` across, chosen so that the expected number of undirected edges
//! is `nodes * mean_degree / 2` and the expected fraction of them inside a class (the edge
//! homophily) is `homophily`. Each block's edge count is drawn from its binomial and that many
//! distinct pairs are sampled, so the cost is O(edges), not O(nodes^2).
use super::dataset::{Dataset, Features};
use super::graph::Graph;
use crate::error::{Error, Result};
use rand::seq::index;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Csbm {
    pub nodes: usize,
    pub classes: usize,
    /// Expected mean (undirected) degree.
    pub mean_degree: f64,
    /// Expected edge homophily: fraction of edges whose endpoints share a class.
    pub homophily: f64,
    /// Feature dimension (at least `classes`, so that class means can be orthogonal).
    pub features: usize,
    /// Norm of each class mean, in units of the per-coordinate noise standard deviation.
    pub signal: f64,
    pub seed: u64,
}

impl Default for Csbm {
    /// The embedded `synthetic` dataset: 2,000 nodes, 5 classes, mean degree 10, homophily 0.8 and
    /// a weak feature signal (a Bayes-optimal feature-only classifier reaches about 49%), so a GNN
    /// clearly beats an MLP and training takes seconds.
    fn default() -> Self {
        Csbm { nodes: 2000, classes: 5, mean_degree: 10.0, homophily: 0.8, features: 32, signal: 1.0, seed: 0 }
    }
}

impl Csbm {
    /// Checks every parameter before any work.
    pub fn validate(&self) -> Result<()> {
        crate::ensure!(self.nodes >= 2, Error::invalid("csbm.nodes", format!("{} < 2", self.nodes)));
        crate::ensure!(
            self.classes >= 2,
            Error::invalid(
                "csbm.classes",
                format!("{} class(es): node classification needs at least 2 classes", self.classes)
            )
        );
        crate::ensure!(
            self.classes <= self.nodes,
            Error::invalid(
                "csbm.classes",
                format!("{} must be in 2..={} (the number of nodes)", self.classes, self.nodes)
            )
        );
        crate::ensure!(
            self.mean_degree.is_finite() && self.mean_degree >= 0.0,
            Error::invalid("csbm.mean_degree", format!("{} must be >= 0", self.mean_degree))
        );
        crate::ensure!(
            (0.0..=1.0).contains(&self.homophily),
            Error::invalid("csbm.homophily", format!("{} must be in [0, 1]", self.homophily))
        );
        crate::ensure!(
            self.features >= self.classes,
            Error::invalid("csbm.features", format!("{} must be >= classes ({})", self.features, self.classes))
        );
        crate::ensure!(
            self.signal.is_finite() && self.signal >= 0.0,
            Error::invalid("csbm.signal", format!("{} must be >= 0", self.signal))
        );
        self.ensure_fits()
    }

    /// Refuses sizes this machine cannot hold, before anything is allocated: the feature matrix
    /// (nodes x features f32, drawn through f64 class means), the edge list and graph (16 bytes per
    /// directed edge, then 8 in the CSR), labels and class members. The knob named is the larger term's.
    fn ensure_fits(&self) -> Result<()> {
        let (n, f, c) = (self.nodes as f64, self.features as f64, self.classes as f64);
        let features = n * f * 4.0 + c * f * 8.0;
        // The edge list reserves 1.1 x the expected directed edges (16 bytes each); the CSR adds 8.
        let edges = n * self.mean_degree * (1.1 * 16.0 + 8.0);
        let nodes = n * 8.0 * 4.0;
        let field = if features >= edges + nodes { "csbm.features" } else { "csbm.nodes" };
        super::memory::ensure_fits(
            field,
            &format!("a synthetic graph of {} nodes with {} features", self.nodes, self.features),
            features + edges + nodes,
        )
    }

    /// Draws the dataset (named `synthetic`); identical for identical parameters.
    pub fn generate(&self) -> Result<Dataset> {
        self.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let (n, c) = (self.nodes, self.classes);

        let mut labels: Vec<usize> = (0..n).map(|i| i % c).collect();
        labels.shuffle(&mut rng);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
        for (v, &y) in labels.iter().enumerate() {
            members[y].push(v);
        }

        let sizes: Vec<u64> = members.iter().map(|m| m.len() as u64).collect();
        let pairs_in: u64 = sizes.iter().map(|&s| s * s.saturating_sub(1) / 2).sum();
        let total_pairs = (n as u64) * (n as u64 - 1) / 2;
        let pairs_out = total_pairs - pairs_in;
        let edges = n as f64 * self.mean_degree / 2.0;
        let p_in = if pairs_in > 0 { self.homophily * edges / pairs_in as f64 } else { 0.0 };
        let p_out = if pairs_out > 0 { (1.0 - self.homophily) * edges / pairs_out as f64 } else { 0.0 };
        let need_in = self.homophily * edges > 0.0 && pairs_in == 0;
        let need_out = (1.0 - self.homophily) * edges > 0.0 && pairs_out == 0;
        if need_in {
            return Err(Error::invalid(
                "csbm.homophily",
                format!(
                    "homophily {} needs edges inside classes, but with {} classes of {n} nodes every class has \
                     a single node (lower classes or homophily)",
                    self.homophily, c
                ),
            ));
        }
        if p_in > 1.0 || p_out > 1.0 || need_in || need_out {
            return Err(Error::invalid(
                "csbm.mean_degree",
                format!(
                    "mean degree {} with homophily {} needs more edges than the blocks can hold \
                     (within-class probability {p_in:.3}, across {p_out:.3})",
                    self.mean_degree, self.homophily
                ),
            ));
        }

        let mut edge_list: Vec<(usize, usize)> = Vec::with_capacity((edges * 2.2) as usize);
        for a in 0..c {
            for b in a..c {
                let (pairs, p) = if a == b {
                    (sizes[a] * sizes[a].saturating_sub(1) / 2, p_in)
                } else {
                    (sizes[a] * sizes[b], p_out)
                };
                if pairs == 0 || p <= 0.0 {
                    continue;
                }
                let k = Binomial::new(pairs, p).map_err(|e| Error::invalid("csbm", e))?.sample(&mut rng);
                for t in index::sample(&mut rng, pairs as usize, k as usize).into_iter() {
                    let (i, j) = if a == b {
                        let (i, j) = triangle_pair(t as u64);
                        (members[a][i], members[a][j])
                    } else {
                        let nb = sizes[b] as usize;
                        (members[a][t / nb], members[b][t % nb])
                    };
                    edge_list.push((i, j));
                    edge_list.push((j, i));
                }
            }
        }
        let graph = Graph::from_edges(n, edge_list)?;

        let f = self.features;
        let means = orthonormal_rows(c, f, &mut rng);
        let mut data = Vec::with_capacity(n * f);
        for &y in &labels {
            for k in 0..f {
                let z: f64 = StandardNormal.sample(&mut rng);
                data.push((self.signal * means[y * f + k] + z) as f32);
            }
        }
        let ds = Dataset {
            name: "synthetic".into(),
            graph,
            features: Features::Dense { rows: n, cols: f, data },
            labels,
            num_classes: c,
            split: None,
            class_names: None,
            attr_names: None,
        };
        ds.validate("synthetic")?;
        Ok(ds)
    }

    /// Parses `key=value` overrides separated by commas (the part after `synthetic:`), e.g.
    /// `nodes=10000,homophily=0.3,seed=7`.
    pub fn with_overrides(mut self, spec: &str) -> Result<Self> {
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| Error::invalid("synthetic", format!("'{item}' is not key=value")))?;
            let bad = |e: &dyn std::fmt::Display| Error::invalid(format!("synthetic.{key}"), format!("'{value}': {e}"));
            match key.trim() {
                "nodes" => self.nodes = value.parse().map_err(|e| bad(&e))?,
                "classes" => self.classes = value.parse().map_err(|e| bad(&e))?,
                "mean_degree" | "degree" => self.mean_degree = value.parse().map_err(|e| bad(&e))?,
                "homophily" => self.homophily = value.parse().map_err(|e| bad(&e))?,
                "features" => self.features = value.parse().map_err(|e| bad(&e))?,
                "signal" => self.signal = value.parse().map_err(|e| bad(&e))?,
                "seed" => self.seed = value.parse().map_err(|e| bad(&e))?,
                other => {
                    return Err(Error::invalid(
                        "synthetic",
                        format!(
                            "unknown parameter '{other}' (known: nodes, classes, mean_degree, homophily, features, signal, seed)"
                        ),
                    ))
                }
            }
        }
        self.validate()?;
        Ok(self)
    }
}

/// Maps t in 0..m(m-1)/2 to the pair (i, j), i < j, listing pairs by j then i.
fn triangle_pair(t: u64) -> (usize, usize) {
    let mut j = ((1.0 + (1.0 + 8.0 * t as f64).sqrt()) / 2.0) as u64;
    while j * (j - 1) / 2 > t {
        j -= 1;
    }
    while (j + 1) * j / 2 <= t {
        j += 1;
    }
    ((t - j * (j - 1) / 2) as usize, j as usize)
}

/// `rows` orthonormal vectors of length `cols` (Gram-Schmidt on Gaussian draws), row-major.
fn orthonormal_rows(rows: usize, cols: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let mut q: Vec<f64> = Vec::with_capacity(rows * cols);
    while q.len() < rows * cols {
        let mut v: Vec<f64> = (0..cols).map(|_| StandardNormal.sample(rng)).collect();
        for r in 0..q.len() / cols {
            let row = &q[r * cols..(r + 1) * cols];
            let dot: f64 = row.iter().zip(&v).map(|(a, b)| a * b).sum();
            v.iter_mut().zip(row).for_each(|(x, a)| *x -= dot * a);
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 1e-6 {
            q.extend(v.iter().map(|x| x / norm));
        }
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triangle_pairs_enumerate_all_pairs_once() {
        let m = 7u64;
        let mut seen = std::collections::HashSet::new();
        for t in 0..m * (m - 1) / 2 {
            let (i, j) = triangle_pair(t);
            assert!(i < j && (j as u64) < m);
            assert!(seen.insert((i, j)));
        }
        assert_eq!(seen.len(), 21);
    }

    #[test]
    fn class_means_are_orthonormal() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let q = orthonormal_rows(4, 9, &mut rng);
        for a in 0..4 {
            for b in 0..4 {
                let dot: f64 = (0..9).map(|k| q[a * 9 + k] * q[b * 9 + k]).sum();
                assert!((dot - if a == b { 1.0 } else { 0.0 }).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn impossible_density_is_rejected() {
        let c = Csbm { nodes: 20, classes: 10, mean_degree: 15.0, homophily: 0.9, ..Csbm::default() };
        assert!(matches!(c.generate(), Err(Error::InvalidParam { .. })));
        assert!(Csbm::default().with_overrides("bogus=1").is_err());
        assert!(Csbm::default().with_overrides("homophily=1.5").is_err());
    }
}
