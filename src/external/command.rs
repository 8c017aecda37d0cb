//! The deployment's own training pipeline as a target: a command template such as
//! `python train.py --graph {graph} --out {out}` run once per graph an attack needs (the
//! canary-augmented graphs of a canary audit, the shadow graphs of a membership audit, the
//! target graph itself).
//!
//! Per run, gnnaudit writes the graph and its split in the documented `.npz` layout
//! ([`super::graph_npz`]) to `{graph}`, creates the folder `{out}`, runs the command through
//! `sh -c` (placeholders are shell-quoted; `{seed}` is optional) with a timeout, its stdout and
//! stderr captured to `log.txt`, and reads back `{out}/posteriors.npy` (or `.parquet` / `.csv`:
//! a `node` column plus one column per class) and, where present, `{out}/embeddings.npy`.
//!
//! Runs are content-addressed: the folder of a run is named after the sha256 of the template and
//! the graph file, and a finished run (marker `done`) is reused, so an interrupted audit resumes
//! where it stopped when `work_dir` is kept.
use super::graph_npz::write_graph;
use super::posteriors::{load_posteriors, read_npy_matrix, Released};
use crate::error::{Error, Result};
use gnnaudit_attacks as attacks;
use gnnaudit_attacks::{AttackGraph, BlackBox, NodeSplit, ShadowOracle};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tch::Tensor;

/// Lines of a failed run's log shown in its error.
const LOG_TAIL: usize = 20;

/// A template must name where the graph goes in and where the outputs come out.
pub fn check_template(template: &str) -> Result<()> {
    crate::ensure!(!template.trim().is_empty(), Error::invalid("command", "the command template is empty"));
    for p in ["{graph}", "{out}"] {
        crate::ensure!(
            template.contains(p),
            Error::invalid("command", format!("the template '{template}' has no {p} placeholder"))
        );
    }
    Ok(())
}

/// The content key of the files a template names, in template order.
fn scripts_key(template: &str) -> Result<String> {
    let mut h = Sha256::new();
    for p in super::spec::script_files(template) {
        h.update(p.display().to_string().as_bytes());
        h.update(crate::data::file_sha256(&p)?.as_bytes());
    }
    Ok(crate::fsutil::hex(&h.finalize()))
}

/// POSIX single-quoting: the path is one word whatever it contains.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// The last `n` lines of a log file.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(n)..];
    if tail.is_empty() {
        "  (the log is empty)".into()
    } else {
        tail.iter().map(|l| format!("  | {l}")).collect::<Vec<_>>().join("\n")
    }
}

/// Runs the template on graphs; owns the work folder (a temporary one unless given).
pub struct CommandRunner {
    pub template: String,
    pub timeout: Duration,
    pub work_dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
    /// The first failure of a run, kept whole (file, exit code) for the caller.
    pub failure: RefCell<Option<Error>>,
    /// Number of runs executed (not reused).
    pub executed: RefCell<usize>,
    /// Number of finished runs found in the work folder and reused.
    pub reused: RefCell<usize>,
    /// sha256 of the files the template names (`spec::script_files`), read once: a run is
    /// reused only if the pipeline's scripts are byte for byte the ones it ran with.
    scripts_key: String,
}

/// One run's released outputs.
pub struct RunOutput {
    pub released: Released,
    pub dir: PathBuf,
}

