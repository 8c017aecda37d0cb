//! Splitting an audit: `--shard I/N` slices plus `--merge` give the full run's report, `--jobs`
//! does not change the report, `audit status` tells done / running / failed / missing, and the
//! report folder is safe to share: a lock keeps a second audit out, `--fresh` with `--out`
//! starts over, another config's folder is refused, stale temp files are removed, failures keep
//! their error and log tail, Ctrl-C says how to resume. Bad flags exit 2 before any work.
mod common;

use common::*;
use gnnaudit::audit::cell::plan;
use gnnaudit::audit::config::DatasetSpec;
use gnnaudit::audit::lock::FolderLock;
use gnnaudit::audit::runner::{merge, run_shard};
use gnnaudit::audit::shard::Shard;
use gnnaudit::audit::status::{status, CellState};
use gnnaudit::audit::store::{CellStore, Claim};
use gnnaudit::audit::{run_audit, AuditConfig, CellMeasurement, CellRunner, CellSpec, OutputOptions, Progress};
use gnnaudit::report::DatasetInfo;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn out_opts(out: &Path, fresh: bool) -> OutputOptions {
    OutputOptions { out: Some(out.to_path_buf()), fresh }
}

/// report.json up to its `run` object (the last field): everything that must be reproducible.
fn reproducible(path: &Path) -> String {
    let json = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let p = json.find("\n  \"run\": {").expect("report.json has a run object");
    json[..p].to_string()
}

fn full_run(out: &Path) -> String {
    run_audit(&fake_config(), Path::new("fake.toml"), &mut FakeRunner::default(), &out_opts(out, false)).unwrap();
    reproducible(&out.join("report.json"))
}

#[test]
fn shards_then_merge_give_the_full_runs_report_and_merge_lists_the_missing_cells() {
    let dir = tempfile::tempdir().unwrap();
    let reference = full_run(&dir.path().join("full"));
    let out = dir.path().join("sharded");
    let c = fake_config();
    let mut all = vec![];
    for i in 1..=2 {
        let mut r = FakeRunner::default();
        let s = run_shard(&c, &mut r, &out, Some(Shard { index: i, count: 3 }), None, &Progress::hidden()).unwrap();
        assert_eq!(s.computed, r.computed);
        assert_eq!(s.cells, 5, "14 cells: shards 1 and 2 of 3 get 5, shard 3 gets 4");
        all.extend(r.computed);
    }
    // Two of three shards: merge renders the 10 cells it has and names the 4 of shard 3.
    let m = merge(&c, Path::new("fake.toml"), &mut FakeRunner::default(), &out, false).unwrap();
    let shard3: Vec<_> = plan(&c).iter().enumerate().filter(|(k, _)| k % 3 == 2).map(|(_, c)| c.key.clone()).collect();
    assert_eq!(m.missing, shard3);
    assert_eq!(m.summary.report.cells.len(), FAKE_CELLS - 4);
    let st = status(&out).unwrap();
    assert_eq!(st.count(|s| matches!(s, CellState::Done)), 10);
    assert_eq!(st.count(|s| matches!(s, CellState::Missing)), 4);
    assert!(gnnaudit::audit::status::render(&st).contains("done 10, running 0, failed 0, stale 0, missing 4"));

    let mut r3 = FakeRunner::default();
    run_shard(&c, &mut r3, &out, Some(Shard { index: 3, count: 3 }), None, &Progress::hidden()).unwrap();
    assert_eq!(r3.computed, shard3);
    all.extend(r3.computed);
    assert_eq!(all.len(), FAKE_CELLS, "every cell computed exactly once");
    // A shard run again computes nothing.
    let mut again = FakeRunner::default();
    run_shard(&c, &mut again, &out, Some(Shard { index: 1, count: 3 }), None, &Progress::hidden()).unwrap();
    assert!(again.computed.is_empty());
    let m = merge(&c, Path::new("fake.toml"), &mut FakeRunner::default(), &out, false).unwrap();
    assert!(m.missing.is_empty());
    assert_same_text(&reference, &reproducible(&out.join("report.json")), "full run vs three shards + merge");
}

