//! Table datasets read with polars: an edge list (CSV or Parquet, one row per edge, columns
//! `source` and `target`) plus a node table (CSV or Parquet: a node id column, a label column, and
//! either numeric feature columns or one list column of floats).
//!
//! Defaults, all overridable in [`TableOptions`] or a `.toml` manifest:
//! - edge columns `source`, `target`; edges are made undirected (`undirected = true`);
//! - node id column `id`: integers or strings, matched against the edge columns; without an `id`
//!   column the row number is the node id;
//! - label column `label`: non-negative integers (class ids) or strings (classes in sorted order,
//!   which become the class names);
//! - features: the columns listed in `features`, else a list-typed column (one vector per node),
//!   else every other numeric column.
//!
//! A manifest (`mydata.toml`) names the two files relative to itself:
//! ```toml
//! edges = "edges.parquet"
//! nodes = "nodes.csv"
//! # optional: name, source, target, id, label, features = ["x0", "x1"], undirected
//! ```
use super::dataset::{Dataset, Features};
use super::graph::Graph;
use crate::error::{Error, Result};
use polars::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct TableOptions {
    pub source: String,
    pub target: String,
    pub id: String,
    pub label: String,
    /// Feature columns (numeric, or a single list column). None: see the module docs.
    pub features: Option<Vec<String>>,
    /// Add the reverse of every edge.
    pub undirected: bool,
    /// Dataset name; defaults to the node file's stem (or directory / manifest name).
    pub name: Option<String>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            source: "source".into(),
            target: "target".into(),
            id: "id".into(),
            label: "label".into(),
            features: None,
            undirected: true,
            name: None,
        }
    }
}

/// A manifest's keys, listed out (serde cannot deny unknown keys through `flatten`): a typo such
/// as `undirectd = false` is an error naming it, as in audit configs.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    edges: PathBuf,
    nodes: PathBuf,
    source: Option<String>,
    target: Option<String>,
    id: Option<String>,
    label: Option<String>,
    features: Option<Vec<String>>,
    undirected: Option<bool>,
    name: Option<String>,
}

impl Manifest {
    fn options(&self) -> TableOptions {
        let d = TableOptions::default();
        TableOptions {
            source: self.source.clone().unwrap_or(d.source),
            target: self.target.clone().unwrap_or(d.target),
            id: self.id.clone().unwrap_or(d.id),
            label: self.label.clone().unwrap_or(d.label),
            features: self.features.clone(),
            undirected: self.undirected.unwrap_or(d.undirected),
            name: self.name.clone(),
        }
    }
}

/// Loads an edge table and a node table.
pub fn load(edges_path: &Path, nodes_path: &Path, opts: &TableOptions) -> Result<Dataset> {
    let nodes = read_table(nodes_path)?;
    let n = nodes.height();
    let bad_nodes = |m: String| Error::bad_file(nodes_path, m);

    let ids = NodeIds::from_table(&nodes, nodes_path, &opts.id)?;
    let (labels, num_classes, class_names) = read_labels(&nodes, nodes_path, &opts.label)?;
    let features = read_features(&nodes, nodes_path, opts)?;

    let edges = read_table(edges_path)?;
    let src = ids.resolve(&edges, edges_path, &opts.source, n)?;
    let dst = ids.resolve(&edges, edges_path, &opts.target, n)?;
    let pairs = src.iter().zip(&dst).flat_map(|(&u, &v)| {
        let rev = opts.undirected.then_some((v, u));
        std::iter::once((u, v)).chain(rev)
    });
    let graph = Graph::from_edges(n, pairs).map_err(|e| bad_nodes(e.to_string()))?;

    let name = opts.name.clone().unwrap_or_else(|| stem(nodes_path));
    let ds = Dataset { name, graph, features, labels, num_classes, split: None, class_names, attr_names: None };
    ds.validate(&nodes_path.display().to_string())?;
    Ok(ds)
}

/// Loads a `.toml` manifest naming the edge and node files (paths relative to the manifest).
pub fn load_manifest(path: &Path) -> Result<Dataset> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::bad_file(path, format!("cannot read: {e}")))?;
    let m: Manifest = toml::from_str(&text)
        .map_err(|e| Error::bad_file(path, format!("invalid manifest: {}", e.to_string().trim().replace('\n', " "))))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut opts = m.options();
    opts.name.get_or_insert_with(|| stem(path));
    load(&base.join(&m.edges), &base.join(&m.nodes), &opts)
}