impl CommandRunner {
    pub fn new(template: &str, timeout_seconds: f64, work_dir: Option<&Path>) -> Result<Self> {
        check_template(template)?;
        crate::ensure!(
            timeout_seconds.is_finite() && timeout_seconds > 0.0,
            Error::invalid("timeout", format!("{timeout_seconds} is not a positive number of seconds"))
        );
        let (work_dir, temp) = match work_dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| Error::bad_file(d, e))?;
                (d.to_path_buf(), None)
            }
            None => {
                let t = tempfile::Builder::new().prefix("gnnaudit-command-").tempdir()?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        Ok(CommandRunner {
            template: template.to_string(),
            timeout: Duration::from_secs_f64(timeout_seconds),
            work_dir,
            _temp: temp,
            failure: RefCell::new(None),
            executed: RefCell::new(0),
            reused: RefCell::new(0),
            scripts_key: scripts_key(template)?,
        })
    }

    /// Trains through the command on `g` with `split` and returns what it released.
    pub fn run(&self, g: &AttackGraph, split: &NodeSplit, seed: u64) -> Result<RunOutput> {
        let staging = self.work_dir.join(format!("staging-{}.npz", std::process::id()));
        write_graph(&staging, g, split)?;
        let mut h = Sha256::new();
        h.update(self.template.as_bytes());
        h.update(seed.to_le_bytes());
        h.update(self.scripts_key.as_bytes());
        h.update(std::fs::read(&staging).map_err(|e| Error::bad_file(&staging, e))?);
        let key = crate::fsutil::hex(&h.finalize()[..8]);
        let dir = self.work_dir.join(format!("run-{key}"));
        let (graph, out, log) = (dir.join("graph.npz"), dir.join("out"), dir.join("log.txt"));
        if !dir.join("done").is_file() {
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|e| Error::bad_file(&dir, e))?;
            }
            std::fs::create_dir_all(&out).map_err(|e| Error::bad_file(&out, e))?;
            std::fs::rename(&staging, &graph).map_err(|e| Error::bad_file(&graph, e))?;
            self.execute(&graph, &out, &log, seed)?;
        } else {
            let _ = std::fs::remove_file(&staging);
            let mut reused = self.reused.borrow_mut();
            if *reused == 0 {
                tracing::warn!(
                    "reusing finished runs in {} (same template, scripts and graph; e.g. {})",
                    self.work_dir.display(),
                    dir.display()
                );
            }
            *reused += 1;
        }
        let released = self.read_outputs(&out, &log, g)?;
        std::fs::write(dir.join("done"), b"").map_err(|e| Error::bad_file(&dir, e))?;
        Ok(RunOutput { released, dir })
    }

    fn execute(&self, graph: &Path, out: &Path, log: &Path, seed: u64) -> Result<()> {
        let cmd = self
            .template
            .replace("{graph}", &quote(graph))
            .replace("{out}", &quote(out))
            .replace("{seed}", &seed.to_string());
        let log_file = std::fs::File::create(log).map_err(|e| Error::bad_file(log, e))?;
        let err_file = log_file.try_clone().map_err(|e| Error::bad_file(log, e))?;
        let mut command = Command::new("sh");
        command.arg("-c").arg(&cmd).stdin(Stdio::null()).stdout(log_file).stderr(err_file);
        // Its own process group, so that a timeout stops the whole pipeline, not only `sh`.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let start = Instant::now();
        let mut child =
            command.spawn().map_err(|e| Error::invalid("command", format!("cannot start `sh -c {cmd}`: {e}")))?;
        *self.executed.borrow_mut() += 1;
        tracing::info!(command = %cmd, "command target run");
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if start.elapsed() > self.timeout {
                let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::invalid(
                    "command",
                    format!(
                        "`{cmd}` timed out after {:.0} s (timeout); last lines of its log {}:\n{}",
                        self.timeout.as_secs_f64(),
                        log.display(),
                        log_tail(log, LOG_TAIL)
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        crate::ensure!(
            status.success(),
            Error::invalid(
                "command",
                format!(
                    "`{cmd}` failed ({status}) after {:.1} s; last lines of its log {}:\n{}",
                    start.elapsed().as_secs_f64(),
                    log.display(),
                    log_tail(log, LOG_TAIL)
                )
            )
        );
        Ok(())
    }

    fn read_outputs(&self, out: &Path, log: &Path, g: &AttackGraph) -> Result<Released> {
        let candidates = ["posteriors.npy", "posteriors.parquet", "posteriors.csv"].map(|f| out.join(f));
        let path = candidates.iter().find(|p| p.is_file()).ok_or_else(|| {
            Error::bad_file(
                out,
                format!(
                    "the command wrote no posteriors.npy, posteriors.parquet or posteriors.csv here; last lines of \
                     its log {}:\n{}",
                    log.display(),
                    log_tail(log, LOG_TAIL)
                ),
            )
        })?;
        let mut released = Released::new(load_posteriors(path, g.num_nodes, g.num_classes)?);
        let emb = out.join("embeddings.npy");
        if emb.is_file() {
            let (rows, cols, data) = read_npy_matrix(&emb)?;
            crate::ensure!(
                rows == g.num_nodes,
                Error::bad_file(&emb, format!("{rows} rows, the graph has {} nodes", g.num_nodes))
            );
            let t = Tensor::from_slice(&data).reshape([rows as i64, cols as i64]);
            crate::ensure!(
                Vec::<bool>::try_from(&t.isfinite().all())?.iter().all(|&b| b),
                Error::bad_file(&emb, "holds NaN or infinite values")
            );
            released.embeddings = Some(t);
        }
        Ok(released)
    }
}

/// The shadow oracle of a command target: every training run the attack asks for is a run of
/// the deployment's own pipeline.
pub struct CommandOracle<'a> {
    pub runner: &'a CommandRunner,
}

impl ShadowOracle for CommandOracle<'_> {
    fn train(&self, graph: &AttackGraph, split: &NodeSplit, seed: u64) -> attacks::Result<Box<dyn BlackBox>> {
        match self.runner.run(graph, split, seed) {
            Ok(out) => Ok(Box::new(out.released)),
            Err(e) => {
                let text = e.to_string();
                self.runner.failure.borrow_mut().get_or_insert(e);
                Err(attacks::Error::Target(text))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> (AttackGraph, NodeSplit) {
        let x = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]).reshape([3, 2]);
        let g = AttackGraph::new(3, vec![(0, 1), (1, 2)], x, vec![0, 1, 0], 2).unwrap();
        (g, NodeSplit { train: vec![0, 1], val: vec![], test: vec![2] })
    }

    #[test]
    fn templates_need_both_placeholders() {
        assert!(check_template("python t.py --graph {graph} --out {out}").is_ok());
        let e = check_template("python t.py --graph {graph}").unwrap_err().to_string();
        assert!(e.contains("{out}"), "{e}");
    }

    #[test]
    fn failing_and_slow_commands_show_their_log_tail() {
        let (g, s) = tiny();
        let r = CommandRunner::new("echo training {graph}; echo boom >&2; exit 3 # {out}", 30.0, None).unwrap();
        let e = r.run(&g, &s, 0).err().expect("fails");
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(m.contains("exit status: 3") && m.contains("| boom") && m.contains("| training"), "{m}");
        let r = CommandRunner::new("echo started; sleep 20 # {graph} {out}", 0.5, None).unwrap();
        let t = Instant::now();
        let m = r.run(&g, &s, 0).err().expect("fails").to_string();
        assert!(m.contains("timed out") && m.contains("| started"), "{m}");
        assert!(t.elapsed() < Duration::from_secs(15), "the timeout stops the command");
    }

    #[test]
    fn outputs_are_read_back_validated_and_runs_reused() {
        let (g, s) = tiny();
        let dir = tempfile::tempdir().unwrap();
        // A "pipeline" that releases fixed posteriors as CSV.
        let ok = "printf 'node,a,b\\n0,0.5,0.5\\n1,1,0\\n2,0.2,0.8\\n' > {out}/posteriors.csv # {graph}";
        let r = CommandRunner::new(ok, 30.0, Some(dir.path())).unwrap();
        let out = r.run(&g, &s, 1).unwrap();
        assert_eq!(out.released.num_classes(), 2);
        assert!(out.dir.join("graph.npz").is_file());
        r.run(&g, &s, 1).unwrap();
        assert_eq!(*r.executed.borrow(), 1, "a finished run is reused");
        // A changed script the template names is a new pipeline: its runs are not reused.
        let script = dir.path().join("release.sh");
        std::fs::write(&script, "printf 'node,a,b\\n0,0.5,0.5\\n1,1,0\\n2,0.2,0.8\\n' > \"$1\"/posteriors.csv\n")
            .unwrap();
        let t = format!("sh {} {{out}} # {{graph}}", script.display());
        let r = CommandRunner::new(&t, 30.0, Some(dir.path())).unwrap();
        r.run(&g, &s, 1).unwrap();
        r.run(&g, &s, 1).unwrap();
        assert_eq!((*r.executed.borrow(), *r.reused.borrow()), (1, 1));
        std::fs::write(&script, "printf 'node,a,b\\n0,0.1,0.9\\n1,1,0\\n2,0.2,0.8\\n' > \"$1\"/posteriors.csv\n")
            .unwrap();
        let r = CommandRunner::new(&t, 30.0, Some(dir.path())).unwrap();
        let out = r.run(&g, &s, 1).unwrap();
        assert_eq!(*r.executed.borrow(), 1, "the changed script runs again");
        let p0 = Vec::<f64>::try_from(out.released.posteriors.get(0).to_kind(tch::Kind::Double)).unwrap();
        assert!((p0[1] - 0.9).abs() < 1e-6, "the new script's output: {p0:?}");
        let wrong = "printf 'node,a,b\\n0,0.5,0.5\\n1,1,0\\n' > {out}/posteriors.csv # {graph}";
        let r = CommandRunner::new(wrong, 30.0, None).unwrap();
        let m = r.run(&g, &s, 1).err().expect("fails").to_string();
        assert!(m.contains("posteriors.csv") && m.contains("missing"), "{m}");
    }
}
