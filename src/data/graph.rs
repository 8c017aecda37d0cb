//! The graph: a CSR of in-neighbour lists, so that row v lists the sources u of edges u -> v and
//! one sparse matmul computes A^T X (each node sums what its in-neighbours send).
use crate::error::{Error, Result};
use tch::{Kind, Tensor};

#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    num_nodes: usize,
    /// Row pointers, length num_nodes + 1.
    indptr: Vec<usize>,
    /// Sources of the edges into each node, sorted within each row, no duplicates.
    indices: Vec<usize>,
}

impl Graph {
    /// Builds from (source, target) pairs; duplicates are collapsed. Direction is kept as given.
    /// Bucketed by target (a counting sort), then each row sorted: O(edges) plus short sorts, where
    /// one sort of all pairs took a tenth of a second on a million edges.
    pub fn from_edges(num_nodes: usize, edges: impl IntoIterator<Item = (usize, usize)>) -> Result<Self> {
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for (u, v) in edges {
            if u >= num_nodes || v >= num_nodes {
                return Err(Error::invalid("edge", format!("({u}, {v}) is out of range for {num_nodes} nodes")));
            }
            pairs.push((u, v));
        }
        let mut indptr = vec![0usize; num_nodes + 1];
        for &(_, v) in &pairs {
            indptr[v + 1] += 1;
        }
        for i in 0..num_nodes {
            indptr[i + 1] += indptr[i];
        }
        let mut next = indptr[..num_nodes].to_vec();
        let mut bucketed = vec![0usize; pairs.len()];
        for (u, v) in pairs {
            bucketed[next[v]] = u;
            next[v] += 1;
        }
        // Each row sorted and deduplicated; the row pointers shrink with the duplicates.
        let mut indices = Vec::with_capacity(bucketed.len());
        let mut start = 0;
        for v in 0..num_nodes {
            let end = indptr[v + 1];
            let row = &mut bucketed[start..end];
            row.sort_unstable();
            let row_start = indices.len();
            for &u in row.iter() {
                if indices.len() == row_start || indices.last() != Some(&u) {
                    indices.push(u);
                }
            }
            start = end;
            indptr[v + 1] = indices.len();
        }
        Ok(Graph { num_nodes, indptr, indices })
    }

