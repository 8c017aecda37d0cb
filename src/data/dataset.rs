//! A node-classification dataset: graph, features, labels and (optionally) a split.
use super::graph::Graph;
use crate::error::{Error, Result};
use tch::{Kind, Tensor};

/// Node features, kept in the layout they came in (bag-of-words files are mostly zeros).
#[derive(Debug, Clone, PartialEq)]
pub enum Features {
    /// Row-major [rows, cols].
    Dense { rows: usize, cols: usize, data: Vec<f32> },
    /// CSR [rows, cols] with sorted column indices per row.
    Sparse { rows: usize, cols: usize, indptr: Vec<usize>, indices: Vec<usize>, data: Vec<f32> },
}

impl Features {
    pub fn rows(&self) -> usize {
        match self {
            Features::Dense { rows, .. } | Features::Sparse { rows, .. } => *rows,
        }
    }
    pub fn cols(&self) -> usize {
        match self {
            Features::Dense { cols, .. } | Features::Sparse { cols, .. } => *cols,
        }
    }
    /// The stored values (for NaN/inf checks and statistics).
    pub fn values(&self) -> &[f32] {
        match self {
            Features::Dense { data, .. } | Features::Sparse { data, .. } => data,
        }
    }
    /// Dense row-major copy.
    pub fn to_dense(&self) -> Vec<f32> {
        match self {
            Features::Dense { data, .. } => data.clone(),
            Features::Sparse { rows, cols, indptr, indices, data } => {
                let mut out = vec![0f32; rows * cols];
                for r in 0..*rows {
                    for k in indptr[r]..indptr[r + 1] {
                        out[r * cols + indices[k]] = data[k];
                    }
                }
                out
            }
        }
    }
    /// Dense float tensor [rows, cols]. Sparse storage is written straight into the tensor,
    /// without a dense Vec in between (a second dense copy: 280 MB for a Reddit-sized matrix).
    pub fn to_tensor(&self) -> Tensor {
        let (rows, cols) = (self.rows(), self.cols());
        let t = match self {
            Features::Dense { data, .. } => Tensor::from_slice(data).reshape([rows as i64, cols as i64]),
            Features::Sparse { indptr, indices, data, .. } => {
                let t = Tensor::zeros([rows as i64, cols as i64], (tch::Kind::Float, tch::Device::Cpu));
                // SAFETY: `t` is a fresh contiguous CPU float tensor of rows * cols elements that
                // nothing else references; the slice covers exactly its storage.
                let out = unsafe { std::slice::from_raw_parts_mut(t.data_ptr() as *mut f32, rows * cols) };
                for r in 0..rows {
                    for k in indptr[r]..indptr[r + 1] {
                        out[r * cols + indices[k]] = data[k];
                    }
                }
                t
            }
        };
        crate::device::place(t)
    }
    /// Sparse COO float tensor [rows, cols] (coalesced) of the non-zero entries, so that wide
    /// bag-of-words features (facebook-pagepage: 22,470 x 4,714) need not be densified;
    /// `x.mm(&w)` works on it directly. CSR storage is read as it is (rows in order, columns
    /// sorted: already coalesced), dense storage entry by entry. Explicit zeros are left out, as
    /// `Tensor::to_sparse` leaves them out of a dense matrix.
    pub fn to_sparse_tensor(&self) -> Tensor {
        let (rows, cols) = (self.rows() as i64, self.cols() as i64);
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        let mut keep = |i: usize, j: usize, x: f32| {
            if x != 0.0 {
                r.push(i as i64);
                c.push(j as i64);
                v.push(x);
            }
        };
        match self {
            Features::Sparse { rows, indptr, indices, data, .. } => {
                for i in 0..*rows {
                    (indptr[i]..indptr[i + 1]).for_each(|k| keep(i, indices[k], data[k]));
                }
            }
            Features::Dense { cols, data, .. } => {
                data.iter().enumerate().for_each(|(k, &x)| keep(k / cols, k % cols, x))
            }
        }
        let idx = Tensor::stack(&[Tensor::from_slice(&r), Tensor::from_slice(&c)], 0);
        Tensor::sparse_coo_tensor_indices_size(
            &idx,
            &Tensor::from_slice(&v),
            [rows, cols],
            (Kind::Float, tch::Device::Cpu),
            true,
        )
        .to_device(crate::device::current())
    }
    /// How many entries are not zero.
    pub fn nonzeros(&self) -> usize {
        self.values().iter().filter(|&&x| x != 0.0).count()
    }
    /// Keeps the given rows, in the given order.
    pub fn select_rows(&self, keep: &[usize]) -> Features {
        match self {
            Features::Dense { cols, data, .. } => {
                let mut out = Vec::with_capacity(keep.len() * cols);
                for &r in keep {
                    out.extend_from_slice(&data[r * cols..(r + 1) * cols]);
                }
                Features::Dense { rows: keep.len(), cols: *cols, data: out }
            }
            Features::Sparse { cols, indptr, indices, data, .. } => {
                let (mut p, mut ix, mut d) = (vec![0usize], Vec::new(), Vec::new());
                for &r in keep {
                    ix.extend_from_slice(&indices[indptr[r]..indptr[r + 1]]);
                    d.extend_from_slice(&data[indptr[r]..indptr[r + 1]]);
                    p.push(ix.len());
                }
                Features::Sparse { rows: keep.len(), cols: *cols, indptr: p, indices: ix, data: d }
            }
        }
    }
}

