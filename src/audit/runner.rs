//! The audit loop: plan the cells of a config, reuse the ones already stored, compute the rest
//! through a `CellRunner` (the real one trains and attacks; tests plug in a fake), store each
//! cell the moment it finishes, then write the reports.
//!
//! The same store serves every way of splitting the work: a full run (`run_audit`), one slice
//! (`run_shard`, `--shard I/N`), a `--jobs` worker competing for cells with its siblings, and
//! `merge`, which renders whatever cells exist. The report folder's lock (`lock`) keeps a second
//! full audit out; the store's claims keep two processes off the same cell.
use super::cell::{plan, CellSpec};
use super::config::{AuditConfig, DatasetSpec};
use super::lock::FolderLock;
use super::progress::Progress;
use super::shard::{slice, Shard};
use super::store::{clean_stale_tmp, CellStore, Claim, Failure};
use crate::error::{Error, Result};
use crate::fsutil::{hex, write_atomic};
use crate::report::record::{CellKey, CellMeasurement, CellRecord};
use crate::report::{self, DatasetInfo, Report, RunInfo};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Computes cells. The real runner loads datasets once, trains targets and runs attacks.
pub trait CellRunner {
    /// Loads (and caches) a dataset and says what it is; called for every dataset before any
    /// cell, so that a bad file fails the audit before training starts.
    fn dataset_info(&mut self, spec: &DatasetSpec) -> Result<DatasetInfo>;
    /// Trains the cell's target, runs its attacks and returns the measurements. Reports stage
    /// progress through `progress` (one `done(Stage::Training)`, `done(Stage::Attack)` per attack,
    /// shadow models as announced with `add_work`).
    fn run_cell(&mut self, cell: &CellSpec, progress: &Progress) -> Result<CellMeasurement>;
    /// Drops cached datasets: a `--jobs` parent calls it before its workers load their own.
    fn release(&mut self) {}
}

/// What running the cells produced.
#[derive(Debug, Clone)]
pub struct CellsOutcome {
    pub datasets: Vec<DatasetInfo>,
    /// Every cell of the plan, in report order.
    pub records: Vec<CellRecord>,
    /// The cells computed in this run (the rest were reused from the store).
    pub computed: Vec<CellKey>,
}

/// How a process holds the cells it computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claiming {
    /// The cells are this process's (a full audit, or its shard): claims are taken over.
    Own,
    /// Sibling processes share the cells (`--jobs` workers): a cell claimed by another is left
    /// to it.
    Compete,
}

/// Runs every cell of the plan that the store does not already hold.
pub fn run_cells(
    config: &AuditConfig,
    runner: &mut dyn CellRunner,
    store: &CellStore,
    progress: &Progress,
) -> Result<CellsOutcome> {
    let datasets = config.datasets.iter().map(|d| runner.dataset_info(d)).collect::<Result<Vec<_>>>()?;
    let cells = plan(config);
    let (mut records, mut computed) = (Vec::with_capacity(cells.len()), vec![]);
    for cell in &cells {
        if let Some(rec) = store.load(cell) {
            progress.skip(cell.attacks.len() as u64);
            records.push(rec);
            continue;
        }
        let rec = compute_cell(cell, runner, store, progress, &Claim::mine("audit"), Claiming::Own)?
            .ok_or_else(|| Error::Other(format!("cell {} was taken by another process", cell.key)))?;
        computed.push(cell.key.clone());
        records.push(rec);
    }
    Ok(CellsOutcome { datasets, records, computed })
}

/// Computes and stores one cell under a claim. None: another process has it (`Compete`) or
/// finished it meanwhile. A failure is recorded in the store (error and log tail) and returned.
pub fn compute_cell(
    cell: &CellSpec,
    runner: &mut dyn CellRunner,
    store: &CellStore,
    progress: &Progress,
    claim: &Claim,
    claiming: Claiming,
) -> Result<Option<CellRecord>> {
    if !store.claim(cell, claim, claiming == Claiming::Compete)? {
        return Ok(None);
    }
    if claiming == Claiming::Compete && store.load(cell).is_some() {
        // Stored by a sibling between our look and our claim.
        store.release(&cell.key);
        return Ok(None);
    }
    progress.set_cell(&cell.key);
    let result = runner.run_cell(cell, progress).map_err(|e| match e {
        Error::Other(m) => Error::Other(format!("cell {}: {m}", cell.key)),
        e => e,
    });
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = store.fail(&cell.key, &Failure::of(claim, e.to_string()));
            return Err(e);
        }
    };
    let rec = CellRecord {
        key: cell.key.clone(),
        fingerprint: cell.fingerprint.clone(),
        inputs: cell.inputs.clone(),
        result,
    };
    store.save(cell, &rec)?;
    store.release(&cell.key);
    progress.println(&format!("done: {} (test acc {:.3})", cell.key, rec.result.utility.test));
    Ok(Some(rec))
}

