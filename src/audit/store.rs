//! The per-cell result store that makes an audit resumable. Every file is written with
//! [`crate::fsutil::write_atomic`], so a reader never sees a half-written one.
//!
//! Beside each finished cell's `<cell>.json`, a cell being computed has a claim
//! `<cell>.running` (who computes it, and where its log is) and a cell whose computation failed
//! has `<cell>.failed` (the error and the tail of the log). Claims let several processes (shards,
//! `--jobs` workers) share one store without computing a cell twice; `gnnaudit audit status`
//! reads all three.
use super::cell::CellSpec;
use crate::error::{Error, Result};
use crate::fsutil::write_atomic;
use crate::report::record::{CellKey, CellRecord, InputDigest};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Removes the `.tmp-*.tmp` files that a process killed during `write_atomic` left in `dir`,
/// if they are at least `min_age` old (a live writer's file lives for milliseconds; a folder
/// shared with running shards passes a generous age). Returns how many were removed.
pub fn clean_stale_tmp(dir: &Path, min_age: Duration) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with(".tmp-") && name.ends_with(".tmp")) {
            continue;
        }
        let age = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
        if age.is_some_and(|a| a >= min_age) && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Who computes a cell: written to `<cell>.running` when the work starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// "audit", "shard 2/4", "worker 1/2", ...
    pub by: String,
    pub pid: u32,
    pub host: String,
    pub since: String,
    /// The process's log file, when it has one (`--jobs` workers, Slurm tasks).
    #[serde(default)]
    pub log: Option<PathBuf>,
}

impl Claim {
    /// A claim by this process.
    pub fn mine(by: impl Into<String>) -> Claim {
        Claim {
            by: by.into(),
            pid: std::process::id(),
            host: super::lock::hostname(),
            since: super::lock::now_utc(),
            log: std::env::var_os(LOG_ENV).map(PathBuf::from),
        }
    }

    /// Whether the claiming process still runs: known only on the host that made the claim.
    pub fn alive(&self) -> Option<bool> {
        (self.host == super::lock::hostname()).then(|| Path::new(&format!("/proc/{}", self.pid)).exists())
    }
}

/// Set by the `--jobs` parent and the Slurm script: the log file this process's output goes to,
/// whose tail a failed cell keeps.
pub const LOG_ENV: &str = "GNNAUDIT_WORKER_LOG";

/// Why a cell failed: written to `<cell>.failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub error: String,
    pub by: String,
    pub pid: u32,
    pub host: String,
    pub at: String,
    #[serde(default)]
    pub log: Option<PathBuf>,
    /// The last lines of the log (what the process printed before it failed or was killed).
    #[serde(default)]
    pub log_tail: Vec<String>,
}

impl Failure {
    /// The failure of `claim`'s process with `error`, keeping the tail of its log.
    pub fn of(claim: &Claim, error: impl Into<String>) -> Failure {
        Failure {
            error: error.into(),
            by: claim.by.clone(),
            pid: claim.pid,
            host: claim.host.clone(),
            at: super::lock::now_utc(),
            log: claim.log.clone(),
            log_tail: claim.log.as_deref().map(|p| tail_lines(p, LOG_TAIL_LINES)).unwrap_or_default(),
        }
    }
}

/// Lines of a log kept with a failure.
pub const LOG_TAIL_LINES: usize = 30;

