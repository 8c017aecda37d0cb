//! `--jobs N`: independent cells computed by N worker processes of this binary, each with the
//! cell's torch threads (`--threads`, 1 by default: N workers then share N cores), all writing
//! into the one cell store. Processes, not threads:
//! libtorch's random generator is process-wide, and every cell seeds it, so two cells in one
//! process would draw from each other's stream and results would change with N. Workers take
//! cells through the store's claims (`Claiming::Compete`), so the split balances itself; each
//! cell's result depends only on its own seed and thread count, hence the report is the same for
//! every N. (The thread count does matter: libtorch's parallel reductions add in an order set by
//! it; 1 and 2 threads gave test accuracies 0.587 and 0.605 on the same tiny cell. So it is a
//! per-cell setting, never derived from N or from how many cells remain.)
use super::cell::plan;
use super::config::AuditConfig;
use super::progress::Progress;
use super::runner::{compute_cell, config_sha256, open_folder, CellRunner, Claiming, OutputOptions};
use super::shard::{slice, Shard};
use super::store::{tail_lines, CellStore, Claim, Failure, LOG_ENV};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::report::record::CellKey;
use crate::report::{self, Report, RunInfo};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// How to split the work on this machine.
#[derive(Debug, Clone)]
pub struct JobsOptions {
    /// Worker processes at most (one per cell to compute at most).
    pub jobs: usize,
    /// Torch threads per cell (each worker's).
    pub threads: usize,
    /// Only this slice of the plan (a `--shard` that runs its cells with `--jobs`).
    pub shard: Option<Shard>,
    /// Passed on to the workers.
    pub data_dir: Option<PathBuf>,
}

/// What the parent did.
#[derive(Debug, Clone)]
pub struct JobsSummary {
    pub dir: PathBuf,
    pub cells: usize,
    pub computed: Vec<CellKey>,
    pub reused: usize,
    /// The report (None for a shard, which renders nothing).
    pub report: Option<Report>,
    /// Worker processes started (0: the cells ran in this process).
    pub workers: usize,
}

/// The number of cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs the cells of `opts.shard` (all without one) that the store lacks with up to
/// `opts.jobs` workers, then, without a shard, renders the report from the store.
pub fn run_jobs(
    config: &AuditConfig,
    config_path: &Path,
    runner: &mut dyn CellRunner,
    out: &OutputOptions,
    opts: &JobsOptions,
) -> Result<JobsSummary> {
    let started = SystemTime::now();
    let clock = Instant::now();
    let what = match opts.shard {
        Some(s) => format!("gnnaudit audit {} --shard {s} --jobs {}", config_path.display(), opts.jobs),
        None => format!("gnnaudit audit {} --jobs {}", config_path.display(), opts.jobs),
    };
    let folder = open_folder(config, out, opts.shard.is_none(), &what)?;
    interrupt::set_folder(&folder.dir);
    let store = folder.store();
    let datasets = config.datasets.iter().map(|d| runner.dataset_info(d)).collect::<Result<Vec<_>>>()?;
    let all = plan(config);
    let cells = slice(&all, opts.shard);
    let attacks: u64 = cells.iter().map(|c| c.attacks.len() as u64).sum();
    let progress = Progress::new(cells.len() as u64, attacks);
    if folder.resumed {
        progress.println(&format!("resuming {} ({} cells stored)", folder.dir.display(), store.count()));
    }
    let mut todo = vec![];
    for c in &cells {
        if store.load(c).is_some() {
            progress.skip(c.attacks.len() as u64);
        } else {
            // This process owns the slice (exclusive lock, or its shard): old claims are stale.
            store.clear_marks(&c.key);
            todo.push(c.clone());
        }
    }
    let reused = cells.len() - todo.len();
    let k = opts.jobs.min(todo.len()).max(1);
    let computed: Vec<CellKey> = todo.iter().map(|c| c.key.clone()).collect();
    let result = if k == 1 {
        let claim = Claim::mine(match opts.shard {
            Some(s) => format!("shard {s}"),
            None => "audit".into(),
        });
        todo.iter().try_for_each(|c| compute_cell(c, runner, &store, &progress, &claim, Claiming::Own).map(|_| ()))
    } else {
        let threads = opts.threads;
        // The workers load their own copies; the parent keeps only the datasets' descriptions.
        runner.release();
        progress
            .println(&format!("{} cells to compute: {k} worker processes, {threads} torch thread(s) each", todo.len()));
        run_workers(config_path, &folder.dir, &store, opts, k, threads, &todo, &progress)
    };
    progress.finish();
    result?;
    let workers = if k == 1 { 0 } else { k };
    if opts.shard.is_some() {
        return Ok(JobsSummary { dir: folder.dir, cells: cells.len(), computed, reused, report: None, workers });
    }
    let mut records = Vec::with_capacity(all.len());
    for c in &all {
        records.push(
            store
                .load(c)
                .ok_or_else(|| Error::Other(format!("cell {} is missing after its worker finished", c.key)))?,
        );
    }
    let run = RunInfo {
        started_at: report::provenance::utc_iso(started),
        finished_at: report::provenance::utc_iso(SystemTime::now()),
        wall_seconds: clock.elapsed().as_secs_f64(),
        config_path: config_path.display().to_string(),
        output_dir: folder.dir.display().to_string(),
        cells_computed: computed.len(),
        cells_reused: reused,
        cell_seconds: records.iter().map(|r| (r.key.clone(), r.result.seconds)).collect(),
    };
    let report = Report::build(config, &config_sha256(config), datasets, &records, run);
    report::write_all(&report, &folder.dir)?;
    Ok(JobsSummary { dir: folder.dir, cells: cells.len(), computed, reused, report: Some(report), workers })
}

