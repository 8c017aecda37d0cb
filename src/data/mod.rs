//! Graphs, loaders (npz, CSV/Parquet, synthetic CSBM), transforms and splits.
pub mod dataset;
pub mod graph;

pub use dataset::{Dataset, Features, Split};
pub use graph::Graph;