#[test]
fn a_second_audit_into_a_busy_folder_refuses_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    std::fs::create_dir_all(&out).unwrap();
    let held = FolderLock::exclusive(&out, "gnnaudit audit first.toml").unwrap();
    let mut r = FakeRunner::default();
    let e = run_audit(&fake_config(), Path::new("fake.toml"), &mut r, &out_opts(&out, false)).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("in use by gnnaudit audit first.toml"), "{e}");
    assert!(r.computed.is_empty(), "nothing computed while the folder is busy");
    // Shards are refused too while a full audit holds the folder ...
    let e = run_shard(&fake_config(), &mut r, &out, Some(Shard { index: 1, count: 2 }), None, &Progress::hidden());
    assert!(e.is_err());
    drop(held);
    // ... but run side by side with each other, and keep a full audit out.
    let s1 = FolderLock::shared(&out, "shard 1/2").unwrap();
    run_shard(&fake_config(), &mut r, &out, Some(Shard { index: 2, count: 2 }), None, &Progress::hidden()).unwrap();
    let e = run_audit(&fake_config(), Path::new("fake.toml"), &mut FakeRunner::default(), &out_opts(&out, false));
    assert!(e.unwrap_err().to_string().contains("shard"));
    drop(s1);
    let mut rest = FakeRunner::default();
    run_audit(&fake_config(), Path::new("fake.toml"), &mut rest, &out_opts(&out, false)).unwrap();
    assert_eq!(rest.computed.len() + r.computed.len(), FAKE_CELLS, "the full audit reuses shard 2's cells");
}

#[test]
fn fresh_with_out_recomputes_and_another_configs_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    full_run(&out);
    let mut resumed = FakeRunner::default();
    run_audit(&fake_config(), Path::new("fake.toml"), &mut resumed, &out_opts(&out, false)).unwrap();
    assert!(resumed.computed.is_empty());
    let mut fresh = FakeRunner::default();
    let s = run_audit(&fake_config(), Path::new("fake.toml"), &mut fresh, &out_opts(&out, true)).unwrap();
    assert_eq!(fresh.computed.len(), FAKE_CELLS, "--fresh with --out recomputes every cell");
    assert_eq!(s.reused, 0);

    let before = std::fs::read_to_string(out.join("report.json")).unwrap();
    let other = AuditConfig::parse(&FAKE_CONFIG.replace("name = \"fake\"", "name = \"other\"")).unwrap();
    for fresh in [false, true] {
        let mut r = FakeRunner::default();
        let e = run_audit(&other, Path::new("other.toml"), &mut r, &out_opts(&out, fresh)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("belongs to the audit 'fake', not 'other'"), "{e}");
        assert!(r.computed.is_empty());
    }
    assert_eq!(std::fs::read_to_string(out.join("report.json")).unwrap(), before, "the other report is untouched");
    // A folder that is no audit's at all.
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("thesis.tex"), "keep me").unwrap();
    let e = run_audit(&fake_config(), Path::new("fake.toml"), &mut FakeRunner::default(), &out_opts(&home, false))
        .unwrap_err();
    assert!(e.to_string().contains("thesis.tex"), "{e}");
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 1, "nothing written into it");
}

#[test]
fn temp_files_left_by_a_killed_write_are_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    full_run(&out);
    let left = [out.join(".tmp-k1LL3d.tmp"), out.join("cells").join(".tmp-hAlf.tmp")];
    for p in &left {
        std::fs::write(p, "half a report").unwrap();
    }
    std::fs::remove_file(out.join("report.json")).unwrap();
    full_run(&out);
    for p in &left {
        assert!(!p.exists(), "{} was not removed", p.display());
    }
}

