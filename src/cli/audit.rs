//! `gnnaudit audit <config> [--out DIR]`: train every configured target, attack it, and write
//! report.json, report.md and report.html; `gnnaudit render <report.json>` redraws the last two.
//! The cells can be split over processes (`--jobs`), schedulers (`--shard`, `--merge`) and a
//! Slurm cluster (`--slurm`); `gnnaudit audit status DIR` shows where an audit stands.
use crate::audit::cell::plan;
use crate::audit::config::AuditConfig;
use crate::audit::parallel::{cores, run_jobs, JobsOptions};
use crate::audit::runner::{default_dir, merge, run_shard, OutputOptions};
use crate::audit::shard::{slice, Shard};
use crate::audit::slurm::{submit, SlurmOptions};
use crate::audit::Progress;
use crate::error::{Error, Result};
use crate::interrupt;
use crate::report::{self, Report};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: Option<AuditCommand>,
    /// Audit config (TOML), e.g. configs/quick.toml.
    #[arg(required = true)]
    pub config: Option<PathBuf>,
    /// Report folder (default: `<output>/<name>-<timestamp>`). A folder that already holds
    /// cells of this config is resumed; a folder of another config is refused.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Start over: a new report folder even when an unfinished run of this config exists; with
    /// --out, the folder's stored cells and reports are removed first.
    #[arg(long, conflicts_with = "merge")]
    pub fresh: bool,
    /// Folder of named datasets (default: GNNAUDIT_DATA, then ./datasets).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Validate the config, print the planned cells (of --shard's slice) and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Largest grid (datasets x (method, epsilon) pairs x seeds) accepted: a bigger one is
    /// almost always a typo (`repeats = 1000000000`).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub max_cells: u64,
    /// Cells computed at once, by as many worker processes [default: the number of cores].
    /// The report does not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Torch threads per cell [1]: the cores are split among cells by --jobs. A cell's figures
    /// depend on its thread count (libtorch's parallel sums add in another order), so it is
    /// fixed per cell and never derived from --jobs: the same --threads, the same report.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Torch device: cpu | cuda | cuda:N | auto [the config's `device`, else cpu]. With
    /// --slurm, set `device` in the config instead (the tasks run where Slurm puts them).
    #[arg(long, value_parser = crate::device::parse_device, conflicts_with = "slurm")]
    pub device: Option<crate::device::DeviceSpec>,
    /// Compute only slice I of N of the cells (1 <= I <= N) into --out, and render nothing; for
    /// any scheduler (array jobs, GNU parallel, a shell loop). Then `--merge` renders.
    #[arg(long, value_name = "I/N", requires = "out", conflicts_with_all = ["merge", "slurm"])]
    pub shard: Option<String>,
    /// Render the report from the cells the folder holds (--out, else the newest unfinished
    /// run of this config) and list the missing ones; exit 1 when cells are missing.
    #[arg(long, conflicts_with_all = ["slurm", "jobs"])]
    pub merge: bool,
    /// Submit the audit to Slurm: a job array (one shard per task) and a job that depends on
    /// it and merges. Returns once submitted; follow with `gnnaudit audit status DIR`.
    #[arg(long)]
    pub slurm: bool,
    /// --slurm: partition to submit to [the cluster's default].
    #[arg(long, requires = "slurm")]
    pub partition: Option<String>,
    /// --slurm: time limit per task, as sbatch takes it (e.g. 2:00:00).
    #[arg(long, requires = "slurm")]
    pub time: Option<String>,
    /// --slurm: memory per task, as sbatch takes it (e.g. 8G).
    #[arg(long, requires = "slurm")]
    pub mem: Option<String>,
    /// --slurm: cores per task [--threads].
    #[arg(long, requires = "slurm")]
    pub cpus_per_task: Option<usize>,
    /// --slurm: array tasks running at once.
    #[arg(long, requires = "slurm")]
    pub max_parallel: Option<usize>,
    /// --slurm: number of array tasks (shards) [one per cell, at most 1000].
    #[arg(long, requires = "slurm")]
    pub tasks: Option<usize>,
    /// Internal: a --jobs worker (I/N) of a parent that holds the folder.
    #[arg(long, hide = true, requires = "out")]
    pub worker: Option<String>,
    /// Internal (the Slurm merge job): every remaining claim belongs to an ended task.
    #[arg(long, hide = true, requires = "merge")]
    pub reap_claims: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Cells of an audit folder done, running, failed (with their log tail) and missing.
    Status(StatusArgs),
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The audit's report folder.
    pub dir: PathBuf,
}