struct Worker {
    name: String,
    child: Child,
    log: PathBuf,
    exit: Option<i32>,
}

/// Starts `k` workers, shows cells as they land in the store, and stops every worker when one
/// fails (its error and log tail become the parent's error; claims it left become failures).
#[allow(clippy::too_many_arguments)]
fn run_workers(
    config_path: &Path,
    dir: &Path,
    store: &CellStore,
    opts: &JobsOptions,
    k: usize,
    threads: usize,
    todo: &[super::cell::CellSpec],
    progress: &Progress,
) -> Result<()> {
    let exe = std::env::current_exe().map_err(|e| Error::Other(format!("cannot find the gnnaudit binary: {e}")))?;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| Error::bad_file(&logs, e))?;
    let mut workers: Vec<Worker> = vec![];
    for i in 1..=k {
        let name = format!("worker {i}/{k}");
        let log = logs.join(format!("worker-{i}.log"));
        let file = std::fs::File::create(&log).map_err(|e| Error::bad_file(&log, e))?;
        let mut cmd = Command::new(&exe);
        cmd.arg("audit").arg(config_path).arg("--out").arg(dir);
        cmd.args(["--worker", &format!("{i}/{k}"), "--threads", &threads.to_string()]);
        if let Some(s) = opts.shard {
            cmd.args(["--shard", &s.to_string()]);
        }
        if let Some(d) = &opts.data_dir {
            cmd.arg("--data-dir").arg(d);
        }
        cmd.args(["--device", &crate::device::current_spec().to_string()]);
        cmd.env(LOG_ENV, &log).stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file);
        // A parent killed with SIGKILL cannot stop its workers: they stop themselves, so that a
        // resume started meanwhile does not race them for cells.
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure only makes async-signal-safe calls (prctl, getppid, _exit).
        unsafe { std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || interrupt::die_with_parent(parent)) };
        let child = match interrupt::spawn_child(&mut cmd) {
            Ok(c) => c,
            Err(e) => {
                stop(&mut workers);
                return Err(Error::Other(format!("cannot start {name}: {e}")));
            }
        };
        workers.push(Worker { name, child, log, exit: None });
    }
    let mut shown = vec![false; todo.len()];
    let mut failed: Option<usize> = None;
    loop {
        for (i, c) in todo.iter().enumerate() {
            if !shown[i] && store.path(c).exists() {
                shown[i] = true;
                progress.skip(c.attacks.len() as u64);
                progress.println(&format!("done: {}", c.key));
            }
        }
        for (i, w) in workers.iter_mut().enumerate() {
            if w.exit.is_none() {
                if let Some(status) = w.child.try_wait()? {
                    interrupt::remove_child(w.child.id());
                    let code = status.code().unwrap_or(-1);
                    w.exit = Some(code);
                    if code != 0 && failed.is_none() {
                        failed = Some(i);
                    }
                }
            }
        }
        if failed.is_some() {
            stop(&mut workers);
        }
        if workers.iter().all(|w| w.exit.is_some()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // Claims left by workers that died (killed, or stopped above) become failures.
    for c in todo {
        if let Some(claim) = store.claim_of(&c.key) {
            if workers.iter().any(|w| w.child.id() == claim.pid) {
                let _ =
                    store.fail(&c.key, &Failure::of(&claim, format!("{} stopped before finishing the cell", claim.by)));
            }
        }
    }
    let Some(i) = failed else { return Ok(()) };
    let w = &workers[i];
    let code = w.exit.unwrap_or(-1);
    let tail = tail_lines(&w.log, 12).join("\n    ");
    let msg = format!("{} failed (exit code {code}); the last lines of {}:\n    {tail}", w.name, w.log.display());
    Err(if code == 2 { Error::bad_file(dir, msg) } else { Error::Other(msg) })
}

/// Stops the workers still running and waits for them.
fn stop(workers: &mut [Worker]) {
    for w in workers.iter_mut().filter(|w| w.exit.is_none()) {
        // SAFETY: signals a child process this process started and has not yet reaped.
        unsafe { libc::kill(w.child.id() as libc::pid_t, libc::SIGTERM) };
    }
    for w in workers.iter_mut().filter(|w| w.exit.is_none()) {
        let code = w.child.wait().ok().and_then(|s| s.code()).unwrap_or(-1);
        interrupt::remove_child(w.child.id());
        w.exit = Some(code);
    }
}
