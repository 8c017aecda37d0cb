// Where the tests find their data. Cora (117 KB) ships with the repository as a fixture so that a
// bare clone passes; the larger graphs come from the data directories gnnaudit itself searches
// (`$GNNAUDIT_DATA`, then `~/.cache/gnnaudit/datasets` where `gnnaudit datasets fetch` puts them),
// and a test that needs one that is absent says so on one line and passes.
#![allow(dead_code)]
use std::path::{Path, PathBuf};

/// The repository root (the gnnaudit package's manifest directory).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Files checked into the repository for the tests: `cora.npz`.
pub fn fixtures_dir() -> PathBuf {
    repo_root().join("tests/fixtures")
}

/// A golden file of the repository (`tests/golden/NAME`).
pub fn golden(name: &str) -> PathBuf {
    repo_root().join("tests/golden").join(name)
}

/// `configs/NAME.toml` of the repository.
pub fn shipped_config_path(name: &str) -> PathBuf {
    repo_root().join("configs").join(format!("{name}.toml"))
}

/// `configs/NAME.toml`, loaded as `gnnaudit audit` loads it, with the tests' data directory.
pub fn shipped_config(name: &str) -> gnnaudit::audit::AuditConfig {
    gnnaudit::audit::AuditConfig::load(&shipped_config_path(name), Some(&data_dir()))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The data directory every cora test reads: `$GNNAUDIT_DATA` when it holds cora, else the
/// fixtures. Children spawned by CLI tests get it as their `GNNAUDIT_DATA`.
pub fn data_dir() -> PathBuf {
    match std::env::var_os("GNNAUDIT_DATA").filter(|v| !v.is_empty()).map(PathBuf::from) {
        Some(dir) if dir.join("cora.npz").is_file() => dir,
        _ => fixtures_dir(),
    }
}

/// The directory holding `<dataset>.npz` among the directories gnnaudit searches by name, or
/// `None` after printing one SKIPPED line naming the test and how to get the data. A test that
/// needs a larger graph starts with `let Some(dir) = need("test", "twitch-DE") else { return };`.
pub fn need(test: &str, dataset: &str) -> Option<PathBuf> {
    let found = locate(dataset);
    if found.is_none() {
        skipped(test, &[dataset]);
    }
    found
}

/// The directory holding `<dataset>.npz`, silently.
pub fn locate(dataset: &str) -> Option<PathBuf> {
    std::iter::once(data_dir())
        .chain(gnnaudit::data::registry::search_dirs(None))
        .find(|d| d.join(format!("{dataset}.npz")).is_file())
}

/// The one line a test prints when it skips (all or part of its work) for want of data.
pub fn skipped(test: &str, datasets: &[&str]) {
    println!(
        "SKIPPED: {test} needs {} (set GNNAUDIT_DATA or run `gnnaudit datasets fetch {}`)",
        datasets.join(", "),
        datasets.join(" ")
    );
}

/// True when `dir` holds `<dataset>.npz` (for tests that branch on data rather than skip).
pub fn has(dir: &Path, dataset: &str) -> bool {
    dir.join(format!("{dataset}.npz")).is_file()
}

/// True when every dataset an audit config names (`[[datasets]] name`) is available, else false
/// after one SKIPPED line for the first missing one (loading a config resolves its datasets).
pub fn config_datasets_present(test: &str, config: &Path) -> bool {
    let text = std::fs::read_to_string(config).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    let value: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    let names: Vec<&str> = value
        .get("datasets")
        .and_then(|d| d.as_array())
        .map(|ds| ds.iter().filter_map(|d| d.get("name")?.as_str()).collect())
        .unwrap_or_default();
    names
        .into_iter()
        .filter(|n| !n.starts_with("synthetic") && !n.contains('/'))
        .all(|n| need(&format!("{test} ({})", config.display()), n).is_some())
}
