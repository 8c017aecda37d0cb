//! `gnnaudit audit status DIR`: which cells of an audit folder are done, running, failed or
//! missing, read from the cell store alone (no lock, nothing written), so it can watch shards
//! and Slurm tasks at work.
use super::cell::plan;
use super::runner::folder_config;
use super::store::{CellStore, Claim, Failure};
use crate::error::Result;
use crate::report::record::CellKey;
use std::path::{Path, PathBuf};

/// A cell's state.
#[derive(Debug, Clone)]
pub enum CellState {
    Done,
    /// Claimed by a live process (or one on another host, which cannot be checked from here).
    Running(Claim),
    Failed(Failure),
    /// Claimed by a process that is gone: it was killed before it could record a failure.
    Interrupted(Claim),
    /// Stored, but computed from other inputs: the ones that changed (empty when the config's
    /// tables or the tool's version changed). The next `audit` recomputes it.
    Stale(Vec<String>),
    Missing,
}

/// The states of every cell of a folder's plan, in plan order.
#[derive(Debug, Clone)]
pub struct Status {
    pub dir: PathBuf,
    pub name: String,
    pub cells: Vec<(CellKey, CellState)>,
    pub report: bool,
}

impl Status {
    pub fn count(&self, f: impl Fn(&CellState) -> bool) -> usize {
        self.cells.iter().filter(|(_, s)| f(s)).count()
    }
}

pub fn status(dir: &Path) -> Result<Status> {
    let mut config = folder_config(dir)?;
    let store = CellStore::new(dir.join("cells"));
    config.data_dir = recorded_data_dir(&config, &store);
    let cells = plan(&config)
        .into_iter()
        .map(|c| {
            let state = if store.load(&c).is_some() {
                CellState::Done
            } else if let Some(claim) = store.claim_of(&c.key) {
                if claim.alive() == Some(false) {
                    CellState::Interrupted(claim)
                } else {
                    CellState::Running(claim)
                }
            } else if let Some(f) = store.failure_of(&c.key) {
                CellState::Failed(f)
            } else if let Some(changed) = store.stale(&c) {
                CellState::Stale(changed)
            } else {
                CellState::Missing
            };
            (c.key, state)
        })
        .collect();
    Ok(Status { dir: dir.to_path_buf(), name: config.name, cells, report: dir.join("report.json").exists() })
}

/// The folder a dataset was found in through `--data-dir` when its cells were computed (read
/// from their records), so that its file is hashed as the audit hashed it: without it, status
/// could not find the file, and would call every such cell stale.
fn recorded_data_dir(config: &super::config::AuditConfig, store: &CellStore) -> Option<PathBuf> {
    plan(config).iter().filter(|c| !c.inputs.contains_key("dataset")).find_map(|c| {
        let path = PathBuf::from(store.recorded_inputs(c)?.get("dataset")?.path.clone()?);
        Some(path.parent()?.to_path_buf())
    })
}

/// The text `audit status` prints.
pub fn render(s: &Status) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let n = s.cells.len();
    let done = s.count(|c| matches!(c, CellState::Done));
    let running = s.count(|c| matches!(c, CellState::Running(_)));
    let failed = s.count(|c| matches!(c, CellState::Failed(_) | CellState::Interrupted(_)));
    let missing = s.count(|c| matches!(c, CellState::Missing));
    let stale = s.count(|c| matches!(c, CellState::Stale(_)));
    let _ = writeln!(o, "audit '{}' in {}: {n} cells", s.name, s.dir.display());
    let _ = writeln!(o, "  done {done}, running {running}, failed {failed}, stale {stale}, missing {missing}");
    for (key, state) in &s.cells {
        match state {
            CellState::Done => {}
            CellState::Running(c) => {
                let _ = writeln!(o, "running  {key}  ({} pid {} on {}, since {})", c.by, c.pid, c.host, c.since);
            }
            CellState::Interrupted(c) => {
                let _ = writeln!(
                    o,
                    "failed   {key}  ({} pid {} on {} is gone: killed before finishing)",
                    c.by, c.pid, c.host
                );
                if let Some(log) = &c.log {
                    for l in super::store::tail_lines(log, 10) {
                        let _ = writeln!(o, "           | {l}");
                    }
                }
            }
            CellState::Failed(f) => {
                let _ = writeln!(o, "failed   {key}  ({} pid {} on {} at {})", f.by, f.pid, f.host, f.at);
                let _ = writeln!(o, "           error: {}", f.error);
                if let Some(log) = &f.log {
                    let _ = writeln!(o, "           log {}:", log.display());
                }
                for l in f.log_tail.iter().rev().take(10).rev() {
                    let _ = writeln!(o, "           | {l}");
                }
            }
            CellState::Stale(changed) if changed.is_empty() => {
                let _ =
                    writeln!(o, "stale    {key}  (the config or the tool's version changed; `audit` recomputes it)");
            }
            CellState::Stale(changed) => {
                let _ = writeln!(o, "stale    {key}  (changed since it was computed; `audit` recomputes it):");
                for c in changed {
                    let _ = writeln!(o, "           {c}");
                }
            }
            CellState::Missing => {
                let _ = writeln!(o, "missing  {key}");
            }
        }
    }
    if s.report {
        let _ = writeln!(o, "report: {}", s.dir.join("report.json").display());
    } else {
        let _ = writeln!(
            o,
            "report: not written yet (`gnnaudit audit CONFIG --out {} --merge` renders the cells done)",
            s.dir.display()
        );
    }
    o
}