/// Torch threads at most (libtorch starts a thread per unit: 100000 exhausts the stack).
const MAX_THREADS: usize = 1024;

pub fn run(args: AuditArgs) -> Result<()> {
    if let Some(AuditCommand::Status(s)) = &args.command {
        let st = crate::audit::status::status(&s.dir)?;
        print!("{}", crate::audit::status::render(&st));
        return Ok(());
    }
    // Before any other thread exists (polars' and libtorch's pools inherit the blocked signals).
    interrupt::install();
    let config_path = args.config.clone().expect("clap requires CONFIG without a subcommand");
    // Flags first: a bad flag must not load datasets or create folders.
    let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
    crate::ensure!(args.jobs != Some(0), Error::invalid("--jobs", "must be at least 1"));
    if let Some(t) = args.threads {
        crate::ensure!(
            (1..=MAX_THREADS).contains(&t),
            Error::invalid("--threads", format!("{t} is outside 1..={MAX_THREADS}"))
        );
    }
    let worker =
        args.worker.as_deref().map(Shard::parse).transpose().map_err(|_| Error::invalid("--worker", "expected I/N"))?;
    let mut config = AuditConfig::load(&config_path, args.data_dir.as_deref())?;
    // Before the cells are planned (one record each).
    config.grid_size().check(args.max_cells)?;
    if let Some(d) = args.device {
        config.device = d;
    }
    // Before any tensor exists; a CUDA device this machine lacks is refused here (exit 2).
    crate::device::select(config.device)?;
    if args.dry_run {
        let cells = slice(&plan(&config), shard);
        match shard {
            Some(s) => println!("config {} is valid: shard {s} has {} cells", config_path.display(), cells.len()),
            None => println!("config {} is valid: {} cells", config_path.display(), cells.len()),
        }
        let targets =
            config.target.iter().flat_map(|t| t.iter()).map(|t| (format!("target command ({})", t.label()), &t.spec));
        for (name, spec) in targets.chain(config.control.iter().map(|c| ("control command".to_string(), c))) {
            if let crate::external::TargetSpec::Command { command, .. } = spec {
                println!("  {name} (runs with your rights; audit only configs you trust): {command}");
            }
        }
        for c in &cells {
            let attacks: Vec<String> = c.attacks.iter().map(|a| a.label()).collect();
            println!("  {}  attacks: [{}]", c.key, attacks.join(", "));
        }
        return Ok(());
    }
    let threads = args.threads.unwrap_or(1);
    tch::set_num_threads(threads as i32);
    if args.slurm {
        let opts = SlurmOptions {
            partition: args.partition.clone(),
            time: args.time.clone(),
            mem: args.mem.clone(),
            threads,
            cpus_per_task: args.cpus_per_task.unwrap_or(threads),
            max_parallel: args.max_parallel,
            tasks: args.tasks,
            data_dir: args.data_dir.clone(),
        };
        let out = OutputOptions { out: args.out.clone(), fresh: args.fresh };
        let s = submit(&config, &config_path, &out, &opts)?;
        println!(
            "submitted audit '{}' to Slurm: array job {} ({} tasks), merge job {}",
            config.name, s.array_job, s.tasks, s.merge_job
        );
        println!("merge job: {}", s.merge_job);
        println!("follow:    gnnaudit audit status {}", s.dir.display());
        println!("report:    {} (written by the merge job)", s.dir.join("report.html").display());
        return Ok(());
    }
    let mut runner = crate::audit::execute::RealRunner::new(args.data_dir.clone());
    if let Some(w) = worker {
        // A --jobs worker: its parent prints, resumes and renders; Ctrl-C stops it quietly.
        eprintln!(
            "worker {w}: pid {}, {} torch thread(s), {}={}",
            std::process::id(),
            tch::get_num_threads(),
            crate::libtorch::WAIT_POLICY_ENV,
            crate::libtorch::wait_policy()
        );
        let out = args.out.as_deref().expect("clap requires --out with --worker");
        // Its "done:" lines go to its log.
        run_shard(&config, &mut runner, out, shard, Some(&format!("worker {w}")), &Progress::new(0, 0))?;
        return Ok(());
    }
    if args.merge {
        let out = match &args.out {
            Some(o) => o.clone(),
            None => default_dir(&config).ok_or_else(|| {
                Error::invalid(
                    "--out",
                    format!(
                        "no unfinished run of '{}' under {} to merge; name it with --out",
                        config.name,
                        config.output.display()
                    ),
                )
            })?,
        };
        let m = merge(&config, &config_path, &mut runner, &out, args.reap_claims)?;
        println!(
            "merged {} of {} cells into {}",
            m.summary.reused,
            m.summary.reused + m.missing.len(),
            m.summary.dir.display()
        );
        print_report_paths(&m.summary.dir);
        if !m.missing.is_empty() {
            println!(
                "{} cells missing (`gnnaudit audit status {}` says why):",
                m.missing.len(),
                m.summary.dir.display()
            );
            for k in &m.missing {
                println!("  {k}");
            }
            return Err(Error::Other(format!("the report is partial: {} cells missing", m.missing.len())));
        }
        return Ok(());
    }

    let out = OutputOptions { out: args.out.clone(), fresh: args.fresh };
    let jobs = args.jobs.unwrap_or_else(cores);
    let opts = JobsOptions { jobs, threads, shard, data_dir: args.data_dir.clone() };
    let hint_config = config_path.clone();
    let hint_out = args.out.clone();
    let hint_shard = shard;
    interrupt::set_message(move || resume_hint(&hint_config, hint_out.as_deref(), hint_shard));
    let s = run_jobs(&config, &config_path, &mut runner, &out, &opts)?;
    let Some(report) = s.report else {
        println!(
            "shard {} of audit '{}' done: {} cells computed, {} already stored, into {}",
            shard.map(|s| s.to_string()).unwrap_or_default(),
            config.name,
            s.computed.len(),
            s.reused,
            s.dir.display()
        );
        println!("render with: gnnaudit audit {} --out {} --merge", config_path.display(), s.dir.display());
        return Ok(());
    };
    println!(
        "audit '{}' done in {:.0} s: {} cells computed, {} reused",
        config.name,
        report.run.wall_seconds,
        s.computed.len(),
        s.reused
    );
    let violations: usize = report.summary.iter().flat_map(|s| &s.attacks).map(|a| a.violations).sum();
    if violations > 0 {
        println!("WARNING: {violations} attack result(s) exceed the claimed epsilon; see the report");
    }
    print_report_paths(&s.dir);
    Ok(())
}

