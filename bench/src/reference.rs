//! The reference figures the benchmarks compare against (`bench/reference.toml`, each with its
//! source in benches/anchors/), read once from the file compiled into the binary.
use gnnaudit::error::{Error, Result};
use serde::Deserialize;

/// One anchors cell on one dataset: accuracy mean and population sd (%), wall seconds per
/// process, max RSS (MB).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    pub acc: f64,
    pub sd: f64,
    pub wall: f64,
    pub rss: f64,
}

/// One method cell: the `gnnaudit train` flags that run it and the reference's figures.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    pub label: String,
    pub args: Vec<String>,
    pub source: String,
    pub cora: Reference,
    pub cornell5: Reference,
}

/// The Python libraries' median times (ms) for the accountant benchmark's computations.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accountant {
    pub source: String,
    pub calibrate_opacus_ms: f64,
    pub pld_dp_accounting_ms: f64,
    pub rdp_epsilon_opacus_ms: f64,
    pub rdp_curve_opacus_ms: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct References {
    pub accountant: Accountant,
    pub methods: Vec<Cell>,
}

/// The file's text, as built into the binary.
pub const TEXT: &str = include_str!("../reference.toml");

/// The parsed reference figures.
pub fn load() -> Result<References> {
    toml::from_str(TEXT).map_err(|e| Error::Other(format!("bench/reference.toml: {e}")))
}