/// How `audit` chooses its output folder.
#[derive(Debug, Clone, Default)]
pub struct OutputOptions {
    /// `--out DIR`: write (and resume) exactly there.
    pub out: Option<PathBuf>,
    /// Start over: a new folder, or with `--out`, that folder's stored cells and reports removed.
    pub fresh: bool,
}

/// Where an audit's files went.
#[derive(Debug, Clone)]
pub struct AuditSummary {
    pub dir: PathBuf,
    pub report: Report,
    pub computed: Vec<CellKey>,
    pub reused: usize,
}

/// The audit command: resolve the folder (resuming an unfinished run of the same config),
/// compute the missing cells, write report.json, report.md and report.html.
pub fn run_audit(
    config: &AuditConfig,
    config_path: &Path,
    runner: &mut dyn CellRunner,
    opts: &OutputOptions,
) -> Result<AuditSummary> {
    let started = SystemTime::now();
    let clock = Instant::now();
    let folder = open_folder(config, opts, true, &format!("gnnaudit audit {}", config_path.display()))?;
    let (dir, store) = (folder.dir.clone(), folder.store());
    let cells = plan(config);
    let attacks: u64 = cells.iter().map(|c| c.attacks.len() as u64).sum();
    let progress = Progress::new(cells.len() as u64, attacks);
    if folder.resumed {
        progress.println(&format!("resuming {} ({} cells stored)", dir.display(), store.count()));
    }
    let outcome = run_cells(config, runner, &store, &progress);
    progress.finish();
    let outcome = outcome?;
    let reused = outcome.records.len() - outcome.computed.len();
    let run = run_info(config_path, &dir, started, clock, outcome.computed.len(), reused, &outcome.records);
    let report = Report::build(config, &config_sha256(config), outcome.datasets, &outcome.records, run);
    report::write_all(&report, &dir)?;
    Ok(AuditSummary { dir, report, computed: outcome.computed, reused })
}

fn run_info(
    config_path: &Path,
    dir: &Path,
    started: SystemTime,
    clock: Instant,
    computed: usize,
    reused: usize,
    records: &[CellRecord],
) -> RunInfo {
    RunInfo {
        started_at: report::provenance::utc_iso(started),
        finished_at: report::provenance::utc_iso(SystemTime::now()),
        wall_seconds: clock.elapsed().as_secs_f64(),
        config_path: config_path.display().to_string(),
        output_dir: dir.display().to_string(),
        cells_computed: computed,
        cells_reused: reused,
        cell_seconds: records.iter().map(|r| (r.key.clone(), r.result.seconds)).collect(),
    }
}

/// A report folder opened for work, with its lock.
#[derive(Debug)]
pub struct Folder {
    pub dir: PathBuf,
    /// It already held cells of this config.
    pub resumed: bool,
    pub lock: FolderLock,
}

impl Folder {
    pub fn store(&self) -> CellStore {
        CellStore::new(self.dir.join("cells"))
    }
}

/// Temp files younger than this may belong to a live shard writing beside us.
const SHARED_TMP_AGE: Duration = Duration::from_secs(600);

/// Resolves, checks, creates and locks the report folder (exclusively for a full audit, shared
/// for a shard or a merge), applies `--fresh`, removes what killed processes left (temp files;
/// with the exclusive lock, also claims, since no other process can be computing), and marks
/// the folder with the config. Refuses a folder that belongs to another config, or a non-empty
/// folder that is not an audit's, before writing anything.
pub fn open_folder(config: &AuditConfig, opts: &OutputOptions, exclusive: bool, what: &str) -> Result<Folder> {
    let config_sha = config_sha256(config);
    let (dir, resumed) = output_dir(config, &config_sha, opts, SystemTime::now())?;
    check_belongs(&dir, config)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::bad_file(&dir, format!("cannot create the report folder: {e}")))?;
    let lock = if exclusive { FolderLock::exclusive(&dir, what)? } else { FolderLock::shared(&dir, what)? };
    let store = CellStore::new(dir.join("cells"));
    let age = if exclusive { Duration::ZERO } else { SHARED_TMP_AGE };
    let cleaned = clean_stale_tmp(&dir, age) + clean_stale_tmp(store.dir(), age);
    if cleaned > 0 {
        tracing::info!("removed {cleaned} temporary file(s) left by an interrupted write");
    }
    let mut resumed = resumed;
    if opts.fresh && opts.out.is_some() {
        store.wipe()?;
        for f in ["report.json", "report.md", "report.html"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        resumed = false;
    } else if exclusive {
        for cell in plan(config) {
            store.clear_marks(&cell.key);
        }
    }
    write_atomic(&dir.join(PLAN_FILE), config_sha.as_bytes())?;
    // A saved config must load again: with explicit `seeds`, `seed`/`repeats` would contradict them.
    let mut saved = toml::Value::try_from(config).map_err(|e| Error::Other(e.to_string()))?;
    if let Some(t) = saved.as_table_mut() {
        if t.contains_key("seeds") {
            t.remove("seed");
            t.remove("repeats");
        }
    }
    write_atomic(&dir.join(CONFIG_FILE), toml::to_string(&saved).map_err(|e| Error::Other(e.to_string()))?.as_bytes())?;
    Ok(Folder { dir, resumed, lock })
}