/// Fails on every cell of one method, like a cell whose training diverges.
struct FailOn(FakeRunner, &'static str);

impl CellRunner for FailOn {
    fn dataset_info(&mut self, spec: &DatasetSpec) -> gnnaudit::Result<DatasetInfo> {
        self.0.dataset_info(spec)
    }
    fn run_cell(&mut self, cell: &CellSpec, progress: &Progress) -> gnnaudit::Result<CellMeasurement> {
        if cell.key.method == self.1 {
            return Err(gnnaudit::Error::invalid("gap-ndp.max_degree", "the fixture refuses this cell"));
        }
        self.0.run_cell(cell, progress)
    }
}

#[test]
fn failures_keep_error_and_log_tail_and_status_tells_every_state() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    let c = fake_config();
    let log = dir.path().join("worker.log");
    std::fs::write(&log, "loading synthetic\ntraining gap-ndp seed 7\nlast words of the worker\n").unwrap();
    std::env::set_var(gnnaudit::audit::store::LOG_ENV, &log);
    let mut r = FailOn(FakeRunner::default(), "gap-ndp");
    let e = run_audit(&c, Path::new("fake.toml"), &mut r, &out_opts(&out, false)).unwrap_err();
    std::env::remove_var(gnnaudit::audit::store::LOG_ENV);
    assert_eq!(e.exit_code(), 2, "{e}");
    let store = CellStore::new(out.join("cells"));
    let cells = plan(&c);
    let failed = cells.iter().find(|c| c.key.method == "gap-ndp").unwrap();
    let f = store.failure_of(&failed.key).expect("a failure record");
    assert!(f.error.contains("the fixture refuses this cell"), "{f:?}");
    assert_eq!(f.log_tail.last().map(String::as_str), Some("last words of the worker"));
    assert!(store.claim_of(&failed.key).is_none(), "the claim is released");

    // A claim of a process that is gone (killed) and one of a live process (this one).
    let pending: Vec<_> = cells.iter().filter(|c| store.load(c).is_none() && c.key != failed.key).collect();
    let mut dead = Claim::mine("shard 9/9");
    dead.pid = u32::MAX - 1;
    dead.log = Some(log.clone());
    assert!(store.claim(pending[0], &dead, true).unwrap());
    assert!(store.claim(pending[1], &Claim::mine("shard 8/9"), true).unwrap());
    assert!(!store.claim(pending[1], &Claim::mine("shard 7/9"), true).unwrap(), "a held claim is not taken");
    let st = status(&out).unwrap();
    let done = st.count(|s| matches!(s, CellState::Done));
    assert_eq!(st.count(|s| matches!(s, CellState::Failed(_))), 1);
    assert_eq!(st.count(|s| matches!(s, CellState::Interrupted(_))), 1);
    assert_eq!(st.count(|s| matches!(s, CellState::Running(_))), 1);
    assert_eq!(st.count(|s| matches!(s, CellState::Missing)), FAKE_CELLS - done - 3);
    let text = gnnaudit::audit::status::render(&st);
    assert!(text.contains("the fixture refuses this cell") && text.contains("| last words of the worker"), "{text}");
    assert!(text.contains(&format!("running  {}", pending[1].key)), "{text}");

    // merge turns the dead claim into a failure with the log tail; the live one stays running.
    let m = merge(&c, Path::new("fake.toml"), &mut FakeRunner::default(), &out, false).unwrap();
    assert_eq!(m.reaped, 1);
    let f = store.failure_of(&pending[0].key).unwrap();
    assert!(f.error.contains("shard 9/9 ended without finishing"), "{f:?}");
    assert_eq!(f.log_tail.len(), 3);
    store.release(&pending[1].key);

    // A rerun (exclusive) computes what is missing and clears the failure records.
    let mut fine = FakeRunner::default();
    run_audit(&c, Path::new("fake.toml"), &mut fine, &out_opts(&out, false)).unwrap();
    assert_eq!(fine.computed.len(), FAKE_CELLS - done);
    assert!(store.failure_of(&failed.key).is_none());
    let st = status(&out).unwrap();
    assert_eq!(st.count(|s| matches!(s, CellState::Done)), FAKE_CELLS);
}

// ---- through the binary, with real training ----

/// The shared tiny audit (tests/slurm.rs runs it too), named after this test file.
fn tiny() -> String {
    include_str!("fixtures/tiny-audit.toml").replace("name = \"tiny\"", "name = \"tiny-scale\"")
}

