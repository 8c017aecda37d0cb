//! `--slurm`: an audit as a Slurm job array. Each array task computes one shard of the cells
//! (`--shard I/N`) into the report folder's cell store; a final job that depends on the whole
//! array (`afterany`, so it runs even when tasks fail) merges the cells and renders the report,
//! turning the claims of tasks that died into failures with their log tails. Nothing here waits
//! for the jobs: `gnnaudit audit status DIR` follows them.
//!
//! Job options go on sbatch's command line (paths may hold spaces, which `#SBATCH` lines do not
//! quote); the scripts in `<dir>/slurm/` hold the commands, and `<dir>/slurm/jobs.json` the job
//! ids and the exact sbatch calls.
use super::config::AuditConfig;
use super::runner::{open_folder, OutputOptions};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The job options of `--slurm`.
#[derive(Debug, Clone, Default)]
pub struct SlurmOptions {
    pub partition: Option<String>,
    /// Per task, in any form sbatch takes ("30", "1:00:00", "1-0").
    pub time: Option<String>,
    /// Per task ("4G").
    pub mem: Option<String>,
    /// Torch threads per cell (`--threads`), as in a local run of the same report.
    pub threads: usize,
    /// Cores per task.
    pub cpus_per_task: usize,
    /// Array tasks running at once (`%K`).
    pub max_parallel: Option<usize>,
    /// Array tasks (shards) [one per cell, at most 1000].
    pub tasks: Option<usize>,
    pub data_dir: Option<PathBuf>,
}

/// What was submitted.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub dir: PathBuf,
    pub array_job: String,
    pub merge_job: String,
    pub tasks: usize,
}

/// The sbatch to run: `GNNAUDIT_SBATCH` (e.g. a wrapper that ssh-es to a login node), else
/// `sbatch` on PATH.
fn sbatch() -> String {
    std::env::var("GNNAUDIT_SBATCH").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "sbatch".into())
}

fn check_word(flag: &str, v: &Option<String>) -> Result<()> {
    if let Some(v) = v {
        crate::ensure!(
            !v.is_empty() && !v.chars().any(|c| c.is_whitespace() || c.is_control()),
            Error::invalid(flag, format!("'{v}' must be one word"))
        );
    }
    Ok(())
}