/// Marks a report folder with the config it belongs to (sha256 of the parsed config).
const PLAN_FILE: &str = ".audit-config.sha256";
/// The config as the folder's audit parsed it (`status` and `--merge` read it).
pub const CONFIG_FILE: &str = "config.toml";

/// The config an audit folder belongs to, as written by `open_folder`.
pub fn folder_config(dir: &Path) -> Result<AuditConfig> {
    let path = dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::bad_file(&path, format!("not a gnnaudit audit folder ({e})")))?;
    AuditConfig::parse(&text).map_err(|e| Error::bad_file(&path, e))
}

/// An existing `--out` folder must be empty or an audit of the same config name (a changed
/// version of the config resumes: its changed cells are recomputed by fingerprint).
fn check_belongs(dir: &Path, config: &AuditConfig) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(Error::bad_file(dir, "is not a folder"));
    }
    if dir.join(CONFIG_FILE).exists() {
        let other = folder_config(dir).map(|c| c.name).unwrap_or_else(|_| "?".into());
        if other != config.name {
            return Err(Error::bad_file(
                dir,
                format!(
                    "belongs to the audit '{other}', not '{}': writing here would overwrite its report; choose another --out",
                    config.name
                ),
            ));
        }
        return Ok(());
    }
    let foreign = std::fs::read_dir(dir)
        .map_err(|e| Error::bad_file(dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n != PLAN_FILE && n != super::lock::LOCK_FILE && n != "cells" && !n.starts_with(".tmp-"));
    if let Some(f) = foreign {
        return Err(Error::bad_file(
            dir,
            format!("is not empty (it holds '{f}') and is not a gnnaudit audit folder; choose another --out"),
        ));
    }
    Ok(())
}

/// What `run_shard` did.
#[derive(Debug, Clone)]
pub struct ShardSummary {
    pub dir: PathBuf,
    /// Cells of the slice.
    pub cells: usize,
    pub computed: Vec<CellKey>,
    /// Cells of the slice already stored.
    pub reused: usize,
}

/// `--shard I/N` (and a `--jobs` worker): computes the cells of one slice that the store does
/// not hold, into `out`, and renders nothing. A shard owns its slice (`Claiming::Own`, holding
/// the folder's lock shared); a worker (`lock: false`, its parent holds the lock) competes with
/// its siblings for the slice's cells.
pub fn run_shard(
    config: &AuditConfig,
    runner: &mut dyn CellRunner,
    out: &Path,
    shard: Option<Shard>,
    worker: Option<&str>,
    progress: &Progress,
) -> Result<ShardSummary> {
    let (dir, _lock, claim, claiming) = match worker {
        None => {
            let what = match shard {
                Some(s) => format!("shard {s}"),
                None => "audit".into(),
            };
            let folder =
                open_folder(config, &OutputOptions { out: Some(out.to_path_buf()), fresh: false }, false, &what)?;
            (folder.dir, Some(folder.lock), Claim::mine(what), Claiming::Own)
        }
        Some(name) => {
            let dir = out.to_path_buf();
            if folder_config(&dir).map(|c| c.name).ok().as_deref() != Some(config.name.as_str()) {
                return Err(Error::bad_file(&dir, "a worker's folder must be opened by its parent first"));
            }
            (dir, None, Claim::mine(name), Claiming::Compete)
        }
    };
    let store = CellStore::new(dir.join("cells"));
    for d in &config.datasets {
        runner.dataset_info(d)?;
    }
    let cells = slice(&plan(config), shard);
    let (mut computed, mut reused) = (vec![], 0);
    for cell in &cells {
        if store.load(cell).is_some() {
            progress.skip(cell.attacks.len() as u64);
            reused += 1;
            continue;
        }
        if compute_cell(cell, runner, &store, progress, &claim, claiming)?.is_some() {
            computed.push(cell.key.clone());
        }
    }
    Ok(ShardSummary { dir, cells: cells.len(), computed, reused })
}

