//! Where an audit's inputs come from, found without loading them: the dataset file and an
//! external target's tables. The cell keys hash these files, and validation and provenance name
//! them.
use crate::data;
use crate::error::{Error, Result};
use crate::external::{DeclaredClaim, TargetSpec};
use crate::report::config::MethodSpec;
use std::path::{Path, PathBuf};

/// Where a dataset comes from, resolved without loading it (for validation and provenance).
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetSource {
    /// Generated in memory (the synthetic CSBM).
    Embedded,
    File(PathBuf),
}

/// Resolves a dataset name the way the loaders do: `synthetic`; an existing path; then
/// `<dir>/<name>.npz` in the loader's search folders (`data::search_dirs`: `--data-dir`,
/// `GNNAUDIT_DATA`, `~/.cache/gnnaudit/datasets`, `./datasets`).
pub fn resolve_dataset(name: &str, data_dir: Option<&Path>) -> Result<DatasetSource> {
    if name == "synthetic" {
        return Ok(DatasetSource::Embedded);
    }
    let p = Path::new(name);
    if p.is_file() {
        return Ok(DatasetSource::File(p.to_path_buf()));
    }
    let mut searched = vec![];
    for dir in data::search_dirs(data_dir) {
        for cand in [dir.join(format!("{name}.npz")), dir.join(name)] {
            if cand.is_file() {
                return Ok(DatasetSource::File(cand));
            }
        }
        searched.push(dir);
    }
    Err(Error::DatasetNotFound { name: name.to_string(), searched })
}

/// The positive control a pseudo-method carries (`[control]`), if any.
pub fn control_of(m: &MethodSpec) -> Result<Option<TargetSpec>> {
    m.params
        .get("control")
        .cloned()
        .map(|c| c.try_into().map_err(|e: toml::de::Error| Error::invalid("control", e.to_string().trim().to_string())))
        .transpose()
}

/// The target and claim a pseudo-method carries.
pub fn from_method(m: &MethodSpec) -> Result<(TargetSpec, Option<DeclaredClaim>)> {
    let get = |k: &str| m.params.get(k).cloned();
    let target: TargetSpec = get("target")
        .ok_or_else(|| Error::invalid("target", "missing"))?
        .try_into()
        .map_err(|e: toml::de::Error| Error::invalid("target", e.to_string().trim().to_string()))?;
    let claim = get("claim")
        .map(|c| c.try_into().map_err(|e: toml::de::Error| Error::invalid("claim", e.to_string().trim().to_string())))
        .transpose()?;
    Ok((target, claim))
}