/// Single-quotes a word for bash.
fn sh(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// Writes the task and merge scripts into `<dir>/slurm/` and submits them.
pub fn submit(config: &AuditConfig, config_path: &Path, out: &OutputOptions, opts: &SlurmOptions) -> Result<Submitted> {
    check_word("--partition", &opts.partition)?;
    check_word("--time", &opts.time)?;
    check_word("--mem", &opts.mem)?;
    crate::ensure!(opts.cpus_per_task >= 1, Error::invalid("--cpus-per-task", "must be at least 1"));
    crate::ensure!(opts.max_parallel != Some(0), Error::invalid("--max-parallel", "must be at least 1"));
    crate::ensure!(opts.tasks != Some(0), Error::invalid("--tasks", "must be at least 1"));
    let cells = super::cell::plan(config).len();
    let tasks = opts.tasks.unwrap_or(cells).min(cells).clamp(1, 1000);
    let config_abs = std::fs::canonicalize(config_path).map_err(|e| Error::bad_file(config_path, e))?;
    let exe = std::env::current_exe().map_err(|e| Error::Other(format!("cannot find the gnnaudit binary: {e}")))?;
    let cwd = std::env::current_dir()?;
    // The exclusive lock proves no other audit is at work in the folder; the tasks take it shared.
    let folder = open_folder(config, out, true, &format!("gnnaudit audit {} --slurm", config_path.display()))?;
    let dir = std::fs::canonicalize(&folder.dir).map_err(|e| Error::bad_file(&folder.dir, e))?;
    drop(folder);
    let (slurm_dir, logs) = (dir.join("slurm"), dir.join("logs"));
    for d in [&slurm_dir, &logs] {
        std::fs::create_dir_all(d).map_err(|e| Error::bad_file(d, e))?;
    }
    let data_dir = match &opts.data_dir {
        Some(d) => format!(" --data-dir {}", sh(&std::fs::canonicalize(d).map_err(|e| Error::bad_file(d, e))?)),
        None => String::new(),
    };
    let head = format!(
        "#!/bin/bash\n# Written by `gnnaudit audit --slurm` for {}; submitted with the options in jobs.json.\nset -euo pipefail\n",
        config_abs.display()
    );
    let array_script = slurm_dir.join("shard.sbatch");
    let task_log = format!("{}/slurm-${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}.log", logs.display());
    crate::fsutil::write_atomic(
        &array_script,
        format!(
            "{head}# One shard of the cells per array task.\nexport {}=\"{}\"\nexec {} audit {} --out {} --shard \"${{SLURM_ARRAY_TASK_ID}}/{tasks}\" --jobs {} --threads {}{data_dir}\n",
            super::store::LOG_ENV,
            task_log.replace('"', "\\\""),
            sh(&exe),
            sh(&config_abs),
            sh(&dir),
            (opts.cpus_per_task / opts.threads).max(1),
            opts.threads
        )
        .as_bytes(),
    )?;
    let merge_script = slurm_dir.join("merge.sbatch");
    crate::fsutil::write_atomic(
        &merge_script,
        format!(
            "{head}# Runs after every array task ended: merges the cells and renders the report.\nexec {} audit {} --out {} --merge --reap-claims{data_dir}\n",
            sh(&exe),
            sh(&config_abs),
            sh(&dir)
        )
        .as_bytes(),
    )?;

    let mut common = vec![format!("--chdir={}", cwd.display()), format!("--cpus-per-task={}", opts.cpus_per_task)];
    if let Some(p) = &opts.partition {
        common.push(format!("--partition={p}"));
    }
    if let Some(t) = &opts.time {
        common.push(format!("--time={t}"));
    }
    if let Some(m) = &opts.mem {
        common.push(format!("--mem={m}"));
    }
    let mut array_args = vec!["--parsable".to_string(), format!("--job-name=gnnaudit-{}", config.name)];
    array_args.push(match opts.max_parallel {
        Some(k) => format!("--array=1-{tasks}%{k}"),
        None => format!("--array=1-{tasks}"),
    });
    array_args.push(format!("--output={}/slurm-%A_%a.log", logs.display()));
    array_args.extend(common.iter().cloned());
    array_args.push(array_script.display().to_string());
    let array_job = run_sbatch(&array_args, "the job array")?;

    let mut merge_args = vec!["--parsable".to_string(), format!("--job-name=gnnaudit-{}-merge", config.name)];
    merge_args.push(format!("--dependency=afterany:{array_job}"));
    merge_args.push(format!("--output={}/slurm-merge-%j.log", logs.display()));
    merge_args.extend(common.iter().cloned());
    merge_args.push(merge_script.display().to_string());
    let merge_job = match run_sbatch(&merge_args, "the merge job") {
        Ok(id) => id,
        Err(e) => {
            // Without its merge job the array would compute cells nobody renders: cancel it.
            let _ = Command::new("scancel").arg(&array_job).status();
            return Err(e);
        }
    };
    let jobs = serde_json::json!({
        "array_job": array_job, "merge_job": merge_job, "tasks": tasks,
        "submitted_at": super::lock::now_utc(),
        "sbatch": [
            std::iter::once(sbatch()).chain(array_args).collect::<Vec<_>>(),
            std::iter::once(sbatch()).chain(merge_args).collect::<Vec<_>>(),
        ],
    });
    crate::fsutil::write_atomic(&slurm_dir.join("jobs.json"), serde_json::to_string_pretty(&jobs)?.as_bytes())?;
    Ok(Submitted { dir, array_job, merge_job, tasks })
}

/// Runs sbatch; its own message is the error (exit 2) when it refuses.
fn run_sbatch(args: &[String], what: &str) -> Result<String> {
    let bin = sbatch();
    let out = Command::new(&bin)
        .args(args)
        .output()
        .map_err(|e| Error::invalid("--slurm", format!("cannot run {bin}: {e} (is Slurm installed and on PATH?)")))?;
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !out.status.success() {
        return Err(Error::invalid("--slurm", format!("sbatch refused {what}: {stderr}")));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let id = stdout.trim().split(';').next().unwrap_or("").trim().to_string();
    crate::ensure!(
        !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()),
        Error::invalid(
            "--slurm",
            format!("sbatch gave no job id for {what} (stdout {:?}, stderr {stderr:?})", stdout.trim())
        )
    );
    Ok(id)
}