/// What `merge` rendered.
#[derive(Debug, Clone)]
pub struct MergeSummary {
    pub summary: AuditSummary,
    /// Cells of the plan with no stored record, in plan order.
    pub missing: Vec<CellKey>,
    /// Claims of dead processes that `merge` turned into failures.
    pub reaped: usize,
}

/// `--merge`: renders the report from whatever cells the folder holds and lists the missing
/// ones. With `reap_all`, every remaining claim is taken for a dead process (the Slurm merge job
/// runs after the whole array ended); otherwise only claims of processes known to be gone on
/// this host are. Reaped claims become failures carrying their process's log tail.
pub fn merge(
    config: &AuditConfig,
    config_path: &Path,
    runner: &mut dyn CellRunner,
    out: &Path,
    reap_all: bool,
) -> Result<MergeSummary> {
    let started = SystemTime::now();
    let clock = Instant::now();
    if !out.join(CONFIG_FILE).exists() {
        return Err(Error::bad_file(out, "holds no audit to merge (no config.toml): run the shards into it first"));
    }
    let folder = open_folder(
        config,
        &OutputOptions { out: Some(out.to_path_buf()), fresh: false },
        false,
        &format!("gnnaudit audit --merge {}", config_path.display()),
    )?;
    let store = folder.store();
    let datasets = config.datasets.iter().map(|d| runner.dataset_info(d)).collect::<Result<Vec<_>>>()?;
    let (mut records, mut missing, mut reaped) = (vec![], vec![], 0);
    for cell in plan(config) {
        if let Some(rec) = store.load(&cell) {
            store.clear_marks(&cell.key);
            records.push(rec);
            continue;
        }
        if let Some(claim) = store.claim_of(&cell.key) {
            if reap_all || claim.alive() == Some(false) {
                let f = Failure::of(
                    &claim,
                    format!("{} ended without finishing the cell (killed, out of memory or out of time?)", claim.by),
                );
                store.fail(&cell.key, &f)?;
                reaped += 1;
            }
        }
        missing.push(cell.key.clone());
    }
    let run = run_info(config_path, &folder.dir, started, clock, 0, records.len(), &records);
    let report = Report::build(config, &config_sha256(config), datasets, &records, run);
    report::write_all(&report, &folder.dir)?;
    let reused = records.len();
    Ok(MergeSummary { summary: AuditSummary { dir: folder.dir, report, computed: vec![], reused }, missing, reaped })
}

/// sha256 of the parsed config (so comments and formatting do not matter).
pub fn config_sha256(config: &AuditConfig) -> String {
    let json = serde_json::to_string(config).expect("config serialises");
    hex(&Sha256::digest(json.as_bytes()))
}

/// `--out` as given; otherwise the newest unfinished folder of the same config under
/// `config.output` (resume), otherwise a new `<name>-<timestamp>` folder.
fn output_dir(config: &AuditConfig, sha: &str, opts: &OutputOptions, now: SystemTime) -> Result<(PathBuf, bool)> {
    if let Some(out) = &opts.out {
        let resumed = out.join("cells").is_dir();
        return Ok((out.clone(), resumed));
    }
    if !opts.fresh {
        if let Some(dir) = unfinished_run(&config.output, &config.name, sha) {
            return Ok((dir, true));
        }
    }
    let stamp = report::provenance::utc_compact(now);
    let mut dir = config.output.join(format!("{}-{stamp}", config.name));
    let mut k = 2;
    while dir.exists() {
        dir = config.output.join(format!("{}-{stamp}-{k}", config.name));
        k += 1;
    }
    Ok((dir, false))
}

/// The folder an audit without `--out` resumes (`--merge` and `--slurm` use it too).
pub fn default_dir(config: &AuditConfig) -> Option<PathBuf> {
    unfinished_run(&config.output, &config.name, &config_sha256(config))
}

fn unfinished_run(root: &Path, name: &str, sha: &str) -> Option<PathBuf> {
    let prefix = format!("{name}-");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .filter(|p| !p.join("report.json").exists())
        .filter(|p| std::fs::read_to_string(p.join(PLAN_FILE)).is_ok_and(|s| s.trim() == sha))
        .collect();
    candidates.sort();
    candidates.pop()
}
