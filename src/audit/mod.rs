//! The audit: config -> cells (dataset, method, epsilon, seed) -> train -> attack -> report, and
//! the leakage check that turns a report into pass/fail for CI.
//!
//! | module | what |
//! | --- | --- |
//! | `config` | the TOML schema and its validation |
//! | `recipe` | the schema of method hyper-parameters and attack parameters |
//! | `epsilon` | an epsilon that may be `inf`, with one serde form |
//! | `cell` | the grid's cells and the record each leaves |
//! | `store` | atomic writes and the per-cell store (resume) |
//! | `progress` | progress bars per stage |
//! | `runner` | the audit loop over a `CellRunner` |
//! | `check` | thresholds and the CI leakage check |
//! | `execute` | the real cell runner: load, prepare, train |
//! | `attack` | a cell's attacks through the attacks crate |
//! | `adapters` | what each threat model lets an attack see of a trained model |
pub mod adapters;
pub mod attack;
pub mod cell;
pub mod check;
pub mod config;
pub mod epsilon;
pub mod execute;
pub mod preflight;
pub mod progress;
pub mod recipe;
pub mod runner;
pub mod store;

pub use cell::{AttackRecord, BudgetRecord, CellKey, CellMeasurement, CellRecord, CellSpec, TprAtFpr};
pub use config::AuditConfig;
pub use epsilon::Epsilon;
pub use progress::{Progress, Stage};
pub use runner::{run_audit, run_cells, CellRunner, OutputOptions};
