//! Writes a graph a `command` target trains on in the documented `.npz` layout
//! (docs/datasets.md, read back by `data::npz`): CSR adjacency `adj_*` (symmetric,
//! binary, no self loops), CSR features `attr_*`, `labels`, plus the split gnnaudit chose as
//! boolean masks `train_mask`, `val_mask`, `test_mask` (extra keys every reader ignores).
use crate::error::{Error, Result};
use gnnaudit_attacks::{AttackGraph, NodeSplit};
use ndarray::{arr1, Array1};
use ndarray_npy::NpzWriter;
use std::path::Path;
use tch::Kind;

/// Writes `g` with `split` to `path` (compressed .npz).
pub fn write_graph(path: &Path, g: &AttackGraph, split: &NodeSplit) -> Result<()> {
    let n = g.num_nodes;
    let io = |e: ndarray_npy::WriteNpzError| Error::bad_file(path, format!("cannot write graph: {e}"));
    let file = std::fs::File::create(path).map_err(|e| Error::bad_file(path, e))?;
    let mut z = NpzWriter::new_compressed(file);

    // Adjacency: both directions of every undirected edge, columns sorted within each row.
    let mut adj: Vec<Vec<i64>> = vec![vec![]; n];
    for &(u, v) in &g.edges {
        adj[u].push(v as i64);
        adj[v].push(u as i64);
    }
    let mut indptr = vec![0i64];
    let mut indices = vec![];
    for row in &mut adj {
        row.sort_unstable();
        row.dedup();
        indices.extend_from_slice(row);
        indptr.push(indices.len() as i64);
    }
    z.add_array("adj_data", &Array1::<f32>::ones(indices.len())).map_err(io)?;
    z.add_array("adj_indices", &Array1::from(indices)).map_err(io)?;
    z.add_array("adj_indptr", &Array1::from(indptr)).map_err(io)?;
    z.add_array("adj_shape", &arr1(&[n as i64, n as i64])).map_err(io)?;

    // Features as CSR of their non-zero entries.
    let d = g.num_features();
    let x = Vec::<f32>::try_from(&g.features.to_kind(Kind::Float).contiguous().view([-1]))?;
    let (mut data, mut cols, mut ptr) = (vec![], vec![], vec![0i64]);
    for r in 0..n {
        for (c, &v) in x[r * d..(r + 1) * d].iter().enumerate() {
            if v != 0.0 {
                data.push(v);
                cols.push(c as i64);
            }
        }
        ptr.push(cols.len() as i64);
    }
    z.add_array("attr_data", &Array1::from(data)).map_err(io)?;
    z.add_array("attr_indices", &Array1::from(cols)).map_err(io)?;
    z.add_array("attr_indptr", &Array1::from(ptr)).map_err(io)?;
    z.add_array("attr_shape", &arr1(&[n as i64, d as i64])).map_err(io)?;
    z.add_array("labels", &Array1::from(g.labels.iter().map(|&y| y as i64).collect::<Vec<_>>())).map_err(io)?;
    for (key, nodes) in [("train_mask", &split.train), ("val_mask", &split.val), ("test_mask", &split.test)] {
        let mut mask = vec![false; n];
        for &v in nodes {
            mask[v] = true;
        }
        z.add_array(key, &Array1::from(mask)).map_err(io)?;
    }
    z.finish().map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Tensor;

    #[test]
    fn written_graph_reads_back_through_the_dataset_loader() {
        let x = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 2.5, 0.0, 0.0, 3.0, 4.0]).reshape([4, 2]);
        let g = AttackGraph::new(4, vec![(0, 1), (1, 2), (0, 3)], x, vec![0, 1, 1, 0], 2).unwrap();
        let split = NodeSplit { train: vec![0, 2], val: vec![1], test: vec![3] };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.npz");
        write_graph(&p, &g, &split).unwrap();
        let ds = crate::data::npz::load(&p).unwrap();
        let back = crate::target::attack_graph(&ds).unwrap();
        assert_eq!(back.edges, g.edges);
        assert_eq!(back.labels, g.labels);
        assert_eq!(ds.features.to_dense(), vec![1.0, 0.0, 0.0, 2.5, 0.0, 0.0, 3.0, 4.0]);
    }
}
