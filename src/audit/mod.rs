//! The audit: config -> cells (dataset, method, epsilon, seed) -> train -> attack -> report.
//!
//! The records, the config's schema, the claims and the leakage check belong to the report
//! (`crate::report`): the audit writes them, reports and `gnnaudit check` read them.
//!
//! Files, lower first (an import goes down this list only; `tests/import_layers.rs` checks it):
//!
//! | module | what |
//! | --- | --- |
//! | `progress`, `lock`, `shard` | progress bars; the report folder's lock; `--shard I/N` (Ctrl-C: `crate::interrupt`) |
//! | `recipe` | a method's table as a `train::Recipe`; attack tables over their structs' defaults |
//! | `config` | parsing: TOML into the schema, paths, the external pseudo-method, epsilon grids |
//! | `cell` | the grid's cells and the plan of a config |
//! | `store` | the per-cell store (resume) and its claims |
//! | `replay`, `feature_claim` | the sensitivity replay as an attack kind; one-feature LDP claims |
//! | `attack` | a cell's attacks through the attacks crate |
//! | `external` | a cell against an external `[target]`: attacks, no training |
//! | `runner` | the audit loop over a `CellRunner`: full run, one shard, merge |
//! | `execute` | the real cell runner: load, prepare, train |
//! | `preflight` | what a real run would refuse, found by loading and calibrating |
//! | `validate` | `AuditConfig::load`/`validate`: every value checked before any work |
//! | `parallel`, `slurm`, `status` | `--jobs N` workers; `--slurm` job arrays; `audit status DIR` |
pub mod attack;
pub mod cell;
pub mod config;
pub mod execute;
pub mod external;
pub mod feature_claim;
pub mod lock;
pub mod parallel;
pub mod preflight;
pub mod progress;
pub mod recipe;
pub mod replay;
pub mod runner;
pub mod shard;
pub mod slurm;
pub mod source;
pub mod status;
pub mod store;
pub mod validate;

pub use crate::report::record::Epsilon;
pub use crate::report::record::{AttackRecord, BudgetRecord, CellKey, CellMeasurement, CellRecord, TprAtFpr};
pub use cell::CellSpec;
pub use config::AuditConfig;
pub use progress::{Progress, Stage};
pub use runner::{run_audit, run_cells, CellRunner, OutputOptions};
