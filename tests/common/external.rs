// Shared by the external-target tests: the PyTorch interpreter the project installs, and the
// plain-PyTorch GCN of tests/python exported once per test binary.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[path = "data.rs"]
mod test_data;
pub use test_data::*;

/// The interpreter of the venv scripts/libtorch-env.sh installs (VIRTUAL_ENV), else python3.
pub fn python() -> PathBuf {
    let home = std::env::var("HOME").unwrap_or_default();
    let candidates = [
        std::env::var_os("VIRTUAL_ENV").map(|v| PathBuf::from(v).join("bin/python")),
        Some(PathBuf::from(home).join(".cache/gnnaudit/torch-2.13.0/bin/python")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file()).unwrap_or_else(|| PathBuf::from("python3"))
}

pub fn script(name: &str) -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

pub fn run_python(args: &[&std::ffi::OsStr]) {
    let out = Command::new(python()).args(args).output().expect("python runs");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// tests/python/export_gcn.py on cora, once: model.pt, model_traced.pt, model_init.pt,
/// members.txt (20% of the nodes), posteriors.npy.
pub fn exported() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::Builder::new().prefix("gnnaudit-export-").tempdir().unwrap();
        let cora = Path::new(&data_dir()).join("cora.npz");
        run_python(&[
            script("export_gcn.py").as_os_str(),
            "--graph".as_ref(),
            cora.as_os_str(),
            "--out".as_ref(),
            dir.path().as_os_str(),
        ]);
        dir
    })
    .path()
}

pub fn gnnaudit(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gnnaudit"))
        .args(args)
        .env("GNNAUDIT_DATA", data_dir())
        .output()
        .expect("gnnaudit runs")
}

pub fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// Asserts exit code 2, an error naming `culprit`, and nothing on stdout.
pub fn assert_bad_input(out: &std::process::Output, culprit: &str, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(culprit) && err.contains(what), "expected '{culprit}' and '{what}' in: {err}");
    assert!(!err.contains("panicked") && !err.contains("frame #"), "{err}");
    assert!(out.stdout.is_empty(), "nothing half-written on stdout");
    err
}

/// Asserts success; returns stdout and stderr together (where gnnaudit says what it computed).
pub fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The report.json of the report folder `dir`.
pub fn report_of(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

/// Cora's labels, as the deployment's dataset holds them (node ids as in the file).
pub fn cora_labels() -> Vec<usize> {
    let ds = gnnaudit::data::load_dataset("cora", Some(Path::new(&data_dir()))).unwrap();
    ds.labels.clone()
}

/// An audit config `name` of `dataset` whose `[target]` is a posteriors file released by a
/// deployment trained on `members`; `rest` follows (controls, claims, attacks).
pub fn posteriors_config(name: &str, dataset: &str, posteriors: &Path, members: &Path, rest: &str) -> String {
    format!(
        "name = \"{name}\"\n[[datasets]]\nname = \"{dataset}\"\n{}{rest}",
        posteriors_table("[target]", posteriors, members)
    )
}

/// A posteriors table under `header` (`[target]`, `[control]` or `[[target]]\nname = ...`).
pub fn posteriors_table(header: &str, posteriors: &Path, members: &Path) -> String {
    format!(
        "{header}\nkind = \"posteriors\"\nposteriors = \"{}\"\nmembers = \"{}\"\n",
        posteriors.display(),
        members.display()
    )
}

/// Writes `text` to `dir/name`; returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}
