//! Reader for the gnn-benchmark `.npz` layout (shchur/gnn-benchmark; docs/datasets.md).
//!
//! Keys: `adj_{data,indices,indptr,shape}` (CSR adjacency; row u, column v means the edge u -> v),
//! `attr_{data,indices,indptr,shape}` (CSR features, kept sparse) or a dense `attr_matrix`, and
//! `labels` (dense ints, or a one-hot CSR `labels_{data,indices,indptr,shape}`, or a dense one-hot
//! matrix). A dense `adj_matrix` is accepted in place of the adjacency CSR. Index arrays may be any
//! integer width, labels int8, values float or int; unknown keys are ignored. Optional
//! `class_names` / `attr_names` (NumPy fixed-width unicode) are read when present.
//!
//! Every problem is reported as [`Error::BadFile`] naming the file and the key at fault.
use super::dataset::{Dataset, Features};
use super::graph::Graph;
use crate::error::{Error, Result};
use ndarray::{ArrayD, IxDyn, OwnedRepr};
use ndarray_npy::{NpzReader, ReadNpyError, ReadNpzError};
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};

/// Loads a gnn-benchmark `.npz` file. The dataset is named after the file stem.
pub fn load(path: &Path) -> Result<Dataset> {
    let file = File::open(path).map_err(|e| Error::bad_file(path, format!("cannot open: {e}")))?;
    let zip = NpzReader::new(BufReader::new(file))
        .map_err(|e| Error::bad_file(path, format!("not a readable .npz archive ({e})")))?;
    let mut npz = Npz::new(path, zip)?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "npz".into());

    let t = std::time::Instant::now();
    let graph = npz.adjacency()?;
    tracing::debug!("{}: adjacency in {:?}", path.display(), t.elapsed());
    let n = graph.num_nodes();
    let features = npz.features(n)?;
    tracing::debug!("{}: + features in {:?}", path.display(), t.elapsed());
    let labels = npz.labels(n)?;
    let class_names = npz.strings("class_names")?;
    let attr_names = npz.strings("attr_names")?.filter(|a| a.len() == features.cols());
    tracing::debug!("{}: + labels and names in {:?}", path.display(), t.elapsed());
    let num_classes =
        super::dataset::class_count(&labels, class_names.as_ref().map_or(0, |c| c.len()), path, "'labels'")?;
    let ds = Dataset { name, graph, features, labels, num_classes, split: None, class_names, attr_names };
    ds.validate(&path.display().to_string())?;
    Ok(ds)
}

/// A 1-D or n-D numeric array read from the archive, converted to one element type.
struct Array<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

struct Npz<R: Read + Seek> {
    path: PathBuf,
    zip: NpzReader<R>,
    keys: HashSet<String>,
}

/// Tries each element type in turn; a wrong dtype is cheap to detect (header only).
macro_rules! read_as {
    ($self:ident, $key:expr, $conv:expr, [$($t:ty),*]) => {{
        $(
            match $self.zip.by_name::<OwnedRepr<$t>, IxDyn>($key) {
                Ok(a) => return Ok(convert(a, $conv)),
                Err(ReadNpzError::Npy(ReadNpyError::WrongDescriptor(_))) => {}
                Err(e) => return Err($self.bad(format!("cannot read key '{}': {e}", $key))),
            }
        )*
    }};
}

fn convert<S: Copy, T>(a: ArrayD<S>, conv: impl Fn(S) -> T) -> Array<T> {
    // `iter` walks in logical (C) order even when the file stored the array in Fortran order.
    Array { shape: a.shape().to_vec(), data: a.iter().map(|&x| conv(x)).collect() }
}

impl<R: Read + Seek> Npz<R> {
    fn new(path: &Path, mut zip: NpzReader<R>) -> Result<Self> {
        let keys = zip
            .names()
            .map_err(|e| Error::bad_file(path, format!("not a readable .npz archive ({e})")))?
            .into_iter()
            .collect();
        Ok(Npz { path: path.to_path_buf(), zip, keys })
    }

