//! Released posteriors: the class probabilities a deployment publishes for every node, read from
//! `.npy` ([N, C] float, row = node id), CSV or Parquet (a `node`/`node_id`/`id` column plus one
//! column per class, in class order), validated, and served as a black box. Metric membership
//! attacks and link stealing need nothing more.
use super::members::{table_ints, ID_COLUMNS};
use crate::error::{Error, Result};
use gnnaudit_attacks as attacks;
use gnnaudit_attacks::BlackBox;
use std::path::Path;
use tch::{Kind, Tensor};

/// How far a row may sum from 1 (float32 softmax outputs are within ~1e-6; CSV round trips with
/// 4 to 6 decimals within ~1e-4).
pub const ROW_SUM_TOLERANCE: f64 = 1e-3;

/// Reads and validates released posteriors for a dataset of `num_nodes` nodes and `num_classes`
/// classes. Every error names the file.
pub fn load_posteriors(path: &Path, num_nodes: usize, num_classes: usize) -> Result<Tensor> {
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let (rows, cols, data) = match ext.as_str() {
        "npy" => read_npy_matrix(path)?,
        "csv" | "parquet" | "pq" => read_table_matrix(path, num_nodes)?,
        other => {
            return Err(Error::bad_file(
                path,
                format!("unknown posteriors format '.{other}' (expected .npy, .csv or .parquet)"),
            ))
        }
    };
    let t = Tensor::from_slice(&data).reshape([rows as i64, cols as i64]);
    check_posteriors(path, &t, num_nodes, num_classes, true)?;
    Ok(t)
}

/// Checks shape [num_nodes, num_classes], finiteness and, when `probabilities`, that every row is
/// a distribution (entries in [0, 1], sum 1 within [`ROW_SUM_TOLERANCE`]).
pub fn check_posteriors(
    source: &Path,
    t: &Tensor,
    num_nodes: usize,
    num_classes: usize,
    probabilities: bool,
) -> Result<()> {
    let size = t.size();
    crate::ensure!(
        size.len() == 2,
        Error::bad_file(source, format!("posteriors have shape {size:?}, expected [nodes, classes]"))
    );
    crate::ensure!(
        size[0] as usize == num_nodes && size[1] as usize == num_classes,
        Error::bad_file(
            source,
            format!(
                "posteriors have shape [{}, {}], the dataset has {num_nodes} nodes and {num_classes} classes",
                size[0], size[1]
            )
        )
    );
    let t = t.to_kind(Kind::Double);
    let finite = t.isfinite().all_dim(1, false);
    if let Some(r) = first_false(&finite)? {
        return Err(Error::bad_file(source, format!("row {r} (node {r}) holds NaN or infinite values")));
    }
    if probabilities {
        let in_range = t.ge(0.0).logical_and(&t.le(1.0 + ROW_SUM_TOLERANCE)).all_dim(1, false);
        if let Some(r) = first_false(&in_range)? {
            return Err(Error::bad_file(
                source,
                format!("row {r} (node {r}) has an entry outside [0, 1]: these are not probabilities (logits?)"),
            ));
        }
        let sums = t.sum_dim_intlist([1i64].as_slice(), false, Kind::Double);
        let ok = (&sums - 1.0).abs().le(ROW_SUM_TOLERANCE);
        if let Some(r) = first_false(&ok)? {
            let s = sums.double_value(&[r as i64]);
            return Err(Error::bad_file(
                source,
                format!("row {r} (node {r}) sums to {s:.6}, not 1 (tolerance {ROW_SUM_TOLERANCE}): posteriors must be probabilities"),
            ));
        }
    }
    Ok(())
}

fn first_false(mask: &Tensor) -> Result<Option<usize>> {
    let v = Vec::<bool>::try_from(mask)?;
    Ok(v.iter().position(|&b| !b))
}

/// A 2-D float .npy array (float32 or float64) as (rows, cols, row-major f32).
pub fn read_npy_matrix(path: &Path) -> Result<(usize, usize, Vec<f32>)> {
    use ndarray::{Array2, ArrayD};
    use ndarray_npy::ReadNpyExt;
    let open = || std::fs::File::open(path).map_err(|e| Error::bad_file(path, e));
    let shape_of = |a: &ArrayD<f32>| a.shape().to_vec();
    if let Ok(a) = Array2::<f32>::read_npy(open()?) {
        return Ok((a.nrows(), a.ncols(), a.iter().copied().collect()));
    }
    if let Ok(a) = Array2::<f64>::read_npy(open()?) {
        return Ok((a.nrows(), a.ncols(), a.iter().map(|&x| x as f32).collect()));
    }
    if let Ok(a) = ArrayD::<f32>::read_npy(open()?) {
        return Err(Error::bad_file(path, format!("array of shape {:?}, expected [nodes, classes]", shape_of(&a))));
    }
    if let Ok(a) = ArrayD::<f64>::read_npy(open()?) {
        return Err(Error::bad_file(path, format!("array of shape {:?}, expected [nodes, classes]", a.shape())));
    }
    Err(Error::bad_file(path, "not a float32/float64 .npy array of shape [nodes, classes]"))
}

