// Shared by the tests that run the real binary: the command as a user would start it (with the
// tests' data directory, and without RUST_BACKTRACE so that a panic shows as the user would see
// it), its output decoded, and the assertions every command-line test makes about bad input.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "data.rs"]
mod test_data;
pub use test_data::*;

/// `gnnaudit ARGS`, not yet started: callers may redirect its streams or change its environment.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gnnaudit"));
    c.args(args).env("GNNAUDIT_DATA", data_dir()).env_remove("RUST_BACKTRACE");
    c
}

/// (exit code, stdout, stderr); -1 when a signal ended the process.
pub fn decode(out: Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `gnnaudit ARGS` to the end: (exit code, stdout, stderr).
pub fn gnnaudit(args: &[&str]) -> (i32, String, String) {
    decode(command(args).output().expect("run gnnaudit"))
}

/// Runs `gnnaudit ARGS`, asserts exit 0, and parses stdout as one JSON value (for `--json` runs).
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = gnnaudit(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: stdout is not one JSON value ({e}): {out}"))
}

/// Fails when stderr shows what a user should never see: a panic, a C++ frame, a colour code.
pub fn assert_clean(err: &str) {
    for never in ["panicked", "RUST_BACKTRACE", "frame #", "Exception raised from", "stack overflow", "\x1b["] {
        assert!(!err.contains(never), "stderr shows '{never}': {err}");
    }
}

/// Runs `gnnaudit ARGS` and asserts bad input: exit 2, every phrase in the message, and
/// nothing [`assert_clean`] forbids. Returns stderr.
pub fn refused(args: &[&str], phrases: &[&str]) -> String {
    let (code, out, err) = gnnaudit(args);
    assert_eq!(code, 2, "{args:?}: exit {code}\nstdout: {out}\nstderr: {err}");
    assert_clean(&err);
    for p in phrases {
        assert!(err.contains(p), "{args:?}: message lacks '{p}': {err}");
    }
    err
}

/// `gnnaudit check REPORT --thresholds T EXTRA`, T a file holding `thresholds`.
pub fn check(report: &Path, thresholds: &str, extra: &[&str]) -> (i32, String, String) {
    let t = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(t.path(), thresholds).unwrap();
    gnnaudit(&[&["check", report.to_str().unwrap(), "--thresholds", t.path().to_str().unwrap()], extra].concat())
}

/// Every file and folder below `dir`, depth first.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
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

/// A finished `gnnaudit audit` of a config written for the test.
pub struct AuditRun {
    /// Holds the config and the report; removed when the run is dropped.
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    /// The report folder (`--out`).
    pub out: PathBuf,
    /// Its report.json.
    pub report: serde_json::Value,
}

impl AuditRun {
    /// `gnnaudit check` of the report against `thresholds` (TOML text).
    pub fn check(&self, thresholds: &str, extra: &[&str]) -> (i32, String, String) {
        check(&self.out.join("report.json"), thresholds, extra)
    }

    /// A file of the report folder, as text.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// Writes `config` (audit TOML) to a fresh folder, runs `gnnaudit audit` on it, and asserts it
/// succeeds.
pub fn audit(config: &str) -> AuditRun {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.toml");
    std::fs::write(&path, config).unwrap();
    let out = dir.path().join("out");
    let (code, stdout, err) = gnnaudit(&["audit", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{err}");
    let report = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    AuditRun { dir, config: path, out, report }
}