    /// Builds from a CSR whose rows are *targets* (in-neighbour lists). Validates every invariant.
    pub fn from_in_csr(num_nodes: usize, indptr: Vec<usize>, indices: Vec<usize>) -> Result<Self> {
        if indptr.len() != num_nodes + 1 {
            return Err(Error::invalid(
                "indptr",
                format!("length {} but {} nodes need {}", indptr.len(), num_nodes, num_nodes + 1),
            ));
        }
        if indptr[0] != 0 || *indptr.last().unwrap() != indices.len() || indptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid("indptr", "row pointers are not monotone from 0 to nnz"));
        }
        if let Some(&bad) = indices.iter().find(|&&u| u >= num_nodes) {
            return Err(Error::invalid("indices", format!("node index {bad} is out of range for {num_nodes} nodes")));
        }
        let mut g = Graph { num_nodes, indptr, indices };
        // Canonicalise rows (sorted, no duplicates) if the input was not.
        if (0..num_nodes).any(|v| g.in_neighbors(v).windows(2).any(|w| w[0] >= w[1])) {
            let edges: Vec<_> = g.edges().collect();
            g = Graph::from_edges(num_nodes, edges)?;
        }
        Ok(g)
    }

    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }
    /// Number of stored directed edges (an undirected edge counts twice).
    pub fn num_directed_edges(&self) -> usize {
        self.indices.len()
    }
    pub fn indptr(&self) -> &[usize] {
        &self.indptr
    }
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }
    pub fn in_neighbors(&self, v: usize) -> &[usize] {
        &self.indices[self.indptr[v]..self.indptr[v + 1]]
    }
    pub fn in_degree(&self, v: usize) -> usize {
        self.indptr[v + 1] - self.indptr[v]
    }
    pub fn in_degrees(&self) -> Vec<usize> {
        (0..self.num_nodes).map(|v| self.in_degree(v)).collect()
    }
    pub fn out_degrees(&self) -> Vec<usize> {
        let mut d = vec![0; self.num_nodes];
        for &u in &self.indices {
            d[u] += 1;
        }
        d
    }
    /// All directed edges as (source, target).
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.num_nodes).flat_map(move |v| self.in_neighbors(v).iter().map(move |&u| (u, v)))
    }
    pub fn has_edge(&self, u: usize, v: usize) -> bool {
        self.in_neighbors(v).binary_search(&u).is_ok()
    }
    /// True when every edge u -> v has its reverse v -> u (compares the CSR with its transpose,
    /// O(edges)).
    pub fn is_symmetric(&self) -> bool {
        let t = self.reversed();
        t.indptr == self.indptr && t.indices == self.indices
    }
    /// The graph with every edge reversed: its row u lists the out-neighbours of u here. Counting
    /// sort, O(nodes + edges); rows come out sorted.
    pub fn reversed(&self) -> Graph {
        let n = self.num_nodes;
        let mut indptr = vec![0usize; n + 1];
        for &u in &self.indices {
            indptr[u + 1] += 1;
        }
        for i in 0..n {
            indptr[i + 1] += indptr[i];
        }
        let mut next = indptr[..n].to_vec();
        let mut indices = vec![0usize; self.indices.len()];
        for v in 0..n {
            for &u in self.in_neighbors(v) {
                indices[next[u]] = v;
                next[u] += 1;
            }
        }
        Graph { num_nodes: n, indptr, indices }
    }
    /// Undirected edges {u, v} with u < v, each once (self loops listed as (u, u)).
    pub fn undirected_edges(&self) -> Vec<(usize, usize)> {
        let mut e: Vec<_> = self.edges().map(|(u, v)| (u.min(v), u.max(v))).collect();
        e.sort_unstable();
        e.dedup();
        e
    }
    pub fn num_self_loops(&self) -> usize {
        self.edges().filter(|(u, v)| u == v).count()
    }

    /// Sparse adjacency as a COO tensor `A^T` of shape [N, N]: entry (v, u) = 1 for each edge
    /// u -> v, so that `adj.mm(x)` sums in-neighbour rows. Values are f32 ones.
    pub fn aggregation_tensor(&self) -> Tensor {
        let n = self.num_nodes as i64;
        let mut rows = Vec::with_capacity(self.indices.len());
        for v in 0..self.num_nodes {
            rows.extend(std::iter::repeat_n(v as i64, self.in_degree(v)));
        }
        let cols: Vec<i64> = self.indices.iter().map(|&u| u as i64).collect();
        let idx = Tensor::stack(&[Tensor::from_slice(&rows), Tensor::from_slice(&cols)], 0);
        let vals = Tensor::ones([cols.len() as i64], (Kind::Float, tch::Device::Cpu));
        Tensor::sparse_coo_tensor_indices_size(&idx, &vals, [n, n], (Kind::Float, tch::Device::Cpu), true)
            .to_device(crate::device::current())
    }

    /// Edge index [2, E] (row 0 sources, row 1 targets), int64.
    pub fn edge_index_tensor(&self) -> Tensor {
        let (src, dst): (Vec<i64>, Vec<i64>) = self.edges().map(|(u, v)| (u as i64, v as i64)).unzip();
        crate::device::place(Tensor::stack(&[Tensor::from_slice(&src), Tensor::from_slice(&dst)], 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The bucketed build gives what sorting all (target, source) pairs and dropping repeats
    /// gives, on a multigraph with repeated edges, self loops and empty rows.
    #[test]
    fn from_edges_sorts_rows_and_drops_repeats() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let n = 40;
        let edges: Vec<(usize, usize)> = (0..600).map(|_| (rng.gen_range(0..n), rng.gen_range(0..n / 2))).collect();
        let g = Graph::from_edges(n, edges.iter().copied()).unwrap();
        let mut pairs: Vec<(usize, usize)> = edges.iter().map(|&(u, v)| (v, u)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(g.edges().map(|(u, v)| (v, u)).collect::<Vec<_>>(), pairs);
        assert_eq!(g.indptr().len(), n + 1);
        assert!((n / 2..n).all(|v| g.in_degree(v) == 0));
        assert!(Graph::from_edges(3, [(0, 3)]).is_err());
    }
}