fn print_report_paths(dir: &Path) {
    println!("report: {}", dir.join("report.html").display());
    println!("        {}", dir.join("report.md").display());
    println!("        {}", dir.join("report.json").display());
}

/// What Ctrl-C prints: what was kept and the command that resumes.
fn resume_hint(config: &Path, out: Option<&Path>, shard: Option<Shard>) -> String {
    let shard = shard.map(|s| format!(" --shard {s}")).unwrap_or_default();
    let folder = out.map(Path::to_path_buf).or_else(interrupt::folder);
    match folder {
        Some(o) => {
            let o = &o;
            let stored = crate::audit::store::CellStore::new(o.join("cells")).count();
            format!(
                "{stored} finished cell(s) are kept in {}; the cells in progress were dropped. Resume with:\n  gnnaudit audit {} --out {}{shard}",
                o.join("cells").display(),
                config.display(),
                o.display()
            )
        }
        None => format!(
            "the finished cells are kept in the report folder; the cells in progress were dropped. Resume with:\n  gnnaudit audit {}{shard}\n(an unfinished run of the same config is resumed)",
            config.display()
        ),
    }
}

#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// A report.json (or its folder); report.md and report.html are rewritten beside it.
    pub report: PathBuf,
}

pub fn render(args: RenderArgs) -> Result<()> {
    let path = if args.report.is_dir() { args.report.join("report.json") } else { args.report.clone() };
    let report = Report::load(&path)?;
    // What `check` and `report diff` refuse is not rendered either: nothing is written.
    crate::report::check::validate_report(&report, &path)?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).map_or(PathBuf::from("."), |p| p.to_path_buf());
    report::write_all(&report, &dir)?;
    println!("wrote {} and {}", dir.join("report.md").display(), dir.join("report.html").display());
    Ok(())
}
