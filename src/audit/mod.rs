//! The audit: config -> cells (dataset, method, epsilon, seed) -> train -> attack -> report, and
//! the leakage check that turns a report into pass/fail for CI.
//!
//! | module | what |
//! | --- | --- |
//! | `config` | the TOML schema and its validation |
//! | `recipe` | the schema of method hyper-parameters and attack parameters |
//! | `cell` | the grid's cells and the record each leaves |
//! | `store` | atomic writes and the per-cell store (resume) |
//! | `progress` | progress bars per stage |
//! | `runner` | the audit loop over a `CellRunner`: full run, one shard, merge |
//! | `shard` | `--shard I/N`: which cells a slice holds |
//! | `lock` | the report folder's lock (one full audit, or many shards) |
//! | `parallel` | `--jobs N`: worker processes sharing the cell store |
//! | `slurm` | `--slurm`: a job array of shards and a merge job |
//! | `status` | `audit status DIR`: cells done, running, failed, missing |
//! | `interrupt` | Ctrl-C: what was kept and how to resume |
//! | `execute` | the real cell runner: load, prepare, train |
//! | `attack` | a cell's attacks through the attacks crate |
/// Moved to `crate::target` (the bridge audit, cli, external and replay share); old path kept.
pub use crate::target as adapters;
pub mod attack;
pub mod cell;
pub mod config;
pub mod execute;
pub mod feature_claim;
pub mod interrupt;
pub mod lock;
pub mod parallel;
pub mod preflight;
pub mod progress;
pub mod recipe;
pub mod runner;
pub mod shard;
pub mod slurm;
pub mod status;
pub mod store;

pub use crate::report::record::Epsilon;
pub use crate::report::record::{AttackRecord, BudgetRecord, CellKey, CellMeasurement, CellRecord, TprAtFpr};
pub use cell::CellSpec;
pub use config::AuditConfig;
pub use progress::{Progress, Stage};
pub use runner::{run_audit, run_cells, CellRunner, OutputOptions};