/// Which nodes train, validate and test. Disjoint; nodes in none of them are unused.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Split {
    pub train: Vec<usize>,
    pub val: Vec<usize>,
    pub test: Vec<usize>,
}

impl Split {
    /// Boolean mask tensor over `n` nodes for one index set.
    pub fn mask(n: usize, idx: &[usize]) -> Tensor {
        let mut m = vec![false; n];
        for &i in idx {
            m[i] = true;
        }
        crate::device::place(Tensor::from_slice(&m))
    }
    pub fn index_tensor(idx: &[usize]) -> Tensor {
        crate::device::place(Tensor::from_slice(&idx.iter().map(|&i| i as i64).collect::<Vec<_>>()))
    }
}

/// The number of classes of labels read from a file: the largest label + 1 (at least the number
/// of class names). A label that cannot be a class id is refused, naming it: with `n` nodes there
/// are at most `n` classes, so a larger id would only create empty classes (a single label of
/// 10^9 once made a 10^9-entry class table and an 8 GB allocation).
pub fn class_count(labels: &[usize], class_names: usize, source: &std::path::Path, column: &str) -> Result<usize> {
    let n = labels.len();
    // Class names, when given, list every class: a label past them is a class nobody named.
    let bound = if class_names > 0 { class_names } else { n };
    if let Some((i, &y)) = labels.iter().enumerate().find(|(_, &y)| y >= bound) {
        let why = if class_names > 0 {
            format!("the file names {class_names} classes, so class ids must be below {class_names}")
        } else {
            format!("with {n} nodes class ids must be below {n}")
        };
        return Err(Error::bad_file(
            source,
            format!("{column}: label {y} of node {i} is not a class id: {why}; number the classes 0..C-1"),
        ));
    }
    Ok(labels.iter().copied().max().map_or(0, |m| m + 1).max(class_names))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub name: String,
    pub graph: Graph,
    pub features: Features,
    /// Class of every node in 0..num_classes.
    pub labels: Vec<usize>,
    pub num_classes: usize,
    pub split: Option<Split>,
    pub class_names: Option<Vec<String>>,
    pub attr_names: Option<Vec<String>>,
}

