//! gnnaudit: train private and non-private GNNs through libtorch, attack them, and report each
//! attack's success next to the epsilon the accountant claims.
pub mod audit;
pub mod cli;
pub mod data;
pub mod device;
pub mod error;
pub mod external;
pub mod fatal;
pub mod fsutil;
pub mod interrupt;
pub mod libtorch;
pub mod methods;
pub mod models;
pub mod privacy;
pub mod replay;
pub mod report;
pub mod target;
pub mod train;

pub use error::{Error, Result};
