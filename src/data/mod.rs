//! Graphs, loaders (npz, CSV/Parquet, synthetic CSBM), transforms and splits.
pub mod csbm;
pub mod dataset;
pub mod graph;
pub mod npz;
pub mod registry;
pub mod split;
pub mod stats;
pub mod table;
pub mod transforms;

pub use csbm::Csbm;
pub use dataset::{Dataset, Features, Split};
pub use graph::Graph;
pub use registry::{list_datasets, load_dataset, load_path, search_dirs, SYNTHETIC};
pub use split::{random_split, split_per_class, SplitRatios};
pub use stats::DatasetStats;
pub use transforms::{
    bound_degree, filter_classes, induced_subgraph, prepare_like_gap, remove_isolated_nodes, remove_self_loops,
    to_undirected,
};
