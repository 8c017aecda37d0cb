//! The deployment's own training pipeline as a target: a command template such as
//! `python train.py --graph {graph} --out {out}` run once per graph an attack needs (the
//! canary-augmented graphs of a canary audit, the shadow graphs of a membership audit, the
//! target graph itself).
//!
//! Per run, gnnaudit writes the graph and its split in the documented `.npz` layout
//! ([`super::graph_npz`]) to `{graph}`, creates the folder `{out}`, runs the command (split into
//! words as a shell would, run without one; each placeholder fills part of one word; `{seed}` is
//! optional) with a timeout, its stdout and stderr captured to `log.txt`, and reads back `{out}/posteriors.npy` (or `.parquet` / `.csv`:
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

/// Longest `timeout` accepted: 30 days (a longer one is a typo, and 1e300 s is no `Duration`).
pub const MAX_TIMEOUT_SECONDS: f64 = 30.0 * 24.0 * 3600.0;

/// The placeholders a run fills, each in one pass over each word of the template.
const PLACEHOLDERS: [&str; 3] = ["{graph}", "{out}", "{seed}"];

/// The template's argv, split as a POSIX shell splits words but run without a shell: each path is
/// one argument whatever it contains, so no path (a `--work-dir` holding `;` or `$(...)`) can
/// become code. Refuses a template without `{graph}` or `{out}`, with unbalanced quotes, or with
/// a placeholder inside quotes (once the template is split there is no shell to remove them, and
/// a placeholder quoted for `sh -c '...'` would be spliced into shell code).
pub fn check_template(template: &str) -> Result<Vec<String>> {
    crate::ensure!(!template.trim().is_empty(), Error::invalid("command", "the command template is empty"));
    if let Some(p) = quoted_placeholder(template) {
        return Err(Error::invalid(
            "command",
            format!(
                "the template '{template}' quotes the placeholder {p}: gnnaudit runs the command without a shell and \
                 passes each path as one argument, so write {p} unquoted (for shell features use \
                 `sh -c 'script \"$1\" \"$2\"' sh {{graph}} {{out}}`, or the variables GNNAUDIT_GRAPH, GNNAUDIT_OUT \
                 and GNNAUDIT_SEED)"
            ),
        ));
    }
    let argv = shell_words::split(template)
        .map_err(|e| Error::invalid("command", format!("cannot split the template '{template}' into words: {e}")))?;
    for p in ["{graph}", "{out}"] {
        crate::ensure!(
            argv.iter().any(|w| w.contains(p)),
            Error::invalid("command", format!("the template '{template}' has no {p} placeholder"))
        );
    }
    Ok(argv)
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

/// The first placeholder that stands inside single or double quotes (or after a backslash).
fn quoted_placeholder(template: &str) -> Option<&'static str> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut state = Quote::None;
    let mut escaped = false;
    for (i, c) in template.char_indices() {
        if state != Quote::None || escaped {
            if let Some(p) = PLACEHOLDERS.iter().find(|p| template[i..].starts_with(**p)) {
                return Some(p);
            }
        }
        if escaped {
            escaped = false;
            continue;
        }
        match (&state, c) {
            (Quote::Single, '\'') | (Quote::Double, '"') => state = Quote::None,
            (Quote::None, '\'') => state = Quote::Single,
            (Quote::None, '"') => state = Quote::Double,
            (Quote::None | Quote::Double, '\\') => escaped = true,
            _ => {}
        }
    }
    None
}