/// Loads a directory holding `edges.{csv,parquet}` and `nodes.{csv,parquet}` (default options).
pub fn load_dir(dir: &Path) -> Result<Dataset> {
    let edges = unique_table(dir, "edges")?
        .ok_or_else(|| Error::bad_file(dir, "directory has no edges.csv or edges.parquet (with nodes.csv/.parquet)"))?;
    let nodes = unique_table(dir, "nodes")?
        .ok_or_else(|| Error::bad_file(dir, "directory has no nodes.csv or nodes.parquet (with edges.csv/.parquet)"))?;
    let name = dir.file_name().map(|s| s.to_string_lossy().into_owned());
    load(&edges, &nodes, &TableOptions { name, ..TableOptions::default() })
}

/// Loads an edge file whose name contains `edges`, with the node file named the same with `nodes`
/// (any of .csv/.parquet), e.g. `cora.edges.csv` + `cora.nodes.parquet`.
pub fn load_edge_file(edges: &Path) -> Result<Dataset> {
    let file = edges.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let Some(at) = file.rfind("edges") else {
        return Err(Error::bad_file(
            edges,
            "a single CSV/Parquet file must be an edge list named *edges*.csv|parquet with a matching \
             *nodes* file beside it (or use a .toml manifest or a directory)",
        ));
    };
    let stem_nodes = format!("{}nodes", &file[..at]);
    let rest = &file[at + 5..];
    let dir = edges.parent().unwrap_or(Path::new("."));
    let rest_stem = rest.rsplit_once('.').map_or(rest, |(s, _)| s);
    let candidates: Vec<PathBuf> =
        ["csv", "parquet", "pq"].iter().map(|ext| dir.join(format!("{stem_nodes}{rest_stem}.{ext}"))).collect();
    let present: Vec<PathBuf> = candidates.iter().filter(|p| p.is_file()).cloned().collect();
    if present.len() > 1 {
        return Err(Error::bad_file(
            edges,
            format!("ambiguous node table: {} all exist beside it; remove all but one", show(&present)),
        ));
    }
    let nodes = present
        .first()
        .ok_or_else(|| Error::bad_file(edges, format!("no node table beside it (looked for {})", show(&candidates))))?;
    let name = format!("{}{}", &file[..at], rest_stem).trim_matches(|c| c == '.' || c == '_' || c == '-').to_string();
    let name = if name.is_empty() { None } else { Some(name) };
    load(edges, nodes, &TableOptions { name, ..TableOptions::default() })
}

/// `dir/<base>.csv`, `.parquet` or `.pq`, whichever exists first.
pub fn find_table(dir: &Path, base: &str) -> Option<PathBuf> {
    table_candidates(dir, base).into_iter().next()
}

/// Every `dir/<base>.{csv,parquet,pq}` that exists.
fn table_candidates(dir: &Path, base: &str) -> Vec<PathBuf> {
    ["csv", "parquet", "pq"].iter().map(|ext| dir.join(format!("{base}.{ext}"))).filter(|p| p.is_file()).collect()
}

/// The one table `dir/<base>.*`; two of them (edges.csv and edges.parquet) are ambiguous: which
/// one is current cannot be guessed, so neither is read.
fn unique_table(dir: &Path, base: &str) -> Result<Option<PathBuf>> {
    let found = table_candidates(dir, base);
    if found.len() > 1 {
        return Err(Error::bad_file(
            dir,
            format!(
                "ambiguous {base} table: {} all exist; remove all but one (or name the files in a .toml manifest)",
                show(&found)
            ),
        ));
    }
    Ok(found.into_iter().next())
}

fn show(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "table".into())
}

/// Reads a CSV (with header) or Parquet file by extension.
pub fn read_table(path: &Path) -> Result<DataFrame> {
    if !path.is_file() {
        return Err(Error::bad_file(path, "no such file"));
    }
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let df = match ext.as_str() {
        "parquet" | "pq" => {
            std::fs::File::open(path).map_err(PolarsError::from).and_then(|f| ParquetReader::new(f).finish())
        }
        "csv" | "tsv" | "txt" => CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(Some(10_000))
            .try_into_reader_with_file_path(Some(path.to_path_buf()))
            .and_then(|r| r.finish()),
        other => {
            return Err(Error::bad_file(path, format!("unknown table format '.{other}' (expected .csv or .parquet)")))
        }
    };
    let df = df.map_err(|e| Error::bad_file(path, format!("cannot read table: {e}")))?;
    if df.height() == 0 {
        // Otherwise an empty CSV's columns are typed `str` and the complaint is about types.
        return Err(Error::bad_file(
            path,
            format!("the table has no rows (only a header: [{}])", df.get_column_names_str().join(", ")),
        ));
    }
    Ok(df)
}

