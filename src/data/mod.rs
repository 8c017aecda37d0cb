//! Graphs, loaders (npz, CSV/Parquet, synthetic CSBM), transforms and splits.
//!
//! | need | call |
//! | --- | --- |
//! | a dataset by name, path or `synthetic[:k=v,..]` | [`load_dataset`] (resolution order in [`registry`]) |
//! | a gnn-benchmark `.npz` / edge + node tables | [`npz::load`] / [`table::load`] |
//! | a synthetic graph with set homophily | [`Csbm::generate`] |
//! | the GAP/ProGAP reference preprocessing | [`prepare_like_gap`] |
//! | a split | [`random_split`] (75/10/15 default), [`split_per_class`] |
//! | node-level DP degree bound (in, out or both, as the theorem needs) | [`bound_degree`], [`DegreeBound`] |
//! | shadow graph | [`induced_subgraph`] |
//! | counts as `datasets describe` prints them | [`DatasetStats::of`] |
//!
//! Every transform returns a new [`Dataset`]; those that drop nodes keep features, labels, class
//! names and split aligned.
pub mod catalog;
pub mod csbm;
pub mod dataset;
pub mod degree;
pub mod download;
pub mod fingerprint;
pub mod graph;
pub mod grouping;
pub mod link_split;
pub mod memory;
pub mod normalise;
pub mod npz;
pub mod partition;
pub mod registry;
pub mod split;
pub mod stats;
pub mod subclass;
pub mod table;
pub mod transforms;

pub use csbm::Csbm;
pub use dataset::{Dataset, Features, Split};
pub use degree::{bound_degree, DegreeBound};
pub use fingerprint::{content_sha256, file_sha256};
pub use graph::Graph;
pub use registry::{list_datasets, load_dataset, load_path, search_dirs, SYNTHETIC};
pub use split::{random_split, split_per_class, SplitRatios};
pub use stats::DatasetStats;
pub use transforms::{
    filter_classes, induced_subgraph, prepare_like_gap, remove_isolated_nodes, remove_self_loops, to_undirected,
};
