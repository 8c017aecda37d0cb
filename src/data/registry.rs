//! Resolving a dataset spec to a loaded [`Dataset`].
//!
//! A spec is one of:
//! - `synthetic`, or `synthetic:key=value,...` with CSBM overrides (nodes, classes, mean_degree,
//!   homophily, features, signal, seed): the embedded generator, no file needed;
//! - a path to a `.npz` file (gnn-benchmark layout);
//! - a path to a table dataset: a `.toml` manifest, a directory holding `edges.{csv,parquet}` and
//!   `nodes.{csv,parquet}`, or an edge file whose name contains `edges` next to the node file of
//!   the same name with `nodes` (e.g. `cora.edges.csv` + `cora.nodes.csv`); see [`super::table`];
//! - a name, looked up as `<dir>/<name>.npz`, `<dir>/<name>.toml` or `<dir>/<name>/` in the data
//!   directory (`--data-dir`), then `$GNNAUDIT_DATA`, then `~/.cache/gnnaudit/datasets` (where
//!   `gnnaudit datasets fetch` installs), then `./datasets`.
use super::csbm::Csbm;
use super::dataset::Dataset;
use super::{npz, table};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The name of the embedded CSBM dataset.
pub const SYNTHETIC: &str = "synthetic";

/// Loads the dataset a spec names (see the module docs for the forms).
pub fn load_dataset(spec: &str, data_dir: Option<&Path>) -> Result<Dataset> {
    check_data_dir(data_dir)?;
    let spec = spec.trim();
    if spec == SYNTHETIC {
        return Csbm::default().generate();
    }
    if let Some(overrides) = spec.strip_prefix("synthetic:") {
        return Csbm::default().with_overrides(overrides)?.generate();
    }
    let as_path = Path::new(spec);
    if looks_like_path(spec) || as_path.exists() {
        return load_path(as_path);
    }
    let mut searched = Vec::new();
    for dir in search_dirs(data_dir) {
        for candidate in [dir.join(format!("{spec}.npz")), dir.join(format!("{spec}.toml")), dir.join(spec)] {
            if candidate.exists() {
                return load_path(&candidate);
            }
            searched.push(candidate);
        }
    }
    Err(Error::DatasetNotFound { name: spec.to_string(), searched })
}

/// Loads a file or directory by its kind.
pub fn load_path(path: &Path) -> Result<Dataset> {
    if !path.exists() {
        return Err(Error::bad_file(path, "no such file or directory"));
    }
    if path.is_dir() {
        return table::load_dir(path);
    }
    match extension(path).as_str() {
        "npz" => npz::load(path),
        "toml" => table::load_manifest(path),
        "csv" | "parquet" | "pq" => table::load_edge_file(path),
        other => Err(Error::bad_file(
            path,
            format!("unknown dataset format '.{other}' (expected .npz, .toml, .csv, .parquet or a directory)"),
        )),
    }
}

/// A `--data-dir` that is not a directory is a mistake to report, not an empty folder to skip.
pub fn check_data_dir(data_dir: Option<&Path>) -> Result<()> {
    match data_dir {
        Some(d) if !d.is_dir() => Err(Error::bad_file(
            d,
            if d.exists() { "--data-dir is not a directory" } else { "--data-dir does not exist" },
        )),
        _ => Ok(()),
    }
}

/// The directories a name is looked up in, in order: `data_dir`, `$GNNAUDIT_DATA`,
/// [`default_data_dir`], `./datasets`.
pub fn search_dirs(data_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = data_dir {
        dirs.push(d.to_path_buf());
    }
    if let Some(env) = std::env::var_os("GNNAUDIT_DATA").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(env));
    }
    dirs.extend(default_data_dir());
    dirs.push(PathBuf::from("datasets"));
    dirs
}

/// Where `gnnaudit datasets fetch` installs: `~/.cache/gnnaudit/datasets` (None without a home).
pub fn default_data_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".cache/gnnaudit/datasets"))
}

/// A dataset available by name: where it was found (None for the embedded one).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Available {
    pub name: String,
    pub path: Option<PathBuf>,
}

/// `synthetic` plus every `.npz`, `.toml` and table directory in the search directories, sorted by
/// name; a name found in several directories is listed where the lookup would find it.
pub fn list_datasets(data_dir: Option<&Path>) -> Vec<Available> {
    let mut found: Vec<Available> = vec![Available { name: SYNTHETIC.into(), path: None }];
    for dir in search_dirs(data_dir) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut here: Vec<Available> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let p = e.path();
                let name = if p.is_dir() {
                    (table::find_table(&p, "edges").is_some() && table::find_table(&p, "nodes").is_some())
                        .then(|| p.file_name().map(|f| f.to_string_lossy().into_owned()))??
                } else if matches!(extension(&p).as_str(), "npz" | "toml") {
                    p.file_stem()?.to_string_lossy().into_owned()
                } else {
                    return None;
                };
                Some(Available { name, path: Some(p) })
            })
            .collect();
        here.sort_by(|a, b| a.name.cmp(&b.name).then(a.path.cmp(&b.path)));
        for a in here {
            if !found.iter().any(|f| f.name == a.name) {
                found.push(a);
            }
        }
    }
    found[1..].sort_by(|a, b| a.name.cmp(&b.name));
    found
}

fn extension(path: &Path) -> String {
    path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default()
}

fn looks_like_path(spec: &str) -> bool {
    spec.contains('/')
        || spec.contains(std::path::MAIN_SEPARATOR)
        || matches!(extension(Path::new(spec)).as_str(), "npz" | "toml" | "csv" | "parquet" | "pq")
}