fn column<'a>(df: &'a DataFrame, path: &Path, name: &str, role: &str) -> Result<&'a Column> {
    df.column(name).map_err(|_| {
        Error::bad_file(
            path,
            format!("missing column '{name}' ({role}); columns present: [{}]", df.get_column_names_str().join(", ")),
        )
    })
}

/// Non-null integers of a column, as i64.
fn int_values(col: &Column, path: &Path, role: &str) -> Result<Vec<i64>> {
    let bad = |m: String| Error::bad_file(path, format!("column '{}' ({role}): {m}", col.name()));
    if !col.dtype().is_integer() {
        return Err(bad(format!("expected integers, found {}", col.dtype())));
    }
    if col.dtype() == &DataType::UInt64 {
        // A cast would turn these into nulls ("missing value"); say what they are.
        let ca = col.u64().map_err(|e| bad(e.to_string()))?;
        if let Some((r, Some(x))) = ca.into_iter().enumerate().find(|(_, x)| x.is_some_and(|x| x > i64::MAX as u64)) {
            return Err(bad(format!("row {r}: {x} is above the largest supported integer {}", i64::MAX)));
        }
    }
    let c = col.cast(&DataType::Int64).map_err(|e| bad(e.to_string()))?;
    let ca = c.i64().map_err(|e| bad(e.to_string()))?;
    ca.into_iter().enumerate().map(|(r, x)| x.ok_or_else(|| bad(format!("missing value in row {r}")))).collect()
}

fn str_values(col: &Column, path: &Path, role: &str) -> Result<Vec<String>> {
    let bad = |m: String| Error::bad_file(path, format!("column '{}' ({role}): {m}", col.name()));
    let c = col.cast(&DataType::String).map_err(|e| bad(e.to_string()))?;
    let ca = c.str().map_err(|e| bad(e.to_string()))?;
    ca.into_iter()
        .enumerate()
        .map(|(r, x)| x.map(str::to_owned).ok_or_else(|| bad(format!("missing value in row {r}"))))
        .collect()
}

/// How node ids in the edge table map to rows of the node table.
enum NodeIds {
    /// No id column: the id is the row number.
    RowNumber,
    Int(HashMap<i64, usize>),
    Str(HashMap<String, usize>),
}

impl NodeIds {
    fn from_table(nodes: &DataFrame, path: &Path, id: &str) -> Result<Self> {
        let Ok(col) = nodes.column(id) else { return Ok(NodeIds::RowNumber) };
        let dup = |what: String| Error::bad_file(path, format!("column '{id}' (node id): {what} appears twice"));
        if col.dtype().is_integer() {
            let mut map = HashMap::with_capacity(nodes.height());
            for (r, x) in int_values(col, path, "node id")?.into_iter().enumerate() {
                if map.insert(x, r).is_some() {
                    return Err(dup(format!("id {x}")));
                }
            }
            Ok(NodeIds::Int(map))
        } else {
            let mut map = HashMap::with_capacity(nodes.height());
            for (r, x) in str_values(col, path, "node id")?.into_iter().enumerate() {
                if let Some(_prev) = map.insert(x.clone(), r) {
                    return Err(dup(format!("id '{x}'")));
                }
            }
            Ok(NodeIds::Str(map))
        }
    }

    /// Row indices of the nodes an edge column names; an unknown id is an error naming the row.
    fn resolve(&self, edges: &DataFrame, path: &Path, name: &str, n: usize) -> Result<Vec<usize>> {
        let role = "edge endpoint";
        let col = column(edges, path, name, role)?;
        let unknown = |r: usize, x: &dyn std::fmt::Display| {
            Error::bad_file(path, format!("column '{name}' row {r}: node id {x} is not in the node table ({n} nodes)"))
        };
        match self {
            NodeIds::RowNumber => int_values(col, path, role)?
                .into_iter()
                .enumerate()
                .map(|(r, x)| if x >= 0 && (x as usize) < n { Ok(x as usize) } else { Err(unknown(r, &x)) })
                .collect(),
            NodeIds::Int(map) => int_values(col, path, role)?
                .into_iter()
                .enumerate()
                .map(|(r, x)| map.get(&x).copied().ok_or_else(|| unknown(r, &x)))
                .collect(),
            NodeIds::Str(map) => str_values(col, path, role)?
                .into_iter()
                .enumerate()
                .map(|(r, x)| map.get(&x).copied().ok_or_else(|| unknown(r, &format!("'{x}'"))))
                .collect(),
        }
    }
}

type Labels = (Vec<usize>, usize, Option<Vec<String>>);

