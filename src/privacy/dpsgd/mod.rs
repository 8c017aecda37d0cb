//! DP-SGD/DP-Adam: vectorised per-sample gradients ([`tape`]), clipping and noise ([`engine`]),
//! and the optimizers they feed ([`optim`]).
pub mod canary;
pub mod canary_plan;
mod config;
pub mod engine;
mod flaw;
pub mod grouped;
pub mod optim;
pub mod tape;

pub use config::DpSgdConfig;
pub use engine::{steps_per_epoch, DpSgd, PlantedFlaw, PoissonSampler};
pub use optim::{Optimizer, OptimizerKind};
pub use tape::{clip_factor, clip_materialised, Grads, OpKind, Tape};

#[cfg(test)]
mod tests;