    fn bad(&self, msg: impl std::fmt::Display) -> Error {
        Error::bad_file(&self.path, msg)
    }

    fn has(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    fn require(&self, key: &str, what: &str) -> Result<()> {
        if self.has(key) {
            Ok(())
        } else {
            let mut present: Vec<_> = self.keys.iter().cloned().collect();
            present.sort();
            Err(self.bad(format!("missing key '{key}' ({what}); keys present: [{}]", present.join(", "))))
        }
    }

    /// Any integer (or bool) array as i64.
    #[allow(clippy::unnecessary_cast)] // the macro casts every candidate type, i64 included
    fn ints(&mut self, key: &str) -> Result<Array<i64>> {
        self.require(key, "integer array")?;
        // uint64 entries above i64::MAX would wrap to negative numbers: refuse them by value.
        match self.zip.by_name::<OwnedRepr<u64>, IxDyn>(key) {
            Ok(a) => {
                if let Some((i, &x)) = a.iter().enumerate().find(|(_, &x)| x > i64::MAX as u64) {
                    return Err(
                        self.bad(format!("key '{key}'[{i}] = {x} is above the largest supported integer {}", i64::MAX))
                    );
                }
                return Ok(convert(a, |x| x as i64));
            }
            Err(ReadNpzError::Npy(ReadNpyError::WrongDescriptor(_))) => {}
            Err(e) => return Err(self.bad(format!("cannot read key '{key}': {e}"))),
        }
        read_as!(self, key, |x| x as i64, [i64, i32, u32, i16, u16, i8, u8]);
        read_as!(self, key, i64::from, [bool]);
        Err(self.bad(format!("key '{key}' is not an integer array")))
    }

    /// Any numeric array as f32 (f64 values beyond f32's range become inf and are caught later).
    fn floats(&mut self, key: &str) -> Result<Array<f32>> {
        self.require(key, "numeric array")?;
        read_as!(self, key, |x| x, [f32]);
        read_as!(self, key, |x| x as f32, [f64, i64, i32, u32, i16, u16, i8, u8, u64]);
        read_as!(self, key, |x| if x { 1.0 } else { 0.0 }, [bool]);
        Err(self.bad(format!("key '{key}' is not a numeric array")))
    }

    /// A 1-D integer array of non-negative entries, as usize.
    fn indices(&mut self, key: &str) -> Result<Vec<usize>> {
        let a = self.ints(key)?;
        if a.shape.len() != 1 {
            return Err(self.bad(format!("key '{key}' must be 1-D, has shape {:?}", a.shape)));
        }
        if let Some((i, &x)) = a.data.iter().enumerate().find(|(_, &x)| x < 0) {
            return Err(self.bad(format!("key '{key}' has a negative entry {x} at position {i}")));
        }
        Ok(a.data.into_iter().map(|x| x as usize).collect())
    }

    /// Reads a CSR matrix `{prefix}_{data,indices,indptr,shape}` and checks its structure.
    fn csr(&mut self, prefix: &str) -> Result<Csr> {
        let shape = self.indices(&format!("{prefix}_shape"))?;
        if shape.len() != 2 {
            return Err(self.bad(format!("key '{prefix}_shape' must have 2 entries, has {}", shape.len())));
        }
        let indptr = self.indices(&format!("{prefix}_indptr"))?;
        let indices = self.indices(&format!("{prefix}_indices"))?;
        let data_key = format!("{prefix}_data");
        let data = if self.has(&data_key) {
            let d = self.floats(&data_key)?;
            if d.shape.len() != 1 {
                return Err(self.bad(format!("key '{data_key}' must be 1-D, has shape {:?}", d.shape)));
            }
            d.data
        } else {
            vec![1.0; indices.len()]
        };
        let (rows, cols) = (shape[0], shape[1]);
        if indptr.len() != rows + 1 {
            return Err(self.bad(format!(
                "shape mismatch: '{prefix}_indptr' has {} entries but '{prefix}_shape' says {rows} rows (needs {})",
                indptr.len(),
                rows + 1
            )));
        }
        if indptr[0] != 0 || indptr.windows(2).any(|w| w[0] > w[1]) || indptr[rows] != indices.len() {
            return Err(self.bad(format!(
                "'{prefix}_indptr' is not monotone from 0 to the {} stored entries (ends at {})",
                indices.len(),
                indptr[rows]
            )));
        }
        if data.len() != indices.len() {
            return Err(self.bad(format!(
                "shape mismatch: '{data_key}' has {} entries but '{prefix}_indices' has {}",
                data.len(),
                indices.len()
            )));
        }
        if let Some((k, &c)) = indices.iter().enumerate().find(|(_, &c)| c >= cols) {
            return Err(self
                .bad(format!("index out of range: '{prefix}_indices'[{k}] = {c} but the matrix has {cols} columns")));
        }
        Ok(Csr { rows, cols, indptr, indices, data })
    }

    /// A dense 2-D matrix as (rows, cols, row-major values).
    fn dense(&mut self, key: &str) -> Result<Csr> {
        let a = self.floats(key)?;
        if a.shape.len() != 2 {
            return Err(self.bad(format!("key '{key}' must be 2-D, has shape {:?}", a.shape)));
        }
        let (rows, cols) = (a.shape[0], a.shape[1]);
        let mut indptr = Vec::with_capacity(rows + 1);
        let (mut indices, mut data) = (Vec::new(), Vec::new());
        indptr.push(0);
        for r in 0..rows {
            for (c, &x) in a.data[r * cols..(r + 1) * cols].iter().enumerate() {
                if x != 0.0 {
                    indices.push(c);
                    data.push(x);
                }
            }
            indptr.push(indices.len());
        }
        Ok(Csr { rows, cols, indptr, indices, data })
    }

    /// The adjacency as a graph of in-neighbour lists: CSR entry (u, v) is the edge u -> v, so the
    /// graph's row v collects the sources u (a transpose, done by counting sort in O(nnz)).
    fn adjacency(&mut self) -> Result<Graph> {
        let a = if !self.has("adj_indptr") && self.has("adj_matrix") {
            self.dense("adj_matrix")?
        } else {
            self.csr("adj")?
        };
        if a.rows != a.cols {
            return Err(self.bad(format!("shape mismatch: the adjacency must be square, is {} x {}", a.rows, a.cols)));
        }
        // A weight is an edge when it is > 0; NaN or a negative weight has no meaning as an edge,
        // and counting it as one (it is != 0) would be a silent guess.
        if let Some((k, &w)) = a.data.iter().enumerate().find(|(_, &w)| w.is_nan() || w < 0.0) {
            let key = if self.has("adj_indptr") || !self.has("adj_matrix") { "adj_data" } else { "adj_matrix" };
            let row = a.indptr.partition_point(|&p| p <= k).saturating_sub(1);
            return Err(self.bad(format!(
                "key '{key}': the edge ({row}, {}) has weight {w}; edge weights must be >= 0 (0 = no edge)",
                a.indices[k]
            )));
        }
        let n = a.rows;
        let mut indptr = vec![0usize; n + 1];
        for (k, &v) in a.indices.iter().enumerate() {
            if a.data[k] != 0.0 {
                indptr[v + 1] += 1;
            }
        }
        for i in 0..n {
            indptr[i + 1] += indptr[i];
        }
        let mut next = indptr.clone();
        let mut sources = vec![0usize; indptr[n]];
        for u in 0..n {
            for k in a.indptr[u]..a.indptr[u + 1] {
                if a.data[k] != 0.0 {
                    let v = a.indices[k];
                    sources[next[v]] = u;
                    next[v] += 1;
                }
            }
        }
        // Sources arrive in increasing u, so rows are sorted; from_in_csr collapses duplicates.
        Graph::from_in_csr(n, indptr, sources).map_err(|e| self.bad(format!("adjacency: {e}")))
    }

    fn features(&mut self, n: usize) -> Result<Features> {
        if self.has("attr_indptr") || !self.has("attr_matrix") {
            let mut x = self.csr("attr").map_err(|e| match e {
                Error::BadFile { path, message } if message.starts_with("missing key") => Error::bad_file(
                    path,
                    format!(
                        "{message}; node features need attr_data/attr_indices/attr_indptr/attr_shape or attr_matrix"
                    ),
                ),
                e => e,
            })?;
            if x.rows != n {
                return Err(
                    self.bad(format!("shape mismatch: features have {} rows but the adjacency has {n} nodes", x.rows))
                );
            }
            x.canonicalize();
            Ok(Features::Sparse { rows: x.rows, cols: x.cols, indptr: x.indptr, indices: x.indices, data: x.data })
        } else {
            let a = self.floats("attr_matrix")?;
            if a.shape.len() != 2 || a.shape[0] != n {
                return Err(self.bad(format!(
                    "shape mismatch: 'attr_matrix' has shape {:?} but the adjacency has {n} nodes",
                    a.shape
                )));
            }
            Ok(Features::Dense { rows: n, cols: a.shape[1], data: a.data })
        }
    }

    fn labels(&mut self, n: usize) -> Result<Vec<usize>> {
        let labels = if self.has("labels") {
            let ints = match self.ints("labels") {
                Ok(a) => a,
                Err(e) if !e.to_string().contains("is not an integer array") => return Err(e),
                Err(_) => {
                    // Float labels are accepted when they hold whole numbers.
                    let f = self.floats("labels")?;
                    if let Some(x) = f.data.iter().find(|x| x.fract() != 0.0 || !x.is_finite()) {
                        return Err(self.bad(format!("'labels' holds a non-integer value {x}")));
                    }
                    Array { shape: f.shape, data: f.data.into_iter().map(|x| x as i64).collect() }
                }
            };
            match ints.shape.len() {
                1 => {
                    if let Some((i, &y)) = ints.data.iter().enumerate().find(|(_, &y)| y < 0) {
                        return Err(self.bad(format!(
                            "negative label {y} for node {i} (labels must be class ids 0..C-1; unlabelled nodes are not supported)"
                        )));
                    }
                    ints.data.into_iter().map(|y| y as usize).collect()
                }
                2 => {
                    let (rows, cols) = (ints.shape[0], ints.shape[1]);
                    let mut y = Vec::with_capacity(rows);
                    for r in 0..rows {
                        let row = &ints.data[r * cols..(r + 1) * cols];
                        let set: Vec<usize> = (0..cols).filter(|&c| row[c] != 0).collect();
                        y.push(self.one_class("'labels'", r, &set)?);
                    }
                    y
                }
                d => return Err(self.bad(format!("'labels' must be 1-D or a 2-D one-hot matrix, has {d} dims"))),
            }
        } else if self.has("labels_indptr") {
            let a = self.csr("labels")?;
            let mut y = Vec::with_capacity(a.rows);
            for r in 0..a.rows {
                let mut set: Vec<usize> =
                    (a.indptr[r]..a.indptr[r + 1]).filter(|&k| a.data[k] != 0.0).map(|k| a.indices[k]).collect();
                set.sort_unstable();
                set.dedup();
                y.push(self.one_class("one-hot CSR labels", r, &set)?);
            }
            y
        } else {
            self.require("labels", "node labels; or labels_data/labels_indices/labels_indptr/labels_shape")?;
            unreachable!()
        };
        if labels.len() != n {
            return Err(
                self.bad(format!("shape mismatch: labels cover {} nodes but the adjacency has {n}", labels.len()))
            );
        }
        Ok(labels)
    }

    /// The class of one one-hot row: exactly one column may be set (two would be an ambiguous
    /// label that picking one would resolve silently).
    fn one_class(&self, what: &str, row: usize, set: &[usize]) -> Result<usize> {
        match set {
            [c] => Ok(*c),
            [] => Err(self.bad(format!("{what}: row {row} has no class"))),
            many => Err(self.bad(format!(
                "{what}: row {row} is ambiguous, it sets {} classes (columns {:?}); a node needs exactly one",
                many.len(),
                many
            ))),
        }
    }

    /// An optional NumPy fixed-width unicode array (`<U n`): read raw, since it is not numeric.
    fn strings(&mut self, key: &str) -> Result<Option<Vec<String>>> {
        if !self.has(key) {
            return Ok(None);
        }
        // Strings are informative only: a key we cannot decode is skipped, never fatal.
        Ok(read_unicode(&self.path, key).ok())
    }
}

/// A CSR matrix as read from the file (rows, columns, pointers, column indices, values).
struct Csr {
    rows: usize,
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
    data: Vec<f32>,
}

impl Csr {
    /// Sorts column indices within rows and sums duplicates (scipy's canonical format).
    fn canonicalize(&mut self) {
        let sorted =
            (0..self.rows).all(|r| self.indices[self.indptr[r]..self.indptr[r + 1]].windows(2).all(|w| w[0] < w[1]));
        if sorted {
            return;
        }
        let (mut p, mut ix, mut d) = (vec![0usize], Vec::new(), Vec::new());
        for r in 0..self.rows {
            let mut row: Vec<(usize, f32)> =
                (self.indptr[r]..self.indptr[r + 1]).map(|k| (self.indices[k], self.data[k])).collect();
            row.sort_by_key(|e| e.0);
            for (c, x) in row {
                if ix.len() > *p.last().unwrap() && *ix.last().unwrap() == c {
                    *d.last_mut().unwrap() += x;
                } else {
                    ix.push(c);
                    d.push(x);
                }
            }
            p.push(ix.len());
        }
        self.indptr = p;
        self.indices = ix;
        self.data = d;
    }
}

/// Decodes a NumPy fixed-width unicode member (`<U n`: n little-endian UTF-32 code points per
/// element, zero padded). ndarray-npy reads only numeric arrays, so this parses the `.npy` header.
fn read_unicode(path: &Path, key: &str) -> std::result::Result<Vec<String>, String> {
    let raw = raw_member(path, key).map_err(|e| e.to_string())?;
    decode_unicode_npy(&raw)
}

/// The bytes of one `.npy` member, uncompressed (through the zip crate ndarray-npy uses).
fn raw_member(path: &Path, key: &str) -> std::io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let mut archive = zip::ZipArchive::new(BufReader::new(file)).map_err(std::io::Error::other)?;
    let with_suffix = format!("{key}.npy");
    let name = if archive.index_for_name(&with_suffix).is_some() { with_suffix.as_str() } else { key };
    let mut member = archive.by_name(name).map_err(std::io::Error::other)?;
    let mut buf = Vec::new();
    member.read_to_end(&mut buf)?;
    Ok(buf)
}

