//! Audits of deployments gnnaudit did not train. A target is one of
//!
//! | kind | what the auditor holds | module |
//! | --- | --- | --- |
//! | `posteriors` | released class probabilities of every node | [`posteriors`] |
//! | `torchscript` | a model exported with `torch.jit.script`/`trace`, `forward(x, edge_index)` | [`torchscript`] |
//! | `command` | the training pipeline itself, as a command template run per graph | [`command`] |
//!
//! plus what the auditor knows of the training data ([`members`]: ids of the training nodes) and
//! the deployment's declared mechanism ([`claim`]: recomputed by gnnaudit's own accountant). Each
//! kind is adapted to the attacks crate's threat model (black box, white box, shadow oracle), so
//! every attack and every eps_lb certificate work on it unchanged. [`run::Deployment`] is that
//! adaptation, shared by `gnnaudit attack` ([`run`]) and audit configs with a `[target]` table
//! (`audit::external`); [`graph_npz`] writes the graphs a command trains on.
pub mod claim;
pub mod command;
pub mod graph_npz;
pub mod members;
pub mod posteriors;
pub mod run;
pub mod spec;
pub mod torchscript;

pub use claim::{ClaimReport, DeclaredClaim};
pub use spec::{OutputKind, ShadowRecipe, TargetSpec};
