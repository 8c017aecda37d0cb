//! `gnnaudit audit --slurm` on a real Slurm: scripts/slurm-local.sh starts a one-node cluster
//! (munged, slurmctld, slurmd; installed with apt when missing), the test submits a small audit
//! as a job array plus a merge job, waits by polling squeue / scontrol, and checks that the
//! report equals the sequential run's byte for byte outside its `run` block. sbatch's own
//! message comes through when it refuses a job. Where Slurm cannot start (not root, no apt, no
//! munge user), the test prints a loud SKIPPED line and returns; GNNAUDIT_REQUIRE_SLURM=1 makes
//! that a failure instead.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The shared tiny audit (tests/audit_scale.rs runs it too), named after this test file.
fn tiny() -> String {
    include_str!("fixtures/tiny-audit.toml").replace("name = \"tiny\"", "name = \"tiny-slurm\"")
}

/// Stops the cluster (and only what the script started) however the test ends.
struct Cluster {
    script: PathBuf,
    dir: PathBuf,
    conf: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(&self.script).arg("stop").env("GNNAUDIT_SLURM_DIR", &self.dir).status();
    }
}

fn start() -> Result<Cluster, String> {
    let script = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .join("scripts/slurm-local.sh");
    let dir = std::env::temp_dir().join(format!("gnnaudit-slurm-test-{}", std::process::id()));
    let out = Command::new("bash")
        .arg(&script)
        .arg("start")
        .env("GNNAUDIT_SLURM_DIR", &dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let conf = stdout.lines().find_map(|l| l.strip_prefix("SLURM_CONF=")).map(str::to_string);
    match (out.status.success(), conf) {
        (true, Some(conf)) => Ok(Cluster { script, dir, conf }),
        _ => Err(format!("slurm-local.sh start exited with {:?}:\n{stderr}{stdout}", out.status.code())),
    }
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn gnnaudit(args: &[&str], slurm_conf: &str) -> (i32, String, String) {
    run(Command::new(env!("CARGO_BIN_EXE_gnnaudit")).args(args).env("SLURM_CONF", slurm_conf))
}

fn reproducible(path: &Path) -> String {
    let json = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let p = json.find("\n  \"run\": {").expect("report.json has a run object");
    json[..p].to_string()
}

/// Polls until Slurm no longer lists the job, then returns its final state.
fn wait_for(job: &str, conf: &str, limit: Duration) -> String {
    let t = Instant::now();
    loop {
        let (_, out, _) = run(Command::new("squeue").args(["-h", "-j", job]).env("SLURM_CONF", conf));
        if out.trim().is_empty() {
            break;
        }
        assert!(t.elapsed() < limit, "job {job} still queued after {limit:?}: {out}");
        std::thread::sleep(Duration::from_millis(250));
    }
    let (_, out, _) = run(Command::new("scontrol").args(["show", "job", job]).env("SLURM_CONF", conf));
    out.split_whitespace().find_map(|w| w.strip_prefix("JobState=")).unwrap_or("UNKNOWN").to_string()
}

#[test]
fn slurm_job_array_renders_the_sequential_report() {
    let t0 = Instant::now();
    let cluster = match start() {
        Ok(c) => c,
        Err(why) => {
            let msg = format!(
                "\n********************************************************************\n\
                 SKIPPED tests/slurm.rs: a local Slurm could not start, so `gnnaudit audit --slurm`\n\
                 was NOT tested on this machine.\n{why}\n\
                 ********************************************************************"
            );
            if std::env::var_os("GNNAUDIT_REQUIRE_SLURM").is_some() {
                panic!("{msg}");
            }
            eprintln!("{msg}");
            println!("{msg}");
            return;
        }
    };
    let started = t0.elapsed();
    let conf = cluster.conf.clone();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tiny-slurm.toml");
    std::fs::write(&cfg, tiny()).unwrap();
    let cfg = cfg.to_str().unwrap();
    let seq = dir.path().join("seq");
    let (code, _, err) = gnnaudit(&["audit", cfg, "--out", seq.to_str().unwrap(), "--jobs", "1"], &conf);
    assert_eq!(code, 0, "{err}");

    // sbatch refuses an unknown partition: its message, exit 2, and nothing submitted.
    let bad = dir.path().join("bad");
    let (code, _, err) =
        gnnaudit(&["audit", cfg, "--out", bad.to_str().unwrap(), "--slurm", "--partition", "nosuch"], &conf);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sbatch refused the job array") && err.contains("invalid partition"), "{err}");

    let t1 = Instant::now();
    let sl = dir.path().join("slurm");
    let (code, out, err) = gnnaudit(
        &[
            "audit",
            cfg,
            "--out",
            sl.to_str().unwrap(),
            "--slurm",
            "--tasks",
            "3",
            "--max-parallel",
            "2",
            "--time",
            "10",
        ],
        &conf,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(3 tasks)"), "{out}");
    let merge_job =
        out.lines().find_map(|l| l.strip_prefix("merge job: ")).expect("the merge job's id").trim().to_string();
    let state = wait_for(&merge_job, &conf, Duration::from_secs(300));
    let logs: Vec<String> = std::fs::read_dir(sl.join("logs"))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let merge_log = logs.iter().find(|l| l.starts_with("slurm-merge-")).map(|l| sl.join("logs").join(l));
    let merge_text = merge_log.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    assert_eq!(state, "COMPLETED", "merge job {merge_job}: {merge_text}\nlogs: {logs:?}");
    assert_eq!(logs.iter().filter(|l| l.starts_with("slurm-") && !l.starts_with("slurm-merge")).count(), 3, "{logs:?}");
    assert!(merge_text.contains("merged 6 of 6 cells"), "{merge_text}");
    let waited = t1.elapsed();

    let (code, status, err) = gnnaudit(&["audit", "status", sl.to_str().unwrap()], &conf);
    assert_eq!(code, 0, "{err}");
    assert!(status.contains("done 6, running 0, failed 0, stale 0, missing 0"), "{status}");
    let a = reproducible(&seq.join("report.json"));
    let b = reproducible(&sl.join("report.json"));
    assert!(a == b, "the Slurm report differs from the sequential one outside `run`");
    eprintln!(
        "slurm test: cluster up in {:.1} s; 3-task array + merge job submitted and finished in {:.1} s; whole test {:.1} s",
        started.as_secs_f64(),
        waited.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
}