fn read_labels(nodes: &DataFrame, path: &Path, label: &str) -> Result<Labels> {
    let col = column(nodes, path, label, "node label")?;
    if col.dtype().is_integer() {
        let ys = int_values(col, path, "node label")?;
        if let Some((r, y)) = ys.iter().enumerate().find(|(_, &y)| y < 0) {
            return Err(Error::bad_file(path, format!("column '{label}' row {r}: negative label {y}")));
        }
        let ys: Vec<usize> = ys.into_iter().map(|y| y as usize).collect();
        let c = super::dataset::class_count(&ys, 0, path, &format!("column '{label}'"))?;
        Ok((ys, c, None))
    } else if col.dtype().is_string() || col.dtype().is_bool() {
        let ys = str_values(col, path, "node label")?;
        let mut names: Vec<String> = ys.clone();
        names.sort();
        names.dedup();
        let index: HashMap<&str, usize> = names.iter().enumerate().map(|(k, s)| (s.as_str(), k)).collect();
        let labels = ys.iter().map(|s| index[s.as_str()]).collect();
        Ok((labels, names.len(), Some(names)))
    } else {
        Err(Error::bad_file(
            path,
            format!("column '{label}' (node label): expected integers or strings, found {}", col.dtype()),
        ))
    }
}

fn read_features(nodes: &DataFrame, path: &Path, opts: &TableOptions) -> Result<Features> {
    let n = nodes.height();
    let names: Vec<String> = match &opts.features {
        Some(list) => list.clone(),
        None => {
            let cols = nodes.get_columns();
            let lists: Vec<String> = cols
                .iter()
                .filter(|c| c.dtype().is_list() || c.dtype().is_array())
                .map(|c| c.name().to_string())
                .collect();
            if lists.len() > 1 {
                return Err(Error::bad_file(
                    path,
                    format!(
                        "ambiguous features: {} list columns ({}); name the one to use with `features = [..]` in \
                         a .toml manifest",
                        lists.len(),
                        lists.join(", ")
                    ),
                ));
            }
            if let Some(c) = lists.first() {
                vec![c.clone()]
            } else {
                cols.iter().map(|c| c.name().to_string()).filter(|c| *c != opts.id && *c != opts.label).collect()
            }
        }
    };
    if names.is_empty() {
        return Err(Error::bad_file(path, "no feature columns (add numeric columns or one list column)"));
    }
    if names.len() == 1 {
        let col = column(nodes, path, &names[0], "features")?;
        if col.dtype().is_list() || col.dtype().is_array() {
            return list_features(col, path, n);
        }
    }
    let cols: Vec<&Column> = names.iter().map(|c| column(nodes, path, c, "feature")).collect::<Result<_>>()?;
    let f = cols.len();
    let mut data = vec![0f32; n * f];
    for (j, col) in cols.iter().enumerate() {
        let bad = |m: String| Error::bad_file(path, format!("column '{}' (feature): {m}", col.name()));
        if !(col.dtype().is_primitive_numeric() || col.dtype().is_bool()) {
            return Err(bad(format!("expected numbers, found {}", col.dtype())));
        }
        let c = col.cast(&DataType::Float32).map_err(|e| bad(e.to_string()))?;
        for (r, x) in c.f32().map_err(|e| bad(e.to_string()))?.into_iter().enumerate() {
            data[r * f + j] = x.ok_or_else(|| bad(format!("missing value in row {r}")))?;
        }
    }
    Ok(Features::Dense { rows: n, cols: f, data })
}

/// One list (or fixed-size array) column holding each node's feature vector; all of equal length.
fn list_features(col: &Column, path: &Path, n: usize) -> Result<Features> {
    let bad = |m: String| Error::bad_file(path, format!("column '{}' (features): {m}", col.name()));
    let c = col.cast(&DataType::List(Box::new(DataType::Float32))).map_err(|e| bad(e.to_string()))?;
    let ca = c.list().map_err(|e| bad(e.to_string()))?;
    let mut data = Vec::new();
    let mut width = None;
    for (r, row) in ca.into_iter().enumerate() {
        let row = row.ok_or_else(|| bad(format!("missing value in row {r}")))?;
        let vals = row.f32().map_err(|e| bad(e.to_string()))?;
        if *width.get_or_insert(vals.len()) != vals.len() {
            return Err(bad(format!("row {r} has {} values, earlier rows {}", vals.len(), width.unwrap())));
        }
        for x in vals.into_iter() {
            data.push(x.ok_or_else(|| bad(format!("missing value inside row {r}")))?);
        }
    }
    Ok(Features::Dense { rows: n, cols: width.unwrap_or(0), data })
}