/// The last `n` lines of a text file (at most its last 64 KiB are read); empty when unreadable.
pub fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return vec![] };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(64 * 1024);
    let mut buf = vec![];
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return vec![];
    }
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|l| l.to_string()).collect()
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
            Ok(r) => {
                let changed = crate::report::record::changed_inputs(&r.inputs, &cell.inputs);
                if changed.is_empty() {
                    tracing::info!("cell {} changed since it was stored; recomputing", cell.key);
                } else {
                    tracing::warn!(
                        "cell {}: {} changed since it was stored; recomputing",
                        cell.key,
                        changed.join(", ")
                    );
                }
                None
            }
            Err(e) => {
                tracing::warn!("ignoring unreadable cell file {}: {e}", self.path(cell).display());
                None
            }
        }
    }

    /// The inputs a stored record of the cell was computed from, current or not.
    pub fn recorded_inputs(&self, cell: &CellSpec) -> Option<std::collections::BTreeMap<String, InputDigest>> {
        let text = std::fs::read_to_string(self.path(cell)).ok()?;
        serde_json::from_str::<CellRecord>(&text).ok().filter(|r| r.key == cell.key).map(|r| r.inputs)
    }

    /// Why a stored record of the cell no longer counts: the inputs whose content changed, or
    /// an empty list when the config's tables (or the tool's version) changed. None when no
    /// record is stored or the stored one is current.
    pub fn stale(&self, cell: &CellSpec) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.path(cell)).ok()?;
        let r = serde_json::from_str::<CellRecord>(&text).ok()?;
        (r.key == cell.key && r.fingerprint != cell.fingerprint)
            .then(|| crate::report::record::changed_inputs(&r.inputs, &cell.inputs))
    }

    pub fn save(&self, cell: &CellSpec, record: &CellRecord) -> Result<()> {
        let json = crate::report::compact_numeric_arrays(&serde_json::to_string_pretty(record)?);
        write_atomic(&self.path(cell), json.as_bytes())
    }

    /// A cell's claim or failure file (`ext` = "running" or "failed").
    fn sidecar(&self, key: &CellKey, ext: &str) -> PathBuf {
        let name = key.file_name();
        self.dir.join(format!("{}.{ext}", name.strip_suffix(".json").unwrap_or(&name)))
    }

    /// Claims a cell for this process. With `compete`, the claim is created only if no other
    /// process holds one (create-new is atomic, also on NFS v3+), and `false` says another has
    /// it; otherwise the claim is taken over (the caller owns the cell: its shard, or a folder it
    /// holds exclusively). An earlier failure record of the cell is dropped.
    pub fn claim(&self, cell: &CellSpec, claim: &Claim, compete: bool) -> Result<bool> {
        let path = self.sidecar(&cell.key, "running");
        let json = serde_json::to_string_pretty(claim)?;
        if compete {
            std::fs::create_dir_all(&self.dir)
                .map_err(|e| Error::bad_file(&self.dir, format!("cannot create folder: {e}")))?;
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => f.write_all(json.as_bytes())?,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
                Err(e) => return Err(Error::bad_file(&path, format!("cannot claim the cell: {e}"))),
            }
        } else {
            write_atomic(&path, json.as_bytes())?;
        }
        crate::interrupt::track(path);
        let _ = std::fs::remove_file(self.sidecar(&cell.key, "failed"));
        Ok(true)
    }

    /// Drops this process's claim on a cell (after storing it, or when it turned out done).
    pub fn release(&self, key: &CellKey) {
        let path = self.sidecar(key, "running");
        crate::interrupt::untrack(&path);
        let _ = std::fs::remove_file(path);
    }

    /// Records a cell's failure and drops its claim.
    pub fn fail(&self, key: &CellKey, failure: &Failure) -> Result<()> {
        write_atomic(&self.sidecar(key, "failed"), serde_json::to_string_pretty(failure)?.as_bytes())?;
        self.release(key);
        Ok(())
    }

    /// The claim on a cell, if any (an unreadable claim, e.g. one being written, reads as a
    /// claim by an unknown process).
    pub fn claim_of(&self, key: &CellKey) -> Option<Claim> {
        let path = self.sidecar(key, "running");
        let text = std::fs::read_to_string(&path).ok()?;
        Some(serde_json::from_str(&text).unwrap_or(Claim {
            by: "unknown".into(),
            pid: 0,
            host: "unknown".into(),
            since: String::new(),
            log: None,
        }))
    }

    pub fn failure_of(&self, key: &CellKey) -> Option<Failure> {
        serde_json::from_str(&std::fs::read_to_string(self.sidecar(key, "failed")).ok()?).ok()
    }

    /// Removes a cell's claim and failure records (the caller holds the folder exclusively or
    /// owns the cell, so no live process has it).
    pub fn clear_marks(&self, key: &CellKey) {
        let _ = std::fs::remove_file(self.sidecar(key, "running"));
        let _ = std::fs::remove_file(self.sidecar(key, "failed"));
    }

    /// Removes every stored cell, claim and failure (`--fresh` on an existing folder).
    pub fn wipe(&self) -> Result<()> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else { return Ok(()) };
        for e in rd.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") || name.ends_with(".running") || name.ends_with(".failed") {
                std::fs::remove_file(e.path()).map_err(|err| Error::bad_file(e.path(), err))?;
            }
        }
        Ok(())
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
    fn stale_temp_files_are_removed_only_when_old_enough() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".tmp-abc123.tmp"), b"half a report").unwrap();
        std::fs::write(dir.path().join("report.json"), b"{}").unwrap();
        assert_eq!(clean_stale_tmp(dir.path(), Duration::from_secs(3600)), 0, "a fresh temp file may be live");
        assert_eq!(clean_stale_tmp(dir.path(), Duration::ZERO), 1);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.json")]);
    }

    #[test]
    fn log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        assert_eq!(tail_lines(&p, 3), vec!["line 97", "line 98", "line 99"]);
        assert!(tail_lines(&dir.path().join("none"), 3).is_empty());
    }
}