/// A posteriors table: the id column places each row; every id 0..num_nodes must occur once.
fn read_table_matrix(path: &Path, num_nodes: usize) -> Result<(usize, usize, Vec<f32>)> {
    use polars::prelude::DataType;
    let df = crate::data::table::read_table(path)?;
    let names: Vec<String> = df.get_column_names_str().iter().map(|s| s.to_string()).collect();
    let id = ID_COLUMNS.iter().find(|c| names.iter().any(|n| n == *c)).ok_or_else(|| {
        Error::bad_file(path, format!("no node id column (one of {ID_COLUMNS:?}); columns present: {names:?}"))
    })?;
    let ids = table_ints(&df, path, id)?;
    let class_cols: Vec<&String> = names.iter().filter(|n| n.as_str() != *id).collect();
    crate::ensure!(!class_cols.is_empty(), Error::bad_file(path, "no class probability column"));
    let mut cols = Vec::with_capacity(class_cols.len());
    for name in &class_cols {
        let col = df.column(name).map_err(|e| Error::bad_file(path, e))?;
        crate::ensure!(
            col.dtype().is_primitive_numeric(),
            Error::bad_file(path, format!("column '{name}' holds {}, expected class probabilities", col.dtype()))
        );
        let c = col.cast(&DataType::Float64).map_err(|e| Error::bad_file(path, e))?;
        let v: Vec<Option<f64>> = c.f64().map_err(|e| Error::bad_file(path, e))?.into_iter().collect();
        // An empty cell (a short CSV row, a null in Parquet) is a malformed file, not a NaN.
        if let Some(r) = v.iter().position(Option::is_none) {
            return Err(Error::bad_file(
                path,
                format!("row {r} has no value in column '{name}' (a short or empty row?); every row needs one value per class"),
            ));
        }
        cols.push(v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect::<Vec<f64>>());
    }
    let c = cols.len();
    let mut data = vec![f32::NAN; num_nodes * c];
    let mut seen = vec![false; num_nodes];
    for (r, &v) in ids.iter().enumerate() {
        crate::ensure!(
            v >= 0 && (v as usize) < num_nodes,
            Error::bad_file(path, format!("row {r}: node id {v} is outside the dataset's 0..{num_nodes}"))
        );
        let v = v as usize;
        crate::ensure!(!seen[v], Error::bad_file(path, format!("row {r}: node id {v} occurs twice")));
        seen[v] = true;
        for (k, col) in cols.iter().enumerate() {
            data[v * c + k] = col[r] as f32;
        }
    }
    let missing: Vec<usize> = (0..num_nodes).filter(|&v| !seen[v]).collect();
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(5).map(|v| v.to_string()).collect();
        return Err(Error::bad_file(
            path,
            format!(
                "{} node id(s) missing (e.g. {}{}): posteriors must cover every node of the dataset",
                missing.len(),
                shown.join(", "),
                if missing.len() > 5 { ", ..." } else { "" }
            ),
        ));
    }
    Ok((num_nodes, c, data))
}

/// The black box of a deployment whose outputs are known for every node: released posteriors
/// (and embeddings, where released), answered by row.
pub struct Released {
    pub posteriors: Tensor,
    pub embeddings: Option<Tensor>,
}

impl Released {
    pub fn new(posteriors: Tensor) -> Self {
        Released { posteriors: posteriors.to_kind(Kind::Float), embeddings: None }
    }
}

impl BlackBox for Released {
    fn num_classes(&self) -> usize {
        self.posteriors.size()[1] as usize
    }
    fn posteriors(&self, nodes: &[usize]) -> attacks::Result<Tensor> {
        crate::target::rows_of(&self.posteriors, nodes)
    }
    fn embeddings(&self, nodes: &[usize]) -> attacks::Result<Option<Tensor>> {
        self.embeddings.as_ref().map(|e| crate::target::rows_of(e, nodes)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_npy::WriteNpyExt;

    fn npy(dir: &Path, name: &str, rows: &[[f32; 2]]) -> std::path::PathBuf {
        let p = dir.join(name);
        let a = ndarray::Array2::from_shape_vec((rows.len(), 2), rows.iter().flatten().copied().collect()).unwrap();
        a.write_npy(std::fs::File::create(&p).unwrap()).unwrap();
        p
    }

    #[test]
    fn npy_posteriors_are_validated() {
        let d = tempfile::tempdir().unwrap();
        let ok = npy(d.path(), "ok.npy", &[[0.25, 0.75], [1.0, 0.0], [0.5, 0.5]]);
        assert_eq!(load_posteriors(&ok, 3, 2).unwrap().size(), vec![3, 2]);
        let e = load_posteriors(&ok, 4, 2).unwrap_err().to_string();
        assert!(e.contains("ok.npy") && e.contains("4 nodes"), "{e}");
        let bad = npy(d.path(), "sum.npy", &[[0.25, 0.75], [0.9, 0.3], [0.5, 0.5]]);
        let e = load_posteriors(&bad, 3, 2).unwrap_err().to_string();
        assert!(e.contains("sum.npy") && e.contains("row 1") && e.contains("sums to 1.2"), "{e}");
        let nan = npy(d.path(), "nan.npy", &[[0.25, 0.75], [0.5, 0.5], [f32::NAN, 0.5]]);
        let e = load_posteriors(&nan, 3, 2).unwrap_err().to_string();
        assert!(e.contains("nan.npy") && e.contains("row 2") && e.contains("NaN"), "{e}");
    }

    #[test]
    fn table_posteriors_place_rows_by_id_and_need_every_node() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.csv");
        std::fs::write(&p, "node,c0,c1\n2,0.1,0.9\n0,1.0,0.0\n1,0.5,0.5\n").unwrap();
        let t = load_posteriors(&p, 3, 2).unwrap();
        assert_eq!(Vec::<f32>::try_from(&t.view([-1])).unwrap(), vec![1.0, 0.0, 0.5, 0.5, 0.1, 0.9]);
        std::fs::write(&p, "node,c0,c1\n2,0.1,0.9\n0,1.0,0.0\n").unwrap();
        let e = load_posteriors(&p, 3, 2).unwrap_err().to_string();
        assert!(e.contains("p.csv") && e.contains("1 node id(s) missing (e.g. 1)"), "{e}");
    }
}