/// One word of the template with every placeholder replaced in a single left-to-right pass, so
/// that placeholder text inside a substituted path stays literal.
fn fill(word: &str, values: &[(&str, &std::ffi::OsStr)]) -> std::ffi::OsString {
    let mut out = std::ffi::OsString::new();
    let mut rest = word;
    'scan: while let Some(c) = rest.chars().next() {
        for (p, v) in values {
            if let Some(after) = rest.strip_prefix(p) {
                out.push(v);
                rest = after;
                continue 'scan;
            }
        }
        out.push(&rest[..c.len_utf8()]);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `timeout` as a `Duration`, refused (naming `field`) unless in (0, 30 days].
pub fn timeout_duration(field: &str, seconds: f64) -> Result<Duration> {
    crate::ensure!(
        seconds.is_finite() && seconds > 0.0 && seconds <= MAX_TIMEOUT_SECONDS,
        Error::invalid(
            field,
            format!(
                "{} is not a number of seconds in (0, {MAX_TIMEOUT_SECONDS}] (30 days)",
                crate::error::num(seconds)
            )
        )
    );
    Ok(Duration::from_secs_f64(seconds))
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
    argv: Vec<String>,
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

impl Drop for CommandRunner {
    fn drop(&mut self) {
        if let Some(t) = &self._temp {
            crate::interrupt::forget_temp_dir(t.path());
        }
    }
}

impl CommandRunner {
    pub fn new(template: &str, timeout_seconds: f64, work_dir: Option<&Path>) -> Result<Self> {
        let argv = check_template(template)?;
        let timeout = timeout_duration("timeout", timeout_seconds)?;
        let (work_dir, temp) = match work_dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| Error::bad_file(d, e))?;
                (d.to_path_buf(), None)
            }
            None => {
                let t = tempfile::Builder::new().prefix("gnnaudit-command-").tempdir()?;
                // Ctrl-C ends the process without destructors: the handler removes it instead.
                crate::interrupt::remove_on_interrupt(t.path());
                (t.path().to_path_buf(), Some(t))
            }
        };
        Ok(CommandRunner {
            template: template.to_string(),
            argv,
            timeout,
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

    /// The argv of one run: the template's words with the paths and seed filled in.
    fn argv(&self, graph: &Path, out: &Path, seed: u64) -> Vec<std::ffi::OsString> {
        let seed = seed.to_string();
        let values: [(&str, &std::ffi::OsStr); 3] =
            [("{graph}", graph.as_os_str()), ("{out}", out.as_os_str()), ("{seed}", seed.as_ref())];
        self.argv.iter().map(|w| fill(w, &values)).collect()
    }

    /// "its log PATH" where the log outlives the error, "its log" where the temporary work
    /// folder (and the log with it) is removed when the error ends the run.
    fn log_name(&self, log: &Path) -> String {
        if self._temp.is_some() {
            "its log (removed with the temporary work folder; keep it with --work-dir or target.work_dir)".into()
        } else {
            format!("its log {}", log.display())
        }
    }

    fn execute(&self, graph: &Path, out: &Path, log: &Path, seed: u64) -> Result<()> {
        let argv = self.argv(graph, out, seed);
        let shown = shell_words::join(argv.iter().map(|a| a.to_string_lossy()));
        let log_file = std::fs::File::create(log).map_err(|e| Error::bad_file(log, e))?;
        let err_file = log_file.try_clone().map_err(|e| Error::bad_file(log, e))?;
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]).stdin(Stdio::null()).stdout(log_file).stderr(err_file);
        command.env("GNNAUDIT_GRAPH", graph).env("GNNAUDIT_OUT", out).env("GNNAUDIT_SEED", seed.to_string());
        let start = Instant::now();
        // Its own process group, so that a timeout or Ctrl-C stops the whole pipeline.
        let mut child = crate::interrupt::spawn_process_group(&mut command).map_err(|e| {
            Error::invalid("command", format!("cannot start `{}` (from `{shown}`): {e}", argv[0].to_string_lossy()))
        })?;
        let group = child.id();
        *self.executed.borrow_mut() += 1;
        tracing::info!(command = %shown, "command target run");
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) => {}
                Err(e) => {
                    kill_group(group, &mut child);
                    return Err(e.into());
                }
            }
            if start.elapsed() > self.timeout {
                kill_group(group, &mut child);
                return Err(Error::invalid(
                    "command",
                    format!(
                        "`{shown}` timed out after {} s (timeout); last lines of {}:\n{}",
                        crate::error::num(self.timeout.as_secs_f64()),
                        self.log_name(log),
                        log_tail(log, LOG_TAIL)
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        crate::interrupt::remove_process_group(group);
        crate::ensure!(
            status.success(),
            Error::invalid(
                "command",
                format!(
                    "`{shown}` failed ({status}) after {:.1} s; last lines of {}:\n{}",
                    start.elapsed().as_secs_f64(),
                    self.log_name(log),
                    log_tail(log, LOG_TAIL)
                )
            )
        );
        Ok(())
    }

    fn read_outputs(&self, out: &Path, log: &Path, g: &AttackGraph) -> Result<Released> {
        let candidates = ["posteriors.npy", "posteriors.parquet", "posteriors.csv"].map(|f| out.join(f));
        let present: Vec<&PathBuf> = candidates.iter().filter(|p| p.is_file()).collect();
        crate::ensure!(
            present.len() <= 1,
            Error::bad_file(
                out,
                format!(
                    "the command wrote {}: which one is the release is ambiguous; write exactly one",
                    present
                        .iter()
                        .filter_map(|p| p.file_name())
                        .map(|n| n.to_string_lossy())
                        .collect::<Vec<_>>()
                        .join(" and ")
                )
            )
        );
        let path = present.first().copied().ok_or_else(|| {
            Error::bad_file(
                out,
                format!(
                    "the command wrote no posteriors.npy, posteriors.parquet or posteriors.csv here; last lines of \
                     {}:\n{}",
                    self.log_name(log),
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

/// SIGKILL to the process group `group` (led by `child`), then reaps the leader.
fn kill_group(group: u32, child: &mut std::process::Child) {
    // SAFETY: signals a process group this runner created.
    unsafe { libc::kill(-(group as libc::pid_t), libc::SIGKILL) };
    let _ = child.kill();
    let _ = child.wait();
    crate::interrupt::remove_process_group(group);
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
    fn templates_need_both_placeholders_unquoted() {
        assert_eq!(
            check_template("python t.py --graph {graph} --out={out}").unwrap(),
            ["python", "t.py", "--graph", "{graph}", "--out={out}"]
        );
        let e = check_template("python t.py --graph {graph}").unwrap_err().to_string();
        assert!(e.contains("{out}"), "{e}");
        for quoted in ["ok.sh \"{graph}\" {out}", "ok.sh {graph} '{out}'", "sh -c 'cp x {out}/p.npy' {graph}"] {
            let e = check_template(quoted).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains("quotes the placeholder"), "{e}");
        }
        let e = check_template("ok.sh {graph} {out} 'unbalanced").unwrap_err().to_string();
        assert!(e.contains("cannot split"), "{e}");
    }

    #[test]
    fn placeholders_are_filled_in_one_pass() {
        let values: [(&str, &std::ffi::OsStr); 3] =
            [("{graph}", "/w/{seed}/{out}.npz".as_ref()), ("{out}", "/w/o".as_ref()), ("{seed}", "7".as_ref())];
        assert_eq!(fill("--graph={graph}", &values), "--graph=/w/{seed}/{out}.npz");
        assert_eq!(fill("{out}/{seed}é", &values), "/w/o/7é");
    }

    #[test]
    fn absurd_timeouts_are_refused_naming_the_field() {
        for t in [0.0, -1.0, f64::NAN, 1e300, MAX_TIMEOUT_SECONDS * 2.0] {
            let e = timeout_duration("--timeout", t).unwrap_err();
            assert!(e.to_string().starts_with("invalid --timeout"), "{e}");
        }
        assert_eq!(timeout_duration("--timeout", 1.5).unwrap(), Duration::from_millis(1500));
    }

    #[test]
    fn failing_and_slow_commands_show_their_log_tail() {
        let (g, s) = tiny();
        let r = CommandRunner::new("sh -c 'echo training \"$1\"; echo boom >&2; exit 3' sh {graph} {out}", 30.0, None)
            .unwrap();
        let e = r.run(&g, &s, 0).err().expect("fails");
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(m.contains("exit status: 3") && m.contains("| boom") && m.contains("| training /"), "{m}");
        assert!(m.contains("removed with the temporary work folder"), "names no file that is deleted: {m}");
        let r = CommandRunner::new("sh -c 'echo started; sleep 20' sh {graph} {out}", 0.5, None).unwrap();
        let t = Instant::now();
        let m = r.run(&g, &s, 0).err().expect("fails").to_string();
        assert!(m.contains("timed out") && m.contains("| started"), "{m}");
        assert!(t.elapsed() < Duration::from_secs(15), "the timeout stops the command");
    }

    #[test]
    fn outputs_are_read_back_validated_and_runs_reused() {
        let (g, s) = tiny();
        let dir = tempfile::tempdir().unwrap();
        // A "pipeline" that releases fixed posteriors as CSV, its folder from the environment.
        let ok = "sh -c 'printf \"node,a,b\\n0,0.5,0.5\\n1,1,0\\n2,0.2,0.8\\n\" > \"$GNNAUDIT_OUT/posteriors.csv\"' \
                  sh {graph} {out}";
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
        let t = format!("sh {} {{out}} {{graph}}", script.display());
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
        let wrong = "sh -c 'printf \"node,a,b\\n0,0.5,0.5\\n1,1,0\\n\" > \"$2/posteriors.csv\"' sh {graph} {out}";
        let r = CommandRunner::new(wrong, 30.0, None).unwrap();
        let m = r.run(&g, &s, 1).err().expect("fails").to_string();
        assert!(m.contains("posteriors.csv") && m.contains("missing"), "{m}");
    }

    #[test]
    fn hostile_work_dirs_stay_paths() {
        let (g, s) = tiny();
        let root = tempfile::tempdir().unwrap();
        // Records its arguments; releases posteriors in the folder it was given.
        let script = root.path().join("pipeline.sh");
        std::fs::write(
            &script,
            "printf '%s\\n' \"$@\" > \"$2/args.txt\"\nprintf 'node,a,b\\n0,0.5,0.5\\n1,1,0\\n2,0.2,0.8\\n' > \
             \"$2/posteriors.csv\"\n",
        )
        .unwrap();
        let template = format!("sh {} {{graph}} {{out}} {{seed}}", script.display());
        for hostile in ["x;touch PWNED;{out}", "\"$(touch PWNED)\"", "a'b {seed} `touch PWNED`"] {
            let work = root.path().join(hostile);
            let r = CommandRunner::new(&template, 30.0, Some(&work)).unwrap();
            let out = r.run(&g, &s, 5).unwrap();
            let args = std::fs::read_to_string(out.dir.join("out/args.txt")).unwrap();
            let lines: Vec<&str> = args.lines().collect();
            assert_eq!(lines.len(), 3, "{args}");
            assert_eq!(lines[0], out.dir.join("graph.npz").to_str().unwrap());
            assert_eq!(lines[1], out.dir.join("out").to_str().unwrap(), "the pipeline gets the right folder");
            assert_eq!(lines[2], "5");
            assert!(lines[1].contains(hostile), "placeholder text in a path stays literal: {}", lines[1]);
        }
        let pwned: Vec<_> = walk(root.path()).into_iter().filter(|p| p.ends_with("PWNED")).collect();
        assert!(pwned.is_empty(), "{pwned:?}");
        assert!(!Path::new("PWNED").exists());
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut all = vec![];
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                all.extend(walk(&p));
            }
            all.push(p);
        }
        all
    }
}