fn decode_unicode_npy(raw: &[u8]) -> std::result::Result<Vec<String>, String> {
    if raw.len() < 10 || &raw[..6] != b"\x93NUMPY" {
        return Err("bad npy magic".into());
    }
    let (header_len, start) = match raw[6] {
        1 => (u16::from_le_bytes([raw[8], raw[9]]) as usize, 10),
        _ if raw.len() >= 12 => (u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]) as usize, 12),
        _ => return Err("truncated header".into()),
    };
    let header = raw.get(start..start + header_len).ok_or("truncated header")?;
    let header = String::from_utf8_lossy(header);
    let descr_at = header.find("'descr'").ok_or("no descr")?;
    let rest = &header[descr_at + 7..];
    let open = rest.find('\'').ok_or("no descr value")?;
    let close = rest[open + 1..].find('\'').ok_or("no descr value")?;
    let descr = &rest[open + 1..open + 1 + close];
    let width: usize = descr.strip_prefix("<U").and_then(|w| w.parse().ok()).ok_or("not a <U array")?;
    if header.contains("'fortran_order': True") {
        return Err("Fortran-ordered string array".into());
    }
    let body = &raw[start + header_len..];
    let item = 4 * width;
    if item == 0 || !body.len().is_multiple_of(item) {
        return Err("body length is not a multiple of the item size".into());
    }
    Ok(body
        .chunks(item)
        .map(|chunk| {
            chunk
                .chunks(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .take_while(|&c| c != 0)
                .filter_map(char::from_u32)
                .collect()
        })
        .collect())
}
