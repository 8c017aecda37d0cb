//! The audit loop: plan the cells of a config, reuse the ones already stored, compute the rest
//! through a `CellRunner` (the real one trains and attacks; tests plug in a fake), store each
//! cell the moment it finishes, then write the reports.
use super::cell::{plan, CellKey, CellMeasurement, CellRecord, CellSpec};
use super::config::{AuditConfig, DatasetSpec};
use super::progress::Progress;
use super::store::{write_atomic, CellStore};
use crate::error::{Error, Result};
use crate::report::{self, DatasetInfo, Report, RunInfo};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

/// Computes cells. The real runner loads datasets once, trains targets and runs attacks.
pub trait CellRunner {
    /// Loads (and caches) a dataset and says what it is; called for every dataset before any
    /// cell, so that a bad file fails the audit before training starts.
    fn dataset_info(&mut self, spec: &DatasetSpec) -> Result<DatasetInfo>;
    /// Trains the cell's target, runs its attacks and returns the measurements. Reports stage
    /// progress through `progress` (one `done(Stage::Training)`, `done(Stage::Attack)` per attack,
    /// shadow models as announced with `add_work`).
    fn run_cell(&mut self, cell: &CellSpec, progress: &Progress) -> Result<CellMeasurement>;
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
        progress.set_cell(&cell.key);
        let result = runner.run_cell(cell, progress).map_err(|e| match e {
            Error::Other(m) => Error::Other(format!("cell {}: {m}", cell.key)),
            e => e,
        })?;
        let rec = CellRecord { key: cell.key.clone(), fingerprint: cell.fingerprint.clone(), result };
        store.save(cell, &rec)?;
        progress.println(&format!("done: {} (test acc {:.3})", cell.key, rec.result.utility.test));
        computed.push(cell.key.clone());
        records.push(rec);
    }
    Ok(CellsOutcome { datasets, records, computed })
}

/// How `audit` chooses its output folder.
#[derive(Debug, Clone, Default)]
pub struct OutputOptions {
    /// `--out DIR`: write (and resume) exactly there.
    pub out: Option<PathBuf>,
    /// Ignore earlier unfinished runs of the same config and start a new folder.
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
    let config_sha = config_sha256(config);
    let (dir, resumed) = output_dir(config, &config_sha, opts, started)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::bad_file(&dir, format!("cannot create the report folder: {e}")))?;
    write_atomic(&dir.join(PLAN_FILE), config_sha.as_bytes())?;
    write_atomic(
        &dir.join("config.toml"),
        toml::to_string(config).map_err(|e| Error::Other(e.to_string()))?.as_bytes(),
    )?;

    let store = CellStore::new(dir.join("cells"));
    let cells = plan(config);
    let attacks: u64 = cells.iter().map(|c| c.attacks.len() as u64).sum();
    let progress = Progress::new(cells.len() as u64, attacks);
    if resumed {
        progress.println(&format!("resuming {} ({} cells stored)", dir.display(), store.count()));
    }
    let outcome = run_cells(config, runner, &store, &progress);
    progress.finish();
    let outcome = outcome?;
    let reused = outcome.records.len() - outcome.computed.len();

    let run = RunInfo {
        started_at: report::provenance::utc_iso(started),
        finished_at: report::provenance::utc_iso(SystemTime::now()),
        wall_seconds: clock.elapsed().as_secs_f64(),
        config_path: config_path.display().to_string(),
        output_dir: dir.display().to_string(),
        cells_computed: outcome.computed.len(),
        cells_reused: reused,
        cell_seconds: outcome.records.iter().map(|r| (r.key.clone(), r.result.seconds)).collect(),
    };
    let report = Report::build(config, &config_sha, outcome.datasets, &outcome.records, run);
    report::write_all(&report, &dir)?;
    Ok(AuditSummary { dir, report, computed: outcome.computed, reused })
}

/// Marks a report folder with the config it belongs to (sha256 of the parsed config).
const PLAN_FILE: &str = ".audit-config.sha256";

/// sha256 of the parsed config (so comments and formatting do not matter).
pub fn config_sha256(config: &AuditConfig) -> String {
    let json = serde_json::to_string(config).expect("config serialises");
    super::cell::hex(&Sha256::digest(json.as_bytes()))
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