impl Dataset {
    /// Checks the invariants every loader and transform must keep; the error names `source`.
    pub fn validate(&self, source: &str) -> Result<()> {
        let n = self.graph.num_nodes();
        let bad = |m: String| Err(Error::bad_file(source, m));
        if self.features.rows() != n {
            return bad(format!("features have {} rows but the graph has {n} nodes", self.features.rows()));
        }
        if n == 0 {
            return bad("the graph has no nodes".into());
        }
        if self.features.cols() == 0 {
            return bad("the feature matrix has 0 columns (every node needs at least one feature)".into());
        }
        if self.labels.len() != n {
            return bad(format!("labels have {} entries but the graph has {n} nodes", self.labels.len()));
        }
        if let Some((i, &y)) = self.labels.iter().enumerate().find(|(_, &y)| y >= self.num_classes) {
            return bad(format!("label {y} of node {i} is outside 0..{}", self.num_classes));
        }
        if let Some(pos) = self.features.values().iter().position(|x| !x.is_finite()) {
            return bad(format!("features contain a non-finite value (stored entry {pos})"));
        }
        if let Some(s) = &self.split {
            let mut seen = vec![false; n];
            for &i in s.train.iter().chain(&s.val).chain(&s.test) {
                if i >= n || seen[i] {
                    return bad(format!("split index {i} is out of range or repeated"));
                }
                seen[i] = true;
            }
        }
        Ok(())
    }
    /// Refuses data a classifier cannot learn from or be scored on: no nodes left, a single
    /// class, or an empty training, validation or test set (all would "train" to NaN or 100%).
    /// `filter` names the class filter that ran, so the message can blame it.
    pub fn ensure_trainable(&self, min_class_count: usize) -> Result<()> {
        let n = self.num_nodes();
        let filter = if min_class_count > 1 {
            format!(" (after dropping classes below --min-class-count {min_class_count} and isolated nodes)")
        } else {
            " (after removing isolated nodes)".to_string()
        };
        if n == 0 {
            return Err(Error::invalid("dataset", format!("'{}' has no nodes left{filter}", self.name)));
        }
        let populated = self.class_counts().iter().filter(|&&c| c > 0).count();
        if populated < 2 {
            let field = if min_class_count > 1 { "min_class_count" } else { "dataset" };
            return Err(Error::invalid(
                field,
                format!(
                    "'{}' has a single class left{filter}: a classifier would score 100% and every attack 0.5; \
                     node classification needs at least 2 classes",
                    self.name
                ),
            ));
        }
        if let Some(s) = &self.split {
            for (part, idx) in [("training", &s.train), ("validation", &s.val), ("test", &s.test)] {
                if idx.is_empty() {
                    return Err(Error::invalid(
                        "split",
                        format!("'{}' leaves no {part} nodes ({n} nodes{filter}); use a larger graph", self.name),
                    ));
                }
            }
        }
        Ok(())
    }
    pub fn num_nodes(&self) -> usize {
        self.graph.num_nodes()
    }
    pub fn num_features(&self) -> usize {
        self.features.cols()
    }
    pub fn label_tensor(&self) -> Tensor {
        crate::device::place(Tensor::from_slice(&self.labels.iter().map(|&y| y as i64).collect::<Vec<_>>()))
    }
    pub fn class_counts(&self) -> Vec<usize> {
        let mut c = vec![0; self.num_classes];
        for &y in &self.labels {
            c[y] += 1;
        }
        c
    }
    /// The split, or an error saying which step forgot to make one.
    pub fn split(&self) -> Result<&Split> {
        self.split
            .as_ref()
            .ok_or_else(|| Error::invalid("split", format!("dataset '{}' has no train/val/test split", self.name)))
    }
}

#[cfg(test)]
mod feature_tests {
    use super::Features;
    use tch::Tensor;

    /// Sparse storage written straight into the tensor gives the dense copy's values, with
    /// empty rows and a last column.
    #[test]
    fn sparse_features_become_the_dense_tensor() {
        let f = Features::Sparse {
            rows: 4,
            cols: 3,
            indptr: vec![0, 2, 2, 3, 4],
            indices: vec![0, 2, 1, 2],
            data: vec![1.5, -2.0, 3.0, 4.0],
        };
        let t = f.to_tensor();
        assert_eq!(t.size(), [4, 3]);
        assert!(t.equal(&Tensor::from_slice(&f.to_dense()).view([4, 3])));
        assert_eq!(t.double_value(&[0, 2]), -2.0);
        assert_eq!(t.double_value(&[1, 1]), 0.0);
    }
}