fn gnnaudit(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gnnaudit"));
    cmd.args(args).env_remove("OMP_WAIT_POLICY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("tiny.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn jobs_and_shards_give_the_same_report_and_workers_wait_passively() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &tiny());
    let cfg = cfg.to_str().unwrap();
    let path = |s: &str| dir.path().join(s).to_str().unwrap().to_string();
    let (code, _, err) = gnnaudit(&["audit", cfg, "--out", &path("j1"), "--jobs", "1"], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = gnnaudit(&["audit", cfg, "--out", &path("j2"), "--jobs", "2"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("6 cells computed"), "{out}");
    // Two worker processes ran, each with one torch thread and OpenMP's passive wait, although
    // the test started gnnaudit without OMP_WAIT_POLICY (it re-executes itself with it).
    for w in 1..=2 {
        let log = std::fs::read_to_string(dir.path().join(format!("j2/logs/worker-{w}.log"))).unwrap();
        assert!(log.contains(&format!("worker {w}/2: pid")), "{log}");
        assert!(log.contains("1 torch thread(s), OMP_WAIT_POLICY=passive"), "{log}");
    }
    for s in ["1/2", "2/2"] {
        let (code, out, err) = gnnaudit(&["audit", cfg, "--out", &path("sh"), "--shard", s, "--jobs", "1"], &[]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("3 cells computed") && out.contains("--merge"), "{out}");
    }
    assert!(!dir.path().join("sh/report.json").exists(), "a shard renders nothing");
    let (code, out, err) = gnnaudit(&["audit", "status", &path("sh")], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("done 6, running 0, failed 0, stale 0, missing 0"), "{out}");
    let (code, out, err) = gnnaudit(&["audit", cfg, "--out", &path("sh"), "--merge"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("merged 6 of 6 cells"), "{out}");
    let j1 = reproducible(&dir.path().join("j1/report.json"));
    assert_same_text(&j1, &reproducible(&dir.path().join("j2/report.json")), "--jobs 1 vs --jobs 2");
    assert_same_text(&j1, &reproducible(&dir.path().join("sh/report.json")), "--jobs 1 vs two shards + merge");
}

#[test]
fn bad_scale_flags_exit_2_naming_the_flag_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &tiny());
    let cfg = cfg.to_str().unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["--out", o, "--shard", "3/2"], "--shard"),
        (&["--out", o, "--shard", "0/2"], "--shard"),
        (&["--out", o, "--shard", "x"], "--shard"),
        (&["--shard", "1/2"], "--out"),
        (&["--out", o, "--jobs", "0"], "--jobs"),
        (&["--out", o, "--threads", "0"], "--threads"),
        (&["--out", o, "--threads", "100000"], "--threads"),
    ];
    for (args, flag) in cases {
        let mut a = vec!["audit", cfg];
        a.extend_from_slice(args);
        let (code, _, err) = gnnaudit(&a, &[]);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    let (code, _, err) = gnnaudit(&["audit", "status", dir.path().to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a gnnaudit audit folder"), "{err}");
}

#[test]
fn a_refused_slurm_submission_shows_sbatchs_message_and_the_folder_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), &tiny());
    let cfg = cfg.to_str().unwrap();
    // An sbatch that refuses as a real one does for an unknown partition.
    let fake = dir.path().join("sbatch");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let (code, _, err) = gnnaudit(
        &["audit", cfg, "--out", o, "--slurm", "--partition", "nosuch"],
        &[("GNNAUDIT_SBATCH", fake.to_str().unwrap())],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--slurm") && err.contains("Invalid partition name specified"), "{err}");
    let (code, _, err) =
        gnnaudit(&["audit", cfg, "--out", o, "--slurm", "--time", "1 hour"], &[("GNNAUDIT_SBATCH", "/bin/false")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--time"), "{err}");
    // The folder is resumable: a plain run into it finishes the audit.
    let (code, out_text, err) = gnnaudit(&["audit", cfg, "--out", o, "--jobs", "1"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out_text.contains("6 cells computed"), "{out_text}");
}

#[test]
fn ctrl_c_says_what_was_kept_and_how_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    // Slow enough cells that the audit is still running when the first one is stored.
    let text = tiny().replace("nodes = 200", "nodes = 1500").replace("epochs = 10", "epochs = 300");
    let cfg = write_config(dir.path(), &text);
    let out = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(["audit", cfg.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let store = CellStore::new(out.join("cells"));
    let deadline = Instant::now() + Duration::from_secs(300);
    while store.count() == 0 {
        assert!(Instant::now() < deadline, "no cell stored within 300 s");
        assert!(child.try_wait().unwrap().is_none(), "the audit ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signals the child this test started.
    unsafe { libc_kill(child.id() as i32, 2) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted (Ctrl-C)"), "{err}");
    assert!(err.contains(&format!("are kept in {}", out.join("cells").display())), "{err}");
    assert!(
        err.contains(&format!("Resume with:\n  gnnaudit audit {} --out {}", cfg.display(), out.display())),
        "{err}"
    );
    let kept = store.count();
    assert!((1..6).contains(&kept));
    let leftovers: Vec<_> = std::fs::read_dir(out.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".running"))
        .collect();
    assert!(leftovers.is_empty(), "claims left behind: {leftovers:?}");
    let st = status(&out).unwrap();
    assert_eq!(st.count(|s| matches!(s, CellState::Done)), kept);
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
