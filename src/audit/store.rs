//! Atomic file writes and the per-cell result store that makes an audit resumable.
//!
//! A reader never sees a half-written file: content goes to a temporary file in the same folder,
//! is flushed to disk, then renamed over the target (rename is atomic within one file system).
use super::cell::{CellRecord, CellSpec};
use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (temp file in the same folder, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::bad_file(dir, format!("cannot create folder: {e}")))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::bad_file(dir, format!("cannot create a temporary file: {e}")))?;
    tmp.write_all(bytes)?;
    // Temporary files are private (0600); reports are ordinary files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| Error::bad_file(path, format!("cannot rename into place: {}", e.error)))?;
    Ok(())
}

/// Finished cells, one JSON file each, in `<report dir>/cells/`.
#[derive(Debug, Clone)]
pub struct CellStore {
    dir: PathBuf,
}

impl CellStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CellStore { dir: dir.into() }
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn path(&self, cell: &CellSpec) -> PathBuf {
        self.dir.join(cell.key.file_name())
    }

    /// The stored record of a cell, if one exists with the same inputs. A record that does not
    /// parse (e.g. from another version) or whose fingerprint differs is ignored and recomputed.
    pub fn load(&self, cell: &CellSpec) -> Option<CellRecord> {
        let text = std::fs::read_to_string(self.path(cell)).ok()?;
        match serde_json::from_str::<CellRecord>(&text) {
            Ok(r) if r.fingerprint == cell.fingerprint && r.key == cell.key => Some(r),
            Ok(_) => {
                tracing::info!("cell {} changed since it was stored; recomputing", cell.key);
                None
            }
            Err(e) => {
                tracing::warn!("ignoring unreadable cell file {}: {e}", self.path(cell).display());
                None
            }
        }
    }

    pub fn save(&self, cell: &CellSpec, record: &CellRecord) -> Result<()> {
        let json = crate::report::compact_numeric_arrays(&serde_json::to_string_pretty(record)?);
        write_atomic(&self.path(cell), json.as_bytes())
    }

    /// Number of stored cell files (any fingerprint).
    pub fn count(&self) -> usize {
        std::fs::read_dir(&self.dir)
            .map(|rd| rd.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".json")).count())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/out.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
