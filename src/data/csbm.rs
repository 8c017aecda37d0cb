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
    /// The generator's parameters from a config table (an audit's `[datasets.synthetic]`), defaults
    /// for the keys it leaves out, checked; unknown keys are errors (field `synthetic`).
    pub fn from_table(table: std::collections::BTreeMap<String, toml::Value>) -> Result<Csbm> {
        let csbm = Csbm::deserialize(toml::Value::Table(table.into_iter().collect()))
            .map_err(|e| Error::invalid("synthetic", e.to_string().trim().replace('\n', " ")))?;
        csbm.validate()?;
        Ok(csbm)
    }

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

    /// Peak bytes [`Csbm::generate`] needs, computed before anything is allocated: the feature
    /// matrix (nodes x features f32) and class means (f64); the CSR (8 bytes per directed edge,
    /// 8 per node for the row pointers and 8 more for the fill cursors); labels and class members
    /// (8 + 8 per node); and the index sample of the largest block. There is no edge list: the
    /// edges are written straight into the CSR.
    pub fn memory_estimate(&self) -> f64 {
        let (n, f, c) = (self.nodes as f64, self.features as f64, self.classes as f64);
        let features = n * f * 4.0 + c * f * 8.0;
        let edges = n * self.mean_degree / 2.0;
        let graph = 2.0 * edges * 8.0 + n * 16.0;
        let nodes = n * 16.0;
        let s = (n / c).ceil();
        let (within, across) = (s * (s - 1.0) / 2.0, s * s);
        let pairs_in = c * within;
        let pairs_out = (n * (n - 1.0) / 2.0 - pairs_in).max(1.0);
        let sampler = sampler_bytes(within, self.homophily * edges * within / pairs_in.max(1.0))
            .max(sampler_bytes(across, (1.0 - self.homophily) * edges * across / pairs_out));
        features + graph + nodes + sampler
    }

    /// Refuses sizes this machine cannot hold, before anything is allocated
    /// ([`Csbm::memory_estimate`]). The knob named is the larger term's.
    fn ensure_fits(&self) -> Result<()> {
        let (n, f) = (self.nodes as f64, self.features as f64);
        let features = n * f * 4.0;
        let field = if features >= self.memory_estimate() - features { "csbm.features" } else { "csbm.nodes" };
        super::memory::ensure_fits(
            field,
            &format!("a synthetic graph of {} nodes with {} features", self.nodes, self.features),
            self.memory_estimate(),
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

        // Two passes over the same draws (a cloned generator replays them): the first counts each
        // node's degree, the second writes the CSR in place. No edge list is ever held beside the
        // graph, and the draws, hence the graph, are those of a single pass.
        let blocks = Blocks { members: &members, sizes: &sizes, p_in, p_out };
        let mut indptr = vec![0usize; n + 1];
        blocks.for_each_edge(&mut rng.clone(), |i, j| {
            indptr[i + 1] += 1;
            indptr[j + 1] += 1;
        })?;
        for v in 0..n {
            indptr[v + 1] += indptr[v];
        }
        let mut indices = vec![0usize; indptr[n]];
        let mut next = indptr[..n].to_vec();
        blocks.for_each_edge(&mut rng, |i, j| {
            indices[next[j]] = i;
            next[j] += 1;
            indices[next[i]] = j;
            next[i] += 1;
        })?;
        drop(next);
        // Pairs are distinct and never loops, so sorted rows are a valid CSR as they stand.
        for v in 0..n {
            indices[indptr[v]..indptr[v + 1]].sort_unstable();
        }
        let graph = Graph::from_in_csr(n, indptr, indices)?;

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

/// Bytes `rand::seq::index::sample` (rand 0.8) holds to draw `amount` of `length` indices: a
/// shuffled array of all `length` u32 indices when the sample is dense (amount > length / 36.7,
/// or length / 270 below 500,000), else a hash set beside the index vector (about 32 bytes per
/// drawn index). Taken 10% above the expected amount.
fn sampler_bytes(length: f64, amount: f64) -> f64 {
    let amount = 1.1 * amount;
    let dense = if length < 500_000.0 { 270.0 } else { 330.0 / 9.0 };
    if length <= u32::MAX as f64 && length < dense * amount {
        4.0 * length + 4.0 * amount
    } else {
        32.0 * amount
    }
}

/// The stochastic block model's blocks: class members and the within/across edge probabilities.
struct Blocks<'a> {
    members: &'a [Vec<usize>],
    sizes: &'a [u64],
    p_in: f64,
    p_out: f64,
}

impl Blocks<'_> {
    /// Draws every block's edge count from its binomial and that many distinct pairs, handing each
    /// undirected edge (i, j) to `edge` once. The same generator state gives the same edges.
    fn for_each_edge(&self, rng: &mut ChaCha8Rng, mut edge: impl FnMut(usize, usize)) -> Result<()> {
        let (members, sizes, c) = (self.members, self.sizes, self.members.len());
        for a in 0..c {
            for b in a..c {
                let (pairs, p) = if a == b {
                    (sizes[a] * sizes[a].saturating_sub(1) / 2, self.p_in)
                } else {
                    (sizes[a] * sizes[b], self.p_out)
                };
                if pairs == 0 || p <= 0.0 {
                    continue;
                }
                let k = Binomial::new(pairs, p).map_err(|e| Error::invalid("csbm", e))?.sample(rng);
                for t in index::sample(rng, pairs as usize, k as usize).into_iter() {
                    let (i, j) = if a == b {
                        let (i, j) = triangle_pair(t as u64);
                        (members[a][i], members[a][j])
                    } else {
                        let nb = sizes[b] as usize;
                        (members[a][t / nb], members[b][t % nb])
                    };
                    edge(i, j);
                }
            }
        }
        Ok(())
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
